/*
 * txn.c: the threads .ctl transactions run on. A write that completes a
 * request hands it here and its FUSE worker goes back to serving lookups,
 * stats and reads; the reply to the kernel is sent from the transaction's
 * thread when the work is done (fs/lowlevel.c). At most `max` run at once
 * (-o max_requests); past that a transaction waits its turn, first come
 * first served, in a queue of at most `max_queued` (then EBUSY: the only
 * refusal, for a host that has thousands of callers in flight at once).
 *
 * Threads are started on demand, up to `max`, after the daemon's fork (the
 * first transaction starts the first one) and live until the mount ends.
 * At the end, queued jobs are run with `cancelled` set (they answer at
 * once); running ones get a grace period to finish.
 */
#include "txn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "log.h"

struct mfs_txn_job {
	mfs_txn_fn fn;
	void *arg;
	struct mfs_txn_job *next;
};

int mfs_txns_init(struct mfs_txns *p, unsigned max, size_t max_queued)
{
	memset(p, 0, sizeof(*p));
	p->max = max ? max : 1;
	p->max_queued = max_queued;
	p->tids = calloc(p->max, sizeof(*p->tids));
	if (!p->tids)
		return -ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	mafsbx_cond_init_monotonic(&p->work);
	mafsbx_cond_init_monotonic(&p->quiet);
	p->ready = true;
	return 0;
}

static void *txn_main(void *arg)
{
	struct mfs_txns *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->work, &p->mu);
		struct mfs_txn_job *j = p->head;
		if (!j)
			break;   /* stop, and nothing queued */
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		p->queued--;
		p->running++;
		bool cancelled = p->stop;
		pthread_mutex_unlock(&p->mu);
		j->fn(j->arg, cancelled);
		free(j);
		pthread_mutex_lock(&p->mu);
		p->running--;
		if (!p->running && !p->head)
			pthread_cond_broadcast(&p->quiet);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int mfs_txns_submit(struct mfs_txns *p, mfs_txn_fn fn, void *arg)
{
	struct mfs_txn_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fn = fn;
	j->arg = arg;
	int r = 0;
	pthread_mutex_lock(&p->mu);
	if (p->stop) {
		r = -ESHUTDOWN;
		goto out;
	}
	if (p->queued >= p->max_queued) {
		r = -EBUSY;
		goto out;
	}
	/* A thread for it when every one we have is busy and the cap allows. */
	if (p->threads < p->max && p->running + p->queued >= p->threads) {
		int e = pthread_create(&p->tids[p->threads], NULL, txn_main, p);
		if (e == 0)
			p->threads++;
		else if (p->threads == 0)
			r = -e;
		else
			log_warn("cannot start a transaction thread (%s); %u serve", strerror(e), p->threads);
		if (r < 0)
			goto out;
	}
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	p->queued++;
	j = NULL;
	pthread_cond_signal(&p->work);
out:
	pthread_mutex_unlock(&p->mu);
	free(j);
	return r;
}

bool mfs_txns_fini(struct mfs_txns *p, int grace_ms)
{
	if (!p->ready)
		return true;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	struct timespec until = mafsbx_monotonic_after_ms(grace_ms);
	while ((p->running || p->head) && pthread_cond_timedwait(&p->quiet, &p->mu, &until) != ETIMEDOUT)
		;
	bool quiet = !p->running && !p->head;
	unsigned n = p->threads;
	pthread_mutex_unlock(&p->mu);
	if (!quiet) {
		/* Still running past the grace: the process is ending; their threads
		 * are left to the exit, and so is everything they hold. */
		log_warn("%u transaction(s) still running at the end of the mount", p->running);
		return false;
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(p->tids[i], NULL);
	free(p->tids);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->quiet);
	pthread_mutex_destroy(&p->mu);
	p->ready = false;
	return true;
}
