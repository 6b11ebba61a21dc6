/*
 * guestcred.h: act with a guest's filesystem credentials on the calling
 * thread only (local plane mutations, mafsbxfs(1) READING AND WRITING FILES).
 *
 * setfsuid/setfsgid and the raw setgroups system call change only the
 * calling thread (glibc's setgroups() wrapper would change every thread of
 * the process). While the fsuid is not 0 the kernel also drops the
 * filesystem capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER, ...) from the
 * thread's effective set, so it checks the guest's permissions exactly as
 * it would for the guest's own processes; going back to fsuid 0 restores
 * them. Every enter is followed by a leave on the same thread before the
 * thread serves anything else.
 */
#ifndef MAFSBX_GUESTCRED_H
#define MAFSBX_GUESTCRED_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MAFSBX_GUESTCRED_GROUPS 32

struct mafsbx_guestcred {
	uid_t uid;               /* host ids (mapped through the container's maps) */
	gid_t gid;
	size_t n_groups;
	gid_t groups[MAFSBX_GUESTCRED_GROUPS];
};

struct mafsbx_guestcred_saved {
	bool active;
	uid_t fsuid;
	gid_t fsgid;
	int n_groups;
	gid_t groups[MAFSBX_GUESTCRED_GROUPS];
};

/* 0, or -errno (EPERM when this process cannot change credentials: not root).
 * A daemon that is not root (the user of a rootless engine) acts as itself
 * when the guest's host ids are its own (guest root there) and gets EPERM
 * for any other guest id (a subordinate id); leave is then a no-op. */
int mafsbx_guestcred_enter(const struct mafsbx_guestcred *c, struct mafsbx_guestcred_saved *s);
/* Restore what enter saved. Never fails silently: a thread that cannot go
 * back aborts (serving the next request with a guest's identity, or with
 * root's where the guest's was meant, would be worse). */
void mafsbx_guestcred_leave(struct mafsbx_guestcred_saved *s);

#endif
