/*
 * execkill.c: ending an exec's processes from the host (a cancel, or a
 * timeout, blocking or detached: doc/protocol.md "The transactions"), so
 * the sandbox survives. The Docker Engine API cannot kill an exec; where the
 * engine runs on this host its processes are ours to signal, under rules
 * that never reach another:
 *
 *  - the root is the exec's host PID as the engine reports it (ExecInspect
 *    Pid), never a PID the guest names (a guest PID can equal any host PID);
 *  - every process is signalled only through a pidfd, opened first and then
 *    checked: its start time is the one the pass over /proc read (the same
 *    process, not a successor under a recycled PID), /proc/PID/cgroup must
 *    name the container's 64-hex ID where the engine puts it (cgroup.h),
 *    its PID namespace and its root must be
 *    the container init's (a process moved into the container's cgroup,
 *    which a user with a delegated subtree or root on the host can do, is
 *    still not in the container), and the pidfd must still be live after
 *    the check (a PID that was recycled in between is a different process:
 *    its pidfd reports it exited or the proofs fail);
 *  - the container's init (State.Pid) is never signalled: killing it would
 *    stop the sandbox; nor is any process older than the exec's root
 *    (execmark.h: the main process docker-init runs, other execs' earlier
 *    processes);
 *  - the exec's processes are the root, its descendants (by PPid in /proc),
 *    and every process of the container carrying the exec's marker
 *    (MAFSBX_EXEC_ID=<marker> in /proc/PID/environ, set in the exec's Env
 *    and inherited), with their descendants: so what the command
 *    daemonised (a double fork, setsid, nohup), which init adopted, is found
 *    too (execmark.c decides). Where the environments cannot be read (a
 *    rootless engine's processes, not ours to inspect) only parentage
 *    counts, and the kill says so in the log;
 *  - they are stopped (SIGSTOP) in passes until a pass finds no new one,
 *    then killed (SIGKILL), so a forking command cannot outrun it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "engine.h"
#include "execkill.h"
#include "execmark.h"
#include "log.h"
#include "names.h"
#include "pin.h"

#define TREE_MAX 4096      /* processes one exec may have; more are refused */
#define STOP_PASSES 16
#define ENVIRON_MAX (1 << 20)      /* bytes of one process's environment read for the marker */
#define ENVIRON_BUDGET (64 << 20)  /* and of all of them in one kill: a guest's huge environments cost it, not us */

struct member {
	long pid;
	int pidfd;
};

struct tree {
	struct member *m;
	size_t n;
	char id[65];
	long init_pid;
	struct mafsbx_proc_ident init;   /* the init's PID namespace and root */
	const char *refused;             /* the proof the last refused process failed */
	struct mafsbx_tree_rule rule;    /* the root, its start time, the init */
	char mark[sizeof(MAFSBX_EXEC_MARK_ENV) + MAFSBX_EXEC_MARK_MAX + 1];   /* "KEY=VALUE", "" for none */
	struct mafsbx_tree_proc *seen;   /* one pass's processes of the container (TREE_MAX) */
	size_t environ_denied;           /* environments that could not be read */
	size_t environ_read;             /* bytes read of them (ENVIRON_BUDGET) */
	size_t environ_skipped;          /* processes not read, the budget spent */
};

static int pidfd_open_nocheck(long pid)
{
	return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
}

static int pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* The process of `pidfd` has exited, or does so within `ms`. */
static bool pidfd_exited_within(int pidfd, int ms)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int r;
	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r > 0;
}

static bool pidfd_exited(int pidfd)
{
	return pidfd_exited_within(pidfd, 0);
}

/* A process that is exiting gives up its namespaces and root before its
 * pidfd says it exited (do_exit releases them first), so a proof may fail
 * for a process that is only going away: it is given this long to finish
 * before the failure counts as a refusal. */
#define EXITING_GRACE_MS 250

/* The cgroup of the process whose /proc directory is piddir names container `id` (cgroup.h). */
static bool cgroup_names(int piddir, const char *id)
{
	char text[4096];
	int cfd = openat(piddir, "cgroup", O_RDONLY | O_CLOEXEC);
	ssize_t n = cfd >= 0 ? read(cfd, text, sizeof(text) - 1) : -1;
	if (cfd >= 0)
		close(cfd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	return mafsbx_cgroup_names_container(text, id);
}

int mafsbx_proc_prove_member(int piddir, const char *id, const struct mafsbx_proc_ident *init, const char **why)
{
	*why = "the cgroup proof failed: its cgroup does not name the container where the engine puts it";
	if (!cgroup_names(piddir, id))
		return -EPERM;
	struct mafsbx_proc_ident me;
	if (mafsbx_proc_ident_of(piddir, &me) < 0) {
		*why = "the PID namespace proof failed: its namespace and root cannot be read";
		return -EPERM;
	}
	if (me.ns_dev != init->ns_dev || me.ns_ino != init->ns_ino) {
		*why = "the PID namespace proof failed: it is not in the container's PID namespace";
		return -EPERM;
	}
	if (me.root_dev != init->root_dev || me.root_ino != init->root_ino) {
		*why = "the root filesystem proof failed: its root is not the container's";
		return -EPERM;
	}
	*why = NULL;
	return 0;
}

static int open_piddir(long pid)
{
	char path[32];
	snprintf(path, sizeof(path), "/proc/%ld", pid);
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* The parent and start time of the process whose /proc directory is dir. 0 or -errno. */
static int read_stat(int dir, long *ppid, unsigned long long *start)
{
	char buf[2048];
	int fd = openat(dir, "stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	return mafsbx_proc_stat_fields(buf, (size_t)n, ppid, start);
}

/* The pidfd of `pid` when it is a live process of the container (not its
 * init), started at *start (0: any time; it is then set), else -ESRCH (it
 * is gone) or -EPERM (it is not ours to signal; t->refused says why). */
static int open_checked(struct tree *t, long pid, unsigned long long *start)
{
	if (pid <= 1 || pid == t->init_pid) {
		t->refused = "it is the container's init, which is never signalled";
		return -EPERM;
	}
	int fd = pidfd_open_nocheck(pid);
	if (fd < 0)
		return errno == ESRCH ? -ESRCH : -EPERM;
	int dir = open_piddir(pid);
	const char *why = "its /proc directory cannot be opened";
	int r = dir >= 0 ? mafsbx_proc_prove_member(dir, t->id, &t->init, &why) : -EPERM;
	long ppid;
	unsigned long long began = 0;
	if (r == 0 && read_stat(dir, &ppid, &began) < 0)
		r = -ESRCH;
	else if (r == 0 && *start && began != *start)
		r = -ESRCH;   /* another process under a recycled PID: the one the pass saw is gone */
	if (dir >= 0)
		close(dir);
	/* it ended while we looked (what we read may be its successor's), or
	 * is ending: a failed proof of a dying process is no refusal */
	if (pidfd_exited_within(fd, r == -EPERM ? EXITING_GRACE_MS : 0))
		r = -ESRCH;
	else if (r == -EPERM)
		t->refused = why;
	if (r < 0) {
		close(fd);
		return r;
	}
	*start = began;
	return fd;
}

/* The init's PID namespace and root, read while its pidfd says it is the
 * container's (its cgroup names the container). 0 or -errno. */
static int read_init(struct tree *t)
{
	int fd = pidfd_open_nocheck(t->init_pid);
	if (fd < 0)
		return -errno;
	int dir = open_piddir(t->init_pid);
	int r = dir >= 0 && cgroup_names(dir, t->id) ? mafsbx_proc_ident_of(dir, &t->init) : -EPERM;
	if (r == 0 && pidfd_exited(fd))
		r = -ESRCH;
	if (dir >= 0)
		close(dir);
	close(fd);
	return r;
}


static bool in_tree(const struct tree *t, long pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->m[i].pid == pid)
			return true;
	return false;
}

/* Whether the environment of the process at dir holds t->mark (read in
 * chunks, at most ENVIRON_MAX bytes, within what is left of the kill's
 * ENVIRON_BUDGET). One that cannot be read, or is not for the budget, is
 * counted. */
static bool carries_mark(struct tree *t, int dir)
{
	if (!t->mark[0])
		return false;
	size_t cap = ENVIRON_BUDGET - t->environ_read < ENVIRON_MAX ? ENVIRON_BUDGET - t->environ_read : ENVIRON_MAX;
	if (cap == 0) {
		t->environ_skipped++;
		return false;
	}
	int fd = openat(dir, "environ", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		t->environ_denied++;
		return false;
	}
	struct mafsbx_environ_match m;
	mafsbx_environ_match_init(&m, t->mark);
	char buf[16384];
	size_t total = 0;
	ssize_t n = -1;
	while (total < cap && (n = read(fd, buf, sizeof(buf) < cap - total ? sizeof(buf) : cap - total)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EACCES || errno == EPERM)
				t->environ_denied++;
			break;
		}
		mafsbx_environ_match_feed(&m, buf, (size_t)n);
		total += (size_t)n;
	}
	close(fd);
	t->environ_read += total;
	/* the last entry counts without its NUL only where the block ended, not where we stopped reading */
	return n == 0 ? mafsbx_environ_match_end(&m) : m.found;
}

/* t->mark from the root's own environment (the caller kept none: a job
 * adopted from elsewhere): the value the mount set in the exec's Env, when
 * it is still there (a root that cleared its environment leaves parentage). */
static void mark_from_root(struct tree *t)
{
	char path[48], value[MAFSBX_EXEC_MARK_MAX + 1];
	snprintf(path, sizeof(path), "/proc/%ld/environ", t->rule.root_pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		t->environ_denied++;
		return;
	}
	char *buf = malloc(ENVIRON_MAX);
	size_t len = 0;
	ssize_t n;
	while (buf && len < ENVIRON_MAX && (n = read(fd, buf + len, ENVIRON_MAX - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	/* read by PID: only while the root's pidfd (m[0]) says it is still the root */
	if (buf && mafsbx_environ_mark(buf, len, value) == 0 && !pidfd_exited(t->m[0].pidfd))
		snprintf(t->mark, sizeof(t->mark), "%s=%s", MAFSBX_EXEC_MARK_ENV, value);
	free(buf);
}

/* Add `pid` (started at *start; 0: any), checked, stopped. 1 added, 0 not
 * ours or gone (*why says which: ESRCH, EPERM), -ENOSPC past the bound. */
static int add_member(struct tree *t, long pid, unsigned long long *start, int *why)
{
	if (t->n >= TREE_MAX)
		return -ENOSPC;
	int fd = open_checked(t, pid, start);
	if (fd < 0) {
		if (why)
			*why = -fd;
		return 0;
	}
	(void)pidfd_signal(fd, SIGSTOP);
	t->m[t->n++] = (struct member){ .pid = pid, .pidfd = fd };
	return 1;
}

/* The container's process `pid` as a pass sees it into *out, when it may be
 * the exec's: newer than the root, not the init, its cgroup the container's
 * (the proofs come again before any signal). 1 seen, 0 not a candidate. */
static int look_at(struct tree *t, long pid, struct mafsbx_tree_proc *out)
{
	int dir = open_piddir(pid);
	if (dir < 0)
		return 0;
	*out = (struct mafsbx_tree_proc){ .pid = pid, .member = in_tree(t, pid) };
	int seen = read_stat(dir, &out->ppid, &out->start) == 0 && out->start >= t->rule.root_start &&
		   (out->member || cgroup_names(dir, t->id));
	if (seen && !out->member)
		out->marked = carries_mark(t, dir);
	close(dir);
	return seen;
}

/* One pass over /proc: every process the rule chooses (execmark.h) joins
 * the tree, stopped. How many joined, or -errno (-ENOSPC past the bound). */
static int grow_pass(struct tree *t)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	size_t n = 0;
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 1 || pid == t->init_pid)
			continue;
		if (n >= TREE_MAX) {
			r = -ENOSPC;
			break;
		}
		n += (size_t)look_at(t, pid, &t->seen[n]);
	}
	closedir(d);
	long chosen = r < 0 ? 0 : mafsbx_tree_select(t->seen, n, &t->rule);
	if (chosen < 0)
		return (int)chosen;
	int added = 0;
	for (size_t i = 0; i < n && r == 0; i++)
		if (t->seen[i].chosen && !t->seen[i].member) {
			int a = add_member(t, t->seen[i].pid, &t->seen[i].start, NULL);
			if (a < 0)
				r = a;
			else
				added += a;
		}
	return r < 0 ? r : added;
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		close(t->m[i].pidfd);
	free(t->m);
	free(t->seen);
}

/* The container's ID and init from the engine, the init's namespace and
 * root from here: 0, or an error (ESRCH: the container stopped). */
static int tree_open(struct mafsbx_engine *e, struct tree *t, const char *container_id, const char *exec_id,
		     struct mafsbx_error *err)
{
	json_t *insp = NULL;
	int r = mafsbx_container_inspect(e, container_id, &insp, err);
	if (r < 0)
		return r;
	const char *id = json_string_value(json_object_get(insp, "Id"));
	json_t *ip = json_object_get(json_object_get(insp, "State"), "Pid");
	t->init_pid = json_is_integer(ip) ? (long)json_integer_value(ip) : 0;
	t->rule.init_pid = t->init_pid;
	snprintf(t->id, sizeof(t->id), "%s", id && mafsbx_is_engine_id(id) ? id : "");
	json_decref(insp);
	if (strcmp(t->id, container_id) != 0 || t->init_pid <= 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EPERM, NULL,
					     "kill exec %.12s: the container is not the one it ran in", exec_id);
	if ((r = read_init(t)) == -ESRCH)   /* the container stopped: its execs with it */
		return mafsbx_error_set_full(err, MAFSBX_EK_NO_PATH, ESRCH, NULL, "exec %.12s: not running", exec_id);
	if (r < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EPERM, NULL,
					     "kill exec %.12s: the container's init (PID %ld) is not one of this host's "
					     "processes of the container (%s)", exec_id, t->init_pid, strerror(-r));
	return 0;
}

/* The root checked and stopped: 0, or the error (ESRCH: it ended meanwhile). */
static int tree_root(struct tree *t, const char *exec_id, const char *marker, struct mafsbx_error *err)
{
	int why = EPERM;
	int r = add_member(t, t->rule.root_pid, &t->rule.root_start, &why);
	if (r == 0 && why == ESRCH)   /* ended while we looked: the engine will say so shortly */
		return mafsbx_error_set_full(err, MAFSBX_EK_NO_PATH, ESRCH, NULL, "exec %.12s: not running", exec_id);
	if (r <= 0)   /* the engine's PID is not a live process of this container here: a remote engine */
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, r < 0 ? -r : EPERM, NULL,
					     "kill exec %.12s: its process %ld is not one of this host's processes of "
					     "the container (%s)", exec_id, t->rule.root_pid,
					     t->refused ? t->refused : "too many processes");
	if (marker)
		snprintf(t->mark, sizeof(t->mark), "%s=%s", MAFSBX_EXEC_MARK_ENV, marker);
	else
		mark_from_root(t);
	return 0;
}

int mafsbx_exec_kill_tree_marked(struct mafsbx_engine *e, const char *container_id, const char *exec_id,
				 const char *marker, int *killed, struct mafsbx_error *err)
{
	*killed = 0;
	if (!mafsbx_is_engine_id(container_id) || !mafsbx_is_engine_id(exec_id))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "kill exec: bad container or exec ID");
	if (marker && !mafsbx_exec_mark_valid(marker))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "kill exec %.12s: the marker is not %d to %d hex digits",
					exec_id, MAFSBX_EXEC_MARK_MIN, MAFSBX_EXEC_MARK_MAX);
	bool running;
	struct tree t = { 0 };
	int r = mafsbx_exec_pid(e, exec_id, &t.rule.root_pid, &running, err);
	if (r < 0)
		return r;
	if (!running || t.rule.root_pid <= 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_NO_PATH, ESRCH, NULL, "exec %.12s: not running", exec_id);
	t.m = calloc(TREE_MAX, sizeof(*t.m));
	t.seen = calloc(TREE_MAX, sizeof(*t.seen));
	if (!t.m || !t.seen)
		r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (r == 0 && (r = tree_open(e, &t, container_id, exec_id, err)) == 0)
		r = tree_root(&t, exec_id, marker, err);
	if (r < 0) {
		tree_free(&t);
		return r;
	}
	for (int pass = 0; pass < STOP_PASSES; pass++)
		if ((r = grow_pass(&t)) <= 0)
			break;
	for (size_t i = 0; i < t.n; i++)
		if (pidfd_signal(t.m[i].pidfd, SIGKILL) == 0)
			(*killed)++;
	if (t.environ_denied || t.environ_skipped)
		log_info("kill exec %.12s: the environment of %zu of the container's processes could not be read (a "
			 "rootless engine's), of %zu not past %d MiB read: those were ended only if they descend from the "
			 "command", exec_id, t.environ_denied, t.environ_skipped, ENVIRON_BUDGET >> 20);
	tree_free(&t);
	if (r < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, -r, NULL, "kill exec %.12s: %s", exec_id,
					     r == -ENOSPC ? "more processes than it may have" : strerror(-r));
	return 0;
}

int mafsbx_exec_kill_tree(struct mafsbx_engine *e, const char *container_id, const char *exec_id, int *killed,
			  struct mafsbx_error *err)
{
	return mafsbx_exec_kill_tree_marked(e, container_id, exec_id, NULL, killed, err);
}
