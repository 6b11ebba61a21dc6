/*
 * cmd_fingerprint.c: `mafsbx fingerprint`, the nothing-left-behind proof from
 * a shell (mafsbx(1)): take a snapshot of a sandbox (fingerprint.h),
 * save it, and compare it with a later one:
 *
 *   mafsbx fingerprint NAME -o before.json
 *   ... the call ...
 *   mafsbx fingerprint --diff before.json NAME     # exit 0: nothing changed
 *
 * Exit status: 0 nothing changed (or a snapshot taken), 1 something changed
 * (diff), 125 usage (as docker), 3 engine unreachable, 4 the measurement was refused or
 * failed (a refusal is never a "no change": a proof that could not be taken
 * is not a proof).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cli_common.h"
#include "fingerprint.h"
#include "mafsbx.h"
#include "sandbox.h"
#include "verbs.h"

#define FP_EXIT_CHANGED 1
#define FP_EXIT_REFUSED 4

static void fp_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " fingerprint NAME [--json] [-o FILE] [LIMITS] [-H URL | --context NAME]\n"
		"       " PROGRAM " fingerprint --diff BEFORE.json NAME [--strict] [-o AFTER.json] [LIMITS]\n"
		"       " PROGRAM " fingerprint --diff BEFORE.json AFTER.json [--strict]\n"
		"\n"
		"Measure a sandbox from the host (no command runs in it): every entry of\n"
		"every mount except /proc and /sys (type, mode, owner, size, times, link\n"
		"text, SHA-256 of file contents) and every process of its cgroup (PID,\n"
		"start time, command line). With --diff, compare with a saved snapshot and\n"
		"print one line per added (+), removed (-) or changed (~) mount, entry and\n"
		"process. An argument holding '/' or ending in .json is a saved snapshot;\n"
		"anything else names a sandbox. With --cluster swarm (before the command) and\n"
		"-H a swarm manager, NAME is measured on its node, which must be this host.\n"
		"\n"
		"Options:\n"
		"      --json               print the snapshot as JSON on stdout\n"
		"  -o, --output FILE        write the snapshot (JSON) to FILE\n"
		"      --diff BEFORE.json   compare BEFORE.json with NAME now (or AFTER.json)\n"
		"      --strict             also compare directory times and sizes and the ctime\n"
		"                           of /etc/hostname, /etc/hosts and /etc/resolv.conf\n"
		"      --max-entries N      refuse past N entries and processes (default 250000)\n"
		"      --max-hash-bytes N   refuse past N bytes of file contents (default 1073741824)\n"
		"      --max-ms N           refuse past N milliseconds (default 30000)\n"
		"      --max-depth N        refuse directories nested deeper than N (default 256)\n" CLI_ENGINE_OPTIONS_HELP
		"  -h, --help               show this help\n"
		"\n"
		"Exit status: 0 nothing changed (or snapshot taken), 1 something changed,\n"
		"125 usage, 3 engine unreachable, 4 the measurement was refused or failed.\n");
}

static bool is_snapshot_arg(const char *a)
{
	size_t n = strlen(a);
	return strchr(a, '/') || (n > 5 && !strcmp(a + n - 5, ".json"));
}

static int load(const char *path, struct mafsbx_fp **out)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	if (!j) {
		cli_error("fingerprint: %s: %s (line %d)", path, je.text, je.line);
		return FP_EXIT_REFUSED;
	}
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_fp_from_json(j, out, &err);
	json_decref(j);
	if (r < 0) {
		cli_error("fingerprint: %s: %s", path, err.message);
		return FP_EXIT_REFUSED;
	}
	return 0;
}

static int save(const struct mafsbx_fp *fp, const char *path)
{
	json_t *j = mafsbx_fp_to_json(fp);
	if (!j) {
		cli_error("fingerprint: out of memory");
		return FP_EXIT_REFUSED;
	}
	int r;
	if (path) {
		/* written whole to a temporary name, then renamed: a failed run leaves no half snapshot;
		 * mode 0600, as a snapshot holds the sandbox's command lines (arguments can be secrets) */
		char *tmp = NULL;
		if (asprintf(&tmp, "%s.tmp", path) < 0) {
			json_decref(j);
			return FP_EXIT_REFUSED;
		}
		unlink(tmp);   /* a stale one could carry a wider mode */
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		r = fd < 0 ? -1 : json_dumpfd(j, fd, JSON_COMPACT);
		int e = errno;
		if (fd >= 0 && close(fd) < 0 && r == 0)
			r = -1, e = errno;
		if (r == 0 && rename(tmp, path) < 0)
			r = -1, e = errno;
		if (r < 0) {
			cli_error("fingerprint: cannot write %s: %s", path, strerror(e));
			if (fd >= 0)
				unlink(tmp);
		}
		free(tmp);
	} else {
		r = json_dumpf(j, stdout, JSON_INDENT(1));
		fputc('\n', stdout);
	}
	json_decref(j);
	return r < 0 ? FP_EXIT_REFUSED : 0;
}

/*
 * Over a swarm (--cluster swarm): the sandbox's task container, measured on
 * its node when that node is this host (its engine reached through a unix
 * socket here, as the mount's local plane decides; the pin's proofs then
 * check that its processes are this host's). A node elsewhere is refused:
 * the measurement reads the container through this host's /proc.
 */
static int take_cluster(const char *name, const struct mafsbx_fp_limits *lim, const char *host, const char *context,
			struct mafsbx_fp **out)
{
	struct verb_open_opts vo = { .host = host, .context = context };
	struct verb_env v;
	int code = verb_open(&vo, &v, 0);
	if (code != MAFSBX_EXIT_OK)
		return code;
	struct mafsbx_serving sv;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_backend_serving(v.b, name, &sv, &err);
	if (r == 0 && !sv.local) {
		cli_error("fingerprint of %s: refused: it runs on node %s (%.12s), whose engine is at %s, not on this "
			  "host: a fingerprint reads the sandbox through this host's /proc; take it on that node",
			  name, sv.hostname, sv.node_id, mafsbx_engine_endpoint(sv.engine)->url);
		code = FP_EXIT_REFUSED;
	} else if (r == 0) {
		r = mafsbx_fingerprint_take(sv.engine, sv.container, lim, out, &err);
	}
	if (r < 0) {
		cli_error("fingerprint of %s: %s", name, err.message);
		code = err.kind == MAFSBX_EK_UNREACHABLE ? MAFSBX_EXIT_ENGINE : FP_EXIT_REFUSED;
	}
	verb_close(&v);
	return code;
}

static int take(const char *name, const struct mafsbx_fp_limits *lim, const char *host, const char *context,
		struct mafsbx_fp **out)
{
	if (cli_clustered())
		return take_cluster(name, lim, host, context, out);
	int code;
	struct mafsbx_engine *e = cli_open_engine(host, context, &code);
	if (!e)
		return code;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_fingerprint_take(e, name, lim, out, &err);
	mafsbx_engine_close(e);
	if (r < 0) {
		cli_error("fingerprint of %s: %s", name, err.message);
		return err.kind == MAFSBX_EK_UNREACHABLE ? MAFSBX_EXIT_ENGINE : FP_EXIT_REFUSED;
	}
	return 0;
}

/* NAME: take a snapshot; save it (-o), print it (--json) or say what it holds. */
static int fp_snapshot(const char *target, const struct mafsbx_fp_limits *lim, const struct cli_engine_args *ea,
		       const char *output, bool json, bool strict)
{
	if (is_snapshot_arg(target))
		return cli_usage_error("fingerprint", "'%s' looks like a file; name a sandbox (or use --diff)", target);
	if (strict)
		return cli_usage_error("fingerprint", "--strict goes with --diff");
	struct mafsbx_fp *fp = NULL;
	int code = take(target, lim, ea->host, ea->context, &fp);
	if (code)
		return code;
	if (output)
		code = save(fp, output);
	if (!code && json)
		code = save(fp, NULL);
	if (!code && !json)
		printf("%s %.12s: %zu entries in %zu mounts, %zu processes, %" PRIu64 " bytes hashed, %lld ms\n",
		       fp->name ? fp->name : target, fp->id, fp->n_entries, fp->n_mounts, fp->n_procs, fp->bytes_hashed,
		       fp->duration_ms);
	mafsbx_fp_free(fp);
	return code;
}

/* --diff BEFORE.json NAME|AFTER.json: the changes, one line each; exit 1 when there are any. */
static int fp_diff(const char *before_path, const char *target, const struct mafsbx_fp_limits *lim,
		   const struct cli_engine_args *ea, const char *output, bool json, bool strict)
{
	if (json)
		return cli_usage_error("fingerprint", "--json does not go with --diff (use -o FILE to keep the snapshot)");
	struct mafsbx_fp *before = NULL, *after = NULL;
	int code = load(before_path, &before);
	if (code)
		return code;
	if (is_snapshot_arg(target)) {
		if (output) {
			mafsbx_fp_free(before);
			return cli_usage_error("fingerprint", "-o saves a snapshot taken now; %s is already one", target);
		}
		code = load(target, &after);
	} else {
		code = take(target, lim, ea->host, ea->context, &after);
		if (!code && output)
			code = save(after, output);
	}
	if (!code) {
		if (before->id[0] && after->id[0] && strcmp(before->id, after->id))
			cli_error("fingerprint: note: the snapshots are of different containers (%.12s, %.12s)", before->id,
				  after->id);
		size_t n = mafsbx_fp_diff(before, after, strict ? MAFSBX_FP_STRICT : 0, stdout);
		fflush(stdout);
		code = n ? FP_EXIT_CHANGED : MAFSBX_EXIT_OK;
	}
	mafsbx_fp_free(before);
	mafsbx_fp_free(after);
	return code;
}

int cmd_fingerprint(int argc, char **argv)
{
	const char *output = NULL, *before_path = NULL;
	bool json = false, strict = false;
	struct cli_engine_args ea = { NULL, NULL };
	struct mafsbx_fp_limits lim;
	mafsbx_fp_limits_default(&lim);
	uint64_t max_entries = lim.max_entries, max_hash = lim.max_hash_bytes, max_ms = (uint64_t)lim.max_ms,
		 max_depth = lim.max_depth;
	const struct cli_opt opts[] = {
		{ "json", 0, CLI_FLAG, &json, 0, NULL },
		{ "output", 'o', CLI_STRING, &output, 0, NULL },
		{ "diff", 0, CLI_STRING, &before_path, 0, NULL },
		{ "strict", 0, CLI_FLAG, &strict, 0, NULL },
		{ "max-entries", 0, CLI_COUNT, &max_entries, UINT64_MAX / 2, NULL },
		{ "max-hash-bytes", 0, CLI_COUNT, &max_hash, UINT64_MAX / 2, NULL },
		{ "max-ms", 0, CLI_COUNT, &max_ms, 24ull * 3600 * 1000, NULL },
		{ "max-depth", 0, CLI_COUNT, &max_depth, 4096, NULL },
	};
	const struct cli_command cmd = { "fingerprint", fp_usage, opts, MAFSBX_ARRAY_SIZE(opts), &ea };
	int code = cli_parse(&cmd, argc, argv);
	if (code != CLI_GO_ON)
		return code;
	lim.max_entries = max_entries;
	lim.max_hash_bytes = max_hash;
	lim.max_ms = (long)max_ms;
	lim.max_depth = (unsigned)max_depth;
	if (optind + 1 != argc)
		return cli_usage_error("fingerprint", optind >= argc ? "no sandbox named" : "one sandbox only");
	const char *target = argv[optind];
	if (ea.host && ea.context)
		return cli_usage_error("fingerprint", "-H and --context exclude each other");
	if (!before_path)
		return fp_snapshot(target, &lim, &ea, output, json, strict);
	return fp_diff(before_path, target, &lim, &ea, output, json, strict);
}
