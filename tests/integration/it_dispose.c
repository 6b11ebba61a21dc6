/*
 * it_dispose.c: disposal against the real dockerd (doc/upstream.md §8.1-§8.5): by
 * key with and without kind (a conversation key sweeps its call-scoped
 * leftovers, a call key only its own), by name, by conversation; the derived
 * proxy and network go with their workload; what is gone is success with 0;
 * a container carrying the labels under a foreign name is left alone; the
 * request shapes through the spec parser; the reply JSON.
 */
#include "sbx_internal.h"
#include "sbx_testlib.h"

static unsigned dispose_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static unsigned dispose_json(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = sbxt_vformat(fmt, ap);
	va_end(ap);
	json_t *j = sbxt_json("%s", text);
	struct mafsbx_dispose_spec *s = NULL;
	struct mafsbx_error e;
	if (mafsbx_dispose_spec_parse(j, &s, &e) < 0)
		fail_msg("dispose spec %s: %s", text, e.message);
	struct mafsbx_dispose_result dr;
	harness_check(mafsbx_sandbox_dispose(sbxt_g.b, s, &dr, &e), &e, "dispose");
	if (dr.n_failures)
		fail_msg("dispose %s: %s", text, dr.failures[0].detail);
	unsigned n = dr.disposed;
	mafsbx_dispose_result_free(&dr);
	mafsbx_dispose_spec_free(s);
	json_decref(j);
	free(text);
	return n;
}

static void acquire_call(const char *scope, const char *agent, const char *call, const char *kind,
			 struct mafsbx_acquire_result *r)
{
	char extra[200];
	snprintf(extra, sizeof(extra), "\"call\":\"%s\",\"isolation_scope\":\"call\",\"capabilities\":[]", call);
	sbxt_acquire_ok(scope, agent, kind, extra, r);
}

static void test_dispose_by_key_and_kind(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a1, a2, b1, c1, c2;
	sbxt_acquire_ok(scope, "a", "k1", "\"capabilities\":[]", &a1);
	sbxt_acquire_ok(scope, "a", "k2", "\"capabilities\":[]", &a2);
	sbxt_acquire_ok(scope, "b", "k1", "\"capabilities\":[]", &b1);
	acquire_call(scope, "a", "c1", "k1", &c1);
	acquire_call(scope, "a", "c2", "k3", &c2);
	assert_string_not_equal(c1.name, a1.name);

	/* a call key: only that call's sandboxes */
	assert_int_equal(dispose_json("{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"a\",\"call\":\"c2\"}", scope), 1);
	assert_false(sbxt_exists(c2.name));
	assert_true(sbxt_exists(a1.name));
	/* key + kind: the conversation's k1 and its call-scoped k1 leftover */
	assert_int_equal(dispose_json("{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k1\"}", scope), 2);
	assert_false(sbxt_exists(a1.name));
	assert_false(sbxt_exists(c1.name));
	assert_true(sbxt_exists(a2.name));
	assert_true(sbxt_exists(b1.name));
	/* key without kind: every kind of agent a */
	assert_int_equal(dispose_json("{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"a\"}", scope), 1);
	assert_false(sbxt_exists(a2.name));
	assert_true(sbxt_exists(b1.name));
	/* gone already: success with 0 */
	assert_int_equal(dispose_json("{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"a\"}", scope), 0);
	assert_int_equal(dispose_json("{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k1\"}", scope), 0);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

static void test_dispose_by_name(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, b;
	sbxt_acquire_ok(scope, "a", "k", "\"capabilities\":[]", &a);
	sbxt_acquire_ok(scope, "a", "other", "\"capabilities\":[]", &b);
	assert_int_equal(dispose_json("{\"name\":\"%s\"}", a.name), 1);
	assert_false(sbxt_exists(a.name));
	assert_true(sbxt_exists(b.name));
	assert_int_equal(dispose_json("{\"name\":\"%s\"}", a.name), 0);
	/* a paused sandbox goes too */
	struct mafsbx_error e;
	harness_check(mafsbx_container_pause(harness_engine(), b.id, &e), &e, "pause");
	assert_int_equal(dispose_json("{\"name\":\"%s\"}", b.name), 1);
	assert_false(sbxt_exists(b.id));
	assert_int_equal(sbxt_dispose_scope(scope), 0);
}

static void test_dispose_conversation(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, b, other;
	sbxt_acquire_ok(scope, "a", "k", "\"capabilities\":[]", &a);
	sbxt_acquire_ok(scope, "agent two", "k", "\"capabilities\":[]", &b);
	/* another thread of the same scope */
	struct mafsbx_acquire_spec *s = sbxt_spec("{\"scope\":\"%s\",\"thread\":\"t2\",\"agent\":\"a\",\"kind\":\"k\","
						  "\"capabilities\":[]}",
						  scope);
	struct mafsbx_error e;
	harness_check(sbxt_acquire_on(sbxt_g.b, s, &other, &e), &e, "acquire t2");
	mafsbx_acquire_spec_free(s);
	assert_int_equal(dispose_json("{\"scope\":\"%s\",\"thread\":\"t\"}", scope), 2);
	assert_false(sbxt_exists(a.name));
	assert_false(sbxt_exists(b.name));
	assert_true(sbxt_exists(other.name));
	assert_int_equal(dispose_json("{\"scope\":\"%s\",\"thread\":\"t2\"}", scope), 1);
	assert_int_equal(dispose_json("{\"scope\":\"%s\",\"thread\":\"t2\"}", scope), 0);
}

static void test_proxy_and_network_go_too(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a;
	sbxt_acquire_ok(scope, "a", "k", "\"capabilities\":[]", &a);
	/* the topology an allowlist-era backend leaves: <name>-proxy and <name>-net with the identity labels */
	struct mafsbx_key k = { scope, SBXT_THREAD, "a", "" };
	json_t *labels = mafsbx_workload_labels(&k, "k", NULL, NULL);
	json_object_del(labels, MAFSBX_LABEL_WORK_DIR_V1);
	char net[MAFSBX_NAME_LEN + 8], proxy[MAFSBX_NAME_LEN + 8], nid[65], pid[65];
	snprintf(net, sizeof(net), "%s-net", a.name);
	snprintf(proxy, sizeof(proxy), "%s-proxy", a.name);
	struct mafsbx_error e;
	json_t *ncfg = json_pack("{s:s, s:s, s:b, s:O}", "Name", net, "Driver", "bridge", "Internal", 1, "Labels", labels);
	harness_register_network(net);
	harness_check(mafsbx_network_create(harness_engine(), ncfg, nid, &e), &e, "network create");
	json_decref(ncfg);
	json_t *plabels = json_deep_copy(labels);
	json_object_set_new(plabels, MAFSBX_LABEL_ROLE, json_string("proxy"));
	json_t *pcfg = json_pack("{s:s, s:[s,s], s:o, s:{s:s}}", "Image", harness_image(), "Cmd", "sleep", "infinity",
				 "Labels", plabels, "HostConfig", "NetworkMode", net);
	harness_register_container(proxy);
	harness_check(mafsbx_container_create(harness_engine(), proxy, pcfg, pid, &e), &e, "proxy create");
	json_decref(pcfg);
	harness_check(mafsbx_container_start(harness_engine(), pid, &e), &e, "proxy start");
	json_decref(labels);

	/* the proxy is not counted as a sandbox */
	assert_int_equal(dispose_json("{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"a\"}", scope), 1);
	assert_false(sbxt_exists(a.name));
	assert_false(sbxt_exists(proxy));
	json_t *n = NULL;
	assert_int_equal(mafsbx_network_inspect(harness_engine(), net, &n, &e), -ENOENT);
	json_decref(n);
}

static void test_foreign_names_are_left_alone(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], foreign[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a;
	sbxt_acquire_ok(scope, "a", "k", "\"capabilities\":[]", &a);
	/* the same labels on a container that is not named as a sandbox */
	struct mafsbx_key k = { scope, SBXT_THREAD, "a", "" };
	json_t *cfg = json_pack("{s:o, s:{s:s}}", "Labels", mafsbx_workload_labels(&k, "k", NULL, NULL), "HostConfig",
				"NetworkMode", "none");
	harness_container_cfg("sbx-foreign", cfg, false, foreign);
	json_decref(cfg);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
	assert_true(sbxt_exists(foreign));
}

/* A plain container (no identity labels) under a sandbox's name; registered for removal. */
static void plain_named(const char *name, const char *net_mode, char id[65])
{
	json_t *cfg = json_pack("{s:s, s:[s,s], s:{s:s}, s:{s:s}}", "Image", harness_image(), "Cmd", "sleep", "infinity",
				"HostConfig", "NetworkMode", net_mode, "Labels", "mafsbxtest", "1");
	struct mafsbx_error e;
	harness_register_container(name);
	harness_check(mafsbx_container_create(harness_engine(), name, cfg, id, &e), &e, "create");
	json_decref(cfg);
	harness_check(mafsbx_container_start(harness_engine(), id, &e), &e, "start");
}

/*
 * Dispose by name removes only what carries the identity
 * labels: a plain container named maf-sandbox-docker-<12 hex> (and its
 * "-proxy" / "-net" namesakes) is refused and left alone, by name and as
 * the name a key maps to.
 */
static void test_plain_container_under_a_sandbox_name(void **state)
{
	(void)state;
	char rnd[HARNESS_NAME_MAX], name[MAFSBX_NAME_LEN + 1], proxy[MAFSBX_NAME_LEN + 8], net[MAFSBX_NAME_LEN + 8];
	char id[65], pid[65], nid[65];
	harness_unique_name("x", rnd);
	snprintf(name, sizeof(name), "%s%s", MAFSBX_NAME_PREFIX, rnd + strlen(rnd) - 12);
	snprintf(proxy, sizeof(proxy), "%s-proxy", name);
	snprintf(net, sizeof(net), "%s-net", name);
	struct mafsbx_error e;
	json_t *ncfg = json_pack("{s:s, s:s, s:b}", "Name", net, "Driver", "bridge", "Internal", 1);
	harness_register_network(net);
	harness_check(mafsbx_network_create(harness_engine(), ncfg, nid, &e), &e, "network create");
	json_decref(ncfg);
	plain_named(name, "none", id);
	plain_named(proxy, net, pid);

	struct mafsbx_dispose_result dr;
	assert_int_equal(mafsbx_sandbox_dispose_name(sbxt_g.b, name, &dr, &e), -EACCES);
	assert_non_null(strstr(e.message, "not a sandbox"));
	assert_int_equal(dr.disposed, 0);
	mafsbx_dispose_result_free(&dr);
	assert_true(sbxt_exists(id));
	assert_true(sbxt_exists(pid));
	json_t *n = NULL;
	assert_int_equal(mafsbx_network_inspect(harness_engine(), net, &n, &e), 0);
	json_decref(n);

	/* the name a key and kind map to, swept even when the listing fails: still checked */
	char scope[HARNESS_NAME_MAX], kname[MAFSBX_NAME_LEN + 1], kid[65];
	sbxt_scope(scope);
	struct mafsbx_key k = { scope, SBXT_THREAD, "a", "" };
	mafsbx_container_name(&k, "k", "", kname);
	plain_named(kname, "none", kid);
	assert_int_equal(mafsbx_sandbox_dispose_key(sbxt_g.b, &k, "k", &dr, &e), 0);
	assert_int_equal(dr.disposed, 0);
	assert_int_equal(dr.n_failures, 1);
	assert_non_null(strstr(dr.failures[0].detail, "not a sandbox"));
	mafsbx_dispose_result_free(&dr);
	assert_true(sbxt_exists(kid));
}

/*
 * Disposing the instance a name was resolved to never
 * removes a sandbox re-created under that name since.
 */
static void test_dispose_by_id_spares_a_recreated_sandbox(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, again;
	sbxt_acquire_ok(scope, "a", "k", "\"capabilities\":[]", &a);
	struct mafsbx_error e;
	harness_check(mafsbx_container_delete(harness_engine(), a.id, true, &e), &e, "delete");
	sbxt_acquire_ok(scope, "a", "k", "\"capabilities\":[]", &again);
	assert_string_equal(again.name, a.name);
	assert_string_not_equal(again.id, a.id);
	struct mafsbx_dispose_result dr;
	assert_int_equal(mafsbx_sandbox_dispose_id(sbxt_g.b, a.name, a.id, &dr, &e), 0);
	assert_int_equal(dr.disposed, 0);
	mafsbx_dispose_result_free(&dr);
	assert_true(sbxt_exists(again.id));
	/* by its own ID it goes */
	assert_int_equal(mafsbx_sandbox_dispose_id(sbxt_g.b, again.name, again.id, &dr, &e), 0);
	assert_int_equal(dr.disposed, 1);
	mafsbx_dispose_result_free(&dr);
	assert_false(sbxt_exists(again.id));
	assert_int_equal(mafsbx_sandbox_dispose_id(sbxt_g.b, a.name, "abc", &dr, &e), -EINVAL);
}

static void test_result_json_and_bad_input(void **state)
{
	(void)state;
	struct mafsbx_dispose_result r = { 0 };
	r.disposed = 2;
	mafsbx_sbx_result_fail(&r, MAFSBX_DISPOSAL_REFUSED, "x: %s", "gone wrong");
	json_t *j = mafsbx_dispose_result_json(&r);
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(text, "{\"disposed\":2,\"failures\":[{\"code\":\"refused\",\"detail\":\"x: gone wrong\"}]}");
	free(text);
	json_decref(j);
	mafsbx_dispose_result_free(&r);
	assert_int_equal(r.n_failures, 0);

	struct mafsbx_dispose_result dr;
	struct mafsbx_error e;
	assert_int_equal(mafsbx_sandbox_dispose_name(sbxt_g.b, "not-a-sandbox", &dr, &e), -EINVAL);
	assert_int_equal(mafsbx_sandbox_dispose_scope(sbxt_g.b, NULL, "t", &dr, &e), -EINVAL);
	struct mafsbx_key k = { "s", "t", NULL, "" };
	assert_int_equal(mafsbx_sandbox_dispose_key(sbxt_g.b, &k, NULL, &dr, &e), -EINVAL);
	assert_string_equal(mafsbx_disposal_code_name(MAFSBX_DISPOSAL_UNLISTED), "unlisted");
}

int main(void)
{
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispose_by_key_and_kind),
		cmocka_unit_test(test_dispose_by_name),
		cmocka_unit_test(test_dispose_conversation),
		cmocka_unit_test(test_proxy_and_network_go_too),
		cmocka_unit_test(test_foreign_names_are_left_alone),
		cmocka_unit_test(test_plain_container_under_a_sandbox_name),
		cmocka_unit_test(test_dispose_by_id_spares_a_recreated_sandbox),
		cmocka_unit_test(test_result_json_and_bad_input),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	sbxt_close();
	return r;
}
