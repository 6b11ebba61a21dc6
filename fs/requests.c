/*
 * requests.c: the real .ctl request runner (doc/protocol.md "The transactions"): acquire,
 * dispose and exec through sandbox.h, with the mount's scope rule, the
 * bookkeeping of declared outputs, the kernel cache invalidation that makes
 * a new sandbox appear at once, and the reply shapes:
 *
 *   acquire  ok, name, id, state, path, work_dir, uid, gid (null, with
 *            identity saying why, when they cannot be resolved), warnings
 *   dispose  ok, disposed, failures (with "reclaim": ok, reclaimed)
 *   exec     ok, exit_code, stdout, stderr, stdout_b64, stderr_b64,
 *            timed_out, truncated, text_truncated, duration_ms (a
 *            timeout: sandbox_disposed); the fields are shared with
 *            execs.c's `wait` (mfs_exec_fields), and an exec's reply is
 *            counted against the reply budget (reply.c) while it is built
 *
 * An exec with "detach": true is handed to execs.c (mfs_exec_detach),
 * which answers at once.
 *
 * A blocking exec that times out kills the command's processes and keeps the
 * sandbox where the engine runs on this host (a unix socket: the same proof
 * detached execs use, src/host/execkill.c), unless the request says
 * "on_timeout": "dispose"; on a remote engine it disposes, as upstream.
 *
 * With -o scope=S the mount serves only scope S: a request naming another
 * scope is refused (EACCES), and a sandbox of another scope is not there
 * (ENOENT for exec; dispose by name treats it as not ours: EACCES). A scope
 * that cannot be checked (the engine did not answer) refuses the disposal;
 * a container that merely has a sandbox's name is never removed (EACCES).
 *
 * Requests run on the transaction threads (txn.c, -o max_requests of them),
 * never on a FUSE worker, so lookups and reads always find a free worker;
 * past the cap a request waits its turn in txn.c's queue. The count here
 * (mfs_request_enter, mount.c) is the backstop: it refuses with EBUSY only
 * a caller that reached the runner some other way past the cap (the unit
 * tests' synchronous writes through the .ctl handle's ops; the daemon never does).
 */
#include "execs.h"
#include "jobs.h"
#include "extras.h"
#include "mfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "log.h"
#include "names.h"
#include "reclaim.h"
#include "sandbox.h"
#include "spec.h"

static int scope_refused(struct mfs *fs, const char *scope, struct mafsbx_error *err)
{
	if (!fs->opt.scope || (scope && !strcmp(scope, fs->opt.scope)))
		return 0;
	return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EACCES, "PermissionError",
				     "field 'scope': this mount serves only scope '%s'", fs->opt.scope);
}

/* Cleanup forms for the parsed requests. */
static void acquire_spec_freep(struct mafsbx_acquire_spec **s)
{
	mafsbx_acquire_spec_free(*s);
}

static void dispose_spec_freep(struct mafsbx_dispose_spec **s)
{
	mafsbx_dispose_spec_free(*s);
}

static void exec_spec_freep(struct mafsbx_exec_spec **s)
{
	mafsbx_exec_spec_free(*s);
}

static int run_acquire(struct mfs *fs, const struct mafsbx_spec_config *cfg, const json_t *req, json_t **reply,
		       struct mafsbx_error *err)
{
	__attribute__((cleanup(acquire_spec_freep))) struct mafsbx_acquire_spec *spec = NULL;
	struct mafsbx_acquire_result res;
	memset(&res, 0, sizeof(res));
	int r = mafsbx_acquire_spec_parse(req, cfg, &spec, err);
	if (r < 0)
		return r;
	r = scope_refused(fs, spec->key.scope, err);
	if (r < 0)
		return r;
	/* Probes are execs: the library keeps them and freezes from overlapping. */
	r = mafsbx_sandbox_acquire(fs->backend, spec, &res, err);
	if (r < 0)
		return r;
	if (spec->n_outputs)
		mfs_extra_add_outputs(fs, res.id, spec->outputs, spec->n_outputs);
	mfs_invalidate_sandbox(fs, res.name);

	json_t *o = json_object();
	int bad = o ? 0 : -1;
	bad |= json_object_set_new(o, "ok", json_true());
	bad |= json_object_set_new(o, "name", json_string(res.name));
	bad |= json_object_set_new(o, "id", json_string(res.id));
	bad |= json_object_set_new(o, "state", json_string(mafsbx_acquire_state_name(res.state)));
	bad |= json_object_set_new(o, "path", json_string(res.name));
	bad |= json_object_set_new(o, "work_dir", mfs_json_text(res.work_dir));
	if (res.identity_resolved) {
		bad |= json_object_set_new(o, "uid", json_integer((json_int_t)res.uid));
		bad |= json_object_set_new(o, "gid", json_integer((json_int_t)res.gid));
	} else {
		/* No number at all: a 0 here would read as root. */
		bad |= json_object_set_new(o, "uid", json_null());
		bad |= json_object_set_new(o, "gid", json_null());
		bad |= json_object_set_new(o, "identity", mfs_json_text(res.identity_why));
	}
	if (res.warning[0])
		bad |= json_object_set_new(o, "warnings", json_pack("[s]", res.warning));
	if (bad) {
		/* the sandbox is there (the mount lists it); only this reply cannot say so */
		json_decref(o);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "acquired %s but its reply could not be built: out of memory",
					res.name);
	}
	*reply = o;
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

static int run_dispose(struct mfs *fs, const json_t *req, json_t **reply, struct mafsbx_error *err)
{
	__attribute__((cleanup(dispose_spec_freep))) struct mafsbx_dispose_spec *spec = NULL;
	__attribute__((cleanup(mafsbx_dispose_result_free))) struct mafsbx_dispose_result res;
	memset(&res, 0, sizeof(res));
	int r = mafsbx_dispose_spec_parse(req, &spec, err);
	if (r < 0)
		return r;
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
		r = scope_refused(fs, spec->key.scope, err);
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

static int run_exec(struct mfs *fs, const struct mafsbx_spec_config *cfg, const json_t *req, json_t **reply,
		       struct mafsbx_error *err)
{
	__attribute__((cleanup(mafsbx_exec_result_free))) struct mafsbx_exec_result res = { 0 };
	__attribute__((cleanup(exec_spec_freep))) struct mafsbx_exec_spec *spec = NULL;
	int r = mafsbx_exec_spec_parse(req, cfg, &spec, err);
	if (r < 0)
		return r;
	/* Only a sandbox this mount shows can be run in. */
	const struct mafsbx_sandbox_info *info;
	struct mfs_snapshot *s = mfs_sandbox_find(fs, spec->sandbox, &info, err);
	if (!s)
		return mafsbx_error_errno(err, -ENOENT);
	char id[65];
	snprintf(id, sizeof(id), "%s", info->id);
	mfs_snapshot_put(s);
	if (spec->detach)
		return mfs_exec_detach(fs, move_ptr(spec), reply, err);
	/* a timeout kills the command where this host can (the sandbox stays); else it disposes */
	struct mafsbx_exec_hooks h = { .kill_on_timeout = fs->ep.scheme == MAFSBX_EP_UNIX };
	r = mafsbx_sandbox_exec_run(fs->backend, spec, &h, &res, err);
	bool fields = r == 0 || res.timed_out || res.out_len || res.err_len || res.launch_failed || res.exit_code >= 0;
	if (res.timed_out && !res.killed)
		mfs_invalidate_sandbox(fs, spec->sandbox);  /* disposed (or meant to be) */
	if (fields) {
		size_t cost = mfs_exec_reply_cost(res.out_len, res.err_len);
		char what[160];
		snprintf(what, sizeof(what), "exec in %s (%zu bytes of output)", spec->sandbox, res.out_len + res.err_len);
		struct mafsbx_error be;
		mafsbx_error_clear(&be);
		if (mfs_reply_budget_take(fs, cost, what, &be) < 0) {
			log_warn("%s", be.message);
			/* the command ran; only its reply is refused: say so, with the exit code */
			if (r == 0) {
				json_t *o = json_pack("{s:i, s:b, s:b}", "exit_code", res.exit_code, "timed_out",
						      (int)res.timed_out, "truncated", (int)res.truncated);
				*reply = o;
			}
			if (err)
				*err = be;
			mafsbx_error_prefix(err, "the command ran%s but its output cannot be returned",
					    r == 0 ? "" : " (and failed)");
			r = -ENOMEM;
			return r;
		}
		*reply = mfs_exec_fields(&res, r == 0);
		/* what the timeout did to the sandbox: kept (its command killed) or disposed */
		if (*reply && res.timed_out &&
		    json_object_set_new(*reply, "sandbox_disposed", json_boolean(res.sandbox_disposed)) < 0) {
			json_decref(*reply);
			*reply = NULL;
		}
		mfs_reply_budget_hold_until_dump(fs, cost);
		if (!*reply && r == 0)
			r = mafsbx_error_set(err, MAFSBX_EK_NOMEM,
					     "the command ran (exit code %lld) but its reply could not be built: out of memory",
					     (long long)res.exit_code);
	}
	return r;
}

int mfs_run_request(struct mfs *fs, enum mfs_ctl_kind kind, const json_t *req, json_t **reply,
		    struct mafsbx_error *err)
{
	mfs_reply_budget_release_held();
	int r = mfs_request_enter(fs, mfs_ctl_kind_name(kind), err);
	if (r < 0)
		return r;
	struct mafsbx_spec_config cfg;   /* the limits acquire and exec requests are checked against */
	mafsbx_backend_spec_config(fs->backend, &cfg);
	switch (kind) {
	case MFS_CTL_ACQUIRE:
		r = run_acquire(fs, &cfg, req, reply, err);
		break;
	case MFS_CTL_DISPOSE:
		r = run_dispose(fs, req, reply, err);
		break;
	case MFS_CTL_EXEC:
		r = run_exec(fs, &cfg, req, reply, err);
		break;
	default:
		r = mafsbx_error_set(err, MAFSBX_EK_INVALID, "unknown request");
		break;
	}
	mfs_request_leave(fs);
	return r;
}
