/*
 * it_dispose_nomem.c: a disposal that runs out of memory while it gathers
 * the sandboxes to remove reports the one it could not keep as a failure
 * (code unknown, naming it), instead of success with 0; and when even that
 * failure cannot be recorded, the disposal answers ENOMEM rather than a
 * success with no failures. A lookup that cannot copy the sandbox's work
 * dir is ENOMEM, not an entry whose work dir reads as the default one.
 * This program is linked with -Wl,--wrap=strdup
 * and -Wl,--wrap=realloc: the wrappers fail the copy of one armed name,
 * once, and (when asked) the next realloc after it, as an exhausted heap
 * would.
 */
#include <errno.h>

#include "sbx_internal.h"
#include "sbx_testlib.h"

char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s);
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

static char armed[HARNESS_NAME_MAX];
static bool then_realloc;      /* after the armed strdup fails, fail the next realloc too */
static bool realloc_armed;

char *__wrap_strdup(const char *s)
{
	if (armed[0] && s && strcmp(s, armed) == 0) {
		armed[0] = '\0';
		realloc_armed = then_realloc;
		errno = ENOMEM;
		return NULL;
	}
	return __real_strdup(s);
}

void *__wrap_realloc(void *p, size_t n)
{
	if (realloc_armed) {
		realloc_armed = false;
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

static void test_nomem_while_listing_is_a_failure(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a;
	sbxt_acquire_ok(scope, "a", "k1", "\"capabilities\":[]", &a);

	snprintf(armed, sizeof(armed), "%s", a.name);
	struct mafsbx_dispose_result dr;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	harness_check(mafsbx_sandbox_dispose_scope(sbxt_g.b, scope, SBXT_THREAD, &dr, &e), &e, "dispose");
	assert_int_equal(armed[0], '\0');   /* the armed copy was attempted */
	assert_int_equal(dr.disposed, 0);
	assert_int_equal(dr.n_failures, 1);
	assert_int_equal(dr.failures[0].code, MAFSBX_DISPOSAL_UNKNOWN);
	assert_non_null(strstr(dr.failures[0].detail, a.name));
	assert_non_null(strstr(dr.failures[0].detail, "out of memory"));
	json_t *j = mafsbx_dispose_result_json(&dr);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "failures"), 0),
								  "code")), "unknown");
	json_decref(j);
	mafsbx_dispose_result_free(&dr);
	assert_true(sbxt_exists(a.name));   /* left behind, and said so */

	/* with memory again, the same disposal removes it */
	assert_int_equal(sbxt_dispose_scope(scope), 1);
	assert_false(sbxt_exists(a.name));
}

/* The failure itself cannot be recorded either: ENOMEM, never a success that hides it. */
static void test_unrecorded_failure_is_enomem(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a;
	sbxt_acquire_ok(scope, "a", "k1", "\"capabilities\":[]", &a);

	snprintf(armed, sizeof(armed), "%s", a.name);
	then_realloc = true;
	struct mafsbx_dispose_result dr;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_sandbox_dispose_scope(sbxt_g.b, scope, SBXT_THREAD, &dr, &e);
	then_realloc = false;
	assert_int_equal(armed[0], '\0');   /* the armed copy was attempted */
	assert_false(realloc_armed);        /* and the failure's realloc after it */
	assert_int_equal(r, -ENOMEM);
	assert_int_equal(e.kind, MAFSBX_EK_NOMEM);
	assert_non_null(strstr(e.message, "could not be recorded"));
	assert_true(dr.unrecorded);
	assert_int_equal(dr.disposed, 0);
	mafsbx_dispose_result_free(&dr);
	assert_true(sbxt_exists(a.name));   /* left behind, and the call said it failed */

	assert_int_equal(sbxt_dispose_scope(scope), 1);
	assert_false(sbxt_exists(a.name));
}

/* The work-dir label's copy fails: ENOMEM, never an entry without its work dir. */
static void test_lookup_without_work_dir_is_enomem(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a;
	sbxt_acquire_ok(scope, "a", "k1", "\"capabilities\":[],\"work_dir\":\"/srv/nomem-wd\"", &a);

	struct mafsbx_sandbox_info info;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	snprintf(armed, sizeof(armed), "%s", "/srv/nomem-wd");
	int r = mafsbx_sandbox_lookup(sbxt_g.b, a.name, &info, &e);
	assert_int_equal(armed[0], '\0');   /* the armed copy was attempted */
	if (r == 0) {
		const char *wd = info.work_dir ? info.work_dir : "(none: the default would be shown)";
		char shown[128];
		snprintf(shown, sizeof(shown), "%s", wd);
		mafsbx_sandbox_info_clear(&info);
		sbxt_dispose_scope(scope);
		fail_msg("the lookup succeeded with work_dir %s", shown);
	}
	assert_int_equal(r, -ENOMEM);

	/* with memory again, the same lookup has it */
	assert_int_equal(mafsbx_sandbox_lookup(sbxt_g.b, a.name, &info, &e), 0);
	assert_string_equal(info.work_dir, "/srv/nomem-wd");
	mafsbx_sandbox_info_clear(&info);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

int main(void)
{
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nomem_while_listing_is_a_failure),
		cmocka_unit_test(test_unrecorded_failure_is_enomem),
		cmocka_unit_test(test_lookup_without_work_dir_is_enomem),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	sbxt_close();
	return r;
}
