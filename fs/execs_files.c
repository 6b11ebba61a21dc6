/*
 * execs_files.c: the files of NAME/execs/ID/. `stdout` and `stderr` read
 * the job's spools as they grow; `status` is a JSON snapshot; `wait`
 * answers its reader when the command ends (lowlevel.c parks the read: no
 * worker is held), with the blocking exec's reply. `status` and `wait`
 * are shared texts (texts.c) counted against the reply budget.
 */
#include "dexec.h"
#include "execs.h"
#include "rows.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "engine.h"
#include "job.h"
#include "log.h"

struct mfs_exec_handle {
	struct mfs_handle h;         /* must stay first */
	struct mfs_dexec *d;
	enum mfs_exec_file file;
	/* status: the snapshot; wait: the reply, once built. Shared with the
	 * exec's other handles (texts.c); set once (a compare-and-swap: two
	 * first reads of one handle keep one reference, never two). */
	struct mfs_text *_Atomic text;
};

/* With d->mu held: the status JSON. */
static json_t *status_json(const struct mfs_dexec *d)
{
	char started[32];
	struct mafsbx_time t = { d->started_s, 0 };
	mafsbx_time_format(t, started);
	json_t *o = json_object();
	int bad = o ? 0 : -1;
	bad |= json_object_set_new(o, "exec", json_string(d->id));
	bad |= json_object_set_new(o, "sandbox", json_string(d->sandbox));
	bad |= json_object_set_new(o, "running", json_boolean(d->running));
	/* running, exited (exit_code says how), or lost: its monitor died first */
	bad |= json_object_set_new(o, "state", json_string(d->running ? "running" : d->lost ? "lost" : "exited"));
	bad |= json_object_set_new(o, "exit_code",
				   d->running || d->exit_code < 0 ? json_null() : json_integer(d->exit_code));
	bad |= json_object_set_new(o, "timed_out", json_boolean(d->timed_out));
	bad |= json_object_set_new(o, "cancelled", json_boolean(d->cancelled));
	bad |= json_object_set_new(o, "started", json_string(started));
	bad |= json_object_set_new(o, "duration_ms",
				   json_integer(d->running ? mafsbx_now_ms() - d->t0_ms : d->duration_ms));
	bad |= json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)d->len[0]));
	bad |= json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)d->len[1]));
	bad |= json_object_set_new(o, "truncated", json_boolean(d->truncated));
	if (d->output_dropped)   /* for newer execs' output (doc/protocol.md "Budgets") */
		bad |= json_object_set_new(o, "output_dropped", json_true());
	/* a remote engine's timeout or cancel disposes the sandbox, as upstream */
	bad |= json_object_set_new(o, "sandbox_disposed", json_boolean(d->disposed));
	if (d->error.err)
		bad |= json_object_set_new(o, "error", mfs_json_text(d->error.message));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* One stream's bytes, all of them (at most the cap). NULL on failure. */
static unsigned char *stream_bytes(struct mfs_dexec *d, int i, size_t *len)
{
	pthread_mutex_lock(&d->mu);
	size_t n = (size_t)d->len[i];
	pthread_mutex_unlock(&d->mu);
	unsigned char *p = malloc(n + 1);
	if (!p)
		return NULL;
	ssize_t got = n ? pread(d->fd[i], p, n, 0) : 0;
	if (got < 0) {
		free(p);
		return NULL;
	}
	p[got] = '\0';
	*len = (size_t)got;
	return p;
}

/* The blocking exec's reply, for `wait` once the command ended. */
static int wait_reply(struct mfs_dexec *d, char **text, size_t *len)
{
	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	res.out = stream_bytes(d, 0, &res.out_len);
	res.err = stream_bytes(d, 1, &res.err_len);
	if (!res.out || !res.err) {
		mafsbx_exec_result_free(&res);
		return -ENOMEM;
	}
	pthread_mutex_lock(&d->mu);
	res.exit_code = d->exit_code;
	res.timed_out = d->timed_out;
	res.truncated = d->truncated;
	res.duration_ms = d->duration_ms;
	bool cancelled = d->cancelled, disposed = d->disposed, dropped = d->output_dropped;
	struct mafsbx_error error = d->error;
	pthread_mutex_unlock(&d->mu);
	json_t *o = mfs_exec_fields(&res, false);
	mafsbx_exec_result_free(&res);
	if (!o)
		return -ENOMEM;
	if (dropped && json_object_set_new(o, "output_dropped", json_true()) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	if (json_object_set_new(o, "exec", json_string(d->id)) < 0 ||
	    json_object_set_new(o, "cancelled", json_boolean(cancelled)) < 0 ||
	    json_object_set_new(o, "sandbox_disposed", json_boolean(disposed)) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	/* as the blocking exec's reply: a failure (a timeout too) is "ok": false with the error */
	if (error.err) {
		json_t *full = mfs_error_reply(&error, o);
		json_decref(o);
		o = full;
	} else {
		json_t *full = json_pack("{s:b}", "ok", 1);   /* "ok" first, as in every reply */
		if (full && json_object_update(full, o) < 0) {
			json_decref(full);
			full = NULL;
		}
		json_decref(o);
		o = full;
	}
	if (!o)
		return -ENOMEM;
	*text = mfs_reply_dump(o, len);
	json_decref(o);
	return *text ? 0 : -ENOMEM;
}

/* texts.c's builder of `wait`: the reply, its peak counted against the reply budget. */
static int build_wait(struct mfs *fs, void *arg, char **text, size_t *len, struct mafsbx_error *err)
{
	struct mfs_dexec *d = arg;
	pthread_mutex_lock(&d->mu);
	size_t out = (size_t)d->len[0], errl = (size_t)d->len[1];
	pthread_mutex_unlock(&d->mu);
	/* the streams' copies beside what the reply's views and encodings hold */
	size_t cost = out + errl + mfs_exec_reply_cost(out, errl);
	char what[160];
	snprintf(what, sizeof(what), "%s/execs/%s/wait (%zu bytes of output)", d->sandbox, d->id, out + errl);
	int r = mfs_reply_budget_take(fs, cost, what, err);
	if (r < 0) {
		log_warn("%s", err->message);
		return r;
	}
	r = wait_reply(d, text, len);
	mfs_reply_budget_put(fs, cost);
	mfs_memory_trim(cost);
	return r < 0 ? mafsbx_error_set(err, MAFSBX_EK_NOMEM, "%s: out of memory building the reply", what) : 0;
}

/* texts.c's builder of an exec's `status`. */
static int build_status(struct mfs *fs, void *arg, char **text, size_t *len, struct mafsbx_error *err)
{
	(void)fs;
	struct mfs_dexec *d = arg;
	pthread_mutex_lock(&d->mu);
	json_t *o = status_json(d);
	pthread_mutex_unlock(&d->mu);
	*text = o ? mfs_reply_dump(o, len) : NULL;
	json_decref(o);
	return *text ? 0 : mafsbx_error_set(err, MAFSBX_EK_NOMEM, "exec %s: out of memory for its status", d->id);
}

/* This handle's text, made (or joined) by the first read or open that needs it. */
static int handle_text(struct mfs_exec_handle *x, const char **data, size_t *len)
{
	struct mfs_text *t = atomic_load(&x->text);
	if (!t) {
		struct mfs_dexec *d = x->d;
		bool wait = x->file == MFS_EXEC_WAIT;
		char key[160];
		snprintf(key, sizeof(key), "%s/execs/%s/%s", d->sandbox, d->id, wait ? "wait" : "status");
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		/* a finished exec's reply never changes: handles still holding it share it */
		int r = mfs_text_get(d->fs, key, wait, wait ? build_wait : build_status, d, &t, &e);
		if (r < 0)
			return mafsbx_error_errno(&e, r);
		struct mfs_text *none = NULL;
		if (!atomic_compare_exchange_strong(&x->text, &none, t)) {
			mfs_text_put(t);   /* another read of this handle stored its own first */
			t = none;
		}
	}
	*data = mfs_text_data(t, len);
	return 0;
}

static void handle_free(struct mfs_exec_handle *x)
{
	mfs_dexec_put(x->d);
	mfs_text_put(atomic_load(&x->text));
	free(x);
}

static void handle_discard(struct mfs_handle *h)
{
	handle_free((struct mfs_exec_handle *)h);
}

int mfs_exec_open(struct mfs *fs, const struct mfs_node *n, struct fuse_file_info *fi)
{
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EACCES;
	struct mfs_dexec *d = mfs_dexec_find(fs, n->name, n->exec_id);
	if (!d)
		return -ENOENT;
	struct mfs_exec_handle *x = calloc(1, sizeof(*x));
	if (!x) {
		mfs_dexec_put(d);
		return -ENOMEM;
	}
	x->h.type = MFS_H_EXEC;
	x->h.discard = handle_discard;
	x->d = d;
	x->file = n->exec_file;
	atomic_init(&x->text, NULL);
	if (x->file == MFS_EXEC_STATUS) {
		const char *data;
		size_t len;
		int r = handle_text(x, &data, &len);
		if (r < 0) {
			handle_free(x);
			return r;
		}
	}
	fi->fh = (uint64_t)(uintptr_t)x;
	/* contents grow or are made on open: never the kernel's idea of the size */
	fi->direct_io = 1;
	return 0;
}

static int text_read(const char *text, size_t len, char *buf, size_t size, off_t off)
{
	if (off < 0)
		return -EINVAL;
	if ((size_t)off >= len)
		return 0;
	size_t n = len - (size_t)off < size ? len - (size_t)off : size;
	memcpy(buf, text + off, n);
	return (int)n;
}

int mfs_exec_read(struct mfs_exec_handle *x, char *buf, size_t size, off_t off)
{
	struct mfs_dexec *d = x->d;
	switch (x->file) {
	case MFS_EXEC_STDOUT:
	case MFS_EXEC_STDERR: {
		int i = x->file == MFS_EXEC_STDERR;
		pthread_mutex_lock(&d->mu);
		uint64_t have = d->len[i];
		pthread_mutex_unlock(&d->mu);
		if (off < 0)
			return -EINVAL;
		if ((uint64_t)off >= have)
			return 0;   /* EOF at the current end: `tail -f` asks again */
		size_t n = have - (uint64_t)off < size ? (size_t)(have - (uint64_t)off) : size;
		ssize_t got = pread(d->fd[i], buf, n, off);
		return got < 0 ? -errno : (int)got;
	}
	case MFS_EXEC_STATUS:
	case MFS_EXEC_WAIT: {
		if (x->file == MFS_EXEC_WAIT && !atomic_load(&x->text)) {
			pthread_mutex_lock(&d->mu);
			bool ended = mfs_dexec_wait_end(d, 24LL * 3600 * 1000);   /* lowlevel.c parks the read until the end instead */
			pthread_mutex_unlock(&d->mu);
			if (!ended)
				return -ENOTCONN;   /* the mount ends while the job runs on */
		}
		const char *text;
		size_t len;
		int r = handle_text(x, &text, &len);
		return r < 0 ? r : text_read(text, len, buf, size, off);
	}
	}
	return -EBADF;
}

int mfs_exec_when_done(struct mfs_exec_handle *x, void (*fn)(void *arg), void *arg)
{
	if (x->file != MFS_EXEC_WAIT)
		return 1;
	struct mfs_dexec *d = x->d;
	pthread_mutex_lock(&d->mu);
	if (!d->running || d->abandoned) {
		pthread_mutex_unlock(&d->mu);
		return 1;
	}
	struct exec_waiter *w = malloc(sizeof(*w));
	if (!w) {
		pthread_mutex_unlock(&d->mu);
		return -ENOMEM;
	}
	*w = (struct exec_waiter){ .fn = fn, .arg = arg, .next = d->waiters };
	d->waiters = w;
	pthread_mutex_unlock(&d->mu);
	return 0;
}

bool mfs_exec_unpark(struct mfs_exec_handle *x, void *arg)
{
	struct mfs_dexec *d = x->d;
	bool found = false;
	pthread_mutex_lock(&d->mu);
	/* exec_main takes the whole list under mu: what is still here will not be called */
	for (struct exec_waiter **pp = &d->waiters; *pp; pp = &(*pp)->next)
		if ((*pp)->arg == arg) {
			struct exec_waiter *w = *pp;
			*pp = w->next;
			free(w);
			found = true;
			break;
		}
	pthread_mutex_unlock(&d->mu);
	return found;
}

void mfs_exec_release(struct mfs_exec_handle *x)
{
	handle_free(x);
}

int mfs_exec_getattr(struct mfs *fs, const struct mfs_node *n, struct stat *st)
{
	struct mfs_dexec *d = mfs_dexec_find(fs, n->name, n->exec_id);
	if (!d)
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	/* the owner and umask of the sandbox's files (kinds.c sandbox_file_stat) */
	st->st_uid = fs->opt.uid;
	st->st_gid = fs->opt.gid;
	st->st_blksize = 4096;
	pthread_mutex_lock(&d->mu);
	st->st_mtime = st->st_ctime = st->st_atime = (time_t)d->started_s;
	if (n->type == MFS_N_EXEC_DIR) {
		st->st_mode = mfs_kind_mode(n->type) & ~fs->opt.umask;   /* its row's (rows.h) */
		st->st_nlink = 2;
	} else {
		st->st_mode = mfs_kind_mode(n->type) & ~fs->opt.umask;
		st->st_nlink = 1;
		if (n->exec_file == MFS_EXEC_STDOUT || n->exec_file == MFS_EXEC_STDERR)
			st->st_size = (off_t)d->len[n->exec_file == MFS_EXEC_STDERR];
		if (!d->running)
			st->st_mtime = (time_t)(d->started_s + d->duration_ms / 1000);
	}
	pthread_mutex_unlock(&d->mu);
	mfs_dexec_put(d);
	return 0;
}
