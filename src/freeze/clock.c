/*
 * clock.c: the engine's clock for the freeze proofs (clock.h): certain
 * bounds on its skew from our CLOCK_MONOTONIC, taken from our own pauses'
 * events, from the Date header of the engine's answers and from GET /info,
 * and the events read up to a time certainly past the engine's present.
 *
 * Why bounds and not an estimate: the freezer used to take the skew from
 * /info's SystemTime alone, as if it had been read while our call was in
 * flight. dockerd 26 serves /info through a singleflight group (its
 * api/server/router/system getInfo), so a /info arriving while another is
 * computed gets THAT answer, whose SystemTime can be older than our call by
 * as long as /info takes. The skew was then too small, the events were read
 * up to a time before our own pause ("no pause event": EIO), and a verify
 * read up to a time before the end of the transfer could miss an unpause by
 * someone else in its last moments: the proof failed open there.
 *
 * Our CLOCK_MONOTONIC, not CLOCK_REALTIME: a step of our own wall clock
 * then changes nothing. The engine's steps are caught by contradiction
 * (clock.h). The lock `mu` guards the bounds; it is a leaf, released around
 * every engine call.
 */
#include "clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "calib.h"
#include "log.h"

#define NS 1000000000LL
#define BUCKET_NS (MAFSBX_CLOCK_KEEP_NS / MAFSBX_CLOCK_BUCKETS)
/*
 * How fast the two clocks may drift apart: NTP slews a clock by at most
 * 500 ppm, each of the two. A bound a minute old is widened by 60 ms.
 */
#define CLOCK_DRIFT_PPM 1000

/* ---- the bounds ------------------------------------------------------------ */

void mafsbx_skew_init(struct mafsbx_skew_bounds *s)
{
	for (int i = 0; i < MAFSBX_CLOCK_BUCKETS; i++)
		s->b[i].id = -1, s->b[i].lo.has = s->b[i].hi.has = false;
}

static long long drift(long long age)
{
	return age > 0 ? age / (1000000 / CLOCK_DRIFT_PPM) : 0;
}

static bool side_live(const struct mafsbx_skew_side *sd, long long now)
{
	return sd->has && now - sd->at < MAFSBX_CLOCK_KEEP_NS;
}

bool mafsbx_skew_lower(const struct mafsbx_skew_bounds *s, long long now, long long *lo)
{
	bool any = false;
	for (int i = 0; i < MAFSBX_CLOCK_BUCKETS; i++) {
		const struct mafsbx_skew_side *sd = &s->b[i].lo;
		if (!side_live(sd, now))
			continue;
		long long v = sd->v - drift(now - sd->at);
		if (!any || v > *lo)
			*lo = v;
		any = true;
	}
	return any;
}

bool mafsbx_skew_upper(const struct mafsbx_skew_bounds *s, long long now, long long *hi)
{
	bool any = false;
	for (int i = 0; i < MAFSBX_CLOCK_BUCKETS; i++) {
		const struct mafsbx_skew_side *sd = &s->b[i].hi;
		if (!side_live(sd, now))
			continue;
		long long v = sd->v + drift(now - sd->at);
		if (!any || v < *hi)
			*hi = v;
		any = true;
	}
	return any;
}

/* Keep the sample in its time bucket when it is the bucket's tightest on its side. */
static void keep(struct mafsbx_skew_bounds *s, bool upper, long long v, long long at)
{
	long long id = at / BUCKET_NS;
	int i = (int)(id % MAFSBX_CLOCK_BUCKETS);
	if (s->b[i].id != id) {
		s->b[i].id = id; /* a bucket of the same slot is a full round older: past KEEP */
		s->b[i].lo.has = s->b[i].hi.has = false;
	}
	struct mafsbx_skew_side *sd = upper ? &s->b[i].hi : &s->b[i].lo;
	if (!sd->has || (upper ? v < sd->v : v > sd->v))
		*sd = (struct mafsbx_skew_side){ true, v, at };
}

static void drop_side(struct mafsbx_skew_bounds *s, bool upper)
{
	for (int i = 0; i < MAFSBX_CLOCK_BUCKETS; i++) {
		if (upper)
			s->b[i].hi.has = false;
		else
			s->b[i].lo.has = false;
	}
}

long long mafsbx_skew_add_lower(struct mafsbx_skew_bounds *s, long long lo, long long at)
{
	long long hi = 0, gap = 0;
	if (mafsbx_skew_upper(s, at, &hi) && lo > hi) {
		gap = lo - hi; /* the engine's clock went forward: the upper bounds kept are too low */
		drop_side(s, true);
	}
	keep(s, false, lo, at);
	return gap;
}

long long mafsbx_skew_add_upper(struct mafsbx_skew_bounds *s, long long hi, long long at)
{
	long long lo = 0, gap = 0;
	if (mafsbx_skew_lower(s, at, &lo) && hi < lo) {
		gap = lo - hi; /* the engine's clock went back: the lower bounds kept are too high */
		drop_side(s, false);
	}
	keep(s, true, hi, at);
	return gap;
}

/* ---- the clock of one engine --------------------------------------------------- */

struct mafsbx_eclock {
	struct mafsbx_engine *engine;
	pthread_mutex_t mu;
	struct mafsbx_skew_bounds b;
	/* the last tight upper bound (our pause's, a calibration's); dropped with the upper side on a step */
	struct mafsbx_skew_side tight;
	struct mafsbx_calib_slot cal; /* calib.c's, under its lock */
};

struct mafsbx_eclock *mafsbx_eclock_new(struct mafsbx_engine *engine)
{
	struct mafsbx_eclock *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->engine = engine;
	pthread_mutex_init(&c->mu, NULL);
	mafsbx_skew_init(&c->b);
	mafsbx_calib_join(&c->cal, c);
	return c;
}

void mafsbx_eclock_free(struct mafsbx_eclock *c)
{
	if (!c)
		return;
	mafsbx_calib_leave(&c->cal); /* before the engine or the bounds go */
	pthread_mutex_destroy(&c->mu);
	free(c);
}

long long mafsbx_eclock_local_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * NS + ts.tv_nsec;
}

static void stepped(long long gap, const char *what)
{
	if (gap)
		log_warn("freeze: the engine's clock stepped (%s contradicts the bounds kept by %lld ms); "
			 "those are dropped", what, gap / 1000000);
}

/* An answer whose Date header was `date_s`, asked at our t0, answered by t1. */
static void add_date(struct mafsbx_eclock *c, long long date_s, long long t0, long long t1)
{
	if (date_s <= 0)
		return;
	pthread_mutex_lock(&c->mu);
	long long g1 = mafsbx_skew_add_lower(&c->b, date_s * NS - t1, t0);
	long long g2 = mafsbx_skew_add_upper(&c->b, date_s * NS + NS - t0, t0);
	pthread_mutex_unlock(&c->mu);
	stepped(g1 + g2, "an answer's Date");
}

/* GET /info: its SystemTime (a lower bound only) and its Date (both). */
static int refresh(struct mafsbx_eclock *c, struct mafsbx_error *err)
{
	long long sys = 0, date_s = 0, t0 = mafsbx_eclock_local_ns();
	int r = mafsbx_engine_clock(c->engine, &sys, &date_s, err);
	long long t1 = mafsbx_eclock_local_ns();
	if (r < 0)
		return r;
	pthread_mutex_lock(&c->mu);
	long long gap = mafsbx_skew_add_lower(&c->b, sys - t1, t0);
	pthread_mutex_unlock(&c->mu);
	stepped(gap, "the engine's SystemTime");
	add_date(c, date_s, t0, t1);
	return 0;
}

long long mafsbx_eclock_before(struct mafsbx_eclock *c)
{
	for (int round = 0; round < 2; round++) {
		long long now = mafsbx_eclock_local_ns(), lo = 0;
		pthread_mutex_lock(&c->mu);
		bool known = mafsbx_skew_lower(&c->b, now, &lo);
		pthread_mutex_unlock(&c->mu);
		if (known)
			return now + lo > 0 ? now + lo : 0;
		if (round == 0 && refresh(c, NULL) < 0)
			break;
	}
	return 0;
}

void mafsbx_eclock_pause(struct mafsbx_eclock *c, long long t_req, long long p)
{
	pthread_mutex_lock(&c->mu);
	long long gap = mafsbx_skew_add_upper(&c->b, p - t_req, t_req);
	c->tight = (struct mafsbx_skew_side){ true, p - t_req, t_req };
	pthread_mutex_unlock(&c->mu);
	stepped(gap, "our pause's event");
}

struct mafsbx_engine *mafsbx_eclock_engine(struct mafsbx_eclock *c)
{
	return c->engine;
}

void mafsbx_eclock_tick(struct mafsbx_eclock *c, long long lo, long long hi, long long at)
{
	pthread_mutex_lock(&c->mu);
	long long g1 = mafsbx_skew_add_lower(&c->b, lo, at);
	if (g1)
		c->tight.has = false; /* the upper side went with the step */
	long long g2 = mafsbx_skew_add_upper(&c->b, hi, at);
	c->tight = (struct mafsbx_skew_side){ true, hi, at };
	pthread_mutex_unlock(&c->mu);
	stepped(g1 + g2, "the Date's tick");
}

/* Our time now and the engine's present at most (*until); refreshed once when unknown or too loose. */
static int until_now(struct mafsbx_eclock *c, long long *until, struct mafsbx_error *err)
{
	for (int round = 0;; round++) {
		long long now = mafsbx_eclock_local_ns(), lo = 0, hi = 0;
		pthread_mutex_lock(&c->mu);
		bool has_hi = mafsbx_skew_upper(&c->b, now, &hi), has_lo = mafsbx_skew_lower(&c->b, now, &lo);
		bool tight = has_hi && side_live(&c->tight, now) && hi <= c->tight.v + drift(now - c->tight.at);
		pthread_mutex_unlock(&c->mu);
		bool loose = has_hi && has_lo && hi - lo > MAFSBX_CLOCK_MAX_AHEAD_NS;
		if (has_hi && !loose) {
			/* says which bound the read waits on: a tight one, or a Date's second (dockerd holds the answer) */
			log_debug("freeze: events read up to a %s bound on the engine's present (%lld ms past it at most)",
				  tight ? "tight" : "Date", has_lo ? (hi - lo) / 1000000 : -1);
			*until = now + hi;
			return 0;
		}
		if (round > 0 && !has_hi)
			return mafsbx_error_set_full(err, MAFSBX_EK_ENGINE, EIO, NULL,
						     "the engine's clock cannot be bounded (its answers carry no Date "
						     "header)");
		if (round > 0) /* waiting for an `until` this far ahead is refused, not done */
			return mafsbx_error_set_full(err, MAFSBX_EK_ENGINE, EIO, NULL,
						     "the engine's clock is not known to within %lld s (its answers' "
						     "times disagree by %lld ms)",
						     MAFSBX_CLOCK_MAX_AHEAD_NS / NS, (hi - lo) / 1000000);
		int r = refresh(c, err);
		if (r < 0)
			return r;
	}
}

int mafsbx_eclock_events(struct mafsbx_eclock *c, long long since, const json_t *filters, json_t **out,
			 long long *until_out, struct mafsbx_error *err)
{
	*out = NULL;
	long long until = 0, date_s = 0;
	mafsbx_calib_used(&c->cal);
	int r = until_now(c, &until, err);
	if (r < 0)
		return r;
	if (until <= since)
		until = since + 1;
	*until_out = until;
	long long t0 = mafsbx_eclock_local_ns();
	r = mafsbx_events_read(c->engine, since, until, filters, out, &date_s, err);
	if (r == 0)
		add_date(c, date_s, t0, mafsbx_eclock_local_ns());
	return r;
}
