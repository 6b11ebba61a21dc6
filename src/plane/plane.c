/*
 * plane.c: which plane serves a sandbox, the registry of pinned containers,
 * and the dispatch of every plane.h call to plane_local.c or plane_engine.c.
 *
 * A container is pinned on first use (two inspects and a few /proc reads,
 * about a millisecond) and the pin is reused until its init process dies
 * (checked with one poll(2) of the pidfd per call), the sandbox is disposed,
 * or the registry is full (the least recently used idle entry goes).
 * A container that cannot be pinned for a lasting reason (another PID
 * namespace, a remote engine) is remembered as the engine's with the reason;
 * one that is merely stopped is not remembered (it may start again).
 */
#include "plane_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "burst.h"
#include "buf.h"
#include "engine.h"
#include "listsnap.h"
#include "log.h"
#include "sandbox.h"

#define PLANE_DEFAULT_MAX_PINS 256
#define PLANE_DEFAULT_SPOOL_BUDGET (1024ull * 1024 * 1024)

int mafsbx_plane_mode_parse(const char *text, enum mafsbx_plane_mode *out)
{
	if (!strcmp(text, "auto"))
		*out = MAFSBX_PLANE_AUTO;
	else if (!strcmp(text, "local"))
		*out = MAFSBX_PLANE_LOCAL;
	else if (!strcmp(text, "engine"))
		*out = MAFSBX_PLANE_ENGINE;
	else
		return -EINVAL;
	return 0;
}

static int entry_get(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, struct plane_entry **out,
		     struct mafsbx_error *err);
static void entry_put(struct mafsbx_planes *ps, struct plane_entry *pe);

/* The backend's work-dir preparer (sandbox.h): beneath the pinned root when the local plane serves the
 * container, no freeze; 0 for the engine plane's containers. */
static int planes_prepare_base(void *ctx, const char *id, const char *name, const char *base, uid_t uid, gid_t gid,
			       unsigned *made, struct mafsbx_error *err)
{
	struct mafsbx_planes *ps = ctx;
	struct mafsbx_plane_target t = { .id = id, .name = name, .work_dir = base };
	struct plane_entry *pe = NULL;
	mafsbx_listsnaps_mutating(ps->snaps, id); /* the work dir may be made, on either plane: listsnap.h */
	int r = entry_get(ps, &t, &pe, err);
	if (r < 0)
		return r;
	if (!pe)
		return 0;
	r = mafsbx_plane_local_prepare_base(pe->pin, base, uid, gid, made, err);
	entry_put(ps, pe);
	return r < 0 ? r : 1;
}

struct mafsbx_planes *mafsbx_planes_new(struct mafsbx_engine *e, struct mafsbx_freezer *fz,
					struct mafsbx_backend *b, const struct mafsbx_plane_config *cfg,
					struct mafsbx_error *err)
{
	struct mafsbx_planes *ps = calloc(1, sizeof(*ps));
	if (!ps) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	ps->engine = e;
	ps->fz = fz;
	ps->backend = b;
	ps->cfg = *cfg;
	if (!ps->cfg.max_pins)
		ps->cfg.max_pins = PLANE_DEFAULT_MAX_PINS;
	if (!ps->cfg.spool_budget)
		ps->cfg.spool_budget = PLANE_DEFAULT_SPOOL_BUDGET;
	int linger = cfg->burst_ms ? cfg->burst_ms : MAFSBX_BURST_LINGER_MS;
	if (fz && linger > 0 && !(ps->bursts = mafsbx_bursts_new(fz, linger, err))) {
		free(ps);
		return NULL;
	}
	/* with bursts only: -o burst_ms=0 asks for every call its own freeze, and so for no kept answer either */
	if (ps->bursts && !(ps->snaps = mafsbx_listsnaps_new(err))) {
		mafsbx_bursts_free(ps->bursts);
		free(ps);
		return NULL;
	}
	pthread_mutex_init(&ps->mu, NULL);
	atomic_init(&ps->spool_used, 0);
	pthread_mutex_init(&ps->spool_mu, NULL);
	ps->own_uid = geteuid();
	if (b)
		mafsbx_backend_set_base_preparer(b, planes_prepare_base, ps);
	return ps;
}

static void entry_free(struct plane_entry *pe)
{
	mafsbx_pin_free(pe->pin);
	free(pe);
}

void mafsbx_planes_free(struct mafsbx_planes *ps)
{
	if (!ps)
		return;
	if (ps->backend)
		mafsbx_backend_set_base_preparer(ps->backend, NULL, NULL);
	mafsbx_plane_route_free(ps);
	mafsbx_bursts_free(ps->bursts); /* before the freezer goes: it leaves parked freezes */
	mafsbx_listsnaps_free(ps->snaps);
	struct plane_entry *pe = ps->entries;
	while (pe) {
		struct plane_entry *next = pe->next;
		/* Objects still holding an entry were freed by their owners first. */
		entry_free(pe);
		pe = next;
	}
	pthread_mutex_destroy(&ps->mu);
	mafsbx_plane_spool_fini(ps);
	free(ps);
}

int mafsbx_planes_check_local(struct mafsbx_planes *ps, const char *sock_path, struct mafsbx_error *err)
{
	if (!ps->cfg.endpoint_local || !sock_path)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "plane=local: the engine endpoint is not a unix socket on this host");
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "socket: %s", strerror(errno));
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	struct ucred cr = { 0 };
	socklen_t cl = sizeof(cr);
	int r = 0;
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
		r = mafsbx_error_set_full(err, MAFSBX_EK_UNREACHABLE, ENOTCONN, NULL, "plane=local: %s: %s", sock_path,
					  strerror(errno));
	} else if (cr.pid <= 0) {
		/* The peer is in a PID namespace we cannot see (the kernel reports 0). */
		r = mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					  "plane=local: the engine behind %s runs in another PID namespace", sock_path);
	} else if (geteuid() != 0 && cr.uid != geteuid()) {
		/* A rootless engine runs as its user (root of its own user namespace),
		 * so that user reaches its containers' roots; anyone else needs root. */
		r = mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					  "plane=local: needs root, or a rootless engine of this user (the engine "
					  "behind %s runs as uid %u, this daemon as uid %u: containers' roots and "
					  "the guest's credentials are that engine's user's to reach)",
					  sock_path, (unsigned)cr.uid, (unsigned)geteuid());
	}
	close(s);
	return r;
}

static void unlink_locked(struct mafsbx_planes *ps, struct plane_entry *pe)
{
	for (struct plane_entry **pp = &ps->entries; *pp; pp = &(*pp)->next) {
		if (*pp == pe) {
			*pp = pe->next;
			ps->n_entries--;
			pe->linked = false;
			return;
		}
	}
}

static void put_locked(struct mafsbx_planes *ps, struct plane_entry *pe)
{
	(void)ps;
	if (--pe->refs == 0 && !pe->linked)
		entry_free(pe);
}

static void entry_put(struct mafsbx_planes *ps, struct plane_entry *pe)
{
	if (!pe)
		return;
	pthread_mutex_lock(&ps->mu);
	put_locked(ps, pe);
	pthread_mutex_unlock(&ps->mu);
}

/* Make room for one more entry: drop the least recently used idle one. */
static void evict_locked(struct mafsbx_planes *ps)
{
	while (ps->n_entries >= ps->cfg.max_pins) {
		struct plane_entry *old = NULL;
		for (struct plane_entry *pe = ps->entries; pe; pe = pe->next)
			if (!pe->refs && (!old || pe->used_ms < old->used_ms))
				old = pe;
		if (!old)
			return;   /* every entry is in use: allow one over, freed when released */
		unlink_locked(ps, old);
		entry_free(old);
	}
}

/*
 * The entry serving t (a new reference), or NULL with 0 for the engine
 * plane when nothing needs remembering. Fails only for a sandbox the local
 * plane must serve and cannot (plane=local), or a stopped one.
 */
static int entry_get(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, struct plane_entry **out,
		     struct mafsbx_error *err)
{
	*out = NULL;
	if (ps->cfg.mode == MAFSBX_PLANE_ENGINE)
		return 0;
	if (!ps->cfg.endpoint_local) {
		if (ps->cfg.mode == MAFSBX_PLANE_LOCAL)
			return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
						     "plane=local: the engine is not on this host");
		return 0;
	}
	pthread_mutex_lock(&ps->mu);
	for (struct plane_entry *pe = ps->entries; pe; pe = pe->next) {
		if (strcmp(pe->id, t->id))
			continue;
		if (pe->pin && !mafsbx_pin_alive(pe->pin)) {
			/* The init died: a restart has a new PID. Never serve the old root. */
			log_info("pin: sandbox %s: its init (PID %d) is gone: unpinned, pinning afresh",
				 t->name ? t->name : t->id, (int)pe->pin->pid);
			unlink_locked(ps, pe);
			if (!pe->refs)
				entry_free(pe);
			break;
		}
		pe->refs++;
		pe->used_ms = mafsbx_now_ms();
		pthread_mutex_unlock(&ps->mu);
		*out = pe->pin ? pe : NULL;
		if (!pe->pin)
			entry_put(ps, pe);
		return 0;
	}
	pthread_mutex_unlock(&ps->mu);

	struct mafsbx_pin *pin = NULL;
	struct mafsbx_error pe_err;
	mafsbx_error_clear(&pe_err);
	int r = mafsbx_pin_open(ps->engine, t->id, &pin, &pe_err);
	if (r < 0 && pe_err.kind != MAFSBX_EK_UNSUPPORTED) {
		/* Stopped, gone, or the engine failed: nothing lasting to remember. */
		if (err)
			*err = pe_err;
		return r;
	}
	if (r < 0 && ps->cfg.mode == MAFSBX_PLANE_LOCAL) {
		log_info("pin: sandbox %s: refused (plane=local): %s", t->name ? t->name : t->id, pe_err.message);
		if (err)
			*err = pe_err;
		return r;
	}
	struct plane_entry *ne = calloc(1, sizeof(*ne));
	if (!ne) {
		mafsbx_pin_free(pin);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	snprintf(ne->id, sizeof(ne->id), "%s", t->id);
	ne->pin = pin;
	if (!pin) {
		snprintf(ne->why, sizeof(ne->why), "%s", pe_err.message);
		log_info("pin: sandbox %s: not pinned, engine plane: %s", t->name ? t->name : t->id, pe_err.message);
	} else {
		log_info("pin: sandbox %s: pinned init PID %d (local plane)", t->name ? t->name : t->id, (int)pin->pid);
	}
	ne->used_ms = mafsbx_now_ms();
	pthread_mutex_lock(&ps->mu);
	struct plane_entry *raced = NULL;
	for (struct plane_entry *pe = ps->entries; pe; pe = pe->next)
		if (!strcmp(pe->id, t->id))
			raced = pe;
	if (raced) {
		entry_free(ne);
		ne = raced;
	} else {
		evict_locked(ps);
		ne->next = ps->entries;
		ps->entries = ne;
		ps->n_entries++;
		ne->linked = true;
	}
	if (ne->pin) {
		ne->refs++;
		*out = ne;
	}
	pthread_mutex_unlock(&ps->mu);
	return 0;
}

enum mafsbx_plane_kind mafsbx_plane_which(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, char *why,
					  size_t why_size)
{
	if (why && why_size)
		why[0] = '\0';
	struct plane_entry *pe = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct plane_routed rb;
	int r = mafsbx_plane_route(&ps, &t, &rb, &e);
	if (r < 0) {
		if (why && why_size)
			snprintf(why, why_size, "%s", e.message);
		return MAFSBX_PK_ENGINE;
	}
	r = entry_get(ps, t, &pe, &e);
	if (pe) {
		entry_put(ps, pe);
		return MAFSBX_PK_LOCAL;
	}
	if (why && why_size) {
		if (r < 0) {
			snprintf(why, why_size, "%s", e.message);
		} else if (ps->cfg.mode == MAFSBX_PLANE_ENGINE) {
			snprintf(why, why_size, "plane=engine was asked for");
		} else if (!ps->cfg.endpoint_local) {
			snprintf(why, why_size, "the engine endpoint is not a unix socket on this host");
		} else {
			pthread_mutex_lock(&ps->mu);
			for (struct plane_entry *x = ps->entries; x; x = x->next)
				if (!strcmp(x->id, t->id))
					snprintf(why, why_size, "%s", x->why);
			pthread_mutex_unlock(&ps->mu);
		}
	}
	return MAFSBX_PK_ENGINE;
}

void mafsbx_planes_forget(struct mafsbx_planes *ps, const char *id)
{
	pthread_mutex_lock(&ps->mu);
	for (struct plane_entry *pe = ps->entries; pe; pe = pe->next) {
		if (!strcmp(pe->id, id)) {
			unlink_locked(ps, pe);
			if (!pe->refs)
				entry_free(pe);
			break;
		}
	}
	pthread_mutex_unlock(&ps->mu);
}

/* ---- dispatch ------------------------------------------------------------- */

int mafsbx_plane_stat(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, enum mafsbx_plane_base base,
		      const char *rel, struct mafsbx_pstat *out, struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	int r = mafsbx_plane_rel_check(rel, err);
	if (r < 0)
		return r;
	struct plane_entry *pe;
	if ((r = entry_get(ps, t, &pe, err)) < 0)
		return r;
	memset(out, 0, sizeof(*out));
	r = pe ? mafsbx_plane_local_stat(ps, pe->pin, t, base, rel, out, err) : mafsbx_plane_engine_stat(ps, t, base, rel, out, err);
	entry_put(ps, pe);
	return r;
}

int mafsbx_plane_opendir(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t,
			 enum mafsbx_plane_base base, const char *rel, const char *const *candidates, size_t n,
			 struct mafsbx_plane_dir **out, struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	*out = NULL;
	int r = mafsbx_plane_rel_check(rel, err);
	if (r < 0)
		return r;
	struct mafsbx_plane_dir *d = calloc(1, sizeof(*d));
	if (!d)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	d->ps = ps;
	if ((r = entry_get(ps, t, &d->entry, err)) < 0) {
		free(d);
		return r;
	}
	if (d->entry) {
		d->local = true;
		r = mafsbx_plane_local_opendir(d, d->entry->pin, t, base, rel, err);
	} else {
		r = mafsbx_plane_engine_opendir(d, t, base, rel, candidates, n, err);
	}
	if (r < 0) {
		mafsbx_plane_closedir(d);
		return r;
	}
	*out = d;
	return 0;
}

/* The engine plane's fixed list: "." and ".." first, then the entries. */
static int engine_readdir(struct mafsbx_plane_dir *d, uint64_t pos, mafsbx_plane_dir_fn fn, void *ctx)
{
	struct mafsbx_pstat dot = { .type = MAFSBX_PT_DIR, .mode = 0755, .nlink = 2 };
	for (uint64_t i = pos; i < d->n + 2; i++) {
		const char *name = i == 0 ? "." : i == 1 ? ".." : d->names[i - 2];
		const struct mafsbx_pstat *st = i < 2 ? &dot : &d->stats[i - 2];
		if (fn(ctx, name, st, i + 1))
			break;
	}
	return 0;
}

int mafsbx_plane_readdir(struct mafsbx_plane_dir *d, uint64_t pos, mafsbx_plane_dir_fn fn, void *ctx)
{
	return d->local ? mafsbx_plane_local_readdir(d, pos, fn, ctx) : engine_readdir(d, pos, fn, ctx);
}

void mafsbx_plane_closedir(struct mafsbx_plane_dir *d)
{
	if (!d)
		return;
	if (d->local)
		mafsbx_plane_local_closedir(d);
	for (size_t i = 0; i < d->n; i++)
		free(d->names[i]);
	free(d->names);
	free(d->stats);
	entry_put(d->ps, d->entry);
	free(d);
}

/* `sandbox`: whom its spool is charged to (PLANE_ROUTE's route_sandbox_). */
static struct mafsbx_plane_file *file_new(struct mafsbx_planes *ps, const char *sandbox)
{
	struct mafsbx_plane_file *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->ps = ps;
	mafsbx_planes_spool_owner(ps, &f->accounted, sandbox);
	f->fd = -1;
	f->parent = -1;
	pthread_mutex_init(&f->mu, NULL);
	clock_gettime(CLOCK_REALTIME, &f->mtime);
	return f;
}

int mafsbx_plane_open_read(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t,
			   enum mafsbx_plane_base base, const char *rel, uint64_t max_bytes,
			   struct mafsbx_plane_file **out, struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	*out = NULL;
	int r = mafsbx_plane_rel_check(rel, err);
	if (r < 0)
		return r;
	struct mafsbx_plane_file *f = file_new(ps, route_sandbox_);
	if (!f)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if ((r = entry_get(ps, t, &f->entry, err)) == 0) {
		f->local = f->entry != NULL;
		r = f->local ? mafsbx_plane_local_open_read(f, f->entry->pin, t, base, rel, max_bytes, err)
			     : mafsbx_plane_engine_open_read(f, t, base, rel, max_bytes, err);
	}
	if (r < 0) {
		mafsbx_plane_close(f);
		return r;
	}
	*out = f;
	return 0;
}

int mafsbx_plane_open_write(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel,
			    unsigned flags, mode_t mode, uint64_t max_bytes, struct mafsbx_plane_file **out,
			    struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	*out = NULL;
	int r = mafsbx_plane_rel_check(rel, err);
	if (r < 0)
		return r;
	if (!*rel)
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EISDIR, NULL,
					     "the working directory itself cannot be written");
	struct mafsbx_plane_file *f = file_new(ps, route_sandbox_);
	if (!f)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	f->writable = true;
	f->flags = flags;
	f->max_bytes = max_bytes;
	mafsbx_listsnaps_mutating(ps->snaps, t->id); /* a write is coming: listsnap.h */
	if ((r = entry_get(ps, t, &f->entry, err)) == 0) {
		f->local = f->entry != NULL;
		r = f->local ? mafsbx_plane_local_open_write(f, f->entry->pin, t, rel, mode, err)
			     : mafsbx_plane_engine_open_write(f, t, rel, mode, err);
	}
	if (r < 0) {
		mafsbx_plane_close(f);
		return r;
	}
	*out = f;
	return 0;
}

bool mafsbx_plane_file_writable(const struct mafsbx_plane_file *f)
{
	return f->writable;
}

ssize_t mafsbx_plane_pread(struct mafsbx_plane_file *f, void *buf, size_t size, uint64_t off)
{
	if (off > INT64_MAX)
		return -EINVAL;
	ssize_t n;
	do
		n = pread(f->fd, buf, size, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

int mafsbx_plane_read_fd(const struct mafsbx_plane_file *f)
{
	return f && f->local && !f->writable && !f->copy ? f->fd : -1;
}

static uint64_t fd_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

ssize_t mafsbx_plane_pwrite(struct mafsbx_plane_file *f, const void *buf, size_t size, uint64_t off)
{
	if (!f->writable)
		return -EBADF;
	pthread_mutex_lock(&f->mu);
	if (f->flags & MAFSBX_PW_APPEND)
		off = f->local ? fd_size(f->fd) : f->size;
	ssize_t n;
	if (f->abandoned) {
		n = -EBADF;
		goto out;
	}
	if (off > INT64_MAX || (f->max_bytes && off + size > f->max_bytes)) {
		/* Never send a partial file in place of the one the caller meant. */
		f->failed = EFBIG;
		n = -EFBIG;
		goto out;
	}
	if (!f->local) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		if (mafsbx_plane_spool_grow(f->ps, &f->accounted, off + size, &e) < 0) {
			f->failed = ENOMEM;
			n = -ENOMEM;
			log_warn("write %s: %s", f->rel, e.message);
			goto out;
		}
	}
	do
		n = pwrite(f->fd, buf, size, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		n = -errno;
		f->failed = errno;
		goto out;
	}
	if (n > 0) {
		f->dirty = true;
		f->written = true;
		if (off + (uint64_t)n > f->size)
			f->size = off + (uint64_t)n;
		clock_gettime(CLOCK_REALTIME, &f->mtime);
	}
out:
	pthread_mutex_unlock(&f->mu);
	return n;
}

int mafsbx_plane_ftruncate(struct mafsbx_plane_file *f, uint64_t size)
{
	if (!f->writable)
		return -EBADF;
	pthread_mutex_lock(&f->mu);
	int r = 0;
	if (size > INT64_MAX || (f->max_bytes && size > f->max_bytes)) {
		f->failed = EFBIG;
		r = -EFBIG;
	} else if (!f->local && mafsbx_plane_spool_grow(f->ps, &f->accounted, size, NULL) < 0) {
		f->failed = ENOMEM;
		r = -ENOMEM;
	} else if (ftruncate(f->fd, (off_t)size) < 0) {
		r = -errno;
	} else {
		f->size = size;
		f->dirty = true;
		f->written = true;
		clock_gettime(CLOCK_REALTIME, &f->mtime);
	}
	pthread_mutex_unlock(&f->mu);
	return r;
}

int mafsbx_plane_fstat(struct mafsbx_plane_file *f, struct mafsbx_pstat *out)
{
	memset(out, 0, sizeof(*out));
	out->type = MAFSBX_PT_FILE;
	out->nlink = 1;
	pthread_mutex_lock(&f->mu);
	struct stat st;
	if (f->local && fstat(f->fd, &st) == 0) {
		out->mode = st.st_mode & 07777;
		out->size = (uint64_t)st.st_size;
		out->atime = st.st_atim;
		out->mtime = st.st_mtim;
		out->ctime = st.st_ctim;
		uid_t u;
		gid_t g;
		if (f->entry && mafsbx_pin_guest_uid(f->entry->pin, st.st_uid, &u) == 0)
			out->uid = u;
		if (f->entry && mafsbx_pin_guest_gid(f->entry->pin, st.st_gid, &g) == 0)
			out->gid = g;
	} else {
		out->mode = f->mode & 07777;
		out->size = f->size;
		out->atime = out->mtime = out->ctime = f->mtime;
	}
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int mafsbx_plane_commit(struct mafsbx_plane_file *f, bool last, struct mafsbx_error *err)
{
	if (!f->writable)
		return 0;
	pthread_mutex_lock(&f->mu);
	int r;
	if (f->abandoned || (!last && !f->written)) {
		/* Nothing written since the last commit: a close of a duplicate
		 * (a shell's dup2 + close before it writes) must not publish an
		 * empty file in place of the old one; the last close will. */
		r = 0;
	} else if (f->failed) {
		f->dirty = false;
		r = mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, f->failed, NULL, "an earlier write failed (%s): "
					  "nothing was sent", strerror(f->failed));
	} else {
		mafsbx_listsnaps_mutating(f->ps->snaps, f->id); /* before and after: listsnap.h */
		r = f->local ? mafsbx_plane_local_commit(f, err) : mafsbx_plane_engine_commit(f, err);
		mafsbx_listsnaps_mutating(f->ps->snaps, f->id);
		if (r == 0)
			f->written = false;
	}
	pthread_mutex_unlock(&f->mu);
	return r;
}

void mafsbx_plane_abandon(struct mafsbx_plane_file *f)
{
	pthread_mutex_lock(&f->mu);
	f->dirty = false;
	f->abandoned = true;
	pthread_mutex_unlock(&f->mu);
}

void mafsbx_plane_close(struct mafsbx_plane_file *f)
{
	if (!f)
		return;
	if (f->local)
		mafsbx_plane_local_close(f);
	if (f->fd >= 0)
		close(f->fd);
	mafsbx_plane_spool_release(f->ps, &f->accounted);
	free(f->name);
	free(f->work_dir);
	free(f->rel);
	free(f->leaf);
	entry_put(f->ps, f->entry);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* ---- path operations -------------------------------------------------------- */

/* Every path operation changes (or may change) the guest's files: the
 * container's kept listings go before it and after it (listsnap.h). */
#define PLANE_PATH_OP(call_local, call_engine)                                      \
	struct plane_entry *pe;                                                     \
	int r = entry_get(ps, t, &pe, err);                                         \
	if (r < 0)                                                                  \
		return r;                                                           \
	mafsbx_listsnaps_mutating(ps->snaps, t->id);                                \
	r = pe ? (call_local) : (call_engine);                                      \
	mafsbx_listsnaps_mutating(ps->snaps, t->id);                                \
	entry_put(ps, pe);                                                          \
	return r

static int engine_eperm(const char *what, const char *rel, struct mafsbx_error *err)
{
	return mafsbx_error_set_full(err, MAFSBX_EK_NOT_REGULAR, EPERM, NULL,
				     "%s %s: not served by the engine plane", what, rel);
}

static int check_work_rel(const char *rel, struct mafsbx_error *err)
{
	int r = mafsbx_plane_rel_check(rel, err);
	if (r == 0 && !*rel)
		r = mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EBUSY, NULL,
					  "the working directory itself is refused");
	return r;
}

int mafsbx_plane_mkdir(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, mode_t mode,
		       struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	if (rel && !*rel)
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EEXIST, NULL, "the working directory exists");
	int c = mafsbx_plane_rel_check(rel, err);
	if (c < 0)
		return c;
	PLANE_PATH_OP(mafsbx_plane_local_mkdir(ps, pe->pin, t, rel, mode, err), mafsbx_plane_engine_mkdir(ps, t, rel, mode, err));
}

int mafsbx_plane_remove(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, bool dir,
			struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	int c = check_work_rel(rel, err);
	if (c < 0)
		return c;
	PLANE_PATH_OP(mafsbx_plane_local_remove(ps, pe->pin, t, rel, dir, err), mafsbx_plane_engine_remove(ps, t, rel, dir, err));
}

/*
 * The renameat2(2) flags a rename may carry: RENAME_NOREPLACE or
 * RENAME_EXCHANGE (not both, as the kernel says). RENAME_WHITEOUT leaves a
 * whiteout, overlayfs's own device for hiding a lower file, where the
 * source was: nothing a host has to make in a guest's files.
 */
static int check_rename_flags(unsigned flags, struct mafsbx_error *err)
{
	unsigned unknown = flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT);
	if (unknown)
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EINVAL, NULL, "rename: unknown renameat2 flags 0x%x",
					     unknown);
	if (flags & RENAME_WHITEOUT)
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EINVAL, NULL,
					     "rename: RENAME_WHITEOUT is refused (a whiteout is overlayfs's device, "
					     "not a file of the sandbox)");
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EINVAL, NULL,
					     "rename: RENAME_NOREPLACE and RENAME_EXCHANGE together");
	return 0;
}

/* The engine plane has no rename: a plain one (or RENAME_NOREPLACE, which
 * then replaces nothing) is EXDEV, so mv(1) copies and removes; an exchange
 * is refused outright, since no copy swaps two names in one step. */
static int engine_rename(unsigned flags, struct mafsbx_error *err)
{
	if (flags & RENAME_EXCHANGE)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EINVAL, NULL,
					     "rename: RENAME_EXCHANGE on the engine plane is refused (it has no rename, "
					     "and a copy cannot swap two names at once)");
	return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EXDEV, NULL,
				     "rename on the engine plane: copy and remove instead");
}

int mafsbx_plane_rename(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *from,
			const char *to, unsigned flags, struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	int c = check_rename_flags(flags, err);
	if (c == 0)
		c = check_work_rel(from, err);
	if (c == 0)
		c = check_work_rel(to, err);
	if (c < 0)
		return c;
	PLANE_PATH_OP(mafsbx_plane_local_rename(ps, pe->pin, t, from, to, flags, err), engine_rename(flags, err));
}

int mafsbx_plane_chmod(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, mode_t mode,
		       struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	int c = mafsbx_plane_rel_check(rel, err);
	if (c < 0)
		return c;
	PLANE_PATH_OP(mafsbx_plane_local_chmod(ps, pe->pin, t, rel, mode, err), engine_eperm("chmod", rel, err));
}

int mafsbx_plane_truncate(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel,
			  uint64_t size, struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	int c = check_work_rel(rel, err);
	if (c < 0)
		return c;
	PLANE_PATH_OP(mafsbx_plane_local_truncate(ps, pe->pin, t, rel, size, err), engine_eperm("truncate", rel, err));
}

int mafsbx_plane_utimens(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel,
			 const struct timespec ts[2], struct mafsbx_error *err)
{
	PLANE_ROUTE(ps, t, err);
	int c = mafsbx_plane_rel_check(rel, err);
	if (c < 0)
		return c;
	PLANE_PATH_OP(mafsbx_plane_local_utimens(ps, pe->pin, t, rel, ts, err), engine_eperm("utimens", rel, err));
}
