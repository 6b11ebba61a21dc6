/*
 * verbs.h: what the shell verbs (`mafsbx acquire`, `exec`, `dispose`,
 * mafsbx(1)) share: the engine, freezer and backend they open as a
 * mount with default options would, and the building of the very JSON
 * request a .ctl file takes from their command lines (so spec.c's parser
 * applies every rule, name and error message the ctl files have).
 */
#ifndef MAFSBX_TOOLS_VERBS_H
#define MAFSBX_TOOLS_VERBS_H

#include <jansson.h>

#include "error.h"
#include "sandbox.h"

/* What every verb opens: the engine, the freezer, the backend. */
struct verb_env {
	struct mafsbx_engine *engine;
	struct mafsbx_freezer *fz;
	struct mafsbx_backend *b;
	struct mafsbx_cluster *cluster;   /* --cluster swarm (cluster_cli.c), else NULL */
};

/* How a verb opens it (zero: the defaults). */
struct verb_open_opts {
	const char *host, *context;   /* -H URL, --context NAME (NULL: the environment, mafsbxfs(1) ENGINE ENDPOINT) */
	long pull_timeout_ms;         /* an image pull's bound; 0: the engine's default (600 s) */
	/* each line of an image pull's progress stream, as the engine sends it */
	void (*on_pull_line)(const json_t *line, void *ctx);
	void *pull_ctx;
};

/*
 * Bind the engine and build the backend as a mount with default options
 * would. MAFSBX_EXIT_OK, or the reason printed and `fail_code` returned (0:
 * MAFSBX_EXIT_ENGINE when the engine is unreachable, else MAFSBX_EXIT_FAILURE).
 */
int verb_open(const struct verb_open_opts *o, struct verb_env *v, int fail_code);
void verb_close(struct verb_env *v);

/* req[field] = value (a string); -1 (said) when it is not UTF-8. */
int verb_set_str(json_t *req, const char *field, const char *value);
/* Append value to the array req[field], made on first use. */
int verb_push_str(json_t *req, const char *field, const char *value);
/* "K=V" into the object req[field] (env, labels); -1 (a usage error of `cmd` said) otherwise. */
int verb_put_kv(const char *cmd, json_t *req, const char *field, const char *opt, const char *kv);

/*
 * The request a verb's command line makes, through its argument parser
 * (which returns 0, -1 after --help, or an exit code). NULL with *code set
 * when there is nothing to run: 0 after --help, else the failure's code.
 */
json_t *verb_request(const char *verb,
		     int (*args)(int argc, char **argv, json_t *req, const char **host, const char **context),
		     int argc, char **argv, const char **host, const char **context, int fail_code, int *code);

/* A refused request (spec.c's message) or a failed one, as "mafsbx: VERB: message". */
void verb_report(const char *verb, const struct mafsbx_error *err);

#endif
