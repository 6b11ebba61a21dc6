/*
 * it_files.c: the file plane against the real dockerd and real guests.
 *
 * - The upstream conformance probes (doc/upstream.md §9.3 without the four
 *   listing probes, §9.4 all twelve) over the hostile layout of
 *   doc/upstream.md §9.2, planted through mafsbx_files_write (files) and exec
 *   (links), on a fresh container whose guest runs as uid 1000.
 * - More hostile layouts: /maf-sandbox -> / style ancestors, out -> /etc,
 *   final links, fifos as leaf and parent, paths through regular files, a
 *   root-only file a uid-1000 guest links to.
 * - Ownership and modes of writes, prepare_base, mkdir, batch stat, caps,
 *   absence told from failure.
 * - The race: a guest flipping a directory and a link to a secret while the
 *   host reads through the path 500 times.
 * - Freeze sharing by 8 threads; a live co-holder process; a process
 *   SIGKILLed inside a freeze (recover and adopt); a container paused by
 *   someone else is never unpaused.
 *
 * The program re-executes itself ("--hold-child C RUNDIR MS") to get a
 * second process that holds a freeze.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "engine.h"
#include "files.h"
#include "freeze.h"
#include "harness.h"

#define W "/maf-sandbox/work"
#define O "/maf-sandbox/work-outside"
#define SECRET "the guest must not reach this\n"
#define INSIDE "a legitimate output\n"

static char rundir[HARNESS_RUNDIR_MAX];
static char cname[HARNESS_NAME_MAX];  /* the conformance container (guest uid 1000) */
static char cid[65];
static struct mafsbx_freezer *fz;

/* ---- helpers ------------------------------------------------------------ */

static void container_id(const char *name, char id[65])
{
	json_t *j = NULL;
	struct mafsbx_error err;
	harness_check(mafsbx_container_inspect(harness_engine(), name, &j, &err), &err, "inspect");
	snprintf(id, 65, "%s", json_string_value(json_object_get(j, "Id")));
	json_decref(j);
}

static bool is_paused(const char *id)
{
	json_t *j = NULL;
	struct mafsbx_error err;
	harness_check(mafsbx_container_inspect(harness_engine(), id, &j, &err), &err, "inspect");
	bool p = json_is_true(json_object_get(json_object_get(j, "State"), "Paused"));
	json_decref(j);
	return p;
}

static void sh_ok(const char *c, const char *script)
{
	int code = -1;
	assert_int_equal(harness_sh(c, script, &code), 0);
	if (code != 0)
		fail_msg("fixture script failed (%d): %s", code, script);
}

/* Run a script in the guest as the container's own user (uid 1000 here). */
static int guest_sh(const char *c, const char *script, struct mafsbx_buf *out)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 30000 };
	struct mafsbx_exec_result res;
	struct mafsbx_error err;
	harness_check(mafsbx_exec_run(harness_engine(), c, &rq, &res, &err), &err, "guest exec");
	if (out)
		mafsbx_buf_append(out, res.out, res.out_len);
	int code = res.exit_code;
	mafsbx_exec_result_free(&res);
	return code;
}

static char *guest_out(const char *c, const char *script)
{
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	int code = guest_sh(c, script, &b);
	if (code != 0)
		fail_msg("guest script failed (%d): %s", code, script);
	mafsbx_buf_puts(&b, "");
	return b.data;
}

static struct mafsbx_files_target tgt(const char *wd)
{
	struct mafsbx_files_target t = { .container = cid, .work_dir = wd, .uid = 1000, .gid = 1000 };
	return t;
}

/* PosixGuestSubject.plant_file: a write with the file's own directory as the working directory. */
static void plant_file(const char *abs, const char *content)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s", abs);
	*strrchr(dir, '/') = '\0';
	struct mafsbx_files_target t = tgt(dir[0] ? dir : "/");
	struct mafsbx_error err;
	harness_check(mafsbx_files_write(fz, &t, abs, content, strlen(content), 0, 0, &err), &err, abs);
}

/* PosixGuestSubject.plant_symlink: ln -sfn as the guest. */
static void plant_symlink(const char *path, const char *target)
{
	char s[1024];
	snprintf(s, sizeof(s), "ln -sfn '%s' '%s'", target, path);
	if (guest_sh(cname, s, NULL) != 0)
		fail_msg("plant_symlink %s -> %s failed", path, target);
}

static void expect_err(int r, const struct mafsbx_error *err, enum mafsbx_err_kind kind, int eno, const char *what)
{
	if (r >= 0)
		fail_msg("%s: succeeded, wanted %s", what, mafsbx_error_kind_name(kind));
	if (err->kind != kind || err->err != eno || r != -eno)
		fail_msg("%s: got %s/%s (%s), wanted %s/%s", what, mafsbx_error_kind_name(err->kind),
			 mafsbx_errno_name(err->err), err->message, mafsbx_error_kind_name(kind), mafsbx_errno_name(eno));
	assert_null(strstr(err->message, "/var/lib/docker"));
}

static int do_stat(const char *wd, const char *path, struct mafsbx_fstat *st, struct mafsbx_error *err)
{
	struct mafsbx_files_target t = tgt(wd);
	mafsbx_error_clear(err);
	return mafsbx_files_stat(fz, &t, path, 0, st, err);
}

static int do_read(const char *wd, const char *path, uint64_t max, struct mafsbx_buf *out, struct mafsbx_error *err)
{
	struct mafsbx_files_target t = tgt(wd);
	mafsbx_error_clear(err);
	mafsbx_buf_reset(out);
	return mafsbx_files_read(fz, &t, path, max, -1, out, 0, NULL, err);
}

static int do_write(const char *wd, const char *path, const void *data, size_t len, struct mafsbx_error *err)
{
	struct mafsbx_files_target t = tgt(wd);
	mafsbx_error_clear(err);
	return mafsbx_files_write(fz, &t, path, data, len, 0, 0, err);
}

static bool guest_exists(const char *path)
{
	char s[600];
	snprintf(s, sizeof(s), "test -e '%s' -o -L '%s'", path, path);
	return guest_sh(cname, s, NULL) == 0;
}

static void assert_running(const char *id)
{
	if (is_paused(id))
		fail_msg("container %s was left paused", id);
}

/* ---- fixture ------------------------------------------------------------ */

static int group_setup(void **state)
{
	(void)state;
	harness_init();
	json_t *cfg = json_pack("{s:s}", "User", "1000:1000");
	harness_container_cfg("files", cfg, true, cname);
	json_decref(cfg);
	container_id(cname, cid);
	struct mafsbx_error err;
	fz = mafsbx_freezer_new(harness_engine(), rundir, &err);
	harness_check(fz ? 0 : -1, &err, "freezer");
	/* the base as acquire prepares it, then the hostile layout of doc/upstream.md §9.2 */
	unsigned made = 0;
	harness_check(mafsbx_files_prepare_base(fz, cid, W, 1000, 1000, 0, &made, &err), &err, "prepare_base");
	assert_int_equal(made, 2);
	plant_file(W "/real/inside.txt", INSIDE);
	plant_file(W "/plain.txt", "not a directory\n");
	plant_file(O "/secret.txt", SECRET);
	plant_file(O "/sub/leaf.txt", SECRET);
	plant_symlink(W "/link-dir", O);
	plant_symlink(W "/link-file", O "/secret.txt");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (fz) {
		struct mafsbx_freeze_stats s;
		mafsbx_freezer_stats(fz, &s);
		printf("# freezer: %llu enters, %llu pauses, %llu unpauses, %llu joins, %llu unpause failures\n",
		       (unsigned long long)s.enters, (unsigned long long)s.pauses, (unsigned long long)s.unpauses,
		       (unsigned long long)s.joins, (unsigned long long)s.unpause_failures);
		mafsbx_freezer_free(fz);
		fz = NULL;
	}
	harness_cleanup();
	return 0;
}

/* ---- doc/upstream.md §9.3: FILES_OUT probes ---------------------------------------------- */

static void test_out_legitimate_read(void **state)
{
	(void)state;
	struct mafsbx_fstat st;
	struct mafsbx_error err;
	harness_check(do_stat(W, "real/inside.txt", &st, &err), &err, "stat");
	assert_int_equal(st.kind, MAFSBX_FK_FILE);
	assert_int_equal(st.size, 20);
	assert_int_equal(st.mode, S_IFREG | 0644);
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	harness_check(do_read(W, "real/inside.txt", 1 << 20, &b, &err), &err, "read");
	assert_int_equal(b.len, 20);
	assert_memory_equal(b.data, INSIDE, 20);
	/* into a memfd spool, with the tar header's identity */
	int fd = memfd_create("spool", MFD_CLOEXEC);
	struct mafsbx_files_target t = tgt(W);
	struct mafsbx_read_info info;
	harness_check(mafsbx_files_read(fz, &t, "real/inside.txt", 0, fd, NULL, 0, &info, &err), &err, "read fd");
	assert_int_equal(info.size, 20);
	assert_int_equal(info.uid, 1000);
	assert_int_equal(info.gid, 1000);
	char back[32];
	assert_int_equal(pread(fd, back, sizeof(back), 0), 20);
	assert_memory_equal(back, INSIDE, 20);
	close(fd);
	mafsbx_buf_free(&b);
	assert_running(cid);
}

/* The reservation hook: called with the size from the HEAD before any body
 * byte is fetched; a refusal ends the read with nothing taken. */
struct reservation {
	int calls;
	uint64_t size;
	bool refuse;
};

static int reserve_hook(void *ctx, uint64_t size, struct mafsbx_error *err)
{
	struct reservation *rv = ctx;
	rv->calls++;
	rv->size = size;
	if (rv->refuse)
		return mafsbx_error_set_full(err, MAFSBX_EK_NOMEM, ENOMEM, NULL, "test: no room for %llu bytes",
					     (unsigned long long)size);
	return 0;
}

static void test_out_read_reserves_before_fetching(void **state)
{
	(void)state;
	struct mafsbx_error err;
	struct mafsbx_read_info info;
	struct reservation rv = { 0 };
	struct mafsbx_files_target t = tgt(W);
	t.reserve = reserve_hook;
	t.reserve_ctx = &rv;
	int fd = memfd_create("spool", MFD_CLOEXEC);
	assert_true(fd >= 0);
	harness_check(mafsbx_files_read(fz, &t, "real/inside.txt", 0, fd, NULL, 0, &info, &err), &err, "read");
	assert_int_equal(rv.calls, 1);
	assert_int_equal(rv.size, 20);
	assert_int_equal(lseek(fd, 0, SEEK_END), 20);
	/* refused: the error is the hook's, and not a byte reached the spool */
	int fd2 = memfd_create("spool", MFD_CLOEXEC);
	assert_true(fd2 >= 0);
	rv = (struct reservation){ .refuse = true };
	expect_err(mafsbx_files_read(fz, &t, "real/inside.txt", 0, fd2, NULL, 0, &info, &err), &err,
		   MAFSBX_EK_NOMEM, ENOMEM, "refused read");
	assert_int_equal(rv.calls, 1);
	assert_int_equal(lseek(fd2, 0, SEEK_END), 0);
	/* a read that fails before the HEAD answers a file never reserves */
	rv = (struct reservation){ 0 };
	expect_err(mafsbx_files_read(fz, &t, "link-file", 0, fd2, NULL, 0, &info, &err), &err, MAFSBX_EK_CONFINEMENT,
		   ELOOP, "read link-file");
	assert_int_equal(rv.calls, 0);
	close(fd);
	close(fd2);
	assert_running(cid);
}

static void test_out_link_is_named_a_link(void **state)
{
	(void)state;
	struct mafsbx_fstat st;
	struct mafsbx_error err;
	harness_check(do_stat(W, "link-file", &st, &err), &err, "stat link-file");
	assert_int_equal(st.kind, MAFSBX_FK_SYMLINK);
	assert_int_equal(st.size, 0);
}

static void test_out_link_is_never_read(void **state)
{
	(void)state;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	expect_err(do_read(W, "link-file", 0, &b, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "read link-file");
	assert_int_equal(b.len, 0);
	mafsbx_buf_free(&b);
}

static void test_out_through_linked_parent(void **state)
{
	(void)state;
	struct mafsbx_fstat st;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	expect_err(do_stat(W, "link-dir/secret.txt", &st, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "stat");
	assert_non_null(strstr(err.message, "real directory"));
	expect_err(do_read(W, "link-dir/secret.txt", 0, &b, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "read");
	assert_int_equal(b.len, 0);
	mafsbx_buf_free(&b);
}

static void test_out_linked_work_dir(void **state)
{
	(void)state;
	struct mafsbx_fstat st;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	expect_err(do_stat(W "/link-dir", "secret.txt", &st, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "stat");
	expect_err(do_read(W "/link-dir", "secret.txt", 0, &b, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "read");
	mafsbx_buf_free(&b);
}

static void test_out_linked_ancestor_of_work_dir(void **state)
{
	(void)state;
	struct mafsbx_fstat st;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	expect_err(do_stat(W "/link-dir/sub", "leaf.txt", &st, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "stat");
	expect_err(do_read(W "/link-dir/sub", "leaf.txt", 0, &b, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "read");
	mafsbx_buf_free(&b);
}

static void test_out_plain_parent_is_not_an_escape(void **state)
{
	(void)state;
	struct mafsbx_fstat st;
	struct mafsbx_error err;
	expect_err(do_stat(W, "plain.txt/deeper.txt", &st, &err), &err, MAFSBX_EK_NOT_DIR, ENOTDIR, "stat");
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	expect_err(do_read(W, "plain.txt/deeper.txt", 0, &b, &err), &err, MAFSBX_EK_NOT_DIR, ENOTDIR, "read");
	expect_err(do_write(W, "plain.txt/deeper.txt", "x", 1, &err), &err, MAFSBX_EK_NOT_DIR, ENOTDIR, "write");
	mafsbx_buf_free(&b);
}

/* ---- doc/upstream.md §9.4: FILES_IN probes ----------------------------------------------- */

static void test_in_write_lands_and_reads_back(void **state)
{
	(void)state;
	struct mafsbx_error err;
	harness_check(do_write(W, "real/written.txt", "written", 7, &err), &err, "write");
	char *out = guest_out(cname, "test -f " W "/real/written.txt && cat " W "/real/written.txt");
	assert_string_equal(out, "written");
	free(out);
	/* owner and mode of the file */
	out = guest_out(cname, "stat -c '%u:%g %a' " W "/real/written.txt");
	assert_string_equal(out, "1000:1000 644\n");
	free(out);
}

static void test_in_bytes_survive(void **state)
{
	(void)state;
	struct mafsbx_buf payload = MAFSBX_BUF_INIT;
	mafsbx_buf_puts(&payload, "ünïcödé→payload");
	for (int c = 1; c <= 127; c++) {
		char ch = (char)c;
		mafsbx_buf_append(&payload, &ch, 1);
	}
	struct mafsbx_error err;
	harness_check(do_write(W, "bytes.bin", payload.data, payload.len, &err), &err, "write");
	struct mafsbx_buf got = MAFSBX_BUF_INIT;
	assert_int_equal(guest_sh(cname, "cat " W "/bytes.bin", &got), 0);
	assert_int_equal(got.len, payload.len);
	assert_memory_equal(got.data, payload.data, payload.len);
	/* and back through the read path */
	harness_check(do_read(W, "bytes.bin", 0, &got, &err), &err, "read");
	assert_int_equal(got.len, payload.len);
	assert_memory_equal(got.data, payload.data, payload.len);
	mafsbx_buf_free(&got);
	mafsbx_buf_free(&payload);
}

static void test_in_str_is_utf8(void **state)
{
	(void)state;
	struct mafsbx_error err;
	harness_check(do_write(W, "naive.txt", "naïve", strlen("naïve"), &err), &err, "write");
	char *out = guest_out(cname, "cat " W "/naive.txt");
	assert_string_equal(out, "naïve");
	free(out);
}

static void test_in_second_write_replaces(void **state)
{
	(void)state;
	struct mafsbx_error err;
	harness_check(do_write(W, "twice.txt", "first", 5, &err), &err, "write 1");
	harness_check(do_write(W, "twice.txt", "second", 6, &err), &err, "write 2");
	char *out = guest_out(cname, "cat " W "/twice.txt");
	assert_string_equal(out, "second");
	free(out);
}

static void test_in_parents_are_created(void **state)
{
	(void)state;
	struct mafsbx_error err;
	harness_check(do_write(W, "deep/er/est/leaf.txt", "leaf", 4, &err), &err, "write");
	char *out = guest_out(cname, "test -f " W "/deep/er/est/leaf.txt && stat -c '%u:%g %a' " W "/deep " W
				     "/deep/er " W "/deep/er/est");
	assert_string_equal(out, "1000:1000 755\n1000:1000 755\n1000:1000 755\n");
	free(out);
}

static void test_in_path_outside_refused(void **state)
{
	(void)state;
	struct mafsbx_error err;
	expect_err(do_write(W, "../work-outside/planted.txt", "x", 1, &err), &err, MAFSBX_EK_INVALID, EINVAL, "write");
	assert_false(guest_exists(O "/planted.txt"));
}

static void test_in_linked_parent_refused(void **state)
{
	(void)state;
	plant_symlink(W "/link-dir", O);
	struct mafsbx_error err;
	expect_err(do_write(W, "link-dir/landed.txt", "x", 1, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "write");
	assert_false(guest_exists(O "/landed.txt"));
}

static void test_in_linked_destination_refused(void **state)
{
	(void)state;
	plant_file(O "/target.txt", "known");
	plant_symlink(W "/link-target", O "/target.txt");
	struct mafsbx_error err;
	expect_err(do_write(W, "link-target", "overwritten", 11, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "write");
	char *out = guest_out(cname, "cat " O "/target.txt");
	assert_string_equal(out, "known");
	free(out);
	/* the link itself is still a link */
	assert_int_equal(guest_sh(cname, "test -L " W "/link-target", NULL), 0);
}

static void test_in_work_dir_refused(void **state)
{
	(void)state;
	struct mafsbx_error err;
	harness_check(do_write(W, "control.txt", "control", 7, &err), &err, "control");
	expect_err(do_write(W, ".", "x", 1, &err), &err, MAFSBX_EK_INVALID, EINVAL, "write .");
	assert_non_null(strstr(err.message, "working directory itself"));
	char *out = guest_out(cname, "cat " W "/control.txt");
	assert_string_equal(out, "control");
	free(out);
}

static void test_in_backslash_refused(void **state)
{
	(void)state;
	struct mafsbx_freeze_stats before, after;
	mafsbx_freezer_stats(fz, &before);
	struct mafsbx_error err;
	expect_err(do_write(W, "sub\\file.txt", "x", 1, &err), &err, MAFSBX_EK_INVALID, EINVAL, "write");
	mafsbx_freezer_stats(fz, &after);
	assert_int_equal(after.enters, before.enters); /* refused before any engine call */
}

static void test_in_linked_work_dir(void **state)
{
	(void)state;
	struct mafsbx_error err;
	expect_err(do_write(W "/link-dir", "landed.txt", "x", 1, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "write");
	assert_false(guest_exists(O "/landed.txt"));
}

static void test_in_linked_ancestor_of_work_dir(void **state)
{
	(void)state;
	struct mafsbx_error err;
	expect_err(do_write(W "/link-dir/sub", "landed.txt", "x", 1, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP,
		   "write");
	assert_false(guest_exists(O "/sub/landed.txt"));
}

/* ---- more hostile layouts ----------------------------------------------- */

static void test_hostile_root_link_ancestor(void **state)
{
	(void)state;
	/* a first component that links to "/" (the /maf-sandbox -> / case, doc/upstream.md §11.1) */
	sh_ok(cname, "ln -sfn / /msb");
	struct mafsbx_fstat st;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	expect_err(do_stat("/msb/etc", "passwd", &st, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "stat");
	expect_err(do_read("/msb/etc", "passwd", 0, &b, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "read");
	expect_err(do_write("/msb/tmp", "x.txt", "x", 1, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "write");
	unsigned made;
	expect_err(mafsbx_files_prepare_base(fz, cid, "/msb/work", 1000, 1000, 0, &made, &err), &err,
		   MAFSBX_EK_CONFINEMENT, ELOOP, "prepare_base");
	assert_false(guest_exists("/tmp/x.txt"));
	mafsbx_buf_free(&b);
}

static void test_hostile_out_to_etc(void **state)
{
	(void)state;
	plant_symlink(W "/out", "/etc");
	struct mafsbx_fstat st;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	expect_err(do_read(W, "out/hostname", 0, &b, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "read");
	expect_err(do_stat(W, "out/hostname", &st, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "stat");
	expect_err(do_write(W, "out/evil", "x", 1, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "write");
	struct mafsbx_files_target t = tgt(W);
	expect_err(mafsbx_files_mkdir(fz, &t, "out/evil.d", 0, 0, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "mkdir");
	assert_false(guest_exists("/etc/evil"));
	assert_false(guest_exists("/etc/evil.d"));
	mafsbx_buf_free(&b);
}

static void test_hostile_fifo(void **state)
{
	(void)state;
	assert_int_equal(guest_sh(cname, "mkfifo " W "/fifo", NULL), 0);
	struct mafsbx_fstat st;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	harness_check(do_stat(W, "fifo", &st, &err), &err, "stat fifo");
	assert_int_equal(st.kind, MAFSBX_FK_OTHER);
	assert_true(S_ISFIFO(st.mode));
	expect_err(do_read(W, "fifo", 0, &b, &err), &err, MAFSBX_EK_NOT_REGULAR, EPERM, "read fifo");
	expect_err(do_write(W, "fifo", "x", 1, &err), &err, MAFSBX_EK_NOT_REGULAR, EPERM, "write fifo");
	expect_err(do_stat(W, "fifo/x", &st, &err), &err, MAFSBX_EK_NOT_DIR, ENOTDIR, "stat under fifo");
	expect_err(do_read(W, "fifo/x", 0, &b, &err), &err, MAFSBX_EK_NOT_DIR, ENOTDIR, "read under fifo");
	expect_err(do_write(W, "fifo/x", "x", 1, &err), &err, MAFSBX_EK_NOT_DIR, ENOTDIR, "write under fifo");
	/* a directory as the final component of a read */
	expect_err(do_read(W, "real", 0, &b, &err), &err, MAFSBX_EK_NOT_REGULAR, EPERM, "read a directory");
	mafsbx_buf_free(&b);
	assert_running(cid);
}

static void test_hostile_root_only_file(void **state)
{
	(void)state;
	/* root's 0600 file; the uid-1000 guest cannot read it, but links to it */
	sh_ok(cname, "printf 'root only\\n' > /root-secret && chmod 0600 /root-secret && chown 0:0 /root-secret && "
		     "mkdir -p /rootdir && chmod 0700 /rootdir && printf 'root only\\n' > /rootdir/s");
	assert_true(guest_sh(cname, "cat /root-secret", NULL) != 0); /* the guest really cannot */
	plant_symlink(W "/peek", "/root-secret");
	plant_symlink(W "/peekdir", "/rootdir");
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_fstat st;
	struct mafsbx_error err;
	expect_err(do_read(W, "peek", 0, &b, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "read peek");
	expect_err(do_read(W, "peekdir/s", 0, &b, &err), &err, MAFSBX_EK_CONFINEMENT, ELOOP, "read peekdir/s");
	harness_check(do_stat(W, "peek", &st, &err), &err, "stat peek");
	assert_int_equal(st.kind, MAFSBX_FK_SYMLINK);
	assert_null(b.data && memmem(b.data, b.len, "root only", 9) ? "leaked" : NULL);
	mafsbx_buf_free(&b);
}

static void test_absent_versus_failure(void **state)
{
	(void)state;
	struct mafsbx_fstat st;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	harness_check(do_stat(W, "missing.txt", &st, &err), &err, "stat missing");
	assert_int_equal(st.kind, MAFSBX_FK_ABSENT);
	harness_check(do_stat(W, "no/such/dir/x", &st, &err), &err, "stat missing middle");
	assert_int_equal(st.kind, MAFSBX_FK_ABSENT);
	expect_err(do_read(W, "missing.txt", 0, &b, &err), &err, MAFSBX_EK_NO_PATH, ENOENT, "read missing");
	/* a missing component in the middle is absence, not confinement */
	expect_err(do_read(W, "no/such/x", 0, &b, &err), &err, MAFSBX_EK_NO_PATH, ENOENT, "read missing middle");
	/* a missing container is a failure, not absence */
	struct mafsbx_files_target t = tgt(W);
	t.container = "mafsbxtest-files-no-such-container";
	mafsbx_error_clear(&err);
	expect_err(mafsbx_files_stat(fz, &t, "x", 0, &st, &err), &err, MAFSBX_EK_NO_CONTAINER, ENOENT, "no container");
	mafsbx_buf_free(&b);
}

/*
 * Absence is told apart by the engine's 404 message naming the exact path.
 * Paths the message cannot carry verbatim must still read as absent, or a
 * create fails with ENOENT: a guest path over 999 bytes (longer than an
 * error message), one containing "/var/lib/docker" (what the host-path
 * scrubber rewrites) and a non-UTF-8 name (the engine's JSON turns each bad
 * byte into U+FFFD). Each is created, found by stat, and read back (the
 * non-UTF-8 one only from the guest: the engine cannot serve it).
 */
static void create_odd_path(const char *rel, const char *glob, bool readable)
{
	struct mafsbx_error err;
	struct mafsbx_fstat st;
	struct mafsbx_buf got = MAFSBX_BUF_INIT;
	/* The parents exist first, so the leaf itself is the absent path the
	 * engine names (the ancestor walk would otherwise stop at a short one). */
	const char *slash = strrchr(rel, '/');
	if (slash) {
		mafsbx_buf_append(&got, rel, (size_t)(slash - rel));
		mafsbx_buf_puts(&got, "/seed");
		harness_check(do_write(W, got.data, "", 0, &err), &err, "create the parents");
		mafsbx_buf_reset(&got);
	}
	harness_check(do_stat(W, rel, &st, &err), &err, "stat before the create");
	assert_int_equal(st.kind, MAFSBX_FK_ABSENT);
	harness_check(do_write(W, rel, "odd path\n", 9, &err), &err, "create");
	harness_check(do_stat(W, rel, &st, &err), &err, "stat after the create");
	assert_int_equal(st.kind, MAFSBX_FK_FILE);
	if (readable) {
		harness_check(do_read(W, rel, 0, &got, &err), &err, "read back");
		assert_int_equal(got.len, 9);
		assert_memory_equal(got.data, "odd path\n", 9);
	} else {
		/* Docker 20.10 answers a GET of a non-UTF-8 name with an empty
		 * tar (its tar writer drops the entry): a failure, never data.
		 * Docker 26's tar writer keeps the name (a PAX record), so the
		 * read succeeds: then with exactly the file's bytes (doc/engines.md). */
		if (do_read(W, rel, 0, &got, &err) < 0) {
			assert_int_equal(got.len, 0);
		} else {
			assert_int_equal(got.len, 9);
			assert_memory_equal(got.data, "odd path\n", 9);
		}
	}
	mafsbx_buf_free(&got);
	char s[400];
	snprintf(s, sizeof(s), "cd " W " && test -f %s && cat %s", glob, glob);
	char *out = guest_out(cname, s);
	assert_string_equal(out, "odd path\n");
	free(out);
}

static void test_absent_long_path(void **state)
{
	(void)state;
	struct mafsbx_buf rel = MAFSBX_BUF_INIT;
	mafsbx_buf_puts(&rel, "long");
	for (int i = 0; i < 5; i++) {
		mafsbx_buf_puts(&rel, "/");
		for (int j = 0; j < 200; j++)
			mafsbx_buf_append(&rel, i % 2 ? "b" : "a", 1);
	}
	mafsbx_buf_puts(&rel, "/leaf.txt");
	assert_true(strlen(W) + 1 + rel.len >= 999);
	create_odd_path(rel.data, "long/*/*/*/*/*/leaf.txt", true);
	mafsbx_buf_free(&rel);
}

static void test_absent_var_lib_docker_path(void **state)
{
	(void)state;
	create_odd_path("var/lib/docker/overlay2/x/merged/file.txt", "var/lib/docker/overlay2/x/merged/file.txt", true);
	create_odd_path("on/var/lib/docker", "on/var/lib/docker", true);
	create_odd_path("in/var/lib/docker/x.txt", "in/var/lib/docker/x.txt", true);
}

static void test_absent_non_utf8_name(void **state)
{
	(void)state;
	create_odd_path("nonutf8-\xff\xfe-\xc3-x.txt", "nonutf8-*-*-x.txt", false);
	/* a truncated sequence before a valid one, and a valid U+FFFD beside */
	create_odd_path("nonutf8b-\xe2\x82\xc3\xa9-\xef\xbf\xbd.txt", "nonutf8b-*.txt", false);
}

static void test_caps_and_read_abs(void **state)
{
	(void)state;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	expect_err(do_read(W, "real/inside.txt", 19, &b, &err), &err, MAFSBX_EK_TOO_BIG, EFBIG, "read over cap");
	assert_int_equal(b.len, 0);
	harness_check(do_read(W, "real/inside.txt", 20, &b, &err), &err, "read at cap");
	assert_int_equal(b.len, 20);
	mafsbx_buf_reset(&b);
	harness_check(mafsbx_files_read_abs(fz, cid, "/etc/passwd", 65536, &b, 0, &err), &err, "read_abs");
	assert_non_null(strstr(b.data, "sandbox:x:1000:1000"));
	mafsbx_buf_reset(&b);
	/* absolute reads are checked from / too */
	mafsbx_error_clear(&err);
	expect_err(mafsbx_files_read_abs(fz, cid, W "/link-dir/secret.txt", 65536, &b, 0, &err), &err,
		   MAFSBX_EK_CONFINEMENT, ELOOP, "read_abs through a link");
	mafsbx_buf_free(&b);
}

static void test_write_ownership_and_existing_dirs(void **state)
{
	(void)state;
	/* an existing root-owned 0700 directory keeps its owner and mode */
	sh_ok(cname, "mkdir -p " W "/keep && chown 0:0 " W "/keep && chmod 0700 " W "/keep");
	struct mafsbx_error err;
	harness_check(do_write(W, "keep/new/f.txt", "f", 1, &err), &err, "write");
	struct mafsbx_exec_result res;
	assert_int_equal(harness_sh_result(cname, "stat -c '%u:%g %a' " W "/keep " W "/keep/new " W "/keep/new/f.txt",
					   &res), 0);
	assert_string_equal((char *)res.out, "0:0 700\n1000:1000 755\n1000:1000 644\n");
	mafsbx_exec_result_free(&res);
	char *out;
	/* a chosen mode */
	struct mafsbx_files_target t = tgt(W);
	harness_check(mafsbx_files_write(fz, &t, "run.sh", "#!/bin/sh\n", 10, 0755, 0, &err), &err, "write 0755");
	sh_ok(cname, "stat -c '%a' " W "/run.sh | grep -qx 755");
	/* write from a spool fd */
	int fd = memfd_create("w", MFD_CLOEXEC);
	assert_int_equal(write(fd, "from a spool", 12), 12);
	harness_check(mafsbx_files_write_fd(fz, &t, "spooled.txt", fd, 12, 0, 0, &err), &err, "write_fd");
	close(fd);
	out = guest_out(cname, "cat " W "/spooled.txt");
	assert_string_equal(out, "from a spool");
	free(out);
	/* a directory cannot be replaced by a file */
	expect_err(do_write(W, "real", "x", 1, &err), &err, MAFSBX_EK_INVALID, EISDIR, "write over a directory");
	assert_int_equal(guest_sh(cname, "test -f " W "/real/inside.txt", NULL), 0);
}

static void test_mkdir(void **state)
{
	(void)state;
	struct mafsbx_files_target t = tgt(W);
	struct mafsbx_error err;
	harness_check(mafsbx_files_mkdir(fz, &t, "made/sub", 0750, 0, &err), &err, "mkdir");
	sh_ok(cname, "stat -c '%u:%g %a' " W "/made | grep -qx '1000:1000 755' && stat -c '%u:%g %a' " W
		     "/made/sub | grep -qx '1000:1000 750'");
	mafsbx_error_clear(&err);
	expect_err(mafsbx_files_mkdir(fz, &t, "made/sub", 0, 0, &err), &err, MAFSBX_EK_CONFLICT, EEXIST, "mkdir again");
	expect_err(mafsbx_files_mkdir(fz, &t, ".", 0, 0, &err), &err, MAFSBX_EK_INVALID, EINVAL, "mkdir .");
}

static void test_prepare_base(void **state)
{
	(void)state;
	struct mafsbx_error err;
	unsigned made = 99;
	harness_check(mafsbx_files_prepare_base(fz, cid, "//pb1/pb2/./base/", 1000, 1000, 0, &made, &err), &err,
		      "prepare_base");
	assert_int_equal(made, 3);
	sh_ok(cname, "stat -c '%u:%g %a' /pb1 /pb1/pb2 | grep -cx '0:0 755' | grep -qx 2 && "
		     "stat -c '%u:%g %a' /pb1/pb2/base | grep -qx '1000:1000 755'");
	/* existing: untouched */
	sh_ok(cname, "chmod 0711 /pb1/pb2/base");
	harness_check(mafsbx_files_prepare_base(fz, cid, "/pb1/pb2/base", 1000, 1000, 0, &made, &err), &err, "again");
	assert_int_equal(made, 0);
	sh_ok(cname, "stat -c '%a' /pb1/pb2/base | grep -qx 711");
	/* a file in the way, a linked base */
	sh_ok(cname, "touch /pbfile && ln -sfn /tmp /pblink");
	expect_err(mafsbx_files_prepare_base(fz, cid, "/pbfile/x", 1000, 1000, 0, &made, &err), &err, MAFSBX_EK_NOT_DIR,
		   ENOTDIR, "prepare under a file");
	expect_err(mafsbx_files_prepare_base(fz, cid, "/pblink", 1000, 1000, 0, &made, &err), &err,
		   MAFSBX_EK_CONFINEMENT, ELOOP, "prepare a linked base");
	/* "/" makes no engine call and takes no freeze */
	struct mafsbx_freeze_stats before, after;
	mafsbx_freezer_stats(fz, &before);
	harness_check(mafsbx_files_prepare_base(fz, cid, "/", 1000, 1000, 0, &made, &err), &err, "prepare /");
	mafsbx_freezer_stats(fz, &after);
	assert_int_equal(after.enters, before.enters);
}

static void test_stat_many_one_freeze(void **state)
{
	(void)state;
	const char *paths[] = { "real/inside.txt", "link-file", "missing", "link-dir/secret.txt", "a\\b", "real", "." };
	size_t n = sizeof(paths) / sizeof(paths[0]);
	struct mafsbx_fstat st[8];
	int rcs[8];
	struct mafsbx_error errs[8], err;
	struct mafsbx_freeze_stats before, after;
	mafsbx_freezer_stats(fz, &before);
	struct mafsbx_files_target t = tgt(W);
	harness_check(mafsbx_files_stat_many(fz, &t, paths, n, 0, st, rcs, errs, &err), &err, "stat_many");
	mafsbx_freezer_stats(fz, &after);
	assert_int_equal(after.enters - before.enters, 1);
	assert_int_equal(after.pauses - before.pauses, 1);
	assert_int_equal(rcs[0], 0);
	assert_int_equal(st[0].kind, MAFSBX_FK_FILE);
	assert_int_equal(st[0].size, 20);
	assert_int_equal(st[1].kind, MAFSBX_FK_SYMLINK);
	assert_int_equal(rcs[2], 0);
	assert_int_equal(st[2].kind, MAFSBX_FK_ABSENT);
	assert_int_equal(rcs[3], -ELOOP);
	assert_int_equal(errs[3].kind, MAFSBX_EK_CONFINEMENT);
	assert_int_equal(rcs[4], -EINVAL);
	assert_int_equal(st[5].kind, MAFSBX_FK_DIR);
	assert_int_equal(st[6].kind, MAFSBX_FK_DIR);
	assert_running(cid);
}

/* ---- the race ------------------------------------------------------------ */

static void test_race_flip(void **state)
{
	(void)state;
	/* W/flip is either a real directory holding "safe", or a link to O (whose inside.txt is the secret) */
	plant_file(O "/inside.txt", SECRET);
	plant_file(W "/flipsafe/inside.txt", "safe\n");
	/* the guest flips as fast as it can, in the background, until /tmp/stop-flip appears */
	const char *loop = "cd " W " && rm -f /tmp/stop-flip /tmp/flips; i=0; "
			   "while [ ! -e /tmp/stop-flip ]; do "
			   "rm -rf flip; mkdir flip; echo safe > flip/inside.txt; "
			   "rm -rf flip; ln -s " O " flip; i=$((i+1)); echo $i > /tmp/flips; done";
	char bg[1024];
	snprintf(bg, sizeof(bg), "(%s) >/dev/null 2>&1 &", loop);
	assert_int_equal(guest_sh(cname, bg, NULL), 0);
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	unsigned safe = 0, refused = 0, absent = 0, other = 0, leaked = 0;
	for (int i = 0; i < 500; i++) {
		struct mafsbx_error err;
		int r = do_read(W, "flip/inside.txt", 1 << 20, &b, &err);
		if (r == 0 && b.len && memmem(b.data, b.len, "must not reach", 14))
			leaked++;
		else if (r == 0)
			safe++;
		else if (err.kind == MAFSBX_EK_CONFINEMENT)
			refused++;
		else if (err.kind == MAFSBX_EK_NO_PATH)
			absent++;
		else {
			other++;
			printf("# race read %d: %s\n", i, err.message);
		}
	}
	sh_ok(cname, "touch /tmp/stop-flip");
	char *flips = guest_out(cname, "sleep 0.2; cat /tmp/flips");
	printf("# race: 500 reads: %u safe, %u refused (link), %u absent, %u other, %u leaked; guest flips: %s",
	       safe, refused, absent, other, leaked, flips);
	assert_int_equal(leaked, 0);
	assert_int_equal(other, 0);
	assert_true(atoi(flips) > 0);
	free(flips);
	mafsbx_buf_free(&b);
	assert_running(cid);
}

static void test_race_flip_write(void **state)
{
	(void)state;
	/* the same flip, and the host writes through it: nothing may ever land in O */
	const char *loop = "cd " W " && rm -f /tmp/stop-wflip /tmp/wflips; i=0; "
			   "while [ ! -e /tmp/stop-wflip ]; do "
			   "rm -rf wflip; mkdir wflip; rm -rf wflip; ln -s " O " wflip; i=$((i+1)); "
			   "echo $i > /tmp/wflips; done";
	char bg[1024];
	snprintf(bg, sizeof(bg), "(%s) >/dev/null 2>&1 &", loop);
	assert_int_equal(guest_sh(cname, bg, NULL), 0);
	unsigned landed = 0, refused = 0, other = 0;
	for (int i = 0; i < 100; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "wflip/landed-%d.txt", i);
		struct mafsbx_error err;
		int r = do_write(W, rel, "x", 1, &err);
		if (r == 0)
			landed++;
		else if (err.kind == MAFSBX_EK_CONFINEMENT)
			refused++;
		else {
			other++;
			printf("# write race %d: %s\n", i, err.message);
		}
	}
	sh_ok(cname, "touch /tmp/stop-wflip");
	char *flips = guest_out(cname, "sleep 0.2; cat /tmp/wflips");
	struct mafsbx_exec_result res;
	assert_int_equal(harness_sh_result(cname, "ls " O " | grep -c '^landed-' || true", &res), 0);
	int in_o = atoi((char *)res.out);
	mafsbx_exec_result_free(&res);
	printf("# write race: 100 writes: %u landed inside, %u refused (link), %u other; in O: %d; guest flips: %s",
	       landed, refused, other, in_o, flips);
	assert_int_equal(in_o, 0);
	assert_int_equal(other, 0);
	assert_true(atoi(flips) > 0);
	free(flips);
	assert_running(cid);
}

/* ---- freeze sharing ------------------------------------------------------- */

struct reader_arg {
	pthread_barrier_t *bar;
	int ok;
};

static void *reader_thread(void *p)
{
	struct reader_arg *a = p;
	pthread_barrier_wait(a->bar);
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	for (int i = 0; i < 5; i++) {
		struct mafsbx_error err;
		struct mafsbx_files_target t = tgt(W);
		mafsbx_buf_reset(&b);
		if (mafsbx_files_read(fz, &t, "real/inside.txt", 1 << 20, -1, &b, 0, NULL, &err) == 0 && b.len == 20 &&
		    memcmp(b.data, INSIDE, 20) == 0)
			a->ok++;
		else
			printf("# thread read failed: %s\n", err.message);
	}
	mafsbx_buf_free(&b);
	return NULL;
}

static void test_freeze_sharing_threads(void **state)
{
	(void)state;
	struct mafsbx_freeze_stats before, after;
	mafsbx_freezer_stats(fz, &before);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 8);
	pthread_t th[8];
	struct reader_arg args[8];
	for (int i = 0; i < 8; i++) {
		args[i] = (struct reader_arg){ .bar = &bar };
		pthread_create(&th[i], NULL, reader_thread, &args[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].ok, 5);
	}
	pthread_barrier_destroy(&bar);
	mafsbx_freezer_stats(fz, &after);
	uint64_t enters = after.enters - before.enters, pauses = after.pauses - before.pauses,
		 unpauses = after.unpauses - before.unpauses, joins = after.joins - before.joins;
	printf("# 8 threads x 5 reads: %llu enters, %llu pauses, %llu unpauses, %llu joins\n",
	       (unsigned long long)enters, (unsigned long long)pauses, (unsigned long long)unpauses,
	       (unsigned long long)joins);
	assert_int_equal(enters, 40);
	assert_true(pauses >= 1);
	assert_int_equal(pauses + joins, 40);
	assert_true(joins >= 1);
	assert_int_equal(unpauses, pauses);
	assert_false(mafsbx_freeze_active(fz, cid));
	assert_running(cid);
}

static void test_active_and_exec_outside(void **state)
{
	(void)state;
	struct mafsbx_freeze *h;
	struct mafsbx_error err;
	harness_check(mafsbx_freeze_enter(fz, cid, 0, &h, &err), &err, "enter");
	assert_true(mafsbx_freeze_active(fz, cid));
	assert_true(is_paused(cid));
	/* the daemon refuses exec while frozen: that is why exec must wait */
	const char *argv[] = { "/bin/true", NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 5000 };
	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	mafsbx_error_clear(&err);
	int r = mafsbx_exec_run(harness_engine(), cid, &rq, &res, &err);
	mafsbx_exec_result_free(&res);
	assert_true(r < 0);
	assert_int_equal(err.kind, MAFSBX_EK_PAUSED);
	/* a wait for idle times out while held */
	mafsbx_error_clear(&err);
	assert_int_equal(mafsbx_freeze_wait_idle(fz, cid, mafsbx_now_ms() + 50, &err), -ETIMEDOUT);
	mafsbx_freeze_leave(h);
	assert_false(mafsbx_freeze_active(fz, cid));
	harness_check(mafsbx_freeze_wait_idle(fz, cid, 0, &err), &err, "wait idle");
	assert_running(cid);
}

static void test_foreign_pause_is_left_alone(void **state)
{
	(void)state;
	struct mafsbx_error err;
	harness_check(mafsbx_container_pause(harness_engine(), cid, &err), &err, "foreign pause");
	struct mafsbx_fstat st;
	expect_err(do_stat(W, "real/inside.txt", &st, &err), &err, MAFSBX_EK_PAUSED, EBUSY, "stat while foreign-paused");
	assert_non_null(strstr(err.message, "someone else"));
	assert_true(is_paused(cid));
	bool unpaused = true;
	harness_check(mafsbx_freeze_recover(fz, cid, false, &unpaused, 0, &err), &err, "recover ours only");
	assert_false(unpaused);
	assert_true(is_paused(cid));
	harness_check(mafsbx_freeze_recover(fz, cid, true, &unpaused, 0, &err), &err, "recover any");
	assert_true(unpaused);
	assert_running(cid);
}

static void test_not_running_is_refused(void **state)
{
	(void)state;
	/* a stopped container cannot be frozen: the file call fails and nothing is left behind */
	char stopped[HARNESS_NAME_MAX], sid[65];
	harness_container_cfg("files", NULL, false, stopped);
	container_id(stopped, sid);
	struct mafsbx_files_target t = { .container = sid, .work_dir = "/", .uid = 0, .gid = 0 };
	struct mafsbx_fstat st;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	expect_err(mafsbx_files_stat(fz, &t, "etc/passwd", 0, &st, &err), &err, MAFSBX_EK_NOT_RUNNING, EBUSY,
		   "stat in a stopped container");
	assert_false(mafsbx_freeze_active(fz, sid));
}

/* ---- other processes ------------------------------------------------------- */

/*
 * A child process holding a freeze of `id` for `hold_ms`. With `alias`, the
 * child reaches the default socket through another spelling of its URL (as a
 * relay or a context would): the freeze must still be shared.
 */
static pid_t spawn_holder(const char *id, long hold_ms, bool alias)
{
	char ms[32];
	snprintf(ms, sizeof(ms), "%ld", hold_ms);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (alias && !getenv("DOCKER_HOST") && !getenv("DOCKER_CONTEXT") &&
		    access("/var/run/docker.sock", F_OK) == 0)
			setenv("DOCKER_HOST", "unix:///var/run/./docker.sock", 1);
		execl("/proc/self/exe", "it_files", "--hold-child", id, rundir, ms, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void wait_paused(const char *id)
{
	for (int i = 0; i < 200; i++) {
		if (is_paused(id))
			return;
		usleep(50000);
	}
	fail_msg("the holder process never froze %s", id);
}

/* The child: a freezer of its own over the same runtime directory, one stat held `ms` long. */
static int hold_child(const char *id, const char *dir, const char *ms)
{
	setenv(MAFSBX_FREEZE_HOLD_ENV, ms, 1);
	struct mafsbx_error err;
	struct mafsbx_engine *e;
	struct mafsbx_freezer *f;
	int rc = harness_child_freezer(dir, &e, &f);
	if (rc)
		return rc;
	struct mafsbx_files_target t = { .container = id, .work_dir = W, .uid = 1000, .gid = 1000 };
	struct mafsbx_fstat st;
	int r = mafsbx_files_stat(f, &t, "real/inside.txt", 0, &st, &err);
	harness_child_close(e, f);
	return r == 0 && st.kind == MAFSBX_FK_FILE ? 0 : 4;
}

static void test_live_co_holder_process(void **state)
{
	(void)state;
	pid_t pid = spawn_holder(cid, 3000, true);
	wait_paused(cid);
	/* join the other process's freeze: no pause of our own, and our leave does not thaw */
	struct mafsbx_freeze_stats before, after;
	mafsbx_freezer_stats(fz, &before);
	struct mafsbx_fstat st;
	struct mafsbx_error err;
	harness_check(do_stat(W, "real/inside.txt", &st, &err), &err, "stat inside a co-held freeze");
	assert_int_equal(st.kind, MAFSBX_FK_FILE);
	mafsbx_freezer_stats(fz, &after);
	assert_int_equal(after.xjoins - before.xjoins, 1);
	assert_int_equal(after.pauses - before.pauses, 0);
	assert_int_equal(after.unpauses - before.unpauses, 0);
	assert_true(is_paused(cid));
	/* recover sees a live holder and leaves it alone */
	bool unpaused = true;
	harness_check(mafsbx_freeze_recover(fz, cid, true, &unpaused, 0, &err), &err, "recover with a live holder");
	assert_false(unpaused);
	assert_true(is_paused(cid));
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_running(cid);
}

static void test_sigkill_inside_freeze(void **state)
{
	(void)state;
	struct mafsbx_error err;
	/* round 1: recover() thaws what a dead process left */
	pid_t pid = spawn_holder(cid, 20000, false);
	wait_paused(cid);
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_true(is_paused(cid));
	struct mafsbx_freezer *f2 = mafsbx_freezer_new(harness_engine(), rundir, &err);
	assert_non_null(f2);
	bool unpaused = false;
	harness_check(mafsbx_freeze_recover(f2, cid, false, &unpaused, 0, &err), &err, "recover");
	assert_true(unpaused);
	assert_running(cid);
	/* round 2: the next file call adopts the dead freeze and thaws it on the way out */
	pid = spawn_holder(cid, 20000, false);
	wait_paused(cid);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(is_paused(cid));
	struct mafsbx_files_target t = tgt(W);
	struct mafsbx_fstat st;
	harness_check(mafsbx_files_stat(f2, &t, "real/inside.txt", 0, &st, &err), &err, "stat after a dead freeze");
	struct mafsbx_freeze_stats s;
	mafsbx_freezer_stats(f2, &s);
	assert_int_equal(s.adopted, 1);
	assert_int_equal(s.recovered, 1);
	mafsbx_freezer_free(f2);
	assert_running(cid);
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "--hold-child") == 0)
		return hold_child(argv[2], argv[3], argv[4]);
	harness_rundir("files", rundir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_out_legitimate_read),
		cmocka_unit_test(test_out_read_reserves_before_fetching),
		cmocka_unit_test(test_out_link_is_named_a_link),
		cmocka_unit_test(test_out_link_is_never_read),
		cmocka_unit_test(test_out_through_linked_parent),
		cmocka_unit_test(test_out_linked_work_dir),
		cmocka_unit_test(test_out_linked_ancestor_of_work_dir),
		cmocka_unit_test(test_out_plain_parent_is_not_an_escape),
		cmocka_unit_test(test_in_write_lands_and_reads_back),
		cmocka_unit_test(test_in_bytes_survive),
		cmocka_unit_test(test_in_str_is_utf8),
		cmocka_unit_test(test_in_second_write_replaces),
		cmocka_unit_test(test_in_parents_are_created),
		cmocka_unit_test(test_in_path_outside_refused),
		cmocka_unit_test(test_in_linked_parent_refused),
		cmocka_unit_test(test_in_linked_destination_refused),
		cmocka_unit_test(test_in_work_dir_refused),
		cmocka_unit_test(test_in_backslash_refused),
		cmocka_unit_test(test_in_linked_work_dir),
		cmocka_unit_test(test_in_linked_ancestor_of_work_dir),
		cmocka_unit_test(test_hostile_root_link_ancestor),
		cmocka_unit_test(test_hostile_out_to_etc),
		cmocka_unit_test(test_hostile_fifo),
		cmocka_unit_test(test_hostile_root_only_file),
		cmocka_unit_test(test_absent_versus_failure),
		cmocka_unit_test(test_absent_long_path),
		cmocka_unit_test(test_absent_var_lib_docker_path),
		cmocka_unit_test(test_absent_non_utf8_name),
		cmocka_unit_test(test_caps_and_read_abs),
		cmocka_unit_test(test_write_ownership_and_existing_dirs),
		cmocka_unit_test(test_mkdir),
		cmocka_unit_test(test_prepare_base),
		cmocka_unit_test(test_stat_many_one_freeze),
		cmocka_unit_test(test_active_and_exec_outside),
		cmocka_unit_test(test_foreign_pause_is_left_alone),
		cmocka_unit_test(test_not_running_is_refused),
		cmocka_unit_test(test_freeze_sharing_threads),
		cmocka_unit_test(test_live_co_holder_process),
		cmocka_unit_test(test_sigkill_inside_freeze),
		cmocka_unit_test(test_race_flip),
		cmocka_unit_test(test_race_flip_write),
	};
	/* IT_FILTER=test_absent_* runs a subset, IT_SKIP=test_race_* skips one
	 * (contrib/test.sh's ASan stage skips the two slow race loops) */
	if (getenv("IT_FILTER"))
		cmocka_set_test_filter(getenv("IT_FILTER"));
	if (getenv("IT_SKIP"))
		cmocka_set_skip_filter(getenv("IT_SKIP"));
	int r = cmocka_run_group_tests(tests, group_setup, group_teardown);
	harness_rundir_remove(rundir);
	return r;
}
