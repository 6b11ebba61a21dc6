/*
 * ctl.c: the .ctl transaction files (doc/protocol.md "The transactions"), one private channel
 * per open file in the style of Plan 9's factotum rpc file.
 *
 * A handle collects request bytes until they form ONE JSON object, so the
 * kernel may split the request into any number of writes. The incremental
 * JSON syntax checker of src/base/jsonscan.c sees every byte once: a byte that
 * cannot begin or continue a JSON object fails its write at once with
 * EINVAL, and a write that ends with a newline ends the
 * request (JSON Lines framing), so `echo '{not json' > .ctl/acquire` fails
 * in the shell instead of waiting for a close() whose error the shell
 * ignores. The write that completes the object runs it and returns the full
 * count, or the request's errno; the reply (`{"ok": ...}\n`) is then read
 * back from the same handle. An unfinished request fails close(). The file is
 * a pipe: offsets are ignored, a read continues where the last one stopped,
 * and a new request replaces the reply. All state is per handle, under the
 * handle's mutex, so requests on one handle are strictly ordered while
 * different handles run in parallel.
 *
 * A writer killed while its request runs (lowlevel.c answers it EINTR)
 * does not stop the request: its close() does not wait for it, and the
 * handle, released meanwhile, stays until the request's end (`released`).
 *
 * Its rows of the tree (rows.h): .ctl/ and the two read-only texts beside
 * the verbs (each verb's row is its own file's, verb_*.c).
 */
#include "mfs.h"
#include "rows.h"
#include "mount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "jsonscan.h"

struct mfs_ctl {
	struct mfs_handle h;         /* must stay first: handles.c dispatches on it */
	enum mfs_ctl_kind kind;
	struct mfs *fs;              /* the mount it was opened on */
	pthread_mutex_t lock;
	/* the request being collected */
	struct mafsbx_buf req;
	bool started;                /* the opening '{' was seen */
	struct mafsbx_jsonscan scan;
	bool oversized;              /* over the cap: refuse until truncated or closed */
	/* the last reply */
	char *reply;
	size_t reply_len, reply_pos;
	struct mfs *reply_fs;        /* whose reply budget holds reply_charged bytes for it */
	size_t reply_charged;
	/* a completed request is running (maybe on a transaction thread, with
	 * `lock` released): every other call on this handle waits for its end */
	bool running;
	bool pooled;                 /* the running request counts in the others' pool (mfs_request_charge) */
	pthread_cond_t done;
	bool released;               /* closed while running: the runner frees it */
};

const struct mfs_row mfs_ctl_rows[] = {
	{ MFS_N_ROOT, ".ctl", NULL, MFS_N_CTL_DIR, 0, S_IFDIR | 0755, .refuse = EPERM, .refuse_write = EPERM },
	{ MFS_N_CTL_DIR, "declarations", NULL, MFS_N_CTL_DECLARATIONS, 0, S_IFREG | 0444, .refuse = EPERM,
	  .refuse_write = EACCES, .cache = MFS_KIND_DIRECT_IO },
	{ MFS_N_CTL_DIR, "engine", NULL, MFS_N_CTL_ENGINE, 0, S_IFREG | 0444, .refuse = EPERM, .refuse_write = EACCES,
	  .cache = MFS_KIND_DIRECT_IO },
	MFS_ROWS_END,
};

/* With c->lock held: until no request of this handle runs. */
static void wait_idle(struct mfs_ctl *c)
{
	while (c->running)
		pthread_cond_wait(&c->done, &c->lock);
}

static void ctl_discard(struct mfs_handle *h)
{
	mfs_ctl_release((struct mfs_ctl *)h);
}

struct mfs_ctl *mfs_ctl_open(struct mfs *fs, enum mfs_ctl_kind kind)
{
	struct mfs_ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->h.type = MFS_H_CTL;
	c->h.discard = ctl_discard;
	c->kind = kind;
	c->fs = fs;
	pthread_mutex_init(&c->lock, NULL);
	mafsbx_cond_init_monotonic(&c->done);
	return c;
}

static void request_reset(struct mfs_ctl *c)
{
	mafsbx_buf_free(&c->req);
	c->started = false;
	mafsbx_jsonscan_reset(&c->scan);
}

static int set_reply_text(struct mfs_ctl *c, char *text, size_t len);

static void ctl_free(struct mfs_ctl *c)
{
	request_reset(c);
	(void)set_reply_text(c, NULL, 0);   /* its hold on the reply budget too */
	pthread_cond_destroy(&c->done);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* With c->lock held: the request ended; give back its place in the others' pool. */
static void request_ended(struct mfs_ctl *c)
{
	if (c->pooled) {
		c->pooled = false;
		mfs_request_uncharge(c->fs, &c->h);
	}
}

/* The end of a run (c->lock held, released here): its place in the
 * others' pool given back, the handle freed if it was closed meanwhile. */
static void run_ended(struct mfs_ctl *c)
{
	request_reset(c);
	request_ended(c);
	c->running = false;
	pthread_cond_broadcast(&c->done);
	bool orphan = c->released;
	pthread_mutex_unlock(&c->lock);
	if (orphan)
		ctl_free(c);
}

static const char nomem_reply[] =
	"{\"ok\": false, \"error\": {\"errno\": \"ENOMEM\", \"type\": \"MemoryError\", "
	"\"message\": \"out of memory building the reply\"}}\n";

/*
 * Replace the reply. Takes ownership of `text`. A reply held by its open
 * file counts against the mount's reply budget until it is replaced or the
 * file closed, so unread replies cannot pile up; one past the budget is
 * replaced by an ENOMEM reply (logged, naming the budget).
 */
static int set_reply_text(struct mfs_ctl *c, char *text, size_t len)
{
	int r = 0;
	if (c->reply_charged)
		mfs_reply_budget_put(c->reply_fs, c->reply_charged);
	c->reply_charged = 0;
	free(c->reply);
	struct mfs *fs = c->fs;
	if (text && fs && len > sizeof(nomem_reply)) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		char what[64];
		snprintf(what, sizeof(what), "%s: the request ran, but the reply to hold for reading",
			 mfs_ctl_kind_name(c->kind));
		if ((r = mfs_reply_budget_take(fs, len, what, &e)) < 0) {
			log_warn("%s", e.message);
			free(text);
			mfs_memory_trim(len);
			json_t *o = mfs_error_reply(&e, NULL);
			text = o ? mfs_json_dump_line(o, 0, &len) : NULL;
			json_decref(o);
			if (!text) {
				text = strdup(nomem_reply);
				len = text ? sizeof(nomem_reply) - 1 : 0;
			}
		} else {
			c->reply_fs = fs;
			c->reply_charged = len;
		}
	}
	c->reply = text;
	c->reply_len = len;
	c->reply_pos = 0;
	return r;
}

/* 0, or -ENOMEM when the reply is past the reply budget (an ENOMEM reply stands for it). */
static int set_reply(struct mfs_ctl *c, const json_t *reply)
{
	size_t len = 0;
	char *text = reply ? mfs_reply_dump(reply, &len) : NULL;
	if (!text) {
		text = strdup(nomem_reply);
		len = text ? sizeof(nomem_reply) - 1 : 0;
	}
	return set_reply_text(c, text, len);
}

static void set_error_reply(struct mfs_ctl *c, const struct mafsbx_error *e, const json_t *extra)
{
	json_t *r = mfs_error_reply(e, extra);
	(void)set_reply(c, r);
	json_decref(r);
}

static int refuse(struct mfs_ctl *c, enum mafsbx_err_kind kind, const char *msg)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_error_set(&e, kind, "%s: %s", mfs_ctl_kind_name(c->kind), msg);
	set_error_reply(c, &e, NULL);
	mfs_txn_log(c->kind, NULL, NULL, r, &e, 0);
	return r;
}

/* Parse and run the collected object. Returns 0 or the negative errno. */
static int run(struct mfs *fs, struct mfs_ctl *c)
{
	struct mafsbx_error e;
	json_error_t jerr;
	mafsbx_error_clear(&e);
	long long t0 = mafsbx_now_ms();
	json_t *req = json_loadb(c->req.data, c->req.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req) {
		int r = mafsbx_error_set(&e, MAFSBX_EK_INVALID, "%s: malformed JSON request at line %d column %d: %s",
					 mfs_ctl_kind_name(c->kind), jerr.line, jerr.column, jerr.text);
		set_error_reply(c, &e, NULL);
		mfs_txn_log(c->kind, NULL, NULL, r, &e, mafsbx_now_ms() - t0);
		return r;
	}
	if (!json_is_object(req)) {
		json_decref(req);
		int r = mafsbx_error_set(&e, MAFSBX_EK_INVALID, "%s: the request must be one JSON object",
					 mfs_ctl_kind_name(c->kind));
		set_error_reply(c, &e, NULL);
		mfs_txn_log(c->kind, NULL, NULL, r, &e, mafsbx_now_ms() - t0);
		return r;
	}
	json_t *reply = NULL;
	int r;
	if (!fs || !fs->run)
		r = mafsbx_error_set(&e, MAFSBX_EK_ENGINE, "no request runner");
	else
		r = fs->run(fs, c->kind, req, &reply, &e);
	if (r < 0 && e.err <= 0)
		mafsbx_error_set_full(&e, MAFSBX_EK_SYSTEM, -r, NULL, "%s failed", mfs_ctl_kind_name(c->kind));
	mfs_txn_log(c->kind, req, reply, r, &e, mafsbx_now_ms() - t0);
	json_decref(req);
	if (r < 0) {
		set_error_reply(c, &e, reply);
		json_decref(reply);
		log_debug("%s: %s (%s)", mfs_ctl_kind_name(c->kind), e.message, mafsbx_errno_name(e.err));
		return -e.err;
	}
	r = set_reply(c, reply);
	json_decref(reply);
	return r;
}

static int refuse_byte(struct mfs_ctl *c, unsigned char ch, size_t at, const char *why)
{
	char shown[8];
	if (ch >= 0x20 && ch < 0x7f && ch != '\'')
		snprintf(shown, sizeof(shown), "'%c'", ch);
	else
		snprintf(shown, sizeof(shown), "0x%02x", ch);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_error_set(&e, MAFSBX_EK_INVALID, "%s: malformed JSON request: byte %zu (%s): %s",
				 mfs_ctl_kind_name(c->kind), at, shown, why);
	set_error_reply(c, &e, NULL);
	mfs_txn_log(c->kind, NULL, NULL, r, &e, 0);
	return r;
}

/* A request refused by the others' pool (mfs_request_charge's `r`). */
static int refuse_pooled(struct mfs_ctl *c, int r)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (r == -EBUSY)
		r = mafsbx_error_set_full(&e, MAFSBX_EK_CONFLICT, EBUSY, "RuntimeError",
					  "%s: users other than the mounting one have the most requests running or "
					  "waiting that this mount lets them have (half of -o max_requests)",
					  mfs_ctl_kind_name(c->kind));
	else
		r = mafsbx_error_set(&e, MAFSBX_EK_NOMEM, "%s: out of memory counting the request",
				     mfs_ctl_kind_name(c->kind));
	set_error_reply(c, &e, NULL);
	mfs_txn_log(c->kind, NULL, NULL, r, &e, 0);
	return r;
}

int mfs_ctl_write_take(struct mfs_ctl *c, const char *data, size_t size, bool *run_it)
{
	/* FUSE sends at most max_write (<= a few MiB) per write: the count fits. */
	int ret = (int)size;
	*run_it = false;
	pthread_mutex_lock(&c->lock);
	wait_idle(c);
	if (c->oversized) {
		ret = -EMSGSIZE;
		goto out;
	}
	size_t i = 0;
	size_t begin = 0;          /* first byte of this write that belongs to the request */
	bool complete = false;
	for (; i < size; i++) {
		unsigned char ch = (unsigned char)data[i];
		if (!c->started && mafsbx_json_is_ws(ch)) {
			begin = i + 1;
			continue;
		}
		const char *why = NULL;
		enum mafsbx_scan_result sr = mafsbx_jsonscan_byte(&c->scan, ch, &why);
		if (sr == MAFSBX_SCAN_BAD) {
			size_t at = c->req.len + (i - begin);
			request_reset(c);
			ret = refuse_byte(c, ch, at, why);
			goto out;
		}
		c->started = true;
		if (sr == MAFSBX_SCAN_DONE) {
			complete = true;
			i++;
			break;
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
	if (!complete) {
		/* JSON Lines: a write ending in a newline ends the request. */
		if (c->started && size && data[size - 1] == '\n') {
			size_t have = c->req.len;
			request_reset(c);
			struct mafsbx_error e;
			mafsbx_error_clear(&e);
			ret = mafsbx_error_set(&e, MAFSBX_EK_INVALID,
					       "%s: malformed JSON request: a newline ended the request after %zu bytes, "
					       "before its JSON object closed",
					       mfs_ctl_kind_name(c->kind), have);
			set_error_reply(c, &e, NULL);
			mfs_txn_log(c->kind, NULL, NULL, ret, &e, 0);
		}
		goto out;
	}
	/* Only whitespace may follow the object in the same write. */
	for (size_t j = i; j < size; j++) {
		const char *why = NULL;
		if (mafsbx_jsonscan_byte(&c->scan, (unsigned char)data[j], &why) == MAFSBX_SCAN_BAD) {
			size_t at = c->req.len + (j - i);
			request_reset(c);
			ret = refuse_byte(c, (unsigned char)data[j], at, why);
			goto out;
		}
	}
	/* Another user's request holds a transaction thread, or a place in
	 * their queue, until it ends: the others' pool keeps the rest for the
	 * mounting user. */
	int pooled = mfs_request_charge(c->fs, &c->h);
	if (pooled < 0) {
		request_reset(c);
		ret = refuse_pooled(c, pooled);
		goto out;
	}
	c->pooled = pooled > 0;
	c->running = true;
	*run_it = true;
out:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int mfs_ctl_write_run(struct mfs *fs, struct mfs_ctl *c, int taken)
{
	/* `running` keeps every other call of this handle out: no lock needed
	 * for the request and the reply while the runner works. */
	int r = run(fs, c);
	pthread_mutex_lock(&c->lock);
	run_ended(c);
	return r < 0 ? r : taken;
}

int mfs_ctl_write_cancel(struct mfs_ctl *c, int e, const char *why)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	mafsbx_error_set_full(&err, MAFSBX_EK_CONFLICT, e, "RuntimeError", "%s: %s", mfs_ctl_kind_name(c->kind), why);
	pthread_mutex_lock(&c->lock);
	set_error_reply(c, &err, NULL);
	run_ended(c);
	return -e;
}

int mfs_ctl_write(struct mfs *fs, struct mfs_ctl *c, const char *data, size_t size)
{
	bool run_it;
	int r = mfs_ctl_write_take(c, data, size, &run_it);
	return run_it ? mfs_ctl_write_run(fs, c, r) : r;
}

int mfs_ctl_read(struct mfs_ctl *c, char *out, size_t size)
{
	pthread_mutex_lock(&c->lock);
	wait_idle(c);
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
	wait_idle(c);
	request_reset(c);
	c->oversized = false;
	pthread_mutex_unlock(&c->lock);
}

int mfs_ctl_flush(struct mfs_ctl *c)
{
	pthread_mutex_lock(&c->lock);
	/* A running request is complete: nothing to report, and no wait for it
	 * (the close of a killed writer must not wait for its request).
	 * Otherwise the bytes stay: another descriptor of this open file may finish them. */
	int r = !c->running && c->started ? -EINVAL : 0;
	pthread_mutex_unlock(&c->lock);
	return r;
}

void mfs_ctl_release(struct mfs_ctl *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	bool running = c->running;
	c->released = true;
	pthread_mutex_unlock(&c->lock);
	if (!running)   /* else the end of the run frees it */
		ctl_free(c);
}
