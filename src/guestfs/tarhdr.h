/*
 * tarhdr.h: the fields of a 512-byte tar header block, read strictly: the
 * pieces both of this layer's own tar readers share (tarplane.c's first-entry
 * reader and archlist.c's directory listing).
 */
#ifndef MAFSBX_TARHDR_H
#define MAFSBX_TARHDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A numeric field of `n` bytes: octal text (leading spaces, then digits,
 * then nothing but spaces and NULs; an all-blank field reads as 0, as tar
 * readers do) or GNU base-256 (the first byte's high bit). 0 with *out set;
 * -1 malformed or over 2^63; -2 negative (a '-', or base-256 with its sign
 * bit).
 */
int mafsbx_tar_num_field(const unsigned char *f, size_t n, uint64_t *out);

/* All 512 bytes zero: an end-of-archive block. */
bool mafsbx_tar_zero_block(const unsigned char *h);

/* The header's checksum field matches its bytes, summed unsigned or signed
 * (both are in the wild), the field itself counted as spaces. */
bool mafsbx_tar_checksum_ok(const unsigned char *h);

#endif
