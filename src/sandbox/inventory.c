/*
 * inventory.c: what the filesystem shows (doc/protocol.md "The tree"): the sandboxes on
 * the engine, by listing workload containers named maf-sandbox-docker-* that
 * carry the four identity labels (proxies, which carry maf-sandbox.role, are
 * not sandboxes), and one sandbox by name. The engine is asked for the
 * cheapest list that holds them all (one label: mafsbx_list_filters) and
 * the rest is checked here as the list streams. The labels are the record, so a
 * fresh mount or a sandbox made by the Python backend shows up the same.
 * The key behind digested labels comes from maf-sandbox.key.v1, trusted only
 * when it maps back onto the ownership labels (doc/upstream.md §2.3).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "duration.h"
#include "log.h"
#include "sbx_internal.h"

json_t *mafsbx_sbx_labels_of(json_t *obj)
{
	/* an inspect has Config.Labels, a list entry Labels (Podman's also carries "Config": null) */
	json_t *cfg = json_object_get(obj, "Config");
	json_t *l = json_is_object(cfg) ? json_object_get(cfg, "Labels") : json_object_get(obj, "Labels");
	return json_is_object(l) ? l : NULL;
}

const char *mafsbx_sbx_label(json_t *labels, const char *key)
{
	return json_string_value(json_object_get(labels, key));
}

void mafsbx_sandbox_info_clear(struct mafsbx_sandbox_info *i)
{
	if (!i)
		return;
	free(i->image);
	free(i->scope);
	free(i->thread);
	free(i->agent);
	free(i->kind);
	free(i->call);
	free(i->key_scope);
	free(i->key_thread);
	free(i->key_agent);
	free(i->key_call);
	free(i->work_dir);
	for (size_t k = 0; i->outputs && k < i->n_outputs; k++)
		free(i->outputs[k]);
	free(i->outputs);
	free(i->network_mode);
	memset(i, 0, sizeof(*i));
}

void mafsbx_sandbox_info_free_array(struct mafsbx_sandbox_info *a, size_t n)
{
	for (size_t i = 0; a && i < n; i++)
		mafsbx_sandbox_info_clear(&a[i]);
	free(a);
}

static bool maps_to(const char *value, const char *label)
{
	char v[MAFSBX_LABEL_VALUE_MAX + 1];
	if (!label)
		return false;
	mafsbx_label_value(value, v);
	return strcmp(v, label) == 0;
}

/* A label value that is its own label_value (not digested) can be shown as the key field. */
static bool self_mapping(const char *label)
{
	return label && maps_to(label, label);
}

/* 0, or -ENOMEM when a legacy key's fields could not be copied (not shown as a key unknown). */
static int resolve_key(struct mafsbx_sandbox_info *i, json_t *labels)
{
	const char *enc = mafsbx_sbx_label(labels, MAFSBX_LABEL_KEY_V1);
	const char *call_label = mafsbx_sbx_label(labels, MAFSBX_LABEL_CALL);
	if (enc && *enc) {
		char *s = NULL, *t = NULL, *a = NULL, *c = NULL;
		if (mafsbx_key_attribution_decode(enc, &s, &t, &a, &c) == 0 && maps_to(s, i->scope) &&
		    maps_to(t, i->thread) && maps_to(a, i->agent) &&
		    (*c ? maps_to(c, call_label) : call_label == NULL)) {
			i->key_scope = s, i->key_thread = t, i->key_agent = a, i->key_call = c;
			i->key_known = true;
			return 0;
		}
		free(s), free(t), free(a), free(c);
		return 0;
	}
	/* legacy: no attribution; the labels are the key when none was digested */
	if (self_mapping(i->scope) && self_mapping(i->thread) && self_mapping(i->agent) &&
	    (!call_label || self_mapping(call_label))) {
		i->key_scope = strdup(i->scope);
		i->key_thread = strdup(i->thread);
		i->key_agent = strdup(i->agent);
		i->key_call = strdup(call_label ? call_label : "");
		i->key_known = i->key_scope && i->key_thread && i->key_agent && i->key_call;
		if (!i->key_known)
			return -ENOMEM;
	}
	return 0;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* 0, or -ENOMEM: a list of outputs cut short for want of memory is not shown as the whole list. */
static int fill_outputs(struct mafsbx_sandbox_info *i, const char *text)
{
	if (!text)
		return 0;
	json_error_t jerr;
	__do_json json_t *a = json_loads(text, 0, &jerr);
	if (!json_is_array(a))
		return 0;   /* not a list (a label anyone could set): no outputs */
	size_t n = json_array_size(a);
	i->outputs = calloc(n + 1, sizeof(char *));
	if (!i->outputs)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		const char *o = json_string_value(json_array_get(a, k));
		/* anyone with the engine's API can set labels: keep only valid names */
		if (!o || mafsbx_output_name_check(o, "outputs", NULL) != 0)
			continue;
		if (!(i->outputs[i->n_outputs] = strdup(o)))
			return -ENOMEM;
		i->n_outputs++;
	}
	return 0;
}

int mafsbx_sbx_fill_info(struct mafsbx_backend *b, struct mafsbx_sandbox_info *i, const char *name, const char *id,
		     const char *state, bool paused, int64_t created, const char *image, json_t *labels,
		     const char *network_mode)
{
	memset(i, 0, sizeof(*i));
	if (paused && b->fz && id && mafsbx_freeze_active(b->fz, id)) {
		/*
		 * The pause is this process's own freeze (a file call, or a burst's
		 * lingering freeze: burst.h): a moment of access, not the sandbox's
		 * state. A pause by anyone else makes a freeze fail, never join.
		 */
		paused = false;
		state = "running";
	}
	snprintf(i->name, sizeof(i->name), "%s", name);
	snprintf(i->id, sizeof(i->id), "%s", id ? id : "");
	snprintf(i->state, sizeof(i->state), "%s", state ? state : "");
	i->paused = paused;
	i->created = created;
	i->image = dup_or_null(image ? image : "");
	i->scope = dup_or_null(mafsbx_sbx_label(labels, MAFSBX_LABEL_SCOPE));
	i->thread = dup_or_null(mafsbx_sbx_label(labels, MAFSBX_LABEL_THREAD));
	i->agent = dup_or_null(mafsbx_sbx_label(labels, MAFSBX_LABEL_AGENT));
	i->kind = dup_or_null(mafsbx_sbx_label(labels, MAFSBX_LABEL_KIND));
	const char *call = mafsbx_sbx_label(labels, MAFSBX_LABEL_CALL);
	i->call = strdup(call ? call : "");
	i->work_dir = dup_or_null(mafsbx_sbx_label(labels, MAFSBX_LABEL_WORK_DIR_V1));
	i->network_mode = dup_or_null(network_mode ? network_mode : "");
	if (!i->image || !i->scope || !i->thread || !i->agent || !i->kind || !i->call || !i->network_mode ||
	    (mafsbx_sbx_label(labels, MAFSBX_LABEL_WORK_DIR_V1) && !i->work_dir) || resolve_key(i, labels) < 0 ||
	    fill_outputs(i, mafsbx_sbx_label(labels, MAFSBX_LABEL_OUTPUTS)) < 0) {
		/* a work dir lost here would read as the default one: the whole entry is ENOMEM */
		mafsbx_sandbox_info_clear(i);
		return -ENOMEM;
	}
	struct sbx_facts f;
	if (i->id[0] && mafsbx_sbx_facts_get(b, i->id, &f) && f.identity_resolved) {
		i->identity_known = true;
		i->uid = f.uid;
		i->gid = f.gid;
	}
	return 0;
}

struct list_acc {
	struct mafsbx_backend *b;
	struct mafsbx_sandbox_info *a;
	size_t n, cap;
	size_t listed;               /* containers the engine gave, sandboxes or not */
	const char *const *want;     /* the scope, thread, agent values (mafsbx_list_entry_selected) */
};

/* One listed container: kept (compactly, only what the tree shows) when it is a sandbox. */
static int list_one(json_t *c, void *ctx)
{
	struct list_acc *acc = ctx;
	acc->listed++;
	if (!mafsbx_list_entry_selected(c, acc->want))
		return 0;   /* the engine's list is a superset (mafsbx_list_filters) */
	const char *nm = json_string_value(json_array_get(json_object_get(c, "Names"), 0));
	if (nm && *nm == '/')
		nm++;
	json_t *labels = mafsbx_sbx_labels_of(c);
	if (!nm || !mafsbx_is_workload_name(nm) || !mafsbx_has_identity_labels(labels) ||
	    mafsbx_sbx_label(labels, MAFSBX_LABEL_ROLE))
		return 0;
	if (mafsbx_array_grow(&acc->a, &acc->cap, acc->n + 1, sizeof(*acc->a), 64, 0) < 0)
		return -ENOMEM;
	const char *state = json_string_value(json_object_get(c, "State"));
	json_t *created = json_object_get(c, "Created");
	if (mafsbx_sbx_fill_info(acc->b, &acc->a[acc->n], nm, json_string_value(json_object_get(c, "Id")), state,
		      state && strcmp(state, "paused") == 0, json_is_integer(created) ? json_integer_value(created) : 0,
		      json_string_value(json_object_get(c, "Image")), labels,
		      json_string_value(json_object_get(json_object_get(c, "HostConfig"), "NetworkMode"))) < 0)
		return -ENOMEM;
	acc->n++;
	return 0;
}

/* The sandboxes whose scope, thread and agent labels equal the values given (NULL: any). */
static int list_by_labels(struct mafsbx_backend *b, const char *const want[3], unsigned limit, size_t *listed,
			  struct mafsbx_sandbox_info **out, size_t *n, struct mafsbx_error *err)
{
	*out = NULL;
	*n = 0;
	if (!b)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list: no backend");
	if (b->cluster)
		return mafsbx_sbx_swarm_list(b, want, limit, listed, out, n, err);
	json_t *filters = mafsbx_list_filters(want);
	if (!filters)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	struct list_acc acc = { .b = b, .want = want };
	int r = mafsbx_container_list_each_keep(b->engine, filters, true, limit, mafsbx_list_keys, list_one, &acc,
						 err);
	json_decref(filters);
	if (listed)
		*listed = acc.listed;
	if (r < 0) {
		mafsbx_sandbox_info_free_array(acc.a, acc.n);
		return r;
	}
	if (acc.n == 0) {
		free(acc.a);
		acc.a = NULL;
	} else if (acc.n < acc.cap) {
		struct mafsbx_sandbox_info *p = realloc(acc.a, acc.n * sizeof(*p));
		if (p)
			acc.a = p;
	}
	*out = acc.a;
	*n = acc.n;
	return 0;
}

int mafsbx_sandbox_list(struct mafsbx_backend *b, const char *scope, struct mafsbx_sandbox_info **out, size_t *n,
			struct mafsbx_error *err)
{
	char v[MAFSBX_LABEL_VALUE_MAX + 1];
	if (scope)
		mafsbx_label_value(scope, v);
	const char *const want[3] = { scope ? v : NULL, NULL, NULL };
	return list_by_labels(b, want, 0, NULL, out, n, err);
}

int mafsbx_sandbox_list_labels(struct mafsbx_backend *b, const char *scope, const char *thread, const char *agent,
			       unsigned limit, size_t *listed, struct mafsbx_sandbox_info **out, size_t *n,
			       struct mafsbx_error *err)
{
	*out = NULL;
	*n = 0;
	const char *const want[3] = { scope, thread, agent };
	if (!scope)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list: no scope label");
	for (size_t k = 0; k < 3; k++)
		if (want[k] && (!*want[k] || strlen(want[k]) > MAFSBX_LABEL_VALUE_MAX))
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list: a label value must be 1 to %d bytes",
						MAFSBX_LABEL_VALUE_MAX);
	if (!thread && agent)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list: an agent needs its thread");
	return list_by_labels(b, want, limit, listed, out, n, err);
}

int mafsbx_sbx_inspect_sandbox(struct mafsbx_backend *b, const char *name, json_t **insp, char id[65],
			struct mafsbx_error *err)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	*insp = NULL;
	id[0] = '\0';
	int r = mafsbx_container_inspect(b->engine, name, insp, &e);
	if (r < 0) {
		if (e.kind == MAFSBX_EK_NO_CONTAINER)
			return mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "no sandbox named %s", name);
		if (err)
			*err = e;
		return r;
	}
	const char *jid = json_string_value(json_object_get(*insp, "Id"));
	json_t *labels = mafsbx_sbx_labels_of(*insp);
	if (!jid || !*jid || !mafsbx_has_identity_labels(labels) || mafsbx_sbx_label(labels, MAFSBX_LABEL_ROLE)) {
		json_decref(*insp);
		*insp = NULL;
		return mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "%s is not a sandbox (it lacks the identity labels)",
					name);
	}
	snprintf(id, 65, "%s", jid);
	return 0;
}

int mafsbx_sandbox_lookup(struct mafsbx_backend *b, const char *name, struct mafsbx_sandbox_info *out,
			  struct mafsbx_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!b || !name || !*name)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "lookup: no name");
	if (b->cluster)
		return mafsbx_sbx_swarm_lookup(b, name, out, err);
	json_t *insp = NULL;
	char id[65];
	int r = mafsbx_sbx_inspect_sandbox(b, name, &insp, id, err);
	if (r < 0)
		return r;
	const char *nm = json_string_value(json_object_get(insp, "Name"));
	if (nm && *nm == '/')
		nm++;
	json_t *labels = mafsbx_sbx_labels_of(insp);
	if (!nm || !mafsbx_is_workload_name(nm)) {
		json_decref(insp);
		return mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "%s is not a sandbox", name);
	}
	json_t *st = json_object_get(insp, "State");
	struct mafsbx_time t = { 0, 0 };
	const char *created = json_string_value(json_object_get(insp, "Created"));
	if (created && mafsbx_time_parse(created, &t, NULL) < 0)
		t.sec = 0;
	r = mafsbx_sbx_fill_info(b, out, nm, id,
		      json_string_value(json_object_get(st, "Status")), json_is_true(json_object_get(st, "Paused")), t.sec,
		      json_string_value(json_object_get(json_object_get(insp, "Config"), "Image")), labels,
		      json_string_value(json_object_get(json_object_get(insp, "HostConfig"), "NetworkMode")));
	json_decref(insp);
	if (r < 0)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return 0;
}
