/*
 * tarhdr.c: the fields of a tar header block (tarhdr.h).
 */
#include "tarhdr.h"

int mafsbx_tar_num_field(const unsigned char *f, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (f[0] & 0x80) {
		if (f[0] & 0x40)
			return -2;
		v = f[0] & 0x3f;
		for (size_t i = 1; i < n; i++) {
			if (v >> 55)
				return -1;
			v = (v << 8) | f[i];
		}
		*out = v;
		return 0;
	}
	size_t i = 0;
	while (i < n && f[i] == ' ')
		i++;
	if (i < n && f[i] == '-')
		return -2;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -1;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return -1;
	*out = v;
	return 0;
}

bool mafsbx_tar_zero_block(const unsigned char *h)
{
	for (size_t i = 0; i < 512; i++)
		if (h[i])
			return false;
	return true;
}

bool mafsbx_tar_checksum_ok(const unsigned char *h)
{
	uint64_t want;
	if (mafsbx_tar_num_field(h + 148, 8, &want) < 0)
		return false;
	uint64_t u = 0;
	int64_t s = 0;
	for (size_t i = 0; i < 512; i++) {
		unsigned char c = i >= 148 && i < 156 ? ' ' : h[i];
		u += c;
		s += (signed char)c;
	}
	return want == u || (int64_t)want == s;
}
