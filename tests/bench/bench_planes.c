/*
 * bench_planes.c: the local plane against the engine plane, the kernel
 * floor and the docker CLI, in one run (doc/performance.md). Medians.
 *
 * Four mounts of the same engine with attr_timeout=0 (every stat reaches
 * the daemon): -o plane=local, -o plane=engine, -o plane=engine with
 * burst_ms=0 (every call its own freeze: the engine plane before bursts),
 * and -o plane=engine with listing=exec (the listings by the guest's find
 * alone, beside the default's archive listing).
 * One sandbox holds files at depth 1, 4 and 8, twenty declared outputs in outs/, twenty guest files
 * in plain/ and a thousand in flat/ (none declared: the engine plane lists them from the guest),
 * twenty in deep/ beside deep/sub/ of 100 MiB (where the archive listing must stop early),
 * a 1,000-file tree and a 256 MiB file. Each figure is measured on:
 *   floor   the same system calls on /proc/PID/root/... directly (no FUSE):
 *           what the kernel alone costs;
 *   local   through the local-plane mount;
 *   engine  through the engine-plane mount (one freeze per uncached call);
 *   CLI     `docker cp` of the 256 MiB file (the upstream way's transfer).
 * Plus the daemon's RSS during the 256 MiB read, and the guest's CPU share
 * (iterations of a busy loop) while the host polls a stat at 50 Hz.
 *
 * Every run also prints the engine plane's `ls -l` of 20 against one fresh
 * stat, with its pauses per `ls -l` and the engine floor of the same work
 * (planes_ratio.c); --ratio prints only that (two mounts, a small sandbox:
 * under a minute), and with CHECK=1 in the environment a ratio or a pause
 * count over its bound exits 1 (CI: contrib/test.sh).
 *
 * Usage: bench_planes [--mafsbxfs PATH] [--runs N] [--image IMG] [--small] [--ratio]
 * (--small: the stats, reads and listings only, not find, 256 MiB or the CPU share)
 * Needs root, /dev/fuse, dockerd, the test image and the docker CLI.
 * Removes everything it made.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "listsnap.h"
#include "planes_ratio.h"

extern char **environ;

#define GW "/maf-sandbox/work"
#define BIG_MIB 256

static const char *opt_mafsbxfs = "build/fs/mafsbxfs";
static const char *opt_image = "mafsbx/busybox:latest";
static int opt_runs = 200;
static bool opt_small;       /* --small: the stats, reads and listings only */
static bool opt_ratio;       /* --ratio: the engine plane's ls -l / fresh stat only (CI: CHECK=1) */

static char mnt_local[64], mnt_engine[64], mnt_single[64], mnt_exec[64];
static pid_t pid_local = -1, pid_engine = -1, pid_single = -1, pid_exec = -1;
static char scope[64], name[64], rootp[64];

static void cleanup(void);
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void __attribute__((noreturn, format(printf, 1, 0))) vdie(const char *fmt, va_list ap)
{
	fprintf(stderr, "bench_planes: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	cleanup();
	exit(1);
}

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vdie(fmt, ap);
}

void planes_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vdie(fmt, ap);
}

static int run(const char *const *argv, bool quiet)
{
	pid_t p;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	int r = posix_spawnp(&p, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r)
		return -1;
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void guest(const char *script)
{
	const char *argv[] = { "docker", "exec", "-u", "0", name, "sh", "-c", script, NULL };
	if (run(argv, false) != 0)
		die("guest command failed: %s", script);
}

static pid_t mount_one(char *mnt, const char *plane)
{
	snprintf(mnt, 64, "/tmp/mafsbx-planes-XXXXXX");
	if (!mkdtemp(mnt))
		die("mkdtemp: %s", strerror(errno));
	char o[128];
	snprintf(o, sizeof(o), "attr_timeout=0,max_read=%llu,plane=%s", 512ULL << 20, plane);
	const char *argv[] = { opt_mafsbxfs, "-f", "-o", o, mnt, NULL };
	pid_t p;
	if (posix_spawn(&p, opt_mafsbxfs, NULL, NULL, (char *const *)argv, environ))
		die("cannot start %s", opt_mafsbxfs);
	char probe[128];
	snprintf(probe, sizeof(probe), "%s/.ctl/engine", mnt);
	for (int i = 0; i < 200; i++) {
		struct stat st;
		if (stat(probe, &st) == 0)
			return p;
		usleep(50000);
	}
	die("mount %s did not appear", mnt);
	return -1;
}

static int ctl(const char *mnt, const char *kind, const char *req, char *reply, size_t size)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/.ctl/%s", mnt, kind);
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return -errno;
	int r = write(fd, req, strlen(req)) < 0 ? -errno : 0;
	ssize_t n = read(fd, reply, size - 1);
	reply[n > 0 ? n : 0] = '\0';
	close(fd);
	return r;
}

static void cleanup(void)
{
	static int done;
	if (done++)
		return;
	if (pid_local > 0 && scope[0]) {
		char req[256], rep[4096];
		snprintf(req, sizeof(req), "{\"scope\": \"%s\", \"thread\": \"t\"}", scope);
		ctl(mnt_local, "dispose", req, rep, sizeof(rep));
	}
	char *mnts[] = { mnt_local, mnt_engine, mnt_single, mnt_exec };
	pid_t pids[] = { pid_local, pid_engine, pid_single, pid_exec };
	for (int i = 0; i < 4; i++) {
		if (pids[i] <= 0)
			continue;
		const char *argv[] = { "fusermount3", "-u", mnts[i], NULL };
		run(argv, true);
		waitpid(pids[i], NULL, 0);
		rmdir(mnts[i]);
	}
}

static void on_signal(int sig)
{
	(void)sig;
	cleanup();
	_exit(1);
}

/* ---- the operations ------------------------------------------------------- */

static double t_lstat(const char *path)
{
	struct stat st;
	double t = bench_now_ms();
	if (lstat(path, &st) < 0)
		die("lstat %s: %s", path, strerror(errno));
	return bench_now_ms() - t;
}

static double t_cat(const char *path)
{
	char buf[4096];
	double t = bench_now_ms();
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return bench_now_ms() - t;
}

static DIR *open_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		die("opendir %s: %s", dir, strerror(errno));
	return d;
}

/* ls -l: one listing, then an lstat of every entry. */
static double t_lsl(const char *dir, int want)
{
	double t = bench_now_ms();
	DIR *d = open_dir(dir);
	int n = 0;
	struct dirent *de;
	char p[512];
	struct stat st;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (lstat(p, &st) == 0)
			n++;
	}
	closedir(d);
	double e = bench_now_ms() - t;
	if (n != want)
		die("ls -l %s: %d entries, want %d", dir, n, want);
	return e;
}

/* find DIR -type f | xargs cat: a walk, a stat and a read of every file. */
static int walk_cat(const char *dir)
{
	DIR *d = open_dir(dir);
	int n = 0;
	struct dirent *de;
	char p[1024];
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			n += walk_cat(p);
		else if (S_ISREG(st.st_mode)) {
			t_cat(p);
			n++;
		}
	}
	closedir(d);
	return n;
}

static atomic_bool sampling;
static atomic_long rss_peak;

static void *rss_sampler(void *arg)
{
	pid_t p = *(pid_t *)arg;
	while (atomic_load(&sampling)) {
		long kb = bench_rss_kb(p);
		if (kb > atomic_load(&rss_peak))
			atomic_store(&rss_peak, kb);
		usleep(20000);
	}
	return NULL;
}

/* MB/s of reading a file with 128 KiB reads. */
static double read_rate(const char *path)
{
	static char buf[128 * 1024];
	double t = bench_now_ms();
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	uint64_t total = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += (uint64_t)n;
	close(fd);
	if (total != (uint64_t)BIG_MIB << 20)
		die("read %s: %llu bytes", path, (unsigned long long)total);
	return (double)total / 1e6 / ((bench_now_ms() - t) / 1000.0);
}

static double cp_rate(void)
{
	char src[128];
	snprintf(src, sizeof(src), "%s:%s/big.bin", name, GW);
	const char *args[] = { "cp", src, "-", NULL };
	uint64_t got = 0;
	double t = bench_now_ms();
	if (bench_cli("docker", NULL, 0, 0, &got, BENCH_CLI_QUIET, args) != 0)
		die("docker cp failed");
	return (double)got / 1e6 / ((bench_now_ms() - t) / 1000.0);
}

/* ---- guest CPU share under polling ----------------------------------------- */

static atomic_bool polling;
static const char *poll_path;

static void *poller(void *arg)
{
	(void)arg;
	while (atomic_load(&polling)) {
		struct stat st;
		lstat(poll_path, &st);
		usleep(20000);   /* 50 Hz */
	}
	return NULL;
}

/*
 * The guest's busy loop, started (docker exec -d) before any polling and
 * ending after it: a pause while an exec starts or exits wedges containerd
 * 1.6, so polling the engine plane overlaps neither. The loop counts its
 * iterations per second into /tmp/cnt; seconds 2 to 4 lie inside the
 * polling window (1.2 s to 5.2 s) and their median is the figure.
 */
static double share_under(const char *path)
{
	char script[512], cnt[128];
	snprintf(cnt, sizeof(cnt), "%s/tmp/cnt", rootp);
	unlink(cnt);
	snprintf(script, sizeof(script),
		 "rm -f /tmp/cnt; n=0; i=0; s=$(date +%%s); while [ $n -lt 6 ]; do i=$((i+1)); t=$(date +%%s); "
		 "if [ $t != $s ]; then echo $i >> /tmp/cnt; i=0; s=$t; n=$((n+1)); fi; done; echo end >> /tmp/cnt");
	const char *argv[] = { "docker", "exec", "-d", name, "sh", "-c", script, NULL };
	if (run(argv, true) != 0)
		die("cannot start the guest loop");
	double t0 = bench_now_ms();
	pthread_t th;
	bool polled = path != NULL;
	while (bench_now_ms() - t0 < 1200)
		usleep(10000);
	if (polled) {
		poll_path = path;
		atomic_store(&polling, true);
		pthread_create(&th, NULL, poller, NULL);
	}
	while (bench_now_ms() - t0 < 5200)
		usleep(10000);
	if (polled) {
		atomic_store(&polling, false);
		pthread_join(th, NULL);
	}
	long v[8];
	int n = 0;
	for (int tries = 0; tries < 200; tries++) {
		FILE *f = fopen(cnt, "r");
		char line[64];
		n = 0;
		bool end = false;
		while (f && fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "end", 3))
				end = true;
			else if (n < 8)
				v[n++] = atol(line);
		}
		if (f)
			fclose(f);
		if (end)
			break;
		usleep(100000);
	}
	if (n < 5)
		die("the guest loop reported %d seconds", n);
	double m[3] = { (double)v[1], (double)v[2], (double)v[3] };
	return bench_median(m, 3);
}

/* ---- main -------------------------------------------------------------------- */

typedef double (*op_fn)(const char *);

/*
 * Pause between two timed operations (engine plane): longer than a burst's
 * lingering freeze (src/freeze/burst.h), so every operation is timed as a burst of
 * its own and none is served by the freeze the previous one left.
 */
static unsigned gap_us;

static double med(op_fn fn, const char *path, int runs)
{
	double *v = calloc((size_t)runs, sizeof(double));
	for (int i = 0; i < runs; i++) {
		usleep(gap_us);
		v[i] = fn(path);
	}
	double m = bench_median(v, runs);
	free(v);
	return m;
}

static double med_ls(const char *dir, int want, int runs)
{
	double *v = calloc((size_t)runs, sizeof(double));
	for (int i = 0; i < runs; i++) {
		/* and longer than a kept listing's validity: no stat of the run before is answered from it */
		usleep(gap_us ? (MAFSBX_LISTSNAP_VALID_MS + 100) * 1000 : 0);
		v[i] = t_lsl(dir, want);
	}
	double m = bench_median(v, runs);
	free(v);
	return m;
}

struct results {
	/* kernel floor, local plane, engine plane, engine plane without bursts (-o burst_ms=0),
	 * engine plane listing by the guest's find only (-o listing=exec; the listings alone) */
	double st1[5], st4[5], st8[5], cat[5], ls[5];
	double ls20[5], ls1k[5];                        /* guest-made files, none declared (-1: not measured) */
	double lsdeep[5];                               /* 20 files beside a subdirectory of 100 MiB */
	double find[3];                                /* kernel floor, local plane, engine plane (one run) */
	double mb_floor, mb_local, mb_engine, mb_cp;
	long rss_idle, rss_peak;
	double base_it, loc_it, eng_it;
};

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = { { "mafsbxfs", required_argument, NULL, 'm' },
					     { "runs", required_argument, NULL, 'r' },
					     { "image", required_argument, NULL, 'i' },
					     { "small", no_argument, NULL, 's' },
					     { "ratio", no_argument, NULL, 'q' },
					     { NULL, 0, NULL, 0 } };
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm': opt_mafsbxfs = optarg; break;
		case 'r': opt_runs = atoi(optarg); break;
		case 'i': opt_image = optarg; break;
		case 's': opt_small = true; break;
		case 'q': opt_ratio = true; break;
		default: fprintf(stderr, "usage: bench_planes [--mafsbxfs PATH] [--runs N] [--image IMG] [--small] [--ratio]\n"); exit(2);
		}
	}
	if (opt_runs < 3)
		opt_runs = 3;
}

/* The sandbox, through the local mount: twenty outputs, files at depth 1, 4, 8, a 1,000-file tree, 256 MiB. */
static void make_sandbox(void)
{
	char req[2048], rep[8192];
	int k = snprintf(req, sizeof(req),
			 "{\"scope\": \"%s\", \"thread\": \"t\", \"agent\": \"a\", \"kind\": \"bench\", \"image\": \"%s\", "
			 "\"outputs\": [", scope, opt_image);
	for (int i = 0; i < 20; i++)
		k += snprintf(req + k, sizeof(req) - (size_t)k, "%s\"outs/o%02d.txt\"", i ? ", " : "", i);
	snprintf(req + k, sizeof(req) - (size_t)k, "]}");
	if (ctl(mnt_local, "acquire", req, rep, sizeof(rep)) < 0)
		die("acquire: %s", rep);
	char *np = strstr(rep, "\"name\": \"");
	if (!np)
		die("acquire reply: %s", rep);
	snprintf(name, sizeof(name), "%.31s", np + 9);
	if (opt_ratio) /* only what the ratio needs */
		guest("cd " GW " && head -c 1024 /dev/zero | tr '\\0' x > d1.txt && mkdir plain && "
		      "for i in $(seq -w 0 19); do echo p$i > plain/p$i; done");
	else
		guest("cd " GW " && mkdir -p a/b/c/d/e/f/g outs tree && head -c 1024 /dev/zero | tr '\\0' x > d1.txt && "
		      "cp d1.txt a/b/c/d4.txt && cp d1.txt a/b/c/d/e/f/g/d8.txt && "
		      "for i in $(seq -w 0 19); do echo out$i > outs/o$i.txt; done && "
		      "for d in $(seq 0 9); do mkdir tree/$d; for i in $(seq 0 99); do echo $d$i > tree/$d/f$i; done; done && "
		      "mkdir plain flat && for i in $(seq -w 0 19); do echo p$i > plain/p$i; done && "
		      "for i in $(seq -w 0 999); do echo f$i > flat/f$i; done && "
		      "mkdir -p deep/sub && for i in $(seq -w 0 19); do echo p$i > deep/a$i; done && "
		      "for i in $(seq -w 0 99); do dd if=/dev/zero of=deep/sub/m$i bs=1M count=1 2>/dev/null; done && "
		      "dd if=/dev/zero of=big.bin bs=1M count=256 2>/dev/null");
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "docker inspect -f '{{.State.Pid}}' %s", name);
	FILE *p = popen(cmd, "r");
	int pid = 0;
	if (!p || fscanf(p, "%d", &pid) != 1 || pid <= 0)
		die("no PID for %s", name);
	pclose(p);
	snprintf(rootp, sizeof(rootp), "/proc/%d/root", pid);
}

/* stat at depth 1, 4, 8, cat 1 KiB and ls -l of the outputs: on the kernel alone and through both mounts. */
static void measure_small(struct results *r)
{
	const char *where[5] = { rootp, mnt_local, mnt_engine, mnt_single, mnt_exec };
	char p1[256], p4[256], p8[256], outs[256], plain[256], flat[256], deep[256];
	for (int w = 0; w < 5; w++) {
		const char *base = where[w];
		const char *sub = w == 0 ? GW : "";
		char pre[200];
		if (w == 0)
			snprintf(pre, sizeof(pre), "%s%s", base, sub);
		else
			snprintf(pre, sizeof(pre), "%s/%s/work", base, name);
		snprintf(p1, sizeof(p1), "%s/d1.txt", pre);
		snprintf(p4, sizeof(p4), "%s/a/b/c/d4.txt", pre);
		snprintf(p8, sizeof(p8), "%s/a/b/c/d/e/f/g/d8.txt", pre);
		snprintf(outs, sizeof(outs), "%s/outs", pre);
		snprintf(plain, sizeof(plain), "%s/plain", pre);
		snprintf(flat, sizeof(flat), "%s/flat", pre);
		snprintf(deep, sizeof(deep), "%s/deep", pre);
		int runs = w >= 2 ? (opt_runs < 20 ? opt_runs : 20) : opt_runs;
		gap_us = w >= 2 ? 100000 : 0;
		r->lsdeep[w] = w == 3 ? -1 : med_ls(deep, 21, runs);
		if (w == 4) {
			/* the other listing: only what a listing changes */
			r->st1[w] = r->st4[w] = r->st8[w] = r->cat[w] = -1;
			r->ls[w] = med_ls(outs, 20, runs);
			r->ls20[w] = med_ls(plain, 20, runs);
			r->ls1k[w] = med_ls(flat, 1000, 3);
			continue;
		}
		r->st1[w] = med(t_lstat, p1, runs);
		r->st4[w] = med(t_lstat, p4, runs);
		r->st8[w] = med(t_lstat, p8, runs);
		r->cat[w] = med(t_cat, p1, runs);
		r->ls[w] = med_ls(outs, 20, runs);
		r->ls20[w] = med_ls(plain, 20, runs);
		/* 1,000 stats without bursts are 1,000 freezes: not measured there */
		r->ls1k[w] = w == 3 ? -1 : med_ls(flat, 1000, w >= 2 ? 3 : (runs < 20 ? runs : 20));
	}
}

/* find + cat of 1,000 files: the floor, the local plane, the engine plane (one run: it is slow). */
static void measure_find(struct results *r)
{
	for (int w = 0; w < 3; w++) {
		char tree[256];
		if (w == 0)
			snprintf(tree, sizeof(tree), "%s%s/tree", rootp, GW);
		else
			snprintf(tree, sizeof(tree), "%s/%s/work/tree", w == 1 ? mnt_local : mnt_engine, name);
		double v[5];
		int runs = w == 2 ? 1 : 5;
		for (int i = 0; i < runs; i++) {
			double t = bench_now_ms();
			int n = walk_cat(tree);
			v[i] = bench_now_ms() - t;
			if (n != 1000)
				die("find+cat saw %d files", n);
		}
		r->find[w] = bench_median(v, runs);
	}
}

static void measure_big(struct results *r)
{
	/* 256 MiB: floor, local (with the daemon's RSS), engine (spooled), docker cp. */
	char big[256];
	snprintf(big, sizeof(big), "%s%s/big.bin", rootp, GW);
	(void)read_rate(big);   /* into the page cache: every column reads it warm */
	r->mb_floor = read_rate(big);
	snprintf(big, sizeof(big), "%s/%s/work/big.bin", mnt_local, name);
	r->rss_idle = bench_rss_kb(pid_local);
	atomic_store(&rss_peak, r->rss_idle);
	atomic_store(&sampling, true);
	pthread_t th;
	pthread_create(&th, NULL, rss_sampler, &pid_local);
	r->mb_local = read_rate(big);
	atomic_store(&sampling, false);
	pthread_join(th, NULL);
	snprintf(big, sizeof(big), "%s/%s/work/big.bin", mnt_engine, name);
	r->mb_engine = read_rate(big);
	r->mb_cp = cp_rate();
	r->rss_peak = atomic_load(&rss_peak);
}

/* The guest's CPU share while the host polls a stat at 50 Hz. */
static void measure_share(struct results *r)
{
	r->base_it = share_under(NULL);
	char p1[256], p4[256];
	snprintf(p1, sizeof(p1), "%s/%s/work/d1.txt", mnt_local, name);
	r->loc_it = share_under(p1);
	snprintf(p4, sizeof(p4), "%s/%s/work/d1.txt", mnt_engine, name);
	r->eng_it = share_under(p4);

}

static void print_results(const struct results *r)
{
	printf("\n## Local plane vs engine plane (%d runs; medians in ms; attr_timeout=0)\n\n", opt_runs);
	printf("| operation | %s | %s | %s | %s | %s |\n|---|---|---|---|---|---|\n", "kernel floor (no FUSE)",
	       "mafsbxfs local plane", "mafsbxfs engine plane (listing=auto: archive)", "engine plane, burst_ms=0",
	       "engine plane, listing=exec (find)");
	static const char *const rows[] = { "stat, depth 1", "stat, depth 4", "stat, depth 8", "cat 1 KiB",
					    "ls -l of 20 outputs", "ls -l of 20 guest files (not outputs)",
					    "ls -l of 1,000 guest files",
					    "ls -l of 20 guest files beside a 100 MiB subdirectory" };
	const double *v[] = { r->st1, r->st4, r->st8, r->cat, r->ls, r->ls20, r->ls1k, r->lsdeep };
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		printf("| %s | %.3f | %.3f | %.1f |", rows[i], v[i][0], v[i][1], v[i][2]);
		if (v[i][3] < 0)
			printf(" (not measured) |");
		else
			printf(" %.1f |", v[i][3]);
		if (v[i][4] < 0)
			printf(" |\n");
		else
			printf(" %.1f |\n", v[i][4]);
	}
	if (opt_small)
		return;
	printf("| find + cat of 1,000 files | %.1f | %.1f | %.1f (one run) | | |\n", r->find[0], r->find[1], r->find[2]);
	printf("| cat 256 MiB (MB/s) | %.0f | %.0f | %.0f | | |\n", r->mb_floor, r->mb_local, r->mb_engine);
	printf("\n- docker cp of the same 256 MiB: %.0f MB/s (local plane: %.1fx)\n", r->mb_cp, r->mb_local / r->mb_cp);
	printf("- daemon RSS (local plane): %ld KiB idle, %ld KiB peak during the 256 MiB read\n", r->rss_idle,
	       r->rss_peak);
	printf("- guest busy-loop iterations per second (median): %.0f unpolled, %.0f with 50 Hz stat polling on the local plane "
	       "(%.1f%%), %.0f on the engine plane (%.1f%%)\n",
	       r->base_it, r->loc_it, 100.0 * r->loc_it / r->base_it, r->eng_it, 100.0 * r->eng_it / r->base_it);
}

int main(int argc, char **argv)
{
	parse_args(argc, argv);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	snprintf(scope, sizeof(scope), "bench-planes-%06x", rand() & 0xffffff);

	pid_local = mount_one(mnt_local, "local");
	pid_engine = mount_one(mnt_engine, "engine");
	struct planes_ratio pr;
	if (opt_ratio) {
		make_sandbox();
		planes_ratio_measure(mnt_engine, name, opt_runs, &pr);
		int bad = planes_ratio_print(&pr, opt_runs);
		cleanup();
		return bad;
	}
	pid_single = mount_one(mnt_single, "engine,burst_ms=0");
	pid_exec = mount_one(mnt_exec, "engine,listing=exec");
	make_sandbox();
	struct results r;
	memset(&r, 0, sizeof(r));
	measure_small(&r);
	/* the engine plane's ls -l of 20 against one fresh stat, in the same run */
	int ratio_runs = opt_runs < 10 ? opt_runs : 10;
	planes_ratio_measure(mnt_engine, name, ratio_runs, &pr);
	if (!opt_small) {
		measure_find(&r);
		measure_big(&r);
		measure_share(&r);
	}
	print_results(&r);
	int bad = planes_ratio_print(&pr, ratio_runs);
	cleanup();
	return bad;
}
