/*
 * base64.h: the one base64 codec of the tree (RFC 4648). It owns encoding and
 * strict decoding in the standard alphabet (exec stdin_b64, the *_b64 reply
 * fields, the engine's X-Docker-Container-Path-Stat header) and the URL-safe
 * alphabet (the maf-sandbox.key.v1 label). Both alphabets are always written
 * and read '=' padded, as Go's StdEncoding and Python's urlsafe_b64encode
 * write them. Decoding refuses whitespace, line breaks, characters of the
 * other alphabet, a length that is not a multiple of 4, and '=' anywhere but
 * the one or two last characters. Callers whose historic rules differ
 * (empty input, non-zero spare bits) say so with flags.
 */
#ifndef MAFSBX_BASE64_H
#define MAFSBX_BASE64_H

#include <stddef.h>

enum mafsbx_b64_flags {
	MAFSBX_B64_STD = 0,            /* standard alphabet ('+' '/'), strict */
	MAFSBX_B64_URL = 1u << 0,      /* URL-safe alphabet ('-' '_') instead of the standard one */
	MAFSBX_B64_NONEMPTY = 1u << 1, /* decode: refuse "" (it encodes nothing, so it can never be a value) */
	MAFSBX_B64_ANY_BITS = 1u << 2, /* decode: accept non-zero spare bits before the padding, as Go's
					  non-Strict decoder does; the default refuses them (one spelling per value) */
};

/*
 * Encode len bytes (flags: MAFSBX_B64_URL or 0). Returns a malloc'd
 * NUL-terminated string ("" for len 0), or NULL when out of memory.
 */
char *mafsbx_base64_encode(const void *data, size_t len, unsigned flags);

/*
 * Decode len characters of text (a NUL inside is a bad character). On success
 * 0 with *out a malloc'd buffer of *out_len bytes plus a terminating NUL the
 * length does not count. -EINVAL when the text is not base64 under `flags`,
 * -ENOMEM; on failure *out is NULL and *out_len 0.
 */
int mafsbx_base64_decode(const char *text, size_t len, unsigned flags, unsigned char **out, size_t *out_len);

#endif
