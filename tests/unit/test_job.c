/*
 * test_job.c: the job files of src/sandbox/job.c, with no engine, over a
 * fresh temporary directory: meta, spec (stdin's exact bytes, env, user,
 * on_timeout) and status written and read back; a status not yet there is
 * ENOENT; a file that is not what it should be (an unknown version, a
 * missing field, not JSON) is refused with a message naming it; the lock is
 * seen held exactly while another process holds it (a child killed with
 * SIGKILL lets it go); markers; removal of the whole directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "job.h"

struct fx {
	char dir[64];
	int parent, fd;
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/test_job.XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	fx->parent = open(fx->dir, O_RDONLY | O_DIRECTORY);
	if (fx->parent < 0 || mkdirat(fx->parent, "j", 0700) < 0)
		return -1;
	fx->fd = openat(fx->parent, "j", O_RDONLY | O_DIRECTORY);
	*state = fx;
	return fx->fd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	close(fx->fd);
	mafsbx_job_remove(fx->parent, "j");
	close(fx->parent);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static void put_file(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_meta_round_trip(void **state)
{
	struct fx *fx = *state;
	struct mafsbx_job_meta m = { .started_s = 1700000000, .stream_cap = 8u << 20 };
	snprintf(m.job, sizeof(m.job), "0123456789abcdef");
	snprintf(m.sandbox, sizeof(m.sandbox), "maf-sandbox-docker-46188856c6ba");
	snprintf(m.container, sizeof(m.container), "%064d", 7);
	snprintf(m.endpoint, sizeof(m.endpoint), "unix:///var/run/docker.sock");
	snprintf(m.scope, sizeof(m.scope), "s1");
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	assert_int_equal(mafsbx_job_meta_write(fx->fd, &m, &e), 0);
	struct mafsbx_job_meta back;
	assert_int_equal(mafsbx_job_meta_read(fx->fd, &back, &e), 0);
	assert_string_equal(back.job, m.job);
	assert_string_equal(back.sandbox, m.sandbox);
	assert_string_equal(back.container, m.container);
	assert_string_equal(back.endpoint, m.endpoint);
	assert_string_equal(back.scope, m.scope);
	assert_int_equal(back.started_s, m.started_s);
	assert_int_equal(back.stream_cap, m.stream_cap);
	assert_false(back.cluster);
	/* a swarm mount's job says so: its monitor routes the exec to the task's node */
	m.cluster = true;
	assert_int_equal(mafsbx_job_meta_write(fx->fd, &m, &e), 0);
	assert_int_equal(mafsbx_job_meta_read(fx->fd, &back, &e), 0);
	assert_true(back.cluster);
	/* a version this code does not know is refused, not guessed at */
	put_file(fx->fd, "meta", "{\"version\": 2, \"job\": \"x\"}");
	assert_true(mafsbx_job_meta_read(fx->fd, &back, &e) < 0);
	assert_non_null(strstr(e.message, "job meta"));
	put_file(fx->fd, "meta", "not json");
	assert_true(mafsbx_job_meta_read(fx->fd, &back, &e) < 0);
	assert_non_null(strstr(e.message, "job meta"));
}

static void test_spec_round_trip(void **state)
{
	struct fx *fx = *state;
	static char *argv[] = { "sh", "-c", "cat; exit 7", NULL };
	static char *env[] = { "A=1", "B=two words", NULL };
	unsigned char in[] = { 0, 1, 2, 255, '\n' };
	struct mafsbx_exec_spec s = { .sandbox = "sbx", .argv = argv, .argc = 3, .cwd = "sub/dir", .env = env,
				      .n_env = 2, .stdin_data = in, .stdin_len = sizeof(in), .has_stdin = true,
				      .timeout_ms = 900000, .on_timeout = MAFSBX_ON_TIMEOUT_DISPOSE, .user = "1000:1000" };
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	assert_int_equal(mafsbx_job_spec_write(fx->fd, &s, &e), 0);
	struct mafsbx_exec_spec *b = NULL;
	assert_int_equal(mafsbx_job_spec_read(fx->fd, &b, &e), 0);
	assert_string_equal(b->sandbox, "sbx");
	assert_int_equal(b->argc, 3);
	assert_string_equal(b->argv[2], "cat; exit 7");
	assert_null(b->argv[3]);
	assert_int_equal(b->n_env, 2);
	assert_string_equal(b->env[1], "B=two words");
	assert_string_equal(b->cwd, "sub/dir");
	assert_string_equal(b->user, "1000:1000");
	assert_true(b->has_stdin);
	assert_int_equal(b->stdin_len, sizeof(in));
	assert_memory_equal(b->stdin_data, in, sizeof(in));
	assert_int_equal(b->timeout_ms, 900000);
	assert_int_equal(b->on_timeout, MAFSBX_ON_TIMEOUT_DISPOSE);
	mafsbx_exec_spec_free(b);
	/* no stdin, no env, no user: none comes back */
	struct mafsbx_exec_spec s2 = { .sandbox = "sbx", .argv = argv, .argc = 1, .cwd = ".", .timeout_ms = 1 };
	assert_int_equal(mafsbx_job_spec_write(fx->fd, &s2, &e), 0);
	assert_int_equal(mafsbx_job_spec_read(fx->fd, &b, &e), 0);
	assert_false(b->has_stdin);
	assert_null(b->env);
	assert_null(b->user);
	mafsbx_exec_spec_free(b);
	put_file(fx->fd, "spec", "{\"sandbox\": \"sbx\", \"argv\": [], \"cwd\": \".\", \"timeout_ms\": 5}");
	assert_true(mafsbx_job_spec_read(fx->fd, &b, &e) < 0);
	assert_non_null(strstr(e.message, "job spec"));
}

static void test_status_and_exec(void **state)
{
	struct fx *fx = *state;
	struct mafsbx_job_status st;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	assert_int_equal(mafsbx_job_status_read(fx->fd, &st, &e), -ENOENT);
	char eid[65];
	mafsbx_job_exec_read(fx->fd, eid);
	assert_string_equal(eid, "");
	assert_int_equal(mafsbx_job_exec_write(fx->fd, "abc123", &e), 0);
	mafsbx_job_exec_read(fx->fd, eid);
	assert_string_equal(eid, "abc123");
	struct mafsbx_job_status w = { .exit_code = -1, .timed_out = true, .truncated = true, .duration_ms = 1234 };
	mafsbx_error_set_full(&w.error, MAFSBX_EK_TIMEOUT, ETIMEDOUT, "TimeoutError", "exec in x timed out");
	assert_int_equal(mafsbx_job_status_write(fx->fd, &w, &e), 0);
	assert_int_equal(mafsbx_job_status_read(fx->fd, &st, &e), 0);
	assert_int_equal(st.exit_code, -1);
	assert_true(st.timed_out);
	assert_true(st.truncated);
	assert_false(st.disposed);
	assert_int_equal(st.duration_ms, 1234);
	assert_int_equal(st.error.err, ETIMEDOUT);
	assert_int_equal(st.error.kind, MAFSBX_EK_TIMEOUT);
	assert_string_equal(st.error.message, "exec in x timed out");
	/* an exit code out of range is not believed */
	put_file(fx->fd, "status", "{\"exit_code\": 999, \"duration_ms\": 1}");
	assert_int_equal(mafsbx_job_status_read(fx->fd, &st, &e), 0);
	assert_int_equal(st.exit_code, -1);
	assert_int_equal(st.error.err, 0);
}

static void test_lock_and_markers(void **state)
{
	struct fx *fx = *state;
	assert_false(mafsbx_job_alive(fx->fd));   /* no lock file */
	int lk = openat(fx->fd, "lock", O_RDWR | O_CREAT, 0600);
	assert_true(lk >= 0);
	assert_false(mafsbx_job_alive(fx->fd));
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork();
	if (pid == 0) {
		char c = 0;
		if (flock(lk, LOCK_EX) == 0 && write(go[1], &c, 1) == 1)
			pause();
		_exit(1);
	}
	char c;
	assert_int_equal(read(go[0], &c, 1), 1);
	assert_true(mafsbx_job_alive(fx->fd));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* the child's descriptor is gone, ours is another reference to the same
	 * open file description: close it too, as the daemon does after the fork */
	close(lk);
	assert_false(mafsbx_job_alive(fx->fd));
	close(go[0]);
	close(go[1]);
	assert_false(mafsbx_job_marked(fx->fd, "stop"));
	assert_int_equal(mafsbx_job_mark(fx->fd, "stop"), 0);
	assert_true(mafsbx_job_marked(fx->fd, "stop"));
	assert_int_equal(mafsbx_job_remove(fx->parent, "j"), 0);
	assert_int_equal(faccessat(fx->parent, "j", F_OK, 0), -1);
	assert_int_equal(mafsbx_job_remove(fx->parent, "j"), 0);   /* already gone: fine */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_meta_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spec_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_and_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_and_markers, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
