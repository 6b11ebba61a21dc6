/*
 * test_base64.c: the one base64 codec (src/base/base64.h): the RFC 4648 §10
 * vectors in both alphabets, a round trip of every input length 0..5 over
 * bytes that use every sextet, and the strict refusals (bad characters,
 * whitespace, misplaced or wrong padding, wrong length, the other
 * alphabet's characters, non-zero spare bits) plus the two caller flags.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base64.h"

static void expect_decodes(const char *text, size_t len, unsigned flags, const void *want, size_t want_len)
{
	unsigned char *d = NULL;
	size_t n = 99;
	int r = mafsbx_base64_decode(text, len, flags, &d, &n);
	if (r != 0)
		fail_msg("\"%.*s\" (flags %u) refused: %d", (int)len, text, flags, r);
	assert_non_null(d);
	assert_int_equal(n, want_len);
	if (want_len)
		assert_memory_equal(d, want, want_len);
	assert_int_equal(d[n], '\0');
	free(d);
}

static void expect_refused(const char *text, size_t len, unsigned flags)
{
	unsigned char *d = (unsigned char *)"x";
	size_t n = 99;
	int r = mafsbx_base64_decode(text, len, flags, &d, &n);
	if (r != -EINVAL)
		fail_msg("\"%.*s\" (flags %u): %d, not -EINVAL", (int)len, text, flags, r);
	assert_null(d);
	assert_int_equal(n, 0);
}

static void test_rfc4648_vectors(void **state)
{
	(void)state;
	/* RFC 4648 §10; none of these uses sextet 62 or 63, so both alphabets spell them alike. */
	static const char *plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *enc[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	static const unsigned flags[] = { MAFSBX_B64_STD, MAFSBX_B64_URL };
	for (size_t f = 0; f < 2; f++) {
		for (size_t i = 0; i < 7; i++) {
			char *e = mafsbx_base64_encode(plain[i], strlen(plain[i]), flags[f]);
			assert_non_null(e);
			assert_string_equal(e, enc[i]);
			free(e);
			expect_decodes(enc[i], strlen(enc[i]), flags[f], plain[i], strlen(plain[i]));
		}
	}
}

static void test_alphabets(void **state)
{
	(void)state;
	/* fb ff bf -> sextets 62 63 62 63; 00 10 83 ... -> the whole alphabet in order. */
	static const unsigned char hi[] = { 0xfb, 0xef, 0xbe };
	char *e = mafsbx_base64_encode(hi, 3, MAFSBX_B64_STD);
	assert_string_equal(e, "++++");
	free(e);
	static const unsigned char hi2[] = { 0xff, 0xff, 0xff };
	e = mafsbx_base64_encode(hi2, 3, MAFSBX_B64_STD);
	assert_string_equal(e, "////");
	free(e);
	e = mafsbx_base64_encode(hi2, 3, MAFSBX_B64_URL);
	assert_string_equal(e, "____");
	free(e);
	e = mafsbx_base64_encode(hi, 3, MAFSBX_B64_URL);
	assert_string_equal(e, "----");
	free(e);

	unsigned char all[48];
	for (size_t i = 0; i < 16; i++) {
		uint32_t w = (uint32_t)(4 * i) << 18 | (uint32_t)(4 * i + 1) << 12 | (uint32_t)(4 * i + 2) << 6 |
			     (uint32_t)(4 * i + 3);
		all[3 * i] = (unsigned char)(w >> 16);
		all[3 * i + 1] = (unsigned char)(w >> 8);
		all[3 * i + 2] = (unsigned char)w;
	}
	e = mafsbx_base64_encode(all, sizeof(all), MAFSBX_B64_STD);
	assert_string_equal(e, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
	expect_decodes(e, strlen(e), MAFSBX_B64_STD, all, sizeof(all));
	expect_refused(e, strlen(e), MAFSBX_B64_URL);
	free(e);
	e = mafsbx_base64_encode(all, sizeof(all), MAFSBX_B64_URL);
	assert_string_equal(e, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");
	expect_decodes(e, strlen(e), MAFSBX_B64_URL, all, sizeof(all));
	expect_refused(e, strlen(e), MAFSBX_B64_STD);
	free(e);

	/* Each of the other alphabet's two characters alone is refused, in every position. */
	static const char *cross_std[] = { "+AAA", "A/AA", "AA+A", "AAA/", "AA+=", "A/==" };
	static const char *cross_url[] = { "-AAA", "A_AA", "AA-A", "AAA_", "AA-=", "A_==" };
	for (size_t i = 0; i < 6; i++) {
		expect_refused(cross_std[i], 4, MAFSBX_B64_URL);
		expect_refused(cross_url[i], 4, MAFSBX_B64_STD);
	}
}

static void test_lengths_0_to_5(void **state)
{
	(void)state;
	static const unsigned char src[5] = { 0xfb, 0xff, 0x00, 0xfe, 0x3e };
	/* Written by hand from the bit patterns (Python base64.b64encode / urlsafe_b64encode agree). */
	static const char *std[] = { "", "+w==", "+/8=", "+/8A", "+/8A/g==", "+/8A/j4=" };
	static const char *url[] = { "", "-w==", "-_8=", "-_8A", "-_8A_g==", "-_8A_j4=" };
	for (size_t n = 0; n <= 5; n++) {
		char *e = mafsbx_base64_encode(src, n, MAFSBX_B64_STD);
		assert_string_equal(e, std[n]);
		assert_int_equal(strlen(e), (n + 2) / 3 * 4);
		expect_decodes(e, strlen(e), MAFSBX_B64_STD, src, n);
		if (n)
			expect_refused(e, strlen(e), MAFSBX_B64_URL);
		free(e);
		e = mafsbx_base64_encode(src, n, MAFSBX_B64_URL);
		assert_string_equal(e, url[n]);
		expect_decodes(e, strlen(e), MAFSBX_B64_URL, src, n);
		if (n)
			expect_refused(e, strlen(e), MAFSBX_B64_STD);
		free(e);
	}
}

static void test_strict_refusals(void **state)
{
	(void)state;
	static const char *bad[] = {
		"Zg", "Zg=", "Zm9vY", "Zm9vYg=",          /* length not a multiple of 4 */
		"Z===", "====", "=Zg=", "Zm9=v",           /* padding in the wrong place or too much */
		"Zg=a", "Zm9vYg=a", "Zg==Zg==", "Zm8=Zm8=", /* data after padding */
		"Zh==", "Zm9=", "Zm9vYh==", "Zm9vYmF=",     /* non-zero spare bits */
		"Zm9v\n", "Zm9v\r\nZm9v", " Zm9v", "Zm 9v", "Zm9\t", /* whitespace anywhere */
		"Zm!v", "Zm.v", "Zm9*", "\xc3\xa9Zm",      /* characters of no alphabet */
		"Zm9vYmFy=", "Zm9vYmFy====",                /* padding after a full quantum */
	};
	static const unsigned flags[] = { MAFSBX_B64_STD, MAFSBX_B64_URL };
	for (size_t f = 0; f < 2; f++)
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			expect_refused(bad[i], strlen(bad[i]), flags[f]);
	/* A NUL is a bad character, not the end of the text. */
	expect_refused("Zm\0v", 4, MAFSBX_B64_STD);
	expect_refused("Zg=\0", 4, MAFSBX_B64_URL);
	/* The length given is the text: a valid prefix followed by more characters is not taken. */
	expect_refused("Zm9vYmFy", 6, MAFSBX_B64_STD);
	expect_decodes("Zm9vYmFy", 4, MAFSBX_B64_STD, "foo", 3);
}

static void test_flags(void **state)
{
	(void)state;
	/* "" is the encoding of nothing; NONEMPTY callers never hold such a value. */
	expect_decodes("", 0, MAFSBX_B64_STD, "", 0);
	expect_decodes("", 0, MAFSBX_B64_URL, "", 0);
	expect_refused("", 0, MAFSBX_B64_NONEMPTY);
	expect_refused("", 0, MAFSBX_B64_URL | MAFSBX_B64_NONEMPTY);
	expect_decodes("Zg==", 4, MAFSBX_B64_NONEMPTY, "f", 1);

	/* ANY_BITS: Go's non-Strict reader; the spare bits are dropped, nothing else loosens. */
	expect_decodes("Zh==", 4, MAFSBX_B64_ANY_BITS, "f", 1);
	expect_decodes("Zm9=", 4, MAFSBX_B64_ANY_BITS, "fo", 2);
	expect_decodes("Zm9vYmF=", 8, MAFSBX_B64_ANY_BITS, "fooba", 5);
	expect_decodes("-_-=", 4, MAFSBX_B64_URL | MAFSBX_B64_ANY_BITS, "\xfb\xff", 2);
	static const char *still_bad[] = { "Zg", "Zg=a", "Z===", "Zm9v\n", "Zm-v", "Zg==Zg==" };
	for (size_t i = 0; i < sizeof(still_bad) / sizeof(still_bad[0]); i++)
		expect_refused(still_bad[i], strlen(still_bad[i]), MAFSBX_B64_ANY_BITS | MAFSBX_B64_NONEMPTY);
}

static void test_round_trip_bytes(void **state)
{
	(void)state;
	unsigned char buf[256];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(255 - i);
	static const unsigned flags[] = { MAFSBX_B64_STD, MAFSBX_B64_URL };
	for (size_t f = 0; f < 2; f++) {
		for (size_t n = 250; n <= 256; n++) {
			char *e = mafsbx_base64_encode(buf, n, flags[f]);
			assert_non_null(e);
			expect_decodes(e, strlen(e), flags[f], buf, n);
			free(e);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4648_vectors), cmocka_unit_test(test_alphabets),
		cmocka_unit_test(test_lengths_0_to_5),  cmocka_unit_test(test_strict_refusals),
		cmocka_unit_test(test_flags),           cmocka_unit_test(test_round_trip_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
