/*
 * test_fs_opts.c: the daemon's command line (fs/opts.c): option parsing,
 * defaults and validation (mafsbxfs(1) OPTIONS), byte counts.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"
#include "mfs.h"

#include <fuse_lowlevel.h>  /* after mfs.h, which sets FUSE_USE_VERSION */

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
	assert_int_equal(o.max_exec_timeout, 86400);
	assert_int_equal(o.pull_timeout, 600);
	assert_int_equal(o.loglevel, MAFSBX_LOG_WARN);
	assert_false(o.loglevel_given);
	assert_int_equal(o.pids_limit, 512);
	assert_false(o.cap_drop_all);
	assert_int_equal(o.memory, 0);
	assert_true(o.cpus == 0);
	assert_null(o.egress_proxy_image);
	assert_int_equal(o.burst_ms, 0);
	assert_int_equal(o.reply_budget, 256ull << 20);
	assert_int_equal(o.spool_budget, 0);   /* the plane's default */
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
			       "cpus=1.5,egress_proxy_image=proxy:1,allow_other,max_threads=8,pull_timeout=45,"
			       "loglevel=info",
			       "/mnt", NULL),
			 0);
	assert_string_equal(o.host, "unix:///tmp/x.sock");
	assert_string_equal(o.image, "mafsbx/busybox:latest");
	assert_string_equal(o.scope, "team-a");
	assert_true(o.attr_timeout == 0.5);
	assert_int_equal(o.max_read, 1 << 20);
	assert_int_equal(o.max_write, 2048);
	assert_int_equal(o.exec_timeout, 30);
	assert_int_equal(o.pull_timeout, 45);
	assert_int_equal(o.loglevel, MAFSBX_LOG_INFO);
	assert_true(o.loglevel_given);
	assert_int_equal(o.pids_limit, 64);
	assert_true(o.cap_drop_all);
	assert_int_equal(o.memory, 512ll << 20);
	assert_true(o.cpus == 1.5);
	assert_string_equal(o.egress_proxy_image, "proxy:1");
	assert_true(o.max_threads_given);
	/* ours are taken out; libfuse's stay */
	assert_false(has_arg(&args, "image="));
	assert_false(has_arg(&args, "max_read"));
	assert_false(has_arg(&args, "loglevel"));
	assert_false(has_arg(&args, "pull_timeout"));
	assert_true(has_arg(&args, "allow_other"));
	assert_true(has_arg(&args, "max_threads=8"));
	assert_true(has_arg(&args, "-f"));
	mfs_options_free(&o);
	fuse_opt_free_args(&args);

	assert_int_equal(parse(&o, &args, &e, "-o", "burst_ms=0", "/mnt", NULL), 0);
	assert_int_equal(o.burst_ms, -1); /* none */
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
	assert_int_equal(parse(&o, &args, &e, "-o", "max_calls_per_user=3", "/mnt", NULL), 0);
	assert_int_equal(o.max_calls_per_user, 3);
	assert_false(has_arg(&args, "max_calls_per_user"));
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
	assert_int_equal(parse(&o, &args, &e, "-o", "listing=exec", "/mnt", NULL), 0);
	assert_int_equal(o.listing, MAFSBX_LISTING_EXEC);
	assert_false(has_arg(&args, "listing"));
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
	assert_int_equal(parse(&o, &args, &e, "-o", "listing=auto", "/mnt", NULL), 0);
	assert_int_equal(o.listing, MAFSBX_LISTING_AUTO);
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
	/* the budgets, once read from the environment, are options */
	assert_int_equal(parse(&o, &args, &e, "-o", "reply_budget=16M,spool_budget=8MiB", "/mnt", NULL), 0);
	assert_int_equal(o.reply_budget, 16ull << 20);
	assert_int_equal(o.spool_budget, 8ull << 20);
	assert_false(has_arg(&args, "budget"));
	mfs_options_free(&o);
	fuse_opt_free_args(&args);
	assert_int_equal(parse(&o, &args, &e, "-o", "burst_ms=200", "/mnt", NULL), 0);
	assert_int_equal(o.burst_ms, 200);
	assert_false(has_arg(&args, "burst_ms"));
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
		{ "max_exec_timeout=-1", "-o max_exec_timeout=-1: expected whole seconds from 0 (no ceiling)" },
		{ "max_exec_timeout=1h", "max_exec_timeout" },
		{ "max_exec_timeout=31536001", "max_exec_timeout" },
		/* the default may not pass the ceiling */
		{ "exec_timeout=700,max_exec_timeout=600", "-o exec_timeout=700 is over -o max_exec_timeout=600" },
		{ "max_exec_timeout=200", "-o exec_timeout=300 is over -o max_exec_timeout=200" },
		{ "pids_limit=-3", "pids_limit" },
		{ "memory=1k", "memory" },
		{ "cpus=0", "cpus" },
		{ "cpus=lots", "cpus" },
		{ "image=", "image" },
		{ "scope=", "scope" },
		{ "host=unix:///a,context=b", "not both" },
		{ "burst_ms=-1", "burst_ms" },
		{ "burst_ms=201", "burst_ms" },
		{ "burst_ms=5ms", "burst_ms" },
		{ "listing=find", "listing" },
		{ "listing=", "listing" },
		{ "max_calls_per_user=0", "max_calls_per_user" },
		{ "max_calls_per_user=65537", "max_calls_per_user" },
		{ "max_calls_per_user=2x", "max_calls_per_user" },
		{ "pull_timeout=0", "pull_timeout" },
		{ "pull_timeout=604801", "pull_timeout" },
		{ "pull_timeout=1m", "pull_timeout" },
		{ "loglevel=warn", "expected error, warning, info or debug" },
		{ "loglevel=", "loglevel" },
		{ "loglevel=INFO", "loglevel" },
		{ "reply_budget=0", "-o reply_budget=0: expected a byte count from 1M to 1T" },
		{ "reply_budget=1023K", "reply_budget" },
		{ "reply_budget=2T", "reply_budget" },
		{ "reply_budget=", "reply_budget" },
		{ "spool_budget=64Q", "-o spool_budget=64Q: expected a byte count from 1M to 1T" },
		{ "spool_budget=-1", "spool_budget" },
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

/* -o exec_timeout is the default of a request's timeout, -o max_exec_timeout its ceiling (0: none). */
static void test_exec_timeout_bounds(void **state)
{
	(void)state;
	static const struct {
		const char *opt;
		long def, max;
	} good[] = {
		{ "max_exec_timeout=600", 300, 600 },
		{ "exec_timeout=600,max_exec_timeout=600", 600, 600 },
		{ "exec_timeout=3600", 3600, 86400 },
		{ "exec_timeout=604800,max_exec_timeout=0", 604800, 0 },
		{ "max_exec_timeout=31536000", 300, 31536000 },
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct mfs_options o;
		struct fuse_args args;
		struct mafsbx_error e;
		int r = parse(&o, &args, &e, "-o", good[i].opt, "/mnt", NULL);
		if (r != 0 || o.exec_timeout != good[i].def || o.max_exec_timeout != good[i].max)
			fail_msg("-o %s: got %d (%s), exec_timeout %ld, max_exec_timeout %ld", good[i].opt, r, e.message,
				 o.exec_timeout, o.max_exec_timeout);
		mfs_options_free(&o);
		fuse_opt_free_args(&args);
	}
}

/* fstab type fuse.mafsbxfs: mount.fuse3 runs `mafsbxfs SOURCE MOUNTPOINT -o OPTS`. */
static void test_source_argument(void **state)
{
	(void)state;
	struct mfs_options o;
	struct fuse_args args;
	struct mafsbx_error e;
	/* fuse_parse_cmdline() resolves the mount point: one that exists */
	assert_int_equal(parse(&o, &args, &e, "mafsbxfs", "/tmp", "-o", "rw,allow_other", NULL), 0);
	assert_string_equal(o.source, "mafsbxfs");
	/* libfuse sees the mount point alone */
	assert_true(has_arg(&args, "/tmp"));
	for (int i = 1; i < args.argc; i++)
		assert_string_not_equal(args.argv[i], "mafsbxfs");
	struct fuse_cmdline_opts c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(fuse_parse_cmdline(&args, &c), 0);
	assert_string_equal(c.mountpoint, "/tmp");
	free(c.mountpoint);
	mfs_options_free(&o);
	assert_null(o.source);
	fuse_opt_free_args(&args);

	assert_int_equal(parse(&o, &args, &e, "-f", "none", "/srv/sbx", NULL), 0);
	assert_string_equal(o.source, "none");
	mfs_options_free(&o);
	fuse_opt_free_args(&args);

	/* the mount point alone: no source */
	assert_int_equal(parse(&o, &args, &e, "/srv/sbx", NULL), 0);
	assert_null(o.source);
	mfs_options_free(&o);
	fuse_opt_free_args(&args);

	/* a path where the source goes is a second mount point, not a source */
	assert_int_equal(parse(&o, &args, &e, "/a", "/b", NULL), -EINVAL);
	assert_non_null(strstr(e.message, "plain word"));
	fuse_opt_free_args(&args);
	assert_int_equal(parse(&o, &args, &e, "user@host:x", "/b", NULL), -EINVAL);
	fuse_opt_free_args(&args);
	/* more than SOURCE MOUNTPOINT */
	assert_int_equal(parse(&o, &args, &e, "mafsbxfs", "/a", "/b", NULL), -EINVAL);
	assert_non_null(strstr(e.message, "too many arguments"));
	assert_non_null(strstr(e.message, "'/b'"));
	fuse_opt_free_args(&args);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_defaults),
		cmocka_unit_test(test_options_all),
		cmocka_unit_test(test_options_bad),
		cmocka_unit_test(test_exec_timeout_bounds),
		cmocka_unit_test(test_source_argument),
		cmocka_unit_test(test_parse_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
