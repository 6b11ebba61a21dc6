/*
 * janitor.c: the mount's background housekeeping: lifting freezes that were
 * left behind, and collecting what only grows with containers that are gone.
 *
 * Freezes. At start-up a dead mafsbx process may have left sandboxes paused;
 * and a running mount may fail to unpause (the engine did not answer in
 * time): the freezer then logs it, keeps its marker and calls us at once
 * (mafsbx_freezer_on_unpause_failure), so no polling. A recovery pass lifts
 * every freeze marked as ours with no live holder (mafsbx_freeze_recover
 * without include_foreign; every wait bounded). A pass that could not lift
 * everything (the engine still away) is retried with backoff, 0.5 s doubling
 * to 30 s, until one succeeds: a guest is never left frozen because the
 * engine was slow once.
 *
 * Garbage. The freezer's lock files (five per container ID under the
 * runtime directory) and the mount's per-sandbox lists of declared outputs
 * and files written (extras.c) and its detached execs' job files
 * (RUNDIR/jobs, fs/jobs.c) are dropped when the mount disposes of a
 * sandbox by name, but a container removed otherwise (a dispose by scope,
 * `mafsbx reap`, the Python host, `docker rm`) would leave them for ever. A collection pass at
 * start-up and every JANITOR_GC_MS (MAFSBX_TEST_JANITOR_GC_MS in tests)
 * lists every container once and drops what belongs to IDs that are gone,
 * each absence confirmed by an inspect (an acquire that completed after the
 * listing is not mistaken for a removal).
 */
#include "janitor.h"
#include "extras.h"
#include "jobs.h"
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "freeze.h"
#include "log.h"
#include "sandbox.h"

/* The janitor's own state: nothing outside this file reaches it. */
struct mfs_janitor {
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t lock;        /* guards wake, and the thread's sleep */
	pthread_cond_t cv;
	bool wake;                   /* an unpause failed: recover now (under lock) */
};

#define JANITOR_RECOVER_MS 5000   /* bound on one container's recovery */
#define JANITOR_RETRY_MIN_MS 500
#define JANITOR_RETRY_MAX_MS 30000
#define JANITOR_GC_MS (10 * 60 * 1000)
#ifdef MAFSBX_TEST_KNOBS   /* the test daemon only (fs/meson.build) */
#define JANITOR_GC_ENV "MAFSBX_TEST_JANITOR_GC_MS"
#endif

/* One recovery pass: 0 when nothing is left to lift, -1 when a retry is needed. */
static int recover_pass(struct mfs *fs)
{
	/* over a swarm the nodes' freezers hold the freezes: each node's engine is asked (swarm_thaw.c) */
	if (fs->cluster) {
		unsigned lifted = 0;
		struct mafsbx_error ce;
		mafsbx_error_clear(&ce);
		return mafsbx_sandbox_thaw_left(fs->backend, fs->opt.scope, &lifted, &ce) < 0 ? -1 : 0;
	}
	struct mafsbx_sandbox_info *a = NULL;
	size_t n = 0;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_sandbox_list(fs->backend, fs->opt.scope, &a, &n, &e) < 0) {
		log_warn("looking for freezes left behind: %s (will retry)", e.message);
		return -1;
	}
	int r = 0;
	for (size_t i = 0; i < n && !atomic_load(&fs->janitor->stop); i++) {
		if (!a[i].paused)
			continue;
		bool unpaused = false;
		mafsbx_error_clear(&e);
		if (mafsbx_freeze_recover(fs->fz, a[i].id, false, &unpaused, mafsbx_now_ms() + JANITOR_RECOVER_MS,
					  &e) < 0) {
			log_warn("%s: cannot lift a freeze left behind: %s (will retry)", a[i].name, e.message);
			r = -1;
		} else if (unpaused) {
			log_warn("%s: lifted a freeze left behind", a[i].name);
		}
	}
	mafsbx_sandbox_info_free_array(a, n);
	return r;
}

/* The IDs of one listing of every container, kept compactly and sorted. */
struct id_list {
	char (*id)[65];
	size_t n, cap;
};

static int id_add(json_t *c, void *ctx)
{
	struct id_list *l = ctx;
	const char *x = json_string_value(json_object_get(c, "Id"));
	if (!x)
		return 0;
	if (mafsbx_array_grow(&l->id, &l->cap, l->n + 1, sizeof(*l->id), 256, 0) < 0)
		return -ENOMEM;
	snprintf(l->id[l->n++], 65, "%s", x);
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp(a, b);
}

static bool id_listed(const struct id_list *l, const char *id)
{
	return l->n && bsearch(id, l->id, l->n, sizeof(*l->id), cmp_id) != NULL;
}

static bool id_listed_cb(const char *id, void *ctx)
{
	return id_listed(ctx, id);
}

/* Drop the file lists of sandboxes whose container is gone; how many were dropped. */
static unsigned collect_extras(struct mfs *fs, struct id_list *list)
{
	char (*gone)[65] = NULL;
	size_t n = 0;
	mfs_extras_unlisted(fs, id_listed_cb, list, &gone, &n);   /* out of memory: what it found */
	unsigned dropped = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *insp = NULL;
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		if (mafsbx_container_inspect(fs->engine, gone[i], &insp, &e) < 0 && e.kind == MAFSBX_EK_NO_CONTAINER) {
			mfs_extra_drop(fs, gone[i]);
			dropped++;
		}
		json_decref(insp);
	}
	free(gone);
	return dropped;
}

static void gc_pass(struct mfs *fs)
{
	/* the lock files of the manager's containers only: over a swarm the nodes' are in their own
	 * directories (src/cluster/nodeengine.c), which this pass must not sweep by the manager's list */
	if (fs->cluster)
		return;
	struct id_list list = { 0 };
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	/* Streamed: only the IDs are kept, however many containers the engine holds. */
	if (mafsbx_container_list_each(fs->engine, NULL, true, id_add, &list, &e) < 0) {
		log_debug("collecting leftovers of removed containers: %s", e.message);
		free(list.id);
		return;
	}
	if (list.n > 1)
		qsort(list.id, list.n, sizeof(*list.id), cmp_id);
	const char **ids = calloc(list.n ? list.n : 1, sizeof(*ids));
	if (!ids) {
		free(list.id);
		return;
	}
	for (size_t i = 0; i < list.n; i++)
		ids[i] = list.id[i];
	unsigned locks = 0;
	mafsbx_error_clear(&e);
	if (mafsbx_freezer_collect(fs->fz, ids, list.n, &locks, &e) < 0)
		log_warn("collecting freeze lock files: %s", e.message);
	unsigned lists = collect_extras(fs, &list);
	unsigned jobs = mfs_jobs_collect(fs, id_listed_cb, &list);
	/* warn level: rare (containers removed behind the mount's back), and what tests look for */
	if (locks || lists || jobs)
		log_warn("janitor: collected the freeze lock files of %u, the file lists of %u and the job files of "
			 "%u removed containers' jobs", locks, lists, jobs);
	free(ids);
	free(list.id);
}

static void janitor_free(struct mfs_janitor *j)
{
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

/* The freezer's failure callback: wake the janitor now. */
static void on_unpause_failure(void *ctx, const char *container)
{
	struct mfs *fs = ctx;
	(void)container;
	pthread_mutex_lock(&fs->janitor->lock);
	fs->janitor->wake = true;
	pthread_cond_broadcast(&fs->janitor->cv);
	pthread_mutex_unlock(&fs->janitor->lock);
}

static long gc_interval_ms(void)
{
#ifdef MAFSBX_TEST_KNOBS
	const char *v = getenv(JANITOR_GC_ENV);
	long ms = v && *v ? strtol(v, NULL, 10) : 0;
	if (ms > 0)
		return ms;
#endif
	return JANITOR_GC_MS;
}

static void *janitor_main(void *arg)
{
	struct mfs *fs = arg;
	long gc_ms = gc_interval_ms(), backoff = JANITOR_RETRY_MIN_MS;
	long long now = mafsbx_now_ms(), retry_at = 0, gc_at = now;
	bool pending = true; /* the start-up pass */
	pthread_mutex_lock(&fs->janitor->lock);
	while (!fs->janitor->stop) {
		now = mafsbx_now_ms();
		bool recover = fs->janitor->wake || (pending && now >= retry_at);
		bool gc = now >= gc_at;
		if (!recover && !gc) {
			long long until = gc_at;
			if (pending && retry_at < until)
				until = retry_at;
			struct timespec ts = mafsbx_monotonic_after_ms(until - now);
			pthread_cond_timedwait(&fs->janitor->cv, &fs->janitor->lock, &ts);
			continue;
		}
		if (recover && fs->janitor->wake) {
			/* a fresh failure: start the backoff over */
			fs->janitor->wake = false;
			backoff = JANITOR_RETRY_MIN_MS;
		}
		pthread_mutex_unlock(&fs->janitor->lock);
		if (recover) {
			if (recover_pass(fs) == 0) {
				pending = false;
				backoff = JANITOR_RETRY_MIN_MS;
			} else {
				pending = true;
				retry_at = mafsbx_now_ms() + backoff;
				backoff = backoff * 2 > JANITOR_RETRY_MAX_MS ? JANITOR_RETRY_MAX_MS : backoff * 2;
			}
		}
		if (gc && !atomic_load(&fs->janitor->stop)) {
			gc_pass(fs);
			gc_at = mafsbx_now_ms() + gc_ms;
		}
		pthread_mutex_lock(&fs->janitor->lock);
	}
	/* An unpause that failed in the last moments of the mount, or one still pending. */
	bool last = fs->janitor->wake || pending;
	pthread_mutex_unlock(&fs->janitor->lock);
	if (last) {
		atomic_store(&fs->janitor->stop, false);
		recover_pass(fs);
		atomic_store(&fs->janitor->stop, true);
	}
	return NULL;
}

int mfs_janitor_start(struct mfs *fs)
{
	struct mfs_janitor *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	mafsbx_cond_init_monotonic(&j->cv);
	atomic_init(&j->stop, false);
	fs->janitor = j;
	mafsbx_freezer_on_unpause_failure(fs->fz, on_unpause_failure, fs);
	int r = pthread_create(&j->thread, NULL, janitor_main, fs);
	if (r != 0) {
		mafsbx_freezer_on_unpause_failure(fs->fz, NULL, NULL);
		fs->janitor = NULL;
		janitor_free(j);
		return -r;
	}
	return 0;
}

void mfs_janitor_stop(struct mfs *fs)
{
	struct mfs_janitor *j = fs->janitor;
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	atomic_store(&j->stop, true);
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->lock);
	pthread_join(j->thread, NULL);
	mafsbx_freezer_on_unpause_failure(fs->fz, NULL, NULL);
	fs->janitor = NULL;
	janitor_free(j);
}
