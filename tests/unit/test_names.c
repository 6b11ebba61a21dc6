/*
 * test_names.c: every name and label vector of
 * doc/upstream.md §2 (computed by the upstream
 * algorithm), the key.v1 spelling (Python json.dumps + base64url), its
 * strict decoding, and the workload label set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "names.h"

static void name_of(const char *s, const char *t, const char *a, const char *call, const char *kind,
		    const char *egress, char out[MAFSBX_NAME_LEN + 1])
{
	struct mafsbx_key k = { s, t, a, call };
	mafsbx_container_name(&k, kind, egress, out);
}

static void test_container_names(void **state)
{
	(void)state;
	char n[MAFSBX_NAME_LEN + 1];
	name_of("scope-a", "thread-1", "devops-engineer", "", "bicep", "", n);
	assert_string_equal(n, "maf-sandbox-docker-6f8a8ed7a21c");
	/* NULL call and NULL egress id behave as "" */
	name_of("scope-a", "thread-1", "devops-engineer", NULL, "bicep", NULL, n);
	assert_string_equal(n, "maf-sandbox-docker-6f8a8ed7a21c");
	name_of("scope-a", "thread-1", "devops-engineer", "", "bicep",
		"allow:*.data.mcr.microsoft.com,mcr.microsoft.com", n);
	assert_string_equal(n, "maf-sandbox-docker-8677814e213f");
	name_of("scope-a", "thread-1", "devops-engineer", "c1", "bicep", "", n);
	assert_string_equal(n, "maf-sandbox-docker-97319a388df0");
	/* length prefixes keep these apart */
	name_of("a|b", "c", "d", "", "k", "", n);
	assert_string_equal(n, "maf-sandbox-docker-db1f1ee838cc");
	name_of("a", "b|c", "d", "", "k", "", n);
	assert_string_equal(n, "maf-sandbox-docker-9572b337205f");
	/* non-ASCII: the length prefix counts UTF-8 bytes */
	name_of("na\xc3\xafve", "t", "a", "\xc3\xbc", "k", "", n);
	assert_string_equal(n, "maf-sandbox-docker-981cb95aba09");
	assert_int_equal(strlen(n), MAFSBX_NAME_LEN);
	assert_true(mafsbx_is_workload_name(n));
}

static void test_kind_is_part_of_the_name(void **state)
{
	(void)state;
	char a[MAFSBX_NAME_LEN + 1], b[MAFSBX_NAME_LEN + 1];
	name_of("s", "t", "a", "", "python", "", a);
	name_of("s", "t", "a", "", "bicep", "", b);
	assert_string_not_equal(a, b);
}

static void test_egress_id_sorted(void **state)
{
	(void)state;
	const char *allow[] = { "mcr.microsoft.com", "*.data.mcr.microsoft.com" };
	char *id = mafsbx_egress_id(allow, 2);
	assert_non_null(id);
	assert_string_equal(id, "allow:*.data.mcr.microsoft.com,mcr.microsoft.com");
	free(id);
	id = mafsbx_egress_id(NULL, 0);
	assert_string_equal(id, "");
	free(id);
}

struct lv_row {
	const char *in;
	const char *out;
};

static void test_label_value_table(void **state)
{
	(void)state;
	char x63[64], x64[65];
	memset(x63, 'x', 63), x63[63] = '\0';
	memset(x64, 'x', 64), x64[64] = '\0';
	const struct lv_row rows[] = {
		{ "scope-a", "scope-a" },
		{ "", "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c" },
		{ "a=b", "sha256-42144f3939c3ffbbf0bf8b1f12affb5c23a4c5bd41e0ff67" },
		{ x63, x63 },
		{ x64, "sha256-7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d" },
		{ "an operator scope with spaces", "sha256-e9ccbc0bb3ed525b08b262eeb283ea10957850c401332bdb" },
		{ "na\xc3\xafve", "sha256-f86fd89de87a848a45bfe77708d91a5d2ff48b8e4a4b98af" },
		/* digest-shaped input is digested again */
		{ "sha256-42144f3939c3ffbbf0bf8b1f12affb5c23a4c5bd41e0ff67",
		  "sha256-734ca30859ff8a7f153d0d9c62ed43e27da136f1468d372c" },
		{ "A.b_c-9", "A.b_c-9" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char out[MAFSBX_LABEL_VALUE_MAX + 1];
		mafsbx_label_value(rows[i].in, out);
		if (strcmp(out, rows[i].out) != 0)
			fail_msg("row %zu: label_value(\"%s\") = %s, want %s", i, rows[i].in, out, rows[i].out);
	}
	/* NULL is the empty value */
	char out[MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value(NULL, out);
	assert_string_equal(out, rows[1].out);
}

static void test_label_value_no_prefix_collision(void **state)
{
	(void)state;
	char a[101], b[101], la[64], lb[64];
	memset(a, 'x', 100), a[100] = '\0';
	memset(b, 'x', 99), b[99] = 'y', b[100] = '\0';
	mafsbx_label_value(a, la);
	mafsbx_label_value(b, lb);
	assert_string_equal(la, "sha256-09ecb6ebc8bcefc733f6f2ec44f791abeed6a99edf0cc315");
	assert_string_equal(lb, "sha256-d035ca921af6dd8b246d033bf342014cd3bb62853f09de18");
}

static void test_key_attribution(void **state)
{
	(void)state;
	struct mafsbx_key k = { "s", "t", "a", "" };
	char *v = mafsbx_key_attribution(&k);
	assert_string_equal(v, "WyJzIiwgInQiLCAiYSIsICIiXQ==");
	free(v);
	/* NULL call spells as "" */
	struct mafsbx_key k0 = { "s", "t", "a", NULL };
	v = mafsbx_key_attribution(&k0);
	assert_string_equal(v, "WyJzIiwgInQiLCAiYSIsICIiXQ==");
	free(v);
	struct mafsbx_key k2 = { "scope-a", "thread-1", "devops-engineer", "c1" };
	v = mafsbx_key_attribution(&k2);
	assert_string_equal(v, "WyJzY29wZS1hIiwgInRocmVhZC0xIiwgImRldm9wcy1lbmdpbmVlciIsICJjMSJd");
	free(v);
}

static void test_key_attribution_escaping(void **state)
{
	(void)state;
	/* naïve; newline, quote, backslash; an astral char (surrogate pair), DEL, \x01; slash unescaped */
	struct mafsbx_key k = { "na\xc3\xafve", "t\n\"\\", "\xf0\x9f\x98\x80\x7f\x01", "c/1" };
	char *v = mafsbx_key_attribution(&k);
	assert_string_equal(v, "WyJuYVx1MDBlZnZlIiwgInRcblwiXFwiLCAiXHVkODNkXHVkZTAwXHUwMDdmXHUwMDAxIiwgImMvMSJd");
	/* and it decodes back to the same four strings */
	char *s, *t, *a, *c;
	assert_int_equal(mafsbx_key_attribution_decode(v, &s, &t, &a, &c), 0);
	assert_string_equal(s, k.scope);
	assert_string_equal(t, k.thread);
	assert_string_equal(a, k.agent);
	assert_string_equal(c, k.call);
	free(s), free(t), free(a), free(c), free(v);
}

static void test_key_attribution_too_long(void **state)
{
	(void)state;
	char *big = malloc(4098);
	memset(big, 'a', 4097), big[4097] = '\0';
	struct mafsbx_key k = { big, "", "", "" };
	char *v = mafsbx_key_attribution(&k);
	assert_string_equal(v, "");
	free(v);
	/* 4096 characters in total is not over the character bound, but its encoding is */
	big[4000] = '\0';
	char b96[97];
	memset(b96, 'b', 96), b96[96] = '\0';
	struct mafsbx_key k2 = { big, b96, "", "" };
	v = mafsbx_key_attribution(&k2);
	assert_string_equal(v, "");
	free(v);
	/* a multi-byte key counts characters, not bytes: 1500 x "é" (3000 bytes) encodes under 4096 */
	char *e = malloc(3001);
	for (int i = 0; i < 1500; i++)
		e[2 * i] = (char)0xc3, e[2 * i + 1] = (char)0xa9;
	e[3000] = '\0';
	struct mafsbx_key k3 = { "s", "t", "a", "" };
	k3.scope = e;
	v = mafsbx_key_attribution(&k3);
	/* 1500 x "\u00e9" is 9000 JSON chars: over 4096 once encoded */
	assert_string_equal(v, "");
	free(v);
	e[20] = '\0';
	v = mafsbx_key_attribution(&k3);
	assert_true(strlen(v) > 0);
	free(v);
	free(e);
	free(big);
}

static void test_key_attribution_decode_strict(void **state)
{
	(void)state;
	char *s = NULL, *t = NULL, *a = NULL, *c = NULL;
	assert_int_equal(mafsbx_key_attribution_decode("WyJzIiwgInQiLCAiYSIsICIiXQ==", &s, &t, &a, &c), 0);
	assert_string_equal(s, "s");
	assert_string_equal(c, "");
	free(s), free(t), free(a), free(c);
	const char *bad[] = {
		"",
		"WyJzIiwgInQiLCAiYSIsICIiXQ",     /* missing padding */
		"WyJzIiwgInQiLCAiYSIsICIiXQ=A",   /* padding in the middle */
		"WyJzIiwgInQi+CAiYSIsICIiXQ==",   /* standard alphabet '+' */
		"WyJzIiwgInQiLCAiYSJd",           /* ["s","t","a"]: three strings */
		"WyJzIiwgInQiLCAiYSIsIDFd",       /* ["s","t","a",1] */
		"eyJhIjogMX0=",                   /* {"a": 1} */
		"bm90IGpzb24=",                   /* not json */
		"WyJzIiwgInQiLCAiYSIsICIiXR==",   /* non-zero spare bits */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = t = a = c = NULL;
		if (mafsbx_key_attribution_decode(bad[i], &s, &t, &a, &c) == 0)
			fail_msg("row %zu (%s) decoded", i, bad[i]);
		assert_null(s);
	}
}

static void test_workload_labels(void **state)
{
	(void)state;
	struct mafsbx_key conv = { "scope-a", "thread-1", "devops-engineer", "" };
	json_t *user = json_pack("{s:s,s:s}", "team", "infra", "odd", "a=b");
	json_t *l = mafsbx_workload_labels(&conv, "bicep", user, NULL);
	assert_non_null(l);
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_SCOPE)), "scope-a");
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_THREAD)), "thread-1");
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_AGENT)), "devops-engineer");
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_KIND)), "bicep");
	assert_null(json_object_get(l, MAFSBX_LABEL_CALL));   /* absent on conversation sandboxes */
	assert_string_equal(json_string_value(json_object_get(l, "maf-sandbox.label.team")), "infra");
	assert_string_equal(json_string_value(json_object_get(l, "maf-sandbox.label.odd")),
			    "sha256-42144f3939c3ffbbf0bf8b1f12affb5c23a4c5bd41e0ff67");
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_WORK_DIR_V1)), "/maf-sandbox/work");
	assert_int_equal(json_object_size(l), 7);
	json_decref(l);

	struct mafsbx_key call = { "an operator scope with spaces", "", "a", "c1" };
	l = mafsbx_workload_labels(&call, "k", NULL, "/srv/w dir");
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_SCOPE)),
			    "sha256-e9ccbc0bb3ed525b08b262eeb283ea10957850c401332bdb");
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_THREAD)),
			    "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c");
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_CALL)), "c1");
	/* the work dir is raw, never digested */
	assert_string_equal(json_string_value(json_object_get(l, MAFSBX_LABEL_WORK_DIR_V1)), "/srv/w dir");
	json_decref(l);
	json_decref(user);
}

static void test_is_workload_name(void **state)
{
	(void)state;
	assert_true(mafsbx_is_workload_name("maf-sandbox-docker-6f8a8ed7a21c"));
	assert_false(mafsbx_is_workload_name("maf-sandbox-docker-6f8a8ed7a21c-proxy"));
	assert_false(mafsbx_is_workload_name("maf-sandbox-docker-6f8a8ed7a21c-net"));
	assert_false(mafsbx_is_workload_name("maf-sandbox-docker-6F8A8ED7A21C"));
	assert_false(mafsbx_is_workload_name("maf-sandbox-docker-6f8a8ed7a21"));
	assert_false(mafsbx_is_workload_name("maf-sandbox-wslc-6f8a8ed7a21c"));
	assert_false(mafsbx_is_workload_name(""));
	assert_false(mafsbx_is_workload_name(NULL));
}

/* NAME-proxy and NAME-net are built and read only by names.c: each built name parses back to
 * its role and workload, and nothing near them passes. */
static void test_side_names(void **state)
{
	(void)state;
	const char *w = "maf-sandbox-docker-6f8a8ed7a21c";
	char proxy[MAFSBX_SIDE_NAME_SIZE], net[MAFSBX_SIDE_NAME_SIZE], again[MAFSBX_SIDE_NAME_SIZE];
	char base[MAFSBX_NAME_LEN + 1];
	mafsbx_proxy_name(w, proxy);
	mafsbx_network_name(w, net);
	assert_string_equal(proxy, "maf-sandbox-docker-6f8a8ed7a21c-proxy");
	assert_string_equal(net, "maf-sandbox-docker-6f8a8ed7a21c-net");
	/* a proxy's own name gives its network's */
	mafsbx_network_name(proxy, again);
	assert_string_equal(again, net);
	assert_int_equal(mafsbx_name_parse(w, base), MAFSBX_NAME_WORKLOAD);
	assert_string_equal(base, w);
	memset(base, 0, sizeof(base));
	assert_int_equal(mafsbx_name_parse(proxy, base), MAFSBX_NAME_PROXY);
	assert_string_equal(base, w);
	memset(base, 0, sizeof(base));
	assert_int_equal(mafsbx_name_parse(net, base), MAFSBX_NAME_NETWORK);
	assert_string_equal(base, w);
	static const char *const foreign[] = {
		"maf-sandbox-docker-6f8a8ed7a21c-proxyx", "maf-sandbox-docker-6f8a8ed7a21c-ne",
		"maf-sandbox-docker-6f8a8ed7a21c-", "maf-sandbox-docker-6f8a8ed7a21c-netproxy",
		"maf-sandbox-docker-6F8A8ED7A21C-net", "maf-sandbox-docker-6f8a8ed7a21-net",
		"maf-sandbox-docker-6f8a8ed7a21c0", "other-net", "", NULL,
	};
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
		strcpy(base, "untouched");
		if (mafsbx_name_parse(foreign[i], base) != MAFSBX_NAME_FOREIGN)
			fail_msg("%s taken for one of ours", foreign[i] ? foreign[i] : "NULL");
		assert_string_equal(base, "untouched");
	}
	assert_int_equal(mafsbx_name_parse(net, NULL), MAFSBX_NAME_NETWORK);
}

/* A list entry: Names as given, labels scope, thread, agent, kind (NULL: absent). */
static json_t *entry(json_t *names, const char *scope, const char *thread, const char *agent, const char *kind)
{
	json_t *l = json_object();
	const char *v[4] = { scope, thread, agent, kind };
	for (size_t k = 0; k < 4; k++)
		if (v[k])
			json_object_set_new(l, mafsbx_identity_labels[k], json_string(v[k]));
	return json_pack("{s:s, s:o, s:o}", "Id", "x", "Names", names, "Labels", l);
}

/* The engine is asked for one label; the list entry check is what the old filters selected. */
static void test_list_filters(void **state)
{
	(void)state;
	const char *const none[3] = { NULL, NULL, NULL };
	json_t *f = mafsbx_list_filters(none);
	char *s = json_dumps(f, JSON_COMPACT);
	assert_string_equal(s, "{\"label\":[\"maf-sandbox.scope\"]}");
	free(s);
	json_decref(f);
	const char *const st[3] = { "s1", "t1", NULL };
	f = mafsbx_list_filters(st);
	s = json_dumps(f, JSON_COMPACT);
	assert_string_equal(s, "{\"label\":[\"maf-sandbox.scope=s1\",\"maf-sandbox.thread=t1\"]}");
	free(s);
	json_decref(f);
}

static void test_list_entry_selected(void **state)
{
	(void)state;
	const char *const none[3] = { NULL, NULL, NULL };
	const char *const s1[3] = { "s1", NULL, NULL };
	const char *const s1t2[3] = { "s1", "t2", NULL };
	const char *const s1t1a1[3] = { "s1", "t1", "a1" };
	const char *wl = "/maf-sandbox-docker-0123456789ab";
	struct {
		json_t *ent;
		const char *const *want;
		bool selected;
	} c[] = {
		{ entry(json_pack("[s]", wl), "s1", "t1", "a1", "k"), none, true },
		{ entry(json_pack("[s]", wl + 1), "s1", "t1", "a1", "k"), s1t1a1, true },   /* Podman: no '/' */
		/* a proxy or any name of the prefix: as the engine's regex, the rest is the caller's */
		{ entry(json_pack("[s]", "/maf-sandbox-docker-0123456789ab-proxy"), "s1", "t1", "a1", "k"), s1, true },
		{ entry(json_pack("[s]", "/maf-sandbox-docker-x"), "s1", "t1", "a1", "k"), none, true },
		/* an empty value is a present label (the engine's "label=KEY") */
		{ entry(json_pack("[s]", wl), "s1", "", "a1", "k"), none, true },
		/* the label keys without the name prefix */
		{ entry(json_pack("[s]", "/other-0123456789ab"), "s1", "t1", "a1", "k"), none, false },
		{ entry(json_pack("[s]", "/xmaf-sandbox-docker-0123456789ab"), "s1", "t1", "a1", "k"), none, false },
		/* the name prefix without a label key */
		{ entry(json_pack("[s]", wl), "s1", "t1", "a1", NULL), none, false },
		{ entry(json_pack("[s]", wl), NULL, "t1", "a1", "k"), none, false },
		{ entry(json_pack("[s]", wl), "s1", NULL, "a1", "k"), none, false },
		{ entry(json_pack("[s]", wl), "s1", "t1", NULL, "k"), none, false },
		/* a legacy link's alias of the prefix is not the container's name */
		{ entry(json_pack("[s,s]", "/other", "/maf-sandbox-docker-0123456789ab/db"), "s1", "t1", "a1", "k"), none,
		  false },
		{ entry(json_pack("[s,s]", "/maf-sandbox-docker-0123456789ab/db", wl), "s1", "t1", "a1", "k"), none,
		  true },
		{ entry(json_pack("[]"), "s1", "t1", "a1", "k"), none, false },
		/* the values asked for */
		{ entry(json_pack("[s]", wl), "s2", "t1", "a1", "k"), s1, false },
		{ entry(json_pack("[s]", wl), "s1", "t1", "a1", "k"), s1t2, false },
		{ entry(json_pack("[s]", wl), "s1", "t1", "a2", "k"), s1t1a1, false },
		{ entry(json_pack("[s]", wl), "s1x", "t1", "a1", "k"), s1, false },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (mafsbx_list_entry_selected(c[i].ent, c[i].want) != c[i].selected)
			fail_msg("case %zu: selected %d", i, !c[i].selected);
		json_decref(c[i].ent);
	}
	/* no Labels object, no Names */
	json_t *bare = json_pack("{s:[s]}", "Names", wl);
	assert_false(mafsbx_list_entry_selected(bare, none));
	json_decref(bare);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_container_names),
		cmocka_unit_test(test_kind_is_part_of_the_name),
		cmocka_unit_test(test_egress_id_sorted),
		cmocka_unit_test(test_label_value_table),
		cmocka_unit_test(test_label_value_no_prefix_collision),
		cmocka_unit_test(test_key_attribution),
		cmocka_unit_test(test_key_attribution_escaping),
		cmocka_unit_test(test_key_attribution_too_long),
		cmocka_unit_test(test_key_attribution_decode_strict),
		cmocka_unit_test(test_workload_labels),
		cmocka_unit_test(test_is_workload_name),
		cmocka_unit_test(test_side_names),
		cmocka_unit_test(test_list_filters),
		cmocka_unit_test(test_list_entry_selected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
