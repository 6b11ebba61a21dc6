/*
 * test_fs_ctl.c: the .ctl transaction protocol (doc/protocol.md "The transactions"), through
 * the daemon's own low-level handlers on fake requests (fs_ll.c, fuse_shim.c: no mount, no
 * libfuse), the mount started as main.c starts it, so a write that completes a request runs
 * on the transaction threads and is answered from there; a stub request runner stands in for
 * the sandbox backend: split writes, a second request on one handle, a read before any
 * write, O_TRUNC, an oversized request, malformed and trailing data, the framing (a byte
 * that cannot continue a JSON object fails its write at once; a write ending in a newline
 * ends the request), a failing request's errno and reply, the pipe-like open flags, a file
 * closed while its request runs (its writer was killed: the close does not wait, the
 * request's end frees the handle); a writer's interrupt (EINTR at once when it is being
 * killed, nothing for a caught signal); the one request limit (-o max_requests transactions run
 * at once, the rest wait their turn); and the others' pool of open files, waiting calls
 * and requests (mount.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs_ll.h"
#include "mfs.h"
#include "mount.h"

static struct mfs fs;
static atomic_int runs;
static enum mfs_ctl_kind last_kind;
static char *last_req;

/* {"block": true} requests wait at the gate until the test opens it; the
 * most that ran at once is kept. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static int at_gate, most_at_once, running_now;

static void gate_pass(void)
{
	pthread_mutex_lock(&gate_mu);
	at_gate++;
	pthread_cond_broadcast(&gate_cv);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	at_gate--;
	pthread_mutex_unlock(&gate_mu);
}

/* Wait until n requests wait at the gate (a generous bound, then fail). */
static void gate_wait_for(int n)
{
	for (int i = 0; i < 6000; i++) {
		pthread_mutex_lock(&gate_mu);
		int have = at_gate;
		pthread_mutex_unlock(&gate_mu);
		if (have >= n)
			return;
		usleep(10000);
	}
	fail_msg("%d requests never reached the runner", n);
}

static void gate_set(bool open)
{
	pthread_mutex_lock(&gate_mu);
	gate_open = open;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

/* {"fail": "ENOENT"} fails with that errno (and an extra member); anything
 * else succeeds, echoing the request. */
static int stub_run(struct mfs *m, enum mfs_ctl_kind kind, const json_t *req, json_t **reply,
		    struct mafsbx_error *err)
{
	(void)m;
	pthread_mutex_lock(&gate_mu);
	if (++running_now > most_at_once)
		most_at_once = running_now;
	pthread_mutex_unlock(&gate_mu);
	if (json_is_true(json_object_get(req, "block")))
		gate_pass();
	pthread_mutex_lock(&gate_mu);   /* requests released together end together */
	running_now--;
	runs++;
	last_kind = kind;
	free(last_req);
	last_req = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
	pthread_mutex_unlock(&gate_mu);
	const char *fail = json_string_value(json_object_get(req, "fail"));
	if (fail) {
		int e = !strcmp(fail, "ENOENT") ? ENOENT : !strcmp(fail, "ETIMEDOUT") ? ETIMEDOUT : EIO;
		*reply = json_pack("{s:b}", "timed_out", e == ETIMEDOUT);
		return mafsbx_error_set_full(err, e == ENOENT ? MAFSBX_EK_NO_CONTAINER : MAFSBX_EK_TIMEOUT, e, NULL,
					     "stub failure %s", fail);
	}
	*reply = json_pack("{s:b, s:O}", "ok", 1, "echo", req);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	memset(&fs, 0, sizeof(fs));
	fs.opt.attr_timeout = 1;
	fs.opt.max_read = MFS_DEFAULT_MAX_READ;
	fs.opt.max_write = MFS_DEFAULT_MAX_WRITE;
	fs.opt.max_threads = 16;
	fs.run = stub_run;
	fsll_start(&fs);
	runs = 0;
	gate_open = false;
	most_at_once = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gate_set(true);   /* a failed test's blocked requests end */
	fsll_stop(&fs);
	free(last_req);
	last_req = NULL;
	return 0;
}

static void ctl_open(const char *path, int flags, struct fuse_file_info *fi)
{
	memset(fi, 0, sizeof(*fi));
	fi->flags = flags;
	assert_int_equal(fsll_open(path, fi), 0);
	assert_true(fi->direct_io);
	assert_true(fi->nonseekable);
	assert_true(fi->fh != 0);
}

static int wr(struct fuse_file_info *fi, const char *s, size_t n, off_t off)
{
	return fsll_write(fi, s, n, off);
}

/* Read the whole reply (until 0). Offsets are passed as a kernel would for a
 * stream (growing), and must not matter. */
static char *read_all(struct fuse_file_info *fi, size_t chunk)
{
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);
	off_t off = 12345;
	for (;;) {
		if (len + chunk + 1 > cap) {
			cap = (len + chunk + 1) * 2;
			out = realloc(out, cap);
		}
		int n = fsll_read(fi, out + len, chunk, off);
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
		off += n;
	}
	out[len] = '\0';
	return out;
}

static json_t *parse_reply(const char *text)
{
	size_t n = strlen(text);
	assert_true(n > 0);
	assert_int_equal(text[n - 1], '\n');
	assert_null(memchr(text, '\n', n - 1));  /* one line */
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	assert_non_null(j);
	assert_true(json_is_object(j));
	return j;
}

static void test_getattr_and_open_flags(void **state)
{
	(void)state;
	struct stat st;
	assert_int_equal(fsll_getattr("/.ctl/acquire", &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(fsll_getattr("/.ctl", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(fsll_getattr("/.ctl/nope", &st), -ENOENT);
	struct fuse_file_info fi;
	ctl_open("/.ctl/dispose", O_RDWR, &fi);
	assert_int_equal(fsll_release(&fi), 0);
	memset(&fi, 0, sizeof(fi));
	fi.flags = O_RDWR;
	assert_int_equal(fsll_open("/.ctl/nope", &fi), -ENOENT);
}

/* The root and .ctl as the kernel looks them up (no engine: nothing here lists sandboxes):
 * each lookup of a transaction file is a fresh node no cache keeps; .ctl lists its files. */
static void test_ctl_nodes(void **state)
{
	(void)state;
	struct stat st;
	assert_int_equal(fsll_getattr("/", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	fuse_ino_t a, b;
	struct fuse_entry_param e;
	assert_int_equal(fsll_lookup("/.ctl", &a, &e), 0);
	assert_true(S_ISDIR(e.attr.st_mode));
	assert_int_equal(fsll_lookup("/.ctl/acquire", &a, &e), 0);
	assert_true(e.attr_timeout == 0 && e.entry_timeout == 0);
	assert_int_equal(fsll_lookup("/.ctl/acquire", &b, NULL), 0);
	assert_true(a != b);
	assert_int_equal(fsll_lookup("/.ctl/declarations", &a, &e), 0);
	assert_int_equal(e.attr.st_mode & 07777, 0444);
	struct fuse_req *r;
	assert_true(fsll_readdir("/.ctl", false, 4096, &r) > 0);
	size_t pos = 0;
	struct shim_dirent d;
	char names[256] = "";
	while (shim_dirent_next(r, &pos, &d)) {
		strcat(names, d.name);
		strcat(names, " ");
	}
	shim_free(r);
	assert_string_equal(names, ". .. acquire dispose exec declarations engine ");
}

static void test_split_writes(void **state)
{
	(void)state;
	/* Braces and quotes inside strings must not end the object early. */
	const char *req = "  {\"argv\": [\"sh\", \"-c\", \"echo '}{' \\\"]\\\"\"], \"sandbox\": \"x\"}\n";
	size_t n = strlen(req);
	struct fuse_file_info fi;
	ctl_open("/.ctl/exec", O_RDWR, &fi);
	for (size_t i = 0; i < n; i++) {
		int r = wr(&fi, req + i, 1, (off_t)i);
		assert_int_equal(r, 1);
		/* Runs exactly when the closing brace arrives, not before. */
		assert_int_equal(runs, i >= n - 2 ? 1 : 0);
	}
	assert_int_equal(last_kind, MFS_CTL_EXEC);
	assert_string_equal(last_req, "{\"argv\":[\"sh\",\"-c\",\"echo '}{' \\\"]\\\"\"],\"sandbox\":\"x\"}");
	char *text = read_all(&fi, 7);
	json_t *j = parse_reply(text);
	assert_true(json_is_true(json_object_get(j, "ok")));
	/* "ok" comes first, as doc/protocol.md "The transactions" spells replies. */
	assert_int_equal(strncmp(text, "{\"ok\": true", 11), 0);
	json_decref(j);
	free(text);
	assert_int_equal(fsll_flush(&fi), 0);
	assert_int_equal(fsll_release(&fi), 0);
}

static void test_second_request_replaces_reply(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	ctl_open("/.ctl/acquire", O_RDWR, &fi);
	const char *r1 = "{\"n\": 1}";
	assert_int_equal(wr(&fi, r1, strlen(r1), 0), (int)strlen(r1));
	char part[5];
	assert_int_equal(fsll_read(&fi, part, sizeof(part), 0), (int)sizeof(part));
	const char *r2 = "{\"n\": 2222}";
	assert_int_equal(wr(&fi, r2, strlen(r2), 0), (int)strlen(r2));
	assert_int_equal(runs, 2);
	assert_int_equal(last_kind, MFS_CTL_ACQUIRE);
	char *text = read_all(&fi, 4096);
	json_t *j = parse_reply(text);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "echo"), "n")), 2222);
	json_decref(j);
	free(text);
	/* Fully read: further reads are at EOF. */
	char c;
	assert_int_equal(fsll_read(&fi, &c, 1, 0), 0);
	fsll_release(&fi);
}

static void test_read_before_write(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	ctl_open("/.ctl/exec", O_RDWR, &fi);
	char *text = read_all(&fi, 4096);
	json_t *j = parse_reply(text);
	assert_true(json_is_false(json_object_get(j, "ok")));
	json_t *e = json_object_get(j, "error");
	assert_string_equal(json_string_value(json_object_get(e, "errno")), "EINVAL");
	assert_string_equal(json_string_value(json_object_get(e, "type")), "ValueError");
	assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "no request"));
	json_decref(j);
	free(text);
	assert_int_equal(runs, 0);
	/* A request after that still works on the same handle. */
	assert_int_equal(wr(&fi, "{}", 2, 0), 2);
	text = read_all(&fi, 4096);
	j = parse_reply(text);
	assert_true(json_is_true(json_object_get(j, "ok")));
	json_decref(j);
	free(text);
	fsll_release(&fi);
}

static void test_read_with_incomplete_request(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	ctl_open("/.ctl/exec", O_RDWR, &fi);
	assert_int_equal(wr(&fi, "{\"a\":", 5, 0), 5);
	char *text = read_all(&fi, 4096);
	json_t *j = parse_reply(text);
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")), "incomplete"));
	json_decref(j);
	free(text);
	/* close() of a descriptor with an unfinished request reports it */
	assert_int_equal(fsll_flush(&fi), -EINVAL);
	/* ...but the bytes stay, so the request can still be finished */
	assert_int_equal(wr(&fi, " 1}", 3, 5), 3);
	assert_int_equal(runs, 1);
	assert_string_equal(last_req, "{\"a\":1}");
	assert_int_equal(fsll_flush(&fi), 0);
	fsll_release(&fi);
}

static void test_o_trunc(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	/* `echo '{...}' > .ctl/dispose` opens with O_WRONLY|O_TRUNC. */
	ctl_open("/.ctl/dispose", O_WRONLY | O_TRUNC, &fi);
	assert_int_equal(fsll_truncate("/.ctl/dispose", 0, NULL), 0);
	assert_int_equal(fsll_truncate("/.ctl/dispose", 0, &fi), 0);
	assert_int_equal(fsll_truncate("/.ctl/dispose", 10, &fi), -EINVAL);
	/* truncate(0) on the handle forgets a partial request */
	assert_int_equal(wr(&fi, "{\"junk\": [1, 2", 14, 0), 14);
	assert_int_equal(fsll_truncate("/.ctl/dispose", 0, &fi), 0);
	const char *req = "{\"name\": \"maf-sandbox-docker-000000000000\"}\n";
	assert_int_equal(wr(&fi, req, strlen(req), 0), (int)strlen(req));
	assert_int_equal(runs, 1);
	assert_int_equal(last_kind, MFS_CTL_DISPOSE);
	assert_string_equal(last_req, "{\"name\":\"maf-sandbox-docker-000000000000\"}");
	assert_int_equal(fsll_flush(&fi), 0);
	fsll_release(&fi);
	/* utimens (touch) is accepted too */
	assert_int_equal(fsll_utimens("/.ctl/dispose"), 0);
}

static void test_oversized(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	ctl_open("/.ctl/exec", O_RDWR, &fi);
	/* {"stdin": "xxxx...."} grown past 1 MiB in 128 KiB writes, as the kernel splits. */
	size_t chunk = 128 * 1024;
	char *buf = malloc(chunk);
	memset(buf, 'x', chunk);
	const char *head = "{\"stdin\": \"";
	assert_int_equal(wr(&fi, head, strlen(head), 0), (int)strlen(head));
	size_t sent = strlen(head);
	int r = 0;
	int i = 0;
	for (; i < 20; i++) {
		r = wr(&fi, buf, chunk, (off_t)sent);
		if (r < 0)
			break;
		assert_int_equal(r, (int)chunk);
		sent += chunk;
	}
	assert_int_equal(r, -EMSGSIZE);
	assert_true(sent <= MFS_CTL_MAX_REQUEST);
	assert_true(sent + chunk > MFS_CTL_MAX_REQUEST);
	/* The rest of that request is refused too, and nothing ran. */
	assert_int_equal(wr(&fi, "\"}", 2, 0), -EMSGSIZE);
	assert_int_equal(runs, 0);
	char *text = read_all(&fi, 4096);
	json_t *j = parse_reply(text);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "errno")), "EMSGSIZE");
	json_decref(j);
	free(text);
	/* O_TRUNC / truncate(0) starts afresh. */
	assert_int_equal(fsll_truncate("/.ctl/exec", 0, &fi), 0);
	assert_int_equal(wr(&fi, "{\"ok\": 1}", 9, 0), 9);
	assert_int_equal(runs, 1);
	fsll_release(&fi);

	/* A request of exactly the cap is fine. */
	ctl_open("/.ctl/exec", O_RDWR, &fi);
	size_t total = MFS_CTL_MAX_REQUEST;
	char *big = malloc(total);
	memset(big, ' ', total);
	memcpy(big, "{\"s\": \"", 7);
	memset(big + 7, 'y', total - 9);
	memcpy(big + total - 2, "\"}", 2);
	size_t off = 0;
	while (off < total) {
		size_t n = total - off < chunk ? total - off : chunk;
		assert_int_equal(wr(&fi, big + off, n, (off_t)off), (int)n);
		off += n;
	}
	assert_int_equal(runs, 2);
	fsll_release(&fi);
	free(big);
	free(buf);
}

static void expect_einval(const char *req, const char *needle)
{
	struct fuse_file_info fi;
	ctl_open("/.ctl/acquire", O_RDWR, &fi);
	int before = runs;
	assert_int_equal(wr(&fi, req, strlen(req), 0), -EINVAL);
	assert_int_equal(runs, before);
	char *text = read_all(&fi, 4096);
	json_t *j = parse_reply(text);
	json_t *e = json_object_get(j, "error");
	assert_string_equal(json_string_value(json_object_get(e, "errno")), "EINVAL");
	const char *msg = json_string_value(json_object_get(e, "message"));
	if (!strstr(msg, needle))
		fail_msg("message '%s' does not contain '%s'", msg, needle);
	json_decref(j);
	free(text);
	fsll_release(&fi);
}

static void test_malformed(void **state)
{
	(void)state;
	expect_einval("hello", "malformed");
	expect_einval("[1, 2]", "malformed");
	expect_einval("{\"a\": }", "malformed");
	expect_einval("{\"a\": 1, \"a\": 2}", "malformed");
	expect_einval("{\"a\": 1} {\"b\": 2}", "after the JSON object");
	expect_einval("{\"a\": 1} x", "after the JSON object");
	/* whitespace alone neither runs nor fails */
	struct fuse_file_info fi;
	ctl_open("/.ctl/acquire", O_RDWR, &fi);
	assert_int_equal(wr(&fi, " \n\t", 3, 0), 3);
	assert_int_equal(fsll_flush(&fi), 0);
	fsll_release(&fi);
	assert_int_equal(runs, 0);
}

/* Bytes that cannot begin or continue a JSON object fail their write at
 * once (doc/protocol.md "The transactions"), naming the byte; nothing runs, and the handle
 * starts afresh (close() then succeeds: the failure was reported). */
static void expect_bad_at_once(const char *first, const char *second, const char *needle)
{
	struct fuse_file_info fi;
	ctl_open("/.ctl/acquire", O_RDWR, &fi);
	int before = runs;
	const char *bad = first;
	if (second) {
		assert_int_equal(wr(&fi, first, strlen(first), 0), (int)strlen(first));
		bad = second;
	}
	int r = wr(&fi, bad, strlen(bad), 0);
	if (r != -EINVAL)
		fail_msg("'%s' then '%s': write gave %d, want -EINVAL", first, second ? second : "", r);
	assert_int_equal(runs, before);
	char *text = read_all(&fi, 4096);
	json_t *j = parse_reply(text);
	const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
	if (!strstr(msg, needle))
		fail_msg("'%s': message '%s' does not contain '%s'", first, msg, needle);
	json_decref(j);
	free(text);
	assert_int_equal(fsll_flush(&fi), 0);
	/* the next request on the handle works */
	assert_int_equal(wr(&fi, "{}", 2, 0), 2);
	assert_int_equal(runs, before + 1);
	fsll_release(&fi);
}

static void test_framing_bad_bytes(void **state)
{
	(void)state;
	expect_bad_at_once("{not json\n", NULL, "byte 1 ('n')");
	expect_bad_at_once("{not", NULL, "member name");
	expect_bad_at_once("{\"scope\": ", "x", "expected a value");
	expect_bad_at_once("{\"a\" 1}", NULL, "':'");
	expect_bad_at_once("{,", NULL, "member name");
	expect_bad_at_once("{\"a\": 1 \"b\"", NULL, "',' or '}'");
	expect_bad_at_once("{\"a\": [1 2", NULL, "',' or ']'");
	expect_bad_at_once("{\"a\": [1}", NULL, "'}' closes an array");
	expect_bad_at_once("{\"a\": {\"b\": 1]", NULL, "']' closes an object");
	expect_bad_at_once("{\"a\": tru3", NULL, "true, false or null");
	expect_bad_at_once("{\"a\": nul", "L", "true, false or null");
	expect_bad_at_once("{\"a\": 01", NULL, "leading zero");
	expect_bad_at_once("{\"a\": -x", NULL, "digit after '-'");
	expect_bad_at_once("{\"a\": 1.}", NULL, "digit after '.'");
	expect_bad_at_once("{\"a\": 1e}", NULL, "exponent");
	expect_bad_at_once("{\"a\": 1x", NULL, "',' or '}'");
	expect_bad_at_once("{\"a\": \"tab\there\"}", NULL, "control character");
	expect_bad_at_once("{\"a\": \"\xff\"}", NULL, "0xff");
	expect_bad_at_once("{\"a\": \"\xc0\xaf\"}", NULL, "UTF-8");        /* overlong '/' */
	expect_bad_at_once("{\"a\": \"\xed\xa0\x80\"}", NULL, "UTF-8");    /* a surrogate */
	expect_bad_at_once("{\"a\": \"\xf4\x90\x80\x80\"}", NULL, "UTF-8"); /* over U+10FFFF */
	expect_bad_at_once("{\"a\": \"\xc3", "x", "UTF-8");               /* cut across writes */
	expect_bad_at_once("{\"a\": \"\\q\"}", NULL, "invalid escape");
	expect_bad_at_once("{\"a\": \"\\u12g4\"}", NULL, "hex digit");
	expect_bad_at_once("{\"a\": \"\\u0000\"}", NULL, "\\u0000");
	expect_bad_at_once("{\"a\": \"\\uDC00\"}", NULL, "lone low surrogate");
	expect_bad_at_once("{\"a\": \"\\uD800x\"}", NULL, "high surrogate");
	expect_bad_at_once("{\"a\": \"\\uD800\\n\"}", NULL, "high surrogate");
	expect_bad_at_once("{\"a\": \"\\uD800\\u0041\"}", NULL, "high surrogate");
	expect_bad_at_once("{\"a\": 1} {", NULL, "data after the JSON object");
	expect_bad_at_once("[", NULL, "starting with '{'");
	expect_bad_at_once(" \n \"", NULL, "byte 0");
	/* nesting deeper than jansson parses */
	size_t deep = 2100;
	char *d = malloc(deep * 6 + 16);
	strcpy(d, "{\"a\": ");
	for (size_t i = 0; i < deep; i++)
		strcat(d, "[");
	expect_bad_at_once(d, NULL, "nested deeper");
	free(d);
}

/* JSON Lines: a write ending in a newline ends the request, so a shell's
 * `echo` learns of an unfinished object from its write. A newline inside
 * a write (a pretty-printed object in one write) does not. */
static void test_framing_newline(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	ctl_open("/.ctl/acquire", O_RDWR, &fi);
	const char *cut = "{\"scope\": \"s\", \"thread\": [1,\n";
	assert_int_equal(wr(&fi, cut, strlen(cut), 0), -EINVAL);
	assert_int_equal(runs, 0);
	char *text = read_all(&fi, 4096);
	json_t *j = parse_reply(text);
	const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
	assert_non_null(strstr(msg, "a newline ended the request"));
	json_decref(j);
	free(text);
	assert_int_equal(fsll_flush(&fi), 0);
	const char *pretty = "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}\n";
	assert_int_equal(wr(&fi, pretty, strlen(pretty), 0), (int)strlen(pretty));
	assert_int_equal(runs, 1);
	assert_string_equal(last_req, "{\"a\":[1,2],\"b\":{}}");
	/* whitespace-only lines neither start nor end anything */
	assert_int_equal(wr(&fi, "\n", 1, 0), 1);
	assert_int_equal(wr(&fi, "  \r\n", 4, 0), 4);
	assert_int_equal(fsll_flush(&fi), 0);
	/* every value form, split byte by byte (no write ends in a newline) */
	const char *all = "{\"n\": [0, -0, 12, -3.25, 1e5, 2E-3, 4.5e+6, true, false, null, \"\", "
			  "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\", "
			  "{\"x\": {}}, [[]]]}";
	size_t n = strlen(all);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(wr(&fi, all + i, 1, 0), 1);
	assert_int_equal(runs, 2);
	json_error_t je;
	json_t *want = json_loads(all, 0, &je);
	assert_non_null(want);
	char *w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(last_req, w);
	free(w);
	json_decref(want);
	fsll_release(&fi);
}

static void test_failing_request(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	ctl_open("/.ctl/exec", O_RDWR, &fi);
	const char *req = "{\"fail\": \"ENOENT\"}";
	assert_int_equal(wr(&fi, req, strlen(req), 0), -ENOENT);
	char *text = read_all(&fi, 4096);
	json_t *j = parse_reply(text);
	assert_true(json_is_false(json_object_get(j, "ok")));
	json_t *e = json_object_get(j, "error");
	assert_string_equal(json_string_value(json_object_get(e, "errno")), "ENOENT");
	assert_string_equal(json_string_value(json_object_get(e, "type")), "LookupError");
	assert_string_equal(json_string_value(json_object_get(e, "message")), "stub failure ENOENT");
	json_decref(j);
	free(text);

	/* A failure may carry members of its own (an exec that timed out). */
	req = "{\"fail\": \"ETIMEDOUT\"}";
	assert_int_equal(wr(&fi, req, strlen(req), 0), -ETIMEDOUT);
	text = read_all(&fi, 4096);
	j = parse_reply(text);
	assert_true(json_is_false(json_object_get(j, "ok")));
	assert_true(json_is_true(json_object_get(j, "timed_out")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "errno")), "ETIMEDOUT");
	json_decref(j);
	free(text);
	fsll_release(&fi);
}

static void test_closed_while_running(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	ctl_open("/.ctl/exec", O_RDWR, &fi);
	const char *req = "{\"who\": \"gone\", \"block\": true}";
	struct fuse_req *w = fsll_write_start(&fi, req, strlen(req), 0);
	gate_wait_for(1);   /* running on its transaction thread */
	/* the writer is closed meanwhile: neither call waits for the run */
	assert_int_equal(fsll_flush(&fi), 0);
	assert_int_equal(fsll_release(&fi), 0);
	assert_false(shim_answered(w));
	assert_int_equal(runs, 0);
	gate_set(true);
	assert_int_equal(fsll_result(w), (int)strlen(req));   /* runs, answers, then frees the handle */
	assert_int_equal(runs, 1);
	assert_string_equal(last_req, "{\"block\":true,\"who\":\"gone\"}");
}

/* A pid no process has now: a caller that is gone, as the kernel's interrupt finds one being killed. */
static pid_t gone_pid(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return pid;
}

/* The interrupt of a writer being killed answers EINTR at once; its
 * transaction runs on, and its reply stays for the open file. A caught
 * signal (the caller lives on) answers nothing: a retry would run it twice. */
static void test_interrupted_write(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	ctl_open("/.ctl/exec", O_RDWR, &fi);
	const char *req = "{\"who\": \"killed\", \"block\": true}";
	struct fuse_req *w = fsll_write_start(&fi, req, strlen(req), 0);
	gate_wait_for(1);
	shim_interrupt(w);   /* this process is not dying: a caught signal */
	assert_false(shim_answered(w));
	gate_set(true);
	assert_int_equal(fsll_result(w), (int)strlen(req));
	assert_int_equal(runs, 1);

	gate_set(false);
	fsll_pid(gone_pid());
	w = fsll_write_start(&fi, req, strlen(req), 0);
	gate_wait_for(1);
	shim_interrupt(w);
	assert_int_equal(fsll_result(w), -EINTR);   /* answered while the request still runs */
	assert_int_equal(runs, 1);
	fsll_pid(0);
	gate_set(true);
	char *text = read_all(&fi, 4096);   /* waits for the run's end */
	assert_int_equal(runs, 2);
	json_t *j = parse_reply(text);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "echo"), "who")), "killed");
	json_decref(j);
	free(text);
	assert_int_equal(fsll_release(&fi), 0);
}

static void test_parallel_handles_are_private(void **state)
{
	(void)state;
	struct fuse_file_info a, b;
	ctl_open("/.ctl/exec", O_RDWR, &a);
	ctl_open("/.ctl/exec", O_RDWR, &b);
	assert_int_equal(wr(&a, "{\"who\": ", 8, 0), 8);
	assert_int_equal(wr(&b, "{\"who\": \"b\"}", 12, 0), 12);
	assert_int_equal(wr(&a, "\"a\"}", 4, 0), 4);
	char *ta = read_all(&a, 4096), *tb = read_all(&b, 4096);
	assert_non_null(strstr(ta, "\"who\": \"a\""));
	assert_non_null(strstr(tb, "\"who\": \"b\""));
	free(ta);
	free(tb);
	fsll_release(&a);
	fsll_release(&b);
}

static void test_read_only_files(void **state)
{
	(void)state;
	struct fuse_file_info fi;
	memset(&fi, 0, sizeof(fi));
	fi.flags = O_WRONLY;
	assert_int_equal(fsll_open("/.ctl/declarations", &fi), -EACCES);
	fi.flags = O_RDWR;
	assert_int_equal(fsll_open("/.ctl/engine", &fi), -EACCES);
	assert_int_equal(fsll_truncate("/.ctl/declarations", 0, NULL), -EACCES);
	assert_int_equal(fsll_create("/.ctl/engine", 0644, &fi), -EACCES);
	struct stat st;
	assert_int_equal(fsll_getattr("/.ctl/declarations", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0444);
	/* the tree itself cannot be changed */
	assert_int_equal(fsll_unlink("/.ctl/acquire"), -EPERM);
	assert_int_equal(fsll_mkdir("/newdir", 0755), -EPERM);
	assert_int_equal(fsll_rename("/.ctl/acquire", "/.ctl/x", 0), -EPERM);
	/* renameat2's flags: a plain rename's answer there, EINVAL for one it does not know */
	assert_int_equal(fsll_rename("/.ctl/acquire", "/.ctl/exec", RENAME_EXCHANGE), -EPERM);
	assert_int_equal(fsll_rename("/.ctl/acquire", "/.ctl/x", RENAME_NOREPLACE), -EPERM);
	assert_int_equal(fsll_rename("/.ctl/acquire", "/.ctl/x", 0x80), -EINVAL);
	assert_int_equal(fsll_rmdir("/.ctl"), -EPERM);
	assert_int_equal(fsll_chmod("/.ctl/exec", 0777), -EPERM);
}

/* The one request limit is the daemon's (txn.c): at most -o max_requests
 * transactions run at once; the next waits its turn (not refused), and runs
 * when one ends. */
static void test_request_limit(void **state)
{
	(void)state;
	fsll_stop(&fs);
	fs.opt.max_requests = 2;
	fsll_start(&fs);
	struct fuse_file_info fi[3];
	struct fuse_req *w[3];
	const char *req = "{\"block\": true}";
	for (int i = 0; i < 3; i++) {
		ctl_open("/.ctl/exec", O_RDWR, &fi[i]);
		w[i] = fsll_write_start(&fi[i], req, strlen(req), 0);
	}
	gate_wait_for(2);
	usleep(200000);   /* time for a third to start, were it let */
	pthread_mutex_lock(&gate_mu);
	int at_once = at_gate;
	pthread_mutex_unlock(&gate_mu);
	assert_int_equal(at_once, 2);
	for (int i = 0; i < 3; i++)
		assert_false(shim_answered(w[i]));   /* the third waits: no EBUSY */
	gate_set(true);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(fsll_result(w[i]), (int)strlen(req));
		assert_int_equal(fsll_release(&fi[i]), 0);
	}
	assert_int_equal(runs, 3);
	assert_int_equal(most_at_once, 2);
}

/* Past the queue (4096 waiting behind the running ones) a transaction is
 * refused at once: EBUSY, with a reply saying why; the others still run. */
static void test_request_queue_full(void **state)
{
	(void)state;
	fsll_stop(&fs);
	fs.opt.max_requests = 1;
	fsll_start(&fs);
	enum { N = 1 + 4096 + 1 };
	struct fuse_file_info *fi = calloc(N, sizeof(*fi));
	struct fuse_req **w = calloc(N, sizeof(*w));
	assert_non_null(fi);
	assert_non_null(w);
	const char *req = "{\"block\": true}";
	for (int i = 0; i < N; i++) {
		ctl_open("/.ctl/exec", O_RDWR, &fi[i]);
		w[i] = fsll_write_start(&fi[i], req, strlen(req), 0);
		if (i == 0)
			gate_wait_for(1);   /* the one running; the rest queue behind it */
	}
	assert_int_equal(fsll_result(w[N - 1]), -EBUSY);
	char *text = read_all(&fi[N - 1], 4096);
	json_t *j = parse_reply(text);
	json_t *e = json_object_get(j, "error");
	assert_string_equal(json_string_value(json_object_get(e, "errno")), "EBUSY");
	assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "too many transactions are waiting"));
	json_decref(j);
	free(text);
	gate_set(true);
	for (int i = 0; i < N - 1; i++)
		assert_int_equal(fsll_result(w[i]), (int)strlen(req));
	for (int i = 0; i < N; i++)
		assert_int_equal(fsll_release(&fi[i]), 0);
	assert_int_equal(runs, N - 1);
	assert_int_equal(most_at_once, 1);
	free(w);
	free(fi);
}

/* One of the mount's per-user counts now (mount.c owns them). */
static struct mfs_user_counts counts(enum mfs_user_kind kind)
{
	struct mfs_user_counts c;
	mfs_user_counts(&fs, kind, &c);
	return c;
}

/*
 * The others' pool (mount.c): 40 uids other than the daemon's, each up to
 * its own bound, together hold no more than the pool, which is below the
 * daemon's limits (half of max_threads for calls, half the open-file limit
 * for opens); the daemon's own uid is never counted, and what is returned
 * is given out again.
 */
static void charge_all(int (*charge)(struct mfs *, uid_t), unsigned per_uid, unsigned *held, unsigned *refused,
		       int want_errno)
{
	*held = *refused = 0;
	for (uid_t u = 100000; u < 100040; u++) {
		for (unsigned i = 0; i < per_uid; i++) {
			int r = charge(&fs, u);
			if (r == 0) {
				(*held)++;
			} else {
				assert_int_equal(r, -want_errno);
				(*refused)++;
			}
		}
	}
}

static void test_others_pool(void **state)
{
	(void)state;
	/* calls: 16 workers, a pool of 8, 4 per user */
	assert_int_equal(counts(MFS_USER_CALLS).pool, 8);
	assert_int_equal(counts(MFS_USER_CALLS).bound, 4);
	unsigned held, refused;
	charge_all(mfs_call_charge, 4, &held, &refused, EBUSY);
	assert_int_equal(held, 8);
	assert_int_equal(refused, 40 * 4 - 8);
	for (int i = 0; i < 100; i++)
		assert_int_equal(mfs_call_charge(&fs, getuid()), 0);   /* the mounting user's reserve */
	for (uid_t u = 100000; u < 100040; u++)
		for (int i = 0; i < 4; i++)
			mfs_call_uncharge(&fs, u);   /* what was refused returns nothing */
	assert_int_equal(counts(MFS_USER_CALLS).total, 0);
	assert_int_equal(mfs_call_charge(&fs, 100041), 0);
	mfs_call_uncharge(&fs, 100041);

	/* opens: the pool is half the open-file limit, a user at most half the pool */
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_true(counts(MFS_USER_OPENS).pool > 0 && counts(MFS_USER_OPENS).pool < rl.rlim_cur);
	assert_true(counts(MFS_USER_OPENS).bound <= counts(MFS_USER_OPENS).pool);
	unsigned per = counts(MFS_USER_OPENS).bound;
	charge_all(mfs_open_charge, per, &held, &refused, EMFILE);
	assert_int_equal(held, counts(MFS_USER_OPENS).pool < 40 * per ? counts(MFS_USER_OPENS).pool : 40 * per);
	assert_int_equal(mfs_open_charge(&fs, getuid()), 0);
	for (uid_t u = 100000; u < 100040; u++)
		for (unsigned i = 0; i < per; i++)
			mfs_open_uncharge(&fs, u);
	assert_int_equal(counts(MFS_USER_OPENS).total, 0);
	assert_int_equal(counts(MFS_USER_OPENS).users, 0);

	/* one worker: no pool at all for the others, the worker is the mounting user's */
	mfs_fini(&fs);
	fs.opt.max_threads = 1;
	mfs_init(&fs);
	assert_int_equal(mfs_call_charge(&fs, 100000), -EBUSY);
	assert_int_equal(mfs_call_charge(&fs, getuid()), 0);
}

/* .ctl requests of other users: at most half of max_requests running or
 * waiting at once (EBUSY, with a reply saying so), never the mounting user's. */
static void test_others_request_pool(void **state)
{
	(void)state;
	unsigned pool = counts(MFS_USER_REQUESTS).pool;
	assert_int_equal(pool, MFS_DEFAULT_MAX_REQUESTS / 2);
	struct fuse_file_info fi[MFS_DEFAULT_MAX_REQUESTS / 2 + 2];
	struct fuse_req *w[MFS_DEFAULT_MAX_REQUESTS / 2 + 2];
	const char *block = "{\"block\": true}";
	for (unsigned i = 0; i <= pool; i++) {
		fsll_as(100000 + i);   /* another user each: opened and written as that uid */
		ctl_open("/.ctl/exec", O_RDWR, &fi[i]);
		w[i] = fsll_write_start(&fi[i], block, strlen(block), 0);
		if (i < pool) {
			gate_wait_for((int)i + 1);
		} else {
			/* the pool is full: refused before it waits for a thread */
			assert_int_equal(fsll_result(w[i]), -EBUSY);
			char *reply = read_all(&fi[i], 4096);
			assert_non_null(strstr(reply, "half of -o max_requests"));
			free(reply);
		}
	}
	/* the mounting user's request is not counted */
	fsll_as(getuid());
	ctl_open("/.ctl/exec", O_RDWR, &fi[pool + 1]);
	assert_int_equal(wr(&fi[pool + 1], "{}", 2, 0), 2);
	/* the other users' requests end: another may run */
	gate_set(true);
	for (unsigned i = 0; i < pool; i++)
		assert_int_equal(fsll_result(w[i]), (int)strlen(block));
	fsll_as(100000 + pool);
	assert_int_equal(wr(&fi[pool], "{}", 2, 0), 2);
	assert_int_equal(counts(MFS_USER_REQUESTS).total, 0);
	for (unsigned i = 0; i <= pool + 1; i++) {
		fsll_as(i <= pool ? 100000 + i : getuid());
		assert_int_equal(fsll_release(&fi[i]), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_getattr_and_open_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ctl_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_request_replaces_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_before_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_with_incomplete_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_o_trunc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversized, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_framing_bad_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_framing_newline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failing_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_while_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interrupted_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parallel_handles_are_private, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_queue_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_others_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_others_request_pool, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
