/*
 * benchlib.h: what every benchmark program shares: a monotonic clock in ms,
 * the median of a sample, and running the docker CLI (the comparison column)
 * with optional stdin, optional counted/bounded stdout.
 */
#ifndef MAFSBX_BENCHLIB_H
#define MAFSBX_BENCHLIB_H

#include <stddef.h>
#include <stdint.h>

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

#endif
