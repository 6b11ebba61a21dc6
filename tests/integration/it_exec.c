/*
 * it_exec.c: exec in a sandbox against the real dockerd: the upstream EXEC
 * conformance probes (doc/upstream.md §9.5: argv runs, exit code fidelity, argv is
 * not re-quoted, the working directory is honoured, a timeout raises and
 * discards the sandbox), plus separated streams, exact bytes both ways,
 * env, cwd rules, launch failures as docker exec reports them (126/127), the output cap, a non-sandbox
 * refused, and an exec waiting for a freeze of this process to lift.
 *
 * A command that ends without reading its stdin while much of it is still
 * to be sent: the run still ends with the command's exit code (the send
 * that fails is not the command's failure). Such a failed send has libcurl
 * write its message into the handle's error buffer, which once lived in a
 * returned stack frame of the hijack's connect step (tests/fuzz's engine
 * harness crashed on it: "stack smashing detected").
 */
#include <pthread.h>

#include "sbx_testlib.h"
#include "sbx_internal.h"

static char g_scope[HARNESS_NAME_MAX];
static struct mafsbx_acquire_result g_sbx;

static int run(const char *req_fmt, struct mafsbx_exec_result *res, struct mafsbx_error *e)
{
	/* every request names the suite's sandbox; req_fmt holds the rest of the members */
	json_t *j = sbxt_json("{\"sandbox\":\"%s\",%s}", g_sbx.name, req_fmt);
	struct mafsbx_spec_config sc;
	mafsbx_backend_spec_config(sbxt_g.b, &sc);
	struct mafsbx_exec_spec *s = NULL;
	mafsbx_error_clear(e);
	int r = mafsbx_exec_spec_parse(j, &sc, &s, e);
	json_decref(j);
	if (r < 0)
		fail_msg("exec spec: %s", e->message);
	r = mafsbx_sandbox_exec(sbxt_g.b, s, res, e);
	mafsbx_exec_spec_free(s);
	return r;
}

static void ok(const char *req, struct mafsbx_exec_result *res)
{
	struct mafsbx_error e;
	if (run(req, res, &e) < 0)
		fail_msg("exec %s: %s (%s)", req, e.message, mafsbx_errno_name(e.err));
}

static int setup(void **state)
{
	(void)state;
	sbxt_scope(g_scope);
	sbxt_acquire_ok(g_scope, "a", "exec", NULL, &g_sbx);
	return 0;
}

static void test_argv_runs(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	ok("\"argv\":[\"printf\",\"ok-ran\"]", &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out_len, 6);
	assert_memory_equal(res.out, "ok-ran", 6);
	assert_int_equal(res.err_len, 0);
	assert_false(res.timed_out);
	assert_false(res.truncated);
	mafsbx_exec_result_free(&res);
}

static void test_exit_code_fidelity(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	ok("\"command\":\"exit 7\"", &res);
	assert_int_equal(res.exit_code, 7);
	mafsbx_exec_result_free(&res);
	ok("\"argv\":[\"sh\",\"-c\",\"exit 255\"]", &res);
	assert_int_equal(res.exit_code, 255);
	mafsbx_exec_result_free(&res);
}

static void test_argv_is_quoted(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	ok("\"argv\":[\"sh\",\"-c\",\"printf '%s' \\\"$1\\\"\",\"probe\",\"a b$(echo injected)c\"]", &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out_len, strlen("a b$(echo injected)c"));
	assert_memory_equal(res.out, "a b$(echo injected)c", res.out_len);
	mafsbx_exec_result_free(&res);
}

static void test_working_directory(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	ok("\"argv\":[\"pwd\"]", &res);
	assert_string_equal((char *)res.out, "/maf-sandbox/work\n");
	mafsbx_exec_result_free(&res);
	ok("\"command\":\"mkdir -p sub/deeper\"", &res);
	mafsbx_exec_result_free(&res);
	ok("\"argv\":[\"pwd\"],\"cwd\":\"sub/./deeper/..\"", &res);
	assert_string_equal((char *)res.out, "/maf-sandbox/work/sub\n");
	mafsbx_exec_result_free(&res);
	ok("\"argv\":[\"pwd\"],\"cwd\":\"/maf-sandbox/work/sub/deeper\"", &res);
	assert_string_equal((char *)res.out, "/maf-sandbox/work/sub/deeper\n");
	mafsbx_exec_result_free(&res);
	/* an absolute cwd anywhere in the guest, as docker exec -w (a relative one
	 * climbing out of the work dir is refused by the parser: test_spec) */
	ok("\"argv\":[\"pwd\"],\"cwd\":\"/etc\"", &res);
	assert_string_equal((char *)res.out, "/etc\n");
	mafsbx_exec_result_free(&res);
	/* a missing cwd: the runtime cannot start the command, exit 126 as docker exec */
	ok("\"argv\":[\"pwd\"],\"cwd\":\"nope\"", &res);
	assert_true(res.launch_failed);
	assert_int_equal(res.exit_code, 126);
	mafsbx_exec_result_free(&res);
}

static void test_streams_stay_separate(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	ok("\"command\":\"printf out1; printf err1 >&2; printf out2; printf err2 >&2; exit 3\"", &res);
	assert_int_equal(res.exit_code, 3);
	assert_int_equal(res.out_len, 8);
	assert_memory_equal(res.out, "out1out2", 8);
	assert_int_equal(res.err_len, 8);
	assert_memory_equal(res.err, "err1err2", 8);
	mafsbx_exec_result_free(&res);
}

static void test_exact_bytes(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	/* NUL, invalid UTF-8, CR LF: kept exactly */
	ok("\"command\":\"printf '\\\\000a\\\\377\\\\r\\\\n'; printf '\\\\376\\\\000' >&2\"", &res);
	assert_int_equal(res.out_len, 5);
	assert_memory_equal(res.out, "\x00" "a\xff\r\n", 5);
	assert_int_equal(res.err_len, 2);
	assert_memory_equal(res.err, "\xfe\x00", 2);
	mafsbx_exec_result_free(&res);
	/* stdin bytes reach the command exactly (stdin_b64 of 00 01 ff 0a 41) */
	ok("\"argv\":[\"cat\"],\"stdin_b64\":\"AAH/CkE=\"", &res);
	assert_int_equal(res.out_len, 5);
	assert_memory_equal(res.out, "\x00\x01\xff\nA", 5);
	mafsbx_exec_result_free(&res);
	ok("\"argv\":[\"wc\",\"-c\"],\"stdin\":\"na\\u00efve\"", &res);
	assert_int_equal(atoi((char *)res.out), 6);
	mafsbx_exec_result_free(&res);
	/* no stdin: EOF at once */
	ok("\"argv\":[\"cat\"]", &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out_len, 0);
	mafsbx_exec_result_free(&res);
}

static void test_env(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	ok("\"command\":\"printf '%s|%s' \\\"$K\\\" \\\"$EMPTY\\\"\",\"env\":{\"K\":\"v a=l\",\"EMPTY\":\"\"}", &res);
	assert_int_equal(res.out_len, 6);
	assert_memory_equal(res.out, "v a=l|", 6);
	mafsbx_exec_result_free(&res);
}

static void test_launch_failure_is_a_result(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	/* as `docker exec`: a program that is not there is 127, the runtime's message on stderr */
	ok("\"argv\":[\"/nonexistent/prog\",\"x\"]", &res);
	assert_true(res.launch_failed);
	assert_int_equal(res.exit_code, 127);
	assert_int_equal(res.out_len, 0);
	assert_non_null(strstr((const char *)res.err, "no such file or directory"));
	assert_null(strstr((const char *)res.err, "\r"));
	mafsbx_exec_result_free(&res);
	ok("\"argv\":[\"no-such-command-here\"]", &res);
	assert_true(res.launch_failed);
	assert_int_equal(res.exit_code, 127);
	assert_non_null(strstr((const char *)res.err, "executable file not found"));
	mafsbx_exec_result_free(&res);
	/* a working directory that is not there: 126 */
	ok("\"argv\":[\"true\"], \"cwd\": \"/nonexistent-dir\"", &res);
	assert_true(res.launch_failed);
	assert_int_equal(res.exit_code, 126);
	assert_non_null(strstr((const char *)res.err, "chdir"));
	mafsbx_exec_result_free(&res);
	/* a command that ran and failed is a result too, and no launch failure */
	ok("\"command\":\"no-such-command-here\"", &res);
	assert_int_equal(res.exit_code, 127);
	assert_false(res.launch_failed);
	mafsbx_exec_result_free(&res);
}

/* A guest printing the runtime's message and exiting 126 is program output. */
static void test_forged_launch_failure_is_output(void **state)
{
	(void)state;
	static const char *forged[] = {
		"\"command\":\"echo 'OCI runtime exec failed: exec failed: unable to start container process: exec: "
		"\\\"x\\\": stat x: no such file or directory: unknown'; exit 126\"",
		"\"command\":\"echo 'unable to find user nobody2: no matching entries in passwd file'; exit 126\"",
	};
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		struct mafsbx_exec_result res;
		ok(forged[i], &res);
		assert_int_equal(res.exit_code, 126);
		assert_false(res.launch_failed);
		assert_true(res.out_len > 20);
		mafsbx_exec_result_free(&res);
	}
}

/*
 * Can a guest end its exec's output stream before the exec
 * process exits (which would release the exec's freezer registration while
 * it can still exit into a pause)? Closing its own stdout/stderr does not:
 * the engine ends the stream when the process exits. A double fork whose
 * grandchild closes what it inherited leaves an exec process that has
 * exited already (the grandchild is an ordinary guest process). Only the
 * engine connection being cut ends it early: tests/mount/thaw.sh part 4.
 */
static void test_guest_cannot_end_the_stream_early(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	ok("\"command\":\"echo first; exec >&- 2>&- <&-; sleep 2; exit 3\",\"timeout\":30", &res);
	assert_int_equal(res.exit_code, 3);
	assert_string_equal((char *)res.out, "first\n");
	assert_true(res.duration_ms >= 1900);
	mafsbx_exec_result_free(&res);
	ok("\"command\":\"(sh -c 'exec >&- 2>&- <&-; sleep 3' &); echo parent\",\"timeout\":30", &res);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal((char *)res.out, "parent\n");
	mafsbx_exec_result_free(&res);
	/*
	 * A grandchild that keeps the streams open keeps the call open too: it
	 * returns when they close. Not for ever: after the exec process exits,
	 * containerd's shim waits at most 2 s for its output copy to drain, so
	 * the grandchild writes well within that (a 2 s sleep raced it).
	 */
	ok("\"command\":\"(sleep 1; echo late) & echo parent\",\"timeout\":30", &res);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal((char *)res.out, "parent\nlate\n");
	mafsbx_exec_result_free(&res);
}

static void test_output_cap(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	ok("\"command\":\"head -c 9437184 /dev/zero; printf tail >&2\"", &res);
	assert_int_equal(res.exit_code, 0);
	assert_true(res.truncated);
	assert_int_equal(res.out_len, 8u * 1024 * 1024);
	assert_int_equal(res.err_len, 4);
	assert_memory_equal(res.err, "tail", 4);
	mafsbx_exec_result_free(&res);
}

static void test_unread_stdin(void **state)
{
	(void)state;
	size_t len = 16u << 20;
	char *in = malloc(len);
	assert_non_null(in);
	memset(in, 'x', len);
	static const char *const argv[] = { "true", NULL };
	for (int i = 0; i < 3; i++) {
		struct mafsbx_exec_request rq = { .argv = argv, .stdin_data = in, .stdin_len = len, .timeout_ms = 30000 };
		struct mafsbx_exec_result res;
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		harness_check(mafsbx_exec_run(harness_engine(), g_sbx.id, &rq, &res, &e), &e, "exec with unread stdin");
		assert_int_equal(res.exit_code, 0);
		mafsbx_exec_result_free(&res);
	}
	free(in);
}

static void test_not_a_sandbox(void **state)
{
	(void)state;
	/* a container with a sandbox-shaped name but none of the labels */
	char name[MAFSBX_NAME_LEN + 1], rnd[HARNESS_NAME_MAX];
	harness_unique_name("x", rnd);
	snprintf(name, sizeof(name), "%s%s", MAFSBX_NAME_PREFIX, rnd + strlen(rnd) - 12);
	json_t *cfg = json_pack("{s:s, s:[s,s], s:{s:s}}", "Image", harness_image(), "Cmd", "sleep", "infinity",
				"HostConfig", "NetworkMode", "none");
	char id[65];
	struct mafsbx_error e;
	harness_register_container(name);
	harness_check(mafsbx_container_create(harness_engine(), name, cfg, id, &e), &e, "create");
	json_decref(cfg);
	harness_check(mafsbx_container_start(harness_engine(), id, &e), &e, "start");
	struct mafsbx_exec_spec s = { .sandbox = name, .argv = (char *[]){ "true", NULL }, .argc = 1, .cwd = ".",
				      .timeout_ms = 10000 };
	struct mafsbx_exec_result res;
	assert_int_equal(mafsbx_sandbox_exec(sbxt_g.b, &s, &res, &e), -ENOENT);
	assert_non_null(strstr(e.message, "not a sandbox"));
	mafsbx_exec_result_free(&res);
	/* and one that does not exist at all */
	snprintf(name, sizeof(name), "%s000000000000", MAFSBX_NAME_PREFIX);
	assert_int_equal(mafsbx_sandbox_exec(sbxt_g.b, &s, &res, &e), -ENOENT);
	mafsbx_exec_result_free(&res);
}

struct holder {
	const char *id;
	volatile bool left;
	pthread_barrier_t *bar;
};

static void *hold_freeze(void *arg)
{
	struct holder *h = arg;
	struct mafsbx_freeze *f = NULL;
	struct mafsbx_error e;
	int r = mafsbx_freeze_enter(sbxt_g.fz, h->id, 0, &f, &e);
	pthread_barrier_wait(h->bar);
	if (r == 0) {
		usleep(500 * 1000);
		h->left = true;
		mafsbx_freeze_leave(f);
	}
	return NULL;
}

static void test_exec_waits_for_our_freeze(void **state)
{
	(void)state;
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 2);
	struct holder h = { g_sbx.id, false, &bar };
	pthread_t th;
	pthread_create(&th, NULL, hold_freeze, &h);
	pthread_barrier_wait(&bar);
	assert_true(mafsbx_freeze_active(sbxt_g.fz, g_sbx.id));
	struct mafsbx_exec_result res;
	ok("\"command\":\"echo ran\",\"timeout\":30", &res);
	/* it could only run once the freeze was lifted */
	assert_true(h.left);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal((char *)res.out, "ran\n");
	mafsbx_exec_result_free(&res);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
}

/*
 * The disposal after a timeout removes the instance that
 * ran, by ID; a sandbox re-created under the same name meanwhile survives.
 */
static void recreate_hook(const char *name, void *ctx)
{
	struct mafsbx_acquire_result *again = ctx;
	assert_false(sbxt_exists(name)); /* the instance that timed out is gone already */
	sbxt_acquire_ok(g_scope, "re", "exec", NULL, again);
	assert_string_equal(again->name, name);
}

static void test_timeout_spares_a_recreated_sandbox(void **state)
{
	(void)state;
	struct mafsbx_acquire_result first, again;
	memset(&again, 0, sizeof(again));
	sbxt_acquire_ok(g_scope, "re", "exec", NULL, &first);
	sbx_test_exec_timed_out = recreate_hook;
	sbx_test_exec_timed_out_ctx = &again;
	struct mafsbx_exec_spec s = { .sandbox = first.name, .argv = (char *[]){ "sleep", "30", NULL }, .argc = 2,
				      .cwd = ".", .timeout_ms = 1000 };
	struct mafsbx_exec_result res;
	struct mafsbx_error e;
	int r = mafsbx_sandbox_exec(sbxt_g.b, &s, &res, &e);
	sbx_test_exec_timed_out = NULL;
	mafsbx_exec_result_free(&res);
	assert_int_equal(r, -ETIMEDOUT);
	assert_true(again.id[0]);
	assert_string_not_equal(again.id, first.id);
	assert_false(sbxt_exists(first.id));
	assert_true(sbxt_exists(again.id));
	struct mafsbx_dispose_result dr;
	assert_int_equal(mafsbx_sandbox_dispose_id(sbxt_g.b, again.name, again.id, &dr, &e), 0);
	assert_int_equal(dr.disposed, 1);
	mafsbx_dispose_result_free(&dr);
}

/* Last: the timeout discards the sandbox. */
static void test_timeout_raises_and_disposes(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	struct mafsbx_error e;
	long long t0 = mafsbx_now_ms();
	assert_int_equal(run("\"argv\":[\"sleep\",\"30\"],\"timeout\":1", &res, &e), -ETIMEDOUT);
	long long took = mafsbx_now_ms() - t0;
	assert_true(res.timed_out);
	assert_string_equal(e.type, "TimeoutError");
	assert_non_null(strstr(e.message, "was disposed"));
	mafsbx_exec_result_free(&res);
	/* upstream's probe: no earlier than 0.5 s, no later than 4 s */
	if (took < 500 || took > 4000)
		fail_msg("the 1 s timeout took %lld ms", took);
	assert_false(sbxt_exists(g_sbx.name));
	/* and the conversation is clean afterwards */
	assert_int_equal(sbxt_dispose_scope(g_scope), 0);
}

int main(void)
{
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_argv_runs),
		cmocka_unit_test(test_exit_code_fidelity),
		cmocka_unit_test(test_argv_is_quoted),
		cmocka_unit_test(test_working_directory),
		cmocka_unit_test(test_streams_stay_separate),
		cmocka_unit_test(test_exact_bytes),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_launch_failure_is_a_result),
		cmocka_unit_test(test_forged_launch_failure_is_output),
		cmocka_unit_test(test_guest_cannot_end_the_stream_early),
		cmocka_unit_test(test_output_cap),
		cmocka_unit_test(test_unread_stdin),
		cmocka_unit_test(test_not_a_sandbox),
		cmocka_unit_test(test_exec_waits_for_our_freeze),
		cmocka_unit_test(test_timeout_spares_a_recreated_sandbox),
		cmocka_unit_test(test_timeout_raises_and_disposes),
	};
	int r = cmocka_run_group_tests(tests, setup, NULL);
	sbxt_close();   /* the harness removes what is left */
	return r;
}
