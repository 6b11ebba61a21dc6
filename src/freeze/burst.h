/*
 * burst.h: one freeze for a burst of file calls.
 *
 * Through the engine every file call pays a freeze: pause, the ancestor
 * check's HEADs, the transfer, unpause. A shell walks a path one component
 * at a time (`stat a/b/c` is three lookups) and `ls -l` stats every entry
 * after the listing, so one user action is a burst of calls, each paying
 * its own freeze and re-checking the same ancestors. A burst registry lets
 * those calls share ONE freeze and the HEAD answers got under it:
 *
 *  - enter() enters the container's freeze (freeze.h, so the freezer's rules
 *    hold: joining only a young freeze, execs taking turns, the deadline);
 *  - leave() of the last call does not unpause at once: the freeze is kept
 *    ("parked") for a few ms more (the linger, MAFSBX_BURST_LINGER_MS by default), so that the next call of
 *    the burst joins it instead of pausing again; a timer thread leaves a
 *    parked freeze when it has been idle that long, or when the freeze is
 *    MAFSBX_FREEZE_JOIN_WINDOW_MS old, whichever comes first (a stream of
 *    calls cannot keep the guest frozen: the freezer makes late arrivals
 *    wait for the drain and freeze afresh);
 *  - the HEAD answers of a container are kept while, and only while, this
 *    registry holds its freeze without a gap (a call inside, or the parked
 *    handle). The moment the last handle goes they are dropped, so a later
 *    burst (the guest ran in between) verifies every component afresh: a
 *    directory swapped for a link between two bursts is refused in the
 *    second. A write through the registry (invalidate()) drops them too.
 *
 * What a cached answer proves: the guest was frozen, by this process,
 * from the HEAD until now. A transfer still ends with mafsbx_freeze_verify()
 * (someone else's unpause during the burst fails it), exactly as without
 * the registry. A stat served from the cache is as old as the burst (at most
 * the join window): the same age an attribute cache gives.
 *
 * Execs: an exec of the container waits for the freeze to end, so a parked
 * freeze delays it by at most the linger; end() drops the parked freeze at
 * once for a caller about to exec.
 *
 * Thread-safe. Bounds: one slot per container with a call inside or a
 * parked freeze; at most MAFSBX_BURST_MAX_ANSWERS answers per slot (past it
 * answers are not kept, the calls still work).
 */
#ifndef MAFSBX_BURST_H
#define MAFSBX_BURST_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "error.h"
#include "freeze.h"

/* How long a freeze is kept after the last call of a burst left it (the default). */
#define MAFSBX_BURST_LINGER_MS 5
/* The most it may be: the join window (a longer linger would never be used). */
#define MAFSBX_BURST_LINGER_MAX_MS MAFSBX_FREEZE_JOIN_WINDOW_MS
#define MAFSBX_BURST_MAX_ANSWERS 256

struct mafsbx_bursts;
struct mafsbx_burst;

/* A HEAD's answer: rc 0 with st, or an absent path (rc 0, absent true). Errors are never kept. */
struct mafsbx_burst_answer {
	bool absent;
	struct mafsbx_path_stat st;
};

/*
 * `fz` is borrowed and must outlive the registry. `linger_ms`: 1 to
 * MAFSBX_BURST_LINGER_MAX_MS (else EK_INVALID). Starts the timer thread.
 */
struct mafsbx_bursts *mafsbx_bursts_new(struct mafsbx_freezer *fz, int linger_ms, struct mafsbx_error *err);
/* Leaves every parked freeze (no call may be inside), stops the timer. NULL is a no-op. */
void mafsbx_bursts_free(struct mafsbx_bursts *bs);

/* Enter a freeze of `container` as mafsbx_freeze_enter() does (same errors). */
int mafsbx_burst_enter(struct mafsbx_bursts *bs, const char *container, long long deadline_ms,
		       struct mafsbx_burst **out, struct mafsbx_error *err);
/* The freeze handle of the call (for mafsbx_freeze_verify()). */
struct mafsbx_freeze *mafsbx_burst_freeze(const struct mafsbx_burst *b);
/* A kept answer for `path` (a canonical guest path)? Copies it to *out. */
bool mafsbx_burst_get(struct mafsbx_burst *b, const char *path, struct mafsbx_burst_answer *out);
/* Keep an answer got inside this call's freeze. */
void mafsbx_burst_put(struct mafsbx_burst *b, const char *path, const struct mafsbx_burst_answer *a);
/* The call changed the guest's files: drop every kept answer of the container. */
void mafsbx_burst_invalidate(struct mafsbx_burst *b);
/* Leave: the last one out parks the freeze (see above). NULL is a no-op. */
void mafsbx_burst_leave(struct mafsbx_burst *b);

/*
 * The calls that follow this one are known to come (the lstat of every
 * entry after a listing): keep this hold's freeze parked `ms` after its
 * last call instead of the linger (capped at MAFSBX_BURST_LINGER_MAX_MS;
 * never past the join window, which still ends every hold). Lasts as
 * long as the answers do: forgotten with them.
 */
void mafsbx_burst_hold_for(struct mafsbx_burst *b, int ms);
/* How long a listing's freeze is kept for the stats that follow it. */
#define MAFSBX_BURST_LIST_LINGER_MS 50

/* Drop the parked freeze of `container` now (before an exec of it). */
void mafsbx_bursts_end(struct mafsbx_bursts *bs, const char *container);

struct mafsbx_burst_stats {
	uint64_t enters;       /* calls */
	uint64_t bursts;       /* answer sets started (a freeze newly held by the registry) */
	uint64_t parks;        /* freezes kept after a burst's last call */
	uint64_t rejoins;      /* calls that found their container's freeze parked */
	uint64_t hits;         /* answers served from the set */
	uint64_t misses;       /* answers looked for and not there */
	uint64_t invalidations;
};
void mafsbx_bursts_stats(struct mafsbx_bursts *bs, struct mafsbx_burst_stats *out);

#endif
