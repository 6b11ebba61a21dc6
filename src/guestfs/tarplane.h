/*
 * tarplane.h: the tar codec of the engine plane's file calls (files.h), with
 * libarchive.
 *
 * Owns (1) building the small tars sent with the archive PUT (directory,
 * file and symlink entries with explicit numeric uid:gid, mode and mtime;
 * ustar, pax only when a name needs it), and (2) parsing the first entry of
 * an archive GET body as it streams in, within the upstream bounds of
 * doc/upstream.md §4.10: at most 32 headers and a 64 KiB
 * prefix before the entry's data, pax records validated strictly (malformed
 * record, GNU.sparse.*, non-numeric size/uid/gid refused), sparse entries and
 * negative sizes refused. The size cap is decided from the header before any
 * body byte is taken; the body is streamed to a caller's fd or buffer; a short
 * body is an error, never a truncated success.
 *
 * Upstream bounds its `docker cp` read and re-asks once with a larger bound
 * when the metadata prefix did not fit. The push reader here never needs the
 * re-ask: it keeps the prefix until the entry header is complete (at most
 * 64 KiB) and then streams the body. mafsbx_tar_parse_prefix() keeps the
 * upstream pull contract ("need N bytes") for callers that hold a buffer.
 */
#ifndef MAFSBX_TARPLANE_H
#define MAFSBX_TARPLANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "buf.h"
#include "error.h"

#define MAFSBX_TAR_MAX_HEADERS 32
#define MAFSBX_TAR_MAX_PREFIX (64 * 1024)

/* ---- building --------------------------------------------------------- */

struct mafsbx_tar;

struct mafsbx_tar *mafsbx_tar_new(struct mafsbx_error *err);
void mafsbx_tar_free(struct mafsbx_tar *t);

/*
 * Entry names are relative ("maf-sandbox/work/out.txt"; a leading "/" is
 * dropped); a directory name gets a trailing "/". `mode` is the permission
 * bits (07777 kept); the type comes from the call. uname/gname stay empty so
 * the engine applies the numeric ids.
 */
int mafsbx_tar_add_dir(struct mafsbx_tar *t, const char *name, mode_t mode, uid_t uid, gid_t gid,
		       time_t mtime, struct mafsbx_error *err);
int mafsbx_tar_add_file(struct mafsbx_tar *t, const char *name, const void *data, size_t len, mode_t mode,
			uid_t uid, gid_t gid, time_t mtime, struct mafsbx_error *err);
/* `len` bytes read with pread from offset 0 of `fd` (a spool); fewer bytes is EK_SYSTEM EIO. */
int mafsbx_tar_add_file_fd(struct mafsbx_tar *t, const char *name, int fd, uint64_t len, mode_t mode,
			   uid_t uid, gid_t gid, time_t mtime, struct mafsbx_error *err);
int mafsbx_tar_add_symlink(struct mafsbx_tar *t, const char *name, const char *target, uid_t uid, gid_t gid,
			   time_t mtime, struct mafsbx_error *err);
/* A hard link `name` to the entry `target` written before it in the same archive (names as above). */
int mafsbx_tar_add_hardlink(struct mafsbx_tar *t, const char *name, const char *target, mode_t mode, uid_t uid,
			    gid_t gid, time_t mtime, struct mafsbx_error *err);
/* Close the archive; *data / *len stay owned by `t` until mafsbx_tar_free(). */
int mafsbx_tar_finish(struct mafsbx_tar *t, const void **data, size_t *len, struct mafsbx_error *err);

/* ---- parsing ---------------------------------------------------------- */

enum mafsbx_tar_kind {
	MAFSBX_TK_FILE = 1,      /* regular file ('0', '\0', '7') */
	MAFSBX_TK_DIR,           /* '5' */
	MAFSBX_TK_SYMLINK,       /* '2' */
	MAFSBX_TK_OTHER,         /* hard link '1', char/block device, fifo, anything else */
};

struct mafsbx_tar_entry {
	enum mafsbx_tar_kind kind;
	char typeflag;
	uint64_t size;           /* the data size after pax overrides (0 for non-files) */
	mode_t mode;             /* permission bits 07777 | S_IFMT of the kind */
	uid_t uid;
	gid_t gid;
	time_t mtime;
	char *path;              /* malloc'd, raw bytes, pax path applied */
	char *linkname;          /* malloc'd, "" unless symlink or hard link */
};
void mafsbx_tar_entry_free(struct mafsbx_tar_entry *e);

/*
 * Pull parse of a buffer holding the start of a tar stream (doc/upstream.md §4.10):
 *   1  entry parsed into *entry, *data_offset is where its data starts;
 *   0  buffer too short: *needed is how many bytes are needed in all to go on
 *      (more than MAFSBX_TAR_MAX_PREFIX is reported as an error instead);
 *  <0  refused (EK_PROTOCOL EIO for limits, malformed or sparse headers) or
 *      the stream has no entry at all (end-of-archive first: EK_PROTOCOL).
 */
int mafsbx_tar_parse_prefix(const void *buf, size_t len, struct mafsbx_tar_entry *entry, size_t *data_offset,
			    size_t *needed, struct mafsbx_error *err);

/*
 * Push reader for the first entry of an archive GET body. Feed it with
 * mafsbx_tar_reader_sink (a mafsbx_sink_fn: pass the reader as the context).
 * The sink returns a negative errno (aborting the transfer, which releases
 * the engine's per-container lock) as soon as the answer is known to be a
 * refusal; mafsbx_tar_reader_error() then says why.
 */
struct mafsbx_tar_reader_opts {
	uint64_t max_body;       /* a file larger than this: EK_TOO_BIG from the header. 0 = no cap */
	bool file_only;          /* a non-regular entry stops the read with EK_NOT_REGULAR */
	int out_fd;              /* body written here (write(2) loop), or -1 */
	struct mafsbx_buf *out_buf; /* or appended here, or NULL (body counted and dropped) */
	size_t max_trailer;      /* bytes accepted after the body (padding, end blocks); 0 = 64 KiB */
};

struct mafsbx_tar_reader;
struct mafsbx_tar_reader *mafsbx_tar_reader_new(const struct mafsbx_tar_reader_opts *opts, struct mafsbx_error *err);
void mafsbx_tar_reader_free(struct mafsbx_tar_reader *r);
int mafsbx_tar_reader_sink(const void *data, size_t len, void *reader);
/* The error that made the sink abort, or NULL. */
const struct mafsbx_error *mafsbx_tar_reader_error(const struct mafsbx_tar_reader *r);
/* The entry header, once parsed (NULL before). */
const struct mafsbx_tar_entry *mafsbx_tar_reader_entry(const struct mafsbx_tar_reader *r);
/*
 * End of stream: 0 when an entry was parsed and its whole body taken.
 * Otherwise: the sink's error; an empty or header-less stream (EK_PROTOCOL
 * "no tar header"); an incomplete prefix (EK_PROTOCOL "incomplete tar
 * metadata"); a short body (EK_PROTOCOL "incomplete body: got N of M bytes").
 * `entry` (may be NULL) receives a copy of the header (caller frees).
 */
int mafsbx_tar_reader_finish(struct mafsbx_tar_reader *r, struct mafsbx_tar_entry *entry, struct mafsbx_error *err);
/* Body bytes taken so far. */
uint64_t mafsbx_tar_reader_body_bytes(const struct mafsbx_tar_reader *r);

#endif
