/*
 * turns.c: freezes and execs of one key take turns across processes
 * (turns.h): the lock files and the state machine deciding who goes.
 *
 * A flock conversion (EX -> SH) is not atomic, which is why every
 * conversion and every exclusive probe happens only under the gate.
 */
#include "turns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"

/* Re-check interval of a wait for another process (changes the hooks know of wake it at once). */
#define POLL_FAST_MS 2
#define POLL_SLOW_MS 10
#define POLL_FAST_ROUNDS 25

static const char *const suffixes[] = { "hold", "exec", "xwant", "fwant" };

int mafsbx_turns_init(struct mafsbx_turns *t, const char *dir, const char *key, const char *name,
		      struct mafsbx_error *err)
{
	if (!dir || !key || !*key || strchr(key, '/'))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "turns: bad key %s", key ? key : "(none)");
	/* room for ".xwant" */
	if ((size_t)snprintf(t->prefix, sizeof(t->prefix), "%s/%s", dir, key) + 8 > sizeof(t->prefix))
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, ENAMETOOLONG, NULL,
					     "turns: lock file name too long under %s", dir);
	t->name = name ? name : key;
	return 0;
}

void mafsbx_turns_path(const struct mafsbx_turns *t, const char *suffix, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s.%s", t->prefix, suffix);
}

long mafsbx_turns_poll_ms(unsigned round)
{
	return round < POLL_FAST_ROUNDS ? POLL_FAST_MS : POLL_SLOW_MS;
}

/*
 * A lock file is a regular file with no other name (a hard link would let
 * whoever made it have the marker written over another file: root's thaw
 * works in every user's runtime directory). One that root just made in
 * another user's directory is given to that user, whose own mounts open it
 * next. 0 or -errno.
 */
static int lock_file_fit(const struct mafsbx_turns *t, int fd)
{
	struct stat st, dir;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* 0 links: unlinked by a collection since we opened it, which the callers handle */
	if (!S_ISREG(st.st_mode) || st.st_nlink > 1)
		return -EPERM;
	if (geteuid() != 0 || st.st_uid != 0)
		return 0;
	char d[PATH_MAX];
	snprintf(d, sizeof(d), "%s", t->prefix);
	char *slash = strrchr(d, '/');
	if (!slash || slash == d)
		return 0;
	*slash = '\0';
	if (stat(d, &dir) < 0)
		return -errno;
	if (dir.st_uid != 0 && fchown(fd, dir.st_uid, dir.st_gid) < 0)
		return -errno;
	return 0;
}

static int open_lock(const struct mafsbx_turns *t, const char *suffix, struct mafsbx_error *err)
{
	char p[PATH_MAX];
	mafsbx_turns_path(t, suffix, p, sizeof(p));
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "cannot open lock file %s: %s", p,
					     strerror(errno));
	int r = lock_file_fit(t, fd);
	if (r < 0) {
		close(fd);
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, -r, NULL, "lock file %s: %s", p,
					     r == -EPERM ? "not a regular file of its own (a link to another file?)"
							 : strerror(-r));
	}
	return fd;
}

/* flock with a deadline: non-blocking attempts with short sleeps. */
static int flock_until(int fd, int op, long long deadline_ms, const char *what, struct mafsbx_error *err)
{
	unsigned spins = 0;
	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "flock %s: %s", what,
						     strerror(errno));
		if (mafsbx_now_ms() >= deadline_ms)
			return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "timed out waiting for the freeze lock of %s",
						what);
		struct timespec ts = { 0, (spins++ < 50 ? 1 : 5) * 1000000L };
		nanosleep(&ts, NULL);
	}
}

/* Open and take the gate (LOCK_EX) into turn->gate. */
static int gate_take(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
		     struct mafsbx_error *err)
{
	int gate = open_lock(t, "gate", err);
	if (gate < 0)
		return gate;
	int r = flock_until(gate, LOCK_EX, deadline_ms, t->name, err);
	if (r < 0) {
		close(gate);
		return r;
	}
	turn->gate = gate;
	return 0;
}

static void gate_give(struct mafsbx_turn *turn)
{
	if (turn->gate >= 0) {
		flock(turn->gate, LOCK_UN);
		close(turn->gate);
		turn->gate = -1;
	}
}

static void drop(int *fd)
{
	if (*fd >= 0) {
		flock(*fd, LOCK_UN);
		close(*fd);
		*fd = -1;
	}
}

/* Under the gate: does no live descriptor (this process's included) hold `fd`'s file? */
static bool lock_free(int fd)
{
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return false;
	flock(fd, LOCK_UN);
	return true;
}

/* Under the gate: which side started a phase last ('f', 'e', or 0 when unknown). */
static char read_last(int exec_fd)
{
	char c = 0;
	if (pread(exec_fd, &c, 1, 0) != 1 || (c != 'f' && c != 'e'))
		c = 0;
	return c;
}

static void write_last(int exec_fd, char side)
{
	if (pwrite(exec_fd, &side, 1, 0) != 1)
		log_warn("freeze: cannot record the exec/freeze turn: %s", strerror(errno));
}

/* Take a SH lock on a "want" file without waiting (under the gate nobody holds it EX). */
static void want_lock(const struct mafsbx_turns *t, struct mafsbx_turn *turn, const char *suffix)
{
	if (turn->want >= 0)
		return;
	int fd = open_lock(t, suffix, NULL);
	if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0) {
		close(fd);
		fd = -1;
	}
	turn->want = fd;
}

/* Under the gate, hold file `hold` held by someone: join the freeze in force. */
static int freeze_join(const struct mafsbx_turns *t, struct mafsbx_turn *turn, int hold, struct mafsbx_error *err)
{
	if (flock(hold, LOCK_SH | LOCK_NB) < 0) {
		int r = mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "flock the hold file of %s: %s",
					      t->name, strerror(errno));
		close(hold);
		gate_give(turn);
		return r;
	}
	turn->hold = hold;
	return MAFSBX_TURN_JOINED;
}

int mafsbx_turns_freeze_try(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			    struct mafsbx_error *err)
{
	__do_close int xf = open_lock(t, "exec", err);
	if (xf < 0)
		return xf;
	__do_close int xw = open_lock(t, "xwant", err);
	if (xw < 0)
		return xw;
	int r = gate_take(t, turn, deadline_ms, err);
	if (r < 0)
		return r;
	/* an exec in flight anywhere on the host: never freeze now */
	if (!lock_free(xf)) {
		turn->why = MAFSBX_TURNS_EXEC_RUNNING;
		goto busy;
	}
	bool exec_waits = !lock_free(xw);
	int hold = open_lock(t, "hold", err);
	if (hold < 0) {
		gate_give(turn);
		return hold;
	}
	if (flock(hold, LOCK_EX | LOCK_NB) < 0) {
		/* someone is inside a freeze: join it, unless an exec waits for it to drain */
		if (!exec_waits)
			return freeze_join(t, turn, hold, err);
		close(hold);
		turn->why = MAFSBX_TURNS_EXEC_WAITING;
		goto busy;
	}
	if (exec_waits && read_last(xf) == 'f') {
		/* both sides wait and a freeze went last: the exec's turn */
		flock(hold, LOCK_UN);
		close(hold);
		turn->why = MAFSBX_TURNS_EXEC_WAITING;
		goto busy;
	}
	write_last(xf, 'f');
	turn->hold = hold;
	return MAFSBX_TURN_ALONE;
busy:
	want_lock(t, turn, "fwant");
	gate_give(turn);
	return -EAGAIN;
}

int mafsbx_turns_busy_error(const char *name, enum mafsbx_turns_busy why, struct mafsbx_error *err)
{
	return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EBUSY, NULL,
				     "file call refused: an exec is %s in sandbox %s; retry when it ends",
				     why == MAFSBX_TURNS_EXEC_WAITING ? "about to start" : "running", name);
}

/* Between two tries: wait until `until_ms` (bounded by the deadline). */
static void pause_until(const struct mafsbx_turns_hooks *hooks, unsigned long long token, long long until_ms,
			long long deadline_ms)
{
	if (until_ms > deadline_ms)
		until_ms = deadline_ms;
	if (hooks && hooks->wait) {
		hooks->wait(hooks->ctx, token, until_ms);
		return;
	}
	long long ms = until_ms - mafsbx_now_ms();
	if (ms > 0) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
}

static bool may_try(const struct mafsbx_turns_hooks *hooks, unsigned long long *token)
{
	*token = 0;
	return !hooks || !hooks->before || hooks->before(hooks->ctx, token);
}

int mafsbx_turns_freeze_wait(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			     const struct mafsbx_turns_hooks *hooks, struct mafsbx_error *err)
{
	int r = -EAGAIN;
	for (unsigned polls = 0;; polls++) {
		unsigned long long token;
		if (may_try(hooks, &token)) {
			r = mafsbx_turns_freeze_try(t, turn, deadline_ms, err);
			if (r != -EAGAIN)
				break;
		}
		long long now = mafsbx_now_ms();
		if (now >= deadline_ms) {
			r = mafsbx_turns_busy_error(t->name, turn->why, err);
			break;
		}
		pause_until(hooks, token, now + mafsbx_turns_poll_ms(polls), deadline_ms);
	}
	mafsbx_turn_unwant(turn);
	return r;
}

void mafsbx_turns_settle(struct mafsbx_turn *turn, bool ok)
{
	if (turn->hold >= 0) {
		if (ok)
			flock(turn->hold, LOCK_SH); /* EX -> SH: every other transition waits for the gate we hold */
		else
			drop(&turn->hold);
	}
	gate_give(turn);
}

int mafsbx_turns_freeze_leave(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			      struct mafsbx_error *err)
{
	int r = gate_take(t, turn, deadline_ms, err);
	if (r < 0)
		return r;
	flock(turn->hold, LOCK_UN);
	if (flock(turn->hold, LOCK_EX | LOCK_NB) == 0)
		return 1; /* the last one out, across every process */
	return 0;
}

int mafsbx_turns_idle(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
		      struct mafsbx_error *err)
{
	int hold = open_lock(t, "hold", err);
	if (hold < 0)
		return hold;
	int r = gate_take(t, turn, deadline_ms, err);
	if (r < 0) {
		close(hold);
		return r;
	}
	turn->hold = hold;
	return flock(hold, LOCK_EX | LOCK_NB) == 0 ? 1 : 0;
}

int mafsbx_turns_exec_want(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			   struct mafsbx_error *err)
{
	if (turn->want >= 0)
		return 0;
	int fd = open_lock(t, "xwant", err);
	if (fd < 0)
		return fd;
	int r = flock_until(fd, LOCK_SH, deadline_ms, t->name, err);
	if (r < 0) {
		close(fd);
		return r;
	}
	turn->want = fd;
	return 0;
}

int mafsbx_turns_exec_try(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			  struct mafsbx_error *err)
{
	if (turn->exec < 0) {
		int fd = open_lock(t, "exec", err);
		if (fd < 0)
			return fd;
		turn->exec = fd;
	}
	int xf = turn->exec;
	__do_close int hold = open_lock(t, "hold", err);
	if (hold < 0)
		return hold;
	__do_close int fw = open_lock(t, "fwant", err);
	if (fw < 0)
		return fw;
	int r = gate_take(t, turn, deadline_ms, err);
	if (r < 0)
		return r;
	if (!lock_free(hold)) {
		gate_give(turn);
		return -EAGAIN; /* a live freeze */
	}
	bool freeze_waits = !lock_free(fw);
	bool phase_idle = flock(xf, LOCK_EX | LOCK_NB) == 0; /* no exec in flight anywhere */
	if (freeze_waits && (!phase_idle || read_last(xf) == 'e')) {
		/* a freeze waits: do not extend the exec phase, and do not start one out of turn */
		if (phase_idle)
			flock(xf, LOCK_UN);
		gate_give(turn);
		return -EAGAIN;
	}
	if (phase_idle)
		write_last(xf, 'e');
	/* EX -> SH (or a fresh SH beside other execs): nobody probes EX without the gate we hold */
	if (flock(xf, LOCK_SH | LOCK_NB) < 0) {
		r = mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "flock the exec file of %s: %s", t->name,
					  strerror(errno));
		flock(xf, LOCK_UN);
		gate_give(turn);
		return r;
	}
	return 0;
}

int mafsbx_turns_exec_wait(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			   const struct mafsbx_turns_hooks *hooks, bool *waited, struct mafsbx_error *err)
{
	if (waited)
		*waited = false;
	/* announce the wait first, so that no new freeze starts out of turn meanwhile */
	int r = mafsbx_turns_exec_want(t, turn, deadline_ms, err);
	for (unsigned polls = 0; r == 0; polls++) {
		unsigned long long token;
		if (may_try(hooks, &token)) {
			r = mafsbx_turns_exec_try(t, turn, deadline_ms, err);
			if (r != -EAGAIN)
				break;
		}
		if (waited)
			*waited = true;
		long long now = mafsbx_now_ms();
		if (now >= deadline_ms) {
			r = mafsbx_error_set(err, MAFSBX_EK_TIMEOUT,
					     "timed out waiting for the freeze of sandbox %s to end before an exec (file "
					     "calls hold it); retry",
					     t->name);
			break;
		}
		pause_until(hooks, token, now + mafsbx_turns_poll_ms(polls), deadline_ms);
		r = 0;
	}
	mafsbx_turn_unwant(turn);
	if (r < 0)
		mafsbx_turn_release(turn);
	return r;
}

void mafsbx_turn_unwant(struct mafsbx_turn *turn)
{
	if (turn->want >= 0) {
		close(turn->want);
		turn->want = -1;
	}
}

void mafsbx_turn_release(struct mafsbx_turn *turn)
{
	drop(&turn->exec);
	drop(&turn->hold);
	mafsbx_turn_unwant(turn);
	gate_give(turn);
}

int mafsbx_turns_remove(const struct mafsbx_turns *t, bool (*confirm)(void *ctx), void *ctx)
{
	char p[PATH_MAX];
	mafsbx_turns_path(t, "gate", p, sizeof(p));
	__do_close int gate = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (gate < 0 && errno != ENOENT)
		return 0;
	if (gate >= 0 && flock(gate, LOCK_EX | LOCK_NB) < 0)
		return 0;
	int fds[MAFSBX_ARRAY_SIZE(suffixes)];
	bool busy = false;
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(suffixes); i++) {
		mafsbx_turns_path(t, suffixes[i], p, sizeof(p));
		fds[i] = open(p, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fds[i] >= 0 && !lock_free(fds[i]))
			busy = true;
	}
	if (!busy && confirm && !confirm(ctx))
		busy = true;
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(suffixes); i++) {
		if (!busy && fds[i] >= 0) {
			mafsbx_turns_path(t, suffixes[i], p, sizeof(p));
			unlink(p);
		}
		if (fds[i] >= 0)
			close(fds[i]);
	}
	if (busy)
		return 0;
	/* the gate last, still held: whoever opened it before sees a file no longer linked */
	mafsbx_turns_path(t, "gate", p, sizeof(p));
	if (gate >= 0)
		unlink(p);
	return 1;
}
