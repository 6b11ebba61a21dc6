/*
 * hijack.c: the hijacked exec stream of the libcurl client (http.c, see the
 * comment there): a connection made with CURLOPT_CONNECT_ONLY, the request
 * written by hand, stdin sent and half-closed while the raw frames are read
 * with poll() until the engine closes the stream.
 */
#include "http.h"
#include "http_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

#define HIJACK_HEAD_MAX (64 * 1024)
/* A streamed stdin (in_fd) is read and sent this much at a time. */
#define HIJACK_IN_CHUNK (64 * 1024)
/* ---- hijacked exec stream ------------------------------------------------ */

/* The poll timeout of a stream's wait: at most 1 s, so that the end
 * deadline is seen; -ETIMEDOUT past `deadline_ms`, -ESHUTDOWN past the end. */
static int stream_poll_ms(struct mafsbx_http *h, long long deadline_ms)
{
	if (mafsbx_http_ended(h))
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
	if (mafsbx_http_setup(h, hj->pc, errbuf) < 0 || curl_easy_setopt(c, CURLOPT_URL, h->base) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L) != CURLE_OK)
		return mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "http hijack: cannot set up the connection");
	CURLcode rc = curl_easy_perform(c);
	if (mafsbx_http_tls_resume_refused(h, hj->pc, rc, errbuf))
		rc = curl_easy_perform(c); /* CONNECT_ONLY: nothing was sent */
	if (rc == CURLE_OK && h->ep.scheme == MAFSBX_EP_SSH && mafsbx_ssh_attach(hj->pc) < 0)
		rc = CURLE_ABORTED_BY_CALLBACK;
	if (rc != CURLE_OK)
		return mafsbx_http_curl_error(h, hj->pc, rc, errbuf, hj->rq->method, hj->rq->target, err);
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
		return mafsbx_http_ended_error(rq->method, rq->target, err);
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
				return mafsbx_http_ended_error(method, target, err);
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
	return cr < 0 ? mafsbx_http_sink_error(cr, err) : 0;
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
			return mafsbx_http_ended_error(rq->method, rq->target, err);
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
	if (mafsbx_http_ended(h))
		return mafsbx_http_ended_error(rq->method, rq->target, err);

	mafsbx_http_count_request();
	struct hijack *hj = calloc(1, sizeof(*hj));
	struct pconn *pc = hj ? mafsbx_http_pconn_new(h) : NULL;
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
		r = resp->status != 101 && !mafsbx_http_status_ok(resp->status) ? hijack_error_body(hj, hlen, err)
								       : hijack_stream(hj, hlen, err);
	mafsbx_buf_free(&hj->head);
	curl_easy_setopt(pc->c, CURLOPT_ERRORBUFFER, NULL);  /* hj->errbuf goes below */
	mafsbx_http_pconn_free(pc);  /* a hijacked connection is never reused */
	free(hj);
	return r;
}
