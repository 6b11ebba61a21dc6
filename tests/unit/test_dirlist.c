/*
 * test_dirlist.c: the engine plane's parser of a guest's `find -print0`
 * listing (src/guestfs/dirlist.h): names are only names, the listing is bounded and
 * says how it was cut.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dirlist.h"

static void parse(const char *buf, size_t len, size_t max, struct mafsbx_dirlist *l)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	assert_int_equal(mafsbx_dirlist_parse(buf, len, max, l, &e), 0);
}

static void test_plain(void **state)
{
	(void)state;
	static const char out[] = "./b\0./a\0./link-file\0./with\nnewline\0./.hidden\0./..x\0";
	struct mafsbx_dirlist l;
	parse(out, sizeof(out) - 1, 0, &l);
	assert_int_equal(l.n, 6);
	assert_string_equal(l.names[0], "..x");
	assert_string_equal(l.names[1], ".hidden");
	assert_string_equal(l.names[2], "a");
	assert_string_equal(l.names[3], "b");
	assert_string_equal(l.names[4], "link-file");
	assert_string_equal(l.names[5], "with\nnewline");
	assert_true(mafsbx_dirlist_has(&l, "with\nnewline"));
	assert_false(mafsbx_dirlist_has(&l, "c"));
	assert_int_equal(l.refused, 0);
	assert_int_equal(l.dropped, 0);
	assert_false(l.unterminated);
	mafsbx_dirlist_free(&l);
}

static void test_empty(void **state)
{
	(void)state;
	struct mafsbx_dirlist l;
	parse(NULL, 0, 0, &l);
	assert_int_equal(l.n, 0);
	assert_false(mafsbx_dirlist_has(&l, "a"));
	mafsbx_dirlist_free(&l);
}

/* What a hostile guest (its own find) could print instead of names. */
static void test_hostile(void **state)
{
	(void)state;
	char longname[300];
	memset(longname, 'x', sizeof(longname));
	char buf[2048];
	size_t k = 0;
	const char *bad[] = { "./", "./.", "./..", "./a/b", "./../etc", "/etc/passwd", "x", "", ".//a", "a/./b" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = strlen(bad[i]);
		memcpy(buf + k, bad[i], n + 1);
		k += n + 1;
	}
	/* 255 bytes is a name, 256 is not */
	memcpy(buf + k, "./", 2);
	memcpy(buf + k + 2, longname, 255);
	buf[k + 257] = '\0';
	k += 258;
	memcpy(buf + k, "./", 2);
	memcpy(buf + k + 2, longname, 256);
	buf[k + 258] = '\0';
	k += 259;
	/* a repeated name is listed once */
	memcpy(buf + k, "./ok\0./ok\0", 10);
	k += 10;
	/* the last entry without its NUL (output cut short) */
	memcpy(buf + k, "./cut", 5);
	k += 5;
	struct mafsbx_dirlist l;
	parse(buf, k, 0, &l);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.names[0], "ok");
	assert_int_equal(strlen(l.names[1]), 255);
	assert_int_equal(l.refused, sizeof(bad) / sizeof(bad[0]) + 1 + 1);
	assert_true(l.unterminated);
	assert_false(mafsbx_dirlist_has(&l, "cut"));
	for (size_t i = 0; i < l.n; i++)
		assert_null(strchr(l.names[i], '/'));
	mafsbx_dirlist_free(&l);
}

/* 10,000 names at most: the rest are counted, not kept. */
static void test_bound(void **state)
{
	(void)state;
	size_t total = MAFSBX_DIRLIST_MAX + 2345, len = 0;
	char *buf = malloc(total * 16);
	assert_non_null(buf);
	for (size_t i = 0; i < total; i++)
		len += (size_t)sprintf(buf + len, "./f%zu", i) + 1;
	struct mafsbx_dirlist l;
	parse(buf, len, 0, &l);
	assert_int_equal(l.n, MAFSBX_DIRLIST_MAX);
	assert_int_equal(l.dropped, 2345);
	assert_int_equal(l.refused, 0);
	/* the first ones, as the guest printed them */
	assert_true(mafsbx_dirlist_has(&l, "f0"));
	assert_true(mafsbx_dirlist_has(&l, "f9999"));
	assert_false(mafsbx_dirlist_has(&l, "f10000"));
	mafsbx_dirlist_free(&l);
	/* a smaller bound */
	parse(buf, len, 3, &l);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.dropped, total - 3);
	mafsbx_dirlist_free(&l);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
