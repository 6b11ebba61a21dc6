/*
 * cluster_cli.c: the shell verbs over a swarm (mafsbxfs(1) CLUSTER): `mafsbx
 * --cluster swarm VERB` or MAFSBX_CLUSTER=swarm makes -H name a swarm
 * manager. acquire, exec and dispose then run through the backend's cluster
 * form (as a mount with -o cluster=swarm does); `ls` reads the manager's
 * service list (one call) shaped as the container list it reads on one
 * engine; `reap` removes the sandbox services older than its cutoff, each
 * through the backend's disposal (its task's container and its network go
 * too).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cluster.h"
#include "duration.h"
#include "mafsbx.h"
#include "sandbox.h"

bool cli_clustered(void)
{
	const char *c = getenv(MAFSBX_CLUSTER_ENV);
	return c && strcmp(c, "swarm") == 0;
}

int cli_cluster_check_env(void)
{
	const char *c = getenv(MAFSBX_CLUSTER_ENV);
	if (c && *c && strcmp(c, "swarm") != 0)
		return cli_usage_error(NULL, "%s=%s: the only cluster is 'swarm'", MAFSBX_CLUSTER_ENV, c);
	return MAFSBX_EXIT_OK;
}

struct mafsbx_cluster *cli_cluster_attach(struct mafsbx_engine *e, struct mafsbx_backend *b, int *code)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	struct mafsbx_cluster *cl = mafsbx_cluster_new(e, mafsbx_engine_endpoint(e), NULL, &err);
	if (cl && mafsbx_backend_set_cluster(b, cl, NULL, 0, &err) == 0)
		return cl;
	cli_error("cluster=swarm: %s", err.message);
	mafsbx_cluster_free(cl);
	*code = err.kind == MAFSBX_EK_UNREACHABLE || err.kind == MAFSBX_EK_TIMEOUT ? MAFSBX_EXIT_ENGINE
										   : MAFSBX_EXIT_FAILURE;
	return NULL;
}

/* A service as the entry of a container list: Names, Id, State, Image, Labels, Created. */
static json_t *as_container(json_t *svc)
{
	json_t *spec = json_object_get(svc, "Spec");
	const char *name = json_string_value(json_object_get(spec, "Name"));
	const char *id = json_string_value(json_object_get(svc, "ID"));
	const char *image = json_string_value(
		json_object_get(json_object_get(json_object_get(spec, "TaskTemplate"), "ContainerSpec"), "Image"));
	json_t *labels = json_object_get(spec, "Labels");
	struct mafsbx_time t = { 0, 0 };
	const char *created = json_string_value(json_object_get(svc, "CreatedAt"));
	if (created && mafsbx_time_parse(created, &t, NULL) < 0)
		t.sec = 0;
	if (!name || !id || !json_is_object(labels))
		return NULL;
	char slash[MAFSBX_NAME_LEN + 2];
	snprintf(slash, sizeof(slash), "/%s", name);
	return json_pack("{s:[s], s:s, s:s, s:s, s:O, s:I}", "Names", slash, "Id", id, "State",
			 mafsbx_swarm_service_state(svc), "Image", image ? image : "", "Labels", labels, "Created",
			 (json_int_t)t.sec);
}

struct as_container_each {
	mafsbx_list_each_fn each;
	void *ctx;
};

/* One streamed service handed on as the container list entry it stands for. */
static int service_each(json_t *s, void *ctx)
{
	struct as_container_each *ace = ctx;
	json_t *c = as_container(s);
	if (!c)
		return 0;
	int r = ace->each(c, ace->ctx);
	json_decref(c);
	return r < 0 ? -ENOMEM : 0;
}

int cli_cluster_list_each(struct mafsbx_engine *e, const json_t *filters, mafsbx_list_each_fn each, void *ctx,
			  struct mafsbx_error *err)
{
	struct as_container_each ace = { .each = each, .ctx = ctx };
	return mafsbx_service_list_each(e, filters, service_each, &ace, err);
}

/* The sandbox services of `scope` (NULL: all) created before now - older_than_s, as "ID NAME" lines. */
static int reap_pick(struct mafsbx_engine *e, const char *scope, int64_t older_than_s, json_t **picked,
		     struct mafsbx_error *err)
{
	char lv[MAFSBX_LABEL_VALUE_MAX + 1];
	if (scope)
		mafsbx_label_value(scope, lv);
	const char *const want[3] = { scope ? lv : NULL, NULL, NULL };
	__do_json json_t *filters = mafsbx_list_filters(want);
	__do_json json_t *list = NULL;
	if (!filters || !(*picked = json_array()))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	int r = mafsbx_service_list(e, filters, &list, err);
	if (r < 0)
		return r;
	int64_t cutoff = (int64_t)time(NULL) - older_than_s;
	size_t i;
	json_t *s;
	json_array_foreach(list, i, s) {
		__do_json json_t *c = as_container(s);
		const char *name = c ? json_string_value(json_array_get(json_object_get(c, "Names"), 0)) + 1 : NULL;
		if (!c || !mafsbx_is_workload_name(name) || !mafsbx_has_identity_labels(json_object_get(c, "Labels")) ||
		    json_object_get(json_object_get(c, "Labels"), MAFSBX_LABEL_ROLE) ||
		    json_integer_value(json_object_get(c, "Created")) >= cutoff)
			continue;
		if (json_array_append_new(*picked, json_pack("{s:s, s:s}", "name", name, "id",
							     json_string_value(json_object_get(c, "Id")))) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	return 0;
}

int cli_cluster_reap(struct mafsbx_backend *b, const char *scope, int64_t older_than_s, bool dry_run, bool json)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	json_t *picked = NULL;
	if (reap_pick(mafsbx_backend_engine(b), scope, older_than_s, &picked, &err) < 0) {
		json_decref(picked);
		cli_error("reap: nothing was deleted: %s", err.message);
		return err.kind == MAFSBX_EK_NOMEM ? MAFSBX_EXIT_FAILURE : MAFSBX_EXIT_ENGINE;
	}
	size_t removed = 0, failed = 0, i;
	json_t *p;
	json_array_foreach(picked, i, p) {
		const char *name = json_string_value(json_object_get(p, "name"));
		const char *id = json_string_value(json_object_get(p, "id"));
		struct mafsbx_dispose_result dr = { 0 };
		bool ok = dry_run || (mafsbx_sandbox_dispose_id(b, name, id, &dr, &err) == 0 && dr.n_failures == 0);
		if (!ok)
			cli_error("reap: %s: %s", name, dr.n_failures ? dr.failures[0].detail : err.message);
		json_object_set_new(p, "removed", json_boolean(ok && !dry_run));
		mafsbx_dispose_result_free(&dr);
		ok ? removed++ : failed++;
	}
	if (json) {
		json_t *o = json_pack("{s:b, s:O, s:I}", "dry_run", dry_run, "services", picked, "failures",
				      (json_int_t)failed);
		char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (text)
			printf("%s\n", text);
		free(text);
		json_decref(o);
	} else {
		printf("reap: %s %zu sandbox service(s)%s\n", dry_run ? "would remove" : "removed", removed,
		       failed ? ", some failed" : "");
	}
	fflush(stdout);
	json_decref(picked);
	return failed ? MAFSBX_EXIT_FAILURE : MAFSBX_EXIT_OK;
}
