/*
 * mafsbx.h: what the `mafsbx` subcommands share: their entry points (the
 * table is in mafsbx.c), exit codes, and the helpers every subcommand uses
 * to report errors and reach the engine the same way.
 *
 * A subcommand is `int cmd_NAME(int argc, char **argv)` in tools/cmd_NAME.c;
 * argv[0] is the subcommand's name, options are parsed with getopt_long
 * from optind = 0, `--help` prints its usage to stdout and returns 0, and it
 * returns one of the exit codes below.
 */
#ifndef MAFSBX_TOOLS_MAFSBX_H
#define MAFSBX_TOOLS_MAFSBX_H

#include <stdio.h>

#include "endpoint.h"
#include "engine.h"

#define PROGRAM "mafsbx"

enum {
	MAFSBX_EXIT_OK = 0,
	MAFSBX_EXIT_FAILURE = 1,  /* the work failed (or, for reap, some removals failed) */
	/* A bad command line or a refused request, on every verb: docker's 125
	 * ("the docker command itself failed"), never a status a guest's
	 * command or a cron check could give for something else. */
	MAFSBX_EXIT_USAGE = 125,
	MAFSBX_EXIT_ENGINE = 3,   /* engine unreachable / endpoint refused */
};

/* Subcommands. Keep in step with the table in mafsbx.c. */
int cmd_acquire(int argc, char **argv);   /* cmd_sandbox.c */
int cmd_exec(int argc, char **argv);      /* cmd_exec.c */
int cmd_dispose(int argc, char **argv);   /* cmd_sandbox.c */
int cmd_mkimage(int argc, char **argv);
int cmd_reap(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_fingerprint(int argc, char **argv);
int cmd_thaw(int argc, char **argv);

/* "mafsbx: message" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "mafsbx: message" plus a pointer to `mafsbx CMD --help` on stderr; returns MAFSBX_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Report getopt_long's '?' or ':' (the optstring must start with ':') as a
 * usage error naming the option; returns MAFSBX_EXIT_USAGE.
 */
int cli_option_error(const char *cmd, int c, char **argv);

/*
 * Resolve the endpoint (-H URL / --context NAME, else the environment and
 * the Docker config, mafsbxfs(1) ENGINE ENDPOINT) without contacting it. 0, or prints
 * the reason and returns MAFSBX_EXIT_ENGINE.
 */
int cli_resolve(const char *host, const char *context, struct mafsbx_endpoint *ep);

/* Bind to a resolved endpoint and ping it. NULL (reason printed, *exit_code = MAFSBX_EXIT_ENGINE) on failure. */
struct mafsbx_engine *cli_connect(const struct mafsbx_endpoint *ep, int *exit_code);
/* The same with the engine's timeouts (NULL: the defaults). */
struct mafsbx_engine *cli_connect_timeouts(const struct mafsbx_endpoint *ep, const struct mafsbx_engine_timeouts *to,
					   int *exit_code);

/* cli_resolve + cli_connect. */
struct mafsbx_engine *cli_open_engine(const char *host, const char *context, int *exit_code);

/* The usage lines for the engine options, shared by every subcommand's --help. */
#define CLI_ENGINE_OPTIONS_HELP \
	"  -H, --host URL       engine endpoint (unix://, tcp:// or ssh://)\n" \
	"      --context NAME   Docker context to use\n"

/* ---- cluster_cli.c: the verbs over a swarm (mafsbxfs(1) CLUSTER) ------------------ */
#define MAFSBX_CLUSTER_ENV "MAFSBX_CLUSTER"
struct mafsbx_backend;
struct mafsbx_cluster;
/* `mafsbx --cluster swarm` or MAFSBX_CLUSTER=swarm: -H names a swarm manager. */
bool cli_clustered(void);
/* MAFSBX_CLUSTER set to something else: a usage error (its exit code), else MAFSBX_EXIT_OK. */
int cli_cluster_check_env(void);
/* The cluster over manager `e`, set on `b`; NULL with the reason said and *code set. */
struct mafsbx_cluster *cli_cluster_attach(struct mafsbx_engine *e, struct mafsbx_backend *b, int *code);
/* The manager's sandbox services (ONE list call) handed to `each` shaped as container list entries. */
int cli_cluster_list_each(struct mafsbx_engine *e, const json_t *filters, mafsbx_list_each_fn each, void *ctx,
			  struct mafsbx_error *err);
/* `mafsbx reap` over a swarm: an exit code. */
int cli_cluster_reap(struct mafsbx_backend *b, const char *scope, int64_t older_than_s, bool dry_run, bool json);

#endif
