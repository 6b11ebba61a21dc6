/*
 * test_clock.c: the bounds on the engine's clock of src/freeze/clock.c, with
 * no engine: the tightest bound of each side wins, bounds widen with their
 * age and are dropped past MAFSBX_CLOCK_KEEP_NS, a tight bound is not lost
 * to looser ones taken later, a contradicting sample (the engine's clock
 * stepped) drops the other side; and the HTTP Date parser the bounds read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
