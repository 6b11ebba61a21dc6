/*
 * test_spool.c: the spool budget's shares (src/plane/plane_common.c,
 * plane.h "The spool budget"): per mount, per sandbox, for the users other
 * than the daemon's together and each, and the kept allowance of finished
 * execs' output, on an 8 MiB budget; over a swarm, one budget for the mount
 * whichever node's planes hold the spools. The caller's uid comes from the hook
 * the daemon installs (cfg.caller_uid), set here by each test.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plane.h"

#define MIB (1024ull * 1024)

static uid_t caller;
static bool caller_known;

static bool caller_uid(uid_t *uid)
{
	*uid = caller;
	return caller_known;
}

static void as_user(uid_t uid)
{
	caller = uid;
	caller_known = true;
}

static void as_daemon(void)
{
	caller_known = false;
}

static int setup(void **state)
{
	struct mafsbx_plane_config cfg = { .spool_budget = 8 * MIB, .caller_uid = caller_uid, .burst_ms = -1 };
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	*state = mafsbx_planes_new(NULL, NULL, NULL, &cfg, &e);
	as_daemon();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	mafsbx_planes_free(*state);
	return 0;
}

/* A share of `sandbox` for the current caller, grown to `bytes`: 0 or the errno; `why` gets the message. */
static int take(struct mafsbx_planes *ps, struct mafsbx_spool_share *a, const char *sandbox, uint64_t bytes,
		char *why)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	mafsbx_planes_spool_owner(ps, a, sandbox);
	int r = mafsbx_planes_spool_grow(ps, a, bytes, &e);
	if (why)
		snprintf(why, 256, "%s", e.message);
	return r < 0 ? e.err : 0;
}

static void test_sandbox_half(void **state)
{
	struct mafsbx_planes *ps = *state;
	struct mafsbx_spool_share a1, a2, b1, c1;
	char why[256];
	assert_int_equal(take(ps, &a1, "a", 4 * MIB, NULL), 0);
	assert_int_equal(take(ps, &a2, "a", 1, why), ENOMEM);
	assert_non_null(strstr(why, "sandbox a"));
	assert_int_equal(take(ps, &b1, "b", 4 * MIB, NULL), 0);
	/* the mount's whole budget */
	assert_int_equal(take(ps, &c1, "c", 1, why), ENOMEM);
	assert_non_null(strstr(why, "budget 8388608"));
	mafsbx_planes_spool_release(ps, &a1);
	assert_int_equal(a1.bytes, 0);
	assert_int_equal(take(ps, &c1, "c", 4 * MIB, NULL), 0);
	mafsbx_planes_spool_release(ps, &b1);
	mafsbx_planes_spool_release(ps, &c1);
}

static void test_users_pool(void **state)
{
	struct mafsbx_planes *ps = *state;
	struct mafsbx_spool_share u[4], extra, own;
	char why[256];
	as_user(1000);
	assert_int_equal(take(ps, &u[0], "a", 2 * MIB, NULL), 0);
	assert_int_equal(take(ps, &extra, "b", 1, why), ENOMEM);   /* a quarter each */
	assert_non_null(strstr(why, "uid 1000"));
	as_user(1001);
	assert_int_equal(take(ps, &u[1], "b", 2 * MIB, NULL), 0);
	as_user(1002);
	assert_int_equal(take(ps, &u[2], "c", 2 * MIB, NULL), 0);
	as_user(1003);   /* three quarters together: a new uid gets nothing */
	assert_int_equal(take(ps, &u[3], "d", 1, why), ENOMEM);
	assert_non_null(strstr(why, "users other than"));
	as_daemon();   /* the mounting user's quarter is left */
	assert_int_equal(take(ps, &own, "d", 2 * MIB, NULL), 0);
	for (int i = 0; i < 3; i++)
		mafsbx_planes_spool_release(ps, &u[i]);
	mafsbx_planes_spool_release(ps, &own);
	as_user(1003);   /* given back: the pool has room again */
	assert_int_equal(take(ps, &u[3], "d", 2 * MIB, NULL), 0);
	mafsbx_planes_spool_release(ps, &u[3]);
}

static void test_kept(void **state)
{
	struct mafsbx_planes *ps = *state;
	struct mafsbx_spool_share a1, a2, b1, c1, live[2];
	assert_int_equal(take(ps, &a1, "a", 2 * MIB, NULL), 0);
	assert_int_equal(mafsbx_planes_spool_keep(ps, &a1), 0);
	assert_true(a1.kept);
	/* kept output holds nothing of the budget: all of it is there for the rest */
	assert_int_equal(take(ps, &live[0], "x", 4 * MIB, NULL), 0);
	assert_int_equal(take(ps, &live[1], "y", 4 * MIB, NULL), 0);
	mafsbx_planes_spool_release(ps, &live[0]);
	mafsbx_planes_spool_release(ps, &live[1]);
	/* a sandbox keeps a quarter of the budget */
	assert_int_equal(take(ps, &a2, "a", 1 * MIB, NULL), 0);
	assert_int_equal(mafsbx_planes_spool_keep(ps, &a2), -1);
	assert_false(a2.kept);
	mafsbx_planes_spool_release(ps, &a1);
	assert_int_equal(mafsbx_planes_spool_keep(ps, &a2), 0);
	/* the mount keeps half */
	assert_int_equal(take(ps, &b1, "b", 2 * MIB, NULL), 0);
	assert_int_equal(mafsbx_planes_spool_keep(ps, &b1), 0);
	assert_int_equal(take(ps, &c1, "c", 2 * MIB, NULL), 0);
	assert_int_equal(mafsbx_planes_spool_keep(ps, &c1), -2);
	mafsbx_planes_spool_release(ps, &b1);
	assert_int_equal(mafsbx_planes_spool_keep(ps, &c1), 0);
	mafsbx_planes_spool_release(ps, &a2);
	mafsbx_planes_spool_release(ps, &c1);
	assert_int_equal(c1.bytes, 0);
	assert_false(c1.kept);
}

/* Over a swarm each node engine has planes of its own (plane_route.c): their
 * spools and the mount's (a detached exec's output) share the one budget,
 * so the mount holds B in all, not B per node. */
static void test_cluster_nodes(void **state)
{
	struct mafsbx_planes *ps = *state, *node[2];
	struct mafsbx_plane_config cfg = { .spool_budget = 8 * MIB, .caller_uid = caller_uid, .burst_ms = -1 };
	struct mafsbx_error e;
	struct mafsbx_spool_share n0, n1, mount, over, a_exec, a_file;
	char why[256];
	for (int i = 0; i < 2; i++) {
		mafsbx_error_clear(&e);
		assert_non_null(node[i] = mafsbx_planes_new(NULL, NULL, NULL, &cfg, &e));
		mafsbx_planes_share_spool(node[i], ps);
	}
	assert_int_equal(take(node[0], &n0, "a", 3 * MIB, NULL), 0);
	assert_int_equal(take(node[1], &n1, "b", 3 * MIB, NULL), 0);
	assert_int_equal(take(ps, &mount, "c", 2 * MIB, NULL), 0);
	/* 8 MiB held over two nodes and the mount: the budget is spent on each */
	assert_int_equal(take(node[1], &over, "d", 1, why), ENOMEM);
	assert_non_null(strstr(why, "budget 8388608, the mount's over all its nodes"));
	assert_int_equal(take(node[0], &over, "d", 1, NULL), ENOMEM);
	assert_int_equal(take(ps, &over, "d", 1, NULL), ENOMEM);
	/* what one node gives back, another may take */
	mafsbx_planes_spool_release(node[0], &n0);
	assert_int_equal(take(node[1], &over, "d", 3 * MIB, NULL), 0);
	mafsbx_planes_spool_release(node[1], &over);
	mafsbx_planes_spool_release(node[1], &n1);
	mafsbx_planes_spool_release(ps, &mount);
	/* one sandbox's half, its exec output on the mount and its files on its node together */
	assert_int_equal(take(ps, &a_exec, "a", 3 * MIB, NULL), 0);
	assert_int_equal(take(node[0], &a_file, "a", 2 * MIB, why), ENOMEM);
	assert_non_null(strstr(why, "sandbox a"));
	mafsbx_planes_spool_release(ps, &a_exec);
	for (int i = 0; i < 2; i++)
		mafsbx_planes_free(node[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sandbox_half, setup, teardown),
		cmocka_unit_test_setup_teardown(test_users_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cluster_nodes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
