/*
 * cli_common.c: the table-driven command line of the engine-facing mafsbx
 * subcommands (cli_common.h) and their JSON output.
 */
#include "cli_common.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mafsbx.h"

/* getopt_long values of the options without a short letter: CLI_OPT_BASE + index; --context after them. */
#define CLI_OPT_BASE 256

static int parse_count(const struct cli_command *cmd, const struct cli_opt *o, const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > o->max || s[0] == '-')
		return cli_usage_error(cmd->name, "--%s: want a whole number from 1 to %" PRIu64 ", not '%s'", o->name,
				       o->max, s);
	*(uint64_t *)o->dest = v;
	return CLI_GO_ON;
}

static int apply(const struct cli_command *cmd, const struct cli_opt *o, const char *arg)
{
	switch (o->kind) {
	case CLI_FLAG:
		*(bool *)o->dest = true;
		return CLI_GO_ON;
	case CLI_STRING:
		*(const char **)o->dest = arg;
		return CLI_GO_ON;
	case CLI_COUNT:
		return parse_count(cmd, o, arg);
	case CLI_CALL: {
		int r = o->call(arg, o->dest);
		return r ? r : CLI_GO_ON;
	}
	}
	return CLI_GO_ON;
}

/* The getopt tables of `cmd`: its options, then -H/--host, --context and -h/--help. */
static void build(const struct cli_command *cmd, struct option *longopts, char *shortopts)
{
	size_t k = 0, s = 0;
	shortopts[s++] = ':';
	for (size_t i = 0; i < cmd->n_opts; i++) {
		const struct cli_opt *o = &cmd->opts[i];
		int has_arg = o->kind == CLI_FLAG ? no_argument : required_argument;
		int val = o->letter ? o->letter : CLI_OPT_BASE + (int)i;
		longopts[k++] = (struct option){ o->name, has_arg, NULL, val };
		if (o->letter) {
			shortopts[s++] = (char)o->letter;
			if (has_arg == required_argument)
				shortopts[s++] = ':';
		}
	}
	longopts[k++] = (struct option){ "host", required_argument, NULL, 'H' };
	longopts[k++] = (struct option){ "context", required_argument, NULL, CLI_OPT_BASE + (int)cmd->n_opts };
	longopts[k++] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[k] = (struct option){ NULL, 0, NULL, 0 };
	memcpy(shortopts + s, "H:h", sizeof("H:h"));
}

static const struct cli_opt *find_opt(const struct cli_command *cmd, int c)
{
	for (size_t i = 0; i < cmd->n_opts; i++)
		if (cmd->opts[i].letter ? cmd->opts[i].letter == c : CLI_OPT_BASE + (int)i == c)
			return &cmd->opts[i];
	return NULL;
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv)
{
	struct option longopts[CLI_MAX_OPTS + 4];
	char shortopts[3 * CLI_MAX_OPTS + 8];
	if (cmd->n_opts > CLI_MAX_OPTS) {
		cli_error("%s: too many options in the table (%zu)", cmd->name, cmd->n_opts);
		return MAFSBX_EXIT_FAILURE;
	}
	build(cmd, longopts, shortopts);
	int c;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct cli_opt *o = find_opt(cmd, c);
		int r = CLI_GO_ON;
		if (o) {
			r = apply(cmd, o, optarg);
		} else if (c == 'H') {
			cmd->engine->host = optarg;
		} else if (c == CLI_OPT_BASE + (int)cmd->n_opts) {
			cmd->engine->context = optarg;
		} else if (c == 'h') {
			cmd->usage(stdout);
			r = MAFSBX_EXIT_OK;
		} else {
			r = cli_option_error(cmd->name, c, argv);
		}
		if (r != CLI_GO_ON)
			return r;
	}
	return CLI_GO_ON;
}

int cli_no_operands(const struct cli_command *cmd, int argc, char **argv)
{
	if (optind < argc)
		return cli_usage_error(cmd->name, "unexpected argument '%s'", argv[optind]);
	return CLI_GO_ON;
}

int cli_one_endpoint(const struct cli_command *cmd)
{
	if (cmd->engine->host && cmd->engine->context)
		return cli_usage_error(cmd->name, "give either -H/--host or --context, not both");
	return CLI_GO_ON;
}

int cli_parse_no_operands(const struct cli_command *cmd, int argc, char **argv)
{
	int r = cli_parse(cmd, argc, argv);
	if (r == CLI_GO_ON)
		r = cli_no_operands(cmd, argc, argv);
	if (r == CLI_GO_ON)
		r = cli_one_endpoint(cmd);
	return r;
}

int cli_print_json(const json_t *j, size_t flags)
{
	char *s = j ? json_dumps(j, flags) : NULL;
	if (!s)
		return -1;
	printf("%s\n", s);
	free(s);
	return 0;
}
