/*
 * plane_local.c: a sandbox's files reached through the kernel, from the
 * pinned container root (plane.h, mafsbxfs(1) READING AND WRITING FILES).
 *
 * Every path is resolved by ONE openat2() relative to the pin's root with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV: a link anywhere on the path is ELOOP, a crossing into
 * another mount EXDEV, atomically (the guest cannot swap a component
 * between a check and a use: there is no separate check). Targets are
 * opened O_PATH | O_NOFOLLOW first and typed with fstat; only a regular
 * file is re-opened for I/O (through /proc/thread-self/fd), so a fifo or a
 * device node is never opened from the host. Mutations name their target
 * relative to an O_PATH handle of its directory, with the guest's
 * filesystem credentials on this thread (guestcred.h).
 */
#include "plane_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <dirent.h>

#include "buf.h"
#include "guestpath.h"
#include "log.h"

#define LP_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
#define LP_PATH_MAX 4096

static int lp_err(struct mafsbx_error *err, int e, const char *what, const char *rel)
{
	const char *shown = rel && *rel ? rel : ".";
	switch (e) {
	case ELOOP:
		return mafsbx_error_set(err, MAFSBX_EK_CONFINEMENT,
					"%s %s: a symbolic link on the path (links are never followed)", what, shown);
	case ENOENT:
		return mafsbx_error_set(err, MAFSBX_EK_NO_PATH, "%s %s: no such file or directory", what, shown);
	case ENOTDIR:
		return mafsbx_error_set(err, MAFSBX_EK_NOT_DIR, "%s %s: a parent is not a directory", what, shown);
	case EXDEV:
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFINEMENT, EXDEV, "ValueError",
					     "%s %s: crosses into another mount of the guest (not served)", what, shown);
	case EACCES:
	case EPERM:
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, "PermissionError",
					     "%s %s: the guest may not (%s)", what, shown, strerror(e));
	case ENOMEM:
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "%s %s: out of memory", what, shown);
	default:
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, "OSError", "%s %s: %s", what, shown, strerror(e));
	}
}

/* Acting as the guest failed (r < 0 from mafsbx_guestcred_enter). A daemon
 * that is not root says why: the guest's ids other than its root are the
 * rootless engine user's subordinate ids, which it cannot take. */
static int cred_err(struct mafsbx_error *err, int r, const struct mafsbx_guestcred *c, const char *what,
		    const char *rel)
{
	if (r != -EPERM || geteuid() == 0)
		return lp_err(err, -r, what, rel);
	return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, EPERM, "PermissionError",
				     "%s %s: this daemon is not root (uid %u) and cannot act as the guest's host "
				     "ids %u:%u (subordinate ids of the rootless engine's user namespace): taking "
				     "another filesystem uid needs CAP_SETUID, held only inside that namespace; mount as "
				     "root, or let the sandbox run as its root",
				     what, rel && *rel ? rel : ".", (unsigned)geteuid(), (unsigned)c->uid, (unsigned)c->gid);
}

/* A file the kernel would not open for a daemon that is not root: when its
 * owner is not this user (a subordinate id of a rootless engine), say so. */
static int denied_err(struct mafsbx_error *err, int e, const struct mafsbx_pin *pin, const struct stat *st,
		      const char *what, const char *rel)
{
	if ((e != EACCES && e != EPERM) || geteuid() == 0 || st->st_uid == geteuid())
		return lp_err(err, e, what, rel);
	uid_t gu = 65534;
	if (mafsbx_pin_guest_uid(pin, st->st_uid, &gu) < 0)
		gu = 65534;
	/* not the guest's refusal but this daemon's: logged (an EACCES is not, as a rule) */
	int r = mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, "PermissionError",
				     "%s %s: this daemon is not root (uid %u) and the file is host uid %u's (guest uid "
				     "%u, a subordinate id of the rootless engine's user namespace), mode %04o: only root, "
				     "or a process inside that namespace, may pass its mode bits (%s)",
				     what, rel && *rel ? rel : ".", (unsigned)geteuid(), (unsigned)st->st_uid, (unsigned)gu,
				     (unsigned)(st->st_mode & 07777), strerror(e));
	if (err)
		log_info("%s", err->message);
	return r;
}

/* The path below the container root for (base, rel): never absolute. */
static int guest_path(const struct mafsbx_plane_target *t, enum mafsbx_plane_base base, const char *rel,
		      char *buf, size_t size, struct mafsbx_error *err)
{
	const char *wd = base == MAFSBX_BASE_WORK && t->work_dir ? t->work_dir : "";
	while (*wd == '/')
		wd++;
	char wdc[LP_PATH_MAX];
	snprintf(wdc, sizeof(wdc), "%s", wd);
	size_t l = strlen(wdc);
	while (l && wdc[l - 1] == '/')
		wdc[--l] = '\0';
	if (*wdc && mafsbx_plane_rel_check(wdc, err) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "work dir %s: not a plain absolute path", t->work_dir);
	int n;
	if (*wdc && *rel)
		n = snprintf(buf, size, "%s/%s", wdc, rel);
	else if (*wdc)
		n = snprintf(buf, size, "%s", wdc);
	else if (*rel)
		n = snprintf(buf, size, "%s", rel);
	else
		n = snprintf(buf, size, ".");
	if (n < 0 || (size_t)n >= size)
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "path %s: too long", rel);
	return 0;
}

static int openat2_raw(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC), .mode = (flags & O_CREAT) ? mode : 0,
				.resolve = LP_RESOLVE };
	for (int tries = 0;; tries++) {
		int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		/* EAGAIN: a rename raced the kernel's resolution; it may be retried. */
		if (fd >= 0 || errno != EAGAIN || tries == 16)
			return fd < 0 ? -errno : fd;
	}
}

static int lp_open(int dirfd, const char *path, int flags, const char *what, const char *rel,
		   struct mafsbx_error *err)
{
	int fd = openat2_raw(dirfd, path, flags, 0);
	return fd < 0 ? lp_err(err, -fd, what, rel) : fd;
}

static enum mafsbx_ptype type_of(mode_t m)
{
	if (S_ISREG(m))
		return MAFSBX_PT_FILE;
	if (S_ISDIR(m))
		return MAFSBX_PT_DIR;
	if (S_ISLNK(m))
		return MAFSBX_PT_SYMLINK;
	return MAFSBX_PT_OTHER;
}

static void to_pstat(const struct mafsbx_pin *pin, const struct stat *st, struct mafsbx_pstat *out)
{
	memset(out, 0, sizeof(*out));
	out->type = type_of(st->st_mode);
	out->mode = st->st_mode & 07777;
	out->size = out->type == MAFSBX_PT_FILE ? (uint64_t)st->st_size : 0;
	out->nlink = (uint32_t)st->st_nlink;
	out->atime = st->st_atim;
	out->mtime = st->st_mtim;
	out->ctime = st->st_ctim;
	if (mafsbx_pin_guest_uid(pin, st->st_uid, &out->uid) < 0)
		out->uid = 65534;
	if (mafsbx_pin_guest_gid(pin, st->st_gid, &out->gid) < 0)
		out->gid = 65534;
}

static int refuse_type(mode_t m, const char *what, const char *rel, struct mafsbx_error *err)
{
	if (S_ISLNK(m))
		return lp_err(err, ELOOP, what, rel);
	if (S_ISDIR(m))
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, EISDIR, "IsADirectoryError",
					     "%s %s: is a directory", what, rel);
	return mafsbx_error_set(err, MAFSBX_EK_NOT_REGULAR,
				"%s %s: not a regular file (fifos, sockets and devices are never opened)", what, rel);
}

int mafsbx_plane_local_stat(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
	       enum mafsbx_plane_base base, const char *rel, struct mafsbx_pstat *out, struct mafsbx_error *err)
{
	(void)ps;
	char path[LP_PATH_MAX];
	int r = guest_path(t, base, rel, path, sizeof(path), err);
	if (r < 0)
		return r;
	int fd = lp_open(pin->root, path, O_PATH | O_NOFOLLOW, "stat", rel, err);
	if (fd < 0)
		return fd;
	struct stat st;
	r = fstat(fd, &st) < 0 ? lp_err(err, errno, "stat", rel) : 0;
	close(fd);
	if (r == 0)
		to_pstat(pin, &st, out);
	return r;
}

/* ---- listing ------------------------------------------------------------- */

static uint64_t mount_id_of(int dirfd, const char *name, int flags)
{
	struct statx sx;
	if (statx(dirfd, name, flags, STATX_MNT_ID, &sx) < 0 || !(sx.stx_mask & STATX_MNT_ID))
		return 0;
	return sx.stx_mnt_id;
}

int mafsbx_plane_local_opendir(struct mafsbx_plane_dir *d, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		  enum mafsbx_plane_base base, const char *rel, struct mafsbx_error *err)
{
	char path[LP_PATH_MAX];
	int r = guest_path(t, base, rel, path, sizeof(path), err);
	if (r < 0)
		return r;
	/* O_DIRECTORY is checked before anything is opened: a fifo fails ENOTDIR. */
	int fd = lp_open(pin->root, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK, "list", rel, err);
	if (fd < 0)
		return fd;
	d->mnt_id = mount_id_of(fd, "", AT_EMPTY_PATH);
	DIR *dp = fdopendir(fd);
	if (!dp) {
		r = lp_err(err, errno, "list", rel);
		close(fd);
		return r;
	}
	d->dirp = dp;
	d->pin = pin;
	return 0;
}

int mafsbx_plane_local_readdir(struct mafsbx_plane_dir *d, uint64_t pos, mafsbx_plane_dir_fn fn, void *ctx)
{
	DIR *dp = d->dirp;
	if (pos == 0)
		rewinddir(dp);
	else
		seekdir(dp, (long)pos);
	struct mafsbx_pstat dot = { .type = MAFSBX_PT_DIR, .mode = 0755, .nlink = 2 };
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(dp);
		if (!de)
			return errno ? -errno : 0;
		uint64_t next = (uint64_t)telldir(dp);
		struct mafsbx_pstat st;
		const struct mafsbx_pstat *sp = &st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
			/* Never stat "..": above the container root it is a host directory. */
			sp = &dot;
		} else {
			struct statx sx;
			if (statx(dirfd(dp), de->d_name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_MNT_ID, &sx) < 0)
				continue;   /* gone since readdir */
			if (d->mnt_id && (sx.stx_mask & STATX_MNT_ID) && sx.stx_mnt_id != d->mnt_id)
				continue;   /* a mount point: another mount is not served */
			struct stat s;
			memset(&s, 0, sizeof(s));
			s.st_mode = sx.stx_mode;
			s.st_nlink = sx.stx_nlink;
			s.st_uid = sx.stx_uid;
			s.st_gid = sx.stx_gid;
			s.st_size = (off_t)sx.stx_size;
			s.st_atim = (struct timespec){ sx.stx_atime.tv_sec, sx.stx_atime.tv_nsec };
			s.st_mtim = (struct timespec){ sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec };
			s.st_ctim = (struct timespec){ sx.stx_ctime.tv_sec, sx.stx_ctime.tv_nsec };
			to_pstat(d->pin, &s, &st);
		}
		if (fn(ctx, de->d_name, sp, next))
			return 0;
	}
}

void mafsbx_plane_local_closedir(struct mafsbx_plane_dir *d)
{
	if (d->dirp)
		closedir(d->dirp);
	d->dirp = NULL;
}

/* ---- reads --------------------------------------------------------------- */

int mafsbx_plane_local_open_read(struct mafsbx_plane_file *f, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		    enum mafsbx_plane_base base, const char *rel, uint64_t max_bytes, struct mafsbx_error *err)
{
	char path[LP_PATH_MAX];
	int r = guest_path(t, base, rel, path, sizeof(path), err);
	if (r < 0)
		return r;
	__do_close int opath = lp_open(pin->root, path, O_PATH | O_NOFOLLOW, "read", rel, err);
	if (opath < 0)
		return opath;
	struct stat st, st2;
	if (fstat(opath, &st) < 0)
		return lp_err(err, errno, "read", rel);
	if (!S_ISREG(st.st_mode))
		return refuse_type(st.st_mode, "read", rel, err);
	/* Nothing is held in memory here: only a cap the user asked for applies. */
	max_bytes = f->ps->cfg.local_max_read;
	if (max_bytes && (uint64_t)st.st_size > max_bytes)
		return mafsbx_error_set(err, MAFSBX_EK_TOO_BIG, "read %s: %llu bytes, over the %llu-byte cap", rel,
					(unsigned long long)st.st_size, (unsigned long long)max_bytes);
	if (f->ps->cfg.frozen_reads) {
		/* A point-in-time copy: the engine plane's read, under one freeze. */
		__do_close int mfd = memfd_create("mafsbxfs-frozen", MFD_CLOEXEC);
		if (mfd < 0)
			return lp_err(err, errno, "read", rel);
		r = mafsbx_plane_engine_copy_frozen(f, t, base, rel, max_bytes, mfd, err);
		if (r < 0)
			return r;
		f->fd = move_fd(mfd);
		f->copy = true;
		return r;
	}
	__do_close int fd = mafsbx_reopen(opath, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return denied_err(err, -fd, pin, &st, "read", rel);
	/* Same inode, still regular (the re-open cannot be redirected, but say so). */
	if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev || !S_ISREG(st2.st_mode))
		return mafsbx_error_set(err, MAFSBX_EK_NOT_REGULAR, "read %s: changed while opening", rel);
	f->fd = move_fd(fd);
	return r;
}

/* ---- writes -------------------------------------------------------------- */

/* Split "a/b/c" into the parent's guest path and the leaf. */
static int split_parent(const struct mafsbx_plane_target *t, const char *rel, char *parent, size_t size,
			const char **leaf, struct mafsbx_error *err)
{
	const char *slash = strrchr(rel, '/');
	*leaf = slash ? slash + 1 : rel;
	char dir[LP_PATH_MAX];
	size_t dl = slash ? (size_t)(slash - rel) : 0;
	if (dl >= sizeof(dir))
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "path %s: too long", rel);
	memcpy(dir, rel, dl);
	dir[dl] = '\0';
	return guest_path(t, MAFSBX_BASE_WORK, dir, parent, size, err);
}

static int open_parent(const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t, const char *rel,
		       const char *what, const char **leaf, struct mafsbx_error *err)
{
	char parent[LP_PATH_MAX];
	int r = split_parent(t, rel, parent, sizeof(parent), leaf, err);
	if (r < 0)
		return r;
	return lp_open(pin->root, parent, O_PATH | O_DIRECTORY | O_NOFOLLOW, what, rel, err);
}

static int copy_fd(int from, int to, uint64_t len)
{
	off_t in = 0, out = 0;
	while ((uint64_t)in < len) {
		ssize_t n = copy_file_range(from, &in, to, &out, len - (uint64_t)in, 0);
		if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
			char buf[65536];
			ssize_t m = pread(from, buf, sizeof(buf), in);
			if (m < 0)
				return -errno;
			if (m == 0)
				break;
			if (pwrite(to, buf, (size_t)m, out) != m)
				return -EIO;
			in += m;
			out += m;
			continue;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
	}
	return 0;
}

/* An existing target: a regular file, not refused by O_EXCL, under the cap. */
static int write_target_check(struct mafsbx_plane_file *f, int target, struct stat *st, const char *rel,
			      struct mafsbx_error *err)
{
	if (fstat(target, st) < 0)
		return lp_err(err, errno, "write", rel);
	if ((f->flags & MAFSBX_PW_EXCL))
		return mafsbx_error_set_full(err, MAFSBX_EK_CONFLICT, EEXIST, "FileExistsError", "write %s: exists", rel);
	if (!S_ISREG(st->st_mode))
		return refuse_type(st->st_mode, "write", rel, err);
	if (f->max_bytes && !(f->flags & MAFSBX_PW_TRUNC) && (uint64_t)st->st_size > f->max_bytes)
		return mafsbx_error_set(err, MAFSBX_EK_TOO_BIG, "write %s: %llu bytes, over the %llu-byte cap", rel,
					(unsigned long long)st->st_size, (unsigned long long)f->max_bytes);
	return 0;
}

/* Acting as the guest: a new file, made in place at once (nothing to keep whole). 0 or an errno. */
static int write_create(struct mafsbx_plane_file *f, const char *leaf, mode_t mode, const char *rel)
{
	int fd = openat2_raw(f->parent, leaf, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode & 07777);
	if (fd < 0)
		return -fd;
	if (fchmod(fd, mode & 07777) < 0)
		log_debug("write %s: chmod: %s", rel, strerror(errno));
	f->fd = fd;
	f->inplace = true;
	f->created = true;
	f->dirty = true;
	return 0;
}

/*
 * Acting as the guest, over an existing file: the guest must be able to
 * write it itself; then an atomic replace (a temporary beside the target,
 * renamed at commit), or in place where the directory is not the guest's
 * to write, or where the file is not the guest's own: a temporary would be
 * the guest's (made at its authority), so the rename would hand it a file,
 * and the old content copied in, that it may only write (a root-owned 0602
 * file). In place, owner, group and mode stay what they were. 0 or an errno.
 */
static int write_replace_open(struct mafsbx_plane_file *f, int target, const struct stat *st, const char *rel)
{
	int wfd = mafsbx_reopen(target, ((f->flags & MAFSBX_PW_READ) ? O_RDWR : O_WRONLY) | O_NONBLOCK | O_NOCTTY);
	if (wfd == -EACCES && (f->flags & MAFSBX_PW_READ))
		wfd = mafsbx_reopen(target, O_WRONLY | O_NONBLOCK | O_NOCTTY);
	if (wfd < 0)
		return -wfd;
	bool guests = st->st_uid == f->cred.uid && st->st_gid == f->cred.gid;
	unsigned long long rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (unsigned long long)mafsbx_now_ms() ^ ((unsigned long long)getpid() << 32);
	snprintf(f->tmp, sizeof(f->tmp), ".mafsbxfs-%016llx", rnd);
	int e = 0, fd = guests ? openat2_raw(f->parent, f->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600) : -EPERM;
	if (fd < 0) {
		f->tmp[0] = '\0';
		if (fd != -EACCES && fd != -EPERM && fd != -EROFS && fd != -ENOSPC && fd != -EDQUOT) {
			e = -fd;
		} else {
			/* The directory is not the guest's to write, or the file not its own: in place, as the guest could. */
			f->fd = wfd;
			wfd = -1;
			f->inplace = true;
			if ((f->flags & MAFSBX_PW_TRUNC) && ftruncate(f->fd, 0) < 0)
				e = errno;
			f->dirty = (f->flags & MAFSBX_PW_TRUNC) != 0;
		}
	} else {
		f->fd = fd;
		/* the old mode, but never set-id bits: the new content was not made set-id */
		if (fchmod(fd, st->st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) < 0)
			log_debug("write %s: chmod of the temporary: %s", rel, strerror(errno));
		f->dirty = (f->flags & MAFSBX_PW_TRUNC) != 0;
	}
	if (wfd >= 0)
		close(wfd);
	return e;
}

/* Keep the content the caller did not truncate in the temporary (read as root: the copy is ours). */
static int write_keep_content(struct mafsbx_plane_file *f, int target, const struct stat *st)
{
	if (!f->tmp[0] || (f->flags & MAFSBX_PW_TRUNC) || st->st_size <= 0)
		return 0;
	int rfd = mafsbx_reopen(target, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (rfd < 0)
		return -rfd;
	int c = copy_fd(rfd, f->fd, (uint64_t)st->st_size);
	close(rfd);
	return c < 0 ? -c : 0;
}

int mafsbx_plane_local_open_write(struct mafsbx_plane_file *f, const struct mafsbx_pin *pin,
		     const struct mafsbx_plane_target *t, const char *rel, mode_t mode, struct mafsbx_error *err)
{
	const char *leaf;
	int r = mafsbx_plane_guest_cred(f->ps, pin, t->name, &f->cred, err);
	if (r < 0)
		return r;
	f->parent = open_parent(pin, t, rel, "write", &leaf, err);
	if (f->parent < 0) {
		r = f->parent;
		f->parent = -1;
		return r;
	}
	f->leaf = strdup(leaf);
	f->rel = strdup(rel);
	if (!f->leaf || !f->rel)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");

	struct stat st;
	__do_close int target = openat2_raw(f->parent, leaf, O_PATH | O_NOFOLLOW, 0);
	if (target < 0 && target != -ENOENT)
		return lp_err(err, -target, "write", rel);
	if (target >= 0 && (r = write_target_check(f, target, &st, rel, err)) < 0)
		return r;
	if (target < 0 && !(f->flags & MAFSBX_PW_CREATE))
		return lp_err(err, ENOENT, "write", rel);

	struct mafsbx_guestcred_saved saved;
	if ((r = mafsbx_guestcred_enter(&f->cred, &saved)) < 0)
		return cred_err(err, r, &f->cred, "write (acting as the guest)", rel);
	int e = target < 0 ? write_create(f, leaf, mode, rel) : write_replace_open(f, target, &st, rel);
	mafsbx_guestcred_leave(&saved);
	if (!e && target >= 0)
		e = write_keep_content(f, target, &st);
	if (e)
		return lp_err(err, e, "write", rel);
	if (target < 0)
		return 0;
	struct stat now;
	f->size = fstat(f->fd, &now) == 0 ? (uint64_t)now.st_size : 0;
	return 0;
}

int mafsbx_plane_local_commit(struct mafsbx_plane_file *f, struct mafsbx_error *err)
{
	if (!f->dirty)
		return 0;
	if (fsync(f->fd) < 0)
		return lp_err(err, errno, "write", f->rel);
	f->dirty = false;
	if (!f->tmp[0])
		return 0;
	struct mafsbx_guestcred_saved saved;
	int r = mafsbx_guestcred_enter(&f->cred, &saved);
	if (r < 0)
		return cred_err(err, r, &f->cred, "write (acting as the guest)", f->rel);
	r = renameat(f->parent, f->tmp, f->parent, f->leaf) < 0 ? errno : 0;
	mafsbx_guestcred_leave(&saved);
	if (r) {
		f->dirty = true;
		return lp_err(err, r, "write", f->rel);
	}
	f->tmp[0] = '\0';
	f->inplace = true;
	return 0;
}

void mafsbx_plane_local_close(struct mafsbx_plane_file *f)
{
	/* A new file whose writes failed, or whose writer was killed, is not
	 * left behind half-written: remove it, if it is still the one we made. */
	struct stat mine, there;
	if (f->created && (f->failed || f->abandoned) && f->parent >= 0 && f->fd >= 0 && fstat(f->fd, &mine) == 0 &&
	    fstatat(f->parent, f->leaf, &there, AT_SYMLINK_NOFOLLOW) == 0 && there.st_ino == mine.st_ino &&
	    there.st_dev == mine.st_dev) {
		struct mafsbx_guestcred_saved saved;
		if (mafsbx_guestcred_enter(&f->cred, &saved) == 0) {
			if (unlinkat(f->parent, f->leaf, 0) < 0)
				log_debug("write %s: cannot remove the failed new file: %s", f->rel, strerror(errno));
			mafsbx_guestcred_leave(&saved);
		}
	}
	/* The temporary of a failed replace goes at the guest's authority, like
	 * the write that made it: the guest may have renamed it away, and what
	 * now bears its name (another user's file, in a sticky directory) is not
	 * the guest's to remove, so not ours either. */
	if (f->tmp[0] && f->parent >= 0) {
		struct mafsbx_guestcred_saved saved;
		int r = mafsbx_guestcred_enter(&f->cred, &saved);
		if (r < 0) {
			log_warn("write %s: cannot act as the guest to remove the temporary %s: %s", f->rel, f->tmp,
				 strerror(-r));
		} else {
			r = unlinkat(f->parent, f->tmp, 0) < 0 ? errno : 0;
			mafsbx_guestcred_leave(&saved);
			if (r)
				log_warn("write %s: cannot remove the temporary %s (acting as the guest): %s", f->rel,
					 f->tmp, strerror(r));
		}
	}
	f->tmp[0] = '\0';
	if (f->parent >= 0)
		close(f->parent);
	f->parent = -1;
}

/* ---- mutations ----------------------------------------------------------- */

/* Run one mutation as the guest. */
#define AS_GUEST(ps, pin, t, what, rel, expr)                                        \
	do {                                                                         \
		struct mafsbx_guestcred c_;                                          \
		struct mafsbx_guestcred_saved s_;                                    \
		int r_ = mafsbx_plane_guest_cred((ps), (pin), (t)->name, &c_, err);         \
		if (r_ < 0)                                                          \
			goto done_;                                                  \
		if ((r_ = mafsbx_guestcred_enter(&c_, &s_)) < 0) {                   \
			r_ = cred_err(err, r_, &c_, what " (acting as the guest)", rel); \
			goto done_;                                                  \
		}                                                                    \
		r_ = (expr) < 0 ? errno : 0;                                         \
		mafsbx_guestcred_leave(&s_);                                         \
		if (r_)                                                              \
			r_ = lp_err(err, r_, what, rel);                             \
	done_:                                                                       \
		r = r_;                                                              \
	} while (0)

int mafsbx_plane_local_prepare_base(const struct mafsbx_pin *pin, const char *base, uid_t uid, gid_t gid, unsigned *made,
		       struct mafsbx_error *err)
{
	*made = 0;
	__do_free char *nb = mafsbx_gp_normalise(base, err);
	if (!nb)
		return err ? -err->err : -EINVAL;
	uid_t hu[2];
	gid_t hg[2];
	if (mafsbx_pin_host_uid(pin, 0, &hu[0]) < 0 || mafsbx_pin_host_gid(pin, 0, &hg[0]) < 0 ||
	    mafsbx_pin_host_uid(pin, uid, &hu[1]) < 0 || mafsbx_pin_host_gid(pin, gid, &hg[1]) < 0) {
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "working directory %s: its owner %u:%u (or root) is outside the container's "
					     "id maps", nb, (unsigned)uid, (unsigned)gid);
	}
	__do_close int dir = openat2_raw(pin->root, ".", O_RDONLY | O_DIRECTORY, 0);
	if (dir < 0)
		return lp_err(err, -dir, "prepare the working directory", nb);
	int r = 0;
	for (char *c = nb + 1; r == 0 && *c;) {
		char *slash = strchr(c, '/');
		if (slash)
			*slash = '\0';
		bool is_base = !slash;
		int fd = openat2_raw(dir, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		if (fd == -ENOENT) {
			/* made here, then opened beneath the same handle: a guest swapping it meanwhile is seen */
			bool mine = mkdirat(dir, c, 0700) == 0;
			if (!mine && errno != EEXIST) {
				fd = -errno;
			} else {
				/* one the guest made meanwhile is taken as it is */
				fd = openat2_raw(dir, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
				if (fd >= 0 && mine &&
				    (fchown(fd, hu[is_base], hg[is_base]) < 0 || fchmod(fd, 0755) < 0)) {
					int e = errno;
					close(fd);
					fd = -e;
				} else if (fd >= 0 && mine) {
					(*made)++;
				}
			}
		}
		if (fd < 0) {
			if (slash)
				*slash = '/';
			if (fd == -EPERM && geteuid() != 0)
				r = mafsbx_error_set_full(
					err, MAFSBX_EK_SYSTEM, EPERM, "PermissionError",
					"prepare the working directory %s: this daemon is not root (uid %u) and cannot give "
					"it to the guest's host ids %u:%u (subordinate ids of the rootless engine's user "
					"namespace: chown to another uid needs CAP_CHOWN, held only inside that namespace)",
					nb, (unsigned)geteuid(), (unsigned)hu[is_base], (unsigned)hg[is_base]);
			else
				r = lp_err(err, -fd, "prepare the working directory", nb);
			break;
		}
		close(dir);
		dir = fd;
		if (slash)
			*slash = '/';
		c = slash ? slash + 1 : c + strlen(c);
	}
	return r;
}

int mafsbx_plane_local_mkdir(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		const char *rel, mode_t mode, struct mafsbx_error *err)
{
	const char *leaf;
	int pfd = open_parent(pin, t, rel, "mkdir", &leaf, err);
	if (pfd < 0)
		return pfd;
	int r;
	AS_GUEST(ps, pin, t, "mkdir", rel, mkdirat(pfd, leaf, mode & 07777));
	if (r < 0 && err && err->err == EEXIST)
		err->kind = MAFSBX_EK_CONFLICT;
	close(pfd);
	return r;
}

int mafsbx_plane_local_remove(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		 const char *rel, bool dir, struct mafsbx_error *err)
{
	const char *leaf;
	int pfd = open_parent(pin, t, rel, dir ? "rmdir" : "unlink", &leaf, err);
	if (pfd < 0)
		return pfd;
	int r;
	AS_GUEST(ps, pin, t, "remove", rel, unlinkat(pfd, leaf, dir ? AT_REMOVEDIR : 0));
	close(pfd);
	return r;
}

int mafsbx_plane_local_rename(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		 const char *from, const char *to, unsigned flags, struct mafsbx_error *err)
{
	const char *lf, *lt;
	int ff = open_parent(pin, t, from, "rename", &lf, err);
	if (ff < 0)
		return ff;
	int tf = open_parent(pin, t, to, "rename", &lt, err);
	if (tf < 0) {
		close(ff);
		return tf;
	}
	int r;
	AS_GUEST(ps, pin, t, "rename", from, syscall(SYS_renameat2, ff, lf, tf, lt, flags));
	close(ff);
	close(tf);
	return r;
}

/* The target as an O_PATH handle, refused unless a regular file or a directory. */
static int open_target(const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t, const char *rel,
		       const char *what, bool dir_ok, struct mafsbx_error *err)
{
	char path[LP_PATH_MAX];
	int r = guest_path(t, MAFSBX_BASE_WORK, rel, path, sizeof(path), err);
	if (r < 0)
		return r;
	int fd = lp_open(pin->root, path, O_PATH | O_NOFOLLOW, what, rel, err);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		r = lp_err(err, errno, what, rel);
	} else if (!S_ISREG(st.st_mode) && !(dir_ok && S_ISDIR(st.st_mode))) {
		r = refuse_type(st.st_mode, what, rel, err);
	} else {
		return fd;
	}
	close(fd);
	return r;
}

int mafsbx_plane_local_chmod(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		const char *rel, mode_t mode, struct mafsbx_error *err)
{
	int fd = open_target(pin, t, rel, "chmod", true, err);
	if (fd < 0)
		return fd;
	int dirfd, r;
	char name[48];
	if ((r = mafsbx_proc_fd_path(fd, &dirfd, name, sizeof(name))) < 0)
		r = lp_err(err, -r, "chmod", rel);
	else
		AS_GUEST(ps, pin, t, "chmod", rel, fchmodat(dirfd, name, mode & 07777, 0));
	close(fd);
	return r;
}

int mafsbx_plane_local_utimens(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		  const char *rel, const struct timespec ts[2], struct mafsbx_error *err)
{
	int fd = open_target(pin, t, rel, "utimens", true, err);
	if (fd < 0)
		return fd;
	int dirfd, r;
	char name[48];
	if ((r = mafsbx_proc_fd_path(fd, &dirfd, name, sizeof(name))) < 0)
		r = lp_err(err, -r, "utimens", rel);
	else
		AS_GUEST(ps, pin, t, "utimens", rel, utimensat(dirfd, name, ts, 0));
	close(fd);
	return r;
}

int mafsbx_plane_local_truncate(struct mafsbx_planes *ps, const struct mafsbx_pin *pin, const struct mafsbx_plane_target *t,
		   const char *rel, uint64_t size, struct mafsbx_error *err)
{
	if (size > INT64_MAX)
		return lp_err(err, EFBIG, "truncate", rel);
	int fd = open_target(pin, t, rel, "truncate", false, err);
	if (fd < 0)
		return fd;
	int r, wfd = -1;
	AS_GUEST(ps, pin, t, "truncate", rel, (wfd = mafsbx_reopen(fd, O_WRONLY | O_NONBLOCK | O_NOCTTY)) < 0
					      ? (errno = -wfd, -1)
					      : ftruncate(wfd, (off_t)size));
	if (wfd >= 0)
		close(wfd);
	close(fd);
	return r;
}
