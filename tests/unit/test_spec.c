/*
 * test_spec.c: request validation (doc/protocol.md "The transactions") as tables of bad
 * requests, each with the errno it must fail with and the text the message
 * must contain (the field it names); plus the parsed shape of good ones,
 * output names and exec cwd resolution.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "spec.h"

enum which { ACQ, DISP, EXEC };

struct bad_row {
	enum which which;
	const char *json;
	int err;
	const char *needle;   /* must appear in the message */
};

#define K "\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k\""
#define SB "\"sandbox\":\"maf-sandbox-docker-6f8a8ed7a21c\""

static const struct bad_row bad_rows[] = {
	/* acquire: shape and required fields */
	{ ACQ, "[]", EINVAL, "request" },
	{ ACQ, "{" K ",\"image\":\"i\",\"bogus\":1}", EINVAL, "field 'bogus': unknown field" },
	{ ACQ, "{\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k\",\"image\":\"i\"}", EINVAL, "field 'scope': required" },
	{ ACQ, "{\"scope\":\"s\",\"agent\":\"a\",\"kind\":\"k\",\"image\":\"i\"}", EINVAL, "field 'thread': required" },
	{ ACQ, "{\"scope\":\"s\",\"thread\":\"t\",\"kind\":\"k\",\"image\":\"i\"}", EINVAL, "field 'agent': required" },
	{ ACQ, "{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"image\":\"i\"}", EINVAL, "field 'kind': required" },
	{ ACQ, "{" K "}", EINVAL, "field 'image': required" },
	{ ACQ, "{\"scope\":1,\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k\",\"image\":\"i\"}", EINVAL, "field 'scope': must be a string" },
	{ ACQ, "{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"\",\"image\":\"i\"}", EINVAL, "field 'kind': must not be empty" },
	{ ACQ, "{\"scope\":\"s\\u0000x\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k\",\"image\":\"i\"}", EINVAL, "field 'scope': contains a NUL" },
	{ ACQ, "{" K ",\"image\":\"\"}", EINVAL, "field 'image': must not be empty" },
	{ ACQ, "{" K ",\"image\":\"a b\"}", EINVAL, "field 'image'" },
	/* image_id (doc/upstream.md §1.3): a string passed on unparsed, so only what cannot be one is refused */
	{ ACQ, "{" K ",\"image_id\":\"\"}", EINVAL, "field 'image_id': must not be empty" },
	{ ACQ, "{" K ",\"image_id\":7}", EINVAL, "field 'image_id': must be a string" },
	{ ACQ, "{" K ",\"image_id\":\"sha256:a b\"}", EINVAL, "field 'image_id': contains a space" },
	{ ACQ, "{" K ",\"image_id\":\"sha256:a\\u0001\"}", EINVAL, "field 'image_id': contains a space or a control" },
	{ ACQ, "{" K ",\"image_id\":null}", EINVAL, "field 'image': required" },
	/* capabilities */
	{ ACQ, "{" K ",\"image\":\"i\",\"capabilities\":\"exec\"}", EINVAL, "field 'capabilities': must be an array" },
	{ ACQ, "{" K ",\"image\":\"i\",\"capabilities\":[\"exec\",\"bogus\"]}", EINVAL, "field 'capabilities[1]': unknown capability" },
	{ ACQ, "{" K ",\"image\":\"i\",\"capabilities\":[\"files_list\"]}", EOPNOTSUPP, "field 'capabilities[0]'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"capabilities\":[\"run_code\"]}", EOPNOTSUPP, "run_code" },
	{ ACQ, "{" K ",\"image\":\"i\",\"capabilities\":[1]}", EINVAL, "field 'capabilities[0]': must be a string" },
	/* egress */
	{ ACQ, "{" K ",\"image\":\"i\",\"egress\":\"unrestricted\"}", EOPNOTSUPP, "field 'egress'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"egress\":\"open\"}", EINVAL, "field 'egress': unknown egress mode" },
	{ ACQ, "{" K ",\"image\":\"i\",\"egress_allow\":[\"x.com\"]}", EINVAL, "field 'egress_allow': non-empty list requires" },
	{ ACQ, "{" K ",\"image\":\"i\",\"egress\":\"allowlist\",\"egress_allow\":[\"a,b\"]}", EINVAL, "field 'egress_allow[0]'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"egress\":\"allowlist\",\"egress_allow\":[\"x.com\",\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}", EINVAL,
	  "field 'egress_allow[1]': a host pattern is at most 255 bytes" },
	{ ACQ, "{" K ",\"image\":\"i\",\"egress\":\"allowlist\",\"egress_allow\":[\"\"]}", EINVAL, "field 'egress_allow[0]'" },
	/* isolation scope */
	{ ACQ, "{" K ",\"image\":\"i\",\"isolation_scope\":\"call\"}", EINVAL, "field 'call': isolation_scope 'call' requires" },
	{ ACQ, "{" K ",\"image\":\"i\",\"isolation_scope\":\"call\",\"call\":\"\"}", EINVAL, "field 'call'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"isolation_scope\":\"tool\"}", EINVAL, "field 'isolation_scope'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"requires_os_family\":\"beos\"}", EINVAL, "field 'requires_os_family'" },
	/* work_dir */
	{ ACQ, "{" K ",\"image\":\"i\",\"work_dir\":\"rel/dir\"}", EINVAL, "field 'work_dir': must be an absolute path" },
	{ ACQ, "{" K ",\"image\":\"i\",\"work_dir\":\"/a\\\\b\"}", EINVAL, "field 'work_dir': contains a backslash" },
	{ ACQ, "{" K ",\"image\":\"i\",\"work_dir\":\"/a/../b\"}", EINVAL, "field 'work_dir': has a '..' segment" },
	{ ACQ, "{" K ",\"image\":\"i\",\"work_dir\":\"/a\\nb\"}", EINVAL, "field 'work_dir': contains a control" },
	{ ACQ, "{" K ",\"image\":\"i\",\"work_dir\":\"\"}", EINVAL, "field 'work_dir'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"work_dir\":7}", EINVAL, "field 'work_dir': must be a string" },
	/* outputs */
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":[\"/etc/passwd\"]}", EINVAL, "field 'outputs[0]': must be a relative path" },
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":[\"ok\",\"../x\"]}", EINVAL, "field 'outputs[1]': has a '..' segment" },
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":[\"a//b\"]}", EINVAL, "field 'outputs[0]': has an empty path segment" },
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":[\"a/./b\"]}", EINVAL, "field 'outputs[0]': has a '.' segment" },
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":[\"dir/\"]}", EINVAL, "field 'outputs[0]': has an empty path segment" },
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":[\"a\\\\b\"]}", EINVAL, "field 'outputs[0]': contains a backslash" },
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":[\"a\\tb\"]}", EINVAL, "field 'outputs[0]': contains a control" },
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":[\"\"]}", EINVAL, "field 'outputs[0]': must not be empty" },
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":\"x\"}", EINVAL, "field 'outputs': must be an array" },
	{ ACQ, "{" K ",\"image\":\"i\",\"outputs\":[\"a\\u0000b\"]}", EINVAL, "field 'outputs[0]': contains a NUL" },
	/* env and labels */
	{ ACQ, "{" K ",\"image\":\"i\",\"env\":{\"1X\":\"v\"}}", EINVAL, "field 'env': invalid variable name" },
	{ ACQ, "{" K ",\"image\":\"i\",\"env\":{\"A=B\":\"v\"}}", EINVAL, "field 'env': invalid variable name" },
	{ ACQ, "{" K ",\"image\":\"i\",\"env\":{\"X\":1}}", EINVAL, "field 'env.X': must be a string" },
	{ ACQ, "{" K ",\"image\":\"i\",\"env\":[\"X=1\"]}", EINVAL, "field 'env': must be an object" },
	{ ACQ, "{" K ",\"image\":\"i\",\"labels\":{\"team\":5}}", EINVAL, "field 'labels.team': must be a string" },
	{ ACQ, "{" K ",\"image\":\"i\",\"labels\":{\"\":\"x\"}}", EINVAL, "field 'labels'" },
	/* limits */
	{ ACQ, "{" K ",\"image\":\"i\",\"limits\":{\"max_read_bytes\":67108865}}", EINVAL, "field 'limits.max_read_bytes': 67108865 is over" },
	{ ACQ, "{" K ",\"image\":\"i\",\"limits\":{\"max_total_bytes\":268435457}}", EINVAL, "field 'limits.max_total_bytes'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"limits\":{\"max_files\":257}}", EINVAL, "field 'limits.max_files'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"limits\":{\"files_out\":{\"max_bytes_per_file\":67108865}}}", EINVAL, "field 'limits.files_out.max_bytes_per_file'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"limits\":{\"files_in\":{\"max_files\":1000}}}", EINVAL, "field 'limits.files_in.max_files'" },
	{ ACQ, "{" K ",\"image\":\"i\",\"limits\":{\"files_in\":{\"bogus\":1}}}", EINVAL, "field 'limits.files_in.bogus': unknown" },
	{ ACQ, "{" K ",\"image\":\"i\",\"limits\":{\"max_read\":1}}", EINVAL, "field 'limits.max_read': unknown" },
	{ ACQ, "{" K ",\"image\":\"i\",\"limits\":{\"max_read_bytes\":0}}", EINVAL, "field 'limits.max_read_bytes': must be positive" },
	{ ACQ, "{" K ",\"image\":\"i\",\"limits\":{\"max_read_bytes\":\"1\"}}", EINVAL, "field 'limits.max_read_bytes': must be an integer" },

	/* dispose */
	{ DISP, "{}", EINVAL, "request: needs 'name'" },
	{ DISP, "{\"name\":\"x\"}", EINVAL, "field 'name': not a sandbox name" },
	{ DISP, "{\"name\":\"maf-sandbox-docker-6f8a8ed7a21c-proxy\"}", EINVAL, "field 'name'" },
	{ DISP, "{\"name\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"scope\":\"s\"}", EINVAL, "field 'scope': not allowed together with 'name'" },
	{ DISP, "{\"scope\":\"s\"}", EINVAL, "field 'thread': required" },
	{ DISP, "{\"thread\":\"t\"}", EINVAL, "field 'scope': required" },
	{ DISP, "{\"scope\":\"s\",\"thread\":\"t\",\"kind\":\"k\"}", EINVAL, "field 'kind': requires 'agent'" },
	{ DISP, "{\"scope\":\"s\",\"thread\":\"t\",\"call\":\"c\"}", EINVAL, "field 'call': requires 'agent'" },
	{ DISP, "{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"extra\":1}", EINVAL, "field 'extra': unknown field" },
	{ DISP, "{\"scope\":\"s\",\"thread\":[],\"agent\":\"a\"}", EINVAL, "field 'thread': must be a string" },
	{ DISP, "{\"name\":5}", EINVAL, "field 'name': must be a string" },
	{ DISP, "{\"scope\":\"s\",\"thread\":\"t\",\"reclaim\":\"a/b\"}", EINVAL, "field 'reclaim': requires 'name'" },
	{ DISP, "{\"name\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"reclaim\":\"\"}", EINVAL, "field 'reclaim': must not be empty" },
	{ DISP, "{\"name\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"reclaim\":[]}", EINVAL, "field 'reclaim': must be a string" },
	/* instance_id (doc/upstream.md §8.4): with a key only */
	{ DISP, "{\"name\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"instance_id\":\"abc\"}", EINVAL, "field 'instance_id': not allowed together with 'name'" },
	{ DISP, "{\"scope\":\"s\",\"thread\":\"t\",\"instance_id\":\"abc\"}", EINVAL, "field 'instance_id': requires 'agent'" },
	{ DISP, "{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"instance_id\":\"\"}", EINVAL, "field 'instance_id': must not be empty" },
	{ DISP, "{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"instance_id\":5}", EINVAL, "field 'instance_id': must be a string" },
	{ DISP, "{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"instance_id\":\"../x\"}", EINVAL, "field 'instance_id': not a container ID" },

	/* exec */
	{ EXEC, "{\"argv\":[\"true\"]}", EINVAL, "field 'sandbox': required" },
	{ EXEC, "{\"sandbox\":\"nope\",\"argv\":[\"true\"]}", EINVAL, "field 'sandbox': not a sandbox name" },
	{ EXEC, "{" SB "}", EINVAL, "field 'argv': required" },
	{ EXEC, "{" SB ",\"argv\":[\"a\"],\"command\":\"b\"}", EINVAL, "field 'command': give exactly one" },
	{ EXEC, "{" SB ",\"argv\":[]}", EINVAL, "field 'argv': must be a non-empty array" },
	{ EXEC, "{" SB ",\"argv\":\"ls\"}", EINVAL, "field 'argv'" },
	{ EXEC, "{" SB ",\"argv\":[\"ls\",3]}", EINVAL, "field 'argv[1]': must be a string" },
	{ EXEC, "{" SB ",\"argv\":[\"\"]}", EINVAL, "field 'argv[0]': must not be empty" },
	{ EXEC, "{" SB ",\"argv\":[\"a\\u0000b\"]}", EINVAL, "field 'argv[0]': contains a NUL" },
	{ EXEC, "{" SB ",\"command\":\"\"}", EINVAL, "field 'command': must not be empty" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"stdin\":\"a\",\"stdin_b64\":\"YQ==\"}", EINVAL, "field 'stdin_b64': give at most one" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"stdin_b64\":\"YQ\"}", EINVAL, "field 'stdin_b64': not valid base64" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"stdin_b64\":\"Y!==\"}", EINVAL, "field 'stdin_b64': not valid base64" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"stdin_b64\":\"YR==\"}", EINVAL, "field 'stdin_b64'" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"stdin\":5}", EINVAL, "field 'stdin': must be a string" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"timeout\":0}", EINVAL, "field 'timeout': must be positive" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"timeout\":-1}", EINVAL, "field 'timeout': must be positive" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"timeout\":301}", EINVAL,
	  "field 'timeout': 301 s is over the ceiling of 300 s (-o max_exec_timeout)" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"on_timeout\":\"later\"}", EINVAL,
	  "field 'on_timeout': want \"kill\" or \"dispose\"" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"on_timeout\":\"\"}", EINVAL, "field 'on_timeout': must not be empty" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"on_timeout\":true}", EINVAL, "field 'on_timeout': must be a string" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"timeout\":\"5\"}", EINVAL, "field 'timeout': must be a number" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"timeout\":true}", EINVAL, "field 'timeout'" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"cwd\":\"..\"}", EINVAL, "field 'cwd': climbs above" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"cwd\":\"a/../../b\"}", EINVAL, "field 'cwd': climbs above" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"cwd\":\"a\\\\b\"}", EINVAL, "field 'cwd': contains a backslash" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"cwd\":\"a\\u0001\"}", EINVAL, "field 'cwd': contains a control" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"env\":{\"-\":\"v\"}}", EINVAL, "field 'env'" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"privileged\":true}", EINVAL, "field 'privileged': unknown field" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"user\":\"\"}", EINVAL, "field 'user': must not be empty" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"user\":5}", EINVAL, "field 'user': must be a string" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"user\":\"a b\"}", EINVAL, "field 'user': want NAME, UID" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"user\":\"1:2:3\"}", EINVAL, "field 'user'" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"user\":\":0\"}", EINVAL, "field 'user'" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"user\":\"0:\"}", EINVAL, "field 'user'" },
	{ EXEC, "{" SB ",\"command\":\"x\",\"user\":\"-x\"}", EINVAL, "field 'user'" },
};

static void test_bad_requests(void **state)
{
	(void)state;
	struct mafsbx_spec_config cfg = { NULL, 300, 0 };
	for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
		const struct bad_row *row = &bad_rows[i];
		json_error_t jerr;
		json_t *req = json_loads(row->json, JSON_ALLOW_NUL, &jerr);
		if (!req)
			fail_msg("row %zu: the test JSON does not parse: %s: %s", i, row->json, jerr.text);
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		int r;
		if (row->which == ACQ) {
			struct mafsbx_acquire_spec *s = (void *)1;
			r = mafsbx_acquire_spec_parse(req, &cfg, &s, &e);
			if (r == 0)
				mafsbx_acquire_spec_free(s);
			else if (s)
				fail_msg("row %zu: out not NULL on failure", i);
		} else if (row->which == DISP) {
			struct mafsbx_dispose_spec *s = NULL;
			r = mafsbx_dispose_spec_parse(req, &s, &e);
			if (r == 0)
				mafsbx_dispose_spec_free(s);
		} else {
			struct mafsbx_exec_spec *s = NULL;
			r = mafsbx_exec_spec_parse(req, &cfg, &s, &e);
			if (r == 0)
				mafsbx_exec_spec_free(s);
		}
		json_decref(req);
		if (r != -row->err || e.err != row->err)
			fail_msg("row %zu (%s): got %d (%s: %s), want -%s", i, row->json, r, mafsbx_errno_name(e.err),
				 e.message, mafsbx_errno_name(row->err));
		if (!strstr(e.message, row->needle))
			fail_msg("row %zu (%s): message \"%s\" lacks \"%s\"", i, row->json, e.message, row->needle);
	}
}

static json_t *load(const char *s)
{
	json_error_t jerr;
	json_t *v = json_loads(s, 0, &jerr);
	if (!v)
		fail_msg("bad test JSON: %s", jerr.text);
	return v;
}

static void test_acquire_full(void **state)
{
	(void)state;
	json_t *req = load("{\"scope\": \"s\", \"thread\": \"t\", \"agent\": \"a\", \"call\": \"c1\", \"kind\": \"python\","
			   " \"image\": \"mafsbx/busybox:latest\", \"work_dir\": null,"
			   " \"capabilities\": [\"exec\", \"files_in\", \"files_out\"],"
			   " \"egress\": \"closed\", \"egress_allow\": [],"
			   " \"outputs\": [\"result.json\", \"plots/fig1.png\", \"result.json\"],"
			   " \"env\": {\"K\": \"V\"}, \"labels\": {\"team\": \"x\"},"
			   " \"isolation_scope\": \"call\", \"requires_os_family\": null,"
			   " \"limits\": {\"max_read_bytes\": 1048576}}");
	struct mafsbx_acquire_spec *s = NULL;
	struct mafsbx_error e;
	assert_int_equal(mafsbx_acquire_spec_parse(req, NULL, &s, &e), 0);
	assert_string_equal(s->key.scope, "s");
	assert_string_equal(s->key.call, "c1");
	assert_string_equal(s->kind, "python");
	assert_string_equal(s->image, "mafsbx/busybox:latest");
	assert_string_equal(s->work_dir, "/maf-sandbox/work");
	assert_false(s->work_dir_explicit);
	assert_int_equal(s->caps, MAFSBX_CAP_DEFAULT);
	assert_int_equal(s->egress, MAFSBX_EGRESS_CLOSED);
	assert_int_equal(s->n_outputs, 2);   /* duplicate dropped */
	assert_string_equal(s->outputs[1], "plots/fig1.png");
	assert_int_equal(s->n_env, 1);
	assert_string_equal(s->env[0], "K=V");
	assert_null(s->env[1]);
	assert_string_equal(json_string_value(json_object_get(s->labels, "team")), "x");
	assert_int_equal(s->isolation_scope, MAFSBX_SCOPE_CALL);
	assert_int_equal(s->requires_os_family, MAFSBX_OS_ANY);
	assert_true(s->limits_given);
	assert_int_equal(s->files_out.max_bytes_per_file, 1048576);
	assert_int_equal(s->files_in.max_bytes_per_file, MAFSBX_DEFAULT_BYTES_PER_FILE);
	mafsbx_acquire_spec_free(s);
	json_decref(req);
}

static void test_acquire_defaults(void **state)
{
	(void)state;
	struct mafsbx_spec_config cfg = { "mafsbx/busybox:latest", 0, 0 };
	json_t *req = load("{\"scope\":\"\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k\",\"work_dir\":\"/srv/w\","
			   "\"capabilities\":[],\"egress\":\"allowlist\",\"egress_allow\":[\"*.x.com\"]}");
	struct mafsbx_acquire_spec *s = NULL;
	struct mafsbx_error e;
	assert_int_equal(mafsbx_acquire_spec_parse(req, &cfg, &s, &e), 0);
	assert_string_equal(s->image, "mafsbx/busybox:latest");   /* the configured default */
	assert_string_equal(s->key.scope, "");
	assert_string_equal(s->key.call, "");
	assert_string_equal(s->work_dir, "/srv/w");
	assert_true(s->work_dir_explicit);
	assert_int_equal(s->caps, 0);
	assert_int_equal(s->egress, MAFSBX_EGRESS_ALLOWLIST);
	assert_int_equal(s->n_egress_allow, 1);
	assert_int_equal(s->n_outputs, 0);
	assert_null(s->env);
	assert_false(s->limits_given);
	assert_int_equal(s->files_out.max_files, MAFSBX_DEFAULT_FILES);
	mafsbx_acquire_spec_free(s);
	json_decref(req);
	/* the ceilings themselves are admitted */
	req = load("{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k\",\"image\":\"i\","
		   "\"limits\":{\"files_in\":{\"max_bytes_per_file\":67108864,\"max_total_bytes\":268435456,"
		   "\"max_files\":256}}}");
	assert_int_equal(mafsbx_acquire_spec_parse(req, NULL, &s, &e), 0);
	assert_int_equal(s->files_in.max_files, 256);
	assert_int_equal(s->files_in.max_total_bytes, MAFSBX_CEIL_TOTAL_BYTES);
	mafsbx_acquire_spec_free(s);
	json_decref(req);
}

static void test_dispose_shapes(void **state)
{
	(void)state;
	struct mafsbx_dispose_spec *s = NULL;
	struct mafsbx_error e;
	json_t *req = load("{\"name\":\"maf-sandbox-docker-6f8a8ed7a21c\"}");
	assert_int_equal(mafsbx_dispose_spec_parse(req, &s, &e), 0);
	assert_int_equal(s->by, MAFSBX_DISPOSE_BY_NAME);
	assert_string_equal(s->name, "maf-sandbox-docker-6f8a8ed7a21c");
	assert_null(s->reclaim);
	mafsbx_dispose_spec_free(s);
	json_decref(req);

	req = load("{\"name\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"reclaim\":\"calls/c1\"}");
	assert_int_equal(mafsbx_dispose_spec_parse(req, &s, &e), 0);
	assert_int_equal(s->by, MAFSBX_DISPOSE_BY_NAME);
	assert_string_equal(s->reclaim, "calls/c1");
	mafsbx_dispose_spec_free(s);
	json_decref(req);

	req = load("{\"scope\":\"s\",\"thread\":\"t\"}");
	assert_int_equal(mafsbx_dispose_spec_parse(req, &s, &e), 0);
	assert_int_equal(s->by, MAFSBX_DISPOSE_BY_SCOPE);
	assert_string_equal(s->key.scope, "s");
	assert_null(s->key.agent);
	mafsbx_dispose_spec_free(s);
	json_decref(req);

	req = load("{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\"}");
	assert_int_equal(mafsbx_dispose_spec_parse(req, &s, &e), 0);
	assert_int_equal(s->by, MAFSBX_DISPOSE_BY_KEY);
	assert_string_equal(s->key.call, "");
	assert_null(s->kind);
	mafsbx_dispose_spec_free(s);
	json_decref(req);

	req = load("{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"call\":\"c\",\"kind\":\"k\"}");
	assert_int_equal(mafsbx_dispose_spec_parse(req, &s, &e), 0);
	assert_string_equal(s->key.call, "c");
	assert_string_equal(s->kind, "k");
	assert_null(s->instance_id);
	mafsbx_dispose_spec_free(s);
	json_decref(req);

	/* by instance ID: a key-shaped request naming the one container */
	req = load("{\"scope\":\"s\",\"thread\":\"t\",\"agent\":\"a\",\"kind\":\"k\",\"instance_id\":"
		   "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}");
	assert_int_equal(mafsbx_dispose_spec_parse(req, &s, &e), 0);
	assert_int_equal(s->by, MAFSBX_DISPOSE_BY_KEY);
	assert_string_equal(s->kind, "k");
	assert_string_equal(s->instance_id, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	mafsbx_dispose_spec_free(s);
	json_decref(req);
}

static void test_acquire_image_id(void **state)
{
	(void)state;
	struct mafsbx_acquire_spec *s = NULL;
	struct mafsbx_error e;
	/* alone: no image needed; image carries the ID too (never NULL) */
	json_t *req = load("{" K ",\"image_id\":\"sha256:f9645b9d\"}");
	assert_int_equal(mafsbx_acquire_spec_parse(req, NULL, &s, &e), 0);
	assert_string_equal(s->image_id, "sha256:f9645b9d");
	assert_string_equal(s->image, "sha256:f9645b9d");
	mafsbx_acquire_spec_free(s);
	json_decref(req);
	/* with an image: both kept (the backend runs the ID) */
	req = load("{" K ",\"image\":\"mafsbx/busybox:latest\",\"image_id\":\"f9645b9dbbad\"}");
	assert_int_equal(mafsbx_acquire_spec_parse(req, NULL, &s, &e), 0);
	assert_string_equal(s->image_id, "f9645b9dbbad");
	assert_string_equal(s->image, "mafsbx/busybox:latest");
	mafsbx_acquire_spec_free(s);
	json_decref(req);
	/* none: image_id stays NULL */
	req = load("{" K ",\"image\":\"i\"}");
	assert_int_equal(mafsbx_acquire_spec_parse(req, NULL, &s, &e), 0);
	assert_null(s->image_id);
	mafsbx_acquire_spec_free(s);
	json_decref(req);
}

static void test_exec_shapes(void **state)
{
	(void)state;
	struct mafsbx_exec_spec *s = NULL;
	struct mafsbx_error e;
	struct mafsbx_spec_config cfg = { NULL, 60, 0 };
	json_t *req = load("{\"sandbox\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"command\":\"echo hi\"}");
	assert_int_equal(mafsbx_exec_spec_parse(req, &cfg, &s, &e), 0);
	assert_true(s->shell);
	assert_int_equal(s->argc, 3);
	assert_string_equal(s->argv[0], "sh");
	assert_string_equal(s->argv[1], "-c");
	assert_string_equal(s->argv[2], "echo hi");
	assert_null(s->argv[3]);
	assert_string_equal(s->cwd, ".");
	assert_false(s->has_stdin);
	assert_int_equal(s->timeout_ms, 60000);   /* the ceiling is the default */
	mafsbx_exec_spec_free(s);
	json_decref(req);

	req = load("{\"sandbox\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"argv\":[\"python3\",\"-c\",\"print(1)\"],"
		   "\"cwd\":\"sub/dir\",\"env\":{\"K\":\"V\"},\"stdin_b64\":\"AAEC/w==\",\"timeout\":0.25}");
	assert_int_equal(mafsbx_exec_spec_parse(req, &cfg, &s, &e), 0);
	assert_false(s->shell);
	assert_int_equal(s->argc, 3);
	assert_string_equal(s->cwd, "sub/dir");
	assert_string_equal(s->env[0], "K=V");
	assert_true(s->has_stdin);
	assert_int_equal(s->stdin_len, 4);
	assert_memory_equal(s->stdin_data, "\x00\x01\x02\xff", 4);
	assert_int_equal(s->timeout_ms, 250);
	mafsbx_exec_spec_free(s);
	json_decref(req);

	req = load("{\"sandbox\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"argv\":[\"cat\"],\"stdin\":\"t\\u00e9xt\"}");
	assert_int_equal(mafsbx_exec_spec_parse(req, &cfg, &s, &e), 0);
	assert_int_equal(s->stdin_len, 5);
	assert_memory_equal(s->stdin_data, "t\xc3\xa9xt", 5);
	assert_null(s->user);   /* the image's user */
	mafsbx_exec_spec_free(s);
	json_decref(req);

	/* "user": as docker exec -u takes it */
	static const char *const users[] = { "root", "1000", "1000:1000", "app:staff", "svc_user.x-1" };
	for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		char text[200];
		snprintf(text, sizeof(text), "{\"sandbox\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"argv\":[\"id\"],\"user\":\"%s\"}",
			 users[i]);
		req = load(text);
		assert_int_equal(mafsbx_exec_spec_parse(req, &cfg, &s, &e), 0);
		assert_string_equal(s->user, users[i]);
		mafsbx_exec_spec_free(s);
		json_decref(req);
	}
}

/* One exec request with `timeout` (JSON text, or NULL for none) under cfg: its
 * timeout_ms, or -errno with the message in *e. */
static long timeout_of(const struct mafsbx_spec_config *cfg, const char *timeout, struct mafsbx_error *e)
{
	char text[256];
	snprintf(text, sizeof(text), "{\"sandbox\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"argv\":[\"true\"]%s%s}",
		 timeout ? ",\"timeout\":" : "", timeout ? timeout : "");
	json_t *req = load(text);
	struct mafsbx_exec_spec *s = NULL;
	mafsbx_error_clear(e);
	int r = mafsbx_exec_spec_parse(req, cfg, &s, e);
	json_decref(req);
	long ms = r < 0 ? r : s->timeout_ms;
	mafsbx_exec_spec_free(s);
	return ms;
}

/* -o exec_timeout is the default, -o max_exec_timeout the ceiling (0: none). */
static void test_exec_timeout_bounds(void **state)
{
	(void)state;
	struct mafsbx_error e;
	/* the defaults (a mount's, the shell verb's): 300 s when none is named, up to 24 h */
	assert_int_equal(timeout_of(NULL, NULL, &e), 300000);
	assert_int_equal(timeout_of(NULL, "900", &e), 900000);
	assert_int_equal(timeout_of(NULL, "86400", &e), 86400000);
	assert_int_equal(timeout_of(NULL, "86401", &e), -EINVAL);
	assert_non_null(strstr(e.message, "field 'timeout': 86401 s is over the ceiling of 86400 s (-o max_exec_timeout)"));
	/* -o max_exec_timeout=600 */
	struct mafsbx_spec_config c600 = { NULL, 600, 0 };
	assert_int_equal(timeout_of(&c600, "900", &e), -EINVAL);
	assert_non_null(strstr(e.message, "-o max_exec_timeout"));
	assert_int_equal(timeout_of(&c600, "600", &e), 600000);
	assert_int_equal(timeout_of(&c600, NULL, &e), 300000);
	/* a default over the ceiling is cut to it (the mount refuses that pair; a library caller may not) */
	struct mafsbx_spec_config c60 = { NULL, 60, 300 };
	assert_int_equal(timeout_of(&c60, NULL, &e), 60000);
	/* no ceiling: any timeout, still a finite deadline; the default still applies */
	struct mafsbx_spec_config none = { NULL, MAFSBX_EXEC_TIMEOUT_NO_CEILING, 700 };
	assert_int_equal(timeout_of(&none, NULL, &e), 700000);
	assert_int_equal(timeout_of(&none, "31536000", &e), 31536000000L);
	assert_int_equal(timeout_of(&none, "1e300", &e), MAFSBX_EXEC_TIMEOUT_LIMIT_S * 1000);
}

/* on_timeout: "kill" (the default) or "dispose". */
static void test_exec_on_timeout(void **state)
{
	(void)state;
	static const struct {
		const char *member;
		enum mafsbx_on_timeout want;
	} rows[] = {
		{ "", MAFSBX_ON_TIMEOUT_KILL },
		{ ",\"on_timeout\":null", MAFSBX_ON_TIMEOUT_KILL },
		{ ",\"on_timeout\":\"kill\"", MAFSBX_ON_TIMEOUT_KILL },
		{ ",\"on_timeout\":\"dispose\"", MAFSBX_ON_TIMEOUT_DISPOSE },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char text[200];
		snprintf(text, sizeof(text), "{\"sandbox\":\"maf-sandbox-docker-6f8a8ed7a21c\",\"argv\":[\"true\"]%s}",
			 rows[i].member);
		json_t *req = load(text);
		struct mafsbx_exec_spec *s = NULL;
		struct mafsbx_error e;
		assert_int_equal(mafsbx_exec_spec_parse(req, NULL, &s, &e), 0);
		assert_int_equal(s->on_timeout, rows[i].want);
		mafsbx_exec_spec_free(s);
		json_decref(req);
	}
}

static void test_output_names(void **state)
{
	(void)state;
	struct mafsbx_error e;
	assert_int_equal(mafsbx_output_name_check("result.json", "o", &e), 0);
	assert_int_equal(mafsbx_output_name_check("plots/fig 1.png", "o", &e), 0);
	assert_int_equal(mafsbx_output_name_check("na\xc3\xafve.txt", "o", &e), 0);
	assert_int_equal(mafsbx_output_name_check("..hidden", "o", &e), 0);
	assert_int_equal(mafsbx_output_name_check("bad\xff", "o", &e), -EINVAL);
	char longseg[300];
	memset(longseg, 'a', 256), longseg[256] = '\0';
	assert_int_equal(mafsbx_output_name_check(longseg, "o", &e), -ENAMETOOLONG);
	longseg[255] = '\0';
	assert_int_equal(mafsbx_output_name_check(longseg, "o", &e), 0);
}

static void test_cwd_resolve(void **state)
{
	(void)state;
	struct mafsbx_error e;
	struct {
		const char *wd, *cwd, *want;
	} ok[] = {
		{ "/maf-sandbox/work", ".", "/maf-sandbox/work" },
		{ "/maf-sandbox/work", "", "/maf-sandbox/work" },
		{ "/maf-sandbox/work", NULL, "/maf-sandbox/work" },
		{ "/maf-sandbox/work", "sub", "/maf-sandbox/work/sub" },
		{ "/maf-sandbox/work", "a/./b//c/..", "/maf-sandbox/work/a/b" },
		{ "/maf-sandbox/work/.", "out", "/maf-sandbox/work/out" },
		{ "//maf-sandbox/work/", "x", "/maf-sandbox/work/x" },
		{ "/maf-sandbox/work", "/maf-sandbox/work", "/maf-sandbox/work" },
		{ "/maf-sandbox/work", "/maf-sandbox/work/deep/", "/maf-sandbox/work/deep" },
		{ "/", "/etc", "/etc" },
		{ "/", "tmp", "/tmp" },
		/* an absolute cwd may name any guest directory, as docker exec -w takes it */
		{ "/maf-sandbox/work", "/etc", "/etc" },
		{ "/maf-sandbox/work", "/maf-sandbox/work-outside", "/maf-sandbox/work-outside" },
		{ "/maf-sandbox/work", "/maf-sandbox/work/../x", "/maf-sandbox/x" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char *r = mafsbx_exec_cwd_resolve(ok[i].wd, ok[i].cwd, &e);
		if (!r || strcmp(r, ok[i].want) != 0)
			fail_msg("row %zu: %s + %s -> %s (%s), want %s", i, ok[i].wd, ok[i].cwd ? ok[i].cwd : "(null)",
				 r ? r : "NULL", e.message, ok[i].want);
		free(r);
	}
	/* a relative one still resolves under the work dir */
	const char *badcwd[] = { "..", "a/../..", "../work-outside", "a\\b" };
	for (size_t i = 0; i < sizeof(badcwd) / sizeof(badcwd[0]); i++) {
		mafsbx_error_clear(&e);
		char *r = mafsbx_exec_cwd_resolve("/maf-sandbox/work", badcwd[i], &e);
		if (r)
			fail_msg("%s resolved to %s", badcwd[i], r);
		assert_int_equal(e.err, EINVAL);
		assert_non_null(strstr(e.message, "field 'cwd'"));
	}
}

static void test_names_of_enums(void **state)
{
	(void)state;
	assert_string_equal(mafsbx_cap_name(MAFSBX_CAP_HOST_TOOLS), "host_tools");
	assert_int_equal(mafsbx_cap_from_name("files_delete"), MAFSBX_CAP_FILES_DELETE);
	assert_int_equal(mafsbx_cap_from_name("files_list"), 0);
	assert_int_equal(mafsbx_cap_from_name("reclaim"), MAFSBX_CAP_RECLAIM);
	assert_string_equal(mafsbx_cap_name(MAFSBX_CAP_RECLAIM), "reclaim");
	assert_null(mafsbx_cap_name(3));
	assert_string_equal(mafsbx_egress_name(MAFSBX_EGRESS_CLOSED), "closed");
	assert_string_equal(mafsbx_isolation_scope_name(MAFSBX_SCOPE_CALL), "call");
	assert_true(mafsbx_env_key_valid("_A1"));
	assert_false(mafsbx_env_key_valid("A-1"));
	assert_false(mafsbx_env_key_valid(""));
}

static void test_parse_json_text(void **state)
{
	(void)state;
	json_t *v = NULL;
	struct mafsbx_error e;
	assert_int_equal(mafsbx_spec_parse_json("{\"a\":1}", 7, &v, &e), 0);
	json_decref(v);
	assert_int_equal(mafsbx_spec_parse_json("{\"a\":", 5, &v, &e), -EINVAL);
	assert_non_null(strstr(e.message, "request: not valid JSON"));
	assert_int_equal(mafsbx_spec_parse_json("[1]", 3, &v, &e), -EINVAL);
	assert_int_equal(mafsbx_spec_parse_json("{\"a\":1,\"a\":2}", 13, &v, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_acquire_full),
		cmocka_unit_test(test_acquire_defaults),
		cmocka_unit_test(test_acquire_image_id),
		cmocka_unit_test(test_dispose_shapes),
		cmocka_unit_test(test_exec_shapes),
		cmocka_unit_test(test_exec_timeout_bounds),
		cmocka_unit_test(test_exec_on_timeout),
		cmocka_unit_test(test_output_names),
		cmocka_unit_test(test_cwd_resolve),
		cmocka_unit_test(test_names_of_enums),
		cmocka_unit_test(test_parse_json_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
