/*
 * tree.c: which node an absolute FUSE path names (INTERFACE.md §2).
 *
 *   /                          root
 *   /.ctl, /.ctl/{acquire,dispose,exec,declarations,engine}
 *   /by-scope[/S[/T[/A[/KIND]]]]
 *   /NAME, /NAME/status, /NAME/egress, /NAME/work[/REL], /NAME/root[/REL]
 *
 * Pure text work: whether NAME exists, or REL exists in the guest, is
 * decided by the callers. A component over 255 bytes is ENAMETOOLONG and a
 * backslash under work/ is EINVAL (INTERFACE.md §3); anything the tree cannot
 * hold is ENOENT without asking the engine.
 */
#include "mfs.h"

#include <errno.h>
#include <string.h>

#include "names.h"

#define MFS_NAME_MAX 255

static int check_components(const char *p)
{
	while (*p) {
		const char *s = strchr(p, '/');
		size_t len = s ? (size_t)(s - p) : strlen(p);
		if (len > MFS_NAME_MAX)
			return -ENAMETOOLONG;
		if (!s)
			break;
		p = s + 1;
	}
	return 0;
}

int mfs_classify(const char *path, struct mfs_node *n)
{
	memset(n, 0, sizeof(*n));
	if (!path || path[0] != '/')
		return -ENOENT;
	int r = check_components(path + 1);
	if (r < 0)
		return r;
	const char *p = path + 1;
	if (!*p) {
		n->type = MFS_N_ROOT;
		return 0;
	}
	const char *slash = strchr(p, '/');
	size_t first = slash ? (size_t)(slash - p) : strlen(p);
	const char *rest = slash ? slash + 1 : NULL;

	if (first == 4 && !memcmp(p, ".ctl", 4)) {
		if (!rest || !*rest) {
			n->type = MFS_N_CTL_DIR;
			return 0;
		}
		if (strchr(rest, '/'))
			return -ENOENT;
		if (!strcmp(rest, "acquire")) {
			n->type = MFS_N_CTL_FILE;
			n->ctl_kind = MFS_CTL_ACQUIRE;
		} else if (!strcmp(rest, "dispose")) {
			n->type = MFS_N_CTL_FILE;
			n->ctl_kind = MFS_CTL_DISPOSE;
		} else if (!strcmp(rest, "exec")) {
			n->type = MFS_N_CTL_FILE;
			n->ctl_kind = MFS_CTL_EXEC;
		} else if (!strcmp(rest, "declarations")) {
			n->type = MFS_N_CTL_DECLARATIONS;
		} else if (!strcmp(rest, "engine")) {
			n->type = MFS_N_CTL_ENGINE;
		} else {
			return -ENOENT;
		}
		return 0;
	}

	if (first == 8 && !memcmp(p, "by-scope", 8)) {
		n->type = MFS_N_BYSCOPE;
		if (!rest || !*rest)
			return 0;
		if (strlen(rest) >= sizeof(n->buf))
			return -ENOENT;
		strcpy(n->buf, rest);
		char *c = n->buf;
		int depth = 0;
		while (c) {
			if (depth == 4 || !*c)
				return -ENOENT;
			n->comp[depth++] = c;
			char *s = strchr(c, '/');
			if (s)
				*s++ = '\0';
			c = s;
		}
		n->depth = depth;
		if (depth == 4)
			n->type = MFS_N_BYSCOPE_LINK;
		return 0;
	}

	/* A sandbox directory: only workload names can exist. */
	if (first != MAFSBX_NAME_LEN)
		return -ENOENT;
	memcpy(n->name, p, first);
	n->name[first] = '\0';
	if (!mafsbx_is_workload_name(n->name))
		return -ENOENT;
	if (!rest || !*rest) {
		n->type = MFS_N_SBX_DIR;
		return 0;
	}
	if (!strcmp(rest, "status")) {
		n->type = MFS_N_SBX_STATUS;
		return 0;
	}
	if (!strcmp(rest, "egress")) {
		n->type = MFS_N_SBX_EGRESS;
		return 0;
	}
	if (!strncmp(rest, "work", 4) && (rest[4] == '\0' || rest[4] == '/')) {
		n->type = MFS_N_WORK;
		n->rel = rest[4] ? rest + 5 : rest + 4;
		if (strchr(n->rel, '\\'))
			return -EINVAL;
		return 0;
	}
	if (!strncmp(rest, "root", 4) && (rest[4] == '\0' || rest[4] == '/')) {
		n->type = MFS_N_ROOTFS;
		n->rel = rest[4] ? rest + 5 : rest + 4;
		if (strchr(n->rel, '\\'))
			return -EINVAL;
		return 0;
	}
	return -ENOENT;
}
