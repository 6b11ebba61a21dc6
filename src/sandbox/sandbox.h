/*
 * sandbox.h: the sandbox backend over one engine: acquire (get-or-create a
 * hardened container for a key and kind), dispose (by name, by key, by
 * conversation), exec, the backend declarations, and the read side the
 * filesystem needs (list the sandboxes on the engine, look one up by name).
 * Behaviour follows doc/upstream.md §4, §6, §8.1-§8.5,
 * so a Python maf-sandbox-docker host and this library manage the same
 * containers on one engine.
 *
 * One `struct mafsbx_backend` is shared by every thread of a process; all
 * calls are thread-safe. It borrows the engine and the freezer (both must
 * outlive it).
 *
 * Errors (struct mafsbx_error): EK_INVALID for a bad argument or a sandbox
 * whose work-dir label does not match the request ("dispose it first");
 * EK_UNSUPPORTED (EOPNOTSUPP, type SandboxCapabilityNotSupported /
 * SandboxEgressNotEnforced / SandboxOsFamilyNotSupported) for what this
 * backend or this container cannot serve; EK_NO_IMAGE when the image is
 * absent and cannot be pulled; EK_TIMEOUT, EK_UNREACHABLE, EK_ENGINE from
 * the engine.
 */
#ifndef MAFSBX_SANDBOX_H
#define MAFSBX_SANDBOX_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine.h"
#include "error.h"
#include "names.h"
#include "spec.h"

struct mafsbx_freezer;   /* freeze.h */

struct mafsbx_sandbox_config {
	const char *default_image;      /* -o image=; NULL = none (copied) */
	long pids_limit;                /* 512 */
	bool cap_drop_all;              /* off */
	int64_t memory_bytes;           /* 0 = off; MemorySwap is set equal */
	double cpus;                    /* 0 = off; NanoCpus = cpus * 1e9 */
	const char *egress_proxy_image; /* NULL or "" = none (copied) */
	const char *egress_outbound_network; /* the proxy's second leg; NULL or "" = "bridge" (copied) */
	long exec_timeout_max_s;        /* 86400: ceiling of exec timeouts; MAFSBX_EXEC_TIMEOUT_NO_CEILING: none */
	long exec_timeout_s;            /* 300: an exec's timeout when the request names none */
	long pull_timeout_ms;           /* 600000: an image pull. The pull runs on the engine handle, which
					   bounds it with its own timeouts.pull_ms: open the engine with the
					   same value (this field documents it; the backend cannot override it) */
	/* Optional: each line of an image pull's progress stream (a JSON object
	 * as the engine sends it: status, id, progressDetail), as it arrives,
	 * on the acquiring thread (mafsbx acquire draws a progress line). */
	void (*on_pull_line)(const json_t *line, void *ctx);
	void *pull_ctx;
	long probe_timeout_ms;          /* 10000: all capability probes of one acquire */
	long command_timeout_ms;        /* 60000: `id -u`/`id -g` and other helper execs */
	uint64_t max_read_bytes;        /* 64 MiB: declared in limits (the mount's -o max_read) */
	uint64_t max_write_bytes;       /* 64 MiB: declared in limits (the mount's -o max_write) */
};
void mafsbx_sandbox_config_defaults(struct mafsbx_sandbox_config *c);

struct mafsbx_backend;

/* No engine call. `fz` may be NULL only in unit tests (acquire then refuses specs needing a work dir). */
struct mafsbx_backend *mafsbx_backend_new(struct mafsbx_engine *e, struct mafsbx_freezer *fz,
					  const struct mafsbx_sandbox_config *cfg, struct mafsbx_error *err);
void mafsbx_backend_free(struct mafsbx_backend *b);
struct mafsbx_engine *mafsbx_backend_engine(struct mafsbx_backend *b);
/*
 * Who makes a missing work dir without a freeze (the local plane, plane.c,
 * which works on handles beneath the pinned container root): called with the
 * container's ID and name, the absolute base and its owner as the guest sees
 * it. 1 when it made (or found) the base, *made the directories it created;
 * 0 when the container is not its (the frozen engine path runs); <0 an error
 * that fails the acquire. Set before any acquire runs; NULL unsets.
 */
typedef int (*mafsbx_base_preparer_fn)(void *ctx, const char *id, const char *name, const char *base, uid_t uid,
				       gid_t gid, unsigned *made, struct mafsbx_error *err);
void mafsbx_backend_set_base_preparer(struct mafsbx_backend *b, mafsbx_base_preparer_fn fn, void *ctx);
/* The spec-parsing context matching this backend's config (default image, exec ceiling). */
void mafsbx_backend_spec_config(const struct mafsbx_backend *b, struct mafsbx_spec_config *out);

/* ---- acquire ------------------------------------------------------------ */

enum mafsbx_acquire_state {
	MAFSBX_ACQ_CREATED = 1,      /* a new container made by this call */
	MAFSBX_ACQ_STARTED = 2,      /* a stopped one was started, a paused orphan thawed, or a
					stopped one another process had just made was adopted */
	MAFSBX_ACQ_REUSED = 3,       /* a running one reused (or adopted after a name conflict) */
};
const char *mafsbx_acquire_state_name(enum mafsbx_acquire_state s);  /* "created" ... */

struct mafsbx_acquire_result {
	char name[MAFSBX_NAME_LEN + 1];
	char id[65];
	enum mafsbx_acquire_state state;
	char work_dir[MAFSBX_WORK_DIR_MAX + 1];
	bool identity_resolved;      /* false: uid/gid mean nothing; identity_why says why */
	char identity_why[256];
	uid_t uid;
	gid_t gid;
	char warning[256];           /* a hardening the engine does not apply (no cgroups: the pids limit), or "" */
};

/*
 * Get-or-create the sandbox of spec->key + spec->kind (doc/upstream.md §4.3): one
 * lock per name, the work-dir label check, orphan-pause recovery, the OS
 * re-check on cold paths, reuse / start / create / adopt, explicit pull,
 * create hardened and verified by inspect, instance id, identity, probes,
 * work dir prepared. Allowlist egress with hosts is refused with EOPNOTSUPP
 * (an empty allowlist with a proxy image configured is served closed).
 * A created workload carries the upstream labels plus maf-sandbox.key.v1
 * (upstream puts it on proxies only; here it lets a mount show the key
 * behind digested labels) and mafsbxfs.outputs (the declared outputs, set
 * at create; a later acquire's outputs are the caller's to remember).
 */
int mafsbx_sandbox_acquire(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec,
			   struct mafsbx_acquire_result *res, struct mafsbx_error *err);

/* ---- dispose ------------------------------------------------------------ */

enum mafsbx_disposal_code {
	MAFSBX_DISPOSAL_UNREACHABLE = 1,
	MAFSBX_DISPOSAL_TIMEOUT,
	MAFSBX_DISPOSAL_REFUSED,
	MAFSBX_DISPOSAL_UNLISTED,
	MAFSBX_DISPOSAL_UNKNOWN,
};
const char *mafsbx_disposal_code_name(enum mafsbx_disposal_code c);  /* "unreachable", ... */

struct mafsbx_disposal_failure {
	enum mafsbx_disposal_code code;
	char *detail;                /* malloc'd */
};

struct mafsbx_dispose_result {
	unsigned disposed;           /* workload containers removed */
	size_t n_failures;
	struct mafsbx_disposal_failure *failures;
	bool unrecorded;             /* a failure (or its detail) was lost for want of memory: the call said ENOMEM */
};
void mafsbx_dispose_result_free(struct mafsbx_dispose_result *r);
/* {"disposed": N, "failures": [{"code": "...", "detail": "..."}]} as a new object; NULL: out of memory. */
json_t *mafsbx_dispose_result_json(const struct mafsbx_dispose_result *r);

/*
 * Never fail except on invalid input (-EINVAL), or -ENOMEM when a failure
 * could not be recorded (res->unrecorded; what was recorded stays in res):
 * engine failures are reported per resource in res->failures. Removing what is already gone is success
 * with disposed 0. Proxies (<name>-proxy) and networks (<name>-net) go too;
 * their failures are logged, not reported (doc/upstream.md §8.3).
 */
int mafsbx_sandbox_dispose(struct mafsbx_backend *b, const struct mafsbx_dispose_spec *spec,
			   struct mafsbx_dispose_result *res, struct mafsbx_error *err);
/*
 * By name: only a container that carries the identity labels is removed (by
 * the ID that check read); another container of that name is refused with
 * EACCES "... is not a sandbox" and left alone.
 */
int mafsbx_sandbox_dispose_name(struct mafsbx_backend *b, const char *name,
				struct mafsbx_dispose_result *res, struct mafsbx_error *err);
/*
 * By the ID `name` was resolved to earlier: removes that container only,
 * never one re-created under the name since (nor, then, its proxy/network).
 */
int mafsbx_sandbox_dispose_id(struct mafsbx_backend *b, const char *name, const char *id,
			      struct mafsbx_dispose_result *res, struct mafsbx_error *err);
/* kind NULL: every kind of the key. A non-empty key->call adds the call filter. */
int mafsbx_sandbox_dispose_key(struct mafsbx_backend *b, const struct mafsbx_key *key, const char *kind,
			       struct mafsbx_dispose_result *res, struct mafsbx_error *err);
/*
 * By instance ID (doc/upstream.md §8.4): only the container whose ID is exactly
 * `instance_id` and whose labels carry this key (scope, thread, agent, plus
 * call when non-empty and kind when given). Absent, another key's, or a
 * proxy: disposed 0 and nothing removed. An ID the engine resolves to
 * another container (a prefix) or an inspect that fails is an "unlisted"
 * failure. Its proxy (role proxy, same key labels) goes first, then the
 * workload, then the network it is attached to as <name>-net (by that ID).
 */
int mafsbx_sandbox_dispose_instance(struct mafsbx_backend *b, const struct mafsbx_key *key, const char *kind,
				    const char *instance_id, struct mafsbx_dispose_result *res, struct mafsbx_error *err);
int mafsbx_sandbox_dispose_scope(struct mafsbx_backend *b, const char *scope, const char *thread,
				 struct mafsbx_dispose_result *res, struct mafsbx_error *err);

/* ---- exec --------------------------------------------------------------- */

/*
 * Run spec->argv in the sandbox (doc/upstream.md §6): cwd resolved under the
 * sandbox's work_dir (its work-dir.v1 label), env and stdin as given, the
 * timeout on the whole run, output capped at 8 MiB per stream (res->truncated).
 * Never runs while this process holds a freeze on the container (waits for
 * it to lift, bounded by the timeout).
 * Returns 0 with the result for any exit code. Failures:
 *  - not a sandbox / no such container: EK_NO_CONTAINER (ENOENT);
 *  - timeout: EK_TIMEOUT (ETIMEDOUT), res->timed_out set; the command's
 *    processes killed and the sandbox kept (res->killed) when the hooks ask
 *    for it (kill_on_timeout), the spec does not say "on_timeout": "dispose"
 *    and the engine runs on this host (over a swarm: the sandbox's node is
 *    this host, mafsbx_serving.local); otherwise the sandbox is disposed (as
 *    upstream; res->sandbox_disposed);
 *  - a command the runtime could not start is a result, as `docker exec`
 *    gives it: exit 127 (no such program) or 126, the runtime's message on
 *    stderr, res->launch_failed set.
 * Free res with mafsbx_exec_result_free() in every case.
 */
int mafsbx_sandbox_exec(struct mafsbx_backend *b, const struct mafsbx_exec_spec *spec,
			struct mafsbx_exec_result *res, struct mafsbx_error *err);
/*
 * The same, streamed (the shell verb `mafsbx exec`): every output chunk goes
 * to on_output(stream 1 or 2, ...) as it arrives, and res keeps only the
 * first 64 KiB of each stream (res->truncated past that). Same rules, same
 * freezer registration, same timeout (no kill_on_timeout here: the sandbox is
 * disposed; mafsbx_sandbox_exec_run takes it). A negative return from
 * on_output (-EPIPE: the reader went away) ends the run with an error; the
 * guest's side of the stream is then closed.
 */
int mafsbx_sandbox_exec_stream(struct mafsbx_backend *b, const struct mafsbx_exec_spec *spec,
			       int (*on_output)(int stream, const void *data, size_t len, void *ctx), void *ctx,
			       struct mafsbx_exec_result *res, struct mafsbx_error *err);

/* What a caller of mafsbx_sandbox_exec_run may watch and choose. */
struct mafsbx_exec_hooks {
	/* each output chunk as it arrives (see mafsbx_sandbox_exec_stream) */
	int (*on_output)(int stream, const void *data, size_t len, void *ctx);
	/* the exec exists: its container's and its own engine IDs (for mafsbx_exec_kill_tree) */
	void (*on_created)(const char *container_id, const char *exec_id, void *ctx);
	void *ctx;
	/* a timeout kills the command's process tree where the engine runs on
	 * this host (the sandbox stays), unless the spec says "on_timeout":
	 * "dispose"; elsewhere it disposes, as always */
	bool kill_on_timeout;
	/* stdin streamed from this descriptor as it gives (the shell verb's -i),
	 * both ways at once, instead of the spec's stdin; see engine.h */
	bool stdin_from_fd;
	int stdin_fd;
	/* the exec's marker (MAFSBX_EXEC_ID in its environment, 8 to 64 hex
	 * digits: src/host/execmark.h), for the caller's own cancel
	 * (mafsbx_exec_kill_tree_marked); NULL: a fresh one is drawn */
	const char *marker;
};
/* The general form of the two above. */
int mafsbx_sandbox_exec_run(struct mafsbx_backend *b, const struct mafsbx_exec_spec *spec,
			    const struct mafsbx_exec_hooks *h, struct mafsbx_exec_result *res, struct mafsbx_error *err);

/* ---- declarations ------------------------------------------------------- */

/*
 * doc/protocol.md "The tree" .ctl/declarations as a new object:
 * {"isolation": "container", "capabilities": [...], "egress_modes": [...],
 *  "isolation_scopes": ["conversation", "call"],
 *  "limits": {"files_in": {...}, "files_out": {...}, "max_read_bytes": N, "max_write_bytes": N},
 *  "os_families": ["posix"] | []}
 * os_families reads the engine's /version once (then cached); an unreadable
 * or non-linux answer declares [] (doc/upstream.md §4.2). Never NULL except ENOMEM.
 */
json_t *mafsbx_sandbox_declarations(struct mafsbx_backend *b, struct mafsbx_error *err);

/* ---- what the filesystem shows ----------------------------------------- */

struct mafsbx_sandbox_info {
	char name[MAFSBX_NAME_LEN + 1];
	char id[65];
	char state[16];              /* the engine's: running, paused, exited, created, restarting, ... */
	bool paused;
	int64_t created;             /* unix seconds */
	char *image;                 /* as the container records it (Config.Image / list Image) */
	/* label values as stored (digested when upstream digests them); call "" when absent */
	char *scope, *thread, *agent, *kind, *call;
	/* the key decoded from maf-sandbox.key.v1 when present and consistent with the labels */
	bool key_known;
	char *key_scope, *key_thread, *key_agent, *key_call;
	char *work_dir;              /* maf-sandbox.work-dir.v1, NULL when missing */
	char **outputs;              /* mafsbxfs.outputs (JSON array), n_outputs; NULL when none */
	size_t n_outputs;
	char *network_mode;          /* HostConfig.NetworkMode: "none" means closed egress */
	bool identity_known;         /* uid/gid resolved earlier in this process */
	uid_t uid;
	gid_t gid;
};
void mafsbx_sandbox_info_clear(struct mafsbx_sandbox_info *i);
void mafsbx_sandbox_info_free_array(struct mafsbx_sandbox_info *a, size_t n);

/*
 * Every workload container whose name starts with maf-sandbox-docker- and
 * that carries the four identity labels (proxies and -net are not listed),
 * optionally only those whose scope label equals label_value(scope).
 * *out is a malloc'd array of *n entries (possibly 0, *out then NULL).
 */
int mafsbx_sandbox_list(struct mafsbx_backend *b, const char *scope, struct mafsbx_sandbox_info **out,
			size_t *n, struct mafsbx_error *err);
/*
 * The same for one scope, and optionally one thread of it and one agent of
 * that, each given as its label value as stored (by-scope/'s components;
 * NULL: any): the engine is asked for those only (label filters). With
 * `limit` the engine gives at most that many matching containers (0: all);
 * *listed (may be NULL) counts what it gave, sandboxes or not (proxies
 * match the same filters).
 */
int mafsbx_sandbox_list_labels(struct mafsbx_backend *b, const char *scope, const char *thread, const char *agent,
			       unsigned limit, size_t *listed, struct mafsbx_sandbox_info **out, size_t *n,
			       struct mafsbx_error *err);
/* One sandbox by its name (or ID). Not a sandbox, or absent: EK_NO_CONTAINER (ENOENT). */
int mafsbx_sandbox_lookup(struct mafsbx_backend *b, const char *name, struct mafsbx_sandbox_info *out,
			  struct mafsbx_error *err);

/*
 * The guest identity (uid, gid) used to stamp files written into a sandbox
 * (doc/upstream.md §4.6): cached per container instance once resolved. Unresolved
 * is not an error: *resolved false, the reason in `why` (may be NULL), and
 * nothing may then be done at that identity (retried on the next call). It
 * reads the guest's /etc/passwd under a freeze, so never call it while
 * holding a freeze on that container.
 */
int mafsbx_sandbox_identity(struct mafsbx_backend *b, const char *name, uid_t *uid, gid_t *gid, bool *resolved,
			    char *why, size_t why_len, struct mafsbx_error *err);

/* ---- one mount over a swarm (swarm.c) ----------------------------------- */

struct mafsbx_cluster;   /* cluster.h */
/*
 * cluster=swarm: sandboxes are services of the swarm `cl` manages (borrowed,
 * outlives b), placed with the swarm constraints `placement` (copied; may be
 * NULL). Checks the manager (a swarm manager; its API version). Set before
 * any other call.
 */
int mafsbx_backend_set_cluster(struct mafsbx_backend *b, struct mafsbx_cluster *cl, const char *const *placement,
			       size_t n_placement, struct mafsbx_error *err);
bool mafsbx_backend_clustered(const struct mafsbx_backend *b);
/*
 * A listed service's sandbox state, the same for the mount and `mafsbx
 * --cluster swarm ls`, from the list answer alone: "running" (a task runs),
 * "pending" (none runs yet and the service is younger than an acquire's wait
 * for its task: the swarm may still place it), else "lost".
 */
const char *mafsbx_swarm_service_state(json_t *svc);

/*
 * The seam "which engine serves this sandbox": on one engine, b itself and
 * the name as given; under a cluster, the backend, engine and freezer of the
 * node whose task runs the service `name` (a service name or ID), and that
 * task's container ID. A sandbox whose task is not running, or whose node
 * cannot serve (down, drained, no engine label, unreachable, another node
 * answering): EK_UNREACHABLE (ENOTCONN) "... is lost: ...". Absent: EK_NO_CONTAINER.
 */
struct mafsbx_serving {
	struct mafsbx_backend *backend;
	struct mafsbx_engine *engine;
	struct mafsbx_freezer *fz;
	char container[MAFSBX_NAME_LEN + 66];   /* the container's ID (or the name given, on one engine) */
	char node_id[65];                       /* "" on one engine */
	char service_id[65];                    /* "" on one engine */
	char hostname[256];
	bool local;                             /* the node's engine is reached through a unix socket */
};
int mafsbx_backend_serving(struct mafsbx_backend *b, const char *name, struct mafsbx_serving *out,
			   struct mafsbx_error *err);
/*
 * Over a swarm: lift the freezes a dead mafsbx process of this host left on
 * the sandboxes (of `scope`, NULL: any) of every ready node with an engine
 * (swarm_thaw.c): one list of paused containers per node, then the node's
 * freezer's recovery (mafsbx_freeze_recover, our marker only). *lifted: how
 * many were unpaused. A node that cannot serve is passed over. -errno when
 * some could not be asked or lifted (the janitor retries), the first error.
 */
int mafsbx_sandbox_thaw_left(struct mafsbx_backend *b, const char *scope, unsigned *lifted, struct mafsbx_error *err);
/* Forget where a sandbox ran (a call on it found its container gone). */
void mafsbx_backend_serving_forget(struct mafsbx_backend *b, const char *name);

#endif
