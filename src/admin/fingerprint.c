/*
 * fingerprint.c: the nothing-left-behind snapshot of a sandbox (fingerprint.h):
 * the confined walk of every mount of the container's mount namespace, the
 * processes of its cgroup, and the snapshot's bookkeeping (freeing, sorting).
 * The JSON form is fingerprint_json.c's, the diff fingerprint_diff.c's.
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
#include "fingerprint_internal.h"
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

void mafsbx_fp_entry_clear(struct mafsbx_fp_entry *e)
{
	free(e->path);
	free(e->target);
}

void mafsbx_fp_proc_clear(struct mafsbx_fp_process *p)
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
		mafsbx_fp_entry_clear(&fp->entries[i]);
	for (size_t i = 0; i < fp->n_procs; i++)
		mafsbx_fp_proc_clear(&fp->procs[i]);
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

int mafsbx_fp_cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct mafsbx_fp_entry *)a)->path, ((const struct mafsbx_fp_entry *)b)->path);
}

int mafsbx_fp_cmp_proc_key(const struct mafsbx_fp_process *x, const struct mafsbx_fp_process *y)
{
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static int cmp_proc(const void *a, const void *b)
{
	return mafsbx_fp_cmp_proc_key(a, b);
}

static int cmp_mount(const void *a, const void *b)
{
	return strcmp(((const struct mafsbx_fp_mount *)a)->path, ((const struct mafsbx_fp_mount *)b)->path);
}

void mafsbx_fp_sort(struct mafsbx_fp *fp)
{
	if (fp->n_entries)
		qsort(fp->entries, fp->n_entries, sizeof(*fp->entries), mafsbx_fp_cmp_entry);
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
	__do_close int fd = openat(w->proc, link, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOATIME);
	if (fd < 0 && errno == EPERM)   /* O_NOATIME needs ownership or CAP_FOWNER */
		fd = openat(w->proc, link, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return sys_fail(w, errno, "open", path);
	struct stat s2;
	int r = 0;
	if (fstat(fd, &s2) < 0 || s2.st_dev != st->st_dev || s2.st_ino != st->st_ino || !S_ISREG(s2.st_mode))
		return sys_fail(w, EXDEV, "re-open (not the same file)", path);
	uint64_t want = (uint64_t)st->st_size, got = 0;
	if (w->fp->bytes_hashed + want > w->lim->max_hash_bytes)
		return too_big(w, path,
			       "is a file whose hashing would pass the bound of %" PRIu64 " bytes hashed (--max-hash-bytes)",
			       w->lim->max_hash_bytes);
	EVP_DigestInit_ex(w->md, EVP_sha256(), NULL);
	while (got < want) {
		size_t n = want - got < FP_READ_CHUNK ? (size_t)(want - got) : FP_READ_CHUNK;
		ssize_t k = read(fd, w->buf, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sys_fail(w, errno, "read", path);
		if (k == 0) {
			e->changing = true;   /* shrank while read */
			break;
		}
		EVP_DigestUpdate(w->md, w->buf, (size_t)k);
		got += (uint64_t)k;
		if ((r = check_time(w)) < 0)
			return r;
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
	__attribute__((cleanup(mafsbx_fp_entry_clear))) struct mafsbx_fp_entry e;
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
		if (n < 0)
			return sys_fail(w, errno, "read the link", path);
		if (!(e.target = mafsbx_fp_escape(t, (size_t)n)))
			return mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
	} else if (S_ISREG(st.st_mode)) {
		if ((r = hash_file(w, fd, &st, path, &e)) < 0)
			return r;
	}
	if (mafsbx_fp_add_entry(w->fp, &e) < 0)
		return mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
	e.path = e.target = NULL;   /* the fingerprint's now */
	if (S_ISDIR(st.st_mode)) {
		if (depth >= w->lim->max_depth)
			return too_big(w, path, "is nested deeper than %u directories (--max-depth)", w->lim->max_depth);
		return walk_dir(w, fd, path, depth + 1);
	}
	return 0;
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
		__do_free char *child = join(path, names[i]);
		if (!child) {
			r = mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
			break;
		}
		__do_close int fd = open2(dirfd, names[i], O_PATH | O_NOFOLLOW, FP_RESOLVE | RESOLVE_NO_XDEV);
		if (fd == -EXDEV || fd == -ENOENT) {
			/* EXDEV: a mount point, measured as its own mount (or /proc, /sys: not measured);
			 * ENOENT: removed since the listing. */
			continue;
		}
		if (fd < 0) {
			r = sys_fail(w, -fd, "open", child);
			break;
		}
		r = measure(w, fd, child, depth);
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
	__do_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return -errno;
	__do_free char *b = malloc(max + 1);
	if (!b)
		return -ENOMEM;
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
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	b[got] = '\0';
	*out = move_ptr(b);
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
	__do_close int pd = openat(w->proc, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pd < 0)
		return 1;
	__do_free char *stat = NULL;
	__do_free char *status = NULL;
	__do_free char *cmd = NULL;
	__do_free char *cg = NULL;
	size_t cmdlen = 0;
	bool trunc = false;
	__attribute__((cleanup(mafsbx_fp_proc_clear))) struct mafsbx_fp_process p;
	memset(&p, 0, sizeof(p));
	if (read_at(pd, "stat", 4096, &stat, NULL, NULL) < 0 || read_at(pd, "status", 16384, &status, NULL, NULL) < 0 ||
	    read_at(pd, "cmdline", FP_CMDLINE_MAX, &cmd, &cmdlen, &trunc) < 0 ||
	    read_at(pd, "cgroup", 16384, &cg, NULL, NULL) < 0)
		return 1;
	if (parent < 0 && !mafsbx_cgroup_names_container(cg, w->pin->id))
		return 1;
	if (parent > 0) {
		const char *st = strstr(status, "\nState:\t"), *pp = strstr(status, "\nPPid:\t");
		if (!st || st[8] != 'Z' || !pp || strtoll(pp + 7, NULL, 10) != parent)
			return 1;
		p.zombie = true;
	}
	if (!stat_start(stat, &p.start) || (p.pid = nspid_last(status)) < 0)
		return 1;
	p.truncated = trunc;
	/* the name is kept for every process, not only zombies: one that exits between two
	 * snapshots still reads as the same process in the diff */
	p.name = mafsbx_fp_stat_name(stat);
	if (!p.name || split_cmdline(&p, cmd, cmdlen) < 0 || keep_process(w, &p, hostpid) < 0)
		return -ENOMEM;
	return 0;
}

/* Zombie children of one member, from /proc/P/task/T/children of each of its threads. */
static int read_zombies(struct walk *w, long long parent)
{
	char path[64];
	snprintf(path, sizeof(path), "%lld/task", parent);
	int td = openat(w->proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (td < 0)
		return 0;   /* gone */
	__do_closedir DIR *d = fdopendir(td);
	if (!d) {
		close(td);
		return mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char rel[300];
		__do_free char *text = NULL;
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
	}
	return r;
}

/* Whether `base` is the mount of a cgroup filesystem (v1 or v2). */
static bool is_cgroup_fs(const char *base)
{
	__do_close int bfd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct statfs sf;
	return bfd >= 0 && fstatfs(bfd, &sf) == 0 &&
	       (sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC);
}

/* The cgroup.procs of the init's cgroup: v1 "pids" controller, else the v2 unified path. */
static int read_processes(struct walk *w, int piddir)
{
	__do_free char *cg = NULL;
	int r = read_at(piddir, "cgroup", 16384, &cg, NULL, NULL);
	if (r < 0)
		return sys_fail(w, -r, "read the cgroup of", "the sandbox's init");
	bool v1_pids = false;
	__do_free char *rel = NULL;
	r = mafsbx_cgroup_procs_path(cg, &v1_pids, &rel);
	if (r == -ENOMEM)
		return mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
	if (r < 0)
		return mafsbx_error_set_full(w->err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "fingerprint: the sandbox's cgroup cannot be found (%s)",
					     r == -ENOENT ? "no pids or unified hierarchy in its /proc/PID/cgroup"
							  : "its /proc/PID/cgroup is malformed");
	const char *base = v1_pids ? "/sys/fs/cgroup/pids" : "/sys/fs/cgroup";
	__do_free char *path = NULL;
	if (asprintf(&path, "%s%s/cgroup.procs", base, strcmp(rel, "/") ? rel : "") < 0) {
		path = NULL;   /* asprintf leaves it undefined on failure */
		return mafsbx_error_set(w->err, MAFSBX_EK_NOMEM, "out of memory");
	}
	/* the controller's mount must be a cgroup filesystem, not whatever sits at that path */
	if (!is_cgroup_fs(base))
		return mafsbx_error_set_full(w->err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "fingerprint: %s is not a cgroup filesystem", base);
	__do_free char *text = NULL;
	bool trunc = false;
	r = read_at(AT_FDCWD, path, FP_PROCS_TEXT_MAX, &text, NULL, &trunc);
	if (r < 0)
		return sys_fail(w, -r, "read", path);
	if (trunc)
		return mafsbx_error_set(w->err, MAFSBX_EK_TOO_BIG, "fingerprint refused: the sandbox's process list is "
					"over %u bytes", FP_PROCS_TEXT_MAX);
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
			mafsbx_fp_entry_clear(&fp->entries[i]);
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
