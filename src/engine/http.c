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
#include "http_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static _Atomic unsigned long request_count;

unsigned long mafsbx_http_request_count(void)
{
	return request_count;
}

void mafsbx_http_count_request(void)
{
	request_count++;
}

static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_ALL);
}

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

bool mafsbx_http_ended(struct mafsbx_http *h)
{
	return ended_for(h, false);
}

int mafsbx_http_ended_error(const char *method, const char *target, struct mafsbx_error *err)
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
		long long wait = next - now;
		struct timespec ts = mafsbx_monotonic_after_ms(wait < 1 ? 1 : wait);
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
		mafsbx_ssh_reap(pc, pid, errfd);
	if (mux)
		mafsbx_ssh_mux_done(pc->h);
	return r;
}

struct pconn *mafsbx_http_pconn_new(struct mafsbx_http *h)
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

void mafsbx_http_pconn_free(struct pconn *pc)
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
		if (mafsbx_ssh_dir_fresh(h, err) < 0) {
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
	mafsbx_cond_init_monotonic(&h->wd_cv);
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
		mafsbx_http_pconn_free(h->idle[i]);
	/* After every transport: a session still on the master would die with it. */
	mafsbx_ssh_master_stop(h);
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
		pc = mafsbx_http_pconn_new(h);
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
	mafsbx_http_pconn_free(pc);
}

int mafsbx_http_setup(struct mafsbx_http *h, struct pconn *pc, char *errbuf)
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
		mafsbx_ssh_listen_name(h, pc);
		/* One address, so one socket per connection: no happy-eyeballs pair of ssh processes. */
		SET(CURLOPT_UNIX_SOCKET_PATH, pc->ssh_name[0] ? pc->ssh_name : "/nonexistent/mafsbx-ssh");
		SET(CURLOPT_OPENSOCKETFUNCTION, mafsbx_ssh_on_open_socket);
		SET(CURLOPT_OPENSOCKETDATA, pc);
		SET(CURLOPT_PREREQFUNCTION, mafsbx_ssh_on_prereq);
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
bool mafsbx_http_tls_resume_refused(struct mafsbx_http *h, struct pconn *pc, CURLcode rc, char *errbuf)
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

bool mafsbx_http_status_ok(long s)
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
	if (!mafsbx_http_status_ok(resp->status)) {
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

int mafsbx_http_curl_error(struct mafsbx_http *h, struct pconn *pc, CURLcode rc, const char *errbuf,
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

int mafsbx_http_sink_error(int rc, struct mafsbx_error *err)
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
		return mafsbx_http_ended_error(rq->method, rq->target, err);
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
		return mafsbx_http_sink_error(x->sink_rc, err);
	if (x->probe_aborted)
		return 0;
	if (rc != CURLE_OK)
		return mafsbx_http_curl_error(x->h, x->pc, rc, errbuf, rq->method, rq->target, err);
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
		return mafsbx_http_ended_error(rq->method, rq->target, err);

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
	if (mafsbx_http_setup(h, pc, errbuf) < 0 || mafsbx_buf_puts(&url, h->base) < 0 ||
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
	if (mafsbx_http_tls_resume_refused(h, pc, rc, errbuf) && resp->status == 0 && !resp->body_bytes && !x.watching)
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
