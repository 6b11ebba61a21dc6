/*
 * plane_internal.h: private to plane.c, plane_local.c and plane_engine.c.
 * The registry of pinned containers and the per-plane halves of the open
 * objects. Nothing outside those files includes this.
 */
#ifndef MAFSBX_PLANE_INTERNAL_H
#define MAFSBX_PLANE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "guestcred.h"
#include "pin.h"
#include "names.h"
#include "plane.h"

#define PLANE_WHY_MAX 256

/* One container instance as the registry knows it: pinned (local) or the
 * engine's, with the reason. Entries are refcounted: a call or an open
 * object holds one; a dead pin is unlinked at once and freed by the last
 * holder. */
struct plane_entry {
	struct plane_entry *next;
	char id[65];
	struct mafsbx_pin *pin;      /* NULL: the engine plane serves this container */
	char why[PLANE_WHY_MAX];     /* engine: why not local */
	unsigned refs;
	bool linked;
	long long used_ms;
};

struct mafsbx_planes {
	struct mafsbx_engine *engine;
	struct mafsbx_freezer *fz;
	struct mafsbx_backend *backend;
	struct mafsbx_bursts *bursts;  /* the engine plane's shared freezes (burst.h) */
	struct mafsbx_listsnaps *snaps; /* a listing's answers for the stats after it (listsnap.h; with bursts only) */
	struct mafsbx_plane_config cfg;
	pthread_mutex_t mu;          /* guards entries, n_entries, every entry's refs/linked */
	struct plane_entry *entries;
	size_t n_entries;
	atomic_uint_fast64_t spool_used;  /* bytes held by all spools (changed under spool_mu) */
	pthread_mutex_t spool_mu;    /* the spool tallies below (plane_common.c) */
	struct plane_spool_tally *spool_tallies;  /* per sandbox and per user, while they hold bytes */
	uint64_t spool_users;        /* held by users other than own_uid */
	uint64_t spool_kept;         /* in the kept allowances */
	uid_t own_uid;               /* the daemon's */
	/* Over a swarm, a node's planes: the mount's planes, whose spool account
	 * (the fields above) this one charges instead of its own, so that the
	 * budget bounds the mount across all its nodes (set before publication). */
	struct mafsbx_planes *spool_account;
	bool spool_shared;           /* the account of node planes too (under spool_mu): the refusal says so */
	struct plane_node *nodes;    /* over a swarm: the planes of each node engine (plane_route.c; under mu) */
};

/* ---- plane_route.c: the planes over a swarm --------------------------------- */
struct plane_node {
	struct plane_node *next;
	struct mafsbx_engine *engine;
	struct mafsbx_planes *ps;
};
struct plane_routed {
	struct mafsbx_plane_target t;
	char id[MAFSBX_NAME_LEN + 66];
};
/* Over a swarm: *ps and *t become the node's planes and the target as its engine knows it (in buf).
 * On one engine: unchanged. A lost sandbox: EK_UNREACHABLE (ENOTCONN). */
int mafsbx_plane_route(struct mafsbx_planes **ps, const struct mafsbx_plane_target **t, struct plane_routed *buf,
		       struct mafsbx_error *err);
void mafsbx_plane_route_free(struct mafsbx_planes *ps);
/* The first statement of a call on a sandbox: route it, or return the refusal. */
/* route_sandbox_: the sandbox as the caller named it, which its spools are
 * charged to (over a swarm the routed name is its task's container). */
#define PLANE_ROUTE(ps, t, err)                                                     \
	struct plane_routed route_buf_;                                             \
	__attribute__((unused)) const char *route_sandbox_ = (t)->name ? (t)->name : (t)->id; \
	do {                                                                        \
		int route_r_ = mafsbx_plane_route(&(ps), &(t), &route_buf_, (err)); \
		if (route_r_ < 0)                                                   \
			return route_r_;                                            \
	} while (0)

struct mafsbx_plane_dir {
	bool local;
	/* local */
	void *dirp;                  /* DIR * of the guest directory */
	uint64_t mnt_id;             /* the directory's mount: entries on another are not listed */
	const struct mafsbx_pin *pin;
	/* engine: a fixed list made at open */
	char **names;
	struct mafsbx_pstat *stats;
	size_t n;
	struct plane_entry *entry;
	struct mafsbx_planes *ps;
};

struct mafsbx_plane_file {
	bool local;
	bool writable;
	unsigned flags;
	pthread_mutex_t mu;          /* the state below (FUSE may read/write one handle from two threads) */
	int fd;                      /* local: the file or the temporary; engine: the spool (memfd) */
	int failed;                  /* a refused write (positive errno): commit reports it, nothing is sent */
	bool dirty;
	bool written;                /* bytes written or an explicit truncate since the last commit */
	bool abandoned;              /* the writer died by a signal: never commit */
	bool copy;                   /* local: fd is a copy (frozen_reads), not the guest's file */
	uint64_t max_bytes;
	struct mafsbx_planes *ps;
	struct plane_entry *entry;
	/* local writes */
	int parent;                  /* O_PATH of the directory holding the target */
	char *leaf;
	char tmp[40];                /* the temporary's name while uncommitted, else "" */
	bool inplace;                /* writes go to the target itself (new file, or after the first commit) */
	bool created;                /* a new file made by this open: removed again if never good */
	struct mafsbx_guestcred cred;
	/* engine */
	char id[65];
	char *name, *work_dir, *rel;
	mode_t mode;
	bool keep_owner;             /* a replaced file's owner, read with its content, is kept */
	uid_t owner_uid;
	gid_t owner_gid;
	uint64_t size;               /* bytes in the spool */
	struct mafsbx_spool_share accounted;  /* the spool bytes this file holds */
	struct timespec mtime;
};

/* ---- plane.c ------------------------------------------------------------- */
/* Path text check shared by both planes: no empty, "." or ".." component. */
int mafsbx_plane_rel_check(const char *rel, struct mafsbx_error *err);
/* The guest identity (in the guest's ids) a mutation runs at: EACCES while
 * it is unresolved, whatever the image. */
int mafsbx_plane_identity(struct mafsbx_planes *ps, const char *name, uid_t *uid, gid_t *gid, struct mafsbx_error *err);
/* The guest identity as host credentials for a pinned container (EACCES while unresolved). */
int mafsbx_plane_guest_cred(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const char *name,
		     struct mafsbx_guestcred *out, struct mafsbx_error *err);
/* Spool accounting: reserve `more` bytes (EK_NOMEM ENOMEM past the budget). */
int mafsbx_plane_spool_grow(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted, uint64_t want,
			    struct mafsbx_error *err);
/* Refuses (ENOMEM) a new spool while the open files hold the whole budget,
 * before anything is fetched: a doomed open neither freezes the guest nor
 * copies a byte. */
int mafsbx_plane_spool_room(struct mafsbx_planes *ps, const struct mafsbx_spool_share *a, struct mafsbx_error *err);
void mafsbx_plane_spool_release(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted);
void mafsbx_plane_spool_fini(struct mafsbx_planes *ps);

/* ---- plane_local.c ------------------------------------------------------- */
int mafsbx_plane_local_stat(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
	       enum mafsbx_plane_base base, const char *rel, struct mafsbx_pstat *out, struct mafsbx_error *err);
int mafsbx_plane_local_opendir(struct mafsbx_plane_dir *d, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		  enum mafsbx_plane_base base, const char *rel, struct mafsbx_error *err);
int mafsbx_plane_local_readdir(struct mafsbx_plane_dir *d, uint64_t pos, mafsbx_plane_dir_fn fn, void *ctx);
void mafsbx_plane_local_closedir(struct mafsbx_plane_dir *d);
int mafsbx_plane_local_open_read(struct mafsbx_plane_file *f, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		    enum mafsbx_plane_base base, const char *rel, uint64_t max_bytes, struct mafsbx_error *err);
int mafsbx_plane_local_open_write(struct mafsbx_plane_file *f, const struct mafsbx_pin *pin,
		     const struct mafsbx_plane_target *t, const char *rel, mode_t mode, struct mafsbx_error *err);
int mafsbx_plane_local_commit(struct mafsbx_plane_file *f, struct mafsbx_error *err);
void mafsbx_plane_local_close(struct mafsbx_plane_file *f);
/* Make the missing directories of the absolute `base` beneath the pinned root (ancestors the guest's
 * root's, the base uid:gid's, 0755), no link followed, no other mount entered. 0 or an error. */
int mafsbx_plane_local_prepare_base(const struct mafsbx_pin *pin, const char *base, uid_t uid, gid_t gid, unsigned *made,
		       struct mafsbx_error *err);
int mafsbx_plane_local_mkdir(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		const char *rel, mode_t mode, struct mafsbx_error *err);
int mafsbx_plane_local_remove(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		 const char *rel, bool dir, struct mafsbx_error *err);
int mafsbx_plane_local_rename(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		 const char *from, const char *to, unsigned flags, struct mafsbx_error *err);
int mafsbx_plane_local_chmod(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		const char *rel, mode_t mode, struct mafsbx_error *err);
int mafsbx_plane_local_truncate(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		   const char *rel, uint64_t size, struct mafsbx_error *err);
int mafsbx_plane_local_utimens(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		  const char *rel, const struct timespec ts[2], struct mafsbx_error *err);

/* ---- plane_engine.c ------------------------------------------------------ */
int mafsbx_plane_engine_stat(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, enum mafsbx_plane_base base,
		const char *rel, struct mafsbx_pstat *out, struct mafsbx_error *err);
int mafsbx_plane_engine_opendir(struct mafsbx_plane_dir *d, const struct mafsbx_plane_target *t, enum mafsbx_plane_base base,
		   const char *rel, const char *const *candidates, size_t n, struct mafsbx_error *err);
int mafsbx_plane_engine_open_read(struct mafsbx_plane_file *f, const struct mafsbx_plane_target *t,
		     enum mafsbx_plane_base base, const char *rel, uint64_t max_bytes, struct mafsbx_error *err);
int mafsbx_plane_engine_open_write(struct mafsbx_plane_file *f, const struct mafsbx_plane_target *t, const char *rel,
		      mode_t mode, struct mafsbx_error *err);
int mafsbx_plane_engine_commit(struct mafsbx_plane_file *f, struct mafsbx_error *err);
int mafsbx_plane_engine_mkdir(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, mode_t mode,
		 struct mafsbx_error *err);
int mafsbx_plane_engine_remove(struct mafsbx_planes *ps, const struct mafsbx_plane_target *t, const char *rel, bool dir,
		  struct mafsbx_error *err);
/* Copy a guest file under one freeze into `fd` (a memfd) for f, counted
 * against the spool budget like the engine plane's: frozen_reads on the
 * local plane. */
int mafsbx_plane_engine_copy_frozen(struct mafsbx_plane_file *f, const struct mafsbx_plane_target *t, enum mafsbx_plane_base base,
		       const char *rel, uint64_t max_bytes, int fd, struct mafsbx_error *err);

#endif
