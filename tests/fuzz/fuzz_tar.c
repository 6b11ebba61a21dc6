/*
 * fuzz_tar.c: the tar first-entry parser (src/guestfs/tarplane.c) that reads every
 * archive GET answer: mafsbx_tar_parse_prefix on the whole input, then the
 * push reader fed in pieces. Input byte 0: bits 0-5 the piece size - 1
 * (so 1..63 bytes, 0x3f = all at once), bit 6 file_only, bit 7 a 1 KiB
 * body cap. Invariants: offsets and "needed" stay within the input and the
 * 64 KiB metadata cap; the reader hands over exactly the entry's body, never
 * more than its size or the cap.
 */
#include <stdbool.h>

#include "buf.h"
#include "error.h"
#include "fuzz.h"
#include "tarplane.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t ctl = data[0];
	data++;
	size--;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);

	struct mafsbx_tar_entry e;
	size_t off = 0, needed = 0;
	int r = mafsbx_tar_parse_prefix(data, size, &e, &off, &needed, &err);
	if (r == 1) {
		FUZZ_CHECK(off % 512 == 0 && off >= 512 && off <= size && off <= MAFSBX_TAR_MAX_PREFIX);
		FUZZ_CHECK(e.path && e.linkname);
		FUZZ_CHECK(e.kind == MAFSBX_TK_FILE || e.size == 0);
		mafsbx_tar_entry_free(&e);
	} else if (r == 0) {
		FUZZ_CHECK(needed > size && needed <= MAFSBX_TAR_MAX_PREFIX);
	} else {
		FUZZ_CHECK(err.err > 0 && err.message[0]);
	}

	struct mafsbx_buf out = MAFSBX_BUF_INIT;
	struct mafsbx_tar_reader_opts o = {
		.max_body = (ctl & 0x80) ? 1024 : 0,
		.file_only = (ctl & 0x40) != 0,
		.out_fd = -1,
		.out_buf = &out,
	};
	mafsbx_error_clear(&err);
	struct mafsbx_tar_reader *rd = mafsbx_tar_reader_new(&o, &err);
	FUZZ_CHECK(rd != NULL);
	size_t piece = fuzz_piece_size(ctl, size);
	bool aborted = false;
	for (size_t i = 0; i < size; i += piece) {
		size_t n = size - i < piece ? size - i : piece;
		if (mafsbx_tar_reader_sink(data + i, n, rd) < 0) {
			FUZZ_CHECK(mafsbx_tar_reader_error(rd) != NULL);
			aborted = true;
			break;
		}
	}
	const struct mafsbx_tar_entry *he = mafsbx_tar_reader_entry(rd);
	uint64_t body = mafsbx_tar_reader_body_bytes(rd);
	FUZZ_CHECK(out.len == body);
	if (he) {
		FUZZ_CHECK(body <= he->size);
		if (o.max_body)
			FUZZ_CHECK(body <= o.max_body);
	} else {
		FUZZ_CHECK(body == 0);
	}
	struct mafsbx_tar_entry fe;
	memset(&fe, 0, sizeof(fe));
	mafsbx_error_clear(&err);
	r = mafsbx_tar_reader_finish(rd, &fe, &err);
	if (r == 0) {
		FUZZ_CHECK(!aborted);
		FUZZ_CHECK(fe.path && body == fe.size);
	} else {
		FUZZ_CHECK(err.err > 0 && err.message[0]);
	}
	mafsbx_tar_entry_free(&fe);
	mafsbx_tar_reader_free(rd);
	mafsbx_buf_free(&out);
	return 0;
}
