/*
 * bench_files.c: the frozen file plane against the upstream way and the
 * engine's floor, and what polling costs the guest. A program, not a test.
 *
 *   bench_files [RUNS [SECONDS]]   (default 15 runs per figure, 10 s per CPU phase)
 *
 * Per path depth (1, 4, 8 components below the working directory), medians
 * in ms of:
 *   - lib stat:  mafsbx_files_stat (freeze, HEAD per ancestor, HEAD leaf, unfreeze)
 *   - lib read:  mafsbx_files_read of a 1 KiB file (the same checks + one GET)
 *   - CLI way:   what upstream runs: docker pause, one `docker cp C:P -` per
 *                ancestor, `docker cp` of the file, docker unpause
 *   - floors:    pause + unpause (what any frozen stat costs), and
 *                pause + one archive GET + unpause (any frozen read), no checks
 * Then the guest's share of CPU time while a busy loop runs in it: with no
 * polling, with this library statting one of its files 5 times a second,
 * with a bare pause+unpause 5 times a second (the freeze's own floor), and
 * with the CLI way doing the same (upstream measured 43% against 91%).
 * The share is the container's cpuacct time over wall time when the cgroup
 * is visible, and the loop's iteration rate relative to no polling.
 *
 * The CLI is MAFSBX_DOCKER_CLI, else `docker` in PATH, spawned with
 * posix_spawn (stdout to /dev/null). Runs are interleaved so background load
 * hits every column alike. The container is removed at exit.
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
#include "files.h"
#include "freeze.h"

extern char **environ;

#define WD "/bench"

static struct mafsbx_engine *eng;
static struct mafsbx_freezer *fz;
static char cname[96], cid[65], rundir[96];
static const char *cli;


static void cleanup(void)
{
	struct mafsbx_error e;
	if (eng && cname[0]) {
		mafsbx_container_unpause(eng, cname, &e);
		mafsbx_container_delete(eng, cname, true, &e);
		cname[0] = '\0';
	}
	if (fz) {
		mafsbx_freezer_free(fz);
		fz = NULL;
	}
	if (rundir[0]) {
		char p[200];
		snprintf(p, sizeof(p), "%s", rundir);
		/* the lock files, then the directory */
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_files: could not remove %s\n", p);
		rundir[0] = '\0';
	}
}

static void die(const char *what, const struct mafsbx_error *err)
{
	fprintf(stderr, "bench_files: %s: %s\n", what, err ? err->message : strerror(errno));
	exit(1);
}

/* The CLI with argv, stdout to /dev/null; returns its exit status. */
#define run_cli(args) bench_cli_run(cli, (args), die)

static const char *const rel_paths[3] = { "f1.bin", "a/b/c/f4.bin", "a/b/c/d/e/f/g/f8.bin" };
static const int depths[3] = { 1, 4, 8 };

/* The upstream sequence: pause, cp of every ancestor from the first component of WD, cp of the file, unpause. */
static int cli_way(const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", WD, rel);
	int bad = 0;
	const char *pa[] = { "pause", cname, NULL };
	bad |= run_cli(pa);
	for (char *s = path + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		char src[600];
		snprintf(src, sizeof(src), "%s:%s", cname, path);
		const char *cp[] = { "cp", src, "-", NULL };
		bad |= run_cli(cp);
		*s = c;
		if (!c)
			break;
	}
	const char *un[] = { "unpause", cname, NULL };
	bad |= run_cli(un);
	return bad;
}

static int discard(const void *data, size_t len, void *ctx)
{
	(void)data;
	*(size_t *)ctx += len;
	return 0;
}

static void floor_op(const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", WD, rel);
	struct mafsbx_error err;
	size_t got = 0;
	if (mafsbx_container_pause(eng, cid, &err) < 0)
		die("floor pause", &err);
	if (mafsbx_archive_get(eng, cid, path, 0, discard, &got, NULL, &err) < 0)
		die("floor get", &err);
	if (mafsbx_container_unpause(eng, cid, &err) < 0)
		die("floor unpause", &err);
}

static void floor_freeze(void)
{
	struct mafsbx_error err;
	if (mafsbx_container_pause(eng, cid, &err) < 0)
		die("floor pause", &err);
	if (mafsbx_container_unpause(eng, cid, &err) < 0)
		die("floor unpause", &err);
}

static struct mafsbx_files_target target(void)
{
	struct mafsbx_files_target t = { .container = cid, .work_dir = WD, .uid = 0, .gid = 0 };
	return t;
}

static void lib_stat(const char *rel)
{
	struct mafsbx_files_target t = target();
	struct mafsbx_fstat st;
	struct mafsbx_error err;
	if (mafsbx_files_stat(fz, &t, rel, 0, &st, &err) < 0 || st.kind != MAFSBX_FK_FILE)
		die("lib stat", &err);
}

static void lib_read(const char *rel)
{
	struct mafsbx_files_target t = target();
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct mafsbx_error err;
	if (mafsbx_files_read(fz, &t, rel, 1 << 20, -1, &b, 0, NULL, &err) < 0 || b.len != 1024)
		die("lib read", &err);
	mafsbx_buf_free(&b);
}

/* ---- guest CPU share ------------------------------------------------------ */

static int guest_sh(const char *script, struct mafsbx_buf *out)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 30000 };
	struct mafsbx_exec_result res;
	struct mafsbx_error err;
	if (mafsbx_exec_run(eng, cid, &rq, &res, &err) < 0)
		die("exec", &err);
	if (out)
		mafsbx_buf_append(out, res.out, res.out_len);
	int code = res.exit_code;
	mafsbx_exec_result_free(&res);
	return code;
}

static long long guest_count(void)
{
	/* the loop rewrites the file: a read can land between truncate and write */
	long long n = 0;
	for (int i = 0; i < 20 && n == 0; i++) {
		struct mafsbx_buf b = MAFSBX_BUF_INIT;
		guest_sh("cat /tmp/count 2>/dev/null", &b);
		n = b.data ? atoll(b.data) : 0;
		mafsbx_buf_free(&b);
	}
	return n;
}

/* Container CPU time in ns from the cgroup (v1 cpuacct or v2 cpu.stat), or -1. */
static long long cgroup_cpu_ns(void)
{
	static const char *const dirs[] = { "/sys/fs/cgroup/cpuacct/docker/", "/sys/fs/cgroup/cpu,cpuacct/docker/",
					    "/sys/fs/cgroup/system.slice/docker-", "/sys/fs/cgroup/docker/" };
	static const char *const tails[] = { "/cpuacct.usage", "/cpuacct.usage", ".scope/cpu.stat", "/cpu.stat" };
	for (size_t i = 0; i < 4; i++) {
		char p[512];
		snprintf(p, sizeof(p), "%s%s%s", dirs[i], cid, tails[i]);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		long long v = -1;
		if (strstr(tails[i], "cpuacct")) {
			if (fscanf(f, "%lld", &v) != 1)
				v = -1;
		} else {
			char key[64];
			long long x;
			while (fscanf(f, "%63s %lld", key, &x) == 2)
				if (strcmp(key, "usage_usec") == 0) {
					v = x * 1000;
					break;
				}
		}
		fclose(f);
		return v;
	}
	return -1;
}

struct share {
	double cpu;        /* cgroup CPU time / wall, or -1 */
	double rate;       /* loop iterations per second */
	int polls;
};

enum poller { POLL_NONE, POLL_LIB, POLL_FLOOR, POLL_CLI };

static struct share cpu_phase(enum poller p, double seconds)
{
	struct share s = { -1, 0, 0 };
	long long c0 = guest_count(), n0 = cgroup_cpu_ns();
	double t0 = bench_now_ms(), end = t0 + seconds * 1000;
	double next = t0;
	while (bench_now_ms() < end) {
		if (p == POLL_NONE) {
			usleep(50000);
			continue;
		}
		double t = bench_now_ms();
		if (t < next) {
			usleep((useconds_t)((next - t) * 1000));
			continue;
		}
		next += 200; /* 5 times a second, never catching up in a burst */
		if (next < t)
			next = t + 200;
		if (p == POLL_LIB)
			lib_stat(rel_paths[0]);
		else if (p == POLL_FLOOR)
			floor_freeze();
		else
			cli_way(rel_paths[0]);
		s.polls++;
	}
	double t1 = bench_now_ms();
	long long n1 = cgroup_cpu_ns(), c1 = guest_count();
	if (n0 >= 0 && n1 >= 0)
		s.cpu = (double)(n1 - n0) / ((t1 - t0) * 1e6);
	s.rate = (double)(c1 - c0) / ((t1 - t0) / 1000);
	return s;
}

/* The container, and 1 KiB files at depth 1, 4 and 8 below the working directory. */
static void make_fixtures(void)
{
	struct mafsbx_error err;
	const char *image = getenv("MAFSBX_TEST_IMAGE") ? getenv("MAFSBX_TEST_IMAGE") : "mafsbx/busybox:latest";
	srand((unsigned)(time(NULL) ^ getpid()));
	snprintf(cname, sizeof(cname), "mafsbxbench-files-%08x%04x", (unsigned)rand(), (unsigned)(rand() & 0xffff));
	json_t *cfg = json_pack("{s:s, s:[s,s], s:{s:s}, s:{s:s}}", "Image", image, "Cmd", "/bin/sleep", "infinity",
				"Labels", "mafsbxtest", "1", "HostConfig", "NetworkMode", "none");
	if (mafsbx_container_create(eng, cname, cfg, cid, &err) < 0)
		die("create", &err);
	json_decref(cfg);
	if (mafsbx_container_start(eng, cid, &err) < 0)
		die("start", &err);

	char kib[1024];
	memset(kib, 'k', sizeof(kib));
	unsigned made;
	if (mafsbx_files_prepare_base(fz, cid, WD, 0, 0, 0, &made, &err) < 0)
		die("prepare", &err);
	struct mafsbx_files_target t = target();
	for (int d = 0; d < 3; d++)
		if (mafsbx_files_write(fz, &t, rel_paths[d], kib, sizeof(kib), 0, 0, &err) < 0)
			die("fixture", &err);
}

/*
 * The medians table: each way at each depth, `runs` times (the CLI
 * `cli_runs` times); the freezer's counters after it into fs.
 */
static void bench_medians(int runs, int cli_runs, struct mafsbx_freeze_stats *fs)
{
	/* warm the connections and the CLI */
	lib_stat(rel_paths[0]);
	lib_read(rel_paths[0]);
	floor_op(rel_paths[0]);
	if (cli_way(rel_paths[0]) != 0)
		die("the docker CLI failed on the warm-up", NULL);

	double *v[5][3];
	for (int k = 0; k < 5; k++)
		for (int d = 0; d < 3; d++)
			v[k][d] = calloc((size_t)runs, sizeof(double));
	for (int i = 0; i < runs; i++) {
		for (int d = 0; d < 3; d++) {
			double a = bench_now_ms();
			lib_stat(rel_paths[d]);
			double b = bench_now_ms();
			lib_read(rel_paths[d]);
			double c = bench_now_ms();
			floor_op(rel_paths[d]);
			double e = bench_now_ms();
			floor_freeze();
			double h = bench_now_ms();
			v[0][d][i] = b - a;
			v[1][d][i] = c - b;
			v[3][d][i] = e - c;
			v[4][d][i] = h - e;
			if (i < cli_runs) {
				double g = bench_now_ms();
				if (cli_way(rel_paths[d]) != 0)
					die("the docker CLI failed", NULL);
				v[2][d][i] = bench_now_ms() - g;
			}
		}
	}
	printf("## bench_files: medians in ms (%d runs; CLI %d runs; CLI = %s)\n\n", runs, cli_runs, cli);
	printf("| depth | engine calls (lib) | lib frozen stat | floor: pause+unpause | lib frozen 1 KiB read | floor: pause+GET+unpause | upstream CLI way |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (int d = 0; d < 3; d++) {
		/* chain = first component of WD .. parent, plus the leaf */
		int heads = 1 + depths[d];
		printf("| %d | stat: pause + %d HEAD + unpause; read: + 1 GET | %.1f | %.1f | %.1f | %.1f | %.1f |\n",
		       depths[d], heads, bench_median(v[0][d], runs), bench_median(v[4][d], runs), bench_median(v[1][d], runs),
		       bench_median(v[3][d], runs), bench_median(v[2][d], cli_runs));
	}
	mafsbx_freezer_stats(fz, fs);

	for (int k = 0; k < 5; k++)
		for (int d = 0; d < 3; d++)
			free(v[k][d]);
}

/* The guest's CPU share with a busy loop, under each kind of polling. */
static void bench_share(double seconds)
{
	/* guest CPU share: a busy loop counting iterations */
	guest_sh("(i=0; while :; do i=$((i+1)); case $i in *0000) echo $i > /tmp/count;; esac; done) "
		 ">/dev/null 2>&1 &",
		 NULL);
	usleep(500000);
	struct share none = cpu_phase(POLL_NONE, seconds);
	struct share lib = cpu_phase(POLL_LIB, seconds);
	struct share flo = cpu_phase(POLL_FLOOR, seconds);
	struct share clis = cpu_phase(POLL_CLI, seconds);
	printf("\n## guest CPU share with a busy loop (%.0f s per phase)\n\n", seconds);
	printf("| host activity | polls | guest CPU time / wall (cgroup) | loop rate (iter/s) | rate vs no polling |\n");
	printf("|---|---|---|---|---|\n");
	const struct { const char *name; struct share s; } rows[] = {
		{ "no polling", none }, { "lib stat 5/s", lib }, { "engine floor: pause+unpause 5/s", flo },
		{ "upstream CLI way 5/s", clis } };
	for (int i = 0; i < 4; i++) {
		char cpu[32] = "n/a";
		if (rows[i].s.cpu >= 0)
			snprintf(cpu, sizeof(cpu), "%.0f%%", rows[i].s.cpu * 100);
		printf("| %s | %d | %s | %.0f | %.0f%% |\n", rows[i].name, rows[i].s.polls, cpu, rows[i].s.rate,
		       none.rate > 0 ? 100 * rows[i].s.rate / none.rate : 0);
	}
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 15;
	double seconds = argc > 2 ? atof(argv[2]) : 10;
	if (runs < 3)
		runs = 3;
	int cli_runs = runs / 2 < 5 ? 5 : runs / 2;
	if (cli_runs > runs)
		cli_runs = runs;   /* the CLI samples are taken inside the `runs` loop */
	cli = getenv("MAFSBX_DOCKER_CLI") ? getenv("MAFSBX_DOCKER_CLI") : "docker";
	atexit(cleanup);

	struct mafsbx_error err;
	snprintf(rundir, sizeof(rundir), "/tmp/mafsbxbench-files-XXXXXX");
	const char *step = bench_engine_setup(rundir, &eng, &fz, &err);
	if (step)
		die(step, &err);
	make_fixtures();
	struct mafsbx_freeze_stats fs;
	bench_medians(runs, cli_runs, &fs);
	bench_share(seconds);
	printf("\n(freezer during the medians: %llu pauses, %llu unpauses, %llu joins)\n",
	       (unsigned long long)fs.pauses, (unsigned long long)fs.unpauses, (unsigned long long)fs.joins);
	return 0;
}
