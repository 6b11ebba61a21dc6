/*
 * dispose.c: removing sandboxes (doc/upstream.md §8.1-§8.5). By name, by key (every
 * kind, or one), or by conversation (scope, thread). The engine's labels are
 * the record: a key or conversation is swept by a label filter with the same
 * label_value mapping that created it, so a sandbox made by another process
 * (the Python backend included) goes too. Proxies (<name>-proxy) and networks
 * (<name>-net) are removed with their workload, whatever this mount's egress
 * configuration. Disposal never fails on the engine's account: each workload
 * that could not be removed is reported as a failure with a code
 * (unreachable, timeout, refused, unlisted); a proxy or network left behind
 * is logged only. What is already gone counts as nothing, not as an error.
 *
 * Only what carries our identity labels is ever removed (a container that
 * merely has a sandbox-shaped name is left alone: EACCES for a disposal by
 * name), and always by the ID that was checked or listed, never by a name
 * resolved earlier: a sandbox re-created under the same name in between is
 * not the one deleted. A removed container's freeze lock files go with it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "log.h"
#include "sbx_internal.h"

void mafsbx_dispose_result_free(struct mafsbx_dispose_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_failures; i++)
		free(r->failures[i].detail);
	free(r->failures);
	memset(r, 0, sizeof(*r));
}

json_t *mafsbx_dispose_result_json(const struct mafsbx_dispose_result *r)
{
	json_t *fails = json_array();
	for (size_t i = 0; fails && i < r->n_failures; i++) {
		if (json_array_append_new(fails, json_pack("{s:s, s:s}", "code",
							   mafsbx_disposal_code_name(r->failures[i].code), "detail",
							   r->failures[i].detail ? r->failures[i].detail : "")) < 0) {
			json_decref(fails);   /* a reply that drops a failure would claim more than was done */
			return NULL;
		}
	}
	return fails ? json_pack("{s:I, s:o}", "disposed", (json_int_t)r->disposed, "failures", fails) : NULL;
}

void mafsbx_sbx_result_fail(struct mafsbx_dispose_result *res, enum mafsbx_disposal_code code, const char *fmt, ...)
{
	char *detail = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&detail, fmt, ap) < 0)
		detail = NULL;
	va_end(ap);
	if (detail)
		mafsbx_scrub_host_paths(detail);
	else
		res->unrecorded = true;
	struct mafsbx_disposal_failure *f = realloc(res->failures, (res->n_failures + 1) * sizeof(*f));
	if (!f) {
		free(detail);
		res->unrecorded = true;
		log_warn("a disposal failure went unrecorded: out of memory");
		return;
	}
	res->failures = f;
	f[res->n_failures].code = code;
	f[res->n_failures].detail = detail;
	res->n_failures++;
}

int mafsbx_sbx_result_status(const struct mafsbx_dispose_result *res, struct mafsbx_error *err)
{
	if (!res->unrecorded)
		return 0;
	return mafsbx_error_set(err, MAFSBX_EK_NOMEM,
				"out of memory: a failure of this disposal could not be recorded, so it may have left "
				"sandboxes behind (%zu failure(s) recorded, %u removed)",
				res->n_failures, res->disposed);
}

static enum mafsbx_disposal_code code_of(const struct mafsbx_error *e)
{
	switch (e->kind) {
	case MAFSBX_EK_UNREACHABLE: return MAFSBX_DISPOSAL_UNREACHABLE;
	case MAFSBX_EK_TIMEOUT: return MAFSBX_DISPOSAL_TIMEOUT;
	default: return MAFSBX_DISPOSAL_REFUSED;
	}
}

/* 1 removed, 0 already absent, -1 failed (reported as a failure when `report`, else logged). */
static int remove_container(struct mafsbx_backend *b, const char *target, bool report,
			    struct mafsbx_dispose_result *res)
{
	mafsbx_sbx_facts_drop(b, NULL, target);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_container_delete(b->engine, target, true, &e) == 0) {
		if (b->fz)
			mafsbx_freeze_forget(b->fz, target);
		return 1;
	}
	if (mafsbx_error_is_gone(&e, target)) {
		if (b->fz)
			mafsbx_freeze_forget(b->fz, target);
		return 0;
	}
	if (report)
		mafsbx_sbx_result_fail(res, code_of(&e), "%s: %s", target, e.message);
	else
		log_warn("could not remove %s: %s", target, e.message);
	return -1;
}

enum checked { CHK_OURS, CHK_ABSENT, CHK_FOREIGN, CHK_FAILED };

/*
 * Inspect container `ref` (a name or an ID) and say whether it is ours: the
 * four identity labels, and the role label exactly `role` (NULL: none, a
 * workload). With `want_name`, its name must be that too (a lookup by ID).
 * Its ID goes to id[]. CHK_FAILED leaves the engine's error in *e.
 */
static enum checked check_container(struct mafsbx_backend *b, const char *ref, const char *want_name,
				    const char *role, char id[65], struct mafsbx_error *e)
{
	json_t *insp = NULL;
	mafsbx_error_clear(e);
	id[0] = '\0';
	if (mafsbx_container_inspect(b->engine, ref, &insp, e) < 0)
		return mafsbx_error_is_gone(e, ref) ? CHK_ABSENT : CHK_FAILED;
	const char *jid = json_string_value(json_object_get(insp, "Id"));
	const char *nm = json_string_value(json_object_get(insp, "Name"));
	json_t *labels = mafsbx_sbx_labels_of(insp);
	const char *have_role = mafsbx_sbx_label(labels, MAFSBX_LABEL_ROLE);
	if (nm && *nm == '/')
		nm++;
	bool ours = mafsbx_is_engine_id(jid) && mafsbx_has_identity_labels(labels) &&
		    (role ? have_role && strcmp(have_role, role) == 0 : have_role == NULL) &&
		    (!want_name || (nm && strcmp(nm, want_name) == 0));
	if (jid)
		snprintf(id, 65, "%s", jid);
	json_decref(insp);
	return ours ? CHK_OURS : CHK_FOREIGN;
}

/* Remove the proxy of workload `name` when it is ours (role proxy); by the ID checked. */
static void remove_proxy_checked(struct mafsbx_backend *b, const char *name, struct mafsbx_dispose_result *res)
{
	char buf[MAFSBX_NAME_LEN + 16], id[65];
	struct mafsbx_error e;
	mafsbx_proxy_name(name, buf);
	switch (check_container(b, buf, NULL, "proxy", id, &e)) {
	case CHK_OURS:
		mafsbx_sbx_egress_drain(b, buf);   /* its decisions go to the log first */
		remove_container(b, id, false, res);
		break;
	case CHK_FOREIGN:
		log_warn("%s is not a sandbox proxy (it lacks the identity labels): left alone", buf);
		break;
	case CHK_FAILED:
		log_warn("could not remove %s: %s", buf, e.message);
		break;
	case CHK_ABSENT:
		break;
	}
}

/*
 * Remove network `net` when it carries our identity labels (by the ID the
 * check read). Failures are logged: a network left behind is not a failure
 * of the disposal (doc/upstream.md §8.3).
 */
static void remove_network(struct mafsbx_backend *b, const char *net)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	json_t *insp = NULL;
	if (mafsbx_network_inspect(b->engine, net, &insp, &e) < 0) {
		if (mafsbx_error_is_gone(&e, net))
			return;
		log_warn("could not remove network %s: %s", net, e.message);
		return;
	}
	char id[65];
	const char *jid = json_string_value(json_object_get(insp, "Id"));
	bool ours = jid && mafsbx_has_identity_labels(json_object_get(insp, "Labels"));
	snprintf(id, sizeof(id), "%s", jid ? jid : "");
	json_decref(insp);
	if (!ours) {
		log_warn("network %s is not a sandbox network (it lacks the identity labels): left alone", net);
		return;
	}
	mafsbx_error_clear(&e);
	if (mafsbx_network_delete(b->engine, id, &e) == 0) {
		log_debug("network %s removed", net);
		return;
	}
	if (mafsbx_error_is_gone(&e, id))
		return;
	log_warn("could not remove network %s: %s", net, e.message);
}

struct names {
	char **v;
	char **ids;              /* the container ID listed with each name ("" when not listed) */
	size_t n;
};

static bool names_has(const struct names *s, const char *x)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], x) == 0)
			return true;
	return false;
}

static int names_add_id(struct names *s, const char *x, const char *id)
{
	if (names_has(s, x))
		return 0;
	char **v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	char **ids = realloc(s->ids, (s->n + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	s->ids = ids;
	if (!(v[s->n] = strdup(x)))
		return -ENOMEM;
	if (!(ids[s->n] = strdup(id ? id : ""))) {
		free(v[s->n]);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

static int names_add(struct names *s, const char *x)
{
	return names_add_id(s, x, NULL);
}

static void names_free(struct names *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i]);
		free(s->ids[i]);
	}
	free(s->v);
	free(s->ids);
	s->v = s->ids = NULL;
	s->n = 0;
}

/*
 * Keep container `n` (ID `id`) for removal. When there is no memory to keep
 * it, it is not removed: a workload is then reported as a failure (the
 * disposal must not claim a sweep it did not do); a proxy left behind is
 * logged, as any proxy that could not go.
 */
static void keep_or_fail(struct names *s, const char *n, const char *id, struct mafsbx_dispose_result *res)
{
	if (names_add_id(s, n, id) == 0)
		return;
	if (mafsbx_name_parse(n, NULL) == MAFSBX_NAME_PROXY)
		log_warn("could not remove %s: out of memory", n);
	else
		mafsbx_sbx_result_fail(res, MAFSBX_DISPOSAL_UNKNOWN, "%s: out of memory, so it was not removed", n);
}

/*
 * Remove every workload and proxy the label filters list, plus `fallback`
 * names (used even when the listing fails), then the derived proxies and
 * networks. Counts removed workloads.
 */
static void purge(struct mafsbx_backend *b, const char *const *labels, size_t n_labels, const char *fallback,
		  struct mafsbx_dispose_result *res)
{
	if (b->cluster) {
		mafsbx_sbx_swarm_purge(b, labels, n_labels, fallback, NULL, res);
		return;
	}
	struct names workloads = { 0 }, proxies = { 0 };
	json_t *filters = mafsbx_filters_new();
	json_t *list = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = filters ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < n_labels; i++)
		r = mafsbx_filters_add(filters, "label", labels[i]);
	if (r == 0)
		r = mafsbx_filters_add(filters, "name", "^/?" MAFSBX_NAME_PREFIX);
	if (r == 0)
		r = mafsbx_container_list(b->engine, filters, true, &list, &e);
	else
		mafsbx_error_set(&e, MAFSBX_EK_NOMEM, "out of memory");
	if (r < 0) {
		mafsbx_sbx_result_fail(res, MAFSBX_DISPOSAL_UNLISTED, "could not list containers, so the sweep may be partial: %s",
				e.message);
	} else {
		size_t i;
		json_t *c;
		json_array_foreach(list, i, c) {
			const char *n = json_string_value(json_array_get(json_object_get(c, "Names"), 0));
			const char *id = json_string_value(json_object_get(c, "Id"));
			json_t *l = mafsbx_sbx_labels_of(c);
			const char *role = mafsbx_sbx_label(l, MAFSBX_LABEL_ROLE);
			if (!n || !mafsbx_is_engine_id(id) || !mafsbx_has_identity_labels(l))
				continue;
			if (*n == '/')
				n++;
			if (mafsbx_is_workload_name(n) && !role)
				keep_or_fail(&workloads, n, id, res);
			else if (mafsbx_name_parse(n, NULL) == MAFSBX_NAME_PROXY && role && strcmp(role, "proxy") == 0)
				keep_or_fail(&proxies, n, id, res);
		}
	}
	/* the key's own name, even when the listing failed: removed only if it carries our labels */
	if (fallback && *fallback && !names_has(&workloads, fallback)) {
		char id[65];
		switch (check_container(b, fallback, NULL, NULL, id, &e)) {
		case CHK_OURS:
			keep_or_fail(&workloads, fallback, id, res);
			break;
		case CHK_FOREIGN:
			mafsbx_sbx_result_fail(res, MAFSBX_DISPOSAL_REFUSED,
					"%s: not a sandbox (it lacks the identity labels): left alone", fallback);
			break;
		case CHK_FAILED:
			mafsbx_sbx_result_fail(res, code_of(&e), "%s: %s", fallback, e.message);
			break;
		case CHK_ABSENT:
			break;
		}
	}

	/*
	 * Proxies first (a network with a live endpoint cannot go), then
	 * workloads; each by the ID listed, so a container re-created under the
	 * name since the listing is not the one removed.
	 */
	for (size_t i = 0; i < proxies.n; i++) {
		mafsbx_sbx_egress_drain(b, proxies.v[i]);   /* its decisions go to the log first */
		remove_container(b, proxies.ids[i], false, res);
	}
	for (size_t i = 0; i < workloads.n; i++) {
		if (remove_container(b, workloads.ids[i], true, res) == 1) {
			res->disposed++;
			log_info("sandbox released %s", workloads.v[i]);
		}
	}
	for (size_t i = 0; i < workloads.n; i++) {
		char pn[MAFSBX_NAME_LEN + 16];
		mafsbx_proxy_name(workloads.v[i], pn);
		if (!names_has(&proxies, pn))
			remove_proxy_checked(b, workloads.v[i], res);
	}
	/* networks of every listed proxy and every workload, regardless of this mount's egress */
	char buf[MAFSBX_NAME_LEN + 16];
	struct names nets = { 0 };
	for (size_t i = 0; i < proxies.n; i++) {
		mafsbx_network_name(proxies.v[i], buf);
		if (names_add(&nets, buf) < 0)
			log_warn("network %s left behind: out of memory", buf);
	}
	for (size_t i = 0; i < workloads.n; i++) {
		mafsbx_network_name(workloads.v[i], buf);
		if (names_add(&nets, buf) < 0)
			log_warn("network %s left behind: out of memory", buf);
	}
	for (size_t i = 0; i < nets.n; i++)
		remove_network(b, nets.v[i]);
	names_free(&nets);
	names_free(&workloads);
	names_free(&proxies);
	json_decref(filters);
	json_decref(list);
}

static void label_filter(char *out, size_t outsz, const char *key, const char *value)
{
	char v[MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value(value, v);
	snprintf(out, outsz, "%s=%s", key, v);
}

/* The label filters of a key (and kind, when given) into f and labels: how many. */
static size_t key_filters(const struct mafsbx_key *key, const char *kind, char f[5][128], const char *labels[5])
{
	size_t n = 0;
	label_filter(f[n], sizeof(f[n]), MAFSBX_LABEL_SCOPE, key->scope), labels[n] = f[n], n++;
	label_filter(f[n], sizeof(f[n]), MAFSBX_LABEL_THREAD, key->thread), labels[n] = f[n], n++;
	label_filter(f[n], sizeof(f[n]), MAFSBX_LABEL_AGENT, key->agent), labels[n] = f[n], n++;
	/* a conversation key adds no call filter, so it also sweeps call-scoped leftovers */
	if (key->call && *key->call)
		label_filter(f[n], sizeof(f[n]), MAFSBX_LABEL_CALL, key->call), labels[n] = f[n], n++;
	if (kind)
		label_filter(f[n], sizeof(f[n]), MAFSBX_LABEL_KIND, kind), labels[n] = f[n], n++;
	return n;
}

int mafsbx_sandbox_dispose_key(struct mafsbx_backend *b, const struct mafsbx_key *key, const char *kind,
			       struct mafsbx_dispose_result *res, struct mafsbx_error *err)
{
	if (!res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: no result");
	memset(res, 0, sizeof(*res));
	if (!b || !key || !key->scope || !key->thread || !key->agent)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: a key needs scope, thread and agent");
	if (kind && !*kind)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "field 'kind': must not be empty");
	char f[5][128];
	const char *labels[5];
	size_t n = key_filters(key, kind, f, labels);
	/* with a kind the name is known: it is swept even when the listing fails */
	char name[MAFSBX_NAME_LEN + 1] = "";
	if (kind)
		mafsbx_container_name(key, kind, "", name);
	purge(b, labels, n, name, res);
	return mafsbx_sbx_result_status(res, err);
}

int mafsbx_sandbox_dispose_scope(struct mafsbx_backend *b, const char *scope, const char *thread,
				 struct mafsbx_dispose_result *res, struct mafsbx_error *err)
{
	if (!res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: no result");
	memset(res, 0, sizeof(*res));
	if (!b || !scope || !thread)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: needs scope and thread");
	char f[2][128];
	const char *labels[2] = { f[0], f[1] };
	label_filter(f[0], sizeof(f[0]), MAFSBX_LABEL_SCOPE, scope);
	label_filter(f[1], sizeof(f[1]), MAFSBX_LABEL_THREAD, thread);
	purge(b, labels, 2, NULL, res);
	return mafsbx_sbx_result_status(res, err);
}

/*
 * One sandbox: `ref` is its name, or (want_name set) the ID it was resolved
 * to. Only a container that carries the identity labels is removed, by the
 * ID just checked; its proxy and network go with it (each checked the same
 * way) unless the name now belongs to another container.
 */
static int dispose_one(struct mafsbx_backend *b, const char *name, const char *id_or_null,
		       struct mafsbx_dispose_result *res, struct mafsbx_error *err)
{
	if (b->cluster)
		return mafsbx_sbx_swarm_dispose_one(b, name, id_or_null, res, err);
	char id[65];
	struct mafsbx_error e;
	enum checked c = check_container(b, id_or_null ? id_or_null : name, id_or_null ? name : NULL, NULL, id, &e);
	switch (c) {
	case CHK_FAILED:
		/* fail closed: nothing is removed on a guess */
		mafsbx_sbx_result_fail(res, code_of(&e), "%s: %s", name, e.message);
		return 0;
	case CHK_FOREIGN:
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EACCES, "PermissionError",
					     "%s is not a sandbox (it lacks the identity labels); it is left alone", name);
	case CHK_ABSENT:
		if (id_or_null) {
			/* our instance is gone; the name may now be someone else's: leave its proxy/network then */
			char now[65];
			struct mafsbx_error e2;
			if (check_container(b, name, NULL, NULL, now, &e2) != CHK_ABSENT)
				return 0;
		}
		break;
	case CHK_OURS:
		break;
	}
	remove_proxy_checked(b, name, res);
	if (c == CHK_OURS && remove_container(b, id, true, res) == 1) {
		res->disposed++;
		log_info("sandbox released %s", name);
	}
	char buf[MAFSBX_NAME_LEN + 16];
	mafsbx_network_name(name, buf);
	remove_network(b, buf);
	return 0;
}

/* The checks every disposal by name starts with: a result to fill (cleared), a backend, a workload name. */
static int dispose_name_args(struct mafsbx_backend *b, const char *name, struct mafsbx_dispose_result *res,
			     struct mafsbx_error *err)
{
	if (!res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: no result");
	memset(res, 0, sizeof(*res));
	if (!b || !mafsbx_is_workload_name(name))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "field 'name': not a sandbox name (want %s<12 hex>)",
					MAFSBX_NAME_PREFIX);
	return 0;
}

int mafsbx_sandbox_dispose_name(struct mafsbx_backend *b, const char *name, struct mafsbx_dispose_result *res,
				struct mafsbx_error *err)
{
	int r = dispose_name_args(b, name, res, err);
	if (r == 0)
		r = dispose_one(b, name, NULL, res, err);
	return r < 0 ? r : mafsbx_sbx_result_status(res, err);
}

int mafsbx_sandbox_dispose_id(struct mafsbx_backend *b, const char *name, const char *id,
			      struct mafsbx_dispose_result *res, struct mafsbx_error *err)
{
	int r = dispose_name_args(b, name, res, err);
	if (r < 0)
		return r;
	/* over a swarm the instance is the service, whose ID is swarmkit's (25 characters) */
	if (!b->cluster && !mafsbx_is_engine_id(id))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: '%s' is not a full container ID",
					id ? id : "");
	if (r == 0)
		r = dispose_one(b, name, id, res, err);
	return r < 0 ? r : mafsbx_sbx_result_status(res, err);
}

/* ---- by instance ID (doc/upstream.md §8.4) --------------------------------------- */

/* The label `k` of `labels` equals label_value(want) (want NULL or "": not compared). */
static bool label_is(json_t *labels, const char *k, const char *want)
{
	if (!want || !*want)
		return true;
	char v[MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value(want, v);
	const char *have = mafsbx_sbx_label(labels, k);
	return have && strcmp(have, v) == 0;
}

static bool same_label(json_t *a, json_t *b, const char *k)
{
	const char *x = mafsbx_sbx_label(a, k), *y = mafsbx_sbx_label(b, k);
	return x == y || (x && y && strcmp(x, y) == 0);
}

/*
 * <name>-proxy when it is this workload's: role proxy and the same scope,
 * thread, agent, kind and call labels. Its ID goes to id[] ("" when none).
 */
static void instance_proxy(struct mafsbx_backend *b, const char *name, json_t *wl_labels, char id[65])
{
	char pn[MAFSBX_NAME_LEN + 16];
	static const char *const keys[] = { MAFSBX_LABEL_SCOPE, MAFSBX_LABEL_THREAD, MAFSBX_LABEL_AGENT,
					    MAFSBX_LABEL_KIND, MAFSBX_LABEL_CALL };
	json_t *insp = NULL;
	struct mafsbx_error e;
	id[0] = '\0';
	mafsbx_proxy_name(name, pn);
	if (mafsbx_container_inspect(b->engine, pn, &insp, &e) < 0)
		return;
	json_t *pl = mafsbx_sbx_labels_of(insp);
	const char *role = mafsbx_sbx_label(pl, MAFSBX_LABEL_ROLE);
	const char *jid = json_string_value(json_object_get(insp, "Id"));
	bool ours = role && strcmp(role, "proxy") == 0 && mafsbx_is_engine_id(jid);
	for (size_t i = 0; ours && i < sizeof(keys) / sizeof(keys[0]); i++)
		ours = same_label(pl, wl_labels, keys[i]);
	if (ours)
		snprintf(id, 65, "%s", jid);
	json_decref(insp);
}

/*
 * Inspect `instance_id`: 1 when it is the key's workload (name[] set), 0
 * when there is nothing to remove (absent, another key's, a proxy), -1 for
 * a failure recorded as "unlisted". *insp is the inspect (caller frees).
 */
static int instance_select(struct mafsbx_backend *b, const struct mafsbx_key *key, const char *kind,
			   const char *instance_id, json_t **insp, char name[MAFSBX_NAME_LEN + 1],
			   struct mafsbx_dispose_result *res)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_container_inspect(b->engine, instance_id, insp, &e) < 0) {
		if (mafsbx_error_is_gone(&e, instance_id))
			return 0;
		mafsbx_sbx_result_fail(res, MAFSBX_DISPOSAL_UNLISTED, "%s: %s", instance_id, e.message);
		return -1;
	}
	const char *jid = json_string_value(json_object_get(*insp, "Id"));
	if (!jid || strcmp(jid, instance_id) != 0) {
		mafsbx_sbx_result_fail(res, MAFSBX_DISPOSAL_UNLISTED, "%s: the engine resolved it to container %.64s, not itself",
				instance_id, jid ? jid : "(none)");
		return -1;
	}
	json_t *labels = mafsbx_sbx_labels_of(*insp);
	if (!mafsbx_has_identity_labels(labels) || !label_is(labels, MAFSBX_LABEL_SCOPE, key->scope) ||
	    !label_is(labels, MAFSBX_LABEL_THREAD, key->thread) || !label_is(labels, MAFSBX_LABEL_AGENT, key->agent) ||
	    !label_is(labels, MAFSBX_LABEL_CALL, key->call) || !label_is(labels, MAFSBX_LABEL_KIND, kind))
		return 0;   /* not this key's: nothing is deleted */
	const char *nm = json_string_value(json_object_get(*insp, "Name"));
	if (nm && *nm == '/')
		nm++;
	if (!nm || !mafsbx_is_workload_name(nm) || mafsbx_sbx_label(labels, MAFSBX_LABEL_ROLE))
		return 0;   /* a proxy (or anything not a workload) is not disposed by ID */
	snprintf(name, MAFSBX_NAME_LEN + 1, "%s", nm);
	return 1;
}

int mafsbx_sandbox_dispose_instance(struct mafsbx_backend *b, const struct mafsbx_key *key, const char *kind,
				    const char *instance_id, struct mafsbx_dispose_result *res, struct mafsbx_error *err)
{
	if (!res)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: no result");
	memset(res, 0, sizeof(*res));
	if (!b || !key || !key->scope || !key->thread || !key->agent || !instance_id || !*instance_id)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: an instance needs its ID and a key");
	if (b->cluster) {
		/* the instance is the service of that ID among the key's */
		char f[5][128];
		const char *labels[5];
		mafsbx_sbx_swarm_purge(b, labels, key_filters(key, kind, f, labels), NULL, instance_id, res);
		return mafsbx_sbx_result_status(res, err);
	}
	json_t *insp = NULL, *again = NULL;
	char name[MAFSBX_NAME_LEN + 1], proxy_id[65], net[MAFSBX_NAME_LEN + 8];
	if (instance_select(b, key, kind, instance_id, &insp, name, res) <= 0)
		goto out;
	instance_proxy(b, name, mafsbx_sbx_labels_of(insp), proxy_id);
	struct mafsbx_error e;
	if (mafsbx_container_inspect(b->engine, instance_id, &again, &e) < 0)
		goto out;   /* gone meanwhile (or unanswerable): nothing is removed on a guess */
	if (proxy_id[0]) {
		mafsbx_proxy_name(name, net);
		mafsbx_sbx_egress_drain(b, net);   /* its decisions go to the log first */
		if (remove_container(b, proxy_id, true, res) < 0)
			goto out;
	}
	mafsbx_network_name(name, net);
	const char *net_id = json_string_value(json_object_get(
		json_object_get(json_object_get(json_object_get(again, "NetworkSettings"), "Networks"), net), "NetworkID"));
	if (remove_container(b, instance_id, true, res) == 1) {
		res->disposed++;
		log_info("sandbox released %s (instance %.12s)", name, instance_id);
		if (net_id && *net_id)
			remove_network(b, net_id);
	}
out:
	json_decref(insp);
	json_decref(again);
	return mafsbx_sbx_result_status(res, err);
}

int mafsbx_sandbox_dispose(struct mafsbx_backend *b, const struct mafsbx_dispose_spec *spec,
			   struct mafsbx_dispose_result *res, struct mafsbx_error *err)
{
	if (!spec) {
		if (res)
			memset(res, 0, sizeof(*res));
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: no request");
	}
	switch (spec->by) {
	case MAFSBX_DISPOSE_BY_NAME:
		return mafsbx_sandbox_dispose_name(b, spec->name, res, err);
	case MAFSBX_DISPOSE_BY_KEY:
		if (spec->instance_id)
			return mafsbx_sandbox_dispose_instance(b, &spec->key, spec->kind, spec->instance_id, res, err);
		return mafsbx_sandbox_dispose_key(b, &spec->key, spec->kind, res, err);
	case MAFSBX_DISPOSE_BY_SCOPE:
		return mafsbx_sandbox_dispose_scope(b, spec->key.scope, spec->key.thread, res, err);
	}
	if (res)
		memset(res, 0, sizeof(*res));
	return mafsbx_error_set(err, MAFSBX_EK_INVALID, "dispose: unknown request shape");
}
