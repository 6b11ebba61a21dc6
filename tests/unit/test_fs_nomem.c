/*
 * test_fs_nomem.c: replies the daemon cannot build in full for want of
 * memory are refused, never sent with a part silently missing. An exec
 * reply (fs/requests.c mfs_exec_fields) whose output cannot be base64
 * encoded is NULL (the caller answers ENOMEM), not a reply that says the
 * command printed nothing. This program is linked with
 * -Wl,--wrap=mafsbx_base64_encode: the wrapper fails the encoding when
 * armed, as an exhausted heap would.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base64.h"
#include "engine.h"
#include "mfs.h"

char *__real_mafsbx_base64_encode(const void *data, size_t len, unsigned flags);
char *__wrap_mafsbx_base64_encode(const void *data, size_t len, unsigned flags);

static int fail_encodings;   /* how many of the next encodings fail */
static int encodings;

char *__wrap_mafsbx_base64_encode(const void *data, size_t len, unsigned flags)
{
	encodings++;
	if (fail_encodings > 0) {
		fail_encodings--;
		errno = ENOMEM;
		return NULL;
	}
	return __real_mafsbx_base64_encode(data, len, flags);
}

static struct mafsbx_exec_result result_with_output(void)
{
	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	res.out = (unsigned char *)"hello\n";
	res.out_len = 6;
	res.err = (unsigned char *)"";
	res.err_len = 0;
	res.exit_code = 0;
	return res;
}

static void test_exec_reply_whole(void **state)
{
	(void)state;
	struct mafsbx_exec_result res = result_with_output();
	encodings = 0;
	json_t *o = mfs_exec_fields(&res, true);
	assert_non_null(o);
	assert_int_equal(encodings, 2);
	assert_string_equal(json_string_value(json_object_get(o, "stdout")), "hello\n");
	assert_string_equal(json_string_value(json_object_get(o, "stdout_b64")), "aGVsbG8K");
	assert_true(json_is_true(json_object_get(o, "ok")));
	json_decref(o);
}

static void test_exec_reply_unencodable_is_refused(void **state)
{
	(void)state;
	struct mafsbx_exec_result res = result_with_output();
	encodings = 0;
	fail_encodings = 1;   /* stdout's encoding */
	json_t *o = mfs_exec_fields(&res, true);
	assert_int_equal(encodings, 2);
	if (o) {
		/* before: "stdout_b64": "" for six bytes printed */
		fail_msg("a reply was built without stdout's bytes: stdout_b64 \"%s\"",
			 json_string_value(json_object_get(o, "stdout_b64")));
	}
	fail_encodings = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_reply_whole),
		cmocka_unit_test(test_exec_reply_unencodable_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
