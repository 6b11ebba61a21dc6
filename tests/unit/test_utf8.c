/*
 * test_utf8.c: the one UTF-8 decoder (src/base/utf8.h). Every sequence of one
 * to four bytes whose later bytes are continuation bytes is decoded, and
 * each one it accepts must be the one encoding of its code point (so no
 * overlong form and no surrogate passes); the accepted counts per length
 * are the Unicode totals. Then the edges one by one, truncation, the
 * maximal subparts one U+FFFD replaces (the Unicode standard's own
 * example), and the lead table a byte-at-a-time scanner uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "utf8.h"

/* The textbook encoder, as an oracle independent of the decoder. */
static size_t encode(uint32_t cp, unsigned char out[4])
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xC0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xE0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (unsigned char)(0xF0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

static void test_every_sequence(void **state)
{
	(void)state;
	size_t accepted[5] = { 0 };
	unsigned char s[4];
	for (unsigned lead = 0; lead < 256; lead++) {
		s[0] = (unsigned char)lead;
		for (unsigned rest = 0; rest < 64u * 64 * 64; rest++) {
			s[1] = (unsigned char)(0x80 | (rest & 0x3F));
			s[2] = (unsigned char)(0x80 | ((rest >> 6) & 0x3F));
			s[3] = (unsigned char)(0x80 | (rest >> 12));
			uint32_t cp = 0xFFFFFFFF;
			size_t n = mafsbx_utf8_decode(s, 4, &cp, NULL);
			if (n == 0)
				continue;
			/* count each accepted sequence once: only when the bytes past it are the first value */
			if (rest >> (6 * (n - 1)) != 0)
				continue;
			unsigned char want[4];
			size_t wl = encode(cp, want);
			if (wl != n || memcmp(want, s, n) != 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
				fail_msg("%02x %02x %02x %02x accepted as U+%04X (%zu bytes)", s[0], s[1], s[2], s[3],
					 (unsigned)cp, n);
			accepted[n]++;
		}
	}
	assert_int_equal(accepted[1], 0x80);
	assert_int_equal(accepted[2], 0x800 - 0x80);
	assert_int_equal(accepted[3], 0x10000 - 0x800 - 0x800);   /* less the surrogates */
	assert_int_equal(accepted[4], 0x110000 - 0x10000);
}

static void expect(const char *bytes, size_t n, size_t want_len, uint32_t want_cp, size_t want_bad)
{
	uint32_t cp = 0xFFFFFFFF;
	size_t bad = 99;
	size_t got = mafsbx_utf8_decode((const unsigned char *)bytes, n, &cp, &bad);
	if (got != want_len)
		fail_msg("%02x...: length %zu, want %zu", (unsigned char)bytes[0], got, want_len);
	if (got)
		assert_int_equal(cp, want_cp);
	else
		assert_int_equal(bad, want_bad);
	assert_int_equal(mafsbx_utf8_valid(bytes, n), got == n);
}

static void test_edges(void **state)
{
	(void)state;
	expect("\x00", 1, 1, 0, 0);
	expect("\x7F", 1, 1, 0x7F, 0);
	expect("\xC2\x80", 2, 2, 0x80, 0);
	expect("\xDF\xBF", 2, 2, 0x7FF, 0);
	expect("\xE0\xA0\x80", 3, 3, 0x800, 0);
	expect("\xED\x9F\xBF", 3, 3, 0xD7FF, 0);
	expect("\xEE\x80\x80", 3, 3, 0xE000, 0);
	expect("\xEF\xBF\xBF", 3, 3, 0xFFFF, 0);
	expect("\xF0\x90\x80\x80", 4, 4, 0x10000, 0);
	expect("\xF4\x8F\xBF\xBF", 4, 4, 0x10FFFF, 0);
	/* overlongs, surrogates, beyond U+10FFFF, stray continuation, bytes never used */
	expect("\xC0\x80", 2, 0, 0, 1);
	expect("\xC1\xBF", 2, 0, 0, 1);
	expect("\xE0\x9F\xBF", 3, 0, 0, 1);
	expect("\xED\xA0\x80", 3, 0, 0, 1);
	expect("\xED\xBF\xBF", 3, 0, 0, 1);
	expect("\xF0\x8F\xBF\xBF", 4, 0, 0, 1);
	expect("\xF4\x90\x80\x80", 4, 0, 0, 1);
	expect("\xF5\x80\x80\x80", 4, 0, 0, 1);
	expect("\x80", 1, 0, 0, 1);
	expect("\xFF", 1, 0, 0, 1);
	/* truncated: the bytes present are the maximal subpart */
	expect("\xC2", 1, 0, 0, 1);
	expect("\xE2\x82", 2, 0, 0, 2);
	expect("\xF0\x9F\x98", 3, 0, 0, 3);
	/* broken by a non-continuation byte */
	expect("\xE2\x82\x41", 3, 0, 0, 2);
	expect("\xF0\x9F\x41\x41", 4, 0, 0, 2);
	/* a NUL inside the bytes is U+0000, not an end */
	assert_true(mafsbx_utf8_valid("a\0b", 3));
	assert_false(mafsbx_utf8_valid("a\xC3", 2));
	assert_true(mafsbx_utf8_valid("", 0));
}

/* The Unicode standard's example of maximal subparts (chapter 3, U+FFFD substitution):
 * 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 gives a, FFFD, FFFD, FFFD, b, FFFD, c, FFFD, FFFD, d. */
static void test_maximal_subparts(void **state)
{
	(void)state;
	static const unsigned char in[] = { 0x61, 0xF1, 0x80, 0x80, 0xE1, 0x80, 0xC2, 0x62,
					    0x80, 0x63, 0x80, 0xBF, 0x64 };
	static const uint32_t want[] = { 'a', 0xFFFD, 0xFFFD, 0xFFFD, 'b', 0xFFFD, 'c', 0xFFFD, 0xFFFD, 'd' };
	size_t i = 0, k = 0;
	while (i < sizeof(in)) {
		uint32_t cp;
		size_t bad;
		size_t n = mafsbx_utf8_decode(in + i, sizeof(in) - i, &cp, &bad);
		assert_true(k < sizeof(want) / sizeof(want[0]));
		assert_int_equal(n ? cp : 0xFFFD, want[k++]);
		i += n ? n : bad;
	}
	assert_int_equal(k, sizeof(want) / sizeof(want[0]));
}

static void test_lead_table(void **state)
{
	(void)state;
	for (unsigned c = 0; c < 256; c++) {
		size_t len = 0;
		unsigned char lo, hi;
		bool ok = mafsbx_utf8_lead((unsigned char)c, &len, &lo, &hi);
		/* a lead is good exactly when some complete sequence starts with it */
		bool some = false;
		for (unsigned b = 0; b < 256 && !some; b++) {
			unsigned char s[4] = { (unsigned char)c, (unsigned char)b, 0xBF, 0xBF };
			size_t n = mafsbx_utf8_decode(s, 4, NULL, NULL);
			some = n > 0;
			if (n > 1 && (b < lo || b > hi))
				fail_msg("lead %02x: second byte %02x accepted outside %02x..%02x", c, b, lo, hi);
		}
		assert_int_equal(ok, some);
		if (ok && c >= 0x80)
			assert_true(len >= 2 && len <= 4);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_sequence),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_maximal_subparts),
		cmocka_unit_test(test_lead_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
