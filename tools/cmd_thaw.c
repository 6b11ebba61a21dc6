/*
 * cmd_thaw.c: `mafsbx thaw` (mafsbx(1) THAW): lift every freeze whose
 * holder is gone, host-wide, and collect the freeze lock files of
 * containers that no longer exist. For cron after a crash; needs no mount.
 *
 * A freeze is recorded in a runtime directory (freeze.h): a marker "frozen
 * pid N" in <ID>.gate, and every live holder holding <ID>.hold shared. A
 * freeze whose marker is set while nobody holds the hold file was left by a
 * dead process: mafsbx_freeze_recover() unpauses it, under the same locks a
 * live mount takes, so a live freeze is never touched. Only containers the
 * engine reports paused and that have a gate file in a runtime directory are
 * considered (no lock files are made for the others); a container paused by
 * someone else (no marker) is left paused and counted.
 *
 * Runtime directories: each --rundir given; otherwise $MAFSBX_RUNDIR if set,
 * the caller's default (freeze.h), and, as root, every per-user default on
 * the host too (/run/mafsbxfs, /run/user/UID/mafsbxfs, /tmp/mafsbxfs-UID).
 */
#include <errno.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cli_common.h"
#include "freeze.h"
#include "log.h"
#include "mafsbx.h"

#define THAW_MAX_DIRS 64
#define THAW_RECOVER_MS 10000

static void thaw_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " thaw [--rundir DIR]... [--json] [-H URL | --context NAME]\n"
		"\n"
		"Lift every freeze whose holder is gone: a container a mafsbx process paused\n"
		"for a file call and could not unpause (it died, or the engine did not\n"
		"answer). Host-wide: every runtime directory is searched. A live freeze, and a\n"
		"container paused by someone else, are left alone. Also removes the freeze lock\n"
		"files of containers that no longer exist. Safe to run from cron.\n"
		"\n"
		"Options:\n"
		"      --rundir DIR     search this runtime directory (repeatable); default:\n"
		"                       $MAFSBX_RUNDIR, the caller's default and, as root,\n"
		"                       every user's\n"
		"      --json           print one JSON object\n" CLI_ENGINE_OPTIONS_HELP
		"  -v, --verbose        log each step\n"
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: 0 done, 1 some freeze could not be lifted, 2 usage, 3 engine\n"
		"unreachable or the listing failed.\n");
}

struct dirs {
	char *v[THAW_MAX_DIRS];
	size_t n;
};

static void dirs_add(struct dirs *d, const char *dir)
{
	struct stat st;
	if (!dir || dir[0] != '/' || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || d->n == THAW_MAX_DIRS)
		return;
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i], dir) == 0)
			return;
	char *c = strdup(dir);
	if (c)
		d->v[d->n++] = c;
}

/* Every directory matching `pattern`; with `uid_after`, only those whose name past that prefix is a uid. */
static void dirs_glob(struct dirs *d, const char *pattern, const char *uid_after)
{
	glob_t g;
	if (glob(pattern, GLOB_NOSORT | GLOB_ONLYDIR, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *p = g.gl_pathv[i];
		if (uid_after) {
			size_t n = strlen(uid_after);
			if (strncmp(p, uid_after, n) != 0 || !p[n] || strspn(p + n, "0123456789") != strlen(p + n))
				continue;
		}
		dirs_add(d, p);
	}
	globfree(&g);
}

static bool has_gate(const char *rundir, const char *id)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s.gate", rundir, id);
	return access(p, F_OK) == 0;
}

struct tally {
	unsigned paused, thawed, foreign, collected, failed;
};

/* One runtime directory: lift its dead freezes among `paused`, collect its lock files of gone IDs. */
static void thaw_dir(struct mafsbx_engine *e, const char *dir, json_t *paused, const char *const *live,
		     size_t n_live, bool *thawed_ids, struct tally *t, json_t *fails)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	struct mafsbx_freezer *f = mafsbx_freezer_new(e, dir, &err);
	if (!f) {
		cli_error("%s: %s", dir, err.message);
		t->failed++;
		json_array_append_new(fails, json_pack("{s:s, s:s}", "rundir", dir, "message", err.message));
		return;
	}
	size_t i;
	json_t *c;
	json_array_foreach(paused, i, c) {
		const char *id = json_string_value(json_object_get(c, "Id"));
		if (!id || thawed_ids[i] || !has_gate(dir, id))
			continue;
		bool unpaused = false;
		mafsbx_error_clear(&err);
		if (mafsbx_freeze_recover(f, id, false, &unpaused, mafsbx_now_ms() + THAW_RECOVER_MS, &err) < 0) {
			cli_error("%.12s: cannot lift the freeze left in %s: %s", id, dir, err.message);
			t->failed++;
			json_array_append_new(fails, json_pack("{s:s, s:s, s:s}", "id", id, "rundir", dir, "message",
							       err.message));
		} else if (unpaused) {
			thawed_ids[i] = true;
			t->thawed++;
			log_info("thawed %.12s (a freeze left in %s)", id, dir);
		}
	}
	unsigned collected = 0;
	mafsbx_error_clear(&err);
	if (mafsbx_freezer_collect(f, live, n_live, &collected, &err) < 0)
		log_warn("%s: %s", dir, err.message);
	t->collected += collected;
	mafsbx_freezer_free(f);
}

/* --rundir DIR: an absolute path, searched instead of the defaults. */
struct rundir_arg {
	struct dirs *dirs;
	bool given;
};

static int add_rundir(const char *arg, void *dest)
{
	struct rundir_arg *a = dest;
	if (arg[0] != '/')
		return cli_usage_error("thaw", "--rundir: '%s' is not an absolute path", arg);
	a->given = true;
	dirs_add(a->dirs, arg);
	return 0;
}

/* No --rundir: $MAFSBX_RUNDIR, the caller's default and, as root, every user's. */
static void default_dirs(struct mafsbx_engine *e, struct dirs *dirs)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	const char *env = getenv(MAFSBX_RUNDIR_ENV);
	if (env && *env)
		dirs_add(dirs, env);
	/* the caller's default: what a freezer opened with no directory uses */
	unsetenv(MAFSBX_RUNDIR_ENV);
	struct mafsbx_freezer *f = mafsbx_freezer_new(e, NULL, &err);
	if (f) {
		dirs_add(dirs, mafsbx_freezer_rundir(f));
		mafsbx_freezer_free(f);
	}
	if (geteuid() == 0) {
		dirs_add(dirs, MAFSBX_RUNDIR_DEFAULT);
		dirs_glob(dirs, "/run/user/*/mafsbxfs", NULL);
		/* /tmp/mafsbxfs-UID (src/base/rundir.c), not another /tmp/mafsbxfs-NAME (the mount tests' own
		 * directories, maybe another user's: a freezer refuses a directory its caller does not own) */
		dirs_glob(dirs, "/tmp/mafsbxfs-[0-9]*", "/tmp/mafsbxfs-");
	}
}

static void thaw_report(const struct tally *t, size_t n_dirs, json_t *fails, bool json)
{
	if (json) {
		json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:O}", "thawed", (json_int_t)t->thawed, "left_paused",
				      (json_int_t)t->foreign, "lock_files_collected", (json_int_t)t->collected,
				      "runtime_dirs", (json_int_t)n_dirs, "failures", fails);
		cli_print_json(o, 0);
		json_decref(o);
	} else {
		printf("thawed %u, left paused %u (live freezes or paused by someone else), collected the lock files "
		       "of %u removed containers, in %zu runtime director%s%s\n",
		       t->thawed, t->foreign, t->collected, n_dirs, n_dirs == 1 ? "y" : "ies",
		       t->failed ? "; some freezes could not be lifted" : "");
	}
}

/* Say so, and the exit code of running out of memory. */
static int thaw_oom(void)
{
	cli_error("out of memory");
	return MAFSBX_EXIT_FAILURE;
}

/* List every container once, then lift the dead freezes of the paused ones in each directory. An exit code. */
static int thaw_all(struct mafsbx_engine *e, const struct dirs *dirs, bool json)
{
	__do_json json_t *all = NULL;
	__do_json json_t *paused = json_array();
	__do_json json_t *fails = json_array();
	__do_free const char **live = NULL;
	__do_free bool *thawed_ids = NULL;
	struct tally t = { 0 };
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int code = MAFSBX_EXIT_OK;
	if (mafsbx_container_list(e, NULL, true, &all, &err) < 0) {
		cli_error("cannot list the containers, so nothing was thawed: %s", err.message);
		return MAFSBX_EXIT_ENGINE;
	}
	size_t n = json_array_size(all);
	live = calloc(n ? n : 1, sizeof(*live));
	if (!live || !paused || !fails)
		return thaw_oom();
	for (size_t i = 0; i < n; i++) {
		json_t *x = json_array_get(all, i);
		live[i] = json_string_value(json_object_get(x, "Id"));
		const char *state = json_string_value(json_object_get(x, "State"));
		if (state && strcmp(state, "paused") == 0 && json_array_append(paused, x) < 0)
			return thaw_oom();   /* a paused container left out would be counted as nobody's */
	}
	t.paused = (unsigned)json_array_size(paused);
	thawed_ids = calloc(t.paused ? t.paused : 1, sizeof(*thawed_ids));
	if (!thawed_ids)
		return thaw_oom();
	for (size_t i = 0; i < dirs->n; i++)
		thaw_dir(e, dirs->v[i], paused, live, n, thawed_ids, &t, fails);
	t.foreign = t.paused - t.thawed;
	if (t.failed)
		code = MAFSBX_EXIT_FAILURE;
	thaw_report(&t, dirs->n, fails, json);
	return code;
}

int cmd_thaw(int argc, char **argv)
{
	struct dirs dirs = { .n = 0 };
	struct rundir_arg rundir = { &dirs, false };
	bool json = false, verbose = false;
	struct cli_engine_args ea = { NULL, NULL };
	const struct cli_opt opts[] = {
		{ "rundir", 0, CLI_CALL, &rundir, 0, add_rundir },
		{ "json", 0, CLI_FLAG, &json, 0, NULL },
		{ "verbose", 'v', CLI_FLAG, &verbose, 0, NULL },
	};
	const struct cli_command cmd = { "thaw", thaw_usage, opts, MAFSBX_ARRAY_SIZE(opts), &ea };
	int code = cli_parse_no_operands(&cmd, argc, argv);
	if (verbose)
		mafsbx_log_set_level(MAFSBX_LOG_INFO);
	struct mafsbx_engine *e = NULL;
	if (code == CLI_GO_ON)
		e = cli_open_engine(ea.host, ea.context, &code);
	if (e) {
		if (!rundir.given)
			default_dirs(e, &dirs);
		code = thaw_all(e, &dirs, json);
		mafsbx_engine_close(e);
	}
	for (size_t i = 0; i < dirs.n; i++)
		free(dirs.v[i]);
	return code;
}
