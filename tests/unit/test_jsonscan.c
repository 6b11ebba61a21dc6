/*
 * test_jsonscan.c: the incremental JSON syntax checker (src/base/jsonscan.h),
 * differentially against jansson's own parser: every document of a table,
 * and every prefix of each, is fed one byte at a time; the checker must end
 * the object at exactly the byte where a complete object ends and call the
 * document bad exactly when jansson refuses it (for a top-level object;
 * jansson's JSON_DISABLE_EOF_CHECK reads one value and stops, as the
 * checker does). Then the refusals name their problem, the nesting bound
 * holds, and a reset scanner starts afresh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "jsonscan.h"

/* Feed the bytes; the result of the last byte fed, the count fed in *used. */
static enum mafsbx_scan_result feed(struct mafsbx_jsonscan *s, const char *doc, size_t len, size_t *used,
				    const char **why)
{
	enum mafsbx_scan_result r = MAFSBX_SCAN_MORE;
	size_t i = 0;
	for (; i < len; i++) {
		r = mafsbx_jsonscan_byte(s, (unsigned char)doc[i], why);
		if (r != MAFSBX_SCAN_MORE) {
			i++;
			break;
		}
	}
	*used = i;
	return r;
}

/* jansson's verdict on exactly one top-level object, with nothing after it. */
static bool jansson_object(const char *doc, size_t len)
{
	json_error_t err;
	json_t *v = json_loadb(doc, len, JSON_ALLOW_NUL, &err);
	bool ok = v && json_is_object(v);
	json_decref(v);
	return ok;
}

static const char *const docs[] = {
	"{}",
	"{\"a\":1}",
	" {\"argv\": [\"sh\", \"-c\", \"echo hi\"], \"timeout_s\": 2.5e1} ",
	"{\"a\":[1,-0,0.5,1e5,1E-5,-1.25e+3,true,false,null,{},[]]}",
	"{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\"}",
	"{\"u\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
	"{\"a\":{\"b\":{\"c\":[[[]]]}}}",
	/* refused */
	"{,}",
	"{\"a\"}",
	"{\"a\":}",
	"{\"a\":1,}",
	"{\"a\":[1,]}",
	"{\"a\":01}",
	"{\"a\":1.}",
	"{\"a\":.5}",
	"{\"a\":-}",
	"{\"a\":1e}",
	"{\"a\":tru}",
	"{\"a\":nul1}",
	"{\"a\":\"\\x\"}",
	"{\"a\":\"\\u12g4\"}",
	"{\"a\":\"\\ud83d\"}",
	"{\"a\":\"\\ude00\"}",
	"{\"a\":\"\xc0\xaf\"}",
	"{\"a\":\"\xed\xa0\x80\"}",
	"{\"a\":\"\xf4\x90\x80\x80\"}",
	"{\"a\":\"tab\there\"}",
	"[1]",
	"\"s\"",
	"{\"a\":1}}",
	"{\"a\":1} x",
	"{'a':1}",
	"{\"a\" 1}",
	"{\"a\":[}",
	"{\"a\":{]}",
};

static void test_against_jansson(void **state)
{
	(void)state;
	for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
		const char *doc = docs[d];
		size_t len = strlen(doc);
		for (size_t n = 0; n <= len; n++) {
			struct mafsbx_jsonscan s;
			mafsbx_jsonscan_reset(&s);
			const char *why = NULL;
			size_t used = 0;
			enum mafsbx_scan_result r = feed(&s, doc, n, &used, &why);
			/* the rest of the prefix after the object: whitespace only */
			while (r == MAFSBX_SCAN_DONE && used < n) {
				r = mafsbx_jsonscan_byte(&s, (unsigned char)doc[used], &why);
				used++;
			}
			bool complete = jansson_object(doc, n);
			if (complete && r != MAFSBX_SCAN_DONE)
				fail_msg("doc %zu prefix %zu: jansson reads an object, the checker says %d", d, n, (int)r);
			if (r == MAFSBX_SCAN_DONE && !complete)
				fail_msg("doc %zu prefix %zu: the checker ends an object jansson refuses", d, n);
			if (r == MAFSBX_SCAN_BAD) {
				assert_non_null(why);
				assert_true(strlen(why) > 0);
				/* a bad prefix: no continuation makes it an object */
				assert_false(jansson_object(doc, len));
			}
		}
	}
}

static void test_reasons(void **state)
{
	(void)state;
	struct {
		const char *doc, *why;
	} cases[] = {
		{"{\"a\":\"\xc0\"}", "invalid UTF-8 in a string"},
		{"{\"a\":1} x", "data after the JSON object (one request per write sequence)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mafsbx_jsonscan s;
		mafsbx_jsonscan_reset(&s);
		const char *why = NULL;
		enum mafsbx_scan_result r = MAFSBX_SCAN_MORE;
		for (const char *p = cases[i].doc; *p && r != MAFSBX_SCAN_BAD; p++)
			r = mafsbx_jsonscan_byte(&s, (unsigned char)*p, &why);
		assert_int_equal(r, MAFSBX_SCAN_BAD);
		assert_string_equal(why, cases[i].why);
	}
}

static void test_depth_bound(void **state)
{
	(void)state;
	struct mafsbx_jsonscan s;
	mafsbx_jsonscan_reset(&s);
	const char *why = NULL;
	const char *head = "{\"a\":";
	for (const char *p = head; *p; p++)
		assert_int_equal(mafsbx_jsonscan_byte(&s, (unsigned char)*p, &why), MAFSBX_SCAN_MORE);
	/* the object is depth 1: MAX_DEPTH - 1 arrays fit, the next is refused */
	for (int i = 1; i < MAFSBX_JSONSCAN_MAX_DEPTH; i++)
		assert_int_equal(mafsbx_jsonscan_byte(&s, '[', &why), MAFSBX_SCAN_MORE);
	assert_int_equal(mafsbx_jsonscan_byte(&s, '[', &why), MAFSBX_SCAN_BAD);
	assert_non_null(why);
}

static void test_reset(void **state)
{
	(void)state;
	struct mafsbx_jsonscan s;
	mafsbx_jsonscan_reset(&s);
	const char *why = NULL;
	size_t used;
	assert_int_equal(feed(&s, "{\"a\":[", 6, &used, &why), MAFSBX_SCAN_MORE);
	mafsbx_jsonscan_reset(&s);
	assert_int_equal(feed(&s, "{}", 2, &used, &why), MAFSBX_SCAN_DONE);
	assert_int_equal(used, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_jansson),
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_depth_bound),
		cmocka_unit_test(test_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
