/*
 * job.h: a detached exec held by a monitor process of its own (the shape of
 * conmon and containerd's shims; doc/protocol.md "Jobs that outlive the
 * daemon"). A job is a directory, RUNDIR/jobs/CONTAINER-ID/JOB-ID/ (0700,
 * files 0600, the daemon's uid), that the daemon makes and the monitor fills:
 *
 *   meta     the daemon's: job, sandbox, container, endpoint, scope, start, caps
 *   spec     the daemon's: the exec request as parsed (argv, env, cwd, user, stdin, timeout)
 *   lock     flock(LOCK_EX) held by the monitor for as long as it lives
 *   stdout   the spools, appended by the monitor only
 *   stderr
 *   exec     the monitor's, once the engine made the exec: its engine ID
 *   status   the monitor's, once the command ended: exit code, timed out, truncation
 *   stop     the daemon's: past the mount's or the sandbox's spool budget, spool no more
 *   cancelled the daemon's: a cancel was asked (so an adopting daemon says so)
 *   log      the monitor's stderr
 *
 * A job is running while its lock is held, finished once `status` exists,
 * and lost when neither (its monitor died: what was spooled stays). This
 * file owns the format: reading and writing those files, and whether the
 * lock is held. FUSE-free; the daemon (fs/jobs.c) and the monitor
 * (monitor.c) both speak it.
 */
#ifndef MAFSBX_JOB_H
#define MAFSBX_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "spec.h"

#define MAFSBX_JOB_VERSION 1
#define MAFSBX_JOB_ID_MAX 32
/* the monitor stops spooling when the runtime directory's file system has
 * less than this free (a job must never fill /run) */
#define MAFSBX_JOB_DISK_FLOOR (64ull << 20)

struct mafsbx_job_meta {
	char job[MAFSBX_JOB_ID_MAX + 1];
	char sandbox[64];
	char container[65];
	char endpoint[1024];         /* the engine's URL (mafsbx_endpoint.url) */
	bool cluster;                /* that engine is a swarm's manager (-o cluster=swarm): the
				      * monitor runs the exec on the task's node (sandbox.h mafsbx_backend_serving) */
	char scope[64];              /* the mount's scope label ("": unscoped) */
	long long started_s;         /* wall clock */
	uint64_t stream_cap;         /* bytes spooled per stream at most */
};

struct mafsbx_job_status {
	int exit_code;               /* -1: none (a failure, a timeout) */
	bool timed_out, disposed, launch_failed, truncated;
	long long duration_ms;
	struct mafsbx_error error;   /* err 0: the run did not fail */
};

/* RUNDIR/jobs: made 0700 (and checked to be this uid's). malloc'd, or NULL with err. */
char *mafsbx_jobs_dir(struct mafsbx_error *err);

int mafsbx_job_meta_write(int dirfd, const struct mafsbx_job_meta *m, struct mafsbx_error *err);
int mafsbx_job_meta_read(int dirfd, struct mafsbx_job_meta *m, struct mafsbx_error *err);
int mafsbx_job_spec_write(int dirfd, const struct mafsbx_exec_spec *s, struct mafsbx_error *err);
int mafsbx_job_spec_read(int dirfd, struct mafsbx_exec_spec **out, struct mafsbx_error *err);
int mafsbx_job_status_write(int dirfd, const struct mafsbx_job_status *st, struct mafsbx_error *err);
/* 0, -ENOENT when the command has not ended (no status), else an error. */
int mafsbx_job_status_read(int dirfd, struct mafsbx_job_status *st, struct mafsbx_error *err);
int mafsbx_job_exec_write(int dirfd, const char *exec_id, struct mafsbx_error *err);
/* The engine's exec ID, "" while the exec is not made. */
void mafsbx_job_exec_read(int dirfd, char exec_id[65]);
/* An empty marker file (stop, cancelled) made, or asked for. */
int mafsbx_job_mark(int dirfd, const char *name);
bool mafsbx_job_marked(int dirfd, const char *name);
/* Is some process (the monitor) holding the job's lock? */
bool mafsbx_job_alive(int dirfd);
/* Remove the job's files and its directory `name` under parentfd. */
int mafsbx_job_remove(int parentfd, const char *name);

/*
 * The monitor: run the job in `dir` (meta and spec there) to its end,
 * holding `lockfd` (its lock, locked by the daemon and inherited) all the
 * while, spooling the output and writing the status. Returns the process's
 * exit status. Never returns before the command ended or could not start.
 */
int mafsbx_job_monitor_main(const char *dir, int lockfd);

#endif
