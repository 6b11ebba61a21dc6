/*
 * facts.c: what the backend learns about a container after acquiring it
 * (doc/upstream.md §4.6, §4.7): the guest identity (uid, gid) that stamps files
 * written into it and whose authority mutations run at, resolved from
 * Config.User and the guest's /etc/passwd and /etc/group read through the
 * archive plane (never by running `id` in the guest: its output, and the
 * PATH that finds it, are the guest's to forge); and the capability probes (`sh`, the host-tools script, `rm`) that refuse
 * an image unable to serve what a spec needs. Both are cached per container
 * ID; failures never are, so the next acquire tries again.
 *
 * Also the one helper-exec path (mafsbx_sbx_exec) used by probes, `id` and the
 * user-facing exec: the whole engine exec (create, start, stream, inspect)
 * runs registered with the freezer (mafsbx_freeze_exec_begin), so no freeze
 * of the container, by this process or another on the host, overlaps it: a
 * pause while an exec process starts or exits wedges containerd 1.6 for good
 * (freeze.h). It still re-issues an exec the engine refused with 409 "is
 * paused" (now rare: a container paused by someone else, or a freeze left by
 * a dead process). Upstream re-issues only with proof its own freeze held,
 * because a CLI's stderr can be forged by the guest; here the refusal is an
 * HTTP status from the engine, which the guest cannot forge, and a refused
 * exec provably never started (doc/engine-notes.md §3), so re-issuing cannot run
 * a command twice.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "buf.h"
#include "files.h"
#include "execkill.h"
#include "log.h"
#include "sbx_internal.h"

/*
 * The exec started but its call failed before the process was known to have
 * exited (the output stream was cut: a dropped connection, an engine
 * restart, a proxy). The process may still run, and its exit must not meet a
 * pause (freeze.h), so the registration is kept (the caller still holds it)
 * until the engine's exec inspect says it is not running, bounded by the
 * deadline. Past the deadline it is the timeout rule: EK_TIMEOUT (the caller
 * removes the container while still registered). Ended in time: the call
 * fails (EIO) with the exit code in res, the output being incomplete.
 */
static int stream_ended_early(struct mafsbx_backend *b, struct mafsbx_exec_result *res, long long deadline, int r,
			      struct mafsbx_error *e)
{
	char first[sizeof(e->message)];
	snprintf(first, sizeof(first), "%s", e->message);
	long wait_ms = 10;
	for (;;) {
		bool running = true;
		int code = -1;
		struct mafsbx_error ie;
		mafsbx_error_clear(&ie);
		if (mafsbx_exec_inspect(b->engine, res->exec_id, &running, &code, &ie) == 0 && !running) {
			res->exit_code = code;
			res->truncated = true;
			log_warn("exec %.12s: %s; the command has ended (exit code %d), its output is incomplete",
				 res->exec_id, first, code);
			mafsbx_error_set_full(e, MAFSBX_EK_PROTOCOL, EIO, NULL,
					      "%s; the command ran to its end (exit code %d) but its output is incomplete",
					      first, code);
			return -EIO;
		}
		if (ie.kind == MAFSBX_EK_NO_OBJECT || ie.kind == MAFSBX_EK_NO_CONTAINER) {
			/* the exec (or its container) is gone: no process left to exit */
			return r;
		}
		if (ie.err == ESHUTDOWN) {
			/* the engine client is closing (the mount ends): nothing more will be learned */
			return r;
		}
		long long now = mafsbx_now_ms();
		if (now >= deadline) {
			res->timed_out = true;
			mafsbx_error_set(e, MAFSBX_EK_TIMEOUT,
					 "%s; the command was still running when its timeout came", first);
			return -ETIMEDOUT;
		}
		long long left = deadline - now;
		usleep((useconds_t)(left < wait_ms ? left : wait_ms) * 1000);
		if (wait_ms < 500)
			wait_ms *= 2;
	}
}

/*
 * A timed-out command killed where the engine runs on this host: true once
 * its processes (its tree and what carries its marker) were signalled and
 * the engine says the exec ended (bounded wait), so the caller may end its
 * freezer registration; false when it could not be killed here (the caller
 * removes the container).
 */
static bool kill_timed_out(struct mafsbx_backend *b, const char *id, const char *marker,
			   struct mafsbx_exec_result *res)
{
	struct mafsbx_error ke;
	mafsbx_error_clear(&ke);
	int killed = 0;
	if (mafsbx_exec_kill_tree_marked(b->engine, id, res->exec_id, marker, &killed, &ke) < 0 && ke.err != ESRCH) {
		log_info("exec %.12s timed out and cannot be killed here: %s", res->exec_id, ke.message);
		return false;
	}
	long long until = mafsbx_now_ms() + SBX_KILL_WAIT_MS;
	for (;;) {
		bool running = true;
		int code = -1;
		if (mafsbx_exec_inspect(b->engine, res->exec_id, &running, &code, &ke) == 0 && !running)
			break;
		if (mafsbx_now_ms() >= until) {
			log_warn("exec %.12s was killed but has not ended after %d ms", res->exec_id, SBX_KILL_WAIT_MS);
			return false;
		}
		usleep(20 * 1000);
	}
	res->killed = true;
	return true;
}

int mafsbx_sbx_exec(struct mafsbx_backend *b, const char *id, const struct mafsbx_exec_request *rq,
	     struct mafsbx_exec_result *res, struct mafsbx_error *err)
{
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	long total = rq->timeout_ms > 0 ? rq->timeout_ms : b->cfg.command_timeout_ms;
	long long start = mafsbx_now_ms(), deadline = start + total;
	struct mafsbx_error e;
	int r;
	for (;;) {
		mafsbx_error_clear(&e);
		struct mafsbx_freeze_exec *reg = NULL;
		if (b->fz && (r = mafsbx_freeze_exec_begin(b->fz, id, deadline, &reg, &e)) < 0)
			break;
		struct mafsbx_exec_request q = *rq;
		long long left = deadline - mafsbx_now_ms();
		q.timeout_ms = left < 1 ? 1 : (long)left;
		r = mafsbx_exec_run(b->engine, id, &q, res, &e);
		if (r < 0 && res->exec_id[0] && e.kind != MAFSBX_EK_TIMEOUT && e.kind != MAFSBX_EK_PAUSED)
			r = stream_ended_early(b, res, deadline, r, &e);
		if (r < 0 && e.kind == MAFSBX_EK_TIMEOUT && res->exec_id[0]) {
			/*
			 * The abandoned process may still be running, or exiting: a
			 * freeze now could land on its exit and wedge containerd. As
			 * upstream, a timed-out exec removes the container (or, asked
			 * to and where it can, kills the command and waits for its
			 * end), and it does so while still registered, so no freeze
			 * can come between.
			 */
			if (!(q.kill_on_timeout && kill_timed_out(b, id, q.marker, res))) {
				struct mafsbx_error de;
				if (mafsbx_container_delete(b->engine, id, true, &de) < 0 && de.kind != MAFSBX_EK_NO_CONTAINER)
					log_warn("exec timed out and %s could not be removed: %s", id, de.message);
				else
					res->sandbox_disposed = true;
			}
		}
		mafsbx_freeze_exec_end(reg);
		/* Re-issued only while nothing was taken from a streamed stdin:
		 * those bytes are gone from the descriptor and cannot be sent again. */
		if (r < 0 && e.kind == MAFSBX_EK_PAUSED && !res->stdin_bytes &&
		    mafsbx_now_ms() + SBX_PAUSED_RETRY_MS < deadline) {
			mafsbx_exec_result_free(res);
			usleep(SBX_PAUSED_RETRY_MS * 1000);
			continue;
		}
		break;
	}
	res->duration_ms = mafsbx_now_ms() - start;
	if (r < 0 && err)
		*err = e;
	return r;
}

/* ---- identity ------------------------------------------------------------ */

static bool parse_id_number(const char *s, size_t len, unsigned long *out)
{
	if (len == 0 || len > 10)
		return false;
	unsigned long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v >= 0xffffffffUL)
		return false;
	*out = v;
	return true;
}

void mafsbx_sbx_user_spec_clear(struct sbx_user_spec *u)
{
	free(u->user_name);
	free(u->group_name);
	memset(u, 0, sizeof(*u));
}

int mafsbx_sbx_parse_user(const char *user, struct sbx_user_spec *u)
{
	memset(u, 0, sizeof(*u));
	if (!user || !*user || strcmp(user, "0:0") == 0) {
		u->root = u->uid_known = u->gid_known = true;
		return 0;
	}
	const char *colon = strchr(user, ':');
	size_t ulen = colon ? (size_t)(colon - user) : strlen(user);
	unsigned long n;
	if (ulen == 0) {
		/* Docker runs ":20001" as 0:20001 and ":" as 0:0 */
		u->uid_known = true;
		u->uid = 0;
	} else if (parse_id_number(user, ulen, &n)) {
		u->uid_known = true;
		u->uid = (uid_t)n;
	} else if (!(u->user_name = strndup(user, ulen))) {
		return -ENOMEM;
	}
	if (colon && colon[1]) {
		const char *g = colon + 1;
		if (parse_id_number(g, strlen(g), &n)) {
			u->gid_known = true;
			u->gid = (gid_t)n;
		} else if (!(u->group_name = strdup(g))) {
			mafsbx_sbx_user_spec_clear(u);
			return -ENOMEM;
		}
	}
	return 0;
}

/* Split one passwd/group line into at most 8 fields in place. */
static size_t split_fields(char *line, char **f, size_t max)
{
	size_t n = 0;
	char *p = line;
	while (n < max) {
		f[n++] = p;
		char *c = strchr(p, ':');
		if (!c)
			break;
		*c = '\0';
		p = c + 1;
	}
	return n;
}

/* Call match() on the fields of each line of `text` (at most 8, split at ':') until it returns true. */
static void each_line(const char *text, bool (*match)(char **f, size_t nf, void *ctx), void *ctx)
{
	char *copy = strdup(text);
	if (!copy)
		return;
	char *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[8];
		size_t nf = split_fields(line, f, 8);
		if (match(f, nf, ctx))
			break;
	}
	free(copy);
}

struct id_query {
	const char *name;
	bool *uid_known, *gid_known;
	uid_t *uid;
	gid_t *gid;
};

/* A passwd line: 4 fields with numeric 3rd and 4th. */
static bool passwd_ids(char **f, size_t nf, unsigned long *fu, unsigned long *fg)
{
	return nf >= 4 && parse_id_number(f[2], strlen(f[2]), fu) && parse_id_number(f[3], strlen(f[3]), fg);
}

static bool passwd_by_name(char **f, size_t nf, void *ctx)
{
	struct id_query *q = ctx;
	unsigned long fu, fg;
	if (!passwd_ids(f, nf, &fu, &fg) || strcmp(f[0], q->name) != 0)
		return false;
	*q->uid = (uid_t)fu;
	*q->uid_known = true;
	return true;
}

static bool passwd_by_uid(char **f, size_t nf, void *ctx)
{
	struct id_query *q = ctx;
	unsigned long fu, fg;
	if (!passwd_ids(f, nf, &fu, &fg) || fu != *q->uid)
		return false;
	*q->gid = (gid_t)fg;
	*q->gid_known = true;
	return true;
}

static bool group_by_name(char **f, size_t nf, void *ctx)
{
	struct id_query *q = ctx;
	unsigned long fg;
	if (nf < 3 || strcmp(f[0], q->name) != 0 || !parse_id_number(f[2], strlen(f[2]), &fg))
		return false;
	*q->gid = (gid_t)fg;
	*q->gid_known = true;
	return true;
}

/*
 * passwd: uid of the line named `name` (when !*uid_known), then gid of the
 * first line with that uid (when `want_gid`). Lines need 4 fields with
 * numeric 3rd and 4th.
 */
static void passwd_lookup(const char *text, const char *name, bool *uid_known, uid_t *uid, bool want_gid,
			  bool *gid_known, gid_t *gid)
{
	struct id_query q = { .name = name, .uid_known = uid_known, .gid_known = gid_known, .uid = uid, .gid = gid };
	if (!*uid_known && name)
		each_line(text, passwd_by_name, &q);
	if (want_gid && *uid_known && !*gid_known)
		each_line(text, passwd_by_uid, &q);
}

static void group_lookup(const char *text, const char *name, bool *gid_known, gid_t *gid)
{
	struct id_query q = { .name = name, .gid_known = gid_known, .gid = gid };
	each_line(text, group_by_name, &q);
}

static int read_guest_file(struct mafsbx_backend *b, const char *id, const char *path, struct mafsbx_buf *out)
{
	if (!b->fz)
		return -ENOTSUP;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	long long deadline = mafsbx_now_ms() + b->cfg.command_timeout_ms;
	int r = mafsbx_files_read_abs(b->fz, id, path, SBX_PASSWD_LIMIT, out, deadline, &e);
	if (r < 0)
		log_debug("identity: could not read %s of %.12s: %s", path, id, e.message);
	return r;
}

/* A helper command (a probe) as `user` (NULL: the image's), in /, its output capped at 1 KiB. */
static int helper_exec(struct mafsbx_backend *b, const char *id, const char *const *argv, const char *user,
		       long timeout_ms, struct mafsbx_exec_result *res, struct mafsbx_error *e)
{
	struct mafsbx_exec_request rq = { .argv = argv, .user = user, .workdir = "/", .timeout_ms = timeout_ms,
					  .max_output = SBX_PROBE_READ_LIMIT };
	mafsbx_error_clear(e);
	return mafsbx_sbx_exec(b, id, &rq, res, e);
}

/* Record why the identity is unresolved (for the log, the acquire reply and `status`). */
__attribute__((format(printf, 3, 4))) static void unresolved(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && why_len)
		vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

int mafsbx_sbx_identity(struct mafsbx_backend *b, const char *id, const char *name, json_t *inspect, uid_t *uid,
		 gid_t *gid, bool *resolved, char *why, size_t why_len, struct mafsbx_error *err)
{
	*uid = 0;
	*gid = 0;
	*resolved = false;
	if (why && why_len)
		why[0] = '\0';
	struct sbx_facts f;
	if (mafsbx_sbx_facts_get(b, id, &f) && f.identity_resolved) {
		*uid = f.uid;
		*gid = f.gid;
		*resolved = true;
		return 0;
	}
	json_t *owned = NULL;
	if (!inspect) {
		struct mafsbx_error e;
		if (mafsbx_container_inspect(b->engine, id, &owned, &e) < 0) {
			/* unreadable: distinct from an empty user, so unresolved */
			log_warn("identity of %s: could not inspect it: %s", name, e.message);
			unresolved(why, why_len, "the container could not be inspected: %s", e.message);
			return 0;
		}
		inspect = owned;
	}
	json_t *juser = json_object_get(json_object_get(inspect, "Config"), "User");
	const char *user = json_is_string(juser) ? json_string_value(juser) : "";
	struct sbx_user_spec u;
	int r = mafsbx_sbx_parse_user(user, &u);
	if (r < 0) {
		json_decref(owned);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	if (!u.root) {
		if (!u.uid_known || (!u.gid_known && !u.group_name)) {
			struct mafsbx_buf pw = MAFSBX_BUF_INIT;
			if (read_guest_file(b, id, "/etc/passwd", &pw) == 0 && pw.data)
				passwd_lookup(pw.data, u.user_name, &u.uid_known, &u.uid, !u.group_name, &u.gid_known,
					      &u.gid);
			mafsbx_buf_free(&pw);
		}
		if (u.group_name) {
			struct mafsbx_buf gr = MAFSBX_BUF_INIT;
			if (read_guest_file(b, id, "/etc/group", &gr) == 0 && gr.data)
				group_lookup(gr.data, u.group_name, &u.gid_known, &u.gid);
			mafsbx_buf_free(&gr);
		}
	}
	/*
	 * Resolved only when every name the image gives was found: a numeric
	 * uid stands as given (with no passwd line its group is 0, as Docker
	 * runs it), but an unfound user or group name is never replaced by 0,
	 * which would give the mount's mutations root's authority over a guest
	 * that has none.
	 */
	if (u.user_name && !u.uid_known)
		unresolved(why, why_len,
			   "the image's user '%s' is not in a readable /etc/passwd (a regular file) of the guest", user);
	else if (u.group_name && !u.gid_known)
		unresolved(why, why_len,
			   "the image's group in '%s' is not in a readable /etc/group (a regular file) of the guest",
			   user);
	else {
		*uid = u.uid;
		*gid = u.gid_known ? u.gid : 0;
		*resolved = true;
		mafsbx_sbx_facts_put_identity(b, id, name, *uid, *gid);
	}
	if (!*resolved)
		log_warn("sandbox %s: the guest user '%s' could not be resolved; files cannot be written through the "
			 "mount (EACCES) and the next acquire retries",
			 name, user);
	mafsbx_sbx_user_spec_clear(&u);
	json_decref(owned);
	return 0;
}

int mafsbx_sandbox_identity(struct mafsbx_backend *b, const char *name, uid_t *uid, gid_t *gid, bool *resolved,
			    char *why, size_t why_len, struct mafsbx_error *err)
{
	if (!b || !name || !*name)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "identity: no sandbox named");
	json_t *insp = NULL;
	int r = mafsbx_container_inspect(b->engine, name, &insp, err);
	if (r < 0)
		return r;
	const char *id = json_string_value(json_object_get(insp, "Id"));
	if (!id) {
		json_decref(insp);
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "identity of %s: inspect has no Id", name);
	}
	r = mafsbx_sbx_identity(b, id, name, insp, uid, gid, resolved, why, why_len, err);
	json_decref(insp);
	return r;
}

/* ---- probes -------------------------------------------------------------- */

struct probe {
	unsigned bit;
	const char *name;
	const char *cap;
};

void mafsbx_sbx_short_text(const unsigned char *p, size_t n, char *out, size_t outsz)
{
	size_t k = 0;
	for (size_t i = 0; p && i < n && k + 1 < outsz; i++) {
		unsigned char c = p[i];
		out[k++] = (c == '\n' || c == '\r' || c == '\t') ? ' ' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	while (k && out[k - 1] == ' ')
		k--;
	out[k] = '\0';
	mafsbx_scrub_host_paths(out);
}

static int run_probe(struct mafsbx_backend *b, const char *id, const char *image, const struct probe *p,
		     const char *const *argv, long long deadline, struct mafsbx_error *err)
{
	long long left = deadline - mafsbx_now_ms();
	if (left < 1)
		left = 1;
	struct mafsbx_exec_result res;
	struct mafsbx_error e;
	int r = helper_exec(b, id, argv, "0", (long)left, &res, &e);
	if (r < 0) {
		mafsbx_exec_result_free(&res);
		return mafsbx_error_set(err, MAFSBX_EK_UNSUPPORTED,
					"the '%s' probe for capability %s did not complete in image %s (the next acquire "
					"retries): %s",
					p->name, p->cap, image, e.message);
	}
	if (res.exit_code != 0) {
		char why[300] = "";
		if (res.launch_failed || res.exit_code == 126 || res.exit_code == 127)
			mafsbx_sbx_short_text(res.out_len ? res.out : res.err, res.out_len ? res.out_len : res.err_len, why,
				   sizeof(why));
		r = mafsbx_error_set(err, MAFSBX_EK_UNSUPPORTED,
				     "image %s cannot serve capability %s: the '%s' probe exited %d, expected 0%s%s "
				     "(the next acquire retries)",
				     image, p->cap, p->name, res.exit_code, *why ? ": " : "", why);
		mafsbx_exec_result_free(&res);
		return r;
	}
	mafsbx_exec_result_free(&res);
	return 0;
}

int mafsbx_sbx_probes(struct mafsbx_backend *b, const char *id, const char *name, const char *image, unsigned caps,
	       struct mafsbx_error *err)
{
	static const struct probe p_sh = { SBX_PROBE_SH, "sh", "exec" };
	static const struct probe p_ht = { SBX_PROBE_HOST_TOOLS, "host-tools", "host_tools" };
	static const struct probe p_rm = { SBX_PROBE_RM, "rm", "files_delete" };
	unsigned need = 0;
	if (caps & MAFSBX_CAP_HOST_TOOLS)
		need |= SBX_PROBE_HOST_TOOLS;   /* covers sh too */
	else if (caps & MAFSBX_CAP_EXEC)
		need |= SBX_PROBE_SH;
	if (caps & MAFSBX_CAP_FILES_DELETE)
		need |= SBX_PROBE_RM;
	struct sbx_facts f;
	unsigned have = mafsbx_sbx_facts_get(b, id, &f) ? f.probes_ok : 0;
	need &= ~have;
	if (!need)
		return 0;
	long long deadline = mafsbx_now_ms() + b->cfg.probe_timeout_ms;
	int r;
	if (need & SBX_PROBE_SH) {
		const char *argv[] = { "sh", "-c", "exit 0", NULL };
		if ((r = run_probe(b, id, image, &p_sh, argv, deadline, err)) < 0)
			return r;
		mafsbx_sbx_facts_add_probes(b, id, name, SBX_PROBE_SH);
	}
	if (need & SBX_PROBE_HOST_TOOLS) {
		unsigned char rnd[16];
		char hex[33];
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			memset(rnd, 0x5a, sizeof(rnd));
		for (int i = 0; i < 16; i++)
			snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
		char script[512];
		snprintf(script, sizeof(script),
			 "mkdir -p / || exit 11; "
			 "mv -f /.maf-command-probe-%s /.maf-command-probe-%s-to >/dev/null 2>&1; "
			 "[ $? -eq 1 ] || exit 12; "
			 "nohup sh -c 'exit 0' </dev/null >/dev/null 2>&1 || exit 13; exit 0",
			 hex, hex);
		const char *argv[] = { "sh", "-c", script, NULL };
		if ((r = run_probe(b, id, image, &p_ht, argv, deadline, err)) < 0)
			return r;
		mafsbx_sbx_facts_add_probes(b, id, name, SBX_PROBE_HOST_TOOLS | SBX_PROBE_SH);
	}
	if (need & SBX_PROBE_RM) {
		const char *argv[] = { "rm", "-rf", "--", NULL };
		if ((r = run_probe(b, id, image, &p_rm, argv, deadline, err)) < 0)
			return r;
		mafsbx_sbx_facts_add_probes(b, id, name, SBX_PROBE_RM);
	}
	return 0;
}
