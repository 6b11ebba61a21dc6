/*
 * test_turns.c: the freeze/exec turn-taking of src/freeze/turns.c, with no engine:
 * who goes when both wait (turns alternate, neither starves), waits bounded
 * by deadlines (the documented errors, nothing left registered), a holder
 * killed with SIGKILL (its turn dies with it), a child process as the other
 * side, the documented re-entrancy rules and the collection of the lock
 * files. Every test runs in milliseconds over a fresh temporary directory.
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "turns.h"

struct fx {
	char dir[64];
	struct mafsbx_turns t;
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/test_turns.XXXXXX");
	if (!mkdtemp(fx->dir) || mafsbx_turns_init(&fx->t, fx->dir, "k", "box", NULL) < 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	static const char *const sfx[] = { "gate", "hold", "exec", "xwant", "fwant" };
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(sfx); i++) {
		char p[PATH_MAX];
		mafsbx_turns_path(&fx->t, sfx[i], p, sizeof(p));
		unlink(p);
	}
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static long long in_ms(long ms)
{
	return mafsbx_now_ms() + ms;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Is the lock file `suffix` held by no live descriptor? (A missing file is free.) */
static bool file_free(const struct fx *fx, const char *suffix)
{
	char p[PATH_MAX];
	mafsbx_turns_path(&fx->t, suffix, p, sizeof(p));
	int fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return true;
	bool free_ = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return free_;
}

/* Take a freeze turn and settle it (the freeze "succeeded"): the outcome, or an error. */
static int freeze_in(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long ms, struct mafsbx_error *err)
{
	int r = mafsbx_turns_freeze_wait(t, turn, in_ms(ms), NULL, err);
	if (r > 0)
		mafsbx_turns_settle(turn, true);
	return r;
}

static int exec_in(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long ms, bool *waited,
		   struct mafsbx_error *err)
{
	int r = mafsbx_turns_exec_wait(t, turn, in_ms(ms), NULL, waited, err);
	if (r == 0)
		mafsbx_turns_settle(turn, true);
	return r;
}

/* Leave a freeze turn: 1 when it was the last one inside. */
static int freeze_out(const struct mafsbx_turns *t, struct mafsbx_turn *turn)
{
	int r = mafsbx_turns_freeze_leave(t, turn, in_ms(1000), NULL);
	mafsbx_turn_release(turn);
	return r;
}

static void test_bad_key(void **state)
{
	struct fx *fx = *state;
	struct mafsbx_turns t;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	assert_int_equal(mafsbx_turns_init(&t, fx->dir, "a/b", NULL, &err), -EINVAL);
	assert_int_equal(err.kind, MAFSBX_EK_INVALID);
	assert_int_equal(mafsbx_turns_init(&t, fx->dir, "", NULL, NULL), -EINVAL);
	char dir[PATH_MAX + 8];
	memset(dir, 'd', sizeof(dir) - 1);
	dir[0] = '/';
	dir[sizeof(dir) - 1] = '\0';
	assert_int_equal(mafsbx_turns_init(&t, dir, "k", NULL, &err), -ENAMETOOLONG);
}

/*
 * A lock file is a regular file with no other name: `mafsbx thaw` as root
 * works in every user's runtime directory, and a hard link or a fifo put
 * there by its owner must not have root write a marker over another file
 * or block on a read. One root makes in another user's directory is that
 * user's.
 */
static void test_lock_file_kinds(void **state)
{
	struct fx *fx = *state;
	char gate[PATH_MAX], victim[PATH_MAX];
	mafsbx_turns_path(&fx->t, "gate", gate, sizeof(gate));
	snprintf(victim, sizeof(victim), "%s/victim", fx->dir);
	int v = open(victim, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(v >= 0);
	assert_int_equal(write(v, "keep", 4), 4);
	close(v);
	assert_int_equal(link(victim, gate), 0);
	struct mafsbx_turn a = MAFSBX_TURN_INIT;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	assert_true(freeze_in(&fx->t, &a, 100, &err) < 0);
	assert_non_null(strstr(err.message, "not a regular file of its own"));
	mafsbx_turn_release(&a);
	struct stat st;
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(unlink(gate), 0);
	assert_int_equal(unlink(victim), 0);

	assert_int_equal(mkfifo(gate, 0600), 0);
	mafsbx_error_clear(&err);
	assert_true(freeze_in(&fx->t, &a, 100, &err) < 0);
	assert_non_null(strstr(err.message, "not a regular file of its own"));
	mafsbx_turn_release(&a);
	assert_int_equal(unlink(gate), 0);

	/* root in a directory of another uid: what it makes there is that uid's */
	if (geteuid() == 0) {
		assert_int_equal(chown(fx->dir, 65534, 65534), 0);
		assert_int_equal(freeze_in(&fx->t, &a, 100, NULL), MAFSBX_TURN_ALONE);
		assert_int_equal(freeze_out(&fx->t, &a), 1);
		assert_int_equal(stat(gate, &st), 0);
		assert_int_equal(st.st_uid, 65534);
		assert_int_equal(st.st_gid, 65534);
	}
}

/* Freeze turns join each other; the last one out is told so. */
static void test_freezes_join(void **state)
{
	struct fx *fx = *state;
	struct mafsbx_turn a = MAFSBX_TURN_INIT, b = MAFSBX_TURN_INIT;
	assert_int_equal(freeze_in(&fx->t, &a, 100, NULL), MAFSBX_TURN_ALONE);
	assert_int_equal(freeze_in(&fx->t, &b, 100, NULL), MAFSBX_TURN_JOINED);
	assert_int_equal(freeze_out(&fx->t, &a), 0);
	assert_false(file_free(fx, "hold"));
	assert_int_equal(freeze_out(&fx->t, &b), 1);
	assert_true(file_free(fx, "hold"));
	assert_true(file_free(fx, "gate"));
	/* a freeze that failed gives its turn back: the next one is alone again */
	assert_int_equal(mafsbx_turns_freeze_wait(&fx->t, &a, in_ms(100), NULL, NULL), MAFSBX_TURN_ALONE);
	mafsbx_turns_settle(&a, false);
	assert_true(file_free(fx, "hold"));
	assert_int_equal(freeze_in(&fx->t, &a, 100, NULL), MAFSBX_TURN_ALONE);
	assert_int_equal(freeze_out(&fx->t, &a), 1);
}

/*
 * Re-entrancy (turns.h): none. A caller holding a freeze turn that asks for
 * an exec turn waits for itself until its deadline (and the reverse): the
 * documented errors, and nothing left registered.
 */
static void test_no_reentry(void **state)
{
	struct fx *fx = *state;
	struct mafsbx_turn f = MAFSBX_TURN_INIT, x = MAFSBX_TURN_INIT;
	struct mafsbx_error err;
	assert_int_equal(freeze_in(&fx->t, &f, 100, NULL), MAFSBX_TURN_ALONE);
	mafsbx_error_clear(&err);
	long long t0 = mafsbx_now_ms();
	bool waited = false;
	assert_int_equal(exec_in(&fx->t, &x, 30, &waited, &err), -ETIMEDOUT);
	assert_true(mafsbx_now_ms() - t0 >= 30);
	assert_true(mafsbx_now_ms() - t0 < 500);
	assert_true(waited);
	assert_int_equal(err.kind, MAFSBX_EK_TIMEOUT);
	assert_non_null(strstr(err.message, "timed out waiting for the freeze of sandbox box to end before an exec"));
	assert_int_equal(x.exec, -1);
	assert_int_equal(x.want, -1);
	assert_int_equal(x.gate, -1);
	assert_true(file_free(fx, "exec"));
	assert_true(file_free(fx, "xwant"));
	assert_int_equal(freeze_out(&fx->t, &f), 1);

	/* the reverse: an exec turn held, a freeze waits for it until its deadline */
	assert_int_equal(exec_in(&fx->t, &x, 100, &waited, NULL), 0);
	assert_false(waited);
	mafsbx_error_clear(&err);
	t0 = mafsbx_now_ms();
	assert_int_equal(mafsbx_turns_freeze_wait(&fx->t, &f, in_ms(30), NULL, &err), -EBUSY);
	assert_true(mafsbx_now_ms() - t0 >= 30);
	assert_true(mafsbx_now_ms() - t0 < 500);
	assert_int_equal(err.kind, MAFSBX_EK_CONFLICT);
	assert_int_equal(err.err, EBUSY);
	assert_non_null(strstr(err.message, "an exec is running in sandbox box; retry when it ends"));
	assert_int_equal(f.hold, -1);
	assert_int_equal(f.want, -1);
	assert_true(file_free(fx, "hold"));
	assert_true(file_free(fx, "fwant"));
	/* execs join each other while no freeze waits */
	struct mafsbx_turn x2 = MAFSBX_TURN_INIT;
	assert_int_equal(exec_in(&fx->t, &x2, 100, &waited, NULL), 0);
	assert_false(waited);
	mafsbx_turn_release(&x);
	assert_false(file_free(fx, "exec"));
	mafsbx_turn_release(&x2);
	assert_true(file_free(fx, "exec"));
}

/* The state machine step by step: a freeze and an exec both waiting take turns. */
static void test_turns_alternate(void **state)
{
	struct fx *fx = *state;
	const struct mafsbx_turns *t = &fx->t;
	struct mafsbx_turn e1 = MAFSBX_TURN_INIT, e2 = MAFSBX_TURN_INIT, f1 = MAFSBX_TURN_INIT, f2 = MAFSBX_TURN_INIT;
	assert_int_equal(exec_in(t, &e1, 100, NULL, NULL), 0);
	/* a freeze waits for the exec in flight, and says so (fwant) */
	assert_int_equal(mafsbx_turns_freeze_try(t, &f1, in_ms(100), NULL), -EAGAIN);
	assert_int_equal(f1.why, MAFSBX_TURNS_EXEC_RUNNING);
	assert_true(f1.want >= 0);
	assert_false(file_free(fx, "fwant"));
	/* a new exec does not extend the exec phase while a freeze waits */
	assert_int_equal(mafsbx_turns_exec_want(t, &e2, in_ms(100), NULL), 0);
	assert_int_equal(mafsbx_turns_exec_try(t, &e2, in_ms(100), NULL), -EAGAIN);
	mafsbx_turn_release(&e1);
	/* both wait, nothing in force, an exec went last: the freeze goes, the exec does not */
	assert_int_equal(mafsbx_turns_exec_try(t, &e2, in_ms(100), NULL), -EAGAIN);
	assert_int_equal(mafsbx_turns_freeze_try(t, &f1, in_ms(100), NULL), MAFSBX_TURN_ALONE);
	mafsbx_turns_settle(&f1, true);
	mafsbx_turn_unwant(&f1);
	assert_int_equal(mafsbx_turns_exec_try(t, &e2, in_ms(100), NULL), -EAGAIN);
	/* an exec waits: no other freeze joins the one in force */
	assert_int_equal(mafsbx_turns_freeze_try(t, &f2, in_ms(100), NULL), -EAGAIN);
	assert_int_equal(f2.why, MAFSBX_TURNS_EXEC_WAITING);
	assert_int_equal(freeze_out(t, &f1), 1);
	/* both wait, a freeze went last: the exec's turn */
	assert_int_equal(mafsbx_turns_freeze_try(t, &f2, in_ms(100), NULL), -EAGAIN);
	assert_int_equal(f2.why, MAFSBX_TURNS_EXEC_WAITING);
	assert_int_equal(mafsbx_turns_exec_try(t, &e2, in_ms(100), NULL), 0);
	mafsbx_turns_settle(&e2, true);
	mafsbx_turn_unwant(&e2);
	assert_int_equal(mafsbx_turns_freeze_try(t, &f2, in_ms(100), NULL), -EAGAIN);
	assert_int_equal(f2.why, MAFSBX_TURNS_EXEC_RUNNING);
	mafsbx_turn_release(&e2);
	assert_int_equal(mafsbx_turns_freeze_try(t, &f2, in_ms(100), NULL), MAFSBX_TURN_ALONE);
	mafsbx_turns_settle(&f2, true);
	mafsbx_turn_unwant(&f2);
	assert_int_equal(freeze_out(t, &f2), 1);
	static const char *const sfx[] = { "gate", "hold", "exec", "xwant", "fwant" };
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(sfx); i++)
		assert_true(file_free(fx, sfx[i]));
}

/* Fork a child that runs fn(t, arg) and exits 0 on success; `ready` is written once it holds what it must. */
static pid_t child(const struct mafsbx_turns *t, int (*fn)(const struct mafsbx_turns *, int, long), int *ready_rd,
		   long arg)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		_exit(fn(t, p[1], arg));
	}
	close(p[1]);
	*ready_rd = p[0];
	return pid;
}

static void wait_ready(int rd)
{
	char c = 0;
	assert_int_equal(read(rd, &c, 1), 1);
	close(rd);
}

static int child_status(pid_t pid)
{
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* Child: take an exec turn, say so, hold it `ms` (or until killed, ms < 0), end it. */
static int child_exec(const struct mafsbx_turns *t, int ready, long ms)
{
	struct mafsbx_turn x = MAFSBX_TURN_INIT;
	if (exec_in(t, &x, 1000, NULL, NULL) < 0)
		return 1;
	if (write(ready, "x", 1) != 1)
		return 2;
	if (ms < 0)
		for (;;)
			pause();
	sleep_ms(ms);
	mafsbx_turn_release(&x);
	return 0;
}

/* Child: take a freeze turn, say so, hold it `ms` (or until killed), leave it. */
static int child_freeze(const struct mafsbx_turns *t, int ready, long ms)
{
	struct mafsbx_turn f = MAFSBX_TURN_INIT;
	if (freeze_in(t, &f, 1000, NULL) != MAFSBX_TURN_ALONE)
		return 1;
	if (write(ready, "f", 1) != 1)
		return 2;
	if (ms < 0)
		for (;;)
			pause();
	sleep_ms(ms);
	return freeze_out(t, &f) == 1 ? 0 : 3;
}

/* A holder killed with SIGKILL: its turn dies with it and the other side proceeds. */
static void test_dead_holder(void **state)
{
	struct fx *fx = *state;
	int rd;
	pid_t pid = child(&fx->t, child_exec, &rd, -1);
	wait_ready(rd);
	struct mafsbx_turn f = MAFSBX_TURN_INIT, x = MAFSBX_TURN_INIT;
	assert_int_equal(mafsbx_turns_freeze_try(&fx->t, &f, in_ms(100), NULL), -EAGAIN);
	assert_int_equal(f.why, MAFSBX_TURNS_EXEC_RUNNING);
	kill(pid, SIGKILL);
	int st = child_status(pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(freeze_in(&fx->t, &f, 200, NULL), MAFSBX_TURN_ALONE);
	assert_int_equal(freeze_out(&fx->t, &f), 1);

	/* the reverse: a dead freeze holder; the idle probe sees nobody inside */
	pid = child(&fx->t, child_freeze, &rd, -1);
	wait_ready(rd);
	struct mafsbx_turn probe = MAFSBX_TURN_INIT;
	assert_int_equal(mafsbx_turns_idle(&fx->t, &probe, in_ms(100), NULL), 0);
	mafsbx_turn_release(&probe);
	kill(pid, SIGKILL);
	st = child_status(pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(mafsbx_turns_idle(&fx->t, &probe, in_ms(100), NULL), 1);
	mafsbx_turn_release(&probe);
	bool waited = true;
	assert_int_equal(exec_in(&fx->t, &x, 200, &waited, NULL), 0);
	assert_false(waited);
	mafsbx_turn_release(&x);
}

/* A child process as the other side: the parent waits for the child's turn to end, then goes. */
static void test_child_other_side(void **state)
{
	struct fx *fx = *state;
	int rd;
	/* t0 before the child starts: its turn ends >= 40 ms after t0 however
	 * the scheduler delays this thread after wait_ready (taken after it, a
	 * loaded machine's preemption counted as the child's hold, and the wait
	 * measured under 20 ms) */
	long long t0 = mafsbx_now_ms();
	pid_t pid = child(&fx->t, child_exec, &rd, 40);
	wait_ready(rd);
	struct mafsbx_turn f = MAFSBX_TURN_INIT, x = MAFSBX_TURN_INIT;
	assert_int_equal(freeze_in(&fx->t, &f, 2000, NULL), MAFSBX_TURN_ALONE);
	assert_true(mafsbx_now_ms() - t0 >= 20);
	assert_true(file_free(fx, "exec"));
	assert_int_equal(freeze_out(&fx->t, &f), 1);
	int st = child_status(pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* the reverse: the child holds a freeze turn, the parent wants an exec turn */
	t0 = mafsbx_now_ms();
	pid = child(&fx->t, child_freeze, &rd, 40);
	wait_ready(rd);
	bool waited = false;
	assert_int_equal(exec_in(&fx->t, &x, 2000, &waited, NULL), 0);
	assert_true(waited);
	assert_true(mafsbx_now_ms() - t0 >= 20);
	assert_true(file_free(fx, "hold"));
	mafsbx_turn_release(&x);
	st = child_status(pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

#define ROUNDS 25

/* Child: ROUNDS exec turns in a row, each held 1 ms; exits 0 when every one went before its deadline. */
static int child_exec_loop(const struct mafsbx_turns *t, int ready, long rounds)
{
	if (write(ready, "x", 1) != 1)
		return 2;
	for (long i = 0; i < rounds; i++) {
		struct mafsbx_turn x = MAFSBX_TURN_INIT;
		if (exec_in(t, &x, 2000, NULL, NULL) < 0)
			return 1;
		sleep_ms(1);
		mafsbx_turn_release(&x);
	}
	return 0;
}

/* A freeze loop and an exec loop (another process) both keep wanting: neither starves. */
static void test_neither_starves(void **state)
{
	struct fx *fx = *state;
	int rd;
	pid_t pid = child(&fx->t, child_exec_loop, &rd, ROUNDS);
	wait_ready(rd);
	long long t0 = mafsbx_now_ms();
	for (int i = 0; i < ROUNDS; i++) {
		struct mafsbx_turn f = MAFSBX_TURN_INIT;
		struct mafsbx_error err;
		mafsbx_error_clear(&err);
		int r = freeze_in(&fx->t, &f, 2000, &err);
		if (r < 0)
			fail_msg("freeze turn %d: %s", i, err.message);
		sleep_ms(1);
		freeze_out(&fx->t, &f);
	}
	int st = child_status(pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_true(mafsbx_now_ms() - t0 < 1000);
}

static bool say_no(void *ctx)
{
	(*(int *)ctx)++;
	return false;
}

/* The lock files go only when nobody holds any of them (and the confirmation agrees). */
static void test_remove(void **state)
{
	struct fx *fx = *state;
	struct mafsbx_turn x = MAFSBX_TURN_INIT;
	assert_int_equal(exec_in(&fx->t, &x, 100, NULL, NULL), 0);
	int asked = 0;
	assert_int_equal(mafsbx_turns_remove(&fx->t, say_no, &asked), 0);
	assert_int_equal(asked, 0); /* busy: not even asked */
	mafsbx_turn_release(&x);
	assert_int_equal(mafsbx_turns_remove(&fx->t, say_no, &asked), 0);
	assert_int_equal(asked, 1);
	char p[PATH_MAX];
	mafsbx_turns_path(&fx->t, "gate", p, sizeof(p));
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(mafsbx_turns_remove(&fx->t, NULL, NULL), 1);
	assert_int_equal(access(p, F_OK), -1);
	mafsbx_turns_path(&fx->t, "exec", p, sizeof(p));
	assert_int_equal(access(p, F_OK), -1);
}

struct hook_ctx {
	unsigned befores, waits;
	bool allow;
};

static bool hook_before(void *ctx, unsigned long long *token)
{
	struct hook_ctx *h = ctx;
	*token = ++h->befores;
	return h->allow;
}

static void hook_wait(void *ctx, unsigned long long token, long long until_ms)
{
	struct hook_ctx *h = ctx;
	assert_int_equal(token, h->befores);
	assert_true(until_ms <= mafsbx_now_ms() + 10);
	h->waits++;
	sleep_ms(1);
}

/* A caller busy with the key itself (before() says no) never tries, and waits through its hook. */
static void test_hooks(void **state)
{
	struct fx *fx = *state;
	struct hook_ctx h = { 0, 0, false };
	const struct mafsbx_turns_hooks hooks = { hook_before, hook_wait, &h };
	struct mafsbx_turn x = MAFSBX_TURN_INIT;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	assert_int_equal(mafsbx_turns_exec_wait(&fx->t, &x, in_ms(20), &hooks, NULL, &err), -ETIMEDOUT);
	assert_true(h.befores >= 2);
	assert_true(h.waits >= 1);
	assert_true(file_free(fx, "exec"));
	h.allow = true;
	assert_int_equal(mafsbx_turns_exec_wait(&fx->t, &x, in_ms(20), &hooks, NULL, &err), 0);
	mafsbx_turns_settle(&x, true);
	mafsbx_turn_release(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bad_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_file_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_freezes_join, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_reentry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_turns_alternate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_holder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_child_other_side, setup, teardown),
		cmocka_unit_test_setup_teardown(test_neither_starves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hooks, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
