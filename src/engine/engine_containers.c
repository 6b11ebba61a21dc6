/*
 * engine_containers.c: the container calls of engine.h: create, start,
 * pause, unpause, inspect, list (whole or streamed element by element),
 * delete, and the capped log.
 */
#include "engine.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "engine_internal.h"
#include "listreader.h"

/* ---- containers ---------------------------------------------------------- */

int mafsbx_container_create(struct mafsbx_engine *e, const char *name, const json_t *config, char id[65],
			    struct mafsbx_error *err)
{
	if (!e || !json_is_object(config) || !id)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "create container: bad arguments");
	int r;
	if (name && (r = mafsbx_eng_check_ref(name, "create container", err)) < 0)
		return r;
	__do_free char *ename = name ? mafsbx_query_escape(name) : NULL;
	__do_free char *body = mafsbx_eng_dump_json(config);
	if ((name && !ename) || !body)
		return mafsbx_eng_nomem(err);
	__do_free char *t = name ? mafsbx_eng_target(e, err, &r, "/containers/create?name=%s", ename)
				 : mafsbx_eng_target(e, err, &r, "/containers/create");
	if (!t)
		return r;
	char what[320];
	snprintf(what, sizeof(what), "create container %s", name ? name : "(unnamed)");
	return mafsbx_eng_create_call(e, t, body, what, 201, 0, id, err);
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
	return mafsbx_eng_obj_call(e, &o, err);
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
	return mafsbx_eng_obj_call(e, &o, err);
}

int mafsbx_container_inspect(struct mafsbx_engine *e, const char *container, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "inspect container: bad arguments");
	struct obj_call o = { .verb = "inspect container", .ref = container, .head = "/containers/", .tail = "/json",
			      .c = { .method = "GET", .ok = { 200 }, .out = out }, .want = ANSWER_OBJECT };
	return mafsbx_eng_obj_call(e, &o, err);
}

int mafsbx_container_list(struct mafsbx_engine *e, const json_t *filters, bool all, json_t **out,
			  struct mafsbx_error *err)
{
	if (!e || !out || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list containers: bad arguments");
	return mafsbx_eng_list_call(e, "/containers/json", filters, all, "list containers", out, err);
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
	return mafsbx_container_list_each_keep(e, filters, all, limit, NULL, each, ctx, err);
}

int mafsbx_container_list_each_keep(struct mafsbx_engine *e, const json_t *filters, bool all, unsigned limit,
				    const char *const *keep, mafsbx_list_each_fn each, void *ctx,
				    struct mafsbx_error *err)
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
	__do_free char *t = mafsbx_eng_target(e, err, &r, "/containers/json%s%s%s%s%s", all ? "?all=1" : "",
				   f ? (all ? "&" : "?") : "", f ? "filters=" : "", f ? f : "", lim);
	if (!t)
		return r;
	return mafsbx_eng_list_stream(e, t, what, keep, each, ctx, err);
}

int mafsbx_eng_list_stream(struct mafsbx_engine *e, const char *t, const char *what, const char *const *keep,
			   mafsbx_list_each_fn each, void *ctx, struct mafsbx_error *err)
{
	int r;
	struct list_sink ls = { .lr = mafsbx_listreader_new(each, ctx, 0) };
	if (!ls.lr)
		return mafsbx_eng_nomem(err);
	mafsbx_listreader_keep(ls.lr, keep);
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

int mafsbx_container_delete(struct mafsbx_engine *e, const char *container, bool force, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "delete container: no engine");
	struct obj_call o = { .verb = "delete container", .ref = container, .head = "/containers/",
			      .tail = force ? "?force=1&v=1" : "?v=1", .c = { .method = "DELETE", .ok = { 204, 200 } } };
	return mafsbx_eng_obj_call(e, &o, err);
}

/* The log stream stops at the cap instead of being drained: a log can be as long as the container lived. */
struct logs_ctx {
	struct mafsbx_demux dm;
	bool stop;
};

static int logs_sink(const void *data, size_t len, void *ctx)
{
	struct logs_ctx *lc = ctx;
	int r = mafsbx_eng_demux_sink(data, len, &lc->dm);
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
	__do_free char *t = mafsbx_eng_obj_target(e, &o, &r, err);
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
