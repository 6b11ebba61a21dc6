/*
 * harness.h: shared helpers for every integration test (tests/integration/
 * it_*.c). They run against the REAL dockerd; nothing is mocked.
 *
 * Typical test program:
 *
 *     int main(void)
 *     {
 *             harness_init();              // skip (exit 77) when no engine answers
 *             const struct CMUnitTest t[] = { cmocka_unit_test(test_x), ... };
 *             return cmocka_run_group_tests(t, NULL, NULL);
 *     }
 *
 *     static void test_x(void **state)
 *     {
 *             char c[HARNESS_NAME_MAX];
 *             harness_container("files", c);   // created, started, removed at exit
 *             int code;
 *             assert_int_equal(harness_sh(c, "echo hi > /tmp/f", &code), 0);
 *             assert_int_equal(code, 0);
 *             ... mafsbx_*(harness_engine(), c, ...) ...
 *     }
 *
 * Engine: the default endpoint (mafsbx_endpoint_resolve with no options, so
 * DOCKER_HOST / DOCKER_CONTEXT are honoured). When no engine answers /_ping
 * the program exits 77 (meson's "skipped"), unless MAFSBX_REQUIRE_ENGINE=1
 * (set by CI), which makes it fail loudly instead. The same holds when the
 * test image is missing (build it with `mafsbx mkimage`).
 *
 * Test image: env MAFSBX_TEST_IMAGE, default mafsbx/busybox:latest (busybox
 * applets in /bin, root and sandbox uid/gid 1000 in /etc/passwd).
 *
 * Names: harness_unique_name() gives "mafsbxtest-<prefix>-<12 hex>", unique
 * across the helpers and CI runs sharing one dockerd. Everything a test
 * creates through the harness (or registers with harness_register_*) is
 * removed by harness_cleanup(), which also runs at exit (atexit); a test may
 * call it earlier. Removal is forced and never touches anything else.
 *
 * All helpers abort the test (cmocka fail) on an unexpected engine error,
 * except where a return value is documented. Not thread-safe: call them from
 * the test's main thread (the engine handle itself is thread-safe).
 */
#ifndef MAFSBX_HARNESS_H
#define MAFSBX_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine.h"

#define HARNESS_SKIP 77
#define HARNESS_NAME_MAX 96
#define HARNESS_RUNDIR_MAX 128

struct mafsbx_freezer;

/* Resolve the endpoint, ping, check the test image; skip or fail as above. Idempotent. */
void harness_init(void);

/* The shared engine handle (opened by harness_init(); calls it when needed). */
struct mafsbx_engine *harness_engine(void);

/* Open another handle on the same endpoint with other timeouts (caller closes it). */
struct mafsbx_engine *harness_engine_with(const struct mafsbx_engine_timeouts *timeouts);

/* The test image reference. */
const char *harness_image(void);

/* "mafsbxtest-<prefix>-<12 random hex>" into out (HARNESS_NAME_MAX bytes). */
void harness_unique_name(const char *prefix, char out[HARNESS_NAME_MAX]);

/*
 * Create and start a plain test container: the test image running its
 * keep-alive command (sleep infinity), network "none", label
 * mafsbxtest=1. Name written into `name`; registered for removal.
 */
void harness_container(const char *prefix, char name[HARNESS_NAME_MAX]);

/*
 * Same with a caller's create body (borrowed; "Image" is filled in when
 * absent, "Cmd" sleep infinity when absent, "Labels.mafsbxtest" added,
 * HostConfig NetworkMode none when there is no HostConfig). start=false
 * leaves it created only.
 */
void harness_container_cfg(const char *prefix, const json_t *config, bool start, char name[HARNESS_NAME_MAX]);

/* Register objects made another way, for removal by harness_cleanup(). */
void harness_register_container(const char *name);
void harness_register_network(const char *name);
void harness_register_image(const char *ref);
/* Forget a container the test already removed itself. */
void harness_forget_container(const char *name);

/* Remove everything registered (containers forced, then networks, then images). */
void harness_cleanup(void);

/*
 * Run `script` with /bin/sh -c as root in the container (30 s bound), for
 * planting fixtures. Returns 0 when it ran (its exit code in *exit_code;
 * stdout/stderr are printed when the code is not 0), or the negative errno
 * of the engine call (the message is printed).
 */
int harness_sh(const char *container, const char *script, int *exit_code);

/* Same, keeping the full result (caller frees it with mafsbx_exec_result_free). */
int harness_sh_result(const char *container, const char *script, struct mafsbx_exec_result *res);

/*
 * A private freeze runtime directory "/tmp/mafsbxtest-<what>-run-XXXXXX",
 * made with mkdtemp, into dir; exits 1 when it cannot be made.
 * harness_rundir_remove() removes such a directory and everything in it.
 */
void harness_rundir(const char *what, char dir[HARNESS_RUNDIR_MAX]);
void harness_rundir_remove(const char *dir);

/*
 * For a child process of a cross-process test: its own engine on the
 * default endpoint and a freezer over dir. Returns 0, or 2 when no endpoint
 * resolves, 3 when the engine or the freezer cannot be opened (the exit
 * codes the children report). harness_child_close() frees both.
 */
int harness_child_freezer(const char *dir, struct mafsbx_engine **engine, struct mafsbx_freezer **fz);
void harness_child_close(struct mafsbx_engine *engine, struct mafsbx_freezer *fz);

/* Fail the current test with the error's kind and message when r < 0. */
void harness_check(int r, const struct mafsbx_error *err, const char *what);

#endif
