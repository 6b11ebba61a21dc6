/*
 * test_cgroup.c: the one reader of /proc/PID/cgroup (cgroup.h), with texts
 * as the kernel writes them for each engine and layout: cgroup v1 under
 * dockerd's cgroupfs driver (taken from a container on this host), v2 under
 * the cgroupfs and systemd drivers, rootless Docker under user@UID.service,
 * Podman's libpod scope with its "container" child, nested engines, hybrid
 * v1+v2 files; and hostile look-alikes, every one refused: the ID as a
 * prefix or a suffix of another component, inside a longer hex string, with
 * an unknown or extra prefix, in the controller field, and malformed lines;
 * and the right component in the wrong place: under a subtree delegated to
 * a user, who may make any cgroup there, or another uid's rootless engine.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"

#define ID "f9d6b4c06b9c47768e509f4ed5a0010adab041a8e603693fe25c6b361ae06156"
#define OTHER "397437190d01e6d88e8447ff8c56c5216dcadf20d8b342f42b077b1f415026d1"
/* the uid of the rootless engines below (user-1000.slice) */
#define RL 1000

/* Docker 20.10, cgroupfs driver, cgroup v1 with the empty v2 hierarchy (this host). */
static const char v1_cgroupfs[] = "9:name=systemd:/docker/" ID "\n"
				  "8:pids:/docker/" ID "\n"
				  "7:blkio:/docker/" ID "\n"
				  "6:freezer:/docker/" ID "\n"
				  "5:devices:/docker/" ID "\n"
				  "4:memory:/docker/" ID "\n"
				  "3:cpuset:/docker/" ID "\n"
				  "2:cpuacct:/docker/" ID "\n"
				  "1:cpu:/docker/" ID "\n"
				  "0::/docker/" ID "\n";
/* Docker on systemd with cgroup v1 (controllers co-mounted, as Debian 11 ships). */
static const char v1_systemd[] = "12:rdma:/\n"
				 "11:cpu,cpuacct:/system.slice/docker-" ID ".scope\n"
				 "10:net_cls,net_prio:/system.slice/docker-" ID ".scope\n"
				 "9:pids:/system.slice/docker-" ID ".scope\n"
				 "1:name=systemd:/system.slice/docker-" ID ".scope\n"
				 "0::/system.slice/docker-" ID ".scope\n";
static const char v2_cgroupfs[] = "0::/docker/" ID "\n";
static const char v2_systemd[] = "0::/system.slice/docker-" ID ".scope\n";
static const char v2_rootless[] = "0::/user.slice/user-1000.slice/user@1000.service/user.slice/docker-" ID ".scope\n";
static const char v2_rootless_cgroupfs[] =
	"0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker.service/docker/" ID "\n";
static const char v2_podman[] = "0::/machine.slice/libpod-" ID ".scope/container\n";
static const char v2_podman_cgroupfs[] = "0::/libpod_parent/libpod-" ID "\n";
static const char v2_crio[] = "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/crio-" ID
			      ".scope\n";
static const char v2_containerd[] = "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-" ID ".scope\n";
/* an engine inside a container: Docker in Docker, cgroupfs and systemd outer */
static const char nested_v1[] = "8:pids:/docker/" OTHER "/docker/" ID "\n1:name=systemd:/docker/" OTHER "/docker/" ID
				"\n0::/\n";
static const char nested_v2[] = "0::/system.slice/docker-" OTHER ".scope/docker/" ID "\n";
/* hybrid: v1 controllers plus the unified hierarchy at /sys/fs/cgroup/unified */
static const char hybrid[] = "5:pids:/system.slice/docker-" ID ".scope\n"
			     "4:memory:/system.slice/docker-" ID ".scope\n"
			     "1:name=systemd:/system.slice/docker-" ID ".scope\n"
			     "0::/system.slice/docker-" ID ".scope\n";

static void test_real_forms_accepted(void **state)
{
	(void)state;
	const char *const texts[] = { v1_cgroupfs, v1_systemd, v2_cgroupfs, v2_systemd, v2_rootless,
				      v2_rootless_cgroupfs, v2_podman, v2_podman_cgroupfs, v2_crio, v2_containerd,
				      nested_v1, nested_v2, hybrid,
				      /* Kubernetes' cgroupfs layout, and dockerd as a kubelet's runtime */
				      "0::/kubepods/besteffort/pod1/" ID "\n",
				      "0::/kubepods.slice/kubepods-pod1.slice/docker-" ID ".scope\n",
				      /* a runtime's child cgroup under the container's */
				      "0::/docker/" ID "/init\n",
				      /* no final newline */
				      "0::/docker/" ID };
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		if (!mafsbx_cgroup_names_container_as(texts[i], ID, RL))
			fail_msg("refused a real form: %s", texts[i]);
	}
	/* the outer container of a nested engine is named too (the inner one's processes are in its subtree) */
	assert_true(mafsbx_cgroup_names_container_as(nested_v2, OTHER, RL));
	/* a rootful engine's layouts hold whatever the engine's uid */
	assert_true(mafsbx_cgroup_names_container_as(v2_systemd, ID, 0));
	assert_true(mafsbx_cgroup_names_container_as(v1_cgroupfs, ID, 0));
	/* an engine nested in a rootless engine's container */
	assert_true(mafsbx_cgroup_names_container_as(
		"0::/user.slice/user-1000.slice/user@1000.service/user.slice/docker-" OTHER ".scope/docker/" ID "\n", ID,
		RL));
	/* a guest's deep subtree under the container's cgroup */
	char deep[2048] = "0::/docker/" ID;
	for (int i = 0; i < 40; i++)
		strcat(deep, "/d");
	strcat(deep, "\n");
	assert_true(mafsbx_cgroup_names_container_as(deep, ID, RL));
	/* the wrapper takes this process's uid as the engine's */
	assert_true(mafsbx_cgroup_names_container(v2_cgroupfs, ID));
	assert_int_equal(mafsbx_cgroup_names_container(v2_rootless, ID), geteuid() == RL);
}

/* The engine's component in a place the engine never puts it: a user's own subtree
 * (cgroup v2 delegation gives user@UID.service, and whatever an admin chowns, to
 * that user), another uid's rootless engine, a prefix that is no engine's. */
static void test_foreign_subtree_refused(void **state)
{
	(void)state;
	const char *const texts[] = {
		"0::/user.slice/user-1000.slice/user@1000.service/docker-" ID ".scope\n",
		"0::/user.slice/user-1000.slice/user@1000.service/app.slice/x/docker-" ID ".scope\n",
		"0::/user.slice/user-1000.slice/user@1000.service/user.slice/x/docker-" ID ".scope\n",
		"0::/user.slice/user-1000.slice/user@1000.service/docker/" ID "\n",
		"0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker/" ID "\n",
		"0::/user.slice/user-1000.slice/session-3.scope/docker/" ID "\n",
		"0::/home-delegated/x/docker/" ID "\n",
		"0::/x/system.slice/docker-" ID ".scope\n",
		"0::/docker/x/" ID "\n",
		"0::/system.slice/x/docker-" ID ".scope\n",
		"0::/machine.slice/x/libpod-" ID ".scope/container\n",
		"0::/x/libpod_parent/libpod-" ID "\n",
		"0::/user.slice/crio-" ID ".scope\n",
		"0::/home/x/kubepods/" ID "\n",
		"0::/user.slice/user-1000.slice/user@1000.service/kubepods.slice/docker-" ID ".scope\n",
		"0::/docker-" ID ".scope\n",
		"0::/" ID "\n",
		/* a nested form whose outer part is not a container's own cgroup */
		"0::/home/x/docker/" OTHER "/docker/" ID "\n",
		"0::/x/docker/" ID "\n",
		/* the user's subtree in the v1 name=systemd hierarchy, which systemd delegates to the user */
		"1:name=systemd:/user.slice/user-1000.slice/user@1000.service/docker/" ID "\n0::/\n",
		/* another uid's rootless engine, and a slice and a manager that disagree */
		"0::/user.slice/user-1001.slice/user@1001.service/user.slice/docker-" ID ".scope\n",
		"0::/user.slice/user-1000.slice/user@1001.service/user.slice/docker-" ID ".scope\n",
		"0::/user.slice/user-01000.slice/user@01000.service/user.slice/docker-" ID ".scope\n",
		"0::/user.slice/user-1001.slice/user@1001.service/app.slice/docker.service/docker/" ID "\n",
		"0::/user.slice/user-1001.slice/user@1001.service/user.slice/libpod-" ID ".scope/container\n",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		if (mafsbx_cgroup_names_container_as(texts[i], ID, RL))
			fail_msg("accepted the ID in a foreign subtree: %s", texts[i]);
	}
	/* a rootless engine's own layout, for a daemon of another uid (root here) */
	assert_false(mafsbx_cgroup_names_container_as(v2_rootless, ID, 0));
	assert_false(mafsbx_cgroup_names_container_as(v2_rootless_cgroupfs, ID, 1001));
}

static void test_other_container_refused(void **state)
{
	(void)state;
	assert_false(mafsbx_cgroup_names_container(v2_systemd, OTHER));
	assert_false(mafsbx_cgroup_names_container(v1_cgroupfs, OTHER));
	assert_false(mafsbx_cgroup_names_container(v2_podman, OTHER));
	/* this host's own processes */
	assert_false(mafsbx_cgroup_names_container("4:memory:/process_api/c76e04eb567c103b6a8bc7bb14f7d25d\n0::/\n", ID));
	assert_false(mafsbx_cgroup_names_container("0::/\n", ID));
	assert_false(mafsbx_cgroup_names_container("0::/system.slice/docker.service\n", ID));
}

static void test_look_alikes_refused(void **state)
{
	(void)state;
	const char *const texts[] = {
		/* the ID as a prefix or a suffix of another component */
		"0::/docker/" ID "a\n",
		"0::/docker/a" ID "\n",
		"0::/docker/" ID "-x\n",
		"0::/docker/x-" ID "\n",
		"0::/docker/" ID ".old\n",
		/* inside a longer hex string */
		"0::/docker/0" ID "\n",
		"0::/docker/" ID "0\n",
		"0::/docker/" ID OTHER "\n",
		/* a scope with another prefix, or an extra or missing part */
		"0::/system.slice/evil-" ID ".scope\n",
		"0::/system.slice/xdocker-" ID ".scope\n",
		"0::/machine.slice/libpod-conmon-" ID ".scope\n",
		"0::/libpod_parent/libpod-" ID "x\n",
		"0::/system.slice/docker-" ID ".scope.d\n",
		"0::/system.slice/docker-" ID ".scop\n",
		"0::/system.slice/docker-" ID "\n",
		"0::/system.slice/" ID ".scope\n",
		"0::/system.slice/docker-" ID "a.scope\n",
		/* upper case is another string */
		"0::/docker/F9D6B4C06B9C47768E509F4ED5A0010ADAB041A8E603693FE25C6B361AE06156\n",
		/* the ID outside the path: in the controllers or the hierarchy field */
		"8:" ID ":/\n",
		"0::/\n" ID "\n",
		/* a malformed text, even with a real line in it */
		"garbage\n0::/docker/" ID "\n",
		"0::docker/" ID "\n",
		"x:pids:/docker/" ID "\n",
		":pids:/docker/" ID "\n",
		"",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		if (mafsbx_cgroup_names_container(texts[i], ID))
			fail_msg("accepted a look-alike: %s", texts[i]);
	}
	/* an ID that is not 64 lower-case hex never matches */
	assert_false(mafsbx_cgroup_names_container(v2_cgroupfs, "f9d6b4c06b9c"));
	assert_false(mafsbx_cgroup_names_container(v2_cgroupfs, ""));
	assert_false(mafsbx_cgroup_names_container(NULL, ID));
	assert_false(mafsbx_cgroup_names_container(v2_cgroupfs, NULL));
}

static void expect_procs(const char *text, int want, bool want_v1, const char *want_path)
{
	bool v1 = !want_v1;
	char *path = (char *)"unset";
	int r = mafsbx_cgroup_procs_path(text, &v1, &path);
	if (r != want)
		fail_msg("procs_path(%s) = %d, want %d", text, r, want);
	if (want == 0) {
		assert_int_equal(v1, want_v1);
		assert_string_equal(path, want_path);
		free(path);
	} else {
		assert_null(path);
	}
}

/* Where the shim's proof may apply (pin.c): in no container's cgroup at all. */
static void test_some_container(void **state)
{
	(void)state;
	const char *const named[] = { v1_cgroupfs, v1_systemd, v2_cgroupfs, v2_systemd, v2_rootless,
				      v2_rootless_cgroupfs, v2_podman, v2_podman_cgroupfs, v2_crio, v2_containerd,
				      nested_v1, nested_v2, hybrid };
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		assert_true(mafsbx_cgroup_names_some_container(named[i]));
	/* a rootless engine with the driver 'none' (its containers stay in the engine's cgroup), a host process */
	assert_false(mafsbx_cgroup_names_some_container(
		"12:pids:/user.slice/user-1002.slice/user@1002.service\n1:name=systemd:/user.slice/user-1002.slice/"
		"user@1002.service/app.slice/rootlesskit.service\n0::/user.slice/user-1002.slice/user@1002.service\n"));
	assert_false(mafsbx_cgroup_names_some_container("0::/init.scope\n"));
	/* 63 hex digits are no ID */
	assert_false(mafsbx_cgroup_names_some_container("0::/x/f9d6b4c06b9c47768e509f4ed5a0010adab041a8e603693fe25c6b361ae0615\n"));
}

static void test_procs_path(void **state)
{
	(void)state;
	expect_procs(v1_cgroupfs, 0, true, "/docker/" ID);
	expect_procs(v1_systemd, 0, true, "/system.slice/docker-" ID ".scope");
	expect_procs(hybrid, 0, true, "/system.slice/docker-" ID ".scope");
	expect_procs(v2_systemd, 0, false, "/system.slice/docker-" ID ".scope");
	expect_procs(v2_podman, 0, false, "/machine.slice/libpod-" ID ".scope/container");
	expect_procs(v2_rootless, 0, false,
		     "/user.slice/user-1000.slice/user@1000.service/user.slice/docker-" ID ".scope");
	/* "pids" in a co-mounted list */
	expect_procs("3:cpu,pids:/docker/" ID "\n", 0, true, "/docker/" ID);
	/* "pids" only as a part of another controller's name is not it */
	expect_procs("3:pidsx:/docker/" ID "\n", -ENOENT, false, NULL);
	expect_procs("0::/\n", 0, false, "/");
	expect_procs("4:memory:/a\n", -ENOENT, false, NULL);
	expect_procs("0::/docker/../x\n", -EINVAL, false, NULL);
	expect_procs("0::/docker//x\n", -EINVAL, false, NULL);
	expect_procs("0::/docker/./x\n", -EINVAL, false, NULL);
	expect_procs("0::/docker/x/\n", -EINVAL, false, NULL);
	expect_procs("0::docker\n", -EINVAL, false, NULL);
	expect_procs("", -EINVAL, false, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_forms_accepted),
		cmocka_unit_test(test_other_container_refused),
		cmocka_unit_test(test_look_alikes_refused),
		cmocka_unit_test(test_foreign_subtree_refused),
		cmocka_unit_test(test_some_container),
		cmocka_unit_test(test_procs_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
