/*
 * it_freeze_proof.c: a frozen transfer counts only if its freeze provably
 * held (src/freeze/freeze.h). Another process (another mount or runtime
 * directory, the Python host, `docker unpause`) can unpause a container
 * without our locks; the test hook mafsbx_freeze_test_before_verify injects
 * exactly that inside the freeze, after the transfer: an external unpause
 * (and an unpause followed by a re-pause, which the paused flag alone would
 * miss). The read is discarded with a clear error, the write reported as
 * failed; without interference both succeed. Against the real dockerd.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "files.h"
#include "freeze.h"
#include "harness.h"

static struct mafsbx_freezer *fz;
static char cname[HARNESS_NAME_MAX], cid[65];
static bool repause;
static unsigned injected;

static void external_unpause(const char *container, void *ctx)
{
	(void)ctx;
	struct mafsbx_error e;
	/* another client, not our freezer: straight to the engine */
	harness_check(mafsbx_container_unpause(harness_engine(), container, &e), &e, "external unpause");
	if (repause)
		harness_check(mafsbx_container_pause(harness_engine(), container, &e), &e, "external re-pause");
	injected++;
}

static void quiet(void)
{
	/* no pause/unpause of ours just before: nothing for dockerd's late echoes to explain */
	sleep(3);
}

static void read_ok(void)
{
	struct mafsbx_files_target t = { .container = cid, .work_dir = "/tmp" };
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error e;
	int r = mafsbx_files_read(fz, &t, "proof.txt", 4096, -1, &b, 0, NULL, &e);
	if (r < 0)
		fail_msg("read: %s", e.message);
	assert_int_equal(b.len, 6);
	assert_memory_equal(b.data, "proof\n", 6);
	mafsbx_buf_free(&b);
}

static void test_unbroken_freeze_reads(void **state)
{
	(void)state;
	read_ok();
	read_ok(); /* back to back: dockerd's late echoes of our own unpause are not a break */
}

static void check_broken_read(bool and_repause)
{
	quiet();
	repause = and_repause;
	injected = 0;
	mafsbx_freeze_test_before_verify = external_unpause;
	struct mafsbx_files_target t = { .container = cid, .work_dir = "/tmp" };
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error e;
	int r = mafsbx_files_read(fz, &t, "proof.txt", 4096, -1, &b, 0, NULL, &e);
	mafsbx_freeze_test_before_verify = NULL;
	assert_int_equal(injected, 1);
	assert_int_equal(r, -EIO);
	assert_non_null(strstr(e.message, "did not hold"));
	assert_non_null(strstr(e.message, "unpaused by someone else"));
	mafsbx_buf_free(&b);
	struct mafsbx_freeze_stats st;
	mafsbx_freezer_stats(fz, &st);
	assert_true(st.broken_freezes >= 1);
	/* nothing is left frozen, and the next read works */
	if (and_repause) {
		json_t *j = NULL;
		harness_check(mafsbx_container_inspect(harness_engine(), cid, &j, &e), &e, "inspect");
		bool paused = json_is_true(json_object_get(json_object_get(j, "State"), "Paused"));
		json_decref(j);
		if (paused)
			harness_check(mafsbx_container_unpause(harness_engine(), cid, &e), &e, "unpause");
	}
	quiet();
	read_ok();
}

static void test_external_unpause_discards_the_read(void **state)
{
	(void)state;
	check_broken_read(false);
}

static void test_unpause_and_repause_discards_the_read(void **state)
{
	(void)state;
	check_broken_read(true);
}

static void test_external_unpause_fails_the_write(void **state)
{
	(void)state;
	quiet();
	repause = false;
	injected = 0;
	mafsbx_freeze_test_before_verify = external_unpause;
	struct mafsbx_files_target t = { .container = cid, .work_dir = "/tmp", .uid = 0, .gid = 0 };
	struct mafsbx_error e;
	int r = mafsbx_files_write(fz, &t, "written.txt", "x\n", 2, 0644, 0, &e);
	mafsbx_freeze_test_before_verify = NULL;
	assert_int_equal(injected, 1);
	assert_int_equal(r, -EIO);
	assert_non_null(strstr(e.message, "could not write"));
	assert_non_null(strstr(e.message, "did not hold"));
}

int main(void)
{
	harness_init();
	char rundir[] = "/tmp/mafsbxtest-proof-run-XXXXXX";
	if (!mkdtemp(rundir))
		return 1;
	struct mafsbx_error e;
	fz = mafsbx_freezer_new(harness_engine(), rundir, &e);
	if (!fz) {
		fprintf(stderr, "freezer: %s\n", e.message);
		return 1;
	}
	harness_container("proof", cname);
	json_t *j = NULL;
	harness_check(mafsbx_container_inspect(harness_engine(), cname, &j, &e), &e, "inspect");
	snprintf(cid, sizeof(cid), "%s", json_string_value(json_object_get(j, "Id")));
	json_decref(j);
	int code;
	if (harness_sh(cname, "echo proof > /tmp/proof.txt", &code) < 0 || code != 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unbroken_freeze_reads),
		cmocka_unit_test(test_external_unpause_discards_the_read),
		cmocka_unit_test(test_unpause_and_repause_discards_the_read),
		cmocka_unit_test(test_external_unpause_fails_the_write),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	harness_cleanup();
	mafsbx_freezer_free(fz);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", rundir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", rundir);
	return r;
}
