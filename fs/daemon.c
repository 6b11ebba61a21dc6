/*
 * daemon.c: how mafsbxfs goes into the background. Threads do not survive
 * fork(2): a thread started before it (the burst timer, the transfer
 * watchdog, the janitor) is simply absent in the daemon, and a lock or a
 * condition variable one of them held or waited on is left in a state no
 * thread of the daemon will ever change (pthread_cond_destroy then waits
 * forever for a waiter that lived in the parent). libfuse's
 * fuse_daemonize() forks after the mount, so everything the mount needs
 * would have to be started after it, and every error of that start would
 * reach only syslog while the caller was already told "mounted".
 *
 * So the fork comes first, right after the command line, while the process
 * has exactly one thread (checked: a second thread refuses the start). The
 * parent then waits on a pipe: the child, still writing to the caller's
 * terminal, opens the engine, pings it, mounts and starts its threads, and
 * either says "ready" (the parent exits 0, the mount in place, as after
 * fuse_daemonize) or exits with its status and its message on stderr (the
 * parent exits with that status). A bad mount fails in the foreground with
 * its message; a good one leaves nothing started before the fork.
 *
 * It also owns the two things a supervisor asks of a daemon: the systemd
 * readiness word (READY=1 once the mount is in place, STOPPING=1 on the way
 * out) sent on $NOTIFY_SOCKET, and the open-file limit raised at start.
 * The notify protocol is one datagram of "KEY=VALUE" lines on a unix socket;
 * a few lines here, rather than libsystemd for one call.
 */
#include "daemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

#define READY_BYTE 'R'

int mfs_daemon_thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* The parent's side: the child's word, then its exit. Never returns. */
static void __attribute__((noreturn)) parent_wait(pid_t child, int rfd)
{
	char c = 0;
	ssize_t n;
	do
		n = read(rfd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1 && c == READY_BYTE)
		_exit(0);
	/* The child failed before it was ready and printed why: its status is ours. */
	int st = 0;
	pid_t w;
	do
		w = waitpid(child, &st, 0);
	while (w < 0 && errno == EINTR);
	if (w == child && WIFEXITED(st))
		_exit(WEXITSTATUS(st) ? WEXITSTATUS(st) : 1);
	if (w == child && WIFSIGNALED(st))
		fprintf(stderr, "mafsbxfs: the daemon was killed by signal %d while starting\n", WTERMSIG(st));
	_exit(1);
}

int mfs_daemon_fork(int *ready_fd)
{
	*ready_fd = -1;
	int threads = mfs_daemon_thread_count();
	if (threads != 1) {
		if (threads < 0)
			fprintf(stderr, "mafsbxfs: cannot count this process's threads before going into the "
					"background: %s\n", strerror(-threads));
		else
			fprintf(stderr, "mafsbxfs: %d threads exist before the daemon forks; they would not "
					"survive it (an internal error: run with -f, and report it)\n", threads);
		return -1;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "mafsbxfs: cannot go into the background: pipe: %s\n", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "mafsbxfs: cannot go into the background: fork: %s\n", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid > 0) {
		close(p[1]);
		parent_wait(pid, p[0]);
	}
	close(p[0]);
	*ready_fd = p[1];
	return 0;
}

void mfs_daemon_ready(int ready_fd)
{
	if (ready_fd < 0)
		return;
	/* A parent that went away must not kill us with SIGPIPE on the word below. */
	signal(SIGPIPE, SIG_IGN);
	if (setsid() < 0)
		log_warn("setsid: %s", strerror(errno));
	if (chdir("/") < 0)
		log_warn("chdir /: %s", strerror(errno));
	mafsbx_log_use_syslog();
	int nfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nfd < 0) {
		log_warn("cannot open /dev/null (%s): standard streams stay the caller's", strerror(errno));
	} else {
		(void)dup2(nfd, STDIN_FILENO);
		(void)dup2(nfd, STDOUT_FILENO);
		(void)dup2(nfd, STDERR_FILENO);
		if (nfd > STDERR_FILENO)
			close(nfd);
	}
	char c = READY_BYTE;
	ssize_t n;
	do
		n = write(ready_fd, &c, 1);
	while (n < 0 && errno == EINTR);
	close(ready_fd);
}

int mfs_daemon_notify(const char *state, struct mafsbx_error *err)
{
	const char *path = getenv("NOTIFY_SOCKET");
	/* Not started by systemd (or by a Type=notify unit): nobody to tell. */
	if (!path || !*path)
		return 0;
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	size_t len = strlen(path);
	/* sun_path need not end in NUL; an abstract name ('@' for the leading
	 * NUL byte) is exactly its bytes, so the address length counts them. */
	if ((path[0] != '/' && path[0] != '@') || len > sizeof(sa.sun_path))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"NOTIFY_SOCKET '%s' is neither an absolute path nor an abstract name", path);
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL,
					     "cannot notify systemd: socket: %s", strerror(errno));
	ssize_t n;
	do
		n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	while (n < 0 && errno == EINTR);
	int e = n < 0 ? errno : 0;
	close(fd);
	if (e)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL, "cannot notify systemd at %s: %s",
					     path, strerror(e));
	return 0;
}

int mfs_daemon_raise_nofile(struct mafsbx_error *err)
{
	/* Every open file of a client and every engine connection is a
	 * descriptor here; the soft limit (1024 by default) runs out long
	 * before the hard one, which the administrator (LimitNOFILE=) set. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "getrlimit(RLIMIT_NOFILE): %s",
					     strerror(errno));
	if (rl.rlim_cur == rl.rlim_max)
		return 0;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "setrlimit(RLIMIT_NOFILE): %s",
					     strerror(errno));
	return 0;
}
