/*
 * test_fs_tree.c: the kinds of node (fs/tree.c), each path walked from the root as the
 * kernel's lookups go: every node of the tree
 * (doc/protocol.md "The tree") and the name rules (mafsbxfs(1) READING AND WRITING FILES).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mfs.h"
#include "node.h"

/* ---- tree -------------------------------------------------------------- */

#define SBX "maf-sandbox-docker-6f8a8ed7a21c"

/* The node `path` names (mfs_tree_walk), its path kept here so that `rel` stays readable. */
static int mfs_classify(const char *path, struct mfs_node *n)
{
	static char kept[8192];
	int r = mfs_tree_walk(path, n);
	if (r == 0) {
		strcpy(kept, n->path);
		if (n->rel)
			n->rel = kept + (n->rel - n->path);
		mfs_node_clear(n);
	}
	return r;
}

static void test_classify(void **state)
{
	(void)state;
	struct mfs_node n;
	assert_int_equal(mfs_classify("/", &n), 0);
	assert_int_equal(n.type, MFS_N_ROOT);
	assert_int_equal(mfs_classify("/.ctl", &n), 0);
	assert_int_equal(n.type, MFS_N_CTL_DIR);
	assert_int_equal(mfs_classify("/.ctl/exec", &n), 0);
	assert_int_equal(n.type, MFS_N_CTL_FILE);
	assert_int_equal(n.ctl_kind, MFS_CTL_EXEC);
	assert_int_equal(mfs_classify("/.ctl/acquire", &n), 0);
	assert_int_equal(n.ctl_kind, MFS_CTL_ACQUIRE);
	assert_int_equal(mfs_classify("/.ctl/dispose", &n), 0);
	assert_int_equal(n.ctl_kind, MFS_CTL_DISPOSE);
	assert_int_equal(mfs_classify("/.ctl/declarations", &n), 0);
	assert_int_equal(n.type, MFS_N_CTL_DECLARATIONS);
	assert_int_equal(mfs_classify("/.ctl/engine", &n), 0);
	assert_int_equal(n.type, MFS_N_CTL_ENGINE);
	assert_int_equal(mfs_classify("/.ctl/engine/x", &n), -ENOENT);
	assert_int_equal(mfs_classify("/.ctl/other", &n), -ENOENT);

	assert_int_equal(mfs_classify("/by-scope", &n), 0);
	assert_int_equal(n.type, MFS_N_BYSCOPE);
	assert_int_equal(n.depth, 0);
	assert_int_equal(mfs_classify("/by-scope/s/t", &n), 0);
	assert_int_equal(n.type, MFS_N_BYSCOPE);
	assert_int_equal(n.depth, 2);
	assert_string_equal(n.comp[0], "s");
	assert_string_equal(n.comp[1], "t");
	assert_int_equal(mfs_classify("/by-scope/s/t/a/python@c1", &n), 0);
	assert_int_equal(n.type, MFS_N_BYSCOPE_LINK);
	assert_string_equal(n.comp[3], "python@c1");
	assert_int_equal(mfs_classify("/by-scope/s/t/a/k/x", &n), -ENOENT);

	assert_int_equal(mfs_classify("/" SBX, &n), 0);
	assert_int_equal(n.type, MFS_N_SBX_DIR);
	assert_string_equal(n.name, SBX);
	assert_int_equal(mfs_classify("/" SBX "/status", &n), 0);
	assert_int_equal(n.type, MFS_N_SBX_STATUS);
	assert_int_equal(mfs_classify("/" SBX "/work", &n), 0);
	assert_int_equal(n.type, MFS_N_WORK);
	assert_string_equal(n.rel, "");
	assert_int_equal(mfs_classify("/" SBX "/work/plots/fig1.png", &n), 0);
	assert_string_equal(n.rel, "plots/fig1.png");
	assert_int_equal(mfs_classify("/" SBX "/root", &n), 0);
	assert_int_equal(n.type, MFS_N_ROOTFS);
	assert_string_equal(n.rel, "");
	assert_int_equal(mfs_classify("/" SBX "/root/etc/passwd", &n), 0);
	assert_int_equal(n.type, MFS_N_ROOTFS);
	assert_string_equal(n.rel, "etc/passwd");
	assert_int_equal(mfs_classify("/" SBX "/rootx", &n), -ENOENT);
	assert_int_equal(mfs_classify("/" SBX "/root/a\\b", &n), -EINVAL);
	assert_int_equal(mfs_classify("/" SBX "/workx", &n), -ENOENT);
	assert_int_equal(mfs_classify("/" SBX "/other", &n), -ENOENT);
	assert_int_equal(mfs_classify("/" SBX "/work/a\\b", &n), -EINVAL);
	/* not a workload name: no engine call needed to say no */
	assert_int_equal(mfs_classify("/maf-sandbox-docker-6f8a8ed7a21c-proxy", &n), -ENOENT);
	assert_int_equal(mfs_classify("/maf-sandbox-docker-6F8A8ED7A21C", &n), -ENOENT);
	assert_int_equal(mfs_classify("/foo", &n), -ENOENT);
	assert_int_equal(mfs_classify("relative", &n), -ENOENT);

	char long_path[600];
	memset(long_path, 'a', sizeof(long_path));
	snprintf(long_path, sizeof(long_path), "/" SBX "/work/%0256d", 0);
	assert_int_equal(mfs_classify(long_path, &n), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
