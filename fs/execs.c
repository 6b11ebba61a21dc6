/*
 * execs.c: detached execs (doc/protocol.md "Detached execs") and their
 * NAME/execs/ID/ files. `"detach": true` starts the command under a job
 * monitor of its own (jobs.c, src/sandbox/monitor.c) and answers at once;
 * the monitor spools the command's output to the job's files on disk
 * (at most MFS_EXEC_STREAM_CAP per stream: `truncated` past that), which
 * `stdout` and `stderr` read as they grow; `status` is a JSON snapshot;
 * `wait` answers its reader when the command ends (lowlevel.c parks the
 * read: no worker is held), with the blocking exec's reply. The daemon
 * never holds the only copy: a job outlives the daemon, and a daemon that
 * starts adopts the jobs it finds (mfs_exec_adopt), running, finished or
 * lost (its monitor died before the command's end).
 *
 * A thread per running job watches it (every WATCH_MS): the lock its
 * monitor holds, the spools' sizes charged to the spool budget (past the
 * mount's or the sandbox's share the monitor is told to stop spooling), and
 * at the end the status the monitor wrote.
 *
 * Cancel (rmdir NAME/execs/ID) and timeout end the command without
 * disposing the sandbox where the engine runs on this host: its process
 * tree and every process carrying its marker (its ID) are killed
 * (src/host/execkill.c: pidfds checked against the container's cgroup,
 * never its init). On a remote engine they dispose the sandbox, as
 * upstream does, and `status` says so.
 *
 * Bounds: at most MFS_EXECS_KEPT per sandbox (the oldest finished one is
 * forgotten, its files removed, for a new one; EBUSY when all of them still
 * run) and MFS_EXECS_RUNNING running on the mount (EBUSY past it; adopted
 * jobs count). A running exec's output counts against the spool budget (and
 * its sandbox's share of it); a finished one's against its sandbox's kept
 * allowance (keep_output), so finished execs never starve running ones or
 * the engine plane's opens.
 *
 * Locks: fs->execs_lock guards the list and the running count; each exec's
 * `mu` its state and output lengths. Never both at once except list, then
 * exec (eviction reads `running`).
 */
#include "mfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "execkill.h"
#include "job.h"
#include "log.h"
#include "sandbox.h"
#include "spec.h"

#define CANCEL_WAIT_MS 10000
#define SHUTDOWN_WAIT_MS 10000
#define WATCH_MS 200

struct exec_waiter {
	void (*fn)(void *arg);
	void *arg;
	struct exec_waiter *next;
};

struct mfs_dexec {
	struct mfs_dexec *next;      /* fs->execs, newest first (execs_lock) */
	atomic_int refs;             /* the list, the running thread, each open handle */
	struct mfs *fs;
	char id[MFS_EXEC_ID_LEN + 1];
	char sandbox[64];
	char container_id[65];       /* the sandbox's container: the job's directory's parent */
	int dirfd;                   /* the job's directory */
	int fd[2];                   /* its spools, read-only: stdout, stderr */
	pthread_mutex_t mu;          /* everything below */
	pthread_cond_t ended;
	uint64_t len[2];
	struct mafsbx_spool_share accounted;  /* spool budget held; once finished, the kept allowance */
	bool truncated, running, timed_out, cancelled, disposed;
	bool lost;                   /* its monitor died before the command's end */
	bool abandoned;              /* the daemon ends while it runs: the next one adopts it */
	bool output_dropped;         /* finished, its output dropped for newer execs' (keep_output) */
	int exit_code;
	bool launch_failed;
	long long started_s, t0_ms, duration_ms;
	struct mafsbx_error error;   /* a run that failed or timed out: why (err 0: it did not) */
	struct exec_waiter *waiters;
};

static void dexec_put(struct mfs_dexec *d)
{
	if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	for (int i = 0; i < 2; i++)
		if (d->fd[i] >= 0)
			close(d->fd[i]);
	if (d->dirfd >= 0)
		close(d->dirfd);
	if (d->fs && d->fs->planes)
		mafsbx_planes_spool_release(d->fs->planes, &d->accounted);
	pthread_cond_destroy(&d->ended);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

/* ---- the running command --------------------------------------------------- */

/* The spools' sizes now, charged to the spool budget while the command
 * runs; past the budget's share, the monitor is told to stop spooling. */
static void watch_output(struct mfs_dexec *d)
{
	uint64_t size[2];
	for (int i = 0; i < 2; i++) {
		struct stat st;
		size[i] = fstat(d->fd[i], &st) == 0 ? (uint64_t)st.st_size : 0;
	}
	pthread_mutex_lock(&d->mu);
	bool stop = false;
	uint64_t want = size[0] + size[1];
	if (d->running && d->fs->planes && want > d->accounted.bytes) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		stop = mafsbx_planes_spool_grow(d->fs->planes, &d->accounted, want, &e) < 0 && !d->truncated;
		if (stop)
			d->truncated = true;
	}
	/* what the monitor wrote before it saw the stop is shown: at most
	 * WATCH_MS of output over the share (doc/protocol.md "Budgets") */
	for (int i = 0; i < 2; i++)
		if (!d->output_dropped)
			d->len[i] = size[i];
	pthread_mutex_unlock(&d->mu);
	if (stop) {
		log_warn("exec %s of %s: the spool budget is spent; its monitor keeps no more output", d->id, d->sandbox);
		mafsbx_job_mark(d->dirfd, "stop");
	}
}

/* The engine runs on this host: a command can be killed without disposing. */
static bool engine_local(const struct mfs *fs)
{
	return fs->ep.scheme == MAFSBX_EP_UNIX;
}

/* A finished exec's output goes: its bytes given back, its files emptied. */
static void drop_output(struct mfs_dexec *d)
{
	pthread_mutex_lock(&d->mu);
	d->len[0] = d->len[1] = 0;
	d->output_dropped = true;
	if (d->fs->planes)
		mafsbx_planes_spool_release(d->fs->planes, &d->accounted);
	pthread_mutex_unlock(&d->mu);
	/* a reader that saw the old length reads EOF past the new end */
	for (int i = 0; i < 2; i++) {
		int fd = openat(d->dirfd, i ? "stderr" : "stdout", O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			log_warn("exec %s: cannot empty its output: %s", d->id, strerror(errno));
		else
			close(fd);
	}
	mafsbx_job_mark(d->dirfd, "output_dropped");   /* an adopting daemon says so too */
}
/* Drop the output of the oldest finished exec that keeps some, of `sandbox`
 * only when given, never `self`'s. false when there is none. */
static bool drop_oldest(struct mfs *fs, const struct mfs_dexec *self, const char *sandbox)
{
	struct mfs_dexec *oldest = NULL;
	pthread_mutex_lock(&fs->execs_lock);
	for (struct mfs_dexec *d = fs->execs; d; d = d->next) {
		if (d == self || (sandbox && strcmp(d->sandbox, sandbox) != 0))
			continue;
		pthread_mutex_lock(&d->mu);
		bool kept = !d->running && d->accounted.kept && d->accounted.bytes;
		pthread_mutex_unlock(&d->mu);
		if (kept)
			oldest = d;   /* the list is newest first */
	}
	if (oldest)
		atomic_fetch_add(&oldest->refs, 1);
	pthread_mutex_unlock(&fs->execs_lock);
	if (!oldest)
		return false;
	log_info("exec %s of %s: its output is dropped to keep newer output (status says output_dropped)",
		 oldest->id, oldest->sandbox);
	drop_output(oldest);
	dexec_put(oldest);
	return true;
}

/*
 * The command ended: its output leaves the spool budget, where it would
 * starve the running execs and open files of every sandbox, for its
 * sandbox's kept allowance. Room is made there by dropping the output of
 * the oldest finished execs (of this sandbox when its allowance is full,
 * of any when the mount's is); output that cannot fit at all is dropped.
 */
static void keep_output(struct mfs *fs, struct mfs_dexec *d)
{
	while (fs->planes) {
		pthread_mutex_lock(&d->mu);
		int r = mafsbx_planes_spool_keep(fs->planes, &d->accounted);
		pthread_mutex_unlock(&d->mu);
		if (r == 0)
			return;
		if (!drop_oldest(fs, d, r == -1 ? d->sandbox : NULL)) {
			log_warn("exec %s of %s: its output is more than the kept allowance holds: dropped", d->id,
				 d->sandbox);
			drop_output(d);
			return;
		}
	}
}

/* With d->mu held: the end the monitor wrote, or a lost job. */
static void read_end(struct mfs_dexec *d)
{
	struct mafsbx_job_status st;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_job_status_read(d->dirfd, &st, &e);
	d->running = false;
	d->cancelled = d->cancelled || mafsbx_job_marked(d->dirfd, "cancelled");
	d->output_dropped = d->output_dropped || mafsbx_job_marked(d->dirfd, "output_dropped");
	if (r < 0) {
		/* no status: the monitor died (killed, the host rebooted) before the command's end */
		d->lost = true;
		d->duration_ms = mafsbx_now_ms() - d->t0_ms;
		mafsbx_error_set_full(&d->error, MAFSBX_EK_SYSTEM, ESRCH, "RuntimeError",
				      "exec %s: its monitor ended before the command did (%s); the output spooled "
				      "until then is kept", d->id, r == -ENOENT ? "no status" : e.message);
		return;
	}
	d->exit_code = st.exit_code;
	d->timed_out = st.timed_out;
	d->disposed = d->disposed || st.disposed;
	d->launch_failed = st.launch_failed;
	d->truncated = d->truncated || st.truncated;
	d->duration_ms = st.duration_ms;
	if (st.error.err && !d->cancelled)
		d->error = st.error;
}

/* Until the job's monitor ends, or the mount does. true: the job ended. */
static bool watch(struct mfs *fs, struct mfs_dexec *d)
{
	for (;;) {
		bool alive = mafsbx_job_alive(d->dirfd);
		watch_output(d);
		if (!alive)
			return true;
		pthread_mutex_lock(&fs->execs_lock);
		bool stop = fs->execs_stop;
		if (!stop) {
			struct timespec until = mafsbx_monotonic_after_ms(WATCH_MS);
			pthread_cond_timedwait(&fs->execs_cv, &fs->execs_lock, &until);
		}
		pthread_mutex_unlock(&fs->execs_lock);
		if (stop)
			return false;
	}
}

static void *exec_main(void *arg)
{
	struct mfs_dexec *d = arg;
	struct mfs *fs = d->fs;
	bool ended = watch(fs, d);
	if (ended) {
		pthread_mutex_lock(&d->mu);
		read_end(d);
		pthread_mutex_unlock(&d->mu);
		keep_output(fs, d);
	}
	pthread_mutex_lock(&d->mu);
	d->abandoned = !ended;   /* its `wait` readers answer ENOTCONN: the mount ends */
	struct exec_waiter *w = d->waiters;
	d->waiters = NULL;
	pthread_cond_broadcast(&d->ended);
	bool disposed = d->timed_out && d->disposed;
	pthread_mutex_unlock(&d->mu);
	if (disposed)
		mfs_invalidate_sandbox(fs, d->sandbox);
	while (w) {
		struct exec_waiter *next = w->next;
		w->fn(w->arg);
		free(w);
		w = next;
	}
	pthread_mutex_lock(&fs->execs_lock);
	fs->execs_running--;
	pthread_cond_broadcast(&fs->execs_cv);
	pthread_mutex_unlock(&fs->execs_lock);
	dexec_put(d);
	return NULL;
}

/* ---- the registry ---------------------------------------------------------- */

void mfs_execs_init(struct mfs *fs)
{
	pthread_mutex_init(&fs->execs_lock, NULL);
	mafsbx_cond_init_monotonic(&fs->execs_cv);
	fs->execs = NULL;
	fs->execs_running = 0;
	fs->execs_stop = false;
	fs->execs_ready = true;
	fs->jobs_fd = -1;   /* until jobs.c opens it */
	fs->jobs_dir = NULL;
}

/* With execs_lock held: room for one more exec of `sandbox` (the oldest
 * finished one forgotten if need be). 0, or -EBUSY with the message. */
static int make_room(struct mfs *fs, const char *sandbox, bool to_run, struct mafsbx_error *err)
{
	if (to_run && fs->execs_running >= MFS_EXECS_RUNNING)
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EBUSY, "RuntimeError",
					     "exec: %d detached execs are running on this mount, the most it allows",
					     MFS_EXECS_RUNNING);
	unsigned n = 0, total = 0;
	struct mfs_dexec **oldest = NULL, **oldest_any = NULL;
	for (struct mfs_dexec **pp = &fs->execs; *pp; pp = &(*pp)->next) {
		pthread_mutex_lock(&(*pp)->mu);
		bool running = (*pp)->running;
		pthread_mutex_unlock(&(*pp)->mu);
		total++;
		/* the list is newest first: the last finished one seen is the oldest */
		if (!running)
			oldest_any = pp;
		if (strcmp((*pp)->sandbox, sandbox) != 0)
			continue;
		n++;
		if (!running)
			oldest = pp;
	}
	if (n < MFS_EXECS_KEPT && total >= MFS_EXECS_TOTAL && oldest_any)
		oldest = oldest_any;   /* the mount's bound: the oldest finished exec of any sandbox goes */
	else if (n < MFS_EXECS_KEPT)
		return 0;
	if (!oldest)
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EBUSY, "RuntimeError",
					     "exec: the %d detached execs kept for %s all still run", MFS_EXECS_KEPT,
					     sandbox);
	struct mfs_dexec *gone = *oldest;
	*oldest = gone->next;
	mfs_job_forget(fs, gone->container_id, gone->id);   /* forgotten: its files go too */
	dexec_put(gone);
	return 0;
}

static void new_id(char out[MFS_EXEC_ID_LEN + 1])
{
	unsigned char b[MFS_EXEC_ID_LEN / 2];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, b, sizeof(b)) : -1;
	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)sizeof(b)) {   /* no urandom: the clock and a counter are unique enough here */
		static atomic_uint counter;
		unsigned long long v = (unsigned long long)mafsbx_now_ms() * 1000u + atomic_fetch_add(&counter, 1);
		memcpy(b, &v, sizeof(b) < sizeof(v) ? sizeof(b) : sizeof(v));
	}
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static struct mfs_dexec *dexec_new(struct mfs *fs, const char *sandbox, const char *container)
{
	struct mfs_dexec *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->fd[0] = d->fd[1] = d->dirfd = -1;
	pthread_mutex_init(&d->mu, NULL);
	mafsbx_cond_init_monotonic(&d->ended);   /* wait_end's deadlines are monotonic */
	atomic_init(&d->refs, 1);
	d->fs = fs;
	if (fs->planes)
		mafsbx_planes_spool_owner(fs->planes, &d->accounted, sandbox);
	snprintf(d->sandbox, sizeof(d->sandbox), "%s", sandbox);
	snprintf(d->container_id, sizeof(d->container_id), "%s", container);
	d->exit_code = -1;
	d->started_s = (long long)time(NULL);
	d->t0_ms = mafsbx_now_ms();
	return d;
}

/* The job's directory `dfd` (taken) and its spools, read-only. 0 or -errno. */
static int attach(struct mfs_dexec *d, int dfd)
{
	d->dirfd = dfd;
	for (int i = 0; i < 2; i++)
		if ((d->fd[i] = openat(dfd, i ? "stderr" : "stdout", O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
			return -errno;
	return 0;
}

/* With execs_lock held: the job's watching thread started, the exec listed. */
static int start_watch(struct mfs *fs, struct mfs_dexec *d, struct mafsbx_error *err)
{
	pthread_t t;
	atomic_fetch_add(&d->refs, 1);   /* the thread's */
	int e = pthread_create(&t, NULL, exec_main, d);
	if (e != 0) {
		atomic_fetch_sub(&d->refs, 1);
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL, "exec: cannot start its thread: %s",
					     strerror(e));
	}
	pthread_detach(t);
	fs->execs_running++;
	return 0;
}

/* With execs_lock held: into the list, newest first by start. */
static void list_insert(struct mfs *fs, struct mfs_dexec *d)
{
	struct mfs_dexec **pp = &fs->execs;
	while (*pp && (*pp)->started_s > d->started_s)
		pp = &(*pp)->next;
	d->next = *pp;
	*pp = d;
}

/* The sandbox's container ID, as the mount knows it. 0, or the error. */
static int container_of(struct mfs *fs, const char *sandbox, char out[65], struct mafsbx_error *err)
{
	const struct mafsbx_sandbox_info *info;
	struct mfs_snapshot *snap = mfs_sandbox_find(fs, sandbox, &info, err);
	if (!snap)
		return -(err ? err->err : ENOENT);
	snprintf(out, 65, "%s", info->id);
	mfs_snapshot_put(snap);
	return 0;
}

/* With execs_lock held: the job made, its monitor started, its watch too. */
static int launch(struct mfs *fs, struct mfs_dexec *d, const struct mafsbx_exec_spec *spec, struct mafsbx_error *err)
{
	struct mafsbx_job_meta m = { .started_s = d->started_s, .stream_cap = MFS_EXEC_STREAM_CAP };
	snprintf(m.job, sizeof(m.job), "%s", d->id);
	snprintf(m.sandbox, sizeof(m.sandbox), "%s", d->sandbox);
	snprintf(m.container, sizeof(m.container), "%s", d->container_id);
	snprintf(m.endpoint, sizeof(m.endpoint), "%s", fs->ep.url);
	m.cluster = fs->cluster != NULL;
	snprintf(m.scope, sizeof(m.scope), "%s", fs->scope_label);
	int dfd = mfs_job_start(fs, &m, spec, err);
	if (dfd < 0)
		return dfd;
	int r = attach(d, dfd);
	if (r < 0)
		mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, -r, NULL, "exec: cannot open its spools: %s", strerror(-r));
	d->running = true;
	if (r == 0)
		r = start_watch(fs, d, err);
	if (r < 0) {
		/* the monitor runs on unwatched: the next mount adopts it */
		log_warn("exec %s of %s: %s; its job is left to the next mount", d->id, d->sandbox, err->message);
		return r;
	}
	list_insert(fs, d);
	return 0;
}

int mfs_exec_detach(struct mfs *fs, struct mafsbx_exec_spec *spec, json_t **reply, struct mafsbx_error *err)
{
	char cid[65];
	struct mfs_dexec *d = NULL;
	int r = container_of(fs, spec->sandbox, cid, err);
	if (r == 0 && !(d = dexec_new(fs, spec->sandbox, cid)))
		r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (r == 0) {
		new_id(d->id);
		pthread_mutex_lock(&fs->execs_lock);
		r = fs->execs_stop ? mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, ESHUTDOWN, NULL, "exec: the mount is ending")
				   : make_room(fs, spec->sandbox, true, err);
		if (r == 0)
			r = launch(fs, d, spec, err);
		pthread_mutex_unlock(&fs->execs_lock);
	}
	mafsbx_exec_spec_free(spec);   /* the job's spec file is the monitor's copy */
	if (r < 0) {
		dexec_put(d);
		return r;
	}
	char path[128];
	snprintf(path, sizeof(path), "%s/execs/%s", d->sandbox, d->id);
	*reply = json_pack("{s:b, s:s, s:s}", "ok", 1, "exec", d->id, "path", path);
	return *reply ? 0 : mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
}

/* A finished (or lost) job found at start: its end read, its output kept. */
static void adopt_ended(struct mfs *fs, struct mfs_dexec *d)
{
	d->running = true;   /* so that watch_output charges what the spools hold */
	watch_output(d);
	pthread_mutex_lock(&d->mu);
	read_end(d);
	pthread_mutex_unlock(&d->mu);
	keep_output(fs, d);
}

void mfs_exec_adopt(struct mfs *fs, int dfd, const struct mafsbx_job_meta *m)
{
	struct mfs_dexec *d = strlen(m->job) == MFS_EXEC_ID_LEN ? dexec_new(fs, m->sandbox, m->container) : NULL;
	if (!d) {
		close(dfd);
		return;
	}
	snprintf(d->id, sizeof(d->id), "%s", m->job);
	d->started_s = m->started_s;
	d->t0_ms = mafsbx_now_ms() - ((long long)time(NULL) - m->started_s) * 1000;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = attach(d, dfd);
	bool alive = r == 0 && mafsbx_job_alive(dfd);
	d->cancelled = mafsbx_job_marked(dfd, "cancelled");
	if (r == 0 && !alive)
		adopt_ended(fs, d);
	pthread_mutex_lock(&fs->execs_lock);
	if (r == 0)
		r = make_room(fs, d->sandbox, alive, &e);
	d->running = alive;
	if (r == 0 && alive)
		r = start_watch(fs, d, &e);
	if (r == 0)
		list_insert(fs, d);
	pthread_mutex_unlock(&fs->execs_lock);
	if (r < 0) {
		log_warn("job %s of %s: not adopted (%s); its files stay", m->job, m->sandbox,
			 e.err ? e.message : strerror(-r));
		dexec_put(d);
		return;
	}
	log_info("job %s of %s adopted (%s)", d->id, d->sandbox, alive ? "running" : d->lost ? "lost" : "finished");
}

/* The exec `id` of `sandbox`, referenced, or NULL. */
static struct mfs_dexec *find(struct mfs *fs, const char *sandbox, const char *id)
{
	struct mfs_dexec *found = NULL;
	pthread_mutex_lock(&fs->execs_lock);
	for (struct mfs_dexec *d = fs->execs; d; d = d->next)
		if (!strcmp(d->id, id) && !strcmp(d->sandbox, sandbox)) {
			found = d;
			atomic_fetch_add(&d->refs, 1);
			break;
		}
	pthread_mutex_unlock(&fs->execs_lock);
	return found;
}

bool mfs_exec_exists(struct mfs *fs, const char *sandbox, const char *id)
{
	struct mfs_dexec *d = find(fs, sandbox, id);
	dexec_put(d);
	return d != NULL;
}

int mfs_execs_list(struct mfs *fs, const char *sandbox, void *buf, fuse_fill_dir_t filler)
{
	mfs_dir_entry(buf, filler, ".", S_IFDIR);
	mfs_dir_entry(buf, filler, "..", S_IFDIR);
	pthread_mutex_lock(&fs->execs_lock);
	for (struct mfs_dexec *d = fs->execs; d; d = d->next)
		if (!strcmp(d->sandbox, sandbox) && mfs_dir_entry(buf, filler, d->id, S_IFDIR) != 0)
			break;
	pthread_mutex_unlock(&fs->execs_lock);
	return 0;
}

/* ---- cancel ---------------------------------------------------------------- */

/* With d->mu held: until the command ended (or the mount ends) or `ms` passed. true when it ended. */
static bool wait_end(struct mfs_dexec *d, long long ms)
{
	struct timespec until = mafsbx_monotonic_after_ms(ms);
	while (d->running && !d->abandoned && pthread_cond_timedwait(&d->ended, &d->mu, &until) != ETIMEDOUT)
		;
	return !d->running;
}

/* A remote engine's cancel: the sandbox disposed, as upstream does. */
static int cancel_dispose(struct mfs *fs, struct mfs_dexec *d, struct mafsbx_error *err)
{
	struct mafsbx_dispose_result dr;
	int r = mafsbx_sandbox_dispose_id(fs->backend, d->sandbox, d->container_id, &dr, err);
	bool gone = r == 0 && dr.n_failures == 0;
	mafsbx_dispose_result_free(&dr);
	mfs_invalidate_sandbox(fs, d->sandbox);
	pthread_mutex_lock(&d->mu);
	d->disposed = gone;
	bool done = wait_end(d, CANCEL_WAIT_MS);
	pthread_mutex_unlock(&d->mu);
	if (!gone)
		return r < 0 ? r : mafsbx_error_set(err, MAFSBX_EK_ENGINE, "cancel: the sandbox could not be disposed");
	return done ? 0 : mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "cancel: the command did not end");
}

/* End a running command: its process tree killed here, else the sandbox
 * disposed. The same for a job this daemon started and one it adopted: the
 * engine's exec ID is the one its monitor recorded. */
static int cancel(struct mfs *fs, struct mfs_dexec *d, struct mafsbx_error *err)
{
	pthread_mutex_lock(&d->mu);
	d->cancelled = true;
	pthread_mutex_unlock(&d->mu);
	mafsbx_job_mark(d->dirfd, "cancelled");   /* an adopting daemon says so too */
	long long deadline = mafsbx_now_ms() + CANCEL_WAIT_MS;
	/* over a swarm the exec ran on its node's engine, which this host cannot kill in: dispose */
	bool dispose = !engine_local(fs) || fs->cluster;
	while (!dispose && mafsbx_now_ms() < deadline) {
		char eid[65];
		mafsbx_job_exec_read(d->dirfd, eid);
		pthread_mutex_lock(&d->mu);
		bool ended = !d->running;
		pthread_mutex_unlock(&d->mu);
		if (ended)
			return 0;
		struct mafsbx_error ke;
		mafsbx_error_clear(&ke);
		int killed = 0;
		/* not created yet, or not started yet (ESRCH): ask again shortly */
		/* its ID is its marker: the kill also takes what carries it (src/host/execmark.h) */
		if (eid[0] && mafsbx_exec_kill_tree_marked(fs->engine, d->container_id, eid, d->id, &killed, &ke) < 0 &&
		    ke.err != ESRCH) {
			log_warn("cancel of exec %s in %s: cannot kill it here (%s); disposing the sandbox", d->id,
				 d->sandbox, ke.message);
			dispose = true;
			break;
		}
		pthread_mutex_lock(&d->mu);
		bool done = wait_end(d, killed ? 2000 : 50);
		pthread_mutex_unlock(&d->mu);
		if (done)
			return 0;
	}
	if (dispose)
		return cancel_dispose(fs, d, err);
	return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "cancel of exec %s: the command did not end within %d s", d->id,
				CANCEL_WAIT_MS / 1000);
}

/* A lost job's command may still run, with no monitor to see its end: where
 * it can be, it is killed as a cancel kills (best effort: forgetting goes on). */
static void end_lost(struct mfs *fs, struct mfs_dexec *d)
{
	char eid[65];
	mafsbx_job_exec_read(d->dirfd, eid);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int killed = 0;
	/* over a swarm it ran on a node's engine, not this host's: left to a dispose */
	if (eid[0] && engine_local(fs) && !fs->cluster &&
	    mafsbx_exec_kill_tree_marked(fs->engine, d->container_id, eid, d->id, &killed, &e) < 0 &&
	    e.err != ESRCH)
		log_warn("exec %s of %s (lost): its command could not be killed: %s", d->id, d->sandbox, e.message);
}

int mfs_exec_remove(struct mfs *fs, const char *sandbox, const char *id, struct mafsbx_error *err)
{
	struct mfs_dexec *d = find(fs, sandbox, id);
	if (!d)
		return mafsbx_error_set(err, MAFSBX_EK_NO_PATH, "no detached exec %s of %s", id, sandbox);
	pthread_mutex_lock(&d->mu);
	bool running = d->running, lost = d->lost;
	pthread_mutex_unlock(&d->mu);
	int r = running ? cancel(fs, d, err) : 0;
	if (lost)
		end_lost(fs, d);
	if (r == 0) {
		bool mine = false;
		pthread_mutex_lock(&fs->execs_lock);
		for (struct mfs_dexec **pp = &fs->execs; *pp; pp = &(*pp)->next)
			if (*pp == d) {
				*pp = d->next;
				mine = true;
				break;
			}
		/* removed with the exec; under the lock, as a new job's directory is
		 * made: the container's directory never goes under a new job */
		if (mine)
			mfs_job_forget(fs, d->container_id, d->id);
		pthread_mutex_unlock(&fs->execs_lock);
		if (mine)
			dexec_put(d);   /* the list's */
	}
	dexec_put(d);
	return r;
}

bool mfs_execs_fini(struct mfs *fs)
{
	if (!fs->execs_ready)
		return true;
	/* Jobs still running outlive the mount: their monitors go on, the next
	 * mount adopts them. Only the threads watching them end here. */
	pthread_mutex_lock(&fs->execs_lock);
	fs->execs_stop = true;
	pthread_cond_broadcast(&fs->execs_cv);
	if (fs->execs_running)
		log_info("%u job(s) run on after the mount; the next mount adopts them", fs->execs_running);
	struct timespec until = mafsbx_monotonic_after_ms(SHUTDOWN_WAIT_MS);
	while (fs->execs_running && pthread_cond_timedwait(&fs->execs_cv, &fs->execs_lock, &until) != ETIMEDOUT)
		;
	bool quiet = fs->execs_running == 0;
	struct mfs_dexec *list = quiet ? fs->execs : NULL;
	if (quiet)
		fs->execs = NULL;
	pthread_mutex_unlock(&fs->execs_lock);
	if (!quiet) {
		log_warn("%u detached exec watch(es) still running at the end of the mount", fs->execs_running);
		return false;   /* their threads still use the list and the mount: left to the exit */
	}
	while (list) {
		struct mfs_dexec *next = list->next;
		dexec_put(list);
		list = next;
	}
	pthread_cond_destroy(&fs->execs_cv);
	pthread_mutex_destroy(&fs->execs_lock);
	fs->execs_ready = false;
	return true;
}

/* ---- the files --------------------------------------------------------------- */

struct mfs_exec_handle {
	struct mfs_handle h;         /* must stay first */
	struct mfs_dexec *d;
	enum mfs_exec_file file;
	/* status: the snapshot; wait: the reply, once built. Shared with the
	 * exec's other handles (texts.c); set once (a compare-and-swap: two
	 * first reads of one handle keep one reference, never two). */
	struct mfs_text *_Atomic text;
};

/* With d->mu held: the status JSON. */
static json_t *status_json(const struct mfs_dexec *d)
{
	char started[32];
	struct mafsbx_time t = { d->started_s, 0 };
	mafsbx_time_format(t, started);
	json_t *o = json_object();
	int bad = o ? 0 : -1;
	bad |= json_object_set_new(o, "exec", json_string(d->id));
	bad |= json_object_set_new(o, "sandbox", json_string(d->sandbox));
	bad |= json_object_set_new(o, "running", json_boolean(d->running));
	/* running, exited (exit_code says how), or lost: its monitor died first */
	bad |= json_object_set_new(o, "state", json_string(d->running ? "running" : d->lost ? "lost" : "exited"));
	bad |= json_object_set_new(o, "exit_code",
				   d->running || d->exit_code < 0 ? json_null() : json_integer(d->exit_code));
	bad |= json_object_set_new(o, "timed_out", json_boolean(d->timed_out));
	bad |= json_object_set_new(o, "cancelled", json_boolean(d->cancelled));
	bad |= json_object_set_new(o, "started", json_string(started));
	bad |= json_object_set_new(o, "duration_ms",
				   json_integer(d->running ? mafsbx_now_ms() - d->t0_ms : d->duration_ms));
	bad |= json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)d->len[0]));
	bad |= json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)d->len[1]));
	bad |= json_object_set_new(o, "truncated", json_boolean(d->truncated));
	if (d->output_dropped)   /* for newer execs' output (doc/protocol.md "Budgets") */
		bad |= json_object_set_new(o, "output_dropped", json_true());
	/* a remote engine's timeout or cancel disposes the sandbox, as upstream */
	bad |= json_object_set_new(o, "sandbox_disposed", json_boolean(d->disposed));
	if (d->error.err)
		bad |= json_object_set_new(o, "error", mfs_json_text(d->error.message));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* One stream's bytes, all of them (at most the cap). NULL on failure. */
static unsigned char *stream_bytes(struct mfs_dexec *d, int i, size_t *len)
{
	pthread_mutex_lock(&d->mu);
	size_t n = (size_t)d->len[i];
	pthread_mutex_unlock(&d->mu);
	unsigned char *p = malloc(n + 1);
	if (!p)
		return NULL;
	ssize_t got = n ? pread(d->fd[i], p, n, 0) : 0;
	if (got < 0) {
		free(p);
		return NULL;
	}
	p[got] = '\0';
	*len = (size_t)got;
	return p;
}

/* The blocking exec's reply, for `wait` once the command ended. */
static int wait_reply(struct mfs_dexec *d, char **text, size_t *len)
{
	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	res.out = stream_bytes(d, 0, &res.out_len);
	res.err = stream_bytes(d, 1, &res.err_len);
	if (!res.out || !res.err) {
		mafsbx_exec_result_free(&res);
		return -ENOMEM;
	}
	pthread_mutex_lock(&d->mu);
	res.exit_code = d->exit_code;
	res.timed_out = d->timed_out;
	res.truncated = d->truncated;
	res.duration_ms = d->duration_ms;
	bool cancelled = d->cancelled, disposed = d->disposed, dropped = d->output_dropped;
	struct mafsbx_error error = d->error;
	pthread_mutex_unlock(&d->mu);
	json_t *o = mfs_exec_fields(&res, false);
	mafsbx_exec_result_free(&res);
	if (!o)
		return -ENOMEM;
	if (dropped && json_object_set_new(o, "output_dropped", json_true()) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	if (json_object_set_new(o, "exec", json_string(d->id)) < 0 ||
	    json_object_set_new(o, "cancelled", json_boolean(cancelled)) < 0 ||
	    json_object_set_new(o, "sandbox_disposed", json_boolean(disposed)) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	/* as the blocking exec's reply: a failure (a timeout too) is "ok": false with the error */
	if (error.err) {
		json_t *full = mfs_error_reply(&error, o);
		json_decref(o);
		o = full;
	} else {
		json_t *full = json_pack("{s:b}", "ok", 1);   /* "ok" first, as in every reply */
		if (full && json_object_update(full, o) < 0) {
			json_decref(full);
			full = NULL;
		}
		json_decref(o);
		o = full;
	}
	if (!o)
		return -ENOMEM;
	*text = mfs_reply_dump(o, len);
	json_decref(o);
	return *text ? 0 : -ENOMEM;
}

/* texts.c's builder of `wait`: the reply, its peak counted against the reply budget. */
static int build_wait(struct mfs *fs, void *arg, char **text, size_t *len, struct mafsbx_error *err)
{
	struct mfs_dexec *d = arg;
	pthread_mutex_lock(&d->mu);
	size_t out = (size_t)d->len[0], errl = (size_t)d->len[1];
	pthread_mutex_unlock(&d->mu);
	/* the streams' copies beside what the reply's views and encodings hold */
	size_t cost = out + errl + mfs_exec_reply_cost(out, errl);
	char what[160];
	snprintf(what, sizeof(what), "%s/execs/%s/wait (%zu bytes of output)", d->sandbox, d->id, out + errl);
	int r = mfs_reply_budget_take(fs, cost, what, err);
	if (r < 0) {
		log_warn("%s", err->message);
		return r;
	}
	r = wait_reply(d, text, len);
	mfs_reply_budget_put(fs, cost);
	mfs_memory_trim(cost);
	return r < 0 ? mafsbx_error_set(err, MAFSBX_EK_NOMEM, "%s: out of memory building the reply", what) : 0;
}

/* texts.c's builder of an exec's `status`. */
static int build_status(struct mfs *fs, void *arg, char **text, size_t *len, struct mafsbx_error *err)
{
	(void)fs;
	struct mfs_dexec *d = arg;
	pthread_mutex_lock(&d->mu);
	json_t *o = status_json(d);
	pthread_mutex_unlock(&d->mu);
	*text = o ? mfs_reply_dump(o, len) : NULL;
	json_decref(o);
	return *text ? 0 : mafsbx_error_set(err, MAFSBX_EK_NOMEM, "exec %s: out of memory for its status", d->id);
}

/* This handle's text, made (or joined) by the first read or open that needs it. */
static int handle_text(struct mfs_exec_handle *x, const char **data, size_t *len)
{
	struct mfs_text *t = atomic_load(&x->text);
	if (!t) {
		struct mfs_dexec *d = x->d;
		bool wait = x->file == MFS_EXEC_WAIT;
		char key[160];
		snprintf(key, sizeof(key), "%s/execs/%s/%s", d->sandbox, d->id, wait ? "wait" : "status");
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		/* a finished exec's reply never changes: handles still holding it share it */
		int r = mfs_text_get(d->fs, key, wait, wait ? build_wait : build_status, d, &t, &e);
		if (r < 0)
			return mafsbx_error_errno(&e, r);
		struct mfs_text *none = NULL;
		if (!atomic_compare_exchange_strong(&x->text, &none, t)) {
			mfs_text_put(t);   /* another read of this handle stored its own first */
			t = none;
		}
	}
	*data = mfs_text_data(t, len);
	return 0;
}

static void handle_free(struct mfs_exec_handle *x)
{
	dexec_put(x->d);
	mfs_text_put(atomic_load(&x->text));
	free(x);
}

static void handle_discard(struct mfs_handle *h)
{
	handle_free((struct mfs_exec_handle *)h);
}

int mfs_exec_open(struct mfs *fs, const struct mfs_node *n, struct fuse_file_info *fi)
{
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return -EACCES;
	struct mfs_dexec *d = find(fs, n->name, n->exec_id);
	if (!d)
		return -ENOENT;
	struct mfs_exec_handle *x = calloc(1, sizeof(*x));
	if (!x) {
		dexec_put(d);
		return -ENOMEM;
	}
	x->h.type = MFS_H_EXEC;
	x->h.discard = handle_discard;
	x->d = d;
	x->file = n->exec_file;
	atomic_init(&x->text, NULL);
	if (x->file == MFS_EXEC_STATUS) {
		const char *data;
		size_t len;
		int r = handle_text(x, &data, &len);
		if (r < 0) {
			handle_free(x);
			return r;
		}
	}
	fi->fh = (uint64_t)(uintptr_t)x;
	/* contents grow or are made on open: never the kernel's idea of the size */
	fi->direct_io = 1;
	return 0;
}

static int text_read(const char *text, size_t len, char *buf, size_t size, off_t off)
{
	if (off < 0)
		return -EINVAL;
	if ((size_t)off >= len)
		return 0;
	size_t n = len - (size_t)off < size ? len - (size_t)off : size;
	memcpy(buf, text + off, n);
	return (int)n;
}

int mfs_exec_read(struct mfs_exec_handle *x, char *buf, size_t size, off_t off)
{
	struct mfs_dexec *d = x->d;
	switch (x->file) {
	case MFS_EXEC_STDOUT:
	case MFS_EXEC_STDERR: {
		int i = x->file == MFS_EXEC_STDERR;
		pthread_mutex_lock(&d->mu);
		uint64_t have = d->len[i];
		pthread_mutex_unlock(&d->mu);
		if (off < 0)
			return -EINVAL;
		if ((uint64_t)off >= have)
			return 0;   /* EOF at the current end: `tail -f` asks again */
		size_t n = have - (uint64_t)off < size ? (size_t)(have - (uint64_t)off) : size;
		ssize_t got = pread(d->fd[i], buf, n, off);
		return got < 0 ? -errno : (int)got;
	}
	case MFS_EXEC_STATUS:
	case MFS_EXEC_WAIT: {
		if (x->file == MFS_EXEC_WAIT && !atomic_load(&x->text)) {
			pthread_mutex_lock(&d->mu);
			bool ended = wait_end(d, 24LL * 3600 * 1000);   /* lowlevel.c parks the read until the end instead */
			pthread_mutex_unlock(&d->mu);
			if (!ended)
				return -ENOTCONN;   /* the mount ends while the job runs on */
		}
		const char *text;
		size_t len;
		int r = handle_text(x, &text, &len);
		return r < 0 ? r : text_read(text, len, buf, size, off);
	}
	}
	return -EBADF;
}

int mfs_exec_when_done(struct mfs_exec_handle *x, void (*fn)(void *arg), void *arg)
{
	if (x->file != MFS_EXEC_WAIT)
		return 1;
	struct mfs_dexec *d = x->d;
	pthread_mutex_lock(&d->mu);
	if (!d->running || d->abandoned) {
		pthread_mutex_unlock(&d->mu);
		return 1;
	}
	struct exec_waiter *w = malloc(sizeof(*w));
	if (!w) {
		pthread_mutex_unlock(&d->mu);
		return -ENOMEM;
	}
	*w = (struct exec_waiter){ .fn = fn, .arg = arg, .next = d->waiters };
	d->waiters = w;
	pthread_mutex_unlock(&d->mu);
	return 0;
}

bool mfs_exec_unpark(struct mfs_exec_handle *x, void *arg)
{
	struct mfs_dexec *d = x->d;
	bool found = false;
	pthread_mutex_lock(&d->mu);
	/* exec_main takes the whole list under mu: what is still here will not be called */
	for (struct exec_waiter **pp = &d->waiters; *pp; pp = &(*pp)->next)
		if ((*pp)->arg == arg) {
			struct exec_waiter *w = *pp;
			*pp = w->next;
			free(w);
			found = true;
			break;
		}
	pthread_mutex_unlock(&d->mu);
	return found;
}

void mfs_exec_release(struct mfs_exec_handle *x)
{
	handle_free(x);
}

int mfs_exec_getattr(struct mfs *fs, const struct mfs_node *n, struct stat *st)
{
	struct mfs_dexec *d = find(fs, n->name, n->exec_id);
	if (!d)
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	/* the owner and umask of the sandbox's files (kinds.c sandbox_file_stat) */
	st->st_uid = fs->opt.uid;
	st->st_gid = fs->opt.gid;
	st->st_blksize = 4096;
	pthread_mutex_lock(&d->mu);
	st->st_mtime = st->st_ctime = st->st_atime = (time_t)d->started_s;
	if (n->type == MFS_N_EXEC_DIR) {
		st->st_mode = S_IFDIR | (0555 & ~fs->opt.umask);
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | (0444 & ~fs->opt.umask);
		st->st_nlink = 1;
		if (n->exec_file == MFS_EXEC_STDOUT || n->exec_file == MFS_EXEC_STDERR)
			st->st_size = (off_t)d->len[n->exec_file == MFS_EXEC_STDERR];
		if (!d->running)
			st->st_mtime = (time_t)(d->started_s + d->duration_ms / 1000);
	}
	pthread_mutex_unlock(&d->mu);
	dexec_put(d);
	return 0;
}
