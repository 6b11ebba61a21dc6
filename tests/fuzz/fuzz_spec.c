/*
 * fuzz_spec.c: the .ctl request parsers (src/model/spec.c): the request text goes
 * through mafsbx_spec_parse_json, then the acquire, dispose and exec parsers
 * with and without a default image. Invariant: a parser either fails with
 * an errno and a message, or returns a spec whose fields hold what the
 * contract promises (required strings set, a bounded timeout, resolved cwd
 * inside the guest's absolute paths).
 */
#include "error.h"
#include "fuzz.h"
#include "spec.h"

static void check_failed(int r, const struct mafsbx_error *err)
{
	FUZZ_CHECK(r < 0);
	FUZZ_CHECK(err->err > 0 && -r == err->err);
	FUZZ_CHECK(err->message[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	json_t *req = NULL;
	if (mafsbx_spec_parse_json((const char *)data, size, &req, &err) < 0) {
		FUZZ_CHECK(req == NULL);
		return 0;
	}
	const struct mafsbx_spec_config cfgs[3] = {
		{ .default_image = NULL, .exec_timeout_max_s = 0 },
		{ .default_image = "mafsbx/busybox:latest", .exec_timeout_max_s = 30 },
		{ .default_image = NULL, .exec_timeout_max_s = MAFSBX_EXEC_TIMEOUT_NO_CEILING, .exec_timeout_s = 700 },
	};
	for (int i = 0; i < 3; i++) {
		struct mafsbx_acquire_spec *a = NULL;
		mafsbx_error_clear(&err);
		int r = mafsbx_acquire_spec_parse(req, &cfgs[i], &a, &err);
		if (r == 0) {
			FUZZ_CHECK(a && a->key.scope && a->key.thread && a->key.agent && a->kind);
			FUZZ_CHECK(a->image && a->image[0]);
			FUZZ_CHECK(a->work_dir && a->work_dir[0] == '/');
			for (size_t k = 0; k < a->n_outputs; k++)
				FUZZ_CHECK(a->outputs[k] && a->outputs[k][0] != '/');
			mafsbx_acquire_spec_free(a);
		} else {
			check_failed(r, &err);
		}

		struct mafsbx_exec_spec *x = NULL;
		mafsbx_error_clear(&err);
		r = mafsbx_exec_spec_parse(req, &cfgs[i], &x, &err);
		if (r == 0) {
			FUZZ_CHECK(x && x->sandbox && x->argv && x->argc > 0 && x->argv[x->argc] == NULL);
			long ceiling_s = cfgs[i].exec_timeout_max_s > 0    ? cfgs[i].exec_timeout_max_s
					 : cfgs[i].exec_timeout_max_s == 0 ? MAFSBX_DEFAULT_EXEC_TIMEOUT_MAX_S
									   : MAFSBX_EXEC_TIMEOUT_LIMIT_S;
			FUZZ_CHECK(x->timeout_ms > 0 && x->timeout_ms <= ceiling_s * 1000L);
			FUZZ_CHECK(x->on_timeout == MAFSBX_ON_TIMEOUT_KILL || x->on_timeout == MAFSBX_ON_TIMEOUT_DISPOSE);
			FUZZ_CHECK(x->cwd != NULL);
			char *cwd = mafsbx_exec_cwd_resolve("/maf-sandbox/work", x->cwd, &err);
			FUZZ_CHECK(!cwd || cwd[0] == '/');
			free(cwd);
			mafsbx_exec_spec_free(x);
		} else {
			check_failed(r, &err);
		}
	}
	struct mafsbx_dispose_spec *d = NULL;
	mafsbx_error_clear(&err);
	int r = mafsbx_dispose_spec_parse(req, &d, &err);
	if (r == 0)
		mafsbx_dispose_spec_free(d);
	else
		check_failed(r, &err);
	json_decref(req);
	return 0;
}
