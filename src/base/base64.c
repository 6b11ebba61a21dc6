/*
 * base64.c: RFC 4648 base64 encoding and strict decoding, standard and
 * URL-safe alphabets, always '=' padded (the rules are in base64.h). Every
 * base64 text the tree writes or reads goes through here.
 */
#include "base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static const char alpha_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char alpha_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *mafsbx_base64_encode(const void *data, size_t len, unsigned flags)
{
	const char *alpha = flags & MAFSBX_B64_URL ? alpha_url : alpha_std;
	const unsigned char *in = data;
	if (len / 3 >= (SIZE_MAX - 1) / 4)
		return NULL;  /* the output size would not fit a size_t */
	char *out = malloc(4 * ((len + 2) / 3) + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[o++] = alpha[(v >> 18) & 63];
		out[o++] = alpha[(v >> 12) & 63];
		out[o++] = i + 1 < len ? alpha[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? alpha[v & 63] : '=';
	}
	out[o] = '\0';
	return out;
}

/* The 6-bit value of c in the chosen alphabet, -1 for anything else (also the other alphabet's 62 and 63). */
static int sextet(unsigned char c, unsigned flags)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (flags & MAFSBX_B64_URL)
		return c == '-' ? 62 : c == '_' ? 63 : -1;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int mafsbx_base64_decode(const char *text, size_t len, unsigned flags, unsigned char **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	if (len % 4 || (len == 0 && (flags & MAFSBX_B64_NONEMPTY)))
		return -EINVAL;
	/* Padding: "xx==" or "xxx=" as the last quantum only. */
	size_t pad = 0;
	if (len && text[len - 1] == '=')
		pad = text[len - 2] == '=' ? 2 : 1;
	unsigned char *buf = malloc(len / 4 * 3 + 1);
	if (!buf)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 4) {
		size_t data = i + 4 == len ? 4 - pad : 4;
		uint32_t w = 0;
		for (size_t j = 0; j < 4; j++) {
			int v = 0;
			if (j < data && (v = sextet((unsigned char)text[i + j], flags)) < 0)
				goto bad;
			w = w << 6 | (uint32_t)v;
		}
		buf[o++] = (unsigned char)(w >> 16);
		if (data > 2)
			buf[o++] = (unsigned char)(w >> 8);
		if (data > 3)
			buf[o++] = (unsigned char)w;
		/* Spare bits below the last whole byte: zero in every canonical spelling. */
		uint32_t spare = data == 2 ? w & 0xffff : data == 3 ? w & 0xff : 0;
		if (spare && !(flags & MAFSBX_B64_ANY_BITS))
			goto bad;
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return 0;
bad:
	free(buf);
	return -EINVAL;
}
