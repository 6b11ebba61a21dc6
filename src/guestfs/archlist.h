/*
 * archlist.h: the engine plane's listing of a guest directory from the
 * engine's archive of it (GET /containers/ID/archive?path=DIR, taken under
 * a freeze by files.h, mafsbx_files_list), read for its depth-1 headers only.
 *
 * The archive of DIR is a tar whose first entry is DIR's own basename
 * ("outs/"), then every entry below it, each file with its body. Only the
 * headers one level below the root are kept: the name, the type, the mode,
 * the owner, the size and the mtime (a listing that is also every entry's
 * stat). Headers deeper down are counted and their bodies skipped.
 *
 * The bytes come from the engine, which archives what the guest made: they
 * are parsed as hostile, in a strict push parser of its own (no library
 * sees them): every header's checksum is checked; a pax record that is
 * malformed, sparse or holds a non-decimal size/uid/gid refuses the archive;
 * an extension header ('x', 'L', 'K') is at most 64 KiB; a name is only a
 * name (empty, ".", "..", a '/' inside or over NAME_MAX bytes is refused and
 * counted, never listed); duplicates are listed once.
 *
 * The stream is cut (the sink returns -ECANCELED, which closes the
 * connection and so ends the engine's work) as soon as one of the bounds is
 * passed, and the listing says which:
 *   - more than `max_bytes` of archive (a big file or a big subtree);
 *   - more than `max_entries` entries at depth 1;
 *   - the headers below depth 1 dominate: more than MAFSBX_ARCHLIST_DEEP_MIN
 *     of them and more than MAFSBX_ARCHLIST_DEEP_RATIO times the depth-1
 *     entries seen so far (a subtree the archive would otherwise walk whole);
 *   - the bytes that are not depth-1 headers (bodies, padding and deeper
 *     headers) pass MAFSBX_ARCHLIST_WASTE_MIN and twice the depth-1 headers'
 *     bytes (a big file, or a subtree of big files: a listing that would
 *     pay for their bytes under the freeze).
 * A cut listing is incomplete: the caller lists another way (plane_engine.c).
 */
#ifndef MAFSBX_ARCHLIST_H
#define MAFSBX_ARCHLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "error.h"

#define MAFSBX_ARCHLIST_MAX_BYTES (4ULL << 20)  /* archive bytes read at most (the default) */
#define MAFSBX_ARCHLIST_MAX_ENTRIES 10000       /* depth-1 entries at most (the default) */
#define MAFSBX_ARCHLIST_DEEP_MIN 512
#define MAFSBX_ARCHLIST_DEEP_RATIO 4
#define MAFSBX_ARCHLIST_WASTE_MIN (256 * 1024)
#define MAFSBX_ARCHLIST_EXT_MAX (64 * 1024)     /* one extension header's data at most */
#define MAFSBX_ARCHLIST_NAME_MAX 255

enum mafsbx_archlist_cut {
	MAFSBX_AL_WHOLE = 0,      /* not cut (complete once `ended`) */
	MAFSBX_AL_CUT_BYTES,
	MAFSBX_AL_CUT_ENTRIES,
	MAFSBX_AL_CUT_DEEP,
	MAFSBX_AL_CUT_WASTE,
	MAFSBX_AL_SHORT,          /* the stream ended before the end-of-archive block */
};

struct mafsbx_archlist_entry {
	char *name;               /* one component, malloc'd */
	char typeflag;            /* as in the header ('0', '1', '2', '3', '4', '5', '6', '7') */
	mode_t mode;              /* S_IFMT of the type | permission bits 07777 */
	uid_t uid;
	gid_t gid;
	uint64_t size;            /* regular files ('0', '7'); 0 otherwise */
	struct timespec mtime;
};

struct mafsbx_archlist {
	/* settings (mafsbx_archlist_init) */
	char *root;               /* the expected first entry's name, without '/' */
	uint64_t max_bytes;
	size_t max_entries;
	/* the result */
	struct mafsbx_archlist_entry *v;  /* sorted by name (strcmp) once ended, unique */
	size_t n, cap;
	size_t deep;              /* headers below depth 1 */
	size_t refused;           /* depth-1 names that were not names, or repeated */
	uint64_t bytes;           /* archive bytes taken */
	uint64_t head_bytes;      /* of which depth-1 headers (their extension headers included) */
	enum mafsbx_archlist_cut cut;
	bool ended;               /* the end-of-archive block was seen */
	bool failed;              /* refused as malformed: `error` says why */
	struct mafsbx_error error;
	/* the parser's state */
	int st;
	unsigned char blk[512];
	size_t blk_len;
	uint64_t skip;            /* body (and padding) bytes still to skip */
	char *ext;                /* an extension header's data being gathered */
	size_t ext_len, ext_want, ext_pad;
	size_t ext_total;         /* bytes of the extension headers before the next entry */
	char ext_kind;
	bool seen_root;
	/* pending overrides for the next entry (pax 'x', GNU 'L'/'K') */
	char *p_path;
	bool p_has_size, p_has_mtime, p_has_uid, p_has_gid;
	uint64_t p_size, p_uid, p_gid;
	struct timespec p_mtime;
};

/* `root`: the basename of the directory asked for (the archive's first entry). 0 or EK_NOMEM. */
int mafsbx_archlist_init(struct mafsbx_archlist *l, const char *root, uint64_t max_bytes, size_t max_entries,
			 struct mafsbx_error *err);
/*
 * A mafsbx_sink_fn (engine.h): feed the archive as it comes. 0: go on;
 * -ECANCELED: a bound was passed, or the archive ended (no more wanted);
 * -EPROTO (failed set) or -ENOMEM: refused.
 */
int mafsbx_archlist_sink(const void *data, size_t len, void *ctx);
/*
 * After the stream: sorts and deduplicates. 0 when the listing is whole
 * (ended, not cut); 1 when it was cut (l->cut says how) or the stream ended
 * before the end-of-archive block; <0 when refused (err set from l->error).
 */
int mafsbx_archlist_finish(struct mafsbx_archlist *l, struct mafsbx_error *err);
/* The entry named `name`, or NULL (after finish: binary search). */
const struct mafsbx_archlist_entry *mafsbx_archlist_find(const struct mafsbx_archlist *l, const char *name);
/* "the archive passed 4194304 bytes", ...: why the listing was cut (static text). */
const char *mafsbx_archlist_cut_name(enum mafsbx_archlist_cut c);
void mafsbx_archlist_free(struct mafsbx_archlist *l);

#endif
