/*
 * reclaim.c: doc/upstream.md §5.10 reclaim (reclaim.h): the target rules, checked
 * as pure text before any engine call, then the guest's `rm -rf` through the
 * one helper-exec path (mafsbx_sbx_exec: registered with the freezer, re-issued
 * only on an engine "is paused" refusal). Not frozen, as upstream: rm runs
 * inside the guest, so the kernel resolves every path at the guest's own
 * authority and no host path is ever involved; the text rules only keep a
 * host from removing the work dir itself or a top-level directory by mistake.
 */
#include "reclaim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestpath.h"
#include "sbx_internal.h"

#define RECLAIM_OUTPUT_MAX 4096

static size_t components(const char *abs)
{
	size_t n = 0;
	for (const char *p = abs; *p; p++)
		if (*p != '/' && (p == abs || p[-1] == '/'))
			n++;
	return n;
}

int mafsbx_sandbox_reclaim(struct mafsbx_backend *b, const char *name, const char *directory,
			   struct mafsbx_reclaim_result *out, struct mafsbx_error *err)
{
	if (!b || !name || !directory)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "reclaim: incomplete request");
	if (!mafsbx_is_workload_name(name))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "field 'name': not a sandbox name");
	if (!*directory)
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EINVAL, "ValueError", "field 'reclaim': empty");
	/* over a swarm: in the task's container, through its node's backend (sandbox.h mafsbx_backend_serving) */
	struct mafsbx_serving sv;
	int r = mafsbx_backend_serving(b, name, &sv, err);
	if (r < 0)
		return r;
	b = sv.backend;
	json_t *insp = NULL;
	char id[65];
	if ((r = mafsbx_sbx_inspect_sandbox(b, sv.container, &insp, id, err)) < 0)
		return r;
	struct mafsbx_error e;
	const char *label_wd = mafsbx_sbx_label(mafsbx_sbx_labels_of(insp), MAFSBX_LABEL_WORK_DIR_V1);
	char *wd = mafsbx_gp_normalise(label_wd ? label_wd : MAFSBX_DEFAULT_WORK_DIR, err);
	json_decref(insp);
	if (!wd)
		return -(err ? err->err : EINVAL);
	char *target = mafsbx_gp_resolve(wd, directory, err);
	if (!target) {
		free(wd);
		return -(err ? err->err : EINVAL);
	}
	if (!strcmp(target, wd)) {
		r = mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EINVAL, "ValueError",
					  "field 'reclaim': refusing to reclaim the working directory itself (%s)", wd);
		goto out;
	}
	if (components(target) < 2) {
		r = mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EINVAL, "ValueError",
					  "field 'reclaim': %s has fewer than two components", target);
		goto out;
	}

	const char *argv[] = { "rm", "-rf", "--", target, NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .workdir = "/", .timeout_ms = b->cfg.command_timeout_ms,
					  .max_output = RECLAIM_OUTPUT_MAX };
	struct mafsbx_exec_result res;
	mafsbx_error_clear(&e);
	r = mafsbx_sbx_exec(b, id, &rq, &res, &e);
	if (r < 0) {
		if (err)
			*err = e;
		if (e.kind == MAFSBX_EK_TIMEOUT)
			mafsbx_error_prefix(err, "reclaim %s (the sandbox was removed)", target);
		mafsbx_exec_result_free(&res);
		goto out;
	}
	if (res.exit_code != 0 || res.launch_failed) {
		char msg[512];
		/* rm's complaint: stderr, else stdout */
		mafsbx_sbx_short_text(res.err_len ? res.err : res.out, res.err_len ? res.err_len : res.out_len, msg, sizeof(msg));
		bool denied = strstr(msg, "Permission denied") || strstr(msg, "Operation not permitted");
		r = mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, denied ? EACCES : EIO, "OSError",
					  "could not reclaim %s: rm exited %d%s%s", target, res.exit_code,
					  *msg ? " - " : "", msg);
		mafsbx_exec_result_free(&res);
		goto out;
	}
	mafsbx_exec_result_free(&res);
	if (out) {
		/* target lies strictly under wd (resolve + the refusals above), so this is its tail */
		size_t wl = strlen(wd);
		snprintf(out->path, sizeof(out->path), "%s", target);
		snprintf(out->relative, sizeof(out->relative), "%s", target + wl + (wd[wl - 1] == '/' ? 0 : 1));
	}
	r = 0;
out:
	free(target);
	free(wd);
	return r;
}
