/*
 * reply.c: the shape of .ctl replies (doc/protocol.md "The transactions"): one JSON object and
 * a newline, `{"ok": true, ...}` or
 * `{"ok": false, "error": {"errno": "E...", "type": "...", "message": "..."}}`,
 * and the members of an exec's reply (its exit code, the text and base64
 * views of its output), for a .ctl/exec and for a detached exec's status.
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

#include "base64.h"
#include "sandbox.h"

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

/* ---- the exec reply (requests.c's, and a detached exec's status: execs.c) ---- */

/*
 * The text views when the exact bytes travel as _b64 anyway: each capped at
 * this many bytes of JSON (a control byte costs 6), so a reply is at most
 * about 4/3 of the output plus 2 MiB, never ~6x it.
 */
#define MFS_TEXT_VIEW_MAX ((size_t)1024 * 1024)

static size_t b64_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/*
 * What building an exec reply holds at its peak, beside the result itself:
 * each base64 string and text view twice (our copy, jansson's copy) and the
 * dumped line (about their sum) with slack.
 */
static size_t exec_reply_cost(const struct mafsbx_exec_result *res)
{
	size_t views = (res->out_len < MFS_TEXT_VIEW_MAX ? res->out_len * 3 : MFS_TEXT_VIEW_MAX) +
		       (res->err_len < MFS_TEXT_VIEW_MAX ? res->err_len * 3 : MFS_TEXT_VIEW_MAX);
	size_t b64 = b64_len(res->out_len) + b64_len(res->err_len);
	return 3 * (views + b64) + 4096;
}

size_t mfs_exec_reply_cost(size_t out_len, size_t err_len)
{
	struct mafsbx_exec_result res = { .out_len = out_len, .err_len = err_len };
	return exec_reply_cost(&res);
}

json_t *mfs_exec_fields(const struct mafsbx_exec_result *res, bool with_ok)
{
	json_t *o = json_object();
	int bad = o ? 0 : -1;
	if (with_ok)
		bad |= json_object_set_new(o, "ok", json_true());
	size_t ol = 0, el = 0;
	bool ocut = false, ecut = false;
	__do_free char *out = mfs_utf8_view(res->out, res->out_len, MFS_TEXT_VIEW_MAX, &ol, &ocut);
	__do_free char *errt = mfs_utf8_view(res->err, res->err_len, MFS_TEXT_VIEW_MAX, &el, &ecut);
	__do_free char *out64 = mafsbx_base64_encode(res->out, res->out_len, MAFSBX_B64_STD);
	__do_free char *err64 = mafsbx_base64_encode(res->err, res->err_len, MAFSBX_B64_STD);
	/* a view or an encoding that could not be made would pass for no output at all */
	if (!out || !errt || !out64 || !err64)
		bad = -1;
	bad |= json_object_set_new(o, "exit_code", json_integer(res->exit_code));
	bad |= json_object_set_new(o, "stdout", out ? json_stringn_nocheck(out, ol) : NULL);
	bad |= json_object_set_new(o, "stderr", errt ? json_stringn_nocheck(errt, el) : NULL);
	bad |= json_object_set_new(o, "stdout_b64", out64 ? json_string(out64) : NULL);
	bad |= json_object_set_new(o, "stderr_b64", err64 ? json_string(err64) : NULL);
	bad |= json_object_set_new(o, "timed_out", json_boolean(res->timed_out));
	bad |= json_object_set_new(o, "truncated", json_boolean(res->truncated));
	/* the views were cut to bound the reply; the _b64 members hold every byte */
	bad |= json_object_set_new(o, "text_truncated", json_boolean(ocut || ecut));
	bad |= json_object_set_new(o, "duration_ms", json_integer(res->duration_ms));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}
