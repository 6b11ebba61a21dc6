/*
 * cluster.c: the node map of cluster.h. The manager's /nodes is read at
 * most once per MAFSBX_CLUSTER_NODES_TTL_MS (and at once for a node it does
 * not know yet); each node's engine is opened from its mafsbx.engine label
 * with its own connection pool and freezer, and believed only after its
 * /info names the same node ID: a label pointing at another engine is
 * refused, never used. Also: the newest task of a service.
 */
#include "cluster.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cluster_internal.h"
#include "log.h"

struct mafsbx_cluster *mafsbx_cluster_new(struct mafsbx_engine *manager, const struct mafsbx_endpoint *manager_ep,
					  const char *rundir, struct mafsbx_error *err)
{
	if (!manager || !manager_ep) {
		mafsbx_error_set(err, MAFSBX_EK_INVALID, "cluster: no manager");
		return NULL;
	}
	struct mafsbx_cluster *cl = calloc(1, sizeof(*cl));
	if (!cl || (rundir && !(cl->rundir = strdup(rundir)))) {
		free(cl);
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	cl->manager = manager;
	cl->manager_ep = *manager_ep;
	/* an election (a manager stopped) answers 5xx for seconds: the manager's calls wait it out, bounded */
	mafsbx_engine_set_transient_retry(manager, MAFSBX_CLUSTER_ELECTION_MS);
	pthread_mutex_init(&cl->mu, NULL);
	return cl;
}

void mafsbx_cl_handle_close(struct mafsbx_engine *e, struct mafsbx_freezer *fz)
{
	mafsbx_freezer_free(fz);   /* before its engine */
	if (e)
		mafsbx_engine_close(e);
}

void mafsbx_cluster_free(struct mafsbx_cluster *cl)
{
	if (!cl)
		return;
	while (cl->nodes) {
		struct cl_node *n = cl->nodes;
		cl->nodes = n->next;
		mafsbx_cl_handle_close(n->e, n->fz);
		free(n);
	}
	while (cl->retired) {
		struct cl_retired *r = cl->retired;
		cl->retired = r->next;
		mafsbx_cl_handle_close(r->e, r->fz);
		free(r);
	}
	pthread_mutex_destroy(&cl->mu);
	free(cl->rundir);
	free(cl);
}

struct mafsbx_engine *mafsbx_cluster_manager(struct mafsbx_cluster *cl)
{
	return cl ? cl->manager : NULL;
}

int mafsbx_cluster_check_manager(struct mafsbx_cluster *cl, char api[16], struct mafsbx_error *err)
{
	struct mafsbx_engine_swarm s;
	int r = mafsbx_engine_swarm_facts(cl->manager, &s, err);
	if (r < 0)
		return r;
	if (strcmp(s.state, "active") != 0 || !s.manager)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "cluster=swarm: the engine at %s is not a swarm manager (its swarm state "
					     "is '%s'%s)", cl->manager_ep.url, s.state[0] ? s.state : "none",
					     s.manager ? "" : ", not a manager");
	if (api) {
		struct mafsbx_engine_version v;
		if ((r = mafsbx_engine_version(cl->manager, &v, err)) < 0)
			return r;
		snprintf(api, 16, "%s", v.api_version);
	}
	return 0;
}

/* ---- the node list --------------------------------------------------------- */

struct cl_node *mafsbx_cl_node_find(struct mafsbx_cluster *cl, const char *id)
{
	for (struct cl_node *n = cl->nodes; n; n = n->next)
		if (strcmp(n->info.id, id) == 0)
			return n;
	return NULL;
}

static void copy_str(char *dst, size_t cap, json_t *v)
{
	const char *s = json_string_value(v);
	snprintf(dst, cap, "%s", s ? s : "");
}

/* With cl->mu held: one node of the manager's list into the map. */
static int node_update(struct mafsbx_cluster *cl, json_t *o)
{
	const char *id = json_string_value(json_object_get(o, "ID"));
	if (!id || !*id || strlen(id) > 64)
		return 0;
	struct cl_node *n = mafsbx_cl_node_find(cl, id);
	if (!n) {
		if (cl->n_handles >= MAFSBX_CLUSTER_MAX_NODES)
			return 0;   /* past the bound: such a node is never served (node_engine says so) */
		if (!(n = calloc(1, sizeof(*n))))
			return -ENOMEM;
		snprintf(n->info.id, sizeof(n->info.id), "%s", id);
		n->next = cl->nodes;
		cl->nodes = n;
		cl->n_handles++;
	}
	json_t *spec = json_object_get(o, "Spec");
	copy_str(n->info.hostname, sizeof(n->info.hostname),
		 json_object_get(json_object_get(o, "Description"), "Hostname"));
	copy_str(n->info.engine_url, sizeof(n->info.engine_url),
		 json_object_get(json_object_get(spec, "Labels"), MAFSBX_NODE_ENGINE_LABEL));
	copy_str(n->info.state, sizeof(n->info.state), json_object_get(json_object_get(o, "Status"), "State"));
	copy_str(n->info.availability, sizeof(n->info.availability), json_object_get(spec, "Availability"));
	n->listed = true;
	return 0;
}

/* Read the manager's /nodes into the map (without cl->mu held during the call). */
static int nodes_refresh(struct mafsbx_cluster *cl, struct mafsbx_error *err)
{
	__do_json json_t *list = NULL;
	int r = mafsbx_node_list(cl->manager, &list, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&cl->mu);
	for (struct cl_node *n = cl->nodes; n; n = n->next)
		n->listed = false;
	size_t i;
	json_t *o;
	json_array_foreach(list, i, o) {
		if ((r = node_update(cl, o)) < 0)
			break;
	}
	for (struct cl_node *n = cl->nodes; n; n = n->next)
		if (!n->listed)
			snprintf(n->info.state, sizeof(n->info.state), "removed");
	if (r == 0)
		cl->listed_at = mafsbx_now_ms();
	pthread_mutex_unlock(&cl->mu);
	return r < 0 ? mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory") : 0;
}

/* Refresh when the list is older than the TTL or does not hold `id` (may be NULL). */
int mafsbx_cl_nodes_fresh(struct mafsbx_cluster *cl, const char *id, struct mafsbx_error *err)
{
	pthread_mutex_lock(&cl->mu);
	bool known = id ? mafsbx_cl_node_find(cl, id) != NULL : cl->listed_at != 0;
	bool stale = !cl->listed_at || mafsbx_now_ms() - cl->listed_at > MAFSBX_CLUSTER_NODES_TTL_MS || !known;
	pthread_mutex_unlock(&cl->mu);
	if (!stale)
		return 0;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = nodes_refresh(cl, &e);
	/* the manager out of reach (a failover, a partition): the nodes it listed last keep serving what
	 * runs on them; only what needs the manager (acquire, listings) fails */
	if (r < 0 && known && (e.kind == MAFSBX_EK_UNREACHABLE || e.kind == MAFSBX_EK_TIMEOUT)) {
		log_debug("cluster: the node list could not be refreshed (%s); the last one stands", e.message);
		return 0;
	}
	if (r < 0 && err)
		*err = e;
	return r;
}

/* Why a node cannot serve, from the map alone ("" when nothing says so). */
void mafsbx_cl_node_refusal(const struct cl_node *n, char *why, size_t cap)
{
	*why = 0;
	if (strcmp(n->info.state, "ready") != 0)
		snprintf(why, cap, "the node is %s", n->info.state[0] ? n->info.state : "of unknown state");
	else if (strcmp(n->info.availability, "drain") == 0)
		snprintf(why, cap, "the node is drained");
	else if (!n->info.engine_url[0])
		snprintf(why, cap, "the node has no %s label naming its engine", MAFSBX_NODE_ENGINE_LABEL);
	/* a failed open is believed for one TTL, then the engine is asked again */
	else if (n->failed_ms && strcmp(n->handle_url, n->info.engine_url) == 0 &&
		 mafsbx_now_ms() - n->failed_ms < MAFSBX_CLUSTER_NODES_TTL_MS)
		snprintf(why, cap, "%s", n->info.why);
}

int mafsbx_cluster_nodes(struct mafsbx_cluster *cl, struct mafsbx_cluster_node **out, size_t *n,
			 struct mafsbx_error *err)
{
	*out = NULL;
	*n = 0;
	int r = mafsbx_cl_nodes_fresh(cl, NULL, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&cl->mu);
	size_t k = 0;
	for (struct cl_node *x = cl->nodes; x; x = x->next)
		k += x->listed;
	struct mafsbx_cluster_node *a = k ? calloc(k, sizeof(*a)) : NULL;
	size_t i = 0;
	for (struct cl_node *x = cl->nodes; a && x; x = x->next) {
		if (!x->listed)
			continue;
		a[i] = x->info;
		char why[256];
		mafsbx_cl_node_refusal(x, why, sizeof(why));
		a[i].usable = !why[0] && x->checked && !x->failed_ms && strcmp(x->handle_url, x->info.engine_url) == 0;
		/* the last failure stays shown until an open succeeds */
		const char *shown = why[0] ? why : x->failed_ms ? x->info.why : "its engine not yet asked";
		snprintf(a[i].why, sizeof(a[i].why), "%s", a[i].usable ? "" : shown);
		i++;
	}
	pthread_mutex_unlock(&cl->mu);
	if (k && !a)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	*out = a;
	*n = i;
	return 0;
}

int mafsbx_cluster_node(struct mafsbx_cluster *cl, const char *node_id, struct mafsbx_cluster_node *out,
			struct mafsbx_error *err)
{
	int r = mafsbx_cl_nodes_fresh(cl, node_id, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&cl->mu);
	struct cl_node *n = mafsbx_cl_node_find(cl, node_id);
	if (n)
		*out = n->info;
	pthread_mutex_unlock(&cl->mu);
	if (!n)
		return mafsbx_error_set(err, MAFSBX_EK_NO_OBJECT, "the swarm has no node %s", node_id);
	return 0;
}
