/*
 * test_reap.c: the pure parts of src/admin/reap.c: which names belong to reap's
 * inventory (workload / -proxy / -net, exact spelling), the refusal of a
 * non-positive age before any engine call, and the JSON shape `mafsbx reap
 * --json` prints. The algorithm itself runs against the real engine in
 * tests/integration/it_reap.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reap.h"

static void test_names(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		bool network;
		bool ok;
		enum mafsbx_reap_kind kind;
	} rows[] = {
		{ "maf-sandbox-docker-6f8a8ed7a21c", false, true, MAFSBX_REAP_WORKLOAD },
		{ "maf-sandbox-docker-6f8a8ed7a21c-proxy", false, true, MAFSBX_REAP_PROXY },
		{ "maf-sandbox-docker-6f8a8ed7a21c-net", true, true, MAFSBX_REAP_NETWORK },
		/* a container named -net, a network without -net or named -proxy: not ours */
		{ "maf-sandbox-docker-6f8a8ed7a21c-net", false, false, 0 },
		{ "maf-sandbox-docker-6f8a8ed7a21c", true, false, 0 },
		{ "maf-sandbox-docker-6f8a8ed7a21c-proxy", true, false, 0 },
		{ "maf-sandbox-docker-6F8A8ED7A21C", false, false, 0 },
		{ "maf-sandbox-docker-6f8a8ed7a21", false, false, 0 },
		{ "maf-sandbox-docker-6f8a8ed7a21c0", false, false, 0 },
		{ "maf-sandbox-docker-6f8a8ed7a21g", false, false, 0 },
		{ "maf-sandbox-docker-6f8a8ed7a21c-proxyx", false, false, 0 },
		{ "maf-sandbox-docker-6f8a8ed7a21c-", false, false, 0 },
		{ "maf-sandbox-wslc-6f8a8ed7a21c", false, false, 0 },
		{ "/maf-sandbox-docker-6f8a8ed7a21c", false, false, 0 },
		{ "", false, false, 0 },
		{ NULL, false, false, 0 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		enum mafsbx_reap_kind k = 99;
		char sandbox[MAFSBX_NAME_LEN + 1] = "";
		bool ok = mafsbx_reap_parse_name(rows[i].name, rows[i].network, &k, sandbox);
		if (ok != rows[i].ok)
			fail_msg("row %zu (%s): got %d", i, rows[i].name ? rows[i].name : "(null)", ok);
		if (ok) {
			assert_int_equal(k, rows[i].kind);
			assert_string_equal(sandbox, "maf-sandbox-docker-6f8a8ed7a21c");
		}
	}
}

/* The age is checked before anything else: a NULL engine is never reached. */
static void test_bad_arguments(void **state)
{
	(void)state;
	struct mafsbx_reap_result res;
	struct mafsbx_error err;
	struct mafsbx_reap_options o = { .older_than_s = 0, .scope = "s" };
	assert_int_equal(mafsbx_reap(NULL, &o, &res, &err), -EINVAL);
	assert_int_equal(err.kind, MAFSBX_EK_INVALID);
	assert_non_null(strstr(err.message, "positive"));
	assert_int_equal(res.n_failures, 0);
	assert_false(res.inventory_failed);
	o.older_than_s = -1;
	assert_int_equal(mafsbx_reap(NULL, &o, &res, &err), -EINVAL);
	assert_non_null(strstr(err.message, "positive"));
	o.older_than_s = 60;
	assert_int_equal(mafsbx_reap(NULL, &o, &res, &err), -EINVAL);
	assert_non_null(strstr(err.message, "no engine"));
	assert_int_equal(mafsbx_reap(NULL, NULL, &res, NULL), -EINVAL);
	mafsbx_reap_result_free(&res);
}

static void test_json_shape(void **state)
{
	(void)state;
	struct mafsbx_reap_failure f = {
		.code = MAFSBX_REAP_REFUSED,
		.kind = MAFSBX_REAP_NETWORK,
		.has_kind = true,
		.id = "77de",
		.name = "maf-sandbox-docker-6f8a8ed7a21c-net",
		.message = "has active endpoints",
	};
	struct mafsbx_reap_item items[2] = {
		{ .kind = MAFSBX_REAP_PROXY, .outcome = MAFSBX_REAP_WOULD_REMOVE, .id = "aa",
		  .name = "maf-sandbox-docker-6f8a8ed7a21c-proxy", .sandbox = "maf-sandbox-docker-6f8a8ed7a21c",
		  .created = { 1796202268, 5 } },
		{ .kind = MAFSBX_REAP_WORKLOAD, .outcome = MAFSBX_REAP_BLOCKED, .id = "bb" },
	};
	struct mafsbx_reap_result res = {
		.disposed = 2, .proxies_removed = 1, .networks_removed = 0, .failures = &f, .n_failures = 1,
		.items = items, .n_items = 2,
	};
	json_t *j = mafsbx_reap_result_json(&res);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "disposed")), 2);
	assert_int_equal(json_integer_value(json_object_get(j, "proxies_removed")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "networks_removed")), 0);
	assert_true(json_is_false(json_object_get(j, "dry_run")));
	assert_null(json_object_get(j, "would_remove"));
	json_t *jf = json_array_get(json_object_get(j, "failures"), 0);
	assert_string_equal(json_string_value(json_object_get(jf, "code")), "refused");
	assert_string_equal(json_string_value(json_object_get(jf, "kind")), "network");
	assert_string_equal(json_string_value(json_object_get(jf, "id")), "77de");
	assert_string_equal(json_string_value(json_object_get(jf, "message")), "has active endpoints");
	json_decref(j);

	res.dry_run = true;
	j = mafsbx_reap_result_json(&res);
	assert_true(json_is_true(json_object_get(j, "dry_run")));
	json_t *w = json_object_get(j, "would_remove");
	assert_int_equal(json_array_size(w), 1);   /* only WOULD_REMOVE items */
	assert_string_equal(json_string_value(json_object_get(json_array_get(w, 0), "kind")), "proxy");
	assert_string_equal(json_string_value(json_object_get(json_array_get(w, 0), "created")), "2026-12-02T09:04:28Z");
	assert_string_equal(json_string_value(json_object_get(json_array_get(w, 0), "sandbox")),
			    "maf-sandbox-docker-6f8a8ed7a21c");
	json_decref(j);

	/* A failed listing has no resource: kind, name and id are null. */
	struct mafsbx_reap_failure lf = { .code = MAFSBX_REAP_UNLISTED, .message = "could not list containers" };
	struct mafsbx_reap_result r2 = { .failures = &lf, .n_failures = 1, .inventory_failed = true };
	j = mafsbx_reap_result_json(&r2);
	jf = json_array_get(json_object_get(j, "failures"), 0);
	assert_string_equal(json_string_value(json_object_get(jf, "code")), "unlisted");
	assert_true(json_is_null(json_object_get(jf, "kind")));
	assert_true(json_is_null(json_object_get(jf, "id")));
	json_decref(j);
}

static void test_names_of_enums(void **state)
{
	(void)state;
	assert_string_equal(mafsbx_reap_code_name(MAFSBX_REAP_UNLISTED), "unlisted");
	assert_string_equal(mafsbx_reap_code_name(MAFSBX_REAP_REFUSED), "refused");
	assert_string_equal(mafsbx_reap_code_name(MAFSBX_REAP_UNREACHABLE), "unreachable");
	assert_string_equal(mafsbx_reap_code_name(MAFSBX_REAP_TIMEOUT), "timeout");
	assert_string_equal(mafsbx_reap_kind_name(MAFSBX_REAP_PROXY), "proxy");
	assert_string_equal(mafsbx_reap_kind_name(MAFSBX_REAP_WORKLOAD), "workload");
	assert_string_equal(mafsbx_reap_kind_name(MAFSBX_REAP_NETWORK), "network");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_json_shape),
		cmocka_unit_test(test_names_of_enums),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
