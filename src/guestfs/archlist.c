/*
 * archlist.c: the depth-1 headers of a directory's archive (archlist.h).
 *
 * A push parser: the sink takes the stream in whatever pieces the engine
 * sends, gathers each 512-byte header, gathers an extension header's data
 * (bounded), and skips every file body by counting, so that memory stays
 * one block, one extension and the kept entries whatever the archive holds.
 */
#include "archlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tarhdr.h"

enum { ST_HDR = 0, ST_EXT, ST_SKIP, ST_END, ST_STOP };

static int fail(struct mafsbx_archlist *l, const char *msg, size_t at)
{
	l->failed = true;
	l->st = ST_STOP;
	mafsbx_error_set_full(&l->error, MAFSBX_EK_PROTOCOL, EPROTO, NULL, "directory archive: %s (at byte %llu)", msg,
			      (unsigned long long)at);
	return -EPROTO;
}

static int nomem(struct mafsbx_archlist *l)
{
	l->failed = true;
	l->st = ST_STOP;
	mafsbx_error_set(&l->error, MAFSBX_EK_NOMEM, "out of memory");
	return -ENOMEM;
}

static void pending_clear(struct mafsbx_archlist *l)
{
	l->ext_total = 0;
	free(l->p_path);
	l->p_path = NULL;
	l->p_has_size = l->p_has_mtime = l->p_has_uid = l->p_has_gid = false;
}

int mafsbx_archlist_init(struct mafsbx_archlist *l, const char *root, uint64_t max_bytes, size_t max_entries,
			 struct mafsbx_error *err)
{
	memset(l, 0, sizeof(*l));
	mafsbx_error_clear(&l->error);
	l->max_bytes = max_bytes ? max_bytes : MAFSBX_ARCHLIST_MAX_BYTES;
	l->max_entries = max_entries ? max_entries : MAFSBX_ARCHLIST_MAX_ENTRIES;
	if (!(l->root = strdup(root ? root : "")))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return 0;
}

void mafsbx_archlist_free(struct mafsbx_archlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	free(l->root);
	free(l->ext);
	pending_clear(l);
	memset(l, 0, sizeof(*l));
}

static bool decimal(const char *s, size_t n, uint64_t *out)
{
	if (n == 0 || n > 19)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* A pax time: [-]SECONDS[.FRACTION]; a time before 1970 is refused here (0 or -1). */
static int pax_time(const char *s, size_t n, struct timespec *out)
{
	const char *dot = memchr(s, '.', n);
	size_t ni = dot ? (size_t)(dot - s) : n;
	uint64_t sec;
	if (!decimal(s, ni, &sec) || sec > (uint64_t)INT64_MAX / 2)
		return -1;
	long ns = 0;
	if (dot) {
		size_t nf = n - ni - 1;
		if (nf == 0)
			return -1;
		for (size_t i = 0; i < nf; i++) {
			char c = dot[1 + i];
			if (c < '0' || c > '9')
				return -1;
			if (i < 9)
				ns = ns * 10 + (c - '0');
		}
		for (size_t i = nf; i < 9; i++)
			ns *= 10;
	}
	out->tv_sec = (time_t)sec;
	out->tv_nsec = ns;
	return 0;
}

/* The records of a pax 'x' (applied to the next entry) or 'g' (checked, not applied). */
static int pax_records(struct mafsbx_archlist *l, bool apply)
{
	const char *p = l->ext;
	size_t n = l->ext_len, off = 0;
	size_t at = (size_t)l->bytes;
	while (off < n) {
		size_t i = off, len = 0;
		while (i < n && p[i] >= '0' && p[i] <= '9' && len <= n) {
			len = len * 10 + (size_t)(p[i] - '0');
			i++;
		}
		if (i == off || i >= n || p[i] != ' ' || p[off] == '0' || len > n - off || len < i - off + 4 ||
		    p[off + len - 1] != '\n')
			return fail(l, "a malformed pax record", at);
		const char *key = p + i + 1, *end = p + off + len - 1;
		const char *eq = memchr(key, '=', (size_t)(end - key));
		if (!eq || eq == key)
			return fail(l, "a malformed pax record", at);
		size_t kl = (size_t)(eq - key), vl = (size_t)(end - eq - 1);
		const char *val = eq + 1;
		uint64_t num = 0;
#define KEY(s) (kl == sizeof(s) - 1 && memcmp(key, s, kl) == 0)
		if (kl >= 11 && memcmp(key, "GNU.sparse.", 11) == 0)
			return fail(l, "a sparse entry", at);
		if (KEY("size") || KEY("uid") || KEY("gid")) {
			if (!decimal(val, vl, &num))
				return fail(l, "a pax size, uid or gid that is not a decimal number", at);
			if (apply && KEY("size")) {
				l->p_has_size = true;
				l->p_size = num;
			} else if (apply && KEY("uid")) {
				l->p_has_uid = true;
				l->p_uid = num;
			} else if (apply && KEY("gid")) {
				l->p_has_gid = true;
				l->p_gid = num;
			}
		} else if (KEY("mtime")) {
			struct timespec ts;
			if (pax_time(val, vl, &ts) < 0)
				return fail(l, "a pax mtime that is not a time", at);
			if (apply) {
				l->p_has_mtime = true;
				l->p_mtime = ts;
			}
		} else if (KEY("path") && apply) {
			if (memchr(val, '\0', vl))
				return fail(l, "a pax path holding a NUL", at);
			char *np = strndup(val, vl);
			if (!np)
				return nomem(l);
			free(l->p_path);
			l->p_path = np;
		}
#undef KEY
		off += len;
	}
	return 0;
}

static bool good_name(const char *s, size_t n)
{
	if (n == 0 || n > MAFSBX_ARCHLIST_NAME_MAX)
		return false;
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	return memchr(s, '/', n) == NULL;
}

static mode_t type_bits(char flag)
{
	switch (flag) {
	case '2': return S_IFLNK;
	case '3': return S_IFCHR;
	case '4': return S_IFBLK;
	case '5': return S_IFDIR;
	case '6': return S_IFIFO;
	default: return S_IFREG; /* '0', '\0', '7', and '1' (a hard link names a regular file) */
	}
}

/* The bounds of archlist.h; true when the stream must be cut now. */
static bool over_bounds(struct mafsbx_archlist *l)
{
	if (l->st == ST_END || l->st == ST_STOP)
		return false;
	if (l->bytes > l->max_bytes)
		l->cut = MAFSBX_AL_CUT_BYTES;
	else if (l->deep > MAFSBX_ARCHLIST_DEEP_MIN && l->deep > MAFSBX_ARCHLIST_DEEP_RATIO * (l->n + 1))
		l->cut = MAFSBX_AL_CUT_DEEP;
	else if (l->bytes - l->head_bytes > MAFSBX_ARCHLIST_WASTE_MIN && l->bytes - l->head_bytes > 2 * l->head_bytes)
		l->cut = MAFSBX_AL_CUT_WASTE;
	if (l->cut)
		l->st = ST_STOP;
	return l->cut != MAFSBX_AL_WHOLE;
}

/* One entry's header (extensions applied): classify, keep it if at depth 1. */
static int entry(struct mafsbx_archlist *l, const unsigned char *h, char flag, uint64_t size)
{
	size_t at = (size_t)l->bytes;
	char full[512];
	const char *name;
	size_t nl;
	if (l->p_path) {
		name = l->p_path;
		nl = strlen(name);
	} else {
		size_t bn = strnlen((const char *)h, 100), pn = 0;
		if (memcmp(h + 257, "ustar", 5) == 0)
			pn = strnlen((const char *)h + 345, 155);
		if (pn)
			snprintf(full, sizeof(full), "%.*s/%.*s", (int)pn, (const char *)h + 345, (int)bn, (const char *)h);
		else
			snprintf(full, sizeof(full), "%.*s", (int)bn, (const char *)h);
		name = full;
		nl = strlen(full);
	}
	while (nl >= 2 && name[0] == '.' && name[1] == '/') {
		name += 2;
		nl -= 2;
	}
	size_t rl = strlen(l->root);
	if (!l->seen_root) {
		size_t k = nl;
		while (k && name[k - 1] == '/')
			k--;
		if (flag != '5' || k != rl || memcmp(name, l->root, rl) != 0)
			return fail(l, "the first entry is not the directory asked for", at);
		l->seen_root = true;
		return 0;
	}
	if (nl <= rl || memcmp(name, l->root, rl) != 0 || name[rl] != '/')
		return fail(l, "an entry outside the directory asked for", at);
	const char *rest = name + rl + 1;
	size_t rn = nl - rl - 1;
	if (rn && rest[rn - 1] == '/')
		rn--;
	if (rn && memchr(rest, '/', rn)) {
		l->deep++;
		return 0;
	}
	/* a depth-1 header: its block and its extension headers are what the listing is for */
	l->head_bytes += 512 + l->ext_total;
	if (!good_name(rest, rn)) {
		l->refused++;
		return 0;
	}
	if (l->n == l->max_entries) {
		l->cut = MAFSBX_AL_CUT_ENTRIES;
		l->st = ST_STOP;
		return -ECANCELED;
	}
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 32;
		if (nc > l->max_entries)
			nc = l->max_entries;
		struct mafsbx_archlist_entry *nv = realloc(l->v, nc * sizeof(*nv));
		if (!nv)
			return nomem(l);
		l->v = nv;
		l->cap = nc;
	}
	struct mafsbx_archlist_entry *e = &l->v[l->n];
	memset(e, 0, sizeof(*e));
	uint64_t mode = 0, uid = 0, gid = 0, mt = 0;
	if (mafsbx_tar_num_field(h + 100, 8, &mode) < 0 || mafsbx_tar_num_field(h + 108, 8, &uid) < 0 || mafsbx_tar_num_field(h + 116, 8, &gid) < 0 ||
	    mafsbx_tar_num_field(h + 136, 12, &mt) < 0)
		return fail(l, "a malformed mode, uid, gid or mtime field", at);
	e->typeflag = flag ? flag : '0';
	e->mode = type_bits(flag) | (mode_t)(mode & 07777);
	e->uid = (uid_t)(l->p_has_uid ? l->p_uid : uid);
	e->gid = (gid_t)(l->p_has_gid ? l->p_gid : gid);
	e->size = flag == '0' || flag == '\0' || flag == '7' ? size : 0;
	if (l->p_has_mtime)
		e->mtime = l->p_mtime;
	else
		e->mtime.tv_sec = (time_t)mt;
	if (!(e->name = strndup(rest, rn)))
		return nomem(l);
	l->n++;
	return 0;
}

/* A whole header block. */
static int header(struct mafsbx_archlist *l)
{
	const unsigned char *h = l->blk;
	size_t at = (size_t)l->bytes;
	if (mafsbx_tar_zero_block(h)) {
		if (l->p_path || l->p_has_size || l->p_has_mtime || l->p_has_uid || l->p_has_gid)
			return fail(l, "the archive ends after an extension header", at);
		if (!l->seen_root)
			return fail(l, "the archive holds no entry", at);
		l->ended = true;
		l->st = ST_END;
		return 0;
	}
	if (!mafsbx_tar_checksum_ok(h))
		return fail(l, "a header with a bad checksum", at);
	char flag = (char)h[156];
	uint64_t size;
	if (mafsbx_tar_num_field(h + 124, 12, &size) < 0)
		return fail(l, "a header with a malformed or negative size", at);
	switch (flag) {
	case 'x': case 'g': case 'L': case 'K':
		if (size > MAFSBX_ARCHLIST_EXT_MAX)
			return fail(l, "an extension header over 64 KiB", at);
		free(l->ext);
		if (!(l->ext = malloc(size + 1)))
			return nomem(l);
		l->ext_len = 0;
		l->ext_want = (size_t)size;
		l->ext_pad = (size_t)((512 - size % 512) % 512);
		l->ext_kind = flag;
		l->ext_total += 512 + (size_t)size + l->ext_pad;
		l->st = ST_EXT;
		return 0;
	case 'S':
		return fail(l, "a sparse entry", at);
	case '0': case '\0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
		break;
	default:
		return fail(l, "an entry of an unknown type", at);
	}
	if (l->p_has_size)
		size = l->p_size;
	/* bodies of header-only types are not in the stream (as the engine's writer makes them) */
	uint64_t body = flag == '0' || flag == '\0' || flag == '7' ? size : 0;
	int r = entry(l, h, flag, size);
	pending_clear(l);
	if (r < 0)
		return r;
	l->skip = body + (512 - body % 512) % 512;
	l->st = l->skip ? ST_SKIP : ST_HDR;
	return 0;
}

/* An extension header's data is whole. */
static int extension(struct mafsbx_archlist *l)
{
	l->ext[l->ext_len] = '\0';
	int r = 0;
	if (l->ext_kind == 'x' || l->ext_kind == 'g') {
		r = pax_records(l, l->ext_kind == 'x');
	} else if (l->ext_kind == 'L') {
		size_t n = strnlen(l->ext, l->ext_len);
		char *np = strndup(l->ext, n);
		if (!np)
			return nomem(l);
		free(l->p_path);
		l->p_path = np;
	} /* 'K': a link's long target, not needed for a listing */
	free(l->ext);
	l->ext = NULL;
	l->skip = l->ext_pad;
	l->st = l->skip ? ST_SKIP : ST_HDR;
	return r;
}

int mafsbx_archlist_sink(const void *data, size_t len, void *ctx)
{
	struct mafsbx_archlist *l = ctx;
	const unsigned char *p = data;
	while (len) {
		size_t n;
		int r = 0;
		switch (l->st) {
		case ST_STOP:
			return l->failed ? -(l->error.err ? l->error.err : EPROTO) : -ECANCELED;
		case ST_END:
			/* the end blocks and any padding: taken, bounded by max_bytes */
			l->bytes += len;
			if (l->bytes > l->max_bytes + 64 * 1024)
				return -ECANCELED;
			return 0;
		case ST_HDR:
			n = 512 - l->blk_len < len ? 512 - l->blk_len : len;
			memcpy(l->blk + l->blk_len, p, n);
			l->blk_len += n;
			l->bytes += n;
			if (l->blk_len == 512) {
				l->blk_len = 0;
				r = header(l);
			}
			break;
		case ST_EXT:
			n = l->ext_want - l->ext_len < len ? l->ext_want - l->ext_len : len;
			memcpy(l->ext + l->ext_len, p, n);
			l->ext_len += n;
			l->bytes += n;
			if (l->ext_len == l->ext_want)
				r = extension(l);
			break;
		case ST_SKIP:
			n = l->skip < (uint64_t)len ? (size_t)l->skip : len;
			l->skip -= n;
			l->bytes += n;
			if (!l->skip)
				l->st = ST_HDR;
			break;
		default:
			return -EINVAL;
		}
		if (r < 0)
			return r;
		p += n;
		len -= n;
		if (over_bounds(l))
			return -ECANCELED;
	}
	return 0;
}

static int cmp_entries(const void *a, const void *b)
{
	return strcmp(((const struct mafsbx_archlist_entry *)a)->name, ((const struct mafsbx_archlist_entry *)b)->name);
}

int mafsbx_archlist_finish(struct mafsbx_archlist *l, struct mafsbx_error *err)
{
	if (l->failed) {
		if (err)
			*err = l->error;
		return -(l->error.err ? l->error.err : EPROTO);
	}
	if (l->n > 1) {
		/* stable for equal names is not needed: a repeated name keeps one of its headers */
		qsort(l->v, l->n, sizeof(*l->v), cmp_entries);
		size_t k = 1;
		for (size_t i = 1; i < l->n; i++) {
			if (strcmp(l->v[i].name, l->v[k - 1].name) == 0) {
				free(l->v[i].name);
				l->refused++;
			} else {
				l->v[k++] = l->v[i];
			}
		}
		l->n = k;
	}
	if (l->cut)
		return 1;
	if (!l->ended) {
		l->cut = MAFSBX_AL_SHORT;
		return 1;
	}
	return 0;
}

const struct mafsbx_archlist_entry *mafsbx_archlist_find(const struct mafsbx_archlist *l, const char *name)
{
	if (!l->n)
		return NULL;
	struct mafsbx_archlist_entry key = { .name = (char *)name };
	return bsearch(&key, l->v, l->n, sizeof(*l->v), cmp_entries);
}

const char *mafsbx_archlist_cut_name(enum mafsbx_archlist_cut c)
{
	switch (c) {
	case MAFSBX_AL_WHOLE: return "not cut";
	case MAFSBX_AL_CUT_BYTES: return "the archive passed its byte bound";
	case MAFSBX_AL_CUT_ENTRIES: return "the directory holds more entries than a listing keeps";
	case MAFSBX_AL_CUT_DEEP: return "the entries below the directory's own dominate its archive";
	case MAFSBX_AL_CUT_WASTE: return "file contents dominate the archive";
	case MAFSBX_AL_SHORT: return "the archive ended before its end block";
	}
	return "cut";
}
