/*
 * txnlog.c: the one log line of each .ctl transaction at -o loglevel=info:
 * what it was about (the sandbox or the key, never env, stdin or the
 * command's arguments beyond its program), how it ended, and how long it
 * took. Values are a caller's text: cut short, and anything but printable
 * ASCII shown as '?', so a request cannot forge log lines. What a verb's
 * request and reply say in it is the verb's (rows.h: subject, reply).
 */
#include "mfs.h"
#include "rows.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "log.h"

/* ` name=value`, the value cleaned; nothing when it is absent (not a string). */
void mfs_txnlog_value(struct mafsbx_buf *b, const char *name, const json_t *value)
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

void mfs_txnlog_field(struct mafsbx_buf *b, const json_t *obj, const char *field)
{
	mfs_txnlog_value(b, field, json_object_get(obj, field));
}

void mfs_txnlog_key(struct mafsbx_buf *b, const json_t *req)
{
	static const char *const key[] = { "scope", "thread", "agent", "call", "kind", "instance_id" };
	mfs_txnlog_field(b, req, "name");
	for (size_t i = 0; i < sizeof(key) / sizeof(key[0]); i++)
		mfs_txnlog_field(b, req, key[i]);
}

void mfs_txn_log(enum mfs_ctl_kind kind, const json_t *req, const json_t *reply, int r,
		 const struct mafsbx_error *e, long long ms)
{
	if (mafsbx_log_get_level() < MAFSBX_LOG_INFO)
		return;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	const struct mfs_verb *v = mfs_verb_at(kind);
	mafsbx_buf_printf(&b, "%s:", mfs_ctl_kind_name(kind));
	if (req && v)
		v->subject(&b, req);
	if (r == 0) {
		mafsbx_buf_printf(&b, " -> ok");
		if (v)
			v->reply(&b, reply);
	} else {
		mafsbx_buf_printf(&b, " -> %s %.300s", mafsbx_errno_name(e->err), e->message);
	}
	if (b.data)
		log_info("%s (%lld ms)", b.data, ms);
	mafsbx_buf_free(&b);
}
