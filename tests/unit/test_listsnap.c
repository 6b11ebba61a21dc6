/*
 * test_listsnap.c: a listing's answers kept past its freeze
 * (src/guestfs/listsnap.h): served only for paths it holds, for its
 * container, within its validity, with no exec and no mutation since; a
 * listing that overlapped a mutation is not kept; bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "listsnap.h"

#define C1 "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1"
#define C2 "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2"

static struct mafsbx_listsnaps *snaps(void)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_listsnaps *s = mafsbx_listsnaps_new(&e);
	assert_non_null(s);
	return s;
}

/* A listing of /w/d in `container`: the chain, the directory and `n` files f0.. of size i. */
static struct mafsbx_listsnap *listing(struct mafsbx_listsnaps *s, const char *container, uint64_t epoch, int n)
{
	struct mafsbx_listsnap *b = mafsbx_listsnap_begin(s, container, epoch);
	assert_non_null(b);
	struct mafsbx_listsnap_stat dir = { .mode = S_IFDIR | 0755 };
	mafsbx_listsnap_add(b, "/w", &dir);
	mafsbx_listsnap_add(b, "/w/d", &dir);
	for (int i = n - 1; i >= 0; i--) {
		char p[64];
		snprintf(p, sizeof(p), "/w/d/f%d", i);
		struct mafsbx_listsnap_stat f = { .mode = S_IFREG | 0644, .size = (uint64_t)i };
		mafsbx_listsnap_add(b, p, &f);
	}
	return b;
}

static void test_serves_what_it_holds(void **state)
{
	(void)state;
	struct mafsbx_listsnaps *s = snaps();
	assert_true(mafsbx_listsnap_commit(s, listing(s, C1, 7, 20)));
	struct mafsbx_listsnap_stat st;
	assert_true(mafsbx_listsnaps_get(s, C1, "/w/d/f13", 7, &st));
	assert_int_equal(st.size, 13);
	assert_true(S_ISREG(st.mode));
	assert_true(mafsbx_listsnaps_get(s, C1, "/w/d", 7, &st));
	assert_true(S_ISDIR(st.mode));
	assert_true(mafsbx_listsnaps_get(s, C1, "/w", 7, &st));
	/* not held: an absent name, a deeper path, another container, after an exec */
	assert_false(mafsbx_listsnaps_get(s, C1, "/w/d/f20", 7, &st));
	assert_false(mafsbx_listsnaps_get(s, C1, "/w/d/f1/x", 7, &st));
	assert_false(mafsbx_listsnaps_get(s, C1, "/", 7, &st));
	assert_false(mafsbx_listsnaps_get(s, C2, "/w/d/f13", 7, &st));
	assert_false(mafsbx_listsnaps_get(s, C1, "/w/d/f13", 8, &st));
	struct mafsbx_listsnap_stats ss;
	mafsbx_listsnaps_stats(s, &ss);
	assert_int_equal(ss.kept, 1);
	assert_int_equal(ss.hits, 3);
	mafsbx_listsnaps_free(s);
}

static void test_mutation_drops_and_refuses(void **state)
{
	(void)state;
	struct mafsbx_listsnaps *s = snaps();
	assert_true(mafsbx_listsnap_commit(s, listing(s, C1, 0, 3)));
	assert_true(mafsbx_listsnap_commit(s, listing(s, C2, 0, 3)));
	struct mafsbx_listsnap_stat st;
	mafsbx_listsnaps_mutating(s, C1);
	assert_false(mafsbx_listsnaps_get(s, C1, "/w/d/f1", 0, &st));
	assert_true(mafsbx_listsnaps_get(s, C2, "/w/d/f1", 0, &st)); /* another container's stays */
	/* a listing begun before a mutation (begin or end) is not kept */
	struct mafsbx_listsnap *b = listing(s, C1, 0, 3);
	mafsbx_listsnaps_mutating(s, C1);
	assert_false(mafsbx_listsnap_commit(s, b));
	assert_false(mafsbx_listsnaps_get(s, C1, "/w/d/f1", 0, &st));
	struct mafsbx_listsnap_stats ss;
	mafsbx_listsnaps_stats(s, &ss);
	assert_int_equal(ss.refused, 1);
	assert_int_equal(ss.drops, 1);
	mafsbx_listsnap_discard(NULL);
	mafsbx_listsnaps_mutating(NULL, C1);
	mafsbx_listsnaps_free(s);
}

static void test_expires(void **state)
{
	(void)state;
	struct mafsbx_listsnaps *s = snaps();
	assert_int_equal(mafsbx_listsnaps_valid_ms(s), MAFSBX_LISTSNAP_VALID_MS);
	assert_true(mafsbx_listsnap_commit(s, listing(s, C1, 0, 3)));
	struct mafsbx_listsnap_stat st;
	assert_true(mafsbx_listsnaps_get(s, C1, "/w/d/f2", 0, &st));
	usleep((MAFSBX_LISTSNAP_VALID_MS + 50) * 1000);
	assert_false(mafsbx_listsnaps_get(s, C1, "/w/d/f2", 0, &st));
	mafsbx_listsnaps_free(s);
}

static void test_bounded(void **state)
{
	(void)state;
	struct mafsbx_listsnaps *s = snaps();
	/* past MAFSBX_LISTSNAP_MAX_ENTRIES answers the rest is not kept */
	assert_true(mafsbx_listsnap_commit(s, listing(s, C1, 0, MAFSBX_LISTSNAP_MAX_ENTRIES + 100)));
	struct mafsbx_listsnap_stat st;
	int held = 0;
	for (int i = 0; i < MAFSBX_LISTSNAP_MAX_ENTRIES + 100; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/w/d/f%d", i);
		held += mafsbx_listsnaps_get(s, C1, p, 0, &st);
	}
	assert_int_equal(held, MAFSBX_LISTSNAP_MAX_ENTRIES - 2);
	/* at most MAFSBX_LISTSNAP_MAX listings: the oldest goes */
	for (int i = 0; i < MAFSBX_LISTSNAP_MAX; i++)
		assert_true(mafsbx_listsnap_commit(s, listing(s, C2, (uint64_t)i + 1, 2)));
	assert_false(mafsbx_listsnaps_get(s, C1, "/w/d/f1", 0, &st));
	for (int i = 0; i < MAFSBX_LISTSNAP_MAX; i++)
		assert_true(mafsbx_listsnaps_get(s, C2, "/w/d/f1", (uint64_t)i + 1, &st));
	/* an empty listing keeps nothing */
	assert_false(mafsbx_listsnap_commit(s, mafsbx_listsnap_begin(s, C1, 0)));
	mafsbx_listsnaps_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serves_what_it_holds),
		cmocka_unit_test(test_mutation_drops_and_refuses),
		cmocka_unit_test(test_expires),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
