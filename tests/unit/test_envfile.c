/*
 * test_envfile.c: `mafsbx exec`'s environment words and docker's
 * --env-file format (tools/envfile.c): KEY=VALUE, KEY alone from this
 * process's environment (omitted when unset), comments, blank lines,
 * leading blanks, CRLF, a byte order mark, later lines winning, and every
 * bad line reported with its number.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "envfile.h"

static void expect_var(json_t *env, const char *key, const char *value)
{
	json_t *v = json_object_get(env, key);
	if (!v)
		fail_msg("%s: not set", key);
	assert_string_equal(json_string_value(v), value);
}

static long parse(json_t *env, const char *text, char *why, size_t n)
{
	return envfile_parse(env, text, strlen(text), why, n);
}

static void test_put(void **state)
{
	(void)state;
	char why[256];
	json_t *env = json_object();
	assert_int_equal(envfile_put(env, "A=1", why, sizeof(why)), 0);
	assert_int_equal(envfile_put(env, "B=", why, sizeof(why)), 0);
	assert_int_equal(envfile_put(env, "C=x=y ", why, sizeof(why)), 0);
	expect_var(env, "A", "1");
	expect_var(env, "B", "");
	expect_var(env, "C", "x=y ");
	/* a name alone: the value here; unset here: not passed at all (docker exec -e KEY) */
	assert_int_equal(setenv("ENVFILE_TEST_SET", "from here", 1), 0);
	assert_int_equal(unsetenv("ENVFILE_TEST_UNSET"), 0);
	assert_int_equal(envfile_put(env, "ENVFILE_TEST_SET", why, sizeof(why)), 0);
	assert_int_equal(envfile_put(env, "ENVFILE_TEST_UNSET", why, sizeof(why)), 0);
	expect_var(env, "ENVFILE_TEST_SET", "from here");
	assert_null(json_object_get(env, "ENVFILE_TEST_UNSET"));
	assert_int_equal(json_object_size(env), 4);
	/* refusals name the word */
	assert_int_equal(envfile_put(env, "=1", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "'': not a variable name"));
	assert_int_equal(envfile_put(env, "1A=1", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "'1A': not a variable name"));
	assert_int_equal(envfile_put(env, "A B=1", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "'A B'"));
	assert_int_equal(envfile_put(env, "", why, sizeof(why)), -1);
	assert_int_equal(envfile_put(env, "A=\xff", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "not valid UTF-8"));
	assert_int_equal(json_object_size(env), 4);
	json_decref(env);
}

static void test_parse_format(void **state)
{
	(void)state;
	char why[256];
	json_t *env = json_object();
	assert_int_equal(setenv("ENVFILE_TEST_SET", "inherited", 1), 0);
	assert_int_equal(unsetenv("ENVFILE_TEST_UNSET"), 0);
	const char *text = "\xef\xbb\xbf"
			   "FIRST=1\n"
			   "# a comment\n"
			   "\n"
			   "   \t\n"
			   "  INDENTED=kept \"as is\"  \n"
			   "   # an indented comment\n"
			   "CRLF=value\r\n"
			   "HASH=a#b\n"
			   "ENVFILE_TEST_SET\n"
			   "ENVFILE_TEST_UNSET\n"
			   "FIRST=2\n"
			   "LAST=no newline";
	assert_int_equal(parse(env, text, why, sizeof(why)), 0);
	expect_var(env, "FIRST", "2");                        /* a later line wins */
	expect_var(env, "INDENTED", "kept \"as is\"  ");     /* no quoting, no trimming of the value */
	expect_var(env, "CRLF", "value");
	expect_var(env, "HASH", "a#b");
	expect_var(env, "ENVFILE_TEST_SET", "inherited");
	expect_var(env, "LAST", "no newline");
	assert_null(json_object_get(env, "ENVFILE_TEST_UNSET"));
	assert_int_equal(json_object_size(env), 6);
	json_decref(env);
	/* an empty file, only comments: nothing */
	env = json_object();
	assert_int_equal(parse(env, "", why, sizeof(why)), 0);
	assert_int_equal(parse(env, "#x\n\n", why, sizeof(why)), 0);
	assert_int_equal(json_object_size(env), 0);
	json_decref(env);
}

static void test_parse_bad_lines(void **state)
{
	(void)state;
	char why[256];
	json_t *env = json_object();
	assert_int_equal(parse(env, "A=1\n# c\n=nokey\n", why, sizeof(why)), 3);
	assert_non_null(strstr(why, "not a variable name"));
	assert_int_equal(parse(env, "A=1\nMY VAR=1\n", why, sizeof(why)), 2);
	assert_non_null(strstr(why, "'MY VAR'"));
	assert_int_equal(parse(env, "export A=1\n", why, sizeof(why)), 1);
	assert_int_equal(parse(env, "\n\nB=\xc3\x28\n", why, sizeof(why)), 3);
	assert_non_null(strstr(why, "UTF-8"));
	assert_int_equal(envfile_parse(env, "A=1\nB=x\0y\n", 10, why, sizeof(why)), 2);
	assert_non_null(strstr(why, "NUL"));
	json_decref(env);
}

static void test_load(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_envfile.XXXXXX", path[PATH_MAX], why[PATH_MAX + 512];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/env", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("GOOD=1\n\n# comment\nBAD LINE\n", f);
	assert_int_equal(fclose(f), 0);
	json_t *env = json_object();
	assert_int_equal(envfile_load(env, path, why, sizeof(why)), -1);
	char want[PATH_MAX + 16];
	snprintf(want, sizeof(want), "%s:4: 'BAD LINE'", path);
	if (!strstr(why, want))
		fail_msg("'%s' does not name %s", why, want);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("GOOD=1\nOTHER=two words\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(envfile_load(env, path, why, sizeof(why)), 0);
	expect_var(env, "OTHER", "two words");
	/* a file that is not there, and one too large to be an environment */
	char missing[PATH_MAX + 16];
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	assert_int_equal(envfile_load(env, missing, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "No such file"));
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i <= ENVFILE_MAX_BYTES / 16; i++)
		fputs("# padding line.\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(envfile_load(env, path, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "larger than"));
	json_decref(env);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put),
		cmocka_unit_test(test_parse_format),
		cmocka_unit_test(test_parse_bad_lines),
		cmocka_unit_test(test_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
