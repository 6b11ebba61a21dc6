/*
 * exec.c: running a command in a sandbox (doc/upstream.md §6, doc/protocol.md "The transactions").
 * argv runs as given, `command` through `sh -c`; the working directory is
 * resolved under the sandbox's work_dir (read from its work-dir.v1 label, so
 * a sandbox made elsewhere resolves the same way); env and stdin as given;
 * the timeout bounds the whole run. On expiry the command's process tree is
 * killed and the sandbox kept where the engine runs on this host and the
 * caller asks for it (kill_on_timeout; not with "on_timeout": "dispose");
 * otherwise the sandbox is disposed (as upstream: a command that outlived its
 * bound may still be running, and the next acquire starts clean). Output is kept as exact bytes, capped per
 * stream. A command the runtime could not start is reported as `docker exec`
 * reports it: a result with exit code 127 (the program does not exist) or
 * 126 (anything else: the working directory, permissions), the runtime's
 * message on stderr. Whether it was a launch failure is decided by the
 * engine's exec inspect (Pid 0: no process ever existed, see
 * mafsbx_exec_result.launch_failed), never by the bytes on stdout, which a
 * guest can forge; only then is the message read, to choose 126 or 127.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "execmark.h"
#include "log.h"
#include "sbx_internal.h"

#ifdef MAFSBX_TEST_KNOBS
void (*sbx_test_exec_timed_out)(const char *name, void *ctx);
void *sbx_test_exec_timed_out_ctx;
#endif

/*
 * The runtime never started the command: the result `docker exec` gives.
 * The runtime's message (on stdout, where the engine puts it) moves to
 * stderr; 127 when it says the program is not there, 126 otherwise (a
 * missing working directory is "chdir to cwd ... no such file": 126).
 */
static void launch_result(struct mafsbx_exec_result *res)
{
	if (res->out_len && !res->err_len) {
		/* swapped, so stdout keeps its (empty) buffer: callers rely on both being there */
		unsigned char *empty = res->err;
		res->err = res->out;
		res->err_len = res->out_len;
		res->out = empty;
		res->out_len = 0;
		if (res->out)
			res->out[0] = '\0';
		/* the engine ends its line with \r\n (a terminal's); a stream's line ends with \n */
		if (res->err_len >= 2 && res->err[res->err_len - 2] == '\r' && res->err[res->err_len - 1] == '\n') {
			res->err[res->err_len - 2] = '\n';
			res->err[--res->err_len] = '\0';
		}
	}
	char msg[600];
	mafsbx_sbx_short_text(res->err, res->err_len, msg, sizeof(msg));
	bool no_program = !strstr(msg, "chdir to cwd") &&
			  (strstr(msg, "executable file not found") || strstr(msg, "no such file or directory"));
	res->exit_code = no_program ? 127 : 126;
}

int mafsbx_sandbox_exec(struct mafsbx_backend *b, const struct mafsbx_exec_spec *spec,
			struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	return mafsbx_sandbox_exec_stream(b, spec, NULL, NULL, res, err);
}

int mafsbx_sandbox_exec_stream(struct mafsbx_backend *b, const struct mafsbx_exec_spec *spec,
			       int (*on_output)(int stream, const void *data, size_t len, void *ctx), void *ctx,
			       struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	struct mafsbx_exec_hooks h = { .on_output = on_output, .ctx = ctx };
	return mafsbx_sandbox_exec_run(b, spec, on_output ? &h : NULL, res, err);
}

/* The engine's callbacks carry one context: the hooks and the container's ID. */
struct hook_ctx {
	const struct mafsbx_exec_hooks *h;
	const char *container_id;
};

static int hook_output(int stream, const void *data, size_t len, void *ctx)
{
	struct hook_ctx *c = ctx;
	return c->h->on_output ? c->h->on_output(stream, data, len, c->h->ctx) : 0;
}

static void hook_created(const char *exec_id, void *ctx)
{
	struct hook_ctx *c = ctx;
	if (c->h->on_created)
		c->h->on_created(c->container_id, exec_id, c->h->ctx);
}

/*
 * A run past its timeout. With kill_on_timeout mafsbx_sbx_exec killed its process
 * tree where it could (res->killed: the sandbox stays); otherwise the
 * sandbox is disposed, as upstream does.
 */
static int timed_out(struct mafsbx_backend *b, const struct mafsbx_exec_spec *spec, const char *id,
		     struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	const char *name = spec->sandbox;
	res->timed_out = true;
	if (res->killed) {
		log_info("exec in %s timed out after %ld ms: the command was killed, the sandbox kept", name,
			 spec->timeout_ms);
		return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "exec in %s timed out after %ld ms; the command was "
					"killed, the sandbox kept", name, spec->timeout_ms);
	}
	struct mafsbx_dispose_result dr;
#ifdef MAFSBX_TEST_KNOBS
	if (sbx_test_exec_timed_out)
		sbx_test_exec_timed_out(name, sbx_test_exec_timed_out_ctx);
#endif
	/* by the ID run in: a sandbox re-created under the name meanwhile is not ours to remove */
	int dr_r = mafsbx_sandbox_dispose_id(b, name, id, &dr, NULL);
	bool gone = dr_r == 0 && dr.n_failures == 0;
	res->sandbox_disposed = gone;
	mafsbx_dispose_result_free(&dr);
	log_info("exec in %s timed out after %ld ms: sandbox %s", name, spec->timeout_ms, gone ? "disposed" : "NOT disposed");
	return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "exec in %s timed out after %ld ms; the sandbox %s", name,
				spec->timeout_ms, gone ? "was disposed" : "could not be disposed");
}

/* The exec's marker into mark: the caller's (checked), or a fresh one. 0 or the error. */
static int exec_marker(const struct mafsbx_exec_hooks *h, char mark[MAFSBX_EXEC_MARK_MAX + 1],
		       struct mafsbx_error *err)
{
	if (!h || !h->marker) {
		int r = mafsbx_exec_mark_new(mark);
		return r < 0 ? mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, -r, NULL, "exec: no marker: %s",
						     strerror(-r)) : 0;
	}
	if (!mafsbx_exec_mark_valid(h->marker))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec: the marker is not %d to %d hex digits",
					MAFSBX_EXEC_MARK_MIN, MAFSBX_EXEC_MARK_MAX);
	snprintf(mark, MAFSBX_EXEC_MARK_MAX + 1, "%s", h->marker);
	return 0;
}

int mafsbx_sandbox_exec_run(struct mafsbx_backend *b, const struct mafsbx_exec_spec *spec,
			    const struct mafsbx_exec_hooks *h, struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	if (!res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec: no result");
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	if (!b || !spec || !spec->argv || !spec->argv[0] || spec->timeout_ms <= 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec: incomplete request");
	const char *name = spec->sandbox;
	/* a full container ID too: the planes of a swarm's node name the task's container so (plane_route.c);
	 * either way only a container with the identity labels is run in (mafsbx_sbx_inspect_sandbox) */
	if (!mafsbx_is_workload_name(name) && !mafsbx_is_engine_id(name))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "field 'sandbox': not a sandbox name");
	/* every user exec carries a marker, so its timeout or cancel finds what it daemonised */
	char mark[MAFSBX_EXEC_MARK_MAX + 1];
	int r = exec_marker(h, mark, err);
	if (r < 0)
		return r;

	/* over a swarm: the node's backend runs it in the task's container; a timeout disposes the service */
	struct mafsbx_backend *top = b;
	struct mafsbx_serving sv;
	r = mafsbx_backend_serving(b, name, &sv, err);
	if (r < 0)
		return r;
	b = sv.backend;
	json_t *insp = NULL;
	char id[65], *cwd = NULL;
	if ((r = mafsbx_sbx_inspect_sandbox(b, sv.container, &insp, id, err)) < 0) {
		if (top->cluster && err && err->kind == MAFSBX_EK_NO_CONTAINER)
			mafsbx_backend_serving_forget(top, name);
		return r;
	}
	struct mafsbx_error e;
	const char *wd = mafsbx_sbx_label(mafsbx_sbx_labels_of(insp), MAFSBX_LABEL_WORK_DIR_V1);
	cwd = mafsbx_exec_cwd_resolve(wd ? wd : MAFSBX_DEFAULT_WORK_DIR, spec->cwd, err);
	json_decref(insp);
	if (!cwd)
		return -(err ? err->err : EINVAL);

	struct hook_ctx hc = { .h = h, .container_id = id };
	struct mafsbx_exec_request rq = {
		.argv = (const char *const *)spec->argv,
		.env = (const char *const *)spec->env,
		.workdir = cwd,
		.user = spec->user,   /* NULL: the container's Config.User */
		.stdin_data = spec->has_stdin ? (spec->stdin_data ? (const void *)spec->stdin_data : (const void *)"") : NULL,
		.stdin_len = spec->has_stdin ? spec->stdin_len : 0,
		.stdin_from_fd = h && h->stdin_from_fd,
		.stdin_fd = h ? h->stdin_fd : -1,
		.timeout_ms = spec->timeout_ms,
		/* streamed: the bytes went to the caller; keep only enough for a launch failure's message */
		.max_output = h && h->on_output ? SBX_STREAM_KEEP_OUTPUT : SBX_EXEC_MAX_OUTPUT,
		.on_output = h && h->on_output ? hook_output : NULL,
		.on_created = h && h->on_created ? hook_created : NULL,
		.output_ctx = &hc,
		/* over a swarm only where the node is this host (as the local plane decides): a remote
		 * node's processes are not this host's to kill, so its sandbox is disposed */
		.kill_on_timeout = h && h->kill_on_timeout && spec->on_timeout != MAFSBX_ON_TIMEOUT_DISPOSE &&
				   (!top->cluster || sv.local),
		.marker = mark,
	};
	mafsbx_error_clear(&e);
	r = mafsbx_sbx_exec(b, id, &rq, res, &e);
	free(cwd);
	if (res->timed_out || (r < 0 && e.kind == MAFSBX_EK_TIMEOUT && res->exec_id[0]))
		return timed_out(top, spec, top->cluster ? sv.service_id : id, res, err);
	if (r < 0) {
		if (e.kind == MAFSBX_EK_NO_CONTAINER)
			return mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "no sandbox named %s", name);
		if (err)
			*err = e;
		return r;
	}
	if (res->launch_failed)
		launch_result(res);
	return 0;
}
