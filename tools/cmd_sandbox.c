/*
 * cmd_sandbox.c: the shell verbs `mafsbx acquire`, `mafsbx exec` and
 * `mafsbx dispose` (INTERFACE.md §7), for people and scripts that do not
 * want JSON. No mount is needed: each verb turns its command line into the
 * very JSON request the .ctl file takes, parses it with the same spec.c
 * parser (so every rule, name, label and error message is shared), and only
 * then binds the engine (-H/--context, else the environment, §1.1), builds
 * the backend with the mount's defaults (and its freezer, so an exec is
 * registered against freezes exactly as a ctl exec is) and runs the request
 * through sandbox.h.
 *
 * Exit status:
 *   acquire, dispose: 0 done, 1 the request failed (or, dispose, some
 *     removals failed), 2 usage or a refused request, 3 engine unreachable.
 *   exec: the guest's exit status; 124 on timeout (as timeout(1)); 125 when
 *     the request itself failed (usage, a bad or absent sandbox, the engine;
 *     as `docker run`); 126 when the runtime could not start the command,
 *     127 when it was not found.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress.h"
#include "freeze.h"
#include "mafsbx.h"
#include "sandbox.h"
#include "spec.h"

#define EXEC_EXIT_TIMEOUT 124
#define EXEC_EXIT_FAILED 125
#define EXEC_EXIT_CANNOT_RUN 126
#define EXEC_EXIT_NOT_FOUND 127
#define EXEC_STDIN_MAX (64ull * 1024 * 1024)

enum { O_CONTEXT = 256, O_SCOPE, O_THREAD, O_AGENT, O_CALL, O_KIND, O_IMAGE, O_IMAGE_ID, O_OUTPUT, O_EGRESS_ALLOW,
       O_WORK_DIR, O_CAP, O_ENV, O_LABEL, O_ISOLATION, O_JSON, O_CWD, O_TIMEOUT, O_ID,
       O_USER, O_INTERACTIVE, O_TTY };

/* What every verb opens: the engine, the freezer, the backend. */
struct verb_env {
	struct mafsbx_engine *engine;
	struct mafsbx_freezer *fz;
	struct mafsbx_backend *b;
};

static void verb_close(struct verb_env *v)
{
	mafsbx_backend_free(v->b);
	if (v->fz)
		mafsbx_freezer_free(v->fz);
	if (v->engine)
		mafsbx_engine_close(v->engine);
	memset(v, 0, sizeof(*v));
}

/* Bind the engine and build the backend as a mount with default options would. */
static int verb_open(const char *host, const char *context, struct verb_env *v, int fail_code)
{
	int code;
	memset(v, 0, sizeof(*v));
	v->engine = cli_open_engine(host, context, &code);
	if (!v->engine)
		return fail_code ? fail_code : code;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	v->fz = mafsbx_freezer_new(v->engine, NULL, &err);
	struct mafsbx_sandbox_config sc;
	mafsbx_sandbox_config_defaults(&sc);
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
	return MAFSBX_EXIT_OK;
}

/* req[field] = value (a string). */
static int set_str(json_t *req, const char *field, const char *value)
{
	json_t *s = json_string(value);
	if (!s) {
		cli_error("%s: not valid UTF-8", field);
		return -1;
	}
	return json_object_set_new(req, field, s);
}

/* Append value to the array req[field], made on first use. */
static int push_str(json_t *req, const char *field, const char *value)
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

/* "K=V" into the object req[field] (env, labels). */
static int put_kv(const char *cmd, json_t *req, const char *field, const char *opt, const char *kv)
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

/*
 * The request a verb's command line makes, through its argument parser
 * (0, -1 after --help, or an exit code). NULL with *code set when there is
 * nothing to run: 0 after --help, else the failure's exit code.
 */
static json_t *verb_request(const char *verb,
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

/* A refused request (spec.c's message) or a failed one, as "mafsbx: VERB: message". */
static void report(const char *verb, const struct mafsbx_error *err)
{
	cli_error("%s: %s", verb, err->message[0] ? err->message : "failed");
}

/* ---- acquire ------------------------------------------------------------ */

static void acquire_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " acquire --scope S --thread T --agent A --kind K [--call C]\n"
		"                      [--image I | --image-id ID] [--output PATH]... [--egress-allow HOST]...\n"
		"                      [--work-dir DIR] [--cap CAP]... [--env K=V]... [--label K=V]...\n"
		"                      [--isolation-scope conversation|call] [--json] [-H URL | --context NAME]\n"
		"\n"
		"Get or create the sandbox of a key and kind, as a write to .ctl/acquire does\n"
		"(same rules, names and labels), and print its name.\n"
		"\n"
		"Options:\n"
		"      --scope, --thread, --agent, --call, --kind   the key and kind (--call: a call id)\n"
		"      --image IMAGE        image reference (no default without a mount's -o image)\n"
		"      --image-id ID        pinned image ID; takes precedence over --image\n"
		"      --output PATH        a declared output (relative path), repeatable\n"
		"      --egress-allow HOST  allowlist egress through the proxy, repeatable\n"
		"      --work-dir DIR       the guest's working directory (default /maf-sandbox/work)\n"
		"      --cap CAP            a required capability (exec, files_in, files_out,\n"
		"                           files_delete, host_tools, reclaim), repeatable;\n"
		"                           default exec, files_in, files_out\n"
		"      --env K=V            environment of the sandbox, repeatable\n"
		"      --label K=V          extra label maf-sandbox.label.K, repeatable\n"
		"      --isolation-scope S  conversation (default) or call (needs --call)\n"
		"      --json               print the whole reply of .ctl/acquire instead\n" CLI_ENGINE_OPTIONS_HELP
		"  -h, --help               show this help\n"
		"\n"
		"Exit status: 0 done, 1 the acquire failed, 2 usage or a refused request,\n"
		"3 engine unreachable.\n");
}

static const struct option acquire_opts[] = {
	{ "scope", required_argument, NULL, O_SCOPE },
	{ "thread", required_argument, NULL, O_THREAD },
	{ "agent", required_argument, NULL, O_AGENT },
	{ "call", required_argument, NULL, O_CALL },
	{ "kind", required_argument, NULL, O_KIND },
	{ "image", required_argument, NULL, O_IMAGE },
	{ "image-id", required_argument, NULL, O_IMAGE_ID },
	{ "output", required_argument, NULL, O_OUTPUT },
	{ "egress-allow", required_argument, NULL, O_EGRESS_ALLOW },
	{ "work-dir", required_argument, NULL, O_WORK_DIR },
	{ "cap", required_argument, NULL, O_CAP },
	{ "env", required_argument, NULL, O_ENV },
	{ "label", required_argument, NULL, O_LABEL },
	{ "isolation-scope", required_argument, NULL, O_ISOLATION },
	{ "json", no_argument, NULL, O_JSON },
	{ "host", required_argument, NULL, 'H' },
	{ "context", required_argument, NULL, O_CONTEXT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* One acquire option into the request; -1 when refused (reported). */
static int acquire_option(json_t *req, int c)
{
	static const struct {
		int opt;
		const char *field;
	} strs[] = {
		{ O_SCOPE, "scope" }, { O_THREAD, "thread" }, { O_AGENT, "agent" }, { O_CALL, "call" },
		{ O_KIND, "kind" }, { O_IMAGE, "image" }, { O_IMAGE_ID, "image_id" }, { O_WORK_DIR, "work_dir" },
		{ O_ISOLATION, "isolation_scope" },
	};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strs[i].opt == c)
			return set_str(req, strs[i].field, optarg);
	switch (c) {
	case O_OUTPUT:
		return push_str(req, "outputs", optarg);
	case O_EGRESS_ALLOW:
		return set_str(req, "egress", "allowlist") < 0 ? -1 : push_str(req, "egress_allow", optarg);
	case O_CAP:
		return push_str(req, "capabilities", optarg);
	case O_ENV:
		return put_kv("acquire", req, "env", "--env", optarg);
	case O_LABEL:
		return put_kv("acquire", req, "labels", "--label", optarg);
	}
	return -1;
}

static int acquire_print(const struct mafsbx_acquire_result *res, bool json)
{
	if (!json) {
		printf("%s\n", res->name);
		return fflush(stdout) == 0 ? MAFSBX_EXIT_OK : MAFSBX_EXIT_FAILURE;
	}
	json_t *o = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "ok", 1, "name", res->name, "id", res->id,
			      "state", mafsbx_acquire_state_name(res->state), "path", res->name, "work_dir",
			      res->work_dir, "uid", (json_int_t)res->uid, "gid", (json_int_t)res->gid);
	if (o && !res->identity_resolved) {
		/* No number at all: a 0 here would read as root. */
		json_object_set_new(o, "uid", json_null());
		json_object_set_new(o, "gid", json_null());
		json_object_set_new(o, "identity", json_string(res->identity_why));
	}
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text) {
		cli_error("acquire: out of memory");
		return MAFSBX_EXIT_FAILURE;
	}
	printf("%s\n", text);
	free(text);
	return fflush(stdout) == 0 ? MAFSBX_EXIT_OK : MAFSBX_EXIT_FAILURE;
}

int cmd_acquire(int argc, char **argv)
{
	const char *host = NULL, *context = NULL;
	bool json = false;
	json_t *req = json_object();
	int c, code = MAFSBX_EXIT_USAGE;
	while (req && (c = getopt_long(argc, argv, ":hH:", acquire_opts, NULL)) != -1) {
		if (c == 'h') {
			acquire_usage(stdout);
			code = MAFSBX_EXIT_OK;
			goto out;
		} else if (c == 'H') {
			host = optarg;
		} else if (c == O_CONTEXT) {
			context = optarg;
		} else if (c == O_JSON) {
			json = true;
		} else if (c == '?' || c == ':') {
			code = cli_option_error("acquire", c, argv);
			goto out;
		} else if (acquire_option(req, c) < 0) {
			goto out;
		}
	}
	if (!req) {
		cli_error("acquire: out of memory");
		return MAFSBX_EXIT_FAILURE;
	}
	if (optind < argc) {
		code = cli_usage_error("acquire", "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	struct mafsbx_acquire_spec *spec = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	/* the rules of .ctl/acquire, before any engine call (no mount: no default image) */
	if (mafsbx_acquire_spec_parse(req, NULL, &spec, &err) < 0) {
		report("acquire", &err);
		goto out;
	}
	struct verb_env v;
	if ((code = verb_open(host, context, &v, 0)) == MAFSBX_EXIT_OK) {
		struct mafsbx_acquire_result res;
		if (mafsbx_sandbox_acquire(v.b, spec, &res, &err) < 0) {
			report("acquire", &err);
			code = err.kind == MAFSBX_EK_UNREACHABLE ? MAFSBX_EXIT_ENGINE : MAFSBX_EXIT_FAILURE;
		} else {
			code = acquire_print(&res, json);
		}
		verb_close(&v);
	}
	mafsbx_acquire_spec_free(spec);
out:
	json_decref(req);
	return code;
}

/* ---- exec --------------------------------------------------------------- */

static void exec_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " exec NAME [-w|--cwd DIR] [-e|--env K=V]... [-u|--user USER] [-i]\n"
		"                   [--timeout SECS] [-H URL | --context NAME] [--] ARGV...\n"
		"\n"
		"Run ARGV (no shell) in sandbox NAME, as a write to .ctl/exec does (same\n"
		"rules): the guest's stdout and stderr are streamed to this command's as\n"
		"they arrive. The flags mean what docker exec's mean.\n"
		"\n"
		"Options:\n"
		"  -w, --cwd DIR        working directory: relative to the sandbox's work dir\n"
		"                       (default), or absolute\n"
		"  -e, --env K=V        environment variable, repeatable\n"
		"  -u, --user USER      run as USER: NAME, UID, NAME:GROUP or UID:GID\n"
		"                       (default: the image's user)\n"
		"  -i, --interactive    give this command's standard input to the command: it\n"
		"                       is read to its end (at most 64 MiB) before the command\n"
		"                       starts; without -i the command's stdin is empty\n"
		"  -t, --tty            refused: no terminal is allocated (-it: use -i)\n"
		"      --timeout SECS   bound on the whole run (default and ceiling 300); on\n"
		"                       expiry the sandbox is disposed, as for .ctl/exec\n" CLI_ENGINE_OPTIONS_HELP
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: the command's; 124 timed out (the sandbox was disposed);\n"
		"125 the request failed (usage, no such sandbox, engine unreachable);\n"
		"126 the command could not be started; 127 the command was not found.\n");
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -(n < 0 ? errno : EIO);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Streamed output: straight to our own stdout / stderr, unbuffered. */
static int exec_sink(int stream, const void *data, size_t len, void *ctx)
{
	(void)ctx;
	return write_all(stream == 2 ? STDERR_FILENO : STDOUT_FILENO, data, len);
}

/* Standard input for the command (-i): read to its end, whatever it is (a
 * terminal until ^D), before the command starts; not streamed yet. */
static int read_stdin(struct mafsbx_exec_spec *spec)
{
	size_t cap = 0, len = 0;
	unsigned char *buf = NULL;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			unsigned char *nb = cap <= EXEC_STDIN_MAX + 1 ? realloc(buf, cap) : NULL;
			if (!nb) {
				free(buf);
				cli_error("exec: standard input is over %llu bytes", EXEC_STDIN_MAX);
				return -1;
			}
			buf = nb;
		}
		ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cli_error("exec: cannot read standard input: %s", strerror(errno));
			free(buf);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	spec->stdin_data = buf;
	spec->stdin_len = len;
	spec->has_stdin = true;
	return 0;
}

/* A number of seconds for --timeout (the ceiling is spec.c's). */
static int put_timeout(json_t *req, const char *s)
{
	char *end;
	errno = 0;
	double secs = strtod(s, &end);
	if (errno || end == s || *end || secs != secs) {
		cli_usage_error("exec", "--timeout: want a number of seconds, not '%s'", s);
		return -1;
	}
	return json_object_set_new(req, "timeout", json_real(secs));
}

/* -i was given: stdin goes to the command (exec_args() sets it; the verb's
 * callback has no other way out, and the CLI runs one verb per process). */
static bool exec_interactive;

/*
 * NAME [options] [--] ARGV...: options may stand before or after NAME; the
 * first word after NAME that is not an option (or everything after "--")
 * starts ARGV. Returns 0 with req filled, else the exit code (usage: 125).
 */
static int exec_args(int argc, char **argv, json_t *req, const char **host, const char **context)
{
	static const struct option opts[] = {
		{ "cwd", required_argument, NULL, O_CWD },
		{ "workdir", required_argument, NULL, O_CWD },
		{ "env", required_argument, NULL, O_ENV },
		{ "user", required_argument, NULL, O_USER },
		{ "interactive", no_argument, NULL, O_INTERACTIVE },
		{ "tty", no_argument, NULL, O_TTY },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "host", required_argument, NULL, 'H' },
		{ "context", required_argument, NULL, O_CONTEXT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = NULL;
	int c;
	for (;;) {
		/* docker exec's short flags: -w -e -u -i -t (and -it) */
		c = getopt_long(argc, argv, "+:hH:w:e:u:it", opts, NULL);
		if (c == -1) {
			bool dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
			if (!name && !dashdash && optind < argc) {
				name = argv[optind++];
				continue;
			}
			break;
		}
		int r = 0;
		if (c == 'h') {
			exec_usage(stdout);
			return -1;
		} else if (c == 'H') {
			*host = optarg;
		} else if (c == O_CONTEXT) {
			*context = optarg;
		} else if (c == O_CWD || c == 'w') {
			r = set_str(req, "cwd", optarg);
		} else if (c == O_ENV || c == 'e') {
			r = put_kv("exec", req, "env", c == 'e' ? "-e" : "--env", optarg);
		} else if (c == O_USER || c == 'u') {
			r = set_str(req, "user", optarg);
		} else if (c == O_INTERACTIVE || c == 'i') {
			exec_interactive = true;
		} else if (c == O_TTY || c == 't') {
			/* A terminal would need a pty on both ends and a raw local tty;
			 * the output is streamed through pipes. Refused rather than
			 * ignored: a program that needs a terminal would misbehave
			 * without saying why. */
			cli_usage_error("exec", "-t: no terminal is allocated (output is streamed through pipes); "
					"drop -t (-i alone gives the command this standard input)");
			return EXEC_EXIT_FAILED;
		} else if (c == O_TIMEOUT) {
			r = put_timeout(req, optarg);
		} else {
			cli_option_error("exec", c, argv);
			return EXEC_EXIT_FAILED;
		}
		if (r < 0)
			return EXEC_EXIT_FAILED;
	}
	if (!name) {
		cli_usage_error("exec", "no sandbox NAME given");
		return EXEC_EXIT_FAILED;
	}
	if (optind >= argc) {
		cli_usage_error("exec", "no command given (mafsbx exec NAME -- ARGV...)");
		return EXEC_EXIT_FAILED;
	}
	if (set_str(req, "sandbox", name) < 0)
		return EXEC_EXIT_FAILED;
	for (int i = optind; i < argc; i++)
		if (push_str(req, "argv", argv[i]) < 0)
			return EXEC_EXIT_FAILED;
	return 0;
}

/* The exit status for a run that returned `r` with `res`. */
static int exec_status(int r, const struct mafsbx_exec_result *res, const struct mafsbx_error *err)
{
	if (r == 0) {
		if (res->launch_failed)   /* its message was streamed as it came; the status says which */
			fprintf(stderr, PROGRAM ": exec: the runtime could not start the command (exit %d)\n",
				res->exit_code);
		return res->exit_code >= 0 && res->exit_code <= 255 ? res->exit_code : EXEC_EXIT_FAILED;
	}
	report("exec", err);
	if (res->timed_out || err->kind == MAFSBX_EK_TIMEOUT)
		return EXEC_EXIT_TIMEOUT;
	if (res->launch_failed)
		return err->err == ENOENT ? EXEC_EXIT_NOT_FOUND : EXEC_EXIT_CANNOT_RUN;
	return EXEC_EXIT_FAILED;
}

int cmd_exec(int argc, char **argv)
{
	const char *host = NULL, *context = NULL;
	int code;
	json_t *req = verb_request("exec", exec_args, argc, argv, &host, &context, EXEC_EXIT_FAILED, &code);
	if (!req)
		return code;
	struct mafsbx_exec_spec *spec = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	/* the rules of .ctl/exec, before any engine call */
	if (mafsbx_exec_spec_parse(req, NULL, &spec, &err) < 0) {
		report("exec", &err);
		code = EXEC_EXIT_FAILED;
	} else if (exec_interactive && read_stdin(spec) < 0) {  /* without -i the guest's stdin is empty */
		code = EXEC_EXIT_FAILED;
	} else {
		struct verb_env v;
		if ((code = verb_open(host, context, &v, EXEC_EXIT_FAILED)) == MAFSBX_EXIT_OK) {
			struct mafsbx_exec_result res;
			int r = mafsbx_sandbox_exec_stream(v.b, spec, exec_sink, NULL, &res, &err);
			code = exec_status(r, &res, &err);
			mafsbx_exec_result_free(&res);
			verb_close(&v);
		}
	}
	mafsbx_exec_spec_free(spec);
	json_decref(req);
	return code;
}

/* ---- dispose ------------------------------------------------------------ */

static void dispose_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " dispose NAME... [-H URL | --context NAME]\n"
		"       " PROGRAM " dispose --scope S --thread T [--agent A [--call C] [--kind K] [--id ID]]\n"
		"\n"
		"Remove sandboxes, as a write to .ctl/dispose does (same rules): by name\n"
		"(several names are disposed in turn, as docker rm does); every kind of a\n"
		"key (--agent), or one kind (--kind); the whole\n"
		"conversation (--scope and --thread only); or, with --id, only the\n"
		"instance with that container ID, when it carries the key's labels.\n"
		"Their proxies and networks go too. Prints \"disposed N\" (with several\n"
		"names, \"NAME: disposed N\" for each); what is already gone is success\n"
		"with N = 0.\n"
		"\n"
		"Options:\n"
		"      --scope, --thread, --agent, --call, --kind   the key (--call: a call id)\n"
		"      --id ID          the instance's full container ID (needs the key)\n" CLI_ENGINE_OPTIONS_HELP
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: 0 done, 1 some removals failed (or the container is not a\n"
		"sandbox), 2 usage or a refused request (with several names: the others\n"
		"are still disposed), 3 engine unreachable.\n");
}

static int dispose_args(int argc, char **argv, json_t *req, const char **host, const char **context)
{
	static const struct option opts[] = {
		{ "scope", required_argument, NULL, O_SCOPE }, { "thread", required_argument, NULL, O_THREAD },
		{ "agent", required_argument, NULL, O_AGENT }, { "call", required_argument, NULL, O_CALL },
		{ "kind", required_argument, NULL, O_KIND },   { "id", required_argument, NULL, O_ID },
		{ "host", required_argument, NULL, 'H' },      { "context", required_argument, NULL, O_CONTEXT },
		{ "help", no_argument, NULL, 'h' },            { NULL, 0, NULL, 0 },
	};
	static const char *const fields[] = { [O_SCOPE - O_SCOPE] = "scope", [O_THREAD - O_SCOPE] = "thread",
					      [O_AGENT - O_SCOPE] = "agent", [O_CALL - O_SCOPE] = "call",
					      [O_KIND - O_SCOPE] = "kind" };
	int c;
	while ((c = getopt_long(argc, argv, ":hH:", opts, NULL)) != -1) {
		if (c == 'h') {
			dispose_usage(stdout);
			return -1;
		} else if (c == 'H') {
			*host = optarg;
		} else if (c == O_CONTEXT) {
			*context = optarg;
		} else if (c == O_ID) {
			if (set_str(req, "instance_id", optarg) < 0)
				return MAFSBX_EXIT_USAGE;
		} else if (c >= O_SCOPE && c <= O_KIND) {
			if (set_str(req, fields[c - O_SCOPE], optarg) < 0)
				return MAFSBX_EXIT_USAGE;
		} else {
			return cli_option_error("dispose", c, argv);
		}
	}
	if (optind < argc && json_object_size(req))
		return cli_usage_error("dispose", "give a NAME, or --scope and --thread, not both");
	/* The first name makes the request; cmd_dispose() runs the others (argv[optind + 1..]). */
	if (optind < argc && set_str(req, "name", argv[optind]) < 0)
		return MAFSBX_EXIT_USAGE;
	if (!json_object_size(req))
		return cli_usage_error("dispose", "give a sandbox NAME, or --scope and --thread");
	return 0;
}

/* Parse `req` for the name at hand: the spec, or NULL with the refusal said
 * ("mafsbx: dispose: [NAME: ]message"). */
static struct mafsbx_dispose_spec *dispose_parse(json_t *req, const char *name)
{
	struct mafsbx_dispose_spec *spec = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	if (mafsbx_dispose_spec_parse(req, &spec, &err) == 0)
		return spec;
	if (name)
		cli_error("dispose: %s: %s", name, err.message);
	else
		report("dispose", &err);
	return NULL;
}

/* One disposal through the open backend: 0, or 1 when some removals failed.
 * `name` (several names) prefixes each line, so each says which it was. */
static int dispose_one(struct verb_env *v, const struct mafsbx_dispose_spec *spec, const char *name)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int code;
	struct mafsbx_dispose_result res;
	if (mafsbx_sandbox_dispose(v->b, spec, &res, &err) < 0) {
		cli_error("dispose: %s%s%s", name ? name : "", name ? ": " : "", err.message[0] ? err.message : "failed");
		code = MAFSBX_EXIT_FAILURE;
	} else {
		if (name)
			printf("%s: disposed %u\n", name, res.disposed);
		else
			printf("disposed %u\n", res.disposed);
		for (size_t i = 0; i < res.n_failures; i++)
			cli_error("dispose: %s%s%s: %s", name ? name : "", name ? ": " : "",
				  mafsbx_disposal_code_name(res.failures[i].code),
				  res.failures[i].detail ? res.failures[i].detail : "");
		code = res.n_failures ? MAFSBX_EXIT_FAILURE : MAFSBX_EXIT_OK;
	}
	/* the line out now, before the next (slow) removal */
	fflush(stdout);
	mafsbx_dispose_result_free(&res);
	return code;
}

int cmd_dispose(int argc, char **argv)
{
	const char *host = NULL, *context = NULL;
	int code;
	json_t *req = verb_request("dispose", dispose_args, argc, argv, &host, &context, MAFSBX_EXIT_FAILURE, &code);
	if (!req)
		return code;
	/* getopt_long moved the names to the end: argv[optind..]; the first is in req. */
	int first = optind, n = argc - optind > 1 ? argc - optind : 1;
	bool several = argc - optind > 1;
	struct mafsbx_dispose_spec **specs = calloc((size_t)n, sizeof(*specs));
	if (!specs) {
		cli_error("dispose: out of memory");
		json_decref(req);
		return MAFSBX_EXIT_FAILURE;
	}
	/* Every request is checked before the engine is reached. One refused
	 * name among several does not stop the others (as docker rm); the
	 * exit status is the worst of them. */
	int refused = 0;
	for (int i = 0; i < n; i++) {
		json_t *one = i == 0 ? json_incref(req) : json_object();
		if (!one)
			cli_error("dispose: out of memory");
		else if (i == 0 || set_str(one, "name", argv[first + i]) == 0)
			specs[i] = dispose_parse(one, several ? argv[first + i] : NULL);
		json_decref(one);
		refused += !specs[i];
	}
	struct verb_env v;
	if (refused == n) {
		code = MAFSBX_EXIT_USAGE;
	} else if ((code = verb_open(host, context, &v, 0)) == MAFSBX_EXIT_OK) {
		for (int i = 0; i < n; i++) {
			int c = specs[i] ? dispose_one(&v, specs[i], several ? argv[first + i] : NULL) : MAFSBX_EXIT_USAGE;
			if (c > code)
				code = c;
		}
		verb_close(&v);
	}
	for (int i = 0; i < n; i++)
		mafsbx_dispose_spec_free(specs[i]);
	free(specs);
	json_decref(req);
	return code;
}
