/*
 * engine_networks.c: the network calls of engine.h: create, inspect, list,
 * delete and connect a container.
 */
#include "engine.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "engine_internal.h"

/* ---- networks ------------------------------------------------------------ */

int mafsbx_network_create(struct mafsbx_engine *e, const json_t *config, char id[65], struct mafsbx_error *err)
{
	if (!e || !json_is_object(config) || !id)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "create network: bad arguments");
	const char *name = json_string_value(json_object_get(config, "Name"));
	char what[320];
	snprintf(what, sizeof(what), "create network %s", name ? name : "");
	int r;
	__do_free char *body = mafsbx_eng_dump_json(config);
	if (!body)
		return mafsbx_eng_nomem(err);
	__do_free char *t = mafsbx_eng_target(e, err, &r, "/networks/create");
	if (!t)
		return r;
	return mafsbx_eng_create_call(e, t, body, what, 201, 200, id, err);
}

int mafsbx_network_inspect(struct mafsbx_engine *e, const char *network, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "inspect network: bad arguments");
	struct obj_call o = { .verb = "inspect network", .ref = network, .head = "/networks/",
			      .c = { .method = "GET", .ok = { 200 }, .out = out }, .want = ANSWER_OBJECT };
	return mafsbx_eng_obj_call(e, &o, err);
}

int mafsbx_network_list(struct mafsbx_engine *e, const json_t *filters, json_t **out, struct mafsbx_error *err)
{
	if (!e || !out || (filters && !json_is_object(filters)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list networks: bad arguments");
	return mafsbx_eng_list_call(e, "/networks", filters, false, "list networks", out, err);
}

int mafsbx_network_delete(struct mafsbx_engine *e, const char *network, struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "delete network: no engine");
	struct obj_call o = { .verb = "delete network", .ref = network, .head = "/networks/",
			      .c = { .method = "DELETE", .ok = { 204, 200 } } };
	return mafsbx_eng_obj_call(e, &o, err);
}

int mafsbx_network_connect(struct mafsbx_engine *e, const char *network, const char *container,
			   struct mafsbx_error *err)
{
	if (!e)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "connect network: no engine");
	struct obj_call o = { .ref = network, .head = "/networks/", .tail = "/connect",
			      .c = { .method = "POST", .ctype = "application/json", .ok = { 200 } } };
	snprintf(o.what, sizeof(o.what), "connect %s to network %s", container ? container : "",
		 network ? network : "");
	int r = mafsbx_eng_check_ref(network, o.what, err);
	if (r < 0 || (r = mafsbx_eng_check_ref(container, o.what, err)) < 0)
		return r;
	json_t *b = json_pack("{s:s}", "Container", container);
	__do_free char *body = b ? mafsbx_eng_dump_json(b) : NULL;
	json_decref(b);
	if (!body)
		return mafsbx_eng_nomem(err);
	o.c.body = body;
	o.c.body_len = strlen(body);
	return mafsbx_eng_obj_call(e, &o, err);
}
