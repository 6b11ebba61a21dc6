/*
 * test_pullprogress.c: an image pull's progress summed from the engine's
 * progress lines (src/admin/pullprogress.c), fed the lines dockerd sends for a
 * two-layer pull: the tag's and the digest's lines change nothing, bytes
 * are summed over the layers whose size is known, a layer already present
 * counts as done, a line without an ID or status is ignored, and the table
 * is bounded (more layers are counted as "+").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pullprogress.h"

static bool feed(struct mafsbx_pull_progress *p, const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	assert_non_null(j);
	bool changed = mafsbx_pull_progress_feed(p, j);
	json_decref(j);
	return changed;
}

static void expect_text(const struct mafsbx_pull_progress *p, const char *want)
{
	char text[160];
	mafsbx_pull_progress_format(p, text, sizeof(text));
	assert_string_equal(text, want);
}

static void test_two_layers(void **state)
{
	(void)state;
	struct mafsbx_pull_progress p;
	mafsbx_pull_progress_init(&p);
	expect_text(&p, "waiting for the registry");
	assert_false(feed(&p, "{\"status\":\"Pulling from library/python\",\"id\":\"3.12\"}"));
	assert_true(feed(&p, "{\"status\":\"Pulling fs layer\",\"progressDetail\":{},\"id\":\"aaa\"}"));
	assert_true(feed(&p, "{\"status\":\"Already exists\",\"progressDetail\":{},\"id\":\"bbb\"}"));
	assert_true(feed(&p, "{\"status\":\"Waiting\",\"progressDetail\":{},\"id\":\"ccc\"}"));
	expect_text(&p, "1/3 layers done, 0 B of 0 B");
	assert_true(feed(&p, "{\"status\":\"Downloading\",\"progressDetail\":{\"current\":1500000,\"total\":3000000},"
			     "\"progress\":\"[=>   ]\",\"id\":\"aaa\"}"));
	assert_true(feed(&p, "{\"status\":\"Downloading\",\"progressDetail\":{\"current\":500,\"total\":1000},\"id\":\"ccc\"}"));
	expect_text(&p, "1/3 layers done, 1.5 MB of 3.0 MB");
	assert_true(feed(&p, "{\"status\":\"Download complete\",\"progressDetail\":{},\"id\":\"aaa\"}"));
	assert_true(feed(&p, "{\"status\":\"Download complete\",\"progressDetail\":{},\"id\":\"ccc\"}"));
	expect_text(&p, "1/3 layers done, 3.0 MB downloaded, extracting");
	assert_true(feed(&p, "{\"status\":\"Extracting\",\"progressDetail\":{\"current\":32768,\"total\":3000000},\"id\":\"aaa\"}"));
	assert_true(feed(&p, "{\"status\":\"Pull complete\",\"progressDetail\":{},\"id\":\"aaa\"}"));
	assert_true(feed(&p, "{\"status\":\"Pull complete\",\"progressDetail\":{},\"id\":\"ccc\"}"));
	assert_false(feed(&p, "{\"status\":\"Digest: sha256:0123\"}"));
	assert_false(feed(&p, "{\"status\":\"Status: Downloaded newer image for python:3.12\"}"));
	expect_text(&p, "3/3 layers done, 3.0 MB downloaded");
	struct mafsbx_pull_summary s;
	mafsbx_pull_progress_sum(&p, &s);
	assert_int_equal(s.layers, 3);
	assert_int_equal(s.done, 3);
	assert_int_equal(s.bytes, 3001000);
	assert_int_equal(s.bytes_total, 3001000);
}

static void test_odd_lines(void **state)
{
	(void)state;
	struct mafsbx_pull_progress p;
	mafsbx_pull_progress_init(&p);
	assert_false(feed(&p, "{}"));
	assert_false(feed(&p, "{\"status\":\"Downloading\"}"));
	assert_false(feed(&p, "{\"status\":\"Downloading\",\"id\":\"\"}"));
	assert_false(feed(&p, "{\"status\":7,\"id\":\"x\"}"));
	/* a current past the total (a registry's rounding) is held at the total; negative numbers are 0 */
	assert_true(feed(&p, "{\"status\":\"Downloading\",\"progressDetail\":{\"current\":900,\"total\":800},\"id\":\"x\"}"));
	assert_true(feed(&p, "{\"status\":\"Downloading\",\"progressDetail\":{\"current\":-5,\"total\":-1},\"id\":\"y\"}"));
	expect_text(&p, "0/2 layers done, 800 B of 800 B");
	/* a tiny buffer is cut, never overrun */
	char tiny[8];
	mafsbx_pull_progress_format(&p, tiny, sizeof(tiny));
	assert_string_equal(tiny, "0/2 lay");
}

static void test_bounded(void **state)
{
	(void)state;
	struct mafsbx_pull_progress p;
	mafsbx_pull_progress_init(&p);
	char line[128];
	for (int i = 0; i < MAFSBX_PULL_LAYERS_MAX + 5; i++) {
		snprintf(line, sizeof(line), "{\"status\":\"Already exists\",\"id\":\"layer%d\"}", i);
		assert_true(feed(&p, line));
	}
	assert_int_equal(p.n, MAFSBX_PULL_LAYERS_MAX);
	assert_true(p.more);
	char want[64];
	snprintf(want, sizeof(want), "%d/%d+ layers done, 0 B downloaded, extracting", MAFSBX_PULL_LAYERS_MAX,
		 MAFSBX_PULL_LAYERS_MAX);
	expect_text(&p, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_layers),
		cmocka_unit_test(test_odd_lines),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
