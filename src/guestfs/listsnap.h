/*
 * listsnap.h: a directory listing's answers kept past its freeze, for the
 * stats that follow it.
 *
 * `ls -l` on the engine plane is one listing (a freeze: the ancestor check's
 * HEADs and one GET of the directory's archive, whose depth-1 headers are
 * every entry's stat) and then a lookup of every entry, each a stat the
 * daemon must answer. Inside the listing's freeze those stats are the
 * burst's answers (burst.h), but a burst lives only as long as its freeze,
 * and a loaded engine stretches the GET past the join window: the stats
 * then freeze the guest again and pay a HEAD each. A snapshot is the
 * listing's answers (the directory, its ancestors, its entries), proven
 * under the listing's freeze, kept for a short validity after it
 * (MAFSBX_LISTSNAP_VALID_MS) so that those stats need no freeze at all.
 *
 * What it may answer, and what never:
 *  - only a stat (files.h mafsbx_files_stat: a lookup, a getattr); never the
 *    ancestor check of a read, a write or a listing, which always HEAD under
 *    their own freeze, so the no-link rule of every transfer stands on
 *    answers got under the transfer's freeze;
 *  - only paths it holds as present (an absent name is asked of the engine);
 *  - never after a mutation through the mount: mutating() drops every
 *    snapshot of the container, and a listing that overlapped a mutation is
 *    not kept (the registry's generation moved); never after an exec this
 *    process ran (the freezer's exec count moved: `epoch`), since an exec
 *    may change any file;
 *  - never past its validity: a guest that changes a file after the listing
 *    is seen at the latest MAFSBX_LISTSNAP_VALID_MS later (doc/security.md).
 *
 * Bounds: at most MAFSBX_LISTSNAP_MAX snapshots (the oldest goes), each at
 * most MAFSBX_LISTSNAP_MAX_ENTRIES answers and MAFSBX_LISTSNAP_MAX_BYTES of
 * paths (past either the rest is not kept: those stats ask the engine).
 * Thread-safe (one mutex, taken alone).
 */
#ifndef MAFSBX_LISTSNAP_H
#define MAFSBX_LISTSNAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "error.h"

/* How long a listing's answers serve stats after the listing (the default). */
#define MAFSBX_LISTSNAP_VALID_MS 500
#define MAFSBX_LISTSNAP_MAX 8
#define MAFSBX_LISTSNAP_MAX_ENTRIES 4096
#define MAFSBX_LISTSNAP_MAX_BYTES (1024 * 1024)
#ifdef MAFSBX_TEST_KNOBS
/* Test builds only: the validity in ms, so that a test can see a snapshot served and then expire. */
#define MAFSBX_LISTSNAP_VALID_ENV "MAFSBX_TEST_LISTSNAP_MS"
#endif

struct mafsbx_listsnaps;
struct mafsbx_listsnap;

/* One answer: a present path's st_mode (type and permissions), size and mtime. */
struct mafsbx_listsnap_stat {
	mode_t mode;
	uint64_t size;
	struct timespec mtime;
};

struct mafsbx_listsnaps *mafsbx_listsnaps_new(struct mafsbx_error *err);
void mafsbx_listsnaps_free(struct mafsbx_listsnaps *s);
/* The validity in ms (the default, or a test build's knob). */
long long mafsbx_listsnaps_valid_ms(const struct mafsbx_listsnaps *s);

/*
 * A listing starts: read BEFORE its freeze is entered. `epoch` is the
 * freezer's exec count at that moment. NULL when out of memory (the listing
 * then keeps nothing).
 */
struct mafsbx_listsnap *mafsbx_listsnap_begin(struct mafsbx_listsnaps *s, const char *container, uint64_t epoch);
/* An answer proven under the listing's freeze (`path`: canonical, absolute). Past the bounds: not kept. */
void mafsbx_listsnap_add(struct mafsbx_listsnap *b, const char *path, const struct mafsbx_listsnap_stat *st);
/*
 * The listing was proven (its freeze verified): keep it, unless a mutation
 * began or ended since begin(). Takes `b` in every case. True when kept.
 */
bool mafsbx_listsnap_commit(struct mafsbx_listsnaps *s, struct mafsbx_listsnap *b);
/* A listing that failed: nothing kept. NULL is a no-op. */
void mafsbx_listsnap_discard(struct mafsbx_listsnap *b);

/* A live answer for `path` of `container`, the freezer's exec count being `epoch` now. */
bool mafsbx_listsnaps_get(struct mafsbx_listsnaps *s, const char *container, const char *path, uint64_t epoch,
			  struct mafsbx_listsnap_stat *out);
/* A mutation of `container` through the mount begins or ends: drop its snapshots, move the generation. */
void mafsbx_listsnaps_mutating(struct mafsbx_listsnaps *s, const char *container);

struct mafsbx_listsnap_stats {
	uint64_t kept;         /* listings kept */
	uint64_t refused;      /* listings not kept: a mutation overlapped them */
	uint64_t hits;         /* stats answered */
	uint64_t drops;        /* snapshots dropped by a mutation */
};
void mafsbx_listsnaps_stats(struct mafsbx_listsnaps *s, struct mafsbx_listsnap_stats *out);

#endif
