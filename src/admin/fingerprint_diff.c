/*
 * fingerprint_diff.c: the difference between two snapshots (fingerprint.h,
 * mafsbx_fp_diff): mounts, then entries, then processes, each list walked
 * sorted, one line a difference.
 *
 * Why the diff ignores directory times and sizes by default: they change
 * whenever anything is created and removed inside (even by a perfect
 * reclaim), and an ext4 directory never shrinks; the set of entries below a
 * directory is measured entry by entry, so nothing left inside is missed.
 */
#include "fingerprint.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "fingerprint_internal.h"

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
	return mafsbx_fp_cmp_proc_key(a, b);
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
	static const struct diff_kind entries = { sizeof(struct mafsbx_fp_entry), mafsbx_fp_cmp_entry, entry_put, entry_diff };
	/* processes, by (pid, start): a recycled PID is another process */
	static const struct diff_kind procs = { sizeof(struct mafsbx_fp_process), proc_cmp, proc_put, proc_changed };
	/* one statement each: mounts, then entries, then processes, in this order on `out` */
	size_t n = diff_sorted(a->mounts, a->n_mounts, b->mounts, b->n_mounts, &mounts, flags, out);
	n += diff_sorted(a->entries, a->n_entries, b->entries, b->n_entries, &entries, flags, out);
	n += diff_sorted(a->procs, a->n_procs, b->procs, b->n_procs, &procs, flags, out);
	return n;
}
