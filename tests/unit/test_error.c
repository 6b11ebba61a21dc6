/*
 * test_error.c: the mapping of engine answers to error kinds and errnos
 * (doc/engine-notes.md §1.2, §3, §4, §5), and message scrubbing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"

struct row {
	long status;
	const char *body;
	const char *path;
	enum mafsbx_err_kind kind;
	int err;
};

static const struct row rows[] = {
	{ 404, "{\"message\":\"No such container: apiresearch-nope\"}", "/w/x", MAFSBX_EK_NO_CONTAINER, ENOENT },
	{ 404, "{\"message\":\"Could not find the file /w/missing in container c1\"}", "/w/missing", MAFSBX_EK_NO_PATH, ENOENT },
	/* a message about a child is not absence of the parent (doc/upstream.md §3.3) */
	{ 404, "{\"message\":\"Could not find the file /w/missing/x in container c1\"}", "/w/missing", MAFSBX_EK_NO_OBJECT, ENOENT },
	/* matched before scrubbing: a guest path naming /var/lib/docker */
	{ 404, "{\"message\":\"Could not find the file /w/var/lib/docker/x in container c1\"}", "/w/var/lib/docker/x", MAFSBX_EK_NO_PATH, ENOENT },
	{ 404, "{\"message\":\"Could not find the file /w/var/lib/docker/x/y in container c1\"}", "/w/var/lib/docker/x", MAFSBX_EK_NO_OBJECT, ENOENT },
	/* non-UTF-8 bytes come back as one U+FFFD each (Go's JSON encoder) */
	{ 404, "{\"message\":\"Could not find the file /w/a\\ufffd\\ufffdb in container c1\"}", "/w/a\xff\xc3" "b", MAFSBX_EK_NO_PATH, ENOENT },
	{ 404, "{\"message\":\"Could not find the file /w/a\\ufffdb in container c1\"}", "/w/a\xff\xc3" "b", MAFSBX_EK_NO_OBJECT, ENOENT },
	{ 404, "{\"message\":\"Could not find the file /w/a\\u00e9 in container c1\"}", "/w/a\xc3\xa9", MAFSBX_EK_NO_PATH, ENOENT },
	{ 404, "{\"message\":\"Could not find the file /w/\\ufffd\\ufffd\\ufffd in container c1\"}", "/w/\xed\xa0\x80", MAFSBX_EK_NO_PATH, ENOENT },
	{ 404, "{\"message\":\"no such image: x:latest: No such image: x:latest\"}", NULL, MAFSBX_EK_NO_IMAGE, ENOENT },
	{ 404, "{\"message\":\"No such exec instance: deadbeef\"}", NULL, MAFSBX_EK_NO_OBJECT, ENOENT },
	{ 409, "{\"message\":\"Container abc is already paused\"}", NULL, MAFSBX_EK_CONFLICT, EEXIST },
	{ 409, "{\"message\":\"Container c is paused, unpause the container before exec\"}", NULL, MAFSBX_EK_PAUSED, EBUSY },
	{ 409, "{\"message\":\"Container abc is not running\"}", NULL, MAFSBX_EK_NOT_RUNNING, EBUSY },
	{ 500, "{\"message\":\"lstat /var/lib/docker/overlay2/abc/merged/w/file/x: not a directory\"}", "/w/file/x", MAFSBX_EK_NOT_DIR, ENOTDIR },
	{ 500, "{\"message\":\"evalSymlinksInScope: too many links in /var/lib/docker/overlay2/a/merged/w/loop1\"}", NULL, MAFSBX_EK_CONFINEMENT, ELOOP },
	{ 500, "{\"message\":\"lstat /var/lib/docker/overlay2/a/merged/w/xxx: file name too long\"}", NULL, MAFSBX_EK_NAMETOOLONG, ENAMETOOLONG },
	/* Docker 26 (doc/engines.md) */
	{ 409, "{\"message\":\"cannot remove container \\\"/c1\\\": container is paused and must be unpaused first\"}", NULL, MAFSBX_EK_CONFLICT, EEXIST },
	{ 409, "{\"message\":\"cannot remove container \\\"/c1\\\": container is running: stop the container before removing or force remove\"}", NULL, MAFSBX_EK_CONFLICT, EEXIST },
	{ 409, "{\"message\":\"You cannot remove a paused container abc. Unpause and then stop the container before attempting removal or force remove\"}", NULL, MAFSBX_EK_CONFLICT, EEXIST },
	{ 500, "{\"message\":\"lstat /w/loop1/x: too many levels of symbolic links\"}", "/w/loop1/x", MAFSBX_EK_CONFINEMENT, ELOOP },
	{ 500, "{\"message\":\"Container abc is not paused\"}", NULL, MAFSBX_EK_ENGINE, EIO },
	{ 400, "{\"message\":\"bad parameter: pathcannot be empty\"}", NULL, MAFSBX_EK_INVALID, EINVAL },
	/* Podman 4.3: a missing path of the archive API is the bare errno text */
	{ 404, "{\"cause\":\"no such file or directory\",\"message\":\"no such file or directory\",\"response\":404}", "/w/missing", MAFSBX_EK_NO_PATH, ENOENT },
	{ 404, "{\"message\":\"no such file or directory: /etc/x\"}", "/w/missing", MAFSBX_EK_NO_OBJECT, ENOENT },
	/* Podman 4.3: what the container's state does not allow is a 500 */
	{ 500, "{\"cause\":\"container state improper\",\"message\":\"\\\"exited\\\" is not running, can't pause: container state improper\",\"response\":500}", NULL, MAFSBX_EK_NOT_RUNNING, EBUSY },
	{ 500, "{\"cause\":\"container state improper\",\"message\":\"\\\"abc\\\" is already paused: container state improper\",\"response\":500}", NULL, MAFSBX_EK_CONFLICT, EEXIST },
	{ 500, "{\"cause\":\"container state improper\",\"message\":\"\\\"abc\\\" is not paused, can't unpause: container state improper\",\"response\":500}", NULL, MAFSBX_EK_ENGINE, EIO },
	/* a rootless engine on cgroup v1 (cgroup driver none) cannot pause */
	{ 500, "{\"message\":\"Cannot pause container abc: cgroups not configured for container\"}", NULL, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP },
	{ 502, "not json at all", NULL, MAFSBX_EK_ENGINE, EIO },
	{ 503, NULL, NULL, MAFSBX_EK_ENGINE, EIO },
};

/* A path longer than any message buffer is still matched in full. */
static void test_long_absent_path(void **state)
{
	(void)state;
	char path[3000], body[3200];
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	snprintf(body, sizeof(body), "{\"message\":\"Could not find the file %s in container c1\"}", path);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	assert_int_equal(mafsbx_error_from_engine(&e, 404, body, strlen(body), "op", path), -ENOENT);
	assert_int_equal(e.kind, MAFSBX_EK_NO_PATH);
	/* one byte short is another path */
	path[sizeof(path) - 2] = '\0';
	mafsbx_error_clear(&e);
	mafsbx_error_from_engine(&e, 404, body, strlen(body), "op", path);
	assert_int_equal(e.kind, MAFSBX_EK_NO_OBJECT);
}

static void test_mapping_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		const struct row *r = &rows[i];
		int ret = mafsbx_error_from_engine(&e, r->status, r->body, r->body ? strlen(r->body) : 0, "op", r->path);
		if (e.kind != r->kind || e.err != r->err)
			fail_msg("row %zu: got kind %s errno %s, want %s %s", i, mafsbx_error_kind_name(e.kind),
				 mafsbx_errno_name(e.err), mafsbx_error_kind_name(r->kind), mafsbx_errno_name(r->err));
		assert_int_equal(ret, -r->err);
		assert_int_equal(e.http_status, r->status);
		assert_null(strstr(e.message, "/var/lib/docker"));
	}
}

static void test_scrub_keeps_guest_path(void **state)
{
	(void)state;
	char msg[] = "lstat /var/lib/docker/overlay2/0123abc/merged/w/file/x: not a directory";
	mafsbx_scrub_host_paths(msg);
	assert_string_equal(msg, "lstat <rootfs>/w/file/x: not a directory");
}

static void test_set_and_prefix(void **state)
{
	(void)state;
	struct mafsbx_error e;
	assert_int_equal(mafsbx_error_set(&e, MAFSBX_EK_CONFINEMENT, "%s is a link", "out"), -ELOOP);
	assert_string_equal(e.type, "ValueError");
	mafsbx_error_prefix(&e, "stat %s", "out/x");
	assert_string_equal(e.message, "stat out/x: out is a link");
	assert_int_equal(mafsbx_error_set(NULL, MAFSBX_EK_TIMEOUT, "x"), -ETIMEDOUT);
	assert_int_equal(mafsbx_error_set_full(&e, MAFSBX_EK_SYSTEM, ENOSPC, NULL, "disk"), -ENOSPC);
	assert_string_equal(mafsbx_errno_name(ENOTCONN), "ENOTCONN");
	/* a reply cut by the end of the mount names its errno */
	assert_string_equal(mafsbx_errno_name(ESHUTDOWN), "ESHUTDOWN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mapping_table),
		cmocka_unit_test(test_long_absent_path),
		cmocka_unit_test(test_scrub_keeps_guest_path),
		cmocka_unit_test(test_set_and_prefix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
