/*
 * it_acquire.c: every acquire path against the real dockerd (doc/upstream.md §4):
 * create, reuse, start a created or exited one, recreate one that will not
 * start, thaw a paused orphan but never a live freeze, adopt a name
 * conflict, two threads (and two backends) asking for one key at once,
 * the hardening visible in inspect, capability probes refusing an image
 * without `sh`/`rm`, the user forms of Config.User, and the work dir
 * present / missing / a symlink / a file / with another label; a failure
 * after the container was made removes it.
 */
#include <pthread.h>

#include "sbx_internal.h"
#include "sbx_testlib.h"

static void test_create_then_reuse(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	struct mafsbx_acquire_result a, b;
	sbxt_acquire_created(scope, "a", "python", &a);
	struct mafsbx_key k = { scope, SBXT_THREAD, "a", "" };
	char want[MAFSBX_NAME_LEN + 1];
	mafsbx_container_name(&k, "python", "", want);
	assert_string_equal(a.name, want);
	assert_int_equal(strlen(a.id), 64);
	assert_string_equal(a.work_dir, "/maf-sandbox/work");
	assert_true(a.identity_resolved);
	assert_int_equal(a.uid, 0);   /* the test image runs as root */
	/* the work dir exists */
	char *o = sbxt_sh_out(a.name, "test -d /maf-sandbox/work && echo yes");
	assert_string_equal(o, "yes");
	free(o);

	sbxt_acquire_ok(scope, "a", "python", NULL, &b);
	assert_int_equal(b.state, MAFSBX_ACQ_REUSED);
	assert_string_equal(b.id, a.id);
	assert_string_equal(b.name, a.name);

	/* another kind under the same key is another container */
	sbxt_acquire_ok(scope, "a", "bicep", NULL, &b);
	assert_int_equal(b.state, MAFSBX_ACQ_CREATED);
	assert_string_not_equal(b.id, a.id);
	assert_int_equal(sbxt_dispose_scope(scope), 2);
}

static void test_hardening_in_inspect(void **state)
{
	(void)state;
	struct mafsbx_sandbox_config cfg;
	mafsbx_sandbox_config_defaults(&cfg);
	cfg.default_image = harness_image();
	cfg.cap_drop_all = true;
	cfg.memory_bytes = 64ll * 1024 * 1024;
	cfg.cpus = 0.5;
	struct mafsbx_backend *hb = sbxt_backend_with(&cfg);
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_spec *s = sbxt_spec(
		"{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"agent with spaces\",\"kind\":\"k\","
		"\"outputs\":[\"result.json\",\"plots/fig1.png\"],\"env\":{\"K\":\"V\"},\"labels\":{\"team\":\"infra\"}}",
		scope);
	struct mafsbx_acquire_result r;
	struct mafsbx_error e;
	harness_check(sbxt_acquire_on(hb, s, &r, &e), &e, "acquire");
	json_t *j = sbxt_inspect(r.id);
	json_t *hc = json_object_get(j, "HostConfig");
	assert_string_equal(json_string_value(json_object_get(hc, "NetworkMode")), "none");
	assert_string_equal(json_string_value(json_array_get(json_object_get(hc, "SecurityOpt"), 0)), "no-new-privileges");
	assert_int_equal(json_integer_value(json_object_get(hc, "PidsLimit")), 512);
	assert_string_equal(json_string_value(json_array_get(json_object_get(hc, "CapDrop"), 0)), "ALL");
	assert_int_equal(json_integer_value(json_object_get(hc, "Memory")), 64ll * 1024 * 1024);
	assert_int_equal(json_integer_value(json_object_get(hc, "MemorySwap")), 64ll * 1024 * 1024);
	assert_int_equal(json_integer_value(json_object_get(hc, "NanoCpus")), 500000000);
	assert_true(json_array_size(json_object_get(j, "Mounts")) == 0);
	json_t *binds = json_object_get(hc, "Binds");
	assert_true(!binds || json_is_null(binds) || json_array_size(binds) == 0);
	json_t *cmd = json_object_get(json_object_get(j, "Config"), "Cmd");
	assert_int_equal(json_array_size(cmd), 2);
	assert_string_equal(json_string_value(json_array_get(cmd, 0)), "sleep");
	assert_string_equal(json_string_value(json_array_get(cmd, 1)), "infinity");
	json_t *l = json_object_get(json_object_get(j, "Config"), "Labels");
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_SCOPE)), scope);
	char want[MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value("agent with spaces", want);
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_AGENT)), want);
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_KIND)), "k");
	assert_null(json_object_get(l, MAFSBX_LABEL_CALL));
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_WORK_DIR_V1)), "/maf-sandbox/work");
	assert_string_equal(json_string_value(json_object_get(l, "maf-sandbox.label.team")), "infra");
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_OUTPUTS)),
			    "[\"result.json\",\"plots/fig1.png\"]");
	char *attr = mafsbx_key_attribution(&s->key);
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_KEY_V1)), attr);
	free(attr);
	/* env reached the container */
	bool has_env = false;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(j, "Config"), "Env"), i, v)
		has_env |= strcmp(json_string_value(v), "K=V") == 0;
	assert_true(has_env);
	/* and inside: no capabilities, no-new-privs, loopback only */
	char *o = sbxt_sh_out(r.name, "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | tr -s '\\t ' ' '; ls /sys/class/net");
	assert_non_null(strstr(o, "CapEff: 0000000000000000"));
	assert_non_null(strstr(o, "NoNewPrivs: 1"));
	assert_non_null(strstr(o, "lo"));
	assert_null(strstr(o, "eth0"));
	free(o);
	json_decref(j);
	mafsbx_acquire_spec_free(s);
	mafsbx_backend_free(hb);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

static void test_start_created_and_exited(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], name[MAFSBX_NAME_LEN + 1], id[65];
	sbxt_scope(scope);
	/* created, never started */
	sbxt_upstream_container(scope, "a", "created", NULL, false, name, id);
	struct mafsbx_acquire_result r;
	sbxt_acquire_ok(scope, "a", "created", NULL, &r);
	assert_int_equal(r.state, MAFSBX_ACQ_STARTED);
	assert_string_equal(r.id, id);
	json_t *j = sbxt_inspect(id);
	assert_true(json_is_true(json_object_get(json_object_get(j, "State"), "Running")));
	json_decref(j);

	/* exited: its command exits the first time and keeps alive the second */
	json_t *extra = sbxt_json("{\"Cmd\":[\"sh\",\"-c\",\"[ -e /tmp/ran ] && exec sleep infinity; touch /tmp/ran\"]}");
	sbxt_upstream_container(scope, "a", "exited", extra, true, name, id);
	json_decref(extra);
	for (int i = 0; i < 100; i++) {
		j = sbxt_inspect(id);
		const char *st = json_string_value(json_object_get(json_object_get(j, "State"), "Status"));
		bool exited = st && strcmp(st, "exited") == 0;
		json_decref(j);
		if (exited)
			break;
		usleep(50 * 1000);
	}
	sbxt_acquire_ok(scope, "a", "exited", NULL, &r);
	assert_int_equal(r.state, MAFSBX_ACQ_STARTED);
	assert_string_equal(r.id, id);
	assert_int_equal(sbxt_dispose_scope(scope), 2);
}

static void test_start_failure_recreates(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], name[MAFSBX_NAME_LEN + 1], id[65], net[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	harness_unique_name("nonet", net);
	/* a network that does not exist: create works, start fails */
	json_t *extra = sbxt_json("{\"HostConfig\":{\"NetworkMode\":\"%s\"}}", net);
	sbxt_upstream_container(scope, "a", "k", extra, false, name, id);
	json_decref(extra);
	struct mafsbx_acquire_result r;
	sbxt_acquire_ok(scope, "a", "k", NULL, &r);
	assert_int_equal(r.state, MAFSBX_ACQ_CREATED);
	assert_string_equal(r.name, name);
	assert_string_not_equal(r.id, id);
	assert_false(sbxt_exists(id));
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

static void test_recover_paused_orphan(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, b;
	sbxt_acquire_ok(scope, "a", "k", NULL, &a);
	struct mafsbx_error e;
	/* paused by someone who is gone: no live freeze anywhere */
	harness_check(mafsbx_container_pause(harness_engine(), a.id, &e), &e, "pause");
	sbxt_acquire_ok(scope, "a", "k", NULL, &b);
	assert_int_equal(b.state, MAFSBX_ACQ_STARTED);
	assert_string_equal(b.id, a.id);
	json_t *j = sbxt_inspect(a.id);
	assert_false(json_is_true(json_object_get(json_object_get(j, "State"), "Paused")));
	json_decref(j);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

static void test_live_freeze_is_not_thawed(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, b;
	sbxt_acquire_ok(scope, "a", "k", NULL, &a);
	struct mafsbx_freeze *h = NULL;
	struct mafsbx_error e;
	harness_check(mafsbx_freeze_enter(sbxt_g.fz, a.id, 0, &h, &e), &e, "freeze");
	/* a live freeze (ours): acquire must not thaw it */
	sbxt_acquire_ok(scope, "a", "k", NULL, &b);
	assert_string_equal(b.id, a.id);
	json_t *j = sbxt_inspect(a.id);
	assert_true(json_is_true(json_object_get(json_object_get(j, "State"), "Paused")));
	json_decref(j);
	mafsbx_freeze_leave(h);
	j = sbxt_inspect(a.id);
	assert_false(json_is_true(json_object_get(json_object_get(j, "State"), "Paused")));
	json_decref(j);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

struct conflict_ctx {
	const char *scope;
	const char *kind;
	bool start;
	char id[65];
	int calls;
};

static void make_conflict(const char *name, void *ctx)
{
	struct conflict_ctx *c = ctx;
	char n2[MAFSBX_NAME_LEN + 1];
	c->calls++;
	/* another process wins the race: the same container, made between inspect and create */
	sbxt_upstream_container(c->scope, "a", c->kind, NULL, c->start, n2, c->id);
	assert_string_equal(n2, name);
}

static void test_adopt_name_conflict(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct conflict_ctx c = { scope, "running", true, "", 0 };
	sbx_test_before_create = make_conflict;
	sbx_test_before_create_ctx = &c;
	struct mafsbx_acquire_result r;
	sbxt_acquire_ok(scope, "a", "running", NULL, &r);
	sbx_test_before_create = NULL;
	assert_int_equal(c.calls, 1);
	assert_int_equal(r.state, MAFSBX_ACQ_REUSED);
	assert_string_equal(r.id, c.id);
	char first[65];
	snprintf(first, sizeof(first), "%s", c.id);

	/* the winner's container is not running yet: adopted and started */
	struct conflict_ctx c2 = { scope, "stopped", false, "", 0 };
	sbx_test_before_create = make_conflict;
	sbx_test_before_create_ctx = &c2;
	sbxt_acquire_ok(scope, "a", "stopped", NULL, &r);
	sbx_test_before_create = NULL;
	assert_int_equal(c2.calls, 1);
	assert_int_equal(r.state, MAFSBX_ACQ_STARTED);
	assert_string_equal(r.id, c2.id);
	assert_int_equal(sbxt_dispose_scope(scope), 2);
	assert_false(sbxt_exists(first));
	assert_false(sbxt_exists(c2.id));
}

struct racer {
	struct mafsbx_backend *b;
	struct mafsbx_acquire_spec *s;
	struct mafsbx_acquire_result r;
	struct mafsbx_error e;
	int rc;
	pthread_barrier_t *bar;
};

static void *race(void *arg)
{
	struct racer *x = arg;
	pthread_barrier_wait(x->bar);
	x->rc = mafsbx_sandbox_acquire(x->b, x->s, &x->r, &x->e);
	return NULL;
}

static void run_race(struct mafsbx_backend **backends, size_t n, const char *scope, const char *kind)
{
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, (unsigned)n);
	struct racer x[4];
	pthread_t th[4];
	for (size_t i = 0; i < n; i++) {
		x[i] = (struct racer){ .b = backends[i], .bar = &bar };
		x[i].s = sbxt_spec("{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"%s\"}", scope, kind);
		char name[MAFSBX_NAME_LEN + 1];
		mafsbx_container_name(&x[i].s->key, kind, "", name);
		harness_register_container(name);
		pthread_create(&th[i], NULL, race, &x[i]);
	}
	int created = 0;
	for (size_t i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		if (x[i].rc < 0)
			fail_msg("racer %zu: %s", i, x[i].e.message);
		assert_string_equal(x[i].r.id, x[0].r.id);
		created += x[i].r.state == MAFSBX_ACQ_CREATED;
		mafsbx_acquire_spec_free(x[i].s);
	}
	assert_int_equal(created, 1);
	pthread_barrier_destroy(&bar);
	struct mafsbx_sandbox_info *list;
	size_t cnt;
	struct mafsbx_error e;
	harness_check(mafsbx_sandbox_list(sbxt_g.b, scope, &list, &cnt, &e), &e, "list");
	size_t of_kind = 0;
	for (size_t i = 0; i < cnt; i++)
		of_kind += strcmp(list[i].kind, kind) == 0;
	assert_int_equal(of_kind, 1);
	mafsbx_sandbox_info_free_array(list, cnt);
}

static void test_concurrent_acquires_one_container(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	/* four threads of one process */
	struct mafsbx_backend *same[4] = { sbxt_g.b, sbxt_g.b, sbxt_g.b, sbxt_g.b };
	run_race(same, 4, scope, "threads");
	/* two backends with their own locks (as two processes): the engine's name clash decides */
	struct mafsbx_sandbox_config cfg;
	mafsbx_sandbox_config_defaults(&cfg);
	cfg.default_image = harness_image();
	struct mafsbx_backend *two[2] = { sbxt_backend_with(&cfg), sbxt_backend_with(&cfg) };
	run_race(two, 2, scope, "processes");
	mafsbx_backend_free(two[0]);
	mafsbx_backend_free(two[1]);
	assert_int_equal(sbxt_dispose_scope(scope), 2);
}

static void test_image_without_sh_or_rm(void **state)
{
	(void)state;
	static const char *const applets[] = { "sleep", NULL };
	static const char *const changes[] = { "CMD [\"/bin/sleep\", \"infinity\"]", NULL };
	char ref[HARNESS_NAME_MAX + 16];
	sbxt_tiny_image("sbx-nosh", applets, NULL, 0, changes, ref);
	char scope[HARNESS_NAME_MAX], extra[300];
	sbxt_scope(scope);
	struct mafsbx_error e;
	snprintf(extra, sizeof(extra), "\"image\":\"%s\",\"capabilities\":[\"exec\"]", ref);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "k", extra, &e), -EOPNOTSUPP);
	assert_string_equal(e.type, "SandboxCapabilityNotSupported");
	assert_non_null(strstr(e.message, "'sh' probe"));
	assert_non_null(strstr(e.message, ref));
	/* files_delete needs rm */
	snprintf(extra, sizeof(extra), "\"image\":\"%s\",\"capabilities\":[\"files_delete\"]", ref);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "k", extra, &e), -EOPNOTSUPP);
	assert_non_null(strstr(e.message, "'rm' probe"));
	/* host_tools needs the script's tools */
	snprintf(extra, sizeof(extra), "\"image\":\"%s\",\"capabilities\":[\"host_tools\"]", ref);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "k", extra, &e), -EOPNOTSUPP);
	assert_non_null(strstr(e.message, "host-tools"));
	/* a runtime-only spec needs none of them; the refused acquires left no container behind */
	struct mafsbx_acquire_result r;
	snprintf(extra, sizeof(extra), "\"image\":\"%s\",\"capabilities\":[]", ref);
	sbxt_acquire_ok(scope, "a", "k", extra, &r);
	assert_int_equal(r.state, MAFSBX_ACQ_CREATED);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

static void test_probes_pass(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX], extra[400];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r;
	sbxt_acquire_ok(scope, "a", "k", "\"capabilities\":[\"exec\",\"files_in\",\"files_out\",\"files_delete\"]", &r);
	assert_int_equal(r.state, MAFSBX_ACQ_CREATED);
	/* host_tools: sh, mkdir, mv and nohup (the test image's busybox has no nohup applet: a script stands in) */
	static const char *const applets[] = { "sleep", "sh", "mkdir", "mv", "ls", NULL };
	static const char *const changes[] = { "CMD [\"/bin/sleep\", \"infinity\"]", NULL };
	static const struct sbxt_file files[] = {
		{ "bin/nohup", "#!/bin/sh\nexec \"$@\"\n", NULL, false, 0755 },
	};
	char ref[HARNESS_NAME_MAX + 16];
	sbxt_tiny_image("sbx-tools", applets, files, 1, changes, ref);
	snprintf(extra, sizeof(extra), "\"image\":\"%s\",\"capabilities\":[\"host_tools\"]", ref);
	sbxt_acquire_ok(scope, "a", "tools", extra, &r);
	/* the host-tools probe leaves nothing behind */
	char *o = sbxt_sh_out(r.name, "ls -a /");
	assert_null(strstr(o, "maf-command-probe"));
	free(o);
	/* the test image itself lacks nohup: refused, naming the probe */
	struct mafsbx_error e;
	assert_int_equal(sbxt_acquire_fails(scope, "a", "k", "\"capabilities\":[\"host_tools\"]", &e), -EOPNOTSUPP);
	assert_non_null(strstr(e.message, "'host-tools' probe exited 13"));
	assert_int_equal(sbxt_dispose_scope(scope), 2);
}

struct user_row {
	const char *user;
	uid_t uid;
	gid_t gid;
};

static void test_user_forms(void **state)
{
	(void)state;
	/* the test image's passwd: root 0:0, sandbox 1000:1000; group: root 0, sandbox 1000 */
	const struct user_row rows[] = {
		{ "", 0, 0 },
		{ "0:0", 0, 0 },
		{ "sandbox", 1000, 1000 },            /* named: passwd */
		{ "1000", 1000, 1000 },               /* numeric: gid from its passwd line */
		{ "4242", 4242, 0 },                  /* numeric, no passwd line: group 0, as Docker runs it */
		{ "sandbox:root", 1000, 0 },          /* group from the group file, not passwd */
		{ "4242:sandbox", 4242, 1000 },       /* the group file only */
		{ ":20001", 0, 20001 },
		{ ":", 0, 0 },
	};
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char kind[16], name[MAFSBX_NAME_LEN + 1], id[65];
		snprintf(kind, sizeof(kind), "user%zu", i);
		json_t *extra = sbxt_json("{\"User\":\"%s\"}", rows[i].user);
		sbxt_upstream_container(scope, "a", kind, extra, false, name, id);
		json_decref(extra);
		struct mafsbx_acquire_result r;
		sbxt_acquire_ok(scope, "a", kind, "\"capabilities\":[\"exec\",\"files_in\",\"files_out\"]", &r);
		if (!r.identity_resolved || r.uid != rows[i].uid || r.gid != rows[i].gid)
			fail_msg("user '%s': got %u:%u (resolved %d), want %u:%u", rows[i].user, (unsigned)r.uid,
				 (unsigned)r.gid, r.identity_resolved, (unsigned)rows[i].uid, (unsigned)rows[i].gid);
		/* the work dir it made belongs to that identity */
		char *o = sbxt_sh_out(r.name, "stat -c '%u:%g %a' /maf-sandbox/work /maf-sandbox");
		char want[64];
		snprintf(want, sizeof(want), "%u:%u 755\n0:0 755", (unsigned)rows[i].uid, (unsigned)rows[i].gid);
		assert_string_equal(o, want);
		free(o);
		/* the resolved identity is cached and reported by lookup */
		struct mafsbx_sandbox_info info;
		struct mafsbx_error e;
		harness_check(mafsbx_sandbox_lookup(sbxt_g.b, r.name, &info, &e), &e, "lookup");
		assert_true(info.identity_known);
		assert_int_equal(info.uid, rows[i].uid);
		mafsbx_sandbox_info_clear(&info);
	}
	assert_int_equal(sbxt_dispose_scope(scope), sizeof(rows) / sizeof(rows[0]));
}

static void test_unresolvable_user(void **state)
{
	(void)state;
	/* passwd is a link (the archive read refuses it) and there is no `id`: nothing resolves */
	static const char *const applets[] = { "sleep", "sh", "mkdir", "stat", NULL };
	static const char *const changes[] = { "CMD [\"/bin/sleep\", \"infinity\"]", "USER ghost", NULL };
	static const struct sbxt_file files[] = {
		{ "etc", NULL, NULL, true, 0 },
		{ "etc/passwd.real", "root:x:0:0:root:/:/bin/sh\nghost:x:4343:4343:ghost:/:/bin/sh\n", NULL, false, 0 },
		{ "etc/passwd", NULL, "passwd.real", false, 0 },
	};
	char ref[HARNESS_NAME_MAX + 16];
	sbxt_tiny_image("sbx-ghost", applets, files, 3, changes, ref);
	char scope[HARNESS_NAME_MAX], extra[300];
	sbxt_scope(scope);
	struct mafsbx_error e;
	snprintf(extra, sizeof(extra), "\"image\":\"%s\",\"capabilities\":[\"exec\",\"files_out\"]", ref);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "k", extra, &e), -EOPNOTSUPP);
	assert_non_null(strstr(e.message, "could not be resolved"));
	assert_non_null(strstr(e.message, "files_out"));
	snprintf(extra, sizeof(extra), "\"image\":\"%s\",\"capabilities\":[\"host_tools\"]", ref);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "k", extra, &e), -EOPNOTSUPP);
	assert_non_null(strstr(e.message, "host_tools"));
	/* exec alone is served; the identity stays unresolved (nothing is written at it) */
	struct mafsbx_acquire_result r;
	snprintf(extra, sizeof(extra), "\"image\":\"%s\",\"capabilities\":[\"exec\"]", ref);
	sbxt_acquire_ok(scope, "a", "k", extra, &r);
	assert_false(r.identity_resolved);
	assert_int_equal(r.uid, 0);
	assert_int_equal(r.gid, 0);
	char *o = sbxt_sh_out(r.name, "stat -c '%u:%g' /maf-sandbox/work");
	assert_string_equal(o, "0:0");
	free(o);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

/*
 * Acquire (scope, "a", kind) with work_dir wd and no capabilities, plant the
 * hostile layout with `plant` in the guest, then a second acquire (extra JSON
 * after the work_dir) must fail with want: the base is checked again.
 */
static void planted_work_dir_refused(const char *scope, const char *kind, const char *wd, const char *plant,
				     const char *extra, int want, struct mafsbx_acquire_result *r)
{
	char req[256];
	struct mafsbx_error e;
	snprintf(req, sizeof(req), "\"work_dir\":\"%s\",\"capabilities\":[]", wd);
	sbxt_acquire_ok(scope, "a", kind, req, r);
	free(sbxt_sh_out(r->name, plant));
	snprintf(req, sizeof(req), "\"work_dir\":\"%s\"%s", wd, extra);
	assert_int_equal(sbxt_acquire_fails(scope, "a", kind, req, &e), want);
}

static void test_work_dir_cases(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r;
	struct mafsbx_error e;

	/* present: kept exactly as it is (owner and mode) */
	sbxt_acquire_ok(scope, "a", "present", "\"work_dir\":\"/srv/wdp\",\"capabilities\":[]", &r);
	free(sbxt_sh_out(r.name, "mkdir -p /srv/wdp && chown 1234:4321 /srv/wdp && chmod 0711 /srv/wdp && touch /srv/wdp/keep"));
	sbxt_acquire_ok(scope, "a", "present", "\"work_dir\":\"/srv/wdp\"", &r);
	assert_int_equal(r.state, MAFSBX_ACQ_REUSED);
	char *o = sbxt_sh_out(r.name, "stat -c '%u:%g %a' /srv/wdp; ls /srv/wdp");
	assert_string_equal(o, "1234:4321 711\nkeep");
	free(o);

	/* missing: made, ancestors root's, the base the guest's */
	json_t *extra = sbxt_json("{\"User\":\"1000:1000\"}");
	char name[MAFSBX_NAME_LEN + 1], id[65];
	sbxt_upstream_container(scope, "a", "missing", extra, true, name, id);
	json_decref(extra);
	/* the upstream-style container carries the default work-dir label: ask for it */
	sbxt_acquire_ok(scope, "a", "missing", NULL, &r);
	o = sbxt_sh_out(r.name, "stat -c '%u:%g %a' /maf-sandbox /maf-sandbox/work");
	assert_string_equal(o, "0:0 755\n1000:1000 755");
	free(o);

	/* a symlink: refused (ELOOP), nothing made through it */
	planted_work_dir_refused(scope, "link", "/srv/wdl", "mkdir -p /tmp/target /srv && ln -s /tmp/target /srv/wdl", "",
				 -ELOOP, &r);
	/* ... and a link above the base too */
	planted_work_dir_refused(scope, "link2", "/srv/wdl/deeper", "mkdir -p /tmp/target /srv && ln -s /tmp/target /srv/wdl",
				 "", -ELOOP, &r);
	o = sbxt_sh_out(r.name, "ls -A /tmp/target | wc -l");
	assert_string_equal(o, "0");
	free(o);

	/* a file: refused (ENOTDIR) */
	planted_work_dir_refused(scope, "file", "/srv/wdf", "mkdir -p /srv && echo x > /srv/wdf", "", -ENOTDIR, &r);
	/* a file as an ancestor of the base */
	planted_work_dir_refused(scope, "file2", "/srv/wdf2/sub", "mkdir -p /srv && echo x > /srv/wdf2",
				 ",\"capabilities\":[\"files_in\"]", -ENOTDIR, &r);

	/* another work dir for an existing sandbox: refused, asking to dispose it */
	assert_int_equal(sbxt_acquire_fails(scope, "a", "present", "\"work_dir\":\"/srv/other\"", &e), -EINVAL);
	assert_non_null(strstr(e.message, "dispose it"));
	assert_non_null(strstr(e.message, "/srv/wdp"));
	/* a container with no work-dir label (an older release) is refused the same way */
	json_t *nolabel = sbxt_json("{\"Labels\":{\"maf-sandbox.scope\":\"%s\",\"maf-sandbox.thread\":\"t\","
				    "\"maf-sandbox.agent\":\"a\",\"maf-sandbox.kind\":\"old\"}}",
				    scope);
	sbxt_upstream_container(scope, "a", "old", nolabel, true, name, id);
	json_decref(nolabel);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "old", NULL, &e), -EINVAL);
	assert_non_null(strstr(e.message, "no maf-sandbox.work-dir.v1 label"));

	/* a base of / needs no preparation and takes no freeze */
	sbxt_acquire_ok(scope, "a", "root", "\"work_dir\":\"/\"", &r);
	assert_string_equal(r.work_dir, "/");
	assert_int_equal(sbxt_dispose_scope(scope), 8);
}

/* A failure after the container was created (here the work dir, under a file) removes it. */
static void test_failed_acquire_leaves_nothing(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_error e;
	struct mafsbx_key k = { scope, SBXT_THREAD, "a", "" };
	char name[MAFSBX_NAME_LEN + 1];
	mafsbx_container_name(&k, "nowd", "", name);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "nowd", "\"work_dir\":\"/etc/passwd/w\"", &e), -ENOTDIR);
	assert_non_null(strstr(e.message, "was removed"));
	assert_false(sbxt_exists(name));
	/* the same for a failed capability probe (an image without rm) */
	static const char *const applets[] = { "sleep", NULL };
	static const char *const changes[] = { "CMD [\"/bin/sleep\", \"infinity\"]", NULL };
	char ref[HARNESS_NAME_MAX + 16], extra[300];
	sbxt_tiny_image("sbx-norm", applets, NULL, 0, changes, ref);
	snprintf(extra, sizeof(extra), "\"image\":\"%s\",\"capabilities\":[\"files_delete\"]", ref);
	mafsbx_container_name(&k, "norm", "", name);
	assert_int_equal(sbxt_acquire_fails(scope, "a", "norm", extra, &e), -EOPNOTSUPP);
	assert_false(sbxt_exists(name));
	assert_int_equal(sbxt_dispose_scope(scope), 0);
}

static void test_refusals_before_any_engine_call(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_error e;
	assert_int_equal(sbxt_acquire_fails(scope, "a", "k", "\"egress\":\"allowlist\",\"egress_allow\":[\"x.com\"]", &e),
			 -EOPNOTSUPP);
	assert_string_equal(e.type, "SandboxEgressNotEnforced");
	assert_non_null(strstr(e.message, "egress_proxy_image"));
	assert_int_equal(sbxt_acquire_fails(scope, "a", "k", "\"requires_os_family\":\"windows\"", &e), -EOPNOTSUPP);
	assert_string_equal(e.type, "SandboxOsFamilyNotSupported");
	/* with a proxy image that does not exist, the allowlist fails before anything is made */
	struct mafsbx_sandbox_config cfg;
	mafsbx_sandbox_config_defaults(&cfg);
	cfg.default_image = harness_image();
	cfg.egress_proxy_image = "mafsbxtest-proxy:none";
	struct mafsbx_backend *pb = sbxt_backend_with(&cfg);
	struct mafsbx_acquire_spec *s = sbxt_spec("{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k\","
						  "\"egress\":\"allowlist\",\"egress_allow\":[\"x.com\"]}",
						  scope);
	struct mafsbx_acquire_result r;
	assert_int_equal(sbxt_acquire_on(pb, s, &r, &e), -ENOENT);
	assert_non_null(strstr(e.message, "mkimage --egress-proxy"));
	mafsbx_acquire_spec_free(s);
	mafsbx_backend_free(pb);
	/* nothing was created */
	assert_int_equal(sbxt_dispose_scope(scope), 0);
	/* posix is declared on a linux engine, so a spec asking for it is served */
	struct mafsbx_acquire_result ok;
	sbxt_acquire_ok(scope, "a", "posix", "\"requires_os_family\":\"posix\",\"capabilities\":[]", &ok);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

int main(void)
{
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_then_reuse),
		cmocka_unit_test(test_hardening_in_inspect),
		cmocka_unit_test(test_start_created_and_exited),
		cmocka_unit_test(test_start_failure_recreates),
		cmocka_unit_test(test_recover_paused_orphan),
		cmocka_unit_test(test_live_freeze_is_not_thawed),
		cmocka_unit_test(test_adopt_name_conflict),
		cmocka_unit_test(test_concurrent_acquires_one_container),
		cmocka_unit_test(test_image_without_sh_or_rm),
		cmocka_unit_test(test_probes_pass),
		cmocka_unit_test(test_user_forms),
		cmocka_unit_test(test_unresolvable_user),
		cmocka_unit_test(test_work_dir_cases),
		cmocka_unit_test(test_failed_acquire_leaves_nothing),
		cmocka_unit_test(test_refusals_before_any_engine_call),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	sbxt_close();
	return r;
}
