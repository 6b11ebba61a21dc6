/*
 * test_fs_nodes.c: the node table (fs/nodes.c) after a rename and after a
 * RENAME_EXCHANGE: every node the kernel holds names the file it named
 * before, under that file's new name, and each name is reached by one node.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mfs.h"

#define W "/maf-sandbox-docker-6f8a8ed7a21c/work"

static int setup(void **state)
{
	struct mfs_nodes *t = malloc(sizeof(*t));
	if (!t || mfs_nodes_init(t) < 0) {
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	mfs_nodes_fini(*state);
	free(*state);
	return 0;
}

static uint64_t ref(struct mfs_nodes *t, const char *path)
{
	uint64_t id;
	assert_int_equal(mfs_nodes_ref(t, path, false, &id), 0);
	return id;
}

/* Node `id` has the path `want`, and `want` leads to node `id`. */
static void assert_named(struct mfs_nodes *t, uint64_t id, const char *want)
{
	char *p;
	assert_int_equal(mfs_nodes_path(t, id, &p), 0);
	assert_string_equal(p, want);
	free(p);
	uint64_t at;
	assert_true(mfs_nodes_find(t, want, &at));
	assert_int_equal(at, id);
}

static void test_exchange_files(void **state)
{
	struct mfs_nodes *t = *state;
	uint64_t a = ref(t, W "/a"), b = ref(t, W "/b"), ab = ref(t, W "/ab");
	mfs_nodes_exchange(t, W "/a", W "/b");
	assert_named(t, a, W "/b");
	assert_named(t, b, W "/a");
	assert_named(t, ab, W "/ab");   /* a name that only starts like one: untouched */
	mfs_nodes_exchange(t, W "/a", W "/b");
	assert_named(t, a, W "/a");
	assert_named(t, b, W "/b");
}

static void test_exchange_dirs(void **state)
{
	struct mfs_nodes *t = *state;
	uint64_t d1 = ref(t, W "/d1"), f1 = ref(t, W "/d1/f"), g = ref(t, W "/d1/sub/g");
	uint64_t d2 = ref(t, W "/d2"), f2 = ref(t, W "/d2/f");
	mfs_nodes_exchange(t, W "/d1", W "/d2");
	assert_named(t, d1, W "/d2");
	assert_named(t, f1, W "/d2/f");
	assert_named(t, g, W "/d2/sub/g");
	assert_named(t, d2, W "/d1");
	assert_named(t, f2, W "/d1/f");
	uint64_t at;
	assert_false(mfs_nodes_find(t, W "/d1/sub/g", &at));
	/* a new lookup of an exchanged name finds the node that holds it */
	assert_int_equal(ref(t, W "/d1/f"), f2);
}

/* An exchange across directories of different depths. */
static void test_exchange_depths(void **state)
{
	struct mfs_nodes *t = *state;
	uint64_t x = ref(t, W "/x"), xin = ref(t, W "/x/in"), y = ref(t, W "/deep/er/y");
	mfs_nodes_exchange(t, W "/x", W "/deep/er/y");
	assert_named(t, x, W "/deep/er/y");
	assert_named(t, xin, W "/deep/er/y/in");
	assert_named(t, y, W "/x");
}

/* Nested names cannot be exchanged (the kernel refuses first); should they
 * come, no node keeps a path that may now name another file. */
static void test_exchange_nested(void **state)
{
	struct mfs_nodes *t = *state;
	uint64_t p = ref(t, W "/p"), c = ref(t, W "/p/c"), o = ref(t, W "/o");
	mfs_nodes_exchange(t, W "/p", W "/p/c");
	char *s;
	assert_int_equal(mfs_nodes_path(t, p, &s), -ESTALE);
	assert_int_equal(mfs_nodes_path(t, c, &s), -ESTALE);
	assert_named(t, o, W "/o");
	uint64_t at;
	assert_false(mfs_nodes_find(t, W "/p", &at));
	/* the names are looked up afresh */
	assert_true(ref(t, W "/p") != p);
	/* an exchange of a name with itself changes nothing */
	mfs_nodes_exchange(t, W "/o", W "/o");
	assert_named(t, o, W "/o");
}

/* A plain rename: the source's nodes move, the target's node answers no name. */
static void test_rename_over(void **state)
{
	struct mfs_nodes *t = *state;
	uint64_t a = ref(t, W "/a"), ai = ref(t, W "/a/i"), b = ref(t, W "/b");
	mfs_nodes_rename(t, W "/a", W "/b");
	assert_named(t, a, W "/b");
	assert_named(t, ai, W "/b/i");
	char *s;
	assert_int_equal(mfs_nodes_path(t, b, &s), 0);   /* kept for its open files */
	assert_string_equal(s, W "/b");
	free(s);
	uint64_t at;
	assert_false(mfs_nodes_find(t, W "/a", &at));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exchange_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exchange_dirs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exchange_depths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exchange_nested, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename_over, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
