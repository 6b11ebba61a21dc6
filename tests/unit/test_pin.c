/*
 * test_pin.c: the pure parts of pinning a container (pin.h): the id map
 * parser (/proc/PID/uid_map) with mapping both ways. The cgroup check that
 * a PID is the container's is cgroup.h's, tested by test_cgroup.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "pin.h"

#define ID "397437190d01e6d88e8447ff8c56c5216dcadf20d8b342f42b077b1f415026d1"

static void test_id_map(void **state)
{
	(void)state;
	struct mafsbx_id_map m[4];
	size_t n = 0;
	assert_int_equal(mafsbx_id_map_parse("         0          0 4294967295\n", m, 4, &n), 0);
	assert_int_equal(n, 1);
	struct mafsbx_pin p;
	memset(&p, 0, sizeof(p));
	assert_int_equal(mafsbx_id_map_parse("0 100000 65536\n", p.uid_map, MAFSBX_PIN_MAP_MAX, &p.n_uid_map), 0);
	uid_t u;
	assert_int_equal(mafsbx_pin_host_uid(&p, 1000, &u), 0);
	assert_int_equal(u, 101000);
	assert_int_equal(mafsbx_pin_guest_uid(&p, 101000, &u), 0);
	assert_int_equal(u, 1000);
	assert_int_equal(mafsbx_pin_host_uid(&p, 65536, &u), -ERANGE);
	assert_int_equal(mafsbx_pin_guest_uid(&p, 0, &u), -ERANGE);
	/* two ranges */
	assert_int_equal(mafsbx_id_map_parse("0 1000 1\n1 200000 10\n", m, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(m[1].outside, 200000);
	/* malformed */
	assert_int_equal(mafsbx_id_map_parse("0 0\n", m, 4, &n), -EINVAL);
	assert_int_equal(mafsbx_id_map_parse("a b c\n", m, 4, &n), -EINVAL);
	assert_int_equal(mafsbx_id_map_parse("0 0 99999999999\n", m, 4, &n), -EINVAL);
	assert_int_equal(mafsbx_id_map_parse("0 0 1 2\n", m, 4, &n), -EINVAL);
	assert_int_equal(mafsbx_id_map_parse("0 0 1\n1 1 1\n2 2 1\n", m, 2, &n), -EINVAL);
	assert_int_equal(mafsbx_id_map_parse("", m, 4, &n), 0);
	assert_int_equal(n, 0);
}

static void test_pidmode(void **state)
{
	(void)state;
	assert_false(mafsbx_pidmode_shared(NULL));
	assert_false(mafsbx_pidmode_shared(""));
	assert_false(mafsbx_pidmode_shared("private"));   /* Podman's own namespace */
	assert_true(mafsbx_pidmode_shared("host"));
	assert_true(mafsbx_pidmode_shared("container:abc"));
	assert_true(mafsbx_pidmode_shared("privatex"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id_map),
		cmocka_unit_test(test_pidmode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
