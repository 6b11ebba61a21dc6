/*
 * soak.c: readers, writers and execs through a mafsbxfs mount whose engine
 * connections the fault relay (relay.c) cuts at random, for a set time.
 * soak.sh sets up the relay, the mount and the sandboxes and runs this.
 *
 *   soak --mount M --relay-ctl CTL --pid DAEMON_PID [--seconds 60]
 *        [--readers 16] [--writers 4] [--execers 4] [--fault-ms 2000]
 *        [--rss-max-mb 256] [--strict] SANDBOX...
 *
 * Every file the soak reads is self-checking: a 64-byte header
 * "SOAK <payload length> <seed>" then the payload, an xorshift stream of
 * that seed, so a reader can tell exactly which bytes are wrong. Writers
 * (one per sandbox at first, round robin) rewrite work/w.bin with a new
 * seed and length each time; work/static.bin is written once before the
 * faults start. Readers read whole files (one open each, as `cat` does).
 *
 * Outcomes, counted:
 *  - a call that failed with an errno: allowed under faults, counted by errno;
 *  - WRONG BYTES: a read that succeeded with bytes that are not what a
 *    writer wrote (not a prefix of a self-checking file): fatal;
 *  - torn: a read that succeeded with a prefix of a file, or with bytes no
 *    writer wrote, while the file's last write had failed: a write cut
 *    mid-transfer leaves a partial file in the guest (a known finding of
 *    the engine plane, see faults.sh); reported, fatal only with --strict;
 *  - short read at a stale size: a read that ended early with every byte
 *    right (a prefix of a file a writer wrote) and no failed write of it:
 *    the kernel stopped at the size it had cached from another open or
 *    lookup of the path while this open's snapshot holds more (work files
 *    are not direct_io; known); reported,
 *    fatal only with --strict;
 *  - exec output wrong: an exec that succeeded with output other than what
 *    it printed (a stream cut before the output arrived; known, see
 *    faults.sh); reported, fatal only with --strict;
 *  - hung: any call running over 150 s, or a sandbox with no successful
 *    exec for that long (a guest left frozen, or starved by the freezes);
 *  - the daemon's VmRSS, sampled every second: its peak after the first
 *    10 s must stay under --rss-max-mb.
 * Exit 0 when there are no wrong bytes, no hung call, RSS stayed bounded
 * and every kind of call succeeded at least once; 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "faultctl.h"

#define HDR 64
#define MAX_PAYLOAD (768 * 1024)
#define MAX_SBX 16
#define HUNG_MS 150000
#define MAX_THREADS 128

static const char *mount_dir, *relay_ctl;
static long daemon_pid;
static int seconds = 60, n_readers = 16, n_writers = 4, n_execers = 4, n_agents = 0, fault_ms = 2000,
	   rss_max_mb = 256;
static const char *agent_scope;  /* --scope: the scope the agents acquire in */
static const char *agent_image = "mafsbx/busybox:latest";  /* --image: what they acquire */
static bool strict;
static const char *sbx[MAX_SBX];
static int n_sbx;
static atomic_bool stop_flag;

/* per sandbox: the writer's state of work/w.bin */
struct wstate {
	atomic_ulong failed_gen;  /* bumped by every failed write */
	atomic_ulong ok_gen;      /* bumped by every successful write */
	atomic_bool dirty;        /* the last write failed: the file may be partial */
	pthread_mutex_t mu;       /* one writer of a file at a time */
};
static struct wstate ws[MAX_SBX];
/* per sandbox: when an exec in it last succeeded (a frozen or starved guest shows as a long gap) */
static _Atomic long long exec_ok_ms[MAX_SBX];

static atomic_ulong c_reads_ok, c_read_bytes, c_reads_failed, c_wrong, c_torn, c_stale, c_writes_ok, c_writes_failed,
	c_execs_ok, c_execs_failed, c_exec_wrong, c_faults, c_hung, c_readdirs_ok, c_readdirs_failed, c_agents_ok,
	c_agents_failed, c_agent_wrong;
#define NERR 140
static atomic_ulong c_errno[NERR];

/* per thread: when its current call started (0: none) */
static _Atomic long long op_start[MAX_THREADS];
static char op_name[MAX_THREADS][160];

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "soak: %s\n", line);
}

static void count_errno(int e)
{
	if (e > 0 && e < NERR)
		atomic_fetch_add(&c_errno[e], 1);
}

static void op_begin(int tid, const char *what, const char *path)
{
	snprintf(op_name[tid], sizeof(op_name[tid]), "%s %s", what, path);
	atomic_store(&op_start[tid], now_ms());
}

static void op_end(int tid)
{
	atomic_store(&op_start[tid], 0);
}

/* ---- self-checking content ------------------------------------------------ */

static uint64_t xs_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void fill_payload(uint64_t seed, unsigned char *p, size_t n)
{
	uint64_t s = seed ? seed : 1;
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = xs_next(&s);
		size_t k = n - i < 8 ? n - i : 8;
		memcpy(p + i, &v, k);
	}
}

/* A whole file: header + payload. Returns its size. */
static size_t make_file(unsigned char *buf, uint64_t seed, size_t len)
{
	memset(buf, ' ', HDR);
	int h = snprintf((char *)buf, HDR, "SOAK %zu %016" PRIx64, len, seed);
	buf[h] = ' ';
	buf[HDR - 1] = '\n';
	fill_payload(seed, buf + HDR, len);
	return HDR + len;
}

enum verdict { V_OK, V_TRUNCATED, V_WRONG };

static enum verdict check_file(const unsigned char *buf, size_t n, unsigned char *scratch)
{
	if (n < HDR || memcmp(buf, "SOAK ", 5) != 0 || buf[HDR - 1] != '\n')
		return n < HDR && (n == 0 || memcmp(buf, "SOAK ", n < 5 ? n : 5) == 0) ? V_TRUNCATED : V_WRONG;
	char hdr[HDR + 1];
	memcpy(hdr, buf, HDR);
	hdr[HDR] = '\0';
	size_t len = 0;
	uint64_t seed = 0;
	if (sscanf(hdr, "SOAK %zu %" SCNx64, &len, &seed) != 2 || len > MAX_PAYLOAD)
		return V_WRONG;
	fill_payload(seed, scratch, len);
	size_t have = n - HDR;
	if (have > len)
		return V_WRONG;
	if (memcmp(buf + HDR, scratch, have) != 0)
		return V_WRONG;
	return have == len ? V_OK : V_TRUNCATED;
}

/* ---- calls ----------------------------------------------------------------- */

static int write_whole(const char *path, const unsigned char *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	int e = 0;
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, buf + off, n - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			break;
		}
		off += (size_t)w;
	}
	if (close(fd) < 0 && !e)
		e = errno;
	return e;
}

/* Read a whole file: 0 and *n, or the errno; *st_size: its size as fstat saw it at the end. */
static int read_whole(const char *path, unsigned char *buf, size_t cap, size_t *n, long long *st_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	size_t have = 0;
	int e = 0;
	for (;;) {
		if (have == cap) {
			e = EFBIG;
			break;
		}
		ssize_t r = read(fd, buf + have, cap - have);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			break;
		}
		if (r == 0)
			break;
		have += (size_t)r;
	}
	struct stat st;
	*st_size = fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
	close(fd);
	*n = have;
	return e;
}

static void path_of(char *out, size_t sz, int k, const char *file)
{
	snprintf(out, sz, "%s/%s/work/%s", mount_dir, sbx[k], file);
}

/* ---- workers ------------------------------------------------------------------- */

struct targ {
	int tid;
	int k;                   /* sandbox (readers, execers); first sandbox (writers) */
	uint64_t rng;
};

static void *reader(void *arg)
{
	struct targ *a = arg;
	unsigned char *buf = malloc(HDR + MAX_PAYLOAD + 4096), *scratch = malloc(MAX_PAYLOAD);
	if (!buf || !scratch)
		abort();
	char path[4096];
	unsigned long n = 0;
	while (!atomic_load(&stop_flag)) {
		bool is_w = xs_next(&a->rng) % 2;
		path_of(path, sizeof(path), a->k, is_w ? "w.bin" : "static.bin");
		if (++n % 10 == 0) {
			char dir[4096];
			snprintf(dir, sizeof(dir), "%s/%s/work", mount_dir, sbx[a->k]);
			op_begin(a->tid, "readdir", dir);
			DIR *d = opendir(dir);
			if (!d) {
				count_errno(errno);
				atomic_fetch_add(&c_readdirs_failed, 1);
			} else {
				errno = 0;
				while (readdir(d))
					;
				if (errno) {
					count_errno(errno);
					atomic_fetch_add(&c_readdirs_failed, 1);
				} else {
					atomic_fetch_add(&c_readdirs_ok, 1);
				}
				closedir(d);
			}
			op_end(a->tid);
		}
		struct wstate *w = &ws[a->k];
		unsigned long fg0 = atomic_load(&w->failed_gen);
		bool dirty0 = atomic_load(&w->dirty);
		size_t got = 0;
		long long st_size = -1;
		op_begin(a->tid, "read", path);
		int e = read_whole(path, buf, HDR + MAX_PAYLOAD + 4096, &got, &st_size);
		op_end(a->tid);
		if (e) {
			count_errno(e);
			atomic_fetch_add(&c_reads_failed, 1);
			continue;
		}
		enum verdict v = check_file(buf, got, scratch);
		if (v == V_OK) {
			atomic_fetch_add(&c_reads_ok, 1);
			atomic_fetch_add(&c_read_bytes, got);
			continue;
		}
		/* a failed write of this file before or during the read may have left it partial */
		bool excused = is_w && (dirty0 || atomic_load(&w->failed_gen) != fg0 || atomic_load(&w->dirty));
		size_t full = got >= HDR ? (size_t)strtoull((const char *)buf + 5, NULL, 10) + HDR : 0;
		if (v == V_TRUNCATED && !excused) {
			/*
			 * Every byte right, but too few of them, and no write of the
			 * file failed: the kernel stopped at a size it had cached
			 * from another open or lookup of the path (a writer's
			 * O_TRUNC open sets it to 0), while this open's snapshot
			 * holds more (fstat of the handle usually says how much).
			 */
			atomic_fetch_add(&c_stale, 1);
			msg("short read at a stale size: %s read %zu of %zu bytes (fstat: %lld)", path, got, full, st_size);
		} else if (excused) {
			atomic_fetch_add(&c_torn, 1);
			msg("torn: %s read %zu bytes (%s) after a failed write of it", path, got,
			    v == V_TRUNCATED ? "a truncated file" : "not a soak file");
		} else {
			/* a whole file followed by zeros: the kernel read on to a larger size it had cached */
			size_t z = full;
			while (full && z < got && buf[z] == 0)
				z++;
			if (full >= HDR && got > full && z == got && check_file(buf, full, scratch) == V_OK)
				msg("the next read is a whole file followed by %zu zero bytes", got - full);
			atomic_fetch_add(&c_wrong, 1);
			msg("WRONG BYTES: %s read %zu bytes (%s; the header says %zu; fstat said %lld), and no write of "
			    "it had failed", path, got, v == V_TRUNCATED ? "a truncated file" : "content no writer wrote",
			    full, st_size);
		}
	}
	free(buf);
	free(scratch);
	return NULL;
}

static void *writer(void *arg)
{
	struct targ *a = arg;
	unsigned char *buf = malloc(HDR + MAX_PAYLOAD);
	if (!buf)
		abort();
	char path[4096];
	int k = a->k;
	while (!atomic_load(&stop_flag)) {
		size_t len = 1024 + (size_t)(xs_next(&a->rng) % (256 * 1024));
		size_t n = make_file(buf, xs_next(&a->rng), len);
		struct wstate *w = &ws[k];
		path_of(path, sizeof(path), k, "w.bin");
		pthread_mutex_lock(&w->mu);
		op_begin(a->tid, "write", path);
		int e = write_whole(path, buf, n);
		op_end(a->tid);
		if (e) {
			atomic_store(&w->dirty, true);
			atomic_fetch_add(&w->failed_gen, 1);
			atomic_fetch_add(&c_writes_failed, 1);
			count_errno(e);
		} else {
			atomic_store(&w->dirty, false);
			atomic_fetch_add(&w->ok_gen, 1);
			atomic_fetch_add(&c_writes_ok, 1);
		}
		pthread_mutex_unlock(&w->mu);
		k = (k + 1) % n_sbx;
		usleep(50000);
	}
	free(buf);
	return NULL;
}

/* One transaction on MOUNT/.ctl/KIND: 0 and the reply, or the write's errno. */
static int ctl_call(const char *kind, const char *req, char *reply, size_t rsz)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/.ctl/%s", mount_dir, kind);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int e = 0;
	if (write(fd, req, strlen(req)) < 0)
		e = errno;
	ssize_t r, have = 0;
	while ((r = read(fd, reply + have, rsz - 1 - (size_t)have)) > 0)
		have += r;
	reply[have > 0 ? have : 0] = '\0';
	close(fd);
	return e;
}

static void *execer(void *arg)
{
	struct targ *a = arg;
	char req[512], want[128], reply[65536];
	unsigned long n = 0;
	while (!atomic_load(&stop_flag)) {
		n++;
		snprintf(req, sizeof(req), "{\"sandbox\": \"%s\", \"argv\": [\"echo\", \"soak-%d-%lu\"], \"timeout\": 60}\n",
			 sbx[a->k], a->k, n);
		snprintf(want, sizeof(want), "\"stdout\": \"soak-%d-%lu\\n\"", a->k, n);
		op_begin(a->tid, "exec in", sbx[a->k]);
		int e = ctl_call("exec", req, reply, sizeof(reply));
		op_end(a->tid);
		if (e) {
			count_errno(e);
			atomic_fetch_add(&c_execs_failed, 1);
		} else if (!strstr(reply, "\"ok\": true") || !strstr(reply, want) || !strstr(reply, "\"exit_code\": 0")) {
			atomic_fetch_add(&c_exec_wrong, 1);
			msg("exec output wrong in %s: want %s, reply %.300s", sbx[a->k], want, reply);
		} else {
			atomic_fetch_add(&c_execs_ok, 1);
			atomic_store(&exec_ok_ms[a->k], now_ms());
		}
		usleep(100000);
	}
	return NULL;
}

/* The "name" of an acquire reply, or false. */
static bool reply_name(const char *reply, char out[64])
{
	const char *p = strstr(reply, "\"name\": \"");
	if (!p)
		return false;
	p += 9;
	size_t n = strcspn(p, "\"");
	if (n == 0 || n >= 64)
		return false;
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

/*
 * An agent's day, over and over: acquire a sandbox of its own, write a 1 KiB
 * input, exec `cat in > out`, read the output back (it must be the input,
 * byte for byte: a wrong byte fails the soak; a failed call is counted),
 * dispose the sandbox.
 */
static void *agent(void *arg)
{
	struct targ *a = arg;
	char req[512], reply[65536], name[64], path[4096];
	unsigned char in[1024], back[2048];
	unsigned long n = 0;
	while (!atomic_load(&stop_flag)) {
		n++;
		bool ok = false;
		snprintf(req, sizeof(req), "{\"scope\": \"%s\", \"thread\": \"agent%d\", \"agent\": \"a\", "
			 "\"kind\": \"n%lu\", \"image\": \"%s\"}\n", agent_scope, a->tid, n, agent_image);
		op_begin(a->tid, "agent acquire", req);
		int e = ctl_call("acquire", req, reply, sizeof(reply));
		op_end(a->tid);
		if (e || !reply_name(reply, name)) {
			count_errno(e);
			atomic_fetch_add(&c_agents_failed, 1);
			usleep(200000);
			continue;
		}
		for (size_t i = 0; i < sizeof(in); i++)
			in[i] = (unsigned char)('a' + (xs_next(&a->rng) % 26));
		snprintf(path, sizeof(path), "%s/%s/work/in", mount_dir, name);
		op_begin(a->tid, "agent write", path);
		e = write_whole(path, in, sizeof(in));
		op_end(a->tid);
		if (!e) {
			snprintf(req, sizeof(req), "{\"sandbox\": \"%s\", \"command\": \"cat in > out\", \"timeout\": 60}\n",
				 name);
			op_begin(a->tid, "agent exec", name);
			e = ctl_call("exec", req, reply, sizeof(reply));
			op_end(a->tid);
		}
		if (!e) {
			size_t got = 0;
			long long st_size = 0;
			snprintf(path, sizeof(path), "%s/%s/work/out", mount_dir, name);
			op_begin(a->tid, "agent read", path);
			e = read_whole(path, back, sizeof(back), &got, &st_size);
			op_end(a->tid);
			if (!e && (got != sizeof(in) || memcmp(back, in, sizeof(in)) != 0)) {
				atomic_fetch_add(&c_agent_wrong, 1);
				msg("agent %d: %s/work/out is not its input (%zu bytes)", a->tid, name, got);
			} else if (!e) {
				ok = true;
			}
		}
		count_errno(e);
		snprintf(req, sizeof(req), "{\"name\": \"%s\"}\n", name);
		op_begin(a->tid, "agent dispose", name);
		int de = ctl_call("dispose", req, reply, sizeof(reply));
		op_end(a->tid);
		count_errno(de);
		atomic_fetch_add(ok && !de ? &c_agents_ok : &c_agents_failed, 1);
	}
	return NULL;
}

/* Random faults through the relay: mostly a random busy connection cut, sometimes a one-shot rule. */
static void *chaos(void *arg)
{
	struct targ *a = arg;
	static const char *const kinds[] = {
		/* a trailing '=' takes a random offset */
		"rule cut GET */archive[?]path=* resp=",
		"rule cut POST */pause resp=0",
		"rule cut POST */unpause req=0",
		"rule cut POST */unpause resp=0",
		"rule cut POST */exec/*/start resp=",
		"rule cut HEAD */archive[?]path=* resp=0",
		"rule cut PUT */archive[?]path=* req=",
	};
	char cmd[256], reply[512];
	while (!atomic_load(&stop_flag)) {
		long wait = fault_ms / 2 + (long)(xs_next(&a->rng) % (uint64_t)fault_ms);
		for (long t = 0; t < wait && !atomic_load(&stop_flag); t += 100)
			usleep(100000);
		if (atomic_load(&stop_flag))
			break;
		uint64_t r = xs_next(&a->rng);
		if (r % 10 < 5) {
			snprintf(cmd, sizeof(cmd), "kill-random");
		} else {
			const char *k = kinds[(r >> 8) % (sizeof(kinds) / sizeof(kinds[0]))];
			size_t kl = strlen(k);
			if (k[kl - 1] == '=')
				snprintf(cmd, sizeof(cmd), "%s%u", k, (unsigned)(xs_next(&a->rng) % 200000));
			else
				snprintf(cmd, sizeof(cmd), "%s", k);
		}
		int rc = fault_ctl(relay_ctl, cmd, reply, sizeof(reply));
		if (rc < 0)
			msg("relay control: %s: %s", cmd, strerror(-rc));
		else
			atomic_fetch_add(&c_faults, 1);
	}
	/* no rule left armed for the checks that follow */
	fault_ctl(relay_ctl, "clear", reply, sizeof(reply));
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: soak --mount M --relay-ctl CTL --pid PID [--seconds N] [--readers N] [--writers N]\n"
			"            [--execers N] [--agents N --scope S [--image I]] [--fault-ms MS] [--rss-max-mb MB] [--strict]\n"
			"            SANDBOX...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(o, "--strict")) {
			strict = true;
			continue;
		}
		if (o[0] != '-') {
			if (n_sbx == MAX_SBX)
				usage();
			sbx[n_sbx++] = o;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(o, "--mount"))
			mount_dir = v;
		else if (!strcmp(o, "--relay-ctl"))
			relay_ctl = v;
		else if (!strcmp(o, "--pid"))
			daemon_pid = atol(v);
		else if (!strcmp(o, "--seconds"))
			seconds = atoi(v);
		else if (!strcmp(o, "--readers"))
			n_readers = atoi(v);
		else if (!strcmp(o, "--writers"))
			n_writers = atoi(v);
		else if (!strcmp(o, "--execers"))
			n_execers = atoi(v);
		else if (!strcmp(o, "--agents"))
			n_agents = atoi(v);
		else if (!strcmp(o, "--scope"))
			agent_scope = v;
		else if (!strcmp(o, "--image"))
			agent_image = v;
		else if (!strcmp(o, "--fault-ms"))
			fault_ms = atoi(v);
		else if (!strcmp(o, "--rss-max-mb"))
			rss_max_mb = atoi(v);
		else
			usage();
	}
	if (!mount_dir || !relay_ctl || daemon_pid <= 0 || !n_sbx || seconds <= 0 || fault_ms <= 0 ||
	    n_readers + n_writers + n_execers + n_agents + 2 > MAX_THREADS || (n_agents && !agent_scope))
		usage();

	/* static files, before any fault */
	unsigned char *buf = malloc(HDR + MAX_PAYLOAD);
	if (!buf)
		return 1;
	for (int k = 0; k < n_sbx; k++) {
		pthread_mutex_init(&ws[k].mu, NULL);
		char path[4096];
		size_t n = make_file(buf, 0x5eed0000u + (uint64_t)k, 200 * 1024 + (size_t)k * 4096);
		path_of(path, sizeof(path), k, "static.bin");
		int e = write_whole(path, buf, n);
		if (!e) {
			path_of(path, sizeof(path), k, "w.bin");
			n = make_file(buf, 0x77770000u + (uint64_t)k, 4096);
			e = write_whole(path, buf, n);
		}
		if (e) {
			msg("setup: cannot write %s: %s", path, strerror(e));
			return 1;
		}
	}
	free(buf);

	pthread_t th[MAX_THREADS];
	struct targ ta[MAX_THREADS];
	int nt = 0;
	uint64_t seed = (uint64_t)now_ms() ^ ((uint64_t)getpid() << 32);
	for (int i = 0; i < n_readers; i++, nt++) {
		ta[nt] = (struct targ){ nt, i % n_sbx, seed + 17 * (uint64_t)nt + 1 };
		pthread_create(&th[nt], NULL, reader, &ta[nt]);
	}
	for (int i = 0; i < n_writers; i++, nt++) {
		ta[nt] = (struct targ){ nt, i % n_sbx, seed + 17 * (uint64_t)nt + 1 };
		pthread_create(&th[nt], NULL, writer, &ta[nt]);
	}
	for (int i = 0; i < n_execers; i++, nt++) {
		ta[nt] = (struct targ){ nt, i % n_sbx, seed + 17 * (uint64_t)nt + 1 };
		pthread_create(&th[nt], NULL, execer, &ta[nt]);
	}
	for (int i = 0; i < n_agents; i++, nt++) {
		ta[nt] = (struct targ){ nt, 0, seed + 17 * (uint64_t)nt + 1 };
		pthread_create(&th[nt], NULL, agent, &ta[nt]);
	}
	ta[nt] = (struct targ){ nt, 0, seed * 31 + 7 };
	pthread_create(&th[nt], NULL, chaos, &ta[nt]);
	nt++;

	long long t0 = now_ms(), end = t0 + (long long)seconds * 1000, max_gap = 0;
	for (int k = 0; k < n_sbx; k++)
		atomic_store(&exec_ok_ms[k], t0);
	long rss0 = bench_rss_kb(daemon_pid), rss_base = -1, rss_peak = 0, rss_last = rss0;
	long long next_report = t0 + 60000;
	bool hung_seen = false;
	while (now_ms() < end) {
		sleep(1);
		long long now = now_ms();
		long kb = bench_rss_kb(daemon_pid);
		if (kb < 0) {
			msg("the daemon (pid %ld) is gone", daemon_pid);
			hung_seen = true;
			break;
		}
		rss_last = kb;
		if (now - t0 >= 10000) {
			if (rss_base < 0)
				rss_base = kb;
			if (kb > rss_peak)
				rss_peak = kb;
		}
		for (int k = 0; k < n_sbx && n_execers; k++) {
			long long gap = now - atomic_load(&exec_ok_ms[k]);
			if (gap > max_gap)
				max_gap = gap;
		}
		for (int i = 0; i < nt; i++) {
			long long s = atomic_load(&op_start[i]);
			if (s && now - s > HUNG_MS && !hung_seen) {
				msg("HUNG: %s running for %lld s", op_name[i], (now - s) / 1000);
				hung_seen = true;
				atomic_fetch_add(&c_hung, 1);
			}
		}
		if (now >= next_report) {
			msg("%lld s: reads %lu ok / %lu failed, writes %lu/%lu, execs %lu/%lu, faults %lu, wrong %lu, "
			    "torn %lu, RSS %ld kB",
			    (now - t0) / 1000, atomic_load(&c_reads_ok), atomic_load(&c_reads_failed),
			    atomic_load(&c_writes_ok), atomic_load(&c_writes_failed), atomic_load(&c_execs_ok),
			    atomic_load(&c_execs_failed), atomic_load(&c_faults), atomic_load(&c_wrong),
			    atomic_load(&c_torn), kb);
			next_report += 60000;
		}
	}
	atomic_store(&stop_flag, true);
	/* the workers finish their current call; a hung one is reported, not waited for forever */
	long long join_deadline = now_ms() + HUNG_MS;
	for (int i = 0; i < nt; i++) {
		while (atomic_load(&op_start[i]) && now_ms() < join_deadline)
			usleep(100000);
		if (atomic_load(&op_start[i])) {
			msg("HUNG at the end: %s", op_name[i]);
			atomic_fetch_add(&c_hung, 1);
			continue;
		}
		pthread_join(th[i], NULL);
	}
	long long el = now_ms() - t0;

	printf("soak: %lld s, %d readers, %d writers, %d execers over %d sandboxes, a fault every ~%d ms\n", el / 1000,
	       n_readers, n_writers, n_execers, n_sbx, fault_ms);
	printf("soak: reads %lu ok (%.1f MiB verified), %lu failed; readdirs %lu ok, %lu failed\n",
	       atomic_load(&c_reads_ok), (double)atomic_load(&c_read_bytes) / (1024.0 * 1024.0),
	       atomic_load(&c_reads_failed), atomic_load(&c_readdirs_ok), atomic_load(&c_readdirs_failed));
	printf("soak: writes %lu ok, %lu failed; execs %lu ok, %lu failed; faults injected %lu\n",
	       atomic_load(&c_writes_ok), atomic_load(&c_writes_failed), atomic_load(&c_execs_ok),
	       atomic_load(&c_execs_failed), atomic_load(&c_faults));
	printf("soak: agents %d: %lu days ok, %lu failed, %lu outputs not their input\n", n_agents,
	       atomic_load(&c_agents_ok), atomic_load(&c_agents_failed), atomic_load(&c_agent_wrong));
	printf("soak: failures by errno:");
	for (int e = 1; e < NERR; e++)
		if (atomic_load(&c_errno[e]))
			printf(" %s=%lu", strerrorname_np(e) ? strerrorname_np(e) : "?", atomic_load(&c_errno[e]));
	printf("\n");
	printf("soak: WRONG BYTES %lu; hung %lu; known: torn by a failed write %lu, short reads at a stale size %lu, "
	       "exec output wrong %lu\n",
	       atomic_load(&c_wrong), atomic_load(&c_hung), atomic_load(&c_torn), atomic_load(&c_stale),
	       atomic_load(&c_exec_wrong));
	printf("soak: longest time a sandbox went without a successful exec: %lld ms\n", max_gap);
	printf("soak: daemon VmRSS: %ld kB at the start, %ld kB after 10 s, peak %ld kB, %ld kB at the end (bound %d MiB)\n",
	       rss0, rss_base, rss_peak, rss_last, rss_max_mb);

	int bad = 0;
	if (atomic_load(&c_wrong)) {
		msg("FAIL: %lu reads returned wrong bytes", atomic_load(&c_wrong));
		bad = 1;
	}
	if (atomic_load(&c_agent_wrong)) {
		msg("FAIL: %lu agents read back an output that was not their input", atomic_load(&c_agent_wrong));
		bad = 1;
	}
	if (n_agents && !atomic_load(&c_agents_ok)) {
		msg("FAIL: no agent ever finished its day");
		bad = 1;
	}
	if (atomic_load(&c_hung) || hung_seen) {
		msg("FAIL: a call hung or the daemon died");
		bad = 1;
	}
	if (max_gap > HUNG_MS) {
		msg("FAIL: a sandbox went %lld s without a successful exec (frozen or starved)", max_gap / 1000);
		bad = 1;
	}
	if (rss_peak > (long)rss_max_mb * 1024) {
		msg("FAIL: the daemon's RSS peaked at %ld kB, over %d MiB", rss_peak, rss_max_mb);
		bad = 1;
	}
	if (!atomic_load(&c_reads_ok) || !atomic_load(&c_writes_ok) || (n_execers && !atomic_load(&c_execs_ok))) {
		msg("FAIL: some kind of call never succeeded");
		bad = 1;
	}
	if (strict && (atomic_load(&c_torn) || atomic_load(&c_stale) || atomic_load(&c_exec_wrong))) {
		msg("FAIL (--strict): torn files, short reads or wrong exec output");
		bad = 1;
	}
	return bad;
}
