/*
 * test_mafsbx_cli.c: the `mafsbx` program's command line, run as a real
 * process (path given by meson as argv[1]): --help/--version/help, usage
 * errors (exit 125 as docker, "mafsbx: ..." on stderr), mkimage's refusals of bad image
 * names, of a missing or dynamically linked busybox (exit 1), of refused
 * endpoints and of an engine that does not answer (exit 3). The child runs
 * with a clean environment (HOME with no Docker config, DOCKER_HOST naming a
 * socket nobody listens on), so no engine on this machine is ever contacted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "rootfs.h"

static const char *mafsbx_bin;
static char home[PATH_MAX];

struct run {
	int status;              /* exit code, or 128+signal */
	struct mafsbx_buf out, err;
};

static void run_free(struct run *r)
{
	mafsbx_buf_free(&r->out);
	mafsbx_buf_free(&r->err);
}

/* Run mafsbx with args (NULL-terminated), collecting both streams; 30 s bound. */
static void run(struct run *r, const char *first, ...)
{
	const char *argv[32];
	int argc = 0;
	argv[argc++] = mafsbx_bin;
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *)) {
		assert_true(argc < 31);
		argv[argc++] = a;
	}
	va_end(ap);
	argv[argc] = NULL;

	char home_env[PATH_MAX + 8], host_env[PATH_MAX + 32];
	snprintf(home_env, sizeof(home_env), "HOME=%s", home);
	/* Whatever the command line, a bug can never reach a real engine. */
	snprintf(host_env, sizeof(host_env), "DOCKER_HOST=unix://%s/nobody.sock", home);
	char *envp[] = { home_env, host_env, (char *)"PATH=/usr/bin:/bin", NULL };

	int po[2], pe[2];
	assert_int_equal(pipe2(po, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pe, O_CLOEXEC), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	pid_t pid;
	int sr = posix_spawn(&pid, mafsbx_bin, &fa, NULL, (char *const *)argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	if (sr != 0)
		fail_msg("cannot run %s: %s", mafsbx_bin, strerror(sr));

	memset(r, 0, sizeof(*r));
	struct pollfd pfd[2] = { { .fd = po[0], .events = POLLIN }, { .fd = pe[0], .events = POLLIN } };
	int open_fds = 2;
	long long deadline = mafsbx_now_ms() + 30000;
	while (open_fds > 0) {
		long long left = deadline - mafsbx_now_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			fail_msg("mafsbx did not finish within 30 s");
		}
		int n = poll(pfd, 2, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n >= 0);
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			char buf[4096];
			ssize_t got = read(pfd[i].fd, buf, sizeof(buf));
			if (got <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_fds--;
				continue;
			}
			assert_int_equal(mafsbx_buf_append(i ? &r->err : &r->out, buf, (size_t)got), 0);
		}
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	/* Empty streams still compare as strings. */
	assert_int_equal(mafsbx_buf_append(&r->out, "", 0), 0);
	assert_int_equal(mafsbx_buf_append(&r->err, "", 0), 0);
}

static void expect(struct run *r, int status, const char *out_needle, const char *err_needle)
{
	if (r->status != status)
		fail_msg("exit %d, want %d; stdout '%s' stderr '%s'", r->status, status, r->out.data, r->err.data);
	if (out_needle && !strstr(r->out.data, out_needle))
		fail_msg("stdout '%s' lacks '%s'", r->out.data, out_needle);
	if (err_needle && !strstr(r->err.data, err_needle))
		fail_msg("stderr '%s' lacks '%s'", r->err.data, err_needle);
	/* Errors are one "mafsbx: " line (plus the "Try" hint), never noise. */
	if (r->err.len) {
		assert_int_equal(strncmp(r->err.data, "mafsbx: ", 8), 0);
		size_t lines = 0;
		for (size_t i = 0; i < r->err.len; i++)
			lines += r->err.data[i] == '\n';
		assert_true(lines <= 2);
	}
	run_free(r);
}

static void test_help_and_version(void **state)
{
	(void)state;
	struct run r;
	run(&r, "--version", NULL);
	assert_string_equal(r.out.data, "mafsbx " MAFSBX_VERSION "\n");
	expect(&r, 0, NULL, NULL);
	run(&r, "-V", NULL);
	expect(&r, 0, MAFSBX_VERSION, NULL);
	const char *helps[] = { "--help", "-h", "help" };
	for (size_t i = 0; i < 3; i++) {
		run(&r, helps[i], NULL);
		assert_int_equal(r.err.len, 0);
		expect(&r, 0, "Usage: mafsbx COMMAND", NULL);
	}
	run(&r, "--help", NULL);
	expect(&r, 0, "mkimage", NULL);
	run(&r, "help", "mkimage", NULL);
	expect(&r, 0, "Usage: mafsbx mkimage", NULL);
	run(&r, "mkimage", "--help", NULL);
	expect(&r, 0, "--tag NAME", NULL);
}

static void test_usage_errors(void **state)
{
	(void)state;
	struct run r;
	run(&r, NULL);
	expect(&r, 125, NULL, "mafsbx: no command given");
	run(&r, "frobnicate", NULL);
	expect(&r, 125, NULL, "mafsbx: unknown command 'frobnicate'");
	run(&r, "--frob", NULL);
	expect(&r, 125, NULL, "unknown option '--frob'");
	run(&r, "-x", NULL);
	expect(&r, 125, NULL, "unknown option '-x'");
	run(&r, "help", "frobnicate", NULL);
	expect(&r, 125, NULL, "unknown command 'frobnicate'");
	run(&r, "mkimage", "--tag", NULL);
	expect(&r, 125, NULL, "option '--tag' needs an argument");
	run(&r, "mkimage", "-H", NULL);
	expect(&r, 125, NULL, "option '-H' needs an argument");
	run(&r, "mkimage", "--bogus", NULL);
	expect(&r, 125, NULL, "unknown option '--bogus'");
	run(&r, "mkimage", "extra", NULL);
	expect(&r, 125, NULL, "unexpected argument 'extra'");
	run(&r, "mkimage", "--tag", "Upper/case", NULL);
	expect(&r, 125, NULL, "invalid image name 'Upper/case'");
	run(&r, "mkimage", "--tag", "x@sha256:abcd", NULL);
	expect(&r, 125, NULL, "digest");
	run(&r, "mkimage", "--tag", "x:", NULL);
	expect(&r, 125, NULL, "invalid tag");
	run(&r, "mkimage", "--tag", "x:bad/tag", NULL);
	expect(&r, 125, NULL, "invalid registry port");
	run(&r, "mkimage", "--tag", "", NULL);
	expect(&r, 125, NULL, "empty image name");
	run(&r, "mkimage", "--tag", "/x", NULL);
	expect(&r, 125, NULL, "invalid image name");
	run(&r, "mkimage", "--tag", "a/b:c/d", NULL);
	expect(&r, 125, NULL, "invalid image name");
}

static void test_mkimage_refusals(void **state)
{
	(void)state;
	struct run r;
	char absent[PATH_MAX + 16];
	snprintf(absent, sizeof(absent), "%s/absent-busybox", home);

	/* Endpoint refusals come first, whatever the busybox. */
	run(&r, "mkimage", "-H", "ftp://host", "--busybox", absent, NULL);
	expect(&r, 3, NULL, "mafsbx: unsupported scheme 'ftp://' in engine endpoint 'ftp://host'");
	run(&r, "mkimage", "--context", "nosuch", "--busybox", absent, NULL);
	expect(&r, 3, NULL, "\"nosuch\"");

	run(&r, "mkimage", "--busybox", absent, NULL);
	expect(&r, 1, NULL, "not found: install Debian's busybox-static");
	run(&r, "mkimage", "--busybox", mafsbx_bin, NULL);
	expect(&r, 1, NULL, "dynamically linked");

	if (access(MAFSBX_ROOTFS_BUSYBOX, X_OK) != 0)
		skip(); /* contrib/setup.sh installs busybox-static; CI fails on a skip */
	/* A built rootfs and an endpoint nobody answers: exit 3, nothing imported. */
	run(&r, "mkimage", "--tag", "mafsbxtest-cli/never:x", NULL);
	assert_int_equal(r.out.len, 0);
	expect(&r, 3, NULL, "nobody.sock");
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

#define FP_HEAD "{\"format\":\"mafsbx-fingerprint/1\",\"container\":{\"id\":\"\",\"name\":\"x\",\"started_at\":\"\"}," \
		"\"mounts\":[{\"path\":\"/\",\"type\":\"overlay\",\"ro\":false}],\"processes\":[],\"entries\":["
#define FP_ENTRY(path, size) "{\"path\":\"" path "\",\"type\":\"file\",\"mode\":\"0644\",\"uid\":0,\"gid\":0,\"size\":" size \
		",\"mtime\":\"1.000000000\",\"ctime\":\"1.000000000\",\"sha256\":" \
		"\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}"

/* `fingerprint --diff A.json B.json` needs no engine: exit 0, 1, and the refusals. */
static void test_fingerprint_files(void **state)
{
	(void)state;
	char a[PATH_MAX + 16], b[PATH_MAX + 16], bad[PATH_MAX + 16];
	snprintf(a, sizeof(a), "%s/a.json", home);
	snprintf(b, sizeof(b), "%s/b.json", home);
	snprintf(bad, sizeof(bad), "%s/bad.json", home);
	write_file(a, FP_HEAD FP_ENTRY("/etc/passwd", "0") "]}");
	write_file(b, FP_HEAD FP_ENTRY("/etc/passwd", "0") "," FP_ENTRY("/tmp/new", "0") "]}");
	write_file(bad, "{\"format\":\"other\"}");
	struct run r;
	run(&r, "fingerprint", "--diff", a, a, NULL);
	expect(&r, 0, NULL, NULL);
	assert_int_equal(r.out.len, 0);
	run(&r, "fingerprint", "--diff", a, b, NULL);
	expect(&r, 1, "+ /tmp/new (file 0644 0:0, 0 bytes)\n", NULL);
	run(&r, "fingerprint", "--diff", b, a, NULL);
	expect(&r, 1, "- /tmp/new (file 0644 0:0, 0 bytes)\n", NULL);
	run(&r, "fingerprint", "--diff", a, bad, NULL);
	expect(&r, 4, NULL, "not a mafsbx-fingerprint/1 snapshot");
	run(&r, "fingerprint", "--diff", "/nonexistent/x.json", a, NULL);
	expect(&r, 4, NULL, "/nonexistent/x.json");
	/* usage */
	run(&r, "fingerprint", NULL);
	expect(&r, 125, NULL, "no sandbox named");
	run(&r, "fingerprint", a, NULL);
	expect(&r, 125, NULL, "looks like a file");
	run(&r, "fingerprint", "--json", "--diff", a, b, NULL);
	expect(&r, 125, NULL, "--json does not go with --diff");
	run(&r, "fingerprint", "--max-entries", "0", "box", NULL);
	expect(&r, 125, NULL, "--max-entries");
	run(&r, "fingerprint", "--max-ms", "-5", "box", NULL);
	expect(&r, 125, NULL, "--max-ms");
	run(&r, "fingerprint", "--strict", "box", NULL);
	expect(&r, 125, NULL, "--strict goes with --diff");
	run(&r, "fingerprint", "--diff", a, b, "-o", "c.json", NULL);
	expect(&r, 125, NULL, "-o saves a snapshot taken now");
	/* a sandbox name with no engine answering: 3, never 0 or 1 */
	run(&r, "fingerprint", "box", NULL);
	expect(&r, 3, NULL, NULL);
	run(&r, "fingerprint", "--help", NULL);
	expect(&r, 0, "Exit status: 0 nothing changed", NULL);
	assert_int_equal(unlink(a), 0);
	assert_int_equal(unlink(b), 0);
	assert_int_equal(unlink(bad), 0);
}

#define SBX "maf-sandbox-docker-6f8a8ed7a21c"
#define KEY "--scope", "s", "--thread", "t", "--agent", "a", "--kind", "k"

/* The shell verbs (mafsbx(1)): the ctl rules and messages, before any engine call. */
static void test_verbs_acquire(void **state)
{
	(void)state;
	struct run r;
	run(&r, "--help", NULL);
	expect(&r, 0, "  acquire ", NULL);
	run(&r, "--help", NULL);
	expect(&r, 0, "  dispose ", NULL);
	run(&r, "acquire", "--help", NULL);
	expect(&r, 0, "--image-id ID", NULL);
	run(&r, "help", "acquire", NULL);
	expect(&r, 0, "Exit status: 0 done", NULL);
	run(&r, "acquire", NULL);
	expect(&r, 125, NULL, "field 'scope': required");
	run(&r, "acquire", "--scope", "s", "--thread", "t", "--agent", "a", NULL);
	expect(&r, 125, NULL, "field 'kind': required");
	run(&r, "acquire", KEY, NULL);
	expect(&r, 125, NULL, "field 'image': required");
	run(&r, "acquire", KEY, "--image", "i", "--output", "/etc/passwd", NULL);
	expect(&r, 125, NULL, "field 'outputs[0]': must be a relative path");
	run(&r, "acquire", KEY, "--image", "i", "--egress-allow", "a,b", NULL);
	expect(&r, 125, NULL, "field 'egress_allow[0]'");
	run(&r, "acquire", KEY, "--image-id", "", NULL);
	expect(&r, 125, NULL, "field 'image_id': must not be empty");
	run(&r, "acquire", KEY, "--image", "i", "--env", "NOEQUALS", NULL);
	expect(&r, 125, NULL, "--env: want KEY=VALUE");
	run(&r, "acquire", KEY, "--image", "i", "--env", "1X=v", NULL);
	expect(&r, 125, NULL, "field 'env': invalid variable name");
	run(&r, "acquire", KEY, "--image", "i", "--cap", "files_list", NULL);
	expect(&r, 125, NULL, "field 'capabilities[0]'");
	run(&r, "acquire", KEY, "--image", "i", "--isolation-scope", "call", NULL);
	expect(&r, 125, NULL, "field 'call': isolation_scope 'call' requires");
	run(&r, "acquire", KEY, "--image", "i", "--work-dir", "rel", NULL);
	expect(&r, 125, NULL, "field 'work_dir': must be an absolute path");
	run(&r, "acquire", "--bogus", NULL);
	expect(&r, 125, NULL, "unknown option '--bogus'");
	run(&r, "acquire", KEY, "--image", NULL);
	expect(&r, 125, NULL, "needs an argument");
	run(&r, "acquire", KEY, "--image", "i", "extra", NULL);
	expect(&r, 125, NULL, "unexpected argument 'extra'");
	run(&r, "acquire", KEY, "--image", "i", "--pull-timeout", "0", NULL);
	expect(&r, 125, NULL, "--pull-timeout: want whole seconds from 1 to 604800, not '0'");
	run(&r, "acquire", KEY, "--image", "i", "--pull-timeout", "10m", NULL);
	expect(&r, 125, NULL, "--pull-timeout: want whole seconds");
	run(&r, "acquire", "--help", NULL);
	expect(&r, 0, "--pull-timeout SECS", NULL);
	/* a good request with no engine answering: 3, nothing printed */
	run(&r, "acquire", KEY, "--image", "i", "--image-id", "sha256:abc", NULL);
	expect(&r, 3, NULL, NULL);
}

/* Write `text` to HOME/name; its path in `path`. */
static void write_home_file(const char *name, const char *text, char *path, size_t n)
{
	snprintf(path, n, "%s/%s", home, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* --env-file: a bad line is a usage error naming the file and line; a good file goes on to the engine. */
static void test_verbs_exec_env_file(void **state)
{
	(void)state;
	struct run r;
	char bad[PATH_MAX], good[PATH_MAX], want[PATH_MAX + 64];
	write_home_file("bad.env", "# comment\nA=1\nMY VAR=2\n", bad, sizeof(bad));
	write_home_file("good.env", "# comment\n\nA=1\nFROM_HERE\n", good, sizeof(good));
	run(&r, "exec", SBX, "--env-file", bad, "--", "true", NULL);
	snprintf(want, sizeof(want), "--env-file %s:3: 'MY VAR': not a variable name", bad);
	expect(&r, 125, NULL, want);
	run(&r, "exec", "--env-file", good, "-e", "B=2", "--env-file", bad, SBX, "true", NULL);
	expect(&r, 125, NULL, want);
	run(&r, "exec", SBX, "--env-file", "/nonexistent/env", "--", "true", NULL);
	expect(&r, 125, NULL, "--env-file /nonexistent/env: No such file or directory");
	run(&r, "exec", SBX, "--env-file", NULL);
	expect(&r, 125, NULL, "option '--env-file' needs an argument");
	run(&r, "exec", SBX, "--env-file", good, "--", "true", NULL);
	expect(&r, 125, NULL, "cannot be reached");
	run(&r, "exec", "--help", NULL);
	expect(&r, 0, "--env-file FILE", NULL);
	assert_int_equal(unlink(bad), 0);
	assert_int_equal(unlink(good), 0);
}

static void test_verbs_exec(void **state)
{
	(void)state;
	struct run r;
	run(&r, "exec", "--help", NULL);
	expect(&r, 0, "124 timed out", NULL);
	/* every failure of the request itself is 125, never a status a command could give */
	run(&r, "exec", NULL);
	expect(&r, 125, NULL, "no sandbox NAME given");
	run(&r, "exec", SBX, NULL);
	expect(&r, 125, NULL, "no command given");
	run(&r, "exec", SBX, "--", NULL);
	expect(&r, 125, NULL, "no command given");
	run(&r, "exec", "--", SBX, "true", NULL);
	expect(&r, 125, NULL, "no sandbox NAME given");
	run(&r, "exec", "box", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'sandbox': not a sandbox name");
	run(&r, "exec", SBX, "--timeout", "0", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'timeout': must be positive");
	run(&r, "exec", SBX, "--timeout", "86401", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'timeout': 86401 s is over the ceiling of 86400 s");
	run(&r, "exec", SBX, "--on-timeout", "later", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'on_timeout': want \"kill\" or \"dispose\"");
	run(&r, "exec", SBX, "--timeout", "5x", "--", "true", NULL);
	expect(&r, 125, NULL, "--timeout: want a number of seconds");
	run(&r, "exec", SBX, "--cwd", "..", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'cwd': climbs above");
	/* a name alone is docker's "from here" (unset here: not passed), so the request goes on to the engine */
	run(&r, "exec", SBX, "--env", "A", "--", "true", NULL);
	expect(&r, 125, NULL, "cannot be reached");
	run(&r, "exec", SBX, "--env", "=x", "--", "true", NULL);
	expect(&r, 125, NULL, "--env: '': not a variable name");
	run(&r, "exec", "--bogus", SBX, "--", "true", NULL);
	expect(&r, 125, NULL, "unknown option '--bogus'");
	run(&r, "exec", SBX, "--", "", NULL);
	expect(&r, 125, NULL, "field 'argv[0]': must not be empty");
	/* options after NAME, ARGV without "--"; no engine answering: 125 */
	run(&r, "exec", SBX, "--cwd", "sub", "ls", "-l", NULL);
	expect(&r, 125, NULL, NULL);
	/* docker exec's flags: the same rules through -w, -e, -u */
	run(&r, "exec", SBX, "-w", "..", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'cwd': climbs above");
	run(&r, "exec", SBX, "-e", "1A", "--", "true", NULL);
	expect(&r, 125, NULL, "-e: '1A': not a variable name");
	run(&r, "exec", SBX, "-u", "a b", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'user': want NAME, UID, NAME:GROUP or UID:GID");
	run(&r, "exec", SBX, "-u", "1:2:3", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'user'");
	run(&r, "exec", SBX, "--user", "", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'user': must not be empty");
	/* -t: no terminal, refused before anything runs; -it as well */
	run(&r, "exec", "-t", SBX, "--", "true", NULL);
	expect(&r, 125, NULL, "-t: no terminal is allocated");
	run(&r, "exec", "-it", SBX, "--", "true", NULL);
	expect(&r, 125, NULL, "-t: no terminal is allocated");
	/* -i, -w, -e, -u well formed: on to the engine (none here: 125) */
	run(&r, "exec", "-i", "-w", "/tmp", "-e", "A=1", "-u", "1000:1000", SBX, "--", "true", NULL);
	expect(&r, 125, NULL, NULL);
	run(&r, "exec", "--help", NULL);
	expect(&r, 0, "-u, --user USER", NULL);
	/* -d: no stdin to give it (-di refused), checked before the engine; well formed: 125 here */
	run(&r, "exec", "-di", SBX, "--", "true", NULL);
	expect(&r, 125, NULL, "-d and -i: a command started in the background has no standard input");
	run(&r, "exec", "--detach", "--interactive", SBX, "--", "true", NULL);
	expect(&r, 125, NULL, "-d and -i");
	run(&r, "exec", "-d", SBX, "--timeout", "0", "--", "true", NULL);
	expect(&r, 125, NULL, "field 'timeout': must be positive");
	run(&r, "exec", "-d", SBX, "--", "true", NULL);
	expect(&r, 125, NULL, NULL);
	run(&r, "exec", "--help", NULL);
	expect(&r, 0, "-d, --detach", NULL);
}

/* ls: -q, --format and --json, one at a time */
static void test_verbs_ls(void **state)
{
	(void)state;
	struct run r;
	run(&r, "ls", "--help", NULL);
	expect(&r, 0, "--format FORMAT", NULL);
	run(&r, "ls", "--format", "yaml", NULL);
	expect(&r, 125, NULL, "--format: want table or json, not 'yaml'");
	run(&r, "ls", "--format", "{{.Names}}", NULL);
	expect(&r, 125, NULL, "--format: want table or json");
	run(&r, "ls", "-q", "--json", NULL);
	expect(&r, 125, NULL, "give one of -q, --format and --json");
	run(&r, "ls", "--format", "json", "--json", NULL);
	expect(&r, 125, NULL, "give one of -q, --format and --json");
	run(&r, "ls", "-q", NULL);
	expect(&r, 3, NULL, NULL);
}

static void test_verbs_dispose(void **state)
{
	(void)state;
	struct run r;
	run(&r, "dispose", "--help", NULL);
	expect(&r, 0, "--id ID", NULL);
	run(&r, "dispose", NULL);
	expect(&r, 125, NULL, "give a sandbox NAME, or --scope and --thread");
	run(&r, "dispose", "box", NULL);
	expect(&r, 125, NULL, "field 'name': not a sandbox name");
	run(&r, "dispose", SBX, "--scope", "s", NULL);
	expect(&r, 125, NULL, "give a NAME, or --scope and --thread, not both");
	run(&r, "dispose", SBX, SBX "x", "--scope", "s", NULL);
	expect(&r, 125, NULL, "not both");
	/* several names (docker rm): each checked before the engine; all refused: 125 */
	run(&r, "dispose", "box", "crate", NULL);
	if (!strstr(r.err.data, "dispose: crate: field 'name'"))
		fail_msg("stderr '%s' does not name 'crate'", r.err.data);
	expect(&r, 125, NULL, "dispose: box: field 'name': not a sandbox name");
	/* one refused, one good: the good one still goes to the engine (none here: 3) */
	run(&r, "dispose", "box", SBX, NULL);
	expect(&r, 3, NULL, "dispose: box: field 'name'");
	run(&r, "dispose", "--help", NULL);
	expect(&r, 0, "dispose NAME...", NULL);
	run(&r, "dispose", "--scope", "s", NULL);
	expect(&r, 125, NULL, "field 'thread': required");
	run(&r, "dispose", "--scope", "s", "--thread", "t", "--kind", "k", NULL);
	expect(&r, 125, NULL, "field 'kind': requires 'agent'");
	run(&r, "dispose", "--scope", "s", "--thread", "t", "--id", "abc", NULL);
	expect(&r, 125, NULL, "field 'instance_id': requires 'agent'");
	run(&r, "dispose", "--scope", "s", "--thread", "t", "--agent", "a", "--id", "", NULL);
	expect(&r, 125, NULL, "field 'instance_id': must not be empty");
	run(&r, "dispose", "--frob", NULL);
	expect(&r, 125, NULL, "unknown option '--frob'");
	run(&r, "dispose", SBX, NULL);
	expect(&r, 3, NULL, NULL);
	run(&r, "dispose", "--scope", "s", "--thread", "t", NULL);
	expect(&r, 3, NULL, NULL);
}

static int setup(void **state)
{
	(void)state;
	const char *t = getenv("TMPDIR");
	snprintf(home, sizeof(home), "%s/mafsbx-test-cli-XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(home) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(home);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-TO-mafsbx\n", argv[0]);
		return 2;
	}
	mafsbx_bin = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help_and_version),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_mkimage_refusals),
		cmocka_unit_test(test_fingerprint_files),
		cmocka_unit_test(test_verbs_acquire),
		cmocka_unit_test(test_verbs_exec),
		cmocka_unit_test(test_verbs_exec_env_file),
		cmocka_unit_test(test_verbs_ls),
		cmocka_unit_test(test_verbs_dispose),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
