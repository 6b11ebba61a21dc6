/*
 * it_verbs.c: the shell verbs `mafsbx acquire / exec / dispose`
 * (mafsbx(1)) run as the real program (MAFSBX_CLI) against the real dockerd, and the
 * request fields they share with the ctl files: image_id (doc/upstream.md §1.3) and
 * dispose by instance_id (doc/upstream.md §8.4), through the library as a .ctl
 * request runs them too.
 *
 * acquire: the name printed is the one the library's acquire gives for the
 * same request, with the very same labels; exec: output streamed (the first
 * line arrives before the second is printed), the guest's exit status, 124
 * on timeout (the sandbox disposed), 125 for a request that failed, 127 for a
 * command not found, docker exec's -w/-e/-u, stdin from a pipe with -i and
 * none without it, -i streamed both ways at once (each line typed comes
 * back while stdin is still open) and past the old 64 MiB read-ahead cap,
 * -d returning while the command runs on (its output pipes released) and
 * reporting a command that cannot start; ls -q and --format json name the
 * sandbox; dispose: by name, by several names
 * (each in turn, one line each, a refused one failing the run but not the
 * others), by conversation, by instance ID (never another key's, never a
 * newer instance).
 */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "buf.h"
#include "sbx_testlib.h"

struct run {
	int code;
	struct mafsbx_buf out, err;
	long long first_ms, last_ms;   /* arrival of the first / last stdout chunk, from the start */
	size_t chunks;                 /* stdout chunks read */
};

static void run_free(struct run *r)
{
	mafsbx_buf_free(&r->out);
	mafsbx_buf_free(&r->err);
}

static void child(const char *const *args, int in, int po, int pe)
{
	dup2(in, 0);
	dup2(po, 1);
	dup2(pe, 2);
	char *argv[40];
	size_t n = 0;
	argv[n++] = (char *)"mafsbx";
	for (size_t i = 0; args[i] && n < 39; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	/* the freezer domain of this test (its private runtime directory) */
	setenv(MAFSBX_RUNDIR_ENV, sbxt_g.rundir, 1);
	execv(getenv("MAFSBX_CLI"), argv);
	_exit(127);
}

/* Read both streams until they close, noting when stdout chunks arrive. */
static void collect(struct run *r, int po, int pe, pid_t pid, long long t0)
{
	struct pollfd fds[2] = { { .fd = po, .events = POLLIN }, { .fd = pe, .events = POLLIN } };
	struct mafsbx_buf *bufs[2] = { &r->out, &r->err };
	int open_fds = 2;
	long long deadline = t0 + 60000;
	while (open_fds > 0) {
		long long left = deadline - mafsbx_now_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			fail_msg("mafsbx did not finish within 60 s");
		}
		if (poll(fds, 2, (int)left) < 0 && errno != EINTR)
			fail_msg("poll: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char chunk[4096];
			ssize_t got = read(fds[i].fd, chunk, sizeof(chunk));
			if (got <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
				continue;
			}
			assert_int_equal(mafsbx_buf_append(bufs[i], chunk, (size_t)got), 0);
			if (i == 0) {
				r->last_ms = mafsbx_now_ms() - t0;
				if (!r->chunks++)
					r->first_ms = r->last_ms;
			}
		}
	}
}

/* Run mafsbx with args (NULL-terminated) and `input` on stdin (NULL: /dev/null). */
static void run_in(struct run *r, const char *input, const char *const *args)
{
	if (!getenv("MAFSBX_CLI"))
		fail_msg("MAFSBX_CLI is not set (meson sets it to the built mafsbx)");
	memset(r, 0, sizeof(*r));
	int po[2], pe[2], pi[2];
	assert_int_equal(pipe2(po, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pe, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pi, O_CLOEXEC), 0);
	long long t0 = mafsbx_now_ms();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int in = input ? pi[0] : open("/dev/null", O_RDONLY);
		child(args, in, po[1], pe[1]);
	}
	close(po[1]);
	close(pe[1]);
	close(pi[0]);
	if (input)
		assert_int_equal(write(pi[1], input, strlen(input)), (ssize_t)strlen(input));
	close(pi[1]);
	collect(r, po[0], pe[0], pid, t0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	r->code = WEXITSTATUS(status);
	mafsbx_buf_puts(&r->out, "");
	mafsbx_buf_puts(&r->err, "");
}

#define RUN(r, ...) run_in((r), NULL, (const char *const[]){ __VA_ARGS__, NULL })

static void expect_code(struct run *r, int code)
{
	if (r->code != code)
		fail_msg("exit %d, want %d; stdout '%s' stderr '%s'", r->code, code, r->out.data, r->err.data);
}

/* The one line a successful acquire prints, as a name. */
static void printed_name(struct run *r, char name[MAFSBX_NAME_LEN + 1])
{
	expect_code(r, 0);
	size_t n = strlen(r->out.data);
	assert_true(n == MAFSBX_NAME_LEN + 1 && r->out.data[n - 1] == '\n');
	snprintf(name, MAFSBX_NAME_LEN + 1, "%.*s", MAFSBX_NAME_LEN, r->out.data);
	assert_true(mafsbx_is_workload_name(name));
	harness_register_container(name);
}

static json_t *labels_of(const char *ref)
{
	json_t *j = sbxt_inspect(ref);
	json_t *l = json_incref(json_object_get(json_object_get(j, "Config"), "Labels"));
	json_decref(j);
	return l;
}

static char *image_id(void)
{
	json_t *img = NULL;
	struct mafsbx_error e;
	harness_check(mafsbx_image_inspect(harness_engine(), harness_image(), &img, &e), &e, "image inspect");
	char *id = strdup(json_string_value(json_object_get(img, "Id")));
	json_decref(img);
	return id;
}

/* ---- acquire ---------------------------------------------------------------- */

static void test_acquire_same_as_ctl(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], name[MAFSBX_NAME_LEN + 1];
	sbxt_scope(scope);
	struct run r;
	RUN(&r, "acquire", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "agent one", "--kind", "python",
	    "--image", harness_image(), "--output", "result.json", "--output", "plots/fig1.png", "--label", "team=x",
	    "--env", "K=V");
	printed_name(&r, name);
	run_free(&r);
	struct mafsbx_key k = { scope, SBXT_THREAD, "agent one", "" };
	char want[MAFSBX_NAME_LEN + 1];
	mafsbx_container_name(&k, "python", "", want);
	assert_string_equal(name, want);
	json_t *cli = labels_of(name);
	assert_int_equal(sbxt_dispose_scope(scope), 1);

	/* the same request as .ctl/acquire takes it: same name, same labels */
	struct mafsbx_acquire_result a;
	sbxt_acquire_ok(scope, "agent one", "python",
			"\"outputs\":[\"result.json\",\"plots/fig1.png\"],\"labels\":{\"team\":\"x\"},\"env\":{\"K\":\"V\"}",
			&a);
	assert_string_equal(a.name, name);
	json_t *ctl = labels_of(a.name);
	if (!json_equal(cli, ctl)) {
		char *x = json_dumps(cli, JSON_SORT_KEYS), *y = json_dumps(ctl, JSON_SORT_KEYS);
		fail_msg("labels differ:\n  cli %s\n  ctl %s", x, y);
	}
	json_decref(cli);
	json_decref(ctl);

	/* a second CLI acquire reuses it */
	RUN(&r, "acquire", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "agent one", "--kind", "python",
	    "--image", harness_image(), "--json");
	expect_code(&r, 0);
	assert_non_null(strstr(r.out.data, "\"state\":\"reused\""));
	assert_non_null(strstr(r.out.data, a.id));
	run_free(&r);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

/* ---- exec --------------------------------------------------------------------- */

/* A sandbox in a scope of its own, for one test. */
static void fresh_sandbox(char scope[HARNESS_NAME_MAX], struct mafsbx_acquire_result *a)
{
	sbxt_scope(scope);
	sbxt_acquire_ok(scope, "a", "k", NULL, a);
}

static void test_exec_streams(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	struct mafsbx_acquire_result a;
	fresh_sandbox(scope, &a);
	struct run r;
	RUN(&r, "exec", a.name, "--", "sh", "-c", "echo first; echo err1 >&2; sleep 1; echo second; exit 3");
	expect_code(&r, 3);   /* the guest's exit status */
	assert_string_equal(r.out.data, "first\nsecond\n");
	assert_string_equal(r.err.data, "err1\n");
	/* streamed: the first line came before the second was printed, a second later */
	if (r.chunks < 2 || r.last_ms - r.first_ms < 700)
		fail_msg("stdout not streamed: %zu chunks, first at %lld ms, last at %lld ms", r.chunks, r.first_ms,
			 r.last_ms);
	run_free(&r);

	/* options after NAME, ARGV without "--", cwd and env as .ctl/exec takes them */
	RUN(&r, "exec", a.name, "--cwd", "/tmp", "--env", "A=b c", "sh", "-c", "pwd; echo \"$A\"");
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "/tmp\nb c\n");
	run_free(&r);

	/* docker exec's short flags: -w, -e (repeated), -u UID:GID */
	RUN(&r, "exec", "-w", "/tmp", "-e", "A=1", "-e", "B=two", "-u", "1234:567", a.name, "sh", "-c",
	    "pwd; echo \"$A $B\"; id -u; id -g");
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "/tmp\n1 two\n1234\n567\n");
	run_free(&r);
	/* -e KEY: the caller's value, and no variable at all when the caller has none (docker exec);
	 * --env-file in docker's format, under -e's values whatever the order */
	assert_int_equal(setenv("MAFSBX_IT_FROM_HERE", "caller's value", 1), 0);
	assert_int_equal(unsetenv("MAFSBX_IT_UNSET"), 0);
	char envfile[] = "/tmp/it_verbs_env.XXXXXX";
	int efd = mkstemp(envfile);
	assert_true(efd >= 0);
	const char *lines = "# docker's format\n\n  F1=one\nOVER=from the file\nMAFSBX_IT_FROM_HERE\nMAFSBX_IT_UNSET\n";
	assert_int_equal(write(efd, lines, strlen(lines)), (ssize_t)strlen(lines));
	close(efd);
	RUN(&r, "exec", "-e", "MAFSBX_IT_FROM_HERE", "--env", "MAFSBX_IT_UNSET", "-e", "OVER=from -e", "--env-file",
	    envfile, a.name, "sh", "-c", "echo \"$MAFSBX_IT_FROM_HERE|${MAFSBX_IT_UNSET-unset}|$F1|$OVER\"");
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "caller's value|unset|one|from -e\n");
	run_free(&r);
	RUN(&r, "exec", "--env-file", envfile, a.name, "sh", "-c", "echo \"$MAFSBX_IT_FROM_HERE|$F1|$OVER\"");
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "caller's value|one|from the file\n");
	run_free(&r);
	assert_int_equal(unlink(envfile), 0);
	assert_int_equal(unsetenv("MAFSBX_IT_FROM_HERE"), 0);
	RUN(&r, "exec", a.name, "--user", "0", "--", "id", "-u");
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "0\n");
	run_free(&r);

	/* stdin from a pipe with -i (and -i in a group, as -it would be, minus -t) */
	run_in(&r, "hello\nworld\n", (const char *const[]){ "exec", "-i", a.name, "--", "wc", "-l", NULL });
	expect_code(&r, 0);
	assert_non_null(strstr(r.out.data, "2"));
	run_free(&r);
	run_in(&r, "abc", (const char *const[]){ "exec", a.name, "--interactive", "--", "cat", NULL });
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "abc");
	run_free(&r);
	/* without -i the command's stdin is empty, as docker exec's */
	run_in(&r, "hello\nworld\n", (const char *const[]){ "exec", a.name, "--", "wc", "-c", NULL });
	expect_code(&r, 0);
	assert_non_null(strstr(r.out.data, "0"));
	assert_null(strstr(r.out.data, "12"));
	run_free(&r);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

/* mafsbx ARGS with pipes on stdin and stdout (stderr passed through); the child's PID. */
static pid_t spawn_piped(const char *const *args, int *to_child, int *from_child)
{
	int pi[2], po[2];
	assert_int_equal(pipe2(pi, O_CLOEXEC), 0);
	assert_int_equal(pipe2(po, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child(args, pi[0], po[1], STDERR_FILENO);
	close(pi[0]);
	close(po[1]);
	*to_child = pi[1];
	*from_child = po[0];
	return pid;
}

/* Read from fd into out until it holds `want` (or EOF, or 30 s pass). */
static void read_until(int fd, struct mafsbx_buf *out, const char *want, pid_t pid)
{
	long long deadline = mafsbx_now_ms() + 30000;
	while (!(out->data && strstr(out->data, want))) {
		long long left = deadline - mafsbx_now_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			fail_msg("'%s' did not come back within 30 s (got '%s')", want, out->data ? out->data : "");
		}
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		char chunk[4096];
		ssize_t got = read(fd, chunk, sizeof(chunk));
		if (got <= 0)
			fail_msg("stdout ended before '%s' came back (got '%s')", want, out->data ? out->data : "");
		assert_int_equal(mafsbx_buf_append(out, chunk, (size_t)got), 0);   /* NUL-terminated */
	}
}

static int wait_code(pid_t pid)
{
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* -i as docker exec -i: both ways at once, and no cap on the amount. */
static void test_exec_interactive(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	struct mafsbx_acquire_result a;
	fresh_sandbox(scope, &a);

	/* each line comes back while stdin is still open */
	int in, out;
	pid_t pid = spawn_piped((const char *const[]){ "exec", "-i", a.name, "--", "sh", "-c",
						       "while read l; do echo \"got $l\"; done; echo end", NULL },
				&in, &out);
	struct mafsbx_buf got = MAFSBX_BUF_INIT;
	assert_int_equal(write(in, "one\n", 4), 4);
	read_until(out, &got, "got one\n", pid);
	assert_int_equal(write(in, "two\n", 4), 4);
	read_until(out, &got, "got two\n", pid);
	close(in);   /* the guest's read sees the end of its stdin */
	read_until(out, &got, "end\n", pid);
	assert_string_equal(got.data, "got one\ngot two\nend\n");
	close(out);
	assert_int_equal(wait_code(pid), 0);
	mafsbx_buf_free(&got);

	/* 70 MiB, past the 64 MiB that stdin was once read into memory for */
	pid = spawn_piped((const char *const[]){ "exec", "-i", a.name, "--", "wc", "-c", NULL }, &in, &out);
	static char block[1 << 20];
	memset(block, 'x', sizeof(block));
	for (int i = 0; i < 70; i++)
		assert_int_equal(write(in, block, sizeof(block)), (ssize_t)sizeof(block));
	close(in);
	read_until(out, &got, "\n", pid);
	assert_int_equal(strtoll(got.data, NULL, 10), 70ll << 20);
	close(out);
	assert_int_equal(wait_code(pid), 0);
	mafsbx_buf_free(&got);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

/* -d as docker exec -d: the ID printed, the command running on. */
static void test_exec_detach(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	struct mafsbx_acquire_result a;
	fresh_sandbox(scope, &a);
	struct run r;
	/* The command waits for /tmp/go: RUN gets the end of both output pipes
	 * only if the verb returned and nothing kept them open. */
	RUN(&r, "exec", "-d", a.name, "--", "sh", "-c",
	    "echo lost; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo done > /tmp/d");
	expect_code(&r, 0);
	assert_int_equal(strlen(r.out.data), 65);
	r.out.data[64] = '\0';
	assert_true(mafsbx_is_engine_id(r.out.data));
	assert_string_equal(r.err.data, "");
	run_free(&r);
	RUN(&r, "exec", a.name, "--", "sh", "-c", "cat /tmp/d 2>/dev/null; ps | grep -c '[w]hile'");
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "1\n");   /* it runs, it has not finished */
	run_free(&r);
	RUN(&r, "exec", a.name, "--", "touch", "/tmp/go");
	expect_code(&r, 0);
	run_free(&r);
	long long deadline = mafsbx_now_ms() + 20000;
	for (;;) {
		RUN(&r, "exec", a.name, "--", "cat", "/tmp/d");
		if (r.code == 0)
			break;
		run_free(&r);
		if (mafsbx_now_ms() > deadline)
			fail_msg("the detached command did not finish after /tmp/go appeared");
		usleep(100 * 1000);
	}
	assert_string_equal(r.out.data, "done\n");
	run_free(&r);

	/* a command that cannot start is said, as without -d */
	RUN(&r, "exec", "-d", a.name, "--", "nosuchcommand");
	expect_code(&r, 127);
	assert_non_null(strstr(r.err.data, "could not start the command (exit 127)"));
	assert_string_equal(r.out.data, "");
	run_free(&r);
	RUN(&r, "exec", "-d", "maf-sandbox-docker-000000000000", "--", "true");
	expect_code(&r, 125);
	run_free(&r);
	/* -d takes no stdin */
	RUN(&r, "exec", "-di", a.name, "--", "true");
	expect_code(&r, 125);
	assert_non_null(strstr(r.err.data, "-d and -i"));
	run_free(&r);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

/* ls -q and --format json, as docker ps's */
static void test_ls_formats(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	struct mafsbx_acquire_result a, b;
	sbxt_scope(scope);
	sbxt_acquire_ok(scope, "a", "k", NULL, &a);
	sbxt_acquire_ok(scope, "b", "k", NULL, &b);
	struct run r;
	RUN(&r, "ls", "-q", "--scope", scope);
	expect_code(&r, 0);
	/* oldest first, by the engine's creation second, then by name: within
	 * one second either may come first (checked below from --format json) */
	char ab[2 * (MAFSBX_NAME_LEN + 1) + 1], ba[sizeof(ab)];
	snprintf(ab, sizeof(ab), "%s\n%s\n", a.name, b.name);
	snprintf(ba, sizeof(ba), "%s\n%s\n", b.name, a.name);
	if (strcmp(r.out.data, ab) != 0 && strcmp(r.out.data, ba) != 0)
		fail_msg("ls -q printed '%s', want the two names one a line", r.out.data);
	bool a_first = strcmp(r.out.data, ab) == 0;
	run_free(&r);
	RUN(&r, "ls", "--format", "json", "--scope", scope);
	expect_code(&r, 0);
	char *line = r.out.data, *nl;
	/* the same order as -q */
	const char *names[2] = { a_first ? a.name : b.name, a_first ? b.name : a.name };
	char created[2][40];
	for (int i = 0; i < 2; i++) {
		assert_non_null(nl = strchr(line, '\n'));
		json_error_t je;
		json_t *o = json_loadb(line, (size_t)(nl - line), 0, &je);
		if (!json_is_object(o))
			fail_msg("line %d is not one JSON object: %.*s", i, (int)(nl - line), line);
		assert_string_equal(json_string_value(json_object_get(o, "name")), names[i]);
		assert_string_equal(json_string_value(json_object_get(json_object_get(o, "key"), "scope")), scope);
		const char *c = json_string_value(json_object_get(o, "created"));
		assert_non_null(c);
		snprintf(created[i], sizeof(created[i]), "%s", c);
		json_decref(o);
		line = nl + 1;
	}
	assert_string_equal(line, "");
	/* that order is oldest first (RFC 3339 UTC strings compare as times), then by name */
	int by_time = strcmp(created[0], created[1]);
	if (by_time > 0 || (by_time == 0 && strcmp(names[0], names[1]) > 0))
		fail_msg("ls order: %s (%s) before %s (%s)", names[0], created[0], names[1], created[1]);
	/* a was made before b: a comes second only within the same second */
	if (!a_first && by_time != 0)
		fail_msg("ls put %s (made later, %s) before %s (%s)", b.name, created[0], a.name, created[1]);
	run_free(&r);
	RUN(&r, "ls", "-q", "--format", "json");
	expect_code(&r, 125);
	run_free(&r);
	assert_int_equal(sbxt_dispose_scope(scope), 2);
}

static void test_exec_codes(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	struct mafsbx_acquire_result a;
	fresh_sandbox(scope, &a);
	struct run r;
	RUN(&r, "exec", a.name, "--", "nosuchcommand");
	expect_code(&r, 127);
	assert_non_null(strstr(r.err.data, "could not start the command (exit 127)"));
	run_free(&r);
	RUN(&r, "exec", a.name, "--cwd", "/nonexistent-dir", "--", "true");
	expect_code(&r, 126);
	run_free(&r);
	/* no such sandbox: the request failed */
	RUN(&r, "exec", "maf-sandbox-docker-000000000000", "--", "true");
	expect_code(&r, 125);
	assert_non_null(strstr(r.err.data, "no sandbox named maf-sandbox-docker-000000000000"));
	run_free(&r);
	/* a container that is not a sandbox */
	char plain[HARNESS_NAME_MAX];
	harness_container("verbs", plain);
	RUN(&r, "exec", plain, "--", "true");
	expect_code(&r, 125);
	run_free(&r);
	/* past the old 300 s ceiling: taken (24 h, as a mount's default) */
	RUN(&r, "exec", a.name, "--timeout", "900", "--", "true");
	expect_code(&r, 0);
	run_free(&r);
	RUN(&r, "exec", a.name, "--on-timeout", "later", "--", "true");
	expect_code(&r, 125);
	assert_non_null(strstr(r.err.data, "on_timeout"));
	run_free(&r);
	/* timeout: 124; the command killed on this host, the sandbox kept, as .ctl/exec does */
	RUN(&r, "exec", a.name, "--timeout", "1", "--", "sleep", "30");
	expect_code(&r, 124);
	assert_non_null(strstr(r.err.data, "the sandbox kept"));
	run_free(&r);
	assert_true(sbxt_exists(a.id));
	/* --on-timeout dispose: disposed, as upstream */
	RUN(&r, "exec", a.name, "--timeout", "1", "--on-timeout", "dispose", "--", "sleep", "30");
	expect_code(&r, 124);
	assert_non_null(strstr(r.err.data, "timed out"));
	run_free(&r);
	assert_false(sbxt_exists(a.id));
	/* an engine that does not answer: 125 */
	RUN(&r, "exec", a.name, "-H", "unix:///nonexistent/docker.sock", "--", "true");
	expect_code(&r, 125);
	run_free(&r);
}

/* ---- dispose ------------------------------------------------------------------ */

static void test_dispose(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, b, c;
	sbxt_acquire_ok(scope, "a", "k1", NULL, &a);
	sbxt_acquire_ok(scope, "a", "k2", NULL, &b);
	sbxt_acquire_ok(scope, "b", "k1", NULL, &c);
	struct run r;
	RUN(&r, "dispose", a.name);
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "disposed 1\n");
	run_free(&r);
	assert_false(sbxt_exists(a.id));
	RUN(&r, "dispose", a.name);   /* already gone: success, 0 */
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "disposed 0\n");
	run_free(&r);
	/* a key's one kind, then the whole conversation */
	RUN(&r, "dispose", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "b", "--kind", "k2");
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "disposed 0\n");
	run_free(&r);
	RUN(&r, "dispose", "--scope", scope, "--thread", SBXT_THREAD);
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "disposed 2\n");
	run_free(&r);
	assert_false(sbxt_exists(b.id));
	assert_false(sbxt_exists(c.id));
}

/* `mafsbx dispose NAME...` as `docker rm`: each in turn, one line per name. */
static void test_dispose_names(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, b;
	sbxt_acquire_ok(scope, "a", "k1", NULL, &a);
	sbxt_acquire_ok(scope, "a", "k2", NULL, &b);
	char out[512];
	struct run r;
	RUN(&r, "dispose", a.name, b.name);
	expect_code(&r, 0);
	snprintf(out, sizeof(out), "%s: disposed 1\n%s: disposed 1\n", a.name, b.name);
	assert_string_equal(r.out.data, out);
	run_free(&r);
	assert_false(sbxt_exists(a.id));
	assert_false(sbxt_exists(b.id));
	/* a refused name among good ones: the others still go, the exit is not 0 */
	struct mafsbx_acquire_result c;
	sbxt_acquire_ok(scope, "b", "k1", NULL, &c);
	RUN(&r, "dispose", "box", c.name, a.name);
	if (r.code == 0)
		fail_msg("a refused name gave exit 0; stderr '%s'", r.err.data);
	snprintf(out, sizeof(out), "%s: disposed 1\n%s: disposed 0\n", c.name, a.name);
	assert_string_equal(r.out.data, out);
	assert_non_null(strstr(r.err.data, "mafsbx: dispose: box: "));
	run_free(&r);
	assert_false(sbxt_exists(c.id));
}

/* ---- item: image_id and instance_id ---------------------------------------- */

static void test_image_id(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], name[MAFSBX_NAME_LEN + 1];
	sbxt_scope(scope);
	char *id = image_id();
	/* the pinned ID wins over the reference (which does not even exist) */
	struct run r;
	RUN(&r, "acquire", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "a", "--kind", "k", "--image",
	    "mafsbxtest/absent:never", "--image-id", id);
	printed_name(&r, name);
	run_free(&r);
	json_t *j = sbxt_inspect(name);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "Config"), "Image")), id);
	assert_string_equal(json_string_value(json_object_get(j, "Image")), id);
	json_decref(j);
	assert_int_equal(sbxt_dispose_scope(scope), 1);

	/* the same through the request JSON (no image at all) */
	struct mafsbx_acquire_result a;
	char extra[200];
	snprintf(extra, sizeof(extra), "\"image_id\":\"%s\"", id);
	sbxt_acquire_ok(scope, "a", "k2", extra, &a);
	j = sbxt_inspect(a.id);
	assert_string_equal(json_string_value(json_object_get(j, "Image")), id);
	json_decref(j);
	assert_int_equal(sbxt_dispose_scope(scope), 1);

	/* an ID absent locally is pulled, as any absent image; that fails: "could not pull image" */
	RUN(&r, "acquire", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "a", "--kind", "k", "--image",
	    harness_image(), "--image-id", "sha256:0000000000000000000000000000000000000000000000000000000000000000");
	expect_code(&r, 1);
	assert_non_null(strstr(r.err.data, "could not pull image sha256:0000"));
	run_free(&r);
	struct mafsbx_error e;
	snprintf(extra, sizeof(extra), "\"image_id\":\"sha256:%064d\"", 0);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "k", extra, &e), -ENOENT);
	assert_int_equal(e.kind, MAFSBX_EK_NO_IMAGE);
	assert_int_equal(sbxt_dispose_scope(scope), 0);
	free(id);
}

/* .ctl/dispose {"scope","thread","agent",..,"instance_id"} through the library. */
static unsigned dispose_instance_json(const char *scope, const char *agent, const char *id)
{
	json_t *req = sbxt_json("{\"scope\":\"%s\",\"thread\":\"" SBXT_THREAD "\",\"agent\":\"%s\",\"instance_id\":\"%s\"}",
				scope, agent, id);
	struct mafsbx_dispose_spec *s = NULL;
	struct mafsbx_error e;
	if (mafsbx_dispose_spec_parse(req, &s, &e) < 0)
		fail_msg("dispose spec: %s", e.message);
	struct mafsbx_dispose_result dr;
	harness_check(mafsbx_sandbox_dispose(sbxt_g.b, s, &dr, &e), &e, "dispose");
	if (dr.n_failures)
		fail_msg("dispose by instance: %s", dr.failures[0].detail);
	unsigned n = dr.disposed;
	mafsbx_dispose_result_free(&dr);
	mafsbx_dispose_spec_free(s);
	json_decref(req);
	return n;
}

static void test_dispose_instance(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, again;
	sbxt_acquire_ok(scope, "a", "k", NULL, &a);
	struct run r;
	/* another key's: nothing removed, no failure */
	RUN(&r, "dispose", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "other", "--id", a.id);
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "disposed 0\n");
	run_free(&r);
	RUN(&r, "dispose", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "a", "--kind", "other", "--id", a.id);
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "disposed 0\n");
	run_free(&r);
	assert_true(sbxt_exists(a.id));
	/* an ID the engine resolves to another (a prefix): "unlisted", nothing removed */
	char shortid[13];
	snprintf(shortid, sizeof(shortid), "%.12s", a.id);
	RUN(&r, "dispose", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "a", "--id", shortid);
	expect_code(&r, 1);
	assert_non_null(strstr(r.err.data, "unlisted"));
	run_free(&r);
	assert_true(sbxt_exists(a.id));
	/* the instance itself */
	RUN(&r, "dispose", "--scope", scope, "--thread", SBXT_THREAD, "--agent", "a", "--kind", "k", "--id", a.id);
	expect_code(&r, 0);
	assert_string_equal(r.out.data, "disposed 1\n");
	run_free(&r);
	assert_false(sbxt_exists(a.id));

	/* an older instance's ID never removes the sandbox re-created under the name */
	sbxt_acquire_ok(scope, "a", "k", NULL, &a);
	assert_int_equal(dispose_instance_json(scope, "a", a.id), 1);
	sbxt_acquire_ok(scope, "a", "k", NULL, &again);
	assert_string_equal(again.name, a.name);
	assert_int_equal(dispose_instance_json(scope, "a", a.id), 0);
	assert_true(sbxt_exists(again.id));
	assert_int_equal(dispose_instance_json(scope, "a", again.id), 1);
	assert_false(sbxt_exists(again.id));
}

int main(void)
{
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_acquire_same_as_ctl),
		cmocka_unit_test(test_exec_streams),
		cmocka_unit_test(test_exec_codes),
		cmocka_unit_test(test_exec_interactive),
		cmocka_unit_test(test_exec_detach),
		cmocka_unit_test(test_ls_formats),
		cmocka_unit_test(test_dispose),
		cmocka_unit_test(test_dispose_names),
		cmocka_unit_test(test_image_id),
		cmocka_unit_test(test_dispose_instance),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	sbxt_close();
	return r;
}
