/*
 * verb_acquire.c: the .ctl verb `acquire` (doc/protocol.md "The transactions"):
 * its row under .ctl/, its request parsed (sandbox.h's acquire spec, the
 * mount's scope rule), run (mafsbx_sandbox_acquire, the declared outputs
 * kept, the new sandbox shown at once) and its reply:
 *
 *   ok, name, id, state, path, work_dir, uid, gid (null, with identity
 *   saying why, when they cannot be resolved), warnings
 *
 * Probes are execs: the library keeps them and freezes from overlapping.
 */
#include "extras.h"
#include "mfs.h"
#include "rows.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "sandbox.h"

static void acquire_free(void *spec)
{
	mafsbx_acquire_spec_free(spec);
}

static int acquire_parse(struct mfs *fs, const struct mafsbx_spec_config *cfg, const json_t *req, void **spec,
			 struct mafsbx_error *err)
{
	struct mafsbx_acquire_spec *s = NULL;
	int r = mafsbx_acquire_spec_parse(req, cfg, &s, err);
	if (r < 0)
		return r;
	*spec = s;
	return mfs_scope_refused(fs, s->key.scope, err);
}

/* The reply of an acquired sandbox; NULL when out of memory. */
static json_t *acquire_reply(const struct mafsbx_acquire_result *res)
{
	json_t *o = json_object();
	int bad = o ? 0 : -1;
	bad |= json_object_set_new(o, "ok", json_true());
	bad |= json_object_set_new(o, "name", json_string(res->name));
	bad |= json_object_set_new(o, "id", json_string(res->id));
	bad |= json_object_set_new(o, "state", json_string(mafsbx_acquire_state_name(res->state)));
	bad |= json_object_set_new(o, "path", json_string(res->name));
	bad |= json_object_set_new(o, "work_dir", mfs_json_text(res->work_dir));
	if (res->identity_resolved) {
		bad |= json_object_set_new(o, "uid", json_integer((json_int_t)res->uid));
		bad |= json_object_set_new(o, "gid", json_integer((json_int_t)res->gid));
	} else {
		/* No number at all: a 0 here would read as root. */
		bad |= json_object_set_new(o, "uid", json_null());
		bad |= json_object_set_new(o, "gid", json_null());
		bad |= json_object_set_new(o, "identity", mfs_json_text(res->identity_why));
	}
	if (res->warning[0])
		bad |= json_object_set_new(o, "warnings", json_pack("[s]", res->warning));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int acquire_run(struct mfs *fs, void **spec, json_t **reply, struct mafsbx_error *err)
{
	const struct mafsbx_acquire_spec *s = *spec;
	struct mafsbx_acquire_result res;
	memset(&res, 0, sizeof(res));
	int r = mafsbx_sandbox_acquire(fs->backend, s, &res, err);
	if (r < 0)
		return r;
	if (s->n_outputs)
		mfs_extra_add_outputs(fs, res.id, s->outputs, s->n_outputs);
	mfs_invalidate_sandbox(fs, res.name);
	/* the sandbox is there (the mount lists it); only this reply cannot say so */
	if (!(*reply = acquire_reply(&res)))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "acquired %s but its reply could not be built: out of memory",
					res.name);
	return r;
}

static void acquire_log_reply(struct mafsbx_buf *b, const json_t *reply)
{
	mfs_txnlog_field(b, reply, "state");
	mfs_txnlog_field(b, reply, "name");
}

const struct mfs_verb mfs_verb_acquire = {
	.name = "acquire",
	.parse = acquire_parse,
	.run = acquire_run,
	.subject = mfs_txnlog_key,
	.reply = acquire_log_reply,
	.free_spec = acquire_free,
};
