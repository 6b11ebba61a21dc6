/*
 * test_fs_rows.c: the table of the tree (fs/rows.h) holds its rules: every
 * row's parent kind has a row, a name is there once per directory, a kind's
 * mode, cache policy and refusals are one, every .ctl verb has its parse,
 * run and log functions, and the listing of a fixed directory, the lookup
 * of each fixed name and the refusals of the node operations are the
 * table's. A table broken on purpose (a name twice, an orphan, a verb
 * without run, a kind with two policies) is refused by the check.
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
#include "node.h"
#include "rows.h"

#define MAX_ROWS 64

/* The whole table, copied (the verbs' rows are built on the fly). */
static size_t table(struct mfs_row *rows)
{
	struct mfs_row scratch;
	const struct mfs_row *r;
	size_t n = 0;
	while ((r = mfs_rows_at(n, &scratch))) {
		assert_true(n < MAX_ROWS);
		rows[n++] = *r;
	}
	return n;
}

static size_t verbs(const struct mfs_verb **v)
{
	size_t n = mfs_verb_count();
	for (size_t i = 0; i < n; i++)
		v[i] = mfs_verb_at((enum mfs_ctl_kind)i);
	assert_null(mfs_verb_at((enum mfs_ctl_kind)n));
	return n;
}

static void test_table_holds(void **state)
{
	(void)state;
	struct mfs_row rows[MAX_ROWS];
	const struct mfs_verb *v[MAX_ROWS];
	size_t n = table(rows), nv = verbs(v);
	char why[256] = "";
	int r = mfs_rows_check(rows, n, v, nv, why, sizeof(why));
	if (r)
		fail_msg("%s", why);
	/* the verbs the rest of fs/ names by number are where mfs.h says */
	assert_string_equal(mfs_ctl_kind_name(MFS_CTL_ACQUIRE), "acquire");
	assert_string_equal(mfs_ctl_kind_name(MFS_CTL_DISPOSE), "dispose");
	assert_string_equal(mfs_ctl_kind_name(MFS_CTL_EXEC), "exec");
	assert_string_equal(mfs_ctl_kind_name((enum mfs_ctl_kind)nv), "?");
}

static void expect_broken(struct mfs_row *rows, size_t n, const struct mfs_verb *const *v, size_t nv,
			  const char *says)
{
	char why[256] = "";
	assert_int_equal(mfs_rows_check(rows, n, v, nv, why, sizeof(why)), -EINVAL);
	if (!strstr(why, says))
		fail_msg("the check said '%s', not '%s'", why, says);
}

static void test_broken_tables_refused(void **state)
{
	(void)state;
	struct mfs_row good[MAX_ROWS], rows[MAX_ROWS];
	const struct mfs_verb *v[MAX_ROWS];
	size_t n = table(good), nv = verbs(v);
	size_t st = n;
	for (size_t i = 0; i < n; i++)
		if (good[i].name && !strcmp(good[i].name, "status") && good[i].parent == MFS_N_SBX_DIR)
			st = i;
	assert_true(st < n);

	/* a name twice in the same directory */
	memcpy(rows, good, sizeof(good));
	rows[n] = rows[st];
	expect_broken(rows, n + 1, v, nv, "twice");
	/* a row whose parent kind no row makes */
	memcpy(rows, good, sizeof(good));
	rows[n] = rows[st];
	rows[n].name = "orphan";
	rows[n].parent = (enum mfs_node_type)99;
	expect_broken(rows, n + 1, v, nv, "parent");
	/* one kind, two policies */
	memcpy(rows, good, sizeof(good));
	rows[n] = rows[st];
	rows[n].name = "status2";
	rows[n].refuse_write = EPERM;
	expect_broken(rows, n + 1, v, nv, "differ");
	/* a name and a pattern, or neither */
	memcpy(rows, good, sizeof(good));
	rows[st].name = NULL;
	expect_broken(rows, n, v, nv, "a name or a pattern");
	/* a verb without its run */
	struct mfs_verb lame = *v[0];
	lame.run = NULL;
	const struct mfs_verb *lv[MAX_ROWS];
	memcpy(lv, v, sizeof(v[0]) * nv);
	lv[nv] = &lame;
	expect_broken(good, n, lv, nv + 1, "run");
}

/* A filler that keeps the names it is given, as one string. */
static int keep_name(void *buf, const char *name, const struct stat *st, off_t off, enum fuse_fill_dir_flags f)
{
	(void)st;
	(void)off;
	(void)f;
	strcat(buf, name);
	strcat(buf, " ");
	return 0;
}

/* The listing of `dir` as the node's own readdir gives it, against its rows. */
static void expect_listing(enum mfs_node_type dir, const struct mfs_row *rows, size_t n)
{
	char want[1024] = ". .. ", got[1024] = "";
	for (size_t i = 0; i < n; i++)
		if (rows[i].parent == dir && rows[i].name && rows[i].kind != MFS_N_ROOT) {
			strcat(want, rows[i].name);
			strcat(want, " ");
		}
	struct mfs_node d;
	memset(&d, 0, sizeof(d));
	d.type = dir;
	assert_int_equal(mfs_tree_list(dir, got, keep_name), 0);
	assert_string_equal(got, want);
	if (dir == MFS_N_CTL_DIR) {   /* its kind's readdir needs no engine: the daemon's own path */
		d.ops = mfs_kind_ops(dir);
		got[0] = '\0';
		assert_int_equal(mfs_node_readdir(NULL, &d, got, keep_name, 0, NULL), 0);
		assert_string_equal(got, want);
	}
}

static void test_listings_and_lookups_are_the_rows(void **state)
{
	(void)state;
	struct mfs_row rows[MAX_ROWS];
	size_t n = table(rows);
	expect_listing(MFS_N_CTL_DIR, rows, n);
	expect_listing(MFS_N_SBX_DIR, rows, n);
	expect_listing(MFS_N_EXEC_DIR, rows, n);
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].name || rows[i].kind == MFS_N_ROOT)
			continue;
		struct mfs_node dir, c;
		memset(&dir, 0, sizeof(dir));
		dir.type = rows[i].parent;
		assert_int_equal(mfs_tree_child(&dir, rows[i].name, &c), 0);
		assert_int_equal(c.type, rows[i].kind);
		if (c.type == MFS_N_CTL_FILE)
			assert_string_equal(mfs_ctl_kind_name(c.ctl_kind), rows[i].name);
		assert_int_equal(mfs_kind_mode(c.type) & S_IFMT, rows[i].mode & S_IFMT);
	}
}

/* What a kind refuses is its row's errno, through the node operations. */
static void test_refusals_are_the_rows(void **state)
{
	(void)state;
	static const enum mfs_node_type kinds[] = { MFS_N_CTL_FILE, MFS_N_CTL_ENGINE, MFS_N_SBX_STATUS, MFS_N_ROOTFS,
						     MFS_N_EXEC_FILE, MFS_N_BYSCOPE };
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct mfs_node nd;
		memset(&nd, 0, sizeof(nd));
		nd.type = kinds[i];
		nd.ops = mfs_kind_ops(nd.type);
		const struct mfs_row *r = mfs_kind_row(nd.type);
		assert_int_equal(mfs_node_unlink(NULL, &nd), -r->refuse);
		assert_int_equal(mfs_node_chmod(NULL, &nd, 0644), -r->refuse);
		if (!nd.ops->create)
			assert_int_equal(mfs_node_create(NULL, &nd, 0644, NULL), -r->refuse_write);
	}
	/* the answers doc/protocol.md "Errors" gives */
	assert_int_equal(mfs_kind_row(MFS_N_SBX_STATUS)->refuse_write, EACCES);
	assert_int_equal(mfs_kind_row(MFS_N_ROOTFS)->refuse, EROFS);
	assert_int_equal(mfs_kind_row(MFS_N_CTL_FILE)->refuse, EPERM);
	assert_true(mfs_kind_cache(MFS_N_CTL_FILE) & MFS_KIND_FRESH);
	assert_true(mfs_kind_cache(MFS_N_EXEC_FILE) & MFS_KIND_NO_CACHE);
	assert_true(mfs_kind_cache(MFS_N_SBX_DIR) & MFS_KIND_RMDIR_TXN);
	assert_false(mfs_kind_cache(MFS_N_SBX_STATUS) & MFS_KIND_NO_CACHE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_holds),
		cmocka_unit_test(test_broken_tables_refused),
		cmocka_unit_test(test_listings_and_lookups_are_the_rows),
		cmocka_unit_test(test_refusals_are_the_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
