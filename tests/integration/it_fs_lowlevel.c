/*
 * it_fs_lowlevel.c: the daemon's own low-level handlers (mfs_lowlevel_ops)
 * on fake requests (tests/unit/fs_ll.c, fuse_shim.c: no mount, no libfuse)
 * over the real dockerd and the real request runner (requests.c), the mount
 * started as main.c starts it, so each .ctl request runs on the transaction
 * threads and is answered from there: the root and .ctl looked up, stat'ed
 * and listed; a request written and its reply read back on the same handle
 * (an acquire, an exec, a dispose; an unknown field and an unknown sandbox
 * answered with their errno and message, a request that is not JSON); the
 * tree's refusals (EACCES, EPERM, EROFS); and a handle released while its
 * exec runs (the write is answered when the command ends, the handle freed
 * then). The mount serves one fresh scope, so the root lists only what this
 * test made.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs_ll.h"
#include "harness.h"
#include "mfs.h"
#include "plane.h"
#include "sbx_testlib.h"

static struct mfs fs;
static char scope[HARNESS_NAME_MAX];
static char sbx[128];   /* the sandbox the acquire test made */

static int group_setup(void **state)
{
	(void)state;
	sbxt_open();
	sbxt_scope(scope);
	memset(&fs, 0, sizeof(fs));
	fs.opt.attr_timeout = 1;
	fs.opt.entry_timeout = 1;
	fs.opt.max_read = MFS_DEFAULT_MAX_READ;
	fs.opt.max_write = MFS_DEFAULT_MAX_WRITE;
	fs.opt.max_threads = 16;
	fs.opt.scope = scope;
	fs.engine = harness_engine();
	fs.fz = sbxt_g.fz;
	fs.backend = sbxt_g.b;
	struct mafsbx_error e;
	struct mafsbx_plane_config pc = { .mode = MAFSBX_PLANE_ENGINE };
	fs.planes = mafsbx_planes_new(fs.engine, fs.fz, fs.backend, &pc, &e);
	if (!fs.planes)
		fail_msg("planes: %s", e.message);
	fs.run = mfs_run_request;   /* the daemon's runner, as main.c sets it */
	fsll_start(&fs);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	fsll_stop(&fs);
	mafsbx_planes_free(fs.planes);
	sbxt_close();
	return 0;
}

/* One transaction on a fresh open of .ctl/KIND: the write's answer in *wrote, the reply parsed. */
static json_t *transact(const char *kind, const char *req, int *wrote)
{
	char path[64];
	snprintf(path, sizeof(path), "/.ctl/%s", kind);
	struct fuse_file_info fi;
	memset(&fi, 0, sizeof(fi));
	fi.flags = O_RDWR;
	assert_int_equal(fsll_open(path, &fi), 0);
	*wrote = fsll_write(&fi, req, strlen(req), 0);
	static char buf[1 << 16];
	int n = fsll_read(&fi, buf, sizeof(buf) - 1, 0);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_int_equal(fsll_release(&fi), 0);
	json_error_t je;
	json_t *j = json_loads(buf, 0, &je);
	if (!j)
		fail_msg("reply is not JSON: %s", buf);
	return j;
}

static const char *error_field(const json_t *j, const char *f)
{
	return json_string_value(json_object_get(json_object_get(j, "error"), f));
}

static void test_root_and_ctl(void **state)
{
	(void)state;
	struct stat st;
	assert_int_equal(fsll_getattr("/", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	fuse_ino_t ctl;
	struct fuse_entry_param e;
	assert_int_equal(fsll_lookup("/.ctl", &ctl, &e), 0);
	assert_true(S_ISDIR(e.attr.st_mode));
	assert_true(e.attr_timeout > 0);   /* a fixed directory may be cached */
	/* every lookup of a transaction file is a fresh node, cached by nobody */
	fuse_ino_t a, b;
	assert_int_equal(fsll_lookup("/.ctl/exec", &a, &e), 0);
	assert_true(S_ISREG(e.attr.st_mode));
	assert_int_equal(e.attr.st_mode & 07777, 0600);
	assert_true(e.attr_timeout == 0 && e.entry_timeout == 0);
	assert_int_equal(fsll_lookup("/.ctl/exec", &b, NULL), 0);
	assert_true(a != b);
	assert_int_equal(fsll_lookup("/.ctl/nope", &a, NULL), -ENOENT);
	assert_int_equal(fsll_getattr("/.ctl/declarations", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0444);

	/* the listings: .ctl's five files; the root's fixed entries and no sandbox of this fresh scope yet */
	struct fuse_req *r;
	assert_true(fsll_readdir("/.ctl", false, 4096, &r) > 0);
	size_t pos = 0;
	struct shim_dirent d;
	unsigned seen = 0;
	while (shim_dirent_next(r, &pos, &d)) {
		static const char *const want[] = { "acquire", "dispose", "exec", "declarations", "engine" };
		for (unsigned i = 0; i < 5; i++)
			if (!strcmp(d.name, want[i]))
				seen |= 1u << i;
	}
	assert_int_equal(seen, 0x1f);
	shim_free(r);
	assert_true(fsll_readdir("/", true, 4096, &r) > 0);
	pos = 0;
	bool has_ctl = false;
	while (shim_dirent_next(r, &pos, &d)) {
		if (!strcmp(d.name, ".ctl")) {
			has_ctl = true;
			assert_true(d.ino == 0 || S_ISDIR(d.mode));   /* a node given is the directory's */
		}
		assert_null(strstr(d.name, "maf-sandbox-docker-"));
	}
	assert_true(has_ctl);
	shim_free(r);
}

/* Requests that fail before the engine, or are refused by it, answered with their errno and message. */
static void test_error_replies(void **state)
{
	(void)state;
	int wrote;
	json_t *j = transact("acquire", "{not json\n", &wrote);
	assert_int_equal(wrote, -EINVAL);
	assert_string_equal(error_field(j, "errno"), "EINVAL");
	assert_non_null(strstr(error_field(j, "message"), "byte 1"));
	json_decref(j);

	char req[512];
	snprintf(req, sizeof(req), "{\"scope\": \"%s\", \"thread\": \"t\", \"agent\": \"a\", \"colour\": 1}", scope);
	j = transact("acquire", req, &wrote);
	assert_int_equal(wrote, -EINVAL);
	assert_true(json_is_false(json_object_get(j, "ok")));
	assert_string_equal(error_field(j, "errno"), "EINVAL");
	assert_non_null(strstr(error_field(j, "message"), "colour"));
	json_decref(j);

	/* another scope than the mount's */
	j = transact("acquire", "{\"scope\": \"elsewhere\", \"thread\": \"t\", \"agent\": \"a\", \"kind\": \"k\"}", &wrote);
	if (wrote != -EACCES)
		fail_msg("another scope: %d, %s", wrote, error_field(j, "message"));
	assert_string_equal(error_field(j, "errno"), "EACCES");
	assert_non_null(strstr(error_field(j, "message"), scope));
	json_decref(j);

	j = transact("exec", "{\"sandbox\": \"maf-sandbox-docker-000000000000\", \"argv\": [\"true\"]}", &wrote);
	assert_int_equal(wrote, -ENOENT);
	assert_string_equal(error_field(j, "errno"), "ENOENT");
	assert_non_null(strstr(error_field(j, "message"), "maf-sandbox-docker-000000000000"));
	json_decref(j);
}

/* An acquire through .ctl, the sandbox then in the tree: its refusals, an exec, a release mid-exec, a dispose. */
static void test_sandbox_round_trip(void **state)
{
	(void)state;
	int wrote;
	char req[512];
	snprintf(req, sizeof(req), "{\"scope\": \"%s\", \"thread\": \"t\", \"agent\": \"a\", \"kind\": \"k\", "
		 "\"image\": \"%s\"}", scope, harness_image());
	json_t *j = transact("acquire", req, &wrote);
	assert_int_equal(wrote, (int)strlen(req));
	if (!json_is_true(json_object_get(j, "ok")))
		fail_msg("acquire: %s", error_field(j, "message"));
	snprintf(sbx, sizeof(sbx), "%s", json_string_value(json_object_get(j, "name")));
	harness_register_container(sbx);
	json_decref(j);

	char p[256], q[256];
	struct stat st;
	snprintf(p, sizeof(p), "/%s", sbx);
	assert_int_equal(fsll_getattr(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* the tree's refusals: status is read-only, root/ is EROFS, the tree cannot be changed */
	struct fuse_file_info fi;
	memset(&fi, 0, sizeof(fi));
	fi.flags = O_WRONLY;
	snprintf(p, sizeof(p), "/%s/status", sbx);
	assert_int_equal(fsll_open(p, &fi), -EACCES);
	snprintf(p, sizeof(p), "/%s/root/a", sbx);
	snprintf(q, sizeof(q), "/%s/root/b", sbx);
	assert_int_equal(fsll_rename(p, q, RENAME_EXCHANGE), -EROFS);
	assert_int_equal(fsll_mkdir(p, 0755), -EROFS);
	snprintf(p, sizeof(p), "/%s/newdir", sbx);
	assert_int_equal(fsll_mkdir(p, 0755), -EPERM);

	/* a handle released while its exec runs: the write is answered when the command ends */
	memset(&fi, 0, sizeof(fi));
	fi.flags = O_RDWR;
	assert_int_equal(fsll_open("/.ctl/exec", &fi), 0);
	snprintf(req, sizeof(req), "{\"sandbox\": \"%s\", \"argv\": [\"sh\", \"-c\", \"sleep 1; echo done\"]}", sbx);
	struct fuse_req *w = fsll_write_start(&fi, req, strlen(req), 0);
	assert_int_equal(fsll_flush(&fi), 0);
	assert_int_equal(fsll_release(&fi), 0);
	assert_int_equal(fsll_result(w), (int)strlen(req));

	snprintf(req, sizeof(req), "{\"sandbox\": \"%s\", \"argv\": [\"sh\", \"-c\", \"echo hi; exit 3\"]}", sbx);
	j = transact("exec", req, &wrote);
	assert_int_equal(wrote, (int)strlen(req));
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 3);
	assert_string_equal(json_string_value(json_object_get(j, "stdout")), "hi\n");
	json_decref(j);

	snprintf(req, sizeof(req), "{\"name\": \"%s\"}", sbx);
	j = transact("dispose", req, &wrote);
	assert_int_equal(wrote, (int)strlen(req));
	assert_true(json_is_true(json_object_get(j, "ok")));
	json_decref(j);
	harness_forget_container(sbx);
	snprintf(p, sizeof(p), "/%s", sbx);
	assert_int_equal(fsll_getattr(p, &st), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_and_ctl),
		cmocka_unit_test(test_error_replies),
		cmocka_unit_test(test_sandbox_round_trip),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
