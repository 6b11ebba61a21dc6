/*
 * janitor.c: lifts freezes that were left behind, in the background.
 *
 * At start-up a dead mafsbx process may have left sandboxes paused; and a
 * running mount may fail to unpause (the engine did not answer in time):
 * the freezer then logs it, counts it and keeps its marker, so a later
 * recovery can lift it. This thread does that recovery: once at start-up
 * (after mounting, so a slow engine or another process's long freeze never
 * delays the mount), and again whenever the freezer counts a new failed
 * unpause. Only freezes marked as ours with no live holder are lifted
 * (mafsbx_freeze_recover without include_foreign); every wait is bounded.
 */
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "freeze.h"
#include "log.h"
#include "sandbox.h"

#define JANITOR_TICK_MS 2000
#define JANITOR_RECOVER_MS 5000   /* bound on one container's recovery */

static void recover_pass(struct mfs *fs)
{
	struct mafsbx_sandbox_info *a = NULL;
	size_t n = 0;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_sandbox_list(fs->backend, fs->opt.scope, &a, &n, &e) < 0) {
		log_warn("looking for freezes left behind: %s", e.message);
		return;
	}
	for (size_t i = 0; i < n && !atomic_load(&fs->janitor_stop); i++) {
		if (!a[i].paused)
			continue;
		bool unpaused = false;
		mafsbx_error_clear(&e);
		if (mafsbx_freeze_recover(fs->fz, a[i].id, false, &unpaused, mafsbx_now_ms() + JANITOR_RECOVER_MS,
					  &e) < 0)
			log_warn("%s: cannot lift a freeze left behind: %s", a[i].name, e.message);
		else if (unpaused)
			log_warn("%s: lifted a freeze left behind", a[i].name);
	}
	mafsbx_sandbox_info_free_array(a, n);
}

static void *janitor_main(void *arg)
{
	struct mfs *fs = arg;
	struct mafsbx_freeze_stats st;
	mafsbx_freezer_stats(fs->fz, &st);
	fs->janitor_seen = st.unpause_failures;
	bool first = true;
	pthread_mutex_lock(&fs->janitor_lock);
	while (!fs->janitor_stop) {
		if (!first) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += JANITOR_TICK_MS / 1000;
			pthread_cond_timedwait(&fs->janitor_cv, &fs->janitor_lock, &ts);
			if (fs->janitor_stop)
				break;
		}
		mafsbx_freezer_stats(fs->fz, &st);
		if (!first && st.unpause_failures == fs->janitor_seen)
			continue;
		fs->janitor_seen = st.unpause_failures;
		first = false;
		pthread_mutex_unlock(&fs->janitor_lock);
		recover_pass(fs);
		pthread_mutex_lock(&fs->janitor_lock);
	}
	pthread_mutex_unlock(&fs->janitor_lock);
	return NULL;
}

int mfs_janitor_start(struct mfs *fs)
{
	pthread_mutex_init(&fs->janitor_lock, NULL);
	pthread_cond_init(&fs->janitor_cv, NULL);
	atomic_store(&fs->janitor_stop, false);
	int r = pthread_create(&fs->janitor, NULL, janitor_main, fs);
	if (r != 0) {
		pthread_cond_destroy(&fs->janitor_cv);
		pthread_mutex_destroy(&fs->janitor_lock);
		return -r;
	}
	fs->janitor_running = true;
	return 0;
}

void mfs_janitor_stop(struct mfs *fs)
{
	if (!fs->janitor_running)
		return;
	pthread_mutex_lock(&fs->janitor_lock);
	atomic_store(&fs->janitor_stop, true);
	pthread_cond_broadcast(&fs->janitor_cv);
	pthread_mutex_unlock(&fs->janitor_lock);
	pthread_join(fs->janitor, NULL);
	/* An unpause that failed in the last moments of the mount. */
	struct mafsbx_freeze_stats st;
	mafsbx_freezer_stats(fs->fz, &st);
	if (st.unpause_failures != fs->janitor_seen) {
		atomic_store(&fs->janitor_stop, false);
		recover_pass(fs);
	}
	pthread_cond_destroy(&fs->janitor_cv);
	pthread_mutex_destroy(&fs->janitor_lock);
	fs->janitor_running = false;
}
