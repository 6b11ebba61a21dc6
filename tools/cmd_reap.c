/*
 * cmd_reap.c: `mafsbx reap`, the cron helper (mafsbx(1) REAP): parse the
 * command line, bind the engine, run src/admin/reap.c, print one summary line or
 * one JSON object, and map the outcome to the exit codes 0 (done), 1 (some
 * removals failed), 125 (usage, as docker) and 3 (engine unreachable or inventory
 * failed: nothing deleted). Needs no mount.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli_common.h"
#include "duration.h"
#include "log.h"
#include "mafsbx.h"
#include "reap.h"
#include "verbs.h"

static void reap_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " reap --older-than DURATION [--scope SCOPE] [--dry-run] [--json]\n"
		"                   [-H URL | --context NAME]\n"
		"\n"
		"Remove the maf-sandbox Docker sandboxes created more than DURATION ago,\n"
		"with their egress proxies and networks (the upstream reap algorithm:\n"
		"inventory by name prefix and identity labels, strict cutoff, removal by\n"
		"ID, proxies then workloads then networks, networks never forced; if any\n"
		"read fails, nothing is deleted). Works without a mount.\n"
		"\n"
		"Options:\n"
		"      --older-than D   required; D is e.g. 90s, 30m, 24h, 7d or 1h30m (> 0)\n"
		"      --scope SCOPE    only sandboxes of this scope\n"
		"      --dry-run        report what would be removed; remove nothing\n"
		"      --json           print one JSON object instead of the summary line\n"
		"  -v, --verbose        log every removal on stderr\n" CLI_ENGINE_OPTIONS_HELP
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: 0 done, 1 some removals failed, 125 usage,\n"
		"3 engine unreachable or inventory failed (nothing deleted).\n");
}

static void print_json(const struct mafsbx_reap_result *res)
{
	json_t *o = mafsbx_reap_result_json(res);
	if (cli_print_json(o, JSON_COMPACT) < 0)
		cli_error("reap: out of memory");
	json_decref(o);
}

static void print_failures(const struct mafsbx_reap_result *res)
{
	for (size_t i = 0; i < res->n_failures; i++) {
		const struct mafsbx_reap_failure *f = &res->failures[i];
		if (f->has_kind)
			cli_error("reap: %s: %s %s (%.12s): %s", mafsbx_reap_code_name(f->code),
				  mafsbx_reap_kind_name(f->kind), f->name, f->id, f->message);
		else
			cli_error("reap: %s: %s", mafsbx_reap_code_name(f->code), f->message);
	}
}

/* The summary line, after one line per resource a dry run would remove. */
static void print_text(const struct mafsbx_reap_result *res, bool dry_run)
{
	for (size_t i = 0; dry_run && i < res->n_items; i++) {
		const struct mafsbx_reap_item *it = &res->items[i];
		if (it->outcome != MAFSBX_REAP_WOULD_REMOVE)
			continue;
		char created[32];
		mafsbx_time_format(it->created, created);
		printf("would remove %s %s %s (created %s)\n", mafsbx_reap_kind_name(it->kind), it->name, it->id, created);
	}
	printf("reap%s: disposed=%u proxies_removed=%u networks_removed=%u failures=%zu\n",
	       dry_run ? " (dry run)" : "", res->disposed, res->proxies_removed, res->networks_removed,
	       res->n_failures);
}

/* cli_open_engine said why on stderr; a --json reader still gets its object. */
static void print_unreachable_json(bool dry_run)
{
	struct mafsbx_reap_failure f = { .code = MAFSBX_REAP_UNREACHABLE };
	snprintf(f.message, sizeof(f.message), "the engine could not be reached; nothing was deleted");
	struct mafsbx_reap_result res = { .dry_run = dry_run, .inventory_failed = true, .failures = &f, .n_failures = 1 };
	print_json(&res);
}

/* Run the reap, report it, map it to the exit code. */
static int reap_run(struct mafsbx_engine *e, const struct mafsbx_reap_options *opts, bool json)
{
	struct mafsbx_reap_result res;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_reap(e, opts, &res, &err);
	print_failures(&res);
	if (r < 0 && res.inventory_failed)
		cli_error("reap: nothing was deleted: %s", err.message);
	else if (r < 0)
		cli_error("reap: %s", err.message);
	if (json)
		print_json(&res);
	else
		print_text(&res, opts->dry_run);
	fflush(stdout);
	int code;
	if (r < 0)
		code = res.inventory_failed ? MAFSBX_EXIT_ENGINE : MAFSBX_EXIT_FAILURE;
	else
		code = res.n_failures ? MAFSBX_EXIT_FAILURE : MAFSBX_EXIT_OK;
	mafsbx_reap_result_free(&res);
	return code;
}

/* Over a swarm (cluster_cli.c): the manager's sandbox services older than the cutoff, each disposed. */
static int reap_cluster(const struct cli_engine_args *ea, const char *scope, int64_t seconds, bool dry_run, bool json)
{
	struct verb_open_opts vo = { .host = ea->host, .context = ea->context };
	struct verb_env v;
	int code = verb_open(&vo, &v, 0);
	if (code != MAFSBX_EXIT_OK) {
		if (json)
			print_unreachable_json(dry_run);
		return code;
	}
	code = cli_cluster_reap(v.b, scope, seconds, dry_run, json);
	verb_close(&v);
	return code;
}

int cmd_reap(int argc, char **argv)
{
	const char *older = NULL, *scope = NULL;
	bool dry_run = false, json = false, verbose = false;
	struct cli_engine_args ea = { NULL, NULL };
	const struct cli_opt opts[] = {
		{ "older-than", 0, CLI_STRING, &older, 0, NULL },
		{ "scope", 0, CLI_STRING, &scope, 0, NULL },
		{ "dry-run", 0, CLI_FLAG, &dry_run, 0, NULL },
		{ "json", 0, CLI_FLAG, &json, 0, NULL },
		{ "verbose", 'v', CLI_FLAG, &verbose, 0, NULL },
	};
	const struct cli_command cmd = { "reap", reap_usage, opts, MAFSBX_ARRAY_SIZE(opts), &ea };
	int code = cli_parse(&cmd, argc, argv);
	if (code == CLI_GO_ON)
		code = cli_no_operands(&cmd, argc, argv);
	if (code == CLI_GO_ON && !older)
		code = cli_usage_error("reap", "--older-than DURATION is required (e.g. --older-than 24h)");
	if (code == CLI_GO_ON)
		code = cli_one_endpoint(&cmd);
	if (code != CLI_GO_ON)
		return code;

	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int64_t seconds = 0;
	if (mafsbx_duration_parse(older, &seconds, &err) < 0)
		return cli_usage_error("reap", "--older-than: %s", err.message);
	if (verbose)
		mafsbx_log_set_level(MAFSBX_LOG_INFO);

	if (cli_clustered())
		return reap_cluster(&ea, scope, seconds, dry_run, json);
	struct mafsbx_engine *e = cli_open_engine(ea.host, ea.context, &code);
	if (!e) {
		if (json)
			print_unreachable_json(dry_run);
		return code;
	}
	struct mafsbx_reap_options ro = { .older_than_s = seconds, .scope = scope, .dry_run = dry_run };
	code = reap_run(e, &ro, json);
	mafsbx_engine_close(e);
	return code;
}
