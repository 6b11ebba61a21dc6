/*
 * reply.c: the shape of .ctl replies (INTERFACE.md §4): one JSON object and
 * a newline, `{"ok": true, ...}` or
 * `{"ok": false, "error": {"errno": "E...", "type": "...", "message": "..."}}`.
 */
#include "mfs.h"

#include <errno.h>
#include <string.h>

json_t *mfs_error_reply(const struct mafsbx_error *e, const json_t *extra)
{
	int eno = e && e->err > 0 ? e->err : EIO;
	const char *type = e && e->type[0] ? e->type : mafsbx_error_kind_type(e ? e->kind : MAFSBX_EK_ENGINE);
	const char *msg = e && e->message[0] ? e->message : strerror(eno);
	if (!type || !*type)
		type = "RuntimeError";
	json_t *r = json_object();
	json_t *err = json_object();
	if (!r || !err)
		goto fail;
	/* A message from the engine may hold bytes that are not UTF-8. */
	json_t *m = json_string(msg);
	if (!m) {
		char *fixed = mfs_utf8_replace((const unsigned char *)msg, strlen(msg), NULL);
		m = fixed ? json_string(fixed) : json_string("(unprintable message)");
		free(fixed);
	}
	if (json_object_set_new(r, "ok", json_false()) < 0 ||
	    json_object_set_new(err, "errno", json_string(mafsbx_errno_name(eno))) < 0 ||
	    json_object_set_new(err, "type", json_string(type)) < 0 || json_object_set_new(err, "message", m) < 0 ||
	    json_object_set_new(r, "error", err) < 0) {
		err = NULL;
		goto fail;
	}
	if (extra) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)extra, k, v) {
			if (strcmp(k, "ok") && strcmp(k, "error"))
				json_object_set(r, k, v);
		}
	}
	return r;
fail:
	json_decref(err);
	json_decref(r);
	return NULL;
}

char *mfs_reply_dump(const json_t *reply, size_t *len)
{
	/* jansson's default separators give `{"ok": true, "name": "x"}`, the
	 * spelling of INTERFACE.md; one line, so a shell can read it with `read`. */
	char *s = json_dumps(reply, 0);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *out = realloc(s, n + 2);
	if (!out) {
		free(s);
		return NULL;
	}
	out[n] = '\n';
	out[n + 1] = '\0';
	if (len)
		*len = n + 1;
	return out;
}
