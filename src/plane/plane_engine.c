/*
 * plane_engine.c: a sandbox's files reached through the engine, the
 * upstream way (plane.h, mafsbxfs(1) READING AND WRITING FILES): the frozen stat,
 * read and write of files.h, a read spooled whole into a memfd under one
 * freeze, a write collected in a memfd and sent as one tar on commit, and
 * removals as upstream `remove` does them (an `rm` run in the guest, at the
 * guest's authority, after the frozen ancestor check), and listings by the
 * guest's own `find` (an exec at the guest's authority, its output parsed as
 * hostile by dirlist.h) with every entry statted under one freeze.
 *
 * Spools are counted against the planes' spool budget, so the number of
 * open files cannot make the daemon hold unbounded memory.
 */
#include "plane_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archlist.h"
#include "burst.h"
#include "dirlist.h"
#include "files.h"
#include "guestpath.h"
#include "log.h"
#include "names.h"
#include "sandbox.h"
#include "spec.h"

#define ENGINE_REMOVE_TIMEOUT_MS 60000
#define ENGINE_LIST_TIMEOUT_MS 60000
#define ENGINE_LIST_SLICE 256       /* entries statted under one freeze */

static void files_target(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t,
			 enum mafsbx_plane_base base, struct mafsbx_files_target *ft)
{
	memset(ft, 0, sizeof(*ft));
	ft->container = t->id;
	ft->bursts = ps->bursts;
	ft->snaps = ps->snaps;
	ft->work_dir = base == MAFSBX_BASE_ROOT ? "/" : t->work_dir ? t->work_dir : MAFSBX_DEFAULT_WORK_DIR;
}

static int from_fstat(const struct mafsbx_fstat *f, const char *rel, struct mafsbx_pstat *out,
		      struct mafsbx_error *err)
{
	memset(out, 0, sizeof(*out));
	switch (f->kind) {
	case MAFSBX_FK_ABSENT:
		return mafsbx_error_set(err, MAFSBX_EK_NO_PATH, "stat %s: no such file or directory", rel);
	case MAFSBX_FK_FILE: out->type = MAFSBX_PT_FILE; out->size = f->size; out->nlink = 1; break;
	case MAFSBX_FK_DIR: out->type = MAFSBX_PT_DIR; out->nlink = 2; break;
	case MAFSBX_FK_SYMLINK: out->type = MAFSBX_PT_SYMLINK; out->nlink = 1; break;
	case MAFSBX_FK_OTHER: out->type = MAFSBX_PT_OTHER; out->nlink = 1; break;
	}
	out->mode = f->mode & 07777;
	out->atime = out->mtime = out->ctime = f->mtime;
	return 0;
}

int mafsbx_plane_engine_stat(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, enum mafsbx_plane_base base,
		const char *rel, struct mafsbx_pstat *out, struct mafsbx_error *err)
{
	if (!*rel) {
		/* The work dir (made at acquire) or `/`: a directory, no freeze for it. */
		memset(out, 0, sizeof(*out));
		out->type = MAFSBX_PT_DIR;
		out->mode = 0755;
		out->nlink = 2;
		return 0;
	}
	struct mafsbx_files_target ft;
	files_target(ps, t, base, &ft);
	struct mafsbx_fstat f;
	memset(&f, 0, sizeof(f));
	int r = mafsbx_files_stat(ps->fz, &ft, rel, 0, &f, err);
	return r < 0 ? r : from_fstat(&f, rel, out, err);
}

/*
 * The names in the guest directory `abs`, by one exec of the guest's own
 * `find` at the guest's authority (the container's user), run outside any
 * freeze (an exec waits for every freeze to end). The output is parsed as
 * hostile (dirlist.h). A failure to run it at all is returned; a find that
 * complained (exit 1) still gives what it printed.
 */
static int guest_list(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *abs,
		      struct mafsbx_dirlist *out, struct mafsbx_error *err)
{
	char *argv[] = { "find", ".", "-mindepth", "1", "-maxdepth", "1", "-print0", NULL };
	struct mafsbx_exec_spec spec = {
		.sandbox = (char *)t->name, .argv = argv, .argc = 7, .cwd = (char *)abs, .timeout_ms = ENGINE_LIST_TIMEOUT_MS,
	};
	/* a find that outlives its bound is killed, the sandbox kept, where the engine is on this host */
	struct mafsbx_exec_hooks h = { .kill_on_timeout = true };
	struct mafsbx_exec_result res;
	mafsbx_bursts_end(ps->bursts, t->id);
	int r = mafsbx_sandbox_exec_run(ps->backend, &spec, &h, &res, err);
	if (r == 0 && (res.launch_failed || res.exit_code > 1))
		r = mafsbx_error_set(err, MAFSBX_EK_ENGINE, "list %s: the guest's find exited %d", abs, res.exit_code);
	if (r == 0)
		r = mafsbx_dirlist_parse(res.out, res.out_len, MAFSBX_DIRLIST_MAX, out, err);
	if (r == 0 && (out->dropped || out->unterminated || res.truncated))
		log_warn("%s: the listing of %s was cut: %zu entries listed, %zu more not listed%s", t->name, abs, out->n,
			 out->dropped, out->unterminated || res.truncated ? ", the guest's output ended inside an entry" : "");
	if (r == 0 && out->refused)
		log_info("%s: the listing of %s: %zu entries were not names (empty, '.', '..', a '/', over %d bytes, or "
			 "repeated) and are not listed", t->name, abs, out->refused, MAFSBX_DIRLIST_NAME_MAX);
	mafsbx_exec_result_free(&res);
	return r;
}

/* The listing of `abs` from its archive into `al`: 0 listed; 1 list it the
 * other way (cut past a bound, or refused as malformed); <0 an error the
 * other way would give too. */
static int archive_read(struct mafsbx_plane_dir *d, const struct mafsbx_plane_target *t,
			const struct mafsbx_files_target *ft, const char *rel, const char *abs,
			struct mafsbx_archlist *al, struct mafsbx_error *err)
{
	struct mafsbx_error le;
	mafsbx_error_clear(&le);
	int r = mafsbx_files_list(d->ps->fz, ft, rel, 0, al, &le);
	if (r < 0 && le.kind == MAFSBX_EK_PROTOCOL) {
		log_info("%s: the archive of %s was refused (%s); listing it by the guest's find", t->name, abs,
			 le.message);
		return 1;
	}
	if (r < 0) {
		if (err)
			*err = le;
		if (le.kind == MAFSBX_EK_CONFINEMENT)
			mafsbx_error_set(err, MAFSBX_EK_CONFINEMENT, "list %s: a symbolic link is never followed", rel);
		else if (le.kind == MAFSBX_EK_NOT_DIR && !le.message[0])
			mafsbx_error_set(err, MAFSBX_EK_NOT_DIR, "list %s: not a directory", rel);
		return r;
	}
	if (r == 1) {
		log_info("%s: the archive listing of %s was cut after %llu bytes, %zu entries and %zu below them (%s); "
			 "listing it by the guest's find", t->name, abs, (unsigned long long)al->bytes, al->n, al->deep,
			 mafsbx_archlist_cut_name(al->cut));
		return 1;
	}
	if (al->refused)
		log_info("%s: the listing of %s: %zu entries were not names (empty, '.', '..', a '/', over %d bytes, or "
			 "repeated) and are not listed", t->name, abs, al->refused, MAFSBX_ARCHLIST_NAME_MAX);
	return 0;
}

/* What the archive did not give a stat of: paths to stat as before, and their leaf names. */
struct archive_rest {
	char **path;
	const char **leaf;
	size_t n;
};

static void archive_rest_free(struct archive_rest *rest)
{
	for (size_t i = 0; rest->path && i < rest->n; i++)
		free(rest->path[i]);
	free(rest->path);
	free(rest->leaf);
}

/* The entries whose header is their stat into `d`; the rest (hard links, and
 * the candidates the archive did not hold) into `rest`. 0 or -ENOMEM. */
static int archive_take(struct mafsbx_plane_dir *d, const struct mafsbx_archlist *al, const char *rel,
			const char *const *candidates, size_t n, struct archive_rest *rest)
{
	size_t cap = al->n + n;
	d->names = calloc(cap ? cap : 1, sizeof(*d->names));
	d->stats = calloc(cap ? cap : 1, sizeof(*d->stats));
	rest->path = calloc(cap ? cap : 1, sizeof(*rest->path));
	rest->leaf = calloc(cap ? cap : 1, sizeof(*rest->leaf));
	if (!d->names || !d->stats || !rest->path || !rest->leaf)
		return -ENOMEM;
	for (size_t i = 0; i < al->n + n; i++) {
		const char *name = i < al->n ? al->v[i].name : candidates[i - al->n];
		if (i < al->n && al->v[i].typeflag != '1') {
			struct mafsbx_fstat f = { .size = al->v[i].size, .mode = al->v[i].mode, .mtime = al->v[i].mtime };
			mode_t ty = al->v[i].mode & S_IFMT;
			f.kind = ty == S_IFREG ? MAFSBX_FK_FILE : ty == S_IFDIR ? MAFSBX_FK_DIR
				 : ty == S_IFLNK ? MAFSBX_FK_SYMLINK : MAFSBX_FK_OTHER;
			from_fstat(&f, name, &d->stats[d->n], NULL);
			if (!(d->names[d->n] = strdup(name)))
				return -ENOMEM;
			d->n++;
			continue;
		}
		if (i >= al->n && mafsbx_archlist_find(al, name))
			continue;
		if (asprintf(&rest->path[rest->n], "%s%s%s", rel, *rel ? "/" : "", name) < 0) {
			rest->path[rest->n] = NULL;
			return -ENOMEM;
		}
		rest->leaf[rest->n++] = name;
	}
	return 0;
}

/* The rest statted as before (ENGINE_LIST_SLICE a freeze) and added to `d`:
 * one gone, absent (an output not made yet) or refused by the checks is not listed. */
static int archive_stat_rest(struct mafsbx_plane_dir *d, const struct mafsbx_files_target *ft,
			     const struct archive_rest *rest, struct mafsbx_error *err)
{
	size_t m = rest->n;
	if (!m)
		return 0;
	__do_free struct mafsbx_fstat *outs = calloc(m, sizeof(*outs));
	__do_free int *rcs = calloc(m, sizeof(*rcs));
	if (!outs || !rcs)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	int r = 0;
	for (size_t at = 0; at < m && r == 0; at += ENGINE_LIST_SLICE) {
		size_t k = m - at < ENGINE_LIST_SLICE ? m - at : ENGINE_LIST_SLICE;
		r = mafsbx_files_stat_many(d->ps->fz, ft, (const char *const *)rest->path + at, k, 0, outs + at,
					   rcs + at, NULL, err);
	}
	for (size_t i = 0; r == 0 && i < m; i++) {
		if (rcs[i] < 0 || from_fstat(&outs[i], rest->path[i], &d->stats[d->n], NULL) < 0)
			continue;
		if (!(d->names[d->n] = strdup(rest->leaf[i])))
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		d->n++;
	}
	return r;
}

/*
 * The listing from the directory's archive (archlist.h, files.h
 * mafsbx_files_list): one freeze for the ancestor check and one GET read
 * for its depth-1 headers, which give every entry's stat too (kept as the
 * burst's answers, so the lstat of each entry that `ls -l` makes next costs
 * no engine call while the burst holds). 0: listed; 1: list the other way
 * (the archive was cut past a bound, malformed, or the directory is `/`,
 * whose archive is the whole guest); <0: an error the other way would give
 * too (a link, a non-directory, absent, the container gone).
 */
static int archive_opendir(struct mafsbx_plane_dir *d, const struct mafsbx_plane_target *t,
			   enum mafsbx_plane_base base, const char *rel, const char *const *candidates, size_t n,
			   struct mafsbx_error *err)
{
	struct mafsbx_files_target ft;
	files_target(d->ps, t, base, &ft);
	__do_free char *abs = mafsbx_gp_resolve(ft.work_dir, *rel ? rel : ".", err);
	if (!abs)
		return err ? -err->err : -EINVAL;
	if (strcmp(abs, "/") == 0)
		return 1;
	struct mafsbx_archlist al;
	if (mafsbx_archlist_init(&al, strrchr(abs, '/') + 1, 0, MAFSBX_DIRLIST_MAX, err) < 0)
		return -ENOMEM;
	struct archive_rest rest = { 0 };
	int r = archive_read(d, t, &ft, rel, abs, &al, err);
	if (r == 0 && archive_take(d, &al, rel, candidates, n, &rest) < 0)
		r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (r == 0)
		r = archive_stat_rest(d, &ft, &rest, err);
	archive_rest_free(&rest);
	if (r != 0) {
		/* nothing half-listed is kept: the other way (or the error) starts clean */
		for (size_t i = 0; d->names && i < d->n; i++)
			free(d->names[i]);
		free(d->names);
		free(d->stats);
		d->names = NULL;
		d->stats = NULL;
		d->n = 0;
	}
	mafsbx_archlist_free(&al);
	return r;
}

int mafsbx_plane_engine_opendir(struct mafsbx_plane_dir *d, const struct mafsbx_plane_target *t, enum mafsbx_plane_base base,
		   const char *rel, const char *const *candidates, size_t n, struct mafsbx_error *err)
{
	int ar = d->ps->cfg.listing == MAFSBX_LISTING_EXEC ? 1 : archive_opendir(d, t, base, rel, candidates, n, err);
	if (ar <= 0)
		return ar;
	struct mafsbx_files_target ft;
	files_target(d->ps, t, base, &ft);
	/* The guest's own listing first (an exec, outside any freeze), then
	 * one freeze for the directory's check and every entry's stat. */
	struct mafsbx_dirlist gl;
	memset(&gl, 0, sizeof(gl));
	__do_free char *abs = mafsbx_gp_resolve(ft.work_dir, *rel ? rel : ".", err);
	if (!abs)
		return err ? -err->err : -EINVAL;
	struct mafsbx_error le;
	mafsbx_error_clear(&le);
	int lr = guest_list(d->ps, t, abs, &gl, &le);
	if (lr < 0 && (le.kind == MAFSBX_EK_NO_CONTAINER || le.kind == MAFSBX_EK_NOMEM)) {
		if (err)
			*err = le;
		return -(le.err ? le.err : EIO);
	}
	int r = 0;
	if (*rel) {
		/* Listing a link, or through one, is refused like any other use
		 * (this freeze, under a burst, also serves the stats below). */
		struct mafsbx_pstat st;
		if ((r = mafsbx_plane_engine_stat(d->ps, t, base, rel, &st, err)) < 0)
			goto early;
		if (st.type == MAFSBX_PT_SYMLINK) {
			r = mafsbx_error_set(err, MAFSBX_EK_CONFINEMENT, "list %s: a symbolic link is never followed", rel);
			goto early;
		}
		if (st.type != MAFSBX_PT_DIR) {
			r = mafsbx_error_set(err, MAFSBX_EK_NOT_DIR, "list %s: not a directory", rel);
			goto early;
		}
	}
	if (lr < 0)
		/* an image without find, or one that cannot run it: the names this mount knows of */
		log_warn("%s: cannot list %s in the guest (%s); listing only the declared outputs and the files "
			 "written through the mount", t->name, abs, le.message);
	size_t total = gl.n + n;
	char **full = calloc(total ? total : 1, sizeof(*full));
	const char **leaf = calloc(total ? total : 1, sizeof(*leaf));
	struct mafsbx_fstat *outs = calloc(total ? total : 1, sizeof(*outs));
	int *rcs = calloc(total ? total : 1, sizeof(*rcs));
	size_t m = 0;
	if (!full || !leaf || !outs || !rcs)
		goto nomem;
	for (size_t i = 0; i < gl.n + n; i++) {
		const char *name = i < gl.n ? gl.names[i] : candidates[i - gl.n];
		if (i >= gl.n && mafsbx_dirlist_has(&gl, name))
			continue; /* a declared output or a written file the guest listed already */
		if (asprintf(&full[m], "%s%s%s", rel, *rel ? "/" : "", name) < 0) {
			full[m] = NULL;
			goto nomem;
		}
		leaf[m++] = name;
	}
	/* In slices, each under its own freeze (joined by a burst for at most
	 * its window): a big directory never keeps the guest frozen for all of
	 * its stats at once. */
	for (size_t at = 0; at < m && r == 0; at += ENGINE_LIST_SLICE) {
		size_t k = m - at < ENGINE_LIST_SLICE ? m - at : ENGINE_LIST_SLICE;
		r = mafsbx_files_stat_many(d->ps->fz, &ft, (const char *const *)full + at, k, 0, outs + at, rcs + at,
					   NULL, err);
	}
	if (r < 0)
		goto out;
	d->names = calloc(m ? m : 1, sizeof(*d->names));
	d->stats = calloc(m ? m : 1, sizeof(*d->stats));
	if (!d->names || !d->stats)
		goto nomem;
	for (size_t i = 0; i < m; i++) {
		/* gone since the guest listed it, or refused by the checks: not listed */
		if (rcs[i] < 0 || from_fstat(&outs[i], full[i], &d->stats[d->n], NULL) < 0)
			continue;
		if (!(d->names[d->n] = strdup(leaf[i])))
			goto nomem;
		d->n++;
	}
	goto out;
nomem:
	r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
out:
	for (size_t i = 0; full && i < m; i++)
		free(full[i]);
	free(full);
	free(leaf);
	free(outs);
	free(rcs);
early:
	mafsbx_dirlist_free(&gl);
	return r;
}

/* A file's spool takes its size from the budget before the body comes. */
static int reserve_spool(void *ctx, uint64_t size, struct mafsbx_error *err)
{
	struct mafsbx_plane_file *f = ctx;
	return mafsbx_plane_spool_grow(f->ps, &f->accounted, size, err);
}

/* Fetch a guest file into `fd` under one freeze for f: refused at once while
 * the budget is spent, else its size is reserved before the body comes. */
static int spool_in(struct mafsbx_plane_file *f, const struct mafsbx_plane_target *t, enum mafsbx_plane_base base,
		    const char *rel, uint64_t max_bytes, int fd, struct mafsbx_read_info *ri, struct mafsbx_error *err)
{
	int r = mafsbx_plane_spool_room(f->ps, &f->accounted, err);
	if (r < 0)
		return r;
	struct mafsbx_files_target ft;
	files_target(f->ps, t, base, &ft);
	ft.reserve = reserve_spool;
	ft.reserve_ctx = f;
	memset(ri, 0, sizeof(*ri));
	return mafsbx_files_read(f->ps->fz, &ft, rel, max_bytes, fd, NULL, 0, ri, err);
}

int mafsbx_plane_engine_copy_frozen(struct mafsbx_plane_file *f, const struct mafsbx_plane_target *t, enum mafsbx_plane_base base,
		       const char *rel, uint64_t max_bytes, int fd, struct mafsbx_error *err)
{
	struct mafsbx_read_info ri;
	return spool_in(f, t, base, rel, max_bytes, fd, &ri, err);
}

static int file_ids(struct mafsbx_plane_file *f, const struct mafsbx_plane_target *t, const char *rel,
		    struct mafsbx_error *err)
{
	snprintf(f->id, sizeof(f->id), "%s", t->id);
	f->name = strdup(t->name ? t->name : "");
	f->work_dir = strdup(t->work_dir ? t->work_dir : MAFSBX_DEFAULT_WORK_DIR);
	f->rel = strdup(rel);
	f->fd = memfd_create("mafsbxfs-spool", MFD_CLOEXEC);
	if (!f->name || !f->work_dir || !f->rel)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (f->fd < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "memfd: %s", strerror(errno));
	return 0;
}

/* After a fill: the spool's size, counted against the budget. */
static int account_fill(struct mafsbx_plane_file *f, const struct mafsbx_read_info *ri, struct mafsbx_error *err)
{
	off_t end = lseek(f->fd, 0, SEEK_END);
	f->size = end > 0 ? (uint64_t)end : 0;
	f->mode = ri->mode & 07777;
	f->mtime.tv_sec = ri->mtime;
	f->mtime.tv_nsec = 0;
	return mafsbx_plane_spool_grow(f->ps, &f->accounted, f->size, err);
}

int mafsbx_plane_engine_open_read(struct mafsbx_plane_file *f, const struct mafsbx_plane_target *t,
		     enum mafsbx_plane_base base, const char *rel, uint64_t max_bytes, struct mafsbx_error *err)
{
	int r = file_ids(f, t, rel, err);
	if (r < 0)
		return r;
	struct mafsbx_read_info ri;
	r = spool_in(f, t, base, rel, max_bytes, f->fd, &ri, err);
	return r < 0 ? r : account_fill(f, &ri, err);
}

int mafsbx_plane_engine_open_write(struct mafsbx_plane_file *f, const struct mafsbx_plane_target *t, const char *rel,
		      mode_t mode, struct mafsbx_error *err)
{
	int r = file_ids(f, t, rel, err);
	if (r < 0)
		return r;
	/* Refused at open, not only at the send: a writer learns at once that
	 * an unresolved identity lets nothing be written. */
	uid_t uid;
	gid_t gid;
	mafsbx_bursts_end(f->ps->bursts, t->id);
	if ((r = mafsbx_plane_identity(f->ps, t->name, &uid, &gid, err)) < 0)
		return r;
	f->mode = 0644;
	if (f->flags & MAFSBX_PW_EXCL) {
		/* create(): the kernel found nothing there; the send decides. */
		f->mode = mode & 07777;
		f->dirty = true;
		return 0;
	}
	if (!(f->flags & MAFSBX_PW_TRUNC)) {
		struct mafsbx_read_info ri;
		r = spool_in(f, t, MAFSBX_BASE_WORK, rel, f->max_bytes, f->fd, &ri, err);
		if (r < 0 && err && err->kind == MAFSBX_EK_NO_PATH && (f->flags & MAFSBX_PW_CREATE)) {
			f->mode = mode & 07777;
			f->dirty = true;
			return 0;
		}
		if (r < 0)
			return r;
		/* The send replaces the file as root: stamped with the guest's ids
		 * it would hand the guest a file (and the content kept in it) that
		 * it could not read before. The old owner and group stay. */
		f->keep_owner = true;
		f->owner_uid = ri.uid;
		f->owner_gid = ri.gid;
		r = account_fill(f, &ri, err);
		f->mode &= ~(mode_t)(S_ISUID | S_ISGID); /* as a write(2) by the guest would */
		return r;
	}
	/* Truncated: keep the owner, group and mode of what is there (never
	 * set-id bits: new content is not what was made set-id); the content
	 * goes. The owner comes from the tar header, a HEAD gives none. */
	struct mafsbx_pstat st;
	r = mafsbx_plane_engine_stat(f->ps, t, MAFSBX_BASE_WORK, rel, &st, err);
	f->dirty = true;
	if (r < 0 && err && err->kind == MAFSBX_EK_NO_PATH && (f->flags & MAFSBX_PW_CREATE)) {
		f->mode = mode & 07777;
		return 0;
	}
	if (r < 0)
		return r;
	if (st.type == MAFSBX_PT_FILE) {
		struct mafsbx_files_target ft;
		struct mafsbx_read_info ri;
		files_target(f->ps, t, MAFSBX_BASE_WORK, &ft);
		memset(&ri, 0, sizeof(ri));
		r = mafsbx_files_read_header(f->ps->fz, &ft, rel, 0, &ri, err);
		if (r < 0 && err && err->kind == MAFSBX_EK_NO_PATH && (f->flags & MAFSBX_PW_CREATE)) {
			f->mode = mode & 07777; /* removed since the stat: a new file */
			return 0;
		}
		if (r < 0)
			return r;
		f->mode = ri.mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID);
		f->keep_owner = true;
		f->owner_uid = ri.uid;
		f->owner_gid = ri.gid;
		return 0;
	}
	if (st.type == MAFSBX_PT_DIR)
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EISDIR, "IsADirectoryError", "write %s: is a directory",
					     rel);
	if (st.type == MAFSBX_PT_SYMLINK)
		return mafsbx_error_set(err, MAFSBX_EK_CONFINEMENT, "write %s: a symbolic link is never written through",
					rel);
	return mafsbx_error_set(err, MAFSBX_EK_NOT_REGULAR, "write %s: not a regular file", rel);
}

/*
 * The staged content's name beside the target (files.h,
 * mafsbx_files_replace_fd): 64 random bits, so that nothing but this write
 * can have made a file of that name.
 */
static int stage_name(char *out, size_t n, struct mafsbx_error *err)
{
	uint64_t rnd;
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno ? errno : EIO, NULL,
					     "write: no random bytes for a staging name: %s", strerror(errno));
	snprintf(out, n, ".mafsbx-put-%016llx", (unsigned long long)rnd);
	return 0;
}

/*
 * Remove the staged name after the PUT, whatever its outcome: the guest's
 * own rm, at the guest's authority, from the work dir (as mafsbx_plane_engine_remove); a
 * link put there meanwhile is unlinked, never followed. A failure is logged,
 * not returned: the target already holds its old or its new content.
 */
static void remove_stage(struct mafsbx_plane_file *f, const char *staged_rel)
{
	char *argv[] = { "rm", "-f", "--", (char *)staged_rel, NULL };
	struct mafsbx_exec_spec spec = {
		.sandbox = f->name, .argv = argv, .argc = 4, .cwd = ".", .timeout_ms = ENGINE_REMOVE_TIMEOUT_MS,
	};
	struct mafsbx_exec_result res;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	mafsbx_bursts_end(f->ps->bursts, f->id); /* an exec waits for every freeze to end */
	int r = mafsbx_sandbox_exec(f->ps->backend, &spec, &res, &e);
	if (r == 0 && res.exit_code != 0)
		log_warn("%s: could not remove the staged copy %s of a write: rm exited %d", f->name, staged_rel,
			 res.exit_code);
	else if (r < 0)
		log_warn("%s: could not remove the staged copy %s of a write: %s", f->name, staged_rel, e.message);
	mafsbx_exec_result_free(&res);
}

int mafsbx_plane_engine_commit(struct mafsbx_plane_file *f, struct mafsbx_error *err)
{
	if (!f->dirty)
		return 0;
	f->dirty = false;
	uid_t uid = 0;
	gid_t gid = 0;
	/* Outside any freeze: the identity may need to read the guest's passwd under its own. */
	mafsbx_bursts_end(f->ps->bursts, f->id);
	int r = mafsbx_plane_identity(f->ps, f->name, &uid, &gid, err);
	if (r < 0)
		return r;
	char stage[32];
	if ((r = stage_name(stage, sizeof(stage), err)) < 0)
		return r;
	const char *slash = strrchr(f->rel, '/');
	__do_free char *staged_rel = NULL;
	if (asprintf(&staged_rel, "%.*s%s", slash ? (int)(slash - f->rel + 1) : 0, f->rel, stage) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	struct mafsbx_files_target t = { .container = f->id, .work_dir = f->work_dir,
					 .uid = f->keep_owner ? f->owner_uid : uid,
					 .gid = f->keep_owner ? f->owner_gid : gid, .bursts = f->ps->bursts };
	bool sent = false;
	r = mafsbx_files_replace_fd(f->ps->fz, &t, f->rel, f->fd, f->size, f->mode ? f->mode : 0644, stage, &sent, 0,
				    err);
	if (sent) /* refused before the PUT (a link, a directory): nothing was staged */
		remove_stage(f, staged_rel);
	return r;
}

int mafsbx_plane_engine_mkdir(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, mode_t mode,
		 struct mafsbx_error *err)
{
	uid_t uid = 0;
	gid_t gid = 0;
	mafsbx_bursts_end(ps->bursts, t->id); /* the identity may need its own freeze */
	int r = mafsbx_plane_identity(ps, t->name, &uid, &gid, err);
	if (r < 0)
		return r;
	struct mafsbx_files_target ft;
	files_target(ps, t, MAFSBX_BASE_WORK, &ft);
	ft.uid = uid;
	ft.gid = gid;
	return mafsbx_files_mkdir(ps->fz, &ft, rel, mode & 07777, 0, err);
}

/* Map `rm`/`rmdir`'s complaint to the errno a filesystem would give. */
static int remove_failure(const struct mafsbx_exec_result *res, const char *rel, struct mafsbx_error *err)
{
	char msg[512];
	size_t n = res->err_len < sizeof(msg) - 1 ? res->err_len : sizeof(msg) - 1;
	memcpy(msg, res->err ? (const char *)res->err : "", n);
	msg[n] = '\0';
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	int e = EIO;
	if (strstr(msg, "not empty"))
		e = ENOTEMPTY;
	else if (strstr(msg, "ermission denied") || strstr(msg, "not permitted"))
		e = EACCES;
	else if (strstr(msg, "No such file"))
		e = ENOENT;
	else if (strstr(msg, "Is a directory"))
		e = EISDIR;
	else if (strstr(msg, "Not a directory"))
		e = ENOTDIR;
	else if (strstr(msg, "busy"))
		e = EBUSY;
	return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, "OSError", "could not remove %s: exit %d: %s", rel,
				     res->exit_code, msg);
}

int mafsbx_plane_engine_remove(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, bool dir,
		  struct mafsbx_error *err)
{
	/* The rm runs as the image's user by the engine's own lookup, but like
	 * every other mutation it waits for an identity this side resolved. */
	uid_t uid;
	gid_t gid;
	mafsbx_bursts_end(ps->bursts, t->id);
	int r = mafsbx_plane_identity(ps, t->name, &uid, &gid, err);
	if (r < 0)
		return r;
	/* The frozen ancestor check first: a link or a non-directory above refuses. */
	struct mafsbx_pstat st;
	r = mafsbx_plane_engine_stat(ps, t, MAFSBX_BASE_WORK, rel, &st, err);
	if (r < 0)
		return r;
	if (dir && st.type != MAFSBX_PT_DIR)
		return mafsbx_error_set(err, MAFSBX_EK_NOT_DIR, "rmdir %s: not a directory", rel);
	if (!dir && st.type == MAFSBX_PT_DIR)
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EISDIR, "IsADirectoryError",
					     "unlink %s: is a directory", rel);
	/* As upstream's remove: the guest's own rm, as the image user, from the
	 * work dir; a link operand is unlinked, never followed. */
	char *argv[5] = { dir ? "rmdir" : "rm", dir ? "--" : "-f", NULL, NULL, NULL };
	char *operand = strdup(rel);
	if (!operand)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (dir) {
		argv[2] = operand;
	} else {
		argv[2] = "--";
		argv[3] = operand;
	}
	struct mafsbx_exec_spec spec = {
		.sandbox = (char *)t->name,
		.argv = argv,
		.argc = dir ? 3 : 4,
		.cwd = ".",
		.timeout_ms = ENGINE_REMOVE_TIMEOUT_MS,
	};
	struct mafsbx_exec_result res;
	mafsbx_bursts_end(ps->bursts, t->id); /* an exec waits for every freeze to end */
	r = mafsbx_sandbox_exec(ps->backend, &spec, &res, err);
	if (r == 0 && res.exit_code != 0)
		r = remove_failure(&res, rel, err);
	mafsbx_exec_result_free(&res);
	free(operand);
	return r;
}
