/*
 * rows.h: the tree as one declarative table (rows.c).
 *
 * A row says what may sit under a kind of directory: a fixed name or a
 * pattern (a match function), the kind of node it is, the mode getattr and
 * the listing show, the cache policy the kernel gets (entry and attribute
 * timeouts, direct_io on open), and the errnos of the operations its kind
 * refuses (doc/protocol.md "Errors"). Each module registers its own rows
 * (tree.c the tree's shape, ctl.c the .ctl files, one file per .ctl verb),
 * rows.c collects them; LOOKUP (mfs_tree_child, rows.c), the listing of a fixed
 * directory (mfs_tree_list, the root's fixed names) and the refusals and
 * modes of every kind (node.h, kinds.c, lowlevel.c) are answered from it.
 *
 * A .ctl verb is one `struct mfs_verb` in a file of its own (verb_*.c):
 * its name (its row under .ctl/), how its request is parsed and run, and
 * how its reply is told in the transaction log line (txnlog.c). Its
 * number (the node's ctl_kind, the run function's `kind`) is its place in
 * rows.c's list of verbs.
 */
#ifndef MAFSBXFS_ROWS_H
#define MAFSBXFS_ROWS_H

#include <sys/stat.h>

#include "buf.h"
#include "mfs.h"
#include "spec.h"

/* Cache policy bits of a row. */
/* The kernel keeps neither the entry nor the attributes of the node. */
#define MFS_KIND_NO_CACHE 0x1u
/* Every lookup is a new node (a .ctl transaction file: one inode per open). */
#define MFS_KIND_FRESH 0x2u
/* An open handle reads through to us every time (no page cache). */
#define MFS_KIND_DIRECT_IO 0x4u
/* rmdir runs on a transaction thread (rmdir NAME disposes). */
#define MFS_KIND_RMDIR_TXN 0x8u

struct mfs_verb;

/* A pattern row: 0 and n's naming fields set when `name` fits, else -errno. */
typedef int (*mfs_row_match_fn)(const struct mfs_node *dir, const char *name, struct mfs_node *n);

struct mfs_row {
	enum mfs_node_type parent;   /* the kind of directory it sits in (the root's row: MFS_N_ROOT) */
	const char *name;            /* a fixed name, or NULL for a pattern */
	mfs_row_match_fn match;      /* the pattern (NULL for a fixed name) */
	enum mfs_node_type kind;
	int sub;                     /* the exec file of an EXEC_FILE row */
	mode_t mode;                 /* type and permission bits (0777 for a guest's: its own) */
	unsigned cache;              /* MFS_KIND_* */
	int refuse;                  /* a change of the namespace or the mode */
	int refuse_write;            /* a change of the content */
};

/* The largest enum mfs_node_type the index of kinds holds (test_fs_rows checks). */
#define MFS_ROWS_MAX_KIND 63

/* Every row of a module ends with an empty one (kind 0). */
#define MFS_ROWS_END { .kind = 0 }

struct mfs_verb {
	const char *name;            /* the .ctl file */
	/* The request checked: *spec the verb's own, freed with free_spec. */
	int (*parse)(struct mfs *fs, const struct mafsbx_spec_config *cfg, const json_t *req, void **spec,
		     struct mafsbx_error *err);
	/* Do it: 0 and *reply (its first member "ok": true), else -errno and err.
	 * It may take *spec (setting it NULL). */
	int (*run)(struct mfs *fs, void **spec, json_t **reply, struct mafsbx_error *err);
	/* The transaction log line's words for the request and for its reply (txnlog.c). */
	void (*subject)(struct mafsbx_buf *b, const json_t *req);
	void (*reply)(struct mafsbx_buf *b, const json_t *reply);
	void (*free_spec)(void *spec);
};

/* The modules' rows (rows.c lists them). */
extern const struct mfs_row mfs_tree_rows[];
extern const struct mfs_row mfs_ctl_rows[];

/* The row that makes `name` a child of `dir`: 0 and n's kind set, else -errno
 * (ENOENT when no row has it). */
int mfs_rows_lookup(const struct mfs_node *dir, const char *name, struct mfs_node *n);
/* The fixed names under `dir` (no "." or ".."), in the table's order. */
int mfs_rows_list(enum mfs_node_type dir, void *buf, fuse_fill_dir_t filler);
/* A kind's row (its first): its mode, cache policy and refusals. */
const struct mfs_row *mfs_kind_row(enum mfs_node_type t);
unsigned mfs_kind_cache(enum mfs_node_type t);
mode_t mfs_kind_mode(enum mfs_node_type t);
/* The verb `kind` (NULL past the last) and how many there are. */
const struct mfs_verb *mfs_verb_at(enum mfs_ctl_kind kind);
size_t mfs_verb_count(void);

/* The whole table, for the unit test that checks it: row i (NULL past the
 * end, a verb's row built from it); mfs_rows_check: 0, or -EINVAL with
 * `why` saying which row breaks which rule. */
const struct mfs_row *mfs_rows_at(size_t i, struct mfs_row *scratch);
int mfs_rows_check(const struct mfs_row *rows, size_t n, const struct mfs_verb *const *verbs, size_t nv,
		   char *why, size_t len);

/* requests.c: a request naming another scope than the mount's (EACCES). */
int mfs_scope_refused(struct mfs *fs, const char *scope, struct mafsbx_error *err);
/* txnlog.c: ` field=value` for a string field of `obj`, cleaned; ` name=value` for `value`. */
void mfs_txnlog_field(struct mafsbx_buf *b, const json_t *obj, const char *field);
void mfs_txnlog_value(struct mafsbx_buf *b, const char *name, const json_t *value);
/* The subject of a request naming a sandbox or a key: ` name=` and the key's fields. */
void mfs_txnlog_key(struct mafsbx_buf *b, const json_t *req);

#endif
