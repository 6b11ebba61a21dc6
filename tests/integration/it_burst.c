/*
 * it_burst.c: one freeze for a burst of file calls (src/freeze/burst.h) against the
 * real dockerd and a real guest.
 *
 * - A path walked one component at a time (what a shell's lookups do) takes
 *   ONE pause, and the freeze is gone a moment after the burst.
 * - Batching never serves a stale verification: a guest that swaps a
 *   directory for a link between two bursts is refused in the second (stat
 *   and read), also when the swap's exec comes right after the first burst
 *   (it waits for the lingering freeze, it does not overlap it).
 * - A write through the registry drops the kept answers: a path seen absent
 *   is seen written in the same burst.
 * - A stream of calls does not keep the guest frozen: the freeze is taken
 *   afresh at least every join window.
 * - mafsbx_bursts_end() lifts a lingering freeze at once.
 * - a listing from the archive answers the stats of its entries, its freeze
 *   kept for them past a lone call's linger.
 * - A foreign unpause during a burst fails the next transfer's proof.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "archlist.h"
#include "buf.h"
#include "burst.h"
#include "engine.h"
#include "files.h"
#include "freeze.h"
#include "harness.h"

#define W "/maf-sandbox/work"
#define O "/maf-sandbox/work-outside"
#define SECRET "the guest must not reach this\n"

static char rundir[128];
static char cname[HARNESS_NAME_MAX];
static char cid[65];
static struct mafsbx_freezer *fz;
static struct mafsbx_bursts *bs;

/* A guest script, registered with the freezer as every exec of the product is. */
static void guest_ok(const char *script)
{
	struct mafsbx_freeze_exec *x = NULL;
	struct mafsbx_error err;
	harness_check(mafsbx_freeze_exec_begin(fz, cid, mafsbx_now_ms() + 30000, &x, &err), &err, "exec turn");
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 30000 };
	struct mafsbx_exec_result res;
	int r = mafsbx_exec_run(harness_engine(), cid, &rq, &res, &err);
	mafsbx_freeze_exec_end(x);
	harness_check(r, &err, "guest exec");
	int code = res.exit_code;
	mafsbx_exec_result_free(&res);
	if (code != 0)
		fail_msg("guest script failed (%d): %s", code, script);
}

static struct mafsbx_files_target tgt(void)
{
	struct mafsbx_files_target t = { .container = cid, .work_dir = W, .uid = 0, .gid = 0, .bursts = bs };
	return t;
}

static void stat_ok(const char *path, enum mafsbx_fkind want)
{
	struct mafsbx_files_target t = tgt();
	struct mafsbx_fstat st;
	struct mafsbx_error err;
	harness_check(mafsbx_files_stat(fz, &t, path, 0, &st, &err), &err, path);
	if (st.kind != want)
		fail_msg("stat %s: kind %d, want %d", path, st.kind, want);
}

static void expect_refused(int r, const struct mafsbx_error *err, const char *what)
{
	if (r >= 0)
		fail_msg("%s: served, wanted a refusal (a link in the chain)", what);
	if (err->kind != MAFSBX_EK_CONFINEMENT || err->err != ELOOP)
		fail_msg("%s: %s (%s), wanted EK_CONFINEMENT ELOOP", what, mafsbx_error_kind_name(err->kind), err->message);
}

/* Wait (bounded) for this process to hold no freeze of the container. */
static void wait_thawed(void)
{
	for (int i = 0; i < 200 && mafsbx_freeze_active(fz, cid); i++)
		usleep(5000);
	assert_false(mafsbx_freeze_active(fz, cid));
}

static struct mafsbx_freeze_stats fstats(void)
{
	struct mafsbx_freeze_stats s;
	mafsbx_freezer_stats(fz, &s);
	return s;
}

static void test_walk_is_one_freeze(void **state)
{
	(void)state;
	/* a walk is one burst when no gap between its calls passes the linger:
	 * 50 ms here, so a sanitizer build on a busy machine still walks in one */
	struct mafsbx_error lerr;
	struct mafsbx_bursts *dflt = bs;
	bs = mafsbx_bursts_new(fz, 50, &lerr);
	assert_non_null(bs);
	guest_ok("mkdir -p " W "/d1/d2/d3/d4/d5/d6/d7 && echo deep > " W "/d1/d2/d3/d4/d5/d6/d7/f");
	wait_thawed();
	struct mafsbx_freeze_stats before = fstats();
	struct mafsbx_burst_stats bb;
	mafsbx_bursts_stats(bs, &bb);
	static const char *const walk[] = { "d1", "d1/d2", "d1/d2/d3", "d1/d2/d3/d4", "d1/d2/d3/d4/d5",
					    "d1/d2/d3/d4/d5/d6", "d1/d2/d3/d4/d5/d6/d7" };
	for (size_t i = 0; i < sizeof(walk) / sizeof(walk[0]); i++)
		stat_ok(walk[i], MAFSBX_FK_DIR);
	stat_ok("d1/d2/d3/d4/d5/d6/d7/f", MAFSBX_FK_FILE);
	struct mafsbx_freeze_stats mid = fstats();
	assert_int_equal(mid.pauses - before.pauses, 1);
	struct mafsbx_burst_stats ba;
	mafsbx_bursts_stats(bs, &ba);
	/* every ancestor of every step after the first came from the burst */
	assert_true(ba.hits - bb.hits >= 21);
	assert_int_equal(ba.bursts - bb.bursts, 1);
	/* and the freeze does not outlive the burst by more than a moment */
	wait_thawed();
	assert_int_equal(fstats().unpauses - before.unpauses, 1);
	mafsbx_bursts_free(bs);
	bs = dflt;
}

static void test_swap_between_bursts_is_refused(void **state)
{
	(void)state;
	guest_ok("mkdir -p " W "/a/b " O " && echo inside > " W "/a/b/f && echo '" SECRET "' > " O "/f");
	wait_thawed();
	/* burst 1: the chain verified, the file read */
	stat_ok("a/b/f", MAFSBX_FK_FILE);
	struct mafsbx_files_target t = tgt();
	struct mafsbx_buf out = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	harness_check(mafsbx_files_read(fz, &t, "a/b/f", 0, -1, &out, 0, NULL, &err), &err, "read 1");
	assert_memory_equal(out.data, "inside\n", 7);
	mafsbx_buf_free(&out);
	/* at once: the guest swaps the directory for a link (the exec waits for the lingering freeze) */
	guest_ok("mv " W "/a/b " W "/a/b.real && ln -s " O " " W "/a/b");
	/* burst 2: every component is checked afresh */
	struct mafsbx_fstat st;
	expect_refused(mafsbx_files_stat(fz, &t, "a/b/f", 0, &st, &err), &err, "stat after the swap");
	out = (struct mafsbx_buf)MAFSBX_BUF_INIT;
	expect_refused(mafsbx_files_read(fz, &t, "a/b/f", 0, -1, &out, 0, NULL, &err), &err, "read after the swap");
	assert_true(out.len == 0 || !memmem(out.data, out.len, "reach", 5));
	mafsbx_buf_free(&out);
	expect_refused(mafsbx_files_write(fz, &t, "a/b/g", "x", 1, 0, 0, &err), &err, "write after the swap");
	wait_thawed();
	guest_ok("test ! -e " O "/g");
}

static void test_write_drops_answers(void **state)
{
	(void)state;
	wait_thawed();
	struct mafsbx_files_target t = tgt();
	struct mafsbx_error err;
	stat_ok("fresh.txt", MAFSBX_FK_ABSENT);
	stat_ok("fresh.txt", MAFSBX_FK_ABSENT); /* kept */
	harness_check(mafsbx_files_write(fz, &t, "fresh.txt", "12345", 5, 0, 0, &err), &err, "write");
	struct mafsbx_fstat st;
	harness_check(mafsbx_files_stat(fz, &t, "fresh.txt", 0, &st, &err), &err, "stat after write");
	assert_int_equal(st.kind, MAFSBX_FK_FILE);
	assert_int_equal(st.size, 5);
	harness_check(mafsbx_files_mkdir(fz, &t, "newdir", 0, 0, &err), &err, "mkdir");
	stat_ok("newdir", MAFSBX_FK_DIR);
	struct mafsbx_burst_stats b;
	mafsbx_bursts_stats(bs, &b);
	assert_true(b.invalidations >= 2);
	wait_thawed();
}

/*
 * A freeze takes no joiner older than the join window, so back-to-back calls
 * are frozen afresh at least once per window plus one call (the call that
 * joined last) plus the unpause-and-pause between: over T ms with calls of
 * at most C ms, at least T / (window + 2C) pauses. Timing-independent: a
 * loaded engine makes C larger and the bound smaller, never wrong.
 */
static void test_stream_is_refrozen(void **state)
{
	(void)state;
	wait_thawed();
	struct mafsbx_freeze_stats before = fstats();
	long long t0 = mafsbx_now_ms(), slowest = 0;
	unsigned calls = 0;
	while (mafsbx_now_ms() - t0 < 1000) {
		long long c0 = mafsbx_now_ms();
		stat_ok("d1/d2", MAFSBX_FK_DIR);
		if (mafsbx_now_ms() - c0 > slowest)
			slowest = mafsbx_now_ms() - c0;
		calls++;
	}
	long long ran = mafsbx_now_ms() - t0;
	wait_thawed();
	struct mafsbx_freeze_stats after = fstats();
	unsigned long long pauses = after.pauses - before.pauses;
	unsigned long long want = (unsigned long long)(ran / (MAFSBX_FREEZE_JOIN_WINDOW_MS + 2 * slowest + 1));
	print_message("# %u calls in %lld ms (slowest %lld ms): %llu pauses, at least %llu wanted\n", calls, ran,
		      slowest, pauses, want);
	if (pauses < want || pauses < 1)
		fail_msg("%u calls over %lld ms took %llu pause(s), want at least %llu: the guest was kept frozen",
			 calls, ran, pauses, want);
	assert_int_equal(pauses, after.unpauses - before.unpauses);
}

/* A listing from the archive gives the stats of its entries to the burst, and
 * keeps the freeze for the stats that follow it longer than a lone call's
 * linger (20 ms here: past the 5 ms linger, within the listing's 50 ms). */
static void test_listing_answers_the_stats(void **state)
{
	(void)state;
	guest_ok("mkdir -p " W "/lst/sub && cd " W "/lst && for i in 1 2 3 4 5; do echo $i > f$i; done && "
		 "ln -s /etc/passwd link");
	wait_thawed();
	struct mafsbx_freeze_stats before = fstats();
	struct mafsbx_burst_stats bb;
	mafsbx_bursts_stats(bs, &bb);
	struct mafsbx_files_target t = tgt();
	struct mafsbx_archlist l;
	struct mafsbx_error err;
	harness_check(mafsbx_archlist_init(&l, "lst", 0, 0, &err), &err, "archlist");
	long long t0 = mafsbx_now_ms();
	harness_check(mafsbx_files_list(fz, &t, "lst", 0, &l, &err), &err, "list lst");
	long long took = mafsbx_now_ms() - t0;
	assert_int_equal(l.n, 7);
	mafsbx_archlist_free(&l);
	usleep(20000);
	for (int i = 1; i <= 5; i++) {
		char p[32];
		snprintf(p, sizeof(p), "lst/f%d", i);
		stat_ok(p, MAFSBX_FK_FILE);
	}
	stat_ok("lst/sub", MAFSBX_FK_DIR);
	stat_ok("lst/link", MAFSBX_FK_SYMLINK);
	struct mafsbx_burst_stats ba;
	mafsbx_bursts_stats(bs, &ba);
	if (took + 20 + 40 >= MAFSBX_FREEZE_JOIN_WINDOW_MS) {
		/* a loaded engine: the listing's freeze outlived its join window and ended, by design */
		print_message("the listing took %lld ms: its freeze could not be kept for the stats; not counted\n", took);
	} else {
		assert_int_equal(fstats().pauses - before.pauses, 1);
		assert_int_equal(ba.bursts - bb.bursts, 1);
		/* the entries' own answers, and their chains, came from the listing's burst */
		assert_true(ba.hits - bb.hits >= 7);
	}
	wait_thawed();
	/* a listing through a link is refused as a read is */
	harness_check(mafsbx_archlist_init(&l, "link", 0, 0, &err), &err, "archlist");
	expect_refused(mafsbx_files_list(fz, &t, "lst/link", 0, &l, &err), &err, "list lst/link");
	mafsbx_archlist_free(&l);
	mafsbx_bursts_end(bs, cid);
}

static void test_end_lifts_at_once(void **state)
{
	(void)state;
	wait_thawed();
	stat_ok("d1", MAFSBX_FK_DIR);
	mafsbx_bursts_end(bs, cid);
	assert_false(mafsbx_freeze_active(fz, cid));
}

static void test_linger_bounds(void **state)
{
	(void)state;
	struct mafsbx_error err;
	static const int bad[] = { 0, -1, MAFSBX_BURST_LINGER_MAX_MS + 1 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mafsbx_error_clear(&err);
		assert_null(mafsbx_bursts_new(fz, bad[i], &err));
		assert_int_equal(err.kind, MAFSBX_EK_INVALID);
		assert_non_null(strstr(err.message, "linger"));
	}
	struct mafsbx_bursts *b = mafsbx_bursts_new(fz, MAFSBX_BURST_LINGER_MAX_MS, &err);
	assert_non_null(b);
	mafsbx_bursts_free(b);
}

static void test_foreign_unpause_fails_the_proof(void **state)
{
	(void)state;
	wait_thawed();
	struct mafsbx_error err;
	/* a handle of our own keeps the burst's freeze in force whatever the linger */
	struct mafsbx_freeze *keep = NULL;
	stat_ok("a/b.real/f", MAFSBX_FK_FILE);
	harness_check(mafsbx_freeze_enter(fz, cid, 0, &keep, &err), &err, "keep the freeze");
	stat_ok("a/b.real/f", MAFSBX_FK_FILE); /* the chain is kept by the burst */
	/* someone else lifts it (e.g. `docker unpause`): the guest may run */
	harness_check(mafsbx_container_unpause(harness_engine(), cid, &err), &err, "foreign unpause");
	struct mafsbx_files_target t = tgt();
	struct mafsbx_buf out = MAFSBX_BUF_INIT;
	int r = mafsbx_files_read(fz, &t, "a/b.real/f", 0, -1, &out, 0, NULL, &err);
	mafsbx_buf_free(&out);
	mafsbx_freeze_leave(keep);
	if (r == 0)
		fail_msg("a read on answers kept from before a foreign unpause was served");
	assert_int_equal(err.kind, MAFSBX_EK_CONFLICT);
	assert_int_equal(err.err, EIO);
	mafsbx_bursts_end(bs, cid);
	wait_thawed();
}

static int group_setup(void **state)
{
	(void)state;
	harness_init();
	snprintf(rundir, sizeof(rundir), "/tmp/mafsbx-it-burst.%d", (int)getpid());
	harness_container("burst", cname);
	json_t *j = NULL;
	struct mafsbx_error err;
	harness_check(mafsbx_container_inspect(harness_engine(), cname, &j, &err), &err, "inspect");
	snprintf(cid, sizeof(cid), "%s", json_string_value(json_object_get(j, "Id")));
	json_decref(j);
	fz = mafsbx_freezer_new(harness_engine(), rundir, &err);
	harness_check(fz ? 0 : -1, &err, "freezer");
	bs = mafsbx_bursts_new(fz, MAFSBX_BURST_LINGER_MS, &err);
	harness_check(bs ? 0 : -1, &err, "bursts");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	mafsbx_bursts_free(bs);
	mafsbx_freezer_free(fz);
	harness_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_is_one_freeze),
		cmocka_unit_test(test_swap_between_bursts_is_refused),
		cmocka_unit_test(test_write_drops_answers),
		cmocka_unit_test(test_stream_is_refrozen),
		cmocka_unit_test(test_listing_answers_the_stats),
		cmocka_unit_test(test_end_lifts_at_once),
		cmocka_unit_test(test_linger_bounds),
		cmocka_unit_test(test_foreign_unpause_fails_the_proof),
	};
	int r = cmocka_run_group_tests(tests, group_setup, group_teardown);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rundir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", rundir);
	return r;
}
