/*
 * engine_system.c: the engine-wide calls of engine.h: the version, the
 * events between two times and the engine's clock (the proof that a freeze
 * held), and the engine's cgroup setup.
 */
#include "engine.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "engine_internal.h"

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
	int r = mafsbx_eng_get_json(e, "/version", 0, "engine version", &j, err);
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

/* ---- events and the engine's clock (the proof that a freeze held) -------- */

static void ns_text(long long ns, char out[32])
{
	snprintf(out, 32, "%lld.%09lld", ns / 1000000000LL, ns % 1000000000LL);
}

/*
 * An answer's Date header (RFC 9110's IMF-fixdate, "Sun, 06 Nov 1994
 * 08:49:37 GMT"): seconds since the epoch, or 0 when absent or unreadable.
 * Parsed by hand: strptime's %b follows the locale.
 */
long long mafsbx_http_date_s(const char *v)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	char mon[4] = "";
	int d, y, h, mi, sec, n = 0;
	if (!v || sscanf(v, "%*3s, %2d %3s %4d %2d:%2d:%2d GMT%n", &d, mon, &y, &h, &mi, &sec, &n) != 6 || !n)
		return 0;
	const char *m = strlen(mon) == 3 ? strstr(months, mon) : NULL;
	if (!m || (m - months) % 3 || d < 1 || d > 31 || y < 1970 || h > 23 || mi > 59 || sec > 60)
		return 0;
	struct tm tm = { .tm_year = y - 1900, .tm_mon = (int)((m - months) / 3), .tm_mday = d, .tm_hour = h,
			 .tm_min = mi, .tm_sec = sec };
	time_t t = timegm(&tm);
	return t > 0 ? (long long)t : 0;
}

/*
 * GET target, its answer's Date header into *date_s (seconds, 0 when absent
 * or unreadable): the engine's clock to the second, written for THIS answer.
 * A status other than 200 is the engine's error, named by `what`.
 */
static int get_dated(struct mafsbx_engine *e, const char *target, long timeout_ms, size_t max_body, const char *what,
		     struct mafsbx_http_resp *resp, long long *date_s, struct mafsbx_error *err)
{
	struct mafsbx_http_req rq = { .method = "GET", .target = target, .timeout_ms = timeout_ms,
				      .want_header = "Date", .max_body = max_body };
	int r = mafsbx_http_request(e->http, &rq, resp, err);
	if (r < 0) {
		mafsbx_error_prefix(err, "%s", what);
		return r;
	}
	*date_s = resp->header_seen ? mafsbx_http_date_s(resp->header.data) : 0;
	if (resp->status != 200)
		return mafsbx_error_from_engine(err, resp->status, resp->body.data, resp->body.len, what, NULL);
	return 0;
}

int mafsbx_events_read(struct mafsbx_engine *e, long long since_ns, long long until_ns, const json_t *filters,
		       json_t **out, long long *date_s, struct mafsbx_error *err)
{
	*out = NULL;
	if (date_s)
		*date_s = 0;
	if (!e || since_ns < 0 || until_ns <= since_ns || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "events: bad arguments");
	/*
	 * dockerd walks its ring from the newest event back and stops at the
	 * first one older than `since`. The ring is in the order events were
	 * logged, not by their time: a swarm manager logs a cluster object's
	 * change (node, service, network) with the time the store recorded it
	 * on the leader, when its copy of the store catches up, which can be
	 * seconds later. One such event logged after our pause hid the pause
	 * from a read since a moment before it (a node engine's freeze proof
	 * failed "no pause event"). So dockerd is asked for its whole ring
	 * (since the epoch: at most 256 events, filtered by it) and the cut at
	 * `since` is made here, by each event's own time.
	 */
	char since[32], until[32];
	ns_text(0, since);
	ns_text(until_ns, until);
	__do_free char *fj = filters ? mafsbx_eng_dump_json(filters) : NULL;
	__do_free char *fe = fj ? mafsbx_query_escape(fj) : NULL;
	if (filters && !fe)
		return mafsbx_eng_nomem(err);
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
	if (podman)
		ns_text(since_ns, since);
	__do_free char *t = podman ? mafsbx_eng_target(e, err, &r, "/events?since=%s&stream=false%s%s", since,
						       fe ? "&filters=" : "", fe ? fe : "")
				   : mafsbx_eng_target(e, err, &r, "/events?since=%s&until=%s%s%s", since, until,
						       fe ? "&filters=" : "", fe ? fe : "");
	if (!t)
		return r;
	__do_resp struct mafsbx_http_resp resp = { 0 };
	long long d = 0;
	r = get_dated(e, t, e->to.request_ms, 0, "read the engine's events", &resp, &d, err);
	if (date_s)
		*date_s = d;
	if (r < 0)
		return r;
	/* a stream of JSON objects, one after the other */
	json_t *a = json_array();
	if (!a)
		return mafsbx_eng_nomem(err);
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
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "the engine's events are not JSON: %s", je.text);
		}
		json_t *tn = json_object_get(ev, "timeNano");
		if (podman && json_is_integer(tn) && json_integer_value(tn) > until_ns) {
			json_decref(ev); /* past `until`: logged after the present the caller asked for */
		} else if (json_is_integer(tn) && json_integer_value(tn) <= since_ns) {
			json_decref(ev); /* before the window asked for (dockerd was asked for all of its ring) */
		} else if (json_array_append_new(a, ev) < 0) {
			json_decref(a);
			return mafsbx_eng_nomem(err);
		}
		p += je.position;
		left -= (size_t)je.position;
	}
	*out = a;
	return 0;
}

int mafsbx_engine_cgroups(struct mafsbx_engine *e, struct mafsbx_engine_cgroups *c, struct mafsbx_error *err)
{
	if (!e || !c)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine cgroups: bad arguments");
	json_t *j = NULL;
	int r = mafsbx_eng_get_json(e, "/info", e->to.request_ms, "read the engine's cgroups", &j, err);
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

int mafsbx_engine_clock(struct mafsbx_engine *e, long long *ns, long long *date_s, struct mafsbx_error *err)
{
	if (!e || !ns || !date_s)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine time: bad arguments");
	*date_s = 0;
	int r;
	__do_free char *t = mafsbx_eng_target(e, err, &r, "/info");
	if (!t)
		return r;
	/* not through mafsbx_eng_get_json: the Date header is wanted too */
	__do_resp struct mafsbx_http_resp resp = { 0 };
	long long d = 0;
	if ((r = get_dated(e, t, e->to.request_ms, 0, "read the engine's clock", &resp, &d, err)) < 0)
		return r;
	json_error_t je;
	json_t *j = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, &je);
	const char *st = json_string_value(json_object_get(j, "SystemTime"));
	struct timespec ts;
	if (!st || mafsbx_eng_parse_rfc3339(st, &ts) < 0) {
		json_decref(j);
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "the engine's /info has no readable SystemTime");
	}
	json_decref(j);
	*ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	*date_s = d;
	return 0;
}

int mafsbx_engine_date(struct mafsbx_engine *e, long timeout_ms, long long *date_s, struct mafsbx_error *err)
{
	if (!e || !date_s || timeout_ms <= 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine date: bad arguments");
	*date_s = 0;
	/* unversioned, as mafsbx_engine_ping: no negotiation round trip in the way */
	__do_resp struct mafsbx_http_resp resp = { 0 };
	int r = get_dated(e, "/_ping", timeout_ms < e->to.request_ms ? timeout_ms : e->to.request_ms, 4096,
			  "read the engine's Date", &resp, date_s, err);
	if (r < 0)
		return r;
	if (*date_s <= 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_PROTOCOL, EPROTO, NULL,
					     "the engine's /_ping answer has no readable Date header");
	return 0;
}
