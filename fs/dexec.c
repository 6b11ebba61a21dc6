/*
 * dexec.c: one detached exec as an object (struct mfs_dexec, dexec.h): its
 * last reference frees it, and a thread may wait for its command's end.
 * The bottom of the execs files: execs.c, execs_watch.c, execs_cancel.c
 * and execs_files.c call here, this file calls none of them.
 */
#include "dexec.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

void mfs_dexec_put(struct mfs_dexec *d)
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

bool mfs_dexec_wait_end(struct mfs_dexec *d, long long ms)
{
	struct timespec until = mafsbx_monotonic_after_ms(ms);
	while (d->running && !d->abandoned && pthread_cond_timedwait(&d->ended, &d->mu, &until) != ETIMEDOUT)
		;
	return !d->running;
}

