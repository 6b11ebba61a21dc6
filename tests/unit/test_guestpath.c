/*
 * test_guestpath.c: the guest path table (doc/upstream.md
 * §5.1, §5.2, §11.1): normalisation, resolution under a
 * working directory with the separator rule, the text refusals, the ancestor
 * chain, and the narrow name rule.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guestpath.h"

static void test_normalise(void **state)
{
	(void)state;
	static const char *const rows[][2] = {
		{ "/", "/" },
		{ "//", "/" },
		{ "///", "/" },
		{ "//maf-sandbox/work", "/maf-sandbox/work" },
		{ "///maf-sandbox//work/", "/maf-sandbox/work" },
		{ "/a/./b/.", "/a/b" },
		{ "/a/b/..", "/a" },
		{ "/a/b/../..", "/" },
		{ "/..", "/" },
		{ "/../../etc/passwd", "/etc/passwd" },
		{ "/a/../../b", "/b" },
		{ "", "." },
		{ ".", "." },
		{ "./", "." },
		{ "a/b/../c", "a/c" },
		{ "a/..", "." },
		{ "..", ".." },
		{ "../a", "../a" },
		{ "a/../../b", "../b" },
		{ "../../x", "../../x" },
		{ "out.txt", "out.txt" },
		{ "real//inside.txt/", "real/inside.txt" },
		{ "...", "..." },
		{ "/a/.../b", "/a/.../b" },
		{ "/a/..b/c", "/a/..b/c" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mafsbx_error e;
		char *got = mafsbx_gp_normalise(rows[i][0], &e);
		if (!got || strcmp(got, rows[i][1]) != 0)
			fail_msg("normalise(%s) = %s, want %s", rows[i][0], got ? got : "(error)", rows[i][1]);
		free(got);
	}
}

struct rrow {
	const char *wd;
	const char *path;
	const char *want;      /* NULL: refused */
	enum mafsbx_err_kind kind;
};

static void test_resolve(void **state)
{
	(void)state;
	static const struct rrow rows[] = {
		{ "/w", "out.txt", "/w/out.txt", 0 },
		{ "/w", "real/inside.txt", "/w/real/inside.txt", 0 },
		{ "/w", ".", "/w", 0 },
		{ "/w", "", "/w", 0 },
		{ "/w", "a/../b", "/w/b", 0 },
		{ "/w", "/w/x", "/w/x", 0 },
		{ "/w/.", "out.txt", "/w/out.txt", 0 },
		{ "//maf-sandbox/work", "x", "/maf-sandbox/work/x", 0 },
		{ "/maf-sandbox/work/", "x/", "/maf-sandbox/work/x", 0 },
		{ "/", "etc/passwd", "/etc/passwd", 0 },
		{ "/", "/etc/passwd", "/etc/passwd", 0 },
		{ "/", "..", "/", 0 },
		/* escapes; the sibling that shares the prefix is outside */
		{ "/w", "..", NULL, MAFSBX_EK_INVALID },
		{ "/w", "../w-outside/planted.txt", NULL, MAFSBX_EK_INVALID },
		{ "/w/sub", "../sub2/x", NULL, MAFSBX_EK_INVALID },
		{ "/w", "/w-outside/secret.txt", NULL, MAFSBX_EK_INVALID },
		{ "/w", "/etc/passwd", NULL, MAFSBX_EK_INVALID },
		{ "/w", "a/../../x", NULL, MAFSBX_EK_INVALID },
		/* text refusals */
		{ "/w", "sub\\file.txt", NULL, MAFSBX_EK_INVALID },
		{ "/w\\x", "a", NULL, MAFSBX_EK_INVALID },
		{ "w", "a", NULL, MAFSBX_EK_INVALID },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		char *got = mafsbx_gp_resolve(rows[i].wd, rows[i].path, &e);
		if (rows[i].want) {
			if (!got || strcmp(got, rows[i].want) != 0)
				fail_msg("resolve(%s, %s) = %s (%s), want %s", rows[i].wd, rows[i].path,
					 got ? got : "(error)", e.message, rows[i].want);
		} else {
			if (got)
				fail_msg("resolve(%s, %s) = %s, want a refusal", rows[i].wd, rows[i].path, got);
			assert_int_equal(e.kind, rows[i].kind);
			assert_int_equal(e.err, EINVAL);
		}
		free(got);
	}
}

static void test_escape_message(void **state)
{
	(void)state;
	struct mafsbx_error e;
	assert_null(mafsbx_gp_resolve("/w", "../w-outside/x", &e));
	assert_non_null(strstr(e.message, "outside working directory"));
	assert_null(mafsbx_gp_resolve("/w", "a\\b", &e));
	assert_non_null(strstr(e.message, "backslash"));
}

static void test_long_components(void **state)
{
	(void)state;
	char name[300];
	memset(name, 'x', 255);
	name[255] = '\0';
	struct mafsbx_error e;
	char *ok = mafsbx_gp_resolve("/w", name, &e);
	assert_non_null(ok);
	free(ok);
	memset(name, 'x', 256);
	name[256] = '\0';
	assert_null(mafsbx_gp_resolve("/w", name, &e));
	assert_int_equal(e.kind, MAFSBX_EK_NAMETOOLONG);
	assert_int_equal(e.err, ENAMETOOLONG);
	assert_int_equal(mafsbx_gp_check_text(name, &e), -ENAMETOOLONG);
	/* a whole path over 4095 bytes */
	char *big = malloc(5000);
	for (size_t i = 0; i < 4999; i++)
		big[i] = (i % 100 == 0) ? '/' : 'a';
	big[4999] = '\0';
	assert_int_equal(mafsbx_gp_check_text(big, &e), -ENAMETOOLONG);
	free(big);
	/* NUL inside a byte path */
	assert_int_equal(mafsbx_gp_check_bytes("fi\0le", 5, &e), -EINVAL);
	assert_int_equal(mafsbx_gp_check_bytes("file", 4, &e), 0);
}

static void test_resolve_write(void **state)
{
	(void)state;
	struct mafsbx_error e;
	static const char *const refused[] = { ".", "", "./", "a/..", "/w", "/w/", "//w/." };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		mafsbx_error_clear(&e);
		char *r = mafsbx_gp_resolve_write("/w", refused[i], &e);
		if (r)
			fail_msg("resolve_write(/w, %s) = %s, want refusal", refused[i], r);
		assert_int_equal(e.kind, MAFSBX_EK_INVALID);
		assert_non_null(strstr(e.message, "working directory itself"));
	}
	char *r = mafsbx_gp_resolve_write("/w/.", "x", &e);
	assert_string_equal(r, "/w/x");
	free(r);
}

static void test_relative(void **state)
{
	(void)state;
	struct mafsbx_error e;
	char *r = mafsbx_gp_relative("/maf-sandbox/work/.", "/maf-sandbox/work/out.txt", &e);
	assert_string_equal(r, "out.txt");
	free(r);
	r = mafsbx_gp_relative("/w", "/w", &e);
	assert_string_equal(r, ".");
	free(r);
	r = mafsbx_gp_relative("/", "/etc/passwd", &e);
	assert_string_equal(r, "etc/passwd");
	free(r);
	assert_null(mafsbx_gp_relative("/w", "/w-outside/x", &e));
}

static void test_dirname(void **state)
{
	(void)state;
	static const char *const rows[][2] = { { "/a/b", "/a" }, { "/a", "/" }, { "/", "/" }, { "/a/b/c", "/a/b" } };
	for (size_t i = 0; i < 4; i++) {
		char *d = mafsbx_gp_dirname(rows[i][0], NULL);
		assert_string_equal(d, rows[i][1]);
		free(d);
	}
	assert_true(mafsbx_gp_is_within("/w", "/w"));
	assert_true(mafsbx_gp_is_within("/w", "/w/x"));
	assert_false(mafsbx_gp_is_within("/w", "/w-outside"));
	assert_false(mafsbx_gp_is_within("/w/sub", "/w/sub2"));
	assert_true(mafsbx_gp_is_within("/", "/anything"));
}

static void expect_chain(const char *wd, const char *target, bool self, const char *const *want, size_t n,
			 size_t n_above)
{
	struct mafsbx_gp_chain c;
	struct mafsbx_error e;
	assert_int_equal(mafsbx_gp_ancestors(wd, target, self, &c, &e), 0);
	if (c.n != n)
		fail_msg("chain(%s, %s) has %zu entries, want %zu", wd, target, c.n, n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(c.paths[i], want[i]) != 0)
			fail_msg("chain(%s, %s)[%zu] = %s, want %s", wd, target, i, c.paths[i], want[i]);
	assert_int_equal(c.n_above, n_above);
	mafsbx_gp_chain_free(&c);
}

static void test_ancestors(void **state)
{
	(void)state;
	/* the upstream stat order for out/hostname with out -> /etc */
	const char *a[] = { "/maf-sandbox", "/maf-sandbox/work", "/maf-sandbox/work/out" };
	expect_chain("/maf-sandbox/work", "/maf-sandbox/work/out/hostname", false, a, 3, 1);
	/* from the FIRST component of W, so /maf-sandbox -> / is caught */
	const char *b[] = { "/maf-sandbox", "/maf-sandbox/work" };
	expect_chain("/maf-sandbox/work", "/maf-sandbox/work/x", false, b, 2, 1);
	/* the target equal to W: the chain still holds W */
	expect_chain("/maf-sandbox/work", "/maf-sandbox/work", false, b, 2, 1);
	/* include_self */
	const char *c[] = { "/maf-sandbox", "/maf-sandbox/work", "/maf-sandbox/work/d", "/maf-sandbox/work/d/e" };
	expect_chain("/maf-sandbox/work", "/maf-sandbox/work/d/e", true, c, 4, 1);
	/* double leading slash and a trailing /. in W */
	expect_chain("//maf-sandbox/work/.", "/maf-sandbox/work/out/hostname", false, a, 3, 1);
	/* W = / : no entry for / itself */
	const char *d[] = { "/etc" };
	expect_chain("/", "/etc/passwd", false, d, 1, 0);
	expect_chain("/", "/passwd", false, NULL, 0, 0);
	const char *e1[] = { "/w", "/w/deep", "/w/deep/er", "/w/deep/er/est" };
	expect_chain("/w", "/w/deep/er/est/leaf.txt", false, e1, 4, 0);
	/* a target outside W is refused */
	struct mafsbx_gp_chain ch;
	struct mafsbx_error er;
	assert_int_equal(mafsbx_gp_ancestors("/w", "/w-outside/x", false, &ch, &er), -EINVAL);
	assert_int_equal(mafsbx_gp_ancestors("/w", "relative", false, &ch, &er), -EINVAL);
}

static void test_names(void **state)
{
	(void)state;
	struct mafsbx_error e;
	static const char *const ok[] = { "result.json", "plots/fig1.png", "a/b/c", "...", "..a", "x y", "ünï.txt" };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (mafsbx_gp_check_name(ok[i], MAFSBX_GP_NAME_STRICT, &e) != 0)
			fail_msg("name %s refused: %s", ok[i], e.message);
		assert_int_equal(mafsbx_gp_check_name(ok[i], 0, &e), 0);
	}
	static const char *const bad[] = { "", "/abs", "a//b", "a/", "./a", "a/./b", "..", "a/../b", "sub\\f" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (mafsbx_gp_check_name(bad[i], 0, &e) != -EINVAL)
			fail_msg("name '%s' accepted", bad[i]);
		assert_int_equal(mafsbx_gp_check_name(bad[i], MAFSBX_GP_NAME_STRICT, &e), -EINVAL);
	}
	/* the strict rule: control bytes and invalid UTF-8; the loose one lets them through */
	static const char *const strict_bad[] = { "a\nb", "tab\there", "bad\xffutf8", "\xc0\xaf", "\xed\xa0\x80" };
	for (size_t i = 0; i < sizeof(strict_bad) / sizeof(strict_bad[0]); i++) {
		assert_int_equal(mafsbx_gp_check_name(strict_bad[i], MAFSBX_GP_NAME_STRICT, &e), -EINVAL);
		assert_int_equal(mafsbx_gp_check_name(strict_bad[i], 0, &e), 0);
	}
	/* lengths: 255 per component; strict also 255 in all */
	char n[600];
	memset(n, 'a', 255);
	n[255] = '\0';
	assert_int_equal(mafsbx_gp_check_name(n, MAFSBX_GP_NAME_STRICT, &e), 0);
	n[255] = 'a';
	n[256] = '\0';
	assert_int_equal(mafsbx_gp_check_name(n, 0, &e), -ENAMETOOLONG);
	memset(n, 'a', 300);
	n[150] = '/';
	n[300] = '\0';
	assert_int_equal(mafsbx_gp_check_name(n, 0, &e), 0);
	assert_int_equal(mafsbx_gp_check_name(n, MAFSBX_GP_NAME_STRICT, &e), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalise),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_escape_message),
		cmocka_unit_test(test_long_components),
		cmocka_unit_test(test_resolve_write),
		cmocka_unit_test(test_relative),
		cmocka_unit_test(test_dirname),
		cmocka_unit_test(test_ancestors),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
