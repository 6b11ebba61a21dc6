/*
 * harness.c: the integration-test harness described in harness.h: one engine
 * handle on the default endpoint, skip-or-fail when there is none, unique
 * names, test containers, and the list of what to remove at exit.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "endpoint.h"
#include "freeze.h"

#define MAX_OBJECTS 256

static struct mafsbx_engine *engine;
static struct mafsbx_endpoint endpoint;
static bool initialised;
static bool cleanup_registered;

static char *containers[MAX_OBJECTS];
static size_t n_containers;
static char *networks[MAX_OBJECTS];
static size_t n_networks;
static char *images[MAX_OBJECTS];
static size_t n_images;

static bool engine_required(void)
{
	const char *v = getenv("MAFSBX_REQUIRE_ENGINE");
	return v && strcmp(v, "1") == 0;
}

__attribute__((noreturn, format(printf, 1, 2)))
static void skip_or_fail(const char *fmt, ...)
{
	char msg[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (engine_required()) {
		fprintf(stderr, "FAIL: %s (MAFSBX_REQUIRE_ENGINE=1, so this is an error, not a skip)\n", msg);
		exit(1);
	}
	fprintf(stderr, "SKIP: %s\n", msg);
	exit(HARNESS_SKIP);
}

static void at_exit(void)
{
	harness_cleanup();
	mafsbx_engine_close(engine);
	engine = NULL;
}

const char *harness_image(void)
{
	const char *v = getenv("MAFSBX_TEST_IMAGE");
	return v && *v ? v : "mafsbx/busybox:latest";
}

void harness_init(void)
{
	if (initialised)
		return;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	if (mafsbx_endpoint_resolve(NULL, NULL, NULL, &endpoint, &err) < 0)
		skip_or_fail("cannot resolve the engine endpoint: %s", err.message);
	struct mafsbx_engine_timeouts to = { .connect_ms = 3000, .request_ms = 60000 };
	engine = mafsbx_engine_open(&endpoint, &to, &err);
	if (!engine)
		skip_or_fail("cannot open the engine at %s: %s", endpoint.url, err.message);
	if (mafsbx_engine_ping(engine, &err) < 0) {
		mafsbx_engine_close(engine);
		engine = NULL;
		skip_or_fail("no engine answers at %s: %s", endpoint.url, err.message);
	}
	json_t *img = NULL;
	if (mafsbx_image_inspect(engine, harness_image(), &img, &err) < 0) {
		mafsbx_engine_close(engine);
		engine = NULL;
		skip_or_fail("test image %s is not there (%s); build it with `mafsbx mkimage`", harness_image(),
			     err.message);
	}
	json_decref(img);
	if (!cleanup_registered) {
		atexit(at_exit);
		cleanup_registered = true;
	}
	initialised = true;
}

struct mafsbx_engine *harness_engine(void)
{
	harness_init();
	return engine;
}

struct mafsbx_engine *harness_engine_with(const struct mafsbx_engine_timeouts *timeouts)
{
	harness_init();
	struct mafsbx_error err;
	struct mafsbx_engine *e = mafsbx_engine_open(&endpoint, timeouts, &err);
	if (!e)
		fail_msg("open engine: %s", err.message);
	return e;
}

void harness_check(int r, const struct mafsbx_error *err, const char *what)
{
	if (r < 0)
		fail_msg("%s: %s (kind %s, errno %s)", what, err ? err->message : "?",
			 err ? mafsbx_error_kind_name(err->kind) : "?", mafsbx_errno_name(-r));
}

void harness_unique_name(const char *prefix, char out[HARNESS_NAME_MAX])
{
	unsigned char rnd[6];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd)) {
		/* Fall back on time and pid: still unique enough across processes. */
		uint64_t v = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20) ^ (uint64_t)clock();
		memcpy(rnd, &v, sizeof(rnd));
	}
	if (fd >= 0)
		close(fd);
	snprintf(out, HARNESS_NAME_MAX, "mafsbxtest-%.40s-%02x%02x%02x%02x%02x%02x", prefix && *prefix ? prefix : "t",
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
}

static void add(char **list, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(list[i], name) == 0)
			return;
	if (*n >= MAX_OBJECTS)
		fail_msg("harness: too many objects registered");
	list[*n] = strdup(name);
	if (!list[*n])
		fail_msg("harness: out of memory");
	(*n)++;
}

void harness_register_container(const char *name)
{
	add(containers, &n_containers, name);
}

void harness_register_network(const char *name)
{
	add(networks, &n_networks, name);
}

void harness_register_image(const char *ref)
{
	add(images, &n_images, ref);
}

void harness_forget_container(const char *name)
{
	for (size_t i = 0; i < n_containers; i++) {
		if (strcmp(containers[i], name) == 0) {
			free(containers[i]);
			containers[i] = containers[--n_containers];
			return;
		}
	}
}

void harness_cleanup(void)
{
	if (!engine)
		return;
	struct mafsbx_error err;
	for (size_t i = 0; i < n_containers; i++) {
		/* A test may leave it paused or mid-stream: force, and say when it fails. */
		int r = mafsbx_container_delete(engine, containers[i], true, &err);
		if (r < 0 && err.kind != MAFSBX_EK_NO_CONTAINER)
			fprintf(stderr, "harness: cannot remove container %s: %s\n", containers[i], err.message);
		free(containers[i]);
	}
	n_containers = 0;
	for (size_t i = 0; i < n_networks; i++) {
		int r = mafsbx_network_delete(engine, networks[i], &err);
		if (r < 0 && err.kind != MAFSBX_EK_NO_OBJECT)
			fprintf(stderr, "harness: cannot remove network %s: %s\n", networks[i], err.message);
		free(networks[i]);
	}
	n_networks = 0;
	for (size_t i = 0; i < n_images; i++) {
		int r = mafsbx_image_delete(engine, images[i], &err);
		if (r < 0 && err.kind != MAFSBX_EK_NO_IMAGE)
			fprintf(stderr, "harness: cannot remove image %s: %s\n", images[i], err.message);
		free(images[i]);
	}
	n_images = 0;
}

void harness_container_cfg(const char *prefix, const json_t *config, bool start, char name[HARNESS_NAME_MAX])
{
	harness_init();
	json_t *cfg = config ? json_deep_copy(config) : json_object();
	if (!cfg)
		fail_msg("harness: out of memory");
	if (!json_object_get(cfg, "Image"))
		json_object_set_new(cfg, "Image", json_string(harness_image()));
	if (!json_object_get(cfg, "Cmd"))
		json_object_set_new(cfg, "Cmd", json_pack("[s,s]", "/bin/sleep", "infinity"));
	json_t *labels = json_object_get(cfg, "Labels");
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(cfg, "Labels", labels);
	}
	json_object_set_new(labels, "mafsbxtest", json_string("1"));
	if (!json_object_get(cfg, "HostConfig"))
		json_object_set_new(cfg, "HostConfig", json_pack("{s:s}", "NetworkMode", "none"));
	harness_unique_name(prefix, name);
	char id[65];
	struct mafsbx_error err;
	int r = mafsbx_container_create(engine, name, cfg, id, &err);
	json_decref(cfg);
	harness_check(r, &err, "harness: create test container");
	harness_register_container(name);
	if (start) {
		r = mafsbx_container_start(engine, name, &err);
		harness_check(r, &err, "harness: start test container");
	}
}

void harness_container(const char *prefix, char name[HARNESS_NAME_MAX])
{
	harness_container_cfg(prefix, NULL, true, name);
}

int harness_sh_result(const char *container, const char *script, struct mafsbx_exec_result *res)
{
	harness_init();
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .user = "0:0", .timeout_ms = 30000 };
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_exec_run(engine, container, &rq, res, &err);
	if (r < 0)
		fprintf(stderr, "harness: sh in %s failed: %s\n", container, err.message);
	return r;
}

int harness_sh(const char *container, const char *script, int *exit_code)
{
	struct mafsbx_exec_result res;
	int r = harness_sh_result(container, script, &res);
	if (r == 0) {
		if (exit_code)
			*exit_code = res.exit_code;
		if (res.exit_code != 0)
			fprintf(stderr, "harness: sh exit %d\n  script: %s\n  stdout: %.*s\n  stderr: %.*s\n", res.exit_code,
				script, (int)(res.out_len > 2000 ? 2000 : res.out_len), (char *)res.out,
				(int)(res.err_len > 2000 ? 2000 : res.err_len), (char *)res.err);
	}
	mafsbx_exec_result_free(&res);
	return r;
}

void harness_rundir(const char *what, char dir[HARNESS_RUNDIR_MAX])
{
	snprintf(dir, HARNESS_RUNDIR_MAX, "/tmp/mafsbxtest-%s-run-XXXXXX", what);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
}

void harness_rundir_remove(const char *dir)
{
	char cmd[HARNESS_RUNDIR_MAX + 32];
	/* only our own private runtime dir */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

int harness_child_freezer(const char *dir, struct mafsbx_engine **eng, struct mafsbx_freezer **fz)
{
	struct mafsbx_error err;
	struct mafsbx_endpoint ep;
	*eng = NULL;
	*fz = NULL;
	if (mafsbx_endpoint_resolve(NULL, NULL, NULL, &ep, &err) < 0)
		return 2;
	*eng = mafsbx_engine_open(&ep, NULL, &err);
	*fz = *eng ? mafsbx_freezer_new(*eng, dir, &err) : NULL;
	return *fz ? 0 : 3;
}

void harness_child_close(struct mafsbx_engine *eng, struct mafsbx_freezer *fz)
{
	mafsbx_freezer_free(fz);
	mafsbx_engine_close(eng);
}
