/*
 * test_execmark.c: which of a container's processes are one exec's
 * (execmark.h): the environment readers (the marker found across chunk
 * edges, only as a whole entry, never as a prefix, a suffix or a value of
 * another variable; the value read as getenv reads it), /proc/PID/stat's
 * fields after a command name holding ')' and spaces, and the selection
 * rule: the root's descendants and the marked with theirs, never the init,
 * never PID 1, never a process older than the root (marked or not), never
 * another exec's, a parent outside the list or a loop of recycled PIDs
 * deciding no.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "execmark.h"

#define MARK "MAFSBX_EXEC_ID=0123456789abcdef"

static bool match_chunks(const char *block, size_t n, size_t chunk)
{
	struct mafsbx_environ_match m;
	mafsbx_environ_match_init(&m, MARK);
	for (size_t at = 0; at < n; at += chunk)
		mafsbx_environ_match_feed(&m, block + at, n - at < chunk ? n - at : chunk);
	return mafsbx_environ_match_end(&m);
}

/* Every chunk size gives the same answer as the whole block at once. */
static bool match(const char *block, size_t n)
{
	bool whole = match_chunks(block, n, n ? n : 1);
	for (size_t c = 1; c <= n; c++)
		assert_int_equal(match_chunks(block, n, c), whole);
	return whole;
}

#define BLOCK(s) (s), sizeof(s) - 1

static void environ_match(void **state)
{
	(void)state;
	assert_true(match(BLOCK("PATH=/bin\0" MARK "\0HOME=/root\0")));
	assert_true(match(BLOCK(MARK "\0")));
	assert_true(match(BLOCK("A=1\0" MARK)));   /* the last entry without its NUL */
	assert_false(match(BLOCK("")));
	assert_false(match(BLOCK("PATH=/bin\0HOME=/\0")));
	assert_false(match(BLOCK("MAFSBX_EXEC_ID=0123456789abcdef0\0")));   /* longer value */
	assert_false(match(BLOCK("MAFSBX_EXEC_ID=0123456789abcde\0")));     /* a prefix of it */
	assert_false(match(BLOCK("X" MARK "\0")));                           /* another variable */
	assert_false(match(BLOCK("Y=" MARK "\0")));                          /* inside a value */
	assert_false(match(BLOCK("MAFSBX_EXEC_ID=0123456789abcdef\n\0")));
	assert_false(match(BLOCK("MAFSBX_EXEC_ID=01234567\0" "89abcdef\0")));  /* split by a NUL */
	/* a long environment before it */
	size_t big = 100000;
	char *b = malloc(big + sizeof(MARK) + 1);
	assert_non_null(b);
	memset(b, 'x', big);
	b[big - 1] = '\0';
	memcpy(b + big, MARK, sizeof(MARK));
	assert_true(match_chunks(b, big + sizeof(MARK), 16384));
	assert_true(match_chunks(b, big + sizeof(MARK), 7));
	free(b);
}

static void environ_mark(void **state)
{
	(void)state;
	char v[MAFSBX_EXEC_MARK_MAX + 1];
	assert_int_equal(mafsbx_environ_mark(BLOCK("A=1\0" MARK "\0B=2\0"), v), 0);
	assert_string_equal(v, "0123456789abcdef");
	assert_int_equal(mafsbx_environ_mark(BLOCK("A=1\0" MARK), v), 0);   /* no final NUL */
	assert_string_equal(v, "0123456789abcdef");
	/* the first entry counts, as getenv reads it */
	assert_int_equal(mafsbx_environ_mark(BLOCK("MAFSBX_EXEC_ID=aaaaaaaa\0" MARK "\0"), v), 0);
	assert_string_equal(v, "aaaaaaaa");
	assert_int_equal(mafsbx_environ_mark(BLOCK("MAFSBX_EXEC_ID=xyz12345\0" MARK "\0"), v), -ENOENT);
	assert_int_equal(mafsbx_environ_mark(BLOCK("MAFSBX_EXEC_ID=abc\0"), v), -ENOENT);   /* too short */
	assert_int_equal(mafsbx_environ_mark(BLOCK("MAFSBX_EXEC_ID=\0"), v), -ENOENT);
	assert_int_equal(mafsbx_environ_mark(BLOCK("MAFSBX_EXEC_IDX=aaaaaaaa\0"), v), -ENOENT);
	assert_int_equal(mafsbx_environ_mark(BLOCK("A=1\0B=2\0"), v), -ENOENT);
	assert_int_equal(mafsbx_environ_mark(BLOCK(""), v), -ENOENT);
	char longv[200] = "MAFSBX_EXEC_ID=";
	memset(longv + 15, 'a', 65);   /* 65 digits: one too many */
	assert_int_equal(mafsbx_environ_mark(longv, strlen(longv), v), -ENOENT);
	longv[15 + 64] = '\0';
	assert_int_equal(mafsbx_environ_mark(longv, strlen(longv), v), 0);
	assert_int_equal(strlen(v), 64);
}

static void mark_values(void **state)
{
	(void)state;
	char a[MAFSBX_EXEC_MARK_MAX + 1], b[MAFSBX_EXEC_MARK_MAX + 1];
	assert_int_equal(mafsbx_exec_mark_new(a), 0);
	assert_int_equal(mafsbx_exec_mark_new(b), 0);
	assert_true(mafsbx_exec_mark_valid(a));
	assert_int_equal(strlen(a), 32);
	assert_string_not_equal(a, b);
	assert_true(mafsbx_exec_mark_valid("0123456789abcdef"));
	assert_false(mafsbx_exec_mark_valid("0123456"));
	assert_false(mafsbx_exec_mark_valid("0123456789ABCDEF"));
	assert_false(mafsbx_exec_mark_valid("01234567 "));
	assert_false(mafsbx_exec_mark_valid(""));
	assert_false(mafsbx_exec_mark_valid(NULL));
}

static void stat_fields(void **state)
{
	(void)state;
	long ppid = 0;
	unsigned long long start = 0;
	static const char plain[] = "4242 (sleep) S 4200 4242 4200 0 -1 4194560 90 0 0 0 0 0 0 0 20 0 1 0 "
				    "123456789 1634304 183 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
	assert_int_equal(mafsbx_proc_stat_fields(BLOCK(plain), &ppid, &start), 0);
	assert_int_equal(ppid, 4200);
	assert_int_equal(start, 123456789ULL);
	/* a command name with ") S 1 " in it: the last ')' counts */
	static const char tricky[] = "77 (a) S 1 2 3) R 66 77 66 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 999 1 1\n";
	assert_int_equal(mafsbx_proc_stat_fields(BLOCK(tricky), &ppid, &start), 0);
	assert_int_equal(ppid, 66);
	assert_int_equal(start, 999ULL);
	static const char cut[] = "77 (sh) S 66 77 66 0";
	assert_int_equal(mafsbx_proc_stat_fields(BLOCK(cut), &ppid, &start), -EINVAL);
	static const char noparen[] = "77 sh S 66 77 66 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 999";
	assert_int_equal(mafsbx_proc_stat_fields(BLOCK(noparen), &ppid, &start), -EINVAL);
	assert_int_equal(mafsbx_proc_stat_fields(BLOCK(""), &ppid, &start), -EINVAL);
}

/* The container of the examples: init 1000 (guest PID 1), docker-init's
 * child 1001 started with it, an earlier exec's process 1002, and exec X,
 * root 2000 started at 500. */
#define P(pid_, ppid_, start_, marked_) { .pid = (pid_), .ppid = (ppid_), .start = (start_), .marked = (marked_) }

static bool chosen(const struct mafsbx_tree_proc *p, size_t n, long pid)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].pid == pid)
			return p[i].chosen;
	fail_msg("no process %ld", pid);
	return false;
}

static void select_rule(void **state)
{
	(void)state;
	struct mafsbx_tree_rule rule = { .root_pid = 2000, .root_start = 500, .init_pid = 1000 };
	/* listed in no order: children before parents, PIDs wrapped */
	struct mafsbx_tree_proc p[] = {
		P(2003, 2001, 520, false),   /* grandchild by parentage */
		P(1000, 900, 10, true),      /* the init, even marked */
		P(2000, 1999, 500, true),    /* the root (its parent the shim, not listed) */
		P(1001, 1000, 11, true),     /* docker-init's child: older than the root */
		P(1002, 3000, 200, true),    /* an earlier process carrying the marker: older */
		P(2001, 2000, 510, false),   /* child of the root, environment cleared */
		P(2100, 1000, 530, true),    /* daemonised: adopted by init, marked */
		P(2101, 2100, 531, false),   /* its child, environment cleared */
		P(2200, 1000, 540, false),   /* daemonised with its environment cleared: lost */
		P(3000, 2999, 600, false),   /* another exec's root */
		P(3001, 3000, 601, false),   /* and its child */
		P(3002, 1000, 602, false),   /* another exec's daemon */
		P(5, 2000, 700, false),      /* a child whose PID wrapped below the root's */
		P(1, 0, 0, true),            /* PID 1 whatever it says */
		P(4000, 4001, 800, false),   /* a loop of recycled PIDs */
		P(4001, 4000, 801, false),
	};
	size_t n = sizeof(p) / sizeof(p[0]);
	assert_int_equal(mafsbx_tree_select(p, n, &rule), 6);
	for (size_t i = 1; i < n; i++)
		assert_true(p[i - 1].pid < p[i].pid);   /* sorted by pid */
	long yes[] = { 2000, 2001, 2003, 2100, 2101, 5 };
	long no[] = { 1000, 1001, 1002, 2200, 3000, 3001, 3002, 1, 4000, 4001 };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(chosen(p, n, yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(chosen(p, n, no[i]));
}

static void select_members(void **state)
{
	(void)state;
	struct mafsbx_tree_rule rule = { .root_pid = 2000, .root_start = 500, .init_pid = 1000 };
	/* the root gone; a child stopped in an earlier pass, since adopted by
	 * init: still the exec's, and so are its children; an older process is
	 * not, even as a member */
	struct mafsbx_tree_proc p[] = {
		P(2001, 1000, 510, false), P(2002, 2001, 511, false), P(2003, 1000, 512, false),
		P(1002, 1000, 400, false),
	};
	p[0].member = true;
	p[3].member = true;
	assert_int_equal(mafsbx_tree_select(p, 4, &rule), 2);
	assert_true(chosen(p, 4, 2001));
	assert_true(chosen(p, 4, 2002));
	assert_false(chosen(p, 4, 2003));
	assert_false(chosen(p, 4, 1002));
	assert_int_equal(mafsbx_tree_select(NULL, 0, &rule), 0);
}

/* A chain as long as the bound, listed leaf first: each process walked once. */
static void select_long_chain(void **state)
{
	(void)state;
	size_t n = 4096;
	struct mafsbx_tree_proc *p = calloc(n, sizeof(*p));
	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (struct mafsbx_tree_proc)P((long)(100000 - i), (long)(100000 - i - 1), 600 + n - i, false);
	struct mafsbx_tree_rule rule = { .root_pid = (long)(100000 - n + 1), .root_start = 601, .init_pid = 1 };
	assert_int_equal(mafsbx_tree_select(p, n, &rule), (long)n);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(environ_match), cmocka_unit_test(environ_mark),    cmocka_unit_test(mark_values),
		cmocka_unit_test(stat_fields),   cmocka_unit_test(select_rule),     cmocka_unit_test(select_members),
		cmocka_unit_test(select_long_chain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
