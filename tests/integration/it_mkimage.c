/*
 * it_mkimage.c: `mafsbx mkimage` end to end against the real dockerd. The
 * CLI (path from meson as argv[1]) imports the busybox rootfs under a unique
 * name; the test then checks what the engine holds (the printed ID, CMD
 * sleep infinity, no user) and runs a container of it as uid 1000: every
 * applet linked, passwd/group, /tmp 1777, /root 0700 and closed to the
 * sandbox user, /home/sandbox owned 1000:1000, the container kept alive by
 * its CMD. The image and container are removed by the harness.
 *
 * --egress-proxy with no --proxy-program takes the proxy built beside the
 * program (BUILD/tools/egress-proxy/mafsbx-egress-proxy next to
 * BUILD/tools/mafsbx) before the installed one: a copy of mafsbx in a
 * scratch directory, with a marked static program (the host's busybox) as
 * its egress-proxy/mafsbx-egress-proxy, must put exactly that file in the
 * image.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "engine.h"
#include "harness.h"
#include "rootfs.h"

static const char *mafsbx_bin;

/* Run the CLI with argv; stdout collected, stderr passed through; 60 s bound. */
static int run_cli(const char *const *args, struct mafsbx_buf *out)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	pid_t pid;
	extern char **environ;
	int sr = posix_spawn(&pid, args[0], &fa, NULL, (char *const *)args, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (sr != 0)
		fail_msg("cannot run %s: %s", args[0], strerror(sr));
	long long deadline = mafsbx_now_ms() + 60000;
	for (;;) {
		long long left = deadline - mafsbx_now_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			fail_msg("mafsbx mkimage did not finish within 60 s");
		}
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		int n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n >= 0);
		if (n == 0)
			continue;
		char buf[4096];
		ssize_t got = read(p[0], buf, sizeof(buf));
		if (got <= 0)
			break;
		assert_int_equal(mafsbx_buf_append(out, buf, (size_t)got), 0);
	}
	close(p[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(mafsbx_buf_append(out, "", 0), 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run argv in the container as its configured user (uid 1000 here); stdout returned. */
static int exec_user(const char *c, const char *script, struct mafsbx_exec_result *res)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 30000 };
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_exec_run(harness_engine(), c, &rq, res, &err);
	harness_check(r, &err, script);
	return res->exit_code;
}

static void expect_output(const char *c, const char *script, int code, const char *want)
{
	struct mafsbx_exec_result res;
	int got = exec_user(c, script, &res);
	if (got != code || strcmp((const char *)res.out, want) != 0)
		fail_msg("'%s': exit %d stdout '%s' stderr '%s'; want exit %d stdout '%s'", script, got,
			 (const char *)res.out, (const char *)res.err, code, want);
	mafsbx_exec_result_free(&res);
}

static void test_mkimage_end_to_end(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	char repo[HARNESS_NAME_MAX], ref[HARNESS_NAME_MAX + 8];
	harness_unique_name("mkimage", repo);
	snprintf(ref, sizeof(ref), "%s:t1", repo);
	harness_register_image(ref);

	/* The CLI on the harness's own endpoint, so both talk to the same engine. */
	const char *url = mafsbx_engine_endpoint(e)->url;
	const char *args[] = { mafsbx_bin, "mkimage", "--tag", ref, "-H", url, NULL };
	struct mafsbx_buf out = MAFSBX_BUF_INIT;
	int rc = run_cli(args, &out);
	if (rc != 0)
		fail_msg("mafsbx mkimage exited %d (stdout '%s')", rc, out.data);

	json_t *img = NULL;
	struct mafsbx_error err;
	harness_check(mafsbx_image_inspect(e, ref, &img, &err), &err, "inspect the imported image");
	const char *id = json_string_value(json_object_get(img, "Id"));
	assert_non_null(id);
	char want_out[128];
	snprintf(want_out, sizeof(want_out), "%s\n", id);
	assert_string_equal(out.data, want_out);
	mafsbx_buf_free(&out);
	json_t *cfg = json_object_get(img, "Config");
	json_t *cmd = json_object_get(cfg, "Cmd");
	assert_int_equal(json_array_size(cmd), 2);
	assert_string_equal(json_string_value(json_array_get(cmd, 0)), "/bin/sleep");
	assert_string_equal(json_string_value(json_array_get(cmd, 1)), "infinity");
	const char *user = json_string_value(json_object_get(cfg, "User"));
	assert_true(!user || !*user);
	json_decref(img);

	/* A container of it, as the sandbox user, kept alive by the image's CMD. */
	char c[HARNESS_NAME_MAX];
	json_t *body = json_pack("{s:s, s:s, s:{s:s}}", "Image", ref, "User", "1000:1000", "HostConfig",
				 "NetworkMode", "none");
	harness_container_cfg("mkimage", body, true, c);
	json_decref(body);
	json_t *ins = NULL;
	harness_check(mafsbx_container_inspect(e, c, &ins, &err), &err, "inspect the container");
	assert_true(json_is_true(json_object_get(json_object_get(ins, "State"), "Running")));
	json_decref(ins);

	expect_output(c, "id -u; id -g; id -un", 0, "1000\n1000\nsandbox\n");
	expect_output(c, "stat -c '%a %u:%g' /tmp /root /home/sandbox /bin/busybox", 0,
		      "1777 0:0\n700 0:0\n755 1000:1000\n755 0:0\n");
	expect_output(c, "cat /etc/passwd /etc/group", 0,
		      "root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n"
		      "root:x:0:\nsandbox:x:1000:\n");
	expect_output(c, "echo hi > /tmp/f && cat /tmp/f && echo x > /home/sandbox/g && cat /home/sandbox/g", 0,
		      "hi\nx\n");
	expect_output(c, "ls /root 2>/dev/null; echo $?", 0, "1\n");
	expect_output(c, "readlink /bin/sleep; readlink /bin/sh", 0, "busybox\nbusybox\n");
	/* Every applet busybox knows is linked in /bin (plus busybox itself). */
	expect_output(c,
		      "n=0; for a in $(busybox --list); do [ $a = busybox ] && continue; "
		      "[ -L /bin/$a ] || echo missing $a; n=$((n+1)); done; "
		      "[ $(ls /bin | wc -l) -eq $((n+1)) ] && echo all",
		      0, "all\n");
}

/* Copy `from` to `to` with `mode` (the whole file). */
static void copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (in < 0 || out < 0)
		fail_msg("copy %s to %s: %s", from, to, strerror(errno));
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	assert_int_equal(close(out), 0);
}

static void test_mkimage_proxy_beside(void **state)
{
	(void)state;
	struct mafsbx_error err;
	if (mafsbx_rootfs_check_static(MAFSBX_ROOTFS_BUSYBOX, &err) < 0)
		fail_msg("%s", err.message);
	char dir[] = "/tmp/mafsbx-beside.XXXXXX", prog[128], sub[128], proxy[160];
	assert_non_null(mkdtemp(dir));
	snprintf(prog, sizeof(prog), "%s/mafsbx", dir);
	snprintf(sub, sizeof(sub), "%s/egress-proxy", dir);
	snprintf(proxy, sizeof(proxy), "%s/mafsbx-egress-proxy", sub);
	copy_file(mafsbx_bin, prog, 0755);
	assert_int_equal(mkdir(sub, 0755), 0);
	/* the marker: busybox is static, and unlike any proxy build */
	copy_file(MAFSBX_ROOTFS_BUSYBOX, proxy, 0755);

	char repo[HARNESS_NAME_MAX], ref[HARNESS_NAME_MAX + 8];
	harness_unique_name("mkproxy", repo);
	snprintf(ref, sizeof(ref), "%s:t1", repo);
	harness_register_image(ref);
	const char *url = mafsbx_engine_endpoint(harness_engine())->url;
	const char *args[] = { prog, "mkimage", "--egress-proxy", "--tag", ref, "-H", url, NULL };
	struct mafsbx_buf out = MAFSBX_BUF_INIT;
	int rc = run_cli(args, &out);
	unlink(proxy);
	rmdir(sub);
	unlink(prog);
	rmdir(dir);
	if (rc != 0)
		fail_msg("mafsbx mkimage --egress-proxy exited %d (stdout '%s')", rc, out.data);
	mafsbx_buf_free(&out);

	/* what the image runs as its proxy is the marker, byte for byte */
	char c[HARNESS_NAME_MAX];
	json_t *body = json_pack("{s:s, s:[s, s], s:{s:s}}", "Image", ref, "Cmd", "/bin/sleep", "infinity",
				 "HostConfig", "NetworkMode", "none");
	harness_container_cfg("mkproxy", body, true, c);
	json_decref(body);
	expect_output(c, "cmp " MAFSBX_ROOTFS_PROXY_IN_IMAGE " /bin/busybox && echo same", 0, "same\n");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-mafsbx\n", argv[0]);
		return 2;
	}
	mafsbx_bin = argv[1];
	harness_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mkimage_end_to_end),
		cmocka_unit_test(test_mkimage_proxy_beside),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
