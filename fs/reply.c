/*
 * reply.c: the shape of .ctl replies (doc/protocol.md "The transactions"): one JSON object and
 * a newline, `{"ok": true, ...}` or
 * `{"ok": false, "error": {"errno": "E...", "type": "...", "message": "..."}}`.
 *
 * Also the mount-wide reply budget: an exec reply holds the guest's output
 * several times over while it is built (the result, its base64, the text
 * views, the JSON), and up to requests_max requests build at once, so their sum
 * is bounded; a request that would pass it is refused with ENOMEM (and a
 * message saying what to do) rather than letting guests run the daemon out
 * of memory.
 */
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

json_t *mfs_error_reply(const struct mafsbx_error *e, const json_t *extra)
{
	int eno = -mafsbx_error_errno(e, -EIO);
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
			/* a reply missing a field it was given (an exit code, say) is no reply */
			if (strcmp(k, "ok") && strcmp(k, "error") && json_object_set(r, k, v) < 0)
				goto fail;
		}
	}
	return r;
fail:
	json_decref(err);
	json_decref(r);
	return NULL;
}

/*
 * A reservation made while building a reply stays until that reply is
 * dumped (ctl.c dumps it in the same thread right after the request
 * returns), so the peak of the dump is covered too. One per thread; a
 * reservation whose dump never came is given back by the next request.
 */
static _Thread_local struct {
	struct mfs *fs;
	size_t bytes;
} until_dump;

void mfs_reply_budget_release_held(void)
{
	if (until_dump.bytes) {
		mfs_reply_budget_put(until_dump.fs, until_dump.bytes);
		until_dump.bytes = 0;
		until_dump.fs = NULL;
	}
}

void mfs_reply_budget_hold_until_dump(struct mfs *fs, size_t bytes)
{
	mfs_reply_budget_release_held();
	until_dump.fs = fs;
	until_dump.bytes = bytes;
}

char *mfs_reply_dump(const json_t *reply, size_t *len)
{
	/* jansson's default separators give `{"ok": true, "name": "x"}`, the
	 * spelling of doc/protocol.md "The transactions"; one line, so a shell can read it with `read`. */
	char *out = mfs_json_dump_line(reply, 0, len);
	mfs_reply_budget_release_held();
	return out;
}

int mfs_reply_budget_take(struct mfs *fs, size_t bytes, const char *what, struct mafsbx_error *err)
{
	/* opts.c bounds it to 1T: it fits a size_t */
	size_t budget = fs->opt.reply_budget ? (size_t)fs->opt.reply_budget : MFS_REPLY_BUDGET_DEFAULT;
	size_t have = atomic_load(&fs->reply_bytes);
	for (;;) {
		if (bytes > budget || have > budget - bytes)
			return mafsbx_error_set_full(err, MAFSBX_EK_NOMEM, ENOMEM, "MemoryError",
						     "%s: its reply needs %zu KiB and replies being built hold %zu of the "
						     "mount's %zu KiB; retry when fewer run at once",
						     what, bytes / 1024, have / 1024, budget / 1024);
		if (atomic_compare_exchange_weak(&fs->reply_bytes, &have, have + bytes))
			return 0;
	}
}

void mfs_reply_budget_put(struct mfs *fs, size_t bytes)
{
	atomic_fetch_sub(&fs->reply_bytes, bytes);
}
