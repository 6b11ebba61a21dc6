/*
 * it_dispose_nomem.c: a disposal that runs out of memory while it gathers
 * the sandboxes to remove reports the one it could not keep as a failure
 * (code unknown, naming it), instead of success with 0. This program is
 * linked with -Wl,--wrap=strdup: the wrapper fails the copy of one armed
 * name, once, as an exhausted heap would.
 */
#include <errno.h>

#include "sbx_internal.h"
#include "sbx_testlib.h"

char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s);

static char armed[HARNESS_NAME_MAX];

char *__wrap_strdup(const char *s)
{
	if (armed[0] && s && strcmp(s, armed) == 0) {
		armed[0] = '\0';
		errno = ENOMEM;
		return NULL;
	}
	return __real_strdup(s);
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

int main(void)
{
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nomem_while_listing_is_a_failure),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	sbxt_close();
	return r;
}
