/*
 * plane_common.c: what both planes share (plane_internal.h): the check of a
 * path relative to a sandbox's base, the guest identity every mutation
 * runs at (refused while unresolved), its credentials on this host
 * (through the pin's ID maps), and the spool budget of open files. Below
 * plane.c, plane_local.c and plane_engine.c: it calls none of them.
 */
#include "plane_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "paths.h"
#include "sandbox.h"

int mafsbx_plane_rel_check(const char *rel, struct mafsbx_error *err)
{
	if (!rel)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "no path");
	if (strchr(rel, '\\'))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "path %s: a backslash is refused", rel);
	if (!*rel)
		return 0;
	return mafsbx_path_check_segments(rel, MAFSBX_SEG_STRICT, err, "path %s", rel);
}

int mafsbx_plane_identity(struct mafsbx_planes *ps, const char *name, uid_t *uid, gid_t *gid, struct mafsbx_error *err)
{
	bool resolved = false;
	char why[256];
	int r = mafsbx_sandbox_identity(ps->backend, name, uid, gid, &resolved, why, sizeof(why), err);
	if (r < 0)
		return r;
	/* Unresolved is never taken as root (0:0 would give the host's writes an
	 * authority the guest lacks): the mutation is refused. */
	if (!resolved)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, EACCES, "PermissionError",
					     "sandbox %s: the guest identity is unresolved (%s): nothing is changed at "
					     "an authority the guest may not have",
					     name, why);
	return 0;
}

int mafsbx_plane_guest_cred(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const char *name,
		     struct mafsbx_guestcred *out, struct mafsbx_error *err)
{
	uid_t uid = 0;
	gid_t gid = 0;
	memset(out, 0, sizeof(*out));
	int r = mafsbx_plane_identity(ps, name, &uid, &gid, err);
	if (r < 0)
		return r;
	if (mafsbx_pin_host_uid(pin, uid, &out->uid) < 0 || mafsbx_pin_host_gid(pin, gid, &out->gid) < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "sandbox %s: the guest identity %u:%u is outside its user namespace map",
					     name, (unsigned)uid, (unsigned)gid);
	/* The supplementary groups runc gave the container's processes, when
	 * its init still runs as that identity; else the primary group alone. */
	if (pin->init_uid == out->uid && pin->init_gid == out->gid && pin->n_groups) {
		size_t n = pin->n_groups < MAFSBX_GUESTCRED_GROUPS ? pin->n_groups : MAFSBX_GUESTCRED_GROUPS;
		memcpy(out->groups, pin->groups, n * sizeof(gid_t));
		out->n_groups = n;
	} else {
		out->groups[0] = out->gid;
		out->n_groups = 1;
	}
	return 0;
}

static int spool_refused(struct mafsbx_planes *ps, uint64_t held, struct mafsbx_error *err)
{
	return mafsbx_error_set_full(err, MAFSBX_EK_NOMEM, ENOMEM, NULL,
				     "open files already hold %llu bytes of spool (budget %llu): close some",
				     (unsigned long long)held, (unsigned long long)ps->cfg.spool_budget);
}

int mafsbx_plane_spool_room(struct mafsbx_planes *ps, struct mafsbx_error *err)
{
	uint64_t held = atomic_load(&ps->spool_used);
	return held >= ps->cfg.spool_budget ? spool_refused(ps, held, err) : 0;
}

int mafsbx_plane_spool_grow(struct mafsbx_planes *ps, uint64_t *accounted, uint64_t want, struct mafsbx_error *err)
{
	if (want <= *accounted)
		return 0;
	uint64_t more = want - *accounted;
	uint64_t now = atomic_fetch_add(&ps->spool_used, more) + more;
	if (now > ps->cfg.spool_budget) {
		atomic_fetch_sub(&ps->spool_used, more);
		return spool_refused(ps, now - more, err);
	}
	*accounted = want;
	return 0;
}

void mafsbx_plane_spool_release(struct mafsbx_planes *ps, uint64_t *accounted)
{
	if (*accounted)
		atomic_fetch_sub(&ps->spool_used, *accounted);
	*accounted = 0;
}

int mafsbx_planes_spool_grow(struct mafsbx_planes *ps, uint64_t *accounted, uint64_t want, struct mafsbx_error *err)
{
	return mafsbx_plane_spool_grow(ps, accounted, want, err);
}

void mafsbx_planes_spool_release(struct mafsbx_planes *ps, uint64_t *accounted)
{
	mafsbx_plane_spool_release(ps, accounted);
}
