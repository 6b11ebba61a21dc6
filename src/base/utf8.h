/*
 * utf8.h: the one UTF-8 decoder of the tree. It follows the Unicode
 * standard's well-formed table (and Go's utf8.DecodeRune): no overlong
 * forms (C0, C1, E0 80..9F, F0 80..8F), no surrogates (ED A0..BF), nothing
 * above U+10FFFF (F4 90.., F5..FF), no truncated sequence. Every caller that
 * validates, measures, escapes or replaces UTF-8 decodes with it; what each
 * does with a bad byte (refuse, escape, U+FFFD, surrogateescape) stays its own.
 */
#ifndef MAFSBX_UTF8_H
#define MAFSBX_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A lead byte: false when no well-formed sequence starts with it, else the
 * sequence's length and the range its second byte must fall in (later ones
 * 80..BF). For a decoder fed one byte at a time (fs/ctl.c's JSON scanner).
 */
bool mafsbx_utf8_lead(unsigned char c, size_t *len, unsigned char *lo, unsigned char *hi);

/*
 * Decode the sequence at s[0..n) (n >= 1). Returns its length (1 to 4) and
 * sets *cp (when cp is not NULL), or returns 0 when s does not start with a
 * well-formed sequence. `bad_len` (may be NULL) then gets the length of the
 * maximal subpart, the bytes one U+FFFD replaces (Unicode's "substitution of
 * maximal subparts", Python's errors="replace"): at least 1.
 */
size_t mafsbx_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp, size_t *bad_len);

/* True when s[0..n) is well-formed UTF-8 throughout (a NUL byte is U+0000). */
bool mafsbx_utf8_valid(const void *s, size_t n);

#endif
