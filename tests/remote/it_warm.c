/*
 * it_warm.c: the warm acquire path (doc/performance.md) against the real local
 * dockerd, counting the engine calls it makes (mafsbx_http_request_count):
 *
 *  - running, facts known: exactly one engine call (the inspect), and the
 *    work dir is still there;
 *  - running, but the guest removed its work dir: the warm check sees it and
 *    the frozen path makes it again (doc/upstream.md §4.8 prepares on every acquire);
 *  - running, the work dir swapped for a link to /etc: refused, nothing
 *    written through the link;
 *  - stopped: started again (state "started"), and the next acquire is warm;
 *  - paused with no live freeze (an orphan): thawed (state "started"), and
 *    the next acquire is warm.
 * Each test uses its own random scope and disposes it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "http.h"
#include "sbx_internal.h"
#include "sbx_testlib.h"

/* Acquire (scope, "a", "python") and return how many engine calls it made. */
static unsigned long counted_acquire(const char *scope, struct mafsbx_acquire_result *r)
{
	unsigned long before = mafsbx_http_request_count();
	sbxt_acquire_ok(scope, "a", "python", NULL, r);
	return mafsbx_http_request_count() - before;
}

static void docker_cli(const char *verb, const char *id)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "docker %s %s >/dev/null", verb, id);
	assert_int_equal(system(cmd), 0);
}

static const char *state_of(const char *id, json_t **keep)
{
	*keep = sbxt_inspect(id);
	return json_string_value(json_object_get(json_object_get(*keep, "State"), "Status"));
}

static void test_warm_running(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, b;
	unsigned long cold = counted_acquire(scope, &a);
	assert_int_equal(a.state, MAFSBX_ACQ_CREATED);
	/* the second acquire is warm: facts cached on the first */
	unsigned long warm = counted_acquire(scope, &b);
	assert_int_equal(b.state, MAFSBX_ACQ_REUSED);
	assert_string_equal(b.id, a.id);
	printf("# engine calls: cold acquire %lu, warm acquire %lu\n", cold, warm);
	assert_int_equal(warm, 1);
	/* and once more: still one */
	assert_int_equal(counted_acquire(scope, &b), 1);

	/* the guest removes its work dir: the warm check notices, the dir is made again */
	char *o = sbxt_sh_out(a.name, "rm -rf /maf-sandbox/work && echo gone");
	assert_string_equal(o, "gone");
	free(o);
	unsigned long n = counted_acquire(scope, &b);
	assert_true(n > 1);
	o = sbxt_sh_out(a.name, "test -d /maf-sandbox/work && echo back");
	assert_string_equal(o, "back");
	free(o);
	assert_int_equal(counted_acquire(scope, &b), 1);

	/* swapped for a link: refused, and nothing is made through it */
	o = sbxt_sh_out(a.name, "rm -rf /maf-sandbox/work && mkdir -p /tmp/elsewhere && "
				"ln -s /tmp/elsewhere /maf-sandbox/work && echo linked");
	assert_string_equal(o, "linked");
	free(o);
	struct mafsbx_error e;
	int r = sbxt_acquire_fails(scope, "a", "python", NULL, &e);
	assert_true(r < 0);
	o = sbxt_sh_out(a.name, "ls -A /tmp/elsewhere | wc -l");
	assert_string_equal(o, "0");
	free(o);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

static void test_warm_after_stop(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, b;
	counted_acquire(scope, &a);
	docker_cli("kill", a.id);
	json_t *j;
	assert_string_equal(state_of(a.id, &j), "exited");
	json_decref(j);
	unsigned long n = counted_acquire(scope, &b);
	assert_int_equal(b.state, MAFSBX_ACQ_STARTED);
	assert_string_equal(b.id, a.id);
	assert_true(n > 1);
	assert_string_equal(state_of(a.id, &j), "running");
	json_decref(j);
	/* the restarted container has a new init: the warm check follows it */
	assert_int_equal(counted_acquire(scope, &b), 1);
	assert_int_equal(b.state, MAFSBX_ACQ_REUSED);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

static void test_warm_after_pause(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result a, b;
	counted_acquire(scope, &a);
	/* an orphan freeze: paused by hand, no live freeze of this process */
	struct mafsbx_error e;
	harness_check(mafsbx_container_pause(harness_engine(), a.id, &e), &e, "pause");
	unsigned long n = counted_acquire(scope, &b);
	assert_int_equal(b.state, MAFSBX_ACQ_STARTED);
	assert_true(n > 1);
	json_t *j = sbxt_inspect(a.id);
	assert_false(json_is_true(json_object_get(json_object_get(j, "State"), "Paused")));
	json_decref(j);
	assert_int_equal(counted_acquire(scope, &b), 1);
	assert_int_equal(b.state, MAFSBX_ACQ_REUSED);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

int main(void)
{
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warm_running),
		cmocka_unit_test(test_warm_after_stop),
		cmocka_unit_test(test_warm_after_pause),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	sbxt_close();
	return r;
}
