/*
 * utf8.c: the UTF-8 decoder (utf8.h). The lead byte fixes the length and
 * the range the second byte may take; that range is what excludes overlongs,
 * surrogates and code points above U+10FFFF without decoding them first.
 */
#include "utf8.h"

bool mafsbx_utf8_lead(unsigned char c, size_t *len, unsigned char *lo, unsigned char *hi)
{
	*lo = 0x80;
	*hi = 0xBF;
	if (c < 0x80) {
		*len = 1;
	} else if (c >= 0xC2 && c <= 0xDF) {
		*len = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		*len = 3;
		if (c == 0xE0)
			*lo = 0xA0;
		else if (c == 0xED)
			*hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		*len = 4;
		if (c == 0xF0)
			*lo = 0x90;
		else if (c == 0xF4)
			*hi = 0x8F;
	} else {
		return false;
	}
	return true;
}

size_t mafsbx_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp, size_t *bad_len)
{
	size_t need;
	unsigned char lo, hi;
	if (bad_len)
		*bad_len = 1;
	if (!mafsbx_utf8_lead(s[0], &need, &lo, &hi))
		return 0;
	/* the lead's payload bits: 7, 5, 4 or 3 */
	uint32_t v = s[0] & (need == 1 ? 0x7F : 0x7F >> need);
	size_t i = 1;
	for (; i < need && i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			break;
		v = (v << 6) | (s[i] & 0x3F);
		lo = 0x80, hi = 0xBF;
	}
	if (i < need) {
		if (bad_len)
			*bad_len = i;
		return 0;
	}
	if (cp)
		*cp = v;
	return need;
}

bool mafsbx_utf8_valid(const void *s, size_t n)
{
	const unsigned char *p = s;
	for (size_t i = 0; i < n;) {
		size_t k = mafsbx_utf8_decode(p + i, n - i, NULL, NULL);
		if (!k)
			return false;
		i += k;
	}
	return true;
}
