/*
 * duration.c: DURATION parsing, engine timestamp parsing and short ages for
 * the reap and ls helpers. Everything here is pure and checked for overflow,
 * because a reap cutoff computed from a wrapped number would delete the
 * wrong things.
 */
#include "duration.h"

#include "buf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define DURATION_HINT "use e.g. 90s, 30m, 24h, 7d or 1h30m"

static const struct {
	char unit;
	int64_t seconds;
} units[] = {
	{ 'd', 86400 },
	{ 'h', 3600 },
	{ 'm', 60 },
	{ 's', 1 },
};

static int unit_rank(const char *u, size_t len)
{
	if (len != 1)
		return -1;
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(units); i++)
		if (units[i].unit == u[0])
			return (int)i;
	return -1;
}

int mafsbx_duration_parse(const char *text, int64_t *seconds, struct mafsbx_error *err)
{
	if (!text || !*text)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "empty DURATION: %s", DURATION_HINT);
	if (text[0] == '-')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"negative DURATION '%.64s': it must be greater than zero", text);

	int64_t total = 0;
	int last_rank = -1;
	const char *p = text;
	while (*p) {
		if (!isdigit((unsigned char)*p) && p == text)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"bad DURATION '%.64s': expected a number first (%s)", text, DURATION_HINT);
		if (!isdigit((unsigned char)*p))
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"bad DURATION '%.64s': unexpected '%c' (%s)", text, *p, DURATION_HINT);
		int64_t n = 0;
		bool too_big = false;
		while (isdigit((unsigned char)*p)) {
			if (!too_big && (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, *p - '0', &n)))
				too_big = true;
			p++;
		}
		const char *u = p;
		while (*p && isalpha((unsigned char)*p))
			p++;
		size_t ulen = (size_t)(p - u);
		if (ulen == 0) {
			if (*p == '\0' && n == 0 && !too_big && last_rank < 0)
				return mafsbx_error_set(err, MAFSBX_EK_INVALID,
							"DURATION '%.64s' must be greater than zero", text);
			if (*p == '\0')
				return mafsbx_error_set(err, MAFSBX_EK_INVALID,
							"DURATION '%.64s' lacks a unit after the last number (%s)", text,
							DURATION_HINT);
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"bad DURATION '%.64s': unexpected '%c' (%s)", text, *p, DURATION_HINT);
		}
		int rank = unit_rank(u, ulen);
		if (rank < 0)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"unknown unit '%.*s' in DURATION '%.64s' (units: d, h, m, s)",
						(int)(ulen > 16 ? 16 : ulen), u, text);
		if (rank == last_rank)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"unit '%c' appears twice in DURATION '%.64s'", *u, text);
		if (rank < last_rank)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"units out of order in DURATION '%.64s': write the largest first (e.g. 1h30m)",
						text);
		last_rank = rank;
		int64_t part;
		if (too_big || __builtin_mul_overflow(n, units[rank].seconds, &part) ||
		    __builtin_add_overflow(total, part, &total))
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "DURATION '%.64s' is too large", text);
	}
	if (total <= 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "DURATION '%.64s' must be greater than zero", text);
	*seconds = total;
	return 0;
}

/* ---- timestamps --------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (era arithmetic, valid for any year). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m)
{
	static const int dm[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* Exactly `n` digits at *p; advances. -1 when not. */
static int fixed_digits(const char **p, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	return v;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

int mafsbx_time_parse(const char *text, struct mafsbx_time *out, struct mafsbx_error *err)
{
	if (!text)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "missing timestamp");
	const char *p = text;
	int y = fixed_digits(&p, 4);
	int mo = (y >= 0 && expect(&p, '-') == 0) ? fixed_digits(&p, 2) : -1;
	int d = (mo >= 0 && expect(&p, '-') == 0) ? fixed_digits(&p, 2) : -1;
	int h = (d >= 0 && (expect(&p, 'T') == 0 || expect(&p, 't') == 0)) ? fixed_digits(&p, 2) : -1;
	int mi = (h >= 0 && expect(&p, ':') == 0) ? fixed_digits(&p, 2) : -1;
	int s = (mi >= 0 && expect(&p, ':') == 0) ? fixed_digits(&p, 2) : -1;
	if (s < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "timestamp '%.64s' is not YYYY-MM-DDTHH:MM:SS", text);
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "timestamp '%.64s' has a field out of range", text);

	int32_t nsec = 0;
	if (*p == '.') {
		p++;
		int ndig = 0;
		while (isdigit((unsigned char)p[ndig]))
			ndig++;
		if (ndig < 1 || ndig > 9)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"timestamp '%.64s' has a fraction of %d digits (1 to 9 allowed)", text, ndig);
		for (int i = 0; i < 9; i++)
			nsec = nsec * 10 + (i < ndig ? p[i] - '0' : 0);
		p += ndig;
	}

	int offset_s = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1;
		p++;
		int oh = fixed_digits(&p, 2);
		if (*p == ':')
			p++;
		int om = oh >= 0 ? fixed_digits(&p, 2) : -1;
		if (om < 0 || oh > 23 || om > 59)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "timestamp '%.64s' has a bad zone offset", text);
		offset_s = sign * (oh * 3600 + om * 60);
	} else {
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "timestamp '%.64s' has no time zone", text);
	}
	if (*p != '\0')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "timestamp '%.64s' has trailing text", text);

	out->sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_s;
	out->nsec = nsec;
	return 0;
}

int mafsbx_time_cmp(struct mafsbx_time a, struct mafsbx_time b)
{
	if (a.sec != b.sec)
		return a.sec < b.sec ? -1 : 1;
	if (a.nsec != b.nsec)
		return a.nsec < b.nsec ? -1 : 1;
	return 0;
}

struct mafsbx_time mafsbx_time_sub_clamped(struct mafsbx_time a, int64_t seconds)
{
	struct mafsbx_time r = { .sec = 0, .nsec = a.nsec };
	if (__builtin_sub_overflow(a.sec, seconds, &r.sec)) {
		r.sec = INT64_MIN;
		r.nsec = 0;
	}
	return r;
}

void mafsbx_time_format(struct mafsbx_time t, char out[32])
{
	int64_t days = t.sec / 86400, rem = t.sec % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	int64_t y;
	int m, d;
	civil_from_days(days, &y, &m, &d);
	snprintf(out, 32, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, m, d, (int)(rem / 3600),
		 (int)(rem / 60 % 60), (int)(rem % 60));
}

void mafsbx_duration_format(int64_t seconds, char out[32])
{
	if (seconds <= 0) {
		snprintf(out, 32, "0s");
		return;
	}
	size_t len = 0;
	int shown = 0;
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(units) && shown < 2; i++) {
		int64_t n = seconds / units[i].seconds;
		seconds %= units[i].seconds;
		if (n == 0 && shown == 0)
			continue;
		if (n != 0)
			len += (size_t)snprintf(out + len, 32 - len, "%lld%c", (long long)n, units[i].unit);
		shown++;
	}
}
