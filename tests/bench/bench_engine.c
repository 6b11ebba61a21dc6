/*
 * bench_engine.c: this Engine API client against the docker CLI doing the
 * same thing, in one run, on one throw-away container. Prints per-operation
 * medians (ms) as a markdown table. A program, not a test.
 *
 *   bench_engine [RUNS]        (default 25 runs per operation)
 *
 * The CLI is MAFSBX_DOCKER_CLI, else /usr/bin/docker, else `docker` in PATH,
 * spawned with posix_spawn and its stdout sent to /dev/null. Runs of both
 * sides are interleaved so background load hits them alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "buf.h"
#include "endpoint.h"
#include "engine.h"

extern char **environ;

static struct mafsbx_engine *eng;
static char cname[96];
static const char *cli;

static void die(const char *what, const struct mafsbx_error *err)
{
	fprintf(stderr, "bench_engine: %s: %s\n", what, err ? err->message : strerror(errno));
	if (eng && cname[0]) {
		struct mafsbx_error e2;
		mafsbx_container_unpause(eng, cname, &e2);
		mafsbx_container_delete(eng, cname, true, &e2);
	}
	exit(1);
}

/* The CLI with argv, stdout to /dev/null; returns its exit status. */
#define run_cli(args) bench_cli_run(cli, (args), die)

static int discard(const void *d, size_t l, void *c)
{
	(void)d;
	*(size_t *)c += l;
	return 0;
}

enum op { OP_PAUSE, OP_UNPAUSE, OP_STAT, OP_GET6, OP_GET1M, OP_EXEC, OP_INSPECT, OP_N };
static const char *op_names[OP_N] = {
	"pause", "unpause", "stat `/w/file` (HEAD vs `docker cp c:/w/file -`)", "GET 6 B (vs `docker cp`)",
	"GET 1 MiB (vs `docker cp`)", "exec `true` (vs `docker exec c true`)", "inspect",
};

static double ours(enum op op)
{
	struct mafsbx_error err;
	struct mafsbx_path_stat st;
	size_t got = 0;
	double t0 = bench_now_ms();
	int r = 0;
	switch (op) {
	case OP_PAUSE:
		r = mafsbx_container_pause(eng, cname, &err);
		break;
	case OP_UNPAUSE:
		r = mafsbx_container_unpause(eng, cname, &err);
		break;
	case OP_STAT:
		r = mafsbx_archive_head(eng, cname, "/w/file", &st, &err);
		break;
	case OP_GET6:
		r = mafsbx_archive_get(eng, cname, "/w/file", 0, discard, &got, NULL, &err);
		break;
	case OP_GET1M:
		r = mafsbx_archive_get(eng, cname, "/w/mib", 0, discard, &got, NULL, &err);
		break;
	case OP_EXEC: {
		const char *argv[] = { "/bin/true", NULL };
		struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 30000 };
		struct mafsbx_exec_result res;
		r = mafsbx_exec_run(eng, cname, &rq, &res, &err);
		if (r == 0 && res.exit_code != 0)
			r = -EIO;
		mafsbx_exec_result_free(&res);
		break;
	}
	case OP_INSPECT: {
		json_t *j = NULL;
		r = mafsbx_container_inspect(eng, cname, &j, &err);
		json_decref(j);
		break;
	}
	default:
		break;
	}
	double dt = bench_now_ms() - t0;
	if (r < 0)
		die(op_names[op], &err);
	return dt;
}

static double theirs(enum op op)
{
	char src6[160], src1m[160];
	snprintf(src6, sizeof(src6), "%s:/w/file", cname);
	snprintf(src1m, sizeof(src1m), "%s:/w/mib", cname);
	const char *pause[] = { "pause", cname, NULL }, *unpause[] = { "unpause", cname, NULL };
	const char *cp6[] = { "cp", src6, "-", NULL }, *cp1m[] = { "cp", src1m, "-", NULL };
	const char *ex[] = { "exec", cname, "/bin/true", NULL }, *insp[] = { "inspect", cname, NULL };
	const char *const *args = NULL;
	switch (op) {
	case OP_PAUSE: args = pause; break;
	case OP_UNPAUSE: args = unpause; break;
	case OP_STAT: args = cp6; break;
	case OP_GET6: args = cp6; break;
	case OP_GET1M: args = cp1m; break;
	case OP_EXEC: args = ex; break;
	case OP_INSPECT: args = insp; break;
	default: break;
	}
	double t0 = bench_now_ms();
	int st = run_cli(args);
	double dt = bench_now_ms() - t0;
	if (st != 0) {
		fprintf(stderr, "bench_engine: `docker %s` exited %d\n", args[0], st);
		die("docker CLI failed", NULL);
	}
	return dt;
}

/* The throw-away container, with /w/file (6 B) and /w/mib (1 MiB). */
static void make_container(const char *image)
{
	struct mafsbx_error err;
	unsigned rnd = (unsigned)getpid() ^ (unsigned)time(NULL) * 2654435761u;
	snprintf(cname, sizeof(cname), "mafsbxtest-bench-%08x", rnd);
	json_t *cfg = json_pack("{s:s, s:{s:s}, s:{s:s}}", "Image", image, "Labels", "mafsbxtest", "1", "HostConfig",
				"NetworkMode", "none");
	char id[65];
	if (mafsbx_container_create(eng, cname, cfg, id, &err) < 0)
		die("create container", &err);
	json_decref(cfg);
	if (mafsbx_container_start(eng, cname, &err) < 0)
		die("start container", &err);
	const char *fix[] = { "/bin/sh", "-c", "mkdir -p /w && printf 'hello!' > /w/file && head -c 1048576 /dev/urandom > /w/mib",
			      NULL };
	struct mafsbx_exec_request rq = { .argv = fix, .timeout_ms = 30000 };
	struct mafsbx_exec_result res;
	if (mafsbx_exec_run(eng, cname, &rq, &res, &err) < 0 || res.exit_code != 0)
		die("plant fixtures", &err);
	mafsbx_exec_result_free(&res);

}

/* Both sides interleaved, `runs` times per operation; medians into med_a (ours) and med_b (the CLI). */
static void measure(int runs, double med_a[OP_N], double med_b[OP_N])
{
	/* Warm up both sides (page cache, connection, CLI binary). */
	ours(OP_INSPECT);
	theirs(OP_INSPECT);

	double *a = calloc((size_t)runs, sizeof(double)), *b = calloc((size_t)runs, sizeof(double));
	if (!a || !b)
		die("out of memory", NULL);
	for (int op = 0; op < OP_N; op++) {
		if (op == OP_UNPAUSE)
			continue;  /* measured together with pause */
		double *ua = calloc((size_t)runs, sizeof(double)), *ub = calloc((size_t)runs, sizeof(double));
		if (!ua || !ub)
			die("out of memory", NULL);
		for (int i = 0; i < runs; i++) {
			if (op == OP_PAUSE) {
				a[i] = ours(OP_PAUSE);
				ua[i] = ours(OP_UNPAUSE);
				b[i] = theirs(OP_PAUSE);
				ub[i] = theirs(OP_UNPAUSE);
			} else {
				a[i] = ours((enum op)op);
				b[i] = theirs((enum op)op);
			}
		}
		med_a[op] = bench_median(a, runs);
		med_b[op] = bench_median(b, runs);
		if (op == OP_PAUSE) {
			med_a[OP_UNPAUSE] = bench_median(ua, runs);
			med_b[OP_UNPAUSE] = bench_median(ub, runs);
		}
		free(ua);
		free(ub);
	}
	free(a);
	free(b);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 25;
	if (runs < 3 || runs > 1000) {
		fprintf(stderr, "usage: bench_engine [RUNS 3..1000]\n");
		return 2;
	}
	cli = getenv("MAFSBX_DOCKER_CLI");
	if (!cli || !*cli)
		cli = access("/usr/bin/docker", X_OK) == 0 ? "/usr/bin/docker" : "docker";
	const char *image = getenv("MAFSBX_TEST_IMAGE");
	if (!image || !*image)
		image = "mafsbx/busybox:latest";

	struct mafsbx_error err;
	struct mafsbx_endpoint ep;
	if (mafsbx_endpoint_resolve(NULL, NULL, NULL, &ep, &err) < 0)
		die("resolve endpoint", &err);
	if (!(eng = mafsbx_engine_open(&ep, NULL, &err)))
		die("open engine", &err);
	if (mafsbx_engine_ping(eng, &err) < 0)
		die("ping", &err);
	struct mafsbx_engine_version v;
	if (mafsbx_engine_version(eng, &v, &err) < 0)
		die("version", &err);

	make_container(image);

	double med_a[OP_N], med_b[OP_N];
	measure(runs, med_a, med_b);
	mafsbx_container_delete(eng, cname, true, &err);

	printf("Engine %s (API %s), CLI %s, %d runs per operation, medians in ms\n\n", v.version, v.api_version, cli,
	       runs);
	printf("| operation | mafsbx engine.c | docker CLI | speed-up |\n|---|---:|---:|---:|\n");
	for (int op = 0; op < OP_N; op++)
		printf("| %s | %.2f | %.2f | %.1fx |\n", op_names[op], med_a[op], med_b[op], med_b[op] / med_a[op]);
	mafsbx_engine_close(eng);
	return 0;
}
