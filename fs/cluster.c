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
	if (fs->opt.placement && !copy)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory"), -1;
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
