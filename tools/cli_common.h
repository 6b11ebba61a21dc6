/*
 * cli_common.h: what the engine-facing mafsbx subcommands share beyond
 * mafsbx.h: their command line read from one table of options (with -H/--host,
 * --context and -h/--help added to every table, parsed and reported the same
 * way), and JSON printed on stdout.
 *
 * A subcommand describes its options as a table of struct cli_opt pointing at
 * its own variables, calls cli_parse(), then checks what is left of argv
 * (cli_no_operands, cli_one_endpoint, or its own operand rules).
 */
#ifndef MAFSBX_TOOLS_CLI_COMMON_H
#define MAFSBX_TOOLS_CLI_COMMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Returned by the parsing helpers when the command goes on; anything else is the exit code to return. */
#define CLI_GO_ON (-1)

enum cli_opt_kind {
	CLI_FLAG,     /* no argument: *(bool *)dest = true */
	CLI_STRING,   /* *(const char **)dest = the argument */
	CLI_COUNT,    /* *(uint64_t *)dest = a whole number from 1 to `max`, else a usage error */
	CLI_CALL,     /* call(argument, dest): 0, or the exit code to stop with */
};

struct cli_opt {
	const char *name;   /* the long option, without "--" */
	int letter;         /* its short option, 0 for none */
	enum cli_opt_kind kind;
	void *dest;
	uint64_t max;                              /* CLI_COUNT only */
	int (*call)(const char *arg, void *dest);  /* CLI_CALL only */
};

/* -H/--host URL and --context NAME, as given (NULL when not). */
struct cli_engine_args {
	const char *host, *context;
};

struct cli_command {
	const char *name;                  /* the subcommand, for messages ("ls") */
	void (*usage)(FILE *out);          /* its --help */
	const struct cli_opt *opts;
	size_t n_opts;                     /* at most CLI_MAX_OPTS */
	struct cli_engine_args *engine;    /* where -H and --context go */
};

#define CLI_MAX_OPTS 16

/*
 * Parse the options of argv (getopt_long from optind as the caller left it;
 * options and operands may mix, operands end up from optind on). --help
 * prints the usage on stdout and returns MAFSBX_EXIT_OK; a bad option is a
 * usage error (cli_option_error). CLI_GO_ON when all options were read.
 */
int cli_parse(const struct cli_command *cmd, int argc, char **argv);

/* CLI_GO_ON when no operand is left, else the usage error "unexpected argument 'X'". */
int cli_no_operands(const struct cli_command *cmd, int argc, char **argv);

/* CLI_GO_ON unless both -H and --context were given (a usage error). */
int cli_one_endpoint(const struct cli_command *cmd);

/* cli_parse, then cli_no_operands, then cli_one_endpoint: the first that stops. */
int cli_parse_no_operands(const struct cli_command *cmd, int argc, char **argv);

/* Print `j` as one line on stdout (json_dumps `flags`). 0, or -1 without memory (nothing printed). */
int cli_print_json(const json_t *j, size_t flags);

#endif
