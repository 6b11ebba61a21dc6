/*
 * engine.h: typed Docker Engine API calls. engine.c is the only file in the
 * project that builds Engine API URLs; everything above calls these.
 *
 * All calls are safe from many threads at once on one `struct mafsbx_engine`.
 * Every call has a connect timeout and a total timeout; streams also have a
 * low-speed cut-off, so a stalled stream never holds a container's lock.
 * Errors are mapped with mafsbx_error_from_engine(): a 404 for a missing
 * container (EK_NO_CONTAINER) is told apart from a missing path (EK_NO_PATH).
 * Container arguments may be a name or an ID.
 */
#ifndef MAFSBX_ENGINE_H
#define MAFSBX_ENGINE_H

#include <jansson.h>

#include "listreader.h"
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "endpoint.h"
#include "error.h"

struct mafsbx_engine;

struct mafsbx_engine_timeouts {
	long connect_ms;         /* default 5000 */
	long request_ms;         /* default total for plain calls: 60000 (upstream command timeout) */
	long stream_stall_s;     /* archive streams: abort when under 1 byte/s for this long; default 10 */
	long pull_ms;            /* image pull: default 600000 */
};

/* Bind to a resolved endpoint. Makes no engine call. NULL timeouts: defaults. */
struct mafsbx_engine *mafsbx_engine_open(const struct mafsbx_endpoint *ep,
					 const struct mafsbx_engine_timeouts *timeouts,
					 struct mafsbx_error *err);
void mafsbx_engine_close(struct mafsbx_engine *e);
/* Every engine call ends by `deadline_ms` (mafsbx_now_ms() time), in flight
 * or new: see mafsbx_http_end_by. For a teardown that must not hang on a
 * stalled engine. */
void mafsbx_engine_end_by(struct mafsbx_engine *e, long long deadline_ms);
const struct mafsbx_endpoint *mafsbx_engine_endpoint(const struct mafsbx_engine *e);
/* A swarm manager's handle: an answer of a swarm without a leader (5xx DeadlineExceeded, Unavailable,
 * "no leader") is asked again for up to `ms` (0: never), then fails ENOTCONN naming it. Set before the
 * handle is shared between threads. */
void mafsbx_engine_set_transient_retry(struct mafsbx_engine *e, long ms);

/* GET /_ping; negotiates the API version (at most 1.41-era paths are used). 0 or -errno. */
int mafsbx_engine_ping(struct mafsbx_engine *e, struct mafsbx_error *err);

struct mafsbx_engine_version {
	char version[64];        /* "20.10.24+dfsg1" */
	char api_version[16];    /* "1.41" */
	char min_api_version[16];
	char os[32];             /* "linux" */
	char arch[32];
	char kernel[128];
	bool podman;             /* Podman's Docker-compatible API (a "Podman Engine" component) */
};
int mafsbx_engine_version(struct mafsbx_engine *e, struct mafsbx_engine_version *v, struct mafsbx_error *err);

/* What /info says of the engine's cgroups: a driver of "none" (a rootless engine on cgroup v1) can
 * neither pause (no freeze) nor apply --pids-limit. */
struct mafsbx_engine_cgroups {
	char driver[32];         /* CgroupDriver: "cgroupfs", "systemd", "none" */
	char version[8];         /* CgroupVersion: "1", "2" */
	bool pids_limit;         /* PidsLimit: the engine applies a pids limit */
	bool can_pause;          /* driver is not "none" */
};
int mafsbx_engine_cgroups(struct mafsbx_engine *e, struct mafsbx_engine_cgroups *c, struct mafsbx_error *err);

/* ---- containers --------------------------------------------------------- */

struct mafsbx_exec_result;   /* below, with exec */

/*
 * Filters for list calls: a JSON object {"label": ["k=v", "k"], "name": ["^re$"]},
 * built with these helpers (the object is owned by the caller).
 */
json_t *mafsbx_filters_new(void);
int mafsbx_filters_add(json_t *filters, const char *key, const char *value);
/* URL-encoded query value for `filters` (malloc'd), exposed for unit tests. */
char *mafsbx_filters_encode(const json_t *filters);
/* Percent-encode one query value (RFC 3986 unreserved kept), malloc'd. */
char *mafsbx_query_escape(const char *s);

/*
 * POST /containers/create?name=NAME with `config` (the create body; borrowed).
 * On success writes the 64-hex ID into id. A name clash is EK_CONFLICT.
 */
int mafsbx_container_create(struct mafsbx_engine *e, const char *name, const json_t *config,
			    char id[65], struct mafsbx_error *err);
/* POST start; 304 (already running) is success. */
int mafsbx_container_start(struct mafsbx_engine *e, const char *container, struct mafsbx_error *err);
/* GET /containers/C/json; *out is a new reference. Missing: EK_NO_CONTAINER. */
int mafsbx_container_inspect(struct mafsbx_engine *e, const char *container, json_t **out,
			     struct mafsbx_error *err);
/* GET /containers/json?all=..&filters=..; *out is a new reference to the array. */
int mafsbx_container_list(struct mafsbx_engine *e, const json_t *filters, bool all, json_t **out,
			  struct mafsbx_error *err);
/*
 * The same list, streamed: `each` is called per container object (borrowed,
 * released after the call) as the answer arrives, so the whole document is
 * never held (listreader.h). A callback's negative errno stops the list.
 */
int mafsbx_container_list_each(struct mafsbx_engine *e, const json_t *filters, bool all, mafsbx_list_each_fn each,
			       void *ctx, struct mafsbx_error *err);
/* The same, the engine giving at most `limit` (0: all) of the matching containers, the newest. */
int mafsbx_container_list_each_limit(struct mafsbx_engine *e, const json_t *filters, bool all, unsigned limit,
				     mafsbx_list_each_fn each, void *ctx, struct mafsbx_error *err);
/* The same, each object holding only the top-level members `keep` names (mafsbx_listreader_keep; NULL: all). */
int mafsbx_container_list_each_keep(struct mafsbx_engine *e, const json_t *filters, bool all, unsigned limit,
				    const char *const *keep, mafsbx_list_each_fn each, void *ctx,
				    struct mafsbx_error *err);
/* DELETE /containers/C?force=..&v=1. Missing: EK_NO_CONTAINER (callers decide if that is fine). */
int mafsbx_container_delete(struct mafsbx_engine *e, const char *container, bool force,
			    struct mafsbx_error *err);
/* POST pause / unpause. 409 "already paused" -> EK_CONFLICT, "not running" -> EK_NOT_RUNNING;
 * unpause of a running container (500 "is not paused") -> EK_ENGINE with that message. */
int mafsbx_container_pause(struct mafsbx_engine *e, const char *container, struct mafsbx_error *err);
int mafsbx_container_unpause(struct mafsbx_engine *e, const char *container, struct mafsbx_error *err);

/*
 * GET /containers/C/logs?stdout=1&stderr=1&tail=N (N 0: all): the log,
 * demultiplexed into res->out / res->err, each stream capped at `max_bytes`
 * (res->truncated when more came: the stream is then cut, not drained). Free res with mafsbx_exec_result_free().
 */
int mafsbx_container_logs(struct mafsbx_engine *e, const char *container, unsigned tail, size_t max_bytes,
			  struct mafsbx_exec_result *res, struct mafsbx_error *err);

/* ---- archive (the tar plane) ------------------------------------------- */

struct mafsbx_path_stat {
	char name[256];          /* as the engine sent it (lossy for non-UTF-8; do not trust) */
	int64_t size;
	uint32_t go_mode;        /* Go os.FileMode bits as sent */
	mode_t mode;             /* decoded st_mode: S_IFMT type + permission + S_ISUID/S_ISGID/S_ISVTX */
	struct timespec mtime;
	char link_target[4096];  /* resolved container-absolute target for symlinks, else "" */
};

/* Decode the base64 X-Docker-Container-Path-Stat value. Pure; unit-tested. */
int mafsbx_path_stat_decode(const char *header_b64, struct mafsbx_path_stat *st, struct mafsbx_error *err);
/* Go FileMode -> st_mode. Pure. */
mode_t mafsbx_go_mode_to_st(uint32_t go_mode);

/* HEAD /containers/C/archive?path=P. Absent path: EK_NO_PATH; see error.h for the 500 family. */
int mafsbx_archive_head(struct mafsbx_engine *e, const char *container, const char *path,
			struct mafsbx_path_stat *st, struct mafsbx_error *err);

/*
 * Sink for streamed bodies: return 0 to continue, a negative errno to abort
 * the transfer (the connection is then closed, which releases the engine's
 * per-container lock at once).
 */
typedef int (*mafsbx_sink_fn)(const void *data, size_t len, void *ctx);

/*
 * GET /containers/C/archive?path=P, the tar body streamed into `sink`.
 * `max_bytes` bounds the body: when more arrives the transfer is aborted with
 * EK_TOO_BIG (0 = no bound). `st` (may be NULL) receives the stat header.
 * A stall longer than the stream stall timeout aborts with EK_TIMEOUT.
 */
int mafsbx_archive_get(struct mafsbx_engine *e, const char *container, const char *path,
		       uint64_t max_bytes, mafsbx_sink_fn sink, void *sink_ctx,
		       struct mafsbx_path_stat *st, struct mafsbx_error *err);

/*
 * PUT /containers/C/archive?path=DIR&noOverwriteDirNonDir=1 with
 * Content-Type application/x-tar and the tar in memory.
 */
int mafsbx_archive_put(struct mafsbx_engine *e, const char *container, const char *dir,
		       const void *tar, size_t tar_len, struct mafsbx_error *err);

/* ---- events --------------------------------------------------------------- */

/*
 * GET /events?since=..&until=..&filters=..: the engine's events after
 * `since_ns` (exclusive) up to `until_ns`, both in the ENGINE's clock (ns
 * since the epoch), oldest first, as a new array (*out). The engine answers
 * from its ring of recent events (256 on dockerd 20.10); an `until` in its
 * future makes it wait until then, one in its past misses what came since:
 * pass a time certainly at its present or just after (src/freeze/clock.h).
 * Podman is asked for its whole log to the moment of the read (it would
 * wait for an `until` in its future, and may drop events before one in its
 * past), and the events after `until_ns` are dropped here. dockerd is asked
 * for its whole ring up to `until` and the events up to `since_ns` are
 * dropped here: its ring is in log order, not time order (a swarm manager
 * logs cluster events late, with their store time), and its own cut at
 * `since` stops at the first older event it meets.
 *
 * *date_s (may be NULL): the answer's Date header (seconds since the epoch
 * in the engine's clock, taken as its answer began; 0 when absent): the
 * engine's present lay in [Date, Date + 1 s) while the call was in flight.
 */
int mafsbx_events_read(struct mafsbx_engine *e, long long since_ns, long long until_ns, const json_t *filters,
		       json_t **out, long long *date_s, struct mafsbx_error *err);
/*
 * GET /info: its SystemTime (ns) and its answer's Date header (s, 0 when
 * absent). dockerd 26 shares one /info answer among the calls that arrive
 * while it is computed (a singleflight group per API version), so the
 * SystemTime may predate the call by as long as /info takes; the Date is
 * written for each answer, so it is within the call, to the second.
 */
int mafsbx_engine_clock(struct mafsbx_engine *e, long long *ns, long long *date_s, struct mafsbx_error *err);
/*
 * GET /_ping, bounded by timeout_ms (at most the engine's own request
 * timeout): its answer's Date header (s). The cheapest answer dockerd
 * gives, for the clock calibration (src/freeze/calib.c). EPROTO when the
 * answer has no readable Date.
 */
int mafsbx_engine_date(struct mafsbx_engine *e, long timeout_ms, long long *date_s, struct mafsbx_error *err);
/* An HTTP Date header's time, seconds since the epoch (0: unreadable). */
long long mafsbx_http_date_s(const char *v);

/* ---- exec --------------------------------------------------------------- */

/* The variable that marks a user exec's processes (mafsbx_exec_request.marker). */
#define MAFSBX_EXEC_MARK_ENV "MAFSBX_EXEC_ID"

struct mafsbx_exec_request {
	const char *const *argv;     /* NULL-terminated, required */
	const char *const *env;      /* "K=V", NULL-terminated, or NULL */
	const char *user;            /* NULL: the container's Config.User */
	const char *workdir;         /* NULL: the container's */
	const void *stdin_data;      /* NULL: no stdin attached (EOF) */
	size_t stdin_len;
	/* Instead of stdin_data: stdin streamed from the descriptor stdin_fd,
	 * sent as it is read while the output arrives (docker exec -i), closed
	 * at its end of file; result->stdin_bytes counts what was read. */
	bool stdin_from_fd;
	int stdin_fd;
	long timeout_ms;             /* wall-clock bound on the run, 0 = none */
	size_t max_output;           /* per stream cap; 0 = 8 MiB. Over it: truncated, stream still drained */
	/* Optional: each output chunk as it arrives (stream 1 stdout, 2 stderr), every byte, before
	 * the cap applies; a negative return (-errno) ends the run with that error. */
	int (*on_output)(int stream, const void *data, size_t len, void *ctx);
	void *output_ctx;
	/* Optional: the exec's ID, once the engine made it (before it starts). */
	void (*on_created)(const char *exec_id, void *ctx);
	/* The sandbox backend's (mafsbx_sbx_exec), not the engine's: on a timeout, kill
	 * the command's process tree here (execkill.c) instead of removing the
	 * container; where that cannot be done the container is removed. */
	bool kill_on_timeout;
	/* Optional: the exec's marker, set in its environment as
	 * MAFSBX_EXEC_MARK_ENV=<marker> in place of any entry of env naming it;
	 * every child inherits it, so a cancel or timeout finds what the
	 * command daemonised (src/host/execmark.h). */
	const char *marker;
};

struct mafsbx_exec_result {
	int exit_code;               /* -1 when unknown (timed out) */
	unsigned char *out;          /* exact stdout bytes (malloc'd, NUL-terminated for convenience) */
	size_t out_len;
	unsigned char *err;          /* exact stderr bytes */
	size_t err_len;
	bool timed_out;
	bool truncated;
	bool launch_failed;          /* the runtime never started the process (exec inspect Pid 0,
					exit 126): not program output. Decided by the engine's
					answer only: a guest can print the runtime's message and
					exit 126, it cannot make its own Pid 0 */
	char exec_id[65];
	bool sandbox_disposed;       /* sandbox.h: a timeout removed the sandbox's container (as upstream) */
	bool killed;                 /* sandbox.h: a timeout killed the command, the sandbox kept */
	long long duration_ms;
	uint64_t stdin_bytes;        /* stdin_from_fd: bytes read from the descriptor (none can be re-sent) */
};

/*
 * Create + start (fresh connection, frames demultiplexed) + inspect for the
 * exit code. While the container is paused: EK_PAUSED. On timeout the run is
 * abandoned (result->timed_out, EK_TIMEOUT); the caller decides what to do
 * with the container. A launch failure is reported in the result (exit 126,
 * launch_failed) and returns 0: the caller decides.
 */
int mafsbx_exec_run(struct mafsbx_engine *e, const char *container, const struct mafsbx_exec_request *rq,
		    struct mafsbx_exec_result *res, struct mafsbx_error *err);
void mafsbx_exec_result_free(struct mafsbx_exec_result *res);
/* GET /exec/ID/json: is the exec's process still running, and its exit code (-1 while unknown). */
int mafsbx_exec_inspect(struct mafsbx_engine *e, const char *exec_id, bool *running, int *exit_code,
			struct mafsbx_error *err);

/* GET /exec/ID/json: the host PID of the exec's process (0: none, never
 * started or the engine does not say), and whether it still runs. */
int mafsbx_exec_pid(struct mafsbx_engine *e, const char *exec_id, long *pid, bool *running, struct mafsbx_error *err);

/* Frame demultiplexer for the raw exec stream, exposed for unit tests. */
struct mafsbx_demux {
	unsigned char hdr[8];
	size_t hdr_have;
	int stream;              /* current frame's stream (1 stdout, 2 stderr) */
	uint32_t left;           /* bytes left in the current frame */
	size_t max_output;
	struct mafsbx_exec_result *res;
	size_t out_cap, err_cap;
	bool error;              /* an impossible header was seen */
	int (*on_output)(int stream, const void *data, size_t len, void *ctx);  /* see mafsbx_exec_request */
	void *output_ctx;
};
void mafsbx_demux_init(struct mafsbx_demux *d, struct mafsbx_exec_result *res, size_t max_output);
/* Feed raw bytes; 0 or negative errno (EPROTO on a bad header, ENOMEM). */
int mafsbx_demux_feed(struct mafsbx_demux *d, const void *data, size_t len);
/* End of stream: -EPROTO if it stopped inside a header or a frame. */
int mafsbx_demux_finish(struct mafsbx_demux *d);

/* ---- images ------------------------------------------------------------- */

/* GET /images/REF/json. Absent: EK_NO_IMAGE. */
int mafsbx_image_inspect(struct mafsbx_engine *e, const char *ref, json_t **out, struct mafsbx_error *err);
/* POST /images/create?fromImage=..&tag=..; the progress stream is read to the end and an
 * {"error": ...} line in it is a failure (EK_NO_IMAGE). Bounded by the pull timeout. */
int mafsbx_image_pull(struct mafsbx_engine *e, const char *ref, struct mafsbx_error *err);
/* The same, with each line of the progress stream (a JSON object) handed to
 * on_line (NULL: none) as it arrives. */
int mafsbx_image_pull_watch(struct mafsbx_engine *e, const char *ref, void (*on_line)(const json_t *line, void *ctx),
			    void *ctx, struct mafsbx_error *err);
/* POST /images/create?fromSrc=-&repo=..&tag=..&changes=.. with a rootfs tar: `docker import`. */
int mafsbx_image_import(struct mafsbx_engine *e, const void *tar, size_t tar_len, const char *repo,
			const char *tag, const char *const *changes, struct mafsbx_error *err);
/* DELETE /images/REF?force=1. */
int mafsbx_image_delete(struct mafsbx_engine *e, const char *ref, struct mafsbx_error *err);

/* ---- networks ----------------------------------------------------------- */

int mafsbx_network_create(struct mafsbx_engine *e, const json_t *config, char id[65], struct mafsbx_error *err);
int mafsbx_network_inspect(struct mafsbx_engine *e, const char *network, json_t **out, struct mafsbx_error *err);
int mafsbx_network_list(struct mafsbx_engine *e, const json_t *filters, json_t **out, struct mafsbx_error *err);
/* DELETE /networks/N (never forced: the API has no force). Missing: EK_NO_OBJECT. */
int mafsbx_network_delete(struct mafsbx_engine *e, const char *network, struct mafsbx_error *err);
int mafsbx_network_connect(struct mafsbx_engine *e, const char *network, const char *container,
			   struct mafsbx_error *err);

/* ---- swarm (engine_swarm.c; asked of a manager) ----------------------- */

/* POST /services/create with `spec` (the ServiceSpec; borrowed): the new service's ID into id.
 * A name another service holds: EK_CONFLICT (the manager's "name conflicts with an existing object"). */
int mafsbx_service_create(struct mafsbx_engine *e, const json_t *spec, char id[65], struct mafsbx_error *err);
/* GET /services/S (a name or an ID). Missing: EK_NO_OBJECT. */
int mafsbx_service_inspect(struct mafsbx_engine *e, const char *service, json_t **out, struct mafsbx_error *err);
/* GET /services?status=true&filters=..: one call for the whole cluster, each with its ServiceStatus. */
int mafsbx_service_list(struct mafsbx_engine *e, const json_t *filters, json_t **out, struct mafsbx_error *err);
/* The same list streamed: `each` sees one service at a time (ID, CreatedAt,
 * Spec, ServiceStatus only), never the whole answer; a manager's transient
 * 5xx is asked again as for every call. */
int mafsbx_service_list_each(struct mafsbx_engine *e, const json_t *filters, mafsbx_list_each_fn each, void *ctx,
			     struct mafsbx_error *err);
/* DELETE /services/S. Missing: EK_NO_OBJECT. */
int mafsbx_service_delete(struct mafsbx_engine *e, const char *service, struct mafsbx_error *err);
/* GET /tasks?filters=.. ({"service": [...]}, {"desired-state": [...]}, ...). */
int mafsbx_task_list(struct mafsbx_engine *e, const json_t *filters, json_t **out, struct mafsbx_error *err);
/* GET /nodes: the swarm's nodes with their labels, status and availability. */
int mafsbx_node_list(struct mafsbx_engine *e, json_t **out, struct mafsbx_error *err);

/* What an engine's /info says of its place in a swarm. */
struct mafsbx_engine_swarm {
	char node_id[65];        /* Swarm.NodeID, "" outside a swarm */
	char state[16];          /* Swarm.LocalNodeState: "active", "inactive", ... */
	char hostname[256];      /* Name */
	bool manager;            /* Swarm.ControlAvailable */
	bool no_new_privileges;  /* SecurityOptions lists name=no-new-privileges (dockerd --no-new-privileges;
				    listed by 26.1, not by 20.10, which runs it all the same) */
};
int mafsbx_engine_swarm_facts(struct mafsbx_engine *e, struct mafsbx_engine_swarm *s, struct mafsbx_error *err);

#endif
