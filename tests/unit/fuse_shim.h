/*
 * fuse_shim.h: a fake FUSE request for unit tests that drive the daemon's own
 * low-level handlers (fs/lowlevel.c's mfs_lowlevel_ops) without a kernel.
 * fuse_shim.c defines the libfuse entry points those handlers call
 * (fuse_reply_*, fuse_req_*, fuse_add_direntry*) and the test is linked
 * with it instead of libfuse, so the daemon's code runs unchanged and each
 * request's one answer is recorded here: an errno, an entry, attributes,
 * bytes, a write count, an open file. A transaction answered from its
 * thread is waited for (shim_wait).
 */
#ifndef MAFSBX_TEST_FUSE_SHIM_H
#define MAFSBX_TEST_FUSE_SHIM_H

#include "mfs.h"

#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdbool.h>

enum shim_answer {
	SHIM_NONE,      /* not answered yet */
	SHIM_ERR,       /* fuse_reply_err: err (0 is a success without data) */
	SHIM_ENTRY,     /* entry (lookup, mkdir) */
	SHIM_CREATE,    /* entry and fi */
	SHIM_ATTR,      /* attr, attr_timeout */
	SHIM_OPEN,      /* fi */
	SHIM_BUF,       /* buf, len (read, readdir) */
	SHIM_WRITE,     /* count */
	SHIM_READLINK,  /* buf */
	SHIM_STATFS,
	SHIM_FORGOTTEN, /* fuse_reply_none */
};

struct fuse_req {
	struct mfs *fs;                 /* fuse_req_userdata() */
	struct fuse_ctx ctx;            /* fuse_req_ctx() */
	bool caller_gone;               /* fuse_reply_open/create/entry answer -ENOENT, as for a dead caller */
	pthread_mutex_t mu;             /* everything below */
	pthread_cond_t done;
	enum shim_answer answer;
	unsigned answers;               /* more than one is a bug of the daemon's */
	int err;
	struct fuse_entry_param entry;
	struct stat attr;
	double attr_timeout;
	struct fuse_file_info fi;
	char *buf;
	size_t len;
	size_t count;
	fuse_interrupt_func_t interrupt;
	void *interrupt_data;
};

/* A request of `uid` (the test's own pid as the caller) on the mount `fs`. */
struct fuse_req *shim_req(struct mfs *fs, uid_t uid);
/* Wait (up to a generous bound, then fail the test) until it is answered. */
void shim_wait(struct fuse_req *r);
/* Whether it was answered (a transaction may still run). */
bool shim_answered(struct fuse_req *r);
/* The FUSE interrupt of its caller, as the kernel sends it. */
void shim_interrupt(struct fuse_req *r);
void shim_free(struct fuse_req *r);

/* One entry of a recorded readdir answer, walked with shim_dirent_next. */
struct shim_dirent {
	const char *name;
	off_t next;                     /* the offset to list on from */
	fuse_ino_t ino;                 /* readdirplus: the node given (0: none) */
	mode_t mode;
};
/* The entry at *pos of r's answer: false past the end. */
bool shim_dirent_next(struct fuse_req *r, size_t *pos, struct shim_dirent *d);

#endif
