/*
 * planes_ratio.h: bench_planes' engine-plane ratio (`ls -l` of 20 against
 * one fresh stat), its engine calls and the engine's own figures for the
 * same work (planes_ratio.c). Also what bench_planes.c shares with it.
 */
#ifndef MAFSBX_PLANES_RATIO_H
#define MAFSBX_PLANES_RATIO_H

#include <stdbool.h>

/* bench_planes.c */
void planes_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

struct planes_ratio {
	double stat_ms, lsl_ms, ratio;           /* through the engine-plane mount: medians */
	double pauses;                           /* the guest's pauses per `ls -l` (median) */
	double f_stat_ms, f_lsl_ms, f_ratio;     /* the engine floor: pause + 3 HEADs, and + the GET */
	double f_pause_ms, f_head_ms, f_get_ms;  /* the floor's parts (medians) */
};

/*
 * Interleaved runs of a fresh stat of WORK/d1.txt and an `ls -l` of
 * WORK/plain (20 files) through the engine-plane mount `mnt`, each after a
 * pause longer than a kept listing's validity (every run fresh), the pauses
 * of container `name` each `ls -l` made, and the engine floor of both.
 */
void planes_ratio_measure(const char *mnt, const char *name, int runs, struct planes_ratio *out);
/* Print the table; with CHECK=1 in the environment, 1 when a bound is passed (else 0). */
int planes_ratio_print(const struct planes_ratio *r, int runs);

#endif
