/*
 * engine.c: the engine handle, the request plumbing every call of engine.h
 * shares (engine_internal.h) and the pure parts of engine.h. The calls
 * themselves are split by resource: engine_containers.c, engine_exec.c,
 * engine_archive.c, engine_images.c, engine_networks.c and engine_system.c
 * (version, events, the engine's cgroups and clock). These files are the only
 * ones that know Engine API URLs, their query parameters and their JSON.
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
#include "engine_internal.h"
#include "http.h"
#include "names.h"

#define DEFAULT_MAX_OUTPUT (8u * 1024 * 1024)
#define STAT_HEADER_MAX (128 * 1024)

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
int mafsbx_eng_parse_rfc3339(const char *s, struct timespec *ts)
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
	__do_free unsigned char *raw = NULL;
	size_t n = 0;
	/* Go's StdEncoding as dockerd writes it; its non-Strict reader ignores spare bits, and so do we. */
	int r = mafsbx_base64_decode(b64, len, MAFSBX_B64_STD | MAFSBX_B64_NONEMPTY | MAFSBX_B64_ANY_BITS, &raw, &n);
	if (r == -ENOMEM)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (r)
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header is not base64");
	json_error_t je;
	__do_json json_t *j = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(j))
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header is not a JSON object");
	json_t *jname = json_object_get(j, "name"), *jsize = json_object_get(j, "size");
	json_t *jmode = json_object_get(j, "mode"), *jmtime = json_object_get(j, "mtime");
	json_t *jlink = json_object_get(j, "linkTarget");
	if (!json_is_string(jname) || !json_is_integer(jsize) || !json_is_integer(jmode) || !json_is_string(jmtime) ||
	    (jlink && !json_is_string(jlink)))
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header: missing or mistyped field");
	json_int_t size = json_integer_value(jsize), mode = json_integer_value(jmode);
	if (size < 0 || mode < 0 || mode > (json_int_t)UINT32_MAX)
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header: size or mode out of range");
	struct timespec mt;
	if (mafsbx_eng_parse_rfc3339(json_string_value(jmtime), &mt) < 0) {
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "path stat header: bad mtime \"%.64s\"",
					json_string_value(jmtime));
	}
	const char *link = jlink ? json_string_value(jlink) : "";
	size_t ll = jlink ? json_string_length(jlink) : 0;
	if (ll >= sizeof(st->link_target) || strlen(link) != ll) {
		return mafsbx_error_set(err, ll >= sizeof(st->link_target) ? MAFSBX_EK_NAMETOOLONG : MAFSBX_EK_PROTOCOL,
					"path stat header: link target too long or holds NUL");
	}
	memset(st, 0, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "%s", json_string_value(jname));
	st->size = (int64_t)size;
	st->go_mode = (uint32_t)mode;
	st->mode = mafsbx_go_mode_to_st(st->go_mode);
	st->mtime = mt;
	memcpy(st->link_target, link, ll + 1);
	return 0;
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
	if (mafsbx_array_grow(buf, cap, *len + take + 1, 1, 256, d->max_output + 1) < 0)
		return -ENOMEM;
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

int mafsbx_eng_demux_sink(const void *data, size_t len, void *ctx)
{
	return mafsbx_demux_feed(ctx, data, len);
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
	__do_resp struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_req rq = { .method = "GET", .target = "/_ping", .want_header = "Api-Version",
				      .max_body = 4096 };
	int r = mafsbx_http_request(e->http, &rq, &resp, err);
	if (r < 0)
		return r;
	if (resp.status != 200)
		return mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, "ping", NULL);
	char prefix[24] = "/v1.41";
	int v = resp.header_seen ? api_number(resp.header.data) : -1;
	if (v >= 0 && v < 1041)
		snprintf(prefix, sizeof(prefix), "/v%d.%d", v / 1000, v % 1000);
	pthread_mutex_lock(&e->mu);
	memcpy(e->prefix, prefix, sizeof(prefix));
	e->negotiated = true;
	pthread_mutex_unlock(&e->mu);
	return 0;
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
int mafsbx_eng_check_ref(const char *ref, const char *what, struct mafsbx_error *err)
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

/*
 * Build "<prefix><fmt>" into a malloc'd string. Every %s argument must be
 * escaped already by the caller.
 */
__attribute__((format(printf, 4, 5)))
char *mafsbx_eng_target(struct mafsbx_engine *e, struct mafsbx_error *err, int *r, const char *fmt, ...)
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

int mafsbx_eng_nomem(struct mafsbx_error *err)
{
	return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
}

static int call_once(struct mafsbx_engine *e, const struct call *c, struct mafsbx_error *err)
{
	__do_resp struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_req rq = {
		.method = c->method, .target = c->target, .content_type = c->ctype,
		.body = c->body, .body_len = c->body_len, .timeout_ms = c->timeout_ms, .past_end = c->past_end,
	};
	int r = mafsbx_http_request(e->http, &rq, &resp, err);
	if (r < 0) {
		if (err)
			mafsbx_error_prefix(err, "%s", c->what);
		return r;
	}
	if (c->status_out)
		*c->status_out = resp.status;
	bool ok = false;
	for (size_t i = 0; i < 4 && c->ok[i]; i++)
		ok = ok || resp.status == c->ok[i];
	if (!ok)
		return mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, c->what, c->path);
	if (c->out) {
		json_error_t je;
		*c->out = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, &je);
		if (!*c->out)
			r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: engine answer is not JSON: %s", c->what,
					     je.text);
	}
	return r;
}

/*
 * A swarm manager answers 5xx while its swarm elects a leader (a few
 * seconds): such an answer is asked again, with backoff, up to the handle's
 * bound. A create asked again may meet its own first attempt as a conflict,
 * which get-or-create already takes.
 */
int mafsbx_eng_retrying(struct mafsbx_engine *e, const char *what, mafsbx_eng_once_fn once, const void *arg,
		       struct mafsbx_error *err)
{
	if (!e->transient_retry_ms)
		return once(e, arg, err);
	struct mafsbx_error mine;
	struct mafsbx_error *ep = err ? err : &mine;
	long long deadline = mafsbx_now_ms() + e->transient_retry_ms;
	long nap_ms = 100;
	for (;;) {
		mafsbx_error_clear(ep);
		int r = once(e, arg, ep);
		if (r == 0 || !e->transient_retry_ms || !mafsbx_eng_transient(ep)) {
			if (nap_ms > 100)
				mafsbx_eng_transient_waited(e, what, deadline - e->transient_retry_ms, r);
			return r;
		}
		if (mafsbx_now_ms() + nap_ms > deadline)
			return mafsbx_eng_transient_give_up(e, ep);
		usleep((useconds_t)nap_ms * 1000);
		if (nap_ms < 1000)
			nap_ms *= 2;
	}
}

static int call_once_fn(struct mafsbx_engine *e, const void *arg, struct mafsbx_error *err)
{
	return call_once(e, arg, err);
}

int mafsbx_eng_do_call(struct mafsbx_engine *e, const struct call *c, struct mafsbx_error *err)
{
	return mafsbx_eng_retrying(e, c->what, call_once_fn, c, err);
}

char *mafsbx_eng_dump_json(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT);
}

int mafsbx_eng_copy_id(json_t *j, char id[65], const char *what, struct mafsbx_error *err)
{
	const char *s = json_string_value(json_object_get(j, "Id"));
	if (!mafsbx_is_engine_id(s))
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: answer has no valid Id", what);
	memcpy(id, s, 65);
	return 0;
}

int mafsbx_eng_check_answer(json_t **out, enum answer want, const char *what, struct mafsbx_error *err)
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

int mafsbx_eng_check_image_ref(const char *ref, const char *what, struct mafsbx_error *err)
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

/* The first half: `what`, the reference check and the target (malloc'd), or NULL with *r set. */
char *mafsbx_eng_obj_target(struct mafsbx_engine *e, struct obj_call *o, int *r, struct mafsbx_error *err)
{
	if (!o->what[0])  /* room for a 255-byte name; an image reference may be 512 */
		snprintf(o->what, o->image ? sizeof(o->what) : 320, "%s %s", o->verb, o->ref ? o->ref : "");
	*r = o->image ? mafsbx_eng_check_image_ref(o->ref, o->what, err) : mafsbx_eng_check_ref(o->ref, o->what, err);
	if (*r < 0)
		return NULL;
	__do_free char *er = o->image ? escape_image(o->ref) : mafsbx_query_escape(o->ref);
	if (!er) {
		*r = mafsbx_eng_nomem(err);
		return NULL;
	}
	return mafsbx_eng_target(e, err, r, "%s%s%s", o->head, er, o->tail ? o->tail : "");
}

int mafsbx_eng_obj_call(struct mafsbx_engine *e, struct obj_call *o, struct mafsbx_error *err)
{
	if (o->c.out)
		*o->c.out = NULL;
	int r;
	__do_free char *t = mafsbx_eng_obj_target(e, o, &r, err);
	if (!t)
		return r;
	o->c.target = t;
	o->c.what = o->what;
	r = mafsbx_eng_do_call(e, &o->c, err);
	if (r < 0 && o->image && err && err->kind == MAFSBX_EK_NO_OBJECT)
		err->kind = MAFSBX_EK_NO_IMAGE;
	if (r == 0 && o->c.out)
		r = mafsbx_eng_check_answer(o->c.out, o->want, o->what, err);
	return r;
}

/* GET <prefix><path> (a path needing no escape), its JSON answer into *out. */
int mafsbx_eng_get_json(struct mafsbx_engine *e, const char *path, long timeout_ms, const char *what, json_t **out,
		    struct mafsbx_error *err)
{
	int r;
	__do_free char *t = mafsbx_eng_target(e, err, &r, "%s", path);
	if (!t)
		return r;
	struct call c = { .method = "GET", .target = t, .timeout_ms = timeout_ms, .what = what, .ok = { 200 },
			  .out = out };
	return mafsbx_eng_do_call(e, &c, err);
}

/* POST a JSON body that creates an object; the answer's Id into id. */
int mafsbx_eng_create_call(struct mafsbx_engine *e, const char *t, const char *body, const char *what, long ok1, long ok2,
		       char id[65], struct mafsbx_error *err)
{
	json_t *j = NULL;
	struct call c = { .method = "POST", .target = t, .ctype = "application/json", .body = body,
			  .body_len = strlen(body), .what = what, .ok = { ok1, ok2 }, .out = &j };
	int r = mafsbx_eng_do_call(e, &c, err);
	if (r < 0)
		return r;
	r = mafsbx_eng_copy_id(j, id, what, err);
	json_decref(j);
	return r;
}

int mafsbx_eng_list_call(struct mafsbx_engine *e, const char *path, const json_t *filters, bool all, const char *what,
		     json_t **out, struct mafsbx_error *err)
{
	*out = NULL;
	__do_free char *f = NULL;
	if (filters && json_object_size(filters) && !(f = mafsbx_filters_encode(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: filters cannot be encoded", what);
	int r;
	const char *sep = strchr(path, '?') ? "&" : "?";   /* a path may carry a query of its own */
	__do_free char *t = mafsbx_eng_target(e, err, &r, "%s%s%s%s%s%s", path, all ? sep : "", all ? "all=1" : "",
				   f ? (all ? "&" : sep) : "", f ? "filters=" : "", f ? f : "");
	if (!t)
		return r;
	struct call c = { .method = "GET", .target = t, .what = what, .ok = { 200 }, .out = out };
	r = mafsbx_eng_do_call(e, &c, err);
	return r < 0 ? r : mafsbx_eng_check_answer(out, ANSWER_ARRAY, what, err);
}
