/*
 * http.h: the libcurl transport under engine.c. It owns the sockets: a pool
 * of kept-alive connections to one endpoint (unix://, tcp://, TLS, ssh://), the
 * timeouts on every request, the stall watchdog that cuts a stalled stream,
 * and the raw full-duplex stream of an exec start. It knows nothing of the
 * Engine API's URLs or JSON; engine.c builds those.
 *
 * All calls are safe from many threads at once on one `struct mafsbx_http`.
 * A connection goes back to the pool only after a transfer that ended
 * cleanly; an aborted or failed transfer closes its connection, so no
 * half-read response is ever reused and the engine sees the close at once.
 */
#ifndef MAFSBX_HTTP_H
#define MAFSBX_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "endpoint.h"
#include "error.h"

struct mafsbx_http;

/* Error bodies are kept up to this many bytes; the rest is read and dropped. */
#define MAFSBX_HTTP_ERROR_BODY_MAX (64 * 1024)
/* Default bound on a buffered (non-streamed) success body. */
#define MAFSBX_HTTP_BODY_MAX_DEFAULT (64u * 1024 * 1024)

/* Streamed body sink: 0 to go on, negative errno to abort (same as engine.h's). */
typedef int (*mafsbx_http_sink_fn)(const void *data, size_t len, void *ctx);

struct mafsbx_http_req {
	const char *method;          /* "GET", "HEAD", "POST", "PUT", "DELETE" */
	const char *target;          /* origin-form: "/v1.41/containers/x/json?all=1" */
	const char *content_type;    /* required when body != NULL (never form-urlencoded) */
	const void *body;            /* request body, or NULL (POST/PUT then send none) */
	size_t body_len;
	long timeout_ms;             /* total; 0: the client's default */
	long stall_s;                /* >0: cut the transfer when no byte moves for this long */
	/*
	 * Success (2xx) bodies go to `sink` when set, else into resp->body,
	 * bounded by max_body (0: MAFSBX_HTTP_BODY_MAX_DEFAULT). Over the bound:
	 * abort with EK_TOO_BIG.
	 */
	mafsbx_http_sink_fn sink;
	void *sink_ctx;
	uint64_t max_body;
	const char *want_header;     /* capture this response header's value into resp->header */
	bool abort_on_success_body;  /* error-probe requests: drop the connection at a 2xx body */
	bool past_end;               /* may run MAFSBX_HTTP_PAST_END_MS past the end deadline (an unpause) */
};

/* How long a past_end request may run after the end deadline (mafsbx_http_end_by). */
#define MAFSBX_HTTP_PAST_END_MS 5000

struct mafsbx_http_resp {
	long status;
	struct mafsbx_buf body;      /* buffered body (error bodies always land here) */
	struct mafsbx_buf header;    /* value of want_header, "" when absent */
	bool header_seen;
	uint64_t body_bytes;         /* bytes of body seen (streamed or buffered) */
};

/* Release the buffers of a response. */
void mafsbx_http_resp_free(struct mafsbx_http_resp *r);

/*
 * Bind a client to a resolved endpoint. connect_ms and default_timeout_ms
 * apply to every request. Makes no connection.
 */
struct mafsbx_http *mafsbx_http_open(const struct mafsbx_endpoint *ep, long connect_ms, long default_timeout_ms,
				     struct mafsbx_error *err);
void mafsbx_http_close(struct mafsbx_http *h);
/*
 * The end of the client's use, for a bounded teardown: past `deadline_ms`
 * (mafsbx_now_ms() time) every transfer in flight is cut (a curl transfer
 * within about a second, an exec stream within one: its waits wake at least
 * every second) and every new request fails at once with ESHUTDOWN; a
 * request marked past_end (an unpause: no guest is left frozen because the
 * mount ended) has MAFSBX_HTTP_PAST_END_MS more. An earlier deadline
 * replaces a later one, never the reverse.
 */
void mafsbx_http_end_by(struct mafsbx_http *h, long long deadline_ms);

/*
 * One request. Returns 0 when an HTTP answer arrived (any status: the caller
 * maps it, resp->body holding the error body), or a negative errno for a
 * transport failure: EK_UNREACHABLE (cannot connect), EK_TIMEOUT (total
 * timeout or stall cut-off), EK_TOO_BIG (max_body), the sink's errno when it
 * aborted (EK_SYSTEM, or EK_TOO_BIG / EK_TIMEOUT for EFBIG / ETIMEDOUT),
 * EK_ENGINE for a broken answer. `resp` must be zeroed by the caller and is
 * filled also on failure (free it either way).
 */
int mafsbx_http_request(struct mafsbx_http *h, const struct mafsbx_http_req *rq, struct mafsbx_http_resp *resp,
			struct mafsbx_error *err);

/* A hijacked stream's request (exec start). */
struct mafsbx_http_hijack_req {
	const char *method;          /* "POST" */
	const char *target;          /* origin-form: "/v1.41/exec/ID/start" */
	const char *content_type;    /* NULL: "application/json" */
	const void *body;            /* request body, or NULL */
	size_t body_len;
	const void *in;              /* stdin for the stream, or NULL (write side closed at once) */
	size_t in_len;
	/* Instead of `in`: stdin read from the descriptor in_fd as it becomes
	 * readable and sent as read, while the output is delivered (both ways
	 * at once); the write side is half-closed at its end of file. At most
	 * one chunk is held: a guest that stops reading stops the reads. */
	bool in_from_fd;
	int in_fd;
	uint64_t *in_taken;          /* optional: bytes read from in_fd so far */
	long long deadline_ms;       /* absolute mafsbx_now_ms() time, 0: none */
	mafsbx_http_sink_fn on_data; /* every byte of the stream; required */
	void *ctx;
};

/*
 * A hijacked stream (exec start): a fresh connection that is never pooled.
 * Sends `method target` with the body and the Upgrade headers, reads
 * the status and headers. On 101/200 writes `in` (if any, or what in_fd
 * gives until its end of file) and then half-closes the write side,
 * delivering every byte that arrives to `on_data` until the engine closes
 * the stream (which may come before in_fd ends: the rest is not read). On another status the (bounded) error
 * body is left in resp->body and 0 is returned. `deadline_ms` is an absolute
 * mafsbx_now_ms() time (0: none for the stream, while the answer's headers
 * are still bounded by the default request timeout); when it passes the
 * stream is closed and EK_TIMEOUT returned. The half-close works on every
 * transport: TCP (also under TLS, as the Docker client does it), unix
 * sockets and ssh pipes.
 */
int mafsbx_http_hijack(struct mafsbx_http *h, const struct mafsbx_http_hijack_req *rq, struct mafsbx_http_resp *resp,
		       struct mafsbx_error *err);

/*
 * Requests this process has sent to any engine (plain and hijacked), since
 * start. Tests count the engine calls of an operation with it.
 */
unsigned long mafsbx_http_request_count(void);

#endif
