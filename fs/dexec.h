/*
 * dexec.h: the detached execs' own state, shared by the files that
 * make up the module and by nothing else: dexec.c (one exec: its last
 * reference, the wait for its end), execs.c (the registry: launch,
 * adoption, listing, the end of the mount), execs_watch.c (the thread that
 * watches a running job), execs_cancel.c (rmdir NAME/execs/ID) and
 * execs_files.c (the NAME/execs/ID/ files). Other files see execs.h only.
 *
 * Locks: execs->lock guards the list, the running count and stop; each
 * exec's `mu` its state and output lengths. Never both at once except
 * list, then exec (eviction reads `running`).
 */
#ifndef MAFSBXFS_DEXEC_H
#define MAFSBXFS_DEXEC_H

#include "mfs.h"

#define WATCH_MS 200

/* The mount's detached execs (fs->execs, made by mfs_execs_init). */
struct mfs_execs {
	pthread_mutex_t lock;        /* guards everything below */
	pthread_cond_t cv;           /* a detached exec's thread ended, or stop */
	struct mfs_dexec *list;      /* newest first */
	unsigned running;            /* watch threads running */
	bool stop;                   /* the mount ends: no new exec, watches end */
};

struct exec_waiter {
	void (*fn)(void *arg);
	void *arg;
	struct exec_waiter *next;
};

struct mfs_dexec {
	struct mfs_dexec *next;      /* fs->execs->list, newest first (its lock) */
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

/* One reference fewer; the last frees the exec (its descriptors, its share of the spool budget) (dexec.c). */
void mfs_dexec_put(struct mfs_dexec *d);
/* The exec `id` of `sandbox`, referenced, or NULL (execs.c). */
struct mfs_dexec *mfs_dexec_find(struct mfs *fs, const char *sandbox, const char *id);
/* With execs->lock held: the job's watching thread started (execs_watch.c). */
int mfs_dexec_start_watch(struct mfs *fs, struct mfs_dexec *d, struct mafsbx_error *err);
/* A finished (or lost) job found at start: its end read, its output kept (execs_watch.c). */
void mfs_dexec_adopt_ended(struct mfs *fs, struct mfs_dexec *d);
/* With d->mu held: until the command ended (or the mount ends) or `ms`
 * passed. true when it ended (dexec.c). */
bool mfs_dexec_wait_end(struct mfs_dexec *d, long long ms);

#endif
