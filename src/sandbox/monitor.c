/*
 * monitor.c: the job monitor (job.h), one process per detached exec, the
 * shape of conmon and containerd's shims. The daemon makes the job's
 * directory and starts the monitor in a session of its own (fs/jobs.c);
 * from then on the monitor alone owns the exec's stream: it runs the exec
 * through the sandbox backend (the same cwd, env, user, timeout and
 * kill-on-timeout rules as a blocking exec), appends each output chunk to
 * the job's stdout or stderr spool, records the engine's exec ID (so a
 * cancel can kill the command's tree, from any daemon), and writes the
 * status when the command ends. It knows nothing of FUSE or of the daemon:
 * a daemon that crashes, restarts or upgrades meanwhile loses nothing.
 *
 * Bounds, each recorded as `truncated` in the status, never by blocking the
 * command (the stream is read to its end; what is over a bound is dropped):
 * a stream's cap (meta.stream_cap), the daemon's `stop` marker (its mount's
 * or sandbox's spool budget is spent), and the file system's free space
 * (MAFSBX_JOB_DISK_FLOOR). The timeout is the exec's own.
 */
#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "buf.h"
#include "cluster.h"
#include "engine.h"
#include "freeze.h"
#include "log.h"
#include "sandbox.h"

/* how much output between two looks at the stop marker and the free space */
#define CHECK_EVERY (256u << 10)

struct monitor {
	int dirfd;
	int fd[2];                   /* stdout, stderr spools (O_APPEND) */
	uint64_t len[2];
	uint64_t cap;
	uint64_t since_check;
	bool truncated, stopped;
};

/* Should spooling stop: the daemon said so, or the disk is nearly full. */
static bool must_stop(struct monitor *m)
{
	if (mafsbx_job_marked(m->dirfd, "stop")) {
		log_warn("the mount's spool budget is spent: no more output is kept");
		return true;
	}
	struct statvfs sv;
	if (fstatvfs(m->dirfd, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < MAFSBX_JOB_DISK_FLOOR) {
		log_warn("under %llu MiB free for the spools: no more output is kept",
			 (unsigned long long)(MAFSBX_JOB_DISK_FLOOR >> 20));
		return true;
	}
	return false;
}

static int on_output(int stream, const void *data, size_t len, void *ctx)
{
	struct monitor *m = ctx;
	int i = stream == 2 ? 1 : 0;
	m->since_check += len;
	if (!m->stopped && m->since_check >= CHECK_EVERY) {
		m->since_check = 0;
		m->stopped = must_stop(m);
	}
	uint64_t room = m->stopped || m->len[i] >= m->cap ? 0 : m->cap - m->len[i];
	size_t take = len < room ? len : (size_t)room;
	if (take < len)
		m->truncated = true;   /* the rest is read and dropped: the command never waits on us */
	const char *p = data;
	while (take) {
		ssize_t w = write(m->fd[i], p, take);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			log_warn("cannot spool the output: %s", strerror(errno));
			m->truncated = m->stopped = true;
			break;
		}
		p += w;
		take -= (size_t)w;
		m->len[i] += (uint64_t)w;
	}
	return 0;
}

static void on_created(const char *container_id, const char *exec_id, void *ctx)
{
	(void)container_id;
	struct monitor *m = ctx;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_job_exec_write(m->dirfd, exec_id, &e) < 0)
		log_warn("%s (a cancel will dispose the sandbox)", e.message);
}

/* The engine, its freezer (this host's freezes are shared through the runtime
 * directory) and a backend, as the daemon opened them; over a swarm the node
 * map too, so that the exec runs in the task's container on its node's
 * engine (sandbox.h mafsbx_backend_serving), as the daemon's own execs do. */
struct engine_set {
	struct mafsbx_endpoint ep;
	struct mafsbx_engine *engine;
	struct mafsbx_freezer *fz;
	struct mafsbx_cluster *cl;
	struct mafsbx_backend *b;
};

static int engine_set_open(struct engine_set *s, const struct mafsbx_job_meta *meta, struct mafsbx_error *err)
{
	struct mafsbx_endpoint_options eo = { .host = meta->endpoint };
	if (mafsbx_endpoint_resolve(&eo, NULL, NULL, &s->ep, err) < 0 ||
	    !(s->engine = mafsbx_engine_open(&s->ep, NULL, err)) || !(s->fz = mafsbx_freezer_new(s->engine, NULL, err)))
		return -1;
	struct mafsbx_sandbox_config sc;
	mafsbx_sandbox_config_defaults(&sc);
	/* the daemon already bounded the timeout; no ceiling of our own */
	sc.exec_timeout_max_s = MAFSBX_EXEC_TIMEOUT_NO_CEILING;
	if (!(s->b = mafsbx_backend_new(s->engine, s->fz, &sc, err)))
		return -1;
	if (!meta->cluster)
		return 0;
	/* no placement: the monitor never acquires, it only finds where the task runs */
	if (!(s->cl = mafsbx_cluster_new(s->engine, &s->ep, NULL, err)))
		return -1;
	return mafsbx_backend_set_cluster(s->b, s->cl, NULL, 0, err);
}

static void engine_set_close(struct engine_set *s)
{
	mafsbx_backend_free(s->b);   /* before the node map: its node backends borrow the map's engines */
	mafsbx_cluster_free(s->cl);
	if (s->fz)
		mafsbx_freezer_free(s->fz);
	if (s->engine)
		mafsbx_engine_close(s->engine);
}

/* Run the job's exec to its end into st. */
static void run(struct monitor *m, const struct mafsbx_job_meta *meta, struct mafsbx_job_status *st)
{
	struct mafsbx_exec_spec *spec = NULL;
	struct engine_set es = { 0 };
	struct mafsbx_error *e = &st->error;
	long long t0 = mafsbx_now_ms();
	if (mafsbx_job_spec_read(m->dirfd, &spec, e) < 0 || engine_set_open(&es, meta, e) < 0) {
		log_error("%s", e->message);
		goto out;
	}
	struct mafsbx_exec_hooks h = { .on_output = on_output, .on_created = on_created, .ctx = m,
				       /* over a swarm the sandbox's node decides (exec.c) */
				       .kill_on_timeout = es.ep.scheme == MAFSBX_EP_UNIX || meta->cluster,
				       /* the job's ID is its marker: a cancel from any daemon finds what carries it */
				       .marker = meta->job };
	struct mafsbx_exec_result res;
	if (mafsbx_sandbox_exec_run(es.b, spec, &h, &res, e) == 0)
		mafsbx_error_clear(e);
	st->exit_code = res.exit_code;
	st->timed_out = res.timed_out;
	st->disposed = res.sandbox_disposed;
	st->launch_failed = res.launch_failed;
	mafsbx_exec_result_free(&res);
out:
	st->duration_ms = mafsbx_now_ms() - t0;
	st->truncated = m->truncated;
	engine_set_close(&es);
	mafsbx_exec_spec_free(spec);
}

int mafsbx_job_monitor_main(const char *dir, int lockfd)
{
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	mafsbx_log_init("mafsbxfs-monitor", MAFSBX_LOG_INFO);
	struct monitor m = { .dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), .fd = { -1, -1 } };
	if (m.dirfd < 0) {
		log_error("job %s: %s", dir, strerror(errno));
		return 1;
	}
	struct mafsbx_job_meta meta;
	struct mafsbx_job_status st = { .exit_code = -1 };
	mafsbx_error_clear(&st.error);
	if (mafsbx_job_meta_read(m.dirfd, &meta, &st.error) == 0) {
		m.cap = meta.stream_cap;
		m.fd[0] = openat(m.dirfd, "stdout", O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
		m.fd[1] = openat(m.dirfd, "stderr", O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
		if (m.fd[0] < 0 || m.fd[1] < 0)
			mafsbx_error_set_full(&st.error, MAFSBX_EK_SYSTEM, errno, NULL, "job %s: its spools: %s", dir,
					      strerror(errno));
		else
			run(&m, &meta, &st);
	}
	if (st.error.err)
		log_info("job %s: %s", dir, st.error.message);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_job_status_write(m.dirfd, &st, &e);
	if (r < 0)
		log_error("%s", e.message);
	for (int i = 0; i < 2; i++)
		if (m.fd[i] >= 0)
			close(m.fd[i]);
	close(m.dirfd);
	close(lockfd);   /* the end is written: the lock goes last */
	return r < 0 ? 1 : 0;
}
