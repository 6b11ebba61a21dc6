/*
 * sbx_testlib.c: the helpers of sbx_testlib.h, shared by the sandbox
 * integration tests (compiled once, into the harness library).
 */
#include "sbx_testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rootfs.h"
#include "tarplane.h"

struct sbxt sbxt_g;

struct mafsbx_backend *sbxt_backend_with(const struct mafsbx_sandbox_config *cfg)
{
	struct mafsbx_error e;
	struct mafsbx_backend *b = mafsbx_backend_new(harness_engine(), sbxt_g.fz, cfg, &e);
	if (!b)
		fail_msg("backend: %s", e.message);
	return b;
}

void sbxt_open(void)
{
	harness_init();
	harness_rundir("sbx", sbxt_g.rundir);
	struct mafsbx_error e;
	sbxt_g.fz = mafsbx_freezer_new(harness_engine(), sbxt_g.rundir, &e);
	if (!sbxt_g.fz) {
		fprintf(stderr, "freezer: %s\n", e.message);
		exit(1);
	}
	struct mafsbx_sandbox_config cfg;
	mafsbx_sandbox_config_defaults(&cfg);
	cfg.default_image = harness_image();
	sbxt_g.b = mafsbx_backend_new(harness_engine(), sbxt_g.fz, &cfg, &e);
	if (!sbxt_g.b) {
		fprintf(stderr, "backend: %s\n", e.message);
		exit(1);
	}
}

void sbxt_close(void)
{
	harness_cleanup();
	mafsbx_backend_free(sbxt_g.b);
	mafsbx_freezer_free(sbxt_g.fz);
	harness_rundir_remove(sbxt_g.rundir);
}

/* A fresh random scope: "mafsbxtest-sbx-<12 hex>". */
void sbxt_scope(char out[HARNESS_NAME_MAX])
{
	harness_unique_name("sbx", out);
}

char *sbxt_vformat(const char *fmt, va_list ap)
{
	char *text = NULL;
	if (vasprintf(&text, fmt, ap) < 0)
		fail_msg("out of memory formatting %s", fmt);
	return text;
}

json_t *sbxt_json(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = sbxt_vformat(fmt, ap);
	va_end(ap);
	json_error_t jerr;
	json_t *j = text ? json_loads(text, 0, &jerr) : NULL;
	if (!j)
		fail_msg("bad test JSON %s: %s", text ? text : "(null)", text ? jerr.text : "");
	free(text);
	return j;
}

struct mafsbx_acquire_spec *sbxt_spec(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = sbxt_vformat(fmt, ap);
	va_end(ap);
	json_t *j = sbxt_json("%s", text);
	free(text);
	struct mafsbx_spec_config sc;
	mafsbx_backend_spec_config(sbxt_g.b, &sc);
	struct mafsbx_acquire_spec *s = NULL;
	struct mafsbx_error e;
	if (mafsbx_acquire_spec_parse(j, &sc, &s, &e) < 0)
		fail_msg("spec: %s", e.message);
	json_decref(j);
	return s;
}

/* Acquire on backend b; registers the container for cleanup. Returns the call's result. */
int sbxt_acquire_on(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *s,
		    struct mafsbx_acquire_result *res, struct mafsbx_error *e)
{
	char name[MAFSBX_NAME_LEN + 1];
	mafsbx_container_name(&s->key, s->kind, "", name);
	harness_register_container(name);
	mafsbx_error_clear(e);
	return mafsbx_sandbox_acquire(b, s, res, e);
}

/* The request {scope, thread "t", agent, kind} + extra JSON members (may be NULL or ""). */
static struct mafsbx_acquire_spec *key_spec(const char *scope, const char *agent, const char *kind, const char *extra)
{
	return sbxt_spec("{\"scope\":\"%s\",\"thread\":\"" SBXT_THREAD "\",\"agent\":\"%s\",\"kind\":\"%s\"%s%s}", scope,
			 agent, kind, extra && *extra ? "," : "", extra ? extra : "");
}

/* Acquire {scope, thread "t", agent, kind} + extra JSON members; must succeed. */
void sbxt_acquire_ok(const char *scope, const char *agent, const char *kind, const char *extra,
		     struct mafsbx_acquire_result *res)
{
	struct mafsbx_acquire_spec *s = key_spec(scope, agent, kind, extra);
	struct mafsbx_error e;
	int r = sbxt_acquire_on(sbxt_g.b, s, res, &e);
	mafsbx_acquire_spec_free(s);
	if (r < 0)
		fail_msg("acquire %s/%s/%s: %s (%s)", scope, agent, kind, e.message, mafsbx_errno_name(e.err));
}

void sbxt_acquire_created(char scope[HARNESS_NAME_MAX], const char *agent, const char *kind,
			  struct mafsbx_acquire_result *res)
{
	sbxt_scope(scope);
	sbxt_acquire_ok(scope, agent, kind, NULL, res);
	assert_int_equal(res->state, MAFSBX_ACQ_CREATED);
}

/* Same, expecting a failure: returns the negative errno and leaves the error in *e. */
int sbxt_acquire_fails(const char *scope, const char *agent, const char *kind, const char *extra,
		       struct mafsbx_error *e)
{
	struct mafsbx_acquire_spec *s = key_spec(scope, agent, kind, extra);
	struct mafsbx_acquire_result res;
	int r = sbxt_acquire_on(sbxt_g.b, s, &res, e);
	mafsbx_acquire_spec_free(s);
	if (r == 0)
		fail_msg("acquire %s/%s/%s succeeded (%s), a failure was expected", scope, agent, kind, res.name);
	return r;
}

/* Dispose the whole conversation (scope, "t"); no failures allowed. Returns the count. */
unsigned sbxt_dispose_scope(const char *scope)
{
	struct mafsbx_dispose_result dr;
	struct mafsbx_error e;
	if (mafsbx_sandbox_dispose_scope(sbxt_g.b, scope, SBXT_THREAD, &dr, &e) < 0)
		fail_msg("dispose scope: %s", e.message);
	if (dr.n_failures)
		fail_msg("dispose scope %s: %zu failures, first: %s", scope, dr.n_failures, dr.failures[0].detail);
	unsigned n = dr.disposed;
	mafsbx_dispose_result_free(&dr);
	return n;
}

json_t *sbxt_inspect(const char *ref)
{
	json_t *j = NULL;
	struct mafsbx_error e;
	int r = mafsbx_container_inspect(harness_engine(), ref, &j, &e);
	harness_check(r, &e, "inspect");
	return j;
}

bool sbxt_exists(const char *ref)
{
	json_t *j = NULL;
	struct mafsbx_error e;
	int r = mafsbx_container_inspect(harness_engine(), ref, &j, &e);
	json_decref(j);
	if (r < 0 && e.kind != MAFSBX_EK_NO_CONTAINER)
		fail_msg("inspect %s: %s", ref, e.message);
	return r == 0;
}

/* Run a root shell script in a container; returns its stdout (malloc'd, trimmed of one \n). */
char *sbxt_sh_out(const char *container, const char *script)
{
	struct mafsbx_exec_result res;
	int r = harness_sh_result(container, script, &res);
	if (r < 0 || res.exit_code != 0)
		fail_msg("sh in %s: `%s` exited %d: %s%s", container, script, res.exit_code, res.out ? (char *)res.out : "",
			 res.err ? (char *)res.err : "");
	char *o = strndup(res.out ? (const char *)res.out : "", res.out_len);
	size_t n = strlen(o);
	if (n && o[n - 1] == '\n')
		o[n - 1] = '\0';
	mafsbx_exec_result_free(&res);
	return o;
}

/*
 * Create by hand, through the plain API, the container an upstream backend
 * would have made for (scope, "t", agent, kind): upstream name, identity
 * labels and work-dir.v1 label only (no key.v1, no outputs). `extra` (may be
 * NULL) is merged into the create body (e.g. {"User": "1000"}). Started or
 * not. Returns the ID in id and the name in name.
 */
void sbxt_upstream_container(const char *scope, const char *agent, const char *kind,
			     json_t *extra, bool start, char name[MAFSBX_NAME_LEN + 1], char id[65])
{
	struct mafsbx_key k = { scope, SBXT_THREAD, agent, "" };
	mafsbx_container_name(&k, kind, "", name);
	json_t *labels = mafsbx_workload_labels(&k, kind, NULL, NULL);
	json_t *cfg = json_pack("{s:s, s:[s,s], s:o, s:{s:s, s:[s], s:i}}", "Image", harness_image(), "Cmd", "sleep",
				"infinity", "Labels", labels, "HostConfig", "NetworkMode", "none", "SecurityOpt",
				"no-new-privileges", "PidsLimit", 512);
	if (extra)
		json_object_update(cfg, extra);
	harness_register_container(name);
	struct mafsbx_error e;
	int r = mafsbx_container_create(harness_engine(), name, cfg, id, &e);
	json_decref(cfg);
	harness_check(r, &e, "create upstream-style container");
	if (start)
		harness_check(mafsbx_container_start(harness_engine(), id, &e), &e, "start");
}

/* The host's static busybox, read once. */
const void *sbxt_busybox(size_t *len)
{
	static void *data;
	static size_t n;
	if (!data) {
		int fd = open(MAFSBX_ROOTFS_BUSYBOX, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			fail_msg("no %s (Debian package busybox-static)", MAFSBX_ROOTFS_BUSYBOX);
		data = malloc((size_t)st.st_size);
		ssize_t got = data ? read(fd, data, (size_t)st.st_size) : -1;
		close(fd);
		if (got != st.st_size)
			fail_msg("could not read %s", MAFSBX_ROOTFS_BUSYBOX);
		n = (size_t)st.st_size;
	}
	*len = n;
	return data;
}


/*
 * Import a tiny image: /bin/busybox plus the given applet links in /bin, and
 * `files`. Name "mafsbxtest-sbx-<what>-<hex>:latest" into ref; registered for
 * removal. `changes` NULL-terminated Dockerfile instructions (CMD, USER).
 */
void sbxt_tiny_image(const char *what, const char *const *applets,
		     const struct sbxt_file *files, size_t n_files, const char *const *changes,
		     char ref[HARNESS_NAME_MAX + 16])
{
	struct mafsbx_error e;
	struct mafsbx_tar *t = mafsbx_tar_new(&e);
	if (!t)
		fail_msg("tar: %s", e.message);
	size_t bblen;
	const void *bb = sbxt_busybox(&bblen);
	harness_check(mafsbx_tar_add_dir(t, "bin", 0755, 0, 0, 1700000000, &e), &e, "tar bin");
	harness_check(mafsbx_tar_add_dir(t, "tmp", 01777, 0, 0, 1700000000, &e), &e, "tar tmp");
	harness_check(mafsbx_tar_add_file(t, "bin/busybox", bb, bblen, 0755, 0, 0, 1700000000, &e), &e, "tar busybox");
	for (size_t i = 0; applets && applets[i]; i++) {
		char p[64];
		snprintf(p, sizeof(p), "bin/%s", applets[i]);
		harness_check(mafsbx_tar_add_symlink(t, p, "busybox", 0, 0, 1700000000, &e), &e, "tar applet");
	}
	for (size_t i = 0; i < n_files; i++) {
		const struct sbxt_file *f = &files[i];
		int r;
		if (f->dir)
			r = mafsbx_tar_add_dir(t, f->path, 0755, 0, 0, 1700000000, &e);
		else if (f->link)
			r = mafsbx_tar_add_symlink(t, f->path, f->link, 0, 0, 1700000000, &e);
		else
			r = mafsbx_tar_add_file(t, f->path, f->content, strlen(f->content), f->mode ? f->mode : 0644, 0, 0,
						1700000000, &e);
		harness_check(r, &e, "tar file");
	}
	const void *data;
	size_t len;
	harness_check(mafsbx_tar_finish(t, &data, &len, &e), &e, "tar finish");
	char repo[HARNESS_NAME_MAX];
	harness_unique_name(what, repo);
	snprintf(ref, HARNESS_NAME_MAX + 16, "%s:latest", repo);
	harness_register_image(ref);
	harness_check(mafsbx_image_import(harness_engine(), data, len, repo, "latest", changes, &e), &e, "import");
	mafsbx_tar_free(t);
}
