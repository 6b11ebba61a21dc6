/*
 * benchlib.h: what every benchmark program shares: a monotonic clock in ms,
 * the median of a sample, and running the docker CLI (the comparison column)
 * with optional stdin, optional counted/bounded stdout.
 */
#ifndef MAFSBX_BENCHLIB_H
#define MAFSBX_BENCHLIB_H

#include <stddef.h>
#include <stdint.h>

struct mafsbx_engine;
struct mafsbx_freezer;
struct mafsbx_error;

double bench_now_ms(void);
/* Sorts v in place. */
double bench_median(double *v, int n);

#define BENCH_CLI_QUIET 1u   /* the child's stderr goes to /dev/null */

/*
 * Run `cli ARGS...` (a path, or a name looked up in PATH). `in` (may be
 * NULL) is fed on stdin. stdout is discarded; when `got` is given its bytes
 * are counted, and with `limit` > 0 the child is killed after `limit` bytes,
 * as the upstream seam's bounded read does (that counts as success).
 * Returns the exit status (128 + signal when killed by one), or -1 with
 * errno set when the CLI cannot be started.
 */
int bench_cli(const char *cli, const void *in, size_t in_len, size_t limit, uint64_t *got, unsigned flags,
	      const char *const *args);

/*
 * The same with no stdin and stdout discarded; when the CLI cannot be
 * started, calls fail("spawn the docker CLI", NULL), which must not return.
 */
int bench_cli_run(const char *cli, const char *const *args,
		  void (*fail)(const char *what, const struct mafsbx_error *err));

/* VmRSS of process pid in KiB, or -1 when it cannot be read. */
long bench_rss_kb(long pid);

/*
 * Resolve the default endpoint, open and ping the engine, make a private
 * runtime directory from the mkdtemp template rundir, and a freezer over it.
 * Returns NULL, or the step that failed ("endpoint", "engine", "mkdtemp",
 * "freezer") with *err saying why.
 */
const char *bench_engine_setup(char *rundir, struct mafsbx_engine **eng, struct mafsbx_freezer **fz,
			       struct mafsbx_error *err);

#endif
