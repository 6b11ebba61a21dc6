/*
 * test_fs_daemon.c: fs/daemon.c's guard. The daemon forks only while the
 * process has one thread; the count it relies on must see a thread come and
 * go. (The fork itself, its readiness pipe and the refusal with a thread
 * started before main() are exercised on a real mount: tests/fault/background.sh.)
 * The systemd readiness sender reaches a datagram socket bound here, by path
 * and by abstract name, and says nothing without $NOTIFY_SOCKET; the
 * open-file limit is raised to the hard one. (That READY=1 comes only once
 * the mount is there: tests/mount/notify.sh.)
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
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

/* A datagram socket bound at `name` ('@' for abstract); its fd. */
static int bind_dgram(const char *name)
{
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	size_t len = strlen(name);
	memcpy(sa.sun_path, name, len);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)), 0);
	return fd;
}

static void expect_datagram(int fd, const char *want)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_notify_path_socket(void **state)
{
	(void)state;
	char dir[] = "/tmp/mfs-notify.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof(path), "%s/notify", dir);
	int fd = bind_dgram(path);
	setenv("NOTIFY_SOCKET", path, 1);
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	assert_int_equal(mfs_daemon_notify("READY=1", &err), 0);
	expect_datagram(fd, "READY=1");
	assert_int_equal(mfs_daemon_notify("STOPPING=1", &err), 0);
	expect_datagram(fd, "STOPPING=1");
	close(fd);
	unlink(path);
	rmdir(dir);
	/* The listener gone: an error the caller logs, not a crash. */
	assert_int_equal(mfs_daemon_notify("READY=1", &err), -ENOENT);
	assert_non_null(strstr(err.message, path));
	unsetenv("NOTIFY_SOCKET");
}

static void test_notify_abstract_socket(void **state)
{
	(void)state;
	char name[64];
	snprintf(name, sizeof(name), "@mfs-notify-test-%ld", (long)getpid());
	int fd = bind_dgram(name);
	setenv("NOTIFY_SOCKET", name, 1);
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	assert_int_equal(mfs_daemon_notify("READY=1", &err), 0);
	expect_datagram(fd, "READY=1");
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void test_notify_unset_or_bad(void **state)
{
	(void)state;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(mfs_daemon_notify("READY=1", &err), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(mfs_daemon_notify("READY=1", &err), 0);
	setenv("NOTIFY_SOCKET", "relative/sock", 1);
	assert_int_equal(mfs_daemon_notify("READY=1", &err), -EINVAL);
	assert_non_null(strstr(err.message, "NOTIFY_SOCKET"));
	unsetenv("NOTIFY_SOCKET");
}

static void test_raise_nofile(void **state)
{
	(void)state;
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rlim_t hard = rl.rlim_max;
	rl.rlim_cur = hard > 256 ? 256 : hard;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	assert_int_equal(mfs_daemon_raise_nofile(&err), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_true(rl.rlim_cur == hard);
	assert_true(rl.rlim_max == hard);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_count),
		cmocka_unit_test(test_fork_refused_with_a_thread),
		cmocka_unit_test(test_notify_path_socket),
		cmocka_unit_test(test_notify_abstract_socket),
		cmocka_unit_test(test_notify_unset_or_bad),
		cmocka_unit_test(test_raise_nofile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
