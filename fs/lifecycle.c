/*
 * lifecycle.c: the start and the end of one mount's state (struct mfs):
 * what main.c, or a unit test, sets up before the first request and takes
 * down after the last. It stands above the modules whose state it starts
 * and ends (the detached execs, the open handles, passthrough, the sandbox
 * list), so that none of them, and not mount.c at the bottom, calls up to
 * another's teardown.
 */
#include "execs.h"
#include "extras.h"
#include "mfs.h"
#include "mount.h"
#include "passthrough.h"

#include <errno.h>
#include <string.h>

#include "names.h"

int mfs_init(struct mfs *fs)
{
	pthread_mutex_init(&fs->lock, NULL);
	fs->mount_time = time(NULL);
	fs->snap = NULL;
	fs->extras = NULL;
	/* Transactions run on their own threads (txn.c), as many as this. */
	fs->requests_max = (int)(fs->opt.max_requests ? fs->opt.max_requests : MFS_DEFAULT_MAX_REQUESTS);
	if (mfs_execs_init(fs) < 0) {
		pthread_mutex_destroy(&fs->lock);
		return -ENOMEM;
	}
	if (mfs_handles_init(fs) < 0) {
		mfs_execs_fini(fs);
		pthread_mutex_destroy(&fs->lock);
		return -ENOMEM;
	}
	fs->scope_label[0] = '\0';
	if (fs->opt.scope)
		mafsbx_label_value(fs->opt.scope, fs->scope_label);
	return 0;
}

void mfs_fini(struct mfs *fs)
{
	mfs_execs_fini(fs);   /* before the handles: a `wait` reader is answered first */
	mfs_handles_discard_all(fs);
	mfs_passthrough_fini(fs);
	mfs_handles_fini(fs);
	mfs_list_clear(fs);
	mfs_extras_clear(fs);
	pthread_mutex_destroy(&fs->lock);
}
