/*
 * daemon.h: going into the background (daemon.c): the fork first, one
 * thread, a readiness pipe; systemd's notify socket; the descriptor limit.
 */
#ifndef MAFSBXFS_DAEMON_H
#define MAFSBXFS_DAEMON_H

struct mafsbx_error;

/* Threads of this process now (/proc/self/task), or a negative errno. */
int mfs_daemon_thread_count(void);
/* Fork before anything starts a thread: refused (-1, message printed) when
 * more than one exists. The parent waits for the child's word and exits with
 * 0 once it is ready, or with the child's status when it failed first. In
 * the child: 0, with *ready_fd to hand to mfs_daemon_ready(). */
int mfs_daemon_fork(int *ready_fd);
/* The daemon serves: a new session, cwd /, stdio on /dev/null, logging to
 * syslog, and the parent told. Does nothing for -1 (foreground). */
void mfs_daemon_ready(int ready_fd);
/* Tell systemd `state` ("READY=1", "STOPPING=1") on $NOTIFY_SOCKET (a path,
 * or '@' for an abstract name): 0 when sent or when the variable is unset,
 * else -errno with err set. */
int mfs_daemon_notify(const char *state, struct mafsbx_error *err);
/* Raise the soft RLIMIT_NOFILE to the hard limit. 0, or -errno with err set. */
int mfs_daemon_raise_nofile(struct mafsbx_error *err);

#endif
