/*
 * verb_exec.c: the .ctl verb `exec` (doc/protocol.md "The transactions"):
 * its row under .ctl/, its request parsed (sandbox.h's exec spec), run and
 * its reply: ok, exit_code, stdout, stderr, stdout_b64, stderr_b64,
 * timed_out, truncated, text_truncated, duration_ms (a timeout:
 * sandbox_disposed). The fields are shared with execs.c's `wait`
 * (mfs_exec_fields), and the reply is counted against the reply budget
 * (reply.c) while it is built.
 *
 * Only a sandbox this mount shows can be run in (ENOENT for one of another
 * scope). An exec with "detach": true is handed to execs.c
 * (mfs_exec_detach), which answers at once. A blocking exec that times out
 * kills the command's processes and keeps the sandbox where the engine
 * runs on this host (a unix socket: the same proof detached execs use,
 * src/host/execkill.c), unless the request says "on_timeout": "dispose";
 * on a remote engine it disposes, as upstream.
 */
#include "execs.h"
#include "mfs.h"
#include "rows.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "sandbox.h"
#include "spec.h"

static void exec_free(void *spec)
{
	mafsbx_exec_spec_free(spec);
}

static int exec_parse(struct mfs *fs, const struct mafsbx_spec_config *cfg, const json_t *req, void **spec,
		      struct mafsbx_error *err)
{
	(void)fs;
	struct mafsbx_exec_spec *s = NULL;
	int r = mafsbx_exec_spec_parse(req, cfg, &s, err);
	*spec = s;
	return r;
}

static int exec_run(struct mfs *fs, void **specp, json_t **reply, struct mafsbx_error *err)
{
	__attribute__((cleanup(mafsbx_exec_result_free))) struct mafsbx_exec_result res = { 0 };
	struct mafsbx_exec_spec *spec = *specp;
	int r;
	/* Only a sandbox this mount shows can be run in. */
	const struct mafsbx_sandbox_info *info;
	struct mfs_snapshot *s = mfs_sandbox_find(fs, spec->sandbox, &info, err);
	if (!s)
		return mafsbx_error_errno(err, -ENOENT);
	char id[65];
	snprintf(id, sizeof(id), "%s", info->id);
	mfs_snapshot_put(s);
	if (spec->detach)
		return mfs_exec_detach(fs, move_ptr(*specp), reply, err);
	/* a timeout kills the command where this host can (the sandbox stays); else it disposes;
	 * over a swarm the sandbox's node decides (src/sandbox/exec.c) */
	struct mafsbx_exec_hooks h = { .kill_on_timeout = fs->ep.scheme == MAFSBX_EP_UNIX || fs->cluster };
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


static void exec_log_subject(struct mafsbx_buf *b, const json_t *req)
{
	mfs_txnlog_field(b, req, "sandbox");
	json_t *argv = json_object_get(req, "argv");
	if (json_is_array(argv))
		mfs_txnlog_value(b, "program", json_array_get(argv, 0));
	else if (json_object_get(req, "command"))
		mafsbx_buf_printf(b, " program=sh");
	if (json_is_true(json_object_get(req, "detach")))
		mafsbx_buf_printf(b, " detach");
}

static void exec_log_reply(struct mafsbx_buf *b, const json_t *reply)
{
	if (json_object_get(reply, "exec"))
		mfs_txnlog_field(b, reply, "exec");
	else
		mafsbx_buf_printf(b, " exit_code=%lld%s", (long long)json_integer_value(json_object_get(reply, "exit_code")),
				  json_is_true(json_object_get(reply, "truncated")) ? " truncated" : "");
}

const struct mfs_verb mfs_verb_exec = {
	.name = "exec",
	.parse = exec_parse,
	.run = exec_run,
	.subject = exec_log_subject,
	.reply = exec_log_reply,
	.free_spec = exec_free,
};
