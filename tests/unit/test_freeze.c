/*
 * test_freeze.c: the pure part of the freezer: which failed unpauses need no
 * retry and no warning (the container is gone or stopped: doc/security.md "Findings fixed after review": a lingering freeze of a disposed sandbox).
 * The freezer itself runs against a real engine (tests/integration).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"
#include "freeze.h"

static struct mafsbx_error engine_err(enum mafsbx_err_kind kind, int status, const char *msg)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	e.kind = kind;
	e.http_status = status;
	snprintf(e.message, sizeof(e.message), "%s", msg);
	return e;
}

static void test_unpause_moot(void **state)
{
	(void)state;
	/* what dockerd 20.10 answered to a lingering freeze's unpause right after a dispose's kill */
	struct mafsbx_error stopped = engine_err(MAFSBX_EK_ENGINE, 500,
						 "engine: cannot resume a stopped container: unknown");
	assert_true(mafsbx_freeze_unpause_moot(&stopped, NULL, NULL));

	struct mafsbx_error other = engine_err(MAFSBX_EK_ENGINE, 500, "engine: connection reset");
	struct mafsbx_error gone = engine_err(MAFSBX_EK_NO_CONTAINER, 404, "No such container: x");
	assert_true(mafsbx_freeze_unpause_moot(&gone, NULL, NULL));
	/* an unexplained failure with the container gone by now, or stopped */
	assert_true(mafsbx_freeze_unpause_moot(&other, NULL, &gone));
	json_t *exited = json_pack("{s:{s:s, s:b, s:b}}", "State", "Status", "exited", "Running", 0, "Paused", 1);
	assert_true(mafsbx_freeze_unpause_moot(&other, exited, NULL));
	json_t *removing = json_pack("{s:{s:s, s:b}}", "State", "Status", "removing", "Running", 1);
	assert_true(mafsbx_freeze_unpause_moot(&other, removing, NULL));

	/* still running and paused: the freeze is ours to lift, retried in the background */
	json_t *paused = json_pack("{s:{s:s, s:b, s:b}}", "State", "Status", "paused", "Running", 1, "Paused", 1);
	assert_false(mafsbx_freeze_unpause_moot(&other, paused, NULL));
	struct mafsbx_error timeout = engine_err(MAFSBX_EK_TIMEOUT, 0, "engine did not answer");
	assert_false(mafsbx_freeze_unpause_moot(&other, NULL, &timeout));
	assert_false(mafsbx_freeze_unpause_moot(&other, NULL, NULL));
	json_decref(exited);
	json_decref(removing);
	json_decref(paused);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unpause_moot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
