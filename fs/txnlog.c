/*
 * txnlog.c: the one log line of each .ctl transaction at -o loglevel=info:
 * what it was about (the sandbox or the key, never env, stdin or the
 * command's arguments beyond its program), how it ended, and how long it
 * took. Values are a caller's text: cut short, and anything but printable
 * ASCII shown as '?', so a request cannot forge log lines.
 */
#include "mfs.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "log.h"

/* ` name=value`, the value cleaned; nothing when it is absent (not a string). */
static void put_value(struct mafsbx_buf *b, const char *name, const json_t *value)
{
	const char *v = json_string_value(value);
	if (!v)
		return;
	char clean[68];
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)v; *p && n < 64; p++)
		clean[n++] = *p >= 0x21 && *p < 0x7f ? (char)*p : '?';
	if (v[n] && n == 64)
		memcpy(clean + n, "...", 3), n += 3;
	clean[n] = '\0';
	mafsbx_buf_printf(b, " %s=%s", name, clean);
}

/* ` field=value` for a string field of `obj`. */
static void put_field(struct mafsbx_buf *b, const json_t *obj, const char *field)
{
	put_value(b, field, json_object_get(obj, field));
}

/* The request's subject: the sandbox, or the key. */
static void put_subject(struct mafsbx_buf *b, enum mfs_ctl_kind kind, const json_t *req)
{
	static const char *const key[] = { "scope", "thread", "agent", "call", "kind", "instance_id" };
	if (kind == MFS_CTL_EXEC) {
		put_field(b, req, "sandbox");
		json_t *argv = json_object_get(req, "argv");
		if (json_is_array(argv))
			put_value(b, "program", json_array_get(argv, 0));
		else if (json_object_get(req, "command"))
			mafsbx_buf_printf(b, " program=sh");
		if (json_is_true(json_object_get(req, "detach")))
			mafsbx_buf_printf(b, " detach");
		return;
	}
	put_field(b, req, "name");
	for (size_t i = 0; i < sizeof(key) / sizeof(key[0]); i++)
		put_field(b, req, key[i]);
}

/* How a successful one ended, from its reply. */
static void put_outcome(struct mafsbx_buf *b, enum mfs_ctl_kind kind, const json_t *reply)
{
	switch (kind) {
	case MFS_CTL_ACQUIRE:
		put_field(b, reply, "state");
		put_field(b, reply, "name");
		break;
	case MFS_CTL_DISPOSE:
		mafsbx_buf_printf(b, " disposed=%lld failures=%zu",
				  (long long)json_integer_value(json_object_get(reply, "disposed")),
				  json_array_size(json_object_get(reply, "failures")));
		break;
	case MFS_CTL_EXEC:
		if (json_object_get(reply, "exec"))
			put_field(b, reply, "exec");
		else
			mafsbx_buf_printf(b, " exit_code=%lld%s",
					  (long long)json_integer_value(json_object_get(reply, "exit_code")),
					  json_is_true(json_object_get(reply, "truncated")) ? " truncated" : "");
		break;
	default:
		break;
	}
}

void mfs_txn_log(enum mfs_ctl_kind kind, const json_t *req, const json_t *reply, int r,
		 const struct mafsbx_error *e, long long ms)
{
	if (mafsbx_log_get_level() < MAFSBX_LOG_INFO)
		return;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	mafsbx_buf_printf(&b, "%s:", mfs_ctl_kind_name(kind));
	if (req)
		put_subject(&b, kind, req);
	if (r == 0) {
		mafsbx_buf_printf(&b, " -> ok");
		put_outcome(&b, kind, reply);
	} else {
		mafsbx_buf_printf(&b, " -> %s %.300s", mafsbx_errno_name(e->err), e->message);
	}
	if (b.data)
		log_info("%s (%lld ms)", b.data, ms);
	mafsbx_buf_free(&b);
}
