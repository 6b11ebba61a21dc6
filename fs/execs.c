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
 * Locks: fs->execs->lock guards the list and the running count; each exec's
 * `mu` its state and output lengths. Never both at once except list, then
 * exec (eviction reads `running`).
 */
#include "dexec.h"
#include "execs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "jobs.h"
#include "log.h"
#include "sandbox.h"
#include "spec.h"

#define SHUTDOWN_WAIT_MS 10000

struct mfs_dexec *mfs_dexec_find(struct mfs *fs, const char *sandbox, const char *id)
{
	struct mfs_dexec *found = NULL;
	pthread_mutex_lock(&fs->execs->lock);
	for (struct mfs_dexec *d = fs->execs->list; d; d = d->next)
		if (!strcmp(d->id, id) && !strcmp(d->sandbox, sandbox)) {
			found = d;
			atomic_fetch_add(&d->refs, 1);
			break;
		}
	pthread_mutex_unlock(&fs->execs->lock);
	return found;
}

/* ---- the registry ---------------------------------------------------------- */

int mfs_execs_init(struct mfs *fs)
{
	struct mfs_execs *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	pthread_mutex_init(&x->lock, NULL);
	mafsbx_cond_init_monotonic(&x->cv);
	fs->execs = x;
	return 0;
}

/* With execs->lock held: room for one more exec of `sandbox` (the oldest
 * finished one forgotten if need be). 0, or -EBUSY with the message. */
static int make_room(struct mfs *fs, const char *sandbox, bool to_run, struct mafsbx_error *err)
{
	if (to_run && fs->execs->running >= MFS_EXECS_RUNNING)
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EBUSY, "RuntimeError",
					     "exec: %d detached execs are running on this mount, the most it allows",
					     MFS_EXECS_RUNNING);
	unsigned n = 0, total = 0;
	struct mfs_dexec **oldest = NULL, **oldest_any = NULL;
	for (struct mfs_dexec **pp = &fs->execs->list; *pp; pp = &(*pp)->next) {
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
	mfs_dexec_put(gone);
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

/* With execs->lock held: into the list, newest first by start. */
static void list_insert(struct mfs *fs, struct mfs_dexec *d)
{
	struct mfs_dexec **pp = &fs->execs->list;
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

/* With execs->lock held: the job made, its monitor started, its watch too. */
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
		r = mfs_dexec_start_watch(fs, d, err);
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
		pthread_mutex_lock(&fs->execs->lock);
		r = fs->execs->stop ? mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, ESHUTDOWN, NULL, "exec: the mount is ending")
				   : make_room(fs, spec->sandbox, true, err);
		if (r == 0)
			r = launch(fs, d, spec, err);
		pthread_mutex_unlock(&fs->execs->lock);
	}
	mafsbx_exec_spec_free(spec);   /* the job's spec file is the monitor's copy */
	if (r < 0) {
		mfs_dexec_put(d);
		return r;
	}
	char path[128];
	snprintf(path, sizeof(path), "%s/execs/%s", d->sandbox, d->id);
	*reply = json_pack("{s:b, s:s, s:s}", "ok", 1, "exec", d->id, "path", path);
	return *reply ? 0 : mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
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
		mfs_dexec_adopt_ended(fs, d);
	pthread_mutex_lock(&fs->execs->lock);
	if (r == 0)
		r = make_room(fs, d->sandbox, alive, &e);
	d->running = alive;
	if (r == 0 && alive)
		r = mfs_dexec_start_watch(fs, d, &e);
	if (r == 0)
		list_insert(fs, d);
	pthread_mutex_unlock(&fs->execs->lock);
	if (r < 0) {
		log_warn("job %s of %s: not adopted (%s); its files stay", m->job, m->sandbox,
			 e.err ? e.message : strerror(-r));
		mfs_dexec_put(d);
		return;
	}
	log_info("job %s of %s adopted (%s)", d->id, d->sandbox, alive ? "running" : d->lost ? "lost" : "finished");
}

bool mfs_exec_exists(struct mfs *fs, const char *sandbox, const char *id)
{
	struct mfs_dexec *d = mfs_dexec_find(fs, sandbox, id);
	mfs_dexec_put(d);
	return d != NULL;
}

int mfs_execs_list(struct mfs *fs, const char *sandbox, void *buf, fuse_fill_dir_t filler)
{
	mfs_dir_entry(buf, filler, ".", S_IFDIR);
	mfs_dir_entry(buf, filler, "..", S_IFDIR);
	pthread_mutex_lock(&fs->execs->lock);
	for (struct mfs_dexec *d = fs->execs->list; d; d = d->next)
		if (!strcmp(d->sandbox, sandbox) && mfs_dir_entry(buf, filler, d->id, S_IFDIR) != 0)
			break;
	pthread_mutex_unlock(&fs->execs->lock);
	return 0;
}

bool mfs_execs_fini(struct mfs *fs)
{
	struct mfs_execs *x = fs->execs;
	if (!x)
		return true;
	/* Jobs still running outlive the mount: their monitors go on, the next
	 * mount adopts them. Only the threads watching them end here. */
	pthread_mutex_lock(&fs->execs->lock);
	fs->execs->stop = true;
	pthread_cond_broadcast(&fs->execs->cv);
	if (fs->execs->running)
		log_info("%u job(s) run on after the mount; the next mount adopts them", fs->execs->running);
	struct timespec until = mafsbx_monotonic_after_ms(SHUTDOWN_WAIT_MS);
	while (fs->execs->running && pthread_cond_timedwait(&fs->execs->cv, &fs->execs->lock, &until) != ETIMEDOUT)
		;
	bool quiet = fs->execs->running == 0;
	struct mfs_dexec *list = quiet ? fs->execs->list : NULL;
	if (quiet)
		fs->execs->list = NULL;
	pthread_mutex_unlock(&fs->execs->lock);
	if (!quiet) {
		log_warn("%u detached exec watch(es) still running at the end of the mount", fs->execs->running);
		return false;   /* their threads still use the list and the mount: left to the exit */
	}
	while (list) {
		struct mfs_dexec *next = list->next;
		mfs_dexec_put(list);
		list = next;
	}
	pthread_cond_destroy(&x->cv);
	pthread_mutex_destroy(&x->lock);
	free(x);
	fs->execs = NULL;
	return true;
}
