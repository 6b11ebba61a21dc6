/*
 * nodeengine.c: a node's own engine (cluster.h mafsbx_cluster_node_engine):
 * opened from the URL its mafsbx.engine label names, with the manager's TLS
 * material for a tcp:// URL when the manager is reached over TLS, and
 * believed only once its /info says it is that node. Also the newest task
 * of a service (mafsbx_cluster_task), which says which node that is.
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
#include "rundir.h"

/* The endpoint of a node's label: its URL, TLS as the manager's. */
static int node_endpoint(struct mafsbx_cluster *cl, const char *url, struct mafsbx_endpoint *ep,
			 struct mafsbx_error *err)
{
	int r = mafsbx_endpoint_parse_url(url, ep, err);
	if (r < 0)
		return r;
	if (ep->scheme == MAFSBX_EP_TCP && (ep->tls || cl->manager_ep.tls)) {
		ep->tls = true;
		ep->tls_verify = cl->manager_ep.tls_verify;
		snprintf(ep->ca, sizeof(ep->ca), "%s", cl->manager_ep.ca);
		snprintf(ep->cert, sizeof(ep->cert), "%s", cl->manager_ep.cert);
		snprintf(ep->key, sizeof(ep->key), "%s", cl->manager_ep.key);
	}
	snprintf(ep->source, sizeof(ep->source), "node-label");
	return 0;
}

/* Open a handle for `url` and ask it who it is (no lock held). */
static int node_open(struct mafsbx_cluster *cl, const char *node_id, const char *url, struct mafsbx_engine **e,
		     struct mafsbx_freezer **fz, bool *nnp, struct mafsbx_error *err)
{
	struct mafsbx_endpoint ep;
	int r = node_endpoint(cl, url, &ep, err);
	if (r < 0)
		return r;
	*e = mafsbx_engine_open(&ep, NULL, err);
	if (!*e)
		return -mafsbx_error_errno(err, EIO);
	struct mafsbx_engine_swarm s;
	if ((r = mafsbx_engine_swarm_facts(*e, &s, err)) == 0 && strcmp(s.node_id, node_id) != 0)
		r = mafsbx_error_set_full(err, MAFSBX_EK_UNREACHABLE, ENOTCONN, NULL,
					  "the engine at %s says it is node '%s', not %s", url, s.node_id, node_id);
	/* the node's freeze lock files in a directory of its own: a janitor of a mount on this host's
	 * engine sweeps its runtime directory by that engine's containers, never by this node's */
	__do_free char *base = r == 0 ? mafsbx_rundir_choose(cl->rundir) : NULL;
	__do_free char *dir = NULL;
	if (r == 0 && (!base || asprintf(&dir, "%s/swarm-node-%s", base, node_id) < 0)) {
		dir = NULL;
		r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	if (r == 0 && !(*fz = mafsbx_freezer_new(*e, dir, err)))
		r = -mafsbx_error_errno(err, EIO);
	if (r < 0) {
		mafsbx_engine_close(*e);
		*e = NULL;
		return r;
	}
	*nnp = s.no_new_privileges;
	return 0;
}

/* With cl->mu held: keep the node's old handle aside (a caller may hold it), take the new one. */
static int node_adopt(struct mafsbx_cluster *cl, struct cl_node *n, const char *url, struct mafsbx_engine *e,
		      struct mafsbx_freezer *fz, bool nnp)
{
	if (n->e) {
		struct cl_retired *old = calloc(1, sizeof(*old));
		if (!old)
			return -ENOMEM;
		old->e = n->e;
		old->fz = n->fz;
		old->next = cl->retired;
		cl->retired = old;
	}
	n->e = e;
	n->fz = fz;
	n->nnp = nnp;
	n->checked = true;
	n->failed_ms = 0;
	n->info.why[0] = 0;
	snprintf(n->handle_url, sizeof(n->handle_url), "%s", url);
	return 0;
}

static int refuse(struct mafsbx_error *err, const struct mafsbx_cluster_node *i, const char *why)
{
	return mafsbx_error_set_full(err, MAFSBX_EK_UNREACHABLE, ENOTCONN, NULL, "node %s (%s) cannot serve: %s",
				     i->id, i->hostname[0] ? i->hostname : "?", why);
}

int mafsbx_cluster_node_engine(struct mafsbx_cluster *cl, const char *node_id, struct mafsbx_engine **e,
			       struct mafsbx_freezer **fz, bool *nnp, struct mafsbx_cluster_node *info,
			       struct mafsbx_error *err)
{
	int r = mafsbx_cl_nodes_fresh(cl, node_id, err);
	if (r < 0)
		return r;
	struct mafsbx_cluster_node snap;
	char why[256];
	pthread_mutex_lock(&cl->mu);
	struct cl_node *n = mafsbx_cl_node_find(cl, node_id);
	if (n) {
		snap = n->info;
		mafsbx_cl_node_refusal(n, why, sizeof(why));
	}
	bool ready = n && !why[0] && n->checked && strcmp(n->handle_url, n->info.engine_url) == 0;
	if (ready) {
		*e = n->e, *fz = n->fz;
		if (nnp)
			*nnp = n->nnp;
	}
	pthread_mutex_unlock(&cl->mu);
	if (!n)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNREACHABLE, ENOTCONN, NULL,
					     "node %s is not in the swarm's node list (or past %d nodes)", node_id,
					     MAFSBX_CLUSTER_MAX_NODES);
	if (info)
		*info = snap;
	if (why[0])
		return refuse(err, &snap, why);
	if (ready)
		return 0;
	/* open and check outside the lock: another thread may do the same; the first to adopt wins */
	struct mafsbx_engine *ne = NULL;
	struct mafsbx_freezer *nfz = NULL;
	bool nn = false;
	struct mafsbx_error oe;
	if (node_open(cl, node_id, snap.engine_url, &ne, &nfz, &nn, &oe) < 0) {
		pthread_mutex_lock(&cl->mu);
		snprintf(n->info.why, sizeof(n->info.why), "its engine at %s: %s", snap.engine_url, oe.message);
		snprintf(n->handle_url, sizeof(n->handle_url), "%s", snap.engine_url);
		n->checked = false;
		n->failed_ms = mafsbx_now_ms();
		pthread_mutex_unlock(&cl->mu);
		snprintf(why, sizeof(why), "its engine at %s: %s", snap.engine_url, oe.message);
		return refuse(err, &snap, why);
	}
	pthread_mutex_lock(&cl->mu);
	if (n->checked && strcmp(n->handle_url, snap.engine_url) == 0) {
		pthread_mutex_unlock(&cl->mu);
		mafsbx_cl_handle_close(ne, nfz);   /* another thread won */
		return mafsbx_cluster_node_engine(cl, node_id, e, fz, nnp, info, err);
	}
	r = node_adopt(cl, n, snap.engine_url, ne, nfz, nn);
	if (r == 0) {
		*e = ne, *fz = nfz;
		if (nnp)
			*nnp = nn;
	}
	pthread_mutex_unlock(&cl->mu);
	if (r < 0) {
		mafsbx_cl_handle_close(ne, nfz);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	log_info("cluster: node %s (%s) served by its engine at %s", node_id, snap.hostname, snap.engine_url);
	return 0;
}

/* ---- tasks ------------------------------------------------------------------ */

static void copy_field(char *dst, size_t cap, json_t *v)
{
	const char *s = json_string_value(v);
	snprintf(dst, cap, "%s", s ? s : "");
}

int mafsbx_cluster_task(struct mafsbx_cluster *cl, const char *service_id, struct mafsbx_cluster_where *w,
			struct mafsbx_error *err)
{
	memset(w, 0, sizeof(*w));
	__do_json json_t *f = mafsbx_filters_new();
	if (!f || mafsbx_filters_add(f, "service", service_id) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	__do_json json_t *list = NULL;
	int r = mafsbx_task_list(cl->manager, f, &list, err);
	if (r < 0)
		return r;
	/* the newest by its Version.Index: a re-created task of the slot replaces the old one */
	json_t *best = NULL;
	json_int_t best_ix = -1;
	size_t i;
	json_t *t;
	json_array_foreach(list, i, t) {
		json_int_t ix = json_integer_value(json_object_get(json_object_get(t, "Version"), "Index"));
		if (ix > best_ix)
			best = t, best_ix = ix;
	}
	if (!best)
		return mafsbx_error_set(err, MAFSBX_EK_NO_OBJECT, "service %s has no task", service_id);
	json_t *st = json_object_get(best, "Status");
	snprintf(w->service_id, sizeof(w->service_id), "%s", service_id);
	copy_field(w->task_id, sizeof(w->task_id), json_object_get(best, "ID"));
	copy_field(w->node_id, sizeof(w->node_id), json_object_get(best, "NodeID"));
	copy_field(w->container_id, sizeof(w->container_id),
		   json_object_get(json_object_get(st, "ContainerStatus"), "ContainerID"));
	copy_field(w->task_state, sizeof(w->task_state), json_object_get(st, "State"));
	copy_field(w->desired_state, sizeof(w->desired_state), json_object_get(best, "DesiredState"));
	const char *m = json_string_value(json_object_get(st, "Err"));
	if (!m || !*m)
		m = json_string_value(json_object_get(st, "Message"));
	snprintf(w->message, sizeof(w->message), "%s", m ? m : "");
	return 0;
}
