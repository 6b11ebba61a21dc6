/*
 * freeze.h: the shared, counted, cross-process freeze (pause/unpause) of a
 * container (doc/upstream.md §5.7, doc/engine-notes.md §3).
 *
 * A freeze of one container is shared: an operation arriving while the
 * container is frozen by this process (within the join window), or by a live
 * co-holder process on the same host, joins it; the last one out unpauses.
 * Across processes this holds through flock'ed lock files per container
 * under the runtime directory (turns.h): a gate (held exclusively for each
 * transition, and holding the marker "this freeze is ours") and a hold file
 * (held shared by every process inside the freeze). So a start-up tells a
 * freeze left by a DEAD process (marker set, nobody holds the hold file)
 * from a live one.
 *
 * The split: this file (freeze.c) is the counted freeze over the engine:
 * pause/unpause, joining, the marker, verify() through the engine's events,
 * recover(), forget()/collect(). Who may go, a freeze or an exec, and the
 * lock files themselves, are turns.h's (no engine there): freeze.c asks it
 * for a freeze turn before it pauses and for an exec turn in exec_begin().
 *
 * Freezes and execs of one container exclude each other, in this process and
 * across the processes of the host: an exec registers with
 * mafsbx_freeze_exec_begin() (it waits for every freeze of the container to
 * end), and a freeze waits while any exec of the container is registered.
 * Why: on dockerd 20.10 + containerd 1.6 (cgroup v1) an exec process that
 * exits or starts while its container is being paused wedges containerd;
 * dockerd logs
 *   failed to delete process ... error="current process state: pausing,
 *   process must be stopped before deletion: failed precondition"
 *   get state for <id>: context deadline exceeded
 * and from then on every call taking that container's lock (inspect, pause,
 * unpause, delete) hangs while the guest stays frozen, until dockerd is
 * restarted. So every exec of a container a freezer may freeze must run
 * between exec_begin() and exec_end(). The two sides take turns when both
 * wait, so neither starves the other (the rules: turns.h).
 *
 * Rules:
 *  - A container paused by someone else (paused, no marker) is never unpaused
 *    by enter(): the operation fails (EK_PAUSED EBUSY) and it stays paused.
 *  - A refused pause (a 4xx: the daemon refused before acting) means no unpause.
 *  - A pause with no answer or a 5xx may have frozen the guest (dockerd 20.10
 *    also updates its paused flag late, from containerd events): it is
 *    retried with backoff; if it never succeeds an unpause is attempted.
 *  - Only a 204 to this process's own pause backs a freeze: a freeze left by
 *    a dead process is thawed and frozen afresh, never trusted as it is.
 *  - An "is not paused" answer to the unpause of our own freeze is retried
 *    (bounded, about 1 s) before it is believed.
 *  - A failed unpause is logged, counted and never raised; the marker stays,
 *    so recover() lifts it later, and the failure callback (if set) is told
 *    at once so that its owner retries until the engine answers.
 *  - Every wait is bounded by the caller's deadline.
 *  - Never call exec on a container while this process holds a freeze of it
 *    (the daemon refuses exec while paused, and see above): wrap every exec
 *    in mafsbx_freeze_exec_begin() / mafsbx_freeze_exec_end().
 *  - A freeze that waited its whole deadline for execs fails EK_CONFLICT
 *    EBUSY: "... an exec is running in sandbox X; retry when it ends".
 *  - A stopped container cannot be paused: enter() fails with EK_NOT_RUNNING.
 *
 * Container keys are compared as given: pass the full container ID
 * everywhere so that every process keys a container the same way. A full
 * ID is keyed alone (processes reaching one daemon through different
 * endpoint spellings share the freeze); a name is keyed with the endpoint.
 * Thread-safe: one freezer serves all threads of a process.
 */
#ifndef MAFSBX_FREEZE_H
#define MAFSBX_FREEZE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "error.h"
#include "rundir.h"

#ifdef MAFSBX_TEST_KNOBS
/*
 * Milliseconds to sleep inside every freeze right after it is taken.
 * Compiled only into the test libraries (MAFSBX_TEST_KNOBS, src/meson.build):
 * the shipped daemon and CLI have none.
 */
#define MAFSBX_FREEZE_HOLD_ENV "MAFSBX_TEST_FREEZE_HOLD_MS"
#endif
/*
 * A freeze older than this takes no new joiners: they wait for it to drain
 * and freeze again, so a stream of file calls cannot starve the guest.
 */
#define MAFSBX_FREEZE_JOIN_WINDOW_MS 200
/* Wait used when a deadline of 0 is passed. */
#define MAFSBX_FREEZE_DEFAULT_WAIT_MS 30000

struct mafsbx_freezer;
struct mafsbx_freeze;
struct mafsbx_freeze_exec;

/*
 * `engine` is borrowed and must outlive the freezer. Runtime directory:
 * `rundir` if non-NULL, else $MAFSBX_RUNDIR, else /run/mafsbxfs as root and
 * $XDG_RUNTIME_DIR/mafsbxfs (or /tmp/mafsbxfs-UID) otherwise. Created 0700.
 */
struct mafsbx_freezer *mafsbx_freezer_new(struct mafsbx_engine *engine, const char *rundir,
					  struct mafsbx_error *err);
/*
 * A freezer over the runtime directory open as `dirfd` (O_DIRECTORY,
 * checked by the caller: whose it is, not writable by others), reached
 * through /proc/self/fd so that the directory can be neither renamed nor
 * replaced under it. For `mafsbx thaw` as root over another user's
 * directory. The caller keeps dirfd open for the freezer's life.
 */
struct mafsbx_freezer *mafsbx_freezer_new_in(struct mafsbx_engine *engine, int dirfd, struct mafsbx_error *err);
/* Must be called with no freeze held. */
void mafsbx_freezer_free(struct mafsbx_freezer *f);
struct mafsbx_engine *mafsbx_freezer_engine(const struct mafsbx_freezer *f);
const char *mafsbx_freezer_rundir(const struct mafsbx_freezer *f);

/*
 * Enter a freeze of `container` (join one already held). `deadline_ms` is an
 * absolute mafsbx_now_ms() time bounding every wait (0: now + the default).
 * On success *out is the handle to pass to leave(). Do not nest: a thread
 * holding a freeze of `container` that enters it again after the join window
 * waits for its own freeze to drain, until the deadline. While an exec of the
 * container is registered anywhere on the host (or waits for its turn), the
 * enter waits, then fails at the deadline with EK_CONFLICT EBUSY "... an exec
 * is running in sandbox X; retry when it ends" (nothing was paused). Errors:
 * EK_PAUSED (paused by someone else), EK_NOT_RUNNING, EK_NO_CONTAINER,
 * EK_TIMEOUT (deadline), EK_CONFLICT EBUSY (execs), the engine's error for a
 * refused pause, EK_SYSTEM for the lock files, and EK_SYSTEM EINTR, nothing
 * paused, as soon as the thread's cancellation flag is set (cancel.h: the
 * caller is gone; seen within about 100 ms while it waits).
 */
int mafsbx_freeze_enter(struct mafsbx_freezer *f, const char *container, long long deadline_ms,
			struct mafsbx_freeze **out, struct mafsbx_error *err);
/*
 * Prove that the freeze `h` held from its pause until now: the engine's
 * event log still holds the pause that started it and shows no pause,
 * unpause or die of the container since. Call it after a transfer, before
 * leave(): on failure the transfer's result must be discarded (a read) or
 * reported as failed (a write). Errors (errno EIO): EK_CONFLICT when someone
 * else unpaused or stopped the container meanwhile; EK_ENGINE when the proof
 * cannot be read (no pause record, the log moved on, the engine's error).
 */
int mafsbx_freeze_verify(struct mafsbx_freeze *h, struct mafsbx_error *err);
#ifdef MAFSBX_TEST_KNOBS
/* A test hook (NULL unless a test sets it), compiled only into the test
 * libraries: called at the start of every verify, inside the freeze. */
extern void (*mafsbx_freeze_test_before_verify)(const char *container, void *ctx);
extern void *mafsbx_freeze_test_before_verify_ctx;
#endif

/*
 * Whether a failed unpause of ours needs no retry: the container is gone or
 * stopped (a dispose removed it while a burst's freeze lingered), so there is
 * no freeze left to lift. `unpause_err` is the unpause's error; `inspect` the
 * container's inspect answer taken after it (NULL when that failed, with
 * `inspect_err` then its error; either may be NULL). Exposed for the tests.
 */
bool mafsbx_freeze_unpause_moot(const struct mafsbx_error *unpause_err, const json_t *inspect,
				const struct mafsbx_error *inspect_err);

/* Leave; the last one out unpauses. Never fails (a failed unpause is logged, unless the
 * container is gone or stopped: nothing is left to lift). NULL is a no-op. */
void mafsbx_freeze_leave(struct mafsbx_freeze *h);

/*
 * Register an exec of `container` before creating it: waits until no freeze
 * of the container is in force (or being taken or released) anywhere on the
 * host, and registers atomically with that check, so that no freeze can start
 * until mafsbx_freeze_exec_end(). Wrap the whole engine exec (create, start,
 * stream, inspect) in it. `deadline_ms` as for enter(). Errors: EK_TIMEOUT
 * naming the container when the deadline passes (nothing registered),
 * EK_SYSTEM for the lock files. Do not call it while holding a freeze of
 * the container or another registration of it (it would wait for itself).
 */
int mafsbx_freeze_exec_begin(struct mafsbx_freezer *f, const char *container, long long deadline_ms,
			     struct mafsbx_freeze_exec **out, struct mafsbx_error *err);
/* End the registration; waiting freezes may go. NULL is a no-op. */
void mafsbx_freeze_exec_end(struct mafsbx_freeze_exec *x);

/* Does this process hold (or is it taking or releasing) a freeze of `container` now? */
bool mafsbx_freeze_active(struct mafsbx_freezer *f, const char *container);
/* Wait until this process holds no freeze of `container`: 0, or EK_TIMEOUT at the deadline. */
int mafsbx_freeze_wait_idle(struct mafsbx_freezer *f, const char *container, long long deadline_ms,
			    struct mafsbx_error *err);

/*
 * Recover a freeze left behind: when nobody (this process or another live
 * one) holds a freeze of `container` and the engine says it is paused, unpause
 * it if our marker is set (a dead mafsbx process left it), or, with
 * `include_foreign`, whatever paused it (what upstream acquire does: a paused
 * container with no live claim is thawed). *unpaused (may be NULL) says
 * whether an unpause was done. A live freeze is left alone (returns 0).
 * Errors: the inspect's or the unpause's.
 */
int mafsbx_freeze_recover(struct mafsbx_freezer *f, const char *container, bool include_foreign,
			  bool *unpaused, long long deadline_ms, struct mafsbx_error *err);

/*
 * Lock files only grow with the containers a host ever froze or ran execs
 * in; these collect them once the container is gone (IDs are never reused).
 * forget(): `container` (a full ID) was just removed; its files go if nobody
 * uses them. collect(): every full-ID key in the runtime directory that is
 * not in `live` (full IDs, e.g. an `all` listing taken just before) and that
 * the engine confirms absent, with nobody using its files. *removed counts
 * the keys collected. Errors: EK_SYSTEM reading the directory.
 */
void mafsbx_freeze_forget(struct mafsbx_freezer *f, const char *container);
int mafsbx_freezer_collect(struct mafsbx_freezer *f, const char *const *live, size_t n_live, unsigned *removed,
			   struct mafsbx_error *err);

/*
 * `fn(ctx, container)` is called after every failed unpause of a freeze of
 * this process (from the thread that saw it, with no freezer lock held; it
 * must not call back into the freezer synchronously). NULL clears it.
 */
void mafsbx_freezer_on_unpause_failure(struct mafsbx_freezer *f, void (*fn)(void *ctx, const char *container),
				       void *ctx);

struct mafsbx_freeze_stats {
	uint64_t enters;           /* successful enter() calls */
	uint64_t pauses;           /* successful pause calls */
	uint64_t unpauses;         /* successful unpause calls (recover's included) */
	uint64_t joins;            /* enters that joined a freeze this process held */
	uint64_t xjoins;           /* enters that joined a freeze held by another live process */
	uint64_t adopted;          /* enters that took over a freeze a dead process left (thaw + fresh pause) */
	uint64_t recovered;        /* recover() unpauses */
	uint64_t unpause_failures;
	uint64_t foreign_refusals; /* enters refused: paused by someone else */
	uint64_t exec_begins;      /* execs registered by exec_begin() */
	uint64_t exec_waits;       /* exec_begin() calls that waited for a freeze to end */
	uint64_t exec_deferrals;   /* enters that found an exec in flight or waiting and waited */
	uint64_t exec_refusals;    /* enters refused (EBUSY) after waiting for execs until the deadline */
	uint64_t broken_freezes;   /* verify() found the freeze lifted by someone else during a transfer */
	uint64_t freeze_echoes;    /* verify() saw only dockerd's late echo of an earlier unpause (accepted) */
	/*
	 * Debug check, must stay 0: pauses issued (or freezes joined) while an
	 * exec of this process was registered, plus execs registered inside a
	 * freeze of this process.
	 */
	uint64_t exec_overlaps;
};
void mafsbx_freezer_stats(struct mafsbx_freezer *f, struct mafsbx_freeze_stats *out);

#endif
