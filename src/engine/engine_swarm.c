/*
 * engine_swarm.c: the Swarm calls of engine.h, asked of a manager: services
 * (create, inspect, list, delete), the tasks of services, the nodes, and the
 * swarm facts of an engine's /info (its node ID, its security options). The
 * cluster layer (src/cluster/) builds on these; like every engine call they
 * carry the handle's timeouts, and only this file builds their URLs.
 */
#include "engine.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "engine_internal.h"

/* A swarm object ID: 25 lowercase letters and digits (swarmkit's identity.NewID), at most 64 here. */
static bool swarm_id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

int mafsbx_service_create(struct mafsbx_engine *e, const json_t *spec, char id[65], struct mafsbx_error *err)
{
	if (!e || !json_is_object(spec) || !id)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "create service: bad arguments");
	const char *name = json_string_value(json_object_get(spec, "Name"));
	char what[320];
	snprintf(what, sizeof(what), "create service %s", name ? name : "");
	int r;
	__do_free char *body = mafsbx_eng_dump_json(spec);
	if (!body)
		return mafsbx_eng_nomem(err);
	__do_free char *t = mafsbx_eng_target(e, err, &r, "/services/create");
	if (!t)
		return r;
	json_t *j = NULL;
	struct call c = { .method = "POST", .target = t, .ctype = "application/json", .body = body,
			  .body_len = strlen(body), .what = what, .ok = { 201, 200 }, .out = &j };
	if ((r = mafsbx_eng_do_call(e, &c, err)) < 0)
		return r;
	/* the service's ID is "ID" (a container's is "Id") */
	const char *s = json_string_value(json_object_get(j, "ID"));
	if (!swarm_id_ok(s)) {
		json_decref(j);
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "%s: answer has no valid ID", what);
	}
	snprintf(id, 65, "%s", s);
	json_decref(j);
	return 0;
}

int mafsbx_service_inspect(struct mafsbx_engine *e, const char *service, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "inspect service: bad arguments");
	struct obj_call o = { .verb = "inspect service", .ref = service, .head = "/services/",
			      .c = { .method = "GET", .ok = { 200 }, .out = out }, .want = ANSWER_OBJECT };
	return mafsbx_eng_obj_call(e, &o, err);
}

int mafsbx_service_list(struct mafsbx_engine *e, const json_t *filters, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list services: bad arguments");
	/* status=true (API 1.41): each service's running and desired task counts, in the same answer */
	return mafsbx_eng_list_call(e, "/services?status=true", filters, false, "list services", out, err);
}

/* The members of a service the listings read; Version, UpdatedAt and
 * Endpoint are passed over unparsed (listreader.h). */
static const char *const service_keys[] = { "ID", "CreatedAt", "Spec", "ServiceStatus", NULL };

struct service_stream {
	const char *target;
	mafsbx_list_each_fn each;
	void *ctx;
};

static int service_stream_once(struct mafsbx_engine *e, const void *arg, struct mafsbx_error *err)
{
	const struct service_stream *ss = arg;
	return mafsbx_eng_list_stream(e, ss->target, "list services", service_keys, ss->each, ss->ctx, err);
}

int mafsbx_service_list_each(struct mafsbx_engine *e, const json_t *filters, mafsbx_list_each_fn each, void *ctx,
			     struct mafsbx_error *err)
{
	if (!e || !each || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list services: bad arguments");
	__do_free char *f = NULL;
	if (filters && json_object_size(filters) && !(f = mafsbx_filters_encode(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list services: filters cannot be encoded");
	int r;
	/* status=true as mafsbx_service_list; streamed, so no whole-answer bound and no whole tree */
	__do_free char *t = mafsbx_eng_target(e, err, &r, "/services?status=true%s%s", f ? "&filters=" : "", f ? f : "");
	if (!t)
		return r;
	struct service_stream ss = { .target = t, .each = each, .ctx = ctx };
	return mafsbx_eng_retrying(e, "list services", service_stream_once, &ss, err);
}

int mafsbx_service_delete(struct mafsbx_engine *e, const char *service, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "delete service: no engine");
	struct obj_call o = { .verb = "delete service", .ref = service, .head = "/services/",
			      .c = { .method = "DELETE", .ok = { 200, 204 } } };
	return mafsbx_eng_obj_call(e, &o, err);
}

int mafsbx_task_list(struct mafsbx_engine *e, const json_t *filters, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list tasks: bad arguments");
	return mafsbx_eng_list_call(e, "/tasks", filters, false, "list tasks", out, err);
}

int mafsbx_node_list(struct mafsbx_engine *e, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list nodes: bad arguments");
	return mafsbx_eng_list_call(e, "/nodes", NULL, false, "list the swarm's nodes", out, err);
}

int mafsbx_engine_swarm_facts(struct mafsbx_engine *e, struct mafsbx_engine_swarm *s, struct mafsbx_error *err)
{
	if (!e || !s)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine swarm facts: bad arguments");
	json_t *j = NULL;
	int r = mafsbx_eng_get_json(e, "/info", e->to.request_ms, "read the engine's swarm facts", &j, err);
	if (r < 0)
		return r;
	memset(s, 0, sizeof(*s));
	json_t *sw = json_object_get(j, "Swarm");
	const char *nid = json_string_value(json_object_get(sw, "NodeID"));
	const char *state = json_string_value(json_object_get(sw, "LocalNodeState"));
	const char *name = json_string_value(json_object_get(j, "Name"));
	if (nid && swarm_id_ok(nid))
		snprintf(s->node_id, sizeof(s->node_id), "%s", nid);
	snprintf(s->state, sizeof(s->state), "%s", state ? state : "");
	snprintf(s->hostname, sizeof(s->hostname), "%s", name ? name : "");
	s->manager = json_is_true(json_object_get(sw, "ControlAvailable"));
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(j, "SecurityOptions"), i, v) {
		const char *o = json_string_value(v);
		if (o && strcmp(o, "name=no-new-privileges") == 0)
			s->no_new_privileges = true;
	}
	json_decref(j);
	return 0;
}
