/*
 * jobs.c: the daemon's side of job monitors (src/sandbox/job.h,
 * doc/protocol.md "Jobs that outlive the daemon"). It owns the jobs
 * directory of the mount (RUNDIR/jobs), making a job's directory and
 * starting its monitor, removing a job with its exec or its sandbox, and,
 * at mount start, finding every job left by an earlier daemon for execs.c
 * to adopt (through the adopter it is handed: jobs.c calls nothing above it).
 *
 * A monitor is this very binary run as `mafsbxfs --job-monitor DIR`
 * (/proc/self/exe: nothing to find at run time, and a daemon whose file an
 * upgrade replaced still starts monitors of its own version), in a session
 * of its own and re-parented to init (fork, setsid, fork), so neither a
 * signal to the daemon's process group nor the daemon's death reaches it.
 * Its lock is taken here, before it exists, and handed down as fd 3: from
 * the first instant the job's lock is held exactly while a monitor lives.
 * Under systemd the unit needs KillMode=process (contrib/systemd) or a
 * restart of the unit kills every monitor in its cgroup.
 */
#include "jobs.h"
#include "mfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "log.h"
#include "sandbox.h"
#include "spec.h"

/* The jobs directory of the mount: jobs.c's own, nothing else reaches it. */
struct mfs_jobs {
	int fd;                      /* RUNDIR/jobs */
	char *dir;                   /* its path, for a monitor's argv and messages */
};

int mfs_jobs_open(struct mfs *fs)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	char *dir = mafsbx_jobs_dir(&e);
	int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) : -1;
	struct mfs_jobs *j = fd >= 0 ? malloc(sizeof(*j)) : NULL;
	if (!j) {
		log_warn("no jobs directory (%s): detached execs are refused",
			 !dir ? e.message : fd < 0 ? strerror(errno) : "out of memory");
		if (fd >= 0)
			close(fd);
		free(dir);
		return -1;
	}
	*j = (struct mfs_jobs){ .fd = fd, .dir = dir };
	fs->jobs = j;
	return 0;
}

void mfs_jobs_close(struct mfs *fs)
{
	struct mfs_jobs *j = fs->jobs;
	if (!j)
		return;
	close(j->fd);
	free(j->dir);
	free(j);
	fs->jobs = NULL;
}

/* Start the monitor of the job at `dir`, holding `lockfd` (locked). 0 or -errno. */
static int spawn_monitor(const char *dir, int lockfd)
{
	char logpath[PATH_MAX];
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	char *const argv[] = { "mafsbxfs", MFS_JOB_MONITOR_VERB, (char *)dir, NULL };
	pid_t a = fork();
	if (a < 0)
		return -errno;
	if (a == 0) {
		/* async-signal-safe calls only until the exec: the daemon has threads */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* no directory of the daemon's kept busy (a mount point's parent, a test's) */
		if (setsid() < 0 || chdir("/") < 0)
			_exit(126);
		pid_t b = fork();
		if (b != 0)
			_exit(b < 0 ? 126 : 0);
		int nul = open("/dev/null", O_RDWR);
		int lg = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(lg >= 0 ? lg : nul, 2) < 0)
			_exit(126);
		if (lockfd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(lockfd, 3) < 0)
			_exit(126);
		close_range(4, ~0u, 0);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int st;
	while (waitpid(a, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
}

/* The spools' file system has room for a new job. 0, or -ENOSPC with the message. */
static int room_on_disk(struct mfs *fs, struct mafsbx_error *err)
{
	struct statvfs sv;
	if (fstatvfs(fs->jobs->fd, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < MAFSBX_JOB_DISK_FLOOR)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, ENOSPC, "RuntimeError",
					     "exec: %s has under %llu MiB free for the output of jobs", fs->jobs->dir,
					     (unsigned long long)(MAFSBX_JOB_DISK_FLOOR >> 20));
	return 0;
}

/* Make the job's directory and files under CONTAINER/ID. Its fd, or -errno. */
static int make_dir(struct mfs *fs, const struct mafsbx_job_meta *m, const struct mafsbx_exec_spec *spec,
		    struct mafsbx_error *err)
{
	if (mkdirat(fs->jobs->fd, m->container, 0700) < 0 && errno != EEXIST)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "exec: cannot make its job directory: %s",
					     strerror(errno));
	__do_close int cfd = openat(fs->jobs->fd, m->container, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (cfd < 0 || mkdirat(cfd, m->job, 0700) < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "exec: cannot make its job directory: %s",
					     strerror(errno));
	int dfd = openat(cfd, m->job, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "exec: cannot open its job directory: %s",
					     strerror(errno));
	int r = mafsbx_job_meta_write(dfd, m, err);
	if (r == 0)
		r = mafsbx_job_spec_write(dfd, spec, err);
	for (int i = 0; r == 0 && i < 2; i++) {
		int fd = openat(dfd, i ? "stderr" : "stdout", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			r = mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "exec: cannot make its spool: %s",
						  strerror(errno));
		else
			close(fd);
	}
	if (r < 0) {
		close(dfd);
		mafsbx_job_remove(cfd, m->job);
		return r;
	}
	return dfd;
}

int mfs_job_start(struct mfs *fs, const struct mafsbx_job_meta *m, const struct mafsbx_exec_spec *spec,
		  struct mafsbx_error *err)
{
	if (!fs->jobs)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, ENOTSUP, NULL,
					     "exec: no jobs directory, so no detached exec (the daemon's log says why)");
	int r = room_on_disk(fs, err);
	if (r < 0)
		return r;
	int dfd = make_dir(fs, m, spec, err);
	if (dfd < 0)
		return dfd;
	__do_close int lockfd = openat(dfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/%s/%s", fs->jobs->dir, m->container, m->job);
	r = lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) < 0 ? -errno : spawn_monitor(dir, lockfd);
	if (r < 0) {
		close(dfd);
		mfs_job_forget(fs, m->container, m->job);
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, -r, NULL, "exec: cannot start its monitor: %s",
					     strerror(-r));
	}
	return dfd;
}

void mfs_job_forget(struct mfs *fs, const char *container, const char *job)
{
	if (!fs->jobs)
		return;
	__do_close int cfd = openat(fs->jobs->fd, container, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (cfd < 0)
		return;
	int r = mafsbx_job_remove(cfd, job);
	if (r < 0)
		log_warn("job %s of container %.12s: cannot remove its files: %s", job, container, strerror(-r));
	unlinkat(fs->jobs->fd, container, AT_REMOVEDIR);   /* the container's last job: its directory too */
}

void mfs_jobs_forget_container(struct mfs *fs, const char *container)
{
	if (!fs->jobs || !container[0] || strchr(container, '/') || container[0] == '.')
		return;
	__do_close int cfd = openat(fs->jobs->fd, container, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	DIR *d = cfd >= 0 ? fdopendir(cfd) : NULL;
	if (!d)
		return;
	cfd = -1;   /* the DIR's now */
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			mafsbx_job_remove(dirfd(d), de->d_name);
	closedir(d);
	unlinkat(fs->jobs->fd, container, AT_REMOVEDIR);
}

/* One job directory found at start: adopted, removed (its sandbox is gone
 * and no monitor holds it), or left for another mount. */
static void adopt_one(struct mfs *fs, int cfd, const char *name, mfs_job_adopt_fn adopt)
{
	int dfd = openat(cfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return;
	struct mafsbx_job_meta m;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_job_meta_read(dfd, &m, &e) < 0) {
		/* a daemon died between the directory and its meta: nothing ran */
		if (!mafsbx_job_alive(dfd))
			mafsbx_job_remove(cfd, name);
		close(dfd);
		return;
	}
	/* another engine's: not ours to judge */
	if (strcmp(m.endpoint, fs->ep.url) != 0 || strcmp(m.job, name) != 0) {
		close(dfd);
		return;
	}
	/* a sandbox disposed behind the daemons' backs (reap, another client):
	 * its ended jobs go, whichever mount made them. Over a swarm the job's
	 * "container" is the sandbox's service, which the manager knows */
	json_t *insp = NULL;
	mafsbx_error_clear(&e);
	int r = fs->cluster ? mafsbx_service_inspect(fs->engine, m.container, &insp, &e)
			    : mafsbx_container_inspect(fs->engine, m.container, &insp, &e);
	if (r < 0 && (e.kind == MAFSBX_EK_NO_CONTAINER || e.kind == MAFSBX_EK_NO_OBJECT) && !mafsbx_job_alive(dfd)) {
		log_info("job %s of %s: its sandbox is gone; its files are removed", m.job, m.sandbox);
		close(dfd);
		mafsbx_job_remove(cfd, name);
		return;
	}
	json_decref(insp);
	if (strcmp(m.scope, fs->scope_label) != 0) {
		close(dfd);   /* another scope's mount's: not shown here */
		return;
	}
	adopt(fs, dfd, &m);   /* takes dfd */
}

/* fn on every job directory under RUNDIR/jobs (cfd: its container's
 * directory); a container's directory left empty is removed. */
static void jobs_each(struct mfs *fs, void (*fn)(struct mfs *fs, int cfd, const char *name, void *ctx), void *ctx)
{
	if (!fs->jobs || !fs->engine)
		return;
	__do_close int jfd = openat(fs->jobs->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *top = jfd >= 0 ? fdopendir(jfd) : NULL;
	if (!top)
		return;
	jfd = -1;
	struct dirent *c;
	while ((c = readdir(top))) {
		if (c->d_name[0] == '.')
			continue;
		int cfd = openat(dirfd(top), c->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		DIR *jobs = cfd >= 0 ? fdopendir(cfd) : NULL;
		if (!jobs) {
			if (cfd >= 0)
				close(cfd);
			continue;
		}
		struct dirent *j;
		while ((j = readdir(jobs)))
			if (j->d_name[0] != '.')
				fn(fs, dirfd(jobs), j->d_name, ctx);
		closedir(jobs);
		unlinkat(dirfd(top), c->d_name, AT_REMOVEDIR);   /* empty now: gone, else it stays */
	}
	closedir(top);
}

struct adopt_ctx {
	mfs_job_adopt_fn adopt;
};

static void adopt_each(struct mfs *fs, int cfd, const char *name, void *ctx)
{
	struct adopt_ctx *ac = ctx;
	adopt_one(fs, cfd, name, ac->adopt);
}

void mfs_jobs_adopt(struct mfs *fs, mfs_job_adopt_fn adopt)
{
	struct adopt_ctx ac = { .adopt = adopt };
	jobs_each(fs, adopt_each, &ac);
}

struct collect_ctx {
	bool (*listed)(const char *id, void *ctx);
	void *ctx;
	unsigned removed;
};

/* One job for the janitor: removed when it is this engine's, its container
 * is not in the engine's list and an inspect confirms it gone (an acquire
 * after the listing is no removal), and no monitor holds it (a monitor of a
 * removed container ends soon; a later pass takes its files). */
static void collect_each(struct mfs *fs, int cfd, const char *name, void *arg)
{
	struct collect_ctx *cc = arg;
	__do_close int dfd = openat(cfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	struct mafsbx_job_meta m;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (dfd < 0 || mafsbx_job_meta_read(dfd, &m, &e) < 0)
		return;   /* no meta yet: a job being made, or one the next start judges */
	if (strcmp(m.endpoint, fs->ep.url) != 0 || strcmp(m.job, name) != 0 || cc->listed(m.container, cc->ctx) ||
	    mafsbx_job_alive(dfd))
		return;
	json_t *insp = NULL;
	int r = mafsbx_container_inspect(fs->engine, m.container, &insp, &e);
	json_decref(insp);
	if (r == 0 || e.kind != MAFSBX_EK_NO_CONTAINER)
		return;
	log_info("job %s of %s: its sandbox is gone; its files are removed", m.job, m.sandbox);
	close(move_fd(dfd));
	if (mafsbx_job_remove(cfd, name) == 0)
		cc->removed++;
}

unsigned mfs_jobs_collect(struct mfs *fs, bool (*listed)(const char *id, void *ctx), void *ctx)
{
	struct collect_ctx cc = { .listed = listed, .ctx = ctx };
	jobs_each(fs, collect_each, &cc);
	return cc.removed;
}
