/*
 * txn.h: the threads .ctl transactions run on (txn.c): a bounded queue and
 * up to `max` threads. The pool is lowlevel.c's (fs->txns); only the
 * kernel-facing files that hand it work include this.
 */
#ifndef MAFSBXFS_TXN_H
#define MAFSBXFS_TXN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* One job; `cancelled` when the mount ended before it ran (answer at once). */
typedef void (*mfs_txn_fn)(void *arg, bool cancelled);
struct mfs_txn_job;
struct mfs_txns {
	pthread_mutex_t mu;          /* guards everything below */
	pthread_cond_t work;         /* a job was queued, or stop */
	pthread_cond_t quiet;        /* nothing runs or waits any more */
	struct mfs_txn_job *head, *tail;
	size_t queued, max_queued;
	unsigned running, threads, max;
	pthread_t *tids;
	bool stop, ready;
};

int mfs_txns_init(struct mfs_txns *p, unsigned max, size_t max_queued);
/* Queue a job: 0, -EBUSY past max_queued waiting, -ESHUTDOWN after fini began. */
int mfs_txns_submit(struct mfs_txns *p, mfs_txn_fn fn, void *arg);
/* Stop: queued jobs run cancelled, running ones get `grace_ms`. true when
 * every thread was joined (false: some still run, left to the exit). */
bool mfs_txns_fini(struct mfs_txns *p, int grace_ms);

#endif
