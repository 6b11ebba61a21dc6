/*
 * execs_cancel.c: rmdir NAME/execs/ID. A running command is ended without
 * disposing the sandbox where the engine runs on this host: its process
 * tree and every process carrying its marker (its ID) are killed
 * (src/host/execkill.c: pidfds checked against the container's cgroup,
 * never its init). Over a swarm the same where the sandbox's node is this
 * host (kill_target). On a remote engine or node the sandbox is disposed,
 * as upstream does, and `status` says so. A finished exec is forgotten, its
 * job's files removed.
 */
#include "dexec.h"
#include "execs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "execkill.h"
#include "job.h"
#include "jobs.h"
#include "log.h"
#include "sandbox.h"

#define CANCEL_WAIT_MS 10000

/*
 * Where the exec's command can be killed from this host: the engine it ran
 * on and its container's full ID. On one engine, the mount's when it runs
 * here; over a swarm, the sandbox's node's when that node is this host (its
 * engine reached through a unix socket here, as the local plane decides:
 * src/plane/plane_route.c), the task's container. The kill's proofs
 * (execkill.c) still check every process against that container. false:
 * only a dispose ends the command.
 */
static bool kill_target(struct mfs *fs, const struct mfs_dexec *d, struct mafsbx_engine **e, char cid[65])
{
	if (!fs->cluster) {
		*e = fs->engine;
		snprintf(cid, 65, "%s", d->container_id);
		return fs->ep.scheme == MAFSBX_EP_UNIX;
	}
	struct mafsbx_serving sv;
	struct mafsbx_error se;
	mafsbx_error_clear(&se);
	if (mafsbx_backend_serving(fs->backend, d->sandbox, &sv, &se) < 0) {
		log_info("cancel of exec %s in %s: where it runs is not known (%s)", d->id, d->sandbox, se.message);
		return false;
	}
	if (!sv.local || !mafsbx_is_engine_id(sv.container))
		return false;
	*e = sv.engine;
	snprintf(cid, 65, "%s", sv.container);
	return true;
}

/* A remote engine's cancel: the sandbox disposed, as upstream does. */
static int cancel_dispose(struct mfs *fs, struct mfs_dexec *d, struct mafsbx_error *err)
{
	struct mafsbx_dispose_result dr;
	int r = mafsbx_sandbox_dispose_id(fs->backend, d->sandbox, d->container_id, &dr, err);
	bool gone = r == 0 && dr.n_failures == 0;
	mafsbx_dispose_result_free(&dr);
	mfs_invalidate_sandbox(fs, d->sandbox);
	pthread_mutex_lock(&d->mu);
	d->disposed = gone;
	bool done = mfs_dexec_wait_end(d, CANCEL_WAIT_MS);
	pthread_mutex_unlock(&d->mu);
	if (!gone)
		return r < 0 ? r : mafsbx_error_set(err, MAFSBX_EK_ENGINE, "cancel: the sandbox could not be disposed");
	return done ? 0 : mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "cancel: the command did not end");
}

/* End a running command: its process tree killed here, else the sandbox
 * disposed. The same for a job this daemon started and one it adopted: the
 * engine's exec ID is the one its monitor recorded. */
static int cancel(struct mfs *fs, struct mfs_dexec *d, struct mafsbx_error *err)
{
	pthread_mutex_lock(&d->mu);
	d->cancelled = true;
	pthread_mutex_unlock(&d->mu);
	mafsbx_job_mark(d->dirfd, "cancelled");   /* an adopting daemon says so too */
	long long deadline = mafsbx_now_ms() + CANCEL_WAIT_MS;
	struct mafsbx_engine *ke = NULL;
	char kcid[65];
	bool dispose = !kill_target(fs, d, &ke, kcid);
	while (!dispose && mafsbx_now_ms() < deadline) {
		char eid[65];
		mafsbx_job_exec_read(d->dirfd, eid);
		pthread_mutex_lock(&d->mu);
		bool ended = !d->running;
		pthread_mutex_unlock(&d->mu);
		if (ended)
			return 0;
		struct mafsbx_error kerr;
		mafsbx_error_clear(&kerr);
		int killed = 0;
		/* not created yet, or not started yet (ESRCH): ask again shortly */
		/* its ID is its marker: the kill also takes what carries it (src/host/execmark.h) */
		if (eid[0] && mafsbx_exec_kill_tree_marked(ke, kcid, eid, d->id, &killed, &kerr) < 0 &&
		    kerr.err != ESRCH) {
			log_warn("cancel of exec %s in %s: cannot kill it here (%s); disposing the sandbox", d->id,
				 d->sandbox, kerr.message);
			dispose = true;
			break;
		}
		pthread_mutex_lock(&d->mu);
		bool done = mfs_dexec_wait_end(d, killed ? 2000 : 50);
		pthread_mutex_unlock(&d->mu);
		if (done)
			return 0;
	}
	if (dispose)
		return cancel_dispose(fs, d, err);
	return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "cancel of exec %s: the command did not end within %d s", d->id,
				CANCEL_WAIT_MS / 1000);
}

/* A lost job's command may still run, with no monitor to see its end: where
 * it can be, it is killed as a cancel kills (best effort: forgetting goes on). */
static void end_lost(struct mfs *fs, struct mfs_dexec *d)
{
	char eid[65];
	mafsbx_job_exec_read(d->dirfd, eid);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int killed = 0;
	struct mafsbx_engine *ke = NULL;
	char kcid[65];
	/* a remote engine or node: left to a dispose */
	if (eid[0] && kill_target(fs, d, &ke, kcid) &&
	    mafsbx_exec_kill_tree_marked(ke, kcid, eid, d->id, &killed, &e) < 0 && e.err != ESRCH)
		log_warn("exec %s of %s (lost): its command could not be killed: %s", d->id, d->sandbox, e.message);
}

int mfs_exec_remove(struct mfs *fs, const char *sandbox, const char *id, struct mafsbx_error *err)
{
	struct mfs_dexec *d = mfs_dexec_find(fs, sandbox, id);
	if (!d)
		return mafsbx_error_set(err, MAFSBX_EK_NO_PATH, "no detached exec %s of %s", id, sandbox);
	pthread_mutex_lock(&d->mu);
	bool running = d->running, lost = d->lost;
	pthread_mutex_unlock(&d->mu);
	int r = running ? cancel(fs, d, err) : 0;
	if (lost)
		end_lost(fs, d);
	if (r == 0) {
		bool mine = false;
		pthread_mutex_lock(&fs->execs->lock);
		for (struct mfs_dexec **pp = &fs->execs->list; *pp; pp = &(*pp)->next)
			if (*pp == d) {
				*pp = d->next;
				mine = true;
				break;
			}
		/* removed with the exec; under the lock, as a new job's directory is
		 * made: the container's directory never goes under a new job */
		if (mine)
			mfs_job_forget(fs, d->container_id, d->id);
		pthread_mutex_unlock(&fs->execs->lock);
		if (mine)
			mfs_dexec_put(d);   /* the list's */
	}
	mfs_dexec_put(d);
	return r;
}
