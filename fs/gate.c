/*
 * gate.c: exec turns, so that a steady stream of reads cannot starve an
 * exec of the same sandbox.
 *
 * Reads, stats and writes under work/ take the container's shared freeze,
 * and a freeze that is held is joined rather than queued behind: with
 * readers arriving back to back it may never lift. An exec cannot start
 * while the container is paused, so it would wait until its timeout (and
 * an exec timeout disposes the sandbox). So an exec announces itself here;
 * file operations of this mount on that container then hold back (bounded)
 * while the exec waits for the freeze to drain, and for a short window
 * after it drained, in which the exec is created and started (a freeze must
 * never begin while the engine starts an exec: see GATE_WINDOW_MS). Once
 * started, an exec does not mind being paused by a later freeze, so file
 * operations flow again for the rest of its run. An acquire that reuses a
 * sandbox takes a turn too: its capability probes are execs.
 */
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "freeze.h"

/* After the freeze drained: the exec's turn to be created and started. It
 * must be generous: a freeze that begins while the engine starts an exec
 * freezes the exec's `runc init` as it joins the container's cgroup, and the
 * engine then hangs on that container (exec, unpause, inspect) until the
 * cgroup is thawed by hand. */
#define GATE_WINDOW_MS 5000
#define GATE_MAX_WAIT_MS 30000  /* the most a file operation holds back */
#define GATE_POLL_MS 20

struct mfs_exec_turn {
	char id[65];
	long long go_ms;             /* 0: waiting for the freeze to drain */
	struct mfs_exec_turn *next;
};

static void timed_wait(struct mfs *fs, long long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (ms % 1000) * 1000000L;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&fs->gate_cv, &fs->gate_lock, &ts);
}

struct mfs_exec_turn *mfs_gate_exec_begin(struct mfs *fs, const char *id)
{
	struct mfs_exec_turn *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	snprintf(t->id, sizeof(t->id), "%s", id);
	pthread_mutex_lock(&fs->gate_lock);
	t->next = fs->turns;
	fs->turns = t;
	pthread_mutex_unlock(&fs->gate_lock);
	if (fs->fz) {
		/* Readers now hold back, so the freeze drains. */
		mafsbx_freeze_wait_idle(fs->fz, id, mafsbx_now_ms() + GATE_MAX_WAIT_MS, NULL);
	}
	pthread_mutex_lock(&fs->gate_lock);
	t->go_ms = mafsbx_now_ms();
	pthread_cond_broadcast(&fs->gate_cv);
	pthread_mutex_unlock(&fs->gate_lock);
	return t;
}

void mfs_gate_exec_end(struct mfs *fs, struct mfs_exec_turn *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&fs->gate_lock);
	for (struct mfs_exec_turn **pp = &fs->turns; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	pthread_cond_broadcast(&fs->gate_cv);
	pthread_mutex_unlock(&fs->gate_lock);
	free(t);
}

/* Must be called under gate_lock: is an exec of `id` waiting for its turn? */
static bool exec_pending(struct mfs *fs, const char *id, long long now)
{
	for (struct mfs_exec_turn *t = fs->turns; t; t = t->next) {
		if (strcmp(t->id, id))
			continue;
		if (!t->go_ms || now - t->go_ms < GATE_WINDOW_MS)
			return true;
	}
	return false;
}

void mfs_gate_file_op(struct mfs *fs, const char *id)
{
	long long until = mafsbx_now_ms() + GATE_MAX_WAIT_MS;
	pthread_mutex_lock(&fs->gate_lock);
	for (;;) {
		long long now = mafsbx_now_ms();
		if (now >= until || !exec_pending(fs, id, now))
			break;
		timed_wait(fs, GATE_POLL_MS * 5);
	}
	pthread_mutex_unlock(&fs->gate_lock);
}
