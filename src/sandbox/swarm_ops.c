/*
 * swarm_ops.c: the inventory and the disposals over a swarm (sbx_internal.h):
 * the tree's list from ONE manager call (the services carrying the label
 * filter the single engine uses, with their running task counts), a lookup
 * (the service and its newest task: "running" or "lost"), and the removal of
 * a service, which waits (bounded) until its task's container is gone from
 * its node and then removes the sandbox's network.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "duration.h"
#include "log.h"
#include "sbx_internal.h"

/* ---- removal ------------------------------------------------------------------ */

/*
 * Until the container is gone from its node (or the node cannot be asked: its
 * sandboxes are lost anyway). It is removed there at once, by force, as a
 * disposal on one engine removes it: the swarm's agent alone takes 3 to 6 s
 * to stop and remove a removed service's container (measured on 20.10).
 */
static void wait_container_gone(struct mafsbx_backend *b, const char *node, const char *container, long long deadline)
{
	struct mafsbx_engine *ne;
	struct mafsbx_freezer *nfz;
	struct mafsbx_error e;
	if (!node[0] || !container[0] || mafsbx_cluster_node_engine(b->cluster, node, &ne, &nfz, NULL, NULL, &e) < 0)
		return;
	mafsbx_error_clear(&e);
	if (mafsbx_container_delete(ne, container, true, &e) == 0 || e.kind == MAFSBX_EK_NO_CONTAINER) {
		mafsbx_freeze_forget(nfz, container);
		return;
	}
	while (mafsbx_now_ms() < deadline) {
		json_t *insp = NULL;
		mafsbx_error_clear(&e);
		if (mafsbx_container_inspect(ne, container, &insp, &e) < 0) {
			if (e.kind == MAFSBX_EK_NO_CONTAINER) {
				mafsbx_freeze_forget(nfz, container);
				return;
			}
			if (e.kind == MAFSBX_EK_UNREACHABLE || e.kind == MAFSBX_EK_TIMEOUT)
				return;
		}
		json_decref(insp);
		usleep(100 * 1000);
	}
	log_warn("the container %s of a removed service is still on node %s after %d s", container, node,
		 SBX_SWARM_TASK_WAIT_MS / 1000);
}

/* A service named `name` other than `sid` exists: another mount's acquire of the key, whose network
 * this removal must not take. */
static bool other_service(struct mafsbx_backend *b, const char *name, const char *sid)
{
	__do_json json_t *svc = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_service_inspect(mafsbx_cluster_manager(b->cluster), name, &svc, &e) < 0)
		return false;
	const char *id = json_string_value(json_object_get(svc, "ID"));
	return id && (!sid || strcmp(id, sid) != 0);
}

/*
 * The network goes once no task uses it; the manager may still count the
 * removed task for a moment, and after its answer the manager's own view
 * keeps it for about 2 s more (measured): the call returns once the manager
 * no longer lists it.
 */
static void remove_network(struct mafsbx_backend *b, const char *name, const char *sid, long long deadline)
{
	struct mafsbx_engine *m = mafsbx_cluster_manager(b->cluster);
	bool deleted = false;
	for (;;) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		json_t *n = NULL;
		int r = deleted ? mafsbx_network_inspect(m, name, &n, &e) : mafsbx_network_delete(m, name, &e);
		json_decref(n);
		if (r < 0 && e.kind == MAFSBX_EK_NO_OBJECT)
			return;
		if (r < 0 && !deleted && strcasestr(e.message, "in use") && other_service(b, name, sid)) {
			log_info("network %s: left to the service another acquire of the key made", name);
			return;
		}
		deleted = deleted || r == 0;
		if (mafsbx_now_ms() + 200 > deadline || e.kind == MAFSBX_EK_UNREACHABLE) {
			log_warn("network %s %s", name, deleted ? "is still listed by the manager" : e.message);
			return;
		}
		usleep(200 * 1000);
	}
}

int mafsbx_sbx_swarm_remove(struct mafsbx_backend *b, const char *name, const char *sid, struct mafsbx_error *err)
{
	struct mafsbx_cluster_where w;
	struct mafsbx_error e;
	memset(&w, 0, sizeof(w));
	const char *ref = sid && *sid ? sid : name;
	if (mafsbx_cluster_task(b->cluster, ref, &w, &e) < 0)
		memset(&w, 0, sizeof(w));
	mafsbx_sbx_where_drop(b, name);
	mafsbx_error_clear(&e);
	long long deadline = mafsbx_now_ms() + SBX_SWARM_TASK_WAIT_MS;
	int r = mafsbx_service_delete(mafsbx_cluster_manager(b->cluster), ref, &e);
	if (r < 0 && e.kind != MAFSBX_EK_NO_OBJECT) {
		if (err)
			*err = e;
		return r;
	}
	wait_container_gone(b, w.node_id, w.container_id, deadline);
	remove_network(b, name, sid, deadline);
	if (r < 0)
		return mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "no sandbox named %s", name);
	log_info("sandbox released %s", name);
	return 0;
}

static enum mafsbx_disposal_code code_of(const struct mafsbx_error *e)
{
	if (e->kind == MAFSBX_EK_UNREACHABLE)
		return MAFSBX_DISPOSAL_UNREACHABLE;
	if (e->kind == MAFSBX_EK_TIMEOUT)
		return MAFSBX_DISPOSAL_TIMEOUT;
	return MAFSBX_DISPOSAL_UNKNOWN;
}

/* The instance `want` names service `sid`: its ID, or its current task's container ID (a detached
 * exec's cancel knows the container it ran in). */
static bool instance_is(struct mafsbx_backend *b, const char *sid, const char *want)
{
	if (strcmp(sid, want) == 0)
		return true;
	struct mafsbx_cluster_where w;
	struct mafsbx_error e;
	return mafsbx_is_engine_id(want) && mafsbx_cluster_task(b->cluster, sid, &w, &e) == 0 &&
	       strcmp(w.container_id, want) == 0;
}

/* One service found by name or ID: removed when it is a sandbox (and, with want_id, that instance). */
int mafsbx_sbx_swarm_dispose_one(struct mafsbx_backend *b, const char *ref, const char *want_id,
				 struct mafsbx_dispose_result *res, struct mafsbx_error *err)
{
	__do_json json_t *svc = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_service_inspect(mafsbx_cluster_manager(b->cluster), ref, &svc, &e) < 0) {
		if (e.kind != MAFSBX_EK_NO_OBJECT)
			mafsbx_sbx_result_fail(res, code_of(&e), "%s: %s", ref, e.message);
		return 0;
	}
	const char *id = json_string_value(json_object_get(svc, "ID"));
	json_t *spec = json_object_get(svc, "Spec");
	const char *name = json_string_value(json_object_get(spec, "Name"));
	json_t *labels = json_object_get(spec, "Labels");
	if (!id || !name || (want_id && !instance_is(b, id, want_id)))
		return 0;   /* another instance holds the name now: not ours to remove */
	if (!mafsbx_is_workload_name(name) || !mafsbx_has_identity_labels(labels))
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EACCES, "PermissionError",
					     "%s is not a sandbox (it lacks the identity labels); it is left alone", ref);
	mafsbx_error_clear(&e);
	if (mafsbx_sbx_swarm_remove(b, name, id, &e) == 0)
		res->disposed++;
	else if (e.kind != MAFSBX_EK_NO_CONTAINER)
		mafsbx_sbx_result_fail(res, code_of(&e), "%s: %s", name, e.message);
	return 0;
}

void mafsbx_sbx_swarm_purge(struct mafsbx_backend *b, const char *const *labels, size_t n_labels,
			    const char *fallback, const char *only_id, struct mafsbx_dispose_result *res)
{
	__do_json json_t *filters = mafsbx_filters_new();
	__do_json json_t *list = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = filters ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < n_labels; i++)
		r = mafsbx_filters_add(filters, "label", labels[i]);
	if (r < 0) {
		mafsbx_sbx_result_fail(res, MAFSBX_DISPOSAL_UNKNOWN, "out of memory");
		return;
	}
	if (mafsbx_service_list(mafsbx_cluster_manager(b->cluster), filters, &list, &e) < 0) {
		mafsbx_sbx_result_fail(res, code_of(&e), "listing the sandboxes: %s", e.message);
		if (fallback && *fallback)
			mafsbx_sbx_swarm_dispose_one(b, fallback, NULL, res, NULL);
		return;
	}
	size_t i;
	json_t *s;
	json_array_foreach(list, i, s) {
		const char *id = json_string_value(json_object_get(s, "ID"));
		if (id && (!only_id || strcmp(id, only_id) == 0))
			mafsbx_sbx_swarm_dispose_one(b, id, id, res, NULL);
	}
}

/* ---- the inventory ------------------------------------------------------------ */

const char *mafsbx_swarm_service_state(json_t *svc)
{
	if (json_integer_value(json_object_get(json_object_get(svc, "ServiceStatus"), "RunningTasks")) > 0)
		return "running";
	struct mafsbx_time t = { 0, 0 };
	const char *created = json_string_value(json_object_get(svc, "CreatedAt"));
	bool young = created && mafsbx_time_parse(created, &t, NULL) == 0 &&
		     (long long)time(NULL) - (long long)t.sec < SBX_SWARM_TASK_WAIT_MS / 1000;
	return young ? "pending" : "lost";
}

/* A listed service as the tree shows it: its state of mafsbx_swarm_service_state. */
static int info_of_service(struct mafsbx_backend *b, json_t *s, const char *state, struct mafsbx_sandbox_info *i)
{
	json_t *spec = json_object_get(s, "Spec");
	const char *name = json_string_value(json_object_get(spec, "Name"));
	json_t *labels = json_object_get(spec, "Labels");
	const char *image = json_string_value(
		json_object_get(json_object_get(json_object_get(spec, "TaskTemplate"), "ContainerSpec"), "Image"));
	struct mafsbx_time t = { 0, 0 };
	const char *created = json_string_value(json_object_get(s, "CreatedAt"));
	if (created && mafsbx_time_parse(created, &t, NULL) < 0)
		t.sec = 0;
	/* closed egress: the sandbox's internal network stands where the single engine has "none" */
	return mafsbx_sbx_fill_info(b, i, name, json_string_value(json_object_get(s, "ID")), state, false, t.sec, image,
				    labels, "none");
}

static bool service_selected(json_t *s, const char *const want[3])
{
	static const char *const keys[3] = { MAFSBX_LABEL_SCOPE, MAFSBX_LABEL_THREAD, MAFSBX_LABEL_AGENT };
	json_t *spec = json_object_get(s, "Spec");
	const char *name = json_string_value(json_object_get(spec, "Name"));
	json_t *labels = json_object_get(spec, "Labels");
	if (!name || !mafsbx_is_workload_name(name) || !mafsbx_has_identity_labels(labels) ||
	    json_object_get(labels, MAFSBX_LABEL_ROLE))
		return false;
	for (size_t k = 0; k < 3; k++) {
		const char *v = json_string_value(json_object_get(labels, keys[k]));
		if (want[k] && (!v || strcmp(v, want[k]) != 0))
			return false;
	}
	return true;
}

/* The listing's accumulator: each streamed service checked and kept as it comes. */
struct swarm_acc {
	struct mafsbx_backend *b;
	const char *const *want;
	unsigned limit;
	size_t listed;
	struct mafsbx_sandbox_info *a;
	size_t n, cap;
};

static int swarm_list_one(json_t *s, void *ctx)
{
	struct swarm_acc *acc = ctx;
	acc->listed++;
	if ((acc->limit && acc->n >= acc->limit) || !service_selected(s, acc->want))
		return 0;
	if (mafsbx_array_grow(&acc->a, &acc->cap, acc->n + 1, sizeof(*acc->a), 64, 0) < 0 ||
	    info_of_service(acc->b, s, mafsbx_swarm_service_state(s), &acc->a[acc->n]) < 0)
		return -ENOMEM;
	acc->n++;
	return 0;
}

int mafsbx_sbx_swarm_list(struct mafsbx_backend *b, const char *const want[3], unsigned limit, size_t *listed,
			  struct mafsbx_sandbox_info **out, size_t *n, struct mafsbx_error *err)
{
	*out = NULL;
	*n = 0;
	__do_json json_t *filters = mafsbx_list_filters(want);
	if (!filters)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	/* streamed: one service parsed at a time, and only the members read here */
	struct swarm_acc acc = { .b = b, .want = want, .limit = limit };
	int r = mafsbx_service_list_each(mafsbx_cluster_manager(b->cluster), filters, swarm_list_one, &acc, err);
	if (r < 0) {
		mafsbx_sandbox_info_free_array(acc.a, acc.n);
		return r;
	}
	if (listed)
		*listed = acc.listed;
	*out = acc.a;
	*n = acc.n;
	return 0;
}

/* The service's newest task is on a node (a task on a node that died is lost, not pending). */
static bool placed(struct mafsbx_backend *b, json_t *svc)
{
	const char *id = json_string_value(json_object_get(svc, "ID"));
	struct mafsbx_cluster_where w;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = id ? mafsbx_cluster_task(b->cluster, id, &w, &e) : -1;
	return r == 0 ? w.node_id[0] != 0 : e.kind != MAFSBX_EK_NO_OBJECT;
}

int mafsbx_sbx_swarm_lookup(struct mafsbx_backend *b, const char *name, struct mafsbx_sandbox_info *out,
			    struct mafsbx_error *err)
{
	__do_json json_t *svc = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_service_inspect(mafsbx_cluster_manager(b->cluster), name, &svc, &e) < 0) {
		if (e.kind == MAFSBX_EK_NO_OBJECT)
			return mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "no sandbox named %s", name);
		if (err)
			*err = e;
		return -mafsbx_error_errno(&e, EIO);
	}
	const char *const any[3] = { NULL, NULL, NULL };
	if (!service_selected(svc, any))
		return mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "%s is not a sandbox", name);
	/* "running" only when the task runs on a node that can serve it */
	struct mafsbx_serving sv;
	bool running = mafsbx_backend_serving(b, name, &sv, &e) == 0;
	const char *state = running ? "running" : "lost";
	if (!running && strcmp(mafsbx_swarm_service_state(svc), "pending") == 0 && !placed(b, svc))
		state = "pending";   /* a young service whose task no node holds yet: not lost */
	if (info_of_service(b, svc, state, out) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return 0;
}
