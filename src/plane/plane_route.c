/*
 * plane_route.c: the planes over a swarm (sandbox.h mafsbx_backend_serving).
 * A sandbox's files are served by the planes of the node its task runs on:
 * one set of planes per node engine (its own freezer, bursts and pins; its
 * spools charged to the mount's one budget), made on first use, and the target rewritten to the task's
 * container. On one engine nothing is rewritten. The local plane applies
 * only where the node's engine is reached through a unix socket here (its
 * processes are then this host's, which the pin checks); otherwise the
 * engine plane serves.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plane_internal.h"
#include "sandbox.h"

void mafsbx_plane_route_free(struct mafsbx_planes *ps)
{
	while (ps->nodes) {
		struct plane_node *n = ps->nodes;
		ps->nodes = n->next;
		mafsbx_planes_free(n->ps);
		free(n);
	}
}

/* The planes over the engine `sv` names, made on first use (under ps->mu). */
static struct mafsbx_planes *node_planes(struct mafsbx_planes *ps, const struct mafsbx_serving *sv,
					 struct mafsbx_error *err)
{
	pthread_mutex_lock(&ps->mu);
	for (struct plane_node *n = ps->nodes; n; n = n->next)
		if (n->engine == sv->engine) {
			pthread_mutex_unlock(&ps->mu);
			return n->ps;
		}
	struct mafsbx_plane_config cfg = ps->cfg;
	cfg.endpoint_local = sv->local;
	if (!sv->local && cfg.mode == MAFSBX_PLANE_LOCAL)
		cfg.mode = MAFSBX_PLANE_ENGINE;
	struct plane_node *n = calloc(1, sizeof(*n));
	if (n && !(n->ps = mafsbx_planes_new(sv->engine, sv->fz, sv->backend, &cfg, err))) {
		free(n);
		n = NULL;
	} else if (!n) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	if (n) {
		/* one spool budget for the mount, not one per node (plane.h) */
		mafsbx_planes_share_spool(n->ps, ps);
		n->engine = sv->engine;
		n->next = ps->nodes;
		ps->nodes = n;
	}
	pthread_mutex_unlock(&ps->mu);
	return n ? n->ps : NULL;
}

int mafsbx_plane_route(struct mafsbx_planes **ps, const struct mafsbx_plane_target **t, struct plane_routed *buf,
		       struct mafsbx_error *err)
{
	if (!(*ps)->backend || !mafsbx_backend_clustered((*ps)->backend))
		return 0;
	struct mafsbx_serving sv;
	int r = mafsbx_backend_serving((*ps)->backend, (*t)->name, &sv, err);
	if (r < 0)
		return r;
	struct mafsbx_planes *np = node_planes(*ps, &sv, err);
	if (!np)
		return -mafsbx_error_errno(err, ENOMEM);
	snprintf(buf->id, sizeof(buf->id), "%s", sv.container);
	buf->t = **t;
	buf->t.id = buf->id;
	buf->t.name = buf->id;
	*ps = np;
	*t = &buf->t;
	return 0;
}
