/*
 * test_error_gone.c: the one "already gone" rule (mafsbx_error_is_gone in
 * src/base/error.h), fed through the same mapping the engine's answers take
 * (mafsbx_error_from_engine): Docker's and Podman's absence wordings count
 * when they name the target; a 404 without the engine's message, a 404
 * that names something else, "context not found" and other statuses never
 * do, nor a message that only our own prefix makes look like one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define NET "maf-sandbox-docker-0123456789ab-net"

struct row {
	long status;
	const char *body;
	const char *what;
	const char *target;
	bool gone;
};

static const struct row rows[] = {
	/* Docker (doc/engine-notes.md §1.2, §5) */
	{ 404, "{\"message\":\"No such container: maf-sandbox-docker-0123456789ab\"}", "delete container",
	  "maf-sandbox-docker-0123456789ab", true },
	{ 404, "{\"message\":\"No such container: " ID "\"}", "inspect container", ID, true },
	{ 404, "{\"message\":\"network " NET " not found\"}", "inspect network", NET, true },
	{ 404, "{\"message\":\"network " ID " not found\"}", "delete network", ID, true },
	/* case does not matter to the engine's wording */
	{ 404, "{\"message\":\"NO SUCH CONTAINER: " ID "\"}", "delete container", ID, true },
	/* Podman's compatible API */
	{ 404, "{\"cause\":\"no such container\",\"message\":\"no container with name or ID \\\"" ID
	       "\\\" found: no such container\",\"response\":404}", "delete container", ID, true },
	{ 404, "{\"cause\":\"network not found\",\"message\":\"unable to find network with name or ID " NET
	       ": network not found\",\"response\":404}", "delete network", NET, true },
	/* absence of something else: another container, a file, an exec */
	{ 404, "{\"message\":\"No such container: maf-sandbox-docker-ffffffffffff\"}", "delete container",
	  "maf-sandbox-docker-0123456789ab", false },
	{ 404, "{\"message\":\"Could not find the file /w/x in container " ID "\"}", "archive", ID, false },
	/* a 404 that is not the engine's: a proxy in front of the socket, a wrong path, no body */
	{ 404, "404 page not found", "delete container " ID, ID, false },
	{ 404, NULL, "delete network " NET " (not found)", NET, false },
	{ 404, "{\"message\":\"page not found\"}", "delete network " NET, NET, false },
	/* not a 404 at all */
	{ 500, "{\"message\":\"context not found: " NET "\"}", "delete network", NET, false },
	{ 409, "{\"message\":\"No such container: " ID "\"}", "delete container", ID, false },
	{ 200, NULL, "delete container", ID, false },
	/* no target: nothing can be named */
	{ 404, "{\"message\":\"No such container: x\"}", "delete container", "", false },
};

static void test_rows(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *w = &rows[i];
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		if (w->status >= 400)
			mafsbx_error_from_engine(&e, w->status, w->body, w->body ? strlen(w->body) : 0, w->what, NULL);
		if (mafsbx_error_is_gone(&e, w->target) != w->gone)
			fail_msg("row %zu (%ld, %s): gone should be %d", i, w->status, e.message, w->gone);
	}
}

static void test_context_kept(void **state)
{
	(void)state;
	/* a prefix added as the error travels up does not hide the engine's words */
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	const char *body = "{\"message\":\"network " NET " not found\"}";
	mafsbx_error_from_engine(&e, 404, body, strlen(body), "delete network", NULL);
	mafsbx_error_prefix(&e, "sandbox %s", "maf-sandbox-docker-0123456789ab");
	assert_true(mafsbx_error_is_gone(&e, NET));
	/* an error we set ourselves is never the engine's */
	mafsbx_error_set(&e, MAFSBX_EK_NO_OBJECT, "engine answered 404: network %s not found", NET);
	assert_false(mafsbx_error_is_gone(&e, NET));
	assert_false(mafsbx_error_is_gone(NULL, NET));
	assert_false(mafsbx_error_is_gone(&e, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_context_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
