/*
 * swarm_thaw.c: freezes a dead daemon left on a swarm's nodes
 * (mafsbx_sandbox_thaw_left, sandbox.h). On one engine the janitor lists the
 * sandboxes and lifts each paused one whose freeze marker names a process
 * that is gone. Over a swarm the freezes are the nodes' (each node's
 * freezer keeps its markers in a directory of its own), and the manager's
 * list of services says nothing of a container's pause: so each usable
 * node's engine is asked for its paused sandbox containers (one list call
 * per node, at the janitor's start and its retries only) and its freezer
 * lifts those our marker claims. A node that cannot serve is passed over:
 * its sandboxes are lost anyway, and the next pass looks again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "names.h"
#include "sbx_internal.h"

#define THAW_RECOVER_MS 5000 /* bound on one container's recovery */

/* The paused sandbox containers of one node, lifted when a dead process of ours froze them. */
static int thaw_node(struct mafsbx_backend *b, const struct mafsbx_cluster_node *node, const char *scope,
		     unsigned *lifted, struct mafsbx_error *err)
{
	struct mafsbx_engine *e = NULL;
	struct mafsbx_freezer *fz = NULL;
	int r = mafsbx_cluster_node_engine(b->cluster, node->id, &e, &fz, NULL, NULL, err);
	if (r < 0 && err->kind == MAFSBX_EK_UNREACHABLE)
		return 0;   /* a node that cannot serve: its sandboxes are lost, and nothing of ours runs there */
	if (r < 0)
		return r;
	const char *const want[3] = { scope, NULL, NULL };
	__do_json json_t *f = mafsbx_list_filters(want);
	if (!f || mafsbx_filters_add(f, "status", "paused") < 0)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	__do_json json_t *list = NULL;
	if ((r = mafsbx_container_list(e, f, true, &list, err)) < 0)
		return r;
	size_t i;
	json_t *c;
	int failed = 0;
	json_array_foreach(list, i, c) {
		const char *id = json_string_value(json_object_get(c, "Id"));
		if (!id)
			continue;
		bool unpaused = false;
		struct mafsbx_error ce;
		mafsbx_error_clear(&ce);
		if (mafsbx_freeze_recover(fz, id, false, &unpaused, mafsbx_now_ms() + THAW_RECOVER_MS, &ce) < 0) {
			log_warn("node %s: %.12s: cannot lift a freeze left behind: %s (will retry)", node->hostname, id,
				 ce.message);
			if (!failed)
				*err = ce;
			failed = -1;
		} else if (unpaused) {
			log_warn("node %s: %.12s: lifted a freeze left behind", node->hostname, id);
			(*lifted)++;
		}
	}
	return failed < 0 ? -mafsbx_error_errno(err, EIO) : 0;
}

int mafsbx_sandbox_thaw_left(struct mafsbx_backend *b, const char *scope, unsigned *lifted, struct mafsbx_error *err)
{
	*lifted = 0;
	if (!b || !b->cluster)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "thaw: not a mount over a swarm");
	struct mafsbx_cluster_node *nodes = NULL;
	size_t n = 0;
	int r = mafsbx_cluster_nodes(b->cluster, &nodes, &n, err);
	if (r < 0)
		return r;
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		if (!nodes[i].engine_url[0] || strcmp(nodes[i].state, "ready") != 0)
			continue;   /* no engine to ask, or down: its sandboxes are lost */
		struct mafsbx_error ne;
		mafsbx_error_clear(&ne);
		if (thaw_node(b, &nodes[i], scope, lifted, &ne) < 0) {
			log_warn("node %s: looking for freezes left behind: %s (will retry)", nodes[i].hostname,
				 ne.message);
			if (!failed && err)
				*err = ne;
			failed = -1;
		}
	}
	free(nodes);
	return failed < 0 ? -mafsbx_error_errno(err, EIO) : 0;
}
