/*
 * calib.h: the engine's clock calibrated from its Date header's second tick,
 * in the background, so that the freeze proofs (clock.h) always have a
 * tight two-sided bound on the skew and never read the events up to a time
 * that only a Date bounds (dockerd holds that answer up to a second).
 *
 * An answer with Date S was written at an engine time in [S, S+1) at one of
 * our times in [t_req, t_resp]. An answer with Date N-1 asked at our a
 * means the engine reached second N after a; one with Date >= N answered
 * by our b means it reached N by b. So the tick to N lies in [a, b] of our
 * times, and skew (engine minus ours) is in [N - b, N - a]: certain, no
 * assumption on either clock's rate. A tick can be placed only by asks
 * made before it came, so one tick places it to within the asks' spacing:
 * the first answer foresees the next tick within a second, and asks 50 ms
 * apart over that second place it to ~50 ms; the tick a second later is
 * foreseen there (give or take the drift) and eight asks spread over that
 * window place it to under 8 ms. Under two seconds and ~16 pings in all
 * (at most ~30), mostly asleep; each tick placed is a bound at once. A
 * calibration after an earlier one foresees its first tick from that
 * one's (the drift since widens the window): ~10 pings.
 * Where a tick is foreseen is never trusted, only where it is placed: a
 * tick that does not come where foreseen starts the search over. The pure
 * search is below; the thread that runs it is calib.c's.
 */
#ifndef MAFSBX_FREEZE_CALIB_H
#define MAFSBX_FREEZE_CALIB_H

#include <stdbool.h>

/* ---- the search for one tick: pure logic (times in ns, ours CLOCK_MONOTONIC) ---- */

/* The most answers one search asks for: a few ticks placed, and a start over. */
#define MAFSBX_TICK_MAX_SAMPLES 64

struct mafsbx_tick_search {
	long long n;                /* the engine second (s) whose start is sought; 0: no answer yet */
	long long win_lo, win_hi;   /* where we foresee its tick (our times): where we ask */
	long long step;             /* between asks in the window */
	long long not_yet;          /* our latest ask answered with n - 1 (0: none yet for n) */
	long long best_n, best_lo, best_hi; /* the narrowest tick placed: best_n in [best_lo, best_hi]; 0: none */
	int samples;
};

enum mafsbx_tick_step {
	MAFSBX_TICK_AGAIN, /* ask again at *next */
	MAFSBX_TICK_DONE,  /* mafsbx_tick_skew holds the bounds */
	MAFSBX_TICK_FAIL,  /* the answers contradict (the engine's clock went back) or too many */
};

void mafsbx_tick_init(struct mafsbx_tick_search *t);
/*
 * A search that starts from an earlier one's tick (best_n in [best_lo,
 * best_hi]): the first tick after our time `now` is foreseen there, give or
 * take the drift since, so it skips the first second-wide window. *next:
 * when to ask first.
 */
void mafsbx_tick_resume(struct mafsbx_tick_search *t, long long n, long long lo, long long hi, long long now,
			long long *next);
/* One answer of Date date_s, asked at our t0, answered by our t1. */
enum mafsbx_tick_step mafsbx_tick_sample(struct mafsbx_tick_search *t, long long t0, long long t1, long long date_s,
					 long long *next);
/* The skew's bounds (ns) of a finished search, and our time they hold at. */
void mafsbx_tick_skew(const struct mafsbx_tick_search *t, long long *lo, long long *hi, long long *at);

/* ---- the thread: one per process for all the clocks (calib.c) ---------------- */

/* Calibrated again this often, before the bounds (kept MAFSBX_CLOCK_KEEP_NS) age out ... */
#define MAFSBX_CALIB_PERIOD_NS (45LL * 1000000000LL)
/* ... while the clock has been used this recently: an idle mount stops asking. */
#define MAFSBX_CALIB_IDLE_NS (10LL * 60 * 1000000000LL)

struct mafsbx_eclock;

/* The clock's place in the thread's list; lives in the clock, under calib.c's lock. */
struct mafsbx_calib_slot {
	struct mafsbx_calib_slot *next;
	struct mafsbx_eclock *clock;
	long long due, used; /* our times: the next calibration, the clock's last use */
	bool joined;         /* in the thread's list: calibration was on when the clock was made */
	bool busy, leaving;
	long long tick_n, tick_lo, tick_hi; /* the last calibration's tick (0: none); the thread's alone */
};

/*
 * Calibration is the long-lived daemon's: it pays off from an engine's first
 * freeze on, while a short-lived process (the CLI, a job's monitor) would
 * spend its pings for a freeze that comes before they end or never comes.
 * Off by default; on for the clocks made after this call (fs/main.c, before
 * the mount's freezers are made). A clock made while it is off keeps the
 * Date bound for a freeze without a tighter one, which is correct, only
 * slower (up to a second on an engine's first freeze).
 */
void mafsbx_calib_enable(void);
/* Calibrate c now and periodically (starts the thread for the first clock), when calibration is on. */
void mafsbx_calib_join(struct mafsbx_calib_slot *s, struct mafsbx_eclock *c);
/* The clock was used (a freeze proof): keep calibrating it; at once when it was idle. */
void mafsbx_calib_used(struct mafsbx_calib_slot *s);
/* Never again; waits out a calibration of c under way (stops and joins the thread after the last clock). */
void mafsbx_calib_leave(struct mafsbx_calib_slot *s);

#endif
