/*
 * it_reap.c: reap (src/admin/reap.c and `mafsbx reap` / `mafsbx ls`) against the
 * real dockerd, on sandboxes built through the Engine API with the upstream
 * names and labels (workload, -proxy, -net).
 *
 * Every test uses its own random scope and ALWAYS passes it to reap, so it
 * can never touch another helper's sandboxes on the shared engine. Age is
 * made without waiting by giving the library an injected "now"
 * (sbx_test_reap_now, a hook of the test build: placing the cutoff exactly
 * where a test needs it); the CLI tests, which use the real
 * clock, wait about a second and reap with --older-than 1s.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "duration.h"
#include "engine.h"
#include "harness.h"
#include "names.h"
#include "http.h"
#include "reap.h"

/* ---- building sandboxes ------------------------------------------------- */

struct res {
	char name[MAFSBX_NAME_LEN + 8];
	char id[65];
	struct mafsbx_time created;
};

struct sbx {
	struct mafsbx_key key;
	char scope[HARNESS_NAME_MAX], thread[32];
	char name[MAFSBX_NAME_LEN + 1];
	struct res w, p, n;      /* workload, proxy, network; id "" when not made */
};

static void sbx_init(struct sbx *s, const char *scope, const char *thread)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->scope, sizeof(s->scope), "%s", scope);
	snprintf(s->thread, sizeof(s->thread), "%s", thread);
	s->key = (struct mafsbx_key){ .scope = s->scope, .thread = s->thread, .agent = "agent", .call = "" };
	mafsbx_container_name(&s->key, "kind", "", s->name);
	snprintf(s->w.name, sizeof(s->w.name), "%s", s->name);
	snprintf(s->p.name, sizeof(s->p.name), "%s-proxy", s->name);
	snprintf(s->n.name, sizeof(s->n.name), "%s-net", s->name);
}

/* The identity labels (scope, thread, agent, kind), as upstream writes them on every resource. */
static json_t *identity_labels(const struct sbx *s)
{
	char v[4][MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value(s->key.scope, v[0]);
	mafsbx_label_value(s->key.thread, v[1]);
	mafsbx_label_value(s->key.agent, v[2]);
	mafsbx_label_value("kind", v[3]);
	json_t *l = json_pack("{s:s, s:s, s:s, s:s}", MAFSBX_LABEL_SCOPE, v[0], MAFSBX_LABEL_THREAD, v[1],
			      MAFSBX_LABEL_AGENT, v[2], MAFSBX_LABEL_KIND, v[3]);
	assert_non_null(l);
	return l;
}

static void read_created(bool network, struct res *r)
{
	json_t *obj = NULL;
	struct mafsbx_error err;
	int ret = network ? mafsbx_network_inspect(harness_engine(), r->id, &obj, &err)
			  : mafsbx_container_inspect(harness_engine(), r->id, &obj, &err);
	harness_check(ret, &err, "inspect");
	assert_int_equal(mafsbx_time_parse(json_string_value(json_object_get(obj, "Created")), &r->created, &err), 0);
	json_decref(obj);
}

/* A created (not started) container named `name` with `labels` (stolen). */
static void make_container(const char *name, json_t *labels, struct res *r)
{
	json_t *cfg = json_pack("{s:s, s:[s,s], s:o, s:{s:s}}", "Image", harness_image(), "Cmd", "/bin/sleep", "infinity",
				"Labels", labels, "HostConfig", "NetworkMode", "none");
	assert_non_null(cfg);
	struct mafsbx_error err;
	harness_register_container(name);
	harness_check(mafsbx_container_create(harness_engine(), name, cfg, r->id, &err), &err, "create container");
	json_decref(cfg);
	if (r->name != name)
		snprintf(r->name, sizeof(r->name), "%s", name);
	read_created(false, r);
}

static void make_workload(struct sbx *s)
{
	json_t *labels = mafsbx_workload_labels(&s->key, "kind", NULL, MAFSBX_DEFAULT_WORK_DIR);
	assert_non_null(labels);
	make_container(s->w.name, labels, &s->w);
}

static void make_proxy(struct sbx *s)
{
	json_t *labels = identity_labels(s);
	char *attr = mafsbx_key_attribution(&s->key);
	assert_non_null(attr);
	json_object_set_new(labels, MAFSBX_LABEL_ROLE, json_string("proxy"));
	json_object_set_new(labels, MAFSBX_LABEL_KEY_V1, json_string(attr));
	free(attr);
	make_container(s->p.name, labels, &s->p);
}

static void make_network(struct sbx *s)
{
	json_t *cfg = json_pack("{s:s, s:s, s:b, s:b, s:o}", "Name", s->n.name, "Driver", "bridge", "Internal", 1,
				"CheckDuplicate", 1, "Labels", identity_labels(s));
	assert_non_null(cfg);
	struct mafsbx_error err;
	harness_register_network(s->n.name);
	harness_check(mafsbx_network_create(harness_engine(), cfg, s->n.id, &err), &err, "create network");
	json_decref(cfg);
	read_created(true, &s->n);
}

static void make_all(struct sbx *s)
{
	make_network(s);
	make_workload(s);
	make_proxy(s);
}

/* Does this exact ID still exist? (Absence must be the engine's 404, not any failure.) */
static bool exists(bool network, const char *id)
{
	json_t *obj = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = network ? mafsbx_network_inspect(harness_engine(), id, &obj, &err)
			: mafsbx_container_inspect(harness_engine(), id, &obj, &err);
	json_decref(obj);
	if (r == 0)
		return true;
	if (err.kind == MAFSBX_EK_NO_CONTAINER || err.kind == MAFSBX_EK_NO_OBJECT)
		return false;
	fail_msg("inspect %s: %s", id, err.message);
	return false;
}

static void assert_exists(const struct res *r, bool network)
{
	if (!exists(network, r->id))
		fail_msg("%s (%.12s) was removed but should have been kept", r->name, r->id);
}

static void assert_gone(const struct res *r, bool network)
{
	if (exists(network, r->id))
		fail_msg("%s (%.12s) still exists but should have been removed", r->name, r->id);
}

static void unique_scope(const char *what, char out[HARNESS_NAME_MAX])
{
	harness_unique_name(what, out);
}

/* ---- running reap ------------------------------------------------------- */

static int reap_at(struct mafsbx_engine *e, const char *scope, int64_t older_than, struct mafsbx_time now,
		   bool dry_run, struct mafsbx_reap_result *res, struct mafsbx_error *err)
{
	assert_non_null(scope);   /* never reap the shared engine unscoped */
	struct mafsbx_reap_options o = { .older_than_s = older_than, .scope = scope, .dry_run = dry_run };
	mafsbx_error_clear(err);
	sbx_test_reap_now = &now;
	int r = mafsbx_reap(e, &o, res, err);
	sbx_test_reap_now = NULL;
	return r;
}

static struct mafsbx_time plus(struct mafsbx_time t, int64_t s)
{
	t.sec += s;
	return t;
}

static void expect_counts(const struct mafsbx_reap_result *res, unsigned disposed, unsigned proxies, unsigned networks)
{
	for (size_t i = 0; i < res->n_failures; i++)
		print_message("failure: %s %s: %s\n", mafsbx_reap_code_name(res->failures[i].code), res->failures[i].name,
			      res->failures[i].message);
	assert_int_equal(res->disposed, disposed);
	assert_int_equal(res->proxies_removed, proxies);
	assert_int_equal(res->networks_removed, networks);
}

/* ---- library tests ------------------------------------------------------ */

/* An expired sandbox goes with its proxy and network, in the order proxy, workload, network. */
static void test_old_removed_with_proxy_and_network(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	unique_scope("reapold", scope);
	struct sbx s;
	sbx_init(&s, scope, "t1");
	make_all(&s);

	struct mafsbx_reap_result res;
	struct mafsbx_error err;
	int r = reap_at(harness_engine(), scope, 3600, plus(s.p.created, 7200), false, &res, &err);
	harness_check(r, &err, "reap");
	expect_counts(&res, 1, 1, 1);
	assert_int_equal(res.n_failures, 0);
	assert_false(res.inventory_failed);
	assert_int_equal(res.n_items, 3);
	assert_int_equal(res.items[0].kind, MAFSBX_REAP_PROXY);
	assert_int_equal(res.items[1].kind, MAFSBX_REAP_WORKLOAD);
	assert_int_equal(res.items[2].kind, MAFSBX_REAP_NETWORK);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(res.items[i].outcome, MAFSBX_REAP_REMOVED);
		assert_string_equal(res.items[i].sandbox, s.name);
	}
	assert_string_equal(res.items[1].id, s.w.id);
	mafsbx_reap_result_free(&res);
	assert_gone(&s.w, false);
	assert_gone(&s.p, false);
	assert_gone(&s.n, true);

	/* Nothing is left for a second run. */
	r = reap_at(harness_engine(), scope, 3600, plus(s.p.created, 7200), false, &res, &err);
	harness_check(r, &err, "reap again");
	expect_counts(&res, 0, 0, 0);
	mafsbx_reap_result_free(&res);
}

/*
 * The cutoff is strict and the age is the workload's: with the cutoff placed
 * exactly at B's workload creation, A (older) goes and B stays whole; an old
 * workload takes its younger proxy along; a young orphan proxy keeps its old
 * network; an orphan network alone goes on its own age.
 */
static void test_cutoff_and_anchor(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	unique_scope("reapcut", scope);
	struct sbx a, b, c, d, o;
	sbx_init(&a, scope, "a");
	sbx_init(&b, scope, "b");
	sbx_init(&c, scope, "c");   /* old workload, young proxy */
	sbx_init(&d, scope, "d");   /* orphan: old network, young proxy */
	sbx_init(&o, scope, "o");   /* orphan network only */

	make_network(&o);
	make_network(&a);
	make_workload(&a);
	make_network(&c);
	make_workload(&c);
	make_network(&d);
	make_network(&b);
	make_workload(&b);          /* the cutoff */
	make_proxy(&b);
	make_proxy(&c);
	make_proxy(&d);
	assert_true(mafsbx_time_cmp(a.w.created, b.w.created) < 0);
	assert_true(mafsbx_time_cmp(c.w.created, b.w.created) < 0);
	assert_true(mafsbx_time_cmp(c.p.created, b.w.created) > 0);
	assert_true(mafsbx_time_cmp(d.p.created, b.w.created) > 0);

	struct mafsbx_reap_result res;
	struct mafsbx_error err;
	int r = reap_at(harness_engine(), scope, 86400, plus(b.w.created, 86400), false, &res, &err);
	harness_check(r, &err, "reap");
	assert_int_equal(res.cutoff.sec, b.w.created.sec);
	assert_int_equal(res.cutoff.nsec, b.w.created.nsec);
	/* a: workload + net; c: workload + proxy + net; o: net. */
	expect_counts(&res, 2, 1, 3);
	assert_int_equal(res.n_failures, 0);
	mafsbx_reap_result_free(&res);

	assert_gone(&a.w, false);
	assert_gone(&a.n, true);
	assert_gone(&c.w, false);
	assert_gone(&c.p, false);
	assert_gone(&c.n, true);
	assert_gone(&o.n, true);
	assert_exists(&b.w, false);   /* exactly at the cutoff: kept */
	assert_exists(&b.p, false);
	assert_exists(&b.n, true);
	assert_exists(&d.p, false);   /* young orphan proxy ... */
	assert_exists(&d.n, true);    /* ... keeps its old network */

	/* One nanosecond later B's workload is strictly older: B goes (and so does D, anchored on its proxy). */
	struct mafsbx_time later = plus(d.p.created, 86400);
	later.nsec += 1;
	if (later.nsec >= 1000000000) {
		later.nsec -= 1000000000;
		later.sec++;
	}
	r = reap_at(harness_engine(), scope, 86400, later, false, &res, &err);
	harness_check(r, &err, "reap later");
	expect_counts(&res, 1, 2, 2);
	mafsbx_reap_result_free(&res);
	assert_gone(&b.w, false);
	assert_gone(&d.p, false);
	assert_gone(&d.n, true);
}

/*
 * A container the listing shows younger than the cutoff is not inspected:
 * a dry run over young sandboxes costs the two lists; over old ones, each
 * is inspected and revalidated as before. The engine calls are counted.
 */
static void test_young_not_inspected(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	unique_scope("reapyoung", scope);
	struct sbx s[3];
	sbx_init(&s[0], scope, "y0");
	sbx_init(&s[1], scope, "y1");
	sbx_init(&s[2], scope, "y2");
	for (int i = 0; i < 3; i++)
		make_workload(&s[i]);
	struct mafsbx_time now = plus(s[0].w.created, 86400);
	struct mafsbx_reap_result res;
	struct mafsbx_error err;
	/* Warm: the API version is negotiated once per engine handle. */
	harness_check(reap_at(harness_engine(), scope, 86400 + 3600, now, true, &res, &err), &err, "warm reap");
	mafsbx_reap_result_free(&res);

	unsigned long before = mafsbx_http_request_count();
	harness_check(reap_at(harness_engine(), scope, 86400 + 3600, now, true, &res, &err), &err, "young reap");
	unsigned long calls = mafsbx_http_request_count() - before;
	assert_int_equal(res.inventoried, 3);
	expect_counts(&res, 0, 0, 0);
	mafsbx_reap_result_free(&res);
	assert_int_equal(calls, 2);   /* the container list and the network list */

	before = mafsbx_http_request_count();
	harness_check(reap_at(harness_engine(), scope, 86400 - 3600, now, true, &res, &err), &err, "old reap");
	calls = mafsbx_http_request_count() - before;
	expect_counts(&res, 3, 0, 0);
	mafsbx_reap_result_free(&res);
	assert_int_equal(calls, 2 + 3 + 3);   /* the lists, an inspect and a revalidation each */
	for (int i = 0; i < 3; i++)
		assert_exists(&s[i].w, false);
}

/* --scope narrows: the other scope's expired sandbox is not touched. A scope is matched by its label value. */
static void test_scope_narrows(void **state)
{
	(void)state;
	char x[HARNESS_NAME_MAX], y[HARNESS_NAME_MAX], spaced[HARNESS_NAME_MAX + 16];
	unique_scope("reapx", x);
	unique_scope("reapy", y);
	/* A scope with spaces is stored digested (sha256-...); --scope takes it as given. */
	snprintf(spaced, sizeof(spaced), "a scope with spaces %s", y);
	struct sbx sx, sy;
	sbx_init(&sx, x, "t");
	sbx_init(&sy, spaced, "t");
	make_all(&sx);
	make_all(&sy);

	struct mafsbx_reap_result res;
	struct mafsbx_error err;
	int r = reap_at(harness_engine(), x, 60, plus(sy.p.created, 3600), false, &res, &err);
	harness_check(r, &err, "reap x");
	expect_counts(&res, 1, 1, 1);
	mafsbx_reap_result_free(&res);
	assert_gone(&sx.w, false);
	assert_exists(&sy.w, false);
	assert_exists(&sy.p, false);
	assert_exists(&sy.n, true);

	r = reap_at(harness_engine(), spaced, 60, plus(sy.p.created, 3600), false, &res, &err);
	harness_check(r, &err, "reap spaced scope");
	expect_counts(&res, 1, 1, 1);
	mafsbx_reap_result_free(&res);
	assert_gone(&sy.w, false);
	assert_gone(&sy.n, true);
}

/* --dry-run: every read, the would-be counts and resources, and nothing deleted. */
static void test_dry_run(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	unique_scope("reapdry", scope);
	struct sbx s;
	sbx_init(&s, scope, "t");
	make_all(&s);

	struct mafsbx_reap_result res;
	struct mafsbx_error err;
	int r = reap_at(harness_engine(), scope, 60, plus(s.p.created, 3600), true, &res, &err);
	harness_check(r, &err, "dry run");
	assert_true(res.dry_run);
	expect_counts(&res, 1, 1, 1);
	assert_int_equal(res.n_items, 3);
	const char *ids[3] = { s.p.id, s.w.id, s.n.id };
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(res.items[i].outcome, MAFSBX_REAP_WOULD_REMOVE);
		assert_string_equal(res.items[i].id, ids[i]);
	}
	json_t *j = mafsbx_reap_result_json(&res);
	assert_non_null(j);
	assert_true(json_is_true(json_object_get(j, "dry_run")));
	assert_int_equal(json_array_size(json_object_get(j, "would_remove")), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "would_remove"), 1), "name")),
			    s.name);
	json_decref(j);
	mafsbx_reap_result_free(&res);

	assert_exists(&s.w, false);
	assert_exists(&s.p, false);
	assert_exists(&s.n, true);
}

/* An engine that cannot be reached: an inventory failure, nothing deleted, no removal tried. */
static void test_unreachable_engine(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], url[256];
	unique_scope("reapunreach", scope);
	snprintf(url, sizeof(url), "unix:///nonexistent-%s/docker.sock", scope);
	struct mafsbx_endpoint ep;
	struct mafsbx_error err;
	harness_check(mafsbx_endpoint_parse_url(url, &ep, &err), &err, "parse url");
	struct mafsbx_engine *dead = mafsbx_engine_open(&ep, NULL, &err);
	assert_non_null(dead);

	struct mafsbx_reap_result res;
	int r = reap_at(dead, scope, 60, (struct mafsbx_time){ .sec = time(NULL) + 3600 }, false, &res, &err);
	assert_true(r < 0);
	assert_true(res.inventory_failed);
	assert_int_equal(err.kind, MAFSBX_EK_UNREACHABLE);
	assert_true(res.n_failures >= 1);
	assert_int_equal(res.failures[0].code, MAFSBX_REAP_UNLISTED);
	assert_int_equal(res.n_items, 0);
	expect_counts(&res, 0, 0, 0);
	mafsbx_reap_result_free(&res);
	mafsbx_engine_close(dead);
}

/*
 * A network with a foreign container attached cannot go (never forced): the
 * failure is reported, the workload and proxy still go, and a later run
 * (after the foreign container left) removes the network on its own age.
 */
static void test_network_removal_failure(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	unique_scope("reapnetfail", scope);
	struct sbx s;
	sbx_init(&s, scope, "t");
	make_all(&s);

	json_t *cfg = json_pack("{s:{s:s}}", "HostConfig", "NetworkMode", s.n.name);
	char foreign[HARNESS_NAME_MAX];
	harness_container_cfg("reapforeign", cfg, true, foreign);
	json_decref(cfg);

	struct mafsbx_reap_result res;
	struct mafsbx_error err;
	int r = reap_at(harness_engine(), scope, 60, plus(s.p.created, 3600), false, &res, &err);
	harness_check(r, &err, "reap");
	expect_counts(&res, 1, 1, 0);
	assert_int_equal(res.n_failures, 1);
	assert_int_equal(res.failures[0].code, MAFSBX_REAP_REFUSED);
	assert_true(res.failures[0].has_kind);
	assert_int_equal(res.failures[0].kind, MAFSBX_REAP_NETWORK);
	assert_string_equal(res.failures[0].id, s.n.id);
	assert_string_equal(res.failures[0].name, s.n.name);
	assert_int_equal(res.items[2].outcome, MAFSBX_REAP_FAILED);
	mafsbx_reap_result_free(&res);
	assert_exists(&s.n, true);
	assert_gone(&s.w, false);

	harness_check(mafsbx_container_delete(harness_engine(), foreign, true, &err), &err, "remove foreign");
	harness_forget_container(foreign);
	r = reap_at(harness_engine(), scope, 60, plus(s.p.created, 3600), false, &res, &err);
	harness_check(r, &err, "reap again");
	expect_counts(&res, 0, 0, 1);
	assert_int_equal(res.n_failures, 0);
	mafsbx_reap_result_free(&res);
	assert_gone(&s.n, true);
}

/* The test hook: replace the workload (same name, same labels, new ID). */
struct replace_ctx {
	struct sbx *s;
	enum mafsbx_reap_stage at;
	struct res fresh;
	bool done;
};

static void replace_hook(enum mafsbx_reap_stage stage, void *p)
{
	struct replace_ctx *c = p;
	if (stage != c->at)
		return;
	struct mafsbx_error err;
	harness_check(mafsbx_container_delete(harness_engine(), c->s->w.id, true, &err), &err, "remove workload");
	json_t *labels = mafsbx_workload_labels(&c->s->key, "kind", NULL, MAFSBX_DEFAULT_WORK_DIR);
	make_container(c->s->w.name, labels, &c->fresh);
	c->done = true;
}

/*
 * A sandbox recreated under the same name after the inventory survives:
 * between inventory and revalidation, the group is skipped whole; between
 * revalidation and removal, the proxy (still the inspected one) goes, the
 * workload removal by the old ID finds it gone, and the group is blocked so
 * its network stays.
 */
static void test_replaced_after_inventory(void **state)
{
	(void)state;
	static const enum mafsbx_reap_stage stages[] = { MAFSBX_REAP_AFTER_INVENTORY, MAFSBX_REAP_BEFORE_DELETE };
	for (size_t si = 0; si < 2; si++) {
		char scope[HARNESS_NAME_MAX];
		unique_scope("reaprepl", scope);
		struct sbx s;
		sbx_init(&s, scope, "t");
		make_all(&s);
		struct replace_ctx ctx = { .s = &s, .at = stages[si] };

		struct mafsbx_time now = plus(s.p.created, 3600);
		struct mafsbx_reap_options o = { .older_than_s = 60, .scope = scope };
		struct mafsbx_reap_result res;
		struct mafsbx_error err;
		mafsbx_error_clear(&err);
		sbx_test_reap_now = &now;
		sbx_test_reap_hook = replace_hook;
		sbx_test_reap_hook_ctx = &ctx;
		int r = mafsbx_reap(harness_engine(), &o, &res, &err);
		sbx_test_reap_now = NULL;
		sbx_test_reap_hook = NULL;
		sbx_test_reap_hook_ctx = NULL;
		harness_check(r, &err, "reap");
		assert_true(ctx.done);
		assert_int_equal(res.n_failures, 0);
		assert_int_equal(res.disposed, 0);
		assert_int_equal(res.networks_removed, 0);
		if (stages[si] == MAFSBX_REAP_AFTER_INVENTORY) {
			assert_int_equal(res.proxies_removed, 0);
			assert_int_equal(res.n_items, 0);
			assert_exists(&s.p, false);
		} else {
			assert_int_equal(res.proxies_removed, 1);
			assert_int_equal(res.n_items, 3);
			assert_int_equal(res.items[1].outcome, MAFSBX_REAP_GONE);
			assert_int_equal(res.items[2].outcome, MAFSBX_REAP_BLOCKED);
			assert_gone(&s.p, false);
		}
		mafsbx_reap_result_free(&res);
		assert_exists(&ctx.fresh, false);
		assert_exists(&s.n, true);
		json_t *obj = NULL;
		harness_check(mafsbx_container_inspect(harness_engine(), s.name, &obj, &err), &err, "inspect by name");
		assert_string_equal(json_string_value(json_object_get(obj, "Id")), ctx.fresh.id);
		json_decref(obj);
	}
}

/* Foreign resources are never touched: another prefix, a missing label, a wrong role, a bad name. */
static void test_foreign_left_alone(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	unique_scope("reapforeign", scope);
	struct sbx s;
	sbx_init(&s, scope, "t");
	char hex[13];
	memcpy(hex, s.name + strlen(MAFSBX_NAME_PREFIX), 12);
	hex[12] = '\0';

	struct res wslc, nolabel, wrongrole, proxynorole, upper, longer;
	char nm[96];
	snprintf(nm, sizeof(nm), "maf-sandbox-wslc-%s", hex);
	make_container(nm, identity_labels(&s), &wslc);

	json_t *l = identity_labels(&s);
	json_object_del(l, MAFSBX_LABEL_AGENT);
	snprintf(nm, sizeof(nm), "%s", s.name);
	make_container(nm, l, &nolabel);

	sbx_init(&s, scope, "t2");
	l = identity_labels(&s);
	json_object_set_new(l, MAFSBX_LABEL_ROLE, json_string("proxy"));   /* a workload with a role */
	make_container(s.name, l, &wrongrole);

	snprintf(nm, sizeof(nm), "%s-proxy", s.name);                      /* a proxy without one */
	make_container(nm, identity_labels(&s), &proxynorole);

	sbx_init(&s, scope, "t3");
	snprintf(nm, sizeof(nm), "%s", s.name);
	for (char *p = nm + strlen(MAFSBX_NAME_PREFIX); *p; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	if (strcmp(nm, s.name) == 0)
		nm[strlen(nm) - 1] = 'G';   /* all digits: make it non-hex another way */
	make_container(nm, identity_labels(&s), &upper);

	snprintf(nm, sizeof(nm), "%s0", s.name);
	make_container(nm, identity_labels(&s), &longer);

	struct mafsbx_reap_result res;
	struct mafsbx_error err;
	int r = reap_at(harness_engine(), scope, 60, (struct mafsbx_time){ .sec = longer.created.sec + 3600 }, false,
			&res, &err);
	harness_check(r, &err, "reap");
	expect_counts(&res, 0, 0, 0);
	assert_int_equal(res.n_failures, 0);
	assert_int_equal(res.inventoried, 0);
	mafsbx_reap_result_free(&res);
	const struct res *all[] = { &wslc, &nolabel, &wrongrole, &proxynorole, &upper, &longer };
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(all); i++)
		assert_exists(all[i], false);
}

/* A non-positive age is refused before any engine call (a dead engine proves no call was made). */
static void test_bad_age_refused(void **state)
{
	(void)state;
	struct mafsbx_endpoint ep;
	struct mafsbx_error err;
	harness_check(mafsbx_endpoint_parse_url("unix:///nonexistent-mafsbx-reap/docker.sock", &ep, &err), &err, "url");
	struct mafsbx_engine *dead = mafsbx_engine_open(&ep, NULL, &err);
	assert_non_null(dead);
	struct mafsbx_reap_result res;
	for (int64_t age = 0; age >= -1; age--) {
		int r = reap_at(dead, "x", age, (struct mafsbx_time){ 0, 0 }, false, &res, &err);
		assert_int_equal(r, -EINVAL);
		assert_int_equal(err.kind, MAFSBX_EK_INVALID);
		assert_false(res.inventory_failed);
		assert_int_equal(res.n_failures, 0);
		mafsbx_reap_result_free(&res);
	}
	mafsbx_engine_close(dead);
}

/* ---- the CLI, end to end ------------------------------------------------ */

struct run {
	int code;
	struct mafsbx_buf out, err;
};

static void run_free(struct run *r)
{
	mafsbx_buf_free(&r->out);
	mafsbx_buf_free(&r->err);
}

/* Run the mafsbx binary with argv (NULL-terminated, argv[0] ignored); bounded at 60 s. */
static void run_cli(const char *const *args, struct run *r)
{
	const char *bin = getenv("MAFSBX_CLI");
	if (!bin || !*bin)
		fail_msg("MAFSBX_CLI is not set (meson sets it to the built mafsbx)");
	memset(r, 0, sizeof(*r));
	int po[2], pe[2];
	assert_int_equal(pipe2(po, O_CLOEXEC), 0);
	assert_int_equal(pipe2(pe, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		char *argv[32];
		size_t n = 0;
		argv[n++] = (char *)"mafsbx";
		for (size_t i = 1; args[i] && n < 31; i++)
			argv[n++] = (char *)args[i];
		argv[n] = NULL;
		execv(bin, argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	struct pollfd fds[2] = { { .fd = po[0], .events = POLLIN }, { .fd = pe[0], .events = POLLIN } };
	struct mafsbx_buf *bufs[2] = { &r->out, &r->err };
	int open_fds = 2;
	long long deadline = mafsbx_now_ms() + 60000;
	while (open_fds > 0) {
		long long left = deadline - mafsbx_now_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			fail_msg("mafsbx did not finish within 60 s");
		}
		if (poll(fds, 2, (int)left) < 0 && errno != EINTR)
			fail_msg("poll: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char chunk[4096];
			ssize_t got = read(fds[i].fd, chunk, sizeof(chunk));
			if (got > 0) {
				assert_int_equal(mafsbx_buf_append(bufs[i], chunk, (size_t)got), 0);
			} else {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
			}
		}
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	r->code = WEXITSTATUS(status);
	mafsbx_buf_puts(&r->out, "");
	mafsbx_buf_puts(&r->err, "");
}

static json_t *run_json(const struct run *r)
{
	json_error_t jerr;
	json_t *j = json_loads(r->out.data, 0, &jerr);
	if (!j)
		fail_msg("stdout is not one JSON value (%s): %s", jerr.text, r->out.data);
	return j;
}

static void test_cli_usage(void **state)
{
	(void)state;
	static const char *const cases[][6] = {
		{ "", "reap", NULL },
		{ "", "reap", "--older-than", "0", "--scope", "x" },
		{ "", "reap", "--older-than", "-5m", "--scope", "x" },
		{ "", "reap", "--older-than", "5x", "--scope", "x" },
		{ "", "reap", "--older-than", "", "--scope", "x" },
		{ "", "reap", "--older-than", "99999999999999999999d", "--scope", "x" },
		{ "", "reap", "--older-than", "1h", "--bogus", NULL },
		{ "", "reap", "--older-than", "1h", "extra", NULL },
		{ "", "ls", "--bogus", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[8] = { NULL };
		for (size_t k = 0; k < 6 && cases[i][k]; k++)
			args[k] = cases[i][k];
		struct run r;
		run_cli(args, &r);
		/* docker's usage status, on every verb (mafsbx(1) EXIT STATUS) */
		if (r.code != 125)
			fail_msg("case %zu: exit %d, want 125 (stderr: %s)", i, r.code, r.err.data);
		assert_non_null(strstr(r.err.data, "mafsbx: "));
		assert_string_equal(r.out.data, "");
		run_free(&r);
	}
	const char *help[] = { "", "reap", "--help", NULL };
	struct run r;
	run_cli(help, &r);
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out.data, "--older-than"));
	run_free(&r);
}

/* Unreachable engine: exit 3, nothing deleted (the real engine's sandbox is still there). */
static void test_cli_unreachable(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], url[256];
	unique_scope("reapcli3", scope);
	struct sbx s;
	sbx_init(&s, scope, "t");
	make_workload(&s);
	snprintf(url, sizeof(url), "unix:///nonexistent-%s/docker.sock", scope);

	const char *args[] = { "", "reap", "--older-than", "1s", "--scope", scope, "-H", url, "--json", NULL };
	struct run r;
	run_cli(args, &r);
	assert_int_equal(r.code, 3);
	json_t *j = run_json(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "disposed")), 0);
	assert_true(json_array_size(json_object_get(j, "failures")) >= 1);
	json_decref(j);
	assert_non_null(strstr(r.err.data, "mafsbx: "));
	run_free(&r);

	const char *args2[] = { "", "reap", "--older-than", "1s", "--scope", scope, "-H", url, NULL };
	run_cli(args2, &r);
	assert_int_equal(r.code, 3);
	run_free(&r);
	const char *args3[] = { "", "ls", "-H", url, NULL };
	run_cli(args3, &r);
	assert_int_equal(r.code, 3);
	run_free(&r);
	assert_exists(&s.w, false);
}

static void wait_past(struct mafsbx_time t, int64_t seconds)
{
	/* Sleep until the real clock is more than `seconds` past t (bounded: at most seconds + 1 s). */
	for (int i = 0; i < 30; i++) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		if (now.tv_sec > t.sec + seconds || (now.tv_sec == t.sec + seconds && now.tv_nsec > t.nsec))
			return;
		struct timespec nap = { 0, 100 * 1000 * 1000 };
		nanosleep(&nap, NULL);
	}
}

/* ls shows the sandbox with its decoded key; dry run reports and keeps; reap removes; a refused network is exit 1. */
static void test_cli_end_to_end(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	unique_scope("reapcli", scope);
	struct sbx s, f;
	sbx_init(&s, scope, "t");
	sbx_init(&f, scope, "fail");
	make_all(&s);
	make_network(&f);
	make_workload(&f);
	json_t *cfg = json_pack("{s:{s:s}}", "HostConfig", "NetworkMode", f.n.name);
	char foreign[HARNESS_NAME_MAX];
	harness_container_cfg("reapcliforeign", cfg, true, foreign);
	json_decref(cfg);

	/* ls */
	const char *ls[] = { "", "ls", "--scope", scope, "--json", NULL };
	struct run r;
	run_cli(ls, &r);
	assert_int_equal(r.code, 0);
	json_t *j = run_json(&r);
	assert_int_equal(json_array_size(j), 2);
	json_t *row = NULL, *other = NULL;
	for (size_t i = 0; i < 2; i++) {
		json_t *x = json_array_get(j, i);
		if (strcmp(json_string_value(json_object_get(x, "name")), s.name) == 0)
			row = x;
		else
			other = x;
	}
	assert_non_null(row);
	assert_non_null(other);
	assert_string_equal(json_string_value(json_object_get(other, "name")), f.name);
	assert_string_equal(json_string_value(json_object_get(row, "name")), s.name);
	assert_string_equal(json_string_value(json_object_get(row, "id")), s.w.id);
	assert_string_equal(json_string_value(json_object_get(row, "kind")), "kind");
	assert_string_equal(json_string_value(json_object_get(row, "state")), "created");
	/* the key comes from the proxy's key.v1 */
	assert_string_equal(json_string_value(json_object_get(row, "key_source")), "key.v1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(row, "key"), "scope")), scope);
	assert_string_equal(json_string_value(json_object_get(json_object_get(row, "key"), "agent")), "agent");
	assert_string_equal(json_string_value(json_object_get(other, "key_source")), "labels");
	assert_string_equal(json_string_value(json_object_get(json_object_get(other, "key"), "thread")), "fail");
	json_decref(j);
	run_free(&r);
	const char *ls_text[] = { "", "ls", "--scope", scope, NULL };
	run_cli(ls_text, &r);
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out.data, s.name));
	assert_non_null(strstr(r.out.data, "NAME"));
	run_free(&r);

	wait_past(f.w.created, 1);

	/* dry run */
	const char *dry[] = { "", "reap", "--older-than", "1s", "--scope", scope, "--dry-run", "--json", NULL };
	run_cli(dry, &r);
	assert_int_equal(r.code, 0);
	j = run_json(&r);
	assert_true(json_is_true(json_object_get(j, "dry_run")));
	assert_int_equal(json_integer_value(json_object_get(j, "disposed")), 2);
	assert_int_equal(json_integer_value(json_object_get(j, "proxies_removed")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "networks_removed")), 2);
	assert_int_equal(json_array_size(json_object_get(j, "would_remove")), 5);
	json_decref(j);
	run_free(&r);
	assert_exists(&s.w, false);
	assert_exists(&s.p, false);
	assert_exists(&s.n, true);
	assert_exists(&f.w, false);

	const char *dry_text[] = { "", "reap", "--older-than", "1s", "--scope", scope, "--dry-run", NULL };
	run_cli(dry_text, &r);
	assert_int_equal(r.code, 0);
	assert_non_null(strstr(r.out.data, "would remove proxy "));
	assert_non_null(strstr(r.out.data, s.p.name));
	assert_non_null(strstr(r.out.data, "reap (dry run): disposed=2 proxies_removed=1 networks_removed=2 failures=0\n"));
	run_free(&r);

	/* the real run: everything goes except the network with a foreign container: exit 1 */
	const char *real[] = { "", "reap", "--older-than", "1s", "--scope", scope, "--json", NULL };
	run_cli(real, &r);
	assert_int_equal(r.code, 1);
	j = run_json(&r);
	assert_false(json_is_true(json_object_get(j, "dry_run")));
	assert_int_equal(json_integer_value(json_object_get(j, "disposed")), 2);
	assert_int_equal(json_integer_value(json_object_get(j, "proxies_removed")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "networks_removed")), 1);
	json_t *fails = json_object_get(j, "failures");
	assert_int_equal(json_array_size(fails), 1);
	json_t *f0 = json_array_get(fails, 0);
	assert_string_equal(json_string_value(json_object_get(f0, "code")), "refused");
	assert_string_equal(json_string_value(json_object_get(f0, "kind")), "network");
	assert_string_equal(json_string_value(json_object_get(f0, "name")), f.n.name);
	assert_string_equal(json_string_value(json_object_get(f0, "id")), f.n.id);
	json_decref(j);
	assert_non_null(strstr(r.err.data, "mafsbx: reap: refused: network "));
	run_free(&r);
	assert_gone(&s.w, false);
	assert_gone(&s.p, false);
	assert_gone(&s.n, true);
	assert_gone(&f.w, false);
	assert_exists(&f.n, true);

	/* once the foreign container is gone, the network goes on its own age: exit 0, the summary line */
	struct mafsbx_error err;
	harness_check(mafsbx_container_delete(harness_engine(), foreign, true, &err), &err, "remove foreign");
	harness_forget_container(foreign);
	const char *again[] = { "", "reap", "--older-than", "1s", "--scope", scope, NULL };
	run_cli(again, &r);
	assert_int_equal(r.code, 0);
	assert_string_equal(r.out.data, "reap: disposed=0 proxies_removed=0 networks_removed=1 failures=0\n");
	run_free(&r);
	assert_gone(&f.n, true);
}

int main(void)
{
	harness_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_age_refused),
		cmocka_unit_test(test_old_removed_with_proxy_and_network),
		cmocka_unit_test(test_cutoff_and_anchor),
		cmocka_unit_test(test_scope_narrows),
		cmocka_unit_test(test_dry_run),
		cmocka_unit_test(test_unreachable_engine),
		cmocka_unit_test(test_network_removal_failure),
		cmocka_unit_test(test_young_not_inspected),
		cmocka_unit_test(test_replaced_after_inventory),
		cmocka_unit_test(test_foreign_left_alone),
		cmocka_unit_test(test_cli_usage),
		cmocka_unit_test(test_cli_unreachable),
		cmocka_unit_test(test_cli_end_to_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
