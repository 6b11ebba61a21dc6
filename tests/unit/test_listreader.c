/*
 * test_listreader.c: the streaming reader of the engine's list answers
 * (src/engine/listreader.h) fed whole, byte by byte and cut at every offset; and
 * hostile answers: truncated, trailing bytes, non-objects, strings holding
 * brackets and escaped quotes, deep nesting, elements over the bound, a
 * callback that stops the list; and a keep list (only the members asked for).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "listreader.h"

struct seen {
	size_t n;
	char ids[64][32];
	int stop_at;      /* >0: return -ECANCELED at this element (1-based) */
};

static int collect(json_t *obj, void *ctx)
{
	struct seen *s = ctx;
	if (s->stop_at && (int)s->n + 1 == s->stop_at)
		return -ECANCELED;
	const char *id = json_string_value(json_object_get(obj, "Id"));
	if (s->n < 64)
		snprintf(s->ids[s->n], sizeof(s->ids[s->n]), "%s", id ? id : "(none)");
	s->n++;
	return 0;
}

/* Feed `text` in chunks of `chunk` bytes (0: whole); returns the result of feed/finish. */
static int run(const char *text, size_t len, size_t chunk, struct seen *s, size_t max_el, struct mafsbx_error *err)
{
	struct mafsbx_listreader *lr = mafsbx_listreader_new(collect, s, max_el);
	assert_non_null(lr);
	mafsbx_error_clear(err);
	int r = 0;
	if (!chunk)
		chunk = len ? len : 1;
	for (size_t off = 0; r == 0 && off < len; off += chunk)
		r = mafsbx_listreader_feed(lr, text + off, len - off < chunk ? len - off : chunk, err);
	if (r == 0)
		r = mafsbx_listreader_finish(lr, err);
	assert_int_equal(mafsbx_listreader_count(lr), s->stop_at ? s->n : s->n);
	mafsbx_listreader_free(lr);
	return r;
}

static const char good[] =
	" [ {\"Id\":\"a\",\"Names\":[\"/x\"],\"Labels\":{\"k\":\"v}]{[\"}},\n"
	"{\"Id\":\"b\\\"]}\",\"Nested\":{\"a\":[[{}],[]],\"b\":\"\\\\\"}} ,"
	"{\"Id\":\"c\\u005d\",\"Created\":1796202310} ]\n";

static void test_whole_and_every_chunk(void **state)
{
	(void)state;
	for (size_t chunk = 0; chunk <= sizeof(good); chunk++) {
		struct seen s = { 0 };
		struct mafsbx_error e;
		assert_int_equal(run(good, strlen(good), chunk, &s, 0, &e), 0);
		assert_int_equal(s.n, 3);
		assert_string_equal(s.ids[0], "a");
		assert_string_equal(s.ids[1], "b\"]}");
		assert_string_equal(s.ids[2], "c]");
	}
}

/* Cut the good answer at every offset: never a success, never a crash. */
static void test_truncated_everywhere(void **state)
{
	(void)state;
	size_t len = strlen(good);
	/* The last bytes are "]\n": a cut after ']' is complete. */
	for (size_t cut = 0; cut + 2 < len; cut++) {
		for (size_t chunk = 1; chunk <= 7; chunk += 3) {
			struct seen s = { 0 };
			struct mafsbx_error e;
			int r = run(good, cut, chunk, &s, 0, &e);
			assert_true(r < 0);
			assert_int_equal(e.kind, MAFSBX_EK_PROTOCOL);
			assert_true(strstr(e.message, "ends early") != NULL);
		}
	}
}

static void expect_protocol(const char *text, const char *words)
{
	for (size_t chunk = 0; chunk <= 3; chunk++) {
		struct seen s = { 0 };
		struct mafsbx_error e;
		int r = run(text, strlen(text), chunk, &s, 0, &e);
		assert_int_equal(r, -EIO);
		assert_int_equal(e.kind, MAFSBX_EK_PROTOCOL);
		if (!strstr(e.message, words))
			fail_msg("for %s: expected '%s' in '%s'", text, words, e.message);
	}
}

static void test_hostile(void **state)
{
	(void)state;
	expect_protocol("{\"Id\":\"a\"}", "not a JSON array");
	expect_protocol("[1,2]", "not a JSON object");
	expect_protocol("[\"x\"]", "not a JSON object");
	expect_protocol("[{\"Id\":\"a\"},]", "not a JSON object");
	expect_protocol("[,{\"Id\":\"a\"}]", "not a JSON object");
	expect_protocol("[{\"Id\":\"a\"}{\"Id\":\"b\"}]", "after element 1");
	expect_protocol("[{\"Id\":\"a\"}] x", "after its end");
	expect_protocol("[{\"Id\":\"a\"}][]", "after its end");
	expect_protocol("[{\"Id\":\"a\"]]", "is not a JSON object");     /* mismatched brackets: jansson judges */
	expect_protocol("[{\"Id\":\"a\",}]", "is not a JSON object");
	expect_protocol("[{\"Id\":\"a\",\"Id\":\"b\"}]", "is not a JSON object");   /* duplicate keys */
	expect_protocol("[{\"Id\":\"\\x\"}]", "is not a JSON object");
	expect_protocol("[{\"Id\":\"\xff\"}]", "is not a JSON object");       /* not UTF-8 */
	expect_protocol("", "ends early");
	expect_protocol("[", "ends early");
	expect_protocol("[{\"Id\":\"a\"", "ends early");
	expect_protocol("[{\"Id\":\"a\\", "ends early");
}

static void test_empty_lists(void **state)
{
	(void)state;
	const char *ok[] = { "[]", " [ ] ", "\n[\r\n\t]\n" };
	for (size_t i = 0; i < 3; i++) {
		struct seen s = { 0 };
		struct mafsbx_error e;
		assert_int_equal(run(ok[i], strlen(ok[i]), 1, &s, 0, &e), 0);
		assert_int_equal(s.n, 0);
	}
}

/* Nesting deeper than jansson accepts: refused as a bad element, not a stack overflow. */
static void test_deep_nesting(void **state)
{
	(void)state;
	size_t depth = 100000;
	char *t = malloc(2 * depth + 64);
	assert_non_null(t);
	static const char head[] = "[{\"a\":", tail[] = "}]";
	size_t k = sizeof(head) - 1;
	memcpy(t, head, k);
	for (size_t i = 0; i < depth; i++)
		t[k++] = '[';
	for (size_t i = 0; i < depth; i++)
		t[k++] = ']';
	memcpy(t + k, tail, sizeof(tail) - 1);
	k += sizeof(tail) - 1;
	struct seen s = { 0 };
	struct mafsbx_error e;
	int r = run(t, k, 4096, &s, 0, &e);
	assert_int_equal(r, -EIO);
	assert_int_equal(e.kind, MAFSBX_EK_PROTOCOL);
	free(t);
}

/* A huge string: over the element bound is EK_TOO_BIG, cut as soon as it passes it. */
static void test_huge_element(void **state)
{
	(void)state;
	size_t big = 200000;
	char *t = malloc(big + 64);
	assert_non_null(t);
	static const char head[] = "[{\"Id\":\"a\"},{\"Id\":\"", tail[] = "\"}]";
	size_t k = sizeof(head) - 1;
	memcpy(t, head, k);
	memset(t + k, 'x', big);
	k += big;
	memcpy(t + k, tail, sizeof(tail) - 1);
	k += sizeof(tail) - 1;
	struct seen s = { 0 };
	struct mafsbx_error e;
	assert_int_equal(run(t, k, 1000, &s, 100000, &e), -EFBIG);
	assert_int_equal(e.kind, MAFSBX_EK_TOO_BIG);
	assert_int_equal(s.n, 1);
	assert_true(strstr(e.message, "element 1") != NULL);
	/* Under a larger bound the same list is fine. */
	struct seen s2 = { 0 };
	assert_int_equal(run(t, k, 1000, &s2, 0, &e), 0);
	assert_int_equal(s2.n, 2);
	free(t);
}

static void test_callback_stops(void **state)
{
	(void)state;
	struct seen s = { .stop_at = 2 };
	struct mafsbx_error e;
	struct mafsbx_listreader *lr = mafsbx_listreader_new(collect, &s, 0);
	assert_non_null(lr);
	int r = mafsbx_listreader_feed(lr, good, strlen(good), &e);
	assert_true(r < 0);
	assert_int_equal(s.n, 1);
	assert_true(strstr(e.message, "element 1") != NULL);
	/* Every later call repeats the failure. */
	struct mafsbx_error e2;
	assert_int_equal(mafsbx_listreader_feed(lr, "]", 1, &e2), r);
	assert_int_equal(mafsbx_listreader_finish(lr, &e2), r);
	assert_string_equal(e.message, e2.message);
	mafsbx_listreader_free(lr);
}

/* Many elements: the reader holds one at a time (its count goes up, the buffer stays small). */
static void test_many(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct mafsbx_listreader *lr = mafsbx_listreader_new(collect, &s, 0);
	assert_non_null(lr);
	struct mafsbx_error e;
	assert_int_equal(mafsbx_listreader_feed(lr, "[", 1, &e), 0);
	char el[128];
	for (int i = 0; i < 20000; i++) {
		int n = snprintf(el, sizeof(el), "%s{\"Id\":\"%d\",\"Labels\":{\"a\":\"[{\"}}", i ? "," : "", i);
		assert_int_equal(mafsbx_listreader_feed(lr, el, (size_t)n, &e), 0);
	}
	assert_int_equal(mafsbx_listreader_feed(lr, "]", 1, &e), 0);
	assert_int_equal(mafsbx_listreader_finish(lr, &e), 0);
	assert_int_equal(mafsbx_listreader_count(lr), 20000);
	assert_string_equal(s.ids[63], "63");
	mafsbx_listreader_free(lr);
}

/* Each element as compact JSON with sorted keys, one a line (for the keep-list test). */
struct dumped {
	char text[4096];
	size_t len;
};

static int dump(json_t *obj, void *ctx)
{
	struct dumped *d = ctx;
	char *t = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
	assert_non_null(t);
	int n = snprintf(d->text + d->len, sizeof(d->text) - d->len, "%s\n", t);
	assert_true(n > 0 && (size_t)n < sizeof(d->text) - d->len);
	d->len += (size_t)n;
	free(t);
	return 0;
}

/*
 * A keep list hands over only the members asked for, whatever the others
 * hold (strings with brackets, commas and quotes, nesting, a key of 70
 * bytes), at every chunk size; a member whose key has an escape is kept
 * as jansson reads it; an element with none asked for is "{}".
 */
static void test_keep(void **state)
{
	(void)state;
	static const char text[] =
		"[{\"Ports\":[{\"a\":\",}]\\\"\"}],\"Id\":\"a\",\"NetworkSettings\":{\"Networks\":{\"x\":{\"y\":[1,{}]}}},"
		"\"Names\":[\"/x\",\"/p/x\"] , \"Labels\":{\"Id\":\"no\",\"k\":\"{v,}\"},\"Mounts\":[]},\n"
		"{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1,\"Created\":7,"
		"\"\\u0049d\":\"e\",\"Status\":\"Up, {\\\\\"},"
		"{\"Other\":{\"Id\":\"inner\"}},"
		"{ \"Id\" : \"last\" }]";
	static const char want[] = "{\"Id\":\"a\",\"Labels\":{\"Id\":\"no\",\"k\":\"{v,}\"},\"Names\":[\"/x\",\"/p/x\"]}\n"
				   "{\"Created\":7,\"Id\":\"e\"}\n"
				   "{}\n"
				   "{\"Id\":\"last\"}\n";
	static const char *const keep[] = { "Id", "Names", "Labels", "Created", NULL };
	for (size_t chunk = 1; chunk <= sizeof(text); chunk++) {
		struct dumped d = { .len = 0 };
		struct mafsbx_listreader *lr = mafsbx_listreader_new(dump, &d, 0);
		assert_non_null(lr);
		mafsbx_listreader_keep(lr, keep);
		struct mafsbx_error e;
		int r = 0;
		size_t len = strlen(text);
		for (size_t off = 0; r == 0 && off < len; off += chunk)
			r = mafsbx_listreader_feed(lr, text + off, len - off < chunk ? len - off : chunk, &e);
		if (r == 0)
			r = mafsbx_listreader_finish(lr, &e);
		if (r != 0)
			fail_msg("chunk %zu: %s", chunk, e.message);
		assert_string_equal(d.text, want);
		mafsbx_listreader_free(lr);
	}
	/* what is still refused: a list cut short, an element that is not an object */
	struct dumped d = { .len = 0 };
	struct mafsbx_listreader *lr = mafsbx_listreader_new(dump, &d, 0);
	mafsbx_listreader_keep(lr, keep);
	struct mafsbx_error e;
	assert_int_equal(mafsbx_listreader_feed(lr, "[{\"Id\":\"a\",\"Ports\":[", 19, &e), 0);
	assert_true(mafsbx_listreader_finish(lr, &e) < 0);
	assert_int_equal(e.kind, MAFSBX_EK_PROTOCOL);
	mafsbx_listreader_free(lr);
	lr = mafsbx_listreader_new(dump, &d, 0);
	mafsbx_listreader_keep(lr, keep);
	assert_true(mafsbx_listreader_feed(lr, "[{\"Id\":}]", 9, &e) < 0);
	assert_int_equal(e.kind, MAFSBX_EK_PROTOCOL);
	mafsbx_listreader_free(lr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_and_every_chunk),
		cmocka_unit_test(test_truncated_everywhere),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_empty_lists),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_huge_element),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_keep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
