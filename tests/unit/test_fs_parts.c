/*
 * test_fs_parts.c: the pure parts of the daemon: option parsing and
 * validation (INTERFACE.md §1.2), path classification (§2, §3 name rules)
 * and the UTF-8 text view of exec output (U+FFFD replacement as Python's
 * errors="replace").
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mfs.h"

/* ---- options ----------------------------------------------------------- */

static int parse(struct mfs_options *o, struct fuse_args *args, struct mafsbx_error *e, ...)
{
	va_list ap;
	va_start(ap, e);
	args->argc = 0;
	args->argv = NULL;
	args->allocated = 0;
	fuse_opt_add_arg(args, "mafsbxfs");
	const char *a;
	while ((a = va_arg(ap, const char *)))
		fuse_opt_add_arg(args, a);
	va_end(ap);
	mafsbx_error_clear(e);
	return mfs_options_parse(args, o, e);
}

static bool has_arg(const struct fuse_args *args, const char *needle)
{
	for (int i = 0; i < args->argc; i++)
		if (strstr(args->argv[i], needle))
			return true;
	return false;
}

static void test_options_defaults(void **state)
{
	(void)state;
	struct mfs_options o;
	struct fuse_args args;
	struct mafsbx_error e;
	assert_int_equal(parse(&o, &args, &e, "/mnt", NULL), 0);
	assert_null(o.host);
	assert_null(o.image);
	assert_null(o.scope);
	assert_true(o.attr_timeout == 1.0);
	assert_int_equal(o.max_read, 64ull << 20);
	assert_int_equal(o.max_write, 64ull << 20);
	assert_int_equal(o.exec_timeout, 300);
	assert_int_equal(o.pids_limit, 512);
	assert_false(o.cap_drop_all);
	assert_int_equal(o.memory, 0);
	assert_true(o.cpus == 0);
	assert_null(o.egress_proxy_image);
	assert_false(o.show_help);
	assert_true(has_arg(&args, "/mnt"));
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
}

static void test_options_all(void **state)
{
	(void)state;
	struct mfs_options o;
	struct fuse_args args;
	struct mafsbx_error e;
	assert_int_equal(parse(&o, &args, &e, "-f", "-o",
			       "host=unix:///tmp/x.sock,image=mafsbx/busybox:latest,scope=team-a,attr_timeout=0.5,"
			       "max_read=1M,max_write=2048,exec_timeout=30,pids_limit=64,cap_drop_all,memory=512m,"
			       "cpus=1.5,egress_proxy_image=proxy:1,allow_other,max_threads=8",
			       "/mnt", NULL),
			 0);
	assert_string_equal(o.host, "unix:///tmp/x.sock");
	assert_string_equal(o.image, "mafsbx/busybox:latest");
	assert_string_equal(o.scope, "team-a");
	assert_true(o.attr_timeout == 0.5);
	assert_int_equal(o.max_read, 1 << 20);
	assert_int_equal(o.max_write, 2048);
	assert_int_equal(o.exec_timeout, 30);
	assert_int_equal(o.pids_limit, 64);
	assert_true(o.cap_drop_all);
	assert_int_equal(o.memory, 512ll << 20);
	assert_true(o.cpus == 1.5);
	assert_string_equal(o.egress_proxy_image, "proxy:1");
	assert_true(o.max_threads_given);
	/* ours are taken out; libfuse's stay */
	assert_false(has_arg(&args, "image="));
	assert_false(has_arg(&args, "max_read"));
	assert_true(has_arg(&args, "allow_other"));
	assert_true(has_arg(&args, "max_threads=8"));
	assert_true(has_arg(&args, "-f"));
	mfs_options_free(&o);
	fuse_opt_free_args(&args);

	assert_int_equal(parse(&o, &args, &e, "-H", "tcp://h:2375", "/mnt", NULL), 0);
	assert_string_equal(o.host, "tcp://h:2375");
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
	assert_int_equal(parse(&o, &args, &e, "--context", "ctx1", "/mnt", NULL), 0);
	assert_string_equal(o.context, "ctx1");
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
	assert_int_equal(parse(&o, &args, &e, "--help", NULL), 0);
	assert_true(o.show_help);
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
	assert_int_equal(parse(&o, &args, &e, "--version", NULL), 0);
	assert_true(o.show_version);
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
}

static void test_options_bad(void **state)
{
	(void)state;
	static const struct {
		const char *opt;
		const char *needle;
	} bad[] = {
		{ "attr_timeout=-1", "attr_timeout" },
		{ "attr_timeout=abc", "attr_timeout" },
		{ "max_read=0", "max_read" },
		{ "max_read=12Q", "max_read" },
		{ "max_write=", "max_write" },
		{ "exec_timeout=0", "exec_timeout" },
		{ "exec_timeout=1.5", "exec_timeout" },
		{ "pids_limit=-3", "pids_limit" },
		{ "memory=1k", "memory" },
		{ "cpus=0", "cpus" },
		{ "cpus=lots", "cpus" },
		{ "image=", "image" },
		{ "scope=", "scope" },
		{ "host=unix:///a,context=b", "not both" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mfs_options o;
		struct fuse_args args;
		struct mafsbx_error e;
		int r = parse(&o, &args, &e, "-o", bad[i].opt, "/mnt", NULL);
		if (r != -EINVAL || !strstr(e.message, bad[i].needle))
			fail_msg("-o %s: got %d '%s'", bad[i].opt, r, e.message);
		fuse_opt_free_args(&args);
	}
}

static void test_parse_bytes(void **state)
{
	(void)state;
	uint64_t v;
	assert_int_equal(mfs_parse_bytes("123", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(mfs_parse_bytes("64M", &v), 0);
	assert_int_equal(v, 64ull << 20);
	assert_int_equal(mfs_parse_bytes("64MiB", &v), 0);
	assert_int_equal(v, 64ull << 20);
	assert_int_equal(mfs_parse_bytes("2g", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(mfs_parse_bytes("5kb", &v), 0);
	assert_int_equal(v, 5120);
	assert_int_equal(mfs_parse_bytes("", &v), -EINVAL);
	assert_int_equal(mfs_parse_bytes("-1", &v), -EINVAL);
	assert_int_equal(mfs_parse_bytes("1.5M", &v), -EINVAL);
	assert_int_equal(mfs_parse_bytes("99999999999999999999", &v), -EINVAL);
	assert_int_equal(mfs_parse_bytes("99999999999T", &v), -EINVAL);
}

/* ---- tree -------------------------------------------------------------- */

#define SBX "maf-sandbox-docker-6f8a8ed7a21c"

static void test_classify(void **state)
{
	(void)state;
	struct mfs_node n;
	assert_int_equal(mfs_classify("/", &n), 0);
	assert_int_equal(n.type, MFS_N_ROOT);
	assert_int_equal(mfs_classify("/.ctl", &n), 0);
	assert_int_equal(n.type, MFS_N_CTL_DIR);
	assert_int_equal(mfs_classify("/.ctl/exec", &n), 0);
	assert_int_equal(n.type, MFS_N_CTL_FILE);
	assert_int_equal(n.ctl_kind, MFS_CTL_EXEC);
	assert_int_equal(mfs_classify("/.ctl/acquire", &n), 0);
	assert_int_equal(n.ctl_kind, MFS_CTL_ACQUIRE);
	assert_int_equal(mfs_classify("/.ctl/dispose", &n), 0);
	assert_int_equal(n.ctl_kind, MFS_CTL_DISPOSE);
	assert_int_equal(mfs_classify("/.ctl/declarations", &n), 0);
	assert_int_equal(n.type, MFS_N_CTL_DECLARATIONS);
	assert_int_equal(mfs_classify("/.ctl/engine", &n), 0);
	assert_int_equal(n.type, MFS_N_CTL_ENGINE);
	assert_int_equal(mfs_classify("/.ctl/engine/x", &n), -ENOENT);
	assert_int_equal(mfs_classify("/.ctl/other", &n), -ENOENT);

	assert_int_equal(mfs_classify("/by-scope", &n), 0);
	assert_int_equal(n.type, MFS_N_BYSCOPE);
	assert_int_equal(n.depth, 0);
	assert_int_equal(mfs_classify("/by-scope/s/t", &n), 0);
	assert_int_equal(n.type, MFS_N_BYSCOPE);
	assert_int_equal(n.depth, 2);
	assert_string_equal(n.comp[0], "s");
	assert_string_equal(n.comp[1], "t");
	assert_int_equal(mfs_classify("/by-scope/s/t/a/python@c1", &n), 0);
	assert_int_equal(n.type, MFS_N_BYSCOPE_LINK);
	assert_string_equal(n.comp[3], "python@c1");
	assert_int_equal(mfs_classify("/by-scope/s/t/a/k/x", &n), -ENOENT);

	assert_int_equal(mfs_classify("/" SBX, &n), 0);
	assert_int_equal(n.type, MFS_N_SBX_DIR);
	assert_string_equal(n.name, SBX);
	assert_int_equal(mfs_classify("/" SBX "/status", &n), 0);
	assert_int_equal(n.type, MFS_N_SBX_STATUS);
	assert_int_equal(mfs_classify("/" SBX "/work", &n), 0);
	assert_int_equal(n.type, MFS_N_WORK);
	assert_string_equal(n.rel, "");
	assert_int_equal(mfs_classify("/" SBX "/work/plots/fig1.png", &n), 0);
	assert_string_equal(n.rel, "plots/fig1.png");
	assert_int_equal(mfs_classify("/" SBX "/root", &n), 0);
	assert_int_equal(n.type, MFS_N_ROOTFS);
	assert_string_equal(n.rel, "");
	assert_int_equal(mfs_classify("/" SBX "/root/etc/passwd", &n), 0);
	assert_int_equal(n.type, MFS_N_ROOTFS);
	assert_string_equal(n.rel, "etc/passwd");
	assert_int_equal(mfs_classify("/" SBX "/rootx", &n), -ENOENT);
	assert_int_equal(mfs_classify("/" SBX "/root/a\\b", &n), -EINVAL);
	assert_int_equal(mfs_classify("/" SBX "/workx", &n), -ENOENT);
	assert_int_equal(mfs_classify("/" SBX "/other", &n), -ENOENT);
	assert_int_equal(mfs_classify("/" SBX "/work/a\\b", &n), -EINVAL);
	/* not a workload name: no engine call needed to say no */
	assert_int_equal(mfs_classify("/maf-sandbox-docker-6f8a8ed7a21c-proxy", &n), -ENOENT);
	assert_int_equal(mfs_classify("/maf-sandbox-docker-6F8A8ED7A21C", &n), -ENOENT);
	assert_int_equal(mfs_classify("/foo", &n), -ENOENT);
	assert_int_equal(mfs_classify("relative", &n), -ENOENT);

	char long_path[600];
	memset(long_path, 'a', sizeof(long_path));
	snprintf(long_path, sizeof(long_path), "/" SBX "/work/%0256d", 0);
	assert_int_equal(mfs_classify(long_path, &n), -ENAMETOOLONG);
}

/* ---- UTF-8 views ------------------------------------------------------- */

static void check_view(const char *in, size_t inlen, const char *want, size_t wantlen)
{
	size_t n = 0;
	char *out = mfs_utf8_replace((const unsigned char *)in, inlen, &n);
	assert_non_null(out);
	assert_int_equal(n, wantlen);
	assert_memory_equal(out, want, wantlen);
	free(out);
}

#define R "\xef\xbf\xbd"
#define V(in, want) check_view(in, sizeof(in) - 1, want, sizeof(want) - 1)

static void test_utf8_replace(void **state)
{
	(void)state;
	V("", "");
	V("plain", "plain");
	V("na\xc3\xafve \xe2\x82\xac \xf0\x9f\x98\x80", "na\xc3\xafve \xe2\x82\xac \xf0\x9f\x98\x80");
	V("a\0b", "a\0b");                          /* NUL is valid UTF-8 */
	V("\xff", R);                               /* invalid lead */
	V("\x80\x80", R R);                         /* lone continuations, one each */
	V("\xc3", R);                               /* truncated at the end */
	V("\xe2\x82", R);                           /* maximal subpart: one U+FFFD */
	V("\xe2\x82x", R "x");
	V("\xe0\x80\x80", R R R);                   /* overlong: E0 needs A0..BF */
	V("\xc0\xaf", R R);                         /* C0 never valid */
	V("\xed\xa0\x80", R R R);                   /* surrogate */
	V("\xf4\x90\x80\x80", R R R R);             /* above U+10FFFF */
	V("\xf0\x9f\x98", R);                       /* truncated 4-byte */
	V("ok\xf0\x9f\x98!", "ok" R "!");
	V("\r\n\t", "\r\n\t");
}

/* The capped view: cut where its JSON spelling (as jansson writes it) would pass the budget. */
static void test_utf8_view_budget(void **state)
{
	(void)state;
	size_t n = 0;
	bool cut = true;
	char *out = mfs_utf8_view((const unsigned char *)"abc", 3, 3, &n, &cut);
	assert_false(cut);
	assert_int_equal(n, 3);
	free(out);
	/* a control byte costs 6: 2 of them fit in 12, the third does not */
	out = mfs_utf8_view((const unsigned char *)"\x01\x01\x01", 3, 12, &n, &cut);
	assert_true(cut);
	assert_int_equal(n, 2);
	free(out);
	/* a multibyte character is never split; U+FFFD costs 3 */
	out = mfs_utf8_view((const unsigned char *)"a\xe2\x82\xac", 4, 3, &n, &cut);
	assert_true(cut);
	assert_int_equal(n, 1);
	free(out);
	out = mfs_utf8_view((const unsigned char *)"\xff\xff", 2, 6, &n, &cut);
	assert_false(cut);
	assert_int_equal(n, 6);
	free(out);
	/* 1 MiB of \x01 against a 64 KiB budget: the JSON string stays within it */
	size_t big = 1u << 20;
	unsigned char *ones = malloc(big);
	assert_non_null(ones);
	memset(ones, 1, big);
	out = mfs_utf8_view(ones, big, 65536, &n, &cut);
	assert_true(cut);
	json_t *j = json_stringn(out, n);
	char *dumped = json_dumps(j, JSON_ENCODE_ANY);
	assert_true(strlen(dumped) <= 65536 + 2);
	assert_true(strlen(dumped) > 65536 - 8);
	free(dumped);
	json_decref(j);
	free(out);
	free(ones);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_defaults),
		cmocka_unit_test(test_options_all),
		cmocka_unit_test(test_options_bad),
		cmocka_unit_test(test_parse_bytes),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_utf8_replace),
		cmocka_unit_test(test_utf8_view_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
