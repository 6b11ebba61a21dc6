/*
 * bench_mount.c: the end-to-end benchmark of doc/performance.md. One run, medians.
 *
 * It mounts mafsbxfs (attr_timeout=0, so every stat is a real frozen stat and
 * not the kernel's cache), acquires sandboxes through .ctl/acquire, plants
 * outputs through .ctl/exec, and times each operation three ways:
 *   mafsbxfs  through the mount, as an agent would (stat(2), cat, write, ctl);
 *   CLI       the docker CLI doing the same work the upstream Python backend
 *             does (docker pause, one bounded `docker cp` per ancestor, the
 *             copy, docker unpause; see doc/upstream.md
 *             §4-§6), one process per call;
 *   floor     the engine's floor: the fewest Engine API calls that do the
 *             work with no checks (pause + one HEAD/GET/PUT + unpause, etc.),
 *             through libmafsbx's engine client.
 * It also measures 256 MiB read throughput against `docker cp` to /dev/null
 * and the daemon's RSS (idle, during the 256 MiB read, with N sandboxes).
 *
 * Usage: bench_mount [--mafsbxfs PATH] [--runs N] [--sandboxes N] [--image IMG]
 *                    [--host URL]...
 * Needs root, /dev/fuse, a running dockerd and the test image. Prints a
 * markdown table. It removes everything it created (dispose by scope).
 *
 * --host URL (repeatable, up to 4): the whole table once per endpoint, in one
 * run, e.g. unix://, tcp:// with TLS and ssh://. Each run has DOCKER_HOST set
 * to URL, so the mount, the engine floor and the docker CLI column all use
 * it (TLS material from DOCKER_TLS_VERIFY / DOCKER_CERT_PATH, which are
 * applied to the tcp:// hosts only).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
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
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "buf.h"
#include "endpoint.h"
#include "engine.h"
#include "tarplane.h"

extern char **environ;

#define WORK_DIR "/maf-sandbox/work"
#define MIB (1024ULL * 1024ULL)

static const char *opt_mafsbxfs = "build/fs/mafsbxfs";
static const char *opt_image = "mafsbx/busybox:latest";
static int opt_runs = 20;
static int opt_sandboxes = 100;

static char mnt[256];
static pid_t daemon_pid = -1;
static char scope[64];
static struct mafsbx_engine *eng;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void cleanup(void);

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench_mount: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	cleanup();
	exit(1);
}


/* ---- the docker CLI ----------------------------------------------------- */

/* `docker ARGS...` through the shared runner, stdout counted (and bounded by `limit`). */
static int cli(const void *in, size_t in_len, size_t limit, uint64_t *got, const char *const *args)
{
	uint64_t n = 0;
	int r = bench_cli("docker", in, in_len, limit, &n, BENCH_CLI_QUIET, args);
	if (r < 0)
		die("spawn docker: %s", strerror(errno));
	if (got)
		*got = n;
	return r;
}

#define CLI(...) cli(NULL, 0, 0, NULL, (const char *const[]){ __VA_ARGS__, NULL })
#define CLI_BOUNDED(limit, ...) cli(NULL, 0, (limit), NULL, (const char *const[]){ __VA_ARGS__, NULL })

/* `docker cp NAME:PATH -` bounded at 512 bytes: the upstream stat of one component. */
static void cli_stat_one(const char *name, const char *path)
{
	char src[4200];
	snprintf(src, sizeof(src), "%s:%s", name, path);
	CLI_BOUNDED(512, "cp", src, "-");
}

/* Upstream's ancestor walk: every prefix of W from its first component, then down to dirname(G). */
static void cli_walk(const char *name, const char *guest)
{
	char prefix[4096] = "";
	const char *p = guest + 1;
	for (;;) {
		const char *slash = strchr(p, '/');
		if (!slash)
			break; /* the leaf itself is not an ancestor */
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(slash - guest), guest);
		cli_stat_one(name, prefix);
		p = slash + 1;
	}
}

/* ---- the mount ---------------------------------------------------------- */

static char *mpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *mpath(const char *fmt, ...)
{
	static _Thread_local char bufs[4][4096];
	static _Thread_local int which;
	char rel[3800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	char *b = bufs[which++ % 4];
	snprintf(b, 4096, "%s/%s", mnt, rel);
	return b;
}

/* One .ctl transaction: returns the parsed reply (caller decrefs); *werr = errno of the write. */
static json_t *ctl(const char *file, json_t *req, int *werr)
{
	char *body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	int fd = open(mpath(".ctl/%s", file), O_RDWR);
	if (fd < 0)
		die("open .ctl/%s: %s", file, strerror(errno));
	ssize_t w = write(fd, body, strlen(body));
	*werr = w < 0 ? errno : 0;
	free(body);
	struct mafsbx_buf rep = MAFSBX_BUF_INIT;
	char buf[65536];
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k <= 0)
			break;
		mafsbx_buf_append(&rep, buf, (size_t)k);
	}
	close(fd);
	json_t *j = rep.data ? json_loadb(rep.data, rep.len, 0, NULL) : NULL;
	mafsbx_buf_free(&rep);
	return j;
}

static json_t *ctl_ok(const char *file, json_t *req)
{
	int werr;
	char *dbg = json_dumps(req, JSON_COMPACT);
	json_t *rep = ctl(file, req, &werr);
	if (werr || !rep || !json_is_true(json_object_get(rep, "ok"))) {
		char *s = rep ? json_dumps(rep, JSON_COMPACT) : strdup("(no reply)");
		die(".ctl/%s %s failed (%s): %s", file, dbg, werr ? strerror(werr) : "ok write", s);
	}
	free(dbg);
	return rep;
}

static json_t *acquire_req(const char *thread, const char *agent, json_t *outputs)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s}", "scope", scope, "thread", thread, "agent", agent,
			      "kind", "bench", "image", opt_image);
	if (outputs)
		json_object_set_new(r, "outputs", outputs);
	return r;
}

/* Acquire; copy the container name into name. */
static void acquire(const char *thread, const char *agent, json_t *outputs, char name[64])
{
	json_t *rep = ctl_ok("acquire", acquire_req(thread, agent, outputs));
	snprintf(name, 64, "%s", json_string_value(json_object_get(rep, "name")));
	json_decref(rep);
}

static void sh_in(const char *name, const char *script)
{
	json_t *rep = ctl_ok("exec", json_pack("{s:s, s:s, s:i}", "sandbox", name, "command", script, "timeout", 300));
	if (json_integer_value(json_object_get(rep, "exit_code")) != 0)
		die("exec in %s failed: %s: %s", name, script, json_string_value(json_object_get(rep, "stderr")));
	json_decref(rep);
}

static uint64_t cat_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	static char buf[1 << 20];
	uint64_t total = 0;
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k < 0)
			die("read %s: %s", path, strerror(errno));
		if (k == 0)
			break;
		total += (uint64_t)k;
	}
	if (close(fd) < 0)
		die("close %s: %s", path, strerror(errno));
	return total;
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open %s for writing: %s", path, strerror(errno));
	if (write(fd, data, len) != (ssize_t)len)
		die("write %s: %s", path, strerror(errno));
	if (close(fd) < 0)
		die("close %s: %s", path, strerror(errno));
}

static void mount_fs(void)
{
	snprintf(mnt, sizeof(mnt), "/tmp/mafsbx-bench-XXXXXX");
	if (!mkdtemp(mnt))
		die("mkdtemp: %s", strerror(errno));
	const char *argv[] = { opt_mafsbxfs, "-f", "-o", "attr_timeout=0,max_read=536870912", mnt, NULL };
	if (posix_spawn(&daemon_pid, opt_mafsbxfs, NULL, NULL, (char *const *)argv, environ))
		die("cannot start %s", opt_mafsbxfs);
	for (int i = 0; i < 200; i++) {
		struct stat st;
		if (stat(mpath(".ctl/engine"), &st) == 0)
			return;
		int status;
		if (waitpid(daemon_pid, &status, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			die("mafsbxfs exited before mounting");
		}
		usleep(50000);
	}
	die("mount did not appear within 10 s");
}

/* Sandboxes the CLI columns pause by hand: thawed first at cleanup, so an interrupted run leaves nothing frozen. */
static char thaw_list[4][64];
/* A container the CLI or floor columns made outside the mount: force-removed at cleanup. */
static char loose_container[64];

static int cleanup_done;

static void cleanup(void)
{
	if (cleanup_done++)
		return;
	for (size_t i = 0; eng && i < 4; i++) {
		struct mafsbx_error e;
		if (thaw_list[i][0])
			(void)mafsbx_container_unpause(eng, thaw_list[i], &e);
	}
	if (eng && loose_container[0]) {
		struct mafsbx_error e;
		(void)mafsbx_container_delete(eng, loose_container, true, &e);
	}
	if (daemon_pid > 0 && mnt[0]) {
		int werr;
		json_t *rep = ctl("dispose", json_pack("{s:s, s:s}", "scope", scope, "thread", "bench"), &werr);
		json_decref(rep);
		rep = ctl("dispose", json_pack("{s:s, s:s}", "scope", scope, "thread", "many"), &werr);
		json_decref(rep);
		rep = ctl("dispose", json_pack("{s:s, s:s}", "scope", scope, "thread", "cold"), &werr);
		json_decref(rep);
		const char *argv[] = { "fusermount3", "-u", mnt, NULL };
		pid_t p;
		if (posix_spawnp(&p, "fusermount3", NULL, NULL, (char *const *)argv, environ) == 0)
			waitpid(p, NULL, 0);
		int st;
		for (int i = 0; i < 100 && waitpid(daemon_pid, &st, WNOHANG) == 0; i++)
			usleep(50000);
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
		rmdir(mnt);
		daemon_pid = -1;
	}
}

/* ---- the engine floor --------------------------------------------------- */

static void floor_check(int r, const struct mafsbx_error *err, const char *what)
{
	if (r < 0)
		die("floor %s: %s", what, err->message);
}

static int discard_sink(const void *d, size_t n, void *ctx)
{
	(void)d;
	*(uint64_t *)ctx += n;
	return 0;
}

static uint64_t floor_get(const char *name, const char *path, bool frozen)
{
	struct mafsbx_error err;
	uint64_t n = 0;
	if (frozen)
		floor_check(mafsbx_container_pause(eng, name, &err), &err, "pause");
	floor_check(mafsbx_archive_get(eng, name, path, 0, discard_sink, &n, NULL, &err), &err, "get");
	if (frozen)
		floor_check(mafsbx_container_unpause(eng, name, &err), &err, "unpause");
	return n;
}

/* ---- the table ---------------------------------------------------------- */

struct row {
	char what[96];
	double fs, cli, floor;   /* ms medians; < 0 = not measured */
};
static struct row rows[64];
static int nrows;

static void add_row(const char *what, double fs, double cli_ms, double fl)
{
	struct row *r = &rows[nrows++];
	snprintf(r->what, sizeof(r->what), "%s", what);
	r->fs = fs;
	r->cli = cli_ms;
	r->floor = fl;
	fprintf(stderr, "  %-40s mafsbxfs %8.2f  cli %8.2f  floor %8.2f\n", what, fs, cli_ms, fl);
}

static void fmt_ms(char *b, size_t n, double v)
{
	if (v < 0)
		snprintf(b, n, "–");
	else
		snprintf(b, n, "%.2f", v);
}

static void print_table(void)
{
	printf("| operation (median ms) | mafsbxfs | docker CLI, upstream way | engine floor | CLI / mafsbxfs |\n");
	printf("|---|---:|---:|---:|---:|\n");
	for (int i = 0; i < nrows; i++) {
		char a[32], b[32], c[32], d[32];
		fmt_ms(a, sizeof(a), rows[i].fs);
		fmt_ms(b, sizeof(b), rows[i].cli);
		fmt_ms(c, sizeof(c), rows[i].floor);
		if (rows[i].fs > 0 && rows[i].cli > 0)
			snprintf(d, sizeof(d), "%.1fx", rows[i].cli / rows[i].fs);
		else
			snprintf(d, sizeof(d), "–");
		printf("| %s | %s | %s | %s | %s |\n", rows[i].what, a, b, c, d);
	}
}

/* Time `body` n times; returns the median. */
/*
 * Pause before each timed operation on the engine plane: longer than the
 * join window (src/freeze/burst.h), so every operation is a burst of its own and
 * none is served by the freeze (and the answers) the one before left.
 */
static unsigned gap_us;

#define TIMED(n, out, ...)                                               \
	do {                                                             \
		double *__v = calloc((size_t)(n), sizeof(double));       \
		for (int __i = 0; __i < (n); __i++) {                    \
			usleep(gap_us);                                  \
			double __t0 = bench_now_ms();                          \
			__VA_ARGS__;                                     \
			__v[__i] = bench_now_ms() - __t0;                      \
		}                                                        \
		(out) = bench_median(__v, (n));                                \
		free(__v);                                               \
	} while (0)

/* ---- the 256 MiB read with RSS sampling ---------------------------------- */

static atomic_bool sampling;
static long rss_peak;

static void *rss_sampler(void *arg)
{
	(void)arg;
	while (atomic_load(&sampling)) {
		long kb = bench_rss_kb(daemon_pid);
		if (kb > rss_peak)
			rss_peak = kb;
		usleep(20000);
	}
	return NULL;
}

static void run_bench(const char *host);

static void *stop_watcher(void *arg)
{
	(void)arg;
	sigset_t stop;
	int sig;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigwait(&stop, &sig);
	fprintf(stderr, "bench_mount: interrupted (signal %d), cleaning up\n", sig);
	cleanup();
	_exit(128 + sig);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mafsbxfs", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' },
		{ "sandboxes", required_argument, NULL, 's' },
		{ "image", required_argument, NULL, 'i' },
		{ "host", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	const char *hosts[4];
	int nhosts = 0;
	while ((c = getopt_long(argc, argv, "m:r:s:i:H:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': opt_mafsbxfs = optarg; break;
		case 'r': opt_runs = atoi(optarg); break;
		case 's': opt_sandboxes = atoi(optarg); break;
		case 'i': opt_image = optarg; break;
		case 'H':
			if (nhosts == 4) {
				fprintf(stderr, "bench_mount: at most 4 --host\n");
				return 2;
			}
			hosts[nhosts++] = optarg;
			break;
		default:
			printf("usage: bench_mount [--mafsbxfs PATH] [--runs N] [--sandboxes N] [--image IMG] "
			       "[--host URL]...\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (opt_runs < 3)
		opt_runs = 3;
	signal(SIGPIPE, SIG_IGN);
	/*
	 * Interruptions are taken synchronously: SIGINT/SIGTERM are blocked and a
	 * watcher thread runs the cleanup (unpause, dispose, unmount) itself.
	 */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	pthread_t watcher;
	pthread_create(&watcher, NULL, stop_watcher, NULL);

	if (!nhosts)
		run_bench(NULL);
	for (int i = 0; i < nhosts; i++)
		run_bench(hosts[i]);
	return 0;
}

/*
 * The TLS variables belong to the tcp:// hosts only: the docker CLI of the
 * comparison column would try TLS on a unix socket or over ssh too.
 */
static void use_host(const char *host)
{
	if (host && setenv("DOCKER_HOST", host, 1) != 0)
		die("setenv: %s", strerror(errno));
	static char *tls_verify, *cert_path;
	static bool saved;
	if (!saved) {
		saved = true;
		tls_verify = getenv("DOCKER_TLS_VERIFY") ? strdup(getenv("DOCKER_TLS_VERIFY")) : NULL;
		cert_path = getenv("DOCKER_CERT_PATH") ? strdup(getenv("DOCKER_CERT_PATH")) : NULL;
	}
	bool tcp = host && (strncmp(host, "tcp://", 6) == 0 || strncmp(host, "https://", 8) == 0);
	if (host && !tcp) {
		unsetenv("DOCKER_TLS_VERIFY");
		unsetenv("DOCKER_CERT_PATH");
	} else if (host) {
		if (tls_verify)
			setenv("DOCKER_TLS_VERIFY", tls_verify, 1);
		if (cert_path)
			setenv("DOCKER_CERT_PATH", cert_path, 1);
	}
}

/* The upstream cold acquire through the CLI, command by command (doc/upstream.md §4.3-§4.8); the median of n. */
static double cli_acquire_cold(int cold_runs)
{
	struct mafsbx_error err;
	double *t = calloc((size_t)cold_runs, sizeof(double));
	struct mafsbx_tar *tar = mafsbx_tar_new(&err);
	mafsbx_tar_add_dir(tar, "maf-sandbox", 0755, 0, 0, time(NULL), &err);
	mafsbx_tar_add_dir(tar, "maf-sandbox/work", 0755, 0, 0, time(NULL), &err);
	const void *tdata;
	size_t tlen;
	mafsbx_tar_finish(tar, &tdata, &tlen, &err);
	for (int i = 0; i < cold_runs; i++) {
		char n[64], id[128], lscope[96];
		snprintf(n, sizeof(n), "mafsbxbench-cli-%08x", (unsigned)rand());
		snprintf(loose_container, sizeof(loose_container), "%s", n);
		snprintf(lscope, sizeof(lscope), "maf-sandbox.scope=%s", scope);
		double t0 = bench_now_ms();
		CLI("inspect", "-f", "{{json .Config.Labels}}", n);
		CLI("inspect", "-f", "{{.State.Running}} {{.State.Paused}}", n);
		CLI("inspect", "-f", "{{.State.Status}}", n);
		CLI("version", "--format", "{{.Server.Os}}");
		CLI("image", "inspect", opt_image);
		CLI("run", "-d", "--name", n, "--security-opt", "no-new-privileges", "--pids-limit", "512",
		    "--network", "none", "--label", lscope, "--label", "maf-sandbox.thread=cli",
		    "--label", "maf-sandbox.agent=cli", "--label", "maf-sandbox.kind=bench",
		    "--label", "maf-sandbox.work-dir.v1=/maf-sandbox/work", opt_image, "sleep", "infinity");
		CLI("inspect", "-f", "{{.Id}}", n);
		snprintf(id, sizeof(id), "%s", n);
		CLI("inspect", "-f", "{{json .Config.Labels}}", id);
		CLI_BOUNDED(512, "cp", (snprintf(id, sizeof(id), "%s:/", n), id), "-");
		CLI("inspect", "-f", "{{.HostConfig.CapDrop}}", n);
		CLI("inspect", "-f", "{{.Config.User}}", n);
		CLI("exec", "-w", "/", n, "sh", "-c", "exit 0");
		CLI("pause", n);
		cli_stat_one(n, "/maf-sandbox");
		snprintf(id, sizeof(id), "%s:/", n);
		cli(tdata, tlen, 0, NULL, (const char *const[]){ "cp", "-", id, NULL });
		CLI("unpause", n);
		t[i] = bench_now_ms() - t0;
		CLI("rm", "-f", n);
	}
	double v = bench_median(t, cold_runs);
	mafsbx_tar_free(tar);
	free(t);
	return v;
}

/* The engine floor of a cold acquire: create and start; the median of n. */
static double floor_acquire_cold(int cold_runs)
{
	struct mafsbx_error err;
	double *t = calloc((size_t)cold_runs, sizeof(double));
	for (int i = 0; i < cold_runs; i++) {
		char n[64], id[65];
		snprintf(n, sizeof(n), "mafsbxbench-floor-%08x", (unsigned)rand());
		snprintf(loose_container, sizeof(loose_container), "%s", n);
		json_t *cfg = json_pack("{s:s, s:[s,s], s:{s:s}}", "Image", opt_image, "Cmd", "sleep", "infinity",
					"HostConfig", "NetworkMode", "none");
		double t0 = bench_now_ms();
		floor_check(mafsbx_container_create(eng, n, cfg, id, &err), &err, "create");
		floor_check(mafsbx_container_start(eng, id, &err), &err, "start");
		t[i] = bench_now_ms() - t0;
		json_decref(cfg);
		mafsbx_container_delete(eng, id, true, &err);
	}
	double v = bench_median(t, cold_runs);
	free(t);
	return v;

}

/* Cold acquires (create) three ways. */
static void bench_acquire_cold(void)
{
	int cold_runs = opt_runs / 4 < 5 ? 5 : opt_runs / 4;
	double v_fs, v_cli, v_floor;
	double *t = calloc((size_t)cold_runs, sizeof(double));
	for (int i = 0; i < cold_runs; i++) {
		char agent[32], name[64];
		snprintf(agent, sizeof(agent), "cold-%d", i);
		double t0 = bench_now_ms();
		acquire("cold", agent, NULL, name);
		t[i] = bench_now_ms() - t0;
	}
	v_fs = bench_median(t, cold_runs);
	v_cli = cli_acquire_cold(cold_runs);
	v_floor = floor_acquire_cold(cold_runs);
	free(t);
	add_row("acquire, cold (create)", v_fs, v_cli, v_floor);
}

/* Reuse of a running sandbox. */
static void bench_acquire_warm(const char *sbx)
{
	struct mafsbx_error err;
	double v_fs, v_cli, v_floor;
	TIMED(opt_runs, v_fs, { char nm[64]; acquire("bench", "main", NULL, nm); });
	TIMED(opt_runs, v_cli, {
		CLI("inspect", "-f", "{{json .Config.Labels}}", sbx);
		CLI("inspect", "-f", "{{.State.Running}} {{.State.Paused}}", sbx);
		CLI("inspect", "-f", "{{.Id}}", sbx);
		CLI("inspect", "-f", "{{json .Config.Labels}}", sbx);
		CLI("pause", sbx);
		cli_stat_one(sbx, "/maf-sandbox");
		cli_stat_one(sbx, "/maf-sandbox/work");
		CLI("unpause", sbx);
	});
	TIMED(opt_runs, v_floor, {
		json_t *j = NULL;
		floor_check(mafsbx_container_inspect(eng, sbx, &j, &err), &err, "inspect");
		json_decref(j);
	});
	add_row("acquire, warm (reuse)", v_fs, v_cli, v_floor);

}

static void bench_stats(const char *sbx)
{
	struct mafsbx_error err;
	double v_fs, v_cli, v_floor;
	/* --- stat at depth 1/4/8 --- */
	static const struct { const char *rel; const char *label; } depths[] = {
		{ "f1k", "stat, depth 1" },
		{ "a/b/c/f1k", "stat, depth 4" },
		{ "d1/d2/d3/d4/d5/d6/d7/f1k", "stat, depth 8" },
	};
	for (size_t d = 0; d < 3; d++) {
		char guest[512];
		snprintf(guest, sizeof(guest), WORK_DIR "/%s", depths[d].rel);
		TIMED(opt_runs, v_fs, {
			struct stat st;
			if (stat(mpath("%s/work/%s", sbx, depths[d].rel), &st) < 0 || st.st_size != 1024)
				die("stat %s: %s", depths[d].rel, strerror(errno));
		});
		TIMED(opt_runs, v_cli, {
			CLI("pause", sbx);
			cli_walk(sbx, guest);
			cli_stat_one(sbx, guest);
			CLI("unpause", sbx);
		});
		TIMED(opt_runs, v_floor, {
			struct mafsbx_path_stat pst;
			floor_check(mafsbx_container_pause(eng, sbx, &err), &err, "pause");
			floor_check(mafsbx_archive_head(eng, sbx, guest, &pst, &err), &err, "head");
			floor_check(mafsbx_container_unpause(eng, sbx, &err), &err, "unpause");
		});
		add_row(depths[d].label, v_fs, v_cli, v_floor);
	}
}

static void bench_cats(const char *sbx)
{
	double v_fs, v_cli, v_floor;
	/* --- cat 1 KiB / 1 MiB / 64 MiB --- */
	static const struct { const char *rel; const char *label; uint64_t size; int div; } cats[] = {
		{ "f1k", "cat 1 KiB", 1024, 1 },
		{ "f1m", "cat 1 MiB", MIB, 1 },
		{ "f64m", "cat 64 MiB", 64 * MIB, 4 },
	};
	for (size_t i = 0; i < 3; i++) {
		int n = opt_runs / cats[i].div < 3 ? 3 : opt_runs / cats[i].div;
		char guest[256], src[300];
		snprintf(guest, sizeof(guest), WORK_DIR "/%s", cats[i].rel);
		snprintf(src, sizeof(src), "%s:%s", sbx, guest);
		TIMED(n, v_fs, {
			if (cat_file(mpath("%s/work/%s", sbx, cats[i].rel)) != cats[i].size)
				die("short cat of %s", cats[i].rel);
		});
		TIMED(n, v_cli, {
			CLI("pause", sbx);
			cli_walk(sbx, guest);
			uint64_t got;
			cli(NULL, 0, 0, &got, (const char *const[]){ "cp", src, "-", NULL });
			CLI("unpause", sbx);
		});
		TIMED(n, v_floor, { floor_get(sbx, guest, true); });
		add_row(cats[i].label, v_fs, v_cli, v_floor);
	}
}

static void bench_writes(const char *sbx)
{
	struct mafsbx_error err;
	double v_fs, v_cli, v_floor;
	/* --- write 1 KiB / 1 MiB --- */
	static const struct { size_t size; const char *label; } writes[] = {
		{ 1024, "write 1 KiB" },
		{ MIB, "write 1 MiB" },
	};
	for (size_t i = 0; i < 2; i++) {
		char *data = malloc(writes[i].size);
		for (size_t k = 0; k < writes[i].size; k++)
			data[k] = (char)(k * 31 + 7);
		TIMED(opt_runs, v_fs, { write_file(mpath("%s/work/written.bin", sbx), data, writes[i].size); });
		struct mafsbx_tar *tar = mafsbx_tar_new(&err);
		mafsbx_tar_add_file(tar, "maf-sandbox/work/written-cli.bin", data, writes[i].size, 0644, 0, 0,
				    time(NULL), &err);
		const void *tdata;
		size_t tlen;
		mafsbx_tar_finish(tar, &tdata, &tlen, &err);
		char dst[128];
		snprintf(dst, sizeof(dst), "%s:/", sbx);
		TIMED(opt_runs, v_cli, {
			CLI("pause", sbx);
			cli_walk(sbx, WORK_DIR "/written-cli.bin");
			cli_stat_one(sbx, WORK_DIR "/written-cli.bin");
			cli(tdata, tlen, 0, NULL, (const char *const[]){ "cp", "-", dst, NULL });
			CLI("unpause", sbx);
		});
		TIMED(opt_runs, v_floor, {
			floor_check(mafsbx_container_pause(eng, sbx, &err), &err, "pause");
			floor_check(mafsbx_archive_put(eng, sbx, "/", tdata, tlen, &err), &err, "put");
			floor_check(mafsbx_container_unpause(eng, sbx, &err), &err, "unpause");
		});
		mafsbx_tar_free(tar);
		free(data);
		add_row(writes[i].label, v_fs, v_cli, v_floor);
	}
}

static void bench_exec(const char *sbx)
{
	struct mafsbx_error err;
	double v_fs, v_cli, v_floor;
	/* --- exec true --- */
	TIMED(opt_runs, v_fs, {
		json_t *rep = ctl_ok("exec", json_pack("{s:s, s:[s]}", "sandbox", sbx, "argv", "true"));
		json_decref(rep);
	});
	TIMED(opt_runs, v_cli, { CLI("exec", "-w", WORK_DIR, sbx, "true"); });
	TIMED(opt_runs, v_floor, {
		const char *xargv[] = { "true", NULL };
		struct mafsbx_exec_request rq = { .argv = xargv, .workdir = WORK_DIR, .timeout_ms = 30000 };
		struct mafsbx_exec_result res;
		floor_check(mafsbx_exec_run(eng, sbx, &rq, &res, &err), &err, "exec");
		mafsbx_exec_result_free(&res);
	});
	add_row("exec `true`", v_fs, v_cli, v_floor);
}

/* `ls -l` of a sandbox with 20 declared outputs. */
static void bench_ls(void)
{
	struct mafsbx_error err;
	double v_fs, v_cli, v_floor;
	json_t *outs = json_array();
	for (int i = 0; i < 20; i++) {
		char o[32];
		snprintf(o, sizeof(o), "out%02d.txt", i);
		json_array_append_new(outs, json_string(o));
	}
	char lsb[64];
	acquire("bench", "ls", outs, lsb);
	snprintf(thaw_list[1], sizeof(thaw_list[1]), "%s", lsb);
	sh_in(lsb, "cd " WORK_DIR " && for i in 00 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16 17 18 19; "
		   "do echo output $i > out$i.txt; done");
	TIMED(opt_runs, v_fs, {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", mpath("%s/work", lsb));
		int cnt = 0;
		/* what `ls -l` does: readdir, then lstat of each entry */
		DIR *dp = opendir(dir);
		if (!dp)
			die("opendir %s: %s", dir, strerror(errno));
		struct dirent *de;
		while ((de = readdir(dp))) {
			if (de->d_name[0] == '.')
				continue;
			struct stat st;
			char p[4400];
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			if (lstat(p, &st) < 0)
				die("lstat %s: %s", p, strerror(errno));
			cnt++;
		}
		closedir(dp);
		if (cnt != 20)
			die("ls -l listed %d outputs, want 20", cnt);
	});
	TIMED(opt_runs, v_cli, {
		for (int i = 0; i < 20; i++) {
			char g[128];
			snprintf(g, sizeof(g), WORK_DIR "/out%02d.txt", i);
			CLI("pause", lsb);
			cli_walk(lsb, g);
			cli_stat_one(lsb, g);
			CLI("unpause", lsb);
		}
	});
	TIMED(opt_runs, v_floor, {
		floor_check(mafsbx_container_pause(eng, lsb, &err), &err, "pause");
		for (int i = 0; i < 20; i++) {
			char g[128];
			struct mafsbx_path_stat pst;
			snprintf(g, sizeof(g), WORK_DIR "/out%02d.txt", i);
			floor_check(mafsbx_archive_head(eng, lsb, g, &pst, &err), &err, "head");
		}
		floor_check(mafsbx_container_unpause(eng, lsb, &err), &err, "unpause");
	});
	add_row("`ls -l` of 20 declared outputs", v_fs, v_cli, v_floor);
}

struct results {
	long rss_idle, rss_read, rss_many;
	double mbps_fs, mbps_cli, mbps_floor, t_many;
};

/* The 256 MiB read three ways, and the daemon's RSS peak during the mafsbxfs one. */
static void bench_throughput(const char *sbx, struct results *r)
{
	pthread_t th;
	atomic_store(&sampling, true);
	rss_peak = 0;
	pthread_create(&th, NULL, rss_sampler, NULL);
	double t0 = bench_now_ms();
	uint64_t n = cat_file(mpath("%s/work/f256m", sbx));
	double dt = bench_now_ms() - t0;
	atomic_store(&sampling, false);
	pthread_join(th, NULL);
	if (n != 256 * MIB)
		die("256 MiB read returned %llu bytes", (unsigned long long)n);
	r->mbps_fs = 256.0 / (dt / 1000.0);
	char src[256];
	snprintf(src, sizeof(src), "%s:" WORK_DIR "/f256m", sbx);
	t0 = bench_now_ms();
	uint64_t got;
	cli(NULL, 0, 0, &got, (const char *const[]){ "cp", src, "-", NULL });
	dt = bench_now_ms() - t0;
	r->mbps_cli = 256.0 / (dt / 1000.0);
	t0 = bench_now_ms();
	floor_get(sbx, WORK_DIR "/f256m", false);
	dt = bench_now_ms() - t0;
	r->mbps_floor = 256.0 / (dt / 1000.0);
	r->rss_read = rss_peak;
}

/* opt_sandboxes more sandboxes, then `ls` of the root and the RSS. */
static void bench_many(struct results *r)
{
	double t0 = bench_now_ms();
	for (int i = 0; i < opt_sandboxes; i++) {
		char agent[32], name[64];
		snprintf(agent, sizeof(agent), "a%03d", i);
		acquire("many", agent, NULL, name);
	}
	r->t_many = bench_now_ms() - t0;
	t0 = bench_now_ms();
	DIR *dp = opendir(mnt);
	int cnt = 0;
	struct dirent *de;
	while (dp && (de = readdir(dp)))
		cnt++;
	if (dp)
		closedir(dp);
	double t_ls = bench_now_ms() - t0;
	r->rss_many = bench_rss_kb(daemon_pid);
	fprintf(stderr, "  %d sandboxes acquired in %.1f s; ls of the root (%d entries) %.1f ms\n", opt_sandboxes,
		r->t_many / 1000, cnt, t_ls);
	add_row("`ls` of the root with all sandboxes", t_ls, -1, -1);
}

static void print_results(const struct mafsbx_endpoint *ep, const struct results *r)
{
	printf("\n## mafsbxfs end-to-end benchmark (%d runs; medians; attr_timeout=0)\n\n", opt_runs);
	printf("Endpoint: %s (%s; the %s plane).\n\n", ep->url, mafsbx_endpoint_kind(ep), mafsbx_endpoint_plane(ep));
	print_table();
	printf("\n| throughput, 256 MiB file | MB/s |\n|---|---:|\n");
	printf("| `cat` through mafsbxfs (one frozen GET, spooled) | %.0f |\n", r->mbps_fs);
	printf("| `docker cp c:file -` to /dev/null | %.0f |\n", r->mbps_cli);
	printf("| engine floor: one archive GET, discarded | %.0f |\n", r->mbps_floor);
	printf("\n| daemon RSS | KiB |\n|---|---:|\n");
	printf("| idle, just mounted | %ld |\n", r->rss_idle);
	printf("| peak during the 256 MiB read | %ld |\n", r->rss_read);
	printf("| with %d more sandboxes mounted (acquired in %.1f s) | %ld |\n", opt_sandboxes, r->t_many / 1000,
	       r->rss_many);

}

/* The whole table over one endpoint: `host`, or the default one when NULL. */
static void run_bench(const char *host)
{
	struct mafsbx_error err;
	struct mafsbx_endpoint ep;
	struct results r = { 0 };
	/* One run after another: a fresh mount, scope and table each time. */
	cleanup_done = 0;
	nrows = 0;
	rss_peak = 0;
	memset(thaw_list, 0, sizeof(thaw_list));
	loose_container[0] = '\0';
	mnt[0] = '\0';
	use_host(host);
	if (mafsbx_endpoint_resolve(NULL, NULL, NULL, &ep, &err) < 0)
		die("%s", err.message);
	gap_us = strcmp(mafsbx_endpoint_plane(&ep), "engine") == 0 ? 250000 : 0;
	eng = mafsbx_engine_open(&ep, NULL, &err);
	if (!eng || mafsbx_engine_ping(eng, &err) < 0)
		die("engine: %s", err.message);

	srand((unsigned)getpid() ^ (unsigned)time(NULL));
	snprintf(scope, sizeof(scope), "bench-%08x", (unsigned)rand());
	mount_fs();
	r.rss_idle = bench_rss_kb(daemon_pid);
	fprintf(stderr, "mounted at %s (daemon pid %d), scope %s\n", mnt, (int)daemon_pid, scope);

	bench_acquire_cold();
	char sbx[64];
	acquire("bench", "main", NULL, sbx);
	snprintf(thaw_list[0], sizeof(thaw_list[0]), "%s", sbx);
	bench_acquire_warm(sbx);
	/* --- plant outputs --- */
	sh_in(sbx, "cd " WORK_DIR " && mkdir -p a/b/c d1/d2/d3/d4/d5/d6/d7 && "
		   "head -c 1024 /dev/urandom > f1k && cp f1k a/b/c/f1k && cp f1k d1/d2/d3/d4/d5/d6/d7/f1k && "
		   "head -c 1048576 /dev/urandom > f1m && head -c 67108864 /dev/urandom > f64m && "
		   "head -c 268435456 /dev/zero > f256m");

	bench_stats(sbx);
	bench_cats(sbx);
	bench_writes(sbx);
	bench_exec(sbx);
	bench_ls();
	bench_throughput(sbx, &r);
	bench_many(&r);
	print_results(&ep, &r);

	cleanup();
	mafsbx_engine_close(eng);
	eng = NULL;
	fflush(stdout);
}
