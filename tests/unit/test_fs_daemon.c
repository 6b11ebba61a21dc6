/*
 * test_fs_daemon.c: fs/daemon.c's guard. The daemon forks only while the
 * process has one thread; the count it relies on must see a thread come and
 * go. (The fork itself, its readiness pipe and the refusal with a thread
 * started before main() are exercised on a real mount: tests/fault/background.sh.)
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mfs.h"

static int go_fd[2];

static void *parked(void *arg)
{
	(void)arg;
	char c;
	(void)read(go_fd[0], &c, 1);
	return NULL;
}

static void test_thread_count(void **state)
{
	(void)state;
	assert_int_equal(mfs_daemon_thread_count(), 1);
	assert_int_equal(pipe(go_fd), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, parked, NULL), 0);
	assert_int_equal(mfs_daemon_thread_count(), 2);
	assert_int_equal(write(go_fd[1], "x", 1), 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(mfs_daemon_thread_count(), 1);
	close(go_fd[0]);
	close(go_fd[1]);
}

/* A second thread refuses the fork, in the caller, with no child made. */
static void test_fork_refused_with_a_thread(void **state)
{
	(void)state;
	assert_int_equal(pipe(go_fd), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, parked, NULL), 0);
	int ready = 7;
	assert_int_equal(mfs_daemon_fork(&ready), -1);
	assert_int_equal(ready, -1);
	assert_int_equal(write(go_fd[1], "x", 1), 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	close(go_fd[0]);
	close(go_fd[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_count),
		cmocka_unit_test(test_fork_refused_with_a_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
