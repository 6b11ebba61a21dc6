/*
 * fuzz_demux.c: the exec stream demultiplexer (mafsbx_demux_* in
 * src/engine/engine.c), checked against a plain reference decoder of the same
 * framing ([stream, 0, 0, 0, big-endian size] then the payload; 0 and 1 are
 * stdout, 2 and 3 stderr, anything else a protocol error). Input byte 0:
 * the piece size - 1 (1..256 bytes per feed); byte 1: the output cap in
 * 16-byte units (0 = the default). Invariant: the same bytes on the same
 * streams, cut at the cap with `truncated` set exactly when bytes were
 * dropped, and the same verdict.
 */
#include <stdbool.h>

#include "engine.h"
#include "fuzz.h"

struct ref {
	unsigned char *out, *err;
	size_t out_len, err_len;
	bool truncated, bad;
};

static void ref_put(struct ref *r, bool to_err, const uint8_t *p, size_t n, size_t cap)
{
	unsigned char *b = to_err ? r->err : r->out;
	size_t *len = to_err ? &r->err_len : &r->out_len;
	size_t take = *len < cap ? (cap - *len < n ? cap - *len : n) : 0;
	if (take < n)
		r->truncated = true;
	memcpy(b + *len, p, take);
	*len += take;
}

/* Returns true when the stream ended on a frame boundary. */
static bool ref_decode(struct ref *r, const uint8_t *d, size_t n, size_t cap)
{
	size_t i = 0;
	while (i < n) {
		if (n - i < 8)
			return false;
		const uint8_t *h = d + i;
		if (h[0] > 3 || h[1] || h[2] || h[3]) {
			r->bad = true;
			return false;
		}
		uint32_t size = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
		i += 8;
		size_t take = n - i < size ? n - i : size;
		ref_put(r, h[0] >= 2, d + i, take, cap);
		i += take;
		if (take < size)
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t piece = (size_t)data[0] + 1;
	size_t cap = data[1] ? (size_t)data[1] * 16 : 0;
	data += 2;
	size -= 2;

	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	struct mafsbx_demux d;
	mafsbx_demux_init(&d, &res, cap);
	size_t eff_cap = d.max_output;
	int fr = 0;
	for (size_t i = 0; i < size && fr == 0; i += piece)
		fr = mafsbx_demux_feed(&d, data + i, size - i < piece ? size - i : piece);
	int r = mafsbx_demux_finish(&d);

	struct ref ref = { 0 };
	size_t rcap = eff_cap < size ? eff_cap : size;
	ref.out = malloc(rcap + 1);
	ref.err = malloc(rcap + 1);
	bool whole = ref_decode(&ref, data, size, eff_cap);

	FUZZ_CHECK(res.out && res.err);
	if (ref.bad) {
		FUZZ_CHECK(fr == -EPROTO && r == -EPROTO);
	} else {
		FUZZ_CHECK(fr == 0);
		/* a cut inside a payload or a header is a protocol error at the end */
		if (whole)
			FUZZ_CHECK(r == 0);
		else
			FUZZ_CHECK(r == -EPROTO);
		FUZZ_CHECK(res.out_len == ref.out_len && res.err_len == ref.err_len);
		FUZZ_CHECK(memcmp(res.out, ref.out, ref.out_len) == 0);
		FUZZ_CHECK(memcmp(res.err, ref.err, ref.err_len) == 0);
		FUZZ_CHECK(res.truncated == ref.truncated);
		FUZZ_CHECK(res.out[res.out_len] == '\0' && res.err[res.err_len] == '\0');
	}
	FUZZ_CHECK(res.out_len <= eff_cap && res.err_len <= eff_cap);
	free(ref.out);
	free(ref.err);
	mafsbx_exec_result_free(&res);
	return 0;
}
