/*
 * thaw_cluster.c: `mafsbx --cluster swarm thaw` (mafsbx(1) THAW): lift the
 * freezes a dead mafsbx process of this host left on the sandboxes of every
 * ready node of a swarm. A mount over a swarm takes a node's freezes
 * against that node's engine and records them in the swarm-node-ID
 * subdirectory of its runtime directory (src/cluster/nodeengine.c). So, as
 * the mount's janitor does (src/sandbox/swarm_thaw.c), the manager's node
 * list is read once, each node's engine is opened from its mafsbx.engine
 * label and believed only once its /info names that node (cluster.h), and
 * one engine's pass of `mafsbx thaw` (thaw_engine: one container list, then
 * that node's subdirectory of every runtime directory, checked as the
 * directory is) runs on it. A node that cannot be reached (down, drained,
 * no label, another engine answering) is named on stderr and the exit
 * status is 1: whatever it holds frozen is still frozen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cluster.h"
#include "mafsbx.h"
#include "thaw.h"

/* A node ID from the manager as a path component: swarm IDs are lowercase letters and digits. */
static bool node_id_ok(const char *id)
{
	return id[0] && strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") == strlen(id);
}

/* One node's line (stdout) and its entry of the JSON's "nodes". */
static void node_report(struct thaw_pass *tp, json_t *nodes_json, const struct mafsbx_cluster_node *n,
			unsigned lifted, unsigned failed)
{
	const char *result = failed ? "failed" : lifted ? "lifted" : "none";
	json_array_append_new(nodes_json, json_pack("{s:s, s:s, s:s, s:I, s:I}", "id", n->id, "hostname", n->hostname,
						    "result", result, "lifted", (json_int_t)lifted, "failed",
						    (json_int_t)failed));
	if (tp->json)
		return;
	if (failed)
		printf("%s: lifted %u, %u could not be lifted\n", tp->node, lifted, failed);
	else if (lifted)
		printf("%s: lifted %u\n", tp->node, lifted);
	else
		printf("%s: none\n", tp->node);
}

/* A node whose freezes could not be looked for: stderr, and its entry of "nodes". */
static void node_unreached(struct thaw_pass *tp, json_t *nodes_json, const struct mafsbx_cluster_node *n,
			   const char *why)
{
	tp->t.unreached++;
	cli_error("%s: not reached, its freezes were not looked for: %s", tp->node, why);
	json_array_append_new(nodes_json, json_pack("{s:s, s:s, s:s, s:s}", "id", n->id, "hostname", n->hostname,
						    "result", "unreached", "message", why));
}

/* One node: its engine (checked to be that node), then one engine's pass over its subdirectories. */
static void thaw_node(struct thaw_pass *tp, struct mafsbx_cluster *cl, const struct mafsbx_cluster_node *n,
		      const struct dirs *dirs, json_t *nodes_json)
{
	char label[300], sub[96];
	snprintf(label, sizeof(label), "node %s (%.12s)", n->hostname[0] ? n->hostname : "?", n->id);
	tp->node = label;
	if (!node_id_ok(n->id) || strlen(n->id) > 64) {
		node_unreached(tp, nodes_json, n, "the manager lists it under an ID that is not one");
		return;
	}
	snprintf(sub, sizeof(sub), "swarm-node-%s", n->id);
	struct mafsbx_engine *e = NULL;
	struct mafsbx_freezer *fz = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	unsigned thawed0 = tp->t.thawed, failed0 = tp->t.failed;
	int r = mafsbx_cluster_node_engine(cl, n->id, &e, &fz, NULL, NULL, &err);
	if (r == 0) {
		tp->e = e;
		tp->sub = sub;
		r = thaw_engine(tp, dirs, &err);
	}
	if (r < 0) {
		node_unreached(tp, nodes_json, n, err.message);
		return;
	}
	tp->t.nodes_reached++;
	node_report(tp, nodes_json, n, tp->t.thawed - thawed0, tp->t.failed - failed0);
}

int thaw_cluster(struct mafsbx_engine *manager, const struct dirs *dirs, bool json)
{
	__do_json json_t *fails = json_array();
	__do_json json_t *dirs_json = json_array();
	__do_json json_t *nodes_json = json_array();
	if (!fails || !dirs_json || !nodes_json)
		return thaw_oom();
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	struct mafsbx_cluster *cl = mafsbx_cluster_new(manager, mafsbx_engine_endpoint(manager), NULL, &err);
	if (!cl)
		return thaw_oom();
	struct mafsbx_cluster_node *nodes = NULL;
	size_t n = 0;
	int code = MAFSBX_EXIT_OK;
	if (mafsbx_cluster_check_manager(cl, NULL, &err) < 0 || mafsbx_cluster_nodes(cl, &nodes, &n, &err) < 0) {
		cli_error("cluster=swarm: cannot list the swarm's nodes, so nothing was thawed: %s", err.message);
		code = err.kind == MAFSBX_EK_UNSUPPORTED ? MAFSBX_EXIT_FAILURE : MAFSBX_EXIT_ENGINE;
	} else {
		struct thaw_pass tp = { .fails = fails, .dirs_json = dirs_json, .json = json };
		for (size_t i = 0; i < n; i++)
			thaw_node(&tp, cl, &nodes[i], dirs, nodes_json);
		thaw_report(&tp.t, dirs->n, fails, dirs_json, nodes_json, json);
		/* a node not reached may hold a freeze still: cron must hear of it */
		code = tp.t.failed || tp.t.unreached ? MAFSBX_EXIT_FAILURE : MAFSBX_EXIT_OK;
	}
	free(nodes);
	mafsbx_cluster_free(cl);
	return code;
}
