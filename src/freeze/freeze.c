/*
 * freeze.c: the shared, counted, cross-process container freeze (freeze.h),
 * and its mutual exclusion with the execs of the same container.
 *
 * Why execs and freezes exclude each other: on dockerd 20.10 + containerd
 * 1.6 (cgroup v1), an exec process that exits (or starts) while its container
 * is being paused wedges containerd's task for good. The dockerd log shows
 *   failed to delete process ... error="current process state: pausing,
 *   process must be stopped before deletion: failed precondition"
 * then "get state for <id>: context deadline exceeded", and from then on
 * every call taking that container's lock (inspect, pause, unpause, delete)
 * hangs and the guest stays FROZEN until dockerd is restarted. Our own file
 * calls (frozen stats and reads) overlapping our own execs were the trigger,
 * so a pause is never issued while an exec of ours is in flight (create,
 * start, stream, inspect), and an exec never starts inside a freeze.
 *
 * In one process, a table of entries (one per container being frozen) with a
 * state machine IDLE -> ENTERING -> HELD -> LEAVING -> IDLE (and RECOVERING):
 * threads arriving while an entry is HELD join it (count + 1); threads
 * arriving during a transition wait on the condition variable, bounded by
 * their deadline. Only the thread that moves an entry out of IDLE or into
 * LEAVING talks to the other processes and to the engine.
 *
 * Across processes, the freezer takes turns with execs through turns.h
 * (no engine there): the lock files of a container, under the runtime
 * directory, keyed by turns_of(), and the decision of who goes. A freeze
 * turn taken ALONE pauses (under the turn's gate); one that JOINED a freeze
 * in force reads the marker; the last turn out unpauses. The gate's content
 * is the marker: empty, or "pausing pid N" / "frozen pid N t=ANCHOR" while a
 * mafsbx freeze may be in force. flock locks die with their process, so a
 * SIGKILLed holder leaves the marker set and nobody inside: a freeze left by
 * a dead process, which enter() adopts and recover() unpauses. Waits for
 * another process re-check at least every 10 ms; changes in this process
 * wake them at once through a generation counter, so no wake-up is lost.
 */
#include "freeze.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cancel.h"
#include "clock.h"
#include "log.h"
#include "names.h"
#include "turns.h"

/* How long an enter waits on the condition variable before it looks at its caller's cancel flag again. */
#define CANCEL_POLL_MS 100

enum fstate { FS_IDLE, FS_ENTERING, FS_HELD, FS_LEAVING, FS_RECOVERING };

struct fentry {
	struct fentry *next;
	char *container;
	enum fstate state;
	unsigned count;
	unsigned waiters;
	struct mafsbx_turn turn; /* the freeze turn held (hold file) */
	long long held_since_ms;
	unsigned execs;          /* execs of this process registered (in flight) */
	bool frozen;             /* this process is inside a freeze (its pause issued, or joined) */
	bool poller;             /* a freeze enter is polling for the container's execs to end */
	enum mafsbx_turns_busy busy_why; /* the poller's last reason */
	long long anchor_ns;     /* the engine's time of the pause that started the freeze held (0: unknown) */
};

struct mafsbx_freezer {
	struct mafsbx_engine *engine;
	char *rundir;
	char ep_hash[17];
	long hold_ms;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fentry *entries;
	unsigned long long gen;  /* bumped (with a broadcast) on every change waiters care about */
	struct mafsbx_freeze_stats stats;
	void (*on_unpause_failure)(void *ctx, const char *container);
	void *on_unpause_failure_ctx;
	struct mafsbx_eclock *clock; /* the engine's clock (clock.h), under its own lock */
};

struct mafsbx_freeze {
	struct mafsbx_freezer *f;
	struct fentry *e;
	long long anchor_ns;     /* copied at enter: the pause this freeze rests on */
};

#ifdef MAFSBX_TEST_KNOBS
void (*mafsbx_freeze_test_before_verify)(const char *container, void *ctx);
void *mafsbx_freeze_test_before_verify_ctx;
#endif

struct mafsbx_freeze_exec {
	struct mafsbx_freezer *f;
	struct fentry *e;
	struct mafsbx_turn turn; /* the exec turn, held while the exec is in flight */
};

/* ---- helpers ------------------------------------------------------------ */

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static long long deadline_or_default(long long deadline_ms)
{
	return deadline_ms > 0 ? deadline_ms : mafsbx_now_ms() + MAFSBX_FREEZE_DEFAULT_WAIT_MS;
}

/*
 * The lock files of a container (turns.h). A full ID (64 hex) is random and
 * names one container on any engine, so it alone is the key: processes that
 * reach the same daemon through different endpoint spellings (a relay
 * socket, a context) still share one freeze. A name is only unique per
 * daemon, so it is keyed with the endpoint too.
 */
static int turns_of(const struct mafsbx_freezer *f, const char *container, struct mafsbx_turns *t,
		    struct mafsbx_error *err)
{
	char key[200];
	bool plain = strlen(container) <= 128 && container[0] != '.';
	for (const char *c = container; plain && *c; c++)
		plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
			*c == '_' || *c == '.' || *c == '-';
	if (mafsbx_is_engine_id(container))
		snprintf(key, sizeof(key), "%s", container);
	else if (plain)
		snprintf(key, sizeof(key), "%s-%s", f->ep_hash, container);
	else
		snprintf(key, sizeof(key), "%s-h%016llx", f->ep_hash, (unsigned long long)fnv1a(container));
	return mafsbx_turns_init(t, f->rundir, key, container, err);
}

static void read_marker(int fd, char *buf, size_t sz)
{
	ssize_t n = pread(fd, buf, sz - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
}

static void write_marker(int fd, const char *word)
{
	char buf[64];
	int n = word ? snprintf(buf, sizeof(buf), "%s pid %ld\n", word, (long)getpid()) : 0;
	if (ftruncate(fd, 0) < 0 || (n > 0 && pwrite(fd, buf, (size_t)n, 0) != n))
		log_warn("freeze: cannot write the freeze marker: %s", strerror(errno));
}

static bool not_paused_answer(const struct mafsbx_error *e)
{
	return e->kind == MAFSBX_EK_NO_CONTAINER || strstr(e->message, "is not paused") != NULL;
}

static void stat_add(struct mafsbx_freezer *f, uint64_t *field)
{
	pthread_mutex_lock(&f->mu);
	(*field)++;
	pthread_mutex_unlock(&f->mu);
}

/* A freeze of ours could not be lifted: count it and tell whoever retries (the mount's janitor). */
static void unpause_failed(struct mafsbx_freezer *f, const char *container)
{
	pthread_mutex_lock(&f->mu);
	f->stats.unpause_failures++;
	void (*fn)(void *, const char *) = f->on_unpause_failure;
	void *ctx = f->on_unpause_failure_ctx;
	pthread_mutex_unlock(&f->mu);
	if (fn)
		fn(ctx, container);
}

/* Mutex held: wake every waiter and tell pollers something changed. */
static void bump(struct mafsbx_freezer *f)
{
	f->gen++;
	pthread_cond_broadcast(&f->cv);
}

/*
 * A pause of ours is about to be issued (or a freeze joined): the debug
 * check that no exec of this process is registered. Both sides decide under
 * the gate, so exec_overlaps counts a broken protocol, never a race.
 */
static void mark_frozen(struct mafsbx_freezer *f, struct fentry *e, bool frozen)
{
	pthread_mutex_lock(&f->mu);
	if (frozen && e->execs) {
		f->stats.exec_overlaps++;
		log_warn("freeze: BUG: pausing %s while %u exec(s) of this process are in flight", e->container,
			 e->execs);
	}
	e->frozen = frozen;
	pthread_mutex_unlock(&f->mu);
}

/*
 * dockerd (20.10) keeps `Paused` twice: set synchronously by pause/unpause,
 * and again, asynchronously, from containerd's paused/resumed events. Under
 * fast pause/unpause cycles a late event flips it, so for a few
 * milliseconds the daemon can answer "is not paused" about a frozen
 * container, "already paused" about a running one, or 500 "cannot pause a
 * paused container". Hence: only a 204 to our own pause counts as a freeze;
 * an uncertain pause keeps the claim and is retried; an "is not paused" for
 * a freeze we made is retried before it is believed.
 */
static const long backoff_ms[] = { 5, 10, 20, 40, 80, 160, 320, 500 };

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

bool mafsbx_freeze_unpause_moot(const struct mafsbx_error *unpause_err, const json_t *inspect,
				const struct mafsbx_error *inspect_err)
{
	if (unpause_err && (unpause_err->kind == MAFSBX_EK_NO_CONTAINER || unpause_err->kind == MAFSBX_EK_NOT_RUNNING ||
			    strstr(unpause_err->message, "cannot resume a stopped container")))
		return true;
	if (!inspect)
		return inspect_err && inspect_err->kind == MAFSBX_EK_NO_CONTAINER;
	/* dockerd may still say Paused for a task that runc already stopped (its
	 * own kill resumes it): Running false, or a status past running, decides. */
	const json_t *state = json_object_get(inspect, "State");
	const char *status = json_string_value(json_object_get(state, "Status"));
	if (status && (!strcmp(status, "exited") || !strcmp(status, "dead") || !strcmp(status, "removing") ||
		       !strcmp(status, "created")))
		return true;
	const json_t *running = json_object_get(state, "Running");
	return json_is_false(running);
}

enum thaw_result { THAWED, NOT_PAUSED, GONE, THAW_FAILED };

/* Unpause a freeze this process (or a dead mafsbx process) made. Never raises. */
static enum thaw_result thaw_owned(struct mafsbx_freezer *f, const char *container, const char *why)
{
	struct mafsbx_error e;
	for (size_t i = 0;; i++) {
		mafsbx_error_clear(&e);
		if (mafsbx_container_unpause(f->engine, container, &e) == 0) {
			stat_add(f, &f->stats.unpauses);
			return THAWED;
		}
		if (e.kind == MAFSBX_EK_NO_CONTAINER)
			return GONE;
		if (!strstr(e.message, "is not paused"))
			break;
		if (i == MAFSBX_ARRAY_SIZE(backoff_ms))
			return NOT_PAUSED;
		sleep_ms(backoff_ms[i]);
	}
	/* A container stopped or removed meanwhile (a dispose while a burst's
	 * freeze lingered) has no freeze left to lift: neither a warning nor a
	 * background retry is due. One inspect tells. */
	json_t *j = NULL;
	struct mafsbx_error ie;
	mafsbx_error_clear(&ie);
	bool moot = mafsbx_freeze_unpause_moot(
		&e, mafsbx_container_inspect(f->engine, container, &j, &ie) == 0 ? j : NULL, &ie);
	json_decref(j);
	if (moot) {
		log_debug("freeze: %s is stopped or gone; its freeze needs no unpause (%s)", container, e.message);
		return GONE;
	}
	log_warn("could not unpause %s (%s): %s; retried in the background (or by `mafsbx thaw`)", container, why,
		 e.message);
	unpause_failed(f, container);
	return THAW_FAILED;
}

enum pause_result { PAUSED_BY_US, ALREADY_PAUSED, PAUSE_REFUSED, PAUSE_UNCERTAIN };

/*
 * One pause, retried while its outcome is uncertain (5xx, no answer).
 * PAUSE_REFUSED: the daemon refused before acting (4xx): nothing was frozen.
 */
static enum pause_result pause_once(struct mafsbx_freezer *f, struct fentry *e, long long deadline_ms,
				    bool *uncertain_seen, struct mafsbx_error *pe)
{
	const char *container = e->container;
	for (size_t i = 0;; i++) {
		if (i > 0)
			*uncertain_seen = true;
		mafsbx_error_clear(pe);
		mark_frozen(f, e, true);
		if (mafsbx_container_pause(f->engine, container, pe) == 0) {
			stat_add(f, &f->stats.pauses);
			return PAUSED_BY_US;
		}
		/* dockerd: 409 "Container ID is already paused"; Podman (from its own state, under the
		 * container's lock): 500 "\"ID\" is already paused: container state improper" */
		if ((pe->http_status == 409 || pe->http_status == 500) && strstr(pe->message, "is already paused"))
			return ALREADY_PAUSED;
		/* 4xx, a container not running (Podman's 500: error.c), or an engine that can never pause
		 * (no cgroups: error.c): nothing was frozen */
		if ((pe->http_status >= 400 && pe->http_status < 500) || pe->kind == MAFSBX_EK_UNSUPPORTED ||
		    pe->kind == MAFSBX_EK_NOT_RUNNING)
			return PAUSE_REFUSED;
		if (i == MAFSBX_ARRAY_SIZE(backoff_ms) || mafsbx_now_ms() + backoff_ms[i] > deadline_ms)
			return PAUSE_UNCERTAIN;
		sleep_ms(backoff_ms[i]);
	}
}

/* ---- the proof that a freeze held ---------------------------------------- */

/*
 * Another process (another mount, another runtime directory, the Python
 * host, `docker unpause`) can lift a freeze without going through our
 * locks. A container's paused flag seen after a transfer proves nothing (it
 * may have been unpaused and paused again meanwhile), so the proof is the
 * engine's own event log: the pause that started the freeze (its timeNano,
 * the "anchor", found once right after the 204 and written into the marker
 * for cross-process joiners), and no pause, unpause or die event of the
 * container after it up to the end of the transfer. The anchor itself must
 * still be in the engine's ring of recent events, which proves the log is
 * complete since then. The events are read by time in the engine's clock,
 * from before our pause to a time certainly past the present: clock.h keeps
 * bounds on it, the tightest from our own pauses' events.
 */
#define ANCHOR_SLACK_NS (100LL * 1000000LL)       /* before the engine time taken just ahead of the pause */
#define PRIOR_WINDOW_NS (2LL * 1000000000LL)   /* an unpause this close before our pause may still echo */
#define ECHO_WINDOW_NS (1LL * 1000000000LL)    /* and its echo comes within this after our pause */

static json_t *freeze_event_filter(const char *container)
{
	return json_pack("{s:[s], s:[s], s:[s,s,s]}", "container", container, "type", "container", "event", "pause",
			 "unpause", "die");
}

/*
 * The earliest engine time our coming pause can carry: a lower bound of the
 * engine's present, less a slack. 0: unknown (find_anchor then reads the
 * whole ring).
 */
static long long engine_before_pause_ns(struct mafsbx_freezer *f)
{
	long long since = mafsbx_eclock_before(f->clock) - ANCHOR_SLACK_NS;
	return since > 0 ? since : 0;
}

/*
 * Right after our pause's 204: the engine's time of that pause (0 when it
 * cannot be read). `since` (engine_before_pause_ns, taken before the pause
 * was issued) bounds the search: the engine's history is read from there,
 * so the events kept are the few of this freeze however busy the engine
 * was before. The read goes up to a time certainly past our pause, so the
 * last pause found is ours (or a later one), and it bounds the engine's
 * clock from above: t_req is our time just before the pause was asked.
 */
static long long find_anchor(struct mafsbx_freezer *f, const char *container, long long since, long long t_req)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	long long until = 0;
	json_t *flt = freeze_event_filter(container), *evs = NULL;
	long long anchor = 0;
	if (since <= 0)
		since = 0; /* the whole ring: dockerd holds its last 256 events (Podman: its log) */
	if (flt && mafsbx_eclock_events(f->clock, since, flt, &evs, &until, &e) == 0) {
		/*
		 * The last pause: ours (a late echo of an earlier unpause may come
		 * after it, see verify). It cannot be an older one: `until` is past
		 * ours, and an older one would have been unpaused before ours.
		 */
		for (size_t i = json_array_size(evs); i-- > 0 && !anchor;) {
			json_t *ev = json_array_get(evs, i);
			const char *st = json_string_value(json_object_get(ev, "status"));
			json_t *tn = json_object_get(ev, "timeNano");
			if (st && strcmp(st, "pause") == 0 && json_is_integer(tn))
				anchor = (long long)json_integer_value(tn);
		}
		if (anchor)
			mafsbx_eclock_pause(f->clock, t_req, anchor);
	}
	/* the window and what it held say which of the engine's clock, its ring or our skew was wrong */
	if (!anchor)
		log_warn("freeze: cannot find the engine's record of the pause of %s (%s; %zu event(s) of it read "
			 "between %lld and %lld, the engine's clock); transfers under it will be refused",
			 container, e.message[0] ? e.message : "no pause event", json_array_size(evs), since, until);
	json_decref(flt);
	json_decref(evs);
	return anchor;
}

static long long marker_anchor(const char *marker)
{
	const char *t = strstr(marker, " t=");
	return t ? strtoll(t + 3, NULL, 10) : 0;
}

static void write_frozen_marker(int fd, long long anchor)
{
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "frozen pid %ld t=%lld\n", (long)getpid(), anchor);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		log_warn("freeze: cannot write the freeze marker: %s", strerror(errno));
}

/* ---- the cross-process protocol ----------------------------------------- */

/*
 * Under the gate, with the hold file LOCK_EX (nobody else inside): freeze.
 * `old` is the marker found: non-empty means a mafsbx process claimed the
 * container and is gone.
 */
static int freeze_alone(struct mafsbx_freezer *f, int gate, struct fentry *e, const char *old,
			long long deadline_ms, struct mafsbx_error *err)
{
	const char *container = e->container;
	bool ours = old[0] != '\0'; /* a paused state found now may be a mafsbx freeze */
	unsigned foreign_tries = 0, rounds = 0;
	struct mafsbx_error pe;
	write_marker(gate, "pausing"); /* claim first: an uncertain pause may still land */
	long long since = engine_before_pause_ns(f);
	for (;;) {
		bool uncertain = false;
		long long t_req = mafsbx_eclock_local_ns(); /* before the pause that may be ours */
		enum pause_result pr = pause_once(f, e, deadline_ms, &uncertain, &pe);
		if (uncertain)
			ours = true; /* an uncertain pause of ours may be what the daemon reports now */
		switch (pr) {
		case PAUSED_BY_US:
			e->anchor_ns = find_anchor(f, container, since, t_req);
			write_frozen_marker(gate, e->anchor_ns);
			log_info("freeze: %.12s paused (a new freeze)", container);
			return 0;
		case PAUSE_REFUSED:
			log_info("freeze: %.12s: the pause was refused: %s", container, pe.message);
			write_marker(gate, NULL);
			if (err)
				*err = pe;
			if (pe.kind == MAFSBX_EK_UNSUPPORTED)
				mafsbx_error_prefix(err, "the engine cannot freeze %s (it has no cgroups for it: a rootless "
						    "engine on cgroup v1 has the cgroup driver 'none'), and the engine "
						    "plane's file calls rest on a freeze, so they are refused (the local "
						    "plane needs none)", container);
			else
				mafsbx_error_prefix(err, "could not freeze %s for a file call", container);
			return -(pe.err ? pe.err : EIO);
		case PAUSE_UNCERTAIN:
			log_info("freeze: %.12s: the pause got no clear answer (%s); unpausing", container, pe.message);
			if (thaw_owned(f, container, "after an uncertain pause") != THAW_FAILED)
				write_marker(gate, NULL);
			if (err)
				*err = pe;
			mafsbx_error_prefix(err, "could not freeze %s for a file call", container);
			return -(pe.err ? pe.err : EIO);
		case ALREADY_PAUSED:
			break;
		}
		if (++rounds > 4 || mafsbx_now_ms() > deadline_ms)
			break;
		if (ours) {
			/*
			 * A freeze left by a dead process (or by our own uncertain pause):
			 * thaw it and freeze afresh, so that the freeze we rely on is a
			 * 204 answered to us, never the daemon's possibly stale flag.
			 */
			log_info("freeze: %s was left paused by a mafsbx freeze (%.40s); thawing and freezing afresh",
				 container, old);
			stat_add(f, &f->stats.adopted);
			if (thaw_owned(f, container, "taking over a dead freeze") == THAW_FAILED)
				break;
			ours = false; /* one take-over; a second "already paused" is someone else's */
			continue;
		}
		/* maybe the daemon's stale flag: give it a moment before calling it foreign */
		if (++foreign_tries > 3)
			break;
		sleep_ms(20);
	}
	if (old[0])
		write_marker(gate, "frozen"); /* keep the dead process's claim for recover() */
	else
		write_marker(gate, NULL);
	stat_add(f, &f->stats.foreign_refusals);
	log_info("freeze: %.12s is paused by someone else: left paused, the file call refused", container);
	return mafsbx_error_set(err, MAFSBX_EK_PAUSED,
				"container %s is paused by someone else (not by a mafsbx freeze); "
				"it is left paused and the file call is refused", container);
}

/*
 * Enter across processes. 0: inside the freeze. -EAGAIN with turn->why set:
 * an exec of the container is in flight or waiting, so the caller waits and
 * retries (the first time, the turn announces the wait so that new execs let
 * it in). Otherwise an error.
 */
static int xproc_enter(struct mafsbx_freezer *f, struct fentry *e, long long deadline_ms, struct mafsbx_turn *turn,
		       struct mafsbx_error *err)
{
	struct mafsbx_turns t;
	int r = turns_of(f, e->container, &t, err);
	if (r < 0)
		return r;
	r = mafsbx_turns_freeze_try(&t, turn, deadline_ms, err);
	if (r < 0)
		return r;
	if (r == MAFSBX_TURN_JOINED) {
		/* a live process is inside a freeze of this container: joined */
		char m[96];
		read_marker(turn->gate, m, sizeof(m));
		e->anchor_ns = marker_anchor(m);
		stat_add(f, &f->stats.xjoins);
		log_info("freeze: %.12s joined (frozen by another process)", e->container);
		mark_frozen(f, e, true);
		r = 0;
	} else {
		char old[64];
		read_marker(turn->gate, old, sizeof(old));
		r = freeze_alone(f, turn->gate, e, old, deadline_ms, err);
		if (r < 0)
			mark_frozen(f, e, false);
	}
	mafsbx_turns_settle(turn, r == 0);
	if (r < 0)
		return r;
	e->turn = (struct mafsbx_turn)MAFSBX_TURN_INIT;
	e->turn.hold = turn->hold;
	turn->hold = -1;
	return 0;
}

static void xproc_leave(struct mafsbx_freezer *f, struct fentry *e)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	struct mafsbx_turns t;
	int r = turns_of(f, e->container, &t, &err);
	if (r == 0)
		r = mafsbx_turns_freeze_leave(&t, &e->turn, mafsbx_now_ms() + 60000, &err);
	if (r < 0) {
		/* cannot coordinate: leave without thawing; the marker lets recover() lift it */
		log_warn("freeze: leaving %s without unpausing: %s", e->container, err.message);
		unpause_failed(f, e->container);
	} else if (r == 1 && thaw_owned(f, e->container, "leaving a freeze") != THAW_FAILED) {
		/* the last one out, across every process */
		write_marker(e->turn.gate, NULL);
		log_info("freeze: %.12s unpaused (the last holder left)", e->container);
	} else if (r == 0) {
		log_info("freeze: %.12s left, still frozen for another process", e->container);
	}
	mark_frozen(f, e, false);
	mafsbx_turn_release(&e->turn);
}

/* ---- the in-process table ----------------------------------------------- */

static struct fentry *entry_get(struct mafsbx_freezer *f, const char *container, bool create)
{
	for (struct fentry *e = f->entries; e; e = e->next)
		if (strcmp(e->container, container) == 0)
			return e;
	if (!create)
		return NULL;
	struct fentry *e = calloc(1, sizeof(*e));
	if (!e || !(e->container = strdup(container))) {
		free(e);
		return NULL;
	}
	e->turn = (struct mafsbx_turn)MAFSBX_TURN_INIT;
	e->next = f->entries;
	f->entries = e;
	return e;
}

/* Called with the mutex held: drop an entry nobody uses. */
static void entry_maybe_free(struct mafsbx_freezer *f, struct fentry *e)
{
	if (e->state != FS_IDLE || e->count || e->waiters || e->execs || e->poller)
		return;
	for (struct fentry **pp = &f->entries; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			free(e->container);
			free(e);
			return;
		}
	}
}

/* Wait on the condition variable until the deadline; false on timeout. Mutex held. */
static bool wait_until(struct mafsbx_freezer *f, long long deadline_ms)
{
	long long now = mafsbx_now_ms();
	if (now >= deadline_ms)
		return false;
	struct timespec ts = mafsbx_monotonic_after_ms(deadline_ms - now);
	pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	return true;
}

/*
 * Mutex held: wait until the generation moves past `gen` (something in this
 * process changed) or `until_ms` (a re-check for other processes).
 */
static void wait_gen(struct mafsbx_freezer *f, unsigned long long gen, long long until_ms)
{
	while (f->gen == gen && wait_until(f, until_ms))
		;
}

/* Mutex held: the refusal of a freeze that waited out its deadline behind execs. */
static int busy_error(struct mafsbx_freezer *f, const char *container, enum mafsbx_turns_busy why,
		      struct mafsbx_error *err)
{
	f->stats.exec_refusals++;
	log_info("freeze: %.12s refused: execs held it until the deadline", container);
	return mafsbx_turns_busy_error(container, why, err);
}

/* The refusal of an enter whose caller was interrupted (cancel.h). */
static int interrupted(const char *container, struct mafsbx_error *err)
{
	return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, EINTR, NULL, "freeze of %.12s: the caller was interrupted",
				     container);
}

/* Mutex held: wait for a change of `e`, in slices of CANCEL_POLL_MS so that
 * a cancelled caller is seen within one; false once the deadline passed. */
static bool wait_slice(struct mafsbx_freezer *f, struct fentry *e, long long deadline_ms)
{
	e->waiters++;
	long long slice = mafsbx_now_ms() + CANCEL_POLL_MS;
	bool waited = wait_until(f, slice < deadline_ms ? slice : deadline_ms);
	e->waiters--;
	return waited;
}

/* ---- public API --------------------------------------------------------- */

/* A freezer over `rundir`; `ensure`: make it and check it is this uid's (else the caller checked it). */
static struct mafsbx_freezer *freezer_make(struct mafsbx_engine *engine, const char *rundir, bool ensure,
					   struct mafsbx_error *err)
{
	if (!engine) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "freezer: no engine");
		return NULL;
	}
	struct mafsbx_freezer *f = calloc(1, sizeof(*f));
	if (!f) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	f->engine = engine;
	f->rundir = mafsbx_rundir_choose(rundir);
	f->clock = mafsbx_eclock_new(engine);
	if (!f->rundir || !f->clock) {
		mafsbx_eclock_free(f->clock);
		free(f->rundir);
		free(f);
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	if (f->rundir[0] != '/') {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "runtime directory %s is not absolute", f->rundir);
		goto fail;
	}
	if (ensure && mafsbx_rundir_ensure(f->rundir, err) < 0)
		goto fail;
	const struct mafsbx_endpoint *ep = mafsbx_engine_endpoint(engine);
	snprintf(f->ep_hash, sizeof(f->ep_hash), "%016llx", (unsigned long long)fnv1a(ep ? ep->url : ""));
#ifdef MAFSBX_TEST_KNOBS
	const char *hold = getenv(MAFSBX_FREEZE_HOLD_ENV);
	f->hold_ms = hold ? strtol(hold, NULL, 10) : 0;
#endif
	pthread_mutex_init(&f->mu, NULL);
	mafsbx_cond_init_monotonic(&f->cv);
	return f;
fail:
	mafsbx_eclock_free(f->clock);
	free(f->rundir);
	free(f);
	return NULL;
}

struct mafsbx_freezer *mafsbx_freezer_new(struct mafsbx_engine *engine, const char *rundir,
					  struct mafsbx_error *err)
{
	return freezer_make(engine, rundir, true, err);
}

struct mafsbx_freezer *mafsbx_freezer_new_in(struct mafsbx_engine *engine, int dirfd, struct mafsbx_error *err)
{
	/* the magic link names the open directory itself: a rename or a link put in its place later is
	 * never followed */
	char path[48];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
	return freezer_make(engine, path, false, err);
}

void mafsbx_freezer_free(struct mafsbx_freezer *f)
{
	if (!f)
		return;
	while (f->entries) {
		struct fentry *e = f->entries;
		f->entries = e->next;
		if (e->count || e->state != FS_IDLE)
			log_warn("freeze: freezer freed with a freeze of %s still held", e->container);
		if (e->execs)
			log_warn("freeze: freezer freed with %u exec(s) of %s still registered", e->execs, e->container);
		mafsbx_turn_release(&e->turn);
		free(e->container);
		free(e);
	}
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	mafsbx_eclock_free(f->clock);
	free(f->rundir);
	free(f);
}

struct mafsbx_engine *mafsbx_freezer_engine(const struct mafsbx_freezer *f)
{
	return f ? f->engine : NULL;
}

const char *mafsbx_freezer_rundir(const struct mafsbx_freezer *f)
{
	return f ? f->rundir : NULL;
}

static void hold_hook(struct mafsbx_freezer *f)
{
	if (f->hold_ms > 0)
		sleep_ms(f->hold_ms);
}

int mafsbx_freeze_enter(struct mafsbx_freezer *f, const char *container, long long deadline_ms,
			struct mafsbx_freeze **out, struct mafsbx_error *err)
{
	*out = NULL;
	if (!f || !container || !*container)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "freeze: no container");
	deadline_ms = deadline_or_default(deadline_ms);
	struct mafsbx_freeze *h = calloc(1, sizeof(*h));
	if (!h)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	h->f = f;
	pthread_mutex_lock(&f->mu);
	struct fentry *e = entry_get(f, container, true);
	if (!e) {
		pthread_mutex_unlock(&f->mu);
		free(h);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	int r = 0;
	struct mafsbx_turn turn = MAFSBX_TURN_INIT; /* announces the wait for execs */
	bool poller = false;
	for (unsigned polls = 0;;) {
		/* the caller is gone (cancel.h): nothing was paused for it yet */
		if (mafsbx_cancelled()) {
			r = interrupted(container, err);
			break;
		}
		/*
		 * Join only a young freeze: a stream of arrivals must not keep the
		 * guest frozen for ever. Later ones wait for it to drain and freeze again.
		 */
		if (e->state == FS_HELD && mafsbx_now_ms() - e->held_since_ms <= MAFSBX_FREEZE_JOIN_WINDOW_MS) {
			log_info("freeze: %.12s joined (frozen %lld ms ago here, %u inside)", container,
				 mafsbx_now_ms() - e->held_since_ms, e->count);
			e->count++;
			f->stats.joins++;
			f->stats.enters++;
			r = 0;
			break;
		}
		/* one thread of this process at a time polls while execs hold the container */
		if (e->state == FS_IDLE && (!e->poller || poller)) {
			e->state = FS_ENTERING;
			pthread_mutex_unlock(&f->mu);
			r = xproc_enter(f, e, deadline_ms, &turn, err);
			pthread_mutex_lock(&f->mu);
			if (r == 0) {
				e->state = FS_HELD;
				e->count = 1;
				e->held_since_ms = mafsbx_now_ms();
				f->stats.enters++;
				bump(f);
				break;
			}
			e->state = FS_IDLE;
			bump(f);
			if (r != -EAGAIN)
				break;
			if (!poller) {
				poller = e->poller = true;
				f->stats.exec_deferrals++;
				log_info("freeze: %.12s waits: an exec of it runs or waits", container);
			}
			e->busy_why = turn.why;
			long long now = mafsbx_now_ms();
			if (now >= deadline_ms) {
				r = busy_error(f, container, turn.why, err);
				break;
			}
			long long until = now + mafsbx_turns_poll_ms(polls++);
			e->waiters++;
			wait_gen(f, f->gen, until < deadline_ms ? until : deadline_ms);
			e->waiters--;
			continue;
		}
		if (!wait_slice(f, e, deadline_ms)) {
			if (e->poller)
				r = busy_error(f, container, e->busy_why, err);
			else
				r = mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "timed out waiting to freeze %s", container);
			break;
		}
	}
	if (poller) {
		e->poller = false;
		bump(f);
	}
	mafsbx_turn_unwant(&turn);
	if (r < 0) {
		entry_maybe_free(f, e);
		pthread_mutex_unlock(&f->mu);
		free(h);
		return r;
	}
	h->anchor_ns = e->anchor_ns;
	pthread_mutex_unlock(&f->mu);
	h->e = e;
	*out = h;
	hold_hook(f);
	return 0;
}

/* Does event `ev` have this status (and, with tn >= 0, this timeNano)? */
static bool ev_is(json_t *ev, const char *status, long long tn)
{
	const char *st = json_string_value(json_object_get(ev, "status"));
	json_t *t = json_object_get(ev, "timeNano");
	return st && strcmp(st, status) == 0 && json_is_integer(t) && (tn < 0 || json_integer_value(t) == tn);
}

static long long ev_time(json_t *ev)
{
	return (long long)json_integer_value(json_object_get(ev, "timeNano"));
}

int mafsbx_freeze_verify(struct mafsbx_freeze *h, struct mafsbx_error *err)
{
	if (!h)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "freeze verify: no freeze");
	struct mafsbx_freezer *f = h->f;
	const char *container = h->e->container;
#ifdef MAFSBX_TEST_KNOBS
	if (mafsbx_freeze_test_before_verify)
		mafsbx_freeze_test_before_verify(container, mafsbx_freeze_test_before_verify_ctx);
#endif
	long long anchor = h->anchor_ns;
	if (!anchor)
		return mafsbx_error_set_full(err, MAFSBX_EK_ENGINE, EIO, NULL,
					     "cannot prove that the freeze of %s held (the engine's record of its pause "
					     "was not found); the transfer is discarded",
					     container);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	long long until = 0;
	json_t *flt = freeze_event_filter(container), *evs = NULL;
	/* up to a time certainly past the present (clock.h): an unpause just before this is read */
	int r = flt ? mafsbx_eclock_events(f->clock, anchor - PRIOR_WINDOW_NS, flt, &evs, &until, &e)
		    : mafsbx_error_set(&e, MAFSBX_EK_NOMEM, "out of memory");
	json_decref(flt);
	if (r < 0) {
		json_decref(evs);
		if (err)
			*err = e;
		mafsbx_error_prefix(err, "cannot prove that the freeze of %s held; the transfer is discarded", container);
		return -EIO;
	}
	/* the anchor must still be in the engine's ring: then the log is complete since */
	size_t n = json_array_size(evs), at = n;
	bool prior_unpause = false;
	for (size_t i = 0; i < n && at == n; i++) {
		json_t *ev = json_array_get(evs, i);
		if (ev_is(ev, "pause", anchor))
			at = i;
		else if (ev_is(ev, "unpause", -1))
			prior_unpause = true;
	}
	if (at == n) {
		json_decref(evs);
		return mafsbx_error_set_full(err, MAFSBX_EK_ENGINE, EIO, NULL,
					     "cannot prove that the freeze of %s held (the engine's event log no longer "
					     "reaches back to its pause); the transfer is discarded",
					     container);
	}
	size_t after = n - at - 1;
	bool held = after == 0;
	if (!held && prior_unpause && after == 2) {
		/*
		 * dockerd 20.10 logs pause/unpause twice: at the API call, and
		 * again from containerd's late event when its flag disagrees. An
		 * unpause just before our pause can thus log a late "unpause"
		 * then our pause's late "pause" after the anchor, while the guest
		 * stayed frozen. Only that shape, soon after the anchor, and only
		 * when such an unpause precedes it, is taken as those echoes.
		 */
		json_t *a1 = json_array_get(evs, at + 1), *a2 = json_array_get(evs, at + 2);
		held = ev_is(a1, "unpause", -1) && ev_is(a2, "pause", -1) && ev_time(a1) - anchor < ECHO_WINDOW_NS;
		if (held) {
			pthread_mutex_lock(&f->mu);
			f->stats.freeze_echoes++;
			pthread_mutex_unlock(&f->mu);
		}
	}
	if (held) {
		json_decref(evs);
		return 0;
	}
	const char *st2 = json_string_value(json_object_get(json_array_get(evs, at + 1), "status"));
	const char *what = !st2 ? "changed" : !strcmp(st2, "die") ? "stopped" : "unpaused";
	json_decref(evs);
	pthread_mutex_lock(&f->mu);
	f->stats.broken_freezes++;
	pthread_mutex_unlock(&f->mu);
	log_warn("freeze: the freeze of %s was broken by someone else (%s) during a transfer", container, what);
	return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EIO, NULL,
				     "the freeze of %s did not hold: it was %s by someone else (another mount, host or "
				     "`docker unpause`) during the transfer, so the transfer is discarded",
				     container, what);
}

void mafsbx_freeze_leave(struct mafsbx_freeze *h)
{
	if (!h)
		return;
	struct mafsbx_freezer *f = h->f;
	struct fentry *e = h->e;
	free(h);
	pthread_mutex_lock(&f->mu);
	if (--e->count > 0) {
		pthread_mutex_unlock(&f->mu);
		return;
	}
	e->state = FS_LEAVING;
	pthread_mutex_unlock(&f->mu);
	xproc_leave(f, e);
	pthread_mutex_lock(&f->mu);
	e->state = FS_IDLE;
	bump(f);
	entry_maybe_free(f, e);
	pthread_mutex_unlock(&f->mu);
}

bool mafsbx_freeze_active(struct mafsbx_freezer *f, const char *container)
{
	if (!f || !container)
		return false;
	pthread_mutex_lock(&f->mu);
	struct fentry *e = entry_get(f, container, false);
	bool active = e && (e->state == FS_ENTERING || e->state == FS_HELD || e->state == FS_LEAVING);
	pthread_mutex_unlock(&f->mu);
	return active;
}

int mafsbx_freeze_wait_idle(struct mafsbx_freezer *f, const char *container, long long deadline_ms,
			    struct mafsbx_error *err)
{
	if (!f || !container)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "freeze: no container");
	deadline_ms = deadline_or_default(deadline_ms);
	int r = 0;
	pthread_mutex_lock(&f->mu);
	struct fentry *e = entry_get(f, container, false);
	if (e) {
		e->waiters++;
		while (e->state != FS_IDLE) {
			if (!wait_until(f, deadline_ms)) {
				r = mafsbx_error_set(err, MAFSBX_EK_TIMEOUT,
						     "timed out waiting for the freeze of %s to end", container);
				break;
			}
		}
		e->waiters--;
		entry_maybe_free(f, e);
	}
	pthread_mutex_unlock(&f->mu);
	return r;
}

/* An exec's wait: no try while this process itself takes, holds or releases a freeze of the container. */
static bool exec_may_try(void *ctx, unsigned long long *token)
{
	struct mafsbx_freeze_exec *x = ctx;
	pthread_mutex_lock(&x->f->mu);
	*token = x->f->gen;
	enum fstate st = x->e->state;
	pthread_mutex_unlock(&x->f->mu);
	return st != FS_ENTERING && st != FS_HELD && st != FS_LEAVING;
}

static void exec_wait_gen(void *ctx, unsigned long long token, long long until_ms)
{
	struct mafsbx_freeze_exec *x = ctx;
	pthread_mutex_lock(&x->f->mu);
	wait_gen(x->f, token, until_ms);
	pthread_mutex_unlock(&x->f->mu);
}

/* The exec turn is taken, under its gate: count it (and the debug check). */
static void exec_registered(struct mafsbx_freezer *f, struct fentry *e)
{
	pthread_mutex_lock(&f->mu);
	if (e->frozen) {
		f->stats.exec_overlaps++;
		log_warn("freeze: BUG: an exec in %s registered inside a freeze of this process", e->container);
	}
	e->execs++;
	f->stats.exec_begins++;
	pthread_mutex_unlock(&f->mu);
}

int mafsbx_freeze_exec_begin(struct mafsbx_freezer *f, const char *container, long long deadline_ms,
			     struct mafsbx_freeze_exec **out, struct mafsbx_error *err)
{
	*out = NULL;
	if (!f || !container || !*container)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec registration: no container");
	deadline_ms = deadline_or_default(deadline_ms);
	struct mafsbx_freeze_exec *x = calloc(1, sizeof(*x));
	if (!x)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	x->f = f;
	x->turn = (struct mafsbx_turn)MAFSBX_TURN_INIT;
	pthread_mutex_lock(&f->mu);
	struct fentry *e = entry_get(f, container, true);
	if (!e) {
		pthread_mutex_unlock(&f->mu);
		free(x);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	e->waiters++; /* keeps the entry while we work without the mutex */
	pthread_mutex_unlock(&f->mu);
	x->e = e;

	bool waited = false;
	struct mafsbx_turns t;
	const struct mafsbx_turns_hooks hooks = { exec_may_try, exec_wait_gen, x };
	int r = turns_of(f, container, &t, err);
	if (r == 0)
		r = mafsbx_turns_exec_wait(&t, &x->turn, deadline_ms, &hooks, &waited, err);
	if (r == 0) {
		exec_registered(f, e);
		mafsbx_turns_settle(&x->turn, true);
	}
	pthread_mutex_lock(&f->mu);
	e->waiters--;
	if (r == 0 && waited)
		f->stats.exec_waits++;
	if (r < 0) {
		entry_maybe_free(f, e);
		pthread_mutex_unlock(&f->mu);
		free(x);
		return r;
	}
	pthread_mutex_unlock(&f->mu);
	*out = x;
	return 0;
}

void mafsbx_freeze_exec_end(struct mafsbx_freeze_exec *x)
{
	if (!x)
		return;
	struct mafsbx_freezer *f = x->f;
	struct fentry *e = x->e;
	/* count down before the lock goes, so a pause never sees the lock free and the count up */
	pthread_mutex_lock(&f->mu);
	e->execs--;
	e->waiters++;
	pthread_mutex_unlock(&f->mu);
	mafsbx_turn_release(&x->turn);
	pthread_mutex_lock(&f->mu);
	e->waiters--;
	bump(f);
	entry_maybe_free(f, e);
	pthread_mutex_unlock(&f->mu);
	free(x);
}

/* Under the gate, nobody inside a freeze: unpause `container` if it is ours (or with include_foreign). */
static int recover_idle(struct mafsbx_freezer *f, const char *container, int gate, bool include_foreign,
			bool *unpaused, struct mafsbx_error *err)
{
	char marker[64];
	read_marker(gate, marker, sizeof(marker));
	if (!marker[0] && !include_foreign)
		return 0;
	struct mafsbx_error ue;
	mafsbx_error_clear(&ue);
	if (mafsbx_container_unpause(f->engine, container, &ue) == 0) {
		pthread_mutex_lock(&f->mu);
		f->stats.unpauses++;
		f->stats.recovered++;
		pthread_mutex_unlock(&f->mu);
		if (unpaused)
			*unpaused = true;
		log_info("freeze: recovered %s: unpaused a freeze %s", container,
			 marker[0] ? "left by a dead process" : "with no live holder");
		write_marker(gate, NULL);
		return 0;
	}
	if (not_paused_answer(&ue)) {
		write_marker(gate, NULL);
		return 0;
	}
	if (err)
		*err = ue;
	mafsbx_error_prefix(err, "could not recover the paused container %s", container);
	return -(ue.err ? ue.err : EIO);
}

int mafsbx_freeze_recover(struct mafsbx_freezer *f, const char *container, bool include_foreign, bool *unpaused,
			  long long deadline_ms, struct mafsbx_error *err)
{
	if (unpaused)
		*unpaused = false;
	if (!f || !container || !*container)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "recover: no container");
	deadline_ms = deadline_or_default(deadline_ms);
	pthread_mutex_lock(&f->mu);
	struct fentry *e = entry_get(f, container, true);
	if (!e) {
		pthread_mutex_unlock(&f->mu);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	if (e->state != FS_IDLE) {
		/* this process holds (or is taking) a freeze: a live one, left alone */
		pthread_mutex_unlock(&f->mu);
		return 0;
	}
	e->state = FS_RECOVERING;
	pthread_mutex_unlock(&f->mu);

	struct mafsbx_turns t;
	struct mafsbx_turn turn = MAFSBX_TURN_INIT;
	int r = turns_of(f, container, &t, err);
	if (r == 0)
		r = mafsbx_turns_idle(&t, &turn, deadline_ms, err);
	if (r == 1)
		r = recover_idle(f, container, turn.gate, include_foreign, unpaused, err);
	mafsbx_turn_release(&turn);
	pthread_mutex_lock(&f->mu);
	e->state = FS_IDLE;
	bump(f);
	entry_maybe_free(f, e);
	pthread_mutex_unlock(&f->mu);
	return r;
}

/* ---- collecting the lock files of containers that are gone --------------- */

struct gone_ctx {
	struct mafsbx_freezer *f;
	const char *container;
};

/* Does the engine say the container does not exist? */
static bool engine_says_gone(void *ctx)
{
	struct gone_ctx *g = ctx;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	json_t *insp = NULL;
	bool gone = mafsbx_container_inspect(g->f->engine, g->container, &insp, &e) < 0 &&
		    e.kind == MAFSBX_EK_NO_CONTAINER;
	json_decref(insp);
	return gone;
}

/*
 * Remove the lock files of full ID `container` when nobody (this process or
 * another) uses them. With `ask_engine`, the engine must also say the
 * container does not exist. Container IDs are never reused, so a process
 * that still opens these files later can only be failing on a container
 * that is gone. 1 removed, 0 left.
 */
static int forget_key(struct mafsbx_freezer *f, const char *container, bool ask_engine)
{
	if (!mafsbx_is_engine_id(container))
		return 0;
	pthread_mutex_lock(&f->mu);
	bool used = entry_get(f, container, false) != NULL;
	pthread_mutex_unlock(&f->mu);
	struct mafsbx_turns t;
	if (used || turns_of(f, container, &t, NULL) < 0)
		return 0;
	struct gone_ctx g = { f, container };
	return mafsbx_turns_remove(&t, ask_engine ? engine_says_gone : NULL, &g);
}

void mafsbx_freeze_forget(struct mafsbx_freezer *f, const char *container)
{
	if (f && container && forget_key(f, container, false))
		log_debug("freeze: removed the lock files of %s (container gone)", container);
}

int mafsbx_freezer_collect(struct mafsbx_freezer *f, const char *const *live, size_t n_live, unsigned *removed,
			   struct mafsbx_error *err)
{
	if (removed)
		*removed = 0;
	if (!f)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "collect: no freezer");
	DIR *d = opendir(f->rundir);
	if (!d)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "cannot read %s: %s", f->rundir,
					     strerror(errno));
	struct dirent *de;
	while ((de = readdir(d))) {
		/* every key has a gate; one entry per key */
		const char *dot = strchr(de->d_name, '.');
		if (!dot || dot - de->d_name != 64 || strcmp(dot, ".gate") != 0)
			continue;
		char id[65];
		memcpy(id, de->d_name, 64);
		id[64] = '\0';
		if (!mafsbx_is_engine_id(id))
			continue;
		bool alive = false;
		for (size_t i = 0; i < n_live && !alive; i++)
			alive = live[i] && strcmp(live[i], id) == 0;
		if (!alive && forget_key(f, id, true) && removed)
			(*removed)++;
	}
	closedir(d);
	return 0;
}

void mafsbx_freezer_on_unpause_failure(struct mafsbx_freezer *f, void (*fn)(void *ctx, const char *container),
				       void *ctx)
{
	pthread_mutex_lock(&f->mu);
	f->on_unpause_failure = fn;
	f->on_unpause_failure_ctx = ctx;
	pthread_mutex_unlock(&f->mu);
}

void mafsbx_freezer_stats(struct mafsbx_freezer *f, struct mafsbx_freeze_stats *out)
{
	pthread_mutex_lock(&f->mu);
	*out = f->stats;
	pthread_mutex_unlock(&f->mu);
}
