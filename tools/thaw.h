/*
 * thaw.h: what `mafsbx thaw` on one engine (cmd_thaw.c) and over a swarm
 * (thaw_cluster.c) share: the runtime directories searched, the tally, and
 * one engine's pass over them (mafsbx(1) THAW).
 */
#ifndef MAFSBX_TOOLS_THAW_H
#define MAFSBX_TOOLS_THAW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine.h"
#include "error.h"

#define THAW_MAX_DIRS 64
/* A directory's name with a node's subdirectory (PATH_MAX, and "/swarm-node-" and a node ID). */
#define THAW_DIR_MAX (4096 + 96)

struct dirs {
	char *v[THAW_MAX_DIRS];
	size_t n;
};

struct tally {
	unsigned paused, thawed, collected, failed, refused;
	unsigned nodes_reached, unreached;   /* over a swarm */
};

/* What one engine's pass over the directories needs. */
struct thaw_pass {
	struct mafsbx_engine *e;
	const char *sub;    /* over a swarm: the node's subdirectory of each runtime directory, else NULL */
	const char *node;   /* over a swarm: "node HOSTNAME (ID)" for the lines printed, else NULL */
	json_t *paused, *fails, *dirs_json;   /* paused: set by thaw_engine */
	const char *const *live;
	size_t n_live;
	bool *thawed_ids;
	bool json;
	struct tally t;
};

/*
 * tp->e's containers listed once (one call), then the dead freezes of its
 * paused ones lifted in each directory of `dirs` (tp->sub of each, when
 * set), its lock files of gone containers collected; tp->t counts. 0, or
 * the listing's error (nothing was done).
 */
int thaw_engine(struct thaw_pass *tp, const struct dirs *dirs, struct mafsbx_error *err);
/* The summary line (or the JSON object, with "nodes" when given). */
void thaw_report(const struct tally *t, size_t n_dirs, json_t *fails, json_t *dirs_json, json_t *nodes, bool json);
/* "out of memory" said, and its exit code. */
int thaw_oom(void);
/* Over a swarm whose manager is `manager`: each node's engine in turn (thaw_cluster.c). An exit code. */
int thaw_cluster(struct mafsbx_engine *manager, const struct dirs *dirs, bool json);

#endif
