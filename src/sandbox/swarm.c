/*
 * swarm.c: the sandbox backend over a swarm (sandbox.h mafsbx_backend_set_cluster).
 * A sandbox is a service named as upstream names the container, with
 * upstream's labels on the service and on its container, one replica that
 * is never restarted, every hardening the single engine gives its
 * containers, and an internal overlay network of its own for closed egress.
 * The manager's name uniqueness is the lock of get-or-create across hosts.
 * Once the task runs, the node's engine serves it: this file owns the seam
 * "which engine serves this sandbox" (a backend per node engine, and the
 * cache of where each service's task runs) and the acquire.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "log.h"
#include "sbx_internal.h"

int mafsbx_backend_set_cluster(struct mafsbx_backend *b, struct mafsbx_cluster *cl, const char *const *placement,
			       size_t n_placement, struct mafsbx_error *err)
{
	if (!b || !cl)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "cluster: no backend or cluster");
	int r = mafsbx_cluster_check_manager(cl, b->cluster_api, err);
	if (r < 0)
		return r;
	if (n_placement && !(b->placement = calloc(n_placement, sizeof(char *))))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	for (size_t i = 0; i < n_placement; i++, b->n_placement++)
		if (!(b->placement[i] = strdup(placement[i])))
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	b->cluster = cl;
	return 0;
}

bool mafsbx_backend_clustered(const struct mafsbx_backend *b)
{
	return b && b->cluster;
}

void mafsbx_sbx_swarm_free(struct mafsbx_backend *b)
{
	while (b->nodes) {
		struct sbx_node *n = b->nodes;
		b->nodes = n->next;
		mafsbx_backend_free(n->nb);
		free(n);
	}
	while (b->wheres) {
		struct sbx_where *w = b->wheres;
		b->wheres = w->next;
		free(w);
	}
	for (size_t i = 0; i < b->n_placement; i++)
		free(b->placement[i]);
	free(b->placement);
}

int mafsbx_sbx_node_backend(struct mafsbx_backend *b, const char *node_id, struct mafsbx_backend **nb,
			    struct mafsbx_error *err)
{
	struct mafsbx_engine *e;
	struct mafsbx_freezer *fz;
	int r = mafsbx_cluster_node_engine(b->cluster, node_id, &e, &fz, NULL, NULL, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&b->mu);
	for (struct sbx_node *n = b->nodes; n; n = n->next)
		if (strcmp(n->node_id, node_id) == 0 && n->nb->engine == e) {
			*nb = n->nb;
			pthread_mutex_unlock(&b->mu);
			return 0;
		}
	/* a new node, or its engine changed: a backend for that engine (the old one stays: callers may hold it) */
	struct sbx_node *n = calloc(1, sizeof(*n));
	if (n && !(n->nb = mafsbx_backend_new(e, fz, &b->cfg, err))) {
		free(n);
		pthread_mutex_unlock(&b->mu);
		return -mafsbx_error_errno(err, EIO);
	}
	if (n) {
		snprintf(n->node_id, sizeof(n->node_id), "%s", node_id);
		n->next = b->nodes;
		b->nodes = n;
		*nb = n->nb;
	}
	pthread_mutex_unlock(&b->mu);
	return n ? 0 : mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
}

/* ---- where a service's task runs ------------------------------------------ */

static struct sbx_where *where_find(struct mafsbx_backend *b, const char *name_or_id)
{
	for (struct sbx_where *w = b->wheres; w; w = w->next)
		if (strcmp(w->name, name_or_id) == 0 || strcmp(w->service_id, name_or_id) == 0)
			return w;
	return NULL;
}

void mafsbx_sbx_where_put(struct mafsbx_backend *b, const char *name, const char *service_id, const char *node_id,
			  const char *container_id)
{
	pthread_mutex_lock(&b->mu);
	struct sbx_where *w = where_find(b, service_id);
	if (!w && b->n_wheres >= SBX_WHERES_MAX) {
		/* bounded: the least recently used entry makes room (it is asked again when next used) */
		struct sbx_where **victim = &b->wheres;
		for (struct sbx_where **pp = &b->wheres; *pp; pp = &(*pp)->next)
			if ((*pp)->used < (*victim)->used)
				victim = pp;
		w = *victim;
		*victim = w->next;
		b->n_wheres--;
		memset(w, 0, sizeof(*w));
	} else if (!w) {
		w = calloc(1, sizeof(*w));   /* out of memory: nothing cached, the manager is asked each time */
	}
	if (w && !w->service_id[0]) {
		w->next = b->wheres;
		b->wheres = w;
		b->n_wheres++;
	}
	if (w) {
		snprintf(w->name, sizeof(w->name), "%s", name);
		snprintf(w->service_id, sizeof(w->service_id), "%s", service_id);
		snprintf(w->node_id, sizeof(w->node_id), "%s", node_id);
		snprintf(w->container_id, sizeof(w->container_id), "%s", container_id);
		w->used = ++b->tick;
		w->asked_ms = mafsbx_now_ms();
	}
	pthread_mutex_unlock(&b->mu);
}

void mafsbx_sbx_where_drop(struct mafsbx_backend *b, const char *name_or_id)
{
	pthread_mutex_lock(&b->mu);
	for (struct sbx_where **pp = &b->wheres; *pp;) {
		struct sbx_where *w = *pp;
		if (strcmp(w->name, name_or_id) == 0 || strcmp(w->service_id, name_or_id) == 0) {
			*pp = w->next;
			free(w);
			b->n_wheres--;
		} else {
			pp = &w->next;
		}
	}
	pthread_mutex_unlock(&b->mu);
}

void mafsbx_backend_serving_forget(struct mafsbx_backend *b, const char *name)
{
	if (b && b->cluster && name)
		mafsbx_sbx_where_drop(b, name);
}

/* The manager's word on where `name` runs. EK_UNREACHABLE "lost" (*lost set) when its task does not run. */
static int where_ask(struct mafsbx_backend *b, const char *name, struct sbx_where *out, bool *lost,
		     struct mafsbx_error *err)
{
	*lost = false;
	struct mafsbx_cluster_where w;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_cluster_task(b->cluster, name, &w, &e);
	if (r < 0 && (e.kind == MAFSBX_EK_NO_OBJECT || e.kind == MAFSBX_EK_NO_CONTAINER))
		return mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "no sandbox named %s", name);
	if (r < 0) {
		if (err)
			*err = e;
		return r;
	}
	*lost = strcmp(w.task_state, "running") != 0 || !w.container_id[0] || !w.node_id[0];
	if (*lost)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNREACHABLE, ENOTCONN, NULL,
					     "sandbox %s is lost: its task is %s%s%s (acquire it again to make it anew)",
					     name, w.task_state, w.message[0] ? ": " : "", w.message);
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	snprintf(out->service_id, sizeof(out->service_id), "%s", w.service_id);
	snprintf(out->node_id, sizeof(out->node_id), "%s", w.node_id);
	snprintf(out->service_id, sizeof(out->service_id), "%s", w.service_id);
	snprintf(out->container_id, sizeof(out->container_id), "%s", w.container_id);
	return 0;
}

int mafsbx_backend_serving(struct mafsbx_backend *b, const char *name, struct mafsbx_serving *out,
			   struct mafsbx_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!b || !name || !*name)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "serving: no sandbox named");
	if (!b->cluster) {
		out->backend = b;
		out->engine = b->engine;
		out->fz = b->fz;
		snprintf(out->container, sizeof(out->container), "%s", name);
		return 0;
	}
	struct sbx_where w;
	pthread_mutex_lock(&b->mu);
	struct sbx_where *c = where_find(b, name);
	if (c) {
		c->used = ++b->tick;
		w = *c;
	}
	pthread_mutex_unlock(&b->mu);
	int r = 0;
	if (!c || mafsbx_now_ms() - w.asked_ms > SBX_WHERE_TTL_MS) {
		struct sbx_where fresh;
		struct mafsbx_error ae;
		mafsbx_error_clear(&ae);
		bool lost;
		r = where_ask(b, name, &fresh, &lost, &ae);
		/* the manager out of reach: a task it placed before keeps being served from its node */
		bool keep = r < 0 && c && !lost && (ae.kind == MAFSBX_EK_TIMEOUT || ae.kind == MAFSBX_EK_UNREACHABLE);
		if (r < 0 && !keep) {
			if (c)
				mafsbx_sbx_where_drop(b, name);
			if (err)
				*err = ae;
			return r;
		}
		if (r == 0) {
			w = fresh;
			mafsbx_sbx_where_put(b, w.name, w.service_id, w.node_id, w.container_id);
		}
	}
	struct mafsbx_cluster_node ni;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_cluster_node_engine(b->cluster, w.node_id, &out->engine, &out->fz, NULL, &ni, &e) < 0 ||
	    mafsbx_sbx_node_backend(b, w.node_id, &out->backend, &e) < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNREACHABLE, ENOTCONN, NULL, "sandbox %s is lost: %s", name,
					     e.message);
	snprintf(out->container, sizeof(out->container), "%s", w.container_id);
	snprintf(out->node_id, sizeof(out->node_id), "%s", w.node_id);
	/* the instance a timeout's disposal removes (exec.c): without it the disposal matched no service */
	snprintf(out->service_id, sizeof(out->service_id), "%s", w.service_id);
	snprintf(out->hostname, sizeof(out->hostname), "%s", ni.hostname);
	out->local = mafsbx_engine_endpoint(out->engine)->scheme == MAFSBX_EP_UNIX;
	return 0;
}
