/*
 * work.c: NAME/work/, the sandbox's working directory (INTERFACE.md §3).
 *
 *  - getattr/lookup of any relative path: one frozen stat (files.h). A
 *    symlink is never presented (ELOOP), a fifo/device is EPERM.
 *  - readdir: only the declared outputs and the files written through this
 *    mount, never a guest listing; their attributes are fetched with ONE
 *    freeze (mafsbx_files_stat_many) and absent or unshowable ones omitted.
 *  - open for reading: the whole file is fetched under one freeze into a
 *    memfd spool and every read is a pread from it, so each open sees one
 *    snapshot and memory does not grow with the file.
 *  - open for writing / create: bytes are collected in a memfd and sent on
 *    flush (and on release if still unsent) as one tar under a freeze; the
 *    flush returns the failure, so close() reports it. An open without
 *    O_TRUNC of an existing file starts from its current content.
 *  - mkdir through the tar plane.
 *
 * The guest target of a sandbox is its full container ID (the freeze key)
 * and its work-dir.v1 label (the upstream default when absent).
 */
#include "mfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "files.h"
#include "freeze.h"
#include "log.h"
#include "names.h"
#include "sandbox.h"

struct mfs_work {
	struct mfs_handle h;         /* must stay first */
	pthread_mutex_t lock;
	int fd;                      /* the spool (memfd) */
	bool writable;
	bool dirty;                  /* unsent changes (a created file is dirty from the start) */
	int failed;                  /* a refused write: nothing is sent, close reports it */
	mode_t mode;                 /* permission bits to send */
	uint64_t size;               /* bytes in the spool */
	struct timespec mtime;
	char id[65];
	char name[MAFSBX_NAME_LEN + 1];
	char *work_dir;
	char *rel;
};

static int err_ret(const struct mafsbx_error *e, int r)
{
	if (e->err > 0)
		return -e->err;
	return r < 0 ? r : -EIO;
}

/* Fill the target of a sandbox (container ID + work dir). Returns the snapshot
 * holding `info` (the caller puts it) or NULL with the errno in *errp. */
static struct mfs_snapshot *target_of(struct mfs *fs, const char *name, const struct mafsbx_sandbox_info **info,
				      struct mafsbx_files_target *t, int *errp)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mfs_snapshot *s = mfs_sandbox_find(fs, name, info, &e);
	if (!s) {
		*errp = err_ret(&e, -ENOENT);
		return NULL;
	}
	memset(t, 0, sizeof(*t));
	t->container = (*info)->id;
	t->work_dir = (*info)->work_dir ? (*info)->work_dir : MAFSBX_DEFAULT_WORK_DIR;
	return s;
}

static int fstat_to_stat(const struct mafsbx_fstat *f, struct stat *st)
{
	switch (f->kind) {
	case MAFSBX_FK_ABSENT:
		return -ENOENT;
	case MAFSBX_FK_SYMLINK:
		return -ELOOP;
	case MAFSBX_FK_OTHER:
		return -EPERM;
	case MAFSBX_FK_FILE:
		st->st_mode = S_IFREG | (f->mode & 07777);
		st->st_nlink = 1;
		st->st_size = (off_t)f->size;
		break;
	case MAFSBX_FK_DIR:
		st->st_mode = S_IFDIR | (f->mode & 07777);
		st->st_nlink = 2;
		st->st_size = 0;
		break;
	}
	st->st_mtim = f->mtime;
	st->st_ctim = f->mtime;
	st->st_atim = f->mtime;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 65536;
	st->st_blocks = (st->st_size + 511) / 512;
	return 0;
}

static int handle_stat(struct mfs_work *w, struct stat *st)
{
	pthread_mutex_lock(&w->lock);
	st->st_mode = S_IFREG | (w->mode & 07777);
	st->st_nlink = 1;
	st->st_size = (off_t)w->size;
	st->st_mtim = w->mtime;
	st->st_ctim = w->mtime;
	st->st_atim = w->mtime;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_blksize = 65536;
	st->st_blocks = (st->st_size + 511) / 512;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

int mfs_work_getattr(struct mfs *fs, const struct mfs_node *n, struct stat *st, struct fuse_file_info *fi)
{
	struct mfs_handle *h = fi ? (struct mfs_handle *)(uintptr_t)fi->fh : NULL;
	if (h && h->type == MFS_H_WORK)
		return handle_stat((struct mfs_work *)h, st);

	const struct mafsbx_sandbox_info *info;
	struct mafsbx_files_target t;
	int r;
	struct mfs_snapshot *s = target_of(fs, n->name, &info, &t, &r);
	if (!s)
		return r;
	if (!*n->rel) {
		/* work/ itself: the directory the sandbox was made with. */
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		st->st_mtime = info->created;
		st->st_uid = getuid();
		st->st_gid = getgid();
		mfs_snapshot_put(s);
		return 0;
	}
	struct mafsbx_fstat f;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	memset(&f, 0, sizeof(f));
	r = mafsbx_files_stat(fs->fz, &t, n->rel, 0, &f, &e);
	mfs_snapshot_put(s);
	if (r < 0) {
		if (e.err != ENOENT)
			log_debug("stat %s/work/%s: %s", n->name, n->rel, e.message);
		return err_ret(&e, r);
	}
	return fstat_to_stat(&f, st);
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
	if (!len)
		return NULL;
	return strndup(p, len);
}

int mfs_work_readdir(struct mfs *fs, const struct mfs_node *n, void *buf, fuse_fill_dir_t filler)
{
	const struct mafsbx_sandbox_info *info;
	struct mafsbx_files_target t;
	int r;
	struct mfs_snapshot *s = target_of(fs, n->name, &info, &t, &r);
	if (!s)
		return r;
	size_t np = 0;
	char **paths = mfs_extra_paths(fs, info, true, &np);
	char **kids = calloc(np + 1, sizeof(*kids));
	char **full = calloc(np + 1, sizeof(*full));
	struct mafsbx_fstat *outs = calloc(np + 1, sizeof(*outs));
	int *rcs = calloc(np + 1, sizeof(*rcs));
	size_t nk = 0;
	if (!paths || !kids || !full || !outs || !rcs) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < np; i++) {
		char *c = child_of(n->rel, paths[i]);
		if (!c)
			continue;
		bool dup = false;
		for (size_t k = 0; k < nk && !dup; k++)
			dup = !strcmp(kids[k], c);
		if (dup) {
			free(c);
			continue;
		}
		size_t fl = strlen(n->rel) + strlen(c) + 2;
		full[nk] = malloc(fl);
		if (!full[nk]) {
			free(c);
			r = -ENOMEM;
			goto out;
		}
		snprintf(full[nk], fl, "%s%s%s", n->rel, *n->rel ? "/" : "", c);
		kids[nk++] = c;
	}
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (nk) {
		r = mafsbx_files_stat_many(fs->fz, &t, (const char *const *)full, nk, 0, outs, rcs, NULL, &e);
		if (r < 0) {
			log_debug("listing %s/work/%s: %s", n->name, n->rel, e.message);
			r = err_ret(&e, r);
			goto out;
		}
	}
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFDIR;
	filler(buf, ".", &st, 0, 0);
	filler(buf, "..", &st, 0, 0);
	for (size_t k = 0; k < nk; k++) {
		if (rcs[k] < 0)
			continue;
		memset(&st, 0, sizeof(st));
		if (fstat_to_stat(&outs[k], &st) < 0)
			continue;
		if (filler(buf, kids[k], &st, 0, FUSE_FILL_DIR_PLUS))
			break;
	}
	r = 0;
out:
	for (size_t k = 0; k < nk; k++) {
		free(kids[k]);
		free(full[k]);
	}
	free(kids);
	free(full);
	free(outs);
	free(rcs);
	mfs_strv_free(paths);
	mfs_snapshot_put(s);
	return r;
}

static struct mfs_work *work_new(const struct mafsbx_sandbox_info *info, const struct mafsbx_files_target *t,
				 const char *rel)
{
	struct mfs_work *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->h.type = MFS_H_WORK;
	w->fd = memfd_create("mafsbxfs-spool", MFD_CLOEXEC);
	w->work_dir = strdup(t->work_dir);
	w->rel = strdup(rel);
	if (w->fd < 0 || !w->work_dir || !w->rel) {
		if (w->fd >= 0)
			close(w->fd);
		free(w->work_dir);
		free(w->rel);
		free(w);
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	snprintf(w->id, sizeof(w->id), "%s", info->id);
	snprintf(w->name, sizeof(w->name), "%s", info->name);
	clock_gettime(CLOCK_REALTIME, &w->mtime);
	w->mode = 0644;
	return w;
}

static void work_free(struct mfs_work *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	free(w->work_dir);
	free(w->rel);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* Fetch the file into the spool (one freeze). */
static int spool_in(struct mfs *fs, struct mfs_work *w, const struct mafsbx_files_target *t, uint64_t cap)
{
	struct mafsbx_read_info ri;
	struct mafsbx_error e;
	memset(&ri, 0, sizeof(ri));
	mafsbx_error_clear(&e);
	int r = mafsbx_files_read(fs->fz, t, w->rel, cap, w->fd, NULL, 0, &ri, &e);
	if (r < 0) {
		if (e.err != ENOENT)
			log_debug("read %s/work/%s: %s", w->name, w->rel, e.message);
		return err_ret(&e, r);
	}
	off_t end = lseek(w->fd, 0, SEEK_END);
	w->size = end > 0 ? (uint64_t)end : 0;
	w->mode = ri.mode & 07777;
	w->mtime.tv_sec = ri.mtime;
	w->mtime.tv_nsec = 0;
	return 0;
}

int mfs_work_open(struct mfs *fs, const struct mfs_node *n, struct fuse_file_info *fi)
{
	if (!*n->rel)
		return -EISDIR;
	const struct mafsbx_sandbox_info *info;
	struct mafsbx_files_target t;
	int r;
	struct mfs_snapshot *s = target_of(fs, n->name, &info, &t, &r);
	if (!s)
		return r;
	int acc = fi->flags & O_ACCMODE;
	struct mfs_work *w = work_new(info, &t, n->rel);
	if (!w) {
		mfs_snapshot_put(s);
		return -ENOMEM;
	}
	if (acc == O_RDONLY) {
		r = spool_in(fs, w, &t, fs->opt.max_read);
	} else {
		w->writable = true;
		if (fi->flags & O_TRUNC) {
			/* Keep the mode of what is there; the content goes. */
			struct mafsbx_fstat f;
			struct mafsbx_error e;
			mafsbx_error_clear(&e);
			memset(&f, 0, sizeof(f));
			r = mafsbx_files_stat(fs->fz, &t, n->rel, 0, &f, &e);
			if (r < 0)
				r = err_ret(&e, r);
			else if (f.kind == MAFSBX_FK_FILE)
				w->mode = f.mode & 07777;
			else if (f.kind == MAFSBX_FK_DIR)
				r = -EISDIR;
			else if (f.kind != MAFSBX_FK_ABSENT)
				r = fstat_to_stat(&f, &(struct stat){ 0 });
			w->dirty = true;
		} else {
			r = spool_in(fs, w, &t, fs->opt.max_write);
		}
	}
	mfs_snapshot_put(s);
	if (r < 0) {
		work_free(w);
		return r;
	}
	fi->fh = (uint64_t)(uintptr_t)w;
	fi->keep_cache = 0;
	return 0;
}

int mfs_work_create(struct mfs *fs, const struct mfs_node *n, mode_t mode, struct fuse_file_info *fi)
{
	if (!*n->rel)
		return -EEXIST;
	const struct mafsbx_sandbox_info *info;
	struct mafsbx_files_target t;
	int r;
	struct mfs_snapshot *s = target_of(fs, n->name, &info, &t, &r);
	if (!s)
		return r;
	struct mfs_work *w = work_new(info, &t, n->rel);
	mfs_snapshot_put(s);
	if (!w)
		return -ENOMEM;
	w->writable = true;
	w->dirty = true;
	w->mode = mode & 07777;
	fi->fh = (uint64_t)(uintptr_t)w;
	return 0;
}

int mfs_work_read(struct mfs_work *w, char *buf, size_t size, off_t off)
{
	if (off < 0)
		return -EINVAL;
	ssize_t n = pread(w->fd, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

int mfs_work_write(struct mfs *fs, struct mfs_work *w, const char *buf, size_t size, off_t off)
{
	if (!w->writable)
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	if ((uint64_t)off + size > fs->opt.max_write) {
		/* Never send a partial file in place of the one the caller meant. */
		w->failed = EFBIG;
		pthread_mutex_unlock(&w->lock);
		return -EFBIG;
	}
	ssize_t n = pwrite(w->fd, buf, size, off);
	int r = n < 0 ? -errno : (int)n;
	if (n < 0)
		w->failed = errno;
	if (n > 0) {
		w->dirty = true;
		if ((uint64_t)off + (uint64_t)n > w->size)
			w->size = (uint64_t)off + (uint64_t)n;
		clock_gettime(CLOCK_REALTIME, &w->mtime);
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

int mfs_work_truncate(struct mfs *fs, struct mfs_work *w, off_t size)
{
	if (!w->writable)
		return -EBADF;
	if (size < 0)
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	if ((uint64_t)size > fs->opt.max_write) {
		w->failed = EFBIG;
		pthread_mutex_unlock(&w->lock);
		return -EFBIG;
	}
	int r = ftruncate(w->fd, size) < 0 ? -errno : 0;
	if (r == 0) {
		w->size = (uint64_t)size;
		w->dirty = true;
		clock_gettime(CLOCK_REALTIME, &w->mtime);
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

/* Send the spool as one tar. Must be called under w->lock. */
static int send_locked(struct mfs *fs, struct mfs_work *w)
{
	if (!w->writable)
		return 0;
	if (w->failed) {
		w->dirty = false;
		return -w->failed;
	}
	if (!w->dirty)
		return 0;
	w->dirty = false;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	uid_t uid = 0;
	gid_t gid = 0;
	bool resolved = false;
	/* Outside any freeze: the identity may need an exec in the guest. */
	int r = mafsbx_sandbox_identity(fs->backend, w->name, &uid, &gid, &resolved, &e);
	if (r < 0) {
		log_warn("write %s/work/%s: %s", w->name, w->rel, e.message);
		return err_ret(&e, r);
	}
	struct mafsbx_files_target t = { .container = w->id, .work_dir = w->work_dir, .uid = uid, .gid = gid };
	mafsbx_error_clear(&e);
	r = mafsbx_files_write_fd(fs->fz, &t, w->rel, w->fd, w->size, w->mode ? w->mode : 0644, 0, &e);
	if (r < 0) {
		log_warn("write %s/work/%s: %s", w->name, w->rel, e.message);
		return err_ret(&e, r);
	}
	mfs_extra_add_written(fs, w->id, w->rel);
	return 0;
}

int mfs_work_flush(struct mfs *fs, struct mfs_work *w)
{
	pthread_mutex_lock(&w->lock);
	int r = send_locked(fs, w);
	pthread_mutex_unlock(&w->lock);
	return r;
}

void mfs_work_release(struct mfs *fs, struct mfs_work *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	send_locked(fs, w);
	pthread_mutex_unlock(&w->lock);
	work_free(w);
}

void mfs_work_discard(struct mfs_work *w)
{
	work_free(w);
}

int mfs_work_mkdir(struct mfs *fs, const struct mfs_node *n, mode_t mode)
{
	if (!*n->rel)
		return -EEXIST;
	const struct mafsbx_sandbox_info *info;
	struct mafsbx_files_target t;
	int r;
	struct mfs_snapshot *s = target_of(fs, n->name, &info, &t, &r);
	if (!s)
		return r;
	char id[65], name[MAFSBX_NAME_LEN + 1];
	snprintf(id, sizeof(id), "%s", info->id);
	snprintf(name, sizeof(name), "%s", info->name);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	uid_t uid = 0;
	gid_t gid = 0;
	bool resolved = false;
	r = mafsbx_sandbox_identity(fs->backend, name, &uid, &gid, &resolved, &e);
	if (r == 0) {
		t.uid = uid;
		t.gid = gid;
		r = mafsbx_files_mkdir(fs->fz, &t, n->rel, mode & 07777, 0, &e);
	}
	mfs_snapshot_put(s);
	if (r < 0) {
		if (e.err != EEXIST)
			log_debug("mkdir %s/work/%s: %s", n->name, n->rel, e.message);
		return err_ret(&e, r);
	}
	mfs_extra_add_written(fs, id, n->rel);
	return 0;
}
