/*
 * engine_images.c: the image calls of engine.h: inspect, pull and import
 * (their JSON-lines progress streams) and delete.
 */
#include "engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "engine_internal.h"

/* ---- images -------------------------------------------------------------- */

int mafsbx_image_inspect(struct mafsbx_engine *e, const char *ref, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "inspect image: bad arguments");
	struct obj_call o = { .verb = "inspect image", .ref = ref, .image = true, .head = "/images/", .tail = "/json",
			      .c = { .method = "GET", .ok = { 200 }, .out = out } };
	return mafsbx_eng_obj_call(e, &o, err);
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
	int r = mafsbx_eng_check_image_ref(ref, what, err);
	if (r < 0)
		return r;
	/* Split "repo[:tag]" at a ':' after the last '/'; a digest ref stays whole. */
	__do_free char *name = strdup(ref);
	if (!name)
		return mafsbx_eng_nomem(err);
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
		return mafsbx_eng_nomem(err);
	__do_free char *t = mafsbx_eng_target(e, err, &r, "/images/create?fromImage=%s%s%s", en, et ? "&tag=" : "", et ? et : "");
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
	int r = mafsbx_eng_check_image_ref(repo, what, err);
	if (r < 0 || (tag && (r = mafsbx_eng_check_image_ref(tag, what, err)) < 0))
		return r;
	struct mafsbx_buf q = MAFSBX_BUF_INIT;
	__do_free char *er = mafsbx_query_escape(repo);
	__do_free char *et = mafsbx_query_escape(tag ? tag : "latest");
	if (!er || !et || mafsbx_buf_printf(&q, "/images/create?fromSrc=-&repo=%s&tag=%s", er, et) < 0) {
		mafsbx_buf_free(&q);
		return mafsbx_eng_nomem(err);
	}
	for (size_t i = 0; changes && changes[i]; i++) {
		char *ech = mafsbx_query_escape(changes[i]);
		int a = ech ? mafsbx_buf_printf(&q, "&changes=%s", ech) : -ENOMEM;
		free(ech);
		if (a < 0) {
			mafsbx_buf_free(&q);
			return mafsbx_eng_nomem(err);
		}
	}
	__do_free char *t = mafsbx_eng_target(e, err, &r, "%s", q.data);
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
	return mafsbx_eng_obj_call(e, &o, err);
}
