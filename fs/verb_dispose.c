/*
 * verb_dispose.c: the .ctl verb `dispose` (doc/protocol.md "The transactions"):
 * its row under .ctl/, its request parsed (sandbox.h's dispose spec: by
 * name, or by key), run and its reply: ok, disposed, failures (with
 * "reclaim": ok, reclaimed). rmdir NAME runs it too (kinds.c).
 *
 * With -o scope=S a key naming another scope is refused (EACCES), and a
 * sandbox of another scope is not ours: dispose by name refuses it
 * (EACCES). A scope that cannot be checked (the engine did not answer)
 * refuses the disposal; a container that merely has a sandbox's name is
 * never removed (EACCES).
 */
#include "extras.h"
#include "jobs.h"
#include "mfs.h"
#include "rows.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"
#include "reclaim.h"
#include "sandbox.h"

static void dispose_free(void *spec)
{
	mafsbx_dispose_spec_free(spec);
}

static int dispose_parse(struct mfs *fs, const struct mafsbx_spec_config *cfg, const json_t *req, void **spec,
			 struct mafsbx_error *err)
{
	(void)fs;
	(void)cfg;
	struct mafsbx_dispose_spec *s = NULL;
	int r = mafsbx_dispose_spec_parse(req, &s, err);
	*spec = s;
	return r;
}

/* Names in the current list that a key-shaped dispose will remove. */
static void invalidate_matching(struct mfs *fs, const struct mafsbx_dispose_spec *spec)
{
	char sc[MAFSBX_LABEL_VALUE_MAX + 1], th[MAFSBX_LABEL_VALUE_MAX + 1], ag[MAFSBX_LABEL_VALUE_MAX + 1];
	char ca[MAFSBX_LABEL_VALUE_MAX + 1], ki[MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value(spec->key.scope ? spec->key.scope : "", sc);
	mafsbx_label_value(spec->key.thread ? spec->key.thread : "", th);
	mafsbx_label_value(spec->key.agent ? spec->key.agent : "", ag);
	mafsbx_label_value(spec->key.call ? spec->key.call : "", ca);
	mafsbx_label_value(spec->kind ? spec->kind : "", ki);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mfs_snapshot *s = mfs_snapshot_get(fs, 60000, &e);
	for (size_t i = 0; s && i < s->n; i++) {
		const struct mafsbx_sandbox_info *x = &s->a[i];
		if (!x->scope || strcmp(x->scope, sc) || !x->thread || strcmp(x->thread, th))
			continue;
		if (spec->by == MAFSBX_DISPOSE_BY_KEY) {
			if (!x->agent || strcmp(x->agent, ag))
				continue;
			if (spec->key.call && *spec->key.call && (!x->call || strcmp(x->call, ca)))
				continue;
			if (spec->kind && (!x->kind || strcmp(x->kind, ki)))
				continue;
			if (spec->instance_id && strcmp(x->id, spec->instance_id))
				continue;
		}
		mfs_extra_drop(fs, x->id);
		mfs_invalidate_sandbox(fs, x->name);
	}
	mfs_snapshot_put(s);
}

static int dispose_run(struct mfs *fs, void **specp, json_t **reply, struct mafsbx_error *err)
{
	const struct mafsbx_dispose_spec *spec = *specp;
	__attribute__((cleanup(mafsbx_dispose_result_free))) struct mafsbx_dispose_result res;
	memset(&res, 0, sizeof(res));
	int r = 0;
	char id[65] = "";
	if (spec->by == MAFSBX_DISPOSE_BY_NAME) {
		/*
		 * Resolve the name first and fail closed: a scope that cannot be
		 * checked refuses the request, and what is removed is the instance
		 * checked (by ID), never whatever holds the name later.
		 */
		struct mafsbx_sandbox_info info;
		struct mafsbx_error e2;
		memset(&info, 0, sizeof(info));
		mafsbx_error_clear(&e2);
		if (mafsbx_sandbox_lookup(fs->backend, spec->name, &info, &e2) == 0) {
			bool ours = mfs_in_scope(fs, &info);
			snprintf(id, sizeof(id), "%s", info.id);
			mafsbx_sandbox_info_clear(&info);
			if (!ours) {
				return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EACCES, "PermissionError",
							     "sandbox '%s' is not in this mount's scope '%s'",
							     spec->name, fs->opt.scope);
			}
		} else if (e2.kind != MAFSBX_EK_NO_CONTAINER) {
			if (err)
				*err = e2;
			mafsbx_error_prefix(err, "dispose %s: cannot check what it is, so nothing was removed",
					    spec->name);
			return mafsbx_error_errno(&e2, -EIO);
		}
		if (spec->reclaim) {   /* {"name", "reclaim": DIR}: remove DIR, keep the sandbox (reclaim.h) */
			struct mafsbx_reclaim_result done;
			if ((r = mafsbx_sandbox_reclaim(fs->backend, spec->name, spec->reclaim, &done, err)) == 0) {
				*reply = json_pack("{s:b, s:s}", "ok", 1, "reclaimed", done.path);
				char *p = NULL;   /* the kernel may still hold the removed tree: drop it */
				if (asprintf(&p, "/%s/work/%s", spec->name, done.relative) > 0)
					mfs_invalidate_path(fs, p);
				free(p);
			}
			mfs_invalidate_sandbox(fs, spec->name);
			return r;
		}
		/* absent or not a sandbox: dispose by name removes only what carries the identity labels */
	} else {
		r = mfs_scope_refused(fs, spec->key.scope, err);
		if (r < 0)
			return r;
		invalidate_matching(fs, spec);
	}
	if (id[0])
		r = mafsbx_sandbox_dispose_id(fs->backend, spec->name, id, &res, err);
	else
		r = mafsbx_sandbox_dispose(fs->backend, spec, &res, err);
	if (spec->by == MAFSBX_DISPOSE_BY_NAME) {
		if (id[0]) {
			mfs_extra_drop(fs, id);
			mafsbx_planes_forget(fs->planes, id);
			if (r == 0)
				mfs_jobs_forget_container(fs, id);   /* its jobs' spools go with it */
		}
		mfs_invalidate_sandbox(fs, spec->name);
	} else {
		mfs_invalidate_sandbox(fs, NULL);
	}
	if (r < 0)
		return r;
	json_t *body = mafsbx_dispose_result_json(&res);
	json_t *o = json_object();
	if (!body || !o || json_object_set_new(o, "ok", json_true()) < 0 || json_object_update(o, body) < 0) {
		json_decref(body);
		json_decref(o);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "dispose: out of memory for the reply (%u removed)",
					res.disposed);
	}
	json_decref(body);
	*reply = o;
	return r;
}


static void dispose_log_reply(struct mafsbx_buf *b, const json_t *reply)
{
	mafsbx_buf_printf(b, " disposed=%lld failures=%zu", (long long)json_integer_value(json_object_get(reply, "disposed")),
			  json_array_size(json_object_get(reply, "failures")));
}

const struct mfs_verb mfs_verb_dispose = {
	.name = "dispose",
	.parse = dispose_parse,
	.run = dispose_run,
	.subject = mfs_txnlog_key,
	.reply = dispose_log_reply,
	.free_spec = dispose_free,
};
