/*
 * httpssh.c: the ssh:// transport of the libcurl client (http.c, see the
 * comment there for the whole design): the ssh processes behind each
 * connection, the one master they multiplex over, the private directory of
 * the listeners, and the callbacks libcurl calls to open a connection and
 * before its first byte is sent.
 */
#include "http.h"
#include "http_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "rundir.h"

extern char **environ;
/*
 * ssh: transports multiplexed over the master at most; more connect on their
 * own. sshd's default MaxSessions is 10 per connection, and a refused
 * session would fail the request, so stay below it.
 */
#define SSH_MUX_MAX 8  /* plus the master's own session: 9 */
/* ssh: how long a closed transport may take to end by itself before SIGTERM, then SIGKILL. */
#define SSH_EXIT_GRACE_MS 20
#define SSH_TERM_GRACE_MS 2000
/* ---- ssh transport ------------------------------------------------------- */
/* A descriptor number >= 3, close-on-exec, so posix_spawn's dup2 onto 0..2 cannot clobber it. */
static int fd_above_stdio(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int e = errno;
	close(fd);
	errno = e;
	return n;
}
/*
 * ssh_spawn's descriptors: `in` (the master's stdin, taken from *errfd),
 * sv[1] (stdin and stdout: `conn`, or /dev/null for the master) and ev[1]
 * (stderr: a pipe whose read end ev[0] is non-blocking, or /dev/null for the
 * master), all >= 3 and close-on-exec. -1 with `diag` set on failure.
 */
static int ssh_fds(bool master, int conn, int *errfd, int *in, int sv[2], int ev[2], char *diag, size_t diagsz)
{
	if (master) {
		*in = fd_above_stdio(*errfd);
		*errfd = -1;
		sv[1] = open("/dev/null", O_RDWR | O_CLOEXEC);
		ev[1] = sv[1] >= 0 ? fcntl(sv[1], F_DUPFD_CLOEXEC, 3) : -1;
		sv[1] = fd_above_stdio(sv[1]);
		if (*in < 0)
			sv[1] = -1;
	} else {
		sv[1] = fd_above_stdio(conn);
		if (sv[1] >= 0 && pipe2(ev, O_CLOEXEC) == 0)
			for (int i = 0; i < 2; i++)
				ev[i] = fd_above_stdio(ev[i]);
	}
	if (sv[1] < 0 || ev[1] < 0 || (!master && ev[0] < 0)) {
		snprintf(diag, diagsz, "cannot make the ssh pipe: %s", strerror(errno));
		return -1;
	}
	if (!master)
		(void)fcntl(ev[0], F_SETFL, O_NONBLOCK);
	return 0;
}
/* ssh_spawn's command line into argv (24 slots); `timeout` and `port` hold its option texts. */
static void ssh_argv(const struct mafsbx_http *h, bool master, const char *ctl, char *argv[24], char timeout[64],
		     char port[16])
{
	const struct mafsbx_endpoint *ep = &h->ep;
	long secs = (h->connect_ms + 999) / 1000;
	snprintf(timeout, 64, "ConnectTimeout=%ld", secs > 0 ? secs : 1);
	snprintf(port, 16, "%d", ep->port);
	int n = 0;
	argv[n++] = "ssh";
	argv[n++] = "-o";
	argv[n++] = "BatchMode=yes";
	argv[n++] = "-o";
	argv[n++] = timeout;
	argv[n++] = "-T";
	if (master) {
		argv[n++] = "-M";
		argv[n++] = "-o";
		argv[n++] = "ControlPersist=no";
	} else if (ctl) {
		argv[n++] = "-o";
		argv[n++] = "ControlMaster=no";
	}
	if (master || ctl) {
		argv[n++] = "-S";
		argv[n++] = (char *)ctl;
	}
	if (ep->user[0]) {
		argv[n++] = "-l";
		argv[n++] = (char *)ep->user;
	}
	if (ep->port > 0) {
		argv[n++] = "-p";
		argv[n++] = port;
	}
	argv[n++] = "--";
	argv[n++] = (char *)ep->host;
	argv[n++] = "docker";
	argv[n++] = "system";
	argv[n++] = "dial-stdio";
	argv[n] = NULL;
}
/* posix_spawnp ssh with fd0/fd1/fd2 as its stdio, default signals, its own process group. 0 or an errno. */
static int ssh_exec(pid_t *pid, int fd0, int fd1, int fd2, char *const argv[])
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	int e = posix_spawn_file_actions_init(&fa);
	if (e != 0)
		return e;
	if ((e = posix_spawnattr_init(&at)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return e;
	}
	if ((e = posix_spawn_file_actions_adddup2(&fa, fd0, 0)) != 0 ||
	    (e = posix_spawn_file_actions_adddup2(&fa, fd1, 1)) != 0 ||
	    (e = posix_spawn_file_actions_adddup2(&fa, fd2, 2)) != 0 ||
	    (e = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
						       POSIX_SPAWN_SETPGROUP)) != 0 ||
	    (e = posix_spawnattr_setsigmask(&at, &none)) != 0 || (e = posix_spawnattr_setsigdefault(&at, &all)) != 0 ||
	    (e = posix_spawnattr_setpgroup(&at, 0)) != 0)
		goto out;
	e = posix_spawnp(pid, "ssh", &fa, &at, argv, environ);
out:
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return e;
}
/*
 * Start `ssh -o BatchMode=yes -o ConnectTimeout=N -T [-l USER] [-p PORT] --
 * HOST docker system dial-stdio` (the Docker CLI's arguments plus BatchMode,
 * so a missing key fails at once instead of prompting) with `conn` as its
 * stdin and stdout and a pipe as its stderr; with `ctl`, over that master's
 * control socket (-S CTL -o ControlMaster=no: a session on the master's
 * connection, no handshake of its own; ssh connects by itself when the
 * socket is not there). `conn` < 0 starts the master instead: -M -S CTL
 * running `docker system dial-stdio` too (a session that lasts as long as
 * its stdin: the read end of a pipe whose write end we hold, so the master
 * ends with this process even when it dies without a clean close), stdin
 * from `*errfd` (taken), stdout and stderr on /dev/null. ssh runs in its own
 * process group, so a terminal's ^C for the daemon does not cut the engine
 * connections under a clean unmount. Takes `conn` (closed in every case).
 */
static int ssh_spawn(const struct mafsbx_http *h, int conn, const char *ctl, pid_t *pid, int *errfd, char *diag,
		     size_t diagsz)
{
	bool master = conn < 0;
	int sv[2] = { -1, -1 }, ev[2] = { -1, -1 };
	int in = -1, r = ssh_fds(master, conn, errfd, &in, sv, ev, diag, diagsz);
	if (r == 0) {
		char timeout[64], port[16], *argv[24];
		ssh_argv(h, master, ctl, argv, timeout, port);
		int e = ssh_exec(pid, master ? in : sv[1], sv[1], ev[1], argv);
		if (e != 0) {
			snprintf(diag, diagsz, "cannot run ssh: %s", strerror(e));
			r = -1;
		} else if (!master) {
			*errfd = ev[0];
			ev[0] = -1;
		}
	}
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (ev[i] >= 0)
			close(ev[i]);
	}
	if (in >= 0)
		close(in);
	return r;
}
static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}
/* waitpid(WNOHANG) for up to ms: the pid when reaped, 0 when still running. */
static pid_t wait_child(pid_t pid, int *status, long ms)
{
	long long until = mafsbx_now_ms() + ms;
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			return w < 0 ? -1 : w;
		if (mafsbx_now_ms() >= until)
			return 0;
		sleep_ms(2);
	}
}
/*
 * End and reap one ssh transport whose socket was just closed. An ssh that
 * ends by itself at once (it failed: that is why the connection closed) has
 * its exit status and the tail of its stderr kept in pc->ssh_diag for the
 * error message; one still running (a healthy connection being retired) is
 * sent SIGTERM, and SIGKILL if that is not enough. Always reaped.
 */
void mafsbx_ssh_reap(struct pconn *pc, pid_t pid, int errfd)
{
	int status = 0;
	bool by_itself = true;
	pid_t w = wait_child(pid, &status, SSH_EXIT_GRACE_MS);
	if (w == 0) {
		by_itself = false;
		(void)kill(pid, SIGTERM);
		w = wait_child(pid, &status, SSH_TERM_GRACE_MS);
		if (w == 0) {
			(void)kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
		}
	}
	char tail[SSH_DIAG_MAX + 1];
	size_t tl = 0;
	for (;;) {
		char buf[1024];
		ssize_t n = read(errfd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* Keep the last SSH_DIAG_MAX bytes: the final line is the reason. */
		for (ssize_t i = 0; i < n; i++) {
			if (tl == SSH_DIAG_MAX) {
				memmove(tail, tail + 1, SSH_DIAG_MAX - 1);
				tl--;
			}
			char c = buf[i];
			tail[tl++] = (c == '\n' || c == '\r' || c == '\t') ? ' ' : (c < 0x20 || c == 0x7f) ? '?' : c;
		}
	}
	close(errfd);
	while (tl && tail[tl - 1] == ' ')
		tl--;
	tail[tl] = '\0';
	if (!by_itself)
		return;
	char how[48];
	if (WIFEXITED(status))
		snprintf(how, sizeof(how), "ssh exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(how, sizeof(how), "ssh was killed by signal %d", WTERMSIG(status));
	else
		snprintf(how, sizeof(how), "ssh ended");
	snprintf(pc->ssh_diag, sizeof(pc->ssh_diag), "%s%s%s", how, tl ? ": " : "", tail);
}
/* The master process ended (the files it made are left to the caller). */
static void ssh_master_end(struct mafsbx_http *h)
{
	if (h->ssh_master_in >= 0) {
		close(h->ssh_master_in);  /* EOF to its session: what ends it when we cannot */
		h->ssh_master_in = -1;
	}
	if (h->ssh_master > 0) {
		int st;
		(void)kill(h->ssh_master, SIGTERM);
		if (wait_child(h->ssh_master, &st, SSH_TERM_GRACE_MS) == 0) {
			(void)kill(h->ssh_master, SIGKILL);
			while (waitpid(h->ssh_master, &st, 0) < 0 && errno == EINTR)
				;
		}
		h->ssh_master = 0;
	}
}
/*
 * The directory the transports' sockets go in may be used only while it is
 * a directory (not a link), owned by this effective uid, mode 0700: lstat,
 * on every use. A socket planted in it by someone else would receive the
 * engine connection (every request, file and exec) and could forge every
 * answer.
 */
static bool ssh_dir_private(const char *dir)
{
	struct stat st;
	return dir[0] && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       (st.st_mode & 07777) == 0700;
}
/*
 * A fresh private directory, ssh-XXXXXX under the runtime directory
 * (rundir.h: /run/mafsbxfs as root, MAFSBX_RUNDIR), not /tmp: a /tmp
 * cleaner or another user cannot remove or pre-make it there. mkdtemp
 * names it, so a directory that vanished is never made again under its
 * name (someone else may hold that name now). 0 or -errno with `err` set.
 */
int mafsbx_ssh_dir_fresh(struct mafsbx_http *h, struct mafsbx_error *err)
{
	char *base = mafsbx_rundir_choose(NULL);
	if (!base)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	int r = mafsbx_rundir_ensure(base, err);
	struct stat st;
	if (r == 0 && (lstat(base, &st) < 0 || (st.st_mode & 022)))
		r = mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, EACCES, NULL,
					  "runtime directory %s is writable by others: the ssh transport's sockets "
					  "cannot go there", base);
	char dir[SSH_DIR_MAX];
	if (r == 0 && (size_t)snprintf(dir, sizeof(dir), "%s/ssh-XXXXXX", base) >= sizeof(dir))
		r = mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, ENAMETOOLONG, NULL,
					  "runtime directory %s: too long a path for the ssh transport's sockets", base);
	if (r == 0 && !mkdtemp(dir)) {
		int e = errno;
		r = mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL,
					  "cannot make a directory for the ssh transport in %s: %s", base, strerror(e));
	}
	free(base);
	if (r < 0)
		return r;
	snprintf(h->ssh_dir, sizeof(h->ssh_dir), "%s", dir);
	snprintf(h->ssh_ctl, sizeof(h->ssh_ctl), "%s/master", dir);
	return 0;
}
/*
 * With ssh_mu held: the directory, checked now. One that vanished or
 * changed is left alone (nothing is removed or made in it); the master,
 * whose control socket was there, is stopped, and a fresh directory is
 * made. 0, or -errno with `diag` set when no private directory can be had.
 */
static int ssh_dir_checked(struct mafsbx_http *h, char *diag, size_t diagsz)
{
	if (ssh_dir_private(h->ssh_dir))
		return 0;
	if (h->ssh_dir[0])
		log_warn("ssh transport: %s is gone or no longer a private directory of uid %u; using a new one",
			 h->ssh_dir, (unsigned)geteuid());
	ssh_master_end(h);
	h->ssh_dir[0] = h->ssh_ctl[0] = '\0';
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_ssh_dir_fresh(h, &e);
	if (r < 0)
		snprintf(diag, diagsz, "%s", e.message);
	return r;
}
void mafsbx_ssh_master_stop(struct mafsbx_http *h)
{
	ssh_master_end(h);
	/* Only in our own directory: one that changed is someone else's now. */
	if (h->ssh_dir[0] && ssh_dir_private(h->ssh_dir)) {
		(void)unlink(h->ssh_ctl);
		(void)rmdir(h->ssh_dir);
	}
	h->ssh_dir[0] = '\0';
}
/*
 * Before each request: this handle's listener name, in the directory as
 * checked now (a new name when the directory was replaced). On failure
 * the name is left empty and the connection fails with the reason.
 */
void mafsbx_ssh_listen_name(struct mafsbx_http *h, struct pconn *pc)
{
	static _Atomic unsigned long seq;
	pthread_mutex_lock(&h->ssh_mu);
	if (ssh_dir_checked(h, pc->ssh_diag, sizeof(pc->ssh_diag)) < 0) {
		pc->ssh_name[0] = '\0';
	} else {
		size_t dl = strlen(h->ssh_dir);
		if (strncmp(pc->ssh_name, h->ssh_dir, dl) != 0 || pc->ssh_name[dl] != '/')
			snprintf(pc->ssh_name, sizeof(pc->ssh_name), "%s/c%lu", h->ssh_dir, ++seq);
	}
	pthread_mutex_unlock(&h->ssh_mu);
}
/* On the open of a connection: its listener's directory is still the checked, private one. */
static bool ssh_listen_dir_ok(struct mafsbx_http *h, struct pconn *pc)
{
	pthread_mutex_lock(&h->ssh_mu);
	size_t dl = strlen(h->ssh_dir);
	bool ok = pc->ssh_name[0] && dl && strncmp(pc->ssh_name, h->ssh_dir, dl) == 0 && pc->ssh_name[dl] == '/' &&
		  ssh_dir_private(h->ssh_dir);
	if (!ok && pc->ssh_name[0])
		snprintf(pc->ssh_diag, sizeof(pc->ssh_diag),
			 "the ssh transport's private directory changed under it; the next connection uses a new one");
	pthread_mutex_unlock(&h->ssh_mu);
	return ok;
}
/*
 * The control socket of this client's ssh master, starting the master when
 * none runs (and its last start is SSH_MASTER_RETRY_MS ago), or NULL: no
 * master to use, or SSH_MUX_MAX sessions on it already. The master
 * (`ssh -M`, see ssh_spawn) holds one authenticated connection; each
 * transport is then a session on it, which costs a channel open instead of a
 * key exchange and an authentication. The first caller waits for the new
 * master's socket (bounded by the connect timeout); a transport that finds
 * no socket connects on its own (ssh does so when the socket is missing).
 * Counted in h->ssh_muxed when it returns a path (copied into `buf`).
 */
static const char *ssh_master_path(struct mafsbx_http *h, char *buf, size_t bufsz)
{
	const char *ctl = NULL;
	char why[160];
	pthread_mutex_lock(&h->ssh_mu);
	if (ssh_dir_checked(h, why, sizeof(why)) < 0) {
		/* no private directory: no master (the transport fails with the reason) */
		pthread_mutex_unlock(&h->ssh_mu);
		return NULL;
	}
	if (h->ssh_master > 0) {
		int st;
		if (waitpid(h->ssh_master, &st, WNOHANG) == h->ssh_master) {
			h->ssh_master = 0;  /* it died: its socket is gone or stale */
			(void)unlink(h->ssh_ctl);
			close(h->ssh_master_in);
			h->ssh_master_in = -1;
		}
	}
	if (h->ssh_master <= 0 && mafsbx_now_ms() - h->ssh_master_at >= SSH_MASTER_RETRY_MS) {
		h->ssh_master_at = mafsbx_now_ms();
		char diag[128];
		pid_t pid = 0;
		int pp[2];
		if (pipe2(pp, O_CLOEXEC) < 0)
			pp[0] = pp[1] = -1;
		int rd = pp[0];
		if (pp[0] >= 0 && ssh_spawn(h, -1, h->ssh_ctl, &pid, &rd, diag, sizeof(diag)) == 0) {
			h->ssh_master = pid;
			h->ssh_master_in = pp[1];
			pp[1] = -1;
			/*
			 * Wait (bounded by the connect timeout) for its control socket:
			 * the transports asking meanwhile would each do a handshake of
			 * their own, which is what the master is there to save. A master
			 * that fails (a refused key, no route) exits, and the transport
			 * then connects by itself and reports ssh's own reason.
			 */
			long long until = mafsbx_now_ms() + h->connect_ms;
			struct stat st;
			int wst;
			while (stat(h->ssh_ctl, &st) != 0 || !S_ISSOCK(st.st_mode)) {
				if (waitpid(pid, &wst, WNOHANG) == pid) {
					h->ssh_master = 0;
					close(h->ssh_master_in);
					h->ssh_master_in = -1;
					break;
				}
				if (mafsbx_now_ms() >= until)
					break;
				sleep_ms(5);
			}
		}
		if (pp[1] >= 0)
			close(pp[1]);
	}
	if (h->ssh_master > 0 && h->ssh_muxed < SSH_MUX_MAX) {
		h->ssh_muxed++;
		/* a copy: a replaced directory (ssh_dir_checked) changes h->ssh_ctl */
		snprintf(buf, bufsz, "%s", h->ssh_ctl);
		ctl = buf;
	}
	pthread_mutex_unlock(&h->ssh_mu);
	return ctl;
}
void mafsbx_ssh_mux_done(struct mafsbx_http *h)
{
	pthread_mutex_lock(&h->ssh_mu);
	if (h->ssh_muxed)
		h->ssh_muxed--;
	pthread_mutex_unlock(&h->ssh_mu);
}
static socklen_t path_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%s", path);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sa->sun_path) + 1);
}
/*
 * libcurl opens the connection's socket: make the one-shot listener it will
 * connect to (this handle's path in the client's private directory, backlog
 * 1) and a socket autobound to a kernel-chosen unique abstract name, by
 * which the accept recognises it. ssh is started when the connection is
 * accepted.
 */
curl_socket_t mafsbx_ssh_on_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct pconn *pc = clientp;
	(void)purpose;
	(void)addr;
	if (!ssh_listen_dir_ok(pc->h, pc))
		return CURL_SOCKET_BAD;  /* pc->ssh_diag says why */
	struct sockaddr_un sa;
	socklen_t len = path_addr(&sa, pc->ssh_name);
	(void)unlink(pc->ssh_name);  /* a listener of an earlier connection that never connected */
	__do_close int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	__do_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa_family_t fam = AF_UNIX;
	if (l < 0 || fd < 0 || bind(l, (struct sockaddr *)&sa, len) < 0 || listen(l, 1) < 0 ||
	    bind(fd, (struct sockaddr *)&fam, sizeof(fam)) < 0) {
		snprintf(pc->ssh_diag, sizeof(pc->ssh_diag), "cannot make the local end of the ssh transport: %s",
			 strerror(errno));
		return CURL_SOCKET_BAD;
	}
	pthread_mutex_lock(&pc->h->wd_mu);
	int slot = -1;
	for (int i = 0; i < PCONN_FDS && slot < 0; i++)
		if (pc->fds[i] == CURL_SOCKET_BAD)
			slot = i;
	if (slot >= 0) {
		pc->fds[slot] = fd;
		pc->ssh_listen[slot] = move_fd(l);
	}
	pthread_mutex_unlock(&pc->h->wd_mu);
	if (slot < 0) {
		snprintf(pc->ssh_diag, sizeof(pc->ssh_diag), "too many connection attempts at once");
		return CURL_SOCKET_BAD;
	}
	return move_fd(fd);
}
/*
 * The connection libcurl just made (or a reused one: nothing to do): accept
 * it on the one-shot listener, make sure it is ours, and start ssh on it.
 * Runs before the first byte of a request is sent. 0, or -1 with
 * pc->ssh_diag saying why.
 */
int mafsbx_ssh_attach(struct pconn *pc)
{
	struct mafsbx_http *h = pc->h;
	int l = -1, slot = -1;
	curl_socket_t fd = CURL_SOCKET_BAD;
	pthread_mutex_lock(&h->wd_mu);
	for (int i = 0; i < PCONN_FDS && slot < 0; i++) {
		if (pc->fds[i] != CURL_SOCKET_BAD && pc->ssh_listen[i] >= 0) {
			slot = i;
			l = pc->ssh_listen[i];
			fd = pc->fds[i];
			pc->ssh_listen[i] = -1;
		}
	}
	pthread_mutex_unlock(&h->wd_mu);
	if (slot < 0)
		return 0;

	struct sockaddr_un mine;
	socklen_t mlen = sizeof(mine);
	int r = -1;
	if (getsockname(fd, (struct sockaddr *)&mine, &mlen) < 0) {
		snprintf(pc->ssh_diag, sizeof(pc->ssh_diag), "getsockname: %s", strerror(errno));
		goto out;
	}
	/* libcurl's connect to a unix listener completes at once: the connection is queued. */
	long long until = mafsbx_now_ms() + h->connect_ms;
	for (;;) {
		struct sockaddr_un peer;
		socklen_t plen = sizeof(peer);
		int a = accept4(l, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);
		if (a >= 0) {
			if (plen == mlen && memcmp(&peer, &mine, mlen) == 0) {
				pid_t pid = 0;
				int errfd = -1;
				char ctlbuf[SSH_LISTEN_NAME_MAX];
				const char *ctl = ssh_master_path(h, ctlbuf, sizeof(ctlbuf));
				if (ssh_spawn(h, a, ctl, &pid, &errfd, pc->ssh_diag, sizeof(pc->ssh_diag)) < 0) {
					if (ctl)
						mafsbx_ssh_mux_done(h);
					goto out;
				}
				pthread_mutex_lock(&h->wd_mu);
				pc->ssh_pid[slot] = pid;
				pc->ssh_err[slot] = errfd;
				pc->ssh_mux[slot] = ctl != NULL;
				pthread_mutex_unlock(&h->wd_mu);
				r = 0;
				goto out;
			}
			close(a);  /* another process raced to our address: never give it the engine */
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			snprintf(pc->ssh_diag, sizeof(pc->ssh_diag), "accept: %s", strerror(errno));
			goto out;
		}
		long long left = until - mafsbx_now_ms();
		if (left <= 0) {
			snprintf(pc->ssh_diag, sizeof(pc->ssh_diag), "the local end of the ssh transport never connected");
			goto out;
		}
		struct pollfd pfd = { .fd = l, .events = POLLIN };
		(void)poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
	}
out:
	close(l);
	(void)unlink(pc->ssh_name);
	return r;
}
int mafsbx_ssh_on_prereq(void *clientp, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
		     int conn_local_port)
{
	(void)conn_primary_ip;
	(void)conn_local_ip;
	(void)conn_primary_port;
	(void)conn_local_port;
	return mafsbx_ssh_attach(clientp) == 0 ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT;
}
