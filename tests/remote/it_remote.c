/*
 * it_remote.c: the library's subset over whatever engine DOCKER_HOST names
 * (tls.sh runs it against a private dockerd with --tlsverify, ssh.sh over
 * ssh://root@127.0.0.1:PORT). Run directly it uses the default engine.
 *
 *  - exec with stdin: 0 bytes, 5 bytes, 2 MiB of random bytes echoed back
 *    exactly (the hijacked stream's half-close: the command sees EOF and
 *    its output after the EOF still arrives), a command that exits without
 *    reading its stdin, and an exec without stdin;
 *  - several execs with stdin at once (one connection each);
 *  - acquire (created; reused with at most an inspect and the work dir's
 *    HEADs, no freeze; a work dir the guest removed made again) and dispose
 *    through the backend;
 *  - files on the engine plane: write, stat, read back under a freeze;
 *  - a client closed after pings and execs leaves no descriptor and no
 *    child (ssh processes reaped, no zombie).
 * Every container lives under this run's random scope or the harness's
 * unique names, and is removed at the end.
 */
#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/random.h>

#include "files.h"
#include "http.h"
#include "sbx_internal.h"
#include "sbx_testlib.h"

static void run_stdin(const char *c, const char *const *argv, const void *in, size_t in_len,
		      struct mafsbx_exec_result *res)
{
	struct mafsbx_exec_request rq = { .argv = argv, .stdin_data = in, .stdin_len = in_len,
					  .timeout_ms = 60000, .max_output = 4u * 1024 * 1024 };
	struct mafsbx_error e;
	memset(res, 0, sizeof(*res));
	harness_check(mafsbx_exec_run(harness_engine(), c, &rq, res, &e), &e, "exec with stdin");
	assert_false(res->timed_out);
}

static void test_exec_stdin(void **state)
{
	(void)state;
	char c[HARNESS_NAME_MAX];
	harness_container("remote-exec", c);
	struct mafsbx_exec_result r;

	/* 5 bytes: the command reads to EOF, then writes after it */
	const char *wc[] = { "sh", "-c", "wc -c; echo after-eof", NULL };
	run_stdin(c, wc, "hello", 5, &r);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal((char *)r.out, "5\nafter-eof\n");
	mafsbx_exec_result_free(&r);

	/* empty stdin attached: EOF at once */
	run_stdin(c, wc, "", 0, &r);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal((char *)r.out, "0\nafter-eof\n");
	mafsbx_exec_result_free(&r);

	/* 2 MiB of random bytes come back exactly */
	size_t n = 2u * 1024 * 1024;
	unsigned char *big = malloc(n);
	assert_non_null(big);
	for (size_t off = 0; off < n;) {
		ssize_t g = getrandom(big + off, n - off, 0);
		assert_true(g > 0);
		off += (size_t)g;
	}
	const char *cat[] = { "cat", NULL };
	run_stdin(c, cat, big, n, &r);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(r.out_len, n);
	assert_memory_equal(r.out, big, n);
	mafsbx_exec_result_free(&r);

	/* a command that never reads its stdin still ends, with its output */
	const char *noread[] = { "sh", "-c", "echo ignored-stdin; exit 3", NULL };
	run_stdin(c, noread, big, n, &r);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal((char *)r.out, "ignored-stdin\n");
	mafsbx_exec_result_free(&r);
	free(big);

	/* no stdin at all */
	const char *echo[] = { "sh", "-c", "echo plain; echo to-err >&2", NULL };
	run_stdin(c, echo, NULL, 0, &r);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal((char *)r.out, "plain\n");
	assert_string_equal((char *)r.err, "to-err\n");
	mafsbx_exec_result_free(&r);
}

struct par {
	const char *c;
	int idx;
	bool ok;
};

static void *par_main(void *arg)
{
	struct par *p = arg;
	char in[64];
	int len = snprintf(in, sizeof(in), "input-%d", p->idx);
	const char *argv[] = { "cat", NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .stdin_data = in, .stdin_len = (size_t)len,
					  .timeout_ms = 60000 };
	struct mafsbx_exec_result r;
	memset(&r, 0, sizeof(r));
	struct mafsbx_error e;
	p->ok = mafsbx_exec_run(harness_engine(), p->c, &rq, &r, &e) == 0 && r.exit_code == 0 &&
		r.out_len == (size_t)len && memcmp(r.out, in, (size_t)len) == 0;
	if (!p->ok)
		fprintf(stderr, "parallel exec %d: %s / exit %d out '%s'\n", p->idx, e.message, r.exit_code,
			r.out ? (char *)r.out : "");
	mafsbx_exec_result_free(&r);
	return NULL;
}

static void test_exec_stdin_parallel(void **state)
{
	(void)state;
	char c[HARNESS_NAME_MAX];
	harness_container("remote-par", c);
	enum { N = 6 };
	pthread_t th[N];
	struct par p[N];
	for (int i = 0; i < N; i++) {
		p[i] = (struct par){ .c = c, .idx = i };
		assert_int_equal(pthread_create(&th[i], NULL, par_main, &p[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		assert_true(p[i].ok);
	}
}

static void test_acquire_files_dispose(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	struct mafsbx_acquire_result a, b;
	sbxt_acquire_created(scope, "a", "python", &a);
	/*
	 * Warm: one inspect, plus on a remote engine one HEAD per component of
	 * the work dir (/maf-sandbox, /maf-sandbox/work) and no freeze; the
	 * frozen path would add a pause, an unpause and its inspect.
	 */
	unsigned long before = mafsbx_http_request_count();
	sbxt_acquire_ok(scope, "a", "python", NULL, &b);
	unsigned long warm = mafsbx_http_request_count() - before;
	printf("# warm acquire: %lu engine calls\n", warm);
	assert_int_equal(b.state, MAFSBX_ACQ_REUSED);
	assert_string_equal(a.id, b.id);
	assert_true(warm >= 1 && warm <= 3);
	/* the guest removes its work dir: the next acquire makes it again */
	char *gone = sbxt_sh_out(a.name, "rm -rf /maf-sandbox/work && echo gone");
	assert_string_equal(gone, "gone");
	free(gone);
	sbxt_acquire_ok(scope, "a", "python", NULL, &b);
	gone = sbxt_sh_out(a.name, "test -d /maf-sandbox/work && echo back");
	assert_string_equal(gone, "back");
	free(gone);

	struct mafsbx_files_target t = { .container = a.id, .work_dir = a.work_dir, .uid = a.uid, .gid = a.gid };
	struct mafsbx_error e;
	const char *text = "over the remote engine\n";
	harness_check(mafsbx_files_write(sbxt_g.fz, &t, "sub/dir/f.txt", text, strlen(text), 0, 0, &e), &e,
		      "write");
	struct mafsbx_fstat st;
	harness_check(mafsbx_files_stat(sbxt_g.fz, &t, "sub/dir/f.txt", 0, &st, &e), &e, "stat");
	assert_int_equal(st.kind, MAFSBX_FK_FILE);
	assert_int_equal(st.size, strlen(text));
	struct mafsbx_buf out = MAFSBX_BUF_INIT;
	harness_check(mafsbx_files_read(sbxt_g.fz, &t, "sub/dir/f.txt", 1024, -1, &out, 0, NULL, &e), &e, "read");
	assert_int_equal(out.len, strlen(text));
	assert_memory_equal(out.data, text, out.len);
	mafsbx_buf_free(&out);
	char *o = sbxt_sh_out(a.name, "cat /maf-sandbox/work/sub/dir/f.txt");
	assert_string_equal(o, "over the remote engine");
	free(o);

	assert_int_equal(sbxt_dispose_scope(scope), 1);
	assert_false(sbxt_exists(a.id));
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;  /* the directory's own descriptor */
}

/* Our children, zombies included (a process not yet reaped is still one). */
static int count_children(void)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t got = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[got] = '\0';
		const char *rp = strrchr(buf, ')');
		char state;
		int ppid;
		if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid())
			n++;
	}
	closedir(d);
	return n;
}

/*
 * A client of its own: pings, execs with stdin, several at once, then
 * closed. Afterwards this process has exactly the descriptors and children
 * it had before: every connection (and, over ssh, every ssh process and the
 * master) is closed and reaped, none left as a zombie.
 */
static void test_teardown_leaves_nothing(void **state)
{
	(void)state;
	char c[HARNESS_NAME_MAX];
	harness_container("remote-teardown", c);
	int fds0 = count_fds(), kids0 = count_children();
	struct mafsbx_engine *e = harness_engine_with(NULL);
	struct mafsbx_error err;
	for (int i = 0; i < 3; i++)
		harness_check(mafsbx_engine_ping(e, &err), &err, "ping");
	const char *argv[] = { "cat", NULL };
	for (int i = 0; i < 3; i++) {
		struct mafsbx_exec_request rq = { .argv = argv, .stdin_data = "x", .stdin_len = 1, .timeout_ms = 60000 };
		struct mafsbx_exec_result r;
		memset(&r, 0, sizeof(r));
		harness_check(mafsbx_exec_run(e, c, &rq, &r, &err), &err, "exec");
		assert_int_equal(r.out_len, 1);
		mafsbx_exec_result_free(&r);
	}
	mafsbx_engine_close(e);
	assert_int_equal(count_fds(), fds0);
	assert_int_equal(count_children(), kids0);
}

int main(void)
{
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_stdin),
		cmocka_unit_test(test_exec_stdin_parallel),
		cmocka_unit_test(test_acquire_files_dispose),
		cmocka_unit_test(test_teardown_leaves_nothing),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	sbxt_close();
	return r;
}
