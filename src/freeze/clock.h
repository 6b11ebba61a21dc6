/*
 * clock.h: the engine's clock as this process knows it, for the freeze
 * proofs (freeze.c), which read the engine's events by time in ITS clock:
 * from a time certainly before our pause, up to a time certainly after the
 * present. It is kept as bounds on the skew (engine time minus our
 * CLOCK_MONOTONIC), each bound certain, never an estimate:
 *
 *   - our own pause: dockerd logs its event inside our POST .../pause, so
 *     with t_req our time just before the POST and P the event's timeNano,
 *     skew <= P - t_req (the tightest upper bound: a round trip);
 *   - an answer's Date header (every /events and /info answer): written when
 *     THAT answer began, so Date - t_resp <= skew < Date + 1 s - t_req;
 *   - the Date header's second tick, placed by calib.c's thread to a few
 *     ms: both sides, always there while the clock is used, so a first
 *     freeze does not wait on a Date bound (up to a second);
 *   - GET /info's SystemTime: skew >= SystemTime - t_resp only. dockerd 26
 *     shares one /info answer among the calls that arrive while it is being
 *     computed, so its SystemTime can predate our call by as long as /info
 *     takes (hundreds of ms on a busy swarm manager): it is no upper bound.
 *
 * A bound ages: CLOCK_DRIFT_PPM of its age is added to it, and past
 * MAFSBX_CLOCK_KEEP_NS it is dropped. A sample that contradicts the bounds
 * kept (a lower bound above the upper, or the reverse) means the engine's
 * clock stepped: the bounds on the other side are dropped. The bounds are
 * kept as the best of each of a few time buckets, so a tight bound taken
 * 50 s ago does not hide a looser one taken since.
 */
#ifndef MAFSBX_FREEZE_CLOCK_H
#define MAFSBX_FREEZE_CLOCK_H

#include <jansson.h>
#include <stdbool.h>

#include "engine.h"
#include "error.h"

/* ---- the bounds: pure logic (times in ns; `at` and `now` our CLOCK_MONOTONIC) ---- */

#define MAFSBX_CLOCK_KEEP_NS (60LL * 1000000000LL)
#define MAFSBX_CLOCK_BUCKETS 6

struct mafsbx_skew_side {
	bool has;
	long long v, at;
};

struct mafsbx_skew_bounds {
	struct {
		long long id; /* at / (KEEP / BUCKETS); -1: empty */
		struct mafsbx_skew_side lo, hi;
	} b[MAFSBX_CLOCK_BUCKETS];
};

void mafsbx_skew_init(struct mafsbx_skew_bounds *s);
/*
 * skew >= lo (add_lower) or skew <= hi (add_upper), as of our time `at`.
 * Returns how far (ns) the sample contradicted the bounds of the other side,
 * which were dropped (0: none were).
 */
long long mafsbx_skew_add_lower(struct mafsbx_skew_bounds *s, long long lo, long long at);
long long mafsbx_skew_add_upper(struct mafsbx_skew_bounds *s, long long hi, long long at);
/* The tightest bound valid at `now`, drift included; false when none is kept. */
bool mafsbx_skew_lower(const struct mafsbx_skew_bounds *s, long long now, long long *lo);
bool mafsbx_skew_upper(const struct mafsbx_skew_bounds *s, long long now, long long *hi);

/* ---- the clock of one engine ---------------------------------------------- */

/* The most an events read may wait for `until` to come (the bounds' width): beyond, it is refused. */
#define MAFSBX_CLOCK_MAX_AHEAD_NS (5LL * 1000000000LL)

struct mafsbx_eclock;

struct mafsbx_eclock *mafsbx_eclock_new(struct mafsbx_engine *engine);
void mafsbx_eclock_free(struct mafsbx_eclock *c);
/* Our time (CLOCK_MONOTONIC, ns): what t_req of mafsbx_eclock_pause is. */
long long mafsbx_eclock_local_ns(void);
/* The engine the clock reads (for calib.c's thread). */
struct mafsbx_engine *mafsbx_eclock_engine(struct mafsbx_eclock *c);
/* A calibration (calib.h): lo <= skew <= hi as of our time `at`. */
void mafsbx_eclock_tick(struct mafsbx_eclock *c, long long lo, long long hi, long long at);
/* An engine time certainly at or before its present (GET /info when no bound is kept); 0: unknown. */
long long mafsbx_eclock_before(struct mafsbx_eclock *c);
/* Our pause, asked at our time t_req, is the engine's event at p (ns). */
void mafsbx_eclock_pause(struct mafsbx_eclock *c, long long t_req, long long p);
/*
 * The engine's events (mafsbx_events_read) after `since` up to an `until`
 * certainly at or after its present when the read began (*until_out): the
 * tightest upper bound kept (a calibration's or our last pause's), or
 * one from a GET /info's Date when none is (calibration not done yet,
 * engine unreachable; dockerd then holds the answer until then: up to a
 * second). Refused
 * (EIO) when the bounds are more than MAFSBX_CLOCK_MAX_AHEAD_NS apart even
 * after a fresh /info.
 */
int mafsbx_eclock_events(struct mafsbx_eclock *c, long long since, const json_t *filters, json_t **out,
			 long long *until_out, struct mafsbx_error *err);

#endif
