/*
 * mafsbx.c: the `mafsbx` helper CLI's entry point: global options
 * (--help, --version), the subcommand table, and the helpers the subcommands
 * share (error printing, engine binding). Each subcommand lives in its own
 * tools/cmd_NAME.c; to add one, declare it in mafsbx.h and add a row below.
 */
#include "mafsbx.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "log.h"

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

/* The subcommand table: one row per tools/cmd_NAME.c. */
static const struct subcommand subcommands[] = {
	{ "acquire", cmd_acquire, "get or create a sandbox and print its name (no mount needed)" },
	{ "exec", cmd_exec, "run a command in a sandbox, output streamed, its exit status" },
	{ "dispose", cmd_dispose, "remove a sandbox, a key's sandboxes or a conversation's" },
	{ "mkimage", cmd_mkimage, "build the offline busybox test image (docker import)" },
	{ "reap", cmd_reap, "remove sandboxes older than a cutoff (for cron)" },
	{ "ls", cmd_ls, "list the sandboxes on the engine" },
	{ "fingerprint", cmd_fingerprint, "measure a sandbox; --diff: did a call leave anything behind" },
	{ "thaw", cmd_thaw, "lift every freeze whose holder is gone (for cron)" },
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " COMMAND [OPTIONS]\n"
		"       " PROGRAM " [--cluster swarm] [-H URL] COMMAND [OPTIONS]\n"
		"       " PROGRAM " help [COMMAND]\n"
		"       " PROGRAM " --help | --version\n"
		"\n"
		"Helper CLI for mafsbxfs (Docker sandboxes as files).\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		fprintf(out, "  %-12s %s\n", subcommands[i].name, subcommands[i].summary);
	fprintf(out,
		"\n"
		"Engine endpoint (every command): -H URL, --context NAME, else DOCKER_HOST,\n"
		"DOCKER_CONTEXT, the current context of ~/.docker/config.json, else\n"
		"unix:///var/run/docker.sock. Before the command, -H URL is DOCKER_HOST.\n"
		"--cluster swarm (or MAFSBX_CLUSTER=swarm): the endpoint is a Docker Swarm\n"
		"manager and sandboxes are its services (mafsbxfs(1) CLUSTER).\n"
		"\n"
		"Run '" PROGRAM " COMMAND --help' for a command's options.\n");
}

static const struct subcommand *find(const char *name)
{
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (strcmp(subcommands[i].name, name) == 0)
			return &subcommands[i];
	return NULL;
}

static void verror(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void verror(const char *fmt, va_list ap)
{
	char msg[2048];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, PROGRAM ": %s\n", msg);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(fmt, ap);
	va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "Try '" PROGRAM " %s --help'.\n", cmd);
	else
		fprintf(stderr, "Try '" PROGRAM " --help'.\n");
	return MAFSBX_EXIT_USAGE;
}

int cli_option_error(const char *cmd, int c, char **argv)
{
	/* After an error optind points past the offending word (or its missing argument). */
	const char *word = optind > 0 ? argv[optind - 1] : "?";
	if (c == ':')
		return cli_usage_error(cmd, "option '%s' needs an argument", word);
	if (optopt && optopt != '?')
		return cli_usage_error(cmd, "unknown option '-%c'", optopt);
	return cli_usage_error(cmd, "unknown option '%s'", word);
}

int cli_resolve(const char *host, const char *context, struct mafsbx_endpoint *ep)
{
	struct mafsbx_endpoint_options opts = { .host = host, .context = context };
	struct mafsbx_error err;
	if (mafsbx_endpoint_resolve(&opts, NULL, NULL, ep, &err) < 0) {
		cli_error("%s", err.message);
		return MAFSBX_EXIT_ENGINE;
	}
	return MAFSBX_EXIT_OK;
}

struct mafsbx_engine *cli_connect(const struct mafsbx_endpoint *ep, int *exit_code)
{
	return cli_connect_timeouts(ep, NULL, exit_code);
}

struct mafsbx_engine *cli_connect_timeouts(const struct mafsbx_endpoint *ep, const struct mafsbx_engine_timeouts *to,
					   int *exit_code)
{
	struct mafsbx_error err;
	/* Bound from here on: nothing below looks at the environment again. */
	struct mafsbx_engine *e = mafsbx_engine_open(ep, to, &err);
	*exit_code = MAFSBX_EXIT_ENGINE;
	if (!e) {
		cli_error("%s: %s", ep->url, err.message);
		return NULL;
	}
	if (mafsbx_engine_ping(e, &err) < 0) {
		cli_error("%s", err.message);
		mafsbx_engine_close(e);
		return NULL;
	}
	*exit_code = MAFSBX_EXIT_OK;
	return e;
}

struct mafsbx_engine *cli_open_engine(const char *host, const char *context, int *exit_code)
{
	struct mafsbx_endpoint ep;
	*exit_code = cli_resolve(host, context, &ep);
	if (*exit_code != MAFSBX_EXIT_OK)
		return NULL;
	return cli_connect(&ep, exit_code);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "cluster", required_argument, NULL, 'C' },
		{ "host", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};

	mafsbx_log_init(PROGRAM, MAFSBX_LOG_WARN);
	/* Every getopt error is reported by us, as "mafsbx: ...", never by getopt. */
	opterr = 0;
	int c;
	/* "+": stop at the subcommand; its options are its own. */
	while ((c = getopt_long(argc, argv, "+hVH:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return MAFSBX_EXIT_OK;
		case 'V':
			printf(PROGRAM " " MAFSBX_VERSION "\n");
			return MAFSBX_EXIT_OK;
		case 'C':
			/* every verb reads it (cluster_cli.c), as it reads DOCKER_HOST for -H */
			if (strcmp(optarg, "swarm") != 0)
				return cli_usage_error(NULL, "--cluster %s: the only cluster is 'swarm'", optarg);
			setenv(MAFSBX_CLUSTER_ENV, "swarm", 1);
			break;
		case 'H':
			/* `mafsbx --cluster swarm -H URL VERB`: as DOCKER_HOST, which a verb's own -H or
			 * --context still overrides (mafsbxfs(1) ENGINE ENDPOINT) */
			setenv("DOCKER_HOST", optarg, 1);
			break;
		default:
			return cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error(NULL, "no command given");
	int ce = cli_cluster_check_env();
	if (ce != MAFSBX_EXIT_OK)
		return ce;

	const char *name = argv[optind];
	if (strcmp(name, "help") == 0) {
		if (optind + 1 >= argc) {
			usage(stdout);
			return MAFSBX_EXIT_OK;
		}
		const struct subcommand *sc = find(argv[optind + 1]);
		if (!sc)
			return cli_usage_error(NULL, "unknown command '%s'", argv[optind + 1]);
		char *help_argv[] = { (char *)sc->name, (char *)"--help", NULL };
		optind = 0;
		return sc->run(2, help_argv);
	}
	const struct subcommand *sc = find(name);
	if (!sc)
		return cli_usage_error(NULL, "unknown command '%s'", name);
	int sub_argc = argc - optind;
	char **sub_argv = argv + optind;
	/* 0, not 1: glibc then re-initialises its getopt state for the subcommand. */
	optind = 0;
	return sc->run(sub_argc, sub_argv);
}
