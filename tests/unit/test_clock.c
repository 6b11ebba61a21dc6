/*
 * test_clock.c: the bounds on the engine's clock of src/freeze/clock.c, with
 * no engine: the tightest bound of each side wins, bounds widen with their
 * age and are dropped past MAFSBX_CLOCK_KEEP_NS, a tight bound is not lost
 * to looser ones taken later, a contradicting sample (the engine's clock
 * stepped) drops the other side; the HTTP Date parser the bounds read; and
 * the search for the Date's second tick (calib.h) against a simulated
 * engine: its bounds hold the true skew, are a few round trips wide, and
 * answers that contradict each other (a clock gone back) end it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "calib.h"
#include "clock.h"

#define S 1000000000LL
#define MS 1000000LL
#define T0 (1000 * S) /* our CLOCK_MONOTONIC at the first sample */

static void test_empty_knows_nothing(void **state)
{
	(void)state;
	struct mafsbx_skew_bounds b;
	mafsbx_skew_init(&b);
	long long v = 0;
	assert_false(mafsbx_skew_lower(&b, T0, &v));
	assert_false(mafsbx_skew_upper(&b, T0, &v));
}

static void test_tightest_wins(void **state)
{
	(void)state;
	struct mafsbx_skew_bounds b;
	mafsbx_skew_init(&b);
	long long v = 0;
	assert_int_equal(mafsbx_skew_add_upper(&b, 500 * MS, T0), 0);
	assert_int_equal(mafsbx_skew_add_upper(&b, 40 * MS, T0), 0);
	assert_int_equal(mafsbx_skew_add_upper(&b, 300 * MS, T0), 0);
	assert_int_equal(mafsbx_skew_add_lower(&b, -900 * MS, T0), 0);
	assert_int_equal(mafsbx_skew_add_lower(&b, 10 * MS, T0), 0);
	assert_true(mafsbx_skew_upper(&b, T0, &v));
	assert_int_equal(v, 40 * MS);
	assert_true(mafsbx_skew_lower(&b, T0, &v));
	assert_int_equal(v, 10 * MS);
}

static void test_bounds_widen_with_age_and_expire(void **state)
{
	(void)state;
	struct mafsbx_skew_bounds b;
	mafsbx_skew_init(&b);
	long long v = 0;
	mafsbx_skew_add_upper(&b, 40 * MS, T0);
	mafsbx_skew_add_lower(&b, 10 * MS, T0);
	/* 10 s later: 1000 ppm of 10 s = 10 ms on each side */
	assert_true(mafsbx_skew_upper(&b, T0 + 10 * S, &v));
	assert_int_equal(v, 50 * MS);
	assert_true(mafsbx_skew_lower(&b, T0 + 10 * S, &v));
	assert_int_equal(v, 0);
	/* past the keep period: gone */
	assert_false(mafsbx_skew_upper(&b, T0 + MAFSBX_CLOCK_KEEP_NS, &v));
	assert_false(mafsbx_skew_lower(&b, T0 + MAFSBX_CLOCK_KEEP_NS, &v));
}

static void test_tight_bound_survives_looser_later_ones(void **state)
{
	(void)state;
	struct mafsbx_skew_bounds b;
	mafsbx_skew_init(&b);
	long long v = 0;
	mafsbx_skew_add_upper(&b, 40 * MS, T0); /* a pause */
	for (int i = 1; i <= 40; i++)           /* then answers' Dates, a second loose */
		mafsbx_skew_add_upper(&b, 900 * MS, T0 + i * S);
	assert_true(mafsbx_skew_upper(&b, T0 + 40 * S, &v));
	assert_int_equal(v, 80 * MS); /* the pause's, 40 s old */
	/* once the pause's bound expired, the best of the later ones */
	assert_true(mafsbx_skew_upper(&b, T0 + MAFSBX_CLOCK_KEEP_NS + S, &v));
	assert_true(v >= 900 * MS && v < 1000 * MS);
}

static void test_step_forward_drops_the_upper_bounds(void **state)
{
	(void)state;
	struct mafsbx_skew_bounds b;
	mafsbx_skew_init(&b);
	long long v = 0;
	mafsbx_skew_add_upper(&b, 40 * MS, T0);
	mafsbx_skew_add_lower(&b, 10 * MS, T0);
	/* the engine's clock jumped 3 s ahead: a lower bound above the upper */
	long long gap = mafsbx_skew_add_lower(&b, 3010 * MS, T0 + S);
	assert_true(gap > 2900 * MS);
	assert_false(mafsbx_skew_upper(&b, T0 + S, &v));
	assert_true(mafsbx_skew_lower(&b, T0 + S, &v));
	assert_int_equal(v, 3010 * MS);
	/* a pause after the step bounds it from above again */
	assert_int_equal(mafsbx_skew_add_upper(&b, 3050 * MS, T0 + 2 * S), 0);
	assert_true(mafsbx_skew_upper(&b, T0 + 2 * S, &v));
	assert_int_equal(v, 3050 * MS);
}

static void test_step_back_drops_the_lower_bounds(void **state)
{
	(void)state;
	struct mafsbx_skew_bounds b;
	mafsbx_skew_init(&b);
	long long v = 0;
	mafsbx_skew_add_upper(&b, 40 * MS, T0);
	mafsbx_skew_add_lower(&b, 10 * MS, T0);
	assert_true(mafsbx_skew_add_upper(&b, -2 * S, T0 + S) > 0);
	assert_false(mafsbx_skew_lower(&b, T0 + S, &v));
	assert_true(mafsbx_skew_upper(&b, T0 + S, &v));
	assert_int_equal(v, -2 * S);
}

static void test_http_date(void **state)
{
	(void)state;
	assert_int_equal(mafsbx_http_date_s("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
	assert_int_equal(mafsbx_http_date_s("Mon, 07 Dec 2026 18:15:05 GMT"), 1796667305);
	assert_int_equal(mafsbx_http_date_s(NULL), 0);
	assert_int_equal(mafsbx_http_date_s(""), 0);
	assert_int_equal(mafsbx_http_date_s("Sun, 06 Nix 1994 08:49:37 GMT"), 0);
	assert_int_equal(mafsbx_http_date_s("Sun, 06 Nov 1994 08:49:37"), 0);
	assert_int_equal(mafsbx_http_date_s("Sun, 06 Nov 1994 25:49:37 GMT"), 0);
}

/* A simulated engine: its clock is ours plus `skew`; it writes an answer half a round trip after the ask. */
struct sim {
	long long skew, rtt, now;
};

static long long sim_ask(struct sim *m, long long at, long long *t0, long long *t1)
{
	*t0 = at > m->now ? at : m->now;
	*t1 = *t0 + m->rtt;
	m->now = *t1;
	long long w = *t0 + m->rtt / 2 + m->skew;
	return w / S;
}

/* Runs a search to its end (from `next`, set when resumed); returns its last step. */
static enum mafsbx_tick_step sim_run(struct sim *m, struct mafsbx_tick_search *t, long long next)
{
	long long t0, t1;
	enum mafsbx_tick_step st;
	do {
		long long d = sim_ask(m, next, &t0, &t1);
		st = mafsbx_tick_sample(t, t0, t1, d, &next);
	} while (st == MAFSBX_TICK_AGAIN);
	return st;
}

static enum mafsbx_tick_step sim_search(struct sim *m, struct mafsbx_tick_search *t)
{
	mafsbx_tick_init(t);
	return sim_run(m, t, m->now);
}

static void test_tick_search_bounds_the_skew_tightly(void **state)
{
	(void)state;
	/* every phase of the engine's second against ours, two round trips */
	for (long long rtt = 300000; rtt <= 3 * MS; rtt *= 10) {
		for (long long ph = 0; ph < S; ph += 37 * MS + 1) {
			struct sim m = { .skew = 1796667305LL * S + ph - T0, .rtt = rtt, .now = T0 };
			struct mafsbx_tick_search t;
			assert_int_equal(sim_search(&m, &t), MAFSBX_TICK_DONE);
			long long lo, hi, at;
			mafsbx_tick_skew(&t, &lo, &hi, &at);
			assert_true(lo <= m.skew && m.skew <= hi);
			assert_true(hi - lo <= 2 * rtt + 8 * MS);
			assert_true(t.samples <= 32);
			assert_true(m.now - T0 <= 2 * S + S / 4); /* two ticks after the first answer's second */
			assert_true(at >= T0 && at <= m.now);
		}
	}
}

static void test_tick_search_resumed_is_cheaper_and_never_trusted(void **state)
{
	(void)state;
	int firsts = 0, resumed = 0;
	for (long long ph = 0; ph < S; ph += 97 * MS + 1) {
		for (long long stepped = 0; stepped <= 300 * MS; stepped += 300 * MS) {
			struct sim m = { .skew = 1796667305LL * S + ph - T0, .rtt = MS, .now = T0 };
			struct mafsbx_tick_search t;
			assert_int_equal(sim_search(&m, &t), MAFSBX_TICK_DONE);
			int first = t.samples;
			/* 45 s on (the engine's clock stepped by `stepped` meanwhile), from the tick placed */
			m.now += 45 * S;
			m.skew += stepped;
			long long next = 0, lo, hi, at;
			mafsbx_tick_resume(&t, t.best_n, t.best_lo, t.best_hi, m.now, &next);
			assert_true(next > m.now);
			assert_int_equal(sim_run(&m, &t, next), MAFSBX_TICK_DONE);
			mafsbx_tick_skew(&t, &lo, &hi, &at);
			assert_true(lo <= m.skew && m.skew <= hi);
			assert_true(hi - lo <= 2 * MS + 8 * MS);
			if (!stepped)
				firsts += first, resumed += t.samples;
		}
	}
	assert_true(resumed * 5 < firsts * 4); /* fewer pings on the whole, not in each case */
}

static void test_tick_search_first_answer_only_foresees(void **state)
{
	(void)state;
	struct mafsbx_tick_search t;
	mafsbx_tick_init(&t);
	long long next = 0;
	/* one answer foresees the next tick within a second, places nothing: ask 50 ms on */
	assert_int_equal(mafsbx_tick_sample(&t, T0, T0 + MS, 5000, &next), MAFSBX_TICK_AGAIN);
	assert_int_equal(t.best_n, 0);
	assert_int_equal(t.n, 5001);
	assert_int_equal(next, T0 + 50 * MS);
	/* "already" then: tick 5001 is placed in [T0, T0 + 51 ms] and 5002 foreseen a second on */
	assert_int_equal(mafsbx_tick_sample(&t, next, next + MS, 5001, &next), MAFSBX_TICK_AGAIN);
	assert_int_equal(t.best_n, 5001);
	assert_int_equal(t.best_lo, T0);
	assert_int_equal(t.best_hi, T0 + 51 * MS);
	assert_int_equal(t.n, 5002);
	assert_int_equal(next, t.win_lo);
	assert_true(t.win_lo < T0 + S && t.win_hi > t.best_hi + S);
	/* the first ask of that window already past the tick: no lower side for it, the search starts over */
	assert_int_equal(mafsbx_tick_sample(&t, next, next + MS, 5002, &next), MAFSBX_TICK_AGAIN);
	assert_int_equal(t.n, 5003);
	assert_int_equal(t.best_n, 5001); /* what was placed stays */
}

static void test_tick_search_slow_clock_seeks_the_next_tick(void **state)
{
	(void)state;
	struct mafsbx_tick_search t;
	mafsbx_tick_init(&t);
	long long next = 0;
	assert_int_equal(mafsbx_tick_sample(&t, T0, T0 + MS, 5000, &next), MAFSBX_TICK_AGAIN);
	/* past the foreseen tick and still 5000: not a bound, the search starts over for 5001 from here */
	assert_int_equal(mafsbx_tick_sample(&t, T0 + 2 * S, T0 + 2 * S + MS, 5000, &next), MAFSBX_TICK_AGAIN);
	assert_int_equal(t.n, 5001);
	assert_int_equal(t.win_lo, T0 + 2 * S);
	assert_int_equal(t.not_yet, T0 + 2 * S);
	assert_int_equal(t.best_n, 0);
}

static void test_tick_search_contradictions_fail(void **state)
{
	(void)state;
	struct mafsbx_tick_search t;
	long long next = 0;
	/* a second older than an earlier answer's: the engine's clock went back */
	mafsbx_tick_init(&t);
	assert_int_equal(mafsbx_tick_sample(&t, T0, T0 + MS, 5000, &next), MAFSBX_TICK_AGAIN);
	assert_int_equal(mafsbx_tick_sample(&t, T0 + 2 * MS, T0 + 3 * MS, 4998, &next), MAFSBX_TICK_FAIL);
	/* "not yet" asked after an answer that had already seen the tick */
	mafsbx_tick_init(&t);
	assert_int_equal(mafsbx_tick_sample(&t, T0, T0 + MS, 5000, &next), MAFSBX_TICK_AGAIN);
	assert_int_equal(mafsbx_tick_sample(&t, T0 + 500 * MS, T0 + 501 * MS, 5001, &next), MAFSBX_TICK_AGAIN);
	assert_int_equal(mafsbx_tick_sample(&t, T0 + 600 * MS, T0 + 601 * MS, 5000, &next), MAFSBX_TICK_FAIL);
	/* no Date, or an answer before its ask */
	mafsbx_tick_init(&t);
	assert_int_equal(mafsbx_tick_sample(&t, T0, T0 + MS, 0, &next), MAFSBX_TICK_FAIL);
	mafsbx_tick_init(&t);
	assert_int_equal(mafsbx_tick_sample(&t, T0, T0 - 1, 5000, &next), MAFSBX_TICK_FAIL);
}

static void test_tick_search_is_bounded(void **state)
{
	(void)state;
	struct mafsbx_tick_search t;
	mafsbx_tick_init(&t);
	long long next = 0, at = T0;
	int steps = 0;
	enum mafsbx_tick_step st;
	/* an engine whose Date never moves: the search gives up, it does not ask forever */
	do {
		st = mafsbx_tick_sample(&t, at, at + MS, 5000, &next);
		at = next > at + MS ? next : at + MS;
		steps++;
	} while (st == MAFSBX_TICK_AGAIN);
	assert_int_equal(st, MAFSBX_TICK_FAIL);
	assert_true(steps <= MAFSBX_TICK_MAX_SAMPLES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_knows_nothing),
		cmocka_unit_test(test_tightest_wins),
		cmocka_unit_test(test_bounds_widen_with_age_and_expire),
		cmocka_unit_test(test_tight_bound_survives_looser_later_ones),
		cmocka_unit_test(test_step_forward_drops_the_upper_bounds),
		cmocka_unit_test(test_step_back_drops_the_lower_bounds),
		cmocka_unit_test(test_http_date),
		cmocka_unit_test(test_tick_search_bounds_the_skew_tightly),
		cmocka_unit_test(test_tick_search_resumed_is_cheaper_and_never_trusted),
		cmocka_unit_test(test_tick_search_first_answer_only_foresees),
		cmocka_unit_test(test_tick_search_slow_clock_seeks_the_next_tick),
		cmocka_unit_test(test_tick_search_contradictions_fail),
		cmocka_unit_test(test_tick_search_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
