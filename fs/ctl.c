/*
 * ctl.c: the .ctl transaction files (INTERFACE.md §4), one private channel
 * per open file in the style of Plan 9's factotum rpc file.
 *
 * A handle collects request bytes until they form ONE JSON object (an
 * incremental scanner tracks strings and nesting, so the kernel may split
 * the request into any number of writes). The write that completes the
 * object runs it and returns the full count, or the request's errno; the
 * reply (`{"ok": ...}\n`) is then read back from the same handle. The file is
 * a pipe: offsets are ignored, a read continues where the last one stopped,
 * and a new request replaces the reply. All state is per handle, under the
 * handle's mutex, so requests on one handle are strictly ordered while
 * different handles run in parallel.
 */
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct mfs_ctl {
	struct mfs_handle h;         /* must stay first: ops.c dispatches on it */
	enum mfs_ctl_kind kind;
	pthread_mutex_t lock;
	/* the request being collected */
	struct mafsbx_buf req;
	bool started;                /* the opening '{' was seen */
	int depth;
	bool in_string, escape;
	bool oversized;              /* over the cap: refuse until truncated or closed */
	/* the last reply */
	char *reply;
	size_t reply_len, reply_pos;
};

const char *mfs_ctl_kind_name(enum mfs_ctl_kind k)
{
	switch (k) {
	case MFS_CTL_ACQUIRE: return "acquire";
	case MFS_CTL_DISPOSE: return "dispose";
	case MFS_CTL_EXEC: return "exec";
	}
	return "?";
}

struct mfs_ctl *mfs_ctl_open(enum mfs_ctl_kind kind)
{
	struct mfs_ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->h.type = MFS_H_CTL;
	c->kind = kind;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

static void request_reset(struct mfs_ctl *c)
{
	mafsbx_buf_free(&c->req);
	c->started = false;
	c->depth = 0;
	c->in_string = c->escape = false;
}

/* Replace the reply. Takes ownership of `text`. */
static void set_reply_text(struct mfs_ctl *c, char *text, size_t len)
{
	free(c->reply);
	c->reply = text;
	c->reply_len = len;
	c->reply_pos = 0;
}

static void set_reply(struct mfs_ctl *c, const json_t *reply)
{
	size_t len = 0;
	char *text = reply ? mfs_reply_dump(reply, &len) : NULL;
	if (!text) {
		static const char fallback[] =
			"{\"ok\": false, \"error\": {\"errno\": \"ENOMEM\", \"type\": \"MemoryError\", "
			"\"message\": \"out of memory building the reply\"}}\n";
		text = strdup(fallback);
		len = text ? sizeof(fallback) - 1 : 0;
	}
	set_reply_text(c, text, len);
}

static void set_error_reply(struct mfs_ctl *c, const struct mafsbx_error *e, const json_t *extra)
{
	json_t *r = mfs_error_reply(e, extra);
	set_reply(c, r);
	json_decref(r);
}

static int refuse(struct mfs_ctl *c, enum mafsbx_err_kind kind, const char *msg)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_error_set(&e, kind, "%s: %s", mfs_ctl_kind_name(c->kind), msg);
	set_error_reply(c, &e, NULL);
	return r;
}

/* Parse and run the collected object. Returns 0 or the negative errno. */
static int run(struct mfs *fs, struct mfs_ctl *c)
{
	struct mafsbx_error e;
	json_error_t jerr;
	mafsbx_error_clear(&e);
	json_t *req = json_loadb(c->req.data, c->req.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req) {
		int r = mafsbx_error_set(&e, MAFSBX_EK_INVALID, "%s: malformed JSON request at line %d column %d: %s",
					 mfs_ctl_kind_name(c->kind), jerr.line, jerr.column, jerr.text);
		set_error_reply(c, &e, NULL);
		return r;
	}
	if (!json_is_object(req)) {
		json_decref(req);
		return refuse(c, MAFSBX_EK_INVALID, "the request must be one JSON object");
	}
	json_t *reply = NULL;
	int r;
	if (!fs || !fs->run)
		r = mafsbx_error_set(&e, MAFSBX_EK_ENGINE, "no request runner");
	else
		r = fs->run(fs, c->kind, req, &reply, &e);
	json_decref(req);
	if (r < 0) {
		if (e.err <= 0)
			mafsbx_error_set_full(&e, MAFSBX_EK_SYSTEM, -r, NULL, "%s failed", mfs_ctl_kind_name(c->kind));
		set_error_reply(c, &e, reply);
		json_decref(reply);
		log_debug("%s: %s (%s)", mfs_ctl_kind_name(c->kind), e.message, mafsbx_errno_name(e.err));
		return -e.err;
	}
	set_reply(c, reply);
	json_decref(reply);
	return 0;
}

static bool is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

int mfs_ctl_write(struct mfs *fs, struct mfs_ctl *c, const char *data, size_t size)
{
	/* FUSE sends at most max_write (<= a few MiB) per write: the count fits. */
	int ret = (int)size;
	pthread_mutex_lock(&c->lock);
	if (c->oversized) {
		ret = -EMSGSIZE;
		goto out;
	}
	size_t i = 0;
	size_t begin = 0;          /* first byte of this write that belongs to the request */
	bool complete = false;
	for (; i < size; i++) {
		char ch = data[i];
		if (!c->started) {
			if (is_ws(ch)) {
				begin = i + 1;
				continue;
			}
			if (ch != '{') {
				request_reset(c);
				ret = refuse(c, MAFSBX_EK_INVALID,
					     "malformed JSON request: expected one JSON object starting with '{'");
				goto out;
			}
			c->started = true;
			c->depth = 1;
			continue;
		}
		if (c->in_string) {
			if (c->escape)
				c->escape = false;
			else if (ch == '\\')
				c->escape = true;
			else if (ch == '"')
				c->in_string = false;
			continue;
		}
		if (ch == '"') {
			c->in_string = true;
		} else if (ch == '{' || ch == '[') {
			c->depth++;
		} else if (ch == '}' || ch == ']') {
			if (--c->depth == 0) {
				complete = true;
				i++;
				break;
			}
		}
	}
	size_t take = i - begin;
	if (c->started && c->req.len + take > MFS_CTL_MAX_REQUEST) {
		request_reset(c);
		c->oversized = true;
		ret = refuse(c, MAFSBX_EK_TOO_LARGE_MSG, "request over 1 MiB refused");
		goto out;
	}
	if (c->started && take && mafsbx_buf_append(&c->req, data + begin, take) < 0) {
		request_reset(c);
		ret = refuse(c, MAFSBX_EK_NOMEM, "out of memory collecting the request");
		goto out;
	}
	if (!complete)
		goto out;
	/* Only whitespace may follow the object in the same write. */
	for (size_t j = i; j < size; j++) {
		if (!is_ws(data[j])) {
			request_reset(c);
			ret = refuse(c, MAFSBX_EK_INVALID,
				     "malformed JSON request: data after the JSON object (one request per write sequence)");
			goto out;
		}
	}
	int r = run(fs, c);
	request_reset(c);
	if (r < 0)
		ret = r;
out:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int mfs_ctl_read(struct mfs_ctl *c, char *out, size_t size)
{
	pthread_mutex_lock(&c->lock);
	if (!c->reply) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		if (c->started)
			mafsbx_error_set(&e, MAFSBX_EK_INVALID,
					 "%s: the request is incomplete (%zu bytes so far, the JSON object is not closed)",
					 mfs_ctl_kind_name(c->kind), c->req.len);
		else
			mafsbx_error_set(&e, MAFSBX_EK_INVALID,
					 "%s: no request on this open file: write one JSON object, then read the reply",
					 mfs_ctl_kind_name(c->kind));
		set_error_reply(c, &e, NULL);
	}
	size_t n = 0;
	if (c->reply && c->reply_pos < c->reply_len) {
		n = c->reply_len - c->reply_pos;
		if (n > size)
			n = size;
		memcpy(out, c->reply + c->reply_pos, n);
		c->reply_pos += n;
	}
	pthread_mutex_unlock(&c->lock);
	return (int)n;
}

void mfs_ctl_truncate(struct mfs_ctl *c)
{
	pthread_mutex_lock(&c->lock);
	request_reset(c);
	c->oversized = false;
	pthread_mutex_unlock(&c->lock);
}

int mfs_ctl_flush(struct mfs_ctl *c)
{
	pthread_mutex_lock(&c->lock);
	/* The bytes stay: another descriptor of this open file may finish them. */
	int r = c->started ? -EINVAL : 0;
	pthread_mutex_unlock(&c->lock);
	return r;
}

void mfs_ctl_release(struct mfs_ctl *c)
{
	if (!c)
		return;
	request_reset(c);
	free(c->reply);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
