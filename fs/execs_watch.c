/*
 * execs_watch.c: a running detached exec watched. A thread per running job
 * (every WATCH_MS): the lock its monitor holds, the spools' sizes charged to
 * the spool budget (past the mount's or the sandbox's share the monitor is
 * told to stop spooling), and at the end the status the monitor wrote, its
 * output moved to its sandbox's kept allowance and its `wait` readers
 * answered. The threads are counted in execs->running; the mount's end
 * (execs.c) waits for them.
 */
#include "dexec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "log.h"

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
	pthread_mutex_lock(&fs->execs->lock);
	for (struct mfs_dexec *d = fs->execs->list; d; d = d->next) {
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
	pthread_mutex_unlock(&fs->execs->lock);
	if (!oldest)
		return false;
	log_info("exec %s of %s: its output is dropped to keep newer output (status says output_dropped)",
		 oldest->id, oldest->sandbox);
	drop_output(oldest);
	mfs_dexec_put(oldest);
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
		pthread_mutex_lock(&fs->execs->lock);
		bool stop = fs->execs->stop;
		if (!stop) {
			struct timespec until = mafsbx_monotonic_after_ms(WATCH_MS);
			pthread_cond_timedwait(&fs->execs->cv, &fs->execs->lock, &until);
		}
		pthread_mutex_unlock(&fs->execs->lock);
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
	/* The thread's reference goes before it is counted out: its last put
	 * gives back a share of the planes' spool budget, and once `running`
	 * is 0 the mount's end (mfs_execs_fini, then main.c) frees the planes
	 * and this module's state (TSan saw the put race mafsbx_planes_free). */
	mfs_dexec_put(d);
	pthread_mutex_lock(&fs->execs->lock);
	fs->execs->running--;
	pthread_cond_broadcast(&fs->execs->cv);
	pthread_mutex_unlock(&fs->execs->lock);
	return NULL;
}

int mfs_dexec_start_watch(struct mfs *fs, struct mfs_dexec *d, struct mafsbx_error *err)
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
	fs->execs->running++;
	return 0;
}

void mfs_dexec_adopt_ended(struct mfs *fs, struct mfs_dexec *d)
{
	d->running = true;   /* so that watch_output charges what the spools hold */
	watch_output(d);
	pthread_mutex_lock(&d->mu);
	read_end(d);
	pthread_mutex_unlock(&d->mu);
	keep_output(fs, d);
}
