/*
 * proxy.c: mafsbx-egress-proxy, the allowlist egress proxy of an allowlist
 * sandbox (doc/upstream.md §7.6 semantics; the pure parts are in
 * proxy_core.c). It listens on 0.0.0.0:MAF_SANDBOX_PROXY_PORT (3128), takes
 * CONNECT only, to port 443 only, of a host matching MAF_SANDBOX_ALLOW,
 * resolves the host itself (the sandbox has no DNS of its own to the
 * outside), dials only the host's globally routable addresses (a host with
 * none is refused without a packet sent to it), and then pipes
 * bytes both ways without looking at them. Every connection prints one
 * flushed decision line on stdout, which the mount reads back through the
 * engine's log of this container (NAME/egress).
 *
 * Bounds: a thread per connection, at most PROXY_MAX_CLIENTS at once (more
 * wait in the kernel's listen queue); the request head 64 KiB and 10 s; the
 * dial 20 s over every address of the host; 64 KiB buffers each way.
 *
 * The test build of this program (mafsbx-egress-proxy-test, compiled with
 * MAFSBX_TEST_KNOBS and never installed) reads
 * MAFSBX_TEST_PROXY_ALLOW_NONGLOBAL=1, which turns the non-global check off,
 * for tests whose only hosts are this machine's own containers (private
 * addresses). The installed proxy has no such switch.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proxy.h"

static struct proxy_allow allow;
#ifdef MAFSBX_TEST_KNOBS
static bool allow_nonglobal;    /* the test build's switch (above) */
#else
static const bool allow_nonglobal = false;
#endif
static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_cv = PTHREAD_COND_INITIALIZER;
static unsigned slots_used;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One write of the whole line, then flushed: lines of concurrent connections never interleave. */
static void decide(enum proxy_decision d, const struct proxy_request *rq)
{
	char line[512];
	size_t n = proxy_decision_line(d, rq->host, rq->port, line, sizeof(line));
	flockfile(stdout);
	fwrite(line, 1, n, stdout);
	fflush(stdout);
	funlockfile(stdout);
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void reply(int fd, int status)
{
	const char *r = proxy_error_response(status);
	send_all(fd, r, strlen(r));
}

/* Read up to the blank line within the deadline. Returns the head length, 0 on EOF/overflow/timeout. */
static size_t read_head(int fd, char *buf, size_t cap)
{
	long long deadline = now_ms() + PROXY_HEAD_TIMEOUT_MS;
	size_t have = 0;
	for (;;) {
		long long left = deadline - now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int pr = poll(&p, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return 0;
		if (have == cap)
			return 0;
		/* peek, so bytes after the head (a client's first TLS record) stay for the tunnel */
		ssize_t r = recv(fd, buf + have, cap - have, MSG_PEEK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		size_t end = proxy_head_end(buf, have + (size_t)r);
		size_t take = end ? end - have : (size_t)r;
		ssize_t g = recv(fd, buf + have, take, 0);
		if (g != (ssize_t)take)
			return 0;
		have += take;
		if (end)
			return end;
	}
}

/*
 * Connect to host:443 trying every GLOBAL address of the host (unless the
 * non-global check is off); the whole dial shares one deadline. A
 * non-global answer is dropped before any packet goes to it: connecting
 * first and judging the peer after would complete a handshake with an
 * internal :443, and 403 against 502 would map the inside. -1 when none
 * answered, with *nonglobal set when the host had addresses but none
 * global (nothing was dialled).
 */
static int dial(const char *host, struct sockaddr_storage *peer, bool *nonglobal)
{
	*nonglobal = false;
	long long deadline = now_ms() + PROXY_DIAL_TIMEOUT_MS;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP };
	struct addrinfo *res = NULL;
	char port[8];
	snprintf(port, sizeof(port), "%d", PROXY_ALLOWED_PORT);
	/* a bracketed IPv6 literal (proxy_host_valid checked it) is resolved without its brackets */
	char literal[64];
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']' && hl - 2 < sizeof(literal)) {
		memcpy(literal, host + 1, hl - 2);
		literal[hl - 2] = '\0';
		host = literal;
	}
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	int fd = -1;
	size_t tried = 0, dropped = 0;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		if (!allow_nonglobal && proxy_addr_nonglobal(ai->ai_addr)) {
			dropped++;
			continue;
		}
		tried++;
		int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
		if (s < 0)
			continue;
		int r = connect(s, ai->ai_addr, ai->ai_addrlen);
		if (r < 0 && errno == EINPROGRESS) {
			for (;;) {
				long long left = deadline - now_ms();
				struct pollfd p = { .fd = s, .events = POLLOUT };
				int pr = left > 0 ? poll(&p, 1, (int)left) : 0;
				if (pr < 0 && errno == EINTR)
					continue;
				int soerr = 0;
				socklen_t sl = sizeof(soerr);
				r = pr == 1 && getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0 ? 0 : -1;
				break;
			}
		}
		if (r == 0) {
			socklen_t pl = sizeof(*peer);
			if (getpeername(s, (struct sockaddr *)peer, &pl) == 0) {
				fd = s;
				break;
			}
		}
		close(s);
		if (now_ms() >= deadline)
			break;
	}
	freeaddrinfo(res);
	*nonglobal = fd < 0 && dropped > 0 && tried == 0;
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/* Both directions in 64 KiB chunks; EOF on one side is passed on as a half-close. */
static void pipe_both(int a, int b, char (*buf)[PROXY_PIPE_CHUNK])
{
	int fds[2] = { a, b };
	bool open_in[2] = { true, true };
	while (open_in[0] || open_in[1]) {
		struct pollfd p[2];
		for (int i = 0; i < 2; i++)
			p[i] = (struct pollfd){ .fd = open_in[i] ? fds[i] : -1, .events = POLLIN };
		int pr = poll(p, 2, -1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return;
		for (int i = 0; i < 2; i++) {
			if (!open_in[i] || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t r = recv(fds[i], buf[i], sizeof(buf[i]), 0);
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0) {
				open_in[i] = false;
				shutdown(fds[1 - i], SHUT_WR);
				if (r < 0)
					return;  /* a reset: the tunnel is over */
				continue;
			}
			const char *q = buf[i];
			size_t n = (size_t)r;
			while (n) {
				ssize_t w = send(fds[1 - i], q, n, MSG_NOSIGNAL);
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					return;
				q += w;
				n -= (size_t)w;
			}
		}
	}
}

/* `head` PROXY_HEAD_MAX bytes, reused as the two pipe buffers once the tunnel is up */
static void serve(int c, char *head)
{
	struct proxy_request rq;
	size_t n = read_head(c, head, PROXY_HEAD_MAX);
	if (!n) {
		reply(c, 400);
		return;
	}
	enum proxy_verdict v = proxy_parse_head(head, n, &rq);
	if (v != PV_CONNECT) {
		reply(c, (int)v);
		return;
	}
	if (rq.port_num != PROXY_ALLOWED_PORT || !proxy_host_allowed(&allow, rq.host)) {
		decide(PD_DENY, &rq);
		reply(c, 403);
		return;
	}
	struct sockaddr_storage peer;
	bool nonglobal = false;
	int u = dial(rq.host, &peer, &nonglobal);
	if (u < 0 && nonglobal) {
		decide(PD_DENY_NONGLOBAL, &rq);
		reply(c, 403);
		return;
	}
	if (u < 0) {
		decide(PD_UNREACHABLE, &rq);
		reply(c, 502);
		return;
	}
	/* Only global addresses were dialled: this re-check of the peer never
	 * fires unless the kernel connected somewhere else. */
	if (!allow_nonglobal && proxy_addr_nonglobal((struct sockaddr *)&peer)) {
		decide(PD_DENY_NONGLOBAL, &rq);
		close(u);
		reply(c, 403);
		return;
	}
	decide(PD_ALLOW, &rq);
	static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
	send_all(c, ok, sizeof(ok) - 1);
	pipe_both(c, u, (char(*)[PROXY_PIPE_CHUNK])head);
	close(u);
}

static void *client_thread(void *arg)
{
	int c = (int)(intptr_t)arg;
	char *mem = malloc(2 * PROXY_PIPE_CHUNK);
	if (mem)
		serve(c, mem);
	else
		reply(c, 503);
	free(mem);
	close(c);
	pthread_mutex_lock(&slots_mu);
	slots_used--;
	pthread_cond_signal(&slots_cv);
	pthread_mutex_unlock(&slots_mu);
	return NULL;
}

/* As PID 1 of its container a signal without a handler is ignored: `docker stop` would wait 10 s. */
static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	const char *port_env = getenv("MAF_SANDBOX_PROXY_PORT");
	unsigned long port = PROXY_DEFAULT_PORT;
	if (port_env && *port_env) {
		char *end;
		errno = 0;
		port = strtoul(port_env, &end, 10);
		if (errno || *end || port == 0 || port > 65535) {
			fprintf(stderr, "mafsbx-egress-proxy: MAF_SANDBOX_PROXY_PORT '%s' is not a port\n", port_env);
			return 2;
		}
	}
#ifdef MAFSBX_TEST_KNOBS
	const char *ng = getenv("MAFSBX_TEST_PROXY_ALLOW_NONGLOBAL");
	allow_nonglobal = ng && strcmp(ng, "1") == 0;
#endif
	if (proxy_allow_parse(getenv("MAF_SANDBOX_ALLOW"), &allow) < 0) {
		fprintf(stderr, "mafsbx-egress-proxy: out of memory\n");
		return 1;
	}
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, 128) < 0) {
		fprintf(stderr, "mafsbx-egress-proxy: cannot listen on port %lu: %s\n", port, strerror(errno));
		return 1;
	}
	char line[4096];
	proxy_startup_line(&allow, (unsigned)port, line, sizeof(line));
	printf("%s\n", line);
	fflush(stdout);

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (;;) {
		pthread_mutex_lock(&slots_mu);
		while (slots_used >= PROXY_MAX_CLIENTS)
			pthread_cond_wait(&slots_cv, &slots_mu);
		pthread_mutex_unlock(&slots_mu);
		int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				usleep(errno == EINTR || errno == ECONNABORTED ? 0 : 100000);
			continue;
		}
		pthread_mutex_lock(&slots_mu);
		slots_used++;
		pthread_mutex_unlock(&slots_mu);
		pthread_t t;
		if (pthread_create(&t, &attr, client_thread, (void *)(intptr_t)c) != 0) {
			close(c);
			pthread_mutex_lock(&slots_mu);
			slots_used--;
			pthread_mutex_unlock(&slots_mu);
		}
	}
}
