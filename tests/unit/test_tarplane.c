/*
 * test_tarplane.c: building PUT tars and parsing GET tars within the upstream
 * bounds (doc/upstream.md §4.10, §11.2):
 * round trips, pax records (valid and each kind of invalid), long names (pax
 * and GNU), the 32-header and 64 KiB limits, sparse and negative sizes, the
 * cap decided from the header, short bodies, and the push reader fed in
 * pieces of every size.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tarplane.h"

/* ---- hand-made tars ---------------------------------------------------- */

static void octal(char *f, size_t n, uint64_t v)
{
	snprintf(f, n, "%0*llo", (int)(n - 1), (unsigned long long)v);
}

static void header(struct mafsbx_buf *b, const char *name, char type, uint64_t size, const char *link)
{
	char h[512];
	memset(h, 0, sizeof(h));
	strncpy(h, name, 100);
	octal(h + 100, 8, 0644);
	octal(h + 108, 8, 1000);
	octal(h + 116, 8, 1000);
	octal(h + 124, 12, size);
	octal(h + 136, 12, 1700000000);
	h[156] = type;
	if (link)
		strncpy(h + 157, link, 100);
	memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	h[155] = ' ';
	mafsbx_buf_append(b, h, 512);
}

static void pad(struct mafsbx_buf *b)
{
	static const char z[512];
	if (b->len % 512)
		mafsbx_buf_append(b, z, 512 - b->len % 512);
}

static void data(struct mafsbx_buf *b, const void *p, size_t n)
{
	mafsbx_buf_append(b, p, n);
	pad(b);
}

static void end_blocks(struct mafsbx_buf *b)
{
	static const char z[1024];
	mafsbx_buf_append(b, z, 1024);
}

/* One pax record with its self-counting length. */
static void pax_record(struct mafsbx_buf *b, const char *key, const char *val)
{
	size_t body = strlen(key) + strlen(val) + 3; /* ' ' '=' '\n' */
	size_t len = body + 1;
	for (;;) {
		char t[32];
		size_t d = (size_t)snprintf(t, sizeof(t), "%zu", len);
		if (d + body == len)
			break;
		len = d + body;
	}
	mafsbx_buf_printf(b, "%zu %s=%s\n", len, key, val);
}

static void pax_header(struct mafsbx_buf *b, const struct mafsbx_buf *records)
{
	header(b, "PaxHeaders/x", 'x', records->len, NULL);
	data(b, records->data, records->len);
}

/* ---- feeding ----------------------------------------------------------- */

struct result {
	int sink_rc;      /* first negative sink return, or 0 */
	int finish_rc;
	struct mafsbx_error err;
	struct mafsbx_tar_entry entry;
	struct mafsbx_buf body;
	size_t fed;       /* bytes accepted before the sink refused */
};

static void feed(const void *tar, size_t len, size_t piece, const struct mafsbx_tar_reader_opts *o, struct result *res)
{
	memset(res, 0, sizeof(*res));
	struct mafsbx_tar_reader_opts opts = { .out_fd = -1 };
	if (o)
		opts = *o;
	if (opts.out_fd < 0 && !opts.out_buf)
		opts.out_buf = &res->body;
	struct mafsbx_tar_reader *r = mafsbx_tar_reader_new(&opts, NULL);
	assert_non_null(r);
	const char *p = tar;
	size_t off = 0;
	while (off < len) {
		size_t n = len - off < piece ? len - off : piece;
		int rc = mafsbx_tar_reader_sink(p + off, n, r);
		if (rc < 0) {
			res->sink_rc = rc;
			assert_non_null(mafsbx_tar_reader_error(r));
			break;
		}
		off += n;
	}
	res->fed = off;
	res->finish_rc = mafsbx_tar_reader_finish(r, &res->entry, &res->err);
	mafsbx_tar_reader_free(r);
}

static void result_free(struct result *res)
{
	mafsbx_tar_entry_free(&res->entry);
	mafsbx_buf_free(&res->body);
}

static const size_t pieces[] = { 1, 7, 511, 512, 513, 4096, 1 << 20 };

/* ---- tests ------------------------------------------------------------- */

static void test_build_and_parse_roundtrip(void **state)
{
	(void)state;
	const char content[] = "hello, guest\n";
	struct mafsbx_tar *t = mafsbx_tar_new(NULL);
	assert_non_null(t);
	assert_int_equal(mafsbx_tar_add_file(t, "/maf-sandbox/work/out.txt", content, sizeof(content) - 1, 0640, 1000,
					     1001, 1700000000, NULL), 0);
	const void *tar;
	size_t len;
	assert_int_equal(mafsbx_tar_finish(t, &tar, &len, NULL), 0);
	assert_int_equal(len % 512, 0);
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		struct result res;
		feed(tar, len, pieces[i], NULL, &res);
		assert_int_equal(res.finish_rc, 0);
		assert_int_equal(res.entry.kind, MAFSBX_TK_FILE);
		assert_string_equal(res.entry.path, "maf-sandbox/work/out.txt");
		assert_int_equal(res.entry.size, sizeof(content) - 1);
		assert_int_equal(res.entry.mode, S_IFREG | 0640);
		assert_int_equal(res.entry.uid, 1000);
		assert_int_equal(res.entry.gid, 1001);
		assert_int_equal(res.entry.mtime, 1700000000);
		assert_int_equal(res.body.len, sizeof(content) - 1);
		assert_memory_equal(res.body.data, content, sizeof(content) - 1);
		result_free(&res);
	}
	mafsbx_tar_free(t);
}

static void test_build_dirs_symlink_and_order(void **state)
{
	(void)state;
	struct mafsbx_tar *t = mafsbx_tar_new(NULL);
	assert_int_equal(mafsbx_tar_add_dir(t, "w/deep", 0755, 1000, 1000, 1, NULL), 0);
	assert_int_equal(mafsbx_tar_add_dir(t, "w/deep/er/", 0750, 1000, 1000, 1, NULL), 0);
	assert_int_equal(mafsbx_tar_add_symlink(t, "w/link", "/etc", 0, 0, 1, NULL), 0);
	assert_int_equal(mafsbx_tar_add_file(t, "w/deep/er/f", "x", 1, 04755, 0, 0, 1, NULL), 0);
	const void *tar;
	size_t len;
	assert_int_equal(mafsbx_tar_finish(t, &tar, &len, NULL), 0);
	/* walk the entries with the pull parser, one at a time */
	const char *p = tar;
	size_t off = 0;
	const struct { const char *path; enum mafsbx_tar_kind kind; mode_t mode; const char *link; } want[] = {
		{ "w/deep/", MAFSBX_TK_DIR, S_IFDIR | 0755, "" },
		{ "w/deep/er/", MAFSBX_TK_DIR, S_IFDIR | 0750, "" },
		{ "w/link", MAFSBX_TK_SYMLINK, S_IFLNK | 0777, "/etc" },
		{ "w/deep/er/f", MAFSBX_TK_FILE, S_IFREG | 04755, "" },
	};
	for (size_t i = 0; i < 4; i++) {
		struct mafsbx_tar_entry e;
		size_t doff, needed;
		assert_int_equal(mafsbx_tar_parse_prefix(p + off, len - off, &e, &doff, &needed, NULL), 1);
		assert_string_equal(e.path, want[i].path);
		assert_int_equal(e.kind, want[i].kind);
		assert_int_equal(e.mode, want[i].mode);
		assert_string_equal(e.linkname, want[i].link);
		off += doff + ((e.size + 511) & ~(uint64_t)511);
		mafsbx_tar_entry_free(&e);
	}
	mafsbx_tar_free(t);
}

static void test_long_names_pax(void **state)
{
	(void)state;
	char name[600];
	memset(name, 'd', 200);
	name[200] = '/';
	memset(name + 201, 'f', 250);
	strcpy(name + 451, "/ünïcödé-\xff-leaf.txt");
	char target[3000];
	memset(target, 't', 2999);
	target[2999] = '\0';
	struct mafsbx_tar *t = mafsbx_tar_new(NULL);
	assert_int_equal(mafsbx_tar_add_file(t, name, "abc", 3, 0644, 1000, 1000, 5, NULL), 0);
	const void *tar;
	size_t len;
	assert_int_equal(mafsbx_tar_finish(t, &tar, &len, NULL), 0);
	assert_int_equal(((const char *)tar)[156], 'x'); /* a pax header came first */
	struct result res;
	feed(tar, len, 100, NULL, &res);
	assert_int_equal(res.finish_rc, 0);
	assert_string_equal(res.entry.path, name);
	assert_int_equal(res.body.len, 3);
	result_free(&res);
	mafsbx_tar_free(t);

	t = mafsbx_tar_new(NULL);
	assert_int_equal(mafsbx_tar_add_symlink(t, "l", target, 0, 0, 5, NULL), 0);
	assert_int_equal(mafsbx_tar_finish(t, &tar, &len, NULL), 0);
	feed(tar, len, 4096, NULL, &res);
	assert_int_equal(res.finish_rc, 0);
	assert_int_equal(res.entry.kind, MAFSBX_TK_SYMLINK);
	assert_string_equal(res.entry.linkname, target);
	result_free(&res);
	mafsbx_tar_free(t);
}

static void test_gnu_long_name(void **state)
{
	(void)state;
	char name[300];
	memset(name, 'g', 299);
	name[299] = '\0';
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	header(&b, "././@LongLink", 'L', 300, NULL);
	data(&b, name, 300);
	header(&b, "truncated", '0', 4, NULL);
	data(&b, "body", 4);
	end_blocks(&b);
	struct result res;
	feed(b.data, b.len, 512, NULL, &res);
	assert_int_equal(res.finish_rc, 0);
	assert_string_equal(res.entry.path, name);
	assert_int_equal(res.body.len, 4);
	result_free(&res);
	mafsbx_buf_free(&b);
}

static void test_pax_size_override(void **state)
{
	(void)state;
	struct mafsbx_buf rec = MAFSBX_BUF_INIT, b = MAFSBX_BUF_INIT;
	pax_record(&rec, "size", "5");
	pax_record(&rec, "path", "from-pax.txt");
	pax_record(&rec, "uid", "4242");
	pax_header(&b, &rec);
	header(&b, "from-ustar", '0', 0, NULL);
	data(&b, "12345", 5);
	end_blocks(&b);
	struct result res;
	feed(b.data, b.len, 3, NULL, &res);
	assert_int_equal(res.finish_rc, 0);
	assert_string_equal(res.entry.path, "from-pax.txt");
	assert_int_equal(res.entry.size, 5);
	assert_int_equal(res.entry.uid, 4242);
	assert_memory_equal(res.body.data, "12345", 5);
	result_free(&res);
	mafsbx_buf_free(&rec);
	mafsbx_buf_free(&b);
}

/* A tar whose first header is a pax header holding `raw` verbatim. */
static void expect_pax_refused(const char *raw, size_t rawlen, const char *what)
{
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	header(&b, "PaxHeaders/x", 'x', rawlen, NULL);
	data(&b, raw, rawlen);
	header(&b, "f", '0', 1, NULL);
	data(&b, "x", 1);
	end_blocks(&b);
	struct result res;
	feed(b.data, b.len, 512, NULL, &res);
	if (res.finish_rc != -EIO || res.err.kind != MAFSBX_EK_PROTOCOL || !strstr(res.err.message, what))
		fail_msg("pax '%.*s': rc %d kind %d message '%s', want '%s'", (int)rawlen, raw, res.finish_rc,
			 res.err.kind, res.err.message, what);
	assert_int_equal(res.body.len, 0);
	result_free(&res);
	mafsbx_buf_free(&b);
}

static void test_pax_strict(void **state)
{
	(void)state;
	const char *const bad[][2] = {
		{ "garbage\n", "malformed pax record" },
		{ "8 path=ab\n", "malformed pax record" },       /* the length does not cover the record */
		{ "13 path=abc\n", "malformed pax record" },     /* one too many */
		{ "11 pathabc\n", "malformed pax record" },      /* no '=' */
		{ "6 =ab\n", "malformed pax record" },           /* empty key */
		{ "12 path=abc\n3", "malformed pax record" },    /* a trailing fragment */
		{ "010 a=bcd\n", "malformed pax record" },       /* a leading zero */
		{ "12 path=abcX", "malformed pax record" },      /* no newline at the end */
		{ "24 GNU.sparse.size=1000\n", "sparse" },
		{ "22 GNU.sparse.map=0,1\n", "sparse" },
		{ "12 size=12a\n", "size value is not a decimal" },
		{ "10 uid=-1\n", "uid value is not a decimal" },
		{ "8 gid=x\n", "gid value is not a decimal" },
		{ "8 size=\n", "size value is not a decimal" },
		{ "29 size=99999999999999999999\n", "size value is not a decimal" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_pax_refused(bad[i][0], strlen(bad[i][0]), bad[i][1]);
	/* valid records pass */
	struct mafsbx_buf rec = MAFSBX_BUF_INIT, b = MAFSBX_BUF_INIT;
	pax_record(&rec, "mtime", "1700000000.123456789");
	pax_record(&rec, "comment", "a = b = c");
	pax_record(&rec, "gid", "0");
	pax_header(&b, &rec);
	header(&b, "f", '0', 1, NULL);
	data(&b, "x", 1);
	end_blocks(&b);
	struct result res;
	feed(b.data, b.len, 512, NULL, &res);
	assert_int_equal(res.finish_rc, 0);
	assert_int_equal(res.entry.gid, 0);
	result_free(&res);
	mafsbx_buf_free(&rec);
	mafsbx_buf_free(&b);
}

static void build_n_headers(struct mafsbx_buf *b, unsigned n_ext)
{
	for (unsigned i = 0; i < n_ext; i++) {
		struct mafsbx_buf rec = MAFSBX_BUF_INIT;
		char v[32];
		snprintf(v, sizeof(v), "header %u", i);
		pax_record(&rec, "comment", v);
		pax_header(b, &rec);
		mafsbx_buf_free(&rec);
	}
	header(b, "f", '0', 3, NULL);
	data(b, "abc", 3);
	end_blocks(b);
}

static void test_header_limit(void **state)
{
	(void)state;
	/* 31 extension headers + the entry = 32 headers: accepted (2 blocks each: 32 KiB prefix) */
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	build_n_headers(&b, 31);
	struct result res;
	feed(b.data, b.len, 1000, NULL, &res);
	assert_int_equal(res.finish_rc, 0);
	assert_int_equal(res.body.len, 3);
	result_free(&res);
	mafsbx_buf_free(&b);
	/* 32 + the entry = 33 headers: refused before any body byte */
	build_n_headers(&b, 32);
	feed(b.data, b.len, 1000, NULL, &res);
	assert_int_equal(res.finish_rc, -EIO);
	assert_non_null(strstr(res.err.message, "32-header limit"));
	assert_int_equal(res.body.len, 0);
	result_free(&res);
	/* the pull parser says the same */
	struct mafsbx_tar_entry e;
	size_t doff, needed;
	struct mafsbx_error err;
	assert_int_equal(mafsbx_tar_parse_prefix(b.data, b.len, &e, &doff, &needed, &err), -EIO);
	mafsbx_buf_free(&b);
}

static void test_prefix_limit_and_needed(void **state)
{
	(void)state;
	/* a 60 KiB pax body fits within 64 KiB; the pull parser asks for more first */
	struct mafsbx_buf rec = MAFSBX_BUF_INIT, b = MAFSBX_BUF_INIT;
	char *big = malloc(61000);
	memset(big, 'c', 60999);
	big[60999] = '\0';
	pax_record(&rec, "comment", big);
	pax_header(&b, &rec);
	header(&b, "f", '0', 2, NULL);
	data(&b, "ok", 2);
	end_blocks(&b);
	struct mafsbx_tar_entry e;
	size_t doff = 0, needed = 0;
	struct mafsbx_error err;
	assert_int_equal(mafsbx_tar_parse_prefix(b.data, 512, &e, &doff, &needed, &err), 0);
	size_t want_needed = 512 + ((rec.len + 511) & ~(size_t)511);
	assert_int_equal(needed, want_needed);
	assert_int_equal(mafsbx_tar_parse_prefix(b.data, needed, &e, &doff, &needed, &err), 0);
	assert_int_equal(needed, want_needed + 512);
	assert_int_equal(mafsbx_tar_parse_prefix(b.data, needed, &e, &doff, &needed, &err), 1);
	assert_int_equal(doff, want_needed + 512);
	mafsbx_tar_entry_free(&e);
	struct result res;
	feed(b.data, b.len, 8192, NULL, &res);
	assert_int_equal(res.finish_rc, 0);
	result_free(&res);
	mafsbx_buf_free(&rec);
	mafsbx_buf_free(&b);
	/* a 70 KiB pax body does not: refused */
	big = realloc(big, 71000);
	memset(big, 'c', 70999);
	big[70999] = '\0';
	pax_record(&rec, "comment", big);
	pax_header(&b, &rec);
	header(&b, "f", '0', 2, NULL);
	data(&b, "ok", 2);
	end_blocks(&b);
	feed(b.data, b.len, 8192, NULL, &res);
	assert_int_equal(res.finish_rc, -EIO);
	assert_non_null(strstr(res.err.message, "64 KiB metadata limit"));
	result_free(&res);
	mafsbx_buf_free(&rec);
	mafsbx_buf_free(&b);
	free(big);
}

static void test_sparse_negative_checksum(void **state)
{
	(void)state;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	struct result res;
	header(&b, "sparse", 'S', 0, NULL);
	end_blocks(&b);
	feed(b.data, b.len, 512, NULL, &res);
	assert_int_equal(res.finish_rc, -EIO);
	assert_non_null(strstr(res.err.message, "sparse"));
	result_free(&res);
	mafsbx_buf_free(&b);

	/* base-256 negative size */
	header(&b, "neg", '0', 0, NULL);
	memset(b.data + 124, 0xff, 12);
	memset(b.data + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < 512; i++)
		sum += (unsigned char)b.data[i];
	snprintf(b.data + 148, 8, "%06o", sum);
	b.data[155] = ' ';
	end_blocks(&b);
	feed(b.data, b.len, 512, NULL, &res);
	assert_int_equal(res.finish_rc, -EIO);
	assert_non_null(strstr(res.err.message, "negative size"));
	result_free(&res);
	mafsbx_buf_free(&b);

	header(&b, "bad", '0', 1, NULL);
	b.data[0] = 'X'; /* checksum no longer matches */
	data(&b, "x", 1);
	end_blocks(&b);
	feed(b.data, b.len, 512, NULL, &res);
	assert_int_equal(res.finish_rc, -EIO);
	assert_non_null(strstr(res.err.message, "checksum"));
	result_free(&res);
	mafsbx_buf_free(&b);
}

static void test_cap_from_header(void **state)
{
	(void)state;
	/* the header claims 10 MiB; only the header is fed; the cap is 1 MiB */
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	header(&b, "big.bin", '0', 10u << 20, NULL);
	char chunk[4096];
	memset(chunk, 'B', sizeof(chunk));
	mafsbx_buf_append(&b, chunk, sizeof(chunk));
	struct mafsbx_tar_reader_opts o = { .max_body = 1u << 20, .out_fd = -1 };
	struct result res;
	feed(b.data, b.len, 512, &o, &res);
	assert_true(res.sink_rc < 0);
	assert_int_equal(res.fed, 0); /* refused on the piece that completed the header */
	assert_int_equal(res.finish_rc, -EFBIG);
	assert_int_equal(res.err.kind, MAFSBX_EK_TOO_BIG);
	assert_non_null(strstr(res.err.message, "is 10485760 bytes and the caller allowed 1048576"));
	assert_int_equal(res.body.len, 0);
	result_free(&res);
	/* exactly at the cap is fine */
	mafsbx_buf_free(&b);
	header(&b, "edge", '0', 1000, NULL);
	mafsbx_buf_append(&b, chunk, 1000);
	pad(&b);
	end_blocks(&b);
	o.max_body = 1000;
	feed(b.data, b.len, 333, &o, &res);
	assert_int_equal(res.finish_rc, 0);
	assert_int_equal(res.body.len, 1000);
	result_free(&res);
	o.max_body = 999;
	feed(b.data, b.len, 333, &o, &res);
	assert_int_equal(res.finish_rc, -EFBIG);
	result_free(&res);
	mafsbx_buf_free(&b);
}

static void test_truncated(void **state)
{
	(void)state;
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	char chunk[1000];
	memset(chunk, 'T', sizeof(chunk));
	header(&b, "t.txt", '0', 1000, NULL);
	mafsbx_buf_append(&b, chunk, 500);
	struct result res;
	feed(b.data, b.len, 64, NULL, &res);
	assert_int_equal(res.sink_rc, 0);
	assert_int_equal(res.finish_rc, -EIO);
	assert_non_null(strstr(res.err.message, "incomplete body: got 500 of 1000"));
	result_free(&res);
	/* cut inside the header, inside a pax body, and an empty stream */
	feed(b.data, 300, 64, NULL, &res);
	assert_int_equal(res.finish_rc, -EIO);
	assert_non_null(strstr(res.err.message, "no tar header"));
	result_free(&res);
	feed(b.data, 0, 64, NULL, &res);
	assert_non_null(strstr(res.err.message, "no tar header"));
	result_free(&res);
	mafsbx_buf_free(&b);
	struct mafsbx_buf rec = MAFSBX_BUF_INIT;
	pax_record(&rec, "path", "p");
	pax_header(&b, &rec);
	feed(b.data, 700, 64, NULL, &res);
	assert_non_null(strstr(res.err.message, "incomplete tar metadata"));
	result_free(&res);
	mafsbx_buf_free(&b);
	mafsbx_buf_free(&rec);
	/* an empty archive (what the engine sends for a socket) */
	end_blocks(&b);
	feed(b.data, b.len, 64, NULL, &res);
	assert_int_equal(res.finish_rc, -EIO);
	assert_non_null(strstr(res.err.message, "no entry"));
	result_free(&res);
	mafsbx_buf_free(&b);
}

static void test_kinds_and_file_only(void **state)
{
	(void)state;
	const struct { char type; enum mafsbx_tar_kind kind; const char *word; } rows[] = {
		{ '2', MAFSBX_TK_SYMLINK, "symbolic link" }, { '1', MAFSBX_TK_OTHER, "hard link" },
		{ '5', MAFSBX_TK_DIR, "directory" },         { '6', MAFSBX_TK_OTHER, "fifo" },
		{ '3', MAFSBX_TK_OTHER, "character device" }, { '4', MAFSBX_TK_OTHER, "block device" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mafsbx_buf b = MAFSBX_BUF_INIT;
		header(&b, rows[i].type == '5' ? "d/" : "x", rows[i].type, 0,
		       rows[i].type == '1' || rows[i].type == '2' ? "target" : NULL);
		end_blocks(&b);
		struct result res;
		feed(b.data, b.len, 512, NULL, &res);
		assert_int_equal(res.finish_rc, 0);
		assert_int_equal(res.entry.kind, rows[i].kind);
		assert_int_equal(res.entry.size, 0);
		if (rows[i].type == '1' || rows[i].type == '2')
			assert_string_equal(res.entry.linkname, "target");
		result_free(&res);
		struct mafsbx_tar_reader_opts o = { .file_only = true, .out_fd = -1 };
		feed(b.data, b.len, 512, &o, &res);
		assert_int_equal(res.finish_rc, -EPERM);
		assert_int_equal(res.err.kind, MAFSBX_EK_NOT_REGULAR);
		assert_non_null(strstr(res.err.message, rows[i].word));
		result_free(&res);
		mafsbx_buf_free(&b);
	}
	/* an unknown type flag is refused */
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	header(&b, "v", 'V', 0, NULL);
	end_blocks(&b);
	struct result res;
	feed(b.data, b.len, 512, NULL, &res);
	assert_int_equal(res.finish_rc, -EIO);
	result_free(&res);
	mafsbx_buf_free(&b);
}

static void test_body_to_fd_and_trailer(void **state)
{
	(void)state;
	size_t n = 300000;
	unsigned char *content = malloc(n);
	for (size_t i = 0; i < n; i++)
		content[i] = (unsigned char)(i * 7 + 3);
	struct mafsbx_tar *t = mafsbx_tar_new(NULL);
	int src = memfd_create("src", MFD_CLOEXEC);
	assert_true(src >= 0);
	assert_int_equal(write(src, content, n), (ssize_t)n);
	assert_int_equal(mafsbx_tar_add_file_fd(t, "spooled.bin", src, n, 0600, 1, 2, 3, NULL), 0);
	/* asking for more than the spool holds fails */
	struct mafsbx_error err;
	assert_true(mafsbx_tar_add_file_fd(t, "short.bin", src, n + 1, 0600, 1, 2, 3, &err) < 0);
	close(src);
	mafsbx_tar_free(t);

	t = mafsbx_tar_new(NULL);
	assert_int_equal(mafsbx_tar_add_file(t, "f.bin", content, n, 0600, 1, 2, 3, NULL), 0);
	assert_int_equal(mafsbx_tar_add_file(t, "second", "zz", 2, 0600, 1, 2, 3, NULL), 0);
	const void *tar;
	size_t len;
	assert_int_equal(mafsbx_tar_finish(t, &tar, &len, NULL), 0);
	int fd = memfd_create("spool", MFD_CLOEXEC);
	struct mafsbx_tar_reader_opts o = { .out_fd = fd, .file_only = true };
	struct result res;
	feed(tar, len, 16384, &o, &res);
	assert_int_equal(res.finish_rc, 0);
	struct stat st;
	fstat(fd, &st);
	assert_int_equal(st.st_size, n);
	unsigned char *back = malloc(n);
	assert_int_equal(pread(fd, back, n, 0), (ssize_t)n);
	assert_memory_equal(back, content, n);
	result_free(&res);
	close(fd);
	/* a trailer limit below the second entry: "more than the one entry" */
	o.out_fd = -1;
	o.max_trailer = 100;
	feed(tar, len, 16384, &o, &res);
	assert_int_equal(res.finish_rc, -EIO);
	assert_non_null(strstr(res.err.message, "more than the one entry"));
	result_free(&res);
	free(back);
	free(content);
	mafsbx_tar_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_and_parse_roundtrip),
		cmocka_unit_test(test_build_dirs_symlink_and_order),
		cmocka_unit_test(test_long_names_pax),
		cmocka_unit_test(test_gnu_long_name),
		cmocka_unit_test(test_pax_size_override),
		cmocka_unit_test(test_pax_strict),
		cmocka_unit_test(test_header_limit),
		cmocka_unit_test(test_prefix_limit_and_needed),
		cmocka_unit_test(test_sparse_negative_checksum),
		cmocka_unit_test(test_cap_from_header),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_kinds_and_file_only),
		cmocka_unit_test(test_body_to_fd_and_trailer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
