/*
 * sbx_internal.h: private to the sandbox backend (backend.c, acquire.c,
 * facts.c, dispose.c, exec.c, inventory.c, declarations.c, the swarm's
 * files, job.c and monitor.c). The backend
 * object, its per-name locks, the per-instance facts cache, and the helpers
 * the pieces share. Nothing outside those files includes this.
 */
#ifndef MAFSBX_SBX_INTERNAL_H
#define MAFSBX_SBX_INTERNAL_H

#include <pthread.h>

#include "engine.h"
#include <stdbool.h>
#include <sys/types.h>

#include "cluster.h"
#include "engine.h"
#include "freeze.h"
#include "sandbox.h"

#define SBX_EXEC_MAX_OUTPUT (8u * 1024 * 1024)
#define SBX_STREAM_KEEP_OUTPUT (64u * 1024)
#define SBX_PROBE_READ_LIMIT 1024
#define SBX_PAUSED_RETRY_MS 50
/* A killed command (kill_on_timeout) must have ended within this. */
#define SBX_KILL_WAIT_MS 5000
#define SBX_FACTS_MAX 1024
#define SBX_PASSWD_LIMIT (512 + 64 * 1024)

/* Probe bits cached per instance. */
#define SBX_PROBE_SH 0x1u
#define SBX_PROBE_HOST_TOOLS 0x2u
#define SBX_PROBE_RM 0x4u

struct sbx_keylock {
	struct sbx_keylock *next;
	char name[MAFSBX_NAME_LEN + 1];
	unsigned refs;
	pthread_mutex_t mu;
};

struct sbx_facts {
	struct sbx_facts *next;
	char id[65];
	char name[MAFSBX_NAME_LEN + 1];
	bool identity_resolved;
	uid_t uid;
	gid_t gid;
	unsigned probes_ok;      /* SBX_PROBE_* verified on this instance */
	unsigned long long used; /* LRU tick */
};

struct mafsbx_backend {
	struct mafsbx_engine *engine;
	struct mafsbx_freezer *fz;
	struct mafsbx_sandbox_config cfg;   /* strings owned (copied) */
	pthread_mutex_t mu;                 /* guards everything below */
	struct sbx_keylock *locks;
	struct sbx_facts *facts;
	size_t n_facts;
	unsigned long long tick;
	bool os_known;                      /* a /version answer was read */
	bool os_linux;
	char os[32];
	bool podman;                        /* the engine is Podman (its /version), read with the OS */
	bool cg_known;                      /* /info's cgroup facts were read (with the OS) */
	struct mafsbx_engine_cgroups cg;
	mafsbx_base_preparer_fn prepare_base;   /* set once before any acquire (sandbox.h) */
	void *prepare_base_ctx;
	/* cluster=swarm (swarm.c): NULL on one engine. Set once before any call. */
	struct mafsbx_cluster *cluster;
	char **placement;                   /* swarm constraints, n_placement */
	size_t n_placement;
	char cluster_api[16];               /* the manager's API version */
	struct sbx_node *nodes;             /* a backend per node engine (under mu) */
	struct sbx_where *wheres;           /* where a service's task runs (under mu) */
	size_t n_wheres;
};

/* ---- swarm.c, swarm_ops.c (cluster=swarm) -------------------------------- */
/* The backend of one node's engine: the single-engine backend over it. */
struct sbx_node {
	struct sbx_node *next;
	char node_id[65];
	struct mafsbx_backend *nb;
};
/* Where a sandbox (a service) runs now: its node and its task's container. */
struct sbx_where {
	struct sbx_where *next;
	char name[MAFSBX_NAME_LEN + 1];
	char service_id[65];
	char node_id[65];
	char container_id[65];
	unsigned long long used;
	long long asked_ms;          /* when the manager said so (mafsbx_now_ms) */
};
#define SBX_WHERES_MAX 4096
/* How long the manager's word on where a task runs is believed before it is asked again (a task
 * that ended shows as lost within this); an unreachable manager leaves the last word standing. */
#define SBX_WHERE_TTL_MS 2000
/* How long an acquire waits for its task to run, and a dispose for the task's container to go. */
#define SBX_SWARM_TASK_WAIT_MS 60000
/* Get-or-create rounds when what another acquire of the key made is removed under this one. */
#define SBX_SWARM_ACQUIRE_ROUNDS 3
/* A sandbox's task is stopped as a forced removal would: 100 ms, then SIGKILL. */
#define SBX_SWARM_STOP_GRACE_NS 100000000LL

/* Get-or-create the service `name` for spec (under the name lock, checks done by the caller). */
int mafsbx_sbx_swarm_acquire(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *image,
			     const char *name, struct mafsbx_acquire_result *res, struct mafsbx_error *err);
/* acquire.c: the labels of a new workload (upstream's, key.v1, the outputs); NULL out of memory. */
json_t *mafsbx_sbx_create_labels(const struct mafsbx_acquire_spec *spec);
/* acquire.c: the last steps of an acquire (identity, probes, work dir) on a node's backend, for the
 * container `id` (already running) of the sandbox `name`. */
int mafsbx_sbx_acquire_ready_id(struct mafsbx_backend *nb, const struct mafsbx_acquire_spec *spec, const char *image,
				const char *name, const char *id, enum mafsbx_acquire_state state,
				struct mafsbx_acquire_result *res, struct mafsbx_error *err);
/* The backend serving node `node_id` (made on first use; lives as long as b). */
int mafsbx_sbx_node_backend(struct mafsbx_backend *b, const char *node_id, struct mafsbx_backend **nb,
			    struct mafsbx_error *err);
void mafsbx_sbx_where_put(struct mafsbx_backend *b, const char *name, const char *service_id, const char *node_id,
			  const char *container_id);
void mafsbx_sbx_where_drop(struct mafsbx_backend *b, const char *name_or_id);
void mafsbx_sbx_swarm_free(struct mafsbx_backend *b);
/* The cluster's forms of the inventory and disposal calls (swarm_ops.c). */
int mafsbx_sbx_swarm_list(struct mafsbx_backend *b, const char *const want[3], unsigned limit, size_t *listed,
			  struct mafsbx_sandbox_info **out, size_t *n, struct mafsbx_error *err);
int mafsbx_sbx_swarm_lookup(struct mafsbx_backend *b, const char *name, struct mafsbx_sandbox_info *out,
			    struct mafsbx_error *err);
/* Remove service `name` (its ID `sid`, may be ""), wait (bounded) for its task's container to go, then
 * remove its network. 0, or the manager's error (EK_NO_CONTAINER when it was gone already). */
int mafsbx_sbx_swarm_remove(struct mafsbx_backend *b, const char *name, const char *sid, struct mafsbx_error *err);
/* Remove the one service `ref` (a name or an ID) when it is a sandbox and (want_id non-NULL) has that ID. */
int mafsbx_sbx_swarm_dispose_one(struct mafsbx_backend *b, const char *ref, const char *want_id,
				 struct mafsbx_dispose_result *res, struct mafsbx_error *err);
/* Remove every sandbox service the label filters (k=v) list (only_id non-NULL: only the one of that ID);
 * `fallback` (a name) when the list fails. */
void mafsbx_sbx_swarm_purge(struct mafsbx_backend *b, const char *const *labels, size_t n_labels,
			    const char *fallback, const char *only_id, struct mafsbx_dispose_result *res);
/* inventory.c: an info from its parts (the tree's view of a container or a service). */
int mafsbx_sbx_fill_info(struct mafsbx_backend *b, struct mafsbx_sandbox_info *i, const char *name, const char *id,
			 const char *state, bool paused, int64_t created, const char *image, json_t *labels,
			 const char *network_mode);

/* ---- backend.c ---------------------------------------------------------- */
/* How long an acquire waits for another acquire of the same name. */
#define SBX_KEY_WAIT_MS 120000
/* The lock of one container name, taken within wait_ms: 0 and *out, -ENOMEM,
 * or -EBUSY (another holder kept it past the wait). */
int mafsbx_sbx_lock_name(struct mafsbx_backend *b, const char *name, long wait_ms, struct sbx_keylock **out);
void mafsbx_sbx_unlock_name(struct mafsbx_backend *b, struct sbx_keylock *l);

/* Copy of the facts of instance `id` (false when none cached). */
bool mafsbx_sbx_facts_get(struct mafsbx_backend *b, const char *id, struct sbx_facts *out);
/* Record identity (only when resolved) and/or OR-in probe bits for (id, name). */
void mafsbx_sbx_facts_put_identity(struct mafsbx_backend *b, const char *id, const char *name, uid_t uid, gid_t gid);
void mafsbx_sbx_facts_add_probes(struct mafsbx_backend *b, const char *id, const char *name, unsigned bits);
/* Forget every entry for this name or id (either may be NULL). */
void mafsbx_sbx_facts_drop(struct mafsbx_backend *b, const char *name, const char *id);

/*
 * Read the engine's OS now (one /version). 0 with *linux set, or the
 * engine's error; the answer is cached for the declarations.
 */
int mafsbx_sbx_read_os(struct mafsbx_backend *b, bool *linux, struct mafsbx_error *err);

#ifdef MAFSBX_TEST_KNOBS
/*
 * Test hooks (NULL unless a test sets them).
 * Compiled only into the test libraries (MAFSBX_TEST_KNOBS, src/meson.build):
 * the shipped daemon and CLI have none.
 *
 * sbx_test_before_create: called between the "absent" inspect and the
 * create of a missing container, so a test can make the name conflict of
 * another process deterministically.
 * sbx_test_exec_timed_out: called when an exec timed out, after its
 * instance was removed and before the disposal that follows, so a test can
 * re-create the sandbox under the same name.
 */
extern void (*sbx_test_before_create)(const char *name, void *ctx);
extern void *sbx_test_before_create_ctx;
extern void (*sbx_test_exec_timed_out)(const char *name, void *ctx);
extern void *sbx_test_exec_timed_out_ctx;
#endif

/* ---- facts.c ------------------------------------------------------------ */
/*
 * Run a command in a container (by ID), registered with the freezer for its
 * whole run (mafsbx_freeze_exec_begin/end), so no freeze of this or another
 * process on the host overlaps it; re-issues an exec the engine refused as
 * paused (an engine answer, never guest output, so the command provably did
 * not run) until `timeout_ms` runs out. A timed-out exec removes the
 * container before its registration ends (as upstream). `res` must be freed
 * by the caller in every case.
 */
int mafsbx_sbx_exec(struct mafsbx_backend *b, const char *id, const struct mafsbx_exec_request *rq,
	     struct mafsbx_exec_result *res, struct mafsbx_error *err);

/*
 * The guest identity of instance `id` (doc/upstream.md §4.6), from `inspect` (the
 * container's inspect object, or NULL to fetch it). Cached once resolved.
 * An unresolved identity (a user or group name the guest's passwd/group
 * files do not give) is 0 with *resolved false and the reason in `why`
 * (may be NULL): callers must not act at that identity. Errors only for out
 * of memory.
 */
int mafsbx_sbx_identity(struct mafsbx_backend *b, const char *id, const char *name, json_t *inspect, uid_t *uid,
		 gid_t *gid, bool *resolved, char *why, size_t why_len, struct mafsbx_error *err);

/* The capability probes of doc/upstream.md §4.7 for `caps`; cached per instance. EK_UNSUPPORTED on failure. */
int mafsbx_sbx_probes(struct mafsbx_backend *b, const char *id, const char *name, const char *image, unsigned caps,
	       struct mafsbx_error *err);

/*
 * Guest output as one line of a message: newlines and tabs become spaces,
 * other control bytes '?', trailing spaces cut, host paths scrubbed; at most
 * outsz - 1 bytes. `p` may be NULL (n is then ignored).
 */
void mafsbx_sbx_short_text(const unsigned char *p, size_t n, char *out, size_t outsz);

/* Parse Config.User; exposed for the unit-free test of the forms through acquire. */
struct sbx_user_spec {
	bool uid_known, gid_known;
	uid_t uid;
	gid_t gid;
	char *user_name;         /* non-numeric user half, or NULL */
	char *group_name;        /* non-numeric group half, or NULL */
	bool root;               /* "" or "0:0" */
};
int mafsbx_sbx_parse_user(const char *user, struct sbx_user_spec *out);
/* a JSON array of the n strings of v (NULL when out of memory) */
json_t *mafsbx_sbx_str_array(char *const *v, size_t n);
void mafsbx_sbx_user_spec_clear(struct sbx_user_spec *u);

/* ---- dispose.c ---------------------------------------------------------- */
/*
 * Append a failure (detail formatted). Out of memory for the failure or its
 * detail: res->unrecorded is set, so the disposal answers ENOMEM
 * (mafsbx_sbx_result_status) instead of a success that hides it.
 */
void mafsbx_sbx_result_fail(struct mafsbx_dispose_result *res, enum mafsbx_disposal_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* What a disposal returns once it is done: 0, or -ENOMEM (in *err) when res->unrecorded. */
int mafsbx_sbx_result_status(const struct mafsbx_dispose_result *res, struct mafsbx_error *err);

/* ---- inventory.c -------------------------------------------------------- */
/* Labels of an inspect object (Config.Labels) or a list entry (Labels): borrowed, may be NULL. */
json_t *mafsbx_sbx_labels_of(json_t *obj);
const char *mafsbx_sbx_label(json_t *labels, const char *key);
/*
 * Inspect `name` (or an ID) and require a sandbox: an ID, the identity
 * labels and no role label. 0 with *insp (caller frees) and id[]; absent:
 * EK_NO_CONTAINER "no sandbox named X"; not a sandbox: EK_NO_CONTAINER
 * "X is not a sandbox (it lacks the identity labels)"; else the engine's error.
 */
int mafsbx_sbx_inspect_sandbox(struct mafsbx_backend *b, const char *name, json_t **insp, char id[65],
			struct mafsbx_error *err);

#endif
