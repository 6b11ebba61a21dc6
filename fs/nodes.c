/*
 * nodes.c: the node ids this mount hands the kernel (fs/ on libfuse's
 * low-level API owns them, as libfuse's passthrough_hp does). A node is an
 * absolute path of the tree (tree.c classifies it) with the kernel's lookup
 * count; the kernel's FORGET brings the count down and the last one frees it.
 *
 * Two tables: id -> node for every request, and path -> node so that two
 * lookups of one path give one node, with two exceptions that make a fresh
 * node every time: a .ctl transaction file (each open(2) of it must get its
 * own inode, so the kernel's per-inode write lock never queues one caller
 * behind another; doc/protocol.md "The transactions"), and a node whose path was removed or
 * renamed over (it keeps its id until forgotten, but a new file at that path
 * is a new node, as after an unlink on any filesystem).
 *
 * A rename moves the nodes at and below its source to the target's name; an
 * exchange (RENAME_EXCHANGE) swaps the two trees' names, so a node keeps
 * naming the file it named (the kernel swaps its dentries the same way, and
 * its page cache and a node's passthrough backing file follow the inode).
 *
 * One mutex guards both tables; nothing is called with it held.
 */
#include "mfs.h"
#include "node.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct mfs_ll_node {
	uint64_t id;
	char *path;
	uint64_t nlookup;
	bool in_paths;               /* reachable by its path (not fresh, not removed) */
	bool relink;                 /* rename: moved, to be linked under its new path */
	/* Its kind and what names it (struct mfs_node); type 0: none kept. A
	 * rename moves a node within one sandbox's work/: these stay true. */
	enum mfs_node_type type;
	enum mfs_ctl_kind ctl_kind;
	enum mfs_exec_file exec_file;
	int depth;
	char name[64];
	char exec_id[MFS_EXEC_ID_LEN + 1];
	struct mfs_ll_node *next_id, *next_path;
};

#define MIN_BUCKETS 1024u

static size_t path_hash(const char *p)
{
	uint64_t h = 1469598103934665603ull;
	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return (size_t)h;
}

static struct mfs_ll_node **id_slot(struct mfs_nodes *t, uint64_t id)
{
	struct mfs_ll_node **pp = &t->by_id[id % t->nbuckets];
	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next_id;
	return pp;
}

static struct mfs_ll_node **path_slot(struct mfs_nodes *t, const char *path)
{
	struct mfs_ll_node **pp = &t->by_path[path_hash(path) % t->nbuckets];
	while (*pp && strcmp((*pp)->path, path) != 0)
		pp = &(*pp)->next_path;
	return pp;
}

int mfs_nodes_init(struct mfs_nodes *t)
{
	memset(t, 0, sizeof(*t));
	t->nbuckets = MIN_BUCKETS;
	t->by_id = calloc(t->nbuckets, sizeof(*t->by_id));
	t->by_path = calloc(t->nbuckets, sizeof(*t->by_path));
	if (!t->by_id || !t->by_path) {
		free(t->by_id);
		free(t->by_path);
		return -ENOMEM;
	}
	t->next_id = MFS_ROOT_ID + 1;
	pthread_mutex_init(&t->mu, NULL);
	return 0;
}

static void node_free(struct mfs_ll_node *n)
{
	free(n->path);
	free(n);
}

void mfs_nodes_fini(struct mfs_nodes *t)
{
	if (!t->by_id)
		return;
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct mfs_ll_node *n = t->by_id[i];
		while (n) {
			struct mfs_ll_node *next = n->next_id;
			node_free(n);
			n = next;
		}
	}
	free(t->by_id);
	free(t->by_path);
	t->by_id = t->by_path = NULL;
	pthread_mutex_destroy(&t->mu);
}

/* With mu held: twice the buckets when the table is twice as full as it has
 * buckets (a failed grow keeps the old table: only slower). */
static void maybe_grow(struct mfs_nodes *t)
{
	if (t->count < 2 * t->nbuckets)
		return;
	size_t nb = t->nbuckets * 2;
	struct mfs_ll_node **ids = calloc(nb, sizeof(*ids)), **paths = calloc(nb, sizeof(*paths));
	if (!ids || !paths) {
		free(ids);
		free(paths);
		return;
	}
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct mfs_ll_node *n = t->by_id[i];
		while (n) {
			struct mfs_ll_node *next = n->next_id;
			n->next_id = ids[n->id % nb];
			ids[n->id % nb] = n;
			if (n->in_paths) {
				size_t b = path_hash(n->path) % nb;
				n->next_path = paths[b];
				paths[b] = n;
			}
			n = next;
		}
	}
	free(t->by_id);
	free(t->by_path);
	t->by_id = ids;
	t->by_path = paths;
	t->nbuckets = nb;
}

/* With mu held: take `n` out of the path table. */
static void unlink_path(struct mfs_nodes *t, struct mfs_ll_node *n)
{
	if (!n->in_paths)
		return;
	struct mfs_ll_node **pp = &t->by_path[path_hash(n->path) % t->nbuckets];
	while (*pp && *pp != n)
		pp = &(*pp)->next_path;
	if (*pp)
		*pp = n->next_path;
	n->next_path = NULL;
	n->in_paths = false;
}

static void link_path(struct mfs_nodes *t, struct mfs_ll_node *n)
{
	size_t b = path_hash(n->path) % t->nbuckets;
	n->next_path = t->by_path[b];
	t->by_path[b] = n;
	n->in_paths = true;
}

int mfs_nodes_path(struct mfs_nodes *t, uint64_t id, char **out)
{
	*out = NULL;
	if (id == MFS_ROOT_ID) {
		*out = strdup("/");
		return *out ? 0 : -ENOMEM;
	}
	pthread_mutex_lock(&t->mu);
	struct mfs_ll_node *n = *id_slot(t, id);
	if (n && n->path)
		*out = strdup(n->path);
	pthread_mutex_unlock(&t->mu);
	if (!n || !n->path)
		return -ESTALE;   /* forgotten, or its path lost (repath) */
	return *out ? 0 : -ENOMEM;
}

static void keep_kind(struct mfs_ll_node *ln, const struct mfs_node *n)
{
	ln->type = n->type;
	ln->ctl_kind = n->ctl_kind;
	ln->exec_file = n->exec_file;
	ln->depth = n->depth;
	memcpy(ln->name, n->name, sizeof(ln->name));
	memcpy(ln->exec_id, n->exec_id, sizeof(ln->exec_id));
}

static int ref(struct mfs_nodes *t, const char *path, bool fresh, const struct mfs_node *kind, uint64_t *id)
{
	if (strcmp(path, "/") == 0) {
		*id = MFS_ROOT_ID;
		return 0;
	}
	pthread_mutex_lock(&t->mu);
	struct mfs_ll_node *n = fresh ? NULL : *path_slot(t, path);
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n || !(n->path = strdup(path))) {
			free(n);
			pthread_mutex_unlock(&t->mu);
			return -ENOMEM;
		}
		n->id = t->next_id++;
		struct mfs_ll_node **slot = &t->by_id[n->id % t->nbuckets];
		n->next_id = *slot;
		*slot = n;
		if (!fresh)
			link_path(t, n);
		t->count++;
		maybe_grow(t);
	}
	if (kind)
		keep_kind(n, kind);
	n->nlookup++;
	*id = n->id;
	pthread_mutex_unlock(&t->mu);
	return 0;
}

int mfs_nodes_ref(struct mfs_nodes *t, const char *path, bool fresh, uint64_t *id)
{
	return ref(t, path, fresh, NULL, id);
}

int mfs_nodes_ref_node(struct mfs_nodes *t, const struct mfs_node *n, uint64_t *id)
{
	return ref(t, n->path, (mfs_kind_cache(n->type) & MFS_KIND_FRESH) != 0, n, id);
}

/* The node `id` (its kind, not yet its operations) with its path whatever
 * its kind (`with_path`), or as its kind needs. */
static int get(struct mfs_nodes *t, uint64_t id, bool with_path, struct mfs_node *n)
{
	if (id == MFS_ROOT_ID) {
		mfs_tree_root(n);
		return with_path && !(n->path = strdup("/")) ? -ENOMEM : 0;
	}
	memset(n, 0, sizeof(*n));
	int r = 0;
	pthread_mutex_lock(&t->mu);
	struct mfs_ll_node *ln = *id_slot(t, id);
	if (!ln || !ln->path || !ln->type) {
		r = -ESTALE;   /* forgotten, or its path lost (repath) */
	} else {
		n->type = ln->type;
		n->ctl_kind = ln->ctl_kind;
		n->exec_file = ln->exec_file;
		n->depth = ln->depth;
		memcpy(n->name, ln->name, sizeof(n->name));
		memcpy(n->exec_id, ln->exec_id, sizeof(n->exec_id));
		if ((with_path || mfs_tree_needs_path(n->type)) && !(n->path = strdup(ln->path)))
			r = -ENOMEM;
	}
	pthread_mutex_unlock(&t->mu);
	if (r == 0 && n->path && (r = mfs_tree_bind(n)) < 0)
		mfs_node_clear(n);
	return r;
}

int mfs_nodes_get(struct mfs_nodes *t, uint64_t id, struct mfs_node *n)
{
	return get(t, id, false, n);
}

int mfs_nodes_get_path(struct mfs_nodes *t, uint64_t id, struct mfs_node *n)
{
	return get(t, id, true, n);
}

int mfs_nodes_child(struct mfs_nodes *t, uint64_t parent, const char *name, struct mfs_node *n)
{
	memset(n, 0, sizeof(*n));
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	struct mfs_node *dir = malloc(sizeof(*dir));
	if (!dir)
		return -ENOMEM;
	int r = get(t, parent, true, dir);
	size_t dl = r == 0 ? strlen(dir->path) : 0, nl = strlen(name);
	if (r == 0 && dl + 1 + nl >= PATH_MAX)
		r = -ENAMETOOLONG;
	if (r == 0)
		r = mfs_tree_child(dir, name, n);
	if (r == 0 && !(n->path = malloc(dl + 1 + nl + 1)))
		r = -ENOMEM;
	if (r == 0) {
		memcpy(n->path, dir->path, dl);
		size_t at = dl;
		if (at == 0 || n->path[at - 1] != '/')
			n->path[at++] = '/';
		memcpy(n->path + at, name, nl + 1);
		if ((r = mfs_tree_bind(n)) < 0)
			mfs_node_clear(n);
	}
	mfs_node_clear(dir);
	free(dir);
	return r;
}

void mfs_nodes_forget(struct mfs_nodes *t, uint64_t id, uint64_t nlookup)
{
	if (id == MFS_ROOT_ID)
		return;
	pthread_mutex_lock(&t->mu);
	struct mfs_ll_node **pp = id_slot(t, id), *n = *pp;
	if (n) {
		n->nlookup = nlookup >= n->nlookup ? 0 : n->nlookup - nlookup;
		if (n->nlookup == 0) {
			*pp = n->next_id;
			unlink_path(t, n);
			t->count--;
			node_free(n);
		}
	}
	pthread_mutex_unlock(&t->mu);
}

bool mfs_nodes_find(struct mfs_nodes *t, const char *path, uint64_t *id)
{
	if (strcmp(path, "/") == 0) {
		*id = MFS_ROOT_ID;
		return true;
	}
	pthread_mutex_lock(&t->mu);
	struct mfs_ll_node *n = *path_slot(t, path);
	if (n)
		*id = n->id;
	pthread_mutex_unlock(&t->mu);
	return n != NULL;
}

void mfs_nodes_detach(struct mfs_nodes *t, const char *path)
{
	pthread_mutex_lock(&t->mu);
	struct mfs_ll_node *n = *path_slot(t, path);
	if (n)
		unlink_path(t, n);
	pthread_mutex_unlock(&t->mu);
}

/* `p` is `dir` (of length dl) or below it. */
static bool at_or_below(const char *p, const char *dir, size_t dl)
{
	return strncmp(p, dir, dl) == 0 && (p[dl] == '\0' || p[dl] == '/');
}

/* `p` is `from` or below it: its new spelling under `to`. NULL: no memory. */
static char *moved(const char *p, size_t fl, const char *to)
{
	size_t tl = strlen(to), rest = strlen(p + fl);
	char *q = malloc(tl + rest + 1);
	if (q) {
		memcpy(q, to, tl);
		memcpy(q + tl, p + fl, rest + 1);
	}
	return q;
}

/*
 * With mu held: `n` (linked) takes the path `q`, to be linked again once
 * every node has moved (so no path is linked twice meanwhile). With q NULL
 * (no memory) the node loses its path: mfs_nodes_path answers ESTALE for it
 * and the kernel looks the name up again, which is safe where keeping the
 * old path is not (after an exchange it names the other file).
 */
static void repath(struct mfs_nodes *t, struct mfs_ll_node *n, char *q)
{
	unlink_path(t, n);
	free(n->path);
	n->path = q;
	n->relink = q != NULL;
}

static void relink_moved(struct mfs_nodes *t)
{
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct mfs_ll_node *n = t->by_id[i]; n; n = n->next_id)
			if (n->relink) {
				n->relink = false;
				link_path(t, n);
			}
}

void mfs_nodes_rename(struct mfs_nodes *t, const char *from, const char *to)
{
	size_t fl = strlen(from);
	pthread_mutex_lock(&t->mu);
	/* What `to` named is gone (replaced), and so is everything below it. */
	size_t tl = strlen(to);
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct mfs_ll_node *n = t->by_id[i]; n; n = n->next_id)
			if (n->in_paths && at_or_below(n->path, to, tl))
				unlink_path(t, n);
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct mfs_ll_node *n = t->by_id[i]; n; n = n->next_id)
			if (n->in_paths && at_or_below(n->path, from, fl))
				repath(t, n, moved(n->path, fl, to));
	relink_moved(t);
	pthread_mutex_unlock(&t->mu);
}

void mfs_nodes_exchange(struct mfs_nodes *t, const char *a, const char *b)
{
	if (strcmp(a, b) == 0)
		return;   /* a name exchanged with itself: nothing moved */
	size_t al = strlen(a), bl = strlen(b);
	/* One inside the other: renameat2(2) refuses that (EINVAL, ENOTEMPTY)
	 * before asking us; were it to come, no swap is defined, so every node
	 * of the outer tree loses its path and is looked up again. */
	bool nested = at_or_below(a, b, bl) || at_or_below(b, a, al);
	pthread_mutex_lock(&t->mu);
	/* A node moved is unlinked until the end, so the second test never
	 * takes a node back that the first one moved. */
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct mfs_ll_node *n = t->by_id[i]; n; n = n->next_id) {
			if (!n->in_paths)
				continue;
			if (at_or_below(n->path, a, al))
				repath(t, n, nested ? NULL : moved(n->path, al, b));
			else if (at_or_below(n->path, b, bl))
				repath(t, n, nested ? NULL : moved(n->path, bl, a));
		}
	relink_moved(t);
	pthread_mutex_unlock(&t->mu);
}
