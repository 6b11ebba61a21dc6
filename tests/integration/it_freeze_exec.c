/*
 * it_freeze_exec.c: freezes and execs of one container exclude each other
 * (freeze.h), against the real dockerd.
 *
 * Why it matters: a pause issued while an exec process starts or exits
 * wedges containerd 1.6 (dockerd 20.10) for good, so the freezer must never
 * pause while an exec of ours is in flight, and an exec must never start in
 * a freeze.
 *
 * - In one process: a thread runs a stream of short execs while 4 threads
 *   do frozen stats and reads of the same container for about 10 s. The
 *   freezer's debug counter of overlaps stays 0, every call succeeds (or is
 *   refused only with the documented EBUSY), and the container afterwards
 *   answers inspect and is not paused.
 * - A long exec makes a freeze with a short deadline fail EBUSY with the
 *   documented message (nothing paused), and one with a longer deadline
 *   succeed after the exec ended; a held freeze makes an exec registration
 *   time out, then succeed after the leave.
 * - A freeze enter waiting behind a long exec gives up with EINTR, nothing
 *   paused, soon after its thread's cancellation flag is set (cancel.h: the
 *   daemon's caller was killed), whether it polls for the exec or waits for
 *   the thread that polls.
 * - Across processes: a child process (this program re-executed with
 *   "--exec-child ID RUNDIR") holding an exec makes the parent's freeze
 *   wait for it; a child holding a freeze ("--freeze-child ID RUNDIR")
 *   makes the parent's exec registration wait for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "cancel.h"
#include "engine.h"
#include "files.h"
#include "freeze.h"
#include "harness.h"

/*
 * The storm runs at least STORM_MS, then until both sides made STORM_MIN
 * rounds (and the freezer paused STORM_MIN / 2 times), at most STORM_MAX_MS:
 * progress, not speed, is what is asserted, so a slow (loaded) engine makes
 * the storm longer, while a side that starves still fails it.
 */
#define STORM_MS 10000
#define STORM_MAX_MS 60000
#define STORM_MIN 10
#define READERS 4

static char rundir[HARNESS_RUNDIR_MAX];
static char cname[HARNESS_NAME_MAX];
static char cid[65];
static struct mafsbx_freezer *fz;

/* ---- helpers ------------------------------------------------------------ */

static bool is_paused(const char *id)
{
	/* a short engine timeout: a wedged container would hang a plain inspect */
	struct mafsbx_engine_timeouts to = { .connect_ms = 5000, .request_ms = 10000 };
	struct mafsbx_engine *e = harness_engine_with(&to);
	json_t *j = NULL;
	struct mafsbx_error err;
	int r = mafsbx_container_inspect(e, id, &j, &err);
	mafsbx_engine_close(e);
	harness_check(r, &err, "inspect (the container must answer promptly)");
	json_t *st = json_object_get(j, "State");
	bool running = json_is_true(json_object_get(st, "Running"));
	bool p = json_is_true(json_object_get(st, "Paused"));
	json_decref(j);
	assert_true(running);
	return p;
}

/* One exec registered with the freezer, as mafsbx_sbx_exec runs it. Exit code, or -1 with *err set. */
static int exec_registered(struct mafsbx_freezer *f, struct mafsbx_engine *eng, const char *id,
			   const char *const *argv, long timeout_ms, atomic_int *in_flight, long long *waited_ms,
			   long long *ran_ms, struct mafsbx_error *err)
{
	struct mafsbx_freeze_exec *x = NULL;
	long long t0 = mafsbx_now_ms(), deadline = t0 + timeout_ms;
	if (mafsbx_freeze_exec_begin(f, id, deadline, &x, err) < 0)
		return -1;
	long long t1 = mafsbx_now_ms();
	if (waited_ms)
		*waited_ms += t1 - t0;
	if (in_flight)
		atomic_store(in_flight, 1);
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = timeout_ms, .max_output = 4096 };
	struct mafsbx_exec_result res;
	int r = mafsbx_exec_run(eng, id, &rq, &res, err);
	if (ran_ms)
		*ran_ms += mafsbx_now_ms() - t1;
	int code = r < 0 ? -1 : res.exit_code;
	mafsbx_exec_result_free(&res);
	if (in_flight)
		atomic_store(in_flight, 2); /* ended, still registered: a freeze cannot have started yet */
	mafsbx_freeze_exec_end(x);
	return code;
}

static bool busy_refusal(int r, const struct mafsbx_error *e)
{
	return r == -EBUSY && e->kind == MAFSBX_EK_CONFLICT && e->err == EBUSY &&
	       strstr(e->message, "an exec is") && strstr(e->message, "retry when it ends");
}

/* ---- 1. a storm of execs and frozen calls in one process ----------------- */

struct storm {
	atomic_bool stop;
	atomic_uint execs_ok, execs_bad;
	atomic_uint calls_ok, calls_busy, calls_bad;
	long long exec_wait_ms, exec_run_ms;    /* the exec thread's own */
	atomic_llong call_ms;
	char bad_msg[MAFSBX_ERR_MSG_MAX];
	pthread_mutex_t mu;
};

static void storm_note_bad(struct storm *s, const char *what, const struct mafsbx_error *e)
{
	pthread_mutex_lock(&s->mu);
	if (!s->bad_msg[0])
		snprintf(s->bad_msg, sizeof(s->bad_msg), "%s: %s (%s)", what, e->message, mafsbx_errno_name(e->err));
	pthread_mutex_unlock(&s->mu);
}

static void *storm_execs(void *arg)
{
	struct storm *s = arg;
	const char *const a_true[] = { "true", NULL };
	const char *const a_sleep[] = { "sh", "-c", "sleep 0.05", NULL };
	for (unsigned i = 0; !atomic_load(&s->stop); i++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		int code = exec_registered(fz, harness_engine(), cid, i % 2 ? a_sleep : a_true, 20000, NULL,
					   &s->exec_wait_ms, &s->exec_run_ms, &e);
		if (code == 0) {
			atomic_fetch_add(&s->execs_ok, 1);
		} else {
			atomic_fetch_add(&s->execs_bad, 1);
			if (code > 0)
				mafsbx_error_set(&e, MAFSBX_EK_ENGINE, "exited %d", code);
			storm_note_bad(s, "exec", &e);
		}
	}
	return NULL;
}

static void *storm_reader(void *arg)
{
	struct storm *s = arg;
	struct mafsbx_files_target t = { .container = cid, .work_dir = "/", .uid = 0, .gid = 0 };
	for (unsigned i = 0; !atomic_load(&s->stop); i++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		long long t0 = mafsbx_now_ms(), deadline = t0 + 5000;
		int r;
		if (i % 2) {
			struct mafsbx_fstat st;
			r = mafsbx_files_stat(fz, &t, "etc/passwd", deadline, &st, &e);
			if (r == 0 && st.kind != MAFSBX_FK_FILE)
				r = mafsbx_error_set(&e, MAFSBX_EK_PROTOCOL, "stat: /etc/passwd is not a file (%d)", st.kind);
		} else {
			struct mafsbx_buf b = MAFSBX_BUF_INIT;
			struct mafsbx_read_info ri;
			r = mafsbx_files_read(fz, &t, "etc/passwd", 65536, -1, &b, deadline, &ri, &e);
			if (r == 0 && (!b.data || !strstr(b.data, "root:")))
				r = mafsbx_error_set(&e, MAFSBX_EK_PROTOCOL, "read: /etc/passwd has no root line");
			mafsbx_buf_free(&b);
		}
		atomic_fetch_add(&s->call_ms, mafsbx_now_ms() - t0);
		if (r == 0) {
			atomic_fetch_add(&s->calls_ok, 1);
		} else if (busy_refusal(r, &e)) {
			atomic_fetch_add(&s->calls_busy, 1);
		} else {
			atomic_fetch_add(&s->calls_bad, 1);
			storm_note_bad(s, "file call", &e);
		}
	}
	return NULL;
}

static void test_storm_in_process(void **state)
{
	(void)state;
	struct storm s = { 0 };
	pthread_mutex_init(&s.mu, NULL);
	struct mafsbx_freeze_stats before, after;
	mafsbx_freezer_stats(fz, &before);
	pthread_t ex, rd[READERS];
	pthread_create(&ex, NULL, storm_execs, &s);
	for (int i = 0; i < READERS; i++)
		pthread_create(&rd[i], NULL, storm_reader, &s);
	long long t0 = mafsbx_now_ms();
	for (;;) {
		usleep(100 * 1000);
		long long ran = mafsbx_now_ms() - t0;
		struct mafsbx_freeze_stats now;
		mafsbx_freezer_stats(fz, &now);
		bool enough = atomic_load(&s.execs_ok) >= STORM_MIN && atomic_load(&s.calls_ok) >= STORM_MIN &&
			      now.pauses - before.pauses >= STORM_MIN / 2;
		if ((ran >= STORM_MS && enough) || ran >= STORM_MAX_MS)
			break;
	}
	long long storm_ms = mafsbx_now_ms() - t0;
	atomic_store(&s.stop, true);
	pthread_join(ex, NULL);
	for (int i = 0; i < READERS; i++)
		pthread_join(rd[i], NULL);
	mafsbx_freezer_stats(fz, &after);
	pthread_mutex_destroy(&s.mu);
	unsigned long long pauses = after.pauses - before.pauses, begins = after.exec_begins - before.exec_begins;
	print_message("# storm %lld ms: %u execs ok, %u file calls ok, %u refused busy; %llu pauses, %llu exec "
		      "registrations (%llu waited), %llu freeze deferrals, %llu joins, %llu overlaps\n",
		      storm_ms, atomic_load(&s.execs_ok), atomic_load(&s.calls_ok), atomic_load(&s.calls_busy),
		      pauses, begins, (unsigned long long)(after.exec_waits - before.exec_waits),
		      (unsigned long long)(after.exec_deferrals - before.exec_deferrals),
		      (unsigned long long)(after.joins - before.joins),
		      (unsigned long long)(after.exec_overlaps - before.exec_overlaps));
	unsigned n_ex = atomic_load(&s.execs_ok) + atomic_load(&s.execs_bad);
	unsigned n_calls = atomic_load(&s.calls_ok) + atomic_load(&s.calls_busy) + atomic_load(&s.calls_bad);
	print_message("# per exec: %lld ms waiting for freezes, %lld ms running; per file call: %lld ms\n",
		      n_ex ? s.exec_wait_ms / n_ex : 0, n_ex ? s.exec_run_ms / n_ex : 0,
		      n_calls ? (long long)atomic_load(&s.call_ms) / n_calls : 0);
	if (atomic_load(&s.execs_bad) || atomic_load(&s.calls_bad))
		fail_msg("%u execs and %u file calls failed; first: %s", atomic_load(&s.execs_bad),
			 atomic_load(&s.calls_bad), s.bad_msg);
	/* the storm really interleaved both sides: neither starved for STORM_MAX_MS */
	assert_true(atomic_load(&s.execs_ok) >= STORM_MIN);
	assert_true(atomic_load(&s.calls_ok) >= STORM_MIN);
	assert_true(pauses >= STORM_MIN / 2);
	assert_int_equal(begins, atomic_load(&s.execs_ok));
	assert_true(after.exec_waits - before.exec_waits + after.exec_deferrals - before.exec_deferrals > 0);
	/* no pause ever overlapped an exec */
	assert_int_equal(after.exec_overlaps, 0);
	assert_int_equal(after.unpause_failures - before.unpause_failures, 0);
	assert_int_equal(after.pauses - before.pauses, after.unpauses - before.unpauses);
	/* the container answers promptly and runs */
	assert_false(is_paused(cid));
	int code = -1;
	assert_int_equal(harness_sh(cname, "true", &code), 0);
	assert_int_equal(code, 0);
}

/* ---- 2. a long exec against freeze deadlines, and the other way round --- */

struct long_exec {
	atomic_int in_flight;     /* 0 not yet, 1 running, 2 ended (still registered) */
	int code;
	struct mafsbx_error err;
	const char *const *argv;
};

static void *long_exec_thread(void *arg)
{
	struct long_exec *l = arg;
	mafsbx_error_clear(&l->err);
	l->code = exec_registered(fz, harness_engine(), cid, l->argv, 30000, &l->in_flight, NULL, NULL, &l->err);
	return NULL;
}

static void wait_flag(atomic_int *flag, int value)
{
	long long until = mafsbx_now_ms() + 20000;
	while (atomic_load(flag) < value) {
		if (mafsbx_now_ms() > until)
			fail_msg("the exec thread never got to state %d", value);
		usleep(2000);
	}
}

static void test_long_exec_refuses_then_admits(void **state)
{
	(void)state;
	const char *const argv[] = { "sleep", "3", NULL };
	struct long_exec l = { .argv = argv };
	pthread_t th;
	pthread_create(&th, NULL, long_exec_thread, &l);
	wait_flag(&l.in_flight, 1);
	struct mafsbx_freeze_stats before, after;
	mafsbx_freezer_stats(fz, &before);

	/* 1 s is not enough: refused with the documented message, nothing paused */
	struct mafsbx_freeze *h = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_freeze_enter(fz, cid, mafsbx_now_ms() + 1000, &h, &e);
	if (r != -EBUSY)
		fail_msg("a freeze during a 3 s exec gave %d (%s), expected EBUSY", r, e.message);
	assert_null(h);
	assert_int_equal(e.kind, MAFSBX_EK_CONFLICT);
	assert_int_equal(e.err, EBUSY);
	char want[200];
	snprintf(want, sizeof(want), "an exec is running in sandbox %s; retry when it ends", cid);
	if (!strstr(e.message, want))
		fail_msg("unexpected message: %s", e.message);
	assert_int_equal(atomic_load(&l.in_flight), 1); /* the exec was still running */
	assert_false(is_paused(cid));
	/* the same through the file plane */
	struct mafsbx_files_target t = { .container = cid, .work_dir = "/", .uid = 0, .gid = 0 };
	struct mafsbx_fstat st;
	mafsbx_error_clear(&e);
	r = mafsbx_files_stat(fz, &t, "etc/passwd", mafsbx_now_ms() + 300, &st, &e);
	if (!busy_refusal(r, &e))
		fail_msg("a stat during the exec gave %d (%s), expected the EBUSY refusal", r, e.message);

	/* 10 s is: it gets in once the exec ended, never before */
	mafsbx_error_clear(&e);
	harness_check(mafsbx_freeze_enter(fz, cid, mafsbx_now_ms() + 10000, &h, &e), &e, "freeze after the exec");
	assert_int_equal(atomic_load(&l.in_flight), 2);
	assert_true(is_paused(cid));
	mafsbx_freeze_leave(h);
	pthread_join(th, NULL);
	if (l.code != 0)
		fail_msg("the sleep exec gave %d: %s", l.code, l.err.message);
	mafsbx_freezer_stats(fz, &after);
	assert_int_equal(after.exec_refusals - before.exec_refusals, 2);
	assert_int_equal(after.pauses - before.pauses, 1);
	assert_int_equal(after.exec_overlaps, 0);
	assert_false(is_paused(cid));
}

/* A freeze enter that watches `cancel`: its result and when it returned. */
struct cancelled_enter {
	atomic_bool cancel;
	int r;
	struct mafsbx_error err;
	long long done_ms;
};

static void *cancelled_enter_thread(void *arg)
{
	struct cancelled_enter *c = arg;
	struct mafsbx_freeze *h = NULL;
	mafsbx_error_clear(&c->err);
	mafsbx_cancel_watch(&c->cancel);
	c->r = mafsbx_freeze_enter(fz, cid, mafsbx_now_ms() + 20000, &h, &c->err);
	mafsbx_cancel_watch(NULL);
	c->done_ms = mafsbx_now_ms();
	mafsbx_freeze_leave(h);
	return NULL;
}

static void test_cancelled_enter_gives_up(void **state)
{
	(void)state;
	const char *const argv[] = { "sleep", "4", NULL };
	struct long_exec l = { .argv = argv };
	pthread_t th, w[2];
	pthread_create(&th, NULL, long_exec_thread, &l);
	wait_flag(&l.in_flight, 1);
	/* two waiters: one polls for the exec, the other waits for it */
	struct cancelled_enter c[2];
	for (int i = 0; i < 2; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		atomic_init(&c[i].cancel, false);
		pthread_create(&w[i], NULL, cancelled_enter_thread, &c[i]);
	}
	usleep(500 * 1000);
	long long t0 = mafsbx_now_ms();
	for (int i = 0; i < 2; i++)
		atomic_store(&c[i].cancel, true);
	for (int i = 0; i < 2; i++) {
		pthread_join(w[i], NULL);
		if (c[i].r != -EINTR)
			fail_msg("a cancelled freeze enter gave %d (%s), expected EINTR", c[i].r, c[i].err.message);
		assert_int_equal(c[i].err.err, EINTR);
		/* generous for a loaded machine: the exec alone would hold it 3.5 s more */
		if (c[i].done_ms - t0 > 2500)
			fail_msg("a cancelled freeze enter took %lld ms to give up", c[i].done_ms - t0);
	}
	assert_int_equal(atomic_load(&l.in_flight), 1); /* the exec still runs */
	assert_false(is_paused(cid));
	pthread_join(th, NULL);
	if (l.code != 0)
		fail_msg("the sleep exec gave %d: %s", l.code, l.err.message);
	assert_false(is_paused(cid));
}

struct holder {
	atomic_int held;          /* 1 holding, 2 left */
	long ms;
};

static void *freeze_holder(void *arg)
{
	struct holder *hd = arg;
	struct mafsbx_freeze *h = NULL;
	struct mafsbx_error e;
	if (mafsbx_freeze_enter(fz, cid, 0, &h, &e) < 0) {
		fprintf(stderr, "holder: %s\n", e.message);
		atomic_store(&hd->held, -1);
		return NULL;
	}
	atomic_store(&hd->held, 1);
	usleep((useconds_t)hd->ms * 1000);
	atomic_store(&hd->held, 2);
	mafsbx_freeze_leave(h);
	return NULL;
}

static void test_held_freeze_delays_exec(void **state)
{
	(void)state;
	struct holder hd = { .ms = 1500 };
	pthread_t th;
	pthread_create(&th, NULL, freeze_holder, &hd);
	long long until = mafsbx_now_ms() + 20000;
	while (atomic_load(&hd.held) == 0 && mafsbx_now_ms() < until)
		usleep(2000);
	assert_int_equal(atomic_load(&hd.held), 1);
	/* a short deadline: a clear timeout naming the container, nothing registered */
	struct mafsbx_freeze_exec *x = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_freeze_exec_begin(fz, cid, mafsbx_now_ms() + 300, &x, &e);
	if (r != -ETIMEDOUT)
		fail_msg("an exec registration inside a held freeze gave %d (%s), expected ETIMEDOUT", r, e.message);
	assert_null(x);
	assert_int_equal(e.kind, MAFSBX_EK_TIMEOUT);
	assert_non_null(strstr(e.message, cid));
	/* a long one: registered only after the leave, and the exec runs */
	const char *const argv[] = { "true", NULL };
	mafsbx_error_clear(&e);
	int code = exec_registered(fz, harness_engine(), cid, argv, 20000, NULL, NULL, NULL, &e);
	assert_int_equal(atomic_load(&hd.held), 2);
	if (code != 0)
		fail_msg("exec after the freeze gave %d: %s", code, e.message);
	pthread_join(th, NULL);
	struct mafsbx_freeze_stats st;
	mafsbx_freezer_stats(fz, &st);
	assert_int_equal(st.exec_overlaps, 0);
}

/* ---- 3. across processes ------------------------------------------------- */

/* The exec child: one registered `sleep 2`. */
static int exec_child(struct mafsbx_engine *e, struct mafsbx_freezer *f, const char *id)
{
	struct mafsbx_error err;
	struct mafsbx_freeze_exec *x = NULL;
	if (mafsbx_freeze_exec_begin(f, id, mafsbx_now_ms() + 20000, &x, &err) < 0) {
		fprintf(stderr, "child: %s\n", err.message);
		return 4;
	}
	if (write(1, "R", 1) != 1)
		return 5;
	const char *const argv[] = { "sleep", "2", NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 20000 };
	struct mafsbx_exec_result res;
	int r = mafsbx_exec_run(e, id, &rq, &res, &err);
	int code = r < 0 ? -1 : res.exit_code;
	mafsbx_exec_result_free(&res);
	/* "done" goes out while still registered: the parent's freeze can only start after it */
	if (write(1, "D", 1) != 1)
		return 5;
	mafsbx_freeze_exec_end(x);
	return code == 0 ? 0 : 6;
}

/* The freeze child: one freeze held 1.5 s ("F" once in, "L" just before the leave). */
static int freeze_child(struct mafsbx_engine *e, struct mafsbx_freezer *f, const char *id)
{
	struct mafsbx_error err;
	struct mafsbx_freeze *h = NULL;
	if (mafsbx_freeze_enter(f, id, mafsbx_now_ms() + 20000, &h, &err) < 0) {
		fprintf(stderr, "child: %s\n", err.message);
		return 4;
	}
	if (write(1, "F", 1) != 1)
		return 5;
	usleep(1500 * 1000);
	if (write(1, "L", 1) != 1)
		return 5;
	mafsbx_freeze_leave(h);
	return 0;
}

/* A child process: its own engine and freezer over the same runtime directory, then its role. */
static int run_child(int (*role)(struct mafsbx_engine *, struct mafsbx_freezer *, const char *), const char *id,
		     const char *dir)
{
	struct mafsbx_engine *e;
	struct mafsbx_freezer *f;
	int rc = harness_child_freezer(dir, &e, &f);
	if (rc)
		return rc;
	rc = role(e, f, id);
	harness_child_close(e, f);
	return rc;
}

/* Start this program as `mode` child with its stdout on a pipe; wait for its first byte `first`. */
static pid_t spawn_child(const char *mode, char first, int *rfd)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl("/proc/self/exe", "it_freeze_exec", mode, cid, rundir, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	struct pollfd pf = { .fd = p[0], .events = POLLIN };
	char c = 0;
	if (poll(&pf, 1, 20000) != 1 || read(p[0], &c, 1) != 1 || c != first)
		fail_msg("the %s process never got going", mode);
	*rfd = p[0];
	return pid;
}

static void reap_child(pid_t pid, int rfd)
{
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child failed (status %d)", status);
	close(rfd);
}

static void test_cross_process_exec_delays_freeze(void **state)
{
	(void)state;
	int rfd;
	pid_t pid = spawn_child("--exec-child", 'R', &rfd);
	struct pollfd pf = { .fd = rfd, .events = POLLIN };
	char c = 0;
	struct mafsbx_freeze_stats before, after;
	mafsbx_freezer_stats(fz, &before);
	struct mafsbx_freeze *h = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	harness_check(mafsbx_freeze_enter(fz, cid, mafsbx_now_ms() + 15000, &h, &e), &e,
		      "freeze while another process's exec runs");
	/* in only after the child's exec ended */
	if (poll(&pf, 1, 0) != 1 || read(rfd, &c, 1) != 1 || c != 'D')
		fail_msg("the freeze started while the other process's exec was still running");
	assert_true(is_paused(cid));
	mafsbx_freeze_leave(h);
	mafsbx_freezer_stats(fz, &after);
	assert_true(after.exec_deferrals - before.exec_deferrals >= 1);
	reap_child(pid, rfd);
	assert_false(is_paused(cid));
}

static void test_cross_process_freeze_delays_exec(void **state)
{
	(void)state;
	int rfd;
	pid_t pid = spawn_child("--freeze-child", 'F', &rfd);
	assert_true(is_paused(cid));
	struct mafsbx_freeze_stats before, after;
	mafsbx_freezer_stats(fz, &before);
	const char *const argv[] = { "true", NULL };
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_freeze_exec *x = NULL;
	harness_check(mafsbx_freeze_exec_begin(fz, cid, mafsbx_now_ms() + 15000, &x, &e), &e,
		      "exec registration while another process holds a freeze");
	/* registered only after the other process's freeze ended */
	struct pollfd pf = { .fd = rfd, .events = POLLIN };
	char c = 0;
	if (poll(&pf, 1, 0) != 1 || read(rfd, &c, 1) != 1 || c != 'L')
		fail_msg("the exec registered while the other process's freeze was held");
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 20000 };
	struct mafsbx_exec_result res;
	int r = mafsbx_exec_run(harness_engine(), cid, &rq, &res, &e);
	mafsbx_freeze_exec_end(x);
	harness_check(r, &e, "exec after the other process's freeze");
	assert_int_equal(res.exit_code, 0);
	mafsbx_exec_result_free(&res);
	mafsbx_freezer_stats(fz, &after);
	assert_int_equal(after.exec_waits - before.exec_waits, 1);
	reap_child(pid, rfd);
	assert_false(is_paused(cid));
}

/* ---- main ----------------------------------------------------------------- */

static int group_setup(void **state)
{
	(void)state;
	harness_container("fzx", cname);
	json_t *j = NULL;
	struct mafsbx_error err;
	harness_check(mafsbx_container_inspect(harness_engine(), cname, &j, &err), &err, "inspect");
	snprintf(cid, sizeof(cid), "%s", json_string_value(json_object_get(j, "Id")));
	json_decref(j);
	fz = mafsbx_freezer_new(harness_engine(), rundir, &err);
	if (!fz) {
		fprintf(stderr, "freezer: %s\n", err.message);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (fz) {
		struct mafsbx_freeze_stats s;
		mafsbx_freezer_stats(fz, &s);
		print_message("# freezer: %llu enters, %llu pauses, %llu unpauses, %llu exec registrations, %llu "
			      "refusals, %llu overlaps\n",
			      (unsigned long long)s.enters, (unsigned long long)s.pauses,
			      (unsigned long long)s.unpauses, (unsigned long long)s.exec_begins,
			      (unsigned long long)s.exec_refusals, (unsigned long long)s.exec_overlaps);
		mafsbx_freezer_free(fz);
		fz = NULL;
	}
	harness_cleanup();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--exec-child") == 0)
		return run_child(exec_child, argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "--freeze-child") == 0)
		return run_child(freeze_child, argv[2], argv[3]);
	harness_init();
	harness_rundir("fzx", rundir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_storm_in_process),
		cmocka_unit_test(test_long_exec_refuses_then_admits),
		cmocka_unit_test(test_cancelled_enter_gives_up),
		cmocka_unit_test(test_held_freeze_delays_exec),
		cmocka_unit_test(test_cross_process_exec_delays_freeze),
		cmocka_unit_test(test_cross_process_freeze_delays_exec),
	};
	int r = cmocka_run_group_tests(tests, group_setup, group_teardown);
	harness_rundir_remove(rundir);
	return r;
}
