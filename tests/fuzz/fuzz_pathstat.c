/*
 * fuzz_pathstat.c: the X-Docker-Container-Path-Stat header decoder
 * (mafsbx_path_stat_decode in src/engine/engine.c): base64 of a JSON object.
 * Input byte 0 picks the form: odd = the rest as the header text as it
 * came (any bytes), even = the rest base64-encoded first, so the fuzzer
 * reaches the JSON and field checks. Invariant: success fills a
 * NUL-terminated name; the Go mode maps to a file type.
 */
#include "base64.h"
#include "engine.h"
#include "error.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *text;
	if (data[0] & 1) {
		text = fuzz_strndup(data + 1, size - 1);
	} else {
		text = mafsbx_base64_encode(data + 1, size - 1, MAFSBX_B64_STD);
		if (!text)
			return 0;
	}
	struct mafsbx_path_stat st;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	memset(&st, 0xa5, sizeof(st));
	int r = mafsbx_path_stat_decode(text, &st, &err);
	if (r == 0) {
		FUZZ_CHECK(memchr(st.name, '\0', sizeof(st.name)) != NULL);
		FUZZ_CHECK(memchr(st.link_target, '\0', sizeof(st.link_target)) != NULL);
	} else {
		FUZZ_CHECK(r < 0 && err.err > 0 && err.message[0]);
	}
	(void)mafsbx_go_mode_to_st(size >= 5 ? (uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 |
						       (uint32_t)data[3] << 8 | data[4]
					       : 0);
	free(text);
	return 0;
}
