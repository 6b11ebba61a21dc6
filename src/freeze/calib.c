/*
 * calib.c: the search for the engine's second tick (calib.h) and the one
 * thread per process that runs it for every engine clock (clock.c), off
 * the freeze callers' path: when a clock is made, then every
 * MAFSBX_CALIB_PERIOD_NS while it was used in the last
 * MAFSBX_CALIB_IDLE_NS. Its result goes through the clock's usual bounds
 * (mafsbx_eclock_tick), so a step of the engine's clock is still caught by
 * contradiction.
 *
 * Why one thread: a cluster mount has a clock per node engine, and a
 * calibration is mostly sleeping; they run one after the other. Why only
 * while used: an idle mount would otherwise ask every engine ~13 times a
 * minute forever; after MAFSBX_CALIB_IDLE_NS of quiet the first freeze
 * pays the Date bound once (correct, up to a second slower) and wakes the
 * calibration again.
 *
 * The lock `mu` guards the list, every slot's fields and `stop`; it is
 * never held across an engine call or taken with a clock's lock held.
 * `life` serializes the thread's start and join (join and leave); the
 * thread never takes it.
 */
#include "calib.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "buf.h"
#include "clock.h"
#include "error.h"
#include "log.h"

#define NS 1000000000LL
/* Asks per foreseen window: the factor a window shrinks by, tick to tick ... */
#define ASKS_PER_TICK 8
/* ... but never further apart than this: the first window (a second) is placed to 50 ms, so two ticks do. */
#define MAX_STEP_NS (50LL * 1000000LL)
/* A tick foreseen ahead may come this much off, beyond the drift: our wake-up's lateness. */
#define FORESEE_SLACK_NS (3LL * 1000000LL)
/*
 * A search is done when the tick is placed within two round trips plus
 * this: what a freeze's events read may then wait, as with our pause's own
 * bound (a POST's round trip), against up to a second with a Date's.
 */
#define DONE_SLACK_NS (8LL * 1000000LL)
/* A /_ping slower than this calibrates nothing worth having; also bounds a leave's wait. */
#define CALIB_TIMEOUT_MS 2000L
/* After a failed calibration (engine unreachable, clock went back), the next try. */
#define CALIB_RETRY_NS (15LL * NS)

/* ---- the search ------------------------------------------------------------- */

void mafsbx_tick_init(struct mafsbx_tick_search *t)
{
	*t = (struct mafsbx_tick_search){ 0 };
}

/* Foresee tick n in [lo, hi] of our times: ask there. */
static void foresee(struct mafsbx_tick_search *t, long long n, long long lo, long long hi)
{
	t->n = n;
	t->win_lo = lo;
	t->win_hi = hi;
	t->step = (hi - lo) / ASKS_PER_TICK < MAX_STEP_NS ? (hi - lo) / ASKS_PER_TICK : MAX_STEP_NS;
	t->not_yet = 0;
}

/* A start (over): an answer of Date d asked at t0 foresees tick d+1 within the second after it. */
static void start(struct mafsbx_tick_search *t, long long d, long long t0, long long t1)
{
	foresee(t, d + 1, t0, t1 + NS);
	t->not_yet = t0; /* certain: d was written after t0 */
}

/* How far a tick foreseen `secs` seconds on may come off: CLOCK_DRIFT_PPM (clock.c) of it, and our lateness. */
static long long foresee_slack(long long secs)
{
	return secs * (NS / 1000) + FORESEE_SLACK_NS;
}

void mafsbx_tick_resume(struct mafsbx_tick_search *t, long long n, long long lo, long long hi, long long now,
			long long *next)
{
	mafsbx_tick_init(t);
	long long k = now > lo ? (now - lo) / NS + 1 : 1;
	while (lo + k * NS - foresee_slack(k) <= now) /* its window must be ahead of us */
		k++;
	foresee(t, n + k, lo + k * NS - foresee_slack(k), hi + k * NS + foresee_slack(k));
	*next = t->win_lo;
}

/* Tick n placed in [lo, hi]: kept when the narrowest so far. */
static void placed(struct mafsbx_tick_search *t, long long lo, long long hi)
{
	if (!t->best_n || hi - lo < t->best_hi - t->best_lo) {
		t->best_n = t->n;
		t->best_lo = lo;
		t->best_hi = hi;
	}
}

/* Places one answer; false when it contradicts an earlier one (the engine's second went back). */
static bool place(struct mafsbx_tick_search *t, long long t0, long long t1, long long d)
{
	if (t->n == 0) {
		start(t, d, t0, t1);
	} else if (d < t->n - 1) {
		return false;
	} else if (d == t->n - 1) { /* not yet */
		t->not_yet = t0 > t->not_yet ? t0 : t->not_yet;
		if (t0 > t->win_hi + FORESEE_SLACK_NS) /* the tick did not come where foreseen */
			start(t, d, t0, t1);
	} else if (!t->not_yet) { /* came before the window: placed on one side only */
		start(t, d, t0, t1);
	} else {
		placed(t, t->not_yet, t1);
		long long k = d + 1 - t->n; /* seconds on to the next tick (1 unless we were late) */
		foresee(t, d + 1, t->best_lo + k * NS - foresee_slack(k), t->best_hi + k * NS + foresee_slack(k));
	}
	return true;
}

enum mafsbx_tick_step mafsbx_tick_sample(struct mafsbx_tick_search *t, long long t0, long long t1, long long date_s,
					 long long *next)
{
	if (date_s <= 0 || t1 < t0 || t->samples >= MAFSBX_TICK_MAX_SAMPLES)
		return MAFSBX_TICK_FAIL;
	t->samples++;
	if (!place(t, t0, t1, date_s))
		return MAFSBX_TICK_FAIL;
	if (t->best_n && t->best_hi - t->best_lo <= 2 * (t1 - t0) + DONE_SLACK_NS)
		return MAFSBX_TICK_DONE;
	if (t->samples >= MAFSBX_TICK_MAX_SAMPLES) /* certain all the same, only wider */
		return t->best_n ? MAFSBX_TICK_DONE : MAFSBX_TICK_FAIL;
	/* the window's start first (an answer "not yet" is needed), then on through it step by step */
	*next = t->not_yet ? t0 + (t->step > 0 ? t->step : 0) : t->win_lo;
	return MAFSBX_TICK_AGAIN;
}

void mafsbx_tick_skew(const struct mafsbx_tick_search *t, long long *lo, long long *hi, long long *at)
{
	*lo = t->best_n * NS - t->best_hi;
	*hi = t->best_n * NS - t->best_lo;
	*at = t->best_lo; /* the earliest the tick can have been: its bounds age from there */
}

/* ---- the thread ----------------------------------------------------------------- */

static struct {
	pthread_once_t once;
	pthread_mutex_t life;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* on CLOCK_MONOTONIC: a slot joined, used, left; stop */
	struct mafsbx_calib_slot *head;
	bool running, stop; /* running: under life; stop: under mu */
	pthread_t thread;
} g = { .once = PTHREAD_ONCE_INIT, .life = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER };

static void g_init(void)
{
	mafsbx_cond_init_monotonic(&g.cv);
}

/* Under g.mu: wait until our time `until` or a signal. */
static void wait_until(long long until)
{
	struct timespec ts = { .tv_sec = (time_t)(until / NS), .tv_nsec = (long)(until % NS) };
	pthread_cond_timedwait(&g.cv, &g.mu, &ts);
}

/* Sleep until our time `until`; false when the slot leaves or the thread stops first. */
static bool sleep_until(struct mafsbx_calib_slot *s, long long until)
{
	pthread_mutex_lock(&g.mu);
	while (!s->leaving && !g.stop && mafsbx_eclock_local_ns() < until)
		wait_until(until);
	bool go = !s->leaving && !g.stop;
	pthread_mutex_unlock(&g.mu);
	return go;
}

/* One search on s's engine: under 2 s, at most MAFSBX_TICK_MAX_SAMPLES pings. No lock held. */
static bool calibrate(struct mafsbx_calib_slot *s)
{
	struct mafsbx_engine *e = mafsbx_eclock_engine(s->clock);
	struct mafsbx_tick_search t;
	long long next = 0, fed = 0, lo, hi, at;
	if (s->tick_n)
		mafsbx_tick_resume(&t, s->tick_n, s->tick_lo, s->tick_hi, mafsbx_eclock_local_ns(), &next);
	else
		mafsbx_tick_init(&t);
	for (;;) {
		if (next && !sleep_until(s, next))
			return false;
		struct mafsbx_error err = { 0 };
		long long date_s = 0, t0 = mafsbx_eclock_local_ns();
		int r = mafsbx_engine_date(e, CALIB_TIMEOUT_MS, &date_s, &err);
		long long t1 = mafsbx_eclock_local_ns();
		if (r < 0) {
			s->tick_n = 0;
			log_debug("freeze: the engine's clock is not calibrated: %s", err.message);
			return false;
		}
		enum mafsbx_tick_step st = mafsbx_tick_sample(&t, t0, t1, date_s, &next);
		if (st == MAFSBX_TICK_FAIL) {
			s->tick_n = 0;
			log_debug("freeze: the engine's clock is not calibrated (its Date went back or never ticked)");
			return false;
		}
		if (t.best_n && (!fed || t.best_hi - t.best_lo < fed)) { /* each tick placed is a bound at once */
			fed = t.best_hi - t.best_lo;
			mafsbx_tick_skew(&t, &lo, &hi, &at);
			mafsbx_eclock_tick(s->clock, lo, hi, at);
		}
		if (st == MAFSBX_TICK_DONE)
			break;
	}
	s->tick_n = t.best_n, s->tick_lo = t.best_lo, s->tick_hi = t.best_hi;
	log_debug("freeze: the engine's clock calibrated to within %lld ms (%d answers)", (hi - lo) / 1000000,
		  t.samples);
	return true;
}

/* Under g.mu: the slot due first among the ones used lately, or NULL and *wake. */
static struct mafsbx_calib_slot *pick(long long now, long long *wake)
{
	*wake = now + MAFSBX_CALIB_PERIOD_NS;
	for (struct mafsbx_calib_slot *s = g.head; s; s = s->next) {
		if (now - s->used >= MAFSBX_CALIB_IDLE_NS)
			continue; /* idle: mafsbx_calib_used wakes us */
		if (s->due <= now)
			return s;
		if (s->due < *wake)
			*wake = s->due;
	}
	return NULL;
}

static void *calib_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&g.mu);
	while (!g.stop) {
		long long wake;
		struct mafsbx_calib_slot *s = pick(mafsbx_eclock_local_ns(), &wake);
		if (!s) {
			wait_until(wake);
			continue;
		}
		s->busy = true;
		pthread_mutex_unlock(&g.mu);
		bool ok = calibrate(s);
		pthread_mutex_lock(&g.mu);
		s->busy = false;
		s->due = mafsbx_eclock_local_ns() + (ok ? MAFSBX_CALIB_PERIOD_NS : CALIB_RETRY_NS);
		pthread_cond_broadcast(&g.cv);
	}
	pthread_mutex_unlock(&g.mu);
	return NULL;
}

static atomic_bool calib_on;

void mafsbx_calib_enable(void)
{
	atomic_store(&calib_on, true);
}

void mafsbx_calib_join(struct mafsbx_calib_slot *s, struct mafsbx_eclock *c)
{
	pthread_once(&g.once, g_init);
	long long now = mafsbx_eclock_local_ns();
	*s = (struct mafsbx_calib_slot){ .clock = c, .due = now, .used = now, .joined = atomic_load(&calib_on) };
	if (!s->joined)
		return;
	pthread_mutex_lock(&g.life);
	pthread_mutex_lock(&g.mu);
	s->next = g.head;
	g.head = s;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	if (!g.running) {
		int r = pthread_create(&g.thread, NULL, calib_main, NULL);
		if (r != 0) /* the freezes still hold, through the Date bound */
			log_warn("freeze: no clock calibration thread (error %d): an engine's first freeze may "
				 "wait up to a second", r);
		g.running = r == 0;
	}
	pthread_mutex_unlock(&g.life);
}

void mafsbx_calib_used(struct mafsbx_calib_slot *s)
{
	if (!s->joined)
		return;
	long long now = mafsbx_eclock_local_ns();
	pthread_mutex_lock(&g.mu);
	if (now - s->used >= MAFSBX_CALIB_IDLE_NS) {
		s->due = now; /* woken from idle: at once, for the freezes that follow this one */
		pthread_cond_broadcast(&g.cv);
	}
	s->used = now;
	pthread_mutex_unlock(&g.mu);
}

void mafsbx_calib_leave(struct mafsbx_calib_slot *s)
{
	if (!s->joined)
		return;
	pthread_mutex_lock(&g.life);
	pthread_mutex_lock(&g.mu);
	s->leaving = true;
	pthread_cond_broadcast(&g.cv);
	while (s->busy) /* its ping ends within CALIB_TIMEOUT_MS; its sleep at once */
		pthread_cond_wait(&g.cv, &g.mu);
	struct mafsbx_calib_slot **pp = &g.head;
	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp)
		*pp = s->next;
	bool last = !g.head && g.running;
	if (last)
		g.stop = true;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	if (last) {
		pthread_join(g.thread, NULL);
		g.running = false;
		pthread_mutex_lock(&g.mu);
		g.stop = false;
		pthread_mutex_unlock(&g.mu);
	}
	pthread_mutex_unlock(&g.life);
}
