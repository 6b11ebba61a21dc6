/*
 * handles.c: what a request on an open file does, by the kind of handle in
 * fi->fh (the handle's first member says which, as lxcfs does): a .ctl
 * channel (ctl.c), a work/ or root/ file or directory (work.c), a detached
 * exec's file (execs.c), a listing (root.c), or a snapshot of a read-only
 * virtual file (a blob, here). One row per kind of handle; what a row
 * leaves out is refused with its errno (EISDIR for a directory, EACCES for
 * a read-only file, EBADF otherwise).
 */
#include "execs.h"
#include "mfs.h"
#include "mount.h"
#include "passthrough.h"
#include "node.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static void blob_free(struct mfs_blob *b)
{
	mfs_text_put(b->text);
	free(b);
}

static void blob_discard(struct mfs_handle *h)
{
	blob_free((struct mfs_blob *)h);
}

int mfs_blob_open(struct mfs *fs, const char *key, mfs_text_build_fn build, void *arg, struct fuse_file_info *fi)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mfs_blob *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	/* Each open is a fresh snapshot, shared with the opens it coincides
	 * with (one build) and with held opens of the same bytes. */
	int r = mfs_text_get(fs, key, false, build, arg, &b->text, &e);
	if (r < 0) {
		free(b);
		if (e.err != ENOENT)
			log_warn("open %s: %s", key, e.message);
		return mafsbx_error_errno(&e, r);
	}
	b->h.type = MFS_H_BLOB;
	b->h.discard = blob_discard;
	b->data = mfs_text_data(b->text, &b->len);
	fi->fh = (uint64_t)(uintptr_t)b;
	/* Generated content: the size in getattr is not the reply's. */
	fi->direct_io = 1;
	return 0;
}

static int blob_read(struct mfs_ctx *c, struct mfs_handle *h, char *buf, size_t size, off_t off)
{
	(void)c;
	const struct mfs_blob *b = (const struct mfs_blob *)h;
	if (off < 0)
		return -EINVAL;
	if ((size_t)off >= b->len)
		return 0;
	size_t n = b->len - (size_t)off;
	if (n > size)
		n = size;
	memcpy(buf, b->data + off, n);
	return (int)n;
}

static void blob_release(struct mfs_ctx *c, struct mfs_handle *h)
{
	(void)c;
	blob_free((struct mfs_blob *)h);
}

static int ctl_read(struct mfs_ctx *c, struct mfs_handle *h, char *buf, size_t size, off_t off)
{
	(void)c;
	(void)off;
	return mfs_ctl_read((struct mfs_ctl *)h, buf, size);
}

static int ctl_write(struct mfs_ctx *c, struct mfs_handle *h, const char *buf, size_t size, off_t off)
{
	(void)off;
	return mfs_ctl_write(c->fs, (struct mfs_ctl *)h, buf, size);
}

static int ctl_flush(struct mfs_ctx *c, struct mfs_handle *h)
{
	(void)c;
	return mfs_ctl_flush((struct mfs_ctl *)h);
}

static void ctl_release(struct mfs_ctx *c, struct mfs_handle *h)
{
	(void)c;
	mfs_ctl_release((struct mfs_ctl *)h);
}

static int ctl_truncate(struct mfs_ctx *c, struct mfs_handle *h, off_t size)
{
	(void)c;
	if (size != 0)
		return -EINVAL;
	mfs_ctl_truncate((struct mfs_ctl *)h);
	return 0;
}

static int work_read(struct mfs_ctx *c, struct mfs_handle *h, char *buf, size_t size, off_t off)
{
	if (c->fs)   /* counted for .ctl/engine: a passed-through open's reads never come here */
		mfs_passthrough_count_read(c->fs);
	return mfs_work_read((struct mfs_work *)h, buf, size, off);
}

static int work_write(struct mfs_ctx *c, struct mfs_handle *h, const char *buf, size_t size, off_t off)
{
	return mfs_work_write(c->fs, (struct mfs_work *)h, buf, size, off);
}

static int work_flush(struct mfs_ctx *c, struct mfs_handle *h)
{
	return mfs_work_flush(c, (struct mfs_work *)h);
}

static void work_release(struct mfs_ctx *c, struct mfs_handle *h)
{
	mfs_work_release(c, (struct mfs_work *)h);
}

static int work_truncate(struct mfs_ctx *c, struct mfs_handle *h, off_t size)
{
	return mfs_work_ftruncate(c->fs, (struct mfs_work *)h, size);
}

static int exec_read(struct mfs_ctx *c, struct mfs_handle *h, char *buf, size_t size, off_t off)
{
	(void)c;
	return mfs_exec_read((struct mfs_exec_handle *)h, buf, size, off);
}

static void exec_release(struct mfs_ctx *c, struct mfs_handle *h)
{
	(void)c;
	mfs_exec_release((struct mfs_exec_handle *)h);
}

static void dir_release(struct mfs_ctx *c, struct mfs_handle *h)
{
	(void)c;
	mfs_work_releasedir((struct mfs_dir *)h);
}

static void list_release(struct mfs_ctx *c, struct mfs_handle *h)
{
	(void)c;
	mfs_listdir_release((struct mfs_listdir *)h);
}

struct handle_ops {
	int refuse_io;               /* the errno of a read or write it does not take */
	int (*read)(struct mfs_ctx *c, struct mfs_handle *h, char *buf, size_t size, off_t off);
	int (*write)(struct mfs_ctx *c, struct mfs_handle *h, const char *buf, size_t size, off_t off);
	int (*flush)(struct mfs_ctx *c, struct mfs_handle *h);
	int (*truncate)(struct mfs_ctx *c, struct mfs_handle *h, off_t size);
	void (*release)(struct mfs_ctx *c, struct mfs_handle *h);     /* a file's */
	void (*releasedir)(struct mfs_ctx *c, struct mfs_handle *h);  /* a directory's */
};

static const struct handle_ops handle_kinds[] = {
	[MFS_H_BLOB] = { .refuse_io = EACCES, .read = blob_read, .release = blob_release },
	[MFS_H_CTL] = { .refuse_io = EBADF, .read = ctl_read, .write = ctl_write, .flush = ctl_flush,
			.truncate = ctl_truncate, .release = ctl_release },
	[MFS_H_WORK] = { .refuse_io = EBADF, .read = work_read, .write = work_write, .flush = work_flush,
			 .truncate = work_truncate, .release = work_release },
	[MFS_H_DIR] = { .refuse_io = EISDIR, .releasedir = dir_release },
	[MFS_H_EXEC] = { .refuse_io = EACCES, .read = exec_read, .release = exec_release },
	[MFS_H_LIST] = { .refuse_io = EBADF, .releasedir = list_release },
};

static const struct handle_ops none = { .refuse_io = EBADF };

static const struct handle_ops *ops_of(const struct mfs_handle *h)
{
	return h ? &handle_kinds[h->type] : &none;
}

int mfs_handle_read(struct mfs_ctx *c, struct fuse_file_info *fi, char *buf, size_t size, off_t off)
{
	struct mfs_handle *h = mfs_handle_of(fi);
	const struct handle_ops *o = ops_of(h);
	return o->read ? o->read(c, h, buf, size, off) : -o->refuse_io;
}

int mfs_handle_write(struct mfs_ctx *c, struct fuse_file_info *fi, const char *buf, size_t size, off_t off)
{
	struct mfs_handle *h = mfs_handle_of(fi);
	const struct handle_ops *o = ops_of(h);
	return o->write ? o->write(c, h, buf, size, off) : -o->refuse_io;
}

int mfs_handle_flush(struct mfs_ctx *c, struct fuse_file_info *fi)
{
	struct mfs_handle *h = mfs_handle_of(fi);
	const struct handle_ops *o = ops_of(h);
	return o->flush ? o->flush(c, h) : 0;
}

bool mfs_handle_truncate(struct mfs_ctx *c, struct fuse_file_info *fi, off_t size, int *r)
{
	struct mfs_handle *h = mfs_handle_of(fi);
	const struct handle_ops *o = ops_of(h);
	if (!o->truncate)
		return false;
	*r = o->truncate(c, h, size);
	return true;
}

bool mfs_handle_is_ctl(const struct fuse_file_info *fi)
{
	const struct mfs_handle *h = mfs_handle_of(fi);
	return h && h->type == MFS_H_CTL;
}

int mfs_handle_release(struct mfs_ctx *c, struct fuse_file_info *fi)
{
	struct mfs_handle *h = mfs_handle_of(fi);
	if (!h)
		return 0;
	mfs_handle_unregister(c->fs, h);
	if (handle_kinds[h->type].release)
		handle_kinds[h->type].release(c, h);
	fi->fh = 0;
	return 0;
}

int mfs_handle_releasedir(struct mfs_ctx *c, struct fuse_file_info *fi)
{
	struct mfs_handle *h = mfs_handle_of(fi);
	if (h && handle_kinds[h->type].releasedir) {
		mfs_handle_unregister(c->fs, h);
		handle_kinds[h->type].releasedir(c, h);
	}
	fi->fh = 0;
	return 0;
}
