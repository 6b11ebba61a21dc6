/*
 * guestcred.c: per-thread filesystem credentials (guestcred.h).
 */
#include "guestcred.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

static long raw_setgroups(size_t n, const gid_t *g)
{
	return syscall(SYS_setgroups, n, g);
}

/* setfsuid returns the previous value and cannot report failure: read back. */
static bool set_fsuid(uid_t u)
{
	syscall(SYS_setfsuid, u);
	return (uid_t)syscall(SYS_setfsuid, (uid_t)-1) == u;
}

static bool set_fsgid(gid_t g)
{
	syscall(SYS_setfsgid, g);
	return (gid_t)syscall(SYS_setfsgid, (gid_t)-1) == g;
}

int mafsbx_guestcred_enter(const struct mafsbx_guestcred *c, struct mafsbx_guestcred_saved *s)
{
	s->active = false;
	if (geteuid() != 0) {
		/* Not root: the user of a rootless engine, whose guest root is this
		 * user. Acting as that guest is acting as ourselves; any other guest
		 * id is a subordinate id, which needs CAP_SETUID to take. */
		return c->uid == geteuid() && c->gid == getegid() ? 0 : -EPERM;
	}
	s->fsuid = (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
	s->fsgid = (gid_t)syscall(SYS_setfsgid, (gid_t)-1);
	s->n_groups = getgroups(MAFSBX_GUESTCRED_GROUPS, s->groups);
	if (s->n_groups < 0)
		return -errno;
	size_t n = c->n_groups ? c->n_groups : 1;
	const gid_t *g = c->n_groups ? c->groups : &c->gid;
	if (raw_setgroups(n, g) < 0)
		return -errno;
	if (!set_fsgid(c->gid)) {
		raw_setgroups((size_t)s->n_groups, s->groups);
		return -EPERM;
	}
	if (!set_fsuid(c->uid)) {
		set_fsgid(s->fsgid);
		raw_setgroups((size_t)s->n_groups, s->groups);
		return -EPERM;
	}
	s->active = true;
	return 0;
}

void mafsbx_guestcred_leave(struct mafsbx_guestcred_saved *s)
{
	if (!s->active)
		return;
	int saved = errno;
	/* fsuid first: back to 0 gives the capabilities needed for the rest. */
	if (!set_fsuid(s->fsuid) || !set_fsgid(s->fsgid) || raw_setgroups((size_t)s->n_groups, s->groups) < 0) {
		log_error("cannot restore this thread's filesystem credentials; stopping");
		abort();
	}
	s->active = false;
	errno = saved;
}
