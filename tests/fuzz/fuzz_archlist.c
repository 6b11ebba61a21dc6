/*
 * fuzz_archlist.c: the depth-1 reader of a directory's archive
 * (src/guestfs/archlist.c) that reads every engine-plane listing. Input byte 0:
 * bits 0-5 the piece size - 1 (1..63 bytes, 0x3f = all at once), bit 6 a
 * small byte bound (8 KiB), bit 7 a small entry bound (4); the root is "d".
 * Invariants: the reader takes no byte past a cut or a refusal; a whole
 * listing ended; every listed name is a name (1..255 bytes, no '/', not
 * "." or ".."), sorted and unique; the bounds hold; a refusal says why.
 */
#include <stdbool.h>

#include "archlist.h"
#include "error.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t ctl = data[0];
	data++;
	size--;
	size_t piece = fuzz_piece_size(ctl, size);
	uint64_t max_bytes = (ctl & 0x40) ? 8192 : 0;
	size_t max_entries = (ctl & 0x80) ? 4 : 0;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	struct mafsbx_archlist l;
	if (mafsbx_archlist_init(&l, "d", max_bytes, max_entries, &err) < 0)
		abort();
	size_t off = 0;
	int sr = 0;
	while (off < size && sr == 0) {
		size_t n = size - off < piece ? size - off : piece;
		sr = mafsbx_archlist_sink(data + off, n, &l);
		off += n;
	}
	FUZZ_CHECK(l.bytes <= off);
	FUZZ_CHECK(sr == 0 || sr == -ECANCELED || sr == -EPROTO || sr == -ENOMEM);
	int r = mafsbx_archlist_finish(&l, &err);
	if (r < 0) {
		FUZZ_CHECK(l.failed && err.err > 0 && err.message[0]);
	} else {
		FUZZ_CHECK(r == 0 ? l.ended && l.cut == MAFSBX_AL_WHOLE : l.cut != MAFSBX_AL_WHOLE);
		FUZZ_CHECK(l.n <= l.max_entries);
		for (size_t i = 0; i < l.n; i++) {
			size_t n = strlen(l.v[i].name);
			FUZZ_CHECK(n >= 1 && n <= MAFSBX_ARCHLIST_NAME_MAX && !strchr(l.v[i].name, '/'));
			FUZZ_CHECK(strcmp(l.v[i].name, ".") && strcmp(l.v[i].name, ".."));
			FUZZ_CHECK(i == 0 || strcmp(l.v[i - 1].name, l.v[i].name) < 0);
			FUZZ_CHECK(mafsbx_archlist_find(&l, l.v[i].name) == &l.v[i]);
		}
	}
	mafsbx_archlist_free(&l);
	return 0;
}
