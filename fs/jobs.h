/*
 * jobs.h: the daemon's side of job monitors (jobs.c): the mount's jobs
 * directory (RUNDIR/jobs), a job's files made and removed, its monitor
 * started, and the jobs an earlier daemon left found. The directory's
 * descriptor is jobs.c's own (struct mfs_jobs).
 */
#ifndef MAFSBXFS_JOBS_H
#define MAFSBXFS_JOBS_H

#include <stdbool.h>

struct mfs;
struct mafsbx_error;
struct mafsbx_exec_spec;
struct mafsbx_job_meta;

/* argv[1] of a job monitor: mafsbxfs --job-monitor DIR (fs/main.c) */
#define MFS_JOB_MONITOR_VERB "--job-monitor"

/* RUNDIR/jobs opened (made if need be); -1 when not (detached execs are then refused). */
int mfs_jobs_open(struct mfs *fs);
void mfs_jobs_close(struct mfs *fs);
/* What takes over a job found at start (execs.c's mfs_exec_adopt); it takes dfd. */
typedef void (*mfs_job_adopt_fn)(struct mfs *fs, int dfd, const struct mafsbx_job_meta *m);
/* At mount start: every job of this engine and scope found there, handed to `adopt`. */
void mfs_jobs_adopt(struct mfs *fs, mfs_job_adopt_fn adopt);
/* The janitor's collection: the files of this engine's jobs whose container
 * is not listed (listed(id, ctx) false), is confirmed gone and has no
 * monitor left, removed; how many. */
unsigned mfs_jobs_collect(struct mfs *fs, bool (*listed)(const char *id, void *ctx), void *ctx);
/* The job's directory made and its monitor started: the directory's fd, or -errno with err. */
int mfs_job_start(struct mfs *fs, const struct mafsbx_job_meta *m, const struct mafsbx_exec_spec *spec,
		  struct mafsbx_error *err);
/* A job's files removed (its exec forgotten). */
void mfs_job_forget(struct mfs *fs, const char *container, const char *job);
/* Every job of a disposed container removed. */
void mfs_jobs_forget_container(struct mfs *fs, const char *container);

#endif
