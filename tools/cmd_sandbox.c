/*
 * cmd_sandbox.c: the shell verbs `mafsbx acquire` and `mafsbx dispose`
 * (mafsbx(1); `mafsbx exec` is cmd_exec.c), for people and scripts
 * that do not want JSON. No mount is needed: each verb turns its command
 * line into the very JSON request the .ctl file takes, parses it with the
 * same spec.c parser (so every rule, name, label and error message is
 * shared), and only then binds the engine (-H/--context, else the
 * environment, mafsbxfs(1) ENGINE ENDPOINT) and runs the request through sandbox.h (verbs.h).
 *
 * An acquire that pulls an image draws the pull's progress on one line of
 * stderr when stderr is a terminal (never into a pipe or a log).
 *
 * Exit status: 0 done, 1 the request failed (or, dispose, some removals
 * failed), 125 usage or a refused request (as docker), 3 engine unreachable.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "mafsbx.h"
#include "pullprogress.h"
#include "sandbox.h"
#include "spec.h"
#include "verbs.h"

/* --pull-timeout: whole seconds, at most a week (as -o pull_timeout). */
#define PULL_TIMEOUT_MAX_S (7 * 86400L)

enum { O_CONTEXT = 256, O_SCOPE, O_THREAD, O_AGENT, O_CALL, O_KIND, O_IMAGE, O_IMAGE_ID, O_OUTPUT, O_EGRESS_ALLOW,
       O_WORK_DIR, O_CAP, O_ENV, O_LABEL, O_ISOLATION, O_JSON, O_ID, O_PULL_TIMEOUT };

/* ---- acquire ------------------------------------------------------------ */

static void acquire_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " acquire --scope S --thread T --agent A --kind K [--call C]\n"
		"                      [--image I | --image-id ID] [--output PATH]... [--egress-allow HOST]...\n"
		"                      [--work-dir DIR] [--cap CAP]... [--env K=V]... [--label K=V]...\n"
		"                      [--isolation-scope conversation|call] [--pull-timeout SECS] [--json]\n"
		"                      [-H URL | --context NAME]\n"
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
		"      --pull-timeout SECS  bound on pulling an absent image (default 600); its\n"
		"                           progress is shown on stderr when that is a terminal\n"
		"      --json               print the whole reply of .ctl/acquire instead\n" CLI_ENGINE_OPTIONS_HELP
		"  -h, --help               show this help\n"
		"\n"
		"Exit status: 0 done, 1 the acquire failed, 125 usage or a refused request,\n"
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
	{ "pull-timeout", required_argument, NULL, O_PULL_TIMEOUT },
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
			return verb_set_str(req, strs[i].field, optarg);
	switch (c) {
	case O_OUTPUT:
		return verb_push_str(req, "outputs", optarg);
	case O_EGRESS_ALLOW:
		return verb_set_str(req, "egress", "allowlist") < 0 ? -1 : verb_push_str(req, "egress_allow", optarg);
	case O_CAP:
		return verb_push_str(req, "capabilities", optarg);
	case O_ENV:
		return verb_put_kv("acquire", req, "env", "--env", optarg);
	case O_LABEL:
		return verb_put_kv("acquire", req, "labels", "--label", optarg);
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
		if (json_object_set_new(o, "uid", json_null()) < 0 || json_object_set_new(o, "gid", json_null()) < 0 ||
		    json_object_set_new(o, "identity", json_string(res->identity_why)) < 0) {
			json_decref(o);   /* printed, the uid left at 0 would read as root */
			o = NULL;
		}
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

/*
 * The pull's progress on one line of stderr (a terminal): redrawn at most
 * every 100 ms, ended with a newline by pull_done() once anything was drawn.
 */
struct pull_view {
	const char *image;
	struct mafsbx_pull_progress p;
	long long drawn_ms;          /* when the line was last drawn, 0: never */
};

static void pull_draw(struct pull_view *pv)
{
	char text[160];
	mafsbx_pull_progress_format(&pv->p, text, sizeof(text));
	/* \r and erase-to-end: the line is redrawn in place */
	fprintf(stderr, "\r\033[K" PROGRAM ": pulling %.80s: %s", pv->image, text);
	fflush(stderr);
	pv->drawn_ms = mafsbx_now_ms();
}

static void pull_line(const json_t *line, void *ctx)
{
	struct pull_view *pv = ctx;
	if (!mafsbx_pull_progress_feed(&pv->p, line) && pv->drawn_ms)
		return;
	if (!pv->drawn_ms || mafsbx_now_ms() - pv->drawn_ms >= 100)
		pull_draw(pv);
}

static void pull_done(struct pull_view *pv)
{
	if (!pv->drawn_ms)
		return;
	pull_draw(pv);
	fputc('\n', stderr);
}

/* --pull-timeout SECS into *ms; a usage error otherwise. */
static int parse_pull_timeout(const char *s, long *ms)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > PULL_TIMEOUT_MAX_S)
		return cli_usage_error("acquire", "--pull-timeout: want whole seconds from 1 to %ld, not '%s'",
				       PULL_TIMEOUT_MAX_S, s);
	*ms = v * 1000;
	return MAFSBX_EXIT_OK;
}

static void acquire_spec_freep(struct mafsbx_acquire_spec **s)
{
	mafsbx_acquire_spec_free(*s);
}

int cmd_acquire(int argc, char **argv)
{
	const char *host = NULL, *context = NULL;
	long pull_ms = 0;
	bool json = false;
	__do_json json_t *req = json_object();
	int c, code = MAFSBX_EXIT_USAGE;
	while (req && (c = getopt_long(argc, argv, ":hH:", acquire_opts, NULL)) != -1) {
		if (c == 'h') {
			acquire_usage(stdout);
			return MAFSBX_EXIT_OK;
		} else if (c == 'H') {
			host = optarg;
		} else if (c == O_CONTEXT) {
			context = optarg;
		} else if (c == O_JSON) {
			json = true;
		} else if (c == O_PULL_TIMEOUT) {
			if ((code = parse_pull_timeout(optarg, &pull_ms)) != MAFSBX_EXIT_OK)
				return code;
			code = MAFSBX_EXIT_USAGE;
		} else if (c == '?' || c == ':') {
			return cli_option_error("acquire", c, argv);
		} else if (acquire_option(req, c) < 0) {
			return code;
		}
	}
	if (!req) {
		cli_error("acquire: out of memory");
		return MAFSBX_EXIT_FAILURE;
	}
	if (optind < argc)
		return cli_usage_error("acquire", "unexpected argument '%s'", argv[optind]);
	__attribute__((cleanup(acquire_spec_freep))) struct mafsbx_acquire_spec *spec = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	/* the rules of .ctl/acquire, before any engine call (no mount: no default image) */
	if (mafsbx_acquire_spec_parse(req, NULL, &spec, &err) < 0) {
		verb_report("acquire", &err);
		return code;
	}
	struct verb_env v;
	struct pull_view pv = { .image = spec->image ? spec->image : "" };
	mafsbx_pull_progress_init(&pv.p);
	struct verb_open_opts vo = { .host = host, .context = context, .pull_timeout_ms = pull_ms };
	if (isatty(STDERR_FILENO)) {
		vo.on_pull_line = pull_line;
		vo.pull_ctx = &pv;
	}
	if ((code = verb_open(&vo, &v, 0)) == MAFSBX_EXIT_OK) {
		struct mafsbx_acquire_result res;
		int r = mafsbx_sandbox_acquire(v.b, spec, &res, &err);
		pull_done(&pv);
		if (r < 0) {
			verb_report("acquire", &err);
			code = err.kind == MAFSBX_EK_UNREACHABLE ? MAFSBX_EXIT_ENGINE : MAFSBX_EXIT_FAILURE;
		} else {
			code = acquire_print(&res, json);
		}
		verb_close(&v);
	}
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
		"sandbox), 125 usage or a refused request, 3 engine unreachable; with\n"
		"several names the others are still disposed and the highest status wins.\n");
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
			if (verb_set_str(req, "instance_id", optarg) < 0)
				return MAFSBX_EXIT_USAGE;
		} else if (c >= O_SCOPE && c <= O_KIND) {
			if (verb_set_str(req, fields[c - O_SCOPE], optarg) < 0)
				return MAFSBX_EXIT_USAGE;
		} else {
			return cli_option_error("dispose", c, argv);
		}
	}
	if (optind < argc && json_object_size(req))
		return cli_usage_error("dispose", "give a NAME, or --scope and --thread, not both");
	/* The first name makes the request; cmd_dispose() runs the others (argv[optind + 1..]). */
	if (optind < argc && verb_set_str(req, "name", argv[optind]) < 0)
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
		verb_report("dispose", &err);
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
	__do_json json_t *req = verb_request("dispose", dispose_args, argc, argv, &host, &context, MAFSBX_EXIT_FAILURE, &code);
	if (!req)
		return code;
	/* getopt_long moved the names to the end: argv[optind..]; the first is in req. */
	int first = optind, n = argc - optind > 1 ? argc - optind : 1;
	bool several = argc - optind > 1;
	struct mafsbx_dispose_spec **specs = calloc((size_t)n, sizeof(*specs));
	if (!specs) {
		cli_error("dispose: out of memory");
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
		else if (i == 0 || verb_set_str(one, "name", argv[first + i]) == 0)
			specs[i] = dispose_parse(one, several ? argv[first + i] : NULL);
		json_decref(one);
		refused += !specs[i];
	}
	struct verb_env v;
	if (refused == n) {
		code = MAFSBX_EXIT_USAGE;
	} else if ((code = verb_open(&(struct verb_open_opts){ .host = host, .context = context }, &v, 0)) ==
		   MAFSBX_EXIT_OK) {
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
	return code;
}
