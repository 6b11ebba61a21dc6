/*
 * tree.c: which node an absolute FUSE path names (doc/protocol.md "The tree").
 *
 *   /                          root
 *   /.ctl, /.ctl/{acquire,dispose,exec,declarations,engine}
 *   /by-scope[/S[/T[/A[/KIND]]]]
 *   /NAME, /NAME/status, /NAME/egress, /NAME/work[/REL], /NAME/root[/REL]
 *
 * Pure text work: whether NAME exists, or REL exists in the guest, is
 * decided by the callers. A component over 255 bytes is ENAMETOOLONG and a
 * backslash under work/ is EINVAL (mafsbxfs(1) READING AND WRITING FILES); anything the tree cannot
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

/* .ctl/REST */
static int classify_ctl(const char *rest, struct mfs_node *n)
{
	static const struct {
		const char *name;
		enum mfs_node_type type;
		enum mfs_ctl_kind kind;
	} files[] = {
		{ "acquire", MFS_N_CTL_FILE, MFS_CTL_ACQUIRE },
		{ "dispose", MFS_N_CTL_FILE, MFS_CTL_DISPOSE },
		{ "exec", MFS_N_CTL_FILE, MFS_CTL_EXEC },
		{ "declarations", MFS_N_CTL_DECLARATIONS, 0 },
		{ "engine", MFS_N_CTL_ENGINE, 0 },
	};
	if (!rest || !*rest) {
		n->type = MFS_N_CTL_DIR;
		return 0;
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (!strcmp(rest, files[i].name)) {
			n->type = files[i].type;
			n->ctl_kind = files[i].kind;
			return 0;
		}
	}
	return -ENOENT;
}

/* by-scope/REST: up to four components, the fourth a link. */
static int classify_byscope(const char *rest, struct mfs_node *n)
{
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

/* NAME/work[/REL] or NAME/root[/REL] when `rest` starts with `dir`: 1 and n set, else 0. */
static int classify_files(const char *rest, const char *dir, enum mfs_node_type type, struct mfs_node *n)
{
	if (strncmp(rest, dir, 4) || (rest[4] != '\0' && rest[4] != '/'))
		return 0;
	n->type = type;
	n->rel = rest[4] ? rest + 5 : rest + 4;
	return strchr(n->rel, '\\') ? -EINVAL : 1;
}

/* NAME/execs[/ID[/FILE]] (`rest` after "NAME/"): 1 and n set, 0 not that, or -ENOENT. */
static int classify_execs(const char *rest, struct mfs_node *n)
{
	if (strncmp(rest, "execs", 5) || (rest[5] != '\0' && rest[5] != '/'))
		return 0;
	n->type = MFS_N_EXECS;
	if (!rest[5])
		return 1;
	const char *id = rest + 6, *slash = strchr(id, '/');
	size_t il = slash ? (size_t)(slash - id) : strlen(id);
	if (il != MFS_EXEC_ID_LEN || strspn(id, "0123456789abcdef") < il)
		return -ENOENT;
	memcpy(n->exec_id, id, il);
	n->exec_id[il] = '\0';
	n->type = MFS_N_EXEC_DIR;
	if (!slash)
		return 1;
	static const struct { const char *name; enum mfs_exec_file f; } files[] = {
		{ "stdout", MFS_EXEC_STDOUT }, { "stderr", MFS_EXEC_STDERR },
		{ "status", MFS_EXEC_STATUS }, { "wait", MFS_EXEC_WAIT },
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (!strcmp(slash + 1, files[i].name)) {
			n->type = MFS_N_EXEC_FILE;
			n->exec_file = files[i].f;
			return 1;
		}
	return -ENOENT;
}

/* NAME[/REST], the first component `first` bytes long. */
static int classify_sandbox(const char *p, size_t first, const char *rest, struct mfs_node *n)
{
	/* A sandbox directory: only workload names can exist. */
	if (first != MAFSBX_NAME_LEN)
		return -ENOENT;
	memcpy(n->name, p, first);
	n->name[first] = '\0';
	if (!mafsbx_is_workload_name(n->name))
		return -ENOENT;
	if (!rest || !*rest)
		n->type = MFS_N_SBX_DIR;
	else if (!strcmp(rest, "status"))
		n->type = MFS_N_SBX_STATUS;
	else if (!strcmp(rest, "egress"))
		n->type = MFS_N_SBX_EGRESS;
	else {
		int r = classify_files(rest, "work", MFS_N_WORK, n);
		if (r == 0)
			r = classify_files(rest, "root", MFS_N_ROOTFS, n);
		if (r == 0)
			r = classify_execs(rest, n);
		return r == 0 ? -ENOENT : r < 0 ? r : 0;
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
	if (first == 4 && !memcmp(p, ".ctl", 4))
		return classify_ctl(rest, n);
	if (first == 8 && !memcmp(p, "by-scope", 8))
		return classify_byscope(rest, n);
	return classify_sandbox(p, first, rest, n);
}
