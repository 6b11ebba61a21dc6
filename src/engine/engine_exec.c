/*
 * engine_exec.c: an exec in a container (create, start on a hijacked
 * stream, the exit code) and the exec inspect calls of engine.h.
 */
#include "engine.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "engine_internal.h"
#include "names.h"

/* ---- exec ---------------------------------------------------------------- */

static json_t *string_array(const char *const *v, bool *bad)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	for (size_t i = 0; v && v[i]; i++) {
		json_t *s = json_string(v[i]);
		if (!s) {
			*bad = true;
			json_decref(a);
			return NULL;
		}
		if (json_array_append_new(a, s) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* Time left before `deadline` for a plain call, capped by the request timeout. */
static long call_timeout(const struct mafsbx_engine *e, long long deadline)
{
	if (!deadline)
		return e->to.request_ms;
	long long left = deadline - mafsbx_now_ms();
	if (left < 1)
		left = 1;
	return left < e->to.request_ms ? (long)left : e->to.request_ms;
}

/*
 * The runtime could not start the process: exit 126 and the exec inspect's
 * Pid 0 (no process ever existed). Only the engine's answer decides: the
 * runtime's message ("OCI runtime exec failed", "unable to find user") is on
 * the same stdout a guest writes to, so a command printing it and exiting
 * 126 would otherwise pass for a launch failure.
 */
static bool launch_failure(const struct mafsbx_exec_result *res, bool never_started)
{
	/* Docker answers every launch failure 126; Podman 127 (a missing cwd included, which its message
	 * names): exec.c decides between the two from the runtime's message */
	return never_started && (res->exit_code == 126 || res->exit_code == 127);
}

/* The entry `kv` ("K=V" or "K") names the marker's variable. */
static bool names_marker(const char *kv)
{
	size_t kl = sizeof(MAFSBX_EXEC_MARK_ENV) - 1;
	return strncmp(kv, MAFSBX_EXEC_MARK_ENV, kl) == 0 && (kv[kl] == '=' || kv[kl] == '\0');
}

/*
 * The exec's Env: the request's, and with a marker, MAFSBX_EXEC_MARK_ENV set
 * to it in place of any entry of the request naming it (the mount's value
 * is the one a cancel looks for). NULL with neither, or on failure (*bad:
 * not UTF-8, else out of memory).
 */
static json_t *env_array(const struct mafsbx_exec_request *rq, bool *bad)
{
	if (!rq->marker)
		return rq->env ? string_array(rq->env, bad) : NULL;
	json_t *a = json_array();
	for (size_t i = 0; a && rq->env && rq->env[i]; i++) {
		if (names_marker(rq->env[i]))
			continue;
		json_t *s = json_string(rq->env[i]);
		*bad = *bad || !s;
		if (!s || json_array_append_new(a, s) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	char entry[sizeof(MAFSBX_EXEC_MARK_ENV) + 80];
	snprintf(entry, sizeof(entry), "%s=%s", MAFSBX_EXEC_MARK_ENV, rq->marker);
	if (a && json_array_append_new(a, json_string(entry)) < 0) {
		json_decref(a);
		return NULL;
	}
	return a;
}

/* The exec's configuration (Cmd, Env, User, WorkingDir, attached streams), or NULL with *r set. */
static json_t *exec_config(const struct mafsbx_exec_request *rq, const char *what, int *r, struct mafsbx_error *err)
{
	bool bad = false;
	json_t *cmd = string_array(rq->argv, &bad);
	json_t *env = env_array(rq, &bad);
	json_t *cfg = json_object();
	*r = 0;
	if (bad)
		*r = mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: command or environment is not valid UTF-8", what);
	else if (!cmd || !cfg || ((rq->env || rq->marker) && !env))
		*r = mafsbx_eng_nomem(err);
	if (*r == 0 && (json_object_set_new(cfg, "AttachStdin", json_boolean(rq->stdin_data != NULL ||
									      rq->stdin_from_fd)) < 0 ||
			json_object_set_new(cfg, "AttachStdout", json_true()) < 0 ||
			json_object_set_new(cfg, "AttachStderr", json_true()) < 0 ||
			json_object_set_new(cfg, "Tty", json_false()) < 0 || json_object_set(cfg, "Cmd", cmd) < 0 ||
			(env && json_object_set(cfg, "Env", env) < 0)))
		*r = mafsbx_eng_nomem(err);
	if (*r == 0) {
		if (rq->user && (json_object_set_new(cfg, "User", json_string(rq->user)) < 0))
			*r = mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: user is not valid UTF-8", what);
		else if (rq->workdir && (json_object_set_new(cfg, "WorkingDir", json_string(rq->workdir)) < 0))
			*r = mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s: working directory is not valid UTF-8", what);
	}
	json_decref(cmd);
	json_decref(env);
	if (*r < 0) {
		json_decref(cfg);
		return NULL;
	}
	return cfg;
}

/* Step 1: create the exec; its ID into res->exec_id. */
static int exec_create(struct mafsbx_engine *e, const char *container, const struct mafsbx_exec_request *rq,
		       const char *what, long long deadline, struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	int r;
	json_t *cfg = exec_config(rq, what, &r, err);
	if (!cfg)
		return r;
	__do_free char *body = mafsbx_eng_dump_json(cfg);
	json_decref(cfg);
	if (!body)
		return mafsbx_eng_nomem(err);
	json_t *j = NULL;
	struct obj_call o = { .ref = container, .head = "/containers/", .tail = "/exec",
			      .c = { .method = "POST", .ctype = "application/json", .body = body,
				     .body_len = strlen(body), .timeout_ms = call_timeout(e, deadline), .ok = { 201 },
				     .out = &j } };
	snprintf(o.what, sizeof(o.what), "%s", what);
	if ((r = mafsbx_eng_obj_call(e, &o, err)) < 0) {
		if (err && err->kind == MAFSBX_EK_TIMEOUT)
			res->timed_out = true;
		return r;
	}
	r = mafsbx_eng_copy_id(j, res->exec_id, what, err);
	json_decref(j);
	return r;
}

/* Step 2: start on a fresh connection; the output stream, demultiplexed into dm, ends when the engine closes it. */
static int exec_start(struct mafsbx_engine *e, const struct mafsbx_exec_request *rq, const char *what,
		      long long deadline, struct mafsbx_demux *dm, struct mafsbx_error *err)
{
	struct mafsbx_exec_result *res = dm->res;
	int r;
	__do_free char *tstart = mafsbx_eng_target(e, err, &r, "/exec/%s/start", res->exec_id);
	if (!tstart)
		return r;
	static const char start_body[] = "{\"Detach\":false,\"Tty\":false}";
	struct mafsbx_http_resp resp = { 0 };
	struct mafsbx_http_hijack_req hq = {
		.method = "POST", .target = tstart, .content_type = "application/json", .body = start_body,
		.body_len = sizeof(start_body) - 1, .in = rq->stdin_data, .in_len = rq->stdin_len,
		.in_from_fd = rq->stdin_from_fd, .in_fd = rq->stdin_fd, .in_taken = &res->stdin_bytes,
		.deadline_ms = deadline, .on_data = mafsbx_eng_demux_sink, .ctx = dm,
	};
	r = mafsbx_http_hijack(e->http, &hq, &resp, err);
	if (r < 0) {
		if (err && err->kind == MAFSBX_EK_TIMEOUT)
			res->timed_out = true;
		if (err)
			mafsbx_error_prefix(err, "%s", what);
	} else if (resp.status != 101 && resp.status != 200) {
		r = mafsbx_error_from_engine(err, resp.status, resp.body.data, resp.body.len, what, NULL);
	}
	mafsbx_http_resp_free(&resp);
	if (r < 0)
		return r;
	int fr = mafsbx_demux_finish(dm);
	if (fr == -ENOMEM)
		return mafsbx_eng_nomem(err);
	if (fr < 0)
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: output stream is not well framed", what);
	return 0;
}

/*
 * One exec inspect of step 3: 1 with res->exit_code set when the process
 * ended, 0 while it runs, or a negative errno.
 */
static int exec_exited(struct mafsbx_engine *e, const char *path, const char *what, long long deadline,
		       struct mafsbx_exec_result *res, bool *never_started, struct mafsbx_error *err)
{
	json_t *ij = NULL;
	int r = mafsbx_eng_get_json(e, path, call_timeout(e, deadline), what, &ij, err);
	if (r < 0)
		return r;
	json_t *code = json_object_get(ij, "ExitCode");
	bool running = json_is_true(json_object_get(ij, "Running"));
	if (running || !json_is_integer(code)) {
		json_decref(ij);
		return 0;
	}
	res->exit_code = (int)json_integer_value(code);
	/*
	 * A pause that lands between the engine's own "is paused" check and
	 * runc's exec makes runc refuse ("cannot exec in a paused state"): HTTP
	 * 200, exit 126, message on stdout. Pid 0 proves no process ever
	 * started, which the guest cannot forge, so this is the same refusal as
	 * a 409 and safe to re-issue.
	 */
	json_t *pid = json_object_get(ij, "Pid");
	static const char paused[] = "paused";
	*never_started = json_is_integer(pid) && json_integer_value(pid) == 0;
	json_decref(ij);
	if (*never_started && res->exit_code == 126 && res->out && memmem(res->out, res->out_len, paused,
									    sizeof(paused) - 1))
		return mafsbx_error_set(err, MAFSBX_EK_PAUSED, "%s: the container was paused as the exec started", what);
	return 1;
}

/*
 * How long after the output stream ended the exit code may still be unknown
 * before the end is taken for a cut. The engine closes an exec's stream once
 * every holder of the process's stdout and stderr has closed them (in
 * practice: the process exited, its output drained) and records the exit a
 * moment later: measured on an idle dockerd 20.10 here, 2 ms at the median
 * and 27 ms at worst over 150 execs; under load (ASan, a TLS terminator, a
 * busy engine) past 500 ms, so a shorter grace turned whole results into
 * false failures. A stream
 * that ends while the process runs on for longer than this was cut (a proxy,
 * the network, a restarted daemon): the caller (mafsbx_sbx_exec) then waits for the
 * real end and reports the output as incomplete (EIO). A command that closes
 * its own stdout and stderr and runs on for longer is reported the same way,
 * the engine giving no way to tell it from a cut. The window that remains: a
 * command that ends less than the grace after a cut is reported a success
 * with its output cut short.
 */
#define EXEC_EXIT_GRACE_MS 2000

/* Step 3, the exit code: set when the stream ends in practice; poll briefly to be sure. */
static int exec_exit_code(struct mafsbx_engine *e, const char *what, long long deadline,
			  struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	char path[96];
	snprintf(path, sizeof(path), "/exec/%s/json", res->exec_id);
	long wait_ms = 1;
	bool never_started = false;
	long long poll_end = mafsbx_now_ms() + EXEC_EXIT_GRACE_MS;
	int r;
	while ((r = exec_exited(e, path, what, deadline, res, &never_started, err)) == 0) {
		long long now = mafsbx_now_ms();
		if (now >= poll_end || (deadline && now >= deadline)) {
			if (deadline && now >= deadline)
				res->timed_out = true;
			return mafsbx_error_set(err, deadline && now >= deadline ? MAFSBX_EK_TIMEOUT : MAFSBX_EK_PROTOCOL,
						"%s: output ended but the exit code is not known", what);
		}
		usleep((useconds_t)wait_ms * 1000);
		if (wait_ms < 50)
			wait_ms *= 2;
	}
	if (r < 0)
		return r;
	res->launch_failed = launch_failure(res, never_started);
	return 0;
}

int mafsbx_exec_run(struct mafsbx_engine *e, const char *container, const struct mafsbx_exec_request *rq,
		    struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	if (!res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec: no result");
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	if (!e || !rq || !rq->argv || !rq->argv[0])
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec: no command");
	char what[320];
	snprintf(what, sizeof(what), "exec %.64s in %s", rq->argv[0], container ? container : "");
	int r = mafsbx_eng_check_ref(container, what, err);
	if (r < 0)
		return r;
	long long t0 = mafsbx_now_ms();
	long long deadline = rq->timeout_ms > 0 ? t0 + rq->timeout_ms : 0;
	struct mafsbx_demux dm;
	mafsbx_demux_init(&dm, res, rq->max_output);
	dm.on_output = rq->on_output;
	dm.output_ctx = rq->output_ctx;
	r = exec_create(e, container, rq, what, deadline, res, err);
	if (r == 0 && rq->on_created)
		rq->on_created(res->exec_id, rq->output_ctx);
	if (r == 0)
		r = exec_start(e, rq, what, deadline, &dm, err);
	if (r == 0)
		r = exec_exit_code(e, what, deadline, res, err);
	if (r < 0)
		(void)mafsbx_demux_finish(&dm);  /* out/err stay valid, "" at least */
	res->duration_ms = mafsbx_now_ms() - t0;
	return r;
}

/* GET /exec/ID/json: 0 and the answer (*out), or a negative errno. */
static int exec_json(struct mafsbx_engine *e, const char *exec_id, json_t **out, struct mafsbx_error *err)
{
	if (!e || !mafsbx_is_engine_id(exec_id))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "exec inspect: bad exec ID");
	char path[96];
	snprintf(path, sizeof(path), "/exec/%s/json", exec_id);
	return mafsbx_eng_get_json(e, path, e->to.request_ms, "inspect exec", out, err);
}

int mafsbx_exec_inspect(struct mafsbx_engine *e, const char *exec_id, bool *running, int *exit_code,
			struct mafsbx_error *err)
{
	json_t *j = NULL;
	int r = exec_json(e, exec_id, &j, err);
	if (r < 0)
		return r;
	*running = json_is_true(json_object_get(j, "Running"));
	json_t *code = json_object_get(j, "ExitCode");
	*exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
	json_decref(j);
	return 0;
}

int mafsbx_exec_pid(struct mafsbx_engine *e, const char *exec_id, long *pid, bool *running, struct mafsbx_error *err)
{
	*pid = 0;
	*running = false;
	json_t *j = NULL;
	int r = exec_json(e, exec_id, &j, err);
	if (r < 0)
		return r;
	*running = json_is_true(json_object_get(j, "Running"));
	json_t *p = json_object_get(j, "Pid");
	if (json_is_integer(p) && json_integer_value(p) > 0 && json_integer_value(p) < (1 << 22))
		*pid = (long)json_integer_value(p);
	json_decref(j);
	return 0;
}
