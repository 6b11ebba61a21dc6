/*
 * cmd_reap.c: `mafsbx reap`, the cron helper (INTERFACE.md §5): parse the
 * command line, bind the engine, run src/reap.c, print one summary line or
 * one JSON object, and map the outcome to the exit codes 0 (done), 1 (some
 * removals failed), 2 (usage) and 3 (engine unreachable or inventory
 * failed: nothing deleted). Needs no mount.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "log.h"
#include "mafsbx.h"
#include "reap.h"

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
		"Exit status: 0 done, 1 some removals failed, 2 usage,\n"
		"3 engine unreachable or inventory failed (nothing deleted).\n");
}

static void print_json(const struct mafsbx_reap_result *res)
{
	json_t *o = mafsbx_reap_result_json(res);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (s)
		printf("%s\n", s);
	else
		cli_error("reap: out of memory");
	free(s);
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

int cmd_reap(int argc, char **argv)
{
	enum { OPT_OLDER = 256, OPT_SCOPE, OPT_DRY, OPT_JSON, OPT_CONTEXT };
	static const struct option longopts[] = {
		{ "older-than", required_argument, NULL, OPT_OLDER },
		{ "scope", required_argument, NULL, OPT_SCOPE },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "host", required_argument, NULL, 'H' },
		{ "context", required_argument, NULL, OPT_CONTEXT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *older = NULL, *scope = NULL, *host = NULL, *context = NULL;
	bool dry_run = false, json = false, verbose = false;
	int c;
	while ((c = getopt_long(argc, argv, ":H:vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_OLDER:
			older = optarg;
			break;
		case OPT_SCOPE:
			scope = optarg;
			break;
		case OPT_DRY:
			dry_run = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'H':
			host = optarg;
			break;
		case OPT_CONTEXT:
			context = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			reap_usage(stdout);
			return MAFSBX_EXIT_OK;
		default:
			return cli_option_error("reap", c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("reap", "unexpected argument '%s'", argv[optind]);
	if (!older)
		return cli_usage_error("reap", "--older-than DURATION is required (e.g. --older-than 24h)");
	if (host && context)
		return cli_usage_error("reap", "give either -H/--host or --context, not both");

	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int64_t seconds = 0;
	if (mafsbx_duration_parse(older, &seconds, &err) < 0)
		return cli_usage_error("reap", "--older-than: %s", err.message);
	if (verbose)
		mafsbx_log_set_level(MAFSBX_LOG_INFO);

	struct mafsbx_reap_result res;
	memset(&res, 0, sizeof(res));
	res.dry_run = dry_run;

	int code;
	struct mafsbx_engine *e = cli_open_engine(host, context, &code);
	if (!e) {
		/* cli_open_engine said why on stderr; a --json reader still gets its object. */
		if (json) {
			res.inventory_failed = true;
			struct mafsbx_reap_failure f = { .code = MAFSBX_REAP_UNREACHABLE };
			snprintf(f.message, sizeof(f.message), "the engine could not be reached; nothing was deleted");
			res.failures = &f;
			res.n_failures = 1;
			print_json(&res);
		}
		return code;
	}

	struct mafsbx_reap_options opts = { .older_than_s = seconds, .scope = scope, .dry_run = dry_run };
	int r = mafsbx_reap(e, &opts, &res, &err);
	mafsbx_engine_close(e);

	print_failures(&res);
	if (r < 0 && res.inventory_failed)
		cli_error("reap: nothing was deleted: %s", err.message);
	else if (r < 0)
		cli_error("reap: %s", err.message);

	if (json) {
		print_json(&res);
	} else {
		if (dry_run) {
			for (size_t i = 0; i < res.n_items; i++) {
				const struct mafsbx_reap_item *it = &res.items[i];
				if (it->outcome != MAFSBX_REAP_WOULD_REMOVE)
					continue;
				char created[32];
				mafsbx_time_format(it->created, created);
				printf("would remove %s %s %s (created %s)\n", mafsbx_reap_kind_name(it->kind), it->name, it->id,
				       created);
			}
		}
		printf("reap%s: disposed=%u proxies_removed=%u networks_removed=%u failures=%zu\n",
		       dry_run ? " (dry run)" : "", res.disposed, res.proxies_removed, res.networks_removed,
		       res.n_failures);
	}
	fflush(stdout);

	if (r < 0)
		code = res.inventory_failed ? MAFSBX_EXIT_ENGINE : MAFSBX_EXIT_FAILURE;
	else
		code = res.n_failures ? MAFSBX_EXIT_FAILURE : MAFSBX_EXIT_OK;
	mafsbx_reap_result_free(&res);
	return code;
}
