/*
 * requests.c: the real .ctl request runner (doc/protocol.md "The transactions"):
 * the verb a .ctl file names (rows.h: one file each, verb_*.c) parsed and
 * run against the limits the backend checks requests against, and the
 * mount's scope rule the verbs share.
 *
 * Requests run on the transaction threads (txn.c, -o max_requests of them),
 * never on a FUSE worker, so lookups and reads always find a free worker;
 * past the cap a request waits its turn in txn.c's queue. That is the one
 * limit: the unit tests reach this runner through the same threads
 * (tests/unit/fs_ll.c drives the daemon's low-level handlers).
 */
#include "mfs.h"
#include "rows.h"

#include <errno.h>
#include <string.h>

#include "sandbox.h"
#include "spec.h"

/* With -o scope=S the mount serves only scope S: a request naming another
 * scope is refused (EACCES). */
int mfs_scope_refused(struct mfs *fs, const char *scope, struct mafsbx_error *err)
{
	if (!fs->opt.scope || (scope && !strcmp(scope, fs->opt.scope)))
		return 0;
	return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EACCES, "PermissionError",
				     "field 'scope': this mount serves only scope '%s'", fs->opt.scope);
}

int mfs_run_request(struct mfs *fs, enum mfs_ctl_kind kind, const json_t *req, json_t **reply,
		    struct mafsbx_error *err)
{
	const struct mfs_verb *v = mfs_verb_at(kind);
	if (!v)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "unknown request");
	mfs_reply_budget_release_held();
	struct mafsbx_spec_config cfg;   /* the limits acquire and exec requests are checked against */
	mafsbx_backend_spec_config(fs->backend, &cfg);
	void *spec = NULL;
	int r = v->parse(fs, &cfg, req, &spec, err);
	if (r == 0)
		r = v->run(fs, &spec, reply, err);
	v->free_spec(spec);
	return r;
}
