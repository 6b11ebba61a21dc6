/*
 * cluster.h: one mount over a Docker Swarm (mafsbxfs(1) -o cluster=swarm).
 * The manager's Engine API is the source of truth for what exists (services,
 * their tasks, the nodes); each node's own engine serves the files, execs,
 * freezes and archives of the sandboxes whose task runs there. This layer
 * owns the node map: which engine a node advertises (its node label
 * mafsbx.engine=URL), a handle and a freezer per node engine, the check that
 * the engine at that URL is that node (its /info Swarm.NodeID), and where a
 * service's task runs now. It never places anything: the swarm does.
 *
 * Handles handed out (engines, freezers) live as long as the cluster: a node
 * whose URL changes gets a new handle, the old one is kept until the end.
 * Thread-safe.
 */
#ifndef MAFSBX_CLUSTER_H
#define MAFSBX_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include "endpoint.h"
#include "engine.h"
#include "error.h"
#include "freeze.h"

/* The node label that names a node's engine. */
#define MAFSBX_NODE_ENGINE_LABEL "mafsbx.engine"
/* How long the manager's node list is believed (a miss refreshes it at once). */
#define MAFSBX_CLUSTER_NODES_TTL_MS 2000
/* Node handles (live and retired) one cluster holds at most. */
#define MAFSBX_CLUSTER_MAX_NODES 256
/* How long the manager's calls retry the answers of a swarm electing a leader (engine_retry.c). */
#define MAFSBX_CLUSTER_ELECTION_MS 30000

struct mafsbx_cluster;

struct mafsbx_cluster_node {
	char id[65];
	char hostname[256];
	char engine_url[1024];   /* the label's value, "" when absent */
	char state[16];          /* Status.State: ready, down, unknown, disconnected */
	char availability[16];   /* Spec.Availability: active, pause, drain */
	bool usable;             /* its engine answered as that node and it may serve sandboxes */
	char why[256];           /* !usable: the reason, for status and refusals */
};

/*
 * Over the manager `manager` (borrowed), reached at `manager_ep` (whose TLS
 * material a node's tcp:// engine URL uses too). `rundir` as for
 * mafsbx_freezer_new. No engine call.
 */
struct mafsbx_cluster *mafsbx_cluster_new(struct mafsbx_engine *manager, const struct mafsbx_endpoint *manager_ep,
					  const char *rundir, struct mafsbx_error *err);
void mafsbx_cluster_free(struct mafsbx_cluster *cl);
struct mafsbx_engine *mafsbx_cluster_manager(struct mafsbx_cluster *cl);

/*
 * The manager is in a swarm and is a manager: 0, else EK_UNSUPPORTED naming
 * what it is. Its API version into api (may be NULL): a pids limit on a
 * service needs 1.41.
 */
int mafsbx_cluster_check_manager(struct mafsbx_cluster *cl, char api[16], struct mafsbx_error *err);

/*
 * The engine and freezer of node `node_id` (borrowed, live as long as cl),
 * after the node map says it is ready and active, its label names an engine
 * and that engine says it is that node. Refusals: no label, a bad URL, a
 * node down or drained, another node ID answering: EK_UNREACHABLE (ENOTCONN)
 * with a message naming the node and the reason. `info` (may be NULL) gets
 * the node's entry either way. `nnp` (may be NULL): the node's /info lists
 * name=no-new-privileges.
 */
int mafsbx_cluster_node_engine(struct mafsbx_cluster *cl, const char *node_id, struct mafsbx_engine **e,
			       struct mafsbx_freezer **fz, bool *nnp, struct mafsbx_cluster_node *info,
			       struct mafsbx_error *err);

/* The node map now (refreshed when older than the TTL): a malloc'd array. */
int mafsbx_cluster_nodes(struct mafsbx_cluster *cl, struct mafsbx_cluster_node **out, size_t *n,
			 struct mafsbx_error *err);
/* One node's entry from the map (refreshed when older than the TTL, or when absent). */
int mafsbx_cluster_node(struct mafsbx_cluster *cl, const char *node_id, struct mafsbx_cluster_node *out,
			struct mafsbx_error *err);

/* Where a service's task runs. */
struct mafsbx_cluster_where {
	char service_id[65];
	char node_id[65];        /* "" before the swarm assigned one */
	char container_id[65];   /* "" before the node made it */
	char task_id[65];
	char task_state[24];     /* Status.State: new, pending, ..., running, complete, failed, shutdown, orphaned */
	char desired_state[24];
	char message[256];       /* Status.Err or Status.Message */
};

/*
 * The newest task of service `service_id` (one replica: slot 1) as the
 * manager lists it now: one /tasks call. No task at all: EK_NO_OBJECT.
 */
int mafsbx_cluster_task(struct mafsbx_cluster *cl, const char *service_id, struct mafsbx_cluster_where *w,
			struct mafsbx_error *err);

#endif
