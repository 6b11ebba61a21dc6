/*
 * work.c: NAME/work/ and NAME/root/, a sandbox's files (doc/protocol.md "The tree", mafsbxfs(1) READING AND WRITING FILES).
 *
 * Every call goes through the sandbox's plane (plane.h); this file only
 * turns FUSE's view into plane calls and back:
 *  - attributes are shown with the mount's -o uid/gid/umask, never the
 *    guest's owner; a guest link is a link (readlink is refused elsewhere);
 *    a fifo, socket or device is shown as an empty regular file with mode
 *    0000 whose open is EPERM, so the kernel never treats it as special
 *    (it would open a pipe or a HOST device itself, without asking us);
 *  - listings keep a plane directory open per opendir and hand out the
 *    plane's positions as offsets, so a huge directory is listed in pieces;
 *  - every open file is direct_io: a read after the guest changed a file
 *    sees its new content and size, never a size cached by the kernel;
 *  - writes, mkdir, remove, rename, chmod, truncate, utimens under work/;
 *    root/ is read-only (EROFS).
 * The engine plane lists by the guest's own find (plane_engine.c); the
 * names this mount knows of (declared outputs and files written through it)
 * are its candidates, listed even where the guest's listing was cut. A
 * call finds its sandbox's plane target through target.c.
 */
#include "ctx.h"
#include "extras.h"
#include "mfs.h"
#include "mount.h"
#include "target.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "names.h"
#include "sandbox.h"

struct mfs_work {
	struct mfs_handle h;         /* must stay first */
	struct mafsbx_plane_file *f;
	char id[65];
	char name[MAFSBX_NAME_LEN + 1];
	char *rel;
};

struct mfs_dir {
	struct mfs_handle h;         /* must stay first */
	struct mafsbx_plane_dir *d;
};

static void to_stat(const struct mfs *fs, const struct mafsbx_pstat *p, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	mode_t perm = p->mode & 07777 & ~fs->opt.umask;
	switch (p->type) {
	case MAFSBX_PT_FILE:
		st->st_mode = S_IFREG | perm;
		st->st_size = (off_t)p->size;
		break;
	case MAFSBX_PT_DIR:
		st->st_mode = S_IFDIR | perm;
		break;
	case MAFSBX_PT_SYMLINK:
		st->st_mode = S_IFLNK | 0777;
		break;
	case MAFSBX_PT_OTHER:
		st->st_mode = S_IFREG;   /* mode 0000, size 0: see the file comment */
		break;
	}
	st->st_nlink = p->nlink ? p->nlink : 1;
	st->st_uid = fs->opt.uid;
	st->st_gid = fs->opt.gid;
	st->st_atim = p->atime;
	st->st_mtim = p->mtime;
	st->st_ctim = p->ctime;
	st->st_blksize = 65536;
	st->st_blocks = (st->st_size + 511) / 512;
}

/*
 * A file being written that is not at its path yet (the engine plane sends
 * it at close): an fstat(2) reaches us as a getattr of the path without a
 * handle, so the open handle answers it. 0 when one was found.
 */
struct write_stat {
	const struct mfs_node *n;
	struct mafsbx_pstat *p;
};

static int write_stat_of(struct mfs_handle *h, void *arg)
{
	struct write_stat *ws = arg;
	struct mfs_work *w = (struct mfs_work *)h;
	if (h->type != MFS_H_WORK || !mafsbx_plane_file_writable(w->f) || strcmp(w->name, ws->n->name) ||
	    strcmp(w->rel, ws->n->rel))
		return 0;
	mafsbx_plane_fstat(w->f, ws->p);
	return 1;
}

static int open_write_stat(struct mfs *fs, const struct mfs_node *n, struct mafsbx_pstat *p)
{
	struct write_stat ws = { n, p };
	return mfs_handles_each(fs, write_stat_of, &ws) ? 0 : -ENOENT;
}

int mfs_work_getattr(struct mfs_ctx *c, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	struct mfs_handle *h = mfs_handle_of(fi);
	struct mafsbx_pstat p;
	if (h && h->type == MFS_H_WORK) {
		mafsbx_plane_fstat(((struct mfs_work *)h)->f, &p);
		to_stat(fs, &p, st);
		return 0;
	}
	const struct mafsbx_sandbox_info *info;
	struct mafsbx_plane_target t;
	struct mafsbx_error e;
	int r;
	for (int attempt = 0;; attempt++) {
		struct mfs_snapshot *s = mfs_target_of(c, n->name, &info, &t, &r, attempt > 0);
		if (!s)
			return r;
		mafsbx_error_clear(&e);
		r = mafsbx_plane_stat(fs->planes, &t, mfs_base_of(n), n->rel, &p, &e);
		if (r == 0 && !*n->rel && n->type == MFS_N_WORK && !p.mtime.tv_sec)
			p.mtime = p.ctime = p.atime = (struct timespec){ (time_t)info->created, 0 };
		mfs_target_put(c, s);
		if (!mfs_retry_stale(fs, attempt, r, &e))
			break;
	}
	if (r < 0 && e.err == ENOENT && n->type == MFS_N_WORK && open_write_stat(fs, n, &p) == 0)
		r = 0;
	if (r < 0)
		return mfs_plane_errno("stat", n, &e, r);
	to_stat(fs, &p, st);
	return 0;
}

/* The next component of `path` below directory `dir` ("" = work/ itself), or NULL. */
static char *child_of(const char *dir, const char *path)
{
	const char *p = path;
	size_t dl = strlen(dir);
	if (dl) {
		if (strncmp(path, dir, dl) || path[dl] != '/')
			return NULL;
		p = path + dl + 1;
	}
	const char *slash = strchr(p, '/');
	size_t len = slash ? (size_t)(slash - p) : strlen(p);
	return len ? strndup(p, len) : NULL;
}

/* The names directly in `rel` that this mount knows of (the engine plane's candidates). */
static char **known_children(struct mfs *fs, const struct mafsbx_sandbox_info *info, const char *rel, size_t *nk)
{
	size_t np = 0;
	*nk = 0;
	char **paths = mfs_extra_paths(fs, info, true, &np);
	char **kids = calloc(np + 1, sizeof(*kids));
	if (!paths || !kids) {
		mfs_strv_free(paths);
		free(kids);
		return NULL;
	}
	for (size_t i = 0; i < np; i++) {
		char *c = child_of(rel, paths[i]);
		if (!c)
			continue;
		bool dup = false;
		for (size_t k = 0; k < *nk && !dup; k++)
			dup = !strcmp(kids[k], c);
		if (dup)
			free(c);
		else
			kids[(*nk)++] = c;
	}
	mfs_strv_free(paths);
	return kids;
}

static void dir_discard(struct mfs_handle *h)
{
	mfs_work_releasedir((struct mfs_dir *)h);
}

int mfs_work_opendir(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	struct mfs_dir *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->h.type = MFS_H_DIR;
	d->h.discard = dir_discard;
	int r;
	struct mafsbx_error e;
	for (int attempt = 0;; attempt++) {
		const struct mafsbx_sandbox_info *info;
		struct mafsbx_plane_target t;
		struct mfs_snapshot *s = mfs_target_of(c, n->name, &info, &t, &r, attempt > 0);
		if (!s) {
			free(d);
			return r;
		}
		size_t nk = 0;
		char **kids = n->type == MFS_N_WORK ? known_children(fs, info, n->rel, &nk) : NULL;
		mafsbx_error_clear(&e);
		if (n->type == MFS_N_WORK && !kids)
			r = mafsbx_error_set(&e, MAFSBX_EK_NOMEM, "out of memory");
		else
			r = mafsbx_plane_opendir(fs->planes, &t, mfs_base_of(n), n->rel, (const char *const *)kids, nk,
						 &d->d, &e);
		mfs_strv_free(kids);
		mfs_target_put(c, s);
		if (!mfs_retry_stale(fs, attempt, r, &e))
			break;
	}
	if (r < 0) {
		free(d);
		return mfs_plane_errno("list", n, &e, r);
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	return 0;
}

struct fill_ctx {
	struct mfs *fs;
	void *buf;
	fuse_fill_dir_t filler;
};

static int fill_one(void *ctx, const char *name, const struct mafsbx_pstat *p, uint64_t next)
{
	struct fill_ctx *c = ctx;
	struct stat st;
	to_stat(c->fs, p, &st);
	return c->filler(c->buf, name, &st, (off_t)next, FUSE_FILL_DIR_PLUS);
}

int mfs_work_readdir(struct mfs *fs, struct mfs_dir *d, void *buf, fuse_fill_dir_t filler, off_t off)
{
	struct fill_ctx c = { .fs = fs, .buf = buf, .filler = filler };
	return mafsbx_plane_readdir(d->d, (uint64_t)off, fill_one, &c);
}

void mfs_work_releasedir(struct mfs_dir *d)
{
	if (!d)
		return;
	mafsbx_plane_closedir(d->d);
	free(d);
}

static void work_discard(struct mfs_handle *h)
{
	mfs_work_discard((struct mfs_work *)h);
}

static int open_file(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi, bool create, mode_t mode)
{
	struct mfs *fs = c->fs;
	const struct mafsbx_sandbox_info *info;
	struct mafsbx_plane_target t;
	int r;
	int acc = fi->flags & O_ACCMODE;
	if (n->type == MFS_N_ROOTFS && (acc != O_RDONLY || create || (fi->flags & O_TRUNC)))
		return -EROFS;
	if (!*n->rel)
		return create ? -EEXIST : -EISDIR;
	struct mfs_work *w = calloc(1, sizeof(*w));
	if (!w || !(w->rel = strdup(n->rel))) {
		free(w);
		return -ENOMEM;
	}
	w->h.type = MFS_H_WORK;
	w->h.discard = work_discard;
	struct mafsbx_error e;
	for (int attempt = 0;; attempt++) {
		struct mfs_snapshot *s = mfs_target_of(c, n->name, &info, &t, &r, attempt > 0);
		if (!s) {
			free(w->rel);
			free(w);
			return r;
		}
		snprintf(w->id, sizeof(w->id), "%s", info->id);
		snprintf(w->name, sizeof(w->name), "%s", info->name);
		mafsbx_error_clear(&e);
		if (acc == O_RDONLY && !create && fs->opt.frozen_reads && (r = mfs_charge_call(c)) < 0) {
			mfs_target_put(c, s);
			break;   /* another user's reads that may wait hold their share of the workers */
		}
		if (acc == O_RDONLY && !create) {
			r = mafsbx_plane_open_read(fs->planes, &t, mfs_base_of(n), n->rel, fs->opt.max_read, &w->f, &e);
		} else {
			unsigned fl = 0;
			if ((fi->flags & O_TRUNC) || create)
				fl |= MAFSBX_PW_TRUNC;
			if (create)
				fl |= MAFSBX_PW_CREATE;
			if (create && (fi->flags & O_EXCL))
				fl |= MAFSBX_PW_EXCL;
			if (fi->flags & O_APPEND)
				fl |= MAFSBX_PW_APPEND;
			if (acc == O_RDWR)
				fl |= MAFSBX_PW_READ;
			r = mafsbx_plane_open_write(fs->planes, &t, n->rel, fl, mode, fs->opt.max_write, &w->f, &e);
		}
		mfs_target_put(c, s);
		if (!mfs_retry_stale(fs, attempt, r, &e))
			break;
	}
	if (r < 0) {
		free(w->rel);
		free(w);
		return mfs_plane_errno(create ? "create" : "open", n, &e, r);
	}
	fi->fh = (uint64_t)(uintptr_t)w;
	/* The guest may change the file at any time: never serve a stale size or page. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	return 0;
}

int mfs_work_open(struct mfs_ctx *c, const struct mfs_node *n, struct fuse_file_info *fi)
{
	return open_file(c, n, fi, false, 0);
}

int mfs_work_create(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode, struct fuse_file_info *fi)
{
	return open_file(c, n, fi, true, mode);
}

int mfs_work_read_fd(const struct mfs_handle *h)
{
	return h && h->type == MFS_H_WORK ? mafsbx_plane_read_fd(((const struct mfs_work *)h)->f) : -1;
}

int mfs_work_read(struct mfs_work *w, char *buf, size_t size, off_t off)
{
	if (off < 0)
		return -EINVAL;
	ssize_t n = mafsbx_plane_pread(w->f, buf, size, (uint64_t)off);
	return (int)n;
}

int mfs_work_write(struct mfs *fs, struct mfs_work *w, const char *buf, size_t size, off_t off)
{
	(void)fs;
	if (off < 0)
		return -EINVAL;
	return (int)mafsbx_plane_pwrite(w->f, buf, size, (uint64_t)off);
}

int mfs_work_ftruncate(struct mfs *fs, struct mfs_work *w, off_t size)
{
	(void)fs;
	if (size < 0)
		return -EINVAL;
	return mafsbx_plane_ftruncate(w->f, (uint64_t)size);
}

/*
 * True when the process closing the file is being killed by a signal. A
 * close from exit_files() runs after do_exit() stored the exit code, which
 * /proc/PID/stat shows (field 52); the low 7 bits are the killing signal.
 * A writer killed mid-stream must leave the old file whole, not replace it
 * with what it managed to write (mafsbxfs(1) READING AND WRITING FILES).
 */
static bool caller_killed(const struct mfs_ctx *c)
{
	pid_t pid = c->pid;
	if (pid <= 0)
		return false;
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');   /* comm may hold spaces and parentheses */
	if (!p)
		return false;
	/* p points before field 3; the exit code is field 52. */
	int field = 2;
	long long v = 0, flags = 0;
	for (const char *q = p + 1; *q; q++) {
		if (*q != ' ')
			continue;
		field++;
		if (field == 9)
			flags = strtoll(q + 1, NULL, 10);
		if (field == 52) {
			v = strtoll(q + 1, NULL, 10);
			break;
		}
	}
	/* PF_EXITING (0x4): the close comes from the exit path. */
	return (flags & 0x4) && (v & 0x7f) != 0;
}

static int work_commit(struct mfs_ctx *c, struct mfs_work *w, bool last);

int mfs_work_flush(struct mfs_ctx *c, struct mfs_work *w)
{
	return work_commit(c, w, false);
}

static int work_commit(struct mfs_ctx *c, struct mfs_work *w, bool last)
{
	struct mfs *fs = c->fs;
	if (!mafsbx_plane_file_writable(w->f))
		return 0;
	if (caller_killed(c)) {
		log_info("write %s/work/%s: the writer was killed; the file is left as it was", w->name, w->rel);
		mafsbx_plane_abandon(w->f);
		return 0;
	}
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_plane_commit(w->f, last, &e);
	if (r < 0) {
		log_warn("write %s/work/%s: %s", w->name, w->rel, e.message);
		return mafsbx_error_errno(&e, r);
	}
	mfs_extra_add_written(fs, w->id, w->rel);
	return 0;
}

void mfs_work_release(struct mfs_ctx *c, struct mfs_work *w)
{
	if (!w)
		return;
	work_commit(c, w, true);
	mfs_work_discard(w);
}

void mfs_work_discard(struct mfs_work *w)
{
	if (!w)
		return;
	mafsbx_plane_close(w->f);
	free(w->rel);
	free(w);
}

/* ---- path operations ------------------------------------------------------ */

/* Run `call` (a plane path operation over &t and n->rel, with &e) for n's sandbox. */
#define WITH_TARGET(ctx, n, what, call)                                                 \
	do {                                                                           \
		const struct mafsbx_sandbox_info *info;                               \
		struct mafsbx_plane_target t;                                          \
		struct mafsbx_error e;                                                 \
		for (int attempt = 0;; attempt++) {                                    \
			struct mfs_snapshot *s = mfs_target_of((ctx), (n)->name, &info, &t, &r, attempt > 0); \
			if (!s)                                                        \
				return r;                                              \
			mafsbx_error_clear(&e);                                        \
			r = (call);                                                    \
			if (r == 0)                                                    \
				snprintf(id, sizeof(id), "%s", info->id);              \
			mfs_target_put((ctx), s);                                           \
			if (!mfs_retry_stale((ctx)->fs, attempt, r, &e))                        \
				break;                                                 \
		}                                                                      \
		if (r < 0)                                                             \
			return mfs_plane_errno(what, (n), &e, r);                          \
	} while (0)

int mfs_work_mkdir(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode)
{
	struct mfs *fs = c->fs;
	int r;
	char id[65];
	WITH_TARGET(c, n, "mkdir", mafsbx_plane_mkdir(fs->planes, &t, n->rel, mode, &e));
	mfs_extra_add_written(fs, id, n->rel);
	return 0;
}

int mfs_work_remove(struct mfs_ctx *c, const struct mfs_node *n, bool dir)
{
	struct mfs *fs = c->fs;
	int r;
	char id[65];
	WITH_TARGET(c, n, dir ? "rmdir" : "unlink", mafsbx_plane_remove(fs->planes, &t, n->rel, dir, &e));
	return 0;
}

int mfs_work_rename(struct mfs_ctx *c, const struct mfs_node *from, const struct mfs_node *to, unsigned flags)
{
	struct mfs *fs = c->fs;
	if (strcmp(from->name, to->name))
		return -EXDEV;
	int r;
	char id[65];
	WITH_TARGET(c, from, "rename", mafsbx_plane_rename(fs->planes, &t, from->rel, to->rel, flags, &e));
	mfs_extra_add_written(fs, id, to->rel);
	if (flags & RENAME_EXCHANGE)
		mfs_extra_add_written(fs, id, from->rel);   /* a file came to `from` too */
	return 0;
}

int mfs_work_chmod(struct mfs_ctx *c, const struct mfs_node *n, mode_t mode)
{
	struct mfs *fs = c->fs;
	int r;
	char id[65];
	WITH_TARGET(c, n, "chmod", mafsbx_plane_chmod(fs->planes, &t, n->rel, mode, &e));
	return 0;
}

int mfs_work_truncate(struct mfs_ctx *c, const struct mfs_node *n, off_t size)
{
	struct mfs *fs = c->fs;
	if (size < 0)
		return -EINVAL;
	int r;
	char id[65];
	WITH_TARGET(c, n, "truncate", mafsbx_plane_truncate(fs->planes, &t, n->rel, (uint64_t)size, &e));
	return 0;
}

int mfs_work_utimens(struct mfs_ctx *c, const struct mfs_node *n, const struct timespec tv[2], struct fuse_file_info *fi)
{
	struct mfs *fs = c->fs;
	struct mfs_handle *h = mfs_handle_of(fi);
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	int r;
	char id[65];
	if (h && h->type == MFS_H_WORK) {
		/* touch(1) on a file being written: stamp the path when it exists,
		 * else the send stamps its own time. */
		const struct mafsbx_sandbox_info *info;
		struct mafsbx_plane_target t;
		struct mafsbx_error e;
		struct mfs_snapshot *s = mfs_target_of(c, n->name, &info, &t, &r, false);
		if (!s)
			return r;
		mafsbx_error_clear(&e);
		mafsbx_plane_utimens(fs->planes, &t, n->rel, tv ? tv : now, &e);
		mfs_target_put(c, s);
		return 0;
	}
	WITH_TARGET(c, n, "utimens", mafsbx_plane_utimens(fs->planes, &t, n->rel, tv ? tv : now, &e));
	return 0;
}
