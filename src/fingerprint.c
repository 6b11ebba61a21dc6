/*
 * fingerprint.c: the nothing-left-behind snapshot of a sandbox (fingerprint.h):
 * the confined walk of every mount of the container's mount namespace, the
 * processes of its cgroup, the JSON form and the diff.
 *
 * Confinement: the container is pinned (pin.h: pidfd, inspect before and
 * after, cgroup check, O_PATH root of /proc/PID/root). Every mount point is
 * opened from that root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), so a guest link on the way is ELOOP, never
 * followed; inside a mount every entry is opened one component at a time
 * from its parent's handle with RESOLVE_NO_XDEV added (a mount point met
 * while walking is EXDEV and is measured as its own mount) and O_PATH |
 * O_NOFOLLOW, so a final link is opened as the link itself. Only after fstat
 * says "regular file" is the O_PATH handle re-opened for reading, through
 * /proc/thread-self/fd/N of a /proc verified to be procfs (libpathrs'
 * lesson), with O_NONBLOCK | O_NOCTTY | O_NOATIME: fifos, devices and
 * sockets are never opened, and a read leaves no atime behind.
 *
 * Processes come from the container's cgroup.procs (the cgroup path read
 * from the init's /proc/PID/cgroup); each /proc/P is read through one handle
 * and kept only when its own cgroup still names the container (a PID that
 * exited and was recycled meanwhile is someone else's).
 *
 * Why the diff ignores directory times and sizes by default: they change
 * whenever anything is created and removed inside (even by a perfect
 * reclaim), and an ext4 directory never shrinks; the set of entries below a
 * directory is measured entry by entry, so nothing left inside is missed.
 */
#include "fingerprint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "engine.h"
#include "cgroup.h"
#include "pin.h"
#include "names.h"
#include "utf8.h"

#define FP_READ_CHUNK (128u * 1024)
#define FP_MOUNTINFO_MAX (1024u * 1024)
#define FP_CMDLINE_MAX 4096u
#define FP_PROCS_TEXT_MAX (1024u * 1024)
#define FP_TIME_CHECK_EVERY 256u

void mafsbx_fp_limits_default(struct mafsbx_fp_limits *l)
{
	l->max_entries = 250000;
	l->max_hash_bytes = 1024ull * 1024 * 1024;
	l->max_ms = 30000;
	l->max_depth = 256;
}

static const struct {
	int type;
	const char *name;
} type_names[] = {
	{ MAFSBX_FP_FILE, "file" }, { MAFSBX_FP_DIR, "dir" },     { MAFSBX_FP_LINK, "link" },
	{ MAFSBX_FP_FIFO, "fifo" }, { MAFSBX_FP_SOCKET, "socket" }, { MAFSBX_FP_CHAR, "char" },
	{ MAFSBX_FP_BLOCK, "block" },
};

const char *mafsbx_fp_type_name(int type)
{
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(type_names); i++)
		if (type_names[i].type == type)
			return type_names[i].name;
	return "other";
}

int mafsbx_fp_type_from_name(const char *name)
{
	for (size_t i = 0; name && i < MAFSBX_ARRAY_SIZE(type_names); i++)
		if (!strcmp(type_names[i].name, name))
			return type_names[i].type;
	return 0;
}

/* ---- escaping ----------------------------------------------------------- */

/* Length of a valid, printable UTF-8 sequence at p (not C1: they reach terminals too), else 0. */
static size_t utf8_ok(const unsigned char *p, size_t left)
{
	uint32_t cp = 0;
	size_t n = mafsbx_utf8_decode(p, left, &cp, NULL);
	return n && !(cp >= 0x80 && cp <= 0x9f) ? n : 0;
}

char *mafsbx_fp_escape(const char *raw, size_t len)
{
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	const unsigned char *p = (const unsigned char *)raw;
	if (mafsbx_buf_reserve(&b, len + 1) < 0)
		return NULL;
	for (size_t i = 0; i < len;) {
		unsigned char c = p[i];
		int r;
		if (c == '\\') {
			r = mafsbx_buf_append(&b, "\\\\", 2);
			i++;
		} else if (c >= 0x20 && c < 0x7f) {
			r = mafsbx_buf_append(&b, &p[i], 1);
			i++;
		} else if (c >= 0x80 && utf8_ok(p + i, len - i)) {
			size_t n = utf8_ok(p + i, len - i);
			r = mafsbx_buf_append(&b, &p[i], n);
			i += n;
		} else {
			r = mafsbx_buf_printf(&b, "\\x%02x", c);
			i++;
		}
		if (r < 0) {
			mafsbx_buf_free(&b);
			return NULL;
		}
	}
	return mafsbx_buf_steal(&b, NULL);
}

/* ---- snapshot bookkeeping ---------------------------------------------- */

static void entry_clear(struct mafsbx_fp_entry *e)
{
	free(e->path);
	free(e->target);
}

static void proc_clear(struct mafsbx_fp_process *p)
{
	for (size_t i = 0; i < p->argc; i++)
		free(p->argv[i]);
	free(p->argv);
	free(p->name);
}

void mafsbx_fp_mounts_free(struct mafsbx_fp_mount *m, char **raw, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (m) {
			free(m[i].path);
			free(m[i].fstype);
		}
		if (raw)
			free(raw[i]);
	}
	free(m);
	free(raw);
}

void mafsbx_fp_free(struct mafsbx_fp *fp)
{
	if (!fp)
		return;
	for (size_t i = 0; i < fp->n_entries; i++)
		entry_clear(&fp->entries[i]);
	for (size_t i = 0; i < fp->n_procs; i++)
		proc_clear(&fp->procs[i]);
	mafsbx_fp_mounts_free(fp->mounts, NULL, fp->n_mounts);
	free(fp->entries);
	free(fp->procs);
	free(fp->name);
	free(fp);
}

/* Room for one more of `n` elements of `size` in *arr (doubling *cap, from `first`). 0 or -ENOMEM. */
static int room_for_one(void **arr, size_t *cap, size_t n, size_t size, size_t first)
{
	return mafsbx_array_grow(arr, cap, n + 1, size, first, 0);
}

int mafsbx_fp_add_entry(struct mafsbx_fp *fp, const struct mafsbx_fp_entry *e)
{
	void *arr = fp->entries;
	int r = room_for_one(&arr, &fp->cap_entries, fp->n_entries, sizeof(*fp->entries), 1024);
	fp->entries = arr;
	if (r == 0)
		fp->entries[fp->n_entries++] = *e;
	return r;
}

int mafsbx_fp_add_process(struct mafsbx_fp *fp, const struct mafsbx_fp_process *p)
{
	void *arr = fp->procs;
	int r = room_for_one(&arr, &fp->cap_procs, fp->n_procs, sizeof(*fp->procs), 16);
	fp->procs = arr;
	if (r == 0)
		fp->procs[fp->n_procs++] = *p;
	return r;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct mafsbx_fp_entry *)a)->path, ((const struct mafsbx_fp_entry *)b)->path);
}

static int cmp_proc_key(const struct mafsbx_fp_process *x, const struct mafsbx_fp_process *y)
{
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static int cmp_proc(const void *a, const void *b)
{
	return cmp_proc_key(a, b);
}

static int cmp_mount(const void *a, const void *b)
{
	return strcmp(((const struct mafsbx_fp_mount *)a)->path, ((const struct mafsbx_fp_mount *)b)->path);
}

void mafsbx_fp_sort(struct mafsbx_fp *fp)
{
	if (fp->n_entries)
		qsort(fp->entries, fp->n_entries, sizeof(*fp->entries), cmp_entry);
	if (fp->n_procs)
		qsort(fp->procs, fp->n_procs, sizeof(*fp->procs), cmp_proc);
	if (fp->n_mounts)
		qsort(fp->mounts, fp->n_mounts, sizeof(*fp->mounts), cmp_mount);
}

/* ---- mountinfo ---------------------------------------------------------- */

/* The kernel writes space, tab, newline and backslash in mount points as \ooo. */
static char *unoctal(const char *s, size_t len)
{
	char *o = malloc(len + 1);
	if (!o)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			o[k++] = (char)(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
			i += 3;
		} else {
			o[k++] = s[i];
		}
	}
	o[k] = '\0';
	return o;
}

static bool excluded_mount(const char *raw)
{
	static const char *const skip[] = { "/proc", "/sys" };
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(skip); i++) {
		size_t n = strlen(skip[i]);
		if (!strncmp(raw, skip[i], n) && (raw[n] == '\0' || raw[n] == '/'))
			return true;
	}
	return false;
}

/* Does the option list (comma-separated) contain exactly "ro"? */
static bool has_ro(const char *opts, size_t len)
{
	const char *p = opts, *end = opts + len;
	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t n = c ? (size_t)(c - p) : (size_t)(end - p);
		if (n == 2 && !strncmp(p, "ro", 2))
			return true;
		p += n + 1;
	}
	return false;
}

/* The mounts read so far, with their raw (unescaped) mount points. */
struct mount_list {
	struct mafsbx_fp_mount *m;
	char **raw;
	size_t n, cap;
};

/*
 * One mountinfo line's fields: id parent maj:min root mountpoint options
 * [optional...] - fstype source superopts. The mount point (unescaped,
 * allocated), the fstype field and the read-only flag. 0, -EINVAL, -ENOMEM.
 */
static int mountinfo_fields(const char *line, size_t ll, char **mp, const char **ft, size_t *ftl, bool *ro)
{
	const char *f[6];
	size_t fl[6];
	const char *p = line, *end = line + ll;
	for (int i = 0; i < 6; i++) {
		while (p < end && *p == ' ')
			p++;
		if (p >= end)
			return -EINVAL;
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		f[i] = p;
		fl[i] = sp ? (size_t)(sp - p) : (size_t)(end - p);
		p += fl[i];
	}
	const char *sep = NULL;
	for (const char *q = p; q + 3 <= end; q++)
		if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
			sep = q;
			break;
		}
	if (!sep || fl[4] == 0 || f[4][0] != '/')
		return -EINVAL;
	*ft = sep + 3;
	const char *ftend = memchr(*ft, ' ', (size_t)(end - *ft));
	*ftl = ftend ? (size_t)(ftend - *ft) : (size_t)(end - *ft);
	if (*ftl == 0)
		return -EINVAL;
	*ro = has_ro(f[5], fl[5]);
	*mp = unoctal(f[4], fl[4]);
	return *mp ? 0 : -ENOMEM;
}

/* The slot for mount point `mp`: the earlier mount on it, emptied (a later mount hides it), else a new one. */
static int mount_slot(struct mount_list *ml, const char *mp, size_t *at)
{
	*at = ml->n;
	for (size_t i = 0; i < ml->n; i++)
		if (!strcmp(ml->raw[i], mp))
			*at = i;
	if (*at < ml->n) {
		free(ml->m[*at].path);
		free(ml->m[*at].fstype);
		free(ml->raw[*at]);
		ml->m[*at].path = ml->m[*at].fstype = ml->raw[*at] = NULL;
		return 0;
	}
	if (ml->n == ml->cap) {
		/* two arrays of one capacity: the first grows into a copy of it, the second sets it */
		size_t mcap = ml->cap;
		if (mafsbx_array_grow(&ml->m, &mcap, ml->n + 1, sizeof(*ml->m), 16, 0) < 0 ||
		    mafsbx_array_grow(&ml->raw, &ml->cap, mcap, sizeof(*ml->raw), mcap, 0) < 0)
			return -ENOMEM;
	}
	memset(&ml->m[ml->n], 0, sizeof(ml->m[ml->n]));
	ml->raw[ml->n] = NULL;
	ml->n++;
	return 0;
}

/* One non-empty line: a mount added (or replacing the one it hides), or skipped (/proc, /sys). */
static int mountinfo_line(struct mount_list *ml, const char *line, size_t ll)
{
	char *mp = NULL;
	const char *ft = NULL;
	size_t ftl = 0, at;
	bool ro = false;
	int r = mountinfo_fields(line, ll, &mp, &ft, &ftl, &ro);
	if (r < 0)
		return r;
	if (excluded_mount(mp)) {
		free(mp);
		return 0;
	}
	if (mount_slot(ml, mp, &at) < 0) {
		free(mp);
		return -ENOMEM;
	}
	char *ftr = unoctal(ft, ftl);
	ml->m[at].path = mafsbx_fp_escape(mp, strlen(mp));
	ml->m[at].fstype = ftr ? mafsbx_fp_escape(ftr, strlen(ftr)) : NULL;
	ml->m[at].ro = ro;
	ml->raw[at] = mp;
	free(ftr);
	return ml->m[at].path && ml->m[at].fstype ? 0 : -ENOMEM;
}

/* Sort both arrays together by the escaped path. */
static void sort_mounts(struct mount_list *ml)
{
	for (size_t i = 1; i < ml->n; i++)
		for (size_t j = i; j > 0 && strcmp(ml->m[j - 1].path, ml->m[j].path) > 0; j--) {
			struct mafsbx_fp_mount t = ml->m[j];
			ml->m[j] = ml->m[j - 1];
			ml->m[j - 1] = t;
			char *tr = ml->raw[j];
			ml->raw[j] = ml->raw[j - 1];
			ml->raw[j - 1] = tr;
		}
}

int mafsbx_fp_mountinfo_parse(const char *text, struct mafsbx_fp_mount **out, char ***raw_out, size_t *n_out)
{
	struct mount_list ml = { NULL, NULL, 0, 0 };
	*out = NULL;
	if (raw_out)
		*raw_out = NULL;
	*n_out = 0;
	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');
		size_t ll = eol ? (size_t)(eol - line) : strlen(line);
		int r = ll ? mountinfo_line(&ml, line, ll) : 0;
		if (r < 0) {
			mafsbx_fp_mounts_free(ml.m, ml.raw, ml.n);
			return r;
		}
		line = eol ? eol + 1 : line + ll;
	}
	sort_mounts(&ml);
	*out = ml.m;
	*n_out = ml.n;
	if (raw_out)
		*raw_out = ml.raw;
	else
		mafsbx_fp_mounts_free(NULL, ml.raw, ml.n);
	return 0;
}

/* ---- the walk ----------------------------------------------------------- */

struct walk {
	struct mafsbx_fp *fp;
	const struct mafsbx_fp_limits *lim;
	const struct mafsbx_pin *pin;
	int proc;                 /* verified /proc */
	long long deadline;
	unsigned long ops;
	EVP_MD_CTX *md;
	unsigned char *buf;
	struct mafsbx_error *err;
	long long *hostpids;      /* host PIDs of fp->procs, in the order found */
	size_t n_hostpids, cap_hostpids;
};

static int open2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = { .flags = (uint64_t)flags | O_CLOEXEC, .resolve = resolve };
	int fd;
	do
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

#define FP_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

static int check_time(struct walk *w)
{
	if (mafsbx_now_ms() > w->deadline)
		return mafsbx_error_set(w->err, MAFSBX_EK_TIMEOUT,
					"fingerprint refused: it ran past its wall-time bound of %ld ms (--max-ms)",
					w->lim->max_ms);
	return 0;
}

static int count_entry(struct walk *w)
{
	if ((uint64_t)w->fp->n_entries + w->fp->n_procs >= w->lim->max_entries)
		return mafsbx_error_set(w->err, MAFSBX_EK_TOO_BIG,
					"fingerprint refused: more than %" PRIu64 " entries (--max-entries)",
					w->lim->max_entries);
	if (++w->ops % FP_TIME_CHECK_EVERY == 0)
		return check_time(w);
	return 0;
}

/* A guest path in a message is escaped: raw bytes would reach the user's terminal. */
static int sys_fail(struct walk *w, int e, const char *what, const char *path)
{
	char *shown = mafsbx_fp_escape(path, strlen(path));
	int r = mafsbx_error_set_full(w->err, MAFSBX_EK_SYSTEM, e, NULL, "fingerprint: cannot %s %s: %s", what,
				      shown ? shown : "(a guest path)", strerror(e));
	free(shown);
	return r;
}

static int too_big(struct walk *w, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* fmt has one %s, for the escaped path, first */
static int too_big(struct walk *w, const char *path, const char *fmt, ...)
{
	char *shown = mafsbx_fp_escape(path, strlen(path)), msg[MAFSBX_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int r = mafsbx_error_set(w->err, MAFSBX_EK_TOO_BIG, "fingerprint refused: %s %s", shown ? shown : "(a guest path)",
				 msg);
	free(shown);
	return r;
}

static char *join(const char *dir, const char *name)
{
	char *p = NULL;
	if (asprintf(&p, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", name) < 0)
		return NULL;
	return p;
}

/* Hash a regular file held by an O_PATH handle; st is its fstat. */
static int hash_file(struct walk *w, int opath, const struct stat *st, const char *path, struct mafsbx_fp_entry *e)
{
	/* An empty file needs no open: its digest is a constant, and only st_size bounds the read anyway. */
	static const char empty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	if (st->st_size == 0) {
		memcpy(e->sha256, empty, sizeof(empty));
		return 0;
	}
	char link[48];
	snprintf(link, sizeof(link), "thread-self/fd/%d", opath);
	int fd = openat(w->proc, link, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOATIME);
	if (fd < 0 && errno == EPERM)   /* O_NOATIME needs ownership or CAP_FOWNER */
		fd = openat(w->proc, link, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return sys_fail(w, errno, "open", path);
	struct stat s2;
	int r = 0;
	if (fstat(fd, &s2) < 0 || s2.st_dev != st->st_dev || s2.st_ino != st->st_ino || !S_ISREG(s2.st_mode)) {
		r = sys_fail(w, EXDEV, "re-open (not the same file)", path);
		goto out;
	}
	uint64_t want = (uint64_t)st->st_size, got = 0;
	if (w->fp->bytes_hashed + want > w->lim->max_hash_bytes) {
		r = too_big(w, path,
			    "is a file whose hashing would pass the bound of %" PRIu64 " bytes hashed (--max-hash-bytes)",
			    w->lim->max_hash_bytes);
		goto out;
	}
	EVP_DigestInit_ex(w->md, EVP_sha256(), NULL);
	while (got < want) {
		size_t n = want - got < FP_READ_CHUNK ? (size_t)(want - got) : FP_READ_CHUNK;
		ssize_t k = read(fd, w->buf, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = sys_fail(w, errno, "read", path);
			goto out;
		}
		if (k == 0) {
			e->changing = true;   /* shrank while read */
			break;
		}
		EVP_DigestUpdate(w->md, w->buf, (size_t)k);
		got += (uint64_t)k;
		if ((r = check_time(w)) < 0)
			goto out;
	}
	w->fp->bytes_hashed += got;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_DigestFinal_ex(w->md, md, &mdlen);
	for (unsigned i = 0; i < 32 && i < mdlen; i++)
		snprintf(e->sha256 + 2 * i, 3, "%02x", md[i]);
	if (fstat(fd, &s2) == 0 &&
	    (s2.st_size != st->st_size || s2.st_mtim.tv_sec != st->st_mtim.tv_sec ||
	     s2.st_mtim.tv_nsec != st->st_mtim.tv_nsec))
		e->changing = true;
out:
	close(fd);
	return r;
}

static int walk_dir(struct walk *w, int dirfd, const char *path, unsigned depth);

/* Measure the entry held by `fd` (O_PATH, not followed) as `path`; recurse into a directory. */
static int measure(struct walk *w, int fd, const char *path, unsigned depth)
{
	struct stat st;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return sys_fail(w, errno, "stat", path);
	int r = count_entry(w);
	if (r < 0)
		return r;
	struct mafsbx_fp_entry e;
	memset(&e, 0, sizeof(e));
	switch (st.st_mode & S_IFMT) {
	case S_IFREG: e.type = MAFSBX_FP_FILE; break;
	case S_IFDIR: e.type = MAFSBX_FP_DIR; break;
	case S_IFLNK: e.type = MAFSBX_FP_LINK; break;
	case S_IFIFO: e.type = MAFSBX_FP_FIFO; break;
	case S_IFSOCK: e.type = MAFSBX_FP_SOCKET; break;
	case S_IFCHR: e.type = MAFSBX_FP_CHAR; break;
	case S_IFBLK: e.type = MAFSBX_FP_BLOCK; break;
	default: e.type = '?'; break;
	}
	e.mode = st.st_mode & 07777;
	e.uid = st.st_uid;
	e.gid = st.st_gid;
	e.size = (uint64_t)st.st_size;
	e.mtime_s = st.st_mtim.tv_sec;
	e.mtime_ns = (uint32_t)st.st_mtim.tv_nsec;
	e.ctime_s = st.st_ctim.tv_sec;
	e.ctime_ns = (uint32_t)st.st_ctim.tv_nsec;
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		e.rdev_major = major(st.st_rdev);
		e.rdev_minor = minor(st.st_rdev);
	}
	if (!(e.path = mafsbx_fp_escape(path, strlen(path))))
		return mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
	if (S_ISLNK(st.st_mode)) {
		char t[PATH_MAX + 1];
		ssize_t n = readlinkat(fd, "", t, sizeof(t) - 1);
		if (n < 0) {
			r = sys_fail(w, errno, "read the link", path);
			goto fail;
		}
		if (!(e.target = mafsbx_fp_escape(t, (size_t)n))) {
			r = mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
			goto fail;
		}
	} else if (S_ISREG(st.st_mode)) {
		if ((r = hash_file(w, fd, &st, path, &e)) < 0)
			goto fail;
	}
	if (mafsbx_fp_add_entry(w->fp, &e) < 0) {
		r = mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		if (depth >= w->lim->max_depth)
			return too_big(w, path, "is nested deeper than %u directories (--max-depth)", w->lim->max_depth);
		return walk_dir(w, fd, path, depth + 1);
	}
	return 0;
fail:
	entry_clear(&e);
	return r;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_dir(struct walk *w, int dirfd, const char *path, unsigned depth)
{
	int dfd = open2(dirfd, ".", O_RDONLY | O_DIRECTORY, FP_RESOLVE | RESOLVE_NO_XDEV);
	if (dfd < 0)
		return sys_fail(w, -dfd, "open the directory", path);
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return sys_fail(w, e, "list", path);
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	/* The names are read first and the stream closed, so one handle per level stays open. */
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno)
				r = sys_fail(w, errno, "list", path);
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* a directory of a million names is refused here, before its entries are measured */
		if ((uint64_t)w->fp->n_entries + w->fp->n_procs + n >= w->lim->max_entries) {
			r = too_big(w, path,
				    "lists more than %zu names, which passes the bound of %" PRIu64
				    " entries (--max-entries)",
				    n, w->lim->max_entries);
			break;
		}
		if (mafsbx_array_grow(&names, &cap, n + 1, sizeof(*names), 32, 0) < 0) {
			r = mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
			break;
		}
		if (!(names[n] = strdup(de->d_name))) {
			r = mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
			break;
		}
		n++;
		if (n % FP_TIME_CHECK_EVERY == 0 && (r = check_time(w)) < 0)
			break;
	}
	closedir(d);
	if (r == 0 && n)
		qsort(names, n, sizeof(*names), cmp_name);
	for (size_t i = 0; r == 0 && i < n; i++) {
		char *child = join(path, names[i]);
		if (!child) {
			r = mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
			break;
		}
		int fd = open2(dirfd, names[i], O_PATH | O_NOFOLLOW, FP_RESOLVE | RESOLVE_NO_XDEV);
		if (fd == -EXDEV || fd == -ENOENT) {
			/* EXDEV: a mount point, measured as its own mount (or /proc, /sys: not measured);
			 * ENOENT: removed since the listing. */
			free(child);
			continue;
		}
		if (fd < 0) {
			r = sys_fail(w, -fd, "open", child);
			free(child);
			break;
		}
		r = measure(w, fd, child, depth);
		close(fd);
		free(child);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

/* ---- reading /proc ------------------------------------------------------ */

/* Read at most max bytes of dirfd/name into a malloc'd NUL-terminated buffer. */
static int read_at(int dirfd, const char *name, size_t max, char **out, size_t *len, bool *truncated)
{
	*out = NULL;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return -errno;
	char *b = malloc(max + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	size_t got = 0;
	for (;;) {
		if (got == max) {
			char c;
			ssize_t k = read(fd, &c, 1);
			if (truncated)
				*truncated = k > 0;
			break;
		}
		ssize_t k = read(fd, b + got, max - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = errno;
			free(b);
			close(fd);
			return -e;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	b[got] = '\0';
	*out = b;
	if (len)
		*len = got;
	return 0;
}

static int open_proc(int *out)
{
	int fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC) {
		close(fd);
		return -EXDEV;
	}
	*out = fd;
	return 0;
}

static bool seen_pid(const struct walk *w, long long pid)
{
	for (size_t i = 0; i < w->n_hostpids; i++)
		if (w->hostpids[i] == pid)
			return true;
	return false;
}

/* Field 22 of /proc/P/stat (the start time), counted after the ")" that ends the command name. */
static bool stat_start(const char *stat, unsigned long long *start)
{
	const char *rp = strrchr(stat, ')');
	if (!rp)
		return false;
	const char *q = rp + 1;
	for (int field = 3; field <= 22 && q; field++) {
		while (*q == ' ')
			q++;
		if (field == 22) {
			*start = strtoull(q, NULL, 10);
			break;
		}
		q = strchr(q, ' ');
	}
	return true;
}

char *mafsbx_fp_stat_name(const char *stat)
{
	const char *lp = strchr(stat, '('), *rp = strrchr(stat, ')');
	if (!lp || !rp || rp < lp)
		return NULL;
	return mafsbx_fp_escape(lp + 1, (size_t)(rp - lp - 1));
}

/* The innermost PID of the NSpid: line of /proc/P/status (the PID the sandbox sees), -1 when none. */
static long long nspid_last(const char *status)
{
	const char *ns = strstr(status, "\nNSpid:");
	if (!ns)
		return -1;
	ns += 7;
	const char *nl = strchr(ns, '\n');
	long long last = -1;
	for (const char *s = ns; *s && (!nl || s < nl);) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s < '0' || *s > '9')
			break;
		char *end;
		last = strtoll(s, &end, 10);
		s = end;
	}
	return last;
}

/* The command line's words (separated by NUL; a final NUL ends the last word), escaped, into p->argv. */
static int split_cmdline(struct mafsbx_fp_process *p, const char *cmd, size_t cmdlen)
{
	size_t start = 0;
	for (size_t i = 0; i <= cmdlen; i++) {
		if (i < cmdlen && cmd[i] != '\0')
			continue;
		if (i == cmdlen && i == start)
			break;
		char **nv = realloc(p->argv, (p->argc + 1) * sizeof(*p->argv));
		if (!nv)
			return -ENOMEM;
		p->argv = nv;
		if (!(p->argv[p->argc] = mafsbx_fp_escape(cmd + start, i - start)))
			return -ENOMEM;
		p->argc++;
		start = i + 1;
	}
	return 0;
}

/* Add `p` (moved: cleared on success) to the snapshot, and its host PID to those seen. 0 or -ENOMEM. */
static int keep_process(struct walk *w, struct mafsbx_fp_process *p, long long hostpid)
{
	void *arr = w->hostpids;
	int r = room_for_one(&arr, &w->cap_hostpids, w->n_hostpids, sizeof(*w->hostpids), 16);
	w->hostpids = arr;
	if (r < 0 || mafsbx_fp_add_process(w->fp, p) < 0)
		return -ENOMEM;
	w->hostpids[w->n_hostpids++] = hostpid;
	memset(p, 0, sizeof(*p));
	return 0;
}

/*
 * One process; 0 when kept, 1 when it is gone or not the container's.
 * parent < 0: a member of the cgroup, kept only when its own cgroup, read
 * last, still names the container (a recycled PID is someone else's).
 * parent > 0: a child found in /proc/parent/task/T/children, kept only when
 * it is a zombie whose PPid is still that parent (a zombie's cgroup reads "/").
 */
static int read_process(struct walk *w, long long hostpid, long long parent)
{
	char name[32];
	snprintf(name, sizeof(name), "%lld", hostpid);
	int pd = openat(w->proc, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pd < 0)
		return 1;
	char *stat = NULL, *status = NULL, *cmd = NULL, *cg = NULL;
	size_t cmdlen = 0;
	bool trunc = false;
	struct mafsbx_fp_process p;
	memset(&p, 0, sizeof(p));
	int r = 1;
	if (read_at(pd, "stat", 4096, &stat, NULL, NULL) < 0 || read_at(pd, "status", 16384, &status, NULL, NULL) < 0 ||
	    read_at(pd, "cmdline", FP_CMDLINE_MAX, &cmd, &cmdlen, &trunc) < 0 ||
	    read_at(pd, "cgroup", 16384, &cg, NULL, NULL) < 0)
		goto out;
	if (parent < 0 && !mafsbx_cgroup_names_container(cg, w->pin->id))
		goto out;
	if (parent > 0) {
		const char *st = strstr(status, "\nState:\t"), *pp = strstr(status, "\nPPid:\t");
		if (!st || st[8] != 'Z' || !pp || strtoll(pp + 7, NULL, 10) != parent)
			goto out;
		p.zombie = true;
	}
	if (!stat_start(stat, &p.start) || (p.pid = nspid_last(status)) < 0)
		goto out;
	p.truncated = trunc;
	/* the name is kept for every process, not only zombies: one that exits between two
	 * snapshots still reads as the same process in the diff */
	p.name = mafsbx_fp_stat_name(stat);
	if (!p.name || split_cmdline(&p, cmd, cmdlen) < 0 || keep_process(w, &p, hostpid) < 0)
		r = -ENOMEM;
	else
		r = 0;
out:
	proc_clear(&p);
	free(stat);
	free(status);
	free(cmd);
	free(cg);
	close(pd);
	return r;
}

/* Zombie children of one member, from /proc/P/task/T/children of each of its threads. */
static int read_zombies(struct walk *w, long long parent)
{
	char path[64];
	snprintf(path, sizeof(path), "%lld/task", parent);
	int td = openat(w->proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (td < 0)
		return 0;   /* gone */
	DIR *d = fdopendir(td);
	if (!d) {
		close(td);
		return mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char rel[300], *text = NULL;
		snprintf(rel, sizeof(rel), "%s/children", de->d_name);
		if (read_at(dirfd(d), rel, FP_PROCS_TEXT_MAX, &text, NULL, NULL) < 0)
			continue;
		for (char *s = text; r == 0 && *s;) {
			char *end;
			long long pid = strtoll(s, &end, 10);
			if (end == s)
				break;
			s = end;
			while (*s == ' ' || *s == '\n')
				s++;
			if (seen_pid(w, pid))
				continue;
			if ((r = count_entry(w)) < 0)
				break;
			if (read_process(w, pid, parent) < 0)
				r = mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
		}
		free(text);
	}
	closedir(d);
	return r;
}

/* The cgroup.procs of the init's cgroup: v1 "pids" controller, else the v2 unified path. */
static int read_processes(struct walk *w, int piddir)
{
	char *cg = NULL;
	int r = read_at(piddir, "cgroup", 16384, &cg, NULL, NULL);
	if (r < 0)
		return sys_fail(w, -r, "read the cgroup of", "the sandbox's init");
	bool v1_pids = false;
	char *rel = NULL;
	r = mafsbx_cgroup_procs_path(cg, &v1_pids, &rel);
	free(cg);
	if (r == -ENOMEM)
		return mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
	if (r < 0)
		return mafsbx_error_set_full(w->err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "fingerprint: the sandbox's cgroup cannot be found (%s)",
					     r == -ENOENT ? "no pids or unified hierarchy in its /proc/PID/cgroup"
							  : "its /proc/PID/cgroup is malformed");
	const char *base = v1_pids ? "/sys/fs/cgroup/pids" : "/sys/fs/cgroup";
	char *path = NULL;
	if (asprintf(&path, "%s%s/cgroup.procs", base, strcmp(rel, "/") ? rel : "") < 0) {
		free(rel);
		return mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
	}
	free(rel);
	/* the controller's mount must be a cgroup filesystem, not whatever sits at that path */
	int bfd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct statfs sf;
	bool is_cg = bfd >= 0 && fstatfs(bfd, &sf) == 0 &&
		     (sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC);
	if (bfd >= 0)
		close(bfd);
	if (!is_cg) {
		r = mafsbx_error_set_full(w->err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					  "fingerprint: %s is not a cgroup filesystem", base);
		free(path);
		return r;
	}
	char *text = NULL;
	bool trunc = false;
	r = read_at(AT_FDCWD, path, FP_PROCS_TEXT_MAX, &text, NULL, &trunc);
	if (r < 0) {
		r = sys_fail(w, -r, "read", path);
		free(path);
		return r;
	}
	free(path);
	if (trunc) {
		free(text);
		return mafsbx_error_set(w->err, MAFSBX_EK_TOO_BIG, "fingerprint refused: the sandbox's process list is "
					"over %u bytes", FP_PROCS_TEXT_MAX);
	}
	r = 0;
	for (char *s = text; *s;) {
		char *end;
		long long pid = strtoll(s, &end, 10);
		if (end == s)
			break;
		s = end;
		while (*s == '\n')
			s++;
		if ((r = count_entry(w)) < 0)
			break;
		if (read_process(w, pid, -1) < 0) {
			r = mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
			break;
		}
	}
	free(text);
	/* zombies: children of the members (the list grows as they are found; a zombie has none) */
	for (size_t i = 0; r == 0 && i < w->n_hostpids; i++)
		r = read_zombies(w, w->hostpids[i]);
	return r;
}

/* ---- taking a snapshot -------------------------------------------------- */

/*
 * Upstream's refusals, from the engine's record, before anything is pinned
 * (so a privileged container is refused even when it is not running):
 * privileged, a shared PID namespace, writable bind mounts and volumes.
 */
static int check_declared(struct mafsbx_engine *e, const char *container, char id[65], char **name_out,
			  struct mafsbx_error *err)
{
	json_t *insp = NULL;
	int r = mafsbx_container_inspect(e, container, &insp, err);
	if (r < 0)
		return r;
	const char *name = json_string_value(json_object_get(insp, "Name"));
	const char *jid = json_string_value(json_object_get(insp, "Id"));
	json_t *hc = json_object_get(insp, "HostConfig");
	const char *pidmode = json_string_value(json_object_get(hc, "PidMode"));
	snprintf(id, 65, "%s", jid ? jid : "");
	*name_out = strdup(name ? (name[0] == '/' ? name + 1 : name) : container);
	r = 0;
	if (json_is_true(json_object_get(hc, "Privileged")))
		r = mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					  "fingerprint refused: sandbox %s is privileged (it can reach the host's "
					  "devices and mounts, which no snapshot of the sandbox covers)",
					  container);
	else if (mafsbx_pidmode_shared(pidmode))
		r = mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					  "fingerprint refused: sandbox %s shares a PID namespace (HostConfig.PidMode "
					  "is set), so its processes cannot be told from others'",
					  container);
	json_t *mounts = json_object_get(insp, "Mounts"), *m;
	size_t i;
	json_array_foreach(mounts, i, m) {
		const char *type = json_string_value(json_object_get(m, "Type"));
		const char *dest = json_string_value(json_object_get(m, "Destination"));
		if (r < 0)
			break;
		if (!json_is_true(json_object_get(m, "RW")))
			continue;
		if (type && strcmp(type, "bind") && strcmp(type, "volume"))
			continue;   /* tmpfs and the like are the container's own */
		char *shown = mafsbx_fp_escape(dest ? dest : "?", dest ? strlen(dest) : 1);
		r = mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					  "fingerprint refused: sandbox %s declares a writable %s mount at %s; what it "
					  "holds is shared outside the sandbox, so no snapshot can show the sandbox "
					  "left nothing there (declare it read-only)",
					  container, type ? type : "bind", shown ? shown : "?");
		free(shown);
	}
	/* HostConfig.Binds without a read-only flag ("src:dst" or "src:dst:rw,...") */
	json_t *binds = json_object_get(hc, "Binds"), *bnd;
	json_array_foreach(binds, i, bnd) {
		const char *b = json_string_value(bnd);
		if (r < 0 || !b)
			break;
		const char *c1 = strchr(b, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		bool ro = false;
		if (c2)
			for (const char *s = c2 + 1; *s;) {
				size_t n = strcspn(s, ",");
				if (n == 2 && !strncmp(s, "ro", 2))
					ro = true;
				s += n + (s[n] ? 1 : 0);
			}
		if (!ro)
			r = mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
						  "fingerprint refused: sandbox %s declares a writable bind mount in "
						  "HostConfig.Binds; declare it read-only",
						  container);
	}
	json_decref(insp);
	if (r == 0 && (!*name_out || !mafsbx_is_engine_id(id)))
		r = *name_out ? mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "inspect of %s: no Id", container)
			      : mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return r;
}

static int stopped_while_measured(struct mafsbx_error *err, const char *container)
{
	return mafsbx_error_set(err, MAFSBX_EK_NOT_RUNNING, "fingerprint: sandbox %s stopped while measured", container);
}

/* Check the declared sandbox, pin it, and check the pin is the same container; fills fp's id and times. */
static int pin_checked(struct mafsbx_engine *e, const char *container, struct mafsbx_fp *fp, struct mafsbx_pin **pin,
		       struct mafsbx_error *err)
{
	char declared_id[65];
	int r;
	if ((r = check_declared(e, container, declared_id, &fp->name, err)) < 0)
		return r;
	if ((r = mafsbx_pin_open(e, container, pin, err)) < 0)
		return r;
	/* the pin's own inspects must describe the container that was checked */
	if (strcmp((*pin)->id, declared_id) || (*pin)->privileged || (*pin)->host_pid)
		return mafsbx_error_set(err, MAFSBX_EK_NOT_RUNNING, "fingerprint: sandbox %s was replaced while measured",
					container);
	snprintf(fp->id, sizeof(fp->id), "%s", (*pin)->id);
	snprintf(fp->started_at, sizeof(fp->started_at), "%s", (*pin)->started_at);
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(fp->taken_at, sizeof(fp->taken_at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return 0;
}

/* Open a trusted /proc (w->proc) and the pinned process's directory there; read and parse its mount table. */
static int read_mounts(struct walk *w, const char *container, int *piddir, char ***raw)
{
	struct mafsbx_fp *fp = w->fp;
	struct mafsbx_error *err = w->err;
	char *mi = NULL;
	int r = open_proc(&w->proc);
	if (r < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "fingerprint: /proc cannot be trusted (%s)", strerror(-r));
	char pidname[32];
	snprintf(pidname, sizeof(pidname), "%d", w->pin->pid);
	*piddir = openat(w->proc, pidname, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*piddir < 0 || read_at(*piddir, "mountinfo", FP_MOUNTINFO_MAX, &mi, NULL, NULL) < 0 ||
	    !mafsbx_pin_alive(w->pin)) {
		free(mi);
		return stopped_while_measured(err, container);
	}
	r = mafsbx_fp_mountinfo_parse(mi, &fp->mounts, raw, &fp->n_mounts);
	free(mi);
	if (r < 0)
		return mafsbx_error_set(err, r == -ENOMEM ? MAFSBX_EK_NOMEM : MAFSBX_EK_PROTOCOL,
					"fingerprint: cannot parse the mount table of sandbox %s", container);
	return 0;
}

/* Walk every mount from its mount point, reached from the container's root. */
static int measure_mounts(struct walk *w, char **raw)
{
	struct mafsbx_fp *fp = w->fp;
	for (size_t i = 0; i < fp->n_mounts; i++) {
		const char *mp = raw[i];
		const char *rel = mp[1] ? mp + 1 : ".";
		/* from the container's root, across mounts, never through a link */
		int fd = open2(w->pin->root, rel, O_PATH | O_NOFOLLOW, FP_RESOLVE);
		if (fd < 0)
			return mafsbx_error_set_full(w->err, MAFSBX_EK_SYSTEM, -fd, NULL,
						     "fingerprint: cannot reach the mount point %s without following a "
						     "link: %s",
						     fp->mounts[i].path, strerror(-fd));
		int r = measure(w, fd, mp, 0);
		close(fd);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Sorted entries; two mounts can show one entry (a mount point and its mount's root): keep the first. */
static void sort_unique_entries(struct mafsbx_fp *fp)
{
	mafsbx_fp_sort(fp);
	size_t k = 0;
	for (size_t i = 0; i < fp->n_entries; i++) {
		if (k && !strcmp(fp->entries[k - 1].path, fp->entries[i].path)) {
			entry_clear(&fp->entries[i]);
			continue;
		}
		fp->entries[k++] = fp->entries[i];
	}
	fp->n_entries = k;
}

int mafsbx_fingerprint_take(struct mafsbx_engine *e, const char *container, const struct mafsbx_fp_limits *lim,
			    struct mafsbx_fp **out, struct mafsbx_error *err)
{
	*out = NULL;
	struct mafsbx_fp_limits dl;
	if (!lim) {
		mafsbx_fp_limits_default(&dl);
		lim = &dl;
	}
	long long t0 = mafsbx_now_ms();
	struct mafsbx_pin *pin = NULL;
	struct mafsbx_fp *fp = calloc(1, sizeof(*fp));
	struct walk w = { .fp = fp, .lim = lim, .proc = -1, .deadline = t0 + lim->max_ms, .err = err };
	int piddir = -1, r;
	char **raw = NULL;
	if (!fp)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	fp->limits = *lim;
	if ((r = pin_checked(e, container, fp, &pin, err)) < 0)
		goto out;
	w.pin = pin;
	if ((r = read_mounts(&w, container, &piddir, &raw)) < 0)
		goto out;
	if (!(w.md = EVP_MD_CTX_new()) || !(w.buf = malloc(FP_READ_CHUNK))) {
		r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		goto out;
	}
	if ((r = measure_mounts(&w, raw)) < 0 || (r = read_processes(&w, piddir)) < 0)
		goto out;
	if (!mafsbx_pin_alive(pin)) {
		r = stopped_while_measured(err, container);
		goto out;
	}
	sort_unique_entries(fp);
	fp->duration_ms = mafsbx_now_ms() - t0;
	r = 0;
out:
	if (r < 0 && err && err->kind == MAFSBX_EK_NONE)
		mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "fingerprint failed");
	if (piddir >= 0)
		close(piddir);
	if (w.proc >= 0)
		close(w.proc);
	EVP_MD_CTX_free(w.md);
	free(w.buf);
	free(w.hostpids);
	if (raw)
		mafsbx_fp_mounts_free(NULL, raw, fp->n_mounts);
	mafsbx_pin_free(pin);
	if (r < 0)
		mafsbx_fp_free(fp);
	else
		*out = fp;
	return r;
}

/* ---- JSON --------------------------------------------------------------- */

static json_t *time_json(int64_t s, uint32_t ns)
{
	char b[48];
	snprintf(b, sizeof(b), "%" PRId64 ".%09" PRIu32, s, ns);
	return json_string(b);
}

json_t *mafsbx_fp_to_json(const struct mafsbx_fp *fp)
{
	json_t *mounts = json_array(), *entries = json_array(), *procs = json_array();
	json_t *o = json_object();
	if (!o || !mounts || !entries || !procs)
		goto nomem;
	for (size_t i = 0; i < fp->n_mounts; i++)
		json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "path", fp->mounts[i].path, "type",
							fp->mounts[i].fstype, "ro", fp->mounts[i].ro));
	for (size_t i = 0; i < fp->n_entries; i++) {
		const struct mafsbx_fp_entry *e = &fp->entries[i];
		char mode[8];
		snprintf(mode, sizeof(mode), "%04o", e->mode);
		json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:o}", "path", e->path, "type",
				      mafsbx_fp_type_name(e->type), "mode", mode, "uid", (json_int_t)e->uid, "gid",
				      (json_int_t)e->gid, "size", (json_int_t)e->size, "mtime",
				      time_json(e->mtime_s, e->mtime_ns), "ctime", time_json(e->ctime_s, e->ctime_ns));
		if (!j)
			goto nomem;
		if (e->target)
			json_object_set_new(j, "target", json_string(e->target));
		if (e->sha256[0])
			json_object_set_new(j, "sha256", json_string(e->sha256));
		if (e->changing)
			json_object_set_new(j, "changing", json_true());
		if (e->type == MAFSBX_FP_CHAR || e->type == MAFSBX_FP_BLOCK) {
			char dev[32];
			snprintf(dev, sizeof(dev), "%" PRIu32 ":%" PRIu32, e->rdev_major, e->rdev_minor);
			json_object_set_new(j, "rdev", json_string(dev));
		}
		json_array_append_new(entries, j);
	}
	for (size_t i = 0; i < fp->n_procs; i++) {
		const struct mafsbx_fp_process *p = &fp->procs[i];
		json_t *argv = json_array();
		for (size_t k = 0; argv && k < p->argc; k++)
			json_array_append_new(argv, json_string(p->argv[k]));
		json_t *j = json_pack("{s:I, s:I, s:o}", "pid", (json_int_t)p->pid, "start", (json_int_t)p->start,
				      "cmdline", argv);
		if (!j)
			goto nomem;
		if (p->truncated)
			json_object_set_new(j, "truncated", json_true());
		if (p->zombie)
			json_object_set_new(j, "zombie", json_true());
		if (p->name)
			json_object_set_new(j, "name", json_string(p->name));
		json_array_append_new(procs, j);
	}
	json_object_set_new(o, "format", json_string(MAFSBX_FP_FORMAT));
	json_object_set_new(o, "container", json_pack("{s:s, s:s, s:s}", "id", fp->id, "name", fp->name ? fp->name : "",
						     "started_at", fp->started_at));
	json_object_set_new(o, "taken_at", json_string(fp->taken_at));
	json_object_set_new(o, "limits", json_pack("{s:I, s:I, s:I, s:I}", "max_entries",
						  (json_int_t)fp->limits.max_entries, "max_hash_bytes",
						  (json_int_t)fp->limits.max_hash_bytes, "max_ms",
						  (json_int_t)fp->limits.max_ms, "max_depth",
						  (json_int_t)fp->limits.max_depth));
	json_object_set_new(o, "stats", json_pack("{s:I, s:I, s:I, s:I}", "entries", (json_int_t)fp->n_entries,
						 "processes", (json_int_t)fp->n_procs, "bytes_hashed",
						 (json_int_t)fp->bytes_hashed, "duration_ms",
						 (json_int_t)fp->duration_ms));
	json_object_set_new(o, "mounts", mounts);
	json_object_set_new(o, "entries", entries);
	json_object_set_new(o, "processes", procs);
	return o;
nomem:
	json_decref(mounts);
	json_decref(entries);
	json_decref(procs);
	json_decref(o);
	return NULL;
}

static int bad_json(struct mafsbx_error *err, const char *what, size_t i)
{
	return mafsbx_error_set(err, MAFSBX_EK_INVALID, "not a %s snapshot: %s (item %zu)", MAFSBX_FP_FORMAT, what, i);
}

static bool parse_time(json_t *v, int64_t *s, uint32_t *ns)
{
	const char *t = json_string_value(v);
	if (!t)
		return false;
	char *end;
	errno = 0;
	long long a = strtoll(t, &end, 10);
	if (errno || *end != '.' || strlen(end + 1) != 9)
		return false;
	char *e2;
	unsigned long b = strtoul(end + 1, &e2, 10);
	if (*e2 || b > 999999999ul)
		return false;
	*s = a;
	*ns = (uint32_t)b;
	return true;
}

static char *dup_str(json_t *v)
{
	const char *s = json_string_value(v);
	return s ? strdup(s) : NULL;
}

static int mounts_from_json(struct mafsbx_fp *fp, json_t *mounts, struct mafsbx_error *err)
{
	size_t i;
	json_t *v;
	if (json_array_size(mounts) && !(fp->mounts = calloc(json_array_size(mounts), sizeof(*fp->mounts))))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	json_array_foreach(mounts, i, v) {
		struct mafsbx_fp_mount *m = &fp->mounts[fp->n_mounts++];
		m->path = dup_str(json_object_get(v, "path"));
		m->fstype = dup_str(json_object_get(v, "type"));
		m->ro = json_is_true(json_object_get(v, "ro"));
		if (!m->path || !m->fstype)
			return bad_json(err, "a mount lacks path or type", i);
	}
	return 0;
}

/* Entry `i` of "entries", checked whole, added to fp. */
static int entry_from_json(struct mafsbx_fp *fp, json_t *v, size_t i, struct mafsbx_error *err)
{
	struct mafsbx_fp_entry e;
	memset(&e, 0, sizeof(e));
	const char *mode = json_string_value(json_object_get(v, "mode"));
	const char *sha = json_string_value(json_object_get(v, "sha256"));
	const char *rdev = json_string_value(json_object_get(v, "rdev"));
	e.type = mafsbx_fp_type_from_name(json_string_value(json_object_get(v, "type")));
	e.path = dup_str(json_object_get(v, "path"));
	e.target = dup_str(json_object_get(v, "target"));
	char *mend = NULL;
	unsigned long mv = mode ? strtoul(mode, &mend, 8) : 0;
	bool ok = e.path && e.type && mode && *mend == '\0' && mv <= 07777 &&
		  json_is_integer(json_object_get(v, "uid")) && json_is_integer(json_object_get(v, "gid")) &&
		  json_is_integer(json_object_get(v, "size")) &&
		  parse_time(json_object_get(v, "mtime"), &e.mtime_s, &e.mtime_ns) &&
		  parse_time(json_object_get(v, "ctime"), &e.ctime_s, &e.ctime_ns) && (!sha || strlen(sha) == 64) &&
		  (e.type != MAFSBX_FP_LINK || e.target);
	if (rdev && sscanf(rdev, "%" SCNu32 ":%" SCNu32, &e.rdev_major, &e.rdev_minor) != 2)
		ok = false;
	if (!ok) {
		entry_clear(&e);
		return bad_json(err, "an entry is incomplete", i);
	}
	e.mode = (uint32_t)mv;
	e.uid = (uint32_t)json_integer_value(json_object_get(v, "uid"));
	e.gid = (uint32_t)json_integer_value(json_object_get(v, "gid"));
	e.size = (uint64_t)json_integer_value(json_object_get(v, "size"));
	if (sha)
		memcpy(e.sha256, sha, 65);
	e.changing = json_is_true(json_object_get(v, "changing"));
	if (mafsbx_fp_add_entry(fp, &e) < 0) {
		entry_clear(&e);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	return 0;
}

/* Process `i` of "processes", checked whole, added to fp. */
static int process_from_json(struct mafsbx_fp *fp, json_t *v, size_t i, struct mafsbx_error *err)
{
	struct mafsbx_fp_process p;
	memset(&p, 0, sizeof(p));
	json_t *argv = json_object_get(v, "cmdline"), *a;
	if (!json_is_integer(json_object_get(v, "pid")) || !json_is_integer(json_object_get(v, "start")) ||
	    !json_is_array(argv))
		return bad_json(err, "a process lacks pid, start or cmdline", i);
	p.pid = json_integer_value(json_object_get(v, "pid"));
	p.start = (unsigned long long)json_integer_value(json_object_get(v, "start"));
	p.truncated = json_is_true(json_object_get(v, "truncated"));
	p.zombie = json_is_true(json_object_get(v, "zombie"));
	json_t *name = json_object_get(v, "name");
	if (name && !json_is_string(name))
		return bad_json(err, "a process name is not a string", i);
	/* optional: snapshots written before the name was kept have none */
	if (name && !(p.name = dup_str(name)))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (json_array_size(argv) && !(p.argv = calloc(json_array_size(argv), sizeof(*p.argv)))) {
		proc_clear(&p);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	size_t k;
	bool ok = true;
	json_array_foreach(argv, k, a) {
		if (!(p.argv[p.argc] = dup_str(a))) {
			ok = false;
			break;
		}
		p.argc++;
	}
	if (!ok || mafsbx_fp_add_process(fp, &p) < 0) {
		proc_clear(&p);
		return ok ? mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory")
			  : bad_json(err, "a command-line word is not a string", i);
	}
	return 0;
}

int mafsbx_fp_from_json(const json_t *j, struct mafsbx_fp **out, struct mafsbx_error *err)
{
	*out = NULL;
	const char *fmt = json_string_value(json_object_get(j, "format"));
	if (!fmt || strcmp(fmt, MAFSBX_FP_FORMAT))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "not a %s snapshot (its \"format\" is %s)",
					MAFSBX_FP_FORMAT, fmt ? "another" : "missing");
	json_t *mounts = json_object_get(j, "mounts"), *entries = json_object_get(j, "entries"),
	       *procs = json_object_get(j, "processes");
	if (!json_is_array(mounts) || !json_is_array(entries) || !json_is_array(procs))
		return bad_json(err, "mounts, entries or processes is not an array", 0);
	struct mafsbx_fp *fp = calloc(1, sizeof(*fp));
	if (!fp)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	json_t *c = json_object_get(j, "container");
	snprintf(fp->id, sizeof(fp->id), "%s", json_string_value(json_object_get(c, "id")) ?: "");
	snprintf(fp->started_at, sizeof(fp->started_at), "%s",
		 json_string_value(json_object_get(c, "started_at")) ?: "");
	snprintf(fp->taken_at, sizeof(fp->taken_at), "%s", json_string_value(json_object_get(j, "taken_at")) ?: "");
	fp->name = strdup(json_string_value(json_object_get(c, "name")) ?: "");
	json_t *st = json_object_get(j, "stats");
	fp->bytes_hashed = (uint64_t)json_integer_value(json_object_get(st, "bytes_hashed"));
	fp->duration_ms = json_integer_value(json_object_get(st, "duration_ms"));
	int r = mounts_from_json(fp, mounts, err);
	size_t i;
	for (i = 0; r == 0 && i < json_array_size(entries); i++)
		r = entry_from_json(fp, json_array_get(entries, i), i, err);
	for (i = 0; r == 0 && i < json_array_size(procs); i++)
		r = process_from_json(fp, json_array_get(procs, i), i, err);
	if (r < 0) {
		mafsbx_fp_free(fp);
		return r;
	}
	mafsbx_fp_sort(fp);
	*out = fp;
	return 0;
}

/* ---- diff --------------------------------------------------------------- */

static bool docker_managed(const char *path)
{
	return !strcmp(path, "/etc/hostname") || !strcmp(path, "/etc/hosts") || !strcmp(path, "/etc/resolv.conf");
}

static void put_entry(FILE *out, char sign, const struct mafsbx_fp_entry *e)
{
	fprintf(out, "%c %s (%s %04o %" PRIu32 ":%" PRIu32, sign, e->path, mafsbx_fp_type_name(e->type), e->mode, e->uid,
		e->gid);
	if (e->type == MAFSBX_FP_FILE)
		fprintf(out, ", %" PRIu64 " bytes", e->size);
	if (e->target)
		fprintf(out, " -> %s", e->target);
	if (e->type == MAFSBX_FP_CHAR || e->type == MAFSBX_FP_BLOCK)
		fprintf(out, ", device %" PRIu32 ":%" PRIu32, e->rdev_major, e->rdev_minor);
	fputs(")\n", out);
}

struct changes {
	char text[1024];
	size_t len;
};

static void add_change(struct changes *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_change(struct changes *c, const char *fmt, ...)
{
	if (c->len + 4 >= sizeof(c->text))
		return;
	if (c->len)
		c->len += (size_t)snprintf(c->text + c->len, sizeof(c->text) - c->len, ", ");
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(c->text + c->len, sizeof(c->text) - c->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		c->len += (size_t)n < sizeof(c->text) - c->len ? (size_t)n : sizeof(c->text) - c->len - 1;
}

static bool entry_changed(const struct mafsbx_fp_entry *a, const struct mafsbx_fp_entry *b, unsigned flags,
			  struct changes *c)
{
	bool strict = flags & MAFSBX_FP_STRICT;
	bool dir = a->type == MAFSBX_FP_DIR && b->type == MAFSBX_FP_DIR;
	if (a->type != b->type)
		add_change(c, "type %s -> %s", mafsbx_fp_type_name(a->type), mafsbx_fp_type_name(b->type));
	if (a->mode != b->mode)
		add_change(c, "mode %04o -> %04o", a->mode, b->mode);
	if (a->uid != b->uid || a->gid != b->gid)
		add_change(c, "owner %" PRIu32 ":%" PRIu32 " -> %" PRIu32 ":%" PRIu32, a->uid, a->gid, b->uid, b->gid);
	if (a->size != b->size && (strict || !dir))
		add_change(c, "size %" PRIu64 " -> %" PRIu64, a->size, b->size);
	if ((a->mtime_s != b->mtime_s || a->mtime_ns != b->mtime_ns) && (strict || !dir))
		add_change(c, "mtime %" PRId64 ".%09" PRIu32 " -> %" PRId64 ".%09" PRIu32, a->mtime_s, a->mtime_ns,
			   b->mtime_s, b->mtime_ns);
	if ((a->ctime_s != b->ctime_s || a->ctime_ns != b->ctime_ns) &&
	    (strict || (!dir && !docker_managed(a->path))))
		add_change(c, "ctime %" PRId64 ".%09" PRIu32 " -> %" PRId64 ".%09" PRIu32, a->ctime_s, a->ctime_ns,
			   b->ctime_s, b->ctime_ns);
	if (strcmp(a->sha256, b->sha256))
		add_change(c, "content sha256 %.12s -> %.12s", a->sha256[0] ? a->sha256 : "-",
			   b->sha256[0] ? b->sha256 : "-");
	if (a->changing != b->changing)
		add_change(c, "was changing while hashed");
	if ((a->target || b->target) && (!a->target || !b->target || strcmp(a->target, b->target)))
		add_change(c, "target %s -> %s", a->target ? a->target : "-", b->target ? b->target : "-");
	if (a->rdev_major != b->rdev_major || a->rdev_minor != b->rdev_minor)
		add_change(c, "device %" PRIu32 ":%" PRIu32 " -> %" PRIu32 ":%" PRIu32, a->rdev_major, a->rdev_minor,
			   b->rdev_major, b->rdev_minor);
	return c->len > 0;
}

static void put_proc(FILE *out, char sign, const struct mafsbx_fp_process *p)
{
	fprintf(out, "%c process %lld (start %llu%s):", sign, p->pid, p->start, p->zombie ? ", zombie" : "");
	for (size_t i = 0; i < p->argc; i++)
		fprintf(out, " %s", p->argv[i]);
	/* a zombie (or a kernel thread) has no command line: its name, bracketed as ps shows it */
	if (!p->argc && p->name)
		fprintf(out, " [%s]", p->name);
	fputs(p->truncated ? " ...\n" : "\n", out);
}

static bool argv_equal(const struct mafsbx_fp_process *a, const struct mafsbx_fp_process *b)
{
	if (a->argc != b->argc || a->truncated != b->truncated || a->zombie != b->zombie)
		return false;
	for (size_t i = 0; i < a->argc; i++)
		if (strcmp(a->argv[i], b->argv[i]))
			return false;
	return true;
}

/* How the diff compares and shows one kind of item (mount, entry, process). */
struct diff_kind {
	size_t size;
	int (*cmp)(const void *a, const void *b);           /* the order both arrays are sorted in */
	void (*put)(FILE *out, char sign, const void *x);    /* an added (+) or removed (-) item */
	bool (*changed)(FILE *out, const void *a, const void *b, unsigned flags);   /* says "~ ..." (out may be NULL) */
};

/* Walk two sorted arrays together; the number of differences, each printed on `out` when not NULL. */
static size_t diff_sorted(const void *a, size_t na, const void *b, size_t nb, const struct diff_kind *dk,
			  unsigned flags, FILE *out)
{
	const char *pa = a, *pb = b;
	size_t n = 0, i = 0, k = 0;
	while (i < na || k < nb) {
		int c = i == na ? 1 : k == nb ? -1 : dk->cmp(pa + i * dk->size, pb + k * dk->size);
		if (c < 0) {
			if (out)
				dk->put(out, '-', pa + i * dk->size);
			n++, i++;
		} else if (c > 0) {
			if (out)
				dk->put(out, '+', pb + k * dk->size);
			n++, k++;
		} else {
			if (dk->changed(out, pa + i * dk->size, pb + k * dk->size, flags))
				n++;
			i++, k++;
		}
	}
	return n;
}

static int mount_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mafsbx_fp_mount *)a)->path, ((const struct mafsbx_fp_mount *)b)->path);
}

static void mount_put(FILE *out, char sign, const void *x)
{
	const struct mafsbx_fp_mount *m = x;
	fprintf(out, "%c mount %s (%s)\n", sign, m->path, m->fstype);
}

static bool mount_changed(FILE *out, const void *x, const void *y, unsigned flags)
{
	const struct mafsbx_fp_mount *a = x, *b = y;
	(void)flags;
	if (!strcmp(a->fstype, b->fstype) && a->ro == b->ro)
		return false;
	if (out)
		fprintf(out, "~ mount %s: %s %s -> %s %s\n", a->path, a->fstype, a->ro ? "ro" : "rw", b->fstype,
			b->ro ? "ro" : "rw");
	return true;
}

static void entry_put(FILE *out, char sign, const void *x)
{
	put_entry(out, sign, x);
}

static bool entry_diff(FILE *out, const void *x, const void *y, unsigned flags)
{
	const struct mafsbx_fp_entry *a = x, *b = y;
	struct changes ch = { .len = 0 };
	ch.text[0] = '\0';
	if (!entry_changed(a, b, flags, &ch))
		return false;
	if (out)
		fprintf(out, "~ %s: %s\n", a->path, ch.text);
	return true;
}

static int proc_cmp(const void *a, const void *b)
{
	return cmp_proc_key(a, b);
}

static void proc_put(FILE *out, char sign, const void *x)
{
	put_proc(out, sign, x);
}

static bool proc_changed(FILE *out, const void *x, const void *y, unsigned flags)
{
	(void)flags;
	if (argv_equal(x, y))
		return false;
	if (out)
		put_proc(out, '~', y);
	return true;
}

size_t mafsbx_fp_diff(const struct mafsbx_fp *a, const struct mafsbx_fp *b, unsigned flags, FILE *out)
{
	static const struct diff_kind mounts = { sizeof(struct mafsbx_fp_mount), mount_cmp, mount_put, mount_changed };
	static const struct diff_kind entries = { sizeof(struct mafsbx_fp_entry), cmp_entry, entry_put, entry_diff };
	/* processes, by (pid, start): a recycled PID is another process */
	static const struct diff_kind procs = { sizeof(struct mafsbx_fp_process), proc_cmp, proc_put, proc_changed };
	/* one statement each: mounts, then entries, then processes, in this order on `out` */
	size_t n = diff_sorted(a->mounts, a->n_mounts, b->mounts, b->n_mounts, &mounts, flags, out);
	n += diff_sorted(a->entries, a->n_entries, b->entries, b->n_entries, &entries, flags, out);
	n += diff_sorted(a->procs, a->n_procs, b->procs, b->n_procs, &procs, flags, out);
	return n;
}
