/*
 * sbx_testlib.h: helpers shared by the sandbox integration tests
 * (it_acquire.c, it_dispose.c, it_exec.c, it_sandbox.c, it_egress.c,
 * it_fingerprint.c, tests/remote/), on top of the harness: a freezer with a
 * private runtime directory, a backend, unique scopes (every sandbox a test
 * makes lives under its own random scope and is disposed by scope at the
 * end, and registered with the harness as a safety net), request parsing,
 * hand-made "upstream" containers, and small test images built offline with
 * the tar plane. Defined in sbx_testlib.c, compiled once into the harness
 * library. Every helper fails the current test (cmocka) on an unexpected
 * error unless its comment says otherwise.
 */
#ifndef MAFSBX_SBX_TESTLIB_H
#define MAFSBX_SBX_TESTLIB_H

/* What a sandbox test needs, cmocka included. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "freeze.h"
#include "harness.h"
#include "names.h"
#include "rootfs.h"
#include "sandbox.h"
#include "spec.h"
#include "tarplane.h"

#define SBXT_THREAD "t"

struct sbxt {
	struct mafsbx_freezer *fz;
	struct mafsbx_backend *b;
	char rundir[HARNESS_RUNDIR_MAX];
};

/* The shared freezer and backend, set by sbxt_open(). */
extern struct sbxt sbxt_g;

/* harness_init(), a private runtime directory, a freezer and a backend on the test image; exits on failure. */
void sbxt_open(void);
/* harness_cleanup(), then free them and remove the runtime directory. */
void sbxt_close(void);

/* Another backend on the shared freezer with the caller's configuration. */
struct mafsbx_backend *sbxt_backend_with(const struct mafsbx_sandbox_config *cfg);

/* A fresh random scope: "mafsbxtest-sbx-<12 hex>". */
void sbxt_scope(char out[HARNESS_NAME_MAX]);

/* vasprintf that fails the test when out of memory (caller frees). */
char *sbxt_vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Parse printf-formatted JSON (caller decrefs). */
json_t *sbxt_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse a printf-formatted acquire request with the backend's spec config (caller frees). */
struct mafsbx_acquire_spec *sbxt_spec(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Acquire on backend b; registers the container for cleanup. Returns the call's result. */
int sbxt_acquire_on(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *s, struct mafsbx_acquire_result *res,
		    struct mafsbx_error *e);

/* Acquire {scope, thread "t", agent, kind} + extra JSON members; must succeed. */
void sbxt_acquire_ok(const char *scope, const char *agent, const char *kind, const char *extra,
		     struct mafsbx_acquire_result *res);

/* A fresh scope into scope, then sbxt_acquire_ok(scope, agent, kind, NULL), which must create it. */
void sbxt_acquire_created(char scope[HARNESS_NAME_MAX], const char *agent, const char *kind,
			  struct mafsbx_acquire_result *res);

/* Same as sbxt_acquire_ok, expecting a failure: returns the negative errno and leaves the error in *e. */
int sbxt_acquire_fails(const char *scope, const char *agent, const char *kind, const char *extra,
		       struct mafsbx_error *e);

/* Dispose the whole conversation (scope, "t"); no failures allowed. Returns the count. */
unsigned sbxt_dispose_scope(const char *scope);

/* Inspect a container (caller decrefs); sbxt_exists: whether it is there. */
json_t *sbxt_inspect(const char *ref);
bool sbxt_exists(const char *ref);

/* Run a root shell script in a container; returns its stdout (malloc'd, trimmed of one \n). */
char *sbxt_sh_out(const char *container, const char *script);

/*
 * Create by hand, through the plain API, the container an upstream backend
 * would have made for (scope, "t", agent, kind): upstream name, identity
 * labels and work-dir.v1 label only (no key.v1, no outputs). `extra` (may be
 * NULL) is merged into the create body (e.g. {"User": "1000"}). Started or
 * not. Returns the ID in id and the name in name.
 */
void sbxt_upstream_container(const char *scope, const char *agent, const char *kind, json_t *extra, bool start,
			     char name[MAFSBX_NAME_LEN + 1], char id[65]);

/* The host's static busybox, read once. */
const void *sbxt_busybox(size_t *len);

struct sbxt_file {
	const char *path;         /* relative: "etc/passwd" */
	const char *content;      /* regular file content, or NULL */
	const char *link;         /* symlink target, or NULL */
	bool dir;
	mode_t mode;              /* regular files: 0 means 0644 */
};

/*
 * Import a tiny image: /bin/busybox plus the given applet links in /bin, and
 * `files`. Name "mafsbxtest-sbx-<what>-<hex>:latest" into ref; registered for
 * removal. `changes` NULL-terminated Dockerfile instructions (CMD, USER).
 */
void sbxt_tiny_image(const char *what, const char *const *applets, const struct sbxt_file *files, size_t n_files,
		     const char *const *changes, char ref[HARNESS_NAME_MAX + 16]);

#endif
