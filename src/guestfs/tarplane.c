/*
 * tarplane.c: building PUT tars and parsing the first entry of GET tars with
 * libarchive (see tarplane.h). Owns the metadata bounds of doc/upstream.md §4.10:
 * before libarchive sees a byte, a strict scan of the 512-byte headers checks
 * checksums, counts headers (32), bounds the prefix (64 KiB), refuses sparse
 * entries and negative sizes, and validates every pax record. libarchive
 * then parses exactly that prefix, so pax and GNU long names apply as a real
 * tar reader would apply them. The body is never handed to libarchive: it is
 * streamed, counted, to the caller's fd or buffer.
 */
#include "tarplane.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tarhdr.h"

/* ---- building --------------------------------------------------------- */

struct mafsbx_tar {
	struct archive *a;
	struct mafsbx_buf out;
	bool finished;
};

static la_ssize_t tar_write_cb(struct archive *a, void *ctx, const void *buf, size_t n)
{
	struct mafsbx_tar *t = ctx;
	if (mafsbx_buf_append(&t->out, buf, n) < 0) {
		archive_set_error(a, ENOMEM, "out of memory building a tar");
		return -1;
	}
	return (la_ssize_t)n;
}

struct mafsbx_tar *mafsbx_tar_new(struct mafsbx_error *err)
{
	struct mafsbx_tar *t = calloc(1, sizeof(*t));
	if (!t) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	t->a = archive_write_new();
	if (!t->a)
		goto fail;
	/* ustar headers, a pax extension only when a field does not fit */
	if (archive_write_set_format_pax_restricted(t->a) != ARCHIVE_OK)
		goto fail;
	/* names are raw guest bytes: no charset conversion on the way out */
	archive_write_set_options(t->a, "hdrcharset=BINARY");
	archive_write_set_bytes_per_block(t->a, 512);
	archive_write_set_bytes_in_last_block(t->a, 1);
	if (archive_write_open2(t->a, t, NULL, tar_write_cb, NULL, NULL) != ARCHIVE_OK)
		goto fail;
	return t;
fail:
	mafsbx_error_set(err, MAFSBX_EK_NOMEM, "cannot start a tar: %s",
			 t->a ? archive_error_string(t->a) ? archive_error_string(t->a) : "libarchive" : "libarchive");
	mafsbx_tar_free(t);
	return NULL;
}

void mafsbx_tar_free(struct mafsbx_tar *t)
{
	if (!t)
		return;
	if (t->a)
		archive_write_free(t->a);
	mafsbx_buf_free(&t->out);
	free(t);
}

static int add_entry(struct mafsbx_tar *t, const char *name, mode_t type, mode_t mode, uid_t uid, gid_t gid,
		     time_t mtime, uint64_t size, const char *link, struct archive_entry **out, struct mafsbx_error *err)
{
	if (!t || t->finished)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "tar already finished");
	while (name && *name == '/')
		name++;
	if (!name || !*name)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "tar entry with an empty name");
	struct mafsbx_buf nb = MAFSBX_BUF_INIT;
	size_t nl = strlen(name);
	int r = mafsbx_buf_append(&nb, name, nl);
	if (r == 0 && type == AE_IFDIR && name[nl - 1] != '/')
		r = mafsbx_buf_puts(&nb, "/");
	struct archive_entry *ae = r == 0 ? archive_entry_new() : NULL;
	if (!ae) {
		mafsbx_buf_free(&nb);
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	archive_entry_copy_pathname(ae, nb.data);
	mafsbx_buf_free(&nb);
	archive_entry_set_filetype(ae, type);
	archive_entry_set_perm(ae, mode & 07777);
	archive_entry_set_uid(ae, uid);
	archive_entry_set_gid(ae, gid);
	archive_entry_set_mtime(ae, mtime, 0);
	archive_entry_set_size(ae, (la_int64_t)size);
	if (link && type == AE_IFLNK)
		archive_entry_copy_symlink(ae, link);
	else if (link)
		archive_entry_copy_hardlink(ae, link);
	if (archive_write_header(t->a, ae) < ARCHIVE_WARN) {
		r = mafsbx_error_set(err, MAFSBX_EK_INVALID, "cannot add tar entry %.200s: %s", name,
				     archive_error_string(t->a));
		archive_entry_free(ae);
		return r;
	}
	*out = ae;
	return 0;
}

int mafsbx_tar_add_dir(struct mafsbx_tar *t, const char *name, mode_t mode, uid_t uid, gid_t gid, time_t mtime,
		       struct mafsbx_error *err)
{
	struct archive_entry *ae;
	int r = add_entry(t, name, AE_IFDIR, mode, uid, gid, mtime, 0, NULL, &ae, err);
	if (r == 0)
		archive_entry_free(ae);
	return r;
}

int mafsbx_tar_add_symlink(struct mafsbx_tar *t, const char *name, const char *target, uid_t uid, gid_t gid,
			   time_t mtime, struct mafsbx_error *err)
{
	struct archive_entry *ae;
	if (!target || !*target)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "symlink %.200s has an empty target", name);
	int r = add_entry(t, name, AE_IFLNK, 0777, uid, gid, mtime, 0, target, &ae, err);
	if (r == 0)
		archive_entry_free(ae);
	return r;
}

int mafsbx_tar_add_hardlink(struct mafsbx_tar *t, const char *name, const char *target, mode_t mode, uid_t uid,
			    gid_t gid, time_t mtime, struct mafsbx_error *err)
{
	struct archive_entry *ae;
	while (target && *target == '/')
		target++;
	if (!target || !*target)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "hard link %.200s has an empty target", name);
	int r = add_entry(t, name, AE_IFREG, mode, uid, gid, mtime, 0, target, &ae, err);
	if (r == 0)
		archive_entry_free(ae);
	return r;
}

static int write_data(struct mafsbx_tar *t, const void *p, size_t n, struct mafsbx_error *err)
{
	const char *c = p;
	while (n) {
		la_ssize_t w = archive_write_data(t->a, c, n);
		if (w <= 0)
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "cannot write tar data: %s",
						archive_error_string(t->a) ? archive_error_string(t->a) : "short write");
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int mafsbx_tar_add_file(struct mafsbx_tar *t, const char *name, const void *data, size_t len, mode_t mode,
			uid_t uid, gid_t gid, time_t mtime, struct mafsbx_error *err)
{
	struct archive_entry *ae;
	int r = add_entry(t, name, AE_IFREG, mode, uid, gid, mtime, len, NULL, &ae, err);
	if (r < 0)
		return r;
	archive_entry_free(ae);
	return len ? write_data(t, data, len, err) : 0;
}

int mafsbx_tar_add_file_fd(struct mafsbx_tar *t, const char *name, int fd, uint64_t len, mode_t mode, uid_t uid,
			   gid_t gid, time_t mtime, struct mafsbx_error *err)
{
	struct archive_entry *ae;
	int r = add_entry(t, name, AE_IFREG, mode, uid, gid, mtime, len, NULL, &ae, err);
	if (r < 0)
		return r;
	archive_entry_free(ae);
	char *chunk = malloc(65536);
	if (!chunk)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	uint64_t off = 0;
	while (off < len) {
		size_t want = len - off > 65536 ? 65536 : (size_t)(len - off);
		ssize_t got = pread(fd, chunk, want, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			int e = got < 0 ? errno : EIO;
			free(chunk);
			/* the header already promised `len` bytes: the tar is unusable */
			t->finished = true;
			return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL,
						     "reading the spool for %.200s at %llu of %llu bytes: %s", name,
						     (unsigned long long)off, (unsigned long long)len,
						     got < 0 ? strerror(e) : "unexpected end of file");
		}
		r = write_data(t, chunk, (size_t)got, err);
		if (r < 0) {
			free(chunk);
			return r;
		}
		off += (uint64_t)got;
	}
	free(chunk);
	return 0;
}

int mafsbx_tar_finish(struct mafsbx_tar *t, const void **data, size_t *len, struct mafsbx_error *err)
{
	if (!t->finished) {
		if (archive_write_close(t->a) != ARCHIVE_OK)
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "cannot close a tar: %s",
						archive_error_string(t->a));
		t->finished = true;
	} else if (!t->out.data) {
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "tar was abandoned after an error");
	}
	*data = t->out.data;
	*len = t->out.len;
	return 0;
}

/* ---- parsing: the strict scan ------------------------------------------ */

void mafsbx_tar_entry_free(struct mafsbx_tar_entry *e)
{
	if (!e)
		return;
	free(e->path);
	free(e->linkname);
	e->path = NULL;
	e->linkname = NULL;
}

static size_t round512(uint64_t n)
{
	return (size_t)((n + 511) & ~(uint64_t)511);
}

static bool all_digits(const char *s, size_t n)
{
	if (n == 0 || n > 19)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Every record "<decimal length> <key>=<value>\n", the length covering the record. */
static int validate_pax(const unsigned char *p, size_t n, struct mafsbx_error *err)
{
	size_t off = 0;
	while (off < n) {
		size_t i = off, len = 0;
		while (i < n && p[i] >= '0' && p[i] <= '9') {
			if (len > n)
				break;
			len = len * 10 + (size_t)(p[i] - '0');
			i++;
		}
		if (i == off || i >= n || p[i] != ' ' || (p[off] == '0') || len > n - off || len < (i - off) + 4)
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "malformed pax record at byte %zu", off);
		size_t end = off + len; /* one past the '\n' */
		if (p[end - 1] != '\n')
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "malformed pax record at byte %zu", off);
		const char *key = (const char *)p + i + 1;
		const char *eq = memchr(key, '=', (size_t)((const char *)p + end - 1 - key));
		if (!eq || eq == key)
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "malformed pax record at byte %zu", off);
		size_t klen = (size_t)(eq - key);
		const char *val = eq + 1;
		size_t vlen = (size_t)((const char *)p + end - 1 - val);
		if (klen >= 11 && memcmp(key, "GNU.sparse.", 11) == 0)
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "sparse tar entries are refused (pax %.*s)",
						(int)klen, key);
		if ((klen == 4 && memcmp(key, "size", 4) == 0) || (klen == 3 && memcmp(key, "uid", 3) == 0) ||
		    (klen == 3 && memcmp(key, "gid", 3) == 0)) {
			if (!all_digits(val, vlen))
				return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "pax %.*s value is not a decimal number",
							(int)klen, key);
		}
		off = end;
	}
	return 0;
}

static mode_t kind_type(enum mafsbx_tar_kind k, char flag)
{
	switch (k) {
	case MAFSBX_TK_FILE: return S_IFREG;
	case MAFSBX_TK_DIR: return S_IFDIR;
	case MAFSBX_TK_SYMLINK: return S_IFLNK;
	default:
		switch (flag) {
		case '3': return S_IFCHR;
		case '4': return S_IFBLK;
		case '6': return S_IFIFO;
		default: return S_IFREG; /* a hard link names a regular file elsewhere */
		}
	}
}

/* Parse exactly buf[0..len) (extension headers + the entry header) with libarchive. */
static int libarchive_entry(const void *buf, size_t len, char flag, struct mafsbx_tar_entry *entry,
			    struct mafsbx_error *err)
{
	struct archive *a = archive_read_new();
	if (!a)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	int r = 0;
	struct archive_entry *ae = NULL;
	archive_read_support_format_tar(a);
	if (archive_read_open_memory(a, buf, len) != ARCHIVE_OK ||
	    archive_read_next_header(a, &ae) < ARCHIVE_WARN) {
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "malformed tar header: %s",
				     archive_error_string(a) ? archive_error_string(a) : "libarchive refused it");
		goto out;
	}
	if (archive_entry_sparse_count(ae) > 0) {
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "sparse tar entries are refused");
		goto out;
	}
	la_int64_t sz = archive_entry_size(ae);
	if (sz < 0) {
		r = mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "negative tar entry size");
		goto out;
	}
	switch (flag) {
	case '0': case '\0': case '7':
		entry->kind = MAFSBX_TK_FILE;
		break;
	case '5':
		entry->kind = MAFSBX_TK_DIR;
		break;
	case '2':
		entry->kind = MAFSBX_TK_SYMLINK;
		break;
	default:
		entry->kind = MAFSBX_TK_OTHER;
		break;
	}
	entry->typeflag = flag;
	entry->size = entry->kind == MAFSBX_TK_FILE ? (uint64_t)sz : 0;
	entry->mode = (archive_entry_perm(ae) & 07777) | kind_type(entry->kind, flag);
	entry->uid = (uid_t)archive_entry_uid(ae);
	entry->gid = (gid_t)archive_entry_gid(ae);
	entry->mtime = archive_entry_mtime(ae);
	const char *p = archive_entry_pathname(ae);
	const char *l = archive_entry_symlink(ae);
	if (!l)
		l = archive_entry_hardlink(ae);
	entry->path = strdup(p ? p : "");
	entry->linkname = strdup(l ? l : "");
	if (!entry->path || !entry->linkname) {
		mafsbx_tar_entry_free(entry);
		r = mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
out:
	archive_read_free(a);
	return r;
}

int mafsbx_tar_parse_prefix(const void *buf, size_t len, struct mafsbx_tar_entry *entry, size_t *data_offset,
			    size_t *needed, struct mafsbx_error *err)
{
	const unsigned char *b = buf;
	size_t off = 0;
	unsigned headers = 0;
	memset(entry, 0, sizeof(*entry));
	for (;;) {
		if (off + 512 > MAFSBX_TAR_MAX_PREFIX)
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL,
						"tar headers exceed the 64 KiB metadata limit");
		if (len < off + 512) {
			*needed = off + 512;
			return 0;
		}
		const unsigned char *h = b + off;
		if (mafsbx_tar_zero_block(h))
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, off == 0 ? "the tar holds no entry"
									      : "the tar ends after its extension headers");
		if (!mafsbx_tar_checksum_ok(h))
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "tar header at byte %zu has a bad checksum", off);
		if (++headers > MAFSBX_TAR_MAX_HEADERS)
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "tar headers exceed the 32-header limit");
		char flag = (char)h[156];
		uint64_t size;
		int pr = mafsbx_tar_num_field(h + 124, 12, &size);
		if (pr == -2)
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "tar header at byte %zu has a negative size", off);
		if (pr < 0)
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "tar header at byte %zu has a malformed size", off);
		switch (flag) {
		case 'S':
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "sparse tar entries are refused");
		case 'x': case 'g': case 'L': case 'K': {
			if (size > MAFSBX_TAR_MAX_PREFIX)
				return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL,
							"tar headers exceed the 64 KiB metadata limit");
			size_t end = off + 512 + round512(size);
			if (end > MAFSBX_TAR_MAX_PREFIX)
				return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL,
							"tar headers exceed the 64 KiB metadata limit");
			if (len < end) {
				*needed = end;
				return 0;
			}
			if (flag == 'x' || flag == 'g') {
				int r = validate_pax(h + 512, (size_t)size, err);
				if (r < 0)
					return r;
			}
			off = end;
			continue;
		}
		case '0': case '\0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
			break;
		default:
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "unsupported tar entry type '%c'",
						flag >= 32 && flag < 127 ? flag : '?');
		}
		int r = libarchive_entry(b, off + 512, flag, entry, err);
		if (r < 0)
			return r;
		*data_offset = off + 512;
		return 1;
	}
}

/* ---- parsing: the push reader ------------------------------------------ */

enum reader_state { RS_PREFIX, RS_BODY, RS_TRAILER, RS_ERROR };

struct mafsbx_tar_reader {
	struct mafsbx_tar_reader_opts o;
	enum reader_state st;
	struct mafsbx_buf prefix;
	size_t needed;
	struct mafsbx_tar_entry entry;
	bool have_entry;
	uint64_t body_left, body_taken, trailer;
	struct mafsbx_error error;
};

struct mafsbx_tar_reader *mafsbx_tar_reader_new(const struct mafsbx_tar_reader_opts *opts, struct mafsbx_error *err)
{
	struct mafsbx_tar_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		return NULL;
	}
	if (opts)
		r->o = *opts;
	else
		r->o.out_fd = -1;
	if (!r->o.max_trailer)
		r->o.max_trailer = 64 * 1024;
	r->needed = 512;
	r->st = RS_PREFIX;
	mafsbx_error_clear(&r->error);
	return r;
}

void mafsbx_tar_reader_free(struct mafsbx_tar_reader *r)
{
	if (!r)
		return;
	mafsbx_buf_free(&r->prefix);
	mafsbx_tar_entry_free(&r->entry);
	free(r);
}

static int reader_fail(struct mafsbx_tar_reader *r)
{
	r->st = RS_ERROR;
	return -(r->error.err ? r->error.err : EIO);
}

static const char *kind_name(const struct mafsbx_tar_entry *e)
{
	switch (e->kind) {
	case MAFSBX_TK_FILE: return "a regular file";
	case MAFSBX_TK_DIR: return "a directory";
	case MAFSBX_TK_SYMLINK: return "a symbolic link";
	default:
		switch (e->typeflag) {
		case '1': return "a hard link";
		case '3': return "a character device";
		case '4': return "a block device";
		case '6': return "a fifo";
		default: return "not a regular file";
		}
	}
}

static int take_body(struct mafsbx_tar_reader *r, const char *p, size_t n)
{
	if (r->o.out_fd >= 0) {
		while (n) {
			ssize_t w = write(r->o.out_fd, p, n);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				int e = w < 0 ? errno : EIO;
				mafsbx_error_set_full(&r->error, MAFSBX_EK_SYSTEM, e, NULL, "writing the spool: %s",
						      strerror(e));
				return reader_fail(r);
			}
			p += w;
			n -= (size_t)w;
			r->body_taken += (uint64_t)w;
		}
		return 0;
	}
	if (r->o.out_buf && mafsbx_buf_append(r->o.out_buf, p, n) < 0) {
		mafsbx_error_set(&r->error, MAFSBX_EK_NOMEM, "out of memory taking a tar body");
		return reader_fail(r);
	}
	r->body_taken += n;
	return 0;
}

int mafsbx_tar_reader_sink(const void *data, size_t len, void *ctx)
{
	struct mafsbx_tar_reader *r = ctx;
	const char *p = data;
	while (len) {
		switch (r->st) {
		case RS_ERROR:
			return -(r->error.err ? r->error.err : EIO);
		case RS_PREFIX: {
			size_t want = r->needed - r->prefix.len;
			size_t n = len < want ? len : want;
			if (mafsbx_buf_append(&r->prefix, p, n) < 0) {
				mafsbx_error_set(&r->error, MAFSBX_EK_NOMEM, "out of memory");
				return reader_fail(r);
			}
			p += n;
			len -= n;
			if (r->prefix.len < r->needed)
				break;
			size_t off = 0, needed = 0;
			int pr = mafsbx_tar_parse_prefix(r->prefix.data, r->prefix.len, &r->entry, &off, &needed, &r->error);
			if (pr < 0)
				return reader_fail(r);
			if (pr == 0) {
				r->needed = needed;
				break;
			}
			r->have_entry = true;
			if (r->o.file_only && r->entry.kind != MAFSBX_TK_FILE) {
				mafsbx_error_set(&r->error, MAFSBX_EK_NOT_REGULAR, "%.200s is %s and is refused",
						 r->entry.path, kind_name(&r->entry));
				return reader_fail(r);
			}
			if (r->o.max_body && r->entry.size > r->o.max_body) {
				mafsbx_error_set(&r->error, MAFSBX_EK_TOO_BIG, "%.200s is %llu bytes and the caller allowed %llu",
						 r->entry.path, (unsigned long long)r->entry.size,
						 (unsigned long long)r->o.max_body);
				return reader_fail(r);
			}
			/* only a file's data is the body; other kinds' data (none in practice) is skipped */
			r->body_left = r->entry.kind == MAFSBX_TK_FILE ? r->entry.size : 0;
			r->st = RS_BODY;
			mafsbx_buf_free(&r->prefix);
			if (r->body_left == 0)
				r->st = RS_TRAILER;
			break;
		}
		case RS_BODY: {
			size_t n = (uint64_t)len < r->body_left ? len : (size_t)r->body_left;
			int tr = take_body(r, p, n);
			if (tr < 0)
				return tr;
			p += n;
			len -= n;
			r->body_left -= n;
			if (r->body_left == 0)
				r->st = RS_TRAILER;
			break;
		}
		case RS_TRAILER:
			r->trailer += len;
			len = 0;
			if (r->trailer > r->o.max_trailer) {
				mafsbx_error_set(&r->error, MAFSBX_EK_PROTOCOL,
						 "the tar holds more than the one entry asked for");
				return reader_fail(r);
			}
			break;
		}
	}
	return 0;
}

const struct mafsbx_error *mafsbx_tar_reader_error(const struct mafsbx_tar_reader *r)
{
	return r && r->st == RS_ERROR ? &r->error : NULL;
}

const struct mafsbx_tar_entry *mafsbx_tar_reader_entry(const struct mafsbx_tar_reader *r)
{
	return r && r->have_entry ? &r->entry : NULL;
}

uint64_t mafsbx_tar_reader_body_bytes(const struct mafsbx_tar_reader *r)
{
	return r ? r->body_taken : 0;
}

static int copy_error(struct mafsbx_error *dst, const struct mafsbx_error *src)
{
	if (dst)
		*dst = *src;
	return -(src->err ? src->err : EIO);
}

int mafsbx_tar_reader_finish(struct mafsbx_tar_reader *r, struct mafsbx_tar_entry *entry, struct mafsbx_error *err)
{
	if (entry)
		memset(entry, 0, sizeof(*entry));
	switch (r->st) {
	case RS_ERROR:
		return copy_error(err, &r->error);
	case RS_PREFIX:
		if (r->prefix.len < 512)
			return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "the engine returned no tar header (%zu bytes)",
						r->prefix.len);
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL,
					"the engine returned incomplete tar metadata (%zu of %zu bytes)", r->prefix.len,
					r->needed);
	case RS_BODY:
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "incomplete body: got %llu of %llu bytes of %.200s",
					(unsigned long long)r->body_taken, (unsigned long long)r->entry.size,
					r->entry.path);
	case RS_TRAILER:
		break;
	}
	if (entry) {
		*entry = r->entry;
		entry->path = strdup(r->entry.path);
		entry->linkname = strdup(r->entry.linkname);
		if (!entry->path || !entry->linkname) {
			mafsbx_tar_entry_free(entry);
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		}
	}
	return 0;
}
