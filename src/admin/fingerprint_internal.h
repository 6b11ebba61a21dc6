/*
 * fingerprint_internal.h: what fingerprint.c (measuring, the snapshot's
 * bookkeeping), fingerprint_json.c (the JSON form) and fingerprint_diff.c
 * (the diff) share. Not part of fingerprint.h's API.
 */
#ifndef MAFSBX_FINGERPRINT_INTERNAL_H
#define MAFSBX_FINGERPRINT_INTERNAL_H

#include "fingerprint.h"

/* Free what one entry or one process owns (not the struct itself). */
void mafsbx_fp_entry_clear(struct mafsbx_fp_entry *e);
void mafsbx_fp_proc_clear(struct mafsbx_fp_process *p);

/* The orders of a snapshot's lists: entries by path, processes by (pid, start). */
int mafsbx_fp_cmp_entry(const void *a, const void *b);
int mafsbx_fp_cmp_proc_key(const struct mafsbx_fp_process *x, const struct mafsbx_fp_process *y);

#endif
