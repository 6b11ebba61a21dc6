/*
 * test_pin.c: the pure parts of pinning a container (pin.h): the id map
 * parser (/proc/PID/uid_map) with mapping both ways. The cgroup check that
 * a PID is the container's is cgroup.h's, tested by test_cgroup.c; the
 * proof by the runtime shim (for engines that give containers no cgroup) is
 * tested here on real processes: a parent whose arguments look like a shim's.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "cgroup.h"
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

/* A process whose argv is ARGV (a /bin/sh running "sleep 30 & wait"), as
 * uid `as` (-1: this test's), and the sleep it started (its child): *child
 * gets the sleep's PID. */
static pid_t spawn_parent_as(char *const argv[], pid_t *child, uid_t as)
{
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		/* not the test's output: a sleep left by a failed assert must not hold it open */
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		if (as != (uid_t)-1 && (setgid(as) < 0 || setuid(as) < 0))
			_exit(126);
		execv("/bin/sh", argv);
		_exit(127);
	}
	*child = -1;
	for (int tries = 0; tries < 500 && *child < 0; tries++) {
		char path[64], line[256];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)p, (int)p);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(line, sizeof(line), f))
				*child = (pid_t)atoi(line) > 0 ? (pid_t)atoi(line) : -1;
			fclose(f);
		}
		if (*child < 0) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	assert_true(*child > 0);
	return p;
}

static pid_t spawn_parent(char *const argv[], pid_t *child)
{
	return spawn_parent_as(argv, child, (uid_t)-1);
}

static void reap(pid_t parent, pid_t child)
{
	kill(child, SIGKILL);
	kill(parent, SIGKILL);
	waitpid(parent, NULL, 0);
}

static bool shim_names(pid_t pid, const char *id)
{
	char path[32];
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	int d = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(d >= 0);
	bool r = mafsbx_pid_shim_names(d, id);
	close(d);
	return r;
}

#define OTHER "397437190d01e6d88e8447ff8c56c5216dcadf20d8b342f42b077b1f415026d2"

static void test_shim_parent(void **state)
{
	(void)state;
	pid_t child;
	char *shim[] = { "/usr/bin/containerd-shim-runc-v2", "-c", "sleep 30 & wait", "-namespace", "moby", "-id", ID,
			 "-address", "/run/containerd/containerd.sock", NULL };
	pid_t p = spawn_parent(shim, &child);
	/* A process in some container's cgroup never passes by the shim (pin.c):
	 * where this test itself runs in a container (CI's Debian 13 stage), even
	 * the right shim is refused. */
	char self[4096] = "";
	FILE *f = fopen("/proc/self/cgroup", "r");
	assert_non_null(f);
	size_t got = fread(self, 1, sizeof(self) - 1, f);
	fclose(f);
	self[got] = '\0';
	bool in_container = mafsbx_cgroup_names_some_container(self);
	assert_int_equal(shim_names(child, ID), !in_container);
	assert_false(shim_names(child, OTHER));
	assert_false(shim_names(child, "not-an-id"));
	assert_false(shim_names(p, ID));   /* the shim itself: its parent is this test */
	reap(p, child);

	/* the same arguments under another program's name */
	char *notshim[] = { "/usr/bin/not-a-shim", "-c", "sleep 30 & wait", "-id", ID, NULL };
	p = spawn_parent(notshim, &child);
	assert_false(shim_names(child, ID));
	reap(p, child);

	/* the ID not right after "-id": a longer argument, or after another flag */
	char *longer[] = { "containerd-shim-runc-v2", "-c", "sleep 30 & wait", "-id", ID "0", "-namespace", ID, NULL };
	p = spawn_parent(longer, &child);
	assert_false(shim_names(child, ID));
	reap(p, child);

	/* a shim of another uid: anyone may name a process so (the proof needs this daemon's own uid) */
	if (geteuid() == 0) {
		p = spawn_parent_as(shim, &child, 65534);
		assert_false(shim_names(child, ID));
		reap(p, child);
	}

	/* "-id" as the last argument */
	char *last[] = { "containerd-shim-runc-v2", "-c", "sleep 30 & wait", ID, "-id", NULL };
	p = spawn_parent(last, &child);
	assert_false(shim_names(child, ID));
	reap(p, child);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id_map),
		cmocka_unit_test(test_pidmode),
		cmocka_unit_test(test_shim_parent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
