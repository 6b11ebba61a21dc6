/*
 * bench_fingerprint.c: what the nothing-left-behind measurement costs. A
 * program, not a test.
 *
 *   bench_fingerprint [RUNS]   (default 9 runs per figure)
 *
 * Medians in ms (wall, and this process's CPU time, which load on a shared
 * machine does not inflate), with entries, processes and bytes hashed, of:
 *   - a snapshot of a fresh busybox sandbox (the test image, sleep infinity);
 *   - the same sandbox with 10,000 small files (16 bytes each, 100 dirs);
 *   - the diff of two snapshots of it (in memory), and the JSON form
 *     written and read back (what `-o` and `--diff FILE` add).
 * The container is removed at exit. Needs root (the snapshot reads /proc).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "endpoint.h"
#include "engine.h"
#include "fingerprint.h"

static struct mafsbx_engine *eng;
static char cname[96], cid[65];

static void cleanup(void)
{
	struct mafsbx_error e;
	if (eng && cname[0]) {
		mafsbx_container_delete(eng, cname, true, &e);
		cname[0] = '\0';
	}
}

static void die(const char *what, const struct mafsbx_error *e)
{
	fprintf(stderr, "bench_fingerprint: %s: %s\n", what, e ? e->message : "failed");
	cleanup();
	exit(1);
}

static void sh(const char *script)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .user = "0:0", .timeout_ms = 600000 };
	struct mafsbx_exec_result res;
	struct mafsbx_error err;
	if (mafsbx_exec_run(eng, cid, &rq, &res, &err) < 0)
		die("exec", &err);
	if (res.exit_code != 0)
		die(script, NULL);
	mafsbx_exec_result_free(&res);
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Wall and CPU time (this process: the walk is single-threaded; the engine's share is not in it). */
static struct mafsbx_fp *take(double *ms, double *cpu)
{
	struct mafsbx_fp *fp = NULL;
	struct mafsbx_error err;
	double t0 = bench_now_ms(), c0 = cpu_ms();
	if (mafsbx_fingerprint_take(eng, cid, NULL, &fp, &err) < 0)
		die("fingerprint", &err);
	*ms = bench_now_ms() - t0;
	if (cpu)
		*cpu = cpu_ms() - c0;
	return fp;
}

static void row(const char *what, int runs)
{
	double *v = calloc((size_t)runs, sizeof(double)), *cv = calloc((size_t)runs, sizeof(double));
	struct mafsbx_fp *last = NULL;
	for (int i = 0; i < runs; i++) {
		mafsbx_fp_free(last);
		last = take(&v[i], &cv[i]);
	}
	double med = bench_median(v, runs), cmed = bench_median(cv, runs);
	printf("%-34s %8.1f ms (CPU %.1f ms)  %7zu entries  %3zu processes  %10llu bytes hashed\n", what, med, cmed,
	       last->n_entries, last->n_procs, (unsigned long long)last->bytes_hashed);
	/* diff of two snapshots, and the JSON round trip */
	double t;
	struct mafsbx_fp *other = take(&t, NULL);
	double *d = calloc((size_t)runs, sizeof(double)), *j = calloc((size_t)runs, sizeof(double));
	size_t changes = 0;
	for (int i = 0; i < runs; i++) {
		double t0 = bench_now_ms();
		changes = mafsbx_fp_diff(last, other, 0, NULL);
		d[i] = bench_now_ms() - t0;
		t0 = bench_now_ms();
		json_t *js = mafsbx_fp_to_json(last);
		char *text = json_dumps(js, JSON_COMPACT);
		json_t *back = json_loads(text, 0, NULL);
		struct mafsbx_fp *re = NULL;
		struct mafsbx_error err;
		if (!back || mafsbx_fp_from_json(back, &re, &err) < 0)
			die("JSON round trip", NULL);
		j[i] = bench_now_ms() - t0;
		if (i == 0)
			printf("%-34s %8zu bytes of JSON\n", "  snapshot file", strlen(text));
		mafsbx_fp_free(re);
		json_decref(back);
		json_decref(js);
		free(text);
	}
	printf("%-34s %8.2f ms  (%zu changes)\n", "  diff of two snapshots", bench_median(d, runs), changes);
	printf("%-34s %8.2f ms\n", "  JSON write + read back", bench_median(j, runs));
	mafsbx_fp_free(other);
	mafsbx_fp_free(last);
	free(v);
	free(cv);
	free(d);
	free(j);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 9;
	if (runs < 1)
		runs = 1;
	const char *image = getenv("MAFSBX_TEST_IMAGE") ? getenv("MAFSBX_TEST_IMAGE") : "mafsbx/busybox:latest";
	struct mafsbx_endpoint ep;
	struct mafsbx_error err;
	if (mafsbx_endpoint_resolve(NULL, NULL, NULL, &ep, &err) < 0)
		die("endpoint", &err);
	if (!(eng = mafsbx_engine_open(&ep, NULL, &err)) || mafsbx_engine_ping(eng, &err) < 0)
		die("engine", &err);
	snprintf(cname, sizeof(cname), "mafsbxbench-fp-%d", (int)getpid());
	atexit(cleanup);
	json_t *cfg = json_pack("{s:s, s:[s,s], s:{s:s}}", "Image", image, "Cmd", "sleep", "infinity", "HostConfig",
				"NetworkMode", "none");
	if (mafsbx_container_create(eng, cname, cfg, cid, &err) < 0)
		die("create", &err);
	json_decref(cfg);
	if (mafsbx_container_start(eng, cid, &err) < 0)
		die("start", &err);
	printf("bench_fingerprint: %d runs per figure, medians\n", runs);
	row("fresh busybox sandbox", runs);
	double t0 = bench_now_ms();
	sh("mkdir -p /data && cd /data && for d in $(seq 1 100); do mkdir $d; done && "
	   "for d in $(seq 1 100); do (cd $d && seq 1 100 | xargs touch && for f in $(seq 1 100); do "
	   "echo 0123456789abcde > $f; done); done");
	printf("(planting 10,000 files took %.0f ms)\n", bench_now_ms() - t0);
	row("with 10,000 small files", runs);
	cleanup();
	mafsbx_engine_close(eng);
	eng = NULL;
	return 0;
}
