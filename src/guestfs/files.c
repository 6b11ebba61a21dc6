/*
 * files.c: the engine plane's frozen file calls (files.h). Owns the order of things in every file
 * call: text checks (no engine call) -> freeze -> HEAD every component of the
 * ancestor chain top-down without following links -> the one leaf HEAD, GET
 * or PUT -> unfreeze. The freeze is left only after the transfer has ended,
 * so no archive stream is open when the last one out unpauses.
 *
 * HEAD answers are kept in a small per-call cache (shared by every path of a
 * batch stat): under one freeze the guest cannot change them. With a burst
 * registry in the target (burst.h) the freeze and the answers are shared by
 * the calls of a burst too; a write drops the shared answers.
 */
#include "files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "archlist.h"
#include "buf.h"
#include "burst.h"
#include "engine.h"
#include "guestpath.h"
#include "listsnap.h"
#include "log.h"
#include "tarplane.h"

/* Bytes the archive GET may carry beyond the file itself: the metadata prefix and the end blocks. */
#define GET_SLACK ((uint64_t)MAFSBX_TAR_MAX_PREFIX + 64 * 1024)

/* ---- HEAD cache --------------------------------------------------------- */

struct head_ans {
	char *path;
	int rc;
	enum mafsbx_fkind kind;
	struct mafsbx_path_stat st;
	struct mafsbx_error err;
};

struct head_cache {
	struct head_ans *v;
	size_t n, cap;
};

static void cache_free(struct head_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}

static enum mafsbx_fkind kind_of(mode_t m)
{
	if (S_ISDIR(m))
		return MAFSBX_FK_DIR;
	if (S_ISLNK(m))
		return MAFSBX_FK_SYMLINK;
	if (S_ISREG(m))
		return MAFSBX_FK_FILE;
	return MAFSBX_FK_OTHER;
}

static int check_deadline(long long deadline_ms, const char *what, struct mafsbx_error *err)
{
	if (mafsbx_now_ms() > deadline_ms)
		return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "%s: the file call ran past its deadline", what);
	return 0;
}

/* One file call's hold on the guest: its freeze (alone, or a burst's) and its answers. */
struct fcall {
	struct mafsbx_engine *eng;
	const char *container;
	struct mafsbx_freeze *fr;
	struct mafsbx_burst *burst;  /* NULL: no burst registry */
	struct head_cache c;
};

static int call_enter(struct fcall *k, struct mafsbx_freezer *fz, struct mafsbx_bursts *bs, const char *container,
		      long long deadline_ms, struct mafsbx_error *err)
{
	memset(k, 0, sizeof(*k));
	k->eng = mafsbx_freezer_engine(fz);
	k->container = container;
	if (!bs)
		return mafsbx_freeze_enter(fz, container, deadline_ms, &k->fr, err);
	int r = mafsbx_burst_enter(bs, container, deadline_ms, &k->burst, err);
	if (r == 0)
		k->fr = mafsbx_burst_freeze(k->burst);
	return r;
}

/* Leave the freeze (the transfer has ended); a never-entered call is fine. */
static void call_leave(struct fcall *k)
{
	if (k->burst)
		mafsbx_burst_leave(k->burst);
	else
		mafsbx_freeze_leave(k->fr);
	k->burst = NULL;
	k->fr = NULL;
	cache_free(&k->c);
}

/* Cleanup forms: a call left, a tar and a tar reader freed, when their variable goes out of scope. */
#define __do_leave __attribute__((cleanup(call_leave)))
static void tar_freep(struct mafsbx_tar **t)
{
	mafsbx_tar_free(*t);
}
#define __do_tar_free __attribute__((cleanup(tar_freep)))
static void reader_freep(struct mafsbx_tar_reader **rd)
{
	mafsbx_tar_reader_free(*rd);
}
#define __do_reader_free __attribute__((cleanup(reader_freep)))

/* The call changed the guest's files: answers kept beyond it are void. */
static void call_wrote(struct fcall *k)
{
	if (k->burst)
		mafsbx_burst_invalidate(k->burst);
}

static void answer_kind(struct head_ans *a)
{
	if (a->rc == 0) {
		a->kind = kind_of(a->st.mode);
	} else if (a->err.kind == MAFSBX_EK_NO_PATH) {
		a->rc = 0;
		a->kind = MAFSBX_FK_ABSENT;
	}
}

/*
 * HEAD one canonical path (no link followed for the final component).
 * Absent (a 404 naming exactly this path) is kind ABSENT with rc 0; any other
 * failure is an error. Answers are cached for the call, and for the burst
 * (errors never are).
 */
static const struct head_ans *head(struct fcall *k, const char *path, long long deadline_ms)
{
	struct head_cache *c = &k->c;
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->v[i].path, path) == 0)
			return &c->v[i];
	static const struct head_ans nomem = { .rc = -ENOMEM, .err = { .kind = MAFSBX_EK_NOMEM, .err = ENOMEM,
									 .type = "MemoryError", .message = "out of memory" } };
	if (mafsbx_array_grow(&c->v, &c->cap, c->n + 1, sizeof(*c->v), 16, 0) < 0)
		return &nomem;
	struct head_ans *a = &c->v[c->n];
	memset(a, 0, sizeof(*a));
	a->path = strdup(path);
	if (!a->path)
		return &nomem;
	c->n++;
	mafsbx_error_clear(&a->err);
	struct mafsbx_burst_answer ba;
	if (k->burst && mafsbx_burst_get(k->burst, path, &ba)) {
		a->st = ba.st;
		a->kind = ba.absent ? MAFSBX_FK_ABSENT : kind_of(a->st.mode);
		return a;
	}
	a->rc = check_deadline(deadline_ms, path, &a->err);
	if (a->rc == 0)
		a->rc = mafsbx_archive_head(k->eng, k->container, path, &a->st, &a->err);
	answer_kind(a);
	if (a->rc == 0 && k->burst) {
		ba.absent = a->kind == MAFSBX_FK_ABSENT;
		ba.st = a->st;
		mafsbx_burst_put(k->burst, path, &ba);
	}
	return a;
}

static int copy_err(struct mafsbx_error *dst, const struct mafsbx_error *src)
{
	if (dst && dst != src)
		*dst = *src;
	return -(src->err ? src->err : EIO);
}

/*
 * The ancestor check (doc/upstream.md §5.2): every directory of the chain, top-down.
 * *first_missing is the index of the first absent one (chain->n when all
 * exist); an absent component ends the walk as success.
 */
static int check_chain(struct fcall *k, const struct mafsbx_gp_chain *chain, long long deadline_ms,
		       size_t *first_missing, struct mafsbx_error *err)
{
	*first_missing = chain->n;
	for (size_t i = 0; i < chain->n; i++) {
		const struct head_ans *a = head(k, chain->paths[i], deadline_ms);
		if (a->rc < 0)
			return copy_err(err, &a->err);
		switch (a->kind) {
		case MAFSBX_FK_ABSENT:
			*first_missing = i;
			return 0;
		case MAFSBX_FK_DIR:
			continue;
		case MAFSBX_FK_SYMLINK:
			return mafsbx_error_set(err, MAFSBX_EK_CONFINEMENT,
						"%.300s is a link rather than a real directory; refused", chain->paths[i]);
		default:
			return mafsbx_error_set(err, MAFSBX_EK_NOT_DIR, "%.300s is not a directory", chain->paths[i]);
		}
	}
	return 0;
}

/* Enter the freeze and check the chain under it (*missing as check_chain); leave with call_leave() either way. */
static int call_enter_chain(struct fcall *k, struct mafsbx_freezer *fz, struct mafsbx_bursts *bs,
			    const char *container, const struct mafsbx_gp_chain *chain, long long deadline_ms,
			    size_t *missing, struct mafsbx_error *err)
{
	int r = call_enter(k, fz, bs, container, deadline_ms, err);
	return r < 0 ? r : check_chain(k, chain, deadline_ms, missing, err);
}

static long long deadline_of(long long deadline_ms)
{
	return deadline_ms > 0 ? deadline_ms : mafsbx_now_ms() + MAFSBX_FILES_DEFAULT_MS;
}

static void fill_fstat(struct mafsbx_fstat *out, const struct head_ans *a)
{
	memset(out, 0, sizeof(*out));
	out->kind = a->kind;
	if (a->kind == MAFSBX_FK_ABSENT)
		return;
	out->mode = a->st.mode;
	out->mtime = a->st.mtime;
	out->size = a->kind == MAFSBX_FK_SYMLINK || a->st.size < 0 ? 0 : (uint64_t)a->st.size;
}

/* ---- stat ---------------------------------------------------------------- */

/* One path's stat under a held freeze; `resolved` already passed the text checks. */
static int stat_one(struct fcall *k, const struct mafsbx_files_target *t, const char *resolved, long long deadline_ms,
		    struct mafsbx_fstat *out, struct mafsbx_error *err)
{
	struct mafsbx_gp_chain chain;
	int r = mafsbx_gp_ancestors(t->work_dir, resolved, false, &chain, err);
	if (r < 0)
		return r;
	size_t missing;
	r = check_chain(k, &chain, deadline_ms, &missing, err);
	if (r == 0) {
		if (missing < chain.n) {
			memset(out, 0, sizeof(*out));
			out->kind = MAFSBX_FK_ABSENT;
		} else {
			const struct head_ans *a = head(k, resolved, deadline_ms);
			if (a->rc < 0)
				r = copy_err(err, &a->err);
			else
				fill_fstat(out, a);
		}
	}
	mafsbx_gp_chain_free(&chain);
	return r;
}

/* The freezer's count of execs begun: an exec may change any file, so a snapshot from before one is void. */
static uint64_t exec_epoch(struct mafsbx_freezer *fz)
{
	struct mafsbx_freeze_stats st;
	mafsbx_freezer_stats(fz, &st);
	return st.exec_begins;
}

/* A stat answered by a listing that just showed `resolved` present (listsnap.h). */
static bool snap_stat(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *resolved,
		      struct mafsbx_fstat *out)
{
	struct mafsbx_listsnap_stat ss;
	if (!t->snaps || !mafsbx_listsnaps_get(t->snaps, t->container, resolved, exec_epoch(fz), &ss))
		return false;
	memset(out, 0, sizeof(*out));
	out->kind = kind_of(ss.mode);
	out->mode = ss.mode;
	out->mtime = ss.mtime;
	out->size = out->kind == MAFSBX_FK_SYMLINK ? 0 : ss.size;
	return true;
}

int mafsbx_files_stat(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		      long long deadline_ms, struct mafsbx_fstat *out, struct mafsbx_error *err)
{
	deadline_ms = deadline_of(deadline_ms);
	__do_free char *resolved = mafsbx_gp_resolve(t->work_dir, path, err);
	if (!resolved)
		return err ? -err->err : -EINVAL;
	if (snap_stat(fz, t, resolved, out))
		return 0;
	struct fcall k;
	int r = call_enter(&k, fz, t->bursts, t->container, deadline_ms, err);
	if (r < 0)
		return r;
	r = stat_one(&k, t, resolved, deadline_ms, out, err);
	call_leave(&k);
	return r;
}

int mafsbx_files_stat_many(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t,
			   const char *const *paths, size_t n, long long deadline_ms, struct mafsbx_fstat *outs,
			   int *rcs, struct mafsbx_error *errs, struct mafsbx_error *err)
{
	deadline_ms = deadline_of(deadline_ms);
	char **resolved = calloc(n ? n : 1, sizeof(*resolved));
	if (!resolved)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	size_t valid = 0;
	for (size_t i = 0; i < n; i++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		memset(&outs[i], 0, sizeof(outs[i]));
		resolved[i] = mafsbx_gp_resolve(t->work_dir, paths[i], &e);
		rcs[i] = resolved[i] ? 0 : -e.err;
		if (errs)
			errs[i] = e;
		valid += resolved[i] != NULL;
	}
	int r = 0;
	if (valid) {
		struct fcall k;
		struct mafsbx_error fe;
		mafsbx_error_clear(&fe);
		r = call_enter(&k, fz, t->bursts, t->container, deadline_ms, &fe);
		if (r < 0) {
			copy_err(err, &fe);
			for (size_t i = 0; i < n; i++) {
				if (!resolved[i])
					continue;
				rcs[i] = r;
				if (errs)
					errs[i] = fe;
			}
		} else {
			for (size_t i = 0; i < n; i++) {
				if (!resolved[i])
					continue;
				struct mafsbx_error e;
				mafsbx_error_clear(&e);
				rcs[i] = stat_one(&k, t, resolved[i], deadline_ms, &outs[i], &e);
				if (errs)
					errs[i] = e;
			}
			call_leave(&k);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(resolved[i]);
	free(resolved);
	return r;
}

/* ---- read ---------------------------------------------------------------- */

static int leaf_refusal(const char *path, enum mafsbx_fkind kind, struct mafsbx_error *err)
{
	switch (kind) {
	case MAFSBX_FK_ABSENT:
		return mafsbx_error_set(err, MAFSBX_EK_NO_PATH, "%.300s does not exist", path);
	case MAFSBX_FK_SYMLINK:
		return mafsbx_error_set(err, MAFSBX_EK_CONFINEMENT, "%.300s is a symbolic link and is never followed",
					path);
	case MAFSBX_FK_DIR:
		return mafsbx_error_set(err, MAFSBX_EK_NOT_REGULAR, "%.300s is a directory, not a regular file; refused",
					path);
	case MAFSBX_FK_OTHER:
		return mafsbx_error_set(err, MAFSBX_EK_NOT_REGULAR, "%.300s is not a regular file and is refused", path);
	default:
		return 0;
	}
}

/* A header-only read's sink: the tar reader's, cut once the entry's header is parsed. */
struct header_cut {
	struct mafsbx_tar_reader *rd;
	bool cut;
};

static int header_cut_sink(const void *data, size_t len, void *ctx)
{
	struct header_cut *hc = ctx;
	int r = mafsbx_tar_reader_sink(data, len, hc->rd);
	if (r < 0)
		return r;
	if (mafsbx_tar_reader_entry(hc->rd)) {
		hc->cut = true;
		return -ECANCELED;   /* the body is not wanted: the connection is closed */
	}
	return 0;
}

/* header_only: no body is taken (out_fd -1, out_buf NULL); the GET is cut
 * after the tar header, which fills *info. */
static int read_resolved(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *resolved,
			 uint64_t max_bytes, int out_fd, struct mafsbx_buf *out_buf, long long deadline_ms,
			 bool header_only, struct mafsbx_read_info *info, struct mafsbx_error *err)
{
	__attribute__((cleanup(mafsbx_gp_chain_free))) struct mafsbx_gp_chain chain;
	int r = mafsbx_gp_ancestors(t->work_dir, resolved, false, &chain, err);
	if (r < 0)
		return r;
	/* the GET has ended (or never started) when k goes out of scope: leaving may unpause */
	__do_leave struct fcall k;
	__do_reader_free struct mafsbx_tar_reader *rd = NULL;
	__attribute__((cleanup(mafsbx_tar_entry_free))) struct mafsbx_tar_entry entry = { 0 };
	size_t missing;
	r = call_enter_chain(&k, fz, t->bursts, t->container, &chain, deadline_ms, &missing, err);
	if (r < 0)
		return r;
	if (missing < chain.n) {
		return mafsbx_error_set(err, MAFSBX_EK_NO_PATH, "%.300s does not exist (%.300s is missing)", resolved,
					chain.paths[missing]);
	}
	const struct head_ans *a = head(&k, resolved, deadline_ms);
	if (a->rc < 0)
		return copy_err(err, &a->err);
	if ((r = leaf_refusal(resolved, a->kind, err)) < 0)
		return r;
	if (max_bytes && a->st.size > 0 && (uint64_t)a->st.size > max_bytes) {
		return mafsbx_error_set(err, MAFSBX_EK_TOO_BIG, "%.300s is %lld bytes and the caller allowed %llu", resolved,
					(long long)a->st.size, (unsigned long long)max_bytes);
	}
	if (!header_only && t->reserve &&
	    (r = t->reserve(t->reserve_ctx, a->st.size > 0 ? (uint64_t)a->st.size : 0, err)) < 0)
		return r;
	struct mafsbx_tar_reader_opts ro = { .max_body = max_bytes, .file_only = true, .out_fd = out_fd,
					     .out_buf = out_fd >= 0 ? NULL : out_buf };
	rd = mafsbx_tar_reader_new(&ro, err);
	if (!rd)
		return -ENOMEM;
	if ((r = check_deadline(deadline_ms, resolved, err)) < 0)
		return r;
	struct mafsbx_error ge;
	mafsbx_error_clear(&ge);
	struct header_cut hc = { .rd = rd };
	int gr = header_only ? mafsbx_archive_get(k.eng, t->container, resolved, 0, header_cut_sink, &hc, NULL, &ge)
			     : mafsbx_archive_get(k.eng, t->container, resolved, max_bytes ? max_bytes + GET_SLACK : 0,
						  mafsbx_tar_reader_sink, rd, NULL, &ge);
	const struct mafsbx_error *re = mafsbx_tar_reader_error(rd);
	if (re) {
		r = copy_err(err, re);
		if (re->kind == MAFSBX_EK_NOT_REGULAR)
			mafsbx_error_set(err, MAFSBX_EK_NOT_REGULAR, "%.300s is not a regular file and is refused",
					 resolved);
		return r;
	}
	if (gr < 0 && !(header_only && hc.cut)) {
		r = copy_err(err, &ge);
		if (ge.kind == MAFSBX_EK_NO_PATH)
			mafsbx_error_set(err, MAFSBX_EK_NO_PATH, "%.300s does not exist", resolved);
		return r;
	}
	if (header_only) {
		const struct mafsbx_tar_entry *he = mafsbx_tar_reader_entry(rd);
		if (!hc.cut || !he) {
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%.300s: the archive ended before its tar header",
						resolved);
		}
		entry.size = he->size;
		entry.mode = he->mode;
		entry.uid = he->uid;
		entry.gid = he->gid;
		entry.mtime = he->mtime;
	} else {
		r = mafsbx_tar_reader_finish(rd, &entry, err);
		if (r < 0)
			return r;
	}
	/* the bytes count only if the freeze provably held throughout (src/freeze/freeze.h) */
	if ((r = mafsbx_freeze_verify(k.fr, err)) < 0)
		return r;
	if (info) {
		info->size = entry.size;
		info->mode = entry.mode;
		info->uid = entry.uid;
		info->gid = entry.gid;
		info->mtime = entry.mtime;
	}
	return r;
}

int mafsbx_files_read(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		      uint64_t max_bytes, int out_fd, struct mafsbx_buf *out_buf, long long deadline_ms,
		      struct mafsbx_read_info *info, struct mafsbx_error *err)
{
	if ((out_fd >= 0) == (out_buf != NULL))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "read: give exactly one of a spool fd and a buffer");
	deadline_ms = deadline_of(deadline_ms);
	__do_free char *resolved = mafsbx_gp_resolve(t->work_dir, path, err);
	if (!resolved)
		return err ? -err->err : -EINVAL;
	return read_resolved(fz, t, resolved, max_bytes, out_fd, out_buf, deadline_ms, false, info, err);
}

int mafsbx_files_read_header(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
			     long long deadline_ms, struct mafsbx_read_info *info, struct mafsbx_error *err)
{
	deadline_ms = deadline_of(deadline_ms);
	__do_free char *resolved = mafsbx_gp_resolve(t->work_dir, path, err);
	if (!resolved)
		return err ? -err->err : -EINVAL;
	return read_resolved(fz, t, resolved, 0, -1, NULL, deadline_ms, true, info, err);
}

int mafsbx_files_read_abs(struct mafsbx_freezer *fz, const char *container, const char *abs_path,
			  uint64_t max_bytes, struct mafsbx_buf *out, long long deadline_ms, struct mafsbx_error *err)
{
	if (!abs_path || abs_path[0] != '/')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "read_abs: %.200s is not an absolute guest path",
					abs_path ? abs_path : "(null)");
	struct mafsbx_files_target t = { .container = container, .work_dir = "/" };
	return mafsbx_files_read(fz, &t, abs_path, max_bytes, -1, out, deadline_ms, NULL, err);
}

/* ---- write, mkdir, prepare_base ----------------------------------------- */

enum put_kind { PUT_FILE, PUT_DIR };

struct put_payload {
	enum put_kind kind;
	const void *data;
	int fd;
	uint64_t len;
	mode_t mode;
	const char *stage; /* PUT_FILE: the content goes under this sibling name, then is linked onto the target */
	bool *sent;        /* set once the PUT is issued (it may have changed the guest) */
};

/* "dir/leaf" -> "dir/stage" (stage alone when there is no "/"); NULL on ENOMEM. */
static char *sibling(const char *path, const char *stage)
{
	const char *slash = strrchr(path, '/');
	int dl = slash ? (int)(slash - path + 1) : 0;
	char *out = NULL;
	if (asprintf(&out, "%.*s%s", dl, path, stage) < 0)
		return NULL;
	return out;
}

/* The file entry of a PUT: whole under its own name, or staged and then linked onto it. */
static int add_file_entries(struct mafsbx_tar *tar, const char *resolved, const struct put_payload *pl, uid_t uid,
			    gid_t gid, time_t now, struct mafsbx_error *err)
{
	mode_t mode = pl->mode ? pl->mode : 0644;
	__do_free char *staged = NULL;
	const char *name = resolved;
	if (pl->stage) {
		if (!(staged = sibling(resolved, pl->stage)))
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		name = staged;
	}
	int r = pl->fd >= 0 ? mafsbx_tar_add_file_fd(tar, name, pl->fd, pl->len, mode, uid, gid, now, err)
			    : mafsbx_tar_add_file(tar, name, pl->data, (size_t)pl->len, mode, uid, gid, now, err);
	if (r == 0 && staged)
		r = mafsbx_tar_add_hardlink(tar, resolved, staged, mode, uid, gid, now, err);
	return r;
}

static int put_resolved(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *resolved,
			const struct put_payload *pl, long long deadline_ms, struct mafsbx_error *err)
{
	__attribute__((cleanup(mafsbx_gp_chain_free))) struct mafsbx_gp_chain chain;
	int r = mafsbx_gp_ancestors(t->work_dir, resolved, false, &chain, err);
	if (r < 0)
		return r;
	__do_leave struct fcall k;
	__do_tar_free struct mafsbx_tar *tar = NULL;
	size_t missing;
	r = call_enter_chain(&k, fz, t->bursts, t->container, &chain, deadline_ms, &missing, err);
	if (r < 0)
		return r;
	if (missing == chain.n) {
		/* every parent exists: the leaf decides */
		const struct head_ans *a = head(&k, resolved, deadline_ms);
		if (a->rc < 0)
			return copy_err(err, &a->err);
		if (a->kind == MAFSBX_FK_SYMLINK)
			return mafsbx_error_set(err, MAFSBX_EK_CONFINEMENT,
						"%.300s is a symbolic link; writing through it is refused", resolved);
		if (pl->kind == PUT_DIR && a->kind != MAFSBX_FK_ABSENT)
			return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EEXIST, NULL, "%.300s already exists", resolved);
		if (a->kind == MAFSBX_FK_DIR)
			return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EISDIR, NULL,
						     "%.300s is a directory; a file cannot replace it", resolved);
		if (a->kind == MAFSBX_FK_OTHER)
			return mafsbx_error_set(err, MAFSBX_EK_NOT_REGULAR, "%.300s is not a regular file; refused", resolved);
	}
	tar = mafsbx_tar_new(err);
	if (!tar)
		return -ENOMEM;
	time_t now = time(NULL);
	/* missing directories from W down get explicit entries; those above W are the engine's (root) */
	for (size_t i = missing; i < chain.n && r == 0; i++)
		if (i >= chain.n_above)
			r = mafsbx_tar_add_dir(tar, chain.paths[i], 0755, t->uid, t->gid, now, err);
	if (r == 0) {
		if (pl->kind == PUT_DIR)
			r = mafsbx_tar_add_dir(tar, resolved, pl->mode ? pl->mode : 0755, t->uid, t->gid, now, err);
		else
			r = add_file_entries(tar, resolved, pl, t->uid, t->gid, now, err);
	}
	const void *body;
	size_t body_len;
	if (r < 0 || (r = mafsbx_tar_finish(tar, &body, &body_len, err)) < 0)
		return r;
	if ((r = check_deadline(deadline_ms, resolved, err)) < 0)
		return r;
	if (pl->sent)
		*pl->sent = true;
	r = mafsbx_archive_put(k.eng, t->container, "/", body, body_len, err);
	call_wrote(&k); /* even a failed PUT may have changed something */
	if (r == 0)
		r = mafsbx_freeze_verify(k.fr, err); /* unproven (src/freeze/freeze.h), the write is reported failed */
	if (r < 0)
		mafsbx_error_prefix(err, "could not write %.300s", resolved);
	return r;
}

static int put_path(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		    const struct put_payload *pl, long long deadline_ms, struct mafsbx_error *err)
{
	deadline_ms = deadline_of(deadline_ms);
	__do_free char *resolved = mafsbx_gp_resolve_write(t->work_dir, path, err);
	if (!resolved)
		return err ? -err->err : -EINVAL;
	return put_resolved(fz, t, resolved, pl, deadline_ms, err);
}

int mafsbx_files_write(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		       const void *data, size_t len, mode_t mode, long long deadline_ms, struct mafsbx_error *err)
{
	if (!data && len)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "write: no data");
	struct put_payload pl = { .kind = PUT_FILE, .data = data, .fd = -1, .len = len, .mode = mode & 07777 };
	return put_path(fz, t, path, &pl, deadline_ms, err);
}

int mafsbx_files_write_fd(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path, int fd,
			  uint64_t len, mode_t mode, long long deadline_ms, struct mafsbx_error *err)
{
	if (fd < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "write: no spool");
	struct put_payload pl = { .kind = PUT_FILE, .fd = fd, .len = len, .mode = mode & 07777 };
	return put_path(fz, t, path, &pl, deadline_ms, err);
}

int mafsbx_files_replace_fd(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
			    int fd, uint64_t len, mode_t mode, const char *stage, bool *sent, long long deadline_ms,
			    struct mafsbx_error *err)
{
	*sent = false;
	if (fd < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "write: no spool");
	if (!stage || !*stage || strchr(stage, '/') || !strcmp(stage, ".") || !strcmp(stage, ".."))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "write: a staging name must be one path component");
	struct put_payload pl = { .kind = PUT_FILE, .fd = fd, .len = len, .mode = mode & 07777, .stage = stage,
				  .sent = sent };
	return put_path(fz, t, path, &pl, deadline_ms, err);
}

int mafsbx_files_mkdir(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path, mode_t mode,
		       long long deadline_ms, struct mafsbx_error *err)
{
	struct put_payload pl = { .kind = PUT_DIR, .fd = -1, .mode = mode & 07777 };
	return put_path(fz, t, path, &pl, deadline_ms, err);
}

int mafsbx_files_prepare_base(struct mafsbx_freezer *fz, const char *container, const char *base, uid_t uid,
			      gid_t gid, long long deadline_ms, unsigned *created, struct mafsbx_error *err)
{
	if (created)
		*created = 0;
	deadline_ms = deadline_of(deadline_ms);
	if (!base || base[0] != '/')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "working directory %.200s is not an absolute guest path",
					base ? base : "(null)");
	__do_free char *nb = mafsbx_gp_normalise(base, err);
	if (!nb)
		return err ? -err->err : -EINVAL;
	if (strcmp(nb, "/") == 0)
		return 0; /* nothing to make, no engine call, no freeze */
	__attribute__((cleanup(mafsbx_gp_chain_free))) struct mafsbx_gp_chain chain;
	int r = mafsbx_gp_ancestors(nb, nb, true, &chain, err);
	if (r < 0)
		return r;
	__do_leave struct fcall k;
	__do_tar_free struct mafsbx_tar *tar = NULL;
	r = call_enter(&k, fz, NULL, container, deadline_ms, err);
	if (r < 0)
		return r;
	size_t missing;
	r = check_chain(&k, &chain, deadline_ms, &missing, err);
	if (r < 0) {
		mafsbx_error_prefix(err, "cannot prepare working directory %.200s", nb);
		return r;
	}
	if (missing == chain.n)
		return r; /* all there: untouched */
	tar = mafsbx_tar_new(err);
	if (!tar)
		return -ENOMEM;
	time_t now = time(NULL);
	for (size_t i = missing; i < chain.n && r == 0; i++) {
		bool is_base = i == chain.n - 1;
		r = mafsbx_tar_add_dir(tar, chain.paths[i], 0755, is_base ? uid : 0, is_base ? gid : 0, now, err);
	}
	const void *body;
	size_t body_len;
	if (r < 0 || (r = mafsbx_tar_finish(tar, &body, &body_len, err)) < 0)
		return r;
	if ((r = check_deadline(deadline_ms, nb, err)) < 0)
		return r;
	r = mafsbx_archive_put(k.eng, container, "/", body, body_len, err);
	if (r == 0)
		r = mafsbx_freeze_verify(k.fr, err); /* the freeze must be proven to have held: src/freeze/freeze.h */
	if (r < 0)
		mafsbx_error_prefix(err, "could not create the working directory %.200s", nb);
	else if (created)
		*created = (unsigned)(chain.n - missing);
	return r;
}

/* ---- listing from the archive ------------------------------------------- */

/* A depth-1 entry's header as the answer a HEAD of it would have given (no link target: none is read from it). */
static void entry_answer(const struct mafsbx_archlist_entry *e, struct mafsbx_burst_answer *ba)
{
	memset(ba, 0, sizeof(*ba));
	snprintf(ba->st.name, sizeof(ba->st.name), "%s", e->name);
	ba->st.mode = e->mode;
	ba->st.size = (int64_t)e->size;
	ba->st.mtime = e->mtime;
}

/* The chain's answers (each a directory, from this call's cache: no engine call) into the snapshot. */
static void snap_add_chain(struct mafsbx_listsnap *b, struct fcall *k, const struct mafsbx_gp_chain *chain,
			   long long deadline_ms)
{
	for (size_t i = 0; b && i < chain->n; i++) {
		const struct head_ans *a = head(k, chain->paths[i], deadline_ms);
		if (a->rc < 0 || a->kind != MAFSBX_FK_DIR)
			return;
		struct mafsbx_listsnap_stat ss = { .mode = a->st.mode, .mtime = a->st.mtime,
						   .size = a->st.size < 0 ? 0 : (uint64_t)a->st.size };
		mafsbx_listsnap_add(b, chain->paths[i], &ss);
	}
}

/*
 * A whole listing, proven under this call's freeze: every entry's stat (but
 * a hard link's: its header gives no size, a stat of it asks the engine)
 * becomes the burst's answer and, with the chain's, the snapshot's (taken
 * here, kept or not). Kept, the snapshot serves the lstat of each entry that
 * `ls -l` makes next and the freeze ends after the usual linger; not kept,
 * the freeze is held a little longer for those lstats.
 */
static void keep_answers(struct fcall *k, const struct mafsbx_files_target *t, const struct mafsbx_gp_chain *chain,
			 const char *resolved, const struct mafsbx_archlist *l, struct mafsbx_listsnap *snap,
			 long long deadline_ms)
{
	snap_add_chain(snap, k, chain, deadline_ms);
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].typeflag == '1')
			continue;
		char *p = NULL;
		if (asprintf(&p, "%s/%s", resolved, l->v[i].name) < 0)
			break;
		struct mafsbx_burst_answer ba;
		entry_answer(&l->v[i], &ba);
		if (k->burst)
			mafsbx_burst_put(k->burst, p, &ba);
		struct mafsbx_listsnap_stat ss = { .mode = ba.st.mode, .size = (uint64_t)ba.st.size, .mtime = ba.st.mtime };
		mafsbx_listsnap_add(snap, p, &ss);
		free(p);
	}
	bool kept = snap && mafsbx_listsnap_commit(t->snaps, snap);
	if (!kept && k->burst)
		mafsbx_burst_hold_for(k->burst, MAFSBX_BURST_LIST_LINGER_MS);
}

int mafsbx_files_list(struct mafsbx_freezer *fz, const struct mafsbx_files_target *t, const char *path,
		      long long deadline_ms, struct mafsbx_archlist *l, struct mafsbx_error *err)
{
	deadline_ms = deadline_of(deadline_ms);
	__do_free char *resolved = mafsbx_gp_resolve(t->work_dir, path && *path ? path : ".", err);
	if (!resolved)
		return err ? -err->err : -EINVAL;
	if (strcmp(resolved, "/") == 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list /: the archive of the whole guest is never asked for");
	struct mafsbx_gp_chain chain;
	/* the chain down to the directory itself: it is checked like every component above it */
	int r = mafsbx_gp_ancestors(t->work_dir, resolved, true, &chain, err);
	if (r < 0)
		return r;
	/* begun before the freeze: a mutation or an exec from here on voids it */
	struct mafsbx_listsnap *snap = t->snaps ? mafsbx_listsnap_begin(t->snaps, t->container, exec_epoch(fz)) : NULL;
	struct fcall k;
	size_t missing;
	r = call_enter_chain(&k, fz, t->bursts, t->container, &chain, deadline_ms, &missing, err);
	if (r < 0)
		goto out;
	if (missing < chain.n) {
		r = mafsbx_error_set(err, MAFSBX_EK_NO_PATH, "%.300s does not exist (%.300s is missing)", resolved,
				     chain.paths[missing]);
		goto out;
	}
	if ((r = check_deadline(deadline_ms, resolved, err)) < 0)
		goto out;
	struct mafsbx_error ge;
	mafsbx_error_clear(&ge);
	int gr = mafsbx_archive_get(k.eng, t->container, resolved, l->max_bytes + 128 * 1024, mafsbx_archlist_sink, l,
				    NULL, &ge);
	if (l->failed) {
		r = copy_err(err, &l->error);
		goto out;
	}
	if (gr < 0 && !l->cut && !l->ended) {
		r = copy_err(err, &ge);
		goto out;
	}
	/* the headers count only if the freeze provably held throughout (src/freeze/freeze.h) */
	if ((r = mafsbx_freeze_verify(k.fr, err)) < 0)
		goto out;
	r = mafsbx_archlist_finish(l, err);
	if (r == 0) {
		keep_answers(&k, t, &chain, resolved, l, snap, deadline_ms);
		snap = NULL;
	}
out:
	mafsbx_listsnap_discard(snap);
	call_leave(&k);
	mafsbx_gp_chain_free(&chain);
	return r;
}
