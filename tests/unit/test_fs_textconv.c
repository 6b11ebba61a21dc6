/*
 * test_fs_textconv.c: text into JSON (fs/textconv.c): the UTF-8 text view of
 * exec output (U+FFFD replacement as Python's errors="replace"), its JSON
 * budget, JSON strings from untrusted text, dumped lines.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mfs.h"

/* ---- UTF-8 views ------------------------------------------------------- */

static void check_view(const char *in, size_t inlen, const char *want, size_t wantlen)
{
	size_t n = 0;
	char *out = mfs_utf8_replace((const unsigned char *)in, inlen, &n);
	assert_non_null(out);
	assert_int_equal(n, wantlen);
	assert_memory_equal(out, want, wantlen);
	free(out);
}

#define R "\xef\xbf\xbd"
#define V(in, want) check_view(in, sizeof(in) - 1, want, sizeof(want) - 1)

static void test_utf8_replace(void **state)
{
	(void)state;
	V("", "");
	V("plain", "plain");
	V("na\xc3\xafve \xe2\x82\xac \xf0\x9f\x98\x80", "na\xc3\xafve \xe2\x82\xac \xf0\x9f\x98\x80");
	V("a\0b", "a\0b");                          /* NUL is valid UTF-8 */
	V("\xff", R);                               /* invalid lead */
	V("\x80\x80", R R);                         /* lone continuations, one each */
	V("\xc3", R);                               /* truncated at the end */
	V("\xe2\x82", R);                           /* maximal subpart: one U+FFFD */
	V("\xe2\x82x", R "x");
	V("\xe0\x80\x80", R R R);                   /* overlong: E0 needs A0..BF */
	V("\xc0\xaf", R R);                         /* C0 never valid */
	V("\xed\xa0\x80", R R R);                   /* surrogate */
	V("\xf4\x90\x80\x80", R R R R);             /* above U+10FFFF */
	V("\xf0\x9f\x98", R);                       /* truncated 4-byte */
	V("ok\xf0\x9f\x98!", "ok" R "!");
	V("\r\n\t", "\r\n\t");
}

/* The capped view: cut where its JSON spelling (as jansson writes it) would pass the budget. */
static void test_utf8_view_budget(void **state)
{
	(void)state;
	size_t n = 0;
	bool cut = true;
	char *out = mfs_utf8_view((const unsigned char *)"abc", 3, 3, &n, &cut);
	assert_false(cut);
	assert_int_equal(n, 3);
	free(out);
	/* a control byte costs 6: 2 of them fit in 12, the third does not */
	out = mfs_utf8_view((const unsigned char *)"\x01\x01\x01", 3, 12, &n, &cut);
	assert_true(cut);
	assert_int_equal(n, 2);
	free(out);
	/* a multibyte character is never split; U+FFFD costs 3 */
	out = mfs_utf8_view((const unsigned char *)"a\xe2\x82\xac", 4, 3, &n, &cut);
	assert_true(cut);
	assert_int_equal(n, 1);
	free(out);
	out = mfs_utf8_view((const unsigned char *)"\xff\xff", 2, 6, &n, &cut);
	assert_false(cut);
	assert_int_equal(n, 6);
	free(out);
	/* 1 MiB of \x01 against a 64 KiB budget: the JSON string stays within it */
	size_t big = 1u << 20;
	unsigned char *ones = malloc(big);
	assert_non_null(ones);
	memset(ones, 1, big);
	out = mfs_utf8_view(ones, big, 65536, &n, &cut);
	assert_true(cut);
	json_t *j = json_stringn(out, n);
	char *dumped = json_dumps(j, JSON_ENCODE_ANY);
	assert_true(strlen(dumped) <= 65536 + 2);
	assert_true(strlen(dumped) > 65536 - 8);
	free(dumped);
	json_decref(j);
	free(out);
	free(ones);
}

/* One JSON string for untrusted text: NULL is null, bad UTF-8 is replaced. */
static void test_json_text(void **state)
{
	(void)state;
	json_t *v = mfs_json_text(NULL);
	assert_true(json_is_null(v));
	json_decref(v);
	v = mfs_json_text("plain");
	assert_string_equal(json_string_value(v), "plain");
	json_decref(v);
	v = mfs_json_text("a\xff");
	assert_string_equal(json_string_value(v), "a" R);
	json_decref(v);
}

/* A dump ends in one newline; *len counts it. */
static void test_json_dump_line(void **state)
{
	(void)state;
	json_t *o = json_pack("{s:b}", "ok", 1);
	size_t len = 0;
	char *s = mfs_json_dump_line(o, 0, &len);
	assert_string_equal(s, "{\"ok\": true}\n");
	assert_int_equal(len, strlen(s));
	free(s);
	s = mfs_json_dump_line(o, JSON_INDENT(2), NULL);
	assert_string_equal(s, "{\n  \"ok\": true\n}\n");
	free(s);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_replace),
		cmocka_unit_test(test_utf8_view_budget),
		cmocka_unit_test(test_json_text),
		cmocka_unit_test(test_json_dump_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
