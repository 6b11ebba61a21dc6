/*
 * test_duration.c: DURATION parsing for `mafsbx reap --older-than`, engine
 * timestamp parsing (the `Created` field reap compares), the clamped cutoff
 * and the short age format of `mafsbx ls`.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "duration.h"

static void test_durations_accepted(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int64_t seconds;
	} ok[] = {
		{ "90s", 90 },
		{ "30m", 1800 },
		{ "24h", 86400 },
		{ "7d", 604800 },
		{ "1h30m", 5400 },
		{ "1d12h", 129600 },
		{ "2d3h4m5s", 2 * 86400 + 3 * 3600 + 4 * 60 + 5 },
		{ "0h1s", 1 },
		{ "1s", 1 },
		{ "007m", 420 },
		{ "106751991167300d", 106751991167300LL * 86400 },
		{ "9223372036854775807s", INT64_MAX },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		int64_t s = -1;
		int ret = mafsbx_duration_parse(ok[i].text, &s, &e);
		if (ret != 0)
			fail_msg("'%s' refused: %s", ok[i].text, e.message);
		if (s != ok[i].seconds)
			fail_msg("'%s' gave %lld, want %lld", ok[i].text, (long long)s, (long long)ok[i].seconds);
	}
}

static void test_durations_refused(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		const char *message_has;
	} bad[] = {
		{ "", "empty" },
		{ NULL, "empty" },
		{ "0", "greater than zero" },
		{ "0s", "greater than zero" },
		{ "0d0h0m0s", "greater than zero" },
		{ "-5m", "negative" },
		{ "5x", "unknown unit 'x'" },
		{ "5ms", "unknown unit 'ms'" },
		{ "5min", "unknown unit 'min'" },
		{ "90", "lacks a unit" },
		{ "1h30", "lacks a unit" },
		{ "h", "expected a number" },
		{ "+5m", "expected a number" },
		{ " 5m", "expected a number" },
		{ "5m ", "unexpected ' '" },
		{ "1.5h", "unexpected '.'" },
		{ "1h1h", "twice" },
		{ "30m1h", "out of order" },
		{ "9223372036854775808s", "too large" },
		{ "106751991167301d", "too large" },
		{ "99999999999999999999999d", "too large" },
		{ "9223372036854775807s1s", "twice" },
		{ "106751991167300d23h59m59s", "too large" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		int64_t s = 12345;
		int ret = mafsbx_duration_parse(bad[i].text, &s, &e);
		if (ret != -EINVAL)
			fail_msg("'%s' accepted (ret %d, %lld s)", bad[i].text ? bad[i].text : "(null)", ret, (long long)s);
		assert_int_equal(e.kind, MAFSBX_EK_INVALID);
		assert_int_equal(s, 12345);
		if (!strstr(e.message, bad[i].message_has))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].text ? bad[i].text : "(null)", e.message,
				 bad[i].message_has);
		assert_non_null(strstr(e.message, "DURATION"));
	}
}

static void test_timestamps(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int64_t sec;
		int32_t nsec;
	} ok[] = {
		{ "1970-01-01T00:00:00Z", 0, 0 },
		{ "2026-12-02T09:04:28.325784037Z", 1796202268, 325784037 },
		{ "2026-12-02T10:04:28.325784037+01:00", 1796202268, 325784037 },
		{ "2026-12-02T08:34:28.5-00:30", 1796202268, 500000000 },
		{ "2026-12-02T04:04:28-0500", 1796202268, 0 },
		{ "2000-02-29T23:59:59.000000001Z", 951868799, 1 },
		{ "1969-12-31T23:59:59Z", -1, 0 },
		{ "0001-01-01T00:00:00Z", -62135596800LL, 0 },
		{ "9999-12-31T23:59:59Z", 253402300799LL, 0 },
		{ "2026-12-02t09:04:28.325784037z", 1796202268, 325784037 },  /* RFC 3339 5.6: lower case */
		{ "2026-12-02T09:05:15.84894495Z", 1796202315, 848944950 },   /* 8 digits, as dockerd writes */
		{ "2024-02-29T00:00:00Z", 1709164800LL, 0 },                  /* leap day */
		{ "2026-12-02T11:04:28+02:00", 1796202268, 0 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		struct mafsbx_time t = { 7, 7 };
		if (mafsbx_time_parse(ok[i].text, &t, &e) != 0)
			fail_msg("'%s' refused: %s", ok[i].text, e.message);
		if (t.sec != ok[i].sec || t.nsec != ok[i].nsec)
			fail_msg("'%s' gave %lld.%09d, want %lld.%09d", ok[i].text, (long long)t.sec, (int)t.nsec,
				 (long long)ok[i].sec, (int)ok[i].nsec);
	}

	static const char *const bad[] = {
		"2026-12-02T09:04:28",            /* no zone: upstream refuses a naive time */
		"2026-12-02T09:04:28.123",
		"2026-12-02 09:04:28Z",
		"2026-13-02T09:04:28Z",
		"2026-02-29T09:04:28Z",           /* not a leap year */
		"2026-12-02T24:00:00Z",
		"2026-12-02T09:60:00Z",
		"2026-12-02T09:04:60Z",
		"2026-12-02T09:04:28.Z",
		"2026-12-02T09:04:28.1234567890Z",
		"2026-12-02T09:04:28+1:00",
		"2026-12-02T09:04:28+24:00",
		"2026-12-02T09:04:28+01:60",
		"2026-12-02T09:04:28+01:",
		"2026-12-02T09:04:28+01",
		"2026-02-30T09:04:28Z",
		"2026-12-02X09:04:28Z",
		"2026-12-02T09:04:28Zjunk",
		"0000-01-01T00:00:00Z",
		"26-12-02T09:04:28Z",
		"",
		"1796202268",
		NULL,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		struct mafsbx_time t;
		if (mafsbx_time_parse(bad[i], &t, &e) != -EINVAL)
			fail_msg("'%s' accepted", bad[i] ? bad[i] : "(null)");
		assert_int_equal(e.kind, MAFSBX_EK_INVALID);
	}
}

static void test_compare_and_cutoff(void **state)
{
	(void)state;
	struct mafsbx_time a = { 100, 5 }, b = { 100, 6 }, c = { 101, 0 };
	assert_int_equal(mafsbx_time_cmp(a, b), -1);
	assert_int_equal(mafsbx_time_cmp(b, a), 1);
	assert_int_equal(mafsbx_time_cmp(b, c), -1);
	assert_int_equal(mafsbx_time_cmp(c, c), 0);

	struct mafsbx_time cut = mafsbx_time_sub_clamped(c, 60);
	assert_int_equal(cut.sec, 41);
	assert_int_equal(cut.nsec, 0);
	cut = mafsbx_time_sub_clamped((struct mafsbx_time){ 1796202268, 42 }, 86400);
	assert_int_equal(cut.sec, 1796115868);
	assert_int_equal(cut.nsec, 42);

	/* The overflow case keeps everything: nothing parses earlier than the clamp. */
	cut = mafsbx_time_sub_clamped((struct mafsbx_time){ -10, 0 }, INT64_MAX);
	assert_int_equal(cut.sec, INT64_MIN);
	struct mafsbx_time oldest;
	assert_int_equal(mafsbx_time_parse("0001-01-01T00:00:00Z", &oldest, NULL), 0);
	assert_true(mafsbx_time_cmp(oldest, cut) > 0);
}

static void test_formats(void **state)
{
	(void)state;
	char out[32];
	mafsbx_time_format((struct mafsbx_time){ 1796202268, 999 }, out);
	assert_string_equal(out, "2026-12-02T09:04:28Z");
	mafsbx_time_format((struct mafsbx_time){ -1, 0 }, out);
	assert_string_equal(out, "1969-12-31T23:59:59Z");
	mafsbx_time_format((struct mafsbx_time){ 951868799, 0 }, out);
	assert_string_equal(out, "2000-02-29T23:59:59Z");

	static const struct {
		int64_t s;
		const char *text;
	} ages[] = {
		{ -5, "0s" }, { 0, "0s" }, { 59, "59s" }, { 90, "1m30s" }, { 3600, "1h" },
		{ 5400, "1h30m" }, { 86400 + 5, "1d" }, { 3 * 86400 + 4 * 3600 + 7, "3d4h" },
		{ INT64_MAX, "106751991167300d15h" },
	};
	for (size_t i = 0; i < sizeof(ages) / sizeof(ages[0]); i++) {
		mafsbx_duration_format(ages[i].s, out);
		assert_string_equal(out, ages[i].text);
	}

	/* A parsed DURATION formats back to an equal value when it has at most two units. */
	int64_t s;
	assert_int_equal(mafsbx_duration_parse("1h30m", &s, NULL), 0);
	mafsbx_duration_format(s, out);
	assert_string_equal(out, "1h30m");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations_accepted),
		cmocka_unit_test(test_durations_refused),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_compare_and_cutoff),
		cmocka_unit_test(test_formats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
