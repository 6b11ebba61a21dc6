/*
 * test_fingerprint.c: the pure parts of fingerprint.h: escaping (lossless,
 * printable, valid UTF-8), /proc/PID/mountinfo parsing (octal escapes,
 * /proc and /sys dropped, over-mounts kept once, malformed lines refused),
 * the JSON form (round trip, refusals naming what is wrong), and the diff
 * (added/removed/changed lines, the default exclusions and --strict,
 * processes by PID and start time).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fingerprint.h"

static void test_escape(void **state)
{
	(void)state;
	static const struct {
		const char *raw;
		size_t len;
		const char *want;
	} v[] = {
		{ "/etc/passwd", 11, "/etc/passwd" },
		{ "a b", 3, "a b" },
		{ "back\\slash", 10, "back\\\\slash" },
		{ "nl\nx", 4, "nl\\x0ax" },
		{ "esc\x1b[2J", 7, "esc\\x1b[2J" },
		{ "del\x7f", 4, "del\\x7f" },
		{ "caf\xc3\xa9", 5, "caf\xc3\xa9" },              /* valid UTF-8 kept */
		{ "bad\xff", 4, "bad\\xff" },                       /* not UTF-8 */
		{ "c1\xc2\x9b", 4, "c1\\xc2\\x9b" },               /* C1 CSI reaches terminals */
		{ "over\xc0\xaf", 6, "over\\xc0\\xaf" },           /* overlong '/' */
		{ "sur\xed\xa0\x80", 6, "sur\\xed\\xa0\\x80" },    /* a surrogate */
		{ "cut\xe2\x82", 5, "cut\\xe2\\x82" },             /* truncated sequence */
		{ "nul\0x", 5, "nul\\x00x" },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *e = mafsbx_fp_escape(v[i].raw, v[i].len);
		assert_non_null(e);
		assert_string_equal(e, v[i].want);
		free(e);
	}
	/* distinct raw names stay distinct: "\x41" typed literally is not "A" */
	char *a = mafsbx_fp_escape("\\x41", 4), *b = mafsbx_fp_escape("A", 1);
	assert_string_not_equal(a, b);
	free(a);
	free(b);
}

static const char MOUNTINFO[] =
	"77 52 0:40 / / rw,relatime master:3 - overlay overlay rw,lowerdir=/x\n"
	"78 77 0:43 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
	"79 77 0:44 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
	"80 79 0:45 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw,gid=5\n"
	"81 77 0:46 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro\n"
	"82 81 0:47 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755\n"
	"93 79 0:48 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k\n"
	"94 77 254:0 /var/lib/docker/containers/x/hosts /etc/hosts rw,relatime - ext4 /dev/vda rw\n"
	"95 77 0:50 / /data\\040dir ro,relatime shared:7 - tmpfs tmpfs ro\n"
	"96 77 0:51 / /data\\040dir rw,relatime - tmpfs tmpfs rw\n"
	"53 78 0:43 /bus /proc/bus ro,nosuid - proc proc rw\n"
	"60 81 0:50 / /sys/firmware ro,relatime - tmpfs tmpfs ro\n"
	"61 77 0:52 / /processes rw - tmpfs tmpfs rw\n"
	"62 77 0:53 / /odd\\134name ro - tmp\\040fs src ro\n";

static void test_mountinfo(void **state)
{
	(void)state;
	struct mafsbx_fp_mount *m = NULL;
	char **raw = NULL;
	size_t n = 0;
	assert_int_equal(mafsbx_fp_mountinfo_parse(MOUNTINFO, &m, &raw, &n), 0);
	static const char *const want[] = { "/", "/data dir", "/dev", "/dev/pts", "/dev/shm", "/etc/hosts",
					    "/odd\\\\name", "/processes" };
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++)
		assert_string_equal(m[i].path, want[i]);
	/* the raw form is what openat2 gets */
	assert_string_equal(raw[1], "/data dir");
	assert_string_equal(raw[6], "/odd\\name");
	/* the later mount on one point is the one kept (it is the one a path reaches) */
	assert_false(m[1].ro);
	assert_string_equal(m[0].fstype, "overlay");
	assert_string_equal(m[4].fstype, "tmpfs");
	assert_string_equal(m[6].fstype, "tmp fs");
	assert_true(m[6].ro);
	mafsbx_fp_mounts_free(m, raw, n);

	/* malformed: too few fields, no separator, a relative mount point */
	static const char *const bad[] = {
		"77 52 0:40 /\n",
		"77 52 0:40 / / rw overlay overlay rw\n",
		"77 52 0:40 / rel rw - overlay overlay rw\n",
		"77 52 0:40 / / rw - \n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(mafsbx_fp_mountinfo_parse(bad[i], &m, NULL, &n), -EINVAL);
		assert_null(m);
	}
	assert_int_equal(mafsbx_fp_mountinfo_parse("", &m, NULL, &n), 0);
	assert_int_equal(n, 0);
}

/* ---- snapshots built by hand -------------------------------------------- */

static void add(struct mafsbx_fp *fp, const char *path, int type, unsigned mode, const char *sha, const char *target)
{
	struct mafsbx_fp_entry e;
	memset(&e, 0, sizeof(e));
	e.path = strdup(path);
	e.type = type;
	e.mode = mode;
	e.size = type == MAFSBX_FP_DIR ? 4096 : 5;
	e.mtime_s = 1700000000;
	e.ctime_s = 1700000001;
	e.ctime_ns = 42;
	if (sha)
		snprintf(e.sha256, sizeof(e.sha256), "%s", sha);
	if (target)
		e.target = strdup(target);
	assert_int_equal(mafsbx_fp_add_entry(fp, &e), 0);
}

static void add_proc(struct mafsbx_fp *fp, long long pid, unsigned long long start, const char *a0, const char *a1)
{
	struct mafsbx_fp_process p;
	memset(&p, 0, sizeof(p));
	p.pid = pid;
	p.start = start;
	p.argv = calloc(2, sizeof(char *));
	p.argv[p.argc++] = strdup(a0);
	if (a1)
		p.argv[p.argc++] = strdup(a1);
	assert_int_equal(mafsbx_fp_add_process(fp, &p), 0);
}

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static struct mafsbx_fp *base(void)
{
	struct mafsbx_fp *fp = calloc(1, sizeof(*fp));
	snprintf(fp->id, sizeof(fp->id), "%064d", 7);
	fp->name = strdup("maf-sandbox-docker-0123456789ab");
	mafsbx_fp_limits_default(&fp->limits);
	fp->mounts = calloc(2, sizeof(*fp->mounts));
	fp->mounts[0].path = strdup("/");
	fp->mounts[0].fstype = strdup("overlay");
	fp->mounts[1].path = strdup("/dev/shm");
	fp->mounts[1].fstype = strdup("tmpfs");
	fp->n_mounts = 2;
	add(fp, "/", MAFSBX_FP_DIR, 0755, NULL, NULL);
	add(fp, "/etc", MAFSBX_FP_DIR, 0755, NULL, NULL);
	add(fp, "/etc/hosts", MAFSBX_FP_FILE, 0644, SHA_A, NULL);
	add(fp, "/etc/passwd", MAFSBX_FP_FILE, 0644, SHA_A, NULL);
	add(fp, "/bin", MAFSBX_FP_DIR, 0755, NULL, NULL);
	add(fp, "/bin/sh", MAFSBX_FP_LINK, 0777, NULL, "busybox");
	add(fp, "/tmp", MAFSBX_FP_DIR, 01777, NULL, NULL);
	add_proc(fp, 1, 100, "sleep", "infinity");
	mafsbx_fp_sort(fp);
	return fp;
}

static struct mafsbx_fp_entry *get(struct mafsbx_fp *fp, const char *path)
{
	for (size_t i = 0; i < fp->n_entries; i++)
		if (!strcmp(fp->entries[i].path, path))
			return &fp->entries[i];
	fail_msg("no %s", path);
	return NULL;
}

static char *diff(const struct mafsbx_fp *a, const struct mafsbx_fp *b, unsigned flags, size_t *n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	*n = mafsbx_fp_diff(a, b, flags, f);
	fclose(f);
	assert_int_equal(*n, mafsbx_fp_diff(a, b, flags, NULL));
	return text;
}

static void test_diff(void **state)
{
	(void)state;
	struct mafsbx_fp *a = base(), *b = base();
	size_t n;
	char *t = diff(a, b, MAFSBX_FP_STRICT, &n);
	assert_int_equal(n, 0);
	assert_string_equal(t, "");
	free(t);

	/* excluded by default: the engine's ctime on /etc/hosts, directory times and sizes */
	get(b, "/etc/hosts")->ctime_s++;
	get(b, "/tmp")->mtime_s++;
	get(b, "/tmp")->ctime_s++;
	get(b, "/tmp")->size = 8192;
	t = diff(a, b, 0, &n);
	assert_int_equal(n, 0);
	free(t);
	t = diff(a, b, MAFSBX_FP_STRICT, &n);
	assert_int_equal(n, 2);
	assert_string_equal(t, "~ /etc/hosts: ctime 1700000001.000000042 -> 1700000002.000000042\n"
			       "~ /tmp: size 4096 -> 8192, mtime 1700000000.000000000 -> 1700000001.000000000, "
			       "ctime 1700000001.000000042 -> 1700000002.000000042\n");
	free(t);
	/* but the content of /etc/hosts and a directory's mode are measured */
	memcpy(get(b, "/etc/hosts")->sha256, SHA_B, 65);
	get(b, "/tmp")->mode = 0777;
	t = diff(a, b, 0, &n);
	assert_int_equal(n, 2);
	assert_string_equal(t, "~ /etc/hosts: content sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb\n"
			       "~ /tmp: mode 1777 -> 0777\n");
	free(t);
	mafsbx_fp_free(b);

	/* added, removed, changed entries and processes, one line each */
	b = base();
	add(b, "/tmp/new", MAFSBX_FP_FILE, 0600, SHA_B, NULL);
	add(b, "/tmp/fifo", MAFSBX_FP_FIFO, 0644, NULL, NULL);
	get(b, "/etc/passwd")->ctime_s++;
	get(b, "/bin/sh")->target[0] = 'B';
	add_proc(b, 7, 900, "sleep", "1000");
	mafsbx_fp_sort(b);
	t = diff(a, b, 0, &n);
	assert_int_equal(n, 5);
	assert_string_equal(t, "~ /bin/sh: target busybox -> Busybox\n"
			       "~ /etc/passwd: ctime 1700000001.000000042 -> 1700000002.000000042\n"
			       "+ /tmp/fifo (fifo 0644 0:0)\n"
			       "+ /tmp/new (file 0600 0:0, 5 bytes)\n"
			       "+ process 7 (start 900): sleep 1000\n");
	free(t);
	t = diff(b, a, 0, &n);
	assert_int_equal(n, 5);
	assert_non_null(strstr(t, "- /tmp/new (file 0600 0:0, 5 bytes)\n"));
	assert_non_null(strstr(t, "- process 7 (start 900): sleep 1000\n"));
	free(t);
	mafsbx_fp_free(b);

	/* a recycled PID (same pid, another start) is another process; a new command line is a change */
	b = base();
	b->procs[0].start = 101;
	t = diff(a, b, 0, &n);
	assert_int_equal(n, 2);
	assert_string_equal(t, "- process 1 (start 100): sleep infinity\n+ process 1 (start 101): sleep infinity\n");
	free(t);
	free(b->procs[0].argv[1]);
	b->procs[0].argv[1] = strdup("9");
	b->procs[0].start = 100;
	b->procs[0].zombie = true;
	t = diff(a, b, 0, &n);
	assert_int_equal(n, 1);
	assert_string_equal(t, "~ process 1 (start 100, zombie): sleep 9\n");
	free(t);
	mafsbx_fp_free(b);

	/* mounts */
	b = base();
	free(b->mounts[1].fstype);
	b->mounts[1].fstype = strdup("ext4");
	b->mounts[1].ro = true;
	t = diff(a, b, 0, &n);
	assert_string_equal(t, "~ mount /dev/shm: tmpfs rw -> ext4 ro\n");
	free(t);
	mafsbx_fp_free(b);

	/* a type change */
	b = base();
	get(b, "/tmp")->type = MAFSBX_FP_LINK;
	get(b, "/tmp")->target = strdup("/elsewhere");
	t = diff(a, b, 0, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(t, "~ /tmp: type dir -> link"));
	assert_non_null(strstr(t, "target - -> /elsewhere"));
	free(t);
	mafsbx_fp_free(b);
	mafsbx_fp_free(a);
}

static void test_json(void **state)
{
	(void)state;
	struct mafsbx_fp *a = base();
	get(a, "/etc/passwd")->changing = true;
	add(a, "/dev/null", MAFSBX_FP_CHAR, 0666, NULL, NULL);
	get(a, "/dev/null")->rdev_major = 1;
	get(a, "/dev/null")->rdev_minor = 3;
	mafsbx_fp_sort(a);
	json_t *j = mafsbx_fp_to_json(a);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "format")), MAFSBX_FP_FORMAT);
	char *text = json_dumps(j, JSON_COMPACT);
	assert_non_null(strstr(text, "{\"path\":\"/dev/null\",\"type\":\"char\",\"mode\":\"0666\""));
	assert_non_null(strstr(text, "\"rdev\":\"1:3\""));
	assert_non_null(strstr(text, "\"target\":\"busybox\""));
	assert_non_null(strstr(text, "\"changing\":true"));
	assert_non_null(strstr(text, "\"mtime\":\"1700000000.000000000\",\"ctime\":\"1700000001.000000042\""));
	assert_non_null(strstr(text, "{\"pid\":1,\"start\":100,\"cmdline\":[\"sleep\",\"infinity\"]}"));
	free(text);
	struct mafsbx_fp *b = NULL;
	struct mafsbx_error e;
	assert_int_equal(mafsbx_fp_from_json(j, &b, &e), 0);
	assert_int_equal(mafsbx_fp_diff(a, b, MAFSBX_FP_STRICT, NULL), 0);
	assert_string_equal(b->name, a->name);
	assert_string_equal(b->id, a->id);
	assert_true(get(b, "/etc/passwd")->changing);
	mafsbx_fp_free(b);

	/* refusals name the problem */
	json_object_set_new(j, "format", json_string("something/else"));
	assert_int_equal(mafsbx_fp_from_json(j, &b, &e), -EINVAL);
	assert_non_null(strstr(e.message, "format"));
	json_object_set_new(j, "format", json_string(MAFSBX_FP_FORMAT));
	json_t *ent = json_array_get(json_object_get(j, "entries"), 2);
	json_object_set_new(ent, "mtime", json_string("12"));
	assert_int_equal(mafsbx_fp_from_json(j, &b, &e), -EINVAL);
	assert_non_null(strstr(e.message, "item 2"));
	json_object_set_new(ent, "mtime", json_string("12.000000000"));
	json_object_set_new(ent, "mode", json_string("99999"));
	assert_int_equal(mafsbx_fp_from_json(j, &b, &e), -EINVAL);
	json_object_set_new(ent, "mode", json_string("0644"));
	json_object_set_new(ent, "sha256", json_string("short"));
	assert_int_equal(mafsbx_fp_from_json(j, &b, &e), -EINVAL);
	json_object_del(ent, "sha256");
	json_object_set_new(json_array_get(json_object_get(j, "processes"), 0), "cmdline", json_pack("[i]", 3));
	assert_int_equal(mafsbx_fp_from_json(j, &b, &e), -EINVAL);
	json_object_set_new(j, "entries", json_object());
	assert_int_equal(mafsbx_fp_from_json(j, &b, &e), -EINVAL);
	json_decref(j);
	mafsbx_fp_free(a);
}

/* A zombie has no command line: the diff names it from /proc/P/stat (doc/security.md "Findings fixed after review": mafsbx fingerprint --diff names a zombie). */
static void test_zombie_name(void **state)
{
	(void)state;
	char *n = mafsbx_fp_stat_name("19 (my (odd) sh) Z 1 19 19 0 -1 4194308 0 0 0 0 0 0 0 0 20 0 1 0 200");
	assert_non_null(n);
	assert_string_equal(n, "my (odd) sh");
	free(n);
	assert_null(mafsbx_fp_stat_name("19 no name here"));

	struct mafsbx_fp *a = base(), *b = base();
	struct mafsbx_fp_process p;
	memset(&p, 0, sizeof(p));
	p.pid = 19;
	p.start = 200;
	p.zombie = true;
	p.name = strdup("sh");
	assert_int_equal(mafsbx_fp_add_process(b, &p), 0);
	mafsbx_fp_sort(b);
	size_t nl;
	char *t = diff(a, b, 0, &nl);
	assert_int_equal(nl, 1);
	assert_string_equal(t, "+ process 19 (start 200, zombie): [sh]\n");
	free(t);

	/* the name survives the JSON form (-o, then --diff of two files) */
	json_t *j = mafsbx_fp_to_json(b);
	struct mafsbx_fp *c = NULL;
	struct mafsbx_error e;
	assert_int_equal(mafsbx_fp_from_json(j, &c, &e), 0);
	t = diff(a, c, 0, &nl);
	assert_string_equal(t, "+ process 19 (start 200, zombie): [sh]\n");
	free(t);
	json_decref(j);
	mafsbx_fp_free(a);
	mafsbx_fp_free(b);
	mafsbx_fp_free(c);
}

static void test_types(void **state)
{
	(void)state;
	static const int t[] = { MAFSBX_FP_FILE, MAFSBX_FP_DIR, MAFSBX_FP_LINK, MAFSBX_FP_FIFO,
				 MAFSBX_FP_SOCKET, MAFSBX_FP_CHAR, MAFSBX_FP_BLOCK };
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_int_equal(mafsbx_fp_type_from_name(mafsbx_fp_type_name(t[i])), t[i]);
	assert_int_equal(mafsbx_fp_type_from_name("door"), 0);
	assert_string_equal(mafsbx_fp_type_name('?'), "other");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_zombie_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
