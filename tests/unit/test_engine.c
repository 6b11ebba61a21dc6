/*
 * test_engine.c: the pure parts of the engine client: decoding of the
 * X-Docker-Container-Path-Stat header (Go FileMode bits and RFC 3339 times
 * exactly as doc/engine-notes.md §1.1 measured them), the exec frame
 * demultiplexer, and the percent-encoding of query values and filters.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base64.h"
#include "engine.h"

/* ---- helpers ------------------------------------------------------------- */

static char *b64(const char *s)
{
	char *out = mafsbx_base64_encode(s, strlen(s), MAFSBX_B64_STD);
	assert_non_null(out);
	return out;
}

static int decode_json(const char *json, struct mafsbx_path_stat *st, struct mafsbx_error *err)
{
	char *h = b64(json);
	int r = mafsbx_path_stat_decode(h, st, err);
	free(h);
	return r;
}

/* 2026-12-02T09:05:10Z */
#define T0 1796202310LL

/* ---- stat header --------------------------------------------------------- */

static void test_stat_file_from_doc(void **state)
{
	(void)state;
	/* The literal header of doc/engine-notes.md §1.1. */
	static const char hdr[] =
		"eyJuYW1lIjoiZmlsZSIsInNpemUiOjYsIm1vZGUiOjQxNiwibXRpbWUiOiIyMDI2LTEyLTAyVDA5OjA1OjEwLjgyMzA1MjQwNFoi"
		"LCJsaW5rVGFyZ2V0IjoiIn0=";
	char *mine = b64("{\"name\":\"file\",\"size\":6,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10.823052404Z\","
			 "\"linkTarget\":\"\"}");
	assert_string_equal(mine, hdr);  /* the test's own encoder agrees with the engine */
	free(mine);
	struct mafsbx_path_stat st;
	struct mafsbx_error err;
	assert_int_equal(mafsbx_path_stat_decode(hdr, &st, &err), 0);
	assert_string_equal(st.name, "file");
	assert_int_equal(st.size, 6);
	assert_int_equal(st.go_mode, 416);
	assert_int_equal(st.mode, S_IFREG | 0640);
	assert_true(S_ISREG(st.mode));
	assert_int_equal(st.mtime.tv_sec, T0);
	assert_int_equal(st.mtime.tv_nsec, 823052404);
	assert_string_equal(st.link_target, "");
}

struct mode_row {
	const char *name;
	uint32_t go_mode;
	mode_t want;
};

/* The exact numbers observed in doc/engine-notes.md §1.1. */
static const struct mode_row mode_rows[] = {
	{ "regular 0640", 416u, S_IFREG | 0640 },
	{ "directory 0755", 2147484141u, S_IFDIR | 0755 },
	{ "symlink", 134218239u, S_IFLNK | 0777 },
	{ "block device", 67109284u, S_IFBLK | 0644 },
	{ "char device", 69206436u, S_IFCHR | 0644 },
	{ "fifo", 33554852u, S_IFIFO | 0644 },
	{ "unix socket", 16777709u, S_IFSOCK | 0755 },
	{ "setuid 4755", 8389101u, S_IFREG | S_ISUID | 0755 },
	{ "setgid dir 2755", 2151678445u, S_IFDIR | S_ISGID | 0755 },
	{ "sticky dir 1777", 2148532735u, S_IFDIR | S_ISVTX | 0777 },
};

static void test_go_mode_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(mode_rows) / sizeof(mode_rows[0]); i++) {
		mode_t got = mafsbx_go_mode_to_st(mode_rows[i].go_mode);
		if (got != mode_rows[i].want)
			fail_msg("%s: got 0%o want 0%o", mode_rows[i].name, (unsigned)got, (unsigned)mode_rows[i].want);
	}
	/* Hex forms of the same table, to catch a mistyped decimal. */
	assert_int_equal(mafsbx_go_mode_to_st(0x800001ed), S_IFDIR | 0755);
	assert_int_equal(mafsbx_go_mode_to_st(0x042001a4), S_IFCHR | 0644);
	assert_int_equal(mafsbx_go_mode_to_st(0x801001ff), S_IFDIR | S_ISVTX | 0777);
	/* ModeIrregular: no file type we could serve. */
	assert_int_equal(mafsbx_go_mode_to_st((1u << 19) | 0644) & S_IFMT, 0);
}

static void test_stat_every_type(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(mode_rows) / sizeof(mode_rows[0]); i++) {
		char json[512];
		snprintf(json, sizeof(json),
			 "{\"name\":\"n%zu\",\"size\":%zu,\"mode\":%u,\"mtime\":\"2026-12-02T09:05:10Z\",\"linkTarget\":\"%s\"}",
			 i, i * 10, mode_rows[i].go_mode, S_ISLNK(mode_rows[i].want) ? "/w/file" : "");
		struct mafsbx_path_stat st;
		struct mafsbx_error err;
		mafsbx_error_clear(&err);
		if (decode_json(json, &st, &err) != 0)
			fail_msg("%s: %s", mode_rows[i].name, err.message);
		assert_int_equal(st.mode, mode_rows[i].want);
		assert_int_equal(st.go_mode, mode_rows[i].go_mode);
		assert_int_equal(st.size, (int64_t)(i * 10));
		assert_int_equal(st.mtime.tv_sec, T0);
		assert_int_equal(st.mtime.tv_nsec, 0);
		assert_string_equal(st.link_target, S_ISLNK(st.mode) ? "/w/file" : "");
	}
}

static void test_stat_mtime_fractions(void **state)
{
	(void)state;
	struct {
		const char *mtime;
		long long sec;
		long nsec;
	} rows[] = {
		{ "2026-12-02T09:05:10Z", T0, 0 },                     /* 0 digits (ns == 0 trimmed away) */
		{ "2026-12-02T09:05:10.823052404Z", T0, 823052404 },   /* 9 digits */
		{ "2026-12-02T09:05:15.84894495Z", T0 + 5, 848944950 }, /* 8 digits, as observed */
		{ "2026-12-02T09:05:10.1Z", T0, 100000000 },           /* 1 digit */
		{ "2026-12-02T11:05:10+02:00", T0, 0 },                /* offsets are honoured */
		{ "2026-12-02T08:35:10.5-00:30", T0, 500000000 },
		{ "0001-01-01T00:00:00Z", -62135596800LL, 0 },         /* Go's zero time */
		{ "2024-02-29T00:00:00Z", 1709164800LL, 0 },           /* leap day */
		{ "1970-01-01T00:00:00Z", 0, 0 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char json[256];
		snprintf(json, sizeof(json), "{\"name\":\"f\",\"size\":1,\"mode\":416,\"mtime\":\"%s\",\"linkTarget\":\"\"}",
			 rows[i].mtime);
		struct mafsbx_path_stat st;
		struct mafsbx_error err;
		mafsbx_error_clear(&err);
		if (decode_json(json, &st, &err) != 0)
			fail_msg("%s: %s", rows[i].mtime, err.message);
		if ((long long)st.mtime.tv_sec != rows[i].sec || st.mtime.tv_nsec != rows[i].nsec)
			fail_msg("%s: got %lld.%09ld", rows[i].mtime, (long long)st.mtime.tv_sec, st.mtime.tv_nsec);
	}
}

static void test_stat_escapes_and_names(void **state)
{
	(void)state;
	struct mafsbx_path_stat st;
	struct mafsbx_error err;
	/* Go writes & as \u0026 and invalid UTF-8 as U+FFFD. */
	assert_int_equal(decode_json("{\"name\":\"a\\u0026b\\ufffd\",\"size\":0,\"mode\":416,"
				     "\"mtime\":\"2026-12-02T09:05:10Z\",\"linkTarget\":\"\"}", &st, &err), 0);
	assert_string_equal(st.name, "a&b\xef\xbf\xbd");
	/* linkTarget may be missing entirely: "" */
	assert_int_equal(decode_json("{\"name\":\"x\",\"size\":0,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10Z\"}",
				     &st, &err), 0);
	assert_string_equal(st.link_target, "");
	/* A long name is cut, not refused (it is never trusted anyway). */
	char json[1024], name[400];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(json, sizeof(json), "{\"name\":\"%s\",\"size\":0,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10Z\"}",
		 name);
	assert_int_equal(decode_json(json, &st, &err), 0);
	assert_int_equal(strlen(st.name), sizeof(st.name) - 1);
}

static void test_stat_malformed_refused(void **state)
{
	(void)state;
	static const char *bad_json[] = {
		"[1,2]",
		"not json",
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"linkTarget\":\"\"}",                       /* no mtime */
		"{\"size\":1,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10Z\"}",                        /* no name */
		"{\"name\":\"x\",\"size\":\"1\",\"mode\":416,\"mtime\":\"2026-12-02T09:05:10Z\"}",     /* string size */
		"{\"name\":\"x\",\"size\":-1,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10Z\"}",        /* negative size */
		"{\"name\":\"x\",\"size\":1,\"mode\":4294967296,\"mtime\":\"2026-12-02T09:05:10Z\"}",  /* mode > 32 bits */
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"mtime\":\"2026-13-02T09:05:10Z\"}",         /* month 13 */
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"mtime\":\"2026-02-30T09:05:10Z\"}",         /* Feb 30 */
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10.Z\"}",        /* dot, no digit */
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10.1234567890Z\"}", /* 10 digits */
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10\"}",          /* no zone */
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"mtime\":\"2026-12-02 09:05:10Z\"}",         /* space */
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10Zjunk\"}",
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10Z\",\"linkTarget\":7}",
		"{\"name\":\"x\",\"size\":1,\"mode\":416,\"mtime\":\"2026-12-02T09:05:10Z\",\"linkTarget\":\"a\\u0000b\"}",
	};
	for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
		struct mafsbx_path_stat st;
		struct mafsbx_error err;
		mafsbx_error_clear(&err);
		int r = decode_json(bad_json[i], &st, &err);
		if (r >= 0)
			fail_msg("accepted: %s", bad_json[i]);
		assert_int_equal(err.kind, MAFSBX_EK_PROTOCOL);
		assert_int_equal(r, -EIO);
	}
	static const char *bad_b64[] = {
		"", "abc", "eyJu!W1lIjoi", "eyJuYW1lIjoi=A==", "====", "e===", "eyJuYW1lIjoi\n",
	};
	for (size_t i = 0; i < sizeof(bad_b64) / sizeof(bad_b64[0]); i++) {
		struct mafsbx_path_stat st;
		struct mafsbx_error err;
		mafsbx_error_clear(&err);
		if (mafsbx_path_stat_decode(bad_b64[i], &st, &err) >= 0)
			fail_msg("accepted base64 \"%s\"", bad_b64[i]);
		assert_int_equal(err.kind, MAFSBX_EK_PROTOCOL);
	}
	/* A link target that does not fit PATH_MAX is refused as too long. */
	size_t n = 5000;
	char *json = malloc(n + 200), *lt = malloc(n + 1);
	assert_non_null(json);
	assert_non_null(lt);
	memset(lt, 'a', n);
	lt[0] = '/';
	lt[n] = '\0';
	snprintf(json, n + 200, "{\"name\":\"x\",\"size\":1,\"mode\":134218239,\"mtime\":\"2026-12-02T09:05:10Z\","
		 "\"linkTarget\":\"%s\"}", lt);
	struct mafsbx_path_stat st;
	struct mafsbx_error err;
	assert_true(decode_json(json, &st, &err) < 0);
	assert_int_equal(err.kind, MAFSBX_EK_NAMETOOLONG);
	free(json);
	free(lt);
	assert_true(mafsbx_path_stat_decode(NULL, &st, &err) < 0);
}

/* ---- demux --------------------------------------------------------------- */

/* Append one frame to buf; returns the new length. */
static size_t frame(unsigned char *buf, size_t at, int stream, const void *payload, uint32_t n)
{
	buf[at] = (unsigned char)stream;
	buf[at + 1] = buf[at + 2] = buf[at + 3] = 0;
	buf[at + 4] = (unsigned char)(n >> 24);
	buf[at + 5] = (unsigned char)(n >> 16);
	buf[at + 6] = (unsigned char)(n >> 8);
	buf[at + 7] = (unsigned char)n;
	memcpy(buf + at + 8, payload, n);
	return at + 8 + n;
}

static size_t sample_stream(unsigned char *s)
{
	size_t n = 0;
	n = frame(s, n, 1, "out-bar-baz\n/w/dir\n", 19);
	n = frame(s, n, 2, "err\n", 4);
	n = frame(s, n, 1, "", 0);                      /* zero-length frame */
	n = frame(s, n, 1, "\377\000\001", 3);          /* exact non-UTF-8 bytes */
	n = frame(s, n, 2, "", 0);
	n = frame(s, n, 2, "more err", 8);
	n = frame(s, n, 1, "tail", 4);
	return n;
}

static void check_sample(const struct mafsbx_exec_result *res)
{
	static const char out[] = "out-bar-baz\n/w/dir\n\377\000\001tail";
	assert_int_equal(res->out_len, sizeof(out) - 1);
	assert_memory_equal(res->out, out, sizeof(out) - 1);
	assert_int_equal(res->out[res->out_len], '\0');
	assert_int_equal(res->err_len, 12);
	assert_memory_equal(res->err, "err\nmore err", 12);
	assert_false(res->truncated);
}

static void test_demux_whole_and_every_split(void **state)
{
	(void)state;
	unsigned char s[256];
	size_t n = sample_stream(s);
	/* In one piece, then cut at every position (split headers and payloads). */
	for (size_t cut = 0; cut <= n; cut++) {
		struct mafsbx_exec_result res;
		memset(&res, 0, sizeof(res));
		struct mafsbx_demux d;
		mafsbx_demux_init(&d, &res, 0);
		assert_int_equal(mafsbx_demux_feed(&d, s, cut), 0);
		assert_int_equal(mafsbx_demux_feed(&d, s + cut, n - cut), 0);
		assert_int_equal(mafsbx_demux_finish(&d), 0);
		check_sample(&res);
		mafsbx_exec_result_free(&res);
	}
	/* One byte at a time. */
	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	struct mafsbx_demux d;
	mafsbx_demux_init(&d, &res, 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(mafsbx_demux_feed(&d, s + i, 1), 0);
	assert_int_equal(mafsbx_demux_finish(&d), 0);
	check_sample(&res);
	mafsbx_exec_result_free(&res);
}

static void test_demux_empty_stream(void **state)
{
	(void)state;
	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	struct mafsbx_demux d;
	mafsbx_demux_init(&d, &res, 0);
	assert_int_equal(mafsbx_demux_finish(&d), 0);
	assert_non_null(res.out);
	assert_non_null(res.err);
	assert_int_equal(res.out_len, 0);
	assert_int_equal(res.err_len, 0);
	mafsbx_exec_result_free(&res);
}

static void test_demux_truncated(void **state)
{
	(void)state;
	unsigned char s[256];
	size_t n = frame(s, 0, 1, "hello", 5);
	/* Stops inside a header (3 of 8 bytes) or inside a payload. */
	size_t cuts[] = { 3, 8, 10, n - 1 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		struct mafsbx_exec_result res;
		memset(&res, 0, sizeof(res));
		struct mafsbx_demux d;
		mafsbx_demux_init(&d, &res, 0);
		assert_int_equal(mafsbx_demux_feed(&d, s, cuts[i]), 0);
		assert_int_equal(mafsbx_demux_finish(&d), -EPROTO);
		mafsbx_exec_result_free(&res);
	}
}

static void test_demux_bad_header(void **state)
{
	(void)state;
	unsigned char s[64];
	struct {
		int byte;
		unsigned char value;
	} bad[] = { { 0, 4 }, { 0, 0x7f }, { 1, 1 }, { 2, 1 }, { 3, 0xff } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = frame(s, 0, 1, "ok", 2);
		n = frame(s, n, 1, "xy", 2);
		s[10 + bad[i].byte] = bad[i].value;  /* corrupt the second header */
		struct mafsbx_exec_result res;
		memset(&res, 0, sizeof(res));
		struct mafsbx_demux d;
		mafsbx_demux_init(&d, &res, 0);
		assert_int_equal(mafsbx_demux_feed(&d, s, n), -EPROTO);
		assert_true(d.error);
		/* Stays broken. */
		assert_int_equal(mafsbx_demux_feed(&d, "", 0), -EPROTO);
		assert_int_equal(mafsbx_demux_finish(&d), -EPROTO);
		assert_int_equal(res.out_len, 2);
		mafsbx_exec_result_free(&res);
	}
	/* Streams 0 (stdin, echoed as stdout by the engine) and 3 (engine error) are allowed. */
	size_t n = frame(s, 0, 0, "a", 1);
	n = frame(s, n, 3, "b", 1);
	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	struct mafsbx_demux d;
	mafsbx_demux_init(&d, &res, 0);
	assert_int_equal(mafsbx_demux_feed(&d, s, n), 0);
	assert_int_equal(mafsbx_demux_finish(&d), 0);
	assert_string_equal((char *)res.out, "a");
	assert_string_equal((char *)res.err, "b");
	mafsbx_exec_result_free(&res);
}

static void test_demux_cap(void **state)
{
	(void)state;
	/* 3 frames of 40 bytes on stdout and 1 of 5 on stderr with a cap of 100 per stream. */
	unsigned char s[512], payload[40];
	memset(payload, 'x', sizeof(payload));
	size_t n = 0;
	n = frame(s, n, 1, payload, 40);
	n = frame(s, n, 2, "small", 5);
	n = frame(s, n, 1, payload, 40);
	n = frame(s, n, 1, payload, 40);
	n = frame(s, n, 2, "after", 5);
	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	struct mafsbx_demux d;
	mafsbx_demux_init(&d, &res, 100);
	assert_int_equal(mafsbx_demux_feed(&d, s, n), 0);
	assert_int_equal(mafsbx_demux_finish(&d), 0);
	assert_true(res.truncated);
	assert_int_equal(res.out_len, 100);
	assert_int_equal(res.err_len, 10);  /* the stream after the cut was still drained */
	assert_memory_equal(res.err, "smallafter", 10);
	mafsbx_exec_result_free(&res);

	/* Exactly at the cap: not truncated. */
	memset(&res, 0, sizeof(res));
	mafsbx_demux_init(&d, &res, 80);
	n = frame(s, 0, 1, payload, 40);
	n = frame(s, n, 1, payload, 40);
	assert_int_equal(mafsbx_demux_feed(&d, s, n), 0);
	assert_int_equal(mafsbx_demux_finish(&d), 0);
	assert_false(res.truncated);
	assert_int_equal(res.out_len, 80);
	mafsbx_exec_result_free(&res);
}

static void test_demux_large_frame(void **state)
{
	(void)state;
	/* A 1 MiB frame fed in odd-sized pieces keeps every byte. */
	size_t len = 1 << 20;
	unsigned char *s = malloc(len + 8);
	assert_non_null(s);
	unsigned char *payload = malloc(len);
	assert_non_null(payload);
	for (size_t i = 0; i < len; i++)
		payload[i] = (unsigned char)(i * 7 + 3);
	frame(s, 0, 2, payload, (uint32_t)len);
	struct mafsbx_exec_result res;
	memset(&res, 0, sizeof(res));
	struct mafsbx_demux d;
	mafsbx_demux_init(&d, &res, 0);
	for (size_t off = 0; off < len + 8;) {
		size_t step = 4093 < len + 8 - off ? 4093 : len + 8 - off;
		assert_int_equal(mafsbx_demux_feed(&d, s + off, step), 0);
		off += step;
	}
	assert_int_equal(mafsbx_demux_finish(&d), 0);
	assert_int_equal(res.err_len, len);
	assert_memory_equal(res.err, payload, len);
	assert_int_equal(res.out_len, 0);
	mafsbx_exec_result_free(&res);
	free(s);
	free(payload);
}

/* ---- query and filter encoding ------------------------------------------ */

static void test_query_escape(void **state)
{
	(void)state;
	struct {
		const char *in, *out;
	} rows[] = {
		{ "", "" },
		{ "AZaz09-._~", "AZaz09-._~" },
		{ "/w/file", "%2Fw%2Ffile" },
		{ "a b+c&d=e?f#g%h", "a%20b%2Bc%26d%3De%3Ff%23g%25h" },
		{ "\xff\x01", "%FF%01" },
		{ "caf\xc3\xa9", "caf%C3%A9" },
		{ "ENV=1:x/y", "ENV%3D1%3Ax%2Fy" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *q = mafsbx_query_escape(rows[i].in);
		assert_non_null(q);
		assert_string_equal(q, rows[i].out);
		free(q);
	}
	assert_null(mafsbx_query_escape(NULL));
}

static void test_filters(void **state)
{
	(void)state;
	json_t *f = mafsbx_filters_new();
	assert_non_null(f);
	char *empty = mafsbx_filters_encode(f);
	assert_string_equal(empty, "%7B%7D");
	free(empty);
	assert_int_equal(mafsbx_filters_add(f, "label", "maf-sandbox.scope=s1"), 0);
	assert_int_equal(mafsbx_filters_add(f, "label", "maf-sandbox.role"), 0);
	assert_int_equal(mafsbx_filters_add(f, "name", "^/x-1$"), 0);
	char *enc = mafsbx_filters_encode(f);
	assert_non_null(enc);
	/* {"label":["maf-sandbox.scope=s1","maf-sandbox.role"],"name":["^/x-1$"]}, keys sorted */
	assert_string_equal(enc, "%7B%22label%22%3A%5B%22maf-sandbox.scope%3Ds1%22%2C%22maf-sandbox.role%22%5D%2C"
				 "%22name%22%3A%5B%22%5E%2Fx-1%24%22%5D%7D");
	free(enc);
	/* Bad arguments. */
	assert_int_equal(mafsbx_filters_add(f, "", "x"), -EINVAL);
	assert_int_equal(mafsbx_filters_add(f, "label", NULL), -EINVAL);
	assert_int_equal(mafsbx_filters_add(f, "label", "bad\xff"), -EINVAL);
	assert_int_equal(mafsbx_filters_add(NULL, "label", "x"), -EINVAL);
	json_object_set_new(f, "status", json_string("not an array"));
	assert_int_equal(mafsbx_filters_add(f, "status", "paused"), -EINVAL);
	json_decref(f);
	assert_null(mafsbx_filters_encode(NULL));
	json_t *arr = json_array();
	assert_null(mafsbx_filters_encode(arr));
	json_decref(arr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat_file_from_doc),
		cmocka_unit_test(test_go_mode_table),
		cmocka_unit_test(test_stat_every_type),
		cmocka_unit_test(test_stat_mtime_fractions),
		cmocka_unit_test(test_stat_escapes_and_names),
		cmocka_unit_test(test_stat_malformed_refused),
		cmocka_unit_test(test_demux_whole_and_every_split),
		cmocka_unit_test(test_demux_empty_stream),
		cmocka_unit_test(test_demux_truncated),
		cmocka_unit_test(test_demux_bad_header),
		cmocka_unit_test(test_demux_cap),
		cmocka_unit_test(test_demux_large_frame),
		cmocka_unit_test(test_query_escape),
		cmocka_unit_test(test_filters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
