/*
 * benchlib.c: clock, median, the docker CLI runner, the RSS of a process and
 * the engine set-up shared by the benchmark programs in tests/bench/ (and
 * the fault soak).
 */
#include "benchlib.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "endpoint.h"
#include "engine.h"
#include "error.h"
#include "freeze.h"

extern char **environ;

double bench_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
	if (n <= 0)
		return -1;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; /* the child stopped reading: its exit status tells */
		}
		p += w;
		len -= (size_t)w;
	}
}

int bench_cli(const char *cli, const void *in, size_t in_len, size_t limit, uint64_t *got, unsigned flags,
	      const char *const *args)
{
	const char *argv[64];
	int n = 0;
	argv[n++] = cli;
	for (int i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;

	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 };
	if ((in && pipe2(pin, O_CLOEXEC) < 0) || (got && pipe2(pout, O_CLOEXEC) < 0))
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (in)
		posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (got)
		posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (flags & BENCH_CLI_QUIET)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int r = strchr(cli, '/') ? posix_spawn(&pid, cli, &fa, NULL, (char *const *)argv, environ)
				 : posix_spawnp(&pid, cli, &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (in)
		close(pin[0]);
	if (got)
		close(pout[1]);
	if (r) {
		if (in)
			close(pin[1]);
		if (got)
			close(pout[0]);
		errno = r;
		return -1;
	}
	if (in) {
		write_all(pin[1], in, in_len);
		close(pin[1]);
	}
	bool killed = false;
	if (got) {
		uint64_t total = 0;
		char buf[65536];
		for (;;) {
			ssize_t k = read(pout[0], buf, sizeof(buf));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			total += (uint64_t)k;
			if (limit && total >= limit) {
				kill(pid, SIGKILL);
				killed = true;
				break;
			}
		}
		close(pout[0]);
		*got = total;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (killed)
		return 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int bench_cli_run(const char *cli, const char *const *args,
		  void (*fail)(const char *what, const struct mafsbx_error *err))
{
	int r = bench_cli(cli, NULL, 0, 0, NULL, 0, args);
	if (r < 0)
		fail("spawn the docker CLI", NULL);
	return r;
}

long bench_rss_kb(long pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long kb = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

const char *bench_engine_setup(char *rundir, struct mafsbx_engine **eng, struct mafsbx_freezer **fz,
			       struct mafsbx_error *err)
{
	struct mafsbx_endpoint ep;
	if (mafsbx_endpoint_resolve(NULL, NULL, NULL, &ep, err) < 0)
		return "endpoint";
	if (!(*eng = mafsbx_engine_open(&ep, NULL, err)) || mafsbx_engine_ping(*eng, err) < 0)
		return "engine";
	if (!mkdtemp(rundir)) {
		mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "%s", strerror(errno));
		return "mkdtemp";
	}
	if (!(*fz = mafsbx_freezer_new(*eng, rundir, err)))
		return "freezer";
	return NULL;
}
