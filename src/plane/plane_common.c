/*
 * plane_common.c: what both planes share (plane_internal.h): the check of a
 * path relative to a sandbox's base, the guest identity every mutation
 * runs at (refused while unresolved), its credentials on this host
 * (through the pin's ID maps), and the spool budget of open files with its
 * shares per sandbox and per user, and the kept allowance of finished
 * execs' output (plane.h "The spool budget"). Below
 * plane.c, plane_local.c and plane_engine.c: it calls none of them.
 */
#include "plane_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
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

/*
 * The spool tallies: what each sandbox and each user other than the daemon
 * holds, while they hold anything (a short list: the open spools' owners).
 */
struct plane_spool_tally {
	struct plane_spool_tally *next;
	bool user;                   /* a uid's tally, else a sandbox's */
	uid_t uid;
	char sandbox[64];
	uint64_t bytes, kept;
};

/* With spool_mu held: the tally of a's sandbox (user false) or uid, made when
 * `make`; NULL when none applies (no sandbox, the daemon's own uid) or none
 * could be made. */
static struct plane_spool_tally *tally(struct mafsbx_planes *ps, const struct mafsbx_spool_share *a, bool user,
				       bool make)
{
	if (user ? a->uid == ps->own_uid : !a->sandbox[0])
		return NULL;
	for (struct plane_spool_tally *t = ps->spool_tallies; t; t = t->next)
		if (t->user == user && (user ? t->uid == a->uid : !strcmp(t->sandbox, a->sandbox)))
			return t;
	struct plane_spool_tally *t = make ? calloc(1, sizeof(*t)) : NULL;
	if (!t)
		return NULL;
	t->user = user;
	t->uid = a->uid;
	snprintf(t->sandbox, sizeof(t->sandbox), "%s", a->sandbox);
	t->next = ps->spool_tallies;
	ps->spool_tallies = t;
	return t;
}

/* With spool_mu held: forget the tallies that hold nothing. */
static void tallies_prune(struct mafsbx_planes *ps)
{
	for (struct plane_spool_tally **pp = &ps->spool_tallies; *pp;) {
		struct plane_spool_tally *t = *pp;
		if (t->bytes || t->kept) {
			pp = &t->next;
			continue;
		}
		*pp = t->next;
		free(t);
	}
}

void mafsbx_plane_spool_fini(struct mafsbx_planes *ps)
{
	while (ps->spool_tallies) {
		struct plane_spool_tally *t = ps->spool_tallies;
		ps->spool_tallies = t->next;
		free(t);
	}
	pthread_mutex_destroy(&ps->spool_mu);
}

void mafsbx_planes_share_spool(struct mafsbx_planes *node, struct mafsbx_planes *mount)
{
	node->spool_account = mount;
	pthread_mutex_lock(&mount->spool_mu);
	mount->spool_shared = true;
	pthread_mutex_unlock(&mount->spool_mu);
}

/* The planes whose spool account `ps` charges: its own, or the mount's for a node's. */
static struct mafsbx_planes *account(struct mafsbx_planes *ps)
{
	return ps->spool_account ? ps->spool_account : ps;
}

void mafsbx_planes_spool_owner(struct mafsbx_planes *ps, struct mafsbx_spool_share *a, const char *sandbox)
{
	ps = account(ps);
	memset(a, 0, sizeof(*a));
	a->uid = ps->own_uid;
	uid_t uid;
	if (ps->cfg.caller_uid && ps->cfg.caller_uid(&uid))
		a->uid = uid;
	snprintf(a->sandbox, sizeof(a->sandbox), "%s", sandbox ? sandbox : "");
}

static int spool_refused(struct mafsbx_planes *ps, uint64_t held, struct mafsbx_error *err)
{
	return mafsbx_error_set_full(err, MAFSBX_EK_NOMEM, ENOMEM, NULL,
				     "open files already hold %llu bytes of spool (budget %llu%s): close some",
				     (unsigned long long)held, (unsigned long long)ps->cfg.spool_budget,
				     ps->spool_shared ? ", the mount's over all its nodes" : "");
}


/* With spool_mu held: 0 when `more` bytes fit every bound of a's owners, else ENOMEM naming the bound. */
static int spool_fits(struct mafsbx_planes *ps, const struct mafsbx_spool_share *a, uint64_t more,
		      const struct plane_spool_tally *sb, const struct plane_spool_tally *us, struct mafsbx_error *err)
{
	uint64_t b = ps->cfg.spool_budget, used = atomic_load(&ps->spool_used);
	if (used + more > b)
		return spool_refused(ps, used, err);
	if (sb && sb->bytes + more > b / 2)
		return mafsbx_error_set_full(err, MAFSBX_EK_NOMEM, ENOMEM, NULL,
					     "the spools of sandbox %s already hold %llu bytes, the most one sandbox "
					     "may (half the spool budget of %llu)",
					     a->sandbox, (unsigned long long)sb->bytes, (unsigned long long)b);
	if (a->uid != ps->own_uid && ps->spool_users + more > b / 4 * 3)
		return mafsbx_error_set_full(err, MAFSBX_EK_NOMEM, ENOMEM, NULL,
					     "users other than the mount's hold %llu bytes of spool, all their pool "
					     "(3/4 of the spool budget of %llu) allows",
					     (unsigned long long)ps->spool_users, (unsigned long long)b);
	if (us && us->bytes + more > b / 4)
		return mafsbx_error_set_full(err, MAFSBX_EK_NOMEM, ENOMEM, NULL,
					     "uid %u already holds %llu bytes of spool, the most one user may (1/4 "
					     "of the spool budget of %llu)",
					     (unsigned)a->uid, (unsigned long long)us->bytes, (unsigned long long)b);
	return 0;
}

int mafsbx_plane_spool_room(struct mafsbx_planes *ps, const struct mafsbx_spool_share *a, struct mafsbx_error *err)
{
	ps = account(ps);
	/* a share that could not take one more byte: every bound that applies is full */
	pthread_mutex_lock(&ps->spool_mu);
	int r = spool_fits(ps, a, 1, tally(ps, a, false, false), tally(ps, a, true, false), err);
	pthread_mutex_unlock(&ps->spool_mu);
	return r;
}

int mafsbx_plane_spool_grow(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted, uint64_t want,
			    struct mafsbx_error *err)
{
	ps = account(ps);
	if (want <= accounted->bytes)
		return 0;
	uint64_t more = want - accounted->bytes;
	pthread_mutex_lock(&ps->spool_mu);
	struct plane_spool_tally *sb = tally(ps, accounted, false, true);
	struct plane_spool_tally *us = tally(ps, accounted, true, true);
	int r = (accounted->sandbox[0] && !sb) || (accounted->uid != ps->own_uid && !us)
			? mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory")
			: spool_fits(ps, accounted, more, sb, us, err);
	if (r == 0) {
		atomic_fetch_add(&ps->spool_used, more);
		if (sb)
			sb->bytes += more;
		if (us) {
			us->bytes += more;
			ps->spool_users += more;
		}
		accounted->bytes = want;
	}
	tallies_prune(ps);
	pthread_mutex_unlock(&ps->spool_mu);
	return r;
}

void mafsbx_plane_spool_release(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted)
{
	ps = account(ps);
	uint64_t n = accounted->bytes;
	if (!n)
		return;
	pthread_mutex_lock(&ps->spool_mu);
	struct plane_spool_tally *sb = tally(ps, accounted, false, false);
	struct plane_spool_tally *us = tally(ps, accounted, true, false);
	if (accounted->kept) {
		ps->spool_kept -= n;
		if (sb)
			sb->kept -= n;
	} else {
		atomic_fetch_sub(&ps->spool_used, n);
		if (sb)
			sb->bytes -= n;
		if (us) {
			us->bytes -= n;
			ps->spool_users -= n;
		}
	}
	tallies_prune(ps);
	pthread_mutex_unlock(&ps->spool_mu);
	accounted->bytes = 0;
	accounted->kept = false;
}

int mafsbx_planes_spool_keep(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted)
{
	ps = account(ps);
	uint64_t n = accounted->bytes, b = ps->cfg.spool_budget;
	if (accounted->kept || !n)
		return 0;
	pthread_mutex_lock(&ps->spool_mu);
	struct plane_spool_tally *sb = tally(ps, accounted, false, false);
	struct plane_spool_tally *us = tally(ps, accounted, true, false);
	int r = 0;
	if (sb && sb->kept + n > b / 4)
		r = -1;
	else if (ps->spool_kept + n > b / 2)
		r = -2;
	if (r == 0) {
		atomic_fetch_sub(&ps->spool_used, n);
		ps->spool_kept += n;
		if (sb) {
			sb->bytes -= n;
			sb->kept += n;
		}
		if (us) {
			us->bytes -= n;
			ps->spool_users -= n;
		}
		accounted->kept = true;
	}
	tallies_prune(ps);
	pthread_mutex_unlock(&ps->spool_mu);
	return r;
}

int mafsbx_planes_spool_grow(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted, uint64_t want,
			     struct mafsbx_error *err)
{
	return mafsbx_plane_spool_grow(ps, accounted, want, err);
}

void mafsbx_planes_spool_release(struct mafsbx_planes *ps, struct mafsbx_spool_share *accounted)
{
	mafsbx_plane_spool_release(ps, accounted);
}
