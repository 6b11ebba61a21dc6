/*
 * execkill.c: ending an exec's process tree from the host (a detached exec's
 * cancel or timeout, doc/protocol.md "The transactions"), so the sandbox survives. The Docker
 * Engine API cannot kill an exec; where the engine runs on this host its
 * processes are ours to signal, under rules that never reach another:
 *
 *  - the root is the exec's host PID as the engine reports it (ExecInspect
 *    Pid), never a PID the guest names (a guest PID can equal any host PID);
 *  - every process is signalled only through a pidfd, opened first and then
 *    checked: /proc/PID/cgroup must name the container's 64-hex ID where
 *    the engine puts it (cgroup.h), its PID namespace and its root must be
 *    the container init's (a process moved into the container's cgroup,
 *    which a user with a delegated subtree or root on the host can do, is
 *    still not in the container), and the pidfd must still be live after
 *    the check (a PID that was recycled in between is a different process:
 *    its pidfd reports it exited or the proofs fail);
 *  - the container's init (State.Pid) is never signalled: killing it would
 *    stop the sandbox;
 *  - the tree is the root and its descendants (by PPid in /proc), stopped
 *    (SIGSTOP) in passes until no new child appears, then killed (SIGKILL),
 *    so a forking command cannot outrun it.
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
#include "names.h"
#include "pin.h"

#define TREE_MAX 4096      /* processes one exec may have; more are refused */
#define STOP_PASSES 8

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

/* The pidfd of `pid` when it is a live process of the container (not its
 * init), else -ESRCH (it is gone) or -EPERM (it is not ours to signal;
 * t->refused says why). */
static int open_checked(struct tree *t, long pid)
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
	if (dir >= 0)
		close(dir);
	/* it ended while we looked (what we read may be its successor's), or
	 * is ending: a failed proof of a dying process is no refusal */
	if (pidfd_exited_within(fd, r < 0 ? EXITING_GRACE_MS : 0))
		r = -ESRCH;
	else if (r < 0)
		t->refused = why;
	if (r < 0) {
		close(fd);
		return r;
	}
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

/* The parent PID of `pid` (field 4 of /proc/PID/stat, after the command's ')'), or -1. */
static long parent_of(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	long ppid = -1;
	if (!rp || sscanf(rp + 1, " %*c %ld", &ppid) != 1)
		return -1;
	return ppid;
}

/* Add `pid`, checked, stopped. 1 added, 0 not ours or gone (*why says
 * which: ESRCH, EPERM), -ENOSPC past the bound. */
static int add_member(struct tree *t, long pid, int *why)
{
	if (t->n >= TREE_MAX)
		return -ENOSPC;
	int fd = open_checked(t, pid);
	if (fd < 0) {
		if (why)
			*why = -fd;
		return 0;
	}
	(void)pidfd_signal(fd, SIGSTOP);
	t->m[t->n++] = (struct member){ .pid = pid, .pidfd = fd };
	return 1;
}

/* One pass over /proc: every process whose parent is in the tree joins it. Returns how many joined. */
static int grow_pass(struct tree *t)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	int added = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 1 || in_tree(t, pid))
			continue;
		long pp = parent_of(pid);
		if (pp > 0 && in_tree(t, pp)) {
			int r = add_member(t, pid, NULL);
			if (r < 0) {
				closedir(d);
				return r;
			}
			added += r;
		}
	}
	closedir(d);
	return added;
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		close(t->m[i].pidfd);
	free(t->m);
}

int mafsbx_exec_kill_tree(struct mafsbx_engine *e, const char *container_id, const char *exec_id, int *killed,
			  struct mafsbx_error *err)
{
	*killed = 0;
	if (!mafsbx_is_engine_id(container_id) || !mafsbx_is_engine_id(exec_id))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "kill exec: bad container or exec ID");
	long pid;
	bool running;
	int r = mafsbx_exec_pid(e, exec_id, &pid, &running, err);
	if (r < 0)
		return r;
	if (!running || pid <= 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_NO_PATH, ESRCH, NULL, "exec %.12s: not running", exec_id);
	json_t *insp = NULL;
	if ((r = mafsbx_container_inspect(e, container_id, &insp, err)) < 0)
		return r;
	struct tree t = { .m = calloc(TREE_MAX, sizeof(struct member)) };
	const char *id = json_string_value(json_object_get(insp, "Id"));
	json_t *ip = json_object_get(json_object_get(insp, "State"), "Pid");
	t.init_pid = json_is_integer(ip) ? (long)json_integer_value(ip) : 0;
	snprintf(t.id, sizeof(t.id), "%s", id && mafsbx_is_engine_id(id) ? id : "");
	json_decref(insp);
	if (!t.m)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (strcmp(t.id, container_id) != 0 || t.init_pid <= 0) {
		tree_free(&t);
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EPERM, NULL,
					     "kill exec %.12s: the container is not the one it ran in", exec_id);
	}
	if ((r = read_init(&t)) < 0) {
		tree_free(&t);
		if (r == -ESRCH)   /* the container stopped: its execs with it */
			return mafsbx_error_set_full(err, MAFSBX_EK_NO_PATH, ESRCH, NULL, "exec %.12s: not running",
						     exec_id);
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EPERM, NULL,
					     "kill exec %.12s: the container's init (PID %ld) is not one of this host's "
					     "processes of the container (%s)", exec_id, t.init_pid, strerror(-r));
	}
	int why = EPERM;
	if ((r = add_member(&t, pid, &why)) <= 0) {
		tree_free(&t);
		if (r == 0 && why == ESRCH)   /* ended while we looked: the engine will say so shortly */
			return mafsbx_error_set_full(err, MAFSBX_EK_NO_PATH, ESRCH, NULL, "exec %.12s: not running",
						     exec_id);
		/* the engine's PID is not a live process of this container here: a remote engine */
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, r < 0 ? -r : EPERM, NULL,
					     "kill exec %.12s: its process %ld is not one of this host's processes of "
					     "the container (%s)", exec_id, pid, t.refused ? t.refused : "too many processes");
	}
	for (int pass = 0; pass < STOP_PASSES; pass++) {
		r = grow_pass(&t);
		if (r <= 0)
			break;
	}
	for (size_t i = 0; i < t.n; i++)
		if (pidfd_signal(t.m[i].pidfd, SIGKILL) == 0)
			(*killed)++;
	tree_free(&t);
	if (r < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, -r, NULL, "kill exec %.12s: %s", exec_id,
					     r == -ENOSPC ? "more processes than it may have" : strerror(-r));
	return 0;
}
