/*
 * it_fingerprint.c: the nothing-left-behind measurement (fingerprint.h) and
 * reclaim (reclaim.h) against the real dockerd:
 *  - two snapshots of an idle sandbox are equal;
 *  - a file in /tmp, a background process, a file in /dev/shm, a chmod and a
 *    same-size same-mtime content swap each show up, and only that;
 *  - one call that undoes everything it did leaves a diff of zero;
 *  - a guest's link loop, fifo and device nodes are recorded, never followed
 *    or opened (an opened fifo would block: the test has an alarm); a huge
 *    directory is refused at the entry bound before its entries are
 *    measured; a file that grows while hashed is hashed to its fstat size
 *    and marked changing; the byte and time bounds refuse;
 *  - refusals: privileged, shared PID namespace, writable bind mount (a
 *    read-only one is measured);
 *  - `mafsbx fingerprint` and `--diff` end to end (exit 0 / 1);
 *  - reclaim removes a tree at the guest's authority (uid 1000: a root-owned
 *    file stops it), unlinks links without following them, succeeds on a
 *    missing directory, and refuses the work dir, escapes and one-component
 *    targets.
 *
 * The "one million entries" directory is 20,000 entries with --max-entries
 * 10,000: creating 1M files costs ~100 s on this machine; the refusal
 * happens while listing, so its cost does not depend on the directory size.
 */
#include <signal.h>
#include <sys/wait.h>

#include "fingerprint.h"
#include "reclaim.h"
#include "sbx_testlib.h"

static char g_scope[HARNESS_NAME_MAX];
static struct mafsbx_acquire_result g_sbx;

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "it_fingerprint: a fingerprint blocked (alarm)\n";
	if (write(2, m, sizeof(m) - 1) < 0) {
	}
	_exit(1);
}

static struct mafsbx_fp *take_lim(const char *name, const struct mafsbx_fp_limits *lim)
{
	struct mafsbx_fp *fp = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	alarm(60);
	int r = mafsbx_fingerprint_take(harness_engine(), name, lim, &fp, &e);
	alarm(0);
	if (r < 0)
		fail_msg("fingerprint of %s: %s (%s)", name, e.message, mafsbx_errno_name(e.err));
	return fp;
}

static struct mafsbx_fp *take(const char *name)
{
	return take_lim(name, NULL);
}

static int take_fails(const char *name, const struct mafsbx_fp_limits *lim, struct mafsbx_error *e)
{
	struct mafsbx_fp *fp = NULL;
	mafsbx_error_clear(e);
	alarm(60);
	int r = mafsbx_fingerprint_take(harness_engine(), name, lim, &fp, e);
	alarm(0);
	if (r == 0) {
		mafsbx_fp_free(fp);
		fail_msg("fingerprint of %s succeeded, a refusal was expected", name);
	}
	return r;
}

/* The diff text (malloc'd) and its line count. */
static char *diff_text(const struct mafsbx_fp *a, const struct mafsbx_fp *b, unsigned flags, size_t *n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	*n = mafsbx_fp_diff(a, b, flags, f);
	fclose(f);
	return text;
}

static void sh_ok(const char *script)
{
	int code;
	assert_int_equal(harness_sh(g_sbx.name, script, &code), 0);
	if (code != 0)
		fail_msg("`%s` exited %d", script, code);
}

/* Snapshot, run `script`, snapshot: the diff must be exactly `lines` lines, each starting as given. */
static void expect_only(const char *script, size_t n_expected, const char *const *prefixes)
{
	struct mafsbx_fp *a = take(g_sbx.name);
	sh_ok(script);
	struct mafsbx_fp *b = take(g_sbx.name);
	size_t n;
	char *text = diff_text(a, b, 0, &n);
	print_message("after `%s`:\n%s", script, text);
	if (n != n_expected)
		fail_msg("`%s`: %zu diff lines, expected %zu:\n%s", script, n, n_expected, text);
	char *save = NULL, *copy = strdup(text);
	size_t i = 0;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++)
		if (i >= n_expected || strncmp(line, prefixes[i], strlen(prefixes[i])))
			fail_msg("`%s`: line %zu is '%s', expected it to start with '%s'", script, i, line,
				 i < n_expected ? prefixes[i] : "(nothing)");
	free(copy);
	free(text);
	mafsbx_fp_free(a);
	mafsbx_fp_free(b);
}

/* Kill (in the guest) every process whose command line holds `word`, found from a snapshot. */
static void kill_matching(const char *word)
{
	struct mafsbx_fp *fp = take(g_sbx.name);
	char script[1024] = "kill";
	size_t n = 0;
	for (size_t i = 0; i < fp->n_procs; i++)
		for (size_t k = 0; k < fp->procs[i].argc; k++)
			if (strstr(fp->procs[i].argv[k], word) && fp->procs[i].pid > 1) {
				snprintf(script + strlen(script), sizeof(script) - strlen(script), " %lld", fp->procs[i].pid);
				n++;
				break;
			}
	mafsbx_fp_free(fp);
	if (!n)
		fail_msg("no process of the sandbox mentions %s", word);
	strncat(script, "; sleep 0.2", sizeof(script) - strlen(script) - 1);
	sh_ok(script);
}

static void sh_in(const char *name, const char *script)
{
	int code;
	assert_int_equal(harness_sh(name, script, &code), 0);
	if (code != 0)
		fail_msg("`%s` in %s exited %d", script, name, code);
}

/* As the container's own user (the guest), not root. */
static void guest_sh(const char *name, const char *script)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 30000 };
	struct mafsbx_exec_result res;
	struct mafsbx_error e;
	harness_check(mafsbx_exec_run(harness_engine(), name, &rq, &res, &e), &e, "guest exec");
	if (res.exit_code != 0)
		fail_msg("`%s` as the guest exited %d: %s", script, res.exit_code, res.err ? (char *)res.err : "");
	mafsbx_exec_result_free(&res);
}

static const struct mafsbx_fp_entry *find_entry(const struct mafsbx_fp *fp, const char *path)
{
	for (size_t i = 0; i < fp->n_entries; i++)
		if (!strcmp(fp->entries[i].path, path))
			return &fp->entries[i];
	return NULL;
}

/* ---- measurement -------------------------------------------------------- */

static void test_idle_equal(void **state)
{
	(void)state;
	struct mafsbx_fp *a = take(g_sbx.name), *b = take(g_sbx.name);
	size_t n;
	char *text = diff_text(a, b, MAFSBX_FP_STRICT, &n);
	if (n)
		fail_msg("an idle sandbox changed between two snapshots:\n%s", text);
	free(text);
	/* what a snapshot holds */
	assert_true(a->n_entries > 100);
	assert_true(a->n_procs >= 1);
	assert_int_equal(a->procs[0].pid, 1);
	const struct mafsbx_fp_entry *pw = find_entry(a, "/etc/passwd");
	assert_non_null(pw);
	assert_int_equal(pw->type, MAFSBX_FP_FILE);
	assert_int_equal(strlen(pw->sha256), 64);
	bool shm = false, root = false, proc = false;
	for (size_t i = 0; i < a->n_mounts; i++) {
		shm |= !strcmp(a->mounts[i].path, "/dev/shm");
		root |= !strcmp(a->mounts[i].path, "/");
		proc |= !strncmp(a->mounts[i].path, "/proc", 5) || !strncmp(a->mounts[i].path, "/sys", 4);
	}
	assert_true(shm && root && !proc);
	assert_null(find_entry(a, "/proc/1"));
	assert_non_null(find_entry(a, "/dev/shm"));
	/* JSON round trip compares equal */
	json_t *j = mafsbx_fp_to_json(a);
	struct mafsbx_fp *c = NULL;
	struct mafsbx_error e;
	harness_check(mafsbx_fp_from_json(j, &c, &e), &e, "from_json");
	assert_int_equal(mafsbx_fp_diff(a, c, MAFSBX_FP_STRICT, NULL), 0);
	json_decref(j);
	mafsbx_fp_free(a);
	mafsbx_fp_free(b);
	mafsbx_fp_free(c);
}

static void test_tmp_file(void **state)
{
	(void)state;
	const char *const want[] = { "+ /tmp/fp-new (file 0644 0:0, 6 bytes)" };
	expect_only("printf 'hello\\n' > /tmp/fp-new", 1, want);
}

/* A guest's name never reaches the host's terminal raw: control bytes are escaped. */
static void test_name_escaped(void **state)
{
	(void)state;
	const char *const want[] = { "+ /tmp/evil\\x0a\\x1b[2J\\\\x (file 0644 0:0, 0 bytes)" };
	expect_only("touch \"$(printf '/tmp/evil\\n\\033[2J\\\\x')\"", 1, want);
	sh_ok("rm -f /tmp/evil*");
}

static void test_background_process(void **state)
{
	(void)state;
	const char *const want[] = { "+ process " };
	expect_only("sleep 1717 </dev/null >/dev/null 2>&1 &", 1, want);
	struct mafsbx_fp *a = take(g_sbx.name);
	bool found = false;
	for (size_t i = 0; i < a->n_procs; i++)
		found |= a->procs[i].argc == 2 && !strcmp(a->procs[i].argv[1], "1717") && a->procs[i].pid > 1;
	assert_true(found);
	mafsbx_fp_free(a);
	/* killed, it stays as a zombie of the sandbox's init (which never reaps): still there */
	a = take(g_sbx.name);
	kill_matching("1717");
	struct mafsbx_fp *b = take(g_sbx.name);
	size_t n;
	char *text = diff_text(a, b, 0, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(text, "~ process "));
	assert_non_null(strstr(text, ", zombie)"));
	free(text);
	mafsbx_fp_free(a);
	mafsbx_fp_free(b);
}

static void test_dev_shm(void **state)
{
	(void)state;
	const char *const want[] = { "+ /dev/shm/fp-seg (file 0600 0:0, 5 bytes)" };
	expect_only("umask 077; printf 'shm!\\n' > /dev/shm/fp-seg", 1, want);
}

static void test_chmod(void **state)
{
	(void)state;
	sh_ok("printf 'keep\\n' > /srv-fp-chmod && chmod 644 /srv-fp-chmod");
	const char *const want[] = { "~ /srv-fp-chmod: mode 0644 -> 0600, ctime " };
	expect_only("chmod 600 /srv-fp-chmod", 1, want);
}

static void test_same_size_same_mtime(void **state)
{
	(void)state;
	sh_ok("mkdir -p /srv-fp && printf 'aaaa\\n' > /srv-fp/data && touch -d '2020-01-02 03:04:05' /srv-fp/data");
	struct mafsbx_fp *a = take(g_sbx.name);
	sh_ok("printf 'bbbb\\n' > /srv-fp/data && touch -d '2020-01-02 03:04:05' /srv-fp/data");
	struct mafsbx_fp *b = take(g_sbx.name);
	const struct mafsbx_fp_entry *x = find_entry(a, "/srv-fp/data"), *y = find_entry(b, "/srv-fp/data");
	assert_non_null(x);
	assert_non_null(y);
	assert_int_equal(x->size, y->size);
	assert_int_equal(x->mtime_s, y->mtime_s);
	assert_int_equal(x->mtime_ns, y->mtime_ns);
	assert_string_not_equal(x->sha256, y->sha256);
	size_t n;
	char *text = diff_text(a, b, 0, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(text, "~ /srv-fp/data: ctime "));
	assert_non_null(strstr(text, "content sha256 "));
	assert_null(strstr(text, "size"));
	assert_null(strstr(text, "mtime"));
	free(text);
	mafsbx_fp_free(a);
	mafsbx_fp_free(b);
}

static void test_restore_is_zero(void **state)
{
	(void)state;
	expect_only("printf x > /tmp/fp-r && mkdir -p /tmp/fp-rd/a && printf y > /dev/shm/fp-r || exit 1; "
		    "sleep 1000 </dev/null >/dev/null 2>&1 & p=$!; chmod 700 /tmp; chmod 1777 /tmp; "
		    "rm -rf /tmp/fp-r /tmp/fp-rd /dev/shm/fp-r; kill $p; wait $p; exit 0",
		    0, NULL);
}

/* ---- what a guest plants ------------------------------------------------ */

static void test_hostile_entries(void **state)
{
	(void)state;
	sh_ok("mkdir -p /tmp/h && cd /tmp/h && ln -s loop-b loop-a && ln -s loop-a loop-b && ln -s /etc/shadow esc && "
	      "ln -s . self && mkfifo fifo && mknod null c 1 3 && mknod blk b 7 0 && "
	      "mkdir d && ln -s ../../../../.. d/up");
	struct mafsbx_fp *fp = take(g_sbx.name);
	const struct mafsbx_fp_entry *e;
	assert_non_null(e = find_entry(fp, "/tmp/h/loop-a"));
	assert_int_equal(e->type, MAFSBX_FP_LINK);
	assert_string_equal(e->target, "loop-b");
	assert_non_null(e = find_entry(fp, "/tmp/h/esc"));
	assert_string_equal(e->target, "/etc/shadow");
	assert_non_null(e = find_entry(fp, "/tmp/h/fifo"));
	assert_int_equal(e->type, MAFSBX_FP_FIFO);
	assert_string_equal(e->sha256, "");
	assert_non_null(e = find_entry(fp, "/tmp/h/null"));
	assert_int_equal(e->type, MAFSBX_FP_CHAR);
	assert_int_equal(e->rdev_major, 1);
	assert_int_equal(e->rdev_minor, 3);
	assert_non_null(e = find_entry(fp, "/tmp/h/blk"));
	assert_int_equal(e->type, MAFSBX_FP_BLOCK);
	assert_int_equal(e->rdev_major, 7);
	/* nothing was walked through a link */
	assert_null(find_entry(fp, "/tmp/h/self/fifo"));
	assert_null(find_entry(fp, "/tmp/h/d/up/etc"));
	mafsbx_fp_free(fp);
	sh_ok("rm -rf /tmp/h");
}

static void test_huge_directory_refused(void **state)
{
	(void)state;
	sh_ok("mkdir -p /tmp/huge && cd /tmp/huge && seq 1 20000 | xargs touch");
	struct mafsbx_fp_limits lim;
	mafsbx_fp_limits_default(&lim);
	lim.max_entries = 10000;
	struct mafsbx_error e;
	long long t0 = mafsbx_now_ms();
	assert_int_equal(take_fails(g_sbx.name, &lim, &e), -EFBIG);
	print_message("refused in %lld ms: %s\n", mafsbx_now_ms() - t0, e.message);
	assert_non_null(strstr(e.message, "/tmp/huge lists more than"));
	assert_non_null(strstr(e.message, "10000 entries (--max-entries)"));
	sh_ok("rm -rf /tmp/huge");
}

static void test_growing_file(void **state)
{
	(void)state;
	/* 32 MiB, then appended to for as long as the snapshot runs */
	sh_ok("dd if=/dev/zero of=/tmp/grow bs=1M count=32 2>/dev/null && "
	      "(while :; do echo 0123456789abcdef >> /tmp/grow; done) </dev/null >/dev/null 2>&1 &");
	bool changing = false;
	for (int i = 0; i < 5 && !changing; i++) {
		struct mafsbx_fp *fp = take(g_sbx.name);
		const struct mafsbx_fp_entry *e = find_entry(fp, "/tmp/grow");
		assert_non_null(e);
		assert_true(e->size >= 32u << 20);
		assert_int_equal(strlen(e->sha256), 64);
		changing = e->changing;
		mafsbx_fp_free(fp);
	}
	assert_true(changing);
	/* the byte bound refuses rather than reading on */
	struct mafsbx_fp_limits lim;
	mafsbx_fp_limits_default(&lim);
	lim.max_hash_bytes = 16u << 20;
	struct mafsbx_error e;
	assert_int_equal(take_fails(g_sbx.name, &lim, &e), -EFBIG);
	assert_non_null(strstr(e.message, "--max-hash-bytes"));
	kill_matching("0123456789abcdef");
	sh_ok("rm -f /tmp/grow");
	/* and the wall-time bound */
	mafsbx_fp_limits_default(&lim);
	lim.max_ms = 1;
	assert_int_equal(take_fails(g_sbx.name, &lim, &e), -ETIMEDOUT);
	assert_non_null(strstr(e.message, "--max-ms"));
}

/* ---- refusals ----------------------------------------------------------- */

static void test_refusals(void **state)
{
	(void)state;
	char c[HARNESS_NAME_MAX];
	struct mafsbx_error e;
	/* created only: this host's runc cannot start a privileged container, and the refusal
	 * comes from the engine's record before anything is pinned */
	json_t *cfg = sbxt_json("{\"HostConfig\":{\"NetworkMode\":\"none\",\"Privileged\":true}}");
	harness_container_cfg("fp-priv", cfg, false, c);
	json_decref(cfg);
	assert_int_equal(take_fails(c, NULL, &e), -EOPNOTSUPP);
	assert_non_null(strstr(e.message, "privileged"));

	cfg = sbxt_json("{\"HostConfig\":{\"NetworkMode\":\"none\",\"PidMode\":\"container:%s\"}}", g_sbx.id);
	harness_container_cfg("fp-pid", cfg, true, c);
	json_decref(cfg);
	assert_int_equal(take_fails(c, NULL, &e), -EOPNOTSUPP);
	assert_non_null(strstr(e.message, "PID namespace"));

	char dir[] = "/tmp/mafsbxtest-fp-bind-XXXXXX";
	assert_non_null(mkdtemp(dir));
	cfg = sbxt_json("{\"HostConfig\":{\"NetworkMode\":\"none\",\"Binds\":[\"%s:/data\"]}}", dir);
	harness_container_cfg("fp-bind", cfg, true, c);
	json_decref(cfg);
	assert_int_equal(take_fails(c, NULL, &e), -EOPNOTSUPP);
	assert_non_null(strstr(e.message, "writable bind mount at /data"));

	cfg = sbxt_json("{\"HostConfig\":{\"NetworkMode\":\"none\",\"Binds\":[\"%s:/data:ro\"]}}", dir);
	harness_container_cfg("fp-ro", cfg, true, c);
	json_decref(cfg);
	struct mafsbx_fp *fp = take(c);
	bool data = false;
	for (size_t i = 0; i < fp->n_mounts; i++)
		data |= !strcmp(fp->mounts[i].path, "/data") && fp->mounts[i].ro;
	assert_true(data);
	mafsbx_fp_free(fp);
	rmdir(dir);
}

/* ---- the CLI ------------------------------------------------------------ */

static int run_cli(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_cli(const char *fmt, ...)
{
	const char *cli = getenv("MAFSBX_CLI");
	if (!cli)
		fail_msg("MAFSBX_CLI is not set (meson sets it)");
	char args[1024], cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "'%s' fingerprint %s", cli, args);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_cli(void **state)
{
	(void)state;
	char dir[] = "/tmp/mafsbxtest-fp-cli-XXXXXX";
	assert_non_null(mkdtemp(dir));
	assert_int_equal(run_cli("%s -o %s/before.json", g_sbx.name, dir), 0);
	char before[256];
	snprintf(before, sizeof(before), "%s/before.json", dir);
	struct stat st;
	assert_int_equal(stat(before, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);   /* command lines can hold secrets */
	assert_int_equal(run_cli("--diff %s/before.json %s -o %s/same.json", dir, g_sbx.name, dir), 0);
	assert_int_equal(run_cli("--diff %s/before.json %s/same.json", dir, dir), 0);
	sh_ok("touch /tmp/fp-cli");
	assert_int_equal(run_cli("--diff %s/before.json %s > %s/out.txt", dir, g_sbx.name, dir), 1);
	char path[256];
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[512];
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "+ /tmp/fp-cli (file 0644 0:0, 0 bytes)\n");
	assert_null(fgets(line, sizeof(line), f));
	fclose(f);
	/* a refused measurement is not "unchanged" */
	assert_int_equal(run_cli("%s --max-entries 5 2>/dev/null", g_sbx.name), 4);
	assert_int_equal(run_cli("--diff %s/before.json %s --max-entries 5 2>/dev/null", dir, g_sbx.name), 4);
	assert_int_equal(run_cli("--diff %s/missing.json %s 2>/dev/null", dir, g_sbx.name), 4);
	assert_int_equal(run_cli("2>/dev/null"), 125);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	sh_ok("rm -f /tmp/fp-cli");
}

/* ---- reclaim ------------------------------------------------------------ */

static int reclaim(const char *name, const char *dir, char *done, struct mafsbx_error *e)
{
	struct mafsbx_reclaim_result res;
	mafsbx_error_clear(e);
	int r = mafsbx_sandbox_reclaim(sbxt_g.b, name, dir, &res, e);
	if (r == 0)
		snprintf(done, 4096, "%s", res.path);
	return r;
}

static void test_reclaim(void **state)
{
	(void)state;
	/* a guest that runs as uid 1000 */
	static const char *const applets[] = { "sh", "rm", "mkdir", "ls", "sleep", "touch", "ln", "test", "id", "chmod", NULL };
	static const struct sbxt_file files[] = {
		{ .path = "etc", .dir = true },
		{ .path = "etc/passwd", .content = "root:x:0:0::/root:/bin/sh\nsandbox:x:1000:1000::/tmp:/bin/sh\n" },
		{ .path = "etc/group", .content = "root:x:0:\nsandbox:x:1000:\n" },
	};
	static const char *const changes[] = { "USER 1000", "CMD [\"sleep\", \"infinity\"]", NULL };
	char ref[HARNESS_NAME_MAX + 16];
	sbxt_tiny_image("fp-reclaim", applets, files, MAFSBX_ARRAY_SIZE(files), changes, ref);
	char extra[512];
	snprintf(extra, sizeof(extra), "\"image\":\"%s\"", ref);
	struct mafsbx_acquire_result r;
	sbxt_acquire_ok(g_scope, "a", "reclaim", extra, &r);
	assert_int_equal(r.uid, 1000);
	char script[1024], done[4096];
	struct mafsbx_error e;
	/*
	 * The guest's own tree, a link inside it to a tree the guest owns elsewhere, and a
	 * root-owned directory inside the guest's (uid 0 in an exec of a USER 1000 container
	 * has no capabilities here, so the guest makes c2 world-writable for it).
	 */
	snprintf(script, sizeof(script),
		 "mkdir -p /tmp/keep && touch /tmp/keep/file && cd %s && mkdir -p calls/c1/a/b calls/c3 calls/c2 && "
		 "touch calls/c1/a/b/f calls/c1/x && ln -s /tmp/keep calls/c3/link && chmod 777 calls/c2",
		 r.work_dir);
	guest_sh(r.name, script);
	snprintf(script, sizeof(script), "mkdir %s/calls/c2/d && touch %s/calls/c2/d/rootfile", r.work_dir, r.work_dir);
	sh_in(r.name, script);

	assert_int_equal(reclaim(r.name, "calls/c1", done, &e), 0);
	snprintf(script, sizeof(script), "%s/calls/c1", r.work_dir);
	assert_string_equal(done, script);
	/* a link inside is unlinked, not followed */
	assert_int_equal(reclaim(r.name, "calls/c3", done, &e), 0);
	/* a missing directory is success; the result names it both ways */
	struct mafsbx_reclaim_result rr;
	assert_int_equal(mafsbx_sandbox_reclaim(sbxt_g.b, r.name, "./calls//never/", &rr, &e), 0);
	assert_string_equal(rr.relative, "calls/never");
	snprintf(script, sizeof(script), "%s/calls/never", r.work_dir);
	assert_string_equal(rr.path, script);
	/* at the guest's authority: uid 1000 cannot remove root's file in root's directory */
	assert_int_equal(reclaim(r.name, "calls/c2", done, &e), -EACCES);
	assert_string_equal(e.type, "OSError");
	snprintf(script, sizeof(script),
		 "test ! -e %s/calls/c1 && test ! -e %s/calls/c3 && test -f /tmp/keep/file && test -f %s/calls/c2/d/rootfile",
		 r.work_dir, r.work_dir, r.work_dir);
	sh_in(r.name, script);

	/* refusals, before any engine call that removes anything */
	assert_int_equal(reclaim(r.name, ".", done, &e), -EINVAL);
	assert_non_null(strstr(e.message, "working directory itself"));
	assert_int_equal(reclaim(r.name, r.work_dir, done, &e), -EINVAL);
	assert_int_equal(reclaim(r.name, "calls/..", done, &e), -EINVAL);
	assert_int_equal(reclaim(r.name, "../escape", done, &e), -EINVAL);
	assert_non_null(strstr(e.message, "outside"));
	assert_int_equal(reclaim(r.name, "/tmp/keep", done, &e), -EINVAL);
	assert_int_equal(reclaim(r.name, "/etc/x", done, &e), -EINVAL);
	assert_int_equal(reclaim(r.name, "a\\b", done, &e), -EINVAL);
	assert_int_equal(reclaim("maf-sandbox-docker-000000000000", "x/y", done, &e), -ENOENT);

	/* one component: only reachable with a work dir of "/" */
	struct mafsbx_acquire_result root;
	sbxt_acquire_ok(g_scope, "a", "reclaim-root", "\"work_dir\":\"/\"", &root);
	sh_in(root.name, "mkdir -p /top/sub/x");
	assert_int_equal(reclaim(root.name, "top", done, &e), -EINVAL);
	assert_non_null(strstr(e.message, "fewer than two components"));
	assert_int_equal(reclaim(root.name, "/top", done, &e), -EINVAL);
	assert_int_equal(reclaim(root.name, "/", done, &e), -EINVAL);
	assert_int_equal(mafsbx_sandbox_reclaim(sbxt_g.b, root.name, "top/sub", &rr, &e), 0);
	assert_string_equal(rr.path, "/top/sub");
	assert_string_equal(rr.relative, "top/sub");
	sh_in(root.name, "test -d /top && test ! -e /top/sub");
}

static int setup(void **state)
{
	(void)state;
	signal(SIGALRM, on_alarm);
	sbxt_scope(g_scope);
	sbxt_acquire_ok(g_scope, "a", "fingerprint", NULL, &g_sbx);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sbxt_dispose_scope(g_scope);
	return 0;
}

int main(void)
{
	if (geteuid() != 0 && getenv("MAFSBX_REQUIRE_ENGINE") == NULL) {
		fprintf(stderr, "it_fingerprint: needs root (it reads containers through /proc)\n");
		return HARNESS_SKIP;
	}
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_equal),
		cmocka_unit_test(test_tmp_file),
		cmocka_unit_test(test_name_escaped),
		cmocka_unit_test(test_background_process),
		cmocka_unit_test(test_dev_shm),
		cmocka_unit_test(test_chmod),
		cmocka_unit_test(test_same_size_same_mtime),
		cmocka_unit_test(test_restore_is_zero),
		cmocka_unit_test(test_hostile_entries),
		cmocka_unit_test(test_huge_directory_refused),
		cmocka_unit_test(test_growing_file),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_reclaim),
	};
	int r = cmocka_run_group_tests(tests, setup, teardown);
	sbxt_close();
	return r;
}
