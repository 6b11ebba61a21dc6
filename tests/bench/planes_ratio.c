/*
 * planes_ratio.c: the engine plane's `ls -l` of 20 against one fresh stat
 * (planes_ratio.h), in one run with what bounds it: the guest's pauses per
 * `ls -l` (the engine's own event log) and the engine floor of the same work
 * (the fewest Engine API calls, no checks: a stat is a pause and the three
 * HEADs of its path; a listing is the same plus one GET of the directory's
 * archive). Every run is fresh: the pause before it is longer than a kept
 * listing's validity (src/guestfs/listsnap.h) and a burst's join window.
 */
#include "planes_ratio.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "benchlib.h"
#include "engine.h"
#include "error.h"
#include "freeze.h"
#include "listsnap.h"

#define GAP_US ((MAFSBX_LISTSNAP_VALID_MS + 200) * 1000)
#define MAX_RUNS 100
/*
 * CHECK=1 bounds. The target is 3x; CI's loaded machine gets a margin, as
 * bench_scale's do, and when the engine's own floor for the same work is
 * already over it (the archive GET, a process dockerd starts per call,
 * grows fastest with the load) the bound is the floor's ratio plus 25%.
 */
#define CHECK_RATIO 4.5
#define CHECK_OVER_FLOOR 1.25
#define CHECK_PAUSES 1.0

static double wall_s(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double t_stat(const char *path)
{
	struct stat st;
	double t = bench_now_ms();
	if (lstat(path, &st) < 0)
		planes_die("lstat %s: %s", path, strerror(errno));
	return bench_now_ms() - t;
}

static double t_lsl(const char *dir)
{
	char p[512];
	double t = bench_now_ms();
	DIR *d = opendir(dir);
	if (!d)
		planes_die("opendir %s: %s", dir, strerror(errno));
	int n = 0;
	struct dirent *de;
	struct stat st;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		n += lstat(p, &st) == 0;
	}
	closedir(d);
	double e = bench_now_ms() - t;
	if (n != 20)
		planes_die("ls -l %s: %d entries, want 20", dir, n);
	return e;
}

/* The pause events of `name` between two wall-clock times (the engine's own log). */
static int pauses_between(const char *name, double since, double until)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
		 "docker events --since %.6f --until %.6f --filter container=%s --filter event=pause --format x | wc -l",
		 since, until, name);
	FILE *p = popen(cmd, "r");
	int n = -1;
	if (!p || fscanf(p, "%d", &n) != 1)
		planes_die("cannot count the pauses of %s", name);
	pclose(p);
	return n;
}

static int discard(const void *d, size_t n, void *ctx)
{
	(void)d;
	*(uint64_t *)ctx += n;
	return 0;
}

static void floor_ok(int r, const struct mafsbx_error *e, const char *what)
{
	if (r < 0)
		planes_die("engine floor %s: %s", what, e->message);
}

/* One run of the floor: pause, the three HEADs of a depth-1 path, the GET of plain/, unpause. */
static void floor_run(struct mafsbx_engine *eng, const char *name, double *pause, double *heads, double *get)
{
	static const char *const chain[] = { "/maf-sandbox", "/maf-sandbox/work", "/maf-sandbox/work/plain" };
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_path_stat st;
	uint64_t n = 0;
	double t0 = bench_now_ms();
	floor_ok(mafsbx_container_pause(eng, name, &e), &e, "pause");
	double t1 = bench_now_ms();
	for (int i = 0; i < 3; i++)
		floor_ok(mafsbx_archive_head(eng, name, chain[i], &st, &e), &e, "HEAD");
	double t2 = bench_now_ms();
	int r = mafsbx_archive_get(eng, name, chain[2], 0, discard, &n, NULL, &e);
	double t3 = bench_now_ms();
	struct mafsbx_error ue;
	mafsbx_error_clear(&ue);
	floor_ok(mafsbx_container_unpause(eng, name, &ue), &ue, "unpause");
	floor_ok(r, &e, "GET");
	*pause = t1 - t0;
	*heads = t2 - t1;
	*get = t3 - t2;
}

void planes_ratio_measure(const char *mnt, const char *name, int runs, struct planes_ratio *out)
{
	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	char st_path[256], dir[256], rundir[] = "/tmp/mafsbx-ratio-XXXXXX";
	snprintf(st_path, sizeof(st_path), "%s/%s/work/d1.txt", mnt, name);
	snprintf(dir, sizeof(dir), "%s/%s/work/plain", mnt, name);
	struct mafsbx_engine *eng = NULL;
	struct mafsbx_freezer *fz = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	const char *step = bench_engine_setup(rundir, &eng, &fz, &e);
	if (step)
		planes_die("engine floor: %s: %s", step, e.message);
	double st[MAX_RUNS], ls[MAX_RUNS], since[MAX_RUNS], until[MAX_RUNS], pz[MAX_RUNS];
	double fp[MAX_RUNS], fh[MAX_RUNS], fg[MAX_RUNS], fs[MAX_RUNS], fl[MAX_RUNS];
	for (int i = 0; i < runs; i++) {
		usleep(GAP_US);
		st[i] = t_stat(st_path);
		usleep(GAP_US);
		since[i] = wall_s();
		ls[i] = t_lsl(dir);
		until[i] = wall_s() + 0.05;
		usleep(GAP_US);
		/* at once: dockerd 20.10 keeps only its last 256 events, which a busy engine rolls over in seconds */
		pz[i] = pauses_between(name, since[i], until[i]);
		floor_run(eng, name, &fp[i], &fh[i], &fg[i]);
		fs[i] = fp[i] + fh[i];
		fl[i] = fs[i] + fg[i];
	}
	out->stat_ms = bench_median(st, runs);
	out->lsl_ms = bench_median(ls, runs);
	out->ratio = out->lsl_ms / out->stat_ms;
	out->pauses = bench_median(pz, runs);
	out->f_pause_ms = bench_median(fp, runs);
	out->f_head_ms = bench_median(fh, runs);
	out->f_get_ms = bench_median(fg, runs);
	out->f_stat_ms = bench_median(fs, runs);
	out->f_lsl_ms = bench_median(fl, runs);
	out->f_ratio = out->f_lsl_ms / out->f_stat_ms;
	mafsbx_freezer_free(fz);
	mafsbx_engine_close(eng);
	rmdir(rundir);
}

int planes_ratio_print(const struct planes_ratio *r, int runs)
{
	printf("\n## Engine plane: `ls -l` of 20 against one fresh stat (%d interleaved runs, medians in ms)\n\n", runs);
	printf("| | fresh stat (depth 1) | `ls -l` of 20 | ratio | pauses per `ls -l` |\n|---|---:|---:|---:|---:|\n");
	printf("| mafsbxfs, engine plane | %.1f | %.1f | %.2fx | %.0f |\n", r->stat_ms, r->lsl_ms, r->ratio, r->pauses);
	printf("| engine floor (pause + 3 HEADs; + the GET) | %.1f | %.1f | %.2fx | 1 |\n", r->f_stat_ms, r->f_lsl_ms,
	       r->f_ratio);
	printf("\n- the floor's parts: pause %.1f, 3 HEADs %.1f, GET of the 20-file directory's archive %.1f\n",
	       r->f_pause_ms, r->f_head_ms, r->f_get_ms);
	printf("- ratio ls -l of 20 / one fresh stat: %.2fx (target 3x)\n", r->ratio);
	const char *check = getenv("CHECK");
	if (!check || strcmp(check, "1") != 0)
		return 0;
	int bad = 0;
	double bound = r->f_ratio * CHECK_OVER_FLOOR > CHECK_RATIO ? r->f_ratio * CHECK_OVER_FLOOR : CHECK_RATIO;
	if (r->ratio > bound) {
		printf("CHECK: the ratio %.2fx is over its bound %.2fx\n", r->ratio, bound);
		bad = 1;
	}
	if (r->pauses > CHECK_PAUSES) {
		printf("CHECK: %.0f pauses per ls -l, over its bound %.0f (one freeze per listing)\n", r->pauses,
		       CHECK_PAUSES);
		bad = 1;
	}
	if (!bad)
		printf("CHECK: within the bounds (ratio <= %.2fx, pauses per ls -l <= %.0f)\n", bound, CHECK_PAUSES);
	return bad;
}
