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
 * Each is opened O_NOFOLLOW | O_DIRECTORY and checked on that descriptor:
 * owned by the uid its name says (/tmp/mafsbxfs-UID and /run/user/UID/...
 * by UID, any other by the caller), writable by nobody else; then worked in
 * through that descriptor (mafsbx_freezer_new_in), so a user cannot swap
 * its directory for a link to somewhere else while root works in it. A
 * directory that fails is reported on stderr and skipped: a user's own
 * directory gone wrong must not fail root's cron job. One line per
 * directory says what was done; the exit status is 1 only when a freeze
 * that was found could not be lifted. Lock files of removed containers are
 * collected in the caller's own directories only (see thaw_dir).
 *
 * Over a swarm (--cluster swarm) the same is done on each node's engine, in
 * each directory's swarm-node-ID subdirectory where a mount keeps that
 * node's freezes (thaw_cluster.c).
 */
#include <errno.h>
#include <fcntl.h>
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
#include "thaw.h"

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
		"files of containers that no longer exist (in the caller's own directories).\n"
		"Each directory must be owned by the uid its name says and writable by no one\n"
		"else; one that is not is refused on stderr and skipped. One line per\n"
		"directory says what was done. Safe to run from cron.\n"
		"With --cluster swarm (before the command) and -H a swarm manager: the same on\n"
		"every ready node's engine, in each directory's swarm-node-ID subdirectory;\n"
		"one line per node and per sandbox lifted, a node not reached named on stderr.\n"
		"\n"
		"Options:\n"
		"      --rundir DIR     search this runtime directory (repeatable); default:\n"
		"                       $MAFSBX_RUNDIR, the caller's default and, as root,\n"
		"                       every user's\n"
		"      --json           print one JSON object\n" CLI_ENGINE_OPTIONS_HELP
		"  -v, --verbose        log each step\n"
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: 0 done (a refused directory is only a warning), 1 some freeze\n"
		"found could not be lifted (or a swarm's node not reached), 125 usage, 3 engine\n"
		"unreachable or the listing failed.\n");
}

/* Every name that exists (a link too: the check says what is wrong with it), once. */
static void dirs_add(struct dirs *d, const char *dir)
{
	struct stat st;
	if (!dir || dir[0] != '/' || lstat(dir, &st) < 0 || d->n == THAW_MAX_DIRS)
		return;
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i], dir) == 0)
			return;
	char *c = strdup(dir);
	if (c)
		d->v[d->n++] = c;
}

/* The uid a decimal string names, or false (empty, not all digits, out of range, or (uid_t)-1). */
static bool parse_uid(const char *s, size_t len, uid_t *out)
{
	if (len == 0 || len > 10)
		return false;
	unsigned long long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v >= (uid_t)-1)
		return false;
	*out = (uid_t)v;
	return true;
}

/* Whose a runtime directory is, by its name (src/base/rundir.c): /tmp/mafsbxfs-UID and
 * /run/user/UID/mafsbxfs are UID's, /run/mafsbxfs root's; any other the caller's. */
static uid_t owner_by_name(const char *dir)
{
	static const char tmp[] = "/tmp/mafsbxfs-", run[] = "/run/user/", tail[] = "/mafsbxfs";
	uid_t uid;
	size_t n = strlen(dir), tl = sizeof(tmp) - 1;
	if (n > tl && strncmp(dir, tmp, tl) == 0 && parse_uid(dir + tl, n - tl, &uid))
		return uid;
	if (strncmp(dir, run, sizeof(run) - 1) == 0 && n > sizeof(run) - 1 + sizeof(tail) - 1 &&
	    strcmp(dir + n - (sizeof(tail) - 1), tail) == 0 &&
	    parse_uid(dir + sizeof(run) - 1, n - (sizeof(run) - 1) - (sizeof(tail) - 1), &uid))
		return uid;
	if (strcmp(dir, MAFSBX_RUNDIR_DEFAULT) == 0)
		return 0;
	return geteuid();
}

/*
 * Open a directory to work in (`path` relative to `at`): a real directory
 * (not a link), owned by `want`, writable by no one else. The descriptor,
 * or -1 (-2: it does not exist) with `why` saying what is wrong.
 */
static int open_dir_at(int at, const char *path, uid_t want, char *why, size_t why_size)
{
	int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int absent = fd < 0 && errno == ENOENT;
	struct stat st;
	if (fd < 0)
		snprintf(why, why_size, "%s", errno == ELOOP || errno == ENOTDIR ? "not a directory (a symbolic link?)"
										 : strerror(errno));
	else if (fstat(fd, &st) < 0)
		snprintf(why, why_size, "%s", strerror(errno));
	else if (st.st_uid != want)
		snprintf(why, why_size, "owned by uid %u, not by uid %u whose directory it is", (unsigned)st.st_uid,
			 (unsigned)want);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		snprintf(why, why_size, "writable by group or others (mode %04o)", (unsigned)(st.st_mode & 07777));
	else
		return fd;
	if (fd >= 0)
		close(fd);
	return absent ? -2 : -1;
}

/* A runtime directory: owned by the uid its name says. */
static int open_rundir(const char *dir, char *why, size_t why_size)
{
	return open_dir_at(AT_FDCWD, dir, owner_by_name(dir), why, why_size);
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

static bool has_gate(int dirfd, const char *id)
{
	char p[80];
	snprintf(p, sizeof(p), "%s.gate", id);
	return faccessat(dirfd, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* One directory's line: stdout in text mode, and an entry of the JSON's "dirs". */
static void dir_report(json_t *dirs_json, bool json, const char *dir, const char *result, unsigned lifted,
		       unsigned failed)
{
	json_array_append_new(dirs_json, json_pack("{s:s, s:s, s:I, s:I}", "rundir", dir, "result", result, "lifted",
						   (json_int_t)lifted, "failed", (json_int_t)failed));
	if (json)
		return;
	if (failed)
		printf("%s: lifted %u, %u could not be lifted\n", dir, lifted, failed);
	else if (lifted)
		printf("%s: lifted %u\n", dir, lifted);
	else
		printf("%s: none\n", dir);
}

/* A directory skipped: stderr, and an entry of the JSON's "dirs". */
static void dir_refused(json_t *dirs_json, const char *dir, const char *why, struct tally *t)
{
	cli_error("%s: refused: %s", dir, why);
	t->refused++;
	json_array_append_new(dirs_json, json_pack("{s:s, s:s, s:s}", "rundir", dir, "result", "refused", "message",
						   why));
}

/* One runtime directory (over a swarm: its subdirectory of the node, tp->sub): lift its dead freezes
 * among the paused, collect its lock files of gone IDs. */
static void thaw_dir(struct thaw_pass *tp, const char *top)
{
	struct tally *t = &tp->t;
	char why[160], dir[THAW_DIR_MAX];
	snprintf(dir, sizeof(dir), "%s%s%s", top, tp->sub ? "/" : "", tp->sub ? tp->sub : "");
	__do_close int tfd = open_rundir(top, why, sizeof(why));
	/* a node's subdirectory: checked as the directory is, passed over when it does not exist */
	__do_close int dfd = tfd < 0 || !tp->sub ? -1 : open_dir_at(tfd, tp->sub, owner_by_name(top), why, sizeof(why));
	if (tfd < 0 || (tp->sub && dfd == -1)) {
		dir_refused(tp->dirs_json, dir, why, t);
		return;
	}
	if (dfd == -2)
		return;   /* no freeze of this node was ever recorded there */
	int wfd = tp->sub ? dfd : tfd;   /* the directory worked in */
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	struct mafsbx_freezer *f = mafsbx_freezer_new_in(tp->e, wfd, &err);
	if (!f) {
		dir_refused(tp->dirs_json, dir, err.message, t);
		return;
	}
	unsigned thawed0 = t->thawed, failed0 = t->failed;
	json_t *paused = tp->paused, *fails = tp->fails;
	bool *thawed_ids = tp->thawed_ids;
	size_t i;
	json_t *c;
	json_array_foreach(paused, i, c) {
		const char *id = json_string_value(json_object_get(c, "Id"));
		if (!id || thawed_ids[i] || !has_gate(wfd, id))
			continue;
		bool unpaused = false;
		mafsbx_error_clear(&err);
		if (mafsbx_freeze_recover(f, id, false, &unpaused, mafsbx_now_ms() + THAW_RECOVER_MS, &err) < 0) {
			cli_error("%s%s%.12s: cannot lift the freeze left in %s: %s", tp->node ? tp->node : "",
				  tp->node ? ": " : "", id, dir, err.message);
			t->failed++;
			json_array_append_new(fails, json_pack("{s:s, s:s, s:s}", "id", id, "rundir", dir, "message",
							       err.message));
		} else if (unpaused) {
			thawed_ids[i] = true;
			t->thawed++;
			log_info("thawed %.12s (a freeze left in %s)", id, dir);
			if (tp->node && !tp->json)   /* over a swarm: which node's sandbox, one line each */
				printf("%s: lifted %.12s (a freeze left in %s)\n", tp->node, id, dir);
		}
	}
	/* Lock files are collected in the caller's own directories only: another user's may be
	 * for another engine (a rootless one), whose containers this engine calls gone, and a
	 * freeze record of those removed here could never be lifted by that user's thaw. */
	unsigned collected = 0;
	mafsbx_error_clear(&err);
	if (owner_by_name(top) == geteuid() && mafsbx_freezer_collect(f, tp->live, tp->n_live, &collected, &err) < 0)
		log_warn("%s: %s", dir, err.message);
	t->collected += collected;
	mafsbx_freezer_free(f);
	unsigned failed = t->failed - failed0;
	dir_report(tp->dirs_json, tp->json, dir, failed ? "failed" : t->thawed > thawed0 ? "lifted" : "none",
		   t->thawed - thawed0, failed);
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

void thaw_report(const struct tally *t, size_t n_dirs, json_t *fails, json_t *dirs_json, json_t *nodes, bool json)
{
	unsigned foreign = t->paused - t->thawed;
	if (json) {
		json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:O, s:O}", "thawed", (json_int_t)t->thawed,
				      "left_paused", (json_int_t)foreign, "lock_files_collected",
				      (json_int_t)t->collected, "runtime_dirs", (json_int_t)n_dirs, "refused_dirs",
				      (json_int_t)t->refused, "failures", fails, "dirs", dirs_json);
		if (o && nodes)
			json_object_set(o, "nodes", nodes);
		cli_print_json(o, 0);
		json_decref(o);
		return;
	}
	char on[64] = "";
	if (nodes)
		snprintf(on, sizeof(on), " on %u of %zu nodes", t->nodes_reached, json_array_size(nodes));
	printf("thawed %u, left paused %u (live freezes or paused by someone else), collected the lock files "
	       "of %u removed containers, in %zu runtime director%s%s%s\n",
	       t->thawed, foreign, t->collected, n_dirs, n_dirs == 1 ? "y" : "ies", on,
	       t->failed ? "; some freezes could not be lifted" : t->unreached ? "; some nodes not reached"
	       : t->refused ? "; some directories refused" : "");
}

int thaw_oom(void)
{
	cli_error("out of memory");
	return MAFSBX_EXIT_FAILURE;
}

int thaw_engine(struct thaw_pass *tp, const struct dirs *dirs, struct mafsbx_error *err)
{
	__do_json json_t *all = NULL;
	__do_json json_t *paused = json_array();
	__do_free const char **live = NULL;
	__do_free bool *thawed_ids = NULL;
	int r = mafsbx_container_list(tp->e, NULL, true, &all, err);
	if (r < 0)
		return r;
	size_t n = json_array_size(all);
	live = calloc(n ? n : 1, sizeof(*live));
	if (!live || !paused)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *x = json_array_get(all, i);
		live[i] = json_string_value(json_object_get(x, "Id"));
		const char *state = json_string_value(json_object_get(x, "State"));
		/* a paused container left out would be counted as nobody's */
		if (state && strcmp(state, "paused") == 0 && json_array_append(paused, x) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	size_t n_paused = json_array_size(paused);
	thawed_ids = calloc(n_paused ? n_paused : 1, sizeof(*thawed_ids));
	if (!thawed_ids)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	tp->paused = paused, tp->live = live, tp->n_live = n, tp->thawed_ids = thawed_ids;
	tp->t.paused += (unsigned)n_paused;
	for (size_t i = 0; i < dirs->n; i++)
		thaw_dir(tp, dirs->v[i]);
	tp->paused = NULL, tp->live = NULL, tp->n_live = 0, tp->thawed_ids = NULL;
	return 0;
}

/* List every container once, then lift the dead freezes of the paused ones in each directory. An exit code. */
static int thaw_all(struct mafsbx_engine *e, const struct dirs *dirs, bool json)
{
	__do_json json_t *fails = json_array();
	__do_json json_t *dirs_json = json_array();
	if (!fails || !dirs_json)
		return thaw_oom();
	struct thaw_pass tp = { .e = e, .fails = fails, .dirs_json = dirs_json, .json = json };
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	if (thaw_engine(&tp, dirs, &err) < 0) {
		if (err.kind == MAFSBX_EK_NOMEM)
			return thaw_oom();
		cli_error("cannot list the containers, so nothing was thawed: %s", err.message);
		return MAFSBX_EXIT_ENGINE;
	}
	thaw_report(&tp.t, dirs->n, fails, dirs_json, NULL, json);
	/* a refused directory is only warned of: cron's exit status says whether a freeze found stays */
	return tp.t.failed ? MAFSBX_EXIT_FAILURE : MAFSBX_EXIT_OK;
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
		code = cli_clustered() ? thaw_cluster(e, &dirs, json) : thaw_all(e, &dirs, json);
		mafsbx_engine_close(e);
	}
	for (size_t i = 0; i < dirs.n; i++)
		free(dirs.v[i]);
	return code;
}
