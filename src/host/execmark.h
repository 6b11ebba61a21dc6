/*
 * execmark.h: which of a container's processes belong to one exec
 * (execmark.c), the pure part of execkill.c. An exec's processes are its
 * root and its descendants (by parentage), and every process that carries
 * the exec's marker in its environment: MAFSBX_EXEC_ID=<value>, set in the
 * exec's Env by the mount and inherited by every child, so a process the
 * command daemonised (double fork, setsid, nohup) and that init adopted is
 * still found. A process older than the exec's root is never one of its
 * processes, whatever it carries, and the container's init never is.
 * Nothing here reads /proc or signals: the texts are given.
 */
#ifndef MAFSBX_EXECMARK_H
#define MAFSBX_EXECMARK_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"   /* MAFSBX_EXEC_MARK_ENV, the variable the mount sets in a user exec's environment */
/* A marker value: 8 to 64 lower-case hex digits (the buffer holds 64 and a NUL). */
#define MAFSBX_EXEC_MARK_MIN 8
#define MAFSBX_EXEC_MARK_MAX 64

bool mafsbx_exec_mark_valid(const char *value);

/* A fresh marker value (32 hex digits from getrandom). 0 or -errno. */
int mafsbx_exec_mark_new(char out[MAFSBX_EXEC_MARK_MAX + 1]);

/*
 * Whether a NUL-separated environment block (/proc/PID/environ) holds the
 * exact entry `entry` ("KEY=VALUE"), read in chunks of any size: init, feed
 * every chunk, then end (the last entry may lack its NUL). Nothing is kept
 * but a position, so a block of any length costs nothing more.
 */
struct mafsbx_environ_match {
	const char *entry;
	size_t len, pos;
	bool alive;        /* the current entry still matches so far */
	bool found;
};
void mafsbx_environ_match_init(struct mafsbx_environ_match *m, const char *entry);
void mafsbx_environ_match_feed(struct mafsbx_environ_match *m, const char *buf, size_t n);
bool mafsbx_environ_match_end(struct mafsbx_environ_match *m);

/*
 * The value of the marker in the environment block buf[0..n) into out, when
 * it is there and valid (the first entry naming it counts, as getenv reads
 * it). 0, or -ENOENT (absent or not a valid marker).
 */
int mafsbx_environ_mark(const char *buf, size_t n, char out[MAFSBX_EXEC_MARK_MAX + 1]);

/*
 * The parent PID (field 4) and start time (field 22, clock ticks after
 * boot) from a /proc/PID/stat text of n bytes, read after the last ')' (the
 * command name before it may hold anything). 0, or -EINVAL.
 */
int mafsbx_proc_stat_fields(const char *text, size_t n, long *ppid, unsigned long long *start);

/* One of the container's processes, as a pass over /proc saw it. */
struct mafsbx_tree_proc {
	long pid, ppid;
	unsigned long long start;
	bool marked;       /* its environment holds the exec's marker */
	bool member;       /* already one of the exec's (stopped in an earlier pass) */
	bool chosen;       /* out: it is one of the exec's processes */
	unsigned char state;   /* the selection's own */
};

struct mafsbx_tree_rule {
	long root_pid;                  /* the exec's process (the engine's PID) */
	unsigned long long root_start;  /* its start time: anything older is not the exec's */
	long init_pid;                  /* the container's init: never chosen */
};

/*
 * Choose the exec's processes among p[0..n) (sorted here by pid): the root,
 * the members, the marked, and the descendants of any of these (through
 * processes of the list), each only when it is not the init, not PID 1, and
 * not older than the root. How many were chosen, or -ENOMEM.
 */
long mafsbx_tree_select(struct mafsbx_tree_proc *p, size_t n, const struct mafsbx_tree_rule *rule);

#endif
