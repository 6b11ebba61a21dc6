/*
 * turns.h: freezes and execs of one key take turns, across the processes of
 * a host, over flock'ed lock files under a directory. No engine here: the
 * counted freeze (freeze.c) asks this for a turn before it pauses and gives
 * it back after it unpauses; an exec asks for one before it starts.
 *
 * Why (freeze.h): an exec process that starts or exits while its container
 * is being paused wedges containerd, so a freeze never goes while an exec of
 * its container is in flight, and an exec never starts inside a freeze.
 *
 * Lock files, "<dir>/<key>.<suffix>":
 *   gate   LOCK_EX while anyone decides (every try, leave, idle probe). The
 *          freezer keeps its marker in it (mafsbx_turn.gate, under the gate).
 *   hold   LOCK_SH by every turn inside a freeze (LOCK_EX by the first one
 *          until it settles).
 *   exec   LOCK_SH by every exec turn; its one byte says which side started
 *          a phase last ('f' a freeze, 'e' an exec).
 *   xwant  LOCK_SH by every exec waiting for its turn.
 *   fwant  LOCK_SH by a freeze waiting for execs to end.
 * Every decision is taken under the gate, where "can I take X LOCK_EX without
 * waiting?" answers "does any live descriptor hold X?". flock locks belong
 * to open file descriptions, so two turns of one process conflict like two
 * processes, and they die with their process: a holder killed by SIGKILL
 * releases its turn at once.
 *
 * The state machine: an exec goes when nobody is inside a freeze; a freeze
 * goes (or joins one in force) when no exec is in flight. Turns: while an
 * exec waits, no freeze joins one in force and no fresh freeze starts if a
 * freeze went last; while a freeze waits, no exec joins an exec phase in
 * progress and none starts one if an exec went last. When both wait and
 * nothing is in force exactly one side may go (the one that did not go
 * last): no deadlock, and neither starves the other.
 *
 * Re-entrancy: none. A turn is held by its descriptors, not by a thread or a
 * process, so a caller holding a freeze turn that asks for an exec turn of
 * the same key (or the reverse) waits for itself until its deadline. Two
 * freeze turns of one key join like two processes do.
 *
 * Every wait is bounded by an absolute mafsbx_now_ms() deadline and
 * re-checks at least every 10 ms (hooks may wake it earlier).
 */
#ifndef MAFSBX_TURNS_H
#define MAFSBX_TURNS_H

#include <limits.h>
#include <stdbool.h>

#include "error.h"

/* The lock files of one key. */
struct mafsbx_turns {
	char prefix[PATH_MAX]; /* "<dir>/<key>" */
	const char *name;      /* named in messages (borrowed) */
};

/* Why a freeze must wait for execs. */
enum mafsbx_turns_busy { MAFSBX_TURNS_IDLE, MAFSBX_TURNS_EXEC_RUNNING, MAFSBX_TURNS_EXEC_WAITING };

/* A turn being taken or held. Start with MAFSBX_TURN_INIT; give it back with mafsbx_turn_release(). */
struct mafsbx_turn {
	int gate;  /* held LOCK_EX from a try that went until settle()/release() */
	int hold;  /* a freeze turn: the hold file (LOCK_EX alone until settled, then LOCK_SH) */
	int exec;  /* an exec turn: the exec file, LOCK_SH */
	int want;  /* fwant or xwant, LOCK_SH while waiting */
	enum mafsbx_turns_busy why; /* a freeze try answered -EAGAIN: why */
};
#define MAFSBX_TURN_INIT { -1, -1, -1, -1, MAFSBX_TURNS_IDLE }

/* The outcome of a freeze turn that went. */
enum { MAFSBX_TURN_ALONE = 1, MAFSBX_TURN_JOINED = 2 };

/*
 * Between two tries of a wait (all optional; NULL hooks: sleep). before():
 * false skips the next try (the caller is busy with the key itself); *token
 * goes to wait(). wait(): return by until_ms, earlier when something the
 * caller knows of changed since token.
 */
struct mafsbx_turns_hooks {
	bool (*before)(void *ctx, unsigned long long *token);
	void (*wait)(void *ctx, unsigned long long token, long long until_ms);
	void *ctx;
};

/* `key` names one file stem in `dir` (no '/'); `name` (borrowed, may be NULL: key) is used in messages. */
int mafsbx_turns_init(struct mafsbx_turns *t, const char *dir, const char *key, const char *name,
		      struct mafsbx_error *err);
/* "<dir>/<key>.<suffix>" */
void mafsbx_turns_path(const struct mafsbx_turns *t, const char *suffix, char *out, size_t outsz);
/* The re-check interval of the round-th wait for another process. */
long mafsbx_turns_poll_ms(unsigned round);

/*
 * One freeze try. MAFSBX_TURN_ALONE: nobody was inside, the turn holds the
 * hold file LOCK_EX and the gate: the caller freezes, then settle()s.
 * MAFSBX_TURN_JOINED: a freeze is in force, the turn is inside it (hold
 * LOCK_SH) and still holds the gate: the caller reads the marker, then
 * settle()s. -EAGAIN: an exec is in flight or waits its turn (turn->why);
 * the first time the turn announces the wait (fwant), so that new execs let
 * it in. Otherwise an error (EK_TIMEOUT at the deadline for the gate,
 * EK_SYSTEM for the lock files), nothing held but the announcement.
 */
int mafsbx_turns_freeze_try(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			    struct mafsbx_error *err);
/*
 * The same, waiting until the deadline; the announcement is dropped before
 * it returns. At the deadline: EK_CONFLICT EBUSY "... an exec is running (or
 * about to start) in sandbox X; retry when it ends", nothing held. (The
 * freezer runs its own loop around freeze_try(), interleaved with its
 * in-process table.)
 */
int mafsbx_turns_freeze_wait(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			     const struct mafsbx_turns_hooks *hooks, struct mafsbx_error *err);
/* The refusal of a freeze that waited for execs until its deadline. */
int mafsbx_turns_busy_error(const char *name, enum mafsbx_turns_busy why, struct mafsbx_error *err);
/*
 * After a try that went: `ok` false gives an ALONE turn back (the freeze
 * failed). Releases the gate; the turn keeps the hold file LOCK_SH.
 */
void mafsbx_turns_settle(struct mafsbx_turn *turn, bool ok);
/*
 * Leave a freeze turn: 1 when it was the last one inside (across every
 * process): the turn then holds the hold file LOCK_EX and the gate, the
 * caller unfreezes and release()s. 0: others are still inside (the gate is
 * held). Error (the gate not taken by the deadline): the turn is unchanged.
 */
int mafsbx_turns_freeze_leave(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			      struct mafsbx_error *err);
/*
 * Under the gate: is nobody inside a freeze of the key? 1: nobody (the turn
 * holds the gate and the hold file LOCK_EX, so nobody can enter until
 * release()), 0: someone is (the gate is held), or an error.
 */
int mafsbx_turns_idle(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
		      struct mafsbx_error *err);

/*
 * Wait for an exec turn: announces the wait (xwant), then tries until no
 * freeze is in force (and none waits its turn). 0: the turn holds the exec
 * file LOCK_SH and the gate: the caller records it, then settle()s; *waited
 * (may be NULL) says whether it had to wait. At the deadline: EK_TIMEOUT
 * "timed out waiting for the freeze of sandbox X to end before an exec",
 * nothing held. EK_SYSTEM for the lock files.
 */
int mafsbx_turns_exec_wait(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			   const struct mafsbx_turns_hooks *hooks, bool *waited, struct mafsbx_error *err);
/* One exec try (the wait announced, see exec_wait): 0 went (gate held), -EAGAIN, or an error. */
int mafsbx_turns_exec_try(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			  struct mafsbx_error *err);
int mafsbx_turns_exec_want(const struct mafsbx_turns *t, struct mafsbx_turn *turn, long long deadline_ms,
			   struct mafsbx_error *err);

/* Give back whatever the turn holds (an exec turn ends, a freeze turn is left) and close it. */
void mafsbx_turn_release(struct mafsbx_turn *turn);
/* Drop the announcement of a wait. */
void mafsbx_turn_unwant(struct mafsbx_turn *turn);

/*
 * Remove the key's lock files when no live descriptor holds any of them
 * (checked under the gate, which goes last). `confirm` (may be NULL) is
 * asked last, still under the gate: false keeps the files. 1 removed, 0 kept.
 */
int mafsbx_turns_remove(const struct mafsbx_turns *t, bool (*confirm)(void *ctx), void *ctx);

#endif
