/*
 * cluster.c: -o cluster=swarm (mafsbxfs(1) CLUSTER): the engine -H names is a
 * swarm manager; the cluster's node map (src/cluster/) is made over it and
 * handed to the backend, whose planes then serve each sandbox from its
 * node's engine. Nothing else in fs/ changes with a cluster.
 */
#include "mfs.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "log.h"
#include "sandbox.h"

int mfs_cluster_open(struct mfs *fs, struct mafsbx_error *err)
{
	if (!fs->opt.cluster)
		return 0;
	fs->cluster = mafsbx_cluster_new(fs->engine, &fs->ep, NULL, err);
	if (!fs->cluster)
		return -1;
	/* -o placement: constraints separated by ';' (a ',' would end the -o option) */
	char *copy = fs->opt.placement ? strdup(fs->opt.placement) : NULL;
	const char *c[32];
	size_t n = 0;
	if (fs->opt.placement && !copy) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return -1;
	}
	char *save = NULL;
	for (char *p = copy ? strtok_r(copy, ";", &save) : NULL; p; p = strtok_r(NULL, ";", &save)) {
		if (n == 32) {
			free(copy);
			mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o placement: at most 32 constraints");
			return -1;
		}
		c[n++] = p;
	}
	int r = mafsbx_backend_set_cluster(fs->backend, fs->cluster, c, n, err);
	free(copy);
	if (r < 0)
		return -1;
	log_info("cluster=swarm: the manager at %s; %zu placement constraint(s)", fs->ep.url, n);
	return 0;
}

void mfs_cluster_close(struct mfs *fs)
{
	mafsbx_cluster_free(fs->cluster);
	fs->cluster = NULL;
}

int mfs_cluster_status(struct mfs *fs, const char *name, json_t *o)
{
	if (!fs->cluster)
		return 0;
	struct mafsbx_serving sv;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_backend_serving(fs->backend, name, &sv, &e) < 0)
		return json_object_set_new(o, "lost", mfs_json_text(e.message));
	return json_object_set_new(o, "node", json_pack("{s:s, s:s}", "id", sv.node_id, "hostname", sv.hostname));
}

int mfs_cluster_engine(struct mfs *fs, json_t *o)
{
	if (!fs->cluster)
		return 0;
	struct mafsbx_cluster_node *nodes = NULL;
	size_t n = 0;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	json_t *c = json_pack("{s:s}", "kind", "swarm");
	if (!c)
		return -1;
	int bad = 0;
	if (mafsbx_cluster_nodes(fs->cluster, &nodes, &n, &e) < 0) {
		bad |= json_object_set_new(c, "nodes_error", mfs_json_text(e.message));
	} else {
		json_t *a = json_array();
		for (size_t i = 0; a && i < n; i++) {
			const struct mafsbx_cluster_node *x = &nodes[i];
			json_t *j = json_pack("{s:s, s:o, s:o, s:s, s:s, s:b}", "id", x->id, "hostname",
					      mfs_json_text(x->hostname), "engine", mfs_json_text(x->engine_url), "state",
					      x->state, "availability", x->availability, "usable", x->usable);
			if (j && !x->usable)
				bad |= json_object_set_new(j, "why", mfs_json_text(x->why));
			bad |= j ? json_array_append_new(a, j) : -1;
		}
		bad |= a ? json_object_set_new(c, "nodes", a) : -1;
	}
	free(nodes);
	bad |= json_object_set_new(o, "cluster", c);
	return bad ? -1 : 0;
}
