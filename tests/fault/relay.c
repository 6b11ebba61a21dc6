/*
 * relay.c: a controllable fault relay in front of the Docker engine socket,
 * for the fault and soak tests (tests/fault). The mount under test is given
 * `-o host=unix://LISTEN`; every connection it opens is relayed, byte for
 * byte, to the real engine socket, except where a fault was asked for.
 * dockerd is shared with other engineers and tests, so faults are never
 * made by touching it: a cut here is, to the daemon, exactly an engine that
 * dropped the connection, and `down` is an engine that restarted.
 *
 *   relay serve LISTEN TARGET CONTROL   run the relay (until SIGTERM/SIGINT)
 *   relay ctl CONTROL COMMAND...        send one command, print the reply;
 *                                       exit 0 on "ok ...", 1 otherwise
 *   relay wait CONTROL ID SECONDS       until rule ID has fired at least
 *                                       once: exit 0, or 1 at the deadline
 *
 * The client-to-engine stream is parsed as HTTP/1.1 requests (request line,
 * headers, a Content-Length or chunked body; after an `Upgrade` request,
 * the exec start, the rest is a raw stream), so a fault can be chosen by
 * the request line and placed at a byte offset of that request or of its
 * answer. A request's header is held until it is complete, so nothing of a
 * matched request reaches the engine before its fault is armed. Clients do
 * not pipeline, so an answer starts at the engine-side stream offset where
 * its request began to be forwarded.
 *
 * Commands on CONTROL (one line each; one reply line "ok ..." or "err ..."):
 *   rule cut|stall METHOD GLOB [req=N|resp=N] [ms=N] [count=N]
 *       for the next `count` (default 1, -1 = every) requests whose method
 *       is METHOD (or "*") and whose target matches the fnmatch GLOB: `cut`
 *       closes both sides once N bytes of the request (req=) or of its
 *       answer (resp=, the default, N=0: before any byte of the answer) were
 *       forwarded (with ms=M: at the first moment after that point when
 *       that direction was quiet for M ms, e.g. between two exec outputs); `stall` stops forwarding that direction at that point for
 *       `ms` milliseconds, then goes on. Replies "ok ID".
 *   rule replay METHOD GLOB ms=N [count=N]
 *       answer such a request (one without a body) itself, never sending
 *       it to the engine, with the engine's answer to the same target
 *       fetched at least N ms before (replay.h): dockerd 26's shared /info
 *       answer. Until one is that old, the request is relayed.
 *   clear                 drop every rule
 *   fired ID              "ok N": how many times rule ID fired
 *   seen METHOD GLOB      "ok N": requests seen so far that match
 *   kill-random           cut one connection, preferring one that moved
 *                         bytes in the last second; "ok REQUEST-LINE" or "ok none"
 *   drop                  cut every connection now
 *   down MS               an engine restart: cut every connection and remove
 *                         the socket (connect fails), recreate it after MS
 *   refuse MS             accept and close every new connection for MS
 *   stats                 "ok conns=N requests=N cuts=N stalls=N"
 * Faults fired and connections cut are logged on stderr.
 */
#include <errno.h>
#include <stdarg.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "faultctl.h"
#include "replay.h"

#define MAX_CONNS 512
#define MAX_CTLS 16
#define MAX_RULES 64
#define BUFSZ (128 * 1024)
#define HEAD_MAX (32 * 1024)
#define SEEN_MAX 8192
#define LINE_MAX_ 300

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	localtime_r(&ts.tv_sec, &tm);
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "relay %02d:%02d:%02d.%03ld: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		line);
}

/* ---- rules ---------------------------------------------------------------- */

enum action { ACT_CUT, ACT_STALL, ACT_REPLAY };

struct rule {
	bool used;
	enum action act;
	char method[16];
	char glob[256];
	bool on_req;             /* offset counts request bytes (else answer bytes) */
	uint64_t at;
	long ms;
	long count;              /* remaining; -1 = unlimited */
	unsigned long fired;
};

static struct rule rules[MAX_RULES];
static unsigned n_rules;     /* IDs are 1..n_rules; `clear` disables, IDs keep counting */

/* ---- connections ------------------------------------------------------------ */

/* One direction of a relayed connection: bytes read from `from`, pending in buf[off, len), written to `to`. */
struct half {
	char *buf;
	size_t off, len;
	uint64_t fwd;            /* stream offset of buf[off]: bytes written so far */
	uint64_t rd;             /* stream offset of buf[len]: bytes read so far */
	bool eof;
	bool shut;
	long long hold_until;    /* stalled until then */
	uint64_t cut_at;         /* UINT64_MAX: none */
	uint64_t stall_at;
	long stall_ms;
	long quiet_ms;           /* cut_at with quiet_ms: cut at the first pause this long after it */
	long long last_fwd_ms;
	int rule;                /* rule that armed cut_at/stall_at */
	uint64_t after_up;       /* answer points wait until the request is forwarded up to here */
};

enum pstate { P_HEAD, P_BODY, P_CHUNK_SIZE, P_CHUNK_EXT, P_CHUNK_SIZE_LF, P_CHUNK_DATA, P_CHUNK_DATA_CR,
	      P_CHUNK_DATA_LF, P_TRAILER, P_RAW };

struct conn {
	bool used;
	int cfd, sfd;            /* client side, engine side */
	struct half up;          /* client -> engine */
	struct half down;        /* engine -> client */
	enum pstate ps;
	uint64_t req_start;      /* up-stream offset where the current request starts */
	uint64_t parsed;         /* up-stream offset of the next byte the parser has not seen */
	uint64_t remaining;      /* body bytes left (P_BODY, P_CHUNK_DATA) */
	bool upgrade;            /* the request being parsed asks for a raw stream */
	bool answer_armed;       /* an answer point of the request being parsed waits for its end */
	unsigned trailer_col;    /* bytes on the current trailer line */
	char reqline[LINE_MAX_];
	char *replay;            /* the answer a replay rule gives the request being parsed */
	size_t replay_len;
	unsigned long nreq;
	long long last_move_ms;
};

static struct conn conns[MAX_CONNS];

struct ctlconn {
	bool used;
	int fd;
	char buf[1024];
	size_t len;
};
static struct ctlconn ctls[MAX_CTLS];

static char *seen[SEEN_MAX];  /* "METHOD TARGET" of every request, oldest dropped */
static unsigned long n_seen;

static unsigned long st_conns, st_requests, st_cuts, st_stalls;
static const char *listen_path, *target_path;
static int lfd = -1;
static long long down_until, refuse_until;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int unix_listen(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 128) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int unix_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void half_init(struct half *h)
{
	memset(h, 0, sizeof(*h));
	h->cut_at = h->stall_at = UINT64_MAX;
	h->rule = 0;
}

static void conn_close(struct conn *c, const char *why)
{
	if (!c->used)
		return;
	if (why) {
		st_cuts++;
		logf_("cut connection (%s); its last request: %s", why, c->reqline[0] ? c->reqline : "(none)");
	}
	close(c->cfd);
	close(c->sfd);
	free(c->replay);
	c->replay = NULL;
	free(c->up.buf);
	free(c->down.buf);
	c->used = false;
}

static void drop_all(const char *why)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].used)
			conn_close(&conns[i], why);
}

/* ---- request parsing ------------------------------------------------------- */

static bool method_matches(const char *want, const char *got)
{
	return !strcmp(want, "*") || !strcasecmp(want, got);
}

static void note_seen(const char *line)
{
	free(seen[n_seen % SEEN_MAX]);
	seen[n_seen % SEEN_MAX] = strdup(line);
	n_seen++;
}

/* A complete request header was parsed: arm the first rule that matches. */
static void on_request(struct conn *c, const char *method, const char *target)
{
	st_requests++;
	c->nreq++;
	snprintf(c->reqline, sizeof(c->reqline), "%s %s", method, target);
	note_seen(c->reqline);
	/* points are per request: one the last answer never reached is dropped */
	c->up.cut_at = c->up.stall_at = c->down.cut_at = c->down.stall_at = UINT64_MAX;
	c->up.quiet_ms = c->down.quiet_ms = 0;
	c->down.after_up = 0;
	c->answer_armed = false;
	for (unsigned i = 0; i < n_rules; i++) {
		struct rule *r = &rules[i];
		if (!r->used || r->count == 0 || !method_matches(r->method, method) || fnmatch(r->glob, target, 0) != 0)
			continue;
		if (r->act == ACT_REPLAY) {
			c->replay = replay_answer(target_path, target, r->ms, &c->replay_len);
			if (!c->replay)
				break; /* nothing that old yet: relayed */
		}
		if (r->count > 0)
			r->count--;
		r->fired++;
		if (r->act == ACT_REPLAY)
			break;
		struct half *h = r->on_req ? &c->up : &c->down;
		uint64_t base = r->on_req ? c->req_start : c->down.rd;
		if (r->act == ACT_CUT) {
			h->cut_at = base + r->at;
			h->quiet_ms = r->ms;
		} else {
			h->stall_at = base + r->at;
			h->stall_ms = r->ms;
		}
		h->rule = (int)i + 1;
		if (!r->on_req) {
			c->down.after_up = UINT64_MAX;  /* set when the request's end is known */
			c->answer_armed = true;
		}
		logf_("rule %u (%s %s %s=%llu%s) armed on: %s", i + 1, r->act == ACT_CUT ? "cut" : "stall", r->glob,
		      r->on_req ? "req" : "resp", (unsigned long long)r->at, r->act == ACT_STALL ? " stall" : "",
		      c->reqline);
		break;
	}
}

static bool header_value(const char *head, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name);
	for (const char *p = strstr(head, "\r\n"); p; p = strstr(p, "\r\n")) {
		p += 2;
		if (!strncasecmp(p, name, nl) && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			const char *e = strstr(v, "\r\n");
			size_t n = e ? (size_t)(e - v) : strlen(v);
			if (n >= outsz)
				n = outsz - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return true;
		}
	}
	return false;
}

/* The header (buffered from req_start, complete up to hdr_len bytes) of the current request. */
static void parse_head(struct conn *c, const char *h, size_t hdr_len)
{
	char *head = strndup(h, hdr_len);
	if (!head) {
		c->ps = P_RAW;
		return;
	}
	char method[16] = "", target[LINE_MAX_] = "";
	const char *sp = strchr(head, ' ');
	const char *sp2 = sp ? strchr(sp + 1, ' ') : NULL;
	if (sp && sp2 && (size_t)(sp - head) < sizeof(method)) {
		memcpy(method, head, (size_t)(sp - head));
		size_t tl = (size_t)(sp2 - sp - 1);
		if (tl >= sizeof(target))
			tl = sizeof(target) - 1;
		memcpy(target, sp + 1, tl);
	}
	on_request(c, method, target);
	char v[64];
	c->upgrade = header_value(head, "Upgrade", v, sizeof(v));
	c->remaining = 0;
	if (header_value(head, "Transfer-Encoding", v, sizeof(v)) && strcasestr(v, "chunked"))
		c->ps = P_CHUNK_SIZE;
	else if (header_value(head, "Content-Length", v, sizeof(v)) && (c->remaining = strtoull(v, NULL, 10)) > 0)
		c->ps = P_BODY;
	else
		c->ps = c->upgrade ? P_RAW : P_HEAD;
	if (c->answer_armed && (c->ps == P_BODY || c->ps == P_RAW || c->ps == P_HEAD)) {
		c->down.after_up = c->parsed + c->remaining;
		c->answer_armed = false;
	}
	free(head);
}

static void request_done(struct conn *c)
{
	c->ps = c->upgrade ? P_RAW : P_HEAD;
	c->req_start = c->parsed;
	if (c->answer_armed) {  /* a chunked request ended */
		c->down.after_up = c->parsed;
		c->answer_armed = false;
	}
}

/*
 * A replay rule's answer to the request whose header (hl bytes, none of it
 * forwarded yet) was just parsed: the request is dropped, the answer put
 * where the engine's would come. Clients do not pipeline, so nothing of an
 * earlier answer still waits in the answer buffer; were something there,
 * or had the request a body, the request is relayed after all.
 */
static void answer_here(struct conn *c, size_t hl)
{
	struct half *d = &c->down;
	if (d->off != d->len || c->ps != P_HEAD || c->replay_len > BUFSZ) {
		logf_("replay: relaying %s after all (a body, or an answer still pending)", c->reqline);
	} else {
		c->up.off += hl;
		c->up.fwd += hl;
		d->off = 0;
		memcpy(d->buf, c->replay, c->replay_len);
		d->len = c->replay_len;
		d->rd += c->replay_len;
	}
	free(c->replay);
	c->replay = NULL;
}

/* Run the parser over the client bytes read so far. */
static void parse_up(struct conn *c)
{
	struct half *u = &c->up;
	while (c->parsed < u->rd && c->ps != P_RAW) {
		const char *p = u->buf + u->off + (c->parsed - u->fwd);
		size_t avail = (size_t)(u->rd - c->parsed);
		switch (c->ps) {
		case P_HEAD: {
			/* req_start == fwd here (nothing of a request header is forwarded before it is whole) */
			const char *h = u->buf + u->off + (c->req_start - u->fwd);
			size_t have = (size_t)(u->rd - c->req_start);
			const char *e = memmem(h, have, "\r\n\r\n", 4);
			if (!e) {
				if (have > HEAD_MAX) {
					logf_("a request header over %d bytes: relaying the rest raw", HEAD_MAX);
					c->ps = P_RAW;
				}
				c->parsed = u->rd;
				return;
			}
			size_t hl = (size_t)(e - h) + 4;
			c->parsed = c->req_start + hl;
			parse_head(c, h, hl);
			if (c->replay)
				answer_here(c, hl);
			if (c->ps == P_HEAD)
				request_done(c);
			break;
		}
		case P_BODY: {
			uint64_t take = avail < c->remaining ? avail : c->remaining;
			c->parsed += take;
			c->remaining -= take;
			if (!c->remaining)
				request_done(c);
			break;
		}
		case P_CHUNK_DATA: {
			uint64_t take = avail < c->remaining ? avail : c->remaining;
			c->parsed += take;
			c->remaining -= take;
			if (!c->remaining)
				c->ps = P_CHUNK_DATA_CR;
			break;
		}
		default: {
			char ch = *p;
			c->parsed++;
			switch (c->ps) {
			case P_CHUNK_SIZE:
				if (ch >= '0' && ch <= '9')
					c->remaining = c->remaining * 16 + (uint64_t)(ch - '0');
				else if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
					c->remaining = c->remaining * 16 + (uint64_t)((ch | 0x20) - 'a' + 10);
				else if (ch == '\r')
					c->ps = P_CHUNK_SIZE_LF;
				else
					c->ps = P_CHUNK_EXT;
				break;
			case P_CHUNK_EXT:
				if (ch == '\r')
					c->ps = P_CHUNK_SIZE_LF;
				break;
			case P_CHUNK_SIZE_LF:
				if (c->remaining) {
					c->ps = P_CHUNK_DATA;
				} else {
					c->ps = P_TRAILER;
					c->trailer_col = 0;
				}
				break;
			case P_CHUNK_DATA_CR:
				c->ps = P_CHUNK_DATA_LF;
				break;
			case P_CHUNK_DATA_LF:
				c->ps = P_CHUNK_SIZE;
				c->remaining = 0;
				break;
			case P_TRAILER:
				if (ch == '\n') {
					if (c->trailer_col == 0)
						request_done(c);
					c->trailer_col = 0;
				} else if (ch != '\r') {
					c->trailer_col++;
				}
				break;
			default:
				break;
			}
		}
		}
	}
}

/* ---- forwarding ------------------------------------------------------------------ */

/* How far this half may forward now (a stream offset). */
static uint64_t fwd_limit(const struct conn *c, const struct half *h)
{
	uint64_t lim = h->rd;
	if (h == &c->up && c->ps == P_HEAD && c->req_start < lim)
		lim = c->req_start;
	if (h->cut_at < lim && !h->quiet_ms)
		lim = h->cut_at;
	if (h->stall_at < lim)
		lim = h->stall_at;
	return lim;
}

/* Points reached: 1 when the connection was cut. */
static int check_points(struct conn *c, struct half *h, long long now)
{
	if (h == &c->down && c->up.fwd < h->after_up)
		return 0;
	if (h->fwd >= h->cut_at && (!h->quiet_ms || now - h->last_fwd_ms >= h->quiet_ms)) {
		char why[96];
		snprintf(why, sizeof(why), "rule %d, after %llu %s bytes%s", h->rule,
			 (unsigned long long)rules[h->rule - 1].at, h == &c->up ? "request" : "answer",
			 h->quiet_ms ? " and a quiet moment" : "");
		conn_close(c, why);
		return 1;
	}
	if (h->fwd >= h->stall_at) {
		st_stalls++;
		logf_("rule %d: stalling the %s for %ld ms: %s", h->rule, h == &c->up ? "request" : "answer",
		      h->stall_ms, c->reqline);
		h->hold_until = now + h->stall_ms;
		h->stall_at = UINT64_MAX;
	}
	return 0;
}

static bool half_wants_read(const struct half *h)
{
	return !h->eof && (h->len < BUFSZ || h->off > 0);
}

static bool half_wants_write(const struct conn *c, const struct half *h, long long now)
{
	return h->len > h->off && now >= h->hold_until && fwd_limit(c, h) > h->fwd;
}

/* Read what is there into the half; 0 ok, -1 the connection is dead. */
static int half_read(struct conn *c, struct half *h, int fd)
{
	if (h->off == h->len) {
		h->off = h->len = 0;
	} else if (h->len == BUFSZ && h->off) {
		memmove(h->buf, h->buf + h->off, h->len - h->off);
		h->len -= h->off;
		h->off = 0;
	}
	if (h->len == BUFSZ)
		return 0;
	ssize_t n = read(fd, h->buf + h->len, BUFSZ - h->len);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		return -1;
	}
	if (n == 0) {
		h->eof = true;
		return 0;
	}
	h->len += (size_t)n;
	h->rd += (uint64_t)n;
	c->last_move_ms = now_ms();
	if (h == &c->up)
		parse_up(c);
	return 0;
}

static int half_write(struct conn *c, struct half *h, int fd, long long now)
{
	uint64_t lim = fwd_limit(c, h);
	size_t n = h->len - h->off;
	if (lim - h->fwd < n)
		n = (size_t)(lim - h->fwd);
	if (n) {
		ssize_t w = send(fd, h->buf + h->off, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -1;
		}
		h->off += (size_t)w;
		h->fwd += (uint64_t)w;
		c->last_move_ms = now;
		h->last_fwd_ms = now;
		if (h->off == h->len)
			h->off = h->len = 0;
	}
	return check_points(c, h, now) ? 1 : 0;
}

static void accept_one(void)
{
	int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0)
		return;
	if (now_ms() < refuse_until) {
		close(cfd);
		return;
	}
	int slot = -1;
	for (int i = 0; i < MAX_CONNS; i++)
		if (!conns[i].used) {
			slot = i;
			break;
		}
	int sfd = slot < 0 ? -1 : unix_connect(target_path);
	if (sfd < 0) {
		logf_("refusing a connection: %s", slot < 0 ? "too many connections" : strerror(errno));
		close(cfd);
		return;
	}
	struct conn *c = &conns[slot];
	memset(c, 0, sizeof(*c));
	half_init(&c->up);
	half_init(&c->down);
	c->up.buf = malloc(BUFSZ);
	c->down.buf = malloc(BUFSZ);
	if (!c->up.buf || !c->down.buf) {
		free(c->up.buf);
		free(c->down.buf);
		close(cfd);
		close(sfd);
		return;
	}
	c->used = true;
	c->cfd = cfd;
	c->sfd = sfd;
	c->ps = P_HEAD;
	c->last_move_ms = now_ms();
	st_conns++;
}

/* ---- control ----------------------------------------------------------------------- */

static long kv(const char *tok, const char *key, bool *found)
{
	size_t n = strlen(key);
	if (!strncmp(tok, key, n) && tok[n] == '=') {
		*found = true;
		return strtol(tok + n + 1, NULL, 10);
	}
	return 0;
}

static void run_command(char *line, char *reply, size_t rsz)
{
	char *save = NULL;
	char *verb = strtok_r(line, " \t\r", &save);
	if (!verb) {
		snprintf(reply, rsz, "err empty command");
		return;
	}
	if (!strcmp(verb, "rule")) {
		char *act = strtok_r(NULL, " \t\r", &save), *method = strtok_r(NULL, " \t\r", &save);
		char *glob = strtok_r(NULL, " \t\r", &save);
		if (!act || !method || !glob || (strcmp(act, "cut") && strcmp(act, "stall") && strcmp(act, "replay"))) {
			snprintf(reply, rsz, "err usage: rule cut|stall|replay METHOD GLOB [req=N|resp=N] [ms=N] [count=N]");
			return;
		}
		if (n_rules == MAX_RULES) {
			snprintf(reply, rsz, "err too many rules");
			return;
		}
		struct rule r = { .used = true, .count = 1,
				  .act = !strcmp(act, "cut") ? ACT_CUT : !strcmp(act, "stall") ? ACT_STALL : ACT_REPLAY };
		snprintf(r.method, sizeof(r.method), "%s", method);
		snprintf(r.glob, sizeof(r.glob), "%s", glob);
		for (char *t; (t = strtok_r(NULL, " \t\r", &save));) {
			bool f = false;
			long v;
			if ((v = kv(t, "req", &f)), f) {
				r.on_req = true;
				r.at = (uint64_t)v;
			} else if ((v = kv(t, "resp", &f)), f) {
				r.on_req = false;
				r.at = (uint64_t)v;
			} else if ((v = kv(t, "ms", &f)), f) {
				r.ms = v;
			} else if ((v = kv(t, "count", &f)), f) {
				r.count = v;
			} else {
				snprintf(reply, rsz, "err unknown argument %s", t);
				return;
			}
		}
		rules[n_rules++] = r;
		logf_("rule %u: %s %s %s %s=%llu ms=%ld count=%ld", n_rules, act, method, glob, r.on_req ? "req" : "resp",
		      (unsigned long long)r.at, r.ms, r.count);
		snprintf(reply, rsz, "ok %u", n_rules);
	} else if (!strcmp(verb, "clear")) {
		for (unsigned i = 0; i < n_rules; i++)
			rules[i].used = false;
		snprintf(reply, rsz, "ok");
	} else if (!strcmp(verb, "fired")) {
		char *id = strtok_r(NULL, " \t\r", &save);
		long n = id ? strtol(id, NULL, 10) : 0;
		if (n < 1 || (unsigned long)n > n_rules)
			snprintf(reply, rsz, "err no rule %s", id ? id : "");
		else
			snprintf(reply, rsz, "ok %lu", rules[n - 1].fired);
	} else if (!strcmp(verb, "seen")) {
		char *method = strtok_r(NULL, " \t\r", &save), *glob = strtok_r(NULL, " \t\r", &save);
		if (!method || !glob) {
			snprintf(reply, rsz, "err usage: seen METHOD GLOB");
			return;
		}
		unsigned long n = 0;
		unsigned long first = n_seen > SEEN_MAX ? n_seen - SEEN_MAX : 0;
		for (unsigned long i = first; i < n_seen; i++) {
			const char *s = seen[i % SEEN_MAX];
			const char *sp = s ? strchr(s, ' ') : NULL;
			if (!sp)
				continue;
			char m[16];
			snprintf(m, sizeof(m), "%.*s", (int)(sp - s), s);
			if (method_matches(method, m) && fnmatch(glob, sp + 1, 0) == 0)
				n++;
		}
		snprintf(reply, rsz, "ok %lu", n);
	} else if (!strcmp(verb, "kill-random")) {
		int busy[MAX_CONNS], nb = 0, all[MAX_CONNS], na = 0;
		long long now = now_ms();
		for (int i = 0; i < MAX_CONNS; i++) {
			if (!conns[i].used)
				continue;
			all[na++] = i;
			if (now - conns[i].last_move_ms < 1000)
				busy[nb++] = i;
		}
		if (!na) {
			snprintf(reply, rsz, "ok none");
			return;
		}
		int pick = nb ? busy[rand() % nb] : all[rand() % na];
		struct conn *c = &conns[pick];
		snprintf(reply, rsz, "ok %s %s", nb ? "busy" : "idle", c->reqline[0] ? c->reqline : "(no request yet)");
		conn_close(c, "kill-random");
	} else if (!strcmp(verb, "drop")) {
		drop_all("drop");
		snprintf(reply, rsz, "ok");
	} else if (!strcmp(verb, "down") || !strcmp(verb, "refuse")) {
		char *ms = strtok_r(NULL, " \t\r", &save);
		long v = ms ? strtol(ms, NULL, 10) : 0;
		if (v <= 0) {
			snprintf(reply, rsz, "err usage: %s MS", verb);
			return;
		}
		if (!strcmp(verb, "down")) {
			logf_("down for %ld ms: every connection cut, socket removed", v);
			drop_all("engine down");
			if (lfd >= 0) {
				close(lfd);
				lfd = -1;
				unlink(listen_path);
			}
			down_until = now_ms() + v;
		} else {
			logf_("refusing new connections for %ld ms", v);
			refuse_until = now_ms() + v;
		}
		snprintf(reply, rsz, "ok");
	} else if (!strcmp(verb, "stats")) {
		unsigned long open_ = 0;
		for (int i = 0; i < MAX_CONNS; i++)
			open_ += conns[i].used;
		snprintf(reply, rsz, "ok conns=%lu open=%lu requests=%lu cuts=%lu stalls=%lu", st_conns, open_,
			 st_requests, st_cuts, st_stalls);
	} else {
		snprintf(reply, rsz, "err unknown command %s", verb);
	}
}

static void ctl_input(struct ctlconn *k)
{
	ssize_t n = read(k->fd, k->buf + k->len, sizeof(k->buf) - 1 - k->len);
	if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
		close(k->fd);
		k->used = false;
		return;
	}
	if (n < 0)
		return;
	k->len += (size_t)n;
	k->buf[k->len] = '\0';
	char *nl = strchr(k->buf, '\n');
	if (!nl && k->len < sizeof(k->buf) - 1)
		return;
	if (nl)
		*nl = '\0';
	char reply[512];
	run_command(k->buf, reply, sizeof(reply) - 1);
	strcat(reply, "\n");
	/* a reply is short: one blocking write on a fresh unix socket does not stall */
	(void)!write(k->fd, reply, strlen(reply));
	close(k->fd);
	k->used = false;
}

/* ---- main loop ----------------------------------------------------------------------- */

static int serve(const char *listen_at, const char *target, const char *control)
{
	listen_path = listen_at;
	target_path = target;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	srand((unsigned)getpid() ^ (unsigned)now_ms());
	int kfd = unix_listen(control);
	lfd = unix_listen(listen_at);
	if (kfd < 0 || lfd < 0) {
		fprintf(stderr, "relay: cannot listen on %s or %s: %s\n", listen_at, control, strerror(errno));
		return 1;
	}
	logf_("relaying %s -> %s, control %s", listen_at, target, control);
	static struct pollfd pf[2 + MAX_CTLS + 2 * MAX_CONNS];
	static int who[2 + MAX_CTLS + 2 * MAX_CONNS]; /* -1 listen, -2 control listen, -3-k ctl k, 2*i(+1) conn i */
	while (!stop) {
		long long now = now_ms();
		if (lfd < 0 && now >= down_until) {
			lfd = unix_listen(listen_path);
			if (lfd >= 0)
				logf_("up again");
		}
		int np = 0, timeout = 1000;
		if (lfd >= 0) {
			pf[np] = (struct pollfd){ lfd, POLLIN, 0 };
			who[np++] = -1;
		} else {
			long long d = down_until - now;
			timeout = d < timeout ? (int)(d > 0 ? d : 0) : timeout;
		}
		pf[np] = (struct pollfd){ kfd, POLLIN, 0 };
		who[np++] = -2;
		for (int k = 0; k < MAX_CTLS; k++)
			if (ctls[k].used) {
				pf[np] = (struct pollfd){ ctls[k].fd, POLLIN, 0 };
				who[np++] = -3 - k;
			}
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &conns[i];
			if (!c->used)
				continue;
			struct half *hs[2] = { &c->up, &c->down };
			for (int d = 0; d < 2; d++) {
				struct half *h = hs[d];
				int rfd = d == 0 ? c->cfd : c->sfd, wfd = d == 0 ? c->sfd : c->cfd;
				(void)rfd;
				short ev_r = half_wants_read(h) ? POLLIN : 0;
				short ev_w = half_wants_write(c, h, now) ? POLLOUT : 0;
				if (h->cut_at != UINT64_MAX && h->quiet_ms && timeout > 50)
					timeout = 50;
				if (h->len > h->off && now < h->hold_until) {
					long long d2 = h->hold_until - now;
					if (d2 < timeout)
						timeout = (int)d2;
				}
				/* read side of this half and write side of this half are different fds */
				if (ev_r) {
					pf[np] = (struct pollfd){ d == 0 ? c->cfd : c->sfd, POLLIN, 0 };
					who[np++] = 2 * i + d;
				}
				if (ev_w) {
					pf[np] = (struct pollfd){ wfd, POLLOUT, 0 };
					who[np++] = 2 * i + d + 2 * MAX_CONNS;
				}
			}
		}
		int pr = poll(pf, (nfds_t)np, timeout);
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			perror("relay: poll");
			return 1;
		}
		now = now_ms();
		for (int p = 0; p < np; p++) {
			if (!pf[p].revents)
				continue;
			int w = who[p];
			if (w == -1) {
				if (lfd >= 0)
					for (int k = 0; k < 16; k++)
						accept_one();
			} else if (w == -2) {
				int fd = accept4(kfd, NULL, NULL, SOCK_CLOEXEC);
				if (fd >= 0) {
					int k;
					for (k = 0; k < MAX_CTLS && ctls[k].used; k++)
						;
					if (k == MAX_CTLS) {
						close(fd);
					} else {
						ctls[k] = (struct ctlconn){ .used = true, .fd = fd };
					}
				}
			} else if (w <= -3) {
				struct ctlconn *k = &ctls[-3 - w];
				if (k->used)
					ctl_input(k);
			} else {
				bool is_write = w >= 2 * MAX_CONNS;
				int idx = (is_write ? w - 2 * MAX_CONNS : w) / 2, d = (is_write ? w - 2 * MAX_CONNS : w) % 2;
				struct conn *c = &conns[idx];
				if (!c->used || pf[p].fd != (is_write ? (d == 0 ? c->sfd : c->cfd) : (d == 0 ? c->cfd : c->sfd)))
					continue;
				struct half *h = d == 0 ? &c->up : &c->down;
				int rc = is_write ? half_write(c, h, d == 0 ? c->sfd : c->cfd, now)
						  : half_read(c, h, d == 0 ? c->cfd : c->sfd);
				if (rc < 0)
					conn_close(c, NULL);
			}
		}
		/* half-closes and fully finished connections */
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &conns[i];
			if (!c->used)
				continue;
			struct half *hs[2] = { &c->up, &c->down };
			for (int d = 0; d < 2 && c->used; d++) {
				struct half *h = hs[d];
				/* a point reached with nothing more to write (or nothing allowed) fires here */
				if (check_points(c, h, now))
					break;
				if (h->eof && h->off == h->len && !h->shut) {
					shutdown(d == 0 ? c->sfd : c->cfd, SHUT_WR);
					h->shut = true;
				}
			}
			if (c->used && c->up.shut && c->down.shut)
				conn_close(c, NULL);
		}
	}
	logf_("stopping: %lu connections, %lu requests, %lu cuts, %lu stalls", st_conns, st_requests, st_cuts,
	      st_stalls);
	drop_all(NULL);
	replay_stop();
	if (lfd >= 0) {
		close(lfd);
		unlink(listen_path);
	}
	close(kfd);
	unlink(control);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "serve"))
		return serve(argv[2], argv[3], argv[4]);
	if (argc >= 4 && !strcmp(argv[1], "ctl")) {
		char cmd[1024] = "";
		for (int i = 3; i < argc; i++) {
			if (strlen(cmd) + strlen(argv[i]) + 2 >= sizeof(cmd))
				break;
			if (i > 3)
				strcat(cmd, " ");
			strcat(cmd, argv[i]);
		}
		char reply[512];
		int r = fault_ctl(argv[2], cmd, reply, sizeof(reply));
		if (r < 0) {
			fprintf(stderr, "relay: control socket %s: %s\n", argv[2], strerror(-r));
			return 2;
		}
		printf("%s\n", reply);
		return r;
	}
	if (argc == 5 && !strcmp(argv[1], "wait")) {
		char cmd[64], reply[512];
		snprintf(cmd, sizeof(cmd), "fired %s", argv[3]);
		long long end = now_ms() + atol(argv[4]) * 1000;
		do {
			if (fault_ctl(argv[2], cmd, reply, sizeof(reply)) == 0 && strcmp(reply, "ok 0") != 0)
				return 0;
			usleep(50000);
		} while (now_ms() < end);
		fprintf(stderr, "relay: rule %s did not fire within %s s\n", argv[3], argv[4]);
		return 1;
	}
	fprintf(stderr, "usage: relay serve LISTEN TARGET CONTROL | relay ctl CONTROL COMMAND... | "
			"relay wait CONTROL ID SECONDS\n");
	return 2;
}
