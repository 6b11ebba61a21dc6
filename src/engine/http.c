/*
 * http.c: the libcurl transport (see http.h). It owns three things:
 *
 *  - a pool of easy handles, each keeping its own kept-alive connection; a
 *    request takes a handle under a mutex, runs on it without any lock and
 *    gives it back only when the transfer ended cleanly (otherwise the handle
 *    and its connection are destroyed, so nothing half-read is reused);
 *  - a stall watchdog: one thread per client watching every streamed
 *    transfer; when no byte moved for the stall time (the server stopped
 *    sending, or the caller's sink stopped returning) it cuts the socket
 *    under libcurl's feet (shutdown, then dup3 of a dead socket over the fd,
 *    so the fd number stays owned by libcurl and cannot be reused by anyone
 *    else). The engine sees the close at once and drops the per-container
 *    lock that an open archive stream holds (doc/engine-notes.md §1.7);
 *  - the hijacked exec stream: CURLOPT_CONNECT_ONLY gives a connected
 *    (possibly TLS) socket, on which the request is written by hand, stdin
 *    is sent (a buffer, or a descriptor streamed as it gives, both ways at
 *    once) and half-closed, and the raw frames are read with poll() until
 *    the engine closes the stream;
 *  - ssh:// transports, as the Docker CLI's connhelper does them: every
 *    connection is a unix stream whose other end is the stdin and stdout of
 *    `ssh ... host docker system dial-stdio`. libcurl 7.88 cannot take a
 *    socket that is already connected (CURL_SOCKOPT_ALREADY_CONNECTED is
 *    broken there: it calls connect() anyway and fails on
 *    EISCONN), so the open-socket callback makes a one-shot listener in a
 *    private 0700 directory (under the runtime directory, checked with
 *    lstat on every use, replaced by a fresh one when it vanished or
 *    changed: see ssh_dir_private) and lets libcurl connect to it (a filesystem
 *    path: with an abstract address libcurl 7.88 never reuses the
 *    connection, it takes the empty peer name for a connection still
 *    resolving); before the
 *    first byte is sent (the pre-request callback, or right after the
 *    connect of a hijack) the connection is accepted, checked to be the one
 *    libcurl made (its peer address is our socket's own autobound name, so
 *    another local process that races to connect is turned away), and
 *    handed to a new ssh. The close callback closes our end and reaps the
 *    process (no zombie, no leaked fd), keeping ssh's stderr when it ended
 *    by itself so a failure names its reason ("Permission denied
 *    (publickey)", "docker: not found").
 *
 * Half-closing stdin over TLS: the write side is shut at the TCP layer
 * (shutdown(SHUT_WR)) without a TLS close_notify, exactly what the Docker
 * client does (docker/client hijack.go, tlsClientCon.CloseWrite closes the
 * raw connection's write side). The engine's TLS reader takes the clean EOF
 * at a record boundary as the end of stdin and goes on writing the output;
 * OpenSSL on our side only reads from then on, which needs no write.
 */
#include "http.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rundir.h"

extern char **environ;

#define POOL_MAX 32
#define HIJACK_HEAD_MAX (64 * 1024)
/* A streamed stdin (in_fd) is read and sent this much at a time. */
#define HIJACK_IN_CHUNK (64 * 1024)
/* ssh: how much of its stderr a failure message carries (the tail). */
#define SSH_DIAG_MAX 512
/*
 * ssh: transports multiplexed over the master at most; more connect on their
 * own. sshd's default MaxSessions is 10 per connection, and a refused
 * session would fail the request, so stay below it.
 */
#define SSH_MUX_MAX 8  /* plus the master's own session: 9 */
/* ssh: a master that died is started again at most this often. */
#define SSH_MASTER_RETRY_MS 5000
/* ssh: how long a closed transport may take to end by itself before SIGTERM, then SIGKILL. */
#define SSH_EXIT_GRACE_MS 20
#define SSH_TERM_GRACE_MS 2000
/* ssh: the path of a handle's one-shot listener, in the client's private directory. */
#define SSH_LISTEN_NAME_MAX 108  /* sizeof(sun_path) */
/* ssh: the private directory's path, short enough for "/master" and "/c<20 digits>" in a sun_path. */
#define SSH_DIR_MAX 80

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static _Atomic unsigned long request_count;

unsigned long mafsbx_http_request_count(void)
{
	return request_count;
}
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_ALL);
}

#define PCONN_FDS 4

/*
 * An easy handle and the sockets libcurl opened for it (recorded by the
 * sockopt callback, dropped by the close callback, both under wd_mu). libcurl
 * 7.88 does not tell CURLINFO_ACTIVESOCKET during a transfer, so this is how
 * the watchdog knows which socket to cut. One connection per handle
 * (MAXCONNECTS 1); the spare slots cover connection attempts in flight.
 */
struct pconn {
	CURL *c;
	struct mafsbx_http *h;
	curl_socket_t fds[PCONN_FDS];
	pid_t ssh_pid[PCONN_FDS];    /* ssh: the process behind fds[i], 0 when none */
	bool ssh_mux[PCONN_FDS];     /* ssh: it runs over the master (counted in h->ssh_muxed) */
	int ssh_err[PCONN_FDS];      /* ssh: read end of its stderr pipe, -1 when none */
	int ssh_listen[PCONN_FDS];   /* ssh: the listener fds[i] connects to, until accepted; -1 */
	char ssh_name[SSH_LISTEN_NAME_MAX]; /* ssh: this handle's listener path */
	char ssh_diag[SSH_DIAG_MAX + 64]; /* ssh: how the last transport ended by itself, "" if not */
	bool tls_resume;             /* TLS: the current transfer may offer a cached session */
};

/* One streamed transfer under watch. Lives on the requesting thread's stack. */
struct watch {
	struct watch *next;
	struct watch *prev;
	struct pconn *pc;
	long long last_ms;       /* last time a byte moved */
	long long stall_ms;
	bool fired;
};

struct mafsbx_http {
	struct mafsbx_endpoint ep;
	char base[1200];         /* "http://localhost", "https://[::1]:2376" */
	long connect_ms;
	long timeout_ms;

	pthread_mutex_t pool_mu;
	struct pconn *idle[POOL_MAX];
	size_t n_idle;

	pthread_mutex_t wd_mu;
	pthread_cond_t wd_cv;
	pthread_t wd_thread;
	bool wd_running;
	bool wd_stop;
	struct watch *watches;
	int dead_fd;             /* an unconnected socket: dup3'd over a cut connection */

	/* ssh: one master connection that the transports multiplex over (see ssh_master_path). */
	pthread_mutex_t ssh_mu;
	pid_t ssh_master;        /* 0: none running */
	int ssh_master_in;       /* write end of the master's stdin, -1 when none */
	long long ssh_master_at; /* when it was last started (respawns are spaced) */
	/* The private 0700 directory of the sockets (ssh_dir_checked): "" until
	 * made, replaced by a fresh one when it vanished or changed. */
	char ssh_dir[SSH_DIR_MAX];
	char ssh_ctl[SSH_LISTEN_NAME_MAX]; /* the control socket, in ssh_dir */
	unsigned ssh_muxed;      /* transports running over the master now */
	/* TLS: the server refused a resumed session once; no session is offered to it again
	 * (tls_resume_refused). Never goes back: the server's set-up does not change. */
	_Atomic bool tls_no_resume;
	/* The end of the client's use (mafsbx_http_end_by): 0, or the
	 * mafsbx_now_ms() past which every request and stream is cut. */
	_Atomic long long end_ms;
};

void mafsbx_http_resp_free(struct mafsbx_http_resp *r)
{
	if (!r)
		return;
	mafsbx_buf_free(&r->body);
	mafsbx_buf_free(&r->header);
}

/* ---- the end of the client's use ------------------------------------------ */

void mafsbx_http_end_by(struct mafsbx_http *h, long long deadline_ms)
{
	if (!h)
		return;
	long long cur = atomic_load(&h->end_ms);
	while ((cur == 0 || deadline_ms < cur) && !atomic_compare_exchange_weak(&h->end_ms, &cur, deadline_ms))
		;
}

/* The end deadline has passed: cut what runs, refuse what starts. A
 * request marked past_end (an unpause) has MAFSBX_HTTP_PAST_END_MS more. */
static bool ended_for(struct mafsbx_http *h, bool past_end)
{
	long long end = atomic_load(&h->end_ms);
	return end && mafsbx_now_ms() >= end + (past_end ? MAFSBX_HTTP_PAST_END_MS : 0);
}

static bool ended(struct mafsbx_http *h)
{
	return ended_for(h, false);
}

static int ended_error(const char *method, const char *target, struct mafsbx_error *err)
{
	return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, ESHUTDOWN, NULL,
				     "%s %.200s: the engine client is closing (its end deadline passed)", method, target);
}

/* ---- stall watchdog ------------------------------------------------------ */

static void cut_socket(struct mafsbx_http *h, struct watch *w)
{
	w->fired = true;
	for (int i = 0; i < PCONN_FDS; i++) {
		curl_socket_t fd = w->pc->fds[i];
		if (fd == CURL_SOCKET_BAD)
			continue;
		/* RST rather than FIN on TCP, so the engine's blocked write fails now. */
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		(void)shutdown(fd, SHUT_RDWR);
		/* Closes the real socket while the fd number stays valid for libcurl. */
		(void)dup3(h->dead_fd, fd, O_CLOEXEC);
	}
}

static void *watchdog_main(void *arg)
{
	struct mafsbx_http *h = arg;
	pthread_mutex_lock(&h->wd_mu);
	while (!h->wd_stop) {
		long long now = mafsbx_now_ms();
		long long next = now + 1000;
		for (struct watch *w = h->watches; w; w = w->next) {
			if (w->fired)
				continue;
			long long due = w->last_ms + w->stall_ms;
			if (now >= due)
				cut_socket(h, w);
			else if (due < next)
				next = due;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		long long wait = next - now;
		if (wait < 1)
			wait = 1;
		ts.tv_sec += wait / 1000;
		ts.tv_nsec += (wait % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&h->wd_cv, &h->wd_mu, &ts);
	}
	pthread_mutex_unlock(&h->wd_mu);
	return NULL;
}

static int watch_add(struct mafsbx_http *h, struct watch *w)
{
	int r = 0;
	pthread_mutex_lock(&h->wd_mu);
	if (!h->wd_running) {
		if (pthread_create(&h->wd_thread, NULL, watchdog_main, h) != 0)
			r = -EAGAIN;
		else
			h->wd_running = true;
	}
	if (r == 0) {
		w->prev = NULL;
		w->next = h->watches;
		if (h->watches)
			h->watches->prev = w;
		h->watches = w;
		pthread_cond_signal(&h->wd_cv);
	}
	pthread_mutex_unlock(&h->wd_mu);
	return r;
}

static bool watch_remove(struct mafsbx_http *h, struct watch *w)
{
	pthread_mutex_lock(&h->wd_mu);
	if (w->prev)
		w->prev->next = w->next;
	else
		h->watches = w->next;
	if (w->next)
		w->next->prev = w->prev;
	bool fired = w->fired;
	pthread_mutex_unlock(&h->wd_mu);
	return fired;
}

static bool watch_touch(struct mafsbx_http *h, struct watch *w)
{
	pthread_mutex_lock(&h->wd_mu);
	w->last_ms = mafsbx_now_ms();
	bool fired = w->fired;
	pthread_mutex_unlock(&h->wd_mu);
	return fired;
}

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
static void ssh_reap(struct pconn *pc, pid_t pid, int errfd)
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
static int ssh_dir_fresh(struct mafsbx_http *h, struct mafsbx_error *err)
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
	int r = ssh_dir_fresh(h, &e);
	if (r < 0)
		snprintf(diag, diagsz, "%s", e.message);
	return r;
}

static void ssh_master_stop(struct mafsbx_http *h)
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
static void ssh_listen_name(struct mafsbx_http *h, struct pconn *pc)
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

static void ssh_mux_done(struct mafsbx_http *h)
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
static curl_socket_t on_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct pconn *pc = clientp;
	(void)purpose;
	(void)addr;
	if (!ssh_listen_dir_ok(pc->h, pc))
		return CURL_SOCKET_BAD;  /* pc->ssh_diag says why */
	struct sockaddr_un sa;
	socklen_t len = path_addr(&sa, pc->ssh_name);
	(void)unlink(pc->ssh_name);  /* a listener of an earlier connection that never connected */
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa_family_t fam = AF_UNIX;
	if (l < 0 || fd < 0 || bind(l, (struct sockaddr *)&sa, len) < 0 || listen(l, 1) < 0 ||
	    bind(fd, (struct sockaddr *)&fam, sizeof(fam)) < 0) {
		snprintf(pc->ssh_diag, sizeof(pc->ssh_diag), "cannot make the local end of the ssh transport: %s",
			 strerror(errno));
		goto fail;
	}
	pthread_mutex_lock(&pc->h->wd_mu);
	int slot = -1;
	for (int i = 0; i < PCONN_FDS && slot < 0; i++)
		if (pc->fds[i] == CURL_SOCKET_BAD)
			slot = i;
	if (slot >= 0) {
		pc->fds[slot] = fd;
		pc->ssh_listen[slot] = l;
	}
	pthread_mutex_unlock(&pc->h->wd_mu);
	if (slot < 0) {
		snprintf(pc->ssh_diag, sizeof(pc->ssh_diag), "too many connection attempts at once");
		goto fail;
	}
	return fd;
fail:
	if (l >= 0)
		close(l);
	if (fd >= 0)
		close(fd);
	return CURL_SOCKET_BAD;
}

/*
 * The connection libcurl just made (or a reused one: nothing to do): accept
 * it on the one-shot listener, make sure it is ours, and start ssh on it.
 * Runs before the first byte of a request is sent. 0, or -1 with
 * pc->ssh_diag saying why.
 */
static int ssh_attach(struct pconn *pc)
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
						ssh_mux_done(h);
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

static int on_prereq(void *clientp, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
		     int conn_local_port)
{
	(void)conn_primary_ip;
	(void)conn_local_ip;
	(void)conn_primary_port;
	(void)conn_local_port;
	return ssh_attach(clientp) == 0 ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT;
}

static int on_sockopt(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
	struct pconn *pc = clientp;
	/* The ssh socket was recorded when it was made. */
	if (pc->h->ep.scheme == MAFSBX_EP_SSH)
		return CURL_SOCKOPT_OK;
	pthread_mutex_lock(&pc->h->wd_mu);
	for (int i = 0; i < PCONN_FDS; i++) {
		if (pc->fds[i] == CURL_SOCKET_BAD) {
			pc->fds[i] = fd;
			break;
		}
	}
	pthread_mutex_unlock(&pc->h->wd_mu);
	return CURL_SOCKOPT_OK;
}

/*
 * libcurl closes every socket through here (the callback and its pointer
 * are copied into each connection), so a watched fd is forgotten before
 * its number can be reused.
 */
static int on_close_socket(void *clientp, curl_socket_t fd)
{
	struct pconn *pc = clientp;
	pid_t pid = 0;
	int errfd = -1;
	bool mux = false;
	pthread_mutex_lock(&pc->h->wd_mu);
	for (int i = 0; i < PCONN_FDS; i++) {
		if (pc->fds[i] == fd) {
			pc->fds[i] = CURL_SOCKET_BAD;
			mux = pc->ssh_mux[i];
			pc->ssh_mux[i] = false;
			pid = pc->ssh_pid[i];
			errfd = pc->ssh_err[i];
			if (pc->ssh_listen[i] >= 0) {
				close(pc->ssh_listen[i]);
				(void)unlink(pc->ssh_name);
			}
			pc->ssh_pid[i] = 0;
			pc->ssh_err[i] = -1;
			pc->ssh_listen[i] = -1;
		}
	}
	int r = close(fd);
	pthread_mutex_unlock(&pc->h->wd_mu);
	/* Outside the lock: ending ssh may take a moment, the watchdog must not wait for it. */
	if (pid > 0)
		ssh_reap(pc, pid, errfd);
	if (mux)
		ssh_mux_done(pc->h);
	return r;
}

static struct pconn *pconn_new(struct mafsbx_http *h)
{
	struct pconn *pc = calloc(1, sizeof(*pc));
	if (!pc)
		return NULL;
	pc->h = h;
	for (int i = 0; i < PCONN_FDS; i++) {
		pc->fds[i] = CURL_SOCKET_BAD;
		pc->ssh_err[i] = -1;
		pc->ssh_listen[i] = -1;
	}
	pc->c = curl_easy_init();
	if (!pc->c) {
		free(pc);
		return NULL;
	}
	return pc;
}

static void pconn_free(struct pconn *pc)
{
	if (!pc)
		return;
	curl_easy_cleanup(pc->c);  /* closes its connection through on_close_socket */
	free(pc);
}

/* ---- client and pool ----------------------------------------------------- */

struct mafsbx_http *mafsbx_http_open(const struct mafsbx_endpoint *ep, long connect_ms, long default_timeout_ms,
				     struct mafsbx_error *err)
{
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK) {
		mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "libcurl initialisation failed: %s",
				 curl_easy_strerror(global_rc));
		return NULL;
	}
	if (!ep || (ep->scheme != MAFSBX_EP_UNIX && ep->scheme != MAFSBX_EP_TCP && ep->scheme != MAFSBX_EP_SSH)) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine endpoint: unknown scheme");
		return NULL;
	}
	if (ep->scheme == MAFSBX_EP_UNIX && !ep->socket_path[0]) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine endpoint %s: no socket path", ep->url);
		return NULL;
	}
	if (ep->scheme == MAFSBX_EP_TCP && (!ep->host[0] || ep->port <= 0 || ep->port > 65535)) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine endpoint %s: no host or port", ep->url);
		return NULL;
	}
	if (ep->scheme == MAFSBX_EP_SSH && (!ep->host[0] || ep->host[0] == '-' || ep->user[0] == '-' ||
					    ep->port < 0 || ep->port > 65535)) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine endpoint %s: bad host, user or port", ep->url);
		return NULL;
	}
	struct mafsbx_http *h = calloc(1, sizeof(*h));
	if (!h) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	h->ep = *ep;
	h->connect_ms = connect_ms > 0 ? connect_ms : 5000;
	h->timeout_ms = default_timeout_ms > 0 ? default_timeout_ms : 60000;
	if (ep->scheme == MAFSBX_EP_UNIX || ep->scheme == MAFSBX_EP_SSH)
		snprintf(h->base, sizeof(h->base), "http://localhost");
	else if (strchr(ep->host, ':'))
		snprintf(h->base, sizeof(h->base), "%s://[%s]:%d", ep->tls ? "https" : "http", ep->host, ep->port);
	else
		snprintf(h->base, sizeof(h->base), "%s://%s:%d", ep->tls ? "https" : "http", ep->host, ep->port);
	if (ep->scheme == MAFSBX_EP_SSH) {
		/* The transports' listeners and the master's control socket: ours alone (0700). */
		if (ssh_dir_fresh(h, err) < 0) {
			free(h);
			return NULL;
		}
	}
	h->dead_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->dead_fd < 0) {
		int e = errno;
		if (h->ssh_dir[0])
			(void)rmdir(h->ssh_dir);
		free(h);
		mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL, "socket: %s", strerror(e));
		return NULL;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->wd_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&h->wd_mu, NULL);
	pthread_mutex_init(&h->pool_mu, NULL);
	pthread_mutex_init(&h->ssh_mu, NULL);
	h->ssh_master_at = mafsbx_now_ms() - SSH_MASTER_RETRY_MS;
	h->ssh_master_in = -1;
	return h;
}

void mafsbx_http_close(struct mafsbx_http *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->wd_mu);
	h->wd_stop = true;
	bool running = h->wd_running;
	pthread_cond_signal(&h->wd_cv);
	pthread_mutex_unlock(&h->wd_mu);
	if (running)
		pthread_join(h->wd_thread, NULL);
	for (size_t i = 0; i < h->n_idle; i++)
		pconn_free(h->idle[i]);
	/* After every transport: a session still on the master would die with it. */
	ssh_master_stop(h);
	pthread_mutex_destroy(&h->ssh_mu);
	close(h->dead_fd);
	pthread_cond_destroy(&h->wd_cv);
	pthread_mutex_destroy(&h->wd_mu);
	pthread_mutex_destroy(&h->pool_mu);
	free(h);
}

static struct pconn *pool_get(struct mafsbx_http *h)
{
	struct pconn *pc = NULL;
	pthread_mutex_lock(&h->pool_mu);
	if (h->n_idle)
		pc = h->idle[--h->n_idle];
	pthread_mutex_unlock(&h->pool_mu);
	if (pc)
		curl_easy_reset(pc->c);  /* keeps the live connection */
	else
		pc = pconn_new(h);
	if (pc)
		pc->ssh_diag[0] = '\0';  /* a diagnosis belongs to the request that saw it */
	return pc;
}

static void pool_put(struct mafsbx_http *h, struct pconn *pc, bool reusable)
{
	if (reusable) {
		pthread_mutex_lock(&h->pool_mu);
		if (h->n_idle < POOL_MAX) {
			h->idle[h->n_idle++] = pc;
			pc = NULL;
		}
		pthread_mutex_unlock(&h->pool_mu);
	}
	pconn_free(pc);
}

static int setup_common(struct mafsbx_http *h, struct pconn *pc, char *errbuf)
{
	CURL *c = pc->c;
	CURLcode rc = CURLE_OK;
#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(c, opt, val); } while (0)
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_ERRORBUFFER, errbuf);
	SET(CURLOPT_CONNECTTIMEOUT_MS, h->connect_ms);
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_PROXY, "");  /* never an *_proxy from the environment */
	SET(CURLOPT_TCP_NODELAY, 1L);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_MAXCONNECTS, 1L);
	SET(CURLOPT_SOCKOPTFUNCTION, on_sockopt);
	SET(CURLOPT_SOCKOPTDATA, pc);
	SET(CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
	SET(CURLOPT_CLOSESOCKETDATA, pc);
	SET(CURLOPT_USERAGENT, "mafsbxfs/" MAFSBX_VERSION);
	if (h->ep.scheme == MAFSBX_EP_UNIX)
		SET(CURLOPT_UNIX_SOCKET_PATH, h->ep.socket_path);
	if (h->ep.scheme == MAFSBX_EP_SSH) {
		/* Unique per handle, in a directory only we can enter (checked now); the accept checks the peer anyway. */
		ssh_listen_name(h, pc);
		/* One address, so one socket per connection: no happy-eyeballs pair of ssh processes. */
		SET(CURLOPT_UNIX_SOCKET_PATH, pc->ssh_name[0] ? pc->ssh_name : "/nonexistent/mafsbx-ssh");
		SET(CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
		SET(CURLOPT_OPENSOCKETDATA, pc);
		SET(CURLOPT_PREREQFUNCTION, on_prereq);
		SET(CURLOPT_PREREQDATA, pc);
	}
	if (h->ep.tls) {
		pc->tls_resume = !h->tls_no_resume;
		SET(CURLOPT_SSL_SESSIONID_CACHE, pc->tls_resume ? 1L : 0L);
		SET(CURLOPT_SSL_VERIFYPEER, h->ep.tls_verify ? 1L : 0L);
		SET(CURLOPT_SSL_VERIFYHOST, h->ep.tls_verify ? 2L : 0L);
		if (h->ep.ca[0])
			SET(CURLOPT_CAINFO, h->ep.ca);
		if (h->ep.cert[0])
			SET(CURLOPT_SSLCERT, h->ep.cert);
		if (h->ep.key[0])
			SET(CURLOPT_SSLKEY, h->ep.key);
	}
#undef SET
	return rc == CURLE_OK ? 0 : -EINVAL;
}

/* ---- one request --------------------------------------------------------- */

/*
 * libcurl offers the TLS session of the last connection on each new one. A
 * terminator that asks for client certificates but sets no session id
 * context (socat 1.7 with verify=1) answers every such offer with an
 * "internal error" alert, so every request after the first failed while the
 * mount looked healthy. On that alert in the handshake (nothing of the
 * request was sent, so a retry is safe for any method) the endpoint stops
 * offering sessions for good, says so once in the log, and this transfer's
 * handle is set to retry once without. True: perform it again.
 */
static bool tls_resume_refused(struct mafsbx_http *h, struct pconn *pc, CURLcode rc, char *errbuf)
{
	if (!h->ep.tls || !pc->tls_resume || rc != CURLE_SSL_CONNECT_ERROR || !strstr(errbuf, "alert internal error"))
		return false;
	if (!atomic_exchange(&h->tls_no_resume, true))
		log_warn("engine at %s: the TLS server refused a resumed session (%s); retrying without, and no "
			 "session is resumed with it from now on", h->ep.url, errbuf);
	pc->tls_resume = false;
	errbuf[0] = '\0';
	return curl_easy_setopt(pc->c, CURLOPT_SSL_SESSIONID_CACHE, 0L) == CURLE_OK;
}

struct xfer {
	struct mafsbx_http *h;
	struct pconn *pc;
	const struct mafsbx_http_req *rq;
	struct mafsbx_http_resp *resp;
	uint64_t max_body;
	int sink_rc;
	bool too_big;
	bool nomem;
	bool probe_aborted;
	bool watching;
	bool ended;              /* cut by the end deadline (mafsbx_http_end_by) */
	struct watch w;
};

static bool status_ok(long s)
{
	return s >= 200 && s < 300;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* A new status line (after a 100 Continue too): start over. */
		const char *sp = memchr(p, ' ', len);
		long st = 0;
		if (sp) {
			for (const char *q = sp + 1; q < p + len && *q >= '0' && *q <= '9' && st < 1000; q++)
				st = st * 10 + (*q - '0');
		}
		x->resp->status = st;
		x->resp->header_seen = false;
		mafsbx_buf_reset(&x->resp->header);
		if (x->rq->stall_s > 0 && !x->watching) {
			x->w.pc = x->pc;
			x->w.last_ms = mafsbx_now_ms();
			x->w.stall_ms = x->rq->stall_s * 1000;
			x->w.fired = false;
			if (watch_add(x->h, &x->w) == 0)
				x->watching = true;
		}
		return len;
	}
	const char *want = x->rq->want_header;
	size_t wl = want ? strlen(want) : 0;
	if (wl && len > wl && p[wl] == ':' && strncasecmp(p, want, wl) == 0) {
		const char *v = p + wl + 1, *end = p + len;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
			end--;
		mafsbx_buf_reset(&x->resp->header);
		if (mafsbx_buf_append(&x->resp->header, v, (size_t)(end - v)) < 0) {
			x->nomem = true;
			return 0;
		}
		x->resp->header_seen = true;
	}
	return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	const struct mafsbx_http_req *rq = x->rq;
	struct mafsbx_http_resp *resp = x->resp;
	resp->body_bytes += len;
	if (x->watching && watch_touch(x->h, &x->w))
		return 0;
	if (!status_ok(resp->status)) {
		size_t room = MAFSBX_HTTP_ERROR_BODY_MAX > resp->body.len ? MAFSBX_HTTP_ERROR_BODY_MAX - resp->body.len : 0;
		if (room && mafsbx_buf_append(&resp->body, p, len < room ? len : room) < 0) {
			x->nomem = true;
			return 0;
		}
		return len;
	}
	if (rq->abort_on_success_body) {
		x->probe_aborted = true;
		return 0;
	}
	if (x->max_body && resp->body_bytes > x->max_body) {
		x->too_big = true;
		return 0;
	}
	if (rq->sink) {
		int r = rq->sink(p, len, rq->sink_ctx);
		if (x->watching && watch_touch(x->h, &x->w))
			return 0;
		if (r < 0) {
			x->sink_rc = r;
			return 0;
		}
		return len;
	}
	if (mafsbx_buf_append(&resp->body, p, len) < 0) {
		x->nomem = true;
		return 0;
	}
	return len;
}

static int on_progress(void *ud, curl_off_t dlt, curl_off_t dln, curl_off_t ult, curl_off_t uln)
{
	struct xfer *x = ud;
	/* libcurl calls this at least once a second, even while nothing moves */
	if (ended_for(x->h, x->rq->past_end)) {
		x->ended = true;
		return 1;
	}
	if (!x->watching)
		return 0;
	pthread_mutex_lock(&x->h->wd_mu);
	bool fired = x->w.fired;
	pthread_mutex_unlock(&x->h->wd_mu);
	return fired ? 1 : 0;
}

static int map_curl_error(struct mafsbx_http *h, struct pconn *pc, CURLcode rc, const char *errbuf,
			  const char *method, const char *target, struct mafsbx_error *err)
{
	CURL *c = pc->c;
	const char *detail = errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc);
	long os_errno = 0;
	/*
	 * ssh: a transport that ended by itself explains the failure better than
	 * libcurl's "Empty reply from server" does; the engine is unreachable.
	 */
	if (h->ep.scheme == MAFSBX_EP_SSH && pc->ssh_diag[0] && rc != CURLE_OPERATION_TIMEDOUT &&
	    rc != CURLE_OUT_OF_MEMORY)
		return mafsbx_error_set(err, MAFSBX_EK_UNREACHABLE, "engine at %s cannot be reached: %s (%s)", h->ep.url,
					pc->ssh_diag, detail);
	/*
	 * TLS 1.3 finishes the handshake before the server has checked our
	 * certificate: its refusal (no client certificate, an expired or
	 * unknown one) arrives as an alert on the first read. It is still the
	 * TLS set-up that failed, so it is reported as such.
	 */
	if (h->ep.tls && (rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR) &&
	    (strstr(detail, "SSL") || strstr(detail, "alert")))
		return mafsbx_error_set(err, MAFSBX_EK_UNREACHABLE, "engine at %s: TLS failed (the engine refused "
					"this client's certificate?): %s", h->ep.url, detail);
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		/* libcurl words a unix socket failure as "localhost port 80": say what failed. */
		if (h->ep.scheme == MAFSBX_EP_UNIX && curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK &&
		    os_errno > 0)
			return mafsbx_error_set(err, MAFSBX_EK_UNREACHABLE, "engine at %s cannot be reached: connect %s: %s",
						h->ep.url, h->ep.socket_path, strerror((int)os_errno));
		return mafsbx_error_set(err, MAFSBX_EK_UNREACHABLE, "engine at %s cannot be reached: %s", h->ep.url,
					detail);
	case CURLE_OPERATION_TIMEDOUT:
		return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "%s %.200s: engine at %s timed out: %s", method,
					target, h->ep.url, detail);
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
		return mafsbx_error_set(err, MAFSBX_EK_UNREACHABLE, "engine at %s: TLS failed: %s", h->ep.url, detail);
	case CURLE_OUT_OF_MEMORY:
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory talking to the engine");
	default:
		return mafsbx_error_set(err, MAFSBX_EK_ENGINE, "%s %.200s: engine connection failed: %s", method, target,
					detail);
	}
}

static int sink_error(int rc, struct mafsbx_error *err)
{
	int e = -rc;
	if (e == EFBIG)
		return mafsbx_error_set(err, MAFSBX_EK_TOO_BIG, "stream aborted by its reader: %s", strerror(e));
	if (e == ETIMEDOUT)
		return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "stream aborted by its reader: %s", strerror(e));
	if (e == ENOMEM)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "stream aborted by its reader: %s", strerror(e));
	return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e > 0 ? e : EIO, NULL, "stream aborted by its reader: %s",
				     strerror(e > 0 ? e : EIO));
}

/* The request's headers: an explicit Content-Type always (libcurl would otherwise send form-urlencoded), no Expect. */
static struct curl_slist *request_headers(const struct mafsbx_http_req *rq)
{
	char ct[160];
	snprintf(ct, sizeof(ct), "Content-Type:%s%s", rq->content_type ? " " : "",
		 rq->content_type ? rq->content_type : "");
	struct curl_slist *hdrs = curl_slist_append(NULL, ct), *tmp;
	if (!hdrs)
		return NULL;
	if (!(tmp = curl_slist_append(hdrs, "Expect:"))) {
		curl_slist_free_all(hdrs);
		return NULL;
	}
	return tmp;
}

/* The transfer's options: URL, headers, method and body, timeouts, callbacks, the stall watch. */
static CURLcode request_options(struct mafsbx_http *h, CURL *c, const struct mafsbx_http_req *rq, const char *url,
				struct curl_slist *hdrs, struct xfer *x)
{
	CURLcode rc = CURLE_OK;
#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(c, opt, val); } while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_HTTPHEADER, hdrs);
	if (strcmp(rq->method, "GET") == 0) {
		SET(CURLOPT_HTTPGET, 1L);
	} else if (strcmp(rq->method, "HEAD") == 0) {
		SET(CURLOPT_NOBODY, 1L);
	} else if (strcmp(rq->method, "POST") == 0 || strcmp(rq->method, "PUT") == 0 || rq->body) {
		SET(CURLOPT_POST, 1L);
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(rq->body ? rq->body_len : 0));
		SET(CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		if (strcmp(rq->method, "POST") != 0)
			SET(CURLOPT_CUSTOMREQUEST, rq->method);
	} else {
		SET(CURLOPT_CUSTOMREQUEST, rq->method);
	}
	/*
	 * A POST is never sent twice: libcurl silently re-sends a request whose
	 * reused connection closed before any answer byte came back, but the
	 * engine may have acted on the first copy (a pause whose answer was
	 * lost, replayed, is answered "already paused", which reads as somebody
	 * else's pause: the container stayed frozen for good). On a fresh
	 * connection a lost answer is an error the caller can reason about.
	 */
	if (strcmp(rq->method, "POST") == 0)
		SET(CURLOPT_FRESH_CONNECT, 1L);
	SET(CURLOPT_TIMEOUT_MS, rq->timeout_ms > 0 ? rq->timeout_ms : h->timeout_ms);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, x);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, x);
	if (rq->stall_s > 0) {
		SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
		SET(CURLOPT_LOW_SPEED_TIME, rq->stall_s);
	}
	/* every transfer: the stall watch's cut and the end deadline */
	SET(CURLOPT_NOPROGRESS, 0L);
	SET(CURLOPT_XFERINFOFUNCTION, on_progress);
	SET(CURLOPT_XFERINFODATA, x);
#undef SET
	return rc;
}

/* What a performed transfer came to: 0 for an HTTP answer, else the error (stall, bound, sink, transport). */
static int request_outcome(struct xfer *x, CURLcode rc, bool fired, const char *errbuf, struct mafsbx_error *err)
{
	const struct mafsbx_http_req *rq = x->rq;
	if (x->ended && rc != CURLE_OK)
		return ended_error(rq->method, rq->target, err);
	if (fired && rc != CURLE_OK)
		return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT,
					"%s %.200s: stream stalled for %ld s (no byte moved); connection closed",
					rq->method, rq->target, rq->stall_s);
	if (x->too_big)
		return mafsbx_error_set(err, MAFSBX_EK_TOO_BIG, "%s %.200s: answer larger than %" PRIu64 " bytes",
					rq->method, rq->target, x->max_body);
	if (x->nomem)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory reading the engine's answer");
	if (x->sink_rc < 0)
		return sink_error(x->sink_rc, err);
	if (x->probe_aborted)
		return 0;
	if (rc != CURLE_OK)
		return map_curl_error(x->h, x->pc, rc, errbuf, rq->method, rq->target, err);
	if (x->resp->status < 100)
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s %.200s: no HTTP status from the engine",
					rq->method, rq->target);
	return 0;
}

int mafsbx_http_request(struct mafsbx_http *h, const struct mafsbx_http_req *rq, struct mafsbx_http_resp *resp,
			struct mafsbx_error *err)
{
	if (!h || !rq || !rq->method || !rq->target || rq->target[0] != '/' || !resp)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "http request: bad arguments");
	if (rq->body && !rq->content_type)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "http request %s: a body needs a content type",
					rq->method);
	resp->status = 0;
	resp->header_seen = false;
	resp->body_bytes = 0;
	mafsbx_buf_reset(&resp->body);
	mafsbx_buf_reset(&resp->header);
	if (ended_for(h, rq->past_end))
		return ended_error(rq->method, rq->target, err);

	char errbuf[CURL_ERROR_SIZE] = "";
	struct mafsbx_buf url = MAFSBX_BUF_INIT;
	struct curl_slist *hdrs = NULL;
	struct xfer x = { .h = h, .rq = rq, .resp = resp };
	x.max_body = rq->max_body ? rq->max_body : (rq->sink ? 0 : MAFSBX_HTTP_BODY_MAX_DEFAULT);
	int r = 0;
	bool reusable = false;

	request_count++;
	struct pconn *pc = pool_get(h);
	if (!pc)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory (curl handle)");
	CURL *c = pc->c;
	x.pc = pc;
	if (setup_common(h, pc, errbuf) < 0 || mafsbx_buf_puts(&url, h->base) < 0 ||
	    mafsbx_buf_puts(&url, rq->target) < 0) {
		r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "http request: cannot set up the transfer");
		goto out;
	}
	if (!(hdrs = request_headers(rq))) {
		r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		goto out;
	}
	CURLcode rc = request_options(h, c, rq, url.data, hdrs, &x);
	if (rc != CURLE_OK) {
		r = mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "http request: curl option refused: %s",
				     curl_easy_strerror(rc));
		goto out;
	}

	rc = curl_easy_perform(c);
	if (tls_resume_refused(h, pc, rc, errbuf) && resp->status == 0 && !resp->body_bytes && !x.watching)
		rc = curl_easy_perform(c);
	bool fired = x.watching ? watch_remove(h, &x.w) : false;
	x.watching = false;
	r = request_outcome(&x, rc, fired, errbuf, err);
	/* Cut just as it completed: the answer is whole, the connection is not. */
	reusable = rc == CURLE_OK && r == 0 && !fired;

out:
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	/* errbuf is this frame's: a pooled handle must not keep pointing at it */
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(hdrs);
	mafsbx_buf_free(&url);
	pool_put(h, pc, reusable);
	return r;
}

/* ---- hijacked exec stream ------------------------------------------------ */

/* The poll timeout of a stream's wait: at most 1 s, so that the end
 * deadline is seen; -ETIMEDOUT past `deadline_ms`, -ESHUTDOWN past the end. */
static int stream_poll_ms(struct mafsbx_http *h, long long deadline_ms)
{
	if (ended(h))
		return -ESHUTDOWN;
	if (!deadline_ms)
		return 1000;
	long long left = deadline_ms - mafsbx_now_ms();
	if (left <= 0)
		return -ETIMEDOUT;
	return left > 1000 ? 1000 : (int)left;
}

static int wait_fd(struct mafsbx_http *h, curl_socket_t fd, short events, long long deadline_ms)
{
	for (;;) {
		int to = stream_poll_ms(h, deadline_ms);
		if (to < 0)
			return to;
		struct pollfd pfd = { .fd = fd, .events = events };
		int n = poll(&pfd, 1, to);
		if (n > 0)
			return pfd.revents;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int send_all(struct mafsbx_http *h, CURL *c, curl_socket_t fd, const void *p, size_t len,
		    long long deadline_ms)
{
	const char *q = p;
	while (len) {
		size_t sent = 0;
		CURLcode rc = curl_easy_send(c, q, len, &sent);
		if (rc == CURLE_AGAIN) {
			int w = wait_fd(h, fd, POLLOUT, deadline_ms);
			if (w < 0)
				return w;
			continue;
		}
		if (rc != CURLE_OK)
			return -EPIPE;
		q += sent;
		len -= sent;
	}
	return 0;
}

/* Read what is there (up to cap). 0 on EOF, -EAGAIN when nothing, else bytes. */
static ssize_t recv_some(CURL *c, void *p, size_t cap)
{
	size_t got = 0;
	CURLcode rc = curl_easy_recv(c, p, cap, &got);
	if (rc == CURLE_AGAIN)
		return -EAGAIN;
	if (rc != CURLE_OK)
		return -ECONNRESET;
	return (ssize_t)got;
}

static long parse_content_length(const char *head)
{
	for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
		if (strncasecmp(p + 2, "Content-Length:", 15) == 0)
			return strtol(p + 2 + 15, NULL, 10);
	}
	return -1;
}

/* One hijacked stream in flight. */
struct hijack {
	struct mafsbx_http *h;
	const struct mafsbx_http_hijack_req *rq;
	struct mafsbx_http_resp *resp;
	struct pconn *pc;
	CURL *c;
	curl_socket_t fd;
	long long head_deadline;     /* bounds the request and the answer's headers */
	struct mafsbx_buf head;      /* the request, then the answer's status line and headers */
	char buf[16384];
	char inbuf[HIJACK_IN_CHUNK]; /* in_fd: the chunk read and not yet sent */
	/* libcurl's CURLOPT_ERRORBUFFER for the whole stream: curl_easy_send and
	 * curl_easy_recv write their failure message there long after the
	 * connect step has returned, so it cannot live on that step's stack */
	char errbuf[CURL_ERROR_SIZE];
};

/* Phase 1: a fresh connection (CONNECT_ONLY), its socket in hj->fd. */
static int hijack_connect(struct hijack *hj, struct mafsbx_error *err)
{
	char *errbuf = hj->errbuf;
	struct mafsbx_http *h = hj->h;
	CURL *c = hj->c;
	if (setup_common(h, hj->pc, errbuf) < 0 || curl_easy_setopt(c, CURLOPT_URL, h->base) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L) != CURLE_OK)
		return mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "http hijack: cannot set up the connection");
	CURLcode rc = curl_easy_perform(c);
	if (tls_resume_refused(h, hj->pc, rc, errbuf))
		rc = curl_easy_perform(c); /* CONNECT_ONLY: nothing was sent */
	if (rc == CURLE_OK && h->ep.scheme == MAFSBX_EP_SSH && ssh_attach(hj->pc) < 0)
		rc = CURLE_ABORTED_BY_CALLBACK;
	if (rc != CURLE_OK)
		return map_curl_error(h, hj->pc, rc, errbuf, hj->rq->method, hj->rq->target, err);
	hj->fd = CURL_SOCKET_BAD;
	if (curl_easy_getinfo(c, CURLINFO_ACTIVESOCKET, &hj->fd) != CURLE_OK || hj->fd == CURL_SOCKET_BAD)
		return mafsbx_error_set(err, MAFSBX_EK_ENGINE, "http hijack: no socket after connect");
	return 0;
}

/* Phase 2: the request with its JSON body and the Upgrade headers. */
static int hijack_send(struct hijack *hj, struct mafsbx_error *err)
{
	const struct mafsbx_http_hijack_req *rq = hj->rq;
	if (mafsbx_buf_printf(&hj->head,
			      "%s %s HTTP/1.1\r\nHost: docker\r\nUser-Agent: mafsbxfs/%s\r\n"
			      "Content-Type: %s\r\nContent-Length: %zu\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n",
			      rq->method, rq->target, MAFSBX_VERSION,
			      rq->content_type ? rq->content_type : "application/json", rq->body ? rq->body_len : 0) < 0 ||
	    (rq->body && mafsbx_buf_append(&hj->head, rq->body, rq->body_len) < 0))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	int s = send_all(hj->h, hj->c, hj->fd, hj->head.data, hj->head.len, hj->head_deadline);
	if (s == -ESHUTDOWN)
		return ended_error(rq->method, rq->target, err);
	if (s == -ETIMEDOUT)
		return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "%s %.200s: timed out sending the request", rq->method,
					rq->target);
	if (s < 0)
		return mafsbx_error_set(err, MAFSBX_EK_ENGINE, "%s %.200s: engine closed the connection", rq->method,
					rq->target);
	return 0;
}

/*
 * Phase 3: status line and headers into hj->head; whatever follows them is
 * already stream data. Sets resp->status and *hlen (the headers' length).
 */
static int hijack_read_head(struct hijack *hj, size_t *hlen, struct mafsbx_error *err)
{
	const char *method = hj->rq->method, *target = hj->rq->target;
	struct mafsbx_buf *head = &hj->head;
	mafsbx_buf_reset(head);
	char *eoh = NULL;
	while (!eoh) {
		ssize_t n = recv_some(hj->c, hj->buf, sizeof(hj->buf));
		if (n == -EAGAIN) {
			int w = wait_fd(hj->h, hj->fd, POLLIN, hj->head_deadline);
			if (w == -ESHUTDOWN)
				return ended_error(method, target, err);
			if (w == -ETIMEDOUT)
				return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "%s %.200s: timed out waiting for the answer",
							method, target);
			if (w < 0)
				return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, -w, NULL, "poll: %s", strerror(-w));
			continue;
		}
		if (n <= 0)
			return mafsbx_error_set(err, MAFSBX_EK_ENGINE,
						"%s %.200s: engine closed the connection before answering", method, target);
		if (head->len + (size_t)n > HIJACK_HEAD_MAX)
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s %.200s: answer headers too large", method,
						target);
		if (mafsbx_buf_append(head, hj->buf, (size_t)n) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		eoh = strstr(head->data, "\r\n\r\n");
		if (!eoh && memchr(head->data, '\0', head->len))
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s %.200s: NUL byte in answer headers", method,
						target);
	}
	*hlen = (size_t)(eoh - head->data) + 4;
	long status = 0;
	if (strncmp(head->data, "HTTP/1.", 7) != 0 || head->len < 12 ||
	    sscanf(head->data + 8, " %ld", &status) != 1 || status < 100 || status > 999)
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s %.200s: malformed status line", method, target);
	hj->resp->status = status;
	return 0;
}

/* Phase 4a, an error answer: its body, bounded by Content-Length, else read to EOF. */
static int hijack_error_body(struct hijack *hj, size_t hlen, struct mafsbx_error *err)
{
	struct mafsbx_http_resp *resp = hj->resp;
	const char *rest = hj->head.data + hlen;
	size_t rest_len = hj->head.len - hlen;
	hj->head.data[hlen - 4] = '\0';  /* the headers alone, for Content-Length */
	long cl = parse_content_length(hj->head.data);
	size_t want = cl >= 0 ? (size_t)cl : MAFSBX_HTTP_ERROR_BODY_MAX;
	if (want > MAFSBX_HTTP_ERROR_BODY_MAX)
		want = MAFSBX_HTTP_ERROR_BODY_MAX;
	if (mafsbx_buf_append(&resp->body, rest, rest_len < want ? rest_len : want) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	while (resp->body.len < want) {
		ssize_t n = recv_some(hj->c, hj->buf, sizeof(hj->buf));
		if (n == -EAGAIN) {
			if (wait_fd(hj->h, hj->fd, POLLIN, hj->head_deadline) < 0)
				break;
			continue;
		}
		if (n <= 0)
			break;
		size_t take = (size_t)n < want - resp->body.len ? (size_t)n : want - resp->body.len;
		if (mafsbx_buf_append(&resp->body, hj->buf, take) < 0)
			break;
	}
	resp->body_bytes = resp->body.len;
	return 0;
}

/* Hand stream bytes to the caller's sink. */
static int hijack_deliver(struct hijack *hj, const void *data, size_t len, struct mafsbx_error *err)
{
	hj->resp->body_bytes += len;
	int cr = hj->rq->on_data(data, len, hj->rq->ctx);
	return cr < 0 ? sink_error(cr, err) : 0;
}

/* The stream's stdin: a buffer given whole, or what in_fd gives, chunk by chunk. */
struct hijack_in {
	const char *p;               /* unsent bytes: rq->in, or a chunk of hj->inbuf */
	size_t left;
	bool from_fd;                /* more may come from rq->in_fd */
	bool shut;                   /* the write side is closed */
};

/* Send what is pending; stop sending (drop the rest) when the peer stopped reading. */
static void hijack_in_send(struct hijack *hj, struct hijack_in *in)
{
	if (!in->left)
		return;
	size_t sent = 0;
	CURLcode rc = curl_easy_send(hj->c, in->p, in->left, &sent);
	if (rc == CURLE_OK) {
		in->p += sent;
		in->left -= sent;
	} else if (rc != CURLE_AGAIN) {
		/* the process stopped reading stdin: not our error */
		in->left = 0;
		in->from_fd = false;
	}
}

/* in_fd is readable (or closed): the next chunk, or its end. */
static void hijack_in_read(struct hijack *hj, struct hijack_in *in)
{
	const struct mafsbx_http_hijack_req *rq = hj->rq;
	ssize_t n = read(rq->in_fd, hj->inbuf, sizeof(hj->inbuf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0)
		log_warn("%s %.200s: reading stdin: %s; the command's stdin is closed", rq->method, rq->target,
			 strerror(errno));
	if (n <= 0) {
		in->from_fd = false;
		return;
	}
	in->p = hj->inbuf;
	in->left = (size_t)n;
	if (rq->in_taken)
		*rq->in_taken += (uint64_t)n;
}

/*
 * Wait for the socket (readable; writable while stdin is pending) and, when
 * no chunk is pending, for in_fd. Returns 0, or -ETIMEDOUT / -errno.
 */
static int hijack_wait(struct hijack *hj, struct hijack_in *in)
{
	const struct mafsbx_http_hijack_req *rq = hj->rq;
	bool want_in = in->from_fd && !in->left;
	struct pollfd pfd[2] = {
		{ .fd = hj->fd, .events = (short)(POLLIN | (in->left ? POLLOUT : 0)) },
		{ .fd = want_in ? rq->in_fd : -1, .events = POLLIN },
	};
	for (;;) {
		int to = stream_poll_ms(hj->h, rq->deadline_ms);
		if (to < 0)
			return to;
		int n = poll(pfd, 2, to);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (want_in && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
			if (pfd[1].revents & POLLNVAL)
				in->from_fd = false;
			else
				hijack_in_read(hj, in);
		}
		return 0;
	}
}

/*
 * Phase 4b, the stream: the bytes that came with the headers, then stdin
 * written (the buffer, or in_fd as it gives) and the write side
 * half-closed, while every byte that arrives goes to on_data, until the
 * engine closes the stream or the deadline passes.
 */
static int hijack_stream(struct hijack *hj, size_t hlen, struct mafsbx_error *err)
{
	const struct mafsbx_http_hijack_req *rq = hj->rq;
	int r;
	if (hj->head.len > hlen && (r = hijack_deliver(hj, hj->head.data + hlen, hj->head.len - hlen, err)) < 0)
		return r;
	struct hijack_in in = { .from_fd = rq->in_from_fd };
	if (!rq->in_from_fd && rq->in) {
		in.p = rq->in;
		in.left = rq->in_len;
	}
	for (;;) {
		hijack_in_send(hj, &in);
		if (!in.left && !in.from_fd && !in.shut) {
			(void)shutdown(hj->fd, SHUT_WR);
			in.shut = true;
		}
		ssize_t n;
		while ((n = recv_some(hj->c, hj->buf, sizeof(hj->buf))) > 0)
			if ((r = hijack_deliver(hj, hj->buf, (size_t)n, err)) < 0)
				return r;
		if (n == 0 || n == -ECONNRESET)
			return 0;
		int w = hijack_wait(hj, &in);
		if (w == -ESHUTDOWN)
			return ended_error(rq->method, rq->target, err);
		if (w == -ETIMEDOUT)
			return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "%s %.200s: stream timed out; closed", rq->method,
						rq->target);
		if (w < 0)
			return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, -w, NULL, "poll: %s", strerror(-w));
	}
}

int mafsbx_http_hijack(struct mafsbx_http *h, const struct mafsbx_http_hijack_req *rq, struct mafsbx_http_resp *resp,
		       struct mafsbx_error *err)
{
	if (!h || !rq || !rq->method || !rq->target || rq->target[0] != '/' || !resp || !rq->on_data)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "http hijack: bad arguments");
	resp->status = 0;
	resp->body_bytes = 0;
	mafsbx_buf_reset(&resp->body);
	mafsbx_buf_reset(&resp->header);
	if (ended(h))
		return ended_error(rq->method, rq->target, err);

	request_count++;
	struct hijack *hj = calloc(1, sizeof(*hj));
	struct pconn *pc = hj ? pconn_new(h) : NULL;
	if (!pc) {
		free(hj);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory (curl handle)");
	}
	/* field by field: a compound literal of this (large) struct would be built on the stack */
	hj->h = h;
	hj->rq = rq;
	hj->resp = resp;
	hj->pc = pc;
	hj->c = pc->c;
	hj->head = (struct mafsbx_buf)MAFSBX_BUF_INIT;
	/* Until the answer's headers are in, a run without a deadline still has the request timeout. */
	size_t hlen = 0;
	int r = hijack_connect(hj, err);
	hj->head_deadline = rq->deadline_ms ? rq->deadline_ms : mafsbx_now_ms() + h->timeout_ms;
	if (r == 0)
		r = hijack_send(hj, err);
	if (r == 0)
		r = hijack_read_head(hj, &hlen, err);
	if (r == 0)
		r = resp->status != 101 && !status_ok(resp->status) ? hijack_error_body(hj, hlen, err)
								       : hijack_stream(hj, hlen, err);
	mafsbx_buf_free(&hj->head);
	curl_easy_setopt(pc->c, CURLOPT_ERRORBUFFER, NULL);  /* hj->errbuf goes below */
	pconn_free(pc);  /* a hijacked connection is never reused */
	free(hj);
	return r;
}
