/*
 * engine.c: the typed Docker Engine API calls of engine.h. This is the only
 * file that knows Engine API URLs, their query parameters and their JSON.
 * Transport (connections, timeouts, stall cut-off, the hijacked exec stream)
 * is http.c's; error mapping of engine answers is error.c's; RFC 3339 times
 * are duration.c's. The pure parts (stat-header decoding, Go FileMode bits,
 * frame demultiplexing, query and filter encoding) are exposed for unit tests.
 *
 * Behaviour follows doc/engine-notes.md, measured on dockerd 20.10.
 */
#include "engine.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "buf.h"
#include "duration.h"
#include "http.h"
#include "names.h"

#define DEFAULT_MAX_OUTPUT (8u * 1024 * 1024)
#define STAT_HEADER "X-Docker-Container-Path-Stat"
#define STAT_HEADER_MAX (128 * 1024)

struct mafsbx_engine {
	struct mafsbx_endpoint ep;
	struct mafsbx_engine_timeouts to;
	struct mafsbx_http *http;
	pthread_mutex_t mu;
	bool negotiated;
	char prefix[24];         /* "/v1.41" */
	int podman;              /* the engine is Podman (its /version): 1, 0, -1 not known yet */
};

/* ---- pure helpers -------------------------------------------------------- */

static char *escape(const char *s, const char *keep)
{
	static const char hex[] = "0123456789ABCDEF";
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *out = malloc(n * 3 + 1), *o = out;
	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' || (keep && strchr(keep, *p))) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

char *mafsbx_query_escape(const char *s)
{
	return escape(s, NULL);
}

json_t *mafsbx_filters_new(void)
{
	return json_object();
}

int mafsbx_filters_add(json_t *filters, const char *key, const char *value)
{
	if (!json_is_object(filters) || !key || !key[0] || !value)
		return -EINVAL;
	json_t *arr = json_object_get(filters, key);
	if (!arr) {
		arr = json_array();
		if (!arr)
			return -ENOMEM;
		if (json_object_set_new(filters, key, arr) < 0)
			return -EINVAL;  /* key not UTF-8 */
	} else if (!json_is_array(arr)) {
		return -EINVAL;
	}
	json_t *v = json_string(value);
	if (!v)
		return -EINVAL;  /* not UTF-8 */
	return json_array_append_new(arr, v) < 0 ? -ENOMEM : 0;
}

char *mafsbx_filters_encode(const json_t *filters)
{
	if (!json_is_object(filters))
		return NULL;
	char *s = json_dumps(filters, JSON_COMPACT | JSON_SORT_KEYS);
	if (!s)
		return NULL;
	char *q = mafsbx_query_escape(s);
	free(s);
	return q;
}

mode_t mafsbx_go_mode_to_st(uint32_t m)
{
	mode_t st = m & 0777;
	if (m & (1u << 31))
		st |= S_IFDIR;
	else if (m & (1u << 27))
		st |= S_IFLNK;
	else if (m & (1u << 26))
		st |= (m & (1u << 21)) ? S_IFCHR : S_IFBLK;
	else if (m & (1u << 25))
		st |= S_IFIFO;
	else if (m & (1u << 24))
		st |= S_IFSOCK;
	else if (m & (1u << 21))
		st |= S_IFCHR;  /* ModeCharDevice alone: Go sets Device too, but be tolerant */
	else if (!(m & (1u << 19)))
		st |= S_IFREG;  /* ModeIrregular: no type at all (nothing we can serve) */
	if (m & (1u << 23))
		st |= S_ISUID;
	if (m & (1u << 22))
		st |= S_ISGID;
	if (m & (1u << 20))
		st |= S_ISVTX;
	return st;
}

/* An RFC 3339 text (duration.c parses it) as a timespec. */
static int parse_rfc3339(const char *s, struct timespec *ts)
{
	struct mafsbx_time t;
	if (mafsbx_time_parse(s, &t, NULL) < 0)
		return -1;
	ts->tv_sec = (time_t)t.sec;
	ts->tv_nsec = t.nsec;
	return 0;
}

int mafsbx_path_stat_decode(const char *b64, struct mafsbx_path_stat *st, struct mafsbx_error *err)
{
	if (!b64 || !st)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "path stat: no header");
	size_t len = strlen(b64);
	if (len > STAT_HEADER_MAX)
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header too large (%zu bytes)", len);
	unsigned char *raw = NULL;
	size_t n = 0;
	json_t *j = NULL;
	/* Go's StdEncoding as dockerd writes it; its non-Strict reader ignores spare bits, and so do we. */
	int r = mafsbx_base64_decode(b64, len, MAFSBX_B64_STD | MAFSBX_B64_NONEMPTY | MAFSBX_B64_ANY_BITS, &raw, &n);
	if (r == -ENOMEM)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (r) {
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header is not base64");
		goto out;
	}
	json_error_t je;
	j = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(j)) {
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header is not a JSON object");
		goto out;
	}
	json_t *jname = json_object_get(j, "name"), *jsize = json_object_get(j, "size");
	json_t *jmode = json_object_get(j, "mode"), *jmtime = json_object_get(j, "mtime");
	json_t *jlink = json_object_get(j, "linkTarget");
	if (!json_is_string(jname) || !json_is_integer(jsize) || !json_is_integer(jmode) || !json_is_string(jmtime) ||
	    (jlink && !json_is_string(jlink))) {
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header: missing or mistyped field");
		goto out;
	}
	json_int_t size = json_integer_value(jsize), mode = json_integer_value(jmode);
	if (size < 0 || mode < 0 || mode > (json_int_t)UINT32_MAX) {
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header: size or mode out of range");
		goto out;
	}
	struct timespec mt;
	if (parse_rfc3339(json_string_value(jmtime), &mt) < 0) {
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header: bad mtime \"%.64s\"",
				     json_string_value(jmtime));
		goto out;
	}
	const char *link = jlink ? json_string_value(jlink) : "";
	size_t ll = jlink ? json_string_length(jlink) : 0;
	if (ll >= sizeof(st->link_target) || strlen(link) != ll) {
		r = mafsbx_error_set(err, ll >= sizeof(st->link_target) ? MAFSBX_EK_NAMETOOLONG : MAFSBX_EK_PROTOCOL,
				     "path stat header: link target too long or holds NUL");
		goto out;
	}
	memset(st, 0, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "%s", json_string_value(jname));
	st->size = (int64_t)size;
	st->go_mode = (uint32_t)mode;
	st->mode = mafsbx_go_mode_to_st(st->go_mode);
	st->mtime = mt;
	memcpy(st->link_target, link, ll + 1);
out:
	json_decref(j);
	free(raw);
	return r;
}

/* ---- frame demultiplexer ----------------------------------------------- */

void mafsbx_demux_init(struct mafsbx_demux *d, struct mafsbx_exec_result *res, size_t max_output)
{
	memset(d, 0, sizeof(*d));
	d->res = res;
	d->max_output = max_output ? max_output : DEFAULT_MAX_OUTPUT;
	res->out = res->err = NULL;
	res->out_len = res->err_len = 0;
	res->truncated = false;
}

static int demux_put(struct mafsbx_demux *d, const unsigned char *p, size_t n)
{
	struct mafsbx_exec_result *res = d->res;
	bool is_err = d->stream == 2 || d->stream == 3;
	unsigned char **buf = is_err ? &res->err : &res->out;
	size_t *len = is_err ? &res->err_len : &res->out_len;
	size_t *cap = is_err ? &d->err_cap : &d->out_cap;
	size_t room = d->max_output > *len ? d->max_output - *len : 0;
	size_t take = n < room ? n : room;
	if (d->on_output && n) {
		int r = d->on_output(is_err ? 2 : 1, p, n, d->output_ctx);
		if (r < 0)
			return r;
	}
	if (take < n)
		res->truncated = true;
	if (!take)
		return 0;
	if (*len + take + 1 > *cap) {
		size_t nc = *cap ? *cap : 256;
		while (nc < *len + take + 1)
			nc *= 2;
		if (nc > d->max_output + 1)
			nc = d->max_output + 1;
		unsigned char *nb = realloc(*buf, nc);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, p, take);
	*len += take;
	(*buf)[*len] = '\0';
	return 0;
}

int mafsbx_demux_feed(struct mafsbx_demux *d, const void *data, size_t len)
{
	const unsigned char *p = data;
	if (d->error)
		return -EPROTO;
	while (len) {
		if (d->hdr_have < 8) {
			size_t take = 8 - d->hdr_have < len ? 8 - d->hdr_have : len;
			memcpy(d->hdr + d->hdr_have, p, take);
			d->hdr_have += take;
			p += take;
			len -= take;
			if (d->hdr_have < 8)
				return 0;
			/* [stream, 0, 0, 0, size big-endian]; 0 (stdin) is written as stdout by
			 * the engine, 3 is its own error stream. */
			if (d->hdr[0] > 3 || d->hdr[1] || d->hdr[2] || d->hdr[3]) {
				d->error = true;
				return -EPROTO;
			}
			d->stream = d->hdr[0] == 0 ? 1 : d->hdr[0];
			d->left = (uint32_t)d->hdr[4] << 24 | (uint32_t)d->hdr[5] << 16 | (uint32_t)d->hdr[6] << 8 |
				  (uint32_t)d->hdr[7];
			if (d->left == 0)
				d->hdr_have = 0;
			continue;
		}
		size_t take = d->left < len ? d->left : len;
		int r = demux_put(d, p, take);
		if (r < 0)
			return r;
		p += take;
		len -= take;
		d->left -= (uint32_t)take;
		if (d->left == 0)
			d->hdr_have = 0;
	}
	return 0;
}

int mafsbx_demux_finish(struct mafsbx_demux *d)
{
	struct mafsbx_exec_result *res = d->res;
	if (!res->out && !(res->out = calloc(1, 1)))
		return -ENOMEM;
	if (!res->err && !(res->err = calloc(1, 1)))
		return -ENOMEM;
	if (d->error || d->hdr_have)
		return -EPROTO;
	return 0;
}

void mafsbx_exec_result_free(struct mafsbx_exec_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
	res->out_len = res->err_len = 0;
}

/* ---- engine handle and request plumbing ---------------------------------- */

struct mafsbx_engine *mafsbx_engine_open(const struct mafsbx_endpoint *ep, const struct mafsbx_engine_timeouts *to,
					 struct mafsbx_error *err)
{
	if (!ep) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine: no endpoint");
		return NULL;
	}
	struct mafsbx_engine *e = calloc(1, sizeof(*e));
	if (!e) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	e->ep = *ep;
	e->to.connect_ms = to && to->connect_ms > 0 ? to->connect_ms : 5000;
	e->to.request_ms = to && to->request_ms > 0 ? to->request_ms : 60000;
	e->to.stream_stall_s = to && to->stream_stall_s > 0 ? to->stream_stall_s : 10;
	e->to.pull_ms = to && to->pull_ms > 0 ? to->pull_ms : 600000;
	e->http = mafsbx_http_open(ep, e->to.connect_ms, e->to.request_ms, err);
	if (!e->http) {
		free(e);
		return NULL;
	}
	pthread_mutex_init(&e->mu, NULL);
	snprintf(e->prefix, sizeof(e->prefix), "/v1.41");
	e->podman = -1;
	return e;
}

void mafsbx_engine_end_by(struct mafsbx_engine *e, long long deadline_ms)
{
	if (e)
		mafsbx_http_end_by(e->http, deadline_ms);
}

void mafsbx_engine_close(struct mafsbx_engine *e)
{
	if (!e)
		return;
	mafsbx_http_close(e->http);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

const struct mafsbx_endpoint *mafsbx_engine_endpoint(const struct mafsbx_engine *e)
{
	return e ? &e->ep : NULL;
}

/* "1.41" -> 1041; -1 when malformed. */
static int api_number(const char *v)
{
	char *end;
	long maj = strtol(v, &end, 10);
	if (end == v || *end != '.' || maj < 1 || maj > 99)
		return -1;
	const char *m = end + 1;
	long min = strtol(m, &end, 10);
	if (end == m || *end || min < 0 || min > 999)
		return -1;
	return (int)(maj * 1000 + min);
}

int mafsbx_engine_ping(struct mafsbx_engine *e, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "ping: no engine");
	struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_req rq = { .method = "GET", .target = "/_ping", .want_header = "Api-Version",
				      .max_body = 4096 };
	int r = mafsbx_http_request(e->http, &rq, &resp, err);
	if (r < 0)
		goto out;
	if (resp.status != 200) {
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, "ping", NULL);
		goto out;
	}
	char prefix[24] = "/v1.41";
	int v = resp.header_seen ? api_number(resp.header.data) : -1;
	if (v >= 0 && v < 1041)
		snprintf(prefix, sizeof(prefix), "/v%d.%d", v / 1000, v % 1000);
	pthread_mutex_lock(&e->mu);
	memcpy(e->prefix, prefix, sizeof(prefix));
	e->negotiated = true;
	pthread_mutex_unlock(&e->mu);
out:
	mafsbx_http_resp_free(&resp);
	return r;
}

/* Negotiate once (first call), then hand out the version prefix. */
static int api_prefix(struct mafsbx_engine *e, char out[24], struct mafsbx_error *err)
{
	pthread_mutex_lock(&e->mu);
	bool done = e->negotiated;
	memcpy(out, e->prefix, 24);
	pthread_mutex_unlock(&e->mu);
	if (done)
		return 0;
	int r = mafsbx_engine_ping(e, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&e->mu);
	memcpy(out, e->prefix, 24);
	pthread_mutex_unlock(&e->mu);
	return 0;
}

/* Container / network / exec references go into one path segment. */
static int check_ref(const char *ref, const char *what, struct mafsbx_error *err)
{
	if (!ref || !ref[0])
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: empty name", what);
	size_t n = strlen(ref);
	if (n > 255)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: name longer than 255 bytes", what);
	for (const unsigned char *p = (const unsigned char *)ref; *p; p++)
		if (*p < 0x21 || *p == 0x7f || *p == '/' || *p == '?' || *p == '#' || *p == '%')
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s \"%.64s\": invalid character in name", what,
						ref);
	return 0;
}

static int check_guest_path(const char *path, struct mafsbx_error *err)
{
	if (!path || path[0] != '/')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "guest path \"%.200s\" is not absolute",
					path ? path : "");
	return 0;
}

/*
 * Build "<prefix><fmt>" into a malloc'd string. Every %s argument must be
 * escaped already by the caller.
 */
__attribute__((format(printf, 4, 5)))
static char *target(struct mafsbx_engine *e, struct mafsbx_error *err, int *r, const char *fmt, ...)
{
	char prefix[24];
	*r = api_prefix(e, prefix, err);
	if (*r < 0)
		return NULL;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || mafsbx_buf_puts(&b, prefix) < 0 || mafsbx_buf_reserve(&b, (size_t)n) < 0) {
		mafsbx_buf_free(&b);
		*r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	va_start(ap, fmt);
	vsnprintf(b.data + b.len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b.len += (size_t)n;
	return b.data;
}

static int nomem(struct mafsbx_error *err)
{
	return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
}

/*
 * One call with a buffered answer. Statuses in `ok` (0-terminated) are
 * success; anything else is mapped with the engine's message. On success
 * with `out`, the body is parsed as JSON (`out` a new reference).
 */
struct call {
	const char *method;
	const char *target;
	const char *ctype;
	const void *body;
	size_t body_len;
	long timeout_ms;
	const char *what;        /* "inspect container x" */
	const char *path;        /* guest path the answer may name, or NULL */
	long ok[4];
	json_t **out;
	long *status_out;
	bool past_end;           /* may run past the end deadline (an unpause: mafsbx_http_end_by) */
};

static int do_call(struct mafsbx_engine *e, const struct call *c, struct mafsbx_error *err)
{
	struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_req rq = {
		.method = c->method, .target = c->target, .content_type = c->ctype,
		.body = c->body, .body_len = c->body_len, .timeout_ms = c->timeout_ms, .past_end = c->past_end,
	};
	int r = mafsbx_http_request(e->http, &rq, &resp, err);
	if (r < 0) {
		if (err)
			mafsbx_error_prefix(err, "%s", c->what);
		goto out;
	}
	if (c->status_out)
		*c->status_out = resp.status;
	bool ok = false;
	for (size_t i = 0; i < 4 && c->ok[i]; i++)
		ok = ok || resp.status == c->ok[i];
	if (!ok) {
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, c->what, c->path);
		goto out;
	}
	if (c->out) {
		json_error_t je;
		*c->out = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, &je);
		if (!*c->out)
			r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: engine answer is not JSON: %s", c->what,
					     je.text);
	}
out:
	mafsbx_http_resp_free(&resp);
	return r;
}

static char *dump_json(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT);
}

static int copy_id(json_t *j, char id[65], const char *what, struct mafsbx_error *err)
{
	const char *s = json_string_value(json_object_get(j, "Id"));
	if (!mafsbx_is_engine_id(s))
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: answer has no valid Id", what);
	memcpy(id, s, 65);
	return 0;
}

/* The JSON type an answer must have. */
enum answer { ANSWER_ANY, ANSWER_OBJECT, ANSWER_ARRAY };

static int check_answer(json_t **out, enum answer want, const char *what, struct mafsbx_error *err)
{
	if (want == ANSWER_ANY || (want == ANSWER_OBJECT ? json_is_object(*out) : json_is_array(*out)))
		return 0;
	json_decref(*out);
	*out = NULL;
	return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: answer is not %s", what,
				want == ANSWER_OBJECT ? "an object" : "an array");
}

/* Image references keep '/', ':' and '@' (the router takes the rest of the path). */
static char *escape_image(const char *ref)
{
	return escape(ref, "/:@");
}

static int check_image_ref(const char *ref, const char *what, struct mafsbx_error *err)
{
	if (!ref || !ref[0])
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: empty image reference", what);
	if (strlen(ref) > 512)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: image reference too long", what);
	for (const unsigned char *p = (const unsigned char *)ref; *p; p++)
		if (*p < 0x21 || *p == 0x7f || *p == '?' || *p == '#' || *p == '%')
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: invalid character in image reference", what);
	if (strstr(ref, "..") || ref[0] == '/')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: invalid image reference", what);
	return 0;
}

/*
 * A call on one named object (container, network, image), the sequence every
 * object call shares: `what` is "<verb> <ref>" unless the caller wrote its
 * own; the reference is checked (an image reference when `image`) and
 * escaped into the target "<head><ref><tail>"; the call is made and the
 * answer's JSON type checked. A missing image is EK_NO_IMAGE.
 */
struct obj_call {
	const char *verb;        /* "inspect container" */
	const char *ref;
	bool image;
	const char *head;        /* "/containers/" */
	const char *tail;        /* "/json", "?force=1", or NULL */
	struct call c;           /* method, body, ok, out, ...; target and what are filled in */
	enum answer want;
	char what[600];
};

/* The first half: `what`, the reference check and the target (malloc'd), or NULL with *r set. */
static char *obj_target(struct mafsbx_engine *e, struct obj_call *o, int *r, struct mafsbx_error *err)
{
	if (!o->what[0])  /* room for a 255-byte name; an image reference may be 512 */
		snprintf(o->what, o->image ? sizeof(o->what) : 320, "%s %s", o->verb, o->ref ? o->ref : "");
	*r = o->image ? check_image_ref(o->ref, o->what, err) : check_ref(o->ref, o->what, err);
	if (*r < 0)
		return NULL;
	__do_free char *er = o->image ? escape_image(o->ref) : mafsbx_query_escape(o->ref);
	if (!er) {
		*r = nomem(err);
		return NULL;
	}
	return target(e, err, r, "%s%s%s", o->head, er, o->tail ? o->tail : "");
}

static int obj_call(struct mafsbx_engine *e, struct obj_call *o, struct mafsbx_error *err)
{
	if (o->c.out)
		*o->c.out = NULL;
	int r;
	__do_free char *t = obj_target(e, o, &r, err);
	if (!t)
		return r;
	o->c.target = t;
	o->c.what = o->what;
	r = do_call(e, &o->c, err);
	if (r < 0 && o->image && err && err->kind == MAFSBX_EK_NO_OBJECT)
		err->kind = MAFSBX_EK_NO_IMAGE;
	if (r == 0 && o->c.out)
		r = check_answer(o->c.out, o->want, o->what, err);
	return r;
}

/* GET <prefix><path> (a path needing no escape), its JSON answer into *out. */
static int get_json(struct mafsbx_engine *e, const char *path, long timeout_ms, const char *what, json_t **out,
		    struct mafsbx_error *err)
{
	int r;
	__do_free char *t = target(e, err, &r, "%s", path);
	if (!t)
		return r;
	struct call c = { .method = "GET", .target = t, .timeout_ms = timeout_ms, .what = what, .ok = { 200 },
			  .out = out };
	return do_call(e, &c, err);
}

/* ---- version ------------------------------------------------------------- */

static void copy_field(char *dst, size_t cap, json_t *j, const char *key)
{
	const char *s = json_string_value(json_object_get(j, key));
	snprintf(dst, cap, "%s", s ? s : "");
}

int mafsbx_engine_version(struct mafsbx_engine *e, struct mafsbx_engine_version *v, struct mafsbx_error *err)
{
	if (!e || !v)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "version: bad arguments");
	json_t *j = NULL;
	int r = get_json(e, "/version", 0, "engine version", &j, err);
	if (r < 0)
		return r;
	memset(v, 0, sizeof(*v));
	copy_field(v->version, sizeof(v->version), j, "Version");
	copy_field(v->api_version, sizeof(v->api_version), j, "ApiVersion");
	copy_field(v->min_api_version, sizeof(v->min_api_version), j, "MinAPIVersion");
	copy_field(v->os, sizeof(v->os), j, "Os");
	copy_field(v->arch, sizeof(v->arch), j, "Arch");
	copy_field(v->kernel, sizeof(v->kernel), j, "KernelVersion");
	size_t ci;
	json_t *comp;
	json_array_foreach(json_object_get(j, "Components"), ci, comp) {
		const char *cn = json_string_value(json_object_get(comp, "Name"));
		if (cn && strcmp(cn, "Podman Engine") == 0)
			v->podman = true;
	}
	json_decref(j);
	if (!v->api_version[0])
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "engine version: no ApiVersion in the answer");
	pthread_mutex_lock(&e->mu);
	e->podman = v->podman;
	pthread_mutex_unlock(&e->mu);
	return 0;
}

/* Is the engine Podman? Its /version, read once. */
static int engine_podman(struct mafsbx_engine *e, bool *podman, struct mafsbx_error *err)
{
	pthread_mutex_lock(&e->mu);
	int known = e->podman;
	pthread_mutex_unlock(&e->mu);
	if (known >= 0) {
		*podman = known;
		return 0;
	}
	struct mafsbx_engine_version v;
	int r = mafsbx_engine_version(e, &v, err);
	if (r < 0)
		return r;
	*podman = v.podman;
	return 0;
}

/* POST a JSON body that creates an object; the answer's Id into id. */
static int create_call(struct mafsbx_engine *e, const char *t, const char *body, const char *what, long ok1, long ok2,
		       char id[65], struct mafsbx_error *err)
{
	json_t *j = NULL;
	struct call c = { .method = "POST", .target = t, .ctype = "application/json", .body = body,
			  .body_len = strlen(body), .what = what, .ok = { ok1, ok2 }, .out = &j };
	int r = do_call(e, &c, err);
	if (r < 0)
		return r;
	r = copy_id(j, id, what, err);
	json_decref(j);
	return r;
}

/* ---- containers ---------------------------------------------------------- */

int mafsbx_container_create(struct mafsbx_engine *e, const char *name, const json_t *config, char id[65],
			    struct mafsbx_error *err)
{
	if (!e || !json_is_object(config) || !id)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "create container: bad arguments");
	int r;
	if (name && (r = check_ref(name, "create container", err)) < 0)
		return r;
	__do_free char *ename = name ? mafsbx_query_escape(name) : NULL;
	__do_free char *body = dump_json(config);
	if ((name && !ename) || !body)
		return nomem(err);
	__do_free char *t = name ? target(e, err, &r, "/containers/create?name=%s", ename)
				 : target(e, err, &r, "/containers/create");
	if (!t)
		return r;
	char what[320];
	snprintf(what, sizeof(what), "create container %s", name ? name : "(unnamed)");
	return create_call(e, t, body, what, 201, 0, id, err);
}

/* POST /containers/C/<verb> without a body; `ok` statuses are success. */
static int container_post(struct mafsbx_engine *e, const char *container, const char *verb, long ok1, long ok2,
			  struct mafsbx_error *err)
{
	char vb[32], tail[32];
	snprintf(vb, sizeof(vb), "%s container", verb);
	snprintf(tail, sizeof(tail), "/%s", verb);
	struct obj_call o = { .verb = vb, .ref = container, .head = "/containers/", .tail = tail,
			      .c = { .method = "POST", .ok = { ok1, ok2 } } };
	return obj_call(e, &o, err);
}

int mafsbx_container_start(struct mafsbx_engine *e, const char *container, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "start: no engine");
	return container_post(e, container, "start", 204, 304, err);
}

int mafsbx_container_pause(struct mafsbx_engine *e, const char *container, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "pause: no engine");
	return container_post(e, container, "pause", 204, 0, err);
}

int mafsbx_container_unpause(struct mafsbx_engine *e, const char *container, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "unpause: no engine");
	/* past the end deadline too: a mount that ends leaves no guest frozen */
	struct obj_call o = { .verb = "unpause container", .ref = container, .head = "/containers/", .tail = "/unpause",
			      .c = { .method = "POST", .ok = { 204, 0 }, .past_end = true } };
	return obj_call(e, &o, err);
}

int mafsbx_container_inspect(struct mafsbx_engine *e, const char *container, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "inspect container: bad arguments");
	struct obj_call o = { .verb = "inspect container", .ref = container, .head = "/containers/", .tail = "/json",
			      .c = { .method = "GET", .ok = { 200 }, .out = out }, .want = ANSWER_OBJECT };
	return obj_call(e, &o, err);
}

static int list_call(struct mafsbx_engine *e, const char *path, const json_t *filters, bool all, const char *what,
		     json_t **out, struct mafsbx_error *err)
{
	*out = NULL;
	__do_free char *f = NULL;
	if (filters && json_object_size(filters) && !(f = mafsbx_filters_encode(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: filters cannot be encoded", what);
	int r;
	const char *sep = "?";
	__do_free char *t = target(e, err, &r, "%s%s%s%s%s%s", path, all ? sep : "", all ? "all=1" : "",
				   f ? (all ? "&" : sep) : "", f ? "filters=" : "", f ? f : "");
	if (!t)
		return r;
	struct call c = { .method = "GET", .target = t, .what = what, .ok = { 200 }, .out = out };
	r = do_call(e, &c, err);
	return r < 0 ? r : check_answer(out, ANSWER_ARRAY, what, err);
}

int mafsbx_container_list(struct mafsbx_engine *e, const json_t *filters, bool all, json_t **out,
			  struct mafsbx_error *err)
{
	if (!e || !out || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list containers: bad arguments");
	return list_call(e, "/containers/json", filters, all, "list containers", out, err);
}

struct list_sink {
	struct mafsbx_listreader *lr;
	struct mafsbx_error err;
	bool failed;
};

static int list_sink_fn(const void *data, size_t len, void *ctx)
{
	struct list_sink *ls = ctx;
	int r = mafsbx_listreader_feed(ls->lr, data, len, &ls->err);
	if (r < 0) {
		ls->failed = true;
		return -EPROTO;
	}
	return 0;
}

int mafsbx_container_list_each(struct mafsbx_engine *e, const json_t *filters, bool all, mafsbx_list_each_fn each,
			       void *ctx, struct mafsbx_error *err)
{
	return mafsbx_container_list_each_limit(e, filters, all, 0, each, ctx, err);
}

int mafsbx_container_list_each_limit(struct mafsbx_engine *e, const json_t *filters, bool all, unsigned limit,
				     mafsbx_list_each_fn each, void *ctx, struct mafsbx_error *err)
{
	if (!e || !each || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list containers: bad arguments");
	const char *what = "list containers";
	__do_free char *f = NULL;
	if (filters && json_object_size(filters) && !(f = mafsbx_filters_encode(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: filters cannot be encoded", what);
	int r;
	char lim[32] = "";
	if (limit)
		snprintf(lim, sizeof(lim), "%slimit=%u", all || f ? "&" : "?", limit);
	__do_free char *t = target(e, err, &r, "/containers/json%s%s%s%s%s", all ? "?all=1" : "",
				   f ? (all ? "&" : "?") : "", f ? "filters=" : "", f ? f : "", lim);
	if (!t)
		return r;
	struct list_sink ls = { .lr = mafsbx_listreader_new(each, ctx, 0) };
	if (!ls.lr)
		return nomem(err);
	mafsbx_error_clear(&ls.err);
	/* The list is streamed: no bound on its total size, only on one element. */
	struct mafsbx_http_req rq = { .method = "GET", .target = t, .sink = list_sink_fn, .sink_ctx = &ls,
 };
	struct mafsbx_http_resp resp = { 0 };
	r = mafsbx_http_request(e->http, &rq, &resp, err);
	if (ls.failed) {
		if (err)
			*err = ls.err;
		r = ls.err.err ? -ls.err.err : -EIO;
		mafsbx_error_prefix(err, "%s", what);
	} else if (r < 0) {
		mafsbx_error_prefix(err, "%s", what);
	} else if (resp.status != 200) {
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, what, NULL);
	} else {
		r = mafsbx_listreader_finish(ls.lr, err);
		if (r < 0)
			mafsbx_error_prefix(err, "%s", what);
	}
	mafsbx_http_resp_free(&resp);
	mafsbx_listreader_free(ls.lr);
	return r;
}

/* ---- events and the engine's clock (the proof that a freeze held) -------- */

static void ns_text(long long ns, char out[32])
{
	snprintf(out, 32, "%lld.%09lld", ns / 1000000000LL, ns % 1000000000LL);
}

int mafsbx_events_between(struct mafsbx_engine *e, long long since_ns, long long until_ns, const json_t *filters,
			  json_t **out, struct mafsbx_error *err)
{
	*out = NULL;
	if (!e || since_ns < 0 || until_ns <= since_ns || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "events: bad arguments");
	char since[32], until[32];
	ns_text(since_ns, since);
	ns_text(until_ns, until);
	__do_free char *fj = filters ? dump_json(filters) : NULL;
	__do_free char *fe = fj ? mafsbx_query_escape(fj) : NULL;
	if (filters && !fe)
		return nomem(err);
	/*
	 * Podman (4.3, its file event log) reads the log from the start and
	 * ends the answer when a timer set for `until` fires: an `until` in its
	 * future holds the answer until then, one in its past may stop the read
	 * before it reached the events asked for (an answer with some or none of
	 * them). Its `stream=false` reads the log to its end instead, and the
	 * cut at `until` is made here. dockerd has no such parameter.
	 */
	bool podman = false;
	int r = engine_podman(e, &podman, err);
	if (r < 0) {
		mafsbx_error_prefix(err, "read the engine's events");
		return r;
	}
	__do_free char *t = podman ? target(e, err, &r, "/events?since=%s&stream=false%s%s", since,
					    fe ? "&filters=" : "", fe ? fe : "")
				   : target(e, err, &r, "/events?since=%s&until=%s%s%s", since, until,
					    fe ? "&filters=" : "", fe ? fe : "");
	if (!t)
		return r;
	struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_req rq = { .method = "GET", .target = t, .timeout_ms = e->to.request_ms };
	if ((r = mafsbx_http_request(e->http, &rq, &resp, err)) < 0) {
		mafsbx_error_prefix(err, "read the engine's events");
		goto out;
	}
	if (resp.status != 200) {
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, "read the engine's events",
					     NULL);
		goto out;
	}
	/* a stream of JSON objects, one after the other */
	json_t *a = json_array();
	if (!a) {
		r = nomem(err);
		goto out;
	}
	const char *p = resp.body.data ? resp.body.data : "";
	size_t left = resp.body.len;
	while (left) {
		while (left && (*p == '\n' || *p == '\r' || *p == ' '))
			p++, left--;
		if (!left)
			break;
		json_error_t je;
		json_t *ev = json_loadb(p, left, JSON_DISABLE_EOF_CHECK, &je);
		if (!ev || je.position <= 0 || (size_t)je.position > left) {
			json_decref(ev);
			json_decref(a);
			r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "the engine's events are not JSON: %s", je.text);
			goto out;
		}
		json_t *tn = json_object_get(ev, "timeNano");
		if (podman && json_is_integer(tn) && json_integer_value(tn) > until_ns)
			json_decref(ev); /* past `until`: logged after the present the caller asked for */
		else
			json_array_append_new(a, ev);
		p += je.position;
		left -= (size_t)je.position;
	}
	*out = a;
	r = 0;
out:
	mafsbx_http_resp_free(&resp);
	return r;
}

int mafsbx_engine_cgroups(struct mafsbx_engine *e, struct mafsbx_engine_cgroups *c, struct mafsbx_error *err)
{
	if (!e || !c)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine cgroups: bad arguments");
	json_t *j = NULL;
	int r = get_json(e, "/info", e->to.request_ms, "read the engine's cgroups", &j, err);
	if (r < 0)
		return r;
	memset(c, 0, sizeof(*c));
	copy_field(c->driver, sizeof(c->driver), j, "CgroupDriver");
	copy_field(c->version, sizeof(c->version), j, "CgroupVersion");
	json_t *pl = json_object_get(j, "PidsLimit");
	c->pids_limit = json_is_true(pl) || (!pl && strcmp(c->driver, "none") != 0);
	c->can_pause = strcmp(c->driver, "none") != 0;
	json_decref(j);
	return 0;
}

int mafsbx_engine_time(struct mafsbx_engine *e, long long *ns, struct mafsbx_error *err)
{
	if (!e || !ns)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine time: bad arguments");
	json_t *j = NULL;
	int r = get_json(e, "/info", e->to.request_ms, "read the engine's clock", &j, err);
	if (r < 0)
		return r;
	const char *st = json_string_value(json_object_get(j, "SystemTime"));
	struct timespec ts;
	if (!st || parse_rfc3339(st, &ts) < 0) {
		json_decref(j);
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "the engine's /info has no readable SystemTime");
	}
	json_decref(j);
	*ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	return 0;
}

int mafsbx_container_delete(struct mafsbx_engine *e, const char *container, bool force, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "delete container: no engine");
	struct obj_call o = { .verb = "delete container", .ref = container, .head = "/containers/",
			      .tail = force ? "?force=1&v=1" : "?v=1", .c = { .method = "DELETE", .ok = { 204, 200 } } };
	return obj_call(e, &o, err);
}

static int demux_sink(const void *data, size_t len, void *ctx);

/* The log stream stops at the cap instead of being drained: a log can be as long as the container lived. */
struct logs_ctx {
	struct mafsbx_demux dm;
	bool stop;
};

static int logs_sink(const void *data, size_t len, void *ctx)
{
	struct logs_ctx *lc = ctx;
	int r = demux_sink(data, len, &lc->dm);
	if (r == 0 && lc->dm.res->truncated) {
		lc->stop = true;
		return -ECANCELED;
	}
	return r;
}

int mafsbx_container_logs(struct mafsbx_engine *e, const char *container, unsigned tail, size_t max_bytes,
			  struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	if (!res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "container logs: no result");
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "container logs: no engine");
	char tl[48] = "/logs?stdout=1&stderr=1&tail=all";
	if (tail)
		snprintf(tl, sizeof(tl), "/logs?stdout=1&stderr=1&tail=%u", tail);
	struct obj_call o = { .verb = "read the log of", .ref = container, .head = "/containers/", .tail = tl };
	const char *what = o.what;
	int r;
	__do_free char *t = obj_target(e, &o, &r, err);
	if (!t)
		return r;
	struct logs_ctx lc = { .stop = false };
	mafsbx_demux_init(&lc.dm, res, max_bytes);
	struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_req rq = {
		.method = "GET", .target = t, .timeout_ms = e->to.request_ms, .stall_s = e->to.stream_stall_s,
		.sink = logs_sink, .sink_ctx = &lc,
	};
	r = mafsbx_http_request(e->http, &rq, &resp, err);
	if (r < 0 && lc.stop) {
		/* we cut the stream at the cap: what we kept is the answer */
		r = 0;
		resp.status = 200;
		if (err)
			mafsbx_error_clear(err);
	}
	if (r < 0)
		mafsbx_error_prefix(err, "%s", what);
	else if (resp.status != 200)
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, what, NULL);
	else if ((!lc.stop && mafsbx_demux_finish(&lc.dm) < 0) || lc.dm.error)
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: the log stream is not framed (a TTY container?)", what);
	mafsbx_http_resp_free(&resp);
	return r;
}

/* ---- archive ------------------------------------------------------------- */

/*
 * The archive calls' object call: `what` is "<verb> <path> <prep> <container>",
 * the container and the guest path are checked, then the target is built
 * (or NULL, *r set).
 */
static char *archive_target(struct mafsbx_engine *e, char what[320], const char *verb, const char *prep,
			    const char *container, const char *path, const char *extra, int *r,
			    struct mafsbx_error *err)
{
	snprintf(what, 320, "%s %.200s %s %s", verb, path ? path : "", prep, container ? container : "");
	*r = check_ref(container, what, err);
	if (*r < 0 || (*r = check_guest_path(path, err)) < 0)
		return NULL;
	__do_free char *ec = mafsbx_query_escape(container);
	__do_free char *ep = mafsbx_query_escape(path);
	if (!ec || !ep) {
		*r = nomem(err);
		return NULL;
	}
	return target(e, err, r, "/containers/%s/archive?path=%s%s", ec, ep, extra ? extra : "");
}

/*
 * A failed HEAD carries no body, and 404/500 alone cannot tell a missing
 * container from a missing path, or ENOTDIR from ELOOP. Ask again with a GET,
 * which carries the message; on the rare success (the path appeared) the
 * connection is dropped at the first body byte.
 */
static int head_failure(struct mafsbx_engine *e, const char *t, long head_status, const char *what, const char *path,
			struct mafsbx_error *err)
{
	struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_req rq = { .method = "GET", .target = t, .abort_on_success_body = true,
				      .stall_s = e->to.stream_stall_s };
	struct mafsbx_error perr;
	mafsbx_error_clear(&perr);
	int r = mafsbx_http_request(e->http, &rq, &resp, &perr);
	if (r == 0 && resp.status >= 300 && resp.body.len)
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, what, path);
	else
		r = mafsbx_error_from_engine(err, head_status, NULL, 0, what, path);
	mafsbx_http_resp_free(&resp);
	return r;
}

/* The stat header of a successful answer, decoded. */
static int stat_from_header(const struct mafsbx_http_resp *resp, struct mafsbx_path_stat *st, const char *what,
			    struct mafsbx_error *err)
{
	if (!resp->header_seen)
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: answer has no %s header", what, STAT_HEADER);
	int r = mafsbx_path_stat_decode(resp->header.data, st, err);
	if (r < 0)
		mafsbx_error_prefix(err, "%s", what);
	return r;
}

/*
 * One archive call: rq (method, body, sink, ...) sent to the target built by
 * archive_target. Status 200 is success, the stat header decoded into `st`
 * when given; a failed HEAD is asked again for its reason (head_failure).
 */
static int archive_call(struct mafsbx_engine *e, const char *verb, const char *prep, const char *container,
			const char *path, const char *extra, struct mafsbx_http_req *rq, struct mafsbx_path_stat *st,
			struct mafsbx_error *err)
{
	char what[320];
	int r;
	__do_free char *t = archive_target(e, what, verb, prep, container, path, extra, &r, err);
	if (!t)
		return r;
	rq->target = t;
	rq->want_header = st ? STAT_HEADER : NULL;
	struct mafsbx_http_resp resp = { 0 };
	r = mafsbx_http_request(e->http, rq, &resp, err);
	if (r < 0)
		mafsbx_error_prefix(err, "%s", what);
	else if (resp.status != 200 && strcmp(rq->method, "HEAD") == 0)
		r = head_failure(e, t, resp.status, what, path, err);
	else if (resp.status != 200)
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, what, path);
	else if (st)
		r = stat_from_header(&resp, st, what, err);
	mafsbx_http_resp_free(&resp);
	return r;
}

int mafsbx_archive_head(struct mafsbx_engine *e, const char *container, const char *path,
			struct mafsbx_path_stat *st, struct mafsbx_error *err)
{
	if (!e || !st)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "stat: bad arguments");
	struct mafsbx_http_req rq = { .method = "HEAD" };
	return archive_call(e, "stat", "in", container, path, NULL, &rq, st, err);
}

int mafsbx_archive_get(struct mafsbx_engine *e, const char *container, const char *path, uint64_t max_bytes,
		       mafsbx_sink_fn sink, void *sink_ctx, struct mafsbx_path_stat *st, struct mafsbx_error *err)
{
	if (!e || !sink)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "read archive: bad arguments");
	struct mafsbx_http_req rq = {
		.method = "GET", .stall_s = e->to.stream_stall_s, .sink = sink, .sink_ctx = sink_ctx, .max_body = max_bytes,
	};
	return archive_call(e, "read", "from", container, path, NULL, &rq, st, err);
}

int mafsbx_archive_put(struct mafsbx_engine *e, const char *container, const char *dir, const void *tar,
		       size_t tar_len, struct mafsbx_error *err)
{
	if (!e || (!tar && tar_len))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "write archive: bad arguments");
	struct mafsbx_http_req rq = {
		.method = "PUT", .content_type = "application/x-tar", .body = tar ? tar : "", .body_len = tar_len,
		.stall_s = e->to.stream_stall_s,
	};
	return archive_call(e, "write into", "in", container, dir, "&noOverwriteDirNonDir=1", &rq, NULL, err);
}

/* ---- exec ---------------------------------------------------------------- */

static json_t *string_array(const char *const *v, bool *bad)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	for (size_t i = 0; v && v[i]; i++) {
		json_t *s = json_string(v[i]);
		if (!s) {
			*bad = true;
			json_decref(a);
			return NULL;
		}
		json_array_append_new(a, s);
	}
	return a;
}

static int demux_sink(const void *data, size_t len, void *ctx)
{
	return mafsbx_demux_feed(ctx, data, len);
}

/* Time left before `deadline` for a plain call, capped by the request timeout. */
static long call_timeout(const struct mafsbx_engine *e, long long deadline)
{
	if (!deadline)
		return e->to.request_ms;
	long long left = deadline - mafsbx_now_ms();
	if (left < 1)
		left = 1;
	return left < e->to.request_ms ? (long)left : e->to.request_ms;
}

/*
 * The runtime could not start the process: exit 126 and the exec inspect's
 * Pid 0 (no process ever existed). Only the engine's answer decides: the
 * runtime's message ("OCI runtime exec failed", "unable to find user") is on
 * the same stdout a guest writes to, so a command printing it and exiting
 * 126 would otherwise pass for a launch failure.
 */
static bool launch_failure(const struct mafsbx_exec_result *res, bool never_started)
{
	/* Docker answers every launch failure 126; Podman 127 (a missing cwd included, which its message
	 * names): exec.c decides between the two from the runtime's message */
	return never_started && (res->exit_code == 126 || res->exit_code == 127);
}

/* The exec's configuration (Cmd, Env, User, WorkingDir, attached streams), or NULL with *r set. */
static json_t *exec_config(const struct mafsbx_exec_request *rq, const char *what, int *r, struct mafsbx_error *err)
{
	bool bad = false;
	json_t *cmd = string_array(rq->argv, &bad);
	json_t *env = rq->env ? string_array(rq->env, &bad) : NULL;
	json_t *cfg = json_object();
	*r = 0;
	if (bad)
		*r = mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: command or environment is not valid UTF-8", what);
	else if (!cmd || !cfg || (rq->env && !env))
		*r = nomem(err);
	if (*r == 0) {
		json_object_set_new(cfg, "AttachStdin", json_boolean(rq->stdin_data != NULL || rq->stdin_from_fd));
		json_object_set_new(cfg, "AttachStdout", json_true());
		json_object_set_new(cfg, "AttachStderr", json_true());
		json_object_set_new(cfg, "Tty", json_false());
		json_object_set(cfg, "Cmd", cmd);
		if (env)
			json_object_set(cfg, "Env", env);
		if (rq->user && (json_object_set_new(cfg, "User", json_string(rq->user)) < 0))
			*r = mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: user is not valid UTF-8", what);
		else if (rq->workdir && (json_object_set_new(cfg, "WorkingDir", json_string(rq->workdir)) < 0))
			*r = mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: working directory is not valid UTF-8", what);
	}
	json_decref(cmd);
	json_decref(env);
	if (*r < 0) {
		json_decref(cfg);
		return NULL;
	}
	return cfg;
}

/* Step 1: create the exec; its ID into res->exec_id. */
static int exec_create(struct mafsbx_engine *e, const char *container, const struct mafsbx_exec_request *rq,
		       const char *what, long long deadline, struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	int r;
	json_t *cfg = exec_config(rq, what, &r, err);
	if (!cfg)
		return r;
	__do_free char *body = dump_json(cfg);
	json_decref(cfg);
	if (!body)
		return nomem(err);
	json_t *j = NULL;
	struct obj_call o = { .ref = container, .head = "/containers/", .tail = "/exec",
			      .c = { .method = "POST", .ctype = "application/json", .body = body,
				     .body_len = strlen(body), .timeout_ms = call_timeout(e, deadline), .ok = { 201 },
				     .out = &j } };
	snprintf(o.what, sizeof(o.what), "%s", what);
	if ((r = obj_call(e, &o, err)) < 0) {
		if (err && err->kind == MAFSBX_EK_TIMEOUT)
			res->timed_out = true;
		return r;
	}
	r = copy_id(j, res->exec_id, what, err);
	json_decref(j);
	return r;
}

/* Step 2: start on a fresh connection; the output stream, demultiplexed into dm, ends when the engine closes it. */
static int exec_start(struct mafsbx_engine *e, const struct mafsbx_exec_request *rq, const char *what,
		      long long deadline, struct mafsbx_demux *dm, struct mafsbx_error *err)
{
	struct mafsbx_exec_result *res = dm->res;
	int r;
	__do_free char *tstart = target(e, err, &r, "/exec/%s/start", res->exec_id);
	if (!tstart)
		return r;
	static const char start_body[] = "{\"Detach\":false,\"Tty\":false}";
	struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_hijack_req hq = {
		.method = "POST", .target = tstart, .content_type = "application/json", .body = start_body,
		.body_len = sizeof(start_body) - 1, .in = rq->stdin_data, .in_len = rq->stdin_len,
		.in_from_fd = rq->stdin_from_fd, .in_fd = rq->stdin_fd, .in_taken = &res->stdin_bytes,
		.deadline_ms = deadline, .on_data = demux_sink, .ctx = dm,
	};
	r = mafsbx_http_hijack(e->http, &hq, &resp, err);
	if (r < 0) {
		if (err && err->kind == MAFSBX_EK_TIMEOUT)
			res->timed_out = true;
		if (err)
			mafsbx_error_prefix(err, "%s", what);
	} else if (resp.status != 101 && resp.status != 200) {
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, what, NULL);
	}
	mafsbx_http_resp_free(&resp);
	if (r < 0)
		return r;
	int fr = mafsbx_demux_finish(dm);
	if (fr == -ENOMEM)
		return nomem(err);
	if (fr < 0)
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: output stream is not well framed", what);
	return 0;
}

/*
 * One exec inspect of step 3: 1 with res->exit_code set when the process
 * ended, 0 while it runs, or a negative errno.
 */
static int exec_exited(struct mafsbx_engine *e, const char *path, const char *what, long long deadline,
		       struct mafsbx_exec_result *res, bool *never_started, struct mafsbx_error *err)
{
	json_t *ij = NULL;
	int r = get_json(e, path, call_timeout(e, deadline), what, &ij, err);
	if (r < 0)
		return r;
	json_t *code = json_object_get(ij, "ExitCode");
	bool running = json_is_true(json_object_get(ij, "Running"));
	if (running || !json_is_integer(code)) {
		json_decref(ij);
		return 0;
	}
	res->exit_code = (int)json_integer_value(code);
	/*
	 * A pause that lands between the engine's own "is paused" check and
	 * runc's exec makes runc refuse ("cannot exec in a paused state"): HTTP
	 * 200, exit 126, message on stdout. Pid 0 proves no process ever
	 * started, which the guest cannot forge, so this is the same refusal as
	 * a 409 and safe to re-issue.
	 */
	json_t *pid = json_object_get(ij, "Pid");
	static const char paused[] = "paused";
	*never_started = json_is_integer(pid) && json_integer_value(pid) == 0;
	json_decref(ij);
	if (*never_started && res->exit_code == 126 && res->out && memmem(res->out, res->out_len, paused,
									    sizeof(paused) - 1))
		return mafsbx_error_set(err, MAFSBX_EK_PAUSED, "%s: the container was paused as the exec started", what);
	return 1;
}

/*
 * How long after the output stream ended the exit code may still be unknown
 * before the end is taken for a cut. The engine closes an exec's stream once
 * every holder of the process's stdout and stderr has closed them (in
 * practice: the process exited, its output drained) and records the exit a
 * moment later: measured on an idle dockerd 20.10 here, 2 ms at the median
 * and 27 ms at worst over 150 execs; under load (ASan, a TLS terminator, a
 * busy engine) past 500 ms, so a shorter grace turned whole results into
 * false failures. A stream
 * that ends while the process runs on for longer than this was cut (a proxy,
 * the network, a restarted daemon): the caller (sbx_exec) then waits for the
 * real end and reports the output as incomplete (EIO). A command that closes
 * its own stdout and stderr and runs on for longer is reported the same way,
 * the engine giving no way to tell it from a cut. The window that remains: a
 * command that ends less than the grace after a cut is reported a success
 * with its output cut short.
 */
#define EXEC_EXIT_GRACE_MS 2000

/* Step 3, the exit code: set when the stream ends in practice; poll briefly to be sure. */
static int exec_exit_code(struct mafsbx_engine *e, const char *what, long long deadline,
			  struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	char path[96];
	snprintf(path, sizeof(path), "/exec/%s/json", res->exec_id);
	long wait_ms = 1;
	bool never_started = false;
	long long poll_end = mafsbx_now_ms() + EXEC_EXIT_GRACE_MS;
	int r;
	while ((r = exec_exited(e, path, what, deadline, res, &never_started, err)) == 0) {
		long long now = mafsbx_now_ms();
		if (now >= poll_end || (deadline && now >= deadline)) {
			if (deadline && now >= deadline)
				res->timed_out = true;
			return mafsbx_error_set(err, deadline && now >= deadline ? MAFSBX_EK_TIMEOUT : MAFSBX_EK_PROTOCOL,
						"%s: output ended but the exit code is not known", what);
		}
		usleep((useconds_t)wait_ms * 1000);
		if (wait_ms < 50)
			wait_ms *= 2;
	}
	if (r < 0)
		return r;
	res->launch_failed = launch_failure(res, never_started);
	return 0;
}

int mafsbx_exec_run(struct mafsbx_engine *e, const char *container, const struct mafsbx_exec_request *rq,
		    struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	if (!res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec: no result");
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	if (!e || !rq || !rq->argv || !rq->argv[0])
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec: no command");
	char what[320];
	snprintf(what, sizeof(what), "exec %.64s in %s", rq->argv[0], container ? container : "");
	int r = check_ref(container, what, err);
	if (r < 0)
		return r;
	long long t0 = mafsbx_now_ms();
	long long deadline = rq->timeout_ms > 0 ? t0 + rq->timeout_ms : 0;
	struct mafsbx_demux dm;
	mafsbx_demux_init(&dm, res, rq->max_output);
	dm.on_output = rq->on_output;
	dm.output_ctx = rq->output_ctx;
	r = exec_create(e, container, rq, what, deadline, res, err);
	if (r == 0 && rq->on_created)
		rq->on_created(res->exec_id, rq->output_ctx);
	if (r == 0)
		r = exec_start(e, rq, what, deadline, &dm, err);
	if (r == 0)
		r = exec_exit_code(e, what, deadline, res, err);
	if (r < 0)
		(void)mafsbx_demux_finish(&dm);  /* out/err stay valid, "" at least */
	res->duration_ms = mafsbx_now_ms() - t0;
	return r;
}

/* GET /exec/ID/json: 0 and the answer (*out), or a negative errno. */
static int exec_json(struct mafsbx_engine *e, const char *exec_id, json_t **out, struct mafsbx_error *err)
{
	if (!e || !mafsbx_is_engine_id(exec_id))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec inspect: bad exec ID");
	char path[96];
	snprintf(path, sizeof(path), "/exec/%s/json", exec_id);
	return get_json(e, path, e->to.request_ms, "inspect exec", out, err);
}

int mafsbx_exec_inspect(struct mafsbx_engine *e, const char *exec_id, bool *running, int *exit_code,
			struct mafsbx_error *err)
{
	json_t *j = NULL;
	int r = exec_json(e, exec_id, &j, err);
	if (r < 0)
		return r;
	*running = json_is_true(json_object_get(j, "Running"));
	json_t *code = json_object_get(j, "ExitCode");
	*exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
	json_decref(j);
	return 0;
}

int mafsbx_exec_pid(struct mafsbx_engine *e, const char *exec_id, long *pid, bool *running, struct mafsbx_error *err)
{
	*pid = 0;
	*running = false;
	json_t *j = NULL;
	int r = exec_json(e, exec_id, &j, err);
	if (r < 0)
		return r;
	*running = json_is_true(json_object_get(j, "Running"));
	json_t *p = json_object_get(j, "Pid");
	if (json_is_integer(p) && json_integer_value(p) > 0 && json_integer_value(p) < (1 << 22))
		*pid = (long)json_integer_value(p);
	json_decref(j);
	return 0;
}

/* ---- images -------------------------------------------------------------- */

int mafsbx_image_inspect(struct mafsbx_engine *e, const char *ref, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "inspect image: bad arguments");
	struct obj_call o = { .verb = "inspect image", .ref = ref, .image = true, .head = "/images/", .tail = "/json",
			      .c = { .method = "GET", .ok = { 200 }, .out = out } };
	return obj_call(e, &o, err);
}

/*
 * Progress streams (pull, import) are JSON lines; a line with "error" means
 * the operation failed even though the status was 200. Lines are scanned as
 * they arrive with a bounded buffer.
 */
struct progress {
	struct mafsbx_buf line;
	char error[512];
	bool failed;
	void (*on_line)(const json_t *line, void *ctx);   /* optional watcher of every line */
	void *ctx;
};

static void progress_line(struct progress *p)
{
	if (!p->line.len || p->failed)
		return;
	json_error_t je;
	json_t *j = json_loadb(p->line.data, p->line.len, 0, &je);
	if (p->on_line && json_is_object(j))
		p->on_line(j, p->ctx);
	json_t *ev = json_object_get(j, "error");
	if (ev) {
		p->failed = true;
		const char *m = json_string_value(ev);
		snprintf(p->error, sizeof(p->error), "%s", m ? m : "error");
		mafsbx_scrub_host_paths(p->error);
	}
	json_decref(j);
}

static int progress_sink(const void *data, size_t len, void *ctx)
{
	struct progress *p = ctx;
	const char *s = data, *end = s + len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = (size_t)((nl ? nl : end) - s);
		/* Overlong lines are cut (still scanned for "error" up to the cut). */
		size_t room = p->line.len < 256 * 1024 ? 256 * 1024 - p->line.len : 0;
		if (mafsbx_buf_append(&p->line, s, n < room ? n : room) < 0)
			return -ENOMEM;
		if (!nl)
			break;
		progress_line(p);
		mafsbx_buf_reset(&p->line);
		s = nl + 1;
	}
	return 0;
}

static int progress_call(struct mafsbx_engine *e, const char *t, const char *ctype, const void *body, size_t len,
			 const char *what, enum mafsbx_err_kind fail_kind, struct progress *watch,
			 struct mafsbx_error *err)
{
	struct progress p = { .line = MAFSBX_BUF_INIT, .on_line = watch ? watch->on_line : NULL,
			      .ctx = watch ? watch->ctx : NULL };
	struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_req rq = {
		.method = "POST", .target = t, .content_type = ctype, .body = body, .body_len = len,
		.timeout_ms = e->to.pull_ms, .sink = progress_sink, .sink_ctx = &p,
	};
	int r = mafsbx_http_request(e->http, &rq, &resp, err);
	progress_line(&p);
	if (r < 0) {
		mafsbx_error_prefix(err, "%s", what);
	} else if (resp.status != 200) {
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, what, NULL);
		if (err && (err->kind == MAFSBX_EK_NO_OBJECT || err->kind == MAFSBX_EK_ENGINE ||
			    err->kind == MAFSBX_EK_INVALID)) {
			err->kind = fail_kind;
			err->err = mafsbx_error_kind_errno(fail_kind);
			snprintf(err->type, sizeof(err->type), "%s", mafsbx_error_kind_type(fail_kind));
			r = -err->err;
		}
	} else if (p.failed) {
		r = mafsbx_error_set(err, fail_kind, "%s: %s", what, p.error);
	}
	mafsbx_buf_free(&p.line);
	mafsbx_http_resp_free(&resp);
	return r;
}

int mafsbx_image_pull(struct mafsbx_engine *e, const char *ref, struct mafsbx_error *err)
{
	return mafsbx_image_pull_watch(e, ref, NULL, NULL, err);
}

int mafsbx_image_pull_watch(struct mafsbx_engine *e, const char *ref, void (*on_line)(const json_t *line, void *ctx),
			    void *ctx, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "pull image: no engine");
	char what[600];
	snprintf(what, sizeof(what), "pull image %s", ref ? ref : "");
	int r = check_image_ref(ref, what, err);
	if (r < 0)
		return r;
	/* Split "repo[:tag]" at a ':' after the last '/'; a digest ref stays whole. */
	__do_free char *name = strdup(ref);
	if (!name)
		return nomem(err);
	const char *tag = "latest";
	if (strchr(name, '@')) {
		tag = NULL;
	} else {
		char *slash = strrchr(name, '/');
		char *colon = strrchr(slash ? slash : name, ':');
		if (colon) {
			*colon = '\0';
			tag = colon + 1;
		}
	}
	__do_free char *en = mafsbx_query_escape(name);
	__do_free char *et = tag ? mafsbx_query_escape(tag) : NULL;
	if (!en || (tag && !et))
		return nomem(err);
	__do_free char *t = target(e, err, &r, "/images/create?fromImage=%s%s%s", en, et ? "&tag=" : "", et ? et : "");
	if (!t)
		return r;
	struct progress watch = { .on_line = on_line, .ctx = ctx };
	return progress_call(e, t, NULL, NULL, 0, what, MAFSBX_EK_NO_IMAGE, &watch, err);
}

int mafsbx_image_import(struct mafsbx_engine *e, const void *tar, size_t tar_len, const char *repo, const char *tag,
			const char *const *changes, struct mafsbx_error *err)
{
	if (!e || !tar || !tar_len)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "import image: no rootfs tar");
	char what[600];
	snprintf(what, sizeof(what), "import image %s:%s", repo ? repo : "", tag ? tag : "latest");
	int r = check_image_ref(repo, what, err);
	if (r < 0 || (tag && (r = check_image_ref(tag, what, err)) < 0))
		return r;
	struct mafsbx_buf q = MAFSBX_BUF_INIT;
	__do_free char *er = mafsbx_query_escape(repo);
	__do_free char *et = mafsbx_query_escape(tag ? tag : "latest");
	if (!er || !et || mafsbx_buf_printf(&q, "/images/create?fromSrc=-&repo=%s&tag=%s", er, et) < 0) {
		mafsbx_buf_free(&q);
		return nomem(err);
	}
	for (size_t i = 0; changes && changes[i]; i++) {
		char *ech = mafsbx_query_escape(changes[i]);
		int a = ech ? mafsbx_buf_printf(&q, "&changes=%s", ech) : -ENOMEM;
		free(ech);
		if (a < 0) {
			mafsbx_buf_free(&q);
			return nomem(err);
		}
	}
	__do_free char *t = target(e, err, &r, "%s", q.data);
	mafsbx_buf_free(&q);
	if (!t)
		return r;
	return progress_call(e, t, "application/x-tar", tar, tar_len, what, MAFSBX_EK_ENGINE, NULL, err);
}

int mafsbx_image_delete(struct mafsbx_engine *e, const char *ref, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "delete image: no engine");
	struct obj_call o = { .verb = "delete image", .ref = ref, .image = true, .head = "/images/", .tail = "?force=1",
			      .c = { .method = "DELETE", .ok = { 200 } } };
	return obj_call(e, &o, err);
}

/* ---- networks ------------------------------------------------------------ */

int mafsbx_network_create(struct mafsbx_engine *e, const json_t *config, char id[65], struct mafsbx_error *err)
{
	if (!e || !json_is_object(config) || !id)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "create network: bad arguments");
	const char *name = json_string_value(json_object_get(config, "Name"));
	char what[320];
	snprintf(what, sizeof(what), "create network %s", name ? name : "");
	int r;
	__do_free char *body = dump_json(config);
	if (!body)
		return nomem(err);
	__do_free char *t = target(e, err, &r, "/networks/create");
	if (!t)
		return r;
	return create_call(e, t, body, what, 201, 200, id, err);
}

int mafsbx_network_inspect(struct mafsbx_engine *e, const char *network, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "inspect network: bad arguments");
	struct obj_call o = { .verb = "inspect network", .ref = network, .head = "/networks/",
			      .c = { .method = "GET", .ok = { 200 }, .out = out }, .want = ANSWER_OBJECT };
	return obj_call(e, &o, err);
}

int mafsbx_network_list(struct mafsbx_engine *e, const json_t *filters, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list networks: bad arguments");
	return list_call(e, "/networks", filters, false, "list networks", out, err);
}

int mafsbx_network_delete(struct mafsbx_engine *e, const char *network, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "delete network: no engine");
	struct obj_call o = { .verb = "delete network", .ref = network, .head = "/networks/",
			      .c = { .method = "DELETE", .ok = { 204, 200 } } };
	return obj_call(e, &o, err);
}

int mafsbx_network_connect(struct mafsbx_engine *e, const char *network, const char *container,
			   struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "connect network: no engine");
	struct obj_call o = { .ref = network, .head = "/networks/", .tail = "/connect",
			      .c = { .method = "POST", .ctype = "application/json", .ok = { 200 } } };
	snprintf(o.what, sizeof(o.what), "connect %s to network %s", container ? container : "",
		 network ? network : "");
	int r = check_ref(network, o.what, err);
	if (r < 0 || (r = check_ref(container, o.what, err)) < 0)
		return r;
	json_t *b = json_pack("{s:s}", "Container", container);
	__do_free char *body = b ? dump_json(b) : NULL;
	json_decref(b);
	if (!body)
		return nomem(err);
	o.c.body = body;
	o.c.body_len = strlen(body);
	return obj_call(e, &o, err);
}
