/*
 * test_buf.c: the one array-growth helper (src/base/buf.h mafsbx_array_grow):
 * growth by doubling from the first capacity, a capacity that already holds
 * the request left alone, the bound, a byte size that would not fit a size_t
 * refused with ENOMEM before any allocation (never a wrapped size), and a
 * failing realloc leaving the array and its capacity as they were. This
 * program is linked with -Wl,--wrap=realloc: the wrapper records each size
 * asked for and fails the call when armed, as an exhausted heap would.
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

#include "buf.h"

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

static int realloc_calls;
static size_t realloc_last;
static int realloc_fail;

void *__wrap_realloc(void *p, size_t n)
{
	realloc_calls++;
	realloc_last = n;
	if (realloc_fail) {
		realloc_fail = 0;
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

struct item {
	int a;
	char b[12];
};

static void test_grows_by_doubling(void **state)
{
	(void)state;
	struct item *v = NULL;
	size_t cap = 0;
	realloc_calls = 0;
	assert_int_equal(mafsbx_array_grow(&v, &cap, 1, sizeof(*v), 4, 0), 0);
	assert_non_null(v);
	assert_int_equal(cap, 4);
	assert_int_equal(realloc_last, 4 * sizeof(*v));
	for (int i = 0; i < 4; i++)
		v[i].a = i;
	/* room already there: no call */
	assert_int_equal(mafsbx_array_grow(&v, &cap, 4, sizeof(*v), 4, 0), 0);
	assert_int_equal(realloc_calls, 1);
	assert_int_equal(mafsbx_array_grow(&v, &cap, 5, sizeof(*v), 4, 0), 0);
	assert_int_equal(cap, 8);
	/* a request past double goes on doubling until it fits */
	assert_int_equal(mafsbx_array_grow(&v, &cap, 33, sizeof(*v), 4, 0), 0);
	assert_int_equal(cap, 64);
	assert_int_equal(realloc_calls, 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(v[i].a, i);   /* the contents moved with it */
	v[63].a = 63;
	free(v);
}

static void test_first_zero_and_bound(void **state)
{
	(void)state;
	char *v = NULL;
	size_t cap = 0;
	assert_int_equal(mafsbx_array_grow(&v, &cap, 3, 1, 0, 0), 0);
	assert_int_equal(cap, 4);   /* 1, 2, 4 */
	/* doubling stops at the bound */
	assert_int_equal(mafsbx_array_grow(&v, &cap, 5, 1, 0, 6), 0);
	assert_int_equal(cap, 6);
	/* a need over the bound is refused, nothing changes */
	char *was = v;
	assert_int_equal(mafsbx_array_grow(&v, &cap, 7, 1, 0, 6), -ENOMEM);
	assert_ptr_equal(v, was);
	assert_int_equal(cap, 6);
	free(v);
}

static void test_overflow_refused(void **state)
{
	(void)state;
	struct item *v = NULL;
	size_t cap = 0;
	realloc_calls = 0;
	/* need * size does not fit a size_t: refused before any realloc */
	assert_int_equal(mafsbx_array_grow(&v, &cap, SIZE_MAX / sizeof(*v) + 1, sizeof(*v), 4, 0), -ENOMEM);
	assert_int_equal(realloc_calls, 0);
	assert_null(v);
	assert_int_equal(cap, 0);
	/* a doubling that would wrap is clamped to what fits, never wrapped */
	uint64_t *w = NULL;
	size_t wcap = SIZE_MAX / sizeof(*w) / 2 + 1;   /* as if already that large */
	realloc_fail = 1;                               /* do not really ask for it */
	assert_int_equal(mafsbx_array_grow(&w, &wcap, wcap + 1, sizeof(*w), 4, 0), -ENOMEM);
	assert_int_equal(realloc_calls, 1);
	assert_true(realloc_last >= (SIZE_MAX / sizeof(*w) / 2 + 2) * sizeof(*w));
	assert_true(realloc_last <= SIZE_MAX / sizeof(*w) * sizeof(*w));
	assert_null(w);
	assert_int_equal(wcap, SIZE_MAX / sizeof(*w) / 2 + 1);
}

static void test_failing_realloc_keeps_the_array(void **state)
{
	(void)state;
	int *v = NULL;
	size_t cap = 0;
	assert_int_equal(mafsbx_array_grow(&v, &cap, 2, sizeof(*v), 2, 0), 0);
	v[0] = 7;
	v[1] = 8;
	int *was = v;
	realloc_fail = 1;
	assert_int_equal(mafsbx_array_grow(&v, &cap, 3, sizeof(*v), 2, 0), -ENOMEM);
	assert_ptr_equal(v, was);
	assert_int_equal(cap, 2);
	assert_int_equal(v[0], 7);
	assert_int_equal(v[1], 8);
	/* and with memory again it grows */
	assert_int_equal(mafsbx_array_grow(&v, &cap, 3, sizeof(*v), 2, 0), 0);
	assert_int_equal(cap, 4);
	assert_int_equal(v[1], 8);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grows_by_doubling),
		cmocka_unit_test(test_first_zero_and_bound),
		cmocka_unit_test(test_overflow_refused),
		cmocka_unit_test(test_failing_realloc_keeps_the_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
