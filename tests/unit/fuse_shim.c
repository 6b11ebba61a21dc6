/*
 * fuse_shim.c: libfuse's request-side entry points for unit tests (see
 * fuse_shim.h), so the daemon's low-level handlers run unchanged on a fake
 * request. Each fuse_reply_* records the one answer and wakes shim_wait();
 * a second answer to one request, which libfuse would take as a use after
 * free, fails the test at once. A listing's entries are packed in a layout
 * of this file's own, read back by shim_dirent_next(). The kernel-facing
 * calls a unit test never reaches (no session: notify.c needs fs->se) answer
 * as a kernel without the feature would.
 */
#include "fuse_shim.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"

/* How long shim_wait() waits for a transaction's answer: far above any run here. */
#define ANSWER_WAIT_MS 60000

struct fuse_req *shim_req(struct mfs *fs, uid_t uid)
{
	struct fuse_req *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->fs = fs;
	r->ctx.uid = uid;
	r->ctx.gid = uid;
	r->ctx.pid = getpid();
	pthread_mutex_init(&r->mu, NULL);
	mafsbx_cond_init_monotonic(&r->done);
	return r;
}

void shim_free(struct fuse_req *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->done);
	free(r->buf);
	free(r);
}

bool shim_answered(struct fuse_req *r)
{
	pthread_mutex_lock(&r->mu);
	bool a = r->answer != SHIM_NONE;
	pthread_mutex_unlock(&r->mu);
	return a;
}

void shim_wait(struct fuse_req *r)
{
	struct timespec until = mafsbx_monotonic_after_ms(ANSWER_WAIT_MS);
	pthread_mutex_lock(&r->mu);
	int e = 0;
	while (r->answer == SHIM_NONE && e != ETIMEDOUT)
		e = pthread_cond_timedwait(&r->done, &r->mu, &until);
	bool answered = r->answer != SHIM_NONE;
	pthread_mutex_unlock(&r->mu);
	if (!answered)
		fail_msg("no answer to the request within %d ms", ANSWER_WAIT_MS);
}

void shim_interrupt(struct fuse_req *r)
{
	pthread_mutex_lock(&r->mu);
	fuse_interrupt_func_t f = r->interrupt;
	void *data = r->interrupt_data;
	pthread_mutex_unlock(&r->mu);
	if (f)
		f(r, data);
}

/* Record an answer; the caller fills what it carries under the lock. */
static int answer(struct fuse_req *r, enum shim_answer a, int err, const void *buf, size_t len)
{
	pthread_mutex_lock(&r->mu);
	if (r->answers++) {
		pthread_mutex_unlock(&r->mu);
		fail_msg("request answered twice (%d after %d)", (int)a, (int)r->answer);
	}
	r->answer = a;
	r->err = err;
	if (buf) {
		r->buf = malloc(len + 1);
		assert_non_null(r->buf);
		memcpy(r->buf, buf, len);
		r->buf[len] = '\0';
		r->len = len;
	}
	pthread_cond_broadcast(&r->done);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

int fuse_reply_err(fuse_req_t req, int err)
{
	return answer(req, SHIM_ERR, err, NULL, 0);
}

void fuse_reply_none(fuse_req_t req)
{
	answer(req, SHIM_FORGOTTEN, 0, NULL, 0);
}

int fuse_reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	req->entry = *e;
	answer(req, SHIM_ENTRY, 0, NULL, 0);
	return req->caller_gone ? -ENOENT : 0;
}

int fuse_reply_create(fuse_req_t req, const struct fuse_entry_param *e, const struct fuse_file_info *fi)
{
	req->entry = *e;
	req->fi = *fi;
	answer(req, SHIM_CREATE, 0, NULL, 0);
	return req->caller_gone ? -ENOENT : 0;
}

int fuse_reply_attr(fuse_req_t req, const struct stat *attr, double attr_timeout)
{
	req->attr = *attr;
	req->attr_timeout = attr_timeout;
	return answer(req, SHIM_ATTR, 0, NULL, 0);
}

int fuse_reply_readlink(fuse_req_t req, const char *link)
{
	return answer(req, SHIM_READLINK, 0, link, strlen(link));
}

int fuse_reply_open(fuse_req_t req, const struct fuse_file_info *fi)
{
	req->fi = *fi;
	answer(req, SHIM_OPEN, 0, NULL, 0);
	return req->caller_gone ? -ENOENT : 0;
}

int fuse_reply_write(fuse_req_t req, size_t count)
{
	req->count = count;
	return answer(req, SHIM_WRITE, 0, NULL, 0);
}

int fuse_reply_buf(fuse_req_t req, const char *buf, size_t size)
{
	return answer(req, SHIM_BUF, 0, buf ? buf : "", buf ? size : 0);
}

int fuse_reply_statfs(fuse_req_t req, const struct statvfs *stbuf)
{
	(void)stbuf;
	return answer(req, SHIM_STATFS, 0, NULL, 0);
}

void *fuse_req_userdata(fuse_req_t req)
{
	return req->fs;
}

const struct fuse_ctx *fuse_req_ctx(fuse_req_t req)
{
	return &req->ctx;
}

void fuse_req_interrupt_func(fuse_req_t req, fuse_interrupt_func_t func, void *data)
{
	pthread_mutex_lock(&req->mu);
	req->interrupt = func;
	req->interrupt_data = data;
	pthread_mutex_unlock(&req->mu);
}

int fuse_req_interrupted(fuse_req_t req)
{
	(void)req;
	return 0;
}

/* No session in a unit test (fs->se is NULL): nothing to tell a kernel. */
int fuse_lowlevel_notify_inval_inode(struct fuse_session *se, fuse_ino_t ino, off_t off, off_t len)
{
	(void)se;
	(void)ino;
	(void)off;
	(void)len;
	return -ENOSYS;
}

#if MFS_HAVE_PASSTHROUGH
/* As a kernel without passthrough: the file is served by the daemon. */
int fuse_passthrough_open(fuse_req_t req, int fd)
{
	(void)req;
	(void)fd;
	return -ENOSYS;
}

int fuse_passthrough_close(fuse_req_t req, int backing_id)
{
	(void)req;
	(void)backing_id;
	return 0;
}
#endif

/* One packed listing entry: the header, then the name and its NUL, to 8 bytes. */
struct packed {
	uint64_t ino;
	int64_t next;
	uint32_t mode;
	uint32_t namelen;
	char name[];
};

static size_t packed_size(const char *name)
{
	return (offsetof(struct packed, name) + strlen(name) + 1 + 7) & ~(size_t)7;
}

static size_t pack(char *buf, size_t bufsize, const char *name, fuse_ino_t ino, mode_t mode, off_t off)
{
	size_t need = packed_size(name);
	if (!buf || need > bufsize)
		return need;
	memset(buf, 0, need);
	struct packed *p = (struct packed *)(void *)buf;
	p->ino = ino;
	p->next = off;
	p->mode = mode;
	p->namelen = (uint32_t)strlen(name);
	memcpy(p->name, name, p->namelen + 1);
	return need;
}

size_t fuse_add_direntry(fuse_req_t req, char *buf, size_t bufsize, const char *name, const struct stat *stbuf,
			 off_t off)
{
	(void)req;
	return pack(buf, bufsize, name, 0, stbuf ? stbuf->st_mode : 0, off);
}

size_t fuse_add_direntry_plus(fuse_req_t req, char *buf, size_t bufsize, const char *name,
			      const struct fuse_entry_param *e, off_t off)
{
	(void)req;
	return pack(buf, bufsize, name, e ? e->ino : 0, e ? e->attr.st_mode : 0, off);
}

bool shim_dirent_next(struct fuse_req *r, size_t *pos, struct shim_dirent *d)
{
	if (r->answer != SHIM_BUF || *pos + offsetof(struct packed, name) > r->len)
		return false;
	const struct packed *p = (const struct packed *)(const void *)(r->buf + *pos);
	d->name = p->name;
	d->next = p->next;
	d->ino = p->ino;
	d->mode = p->mode;
	*pos += packed_size(p->name);
	return true;
}
