/*
 * engine_archive.c: the archive calls of engine.h (stat, read and write
 * a guest path as a tar through /containers/C/archive).
 */
#include "engine.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "engine_internal.h"

#define STAT_HEADER "X-Docker-Container-Path-Stat"

static int check_guest_path(const char *path, struct mafsbx_error *err)
{
	if (!path || path[0] != '/')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "guest path \"%.200s\" is not absolute",
					path ? path : "");
	return 0;
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
	*r = mafsbx_eng_check_ref(container, what, err);
	if (*r < 0 || (*r = check_guest_path(path, err)) < 0)
		return NULL;
	__do_free char *ec = mafsbx_query_escape(container);
	__do_free char *ep = mafsbx_query_escape(path);
	if (!ec || !ep) {
		*r = mafsbx_eng_nomem(err);
		return NULL;
	}
	return mafsbx_eng_target(e, err, r, "/containers/%s/archive?path=%s%s", ec, ep, extra ? extra : "");
}

/*
 * A failed HEAD carries no body, and 404/500 alone cannot tell a missing
 * container from a missing path, or ENOTDIR from ELOOP. Ask again with a GET,
 * which carries the message. 1 on the rare success: the path appeared between
 * the two (another process made it), so the HEAD's answer is stale and the
 * caller asks again; the connection is dropped at the first body byte.
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
	if (r == 0 && resp.status == 200)
		r = 1;
	else if (r == 0 && resp.status >= 300 && resp.body.len)
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
	/* a HEAD whose path appeared right after it failed is asked once more */
	for (int tries = 0;; tries++) {
		__do_resp struct mafsbx_http_resp resp = { 0 };
		r = mafsbx_http_request(e->http, rq, &resp, err);
		if (r < 0)
			mafsbx_error_prefix(err, "%s", what);
		else if (resp.status != 200 && strcmp(rq->method, "HEAD") == 0) {
			long status = resp.status;
			r = head_failure(e, t, status, what, path, err);
			if (r == 1 && tries == 0)
				continue;
			if (r == 1)  /* it changed under us twice: the first answer stands */
				r = mafsbx_error_from_engine(err, status, NULL, 0, what, path);
		} else if (resp.status != 200)
			r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, what, path);
		else if (st)
			r = stat_from_header(&resp, st, what, err);
		return r;
	}
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
