/*
 * cluster_internal.h: private to src/cluster/ (cluster.c, nodeengine.c):
 * the cluster object and its node map.
 */
#ifndef MAFSBX_CLUSTER_INTERNAL_H
#define MAFSBX_CLUSTER_INTERNAL_H

#include <pthread.h>

#include "cluster.h"

struct cl_node {
	struct cl_node *next;
	struct mafsbx_cluster_node info;
	bool listed;                 /* in the last node list */
	struct mafsbx_engine *e;     /* opened for handle_url, NULL before */
	struct mafsbx_freezer *fz;
	char handle_url[1024];
	bool checked;                /* e answered with this node's ID */
	bool nnp;                    /* e's /info lists no-new-privileges */
	long long failed_ms;         /* when opening handle_url last failed (info.why says why), 0 never */
};

/* A handle whose node's URL changed: kept, since callers may still hold it. */
struct cl_retired {
	struct cl_retired *next;
	struct mafsbx_engine *e;
	struct mafsbx_freezer *fz;
};

struct mafsbx_cluster {
	struct mafsbx_engine *manager;
	struct mafsbx_endpoint manager_ep;
	char *rundir;
	pthread_mutex_t mu;          /* guards everything below */
	struct cl_node *nodes;
	struct cl_retired *retired;
	size_t n_handles;
	long long listed_at;         /* mafsbx_now_ms() of the last node list, 0 never */
};

/* With cl->mu held: the node of that ID, or NULL. */
struct cl_node *mafsbx_cl_node_find(struct mafsbx_cluster *cl, const char *id);
/* Refresh the node list when it is older than the TTL or does not hold `id` (may be NULL). */
int mafsbx_cl_nodes_fresh(struct mafsbx_cluster *cl, const char *id, struct mafsbx_error *err);
/* With cl->mu held: why a node cannot serve, from the map alone ("" when nothing says so). */
void mafsbx_cl_node_refusal(const struct cl_node *n, char *why, size_t cap);
/* Close a node's freezer, then its engine (either may be NULL). */
void mafsbx_cl_handle_close(struct mafsbx_engine *e, struct mafsbx_freezer *fz);

#endif
