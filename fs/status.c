/*
 * status.c: the read-only JSON files (doc/protocol.md "The tree").
 *
 *   NAME/status         name, id, state, paused, created, image, key, kind,
 *                       work_dir, outputs, capabilities, egress, identity
 *                       (uid/gid, or why unresolved), plane (and plane_reason)
 *   .ctl/declarations   the backend's declarations (sandbox.h)
 *   .ctl/engine         endpoint, its kind (unix/tcp/tls/ssh) and implied plane,
 *                       server version, API version, os
 *   NAME/egress         (text) the egress proxy's decision lines, read from
 *                       NAME-proxy's log on open (empty for a closed sandbox)
 *
 * Each is generated when the file is opened (one consistent snapshot per
 * open, served by offset from the handle, as lxcfs does for /proc files).
 * NAME/status always asks the engine (one inspect), so `state` is current.
 */
#include "extras.h"
#include "mfs.h"
#include "passthrough.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "egress.h"
#include "engine.h"
#include "names.h"
#include "sandbox.h"

#define FREEZE_IMPOSSIBLE                                                                                  \
	"the engine cannot pause containers (cgroup driver 'none': a rootless engine on cgroup v1), so the "       \
	"engine plane refuses file calls (EOPNOTSUPP); the local plane needs no freeze"

static int dump_text(json_t *obj, char **text, size_t *len, struct mafsbx_error *err)
{
	*text = mfs_json_dump_line(obj, JSON_INDENT(2), len);
	return *text ? 0 : mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
}

static const char *egress_of(const struct mafsbx_sandbox_info *i)
{
	if (!i->network_mode || !strcmp(i->network_mode, "none"))
		return "closed";
	/* An allowlist sandbox sits on its own internal network NAME-net. */
	if (mafsbx_name_parse(i->network_mode, NULL) == MAFSBX_NAME_NETWORK)
		return "allowlist";
	return "unknown";
}

/*
 * {"uid": U, "gid": G} once resolved, else {"resolved": false, "reason":
 * ...}: the one place a user sees why writes through the mount are refused
 * with EACCES for this sandbox.
 */
static json_t *identity_of(struct mfs *fs, const struct mafsbx_sandbox_info *i)
{
	json_t *o = json_object();
	int bad = o ? 0 : -1;
	uid_t uid = 0;
	gid_t gid = 0;
	bool resolved = false;
	char why[256] = "";
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (i->identity_known) {
		resolved = true;
		uid = i->uid;
		gid = i->gid;
	} else if (strcmp(i->state, "running") != 0) {
		/* resolving reads the guest's passwd under a freeze: only a running guest */
		snprintf(why, sizeof(why), "the sandbox is %s", i->state);
	} else if (mafsbx_sandbox_identity(fs->backend, i->name, &uid, &gid, &resolved, why, sizeof(why), &e) < 0)
		snprintf(why, sizeof(why), "%s", e.message);
	bad |= json_object_set_new(o, "resolved", json_boolean(resolved));
	if (resolved) {
		bad |= json_object_set_new(o, "uid", json_integer((json_int_t)uid));
		bad |= json_object_set_new(o, "gid", json_integer((json_int_t)gid));
	} else {
		bad |= json_object_set_new(o, "reason", mfs_json_text(why));
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int mfs_status_text(struct mfs *fs, const char *name, char **text, size_t *len, struct mafsbx_error *err)
{
	struct mafsbx_sandbox_info info;
	memset(&info, 0, sizeof(info));
	json_t *o = NULL, *decl = NULL;
	char **paths = NULL;
	int bad = 0;
	int r = mafsbx_sandbox_lookup(fs->backend, name, &info, err);
	if (r < 0)
		return r;
	if (!mfs_in_scope(fs, &info)) {
		r = mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "no sandbox named '%s' in scope '%s'", name,
				     fs->opt.scope);
		goto out;
	}
	size_t n = 0;
	paths = mfs_extra_paths(fs, &info, false, &n);
	json_t *outputs = json_array();
	for (size_t k = 0; paths && k < n; k++)
		bad |= json_array_append_new(outputs, mfs_json_text(paths[k]));

	struct mafsbx_error e2;
	mafsbx_error_clear(&e2);
	decl = mafsbx_sandbox_declarations(fs->backend, &e2);
	json_t *caps = decl ? json_object_get(decl, "capabilities") : NULL;

	char created[32];
	struct mafsbx_time t = { info.created, 0 };
	mafsbx_time_format(t, created);

	json_t *key = json_object();
	bad |= json_object_set_new(key, "scope", mfs_json_text(info.key_known ? info.key_scope : info.scope));
	bad |= json_object_set_new(key, "thread", mfs_json_text(info.key_known ? info.key_thread : info.thread));
	bad |= json_object_set_new(key, "agent", mfs_json_text(info.key_known ? info.key_agent : info.agent));
	bad |= json_object_set_new(key, "call",
				   mfs_json_text(info.key_known ? info.key_call : (info.call ? info.call : "")));

	o = json_object();
	bad |= json_object_set_new(o, "name", mfs_json_text(info.name));
	bad |= json_object_set_new(o, "id", mfs_json_text(info.id));
	bad |= json_object_set_new(o, "state", mfs_json_text(info.state));
	bad |= json_object_set_new(o, "paused", json_boolean(info.paused));
	bad |= json_object_set_new(o, "created", json_string(created));
	bad |= json_object_set_new(o, "image", mfs_json_text(info.image));
	bad |= json_object_set_new(o, "key", key);
	bad |= json_object_set_new(o, "kind", mfs_json_text(info.kind));
	bad |= json_object_set_new(o, "work_dir",
				   mfs_json_text(info.work_dir ? info.work_dir : MAFSBX_DEFAULT_WORK_DIR));
	bad |= json_object_set_new(o, "outputs", outputs);
	bad |= json_object_set_new(o, "capabilities", caps ? json_incref(caps) : json_array());
	bad |= json_object_set_new(o, "egress", json_string(egress_of(&info)));
	bad |= json_object_set_new(o, "identity", identity_of(fs, &info));
	bad |= mfs_cluster_status(fs, info.name, o);
	if (fs->planes) {
		char why[256];
		struct mafsbx_plane_target pt = { .id = info.id, .name = info.name,
						 .work_dir = info.work_dir ? info.work_dir : MAFSBX_DEFAULT_WORK_DIR };
		enum mafsbx_plane_kind k = mafsbx_plane_which(fs->planes, &pt, why, sizeof(why));
		bad |= json_object_set_new(o, "plane", json_string(k == MAFSBX_PK_LOCAL ? "local" : "engine"));
		if (k == MAFSBX_PK_ENGINE)
			bad |= json_object_set_new(o, "plane_reason", json_string(why));
		struct mafsbx_engine_cgroups cg;
		struct mafsbx_error ce;
		bool cg_ok = mafsbx_engine_cgroups(fs->engine, &cg, &ce) == 0;
		if (cg_ok && !cg.can_pause) {
			/* the engine plane's file calls are refused; the local plane needs no freeze */
			bad |= json_object_set_new(o, "freeze", json_false());
			bad |= json_object_set_new(o, "freeze_why", json_string(FREEZE_IMPOSSIBLE));
		}
		if (cg_ok && !cg.pids_limit)
			bad |= json_object_set_new(o, "warnings",
						   json_pack("[s]", "the engine ignores the pids limit (no cgroups "
								    "for containers): this sandbox runs without one"));
	}
	/* a status missing a field for want of memory is not shown as complete: ENOMEM */
	r = bad ? mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory") : dump_text(o, text, len, err);
out:
	mfs_strv_free(paths);
	json_decref(o);
	json_decref(decl);
	mafsbx_sandbox_info_clear(&info);
	return r;
}

int mfs_egress_text(struct mfs *fs, const char *name, char **text, size_t *len, struct mafsbx_error *err)
{
	struct mafsbx_sandbox_info info;
	memset(&info, 0, sizeof(info));
	int r = mafsbx_sandbox_lookup(fs->backend, name, &info, err);
	if (r < 0)
		return r;
	bool in = mfs_in_scope(fs, &info);
	mafsbx_sandbox_info_clear(&info);
	if (!in)
		return mafsbx_error_set(err, MAFSBX_EK_NO_CONTAINER, "no sandbox named '%s' in scope '%s'", name,
					fs->opt.scope);
	struct mafsbx_egress_log lg;
	if ((r = mafsbx_sandbox_egress_log(fs->backend, name, &lg, err)) < 0)
		return r;
	static const char flag[] = "# truncated: only the last decisions are shown\n";
	char *t = malloc(lg.len + sizeof(flag));
	if (!t) {
		mafsbx_egress_log_free(&lg);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	size_t o = 0;
	if (lg.truncated) {
		memcpy(t, flag, sizeof(flag) - 1);
		o = sizeof(flag) - 1;
	}
	memcpy(t + o, lg.text, lg.len + 1);
	*text = t;
	*len = o + lg.len;
	mafsbx_egress_log_free(&lg);
	return 0;
}

int mfs_declarations_text(struct mfs *fs, char **text, size_t *len, struct mafsbx_error *err)
{
	json_t *d = mafsbx_sandbox_declarations(fs->backend, err);
	if (!d)
		return mafsbx_error_errno(err, -ENOMEM);
	int r = dump_text(d, text, len, err);
	json_decref(d);
	return r;
}

int mfs_engine_text(struct mfs *fs, char **text, size_t *len, struct mafsbx_error *err)
{
	struct mafsbx_engine_version v;
	memset(&v, 0, sizeof(v));
	int r = mafsbx_engine_version(fs->engine, &v, err);
	if (r < 0)
		return r;
	json_t *o = json_object();
	int bad = o ? 0 : -1;
	char url[sizeof(fs->ep.url)];
	mafsbx_endpoint_url_shown(&fs->ep, fs->opt.allow_other, url, sizeof(url));
	bad |= json_object_set_new(o, "endpoint", mfs_json_text(url));
	bad |= json_object_set_new(o, "context", fs->ep.context[0] ? mfs_json_text(fs->ep.context) : json_null());
	/* How the engine is reached, and the file plane that implies (mafsbxfs(1) READING AND WRITING FILES). */
	bad |= json_object_set_new(o, "kind", json_string(mafsbx_endpoint_kind(&fs->ep)));
	bad |= json_object_set_new(o, "plane", json_string(fs->opt.plane == MAFSBX_PLANE_ENGINE
								   ? "engine"
								   : mafsbx_endpoint_plane(&fs->ep)));
	bad |= json_object_set_new(o, "server_version", mfs_json_text(v.version));
	bad |= json_object_set_new(o, "api_version", mfs_json_text(v.api_version));
	bad |= json_object_set_new(o, "min_api_version", mfs_json_text(v.min_api_version));
	bad |= json_object_set_new(o, "os", mfs_json_text(v.os));
	bad |= json_object_set_new(o, "arch", mfs_json_text(v.arch));
	bad |= json_object_set_new(o, "kernel", mfs_json_text(v.kernel));
	/* whether local-plane reads go to the kernel (FUSE passthrough), and why not */
	bad |= json_object_set_new(o, "passthrough", mfs_passthrough_json(fs));
	bad |= json_object_set_new(o, "product", json_string(v.podman ? "podman" : "docker"));
	bad |= mfs_cluster_engine(fs, o);
	struct mafsbx_engine_cgroups cg;
	struct mafsbx_error ce;
	if (mafsbx_engine_cgroups(fs->engine, &cg, &ce) == 0) {
		bad |= json_object_set_new(o, "cgroup_driver", mfs_json_text(cg.driver));
		bad |= json_object_set_new(o, "cgroup_version", mfs_json_text(cg.version));
		bad |= json_object_set_new(o, "freeze", json_boolean(cg.can_pause));
		if (!cg.can_pause)
			bad |= json_object_set_new(o, "freeze_why", json_string(FREEZE_IMPOSSIBLE));
		bad |= json_object_set_new(o, "pids_limit", json_boolean(cg.pids_limit));
	}
	r = bad ? mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory") : dump_text(o, text, len, err);
	json_decref(o);
	return r;
}
