/*
 * test_paths.c: the one segment check (src/base/paths.h): what each flag lets
 * through, the first bad segment from the left named with its errno, the
 * 255/256-byte edge, and the callers' prefixes in the message.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "paths.h"

static void expect(const char *path, unsigned flags, int want, const char *want_msg)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_path_check_segments(path, flags, &e, "path '%s'", "P");
	if (r != want)
		fail_msg("\"%.60s\" (flags %u): %d, want %d (%s)", path, flags, r, want, e.message);
	if (want_msg)
		assert_string_equal(e.message, want_msg);
}

static void test_strict(void **state)
{
	(void)state;
	expect("a", MAFSBX_SEG_STRICT, 0, NULL);
	expect("a/b.c/..d/...", MAFSBX_SEG_STRICT, 0, NULL);
	expect("", MAFSBX_SEG_STRICT, -EINVAL, "path 'P' has an empty path segment");
	expect("a//b", MAFSBX_SEG_STRICT, -EINVAL, "path 'P' has an empty path segment");
	expect("dir/", MAFSBX_SEG_STRICT, -EINVAL, "path 'P' has an empty path segment");
	expect("/abs", MAFSBX_SEG_STRICT, -EINVAL, "path 'P' has an empty path segment");
	expect("a/./b", MAFSBX_SEG_STRICT, -EINVAL, "path 'P' has a '.' segment");
	expect(".", MAFSBX_SEG_STRICT, -EINVAL, "path 'P' has a '.' segment");
	expect("../x", MAFSBX_SEG_STRICT, -EINVAL, "path 'P' has a '..' segment");
	expect("x/..", MAFSBX_SEG_STRICT, -EINVAL, "path 'P' has a '..' segment");
}

static void test_flags(void **state)
{
	(void)state;
	unsigned loose = MAFSBX_SEG_ALLOW_EMPTY | MAFSBX_SEG_ALLOW_DOT;
	expect("/", loose, 0, NULL);
	expect("//a/./b/", loose, 0, NULL);
	expect("/a/../b", loose, -EINVAL, "path 'P' has a '..' segment");
	expect("/..", loose, -EINVAL, NULL);
	expect("a//b", MAFSBX_SEG_ALLOW_EMPTY, 0, NULL);
	expect("a/./b", MAFSBX_SEG_ALLOW_EMPTY, -EINVAL, "path 'P' has a '.' segment");
	expect("a/./b", MAFSBX_SEG_ALLOW_DOT, 0, NULL);
	expect("a//b", MAFSBX_SEG_ALLOW_DOT, -EINVAL, "path 'P' has an empty path segment");
}

static void test_lengths_and_order(void **state)
{
	(void)state;
	char p[600];
	memset(p, 'x', 255);
	p[255] = '\0';
	expect(p, MAFSBX_SEG_STRICT, 0, NULL);
	memset(p, 'x', 256);
	p[256] = '\0';
	expect(p, MAFSBX_SEG_STRICT, -ENAMETOOLONG, "path 'P' has a segment over 255 bytes");
	/* a long segment after a good one, and before a bad one: the leftmost fault is named */
	snprintf(p, sizeof(p), "ok/%0256d/..", 0);
	expect(p, MAFSBX_SEG_STRICT, -ENAMETOOLONG, NULL);
	snprintf(p, sizeof(p), "../%0256d", 0);
	expect(p, MAFSBX_SEG_STRICT, -EINVAL, "path 'P' has a '..' segment");
	/* a NULL error is allowed */
	assert_int_equal(mafsbx_path_check_segments("a/../b", MAFSBX_SEG_STRICT, NULL, "x"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strict),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_lengths_and_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
