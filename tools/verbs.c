/*
 * verbs.c: what the shell verbs share (verbs.h): opening the engine, the
 * freezer and the backend as a mount with default options would (its
 * freezer too, so a verb's exec is registered against freezes exactly as a
 * ctl exec is), and the JSON request built from a command line.
 */
#include "verbs.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "egress.h"
#include "freeze.h"
#include "mafsbx.h"

void verb_close(struct verb_env *v)
{
	mafsbx_backend_free(v->b);
	mafsbx_cluster_free(v->cluster);
	if (v->fz)
		mafsbx_freezer_free(v->fz);
	if (v->engine)
		mafsbx_engine_close(v->engine);
	memset(v, 0, sizeof(*v));
}

int verb_open(const struct verb_open_opts *o, struct verb_env *v, int fail_code)
{
	int code;
	memset(v, 0, sizeof(*v));
	struct mafsbx_endpoint ep;
	if ((code = cli_resolve(o->host, o->context, &ep)) != MAFSBX_EXIT_OK)
		return fail_code ? fail_code : code;
	struct mafsbx_engine_timeouts to = { .pull_ms = o->pull_timeout_ms };
	v->engine = cli_connect_timeouts(&ep, &to, &code);
	if (!v->engine)
		return fail_code ? fail_code : code;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	v->fz = mafsbx_freezer_new(v->engine, NULL, &err);
	struct mafsbx_sandbox_config sc;
	mafsbx_sandbox_config_defaults(&sc);
	if (o->pull_timeout_ms > 0)
		sc.pull_timeout_ms = o->pull_timeout_ms;
	sc.on_pull_line = o->on_pull_line;
	sc.pull_ctx = o->pull_ctx;
	/* allowlist egress: our proxy image when `mafsbx mkimage --egress-proxy` built it (as the mount) */
	json_t *pimg = NULL;
	struct mafsbx_error perr;
	if (mafsbx_image_inspect(v->engine, MAFSBX_DEFAULT_PROXY_IMAGE, &pimg, &perr) == 0)
		sc.egress_proxy_image = MAFSBX_DEFAULT_PROXY_IMAGE;
	json_decref(pimg);
	if (v->fz)
		v->b = mafsbx_backend_new(v->engine, v->fz, &sc, &err);
	if (!v->b) {
		cli_error("%s", err.message);
		verb_close(v);
		return fail_code ? fail_code : MAFSBX_EXIT_FAILURE;
	}
	if (cli_clustered() && !(v->cluster = cli_cluster_attach(v->engine, v->b, &code))) {
		verb_close(v);
		return fail_code ? fail_code : code;
	}
	return MAFSBX_EXIT_OK;
}

int verb_set_str(json_t *req, const char *field, const char *value)
{
	json_t *s = json_string(value);
	if (!s) {
		cli_error("%s: not valid UTF-8", field);
		return -1;
	}
	return json_object_set_new(req, field, s);
}

int verb_push_str(json_t *req, const char *field, const char *value)
{
	json_t *a = json_object_get(req, field);
	if (!a) {
		a = json_array();
		if (json_object_set_new(req, field, a) < 0)
			return -1;
	}
	json_t *s = json_string(value);
	if (!s) {
		cli_error("%s: not valid UTF-8", field);
		return -1;
	}
	return json_array_append_new(a, s);
}

int verb_put_kv(const char *cmd, json_t *req, const char *field, const char *opt, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv) {
		cli_usage_error(cmd, "%s: want KEY=VALUE, not '%s'", opt, kv);
		return -1;
	}
	json_t *o = json_object_get(req, field);
	if (!o) {
		o = json_object();
		if (json_object_set_new(req, field, o) < 0)
			return -1;
	}
	char *k = strndup(kv, (size_t)(eq - kv));
	json_t *s = json_string(eq + 1);
	int r = k && s ? json_object_set_new(o, k, s) : -1;
	if (!s)
		cli_error("%s: not valid UTF-8", opt);
	else if (r < 0)
		json_decref(s);
	free(k);
	return r;
}

json_t *verb_request(const char *verb,
		     int (*args)(int argc, char **argv, json_t *req, const char **host, const char **context),
		     int argc, char **argv, const char **host, const char **context, int fail_code, int *code)
{
	json_t *req = json_object();
	if (!req) {
		cli_error("%s: out of memory", verb);
		*code = fail_code;
		return NULL;
	}
	*code = args(argc, argv, req, host, context);
	if (!*code)
		return req;
	json_decref(req);
	if (*code < 0)
		*code = MAFSBX_EXIT_OK;
	return NULL;
}

void verb_report(const char *verb, const struct mafsbx_error *err)
{
	cli_error("%s: %s", verb, err->message[0] ? err->message : "failed");
}
