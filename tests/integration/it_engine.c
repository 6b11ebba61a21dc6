/*
 * it_engine.c: the Engine API client against the real dockerd: container
 * lifecycle, pause with HEAD/GET/PUT while frozen, ownership kept by PUT,
 * exec (stdin, separated streams, exact bytes, exit codes, launch failures,
 * timeouts, caps), a 20 MiB GET with bounded memory, the stall cut-off that
 * frees the container's lock, error kinds told apart live, many threads,
 * networks, images and transport failures.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "engine.h"
#include "harness.h"

#define BIG_SIZE (20u * 1024 * 1024)

static void sh_ok(const char *c, const char *script)
{
	int code = -1;
	assert_int_equal(harness_sh(c, script, &code), 0);
	if (code != 0)
		fail_msg("fixture script failed (%d): %s", code, script);
}

static int collect(const void *data, size_t len, void *ctx)
{
	return mafsbx_buf_append(ctx, data, len);
}

/* The first regular entry of a tar in memory: its content, uid and gid. */
struct entry {
	char name[256];
	struct mafsbx_buf data;
	long uid, gid;
	mode_t mode;
};

static void read_tar_entry(const void *tar, size_t len, struct entry *e)
{
	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	assert_int_equal(archive_read_open_memory(a, tar, len), ARCHIVE_OK);
	struct archive_entry *ae;
	assert_int_equal(archive_read_next_header(a, &ae), ARCHIVE_OK);
	snprintf(e->name, sizeof(e->name), "%s", archive_entry_pathname(ae));
	e->uid = (long)archive_entry_uid(ae);
	e->gid = (long)archive_entry_gid(ae);
	e->mode = archive_entry_mode(ae);
	char buf[4096];
	la_ssize_t n;
	while ((n = archive_read_data(a, buf, sizeof(buf))) > 0)
		assert_int_equal(mafsbx_buf_append(&e->data, buf, (size_t)n), 0);
	assert_true(n == 0);
	archive_read_free(a);
}

/* ---- lifecycle ----------------------------------------------------------- */

static void test_lifecycle(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	struct mafsbx_error err;
	struct mafsbx_engine_version v;
	harness_check(mafsbx_engine_version(e, &v, &err), &err, "version");
	assert_true(v.api_version[0] != '\0');
	assert_string_equal(v.os, "linux");

	char name[HARNESS_NAME_MAX];
	harness_unique_name("engine", name);
	json_t *cfg = json_pack("{s:s, s:[s,s], s:s, s:{s:s, s:s}, s:{s:s}}", "Image", harness_image(), "Cmd",
				"/bin/sleep", "infinity", "User", "1000:1000", "Labels", "mafsbxtest", "1",
				"mafsbxtest.role", name, "HostConfig", "NetworkMode", "none");
	char id[65];
	int r = mafsbx_container_create(e, name, cfg, id, &err);
	harness_check(r, &err, "create");
	harness_register_container(name);
	assert_int_equal(strlen(id), 64);

	/* Same name again: a conflict. */
	char id2[65];
	r = mafsbx_container_create(e, name, cfg, id2, &err);
	json_decref(cfg);
	assert_int_equal(r, -EEXIST);
	assert_int_equal(err.kind, MAFSBX_EK_CONFLICT);

	/* Pause of a created container: not running. */
	r = mafsbx_container_pause(e, name, &err);
	assert_int_equal(err.kind, MAFSBX_EK_NOT_RUNNING);
	assert_int_equal(r, -EBUSY);

	harness_check(mafsbx_container_start(e, name, &err), &err, "start");
	harness_check(mafsbx_container_start(e, id, &err), &err, "start again (304)");

	json_t *j = NULL;
	harness_check(mafsbx_container_inspect(e, name, &j, &err), &err, "inspect");
	assert_string_equal(json_string_value(json_object_get(j, "Id")), id);
	char slash[HARNESS_NAME_MAX + 1];
	snprintf(slash, sizeof(slash), "/%s", name);
	assert_string_equal(json_string_value(json_object_get(j, "Name")), slash);
	json_t *st = json_object_get(j, "State");
	assert_true(json_is_true(json_object_get(st, "Running")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "Config"), "User")), "1000:1000");
	json_decref(j);

	/* List by label, and by an anchored name regex. */
	json_t *f = mafsbx_filters_new();
	char label[HARNESS_NAME_MAX + 32];
	snprintf(label, sizeof(label), "mafsbxtest.role=%s", name);
	assert_int_equal(mafsbx_filters_add(f, "label", label), 0);
	json_t *list = NULL;
	harness_check(mafsbx_container_list(e, f, true, &list, &err), &err, "list by label");
	assert_int_equal(json_array_size(list), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "Id")), id);
	json_decref(list);
	json_decref(f);
	f = mafsbx_filters_new();
	char re[HARNESS_NAME_MAX + 8];
	snprintf(re, sizeof(re), "^/%s$", name);
	assert_int_equal(mafsbx_filters_add(f, "name", re), 0);
	harness_check(mafsbx_container_list(e, f, false, &list, &err), &err, "list by name");
	assert_int_equal(json_array_size(list), 1);
	json_decref(list);
	json_decref(f);

	harness_check(mafsbx_container_delete(e, name, true, &err), &err, "delete");
	harness_forget_container(name);
	r = mafsbx_container_inspect(e, name, &j, &err);
	assert_int_equal(r, -ENOENT);
	assert_int_equal(err.kind, MAFSBX_EK_NO_CONTAINER);
	assert_null(j);
	r = mafsbx_container_delete(e, name, true, &err);
	assert_int_equal(err.kind, MAFSBX_EK_NO_CONTAINER);

	/* Bad names never reach the engine. */
	assert_int_equal(mafsbx_container_inspect(e, "a/b", &j, &err), -EINVAL);
	assert_int_equal(mafsbx_container_inspect(e, "", &j, &err), -EINVAL);
}

/* ---- pause, then HEAD / GET / PUT while frozen ------------------------- */

static void test_paused_archive(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	struct mafsbx_error err;
	char c[HARNESS_NAME_MAX];
	harness_container("engine", c);
	sh_ok(c, "mkdir -p /w && printf 'hello!' > /w/file && chown 1000:1000 /w/file && chmod 640 /w/file");

	harness_check(mafsbx_container_pause(e, c, &err), &err, "pause");
	json_t *j = NULL;
	harness_check(mafsbx_container_inspect(e, c, &j, &err), &err, "inspect paused");
	assert_true(json_is_true(json_object_get(json_object_get(j, "State"), "Paused")));
	json_decref(j);

	/* Pause twice: a conflict. Exec while frozen: refused as paused. */
	assert_int_equal(mafsbx_container_pause(e, c, &err), -EEXIST);
	assert_int_equal(err.kind, MAFSBX_EK_CONFLICT);
	const char *argv[] = { "/bin/true", NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 10000 };
	struct mafsbx_exec_result res;
	assert_int_equal(mafsbx_exec_run(e, c, &rq, &res, &err), -EBUSY);
	assert_int_equal(err.kind, MAFSBX_EK_PAUSED);
	mafsbx_exec_result_free(&res);

	struct mafsbx_path_stat st;
	harness_check(mafsbx_archive_head(e, c, "/w/file", &st, &err), &err, "HEAD while paused");
	assert_int_equal(st.size, 6);
	assert_int_equal(st.mode, S_IFREG | 0640);
	assert_string_equal(st.name, "file");

	struct mafsbx_buf tar = MAFSBX_BUF_INIT;
	struct mafsbx_path_stat st2;
	harness_check(mafsbx_archive_get(e, c, "/w/file", 0, collect, &tar, &st2, &err), &err, "GET while paused");
	assert_int_equal(st2.size, 6);
	assert_int_equal(st2.mtime.tv_sec, st.mtime.tv_sec);
	struct entry en = { .data = MAFSBX_BUF_INIT };
	read_tar_entry(tar.data, tar.len, &en);
	assert_string_equal(en.name, "file");
	assert_int_equal(en.data.len, 6);
	assert_memory_equal(en.data.data, "hello!", 6);
	assert_int_equal(en.uid, 1000);
	assert_int_equal(en.gid, 1000);
	mafsbx_buf_free(&en.data);
	mafsbx_buf_free(&tar);

	harness_check(mafsbx_container_unpause(e, c, &err), &err, "unpause");
	/* Unpause of a running container: the engine's 500. */
	assert_int_equal(mafsbx_container_unpause(e, c, &err), -EIO);
	assert_int_equal(err.kind, MAFSBX_EK_ENGINE);
	assert_int_equal(err.http_status, 500);
}

/* ---- PUT keeps numeric ownership; refusals ---------------------------- */

static void add_entry(struct archive *a, const char *name, mode_t mode, long uid, long gid, const char *data)
{
	struct archive_entry *ae = archive_entry_new();
	archive_entry_set_pathname(ae, name);
	archive_entry_set_mode(ae, mode);
	archive_entry_set_uid(ae, uid);
	archive_entry_set_gid(ae, gid);
	archive_entry_set_uname(ae, "nobody-here");
	archive_entry_set_gname(ae, "nobody-here");
	archive_entry_set_mtime(ae, 1700000000, 0);
	archive_entry_set_size(ae, data ? (la_int64_t)strlen(data) : 0);
	assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
	if (data)
		assert_int_equal(archive_write_data(a, data, strlen(data)), (la_ssize_t)strlen(data));
	archive_entry_free(ae);
}

struct tarbuf {
	void *data;
	size_t len;
};

static void build_tar(struct tarbuf *t, void (*fill)(struct archive *))
{
	size_t cap = 1 << 20;
	t->data = malloc(cap);
	assert_non_null(t->data);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	assert_int_equal(archive_write_open_memory(a, t->data, cap, &t->len), ARCHIVE_OK);
	fill(a);
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

static void fill_owned(struct archive *a)
{
	add_entry(a, "owned", AE_IFREG | 0644, 1234, 4321, "owned data\n");
	add_entry(a, "owneddir", AE_IFDIR | 0750, 2000, 2001, NULL);
	add_entry(a, "owneddir/f", AE_IFREG | 04755, 0, 0, "x");
	add_entry(a, "sandboxname", AE_IFREG | 0600, 1000, 1000, "s");
}

static void fill_clash(struct archive *a)
{
	add_entry(a, "x", AE_IFREG | 0644, 0, 0, "file over dir");
}

static void test_put_ownership(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	struct mafsbx_error err;
	char c[HARNESS_NAME_MAX];
	harness_container("engine", c);
	sh_ok(c, "mkdir -p /tmp/put/x/deep && echo keep > /tmp/put/x/deep/file");

	struct tarbuf t;
	build_tar(&t, fill_owned);
	harness_check(mafsbx_archive_put(e, c, "/tmp/put", t.data, t.len, &err), &err, "PUT");
	free(t.data);

	struct mafsbx_exec_result res;
	assert_int_equal(harness_sh_result(c, "cd /tmp/put && stat -c '%n %u:%g %a' owned owneddir owneddir/f sandboxname"
					  " && cat owned", &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal((char *)res.out, "owned 1234:4321 644\nowneddir 2000:2001 750\nowneddir/f 0:0 4755\n"
					     "sandboxname 1000:1000 600\nowned data\n");
	mafsbx_exec_result_free(&res);

	/* noOverwriteDirNonDir: a file may not replace the non-empty directory x. */
	build_tar(&t, fill_clash);
	int r = mafsbx_archive_put(e, c, "/tmp/put", t.data, t.len, &err);
	assert_true(r < 0);
	assert_int_equal(err.http_status, 500);
	sh_ok(c, "test -f /tmp/put/x/deep/file");

	/* Missing destination: absent path, not absent container. */
	r = mafsbx_archive_put(e, c, "/tmp/nope", t.data, t.len, &err);
	assert_int_equal(r, -ENOENT);
	assert_int_equal(err.kind, MAFSBX_EK_NO_PATH);
	/* Destination that is a file. */
	r = mafsbx_archive_put(e, c, "/tmp/put/owned", t.data, t.len, &err);
	assert_true(r < 0);
	free(t.data);

	/* An empty body is fine (nothing happens). */
	harness_check(mafsbx_archive_put(e, c, "/tmp/put", NULL, 0, &err), &err, "empty PUT");
}

/* ---- exec ----------------------------------------------------------------- */

static void run(const char *c, const char *const *argv, const char *in, size_t in_len, struct mafsbx_exec_result *res)
{
	struct mafsbx_error err;
	struct mafsbx_exec_request rq = { .argv = argv, .stdin_data = in, .stdin_len = in_len, .timeout_ms = 30000 };
	harness_check(mafsbx_exec_run(harness_engine(), c, &rq, res, &err), &err, argv[0]);
}

static void test_exec(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	struct mafsbx_error err;
	struct mafsbx_exec_result res;
	char c[HARNESS_NAME_MAX];
	harness_container("engine", c);

	/* stdin, then EOF */
	const char *wc[] = { "/bin/sh", "-c", "wc -c; echo done >&2", NULL };
	run(c, wc, "hello\n", 6, &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(atoi((char *)res.out), 6);
	assert_string_equal((char *)res.err, "done\n");
	assert_false(res.launch_failed);
	assert_int_equal(strlen(res.exec_id), 64);
	mafsbx_exec_result_free(&res);

	/* Empty stdin is an immediate EOF, not a hang. */
	const char *cat[] = { "/bin/cat", NULL };
	run(c, cat, "", 0, &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out_len, 0);
	mafsbx_exec_result_free(&res);

	/* 1 MiB through cat and back: writing stdin and reading output overlap. */
	size_t n = 1 << 20;
	unsigned char *big = malloc(n);
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (unsigned char)(i * 31 + (i >> 9));
	run(c, cat, (const char *)big, n, &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out_len, n);
	assert_memory_equal(res.out, big, n);
	mafsbx_exec_result_free(&res);
	free(big);

	/* separated streams, exit 7 */
	const char *sep[] = { "/bin/sh", "-c", "echo out; echo err >&2; echo out2; exit 7", NULL };
	run(c, sep, NULL, 0, &res);
	assert_int_equal(res.exit_code, 7);
	assert_string_equal((char *)res.out, "out\nout2\n");
	assert_string_equal((char *)res.err, "err\n");
	assert_false(res.launch_failed);
	mafsbx_exec_result_free(&res);

	/* exact non-UTF-8 bytes, NUL included */
	const char *bytes[] = { "/bin/sh", "-c", "printf '\\377\\000\\001'; printf '\\200\\000' >&2", NULL };
	run(c, bytes, NULL, 0, &res);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.out_len, 3);
	assert_memory_equal(res.out, "\377\000\001", 3);
	assert_int_equal(res.err_len, 2);
	assert_memory_equal(res.err, "\200\000", 2);
	mafsbx_exec_result_free(&res);

	/* user, working directory, environment */
	const char *who[] = { "/bin/sh", "-c", "id -u; id -g; pwd; echo \"$FOO\"", NULL };
	const char *env[] = { "FOO=bar baz", NULL };
	struct mafsbx_exec_request rq = { .argv = who, .env = env, .user = "1000:1000", .workdir = "/tmp",
					  .timeout_ms = 30000 };
	harness_check(mafsbx_exec_run(e, c, &rq, &res, &err), &err, "exec as 1000");
	assert_string_equal((char *)res.out, "1000\n1000\n/tmp\nbar baz\n");
	mafsbx_exec_result_free(&res);

	/* A missing binary: 126 and a launch failure. */
	const char *missing[] = { "/nonexistent", NULL };
	run(c, missing, NULL, 0, &res);
	assert_int_equal(res.exit_code, 126);
	assert_true(res.launch_failed);
	mafsbx_exec_result_free(&res);

	/* An unknown user: also a launch failure. */
	const char *t[] = { "/bin/true", NULL };
	struct mafsbx_exec_request rq2 = { .argv = t, .user = "nosuchuser", .timeout_ms = 30000 };
	harness_check(mafsbx_exec_run(e, c, &rq2, &res, &err), &err, "exec as nosuchuser");
	assert_int_equal(res.exit_code, 126);
	assert_true(res.launch_failed);
	mafsbx_exec_result_free(&res);

	/* A program that itself exits 126 is program output, not a launch failure. */
	const char *own126[] = { "/bin/sh", "-c", "echo 'OCI runtime exec failed' >&2; exit 126", NULL };
	run(c, own126, NULL, 0, &res);
	assert_int_equal(res.exit_code, 126);
	assert_false(res.launch_failed);
	mafsbx_exec_result_free(&res);

	/* Exit 0. */
	run(c, t, NULL, 0, &res);
	assert_int_equal(res.exit_code, 0);
	assert_false(res.timed_out);
	assert_false(res.truncated);
	mafsbx_exec_result_free(&res);

	/* Per-stream cap: truncated, stream drained, exit code still known. */
	const char *flood[] = { "/bin/sh", "-c", "head -c 300000 /dev/zero; echo tail >&2", NULL };
	struct mafsbx_exec_request rq3 = { .argv = flood, .max_output = 1000, .timeout_ms = 30000 };
	harness_check(mafsbx_exec_run(e, c, &rq3, &res, &err), &err, "flood");
	assert_true(res.truncated);
	assert_int_equal(res.out_len, 1000);
	assert_string_equal((char *)res.err, "tail\n");
	assert_int_equal(res.exit_code, 0);
	mafsbx_exec_result_free(&res);

	/* Timeout: the stream is closed, timed_out set, EK_TIMEOUT. */
	const char *slow[] = { "/bin/sh", "-c", "echo started; sleep 30", NULL };
	struct mafsbx_exec_request rq4 = { .argv = slow, .timeout_ms = 700 };
	int r = mafsbx_exec_run(e, c, &rq4, &res, &err);
	assert_int_equal(r, -ETIMEDOUT);
	assert_int_equal(err.kind, MAFSBX_EK_TIMEOUT);
	assert_true(res.timed_out);
	assert_int_equal(res.exit_code, -1);
	mafsbx_exec_result_free(&res);

	/* Missing container. */
	r = mafsbx_exec_run(e, "mafsbxtest-engine-absent-0", &rq2, &res, &err);
	assert_int_equal(err.kind, MAFSBX_EK_NO_CONTAINER);
	mafsbx_exec_result_free(&res);
	/* No command. */
	const char *none[] = { NULL };
	struct mafsbx_exec_request rq5 = { .argv = none };
	assert_int_equal(mafsbx_exec_run(e, c, &rq5, &res, &err), -EINVAL);
	mafsbx_exec_result_free(&res);
}

/* ---- 20 MiB GET with bounded memory ------------------------------------- */

struct counter {
	uint64_t bytes;
	size_t max_chunk;
};

static int count(const void *data, size_t len, void *ctx)
{
	(void)data;
	struct counter *k = ctx;
	k->bytes += len;
	if (len > k->max_chunk)
		k->max_chunk = len;
	return 0;
}

static long maxrss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static void test_big_get_bounded(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	struct mafsbx_error err;
	char c[HARNESS_NAME_MAX];
	harness_container("engine", c);
	sh_ok(c, "head -c 20971520 /dev/urandom > /tmp/big");

	long before = maxrss_kib();
	struct counter k = { 0 };
	struct mafsbx_path_stat st;
	harness_check(mafsbx_archive_get(e, c, "/tmp/big", 0, count, &k, &st, &err), &err, "GET 20 MiB");
	long after = maxrss_kib();
	assert_int_equal(st.size, BIG_SIZE);
	assert_true(k.bytes >= BIG_SIZE + 512 && k.bytes <= BIG_SIZE + 16384);
	assert_true(k.max_chunk <= 256 * 1024);  /* handed over as it arrives */
	if (after - before > 8 * 1024)
		fail_msg("peak RSS grew by %ld KiB while streaming 20 MiB", after - before);

	/* A byte bound: aborted with EK_TOO_BIG, and the container answers at once after. */
	struct counter k2 = { 0 };
	int r = mafsbx_archive_get(e, c, "/tmp/big", 1 << 20, count, &k2, NULL, &err);
	assert_int_equal(r, -EFBIG);
	assert_int_equal(err.kind, MAFSBX_EK_TOO_BIG);
	assert_true(k2.bytes <= 1 << 20);
	struct mafsbx_engine_timeouts quick = { .request_ms = 5000 };
	struct mafsbx_engine *e2 = harness_engine_with(&quick);
	json_t *j = NULL;
	harness_check(mafsbx_container_inspect(e2, c, &j, &err), &err, "inspect after an aborted GET");
	json_decref(j);
	mafsbx_engine_close(e2);

	/* A sink that refuses: its errno comes back, the stream is dropped. */
	r = mafsbx_archive_get(e, c, "/tmp/big", 0, (mafsbx_sink_fn)NULL, NULL, NULL, &err);
	assert_int_equal(r, -EINVAL);
}

/* ---- a stalled consumer is cut off; the container is free again --------- */

struct stall {
	struct mafsbx_engine *e;
	const char *c;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool entered;
	bool release;
	int rc;
	struct mafsbx_error err;
	uint64_t bytes;
};

static int stalling_sink(const void *data, size_t len, void *ctx)
{
	(void)data;
	struct stall *s = ctx;
	s->bytes += len;
	pthread_mutex_lock(&s->mu);
	if (!s->entered) {
		s->entered = true;
		pthread_cond_broadcast(&s->cv);
		/* Stop consuming until the test lets go (bounded: 60 s). */
		long long until = mafsbx_now_ms() + 60000;
		while (!s->release && mafsbx_now_ms() < until) {
			pthread_mutex_unlock(&s->mu);
			usleep(20000);
			pthread_mutex_lock(&s->mu);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static void *stall_thread(void *arg)
{
	struct stall *s = arg;
	mafsbx_error_clear(&s->err);
	s->rc = mafsbx_archive_get(s->e, s->c, "/tmp/big", 0, stalling_sink, s, NULL, &s->err);
	return NULL;
}

static void test_stall_cutoff(void **state)
{
	(void)state;
	struct mafsbx_error err;
	char c[HARNESS_NAME_MAX];
	harness_container("engine", c);
	sh_ok(c, "head -c 20971520 /dev/zero > /tmp/big");

	struct mafsbx_engine_timeouts stall = { .stream_stall_s = 1 };
	struct stall s = { .e = harness_engine_with(&stall), .c = c };
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, stall_thread, &s), 0);
	pthread_mutex_lock(&s.mu);
	while (!s.entered)
		pthread_cond_wait(&s.cv, &s.mu);
	pthread_mutex_unlock(&s.mu);

	/*
	 * The consumer is stuck inside its sink. A stream left open holds the
	 * container's lock with no limit (doc/engine-notes.md §1.7), so these calls
	 * with a 3 s bound succeed only once the watchdog closed the stream.
	 */
	struct mafsbx_engine_timeouts quick = { .request_ms = 3000 };
	struct mafsbx_engine *q = harness_engine_with(&quick);
	int r = -1;
	enum mafsbx_err_kind kind = MAFSBX_EK_TIMEOUT;
	for (int i = 0; i < 8 && r < 0 && kind == MAFSBX_EK_TIMEOUT; i++) {
		json_t *j = NULL;
		r = mafsbx_container_inspect(q, c, &j, &err);
		kind = err.kind;
		json_decref(j);
	}
	int rp = -1, ru = -1, ri = -1;
	struct mafsbx_error errp, erru, erri;
	if (r == 0) {
		rp = mafsbx_container_pause(q, c, &errp);
		ru = mafsbx_container_unpause(q, c, &erru);
		json_t *j = NULL;
		ri = mafsbx_container_inspect(q, c, &j, &erri);
		json_decref(j);
	}
	/* Let the consumer go before any assertion, so a failure cannot leave it stuck. */
	pthread_mutex_lock(&s.mu);
	s.release = true;
	pthread_mutex_unlock(&s.mu);
	pthread_join(th, NULL);
	harness_check(r, &err, "inspect while the consumer stalls");
	harness_check(rp, &errp, "pause after the cut-off");
	harness_check(ru, &erru, "unpause after the cut-off");
	harness_check(ri, &erri, "inspect after the cut-off");
	assert_int_equal(s.rc, -ETIMEDOUT);
	assert_int_equal(s.err.kind, MAFSBX_EK_TIMEOUT);
	assert_true(s.bytes < BIG_SIZE);

	/* The same handle works afterwards (a fresh connection). */
	struct mafsbx_path_stat st;
	harness_check(mafsbx_archive_head(s.e, c, "/tmp/big", &st, &err), &err, "HEAD after the cut-off");
	assert_int_equal(st.size, BIG_SIZE);
	mafsbx_engine_close(q);
	mafsbx_engine_close(s.e);
	pthread_mutex_destroy(&s.mu);
	pthread_cond_destroy(&s.cv);
}

/* ---- delete while paused ----------------------------------------------- */

static void test_delete_paused(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	struct mafsbx_error err;
	char c[HARNESS_NAME_MAX];
	harness_container("engine", c);
	harness_check(mafsbx_container_pause(e, c, &err), &err, "pause");
	/* Not forced: refused (running container). */
	int r = mafsbx_container_delete(e, c, false, &err);
	assert_true(r < 0);
	assert_int_equal(err.kind, MAFSBX_EK_CONFLICT);
	harness_check(mafsbx_container_delete(e, c, true, &err), &err, "delete paused");
	harness_forget_container(c);
	json_t *j = NULL;
	assert_int_equal(mafsbx_container_inspect(e, c, &j, &err), -ENOENT);
	assert_int_equal(err.kind, MAFSBX_EK_NO_CONTAINER);
}

/* ---- error kinds and file types, live ------------------------------------ */

static void expect_head(const char *c, const char *path, enum mafsbx_err_kind kind, int eno)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	struct mafsbx_path_stat st;
	int r = mafsbx_archive_head(harness_engine(), c, path, &st, &err);
	if (r != -eno || err.kind != kind)
		fail_msg("HEAD %.80s: got %d %s (%s), want %s %s", path, r, mafsbx_error_kind_name(err.kind), err.message,
			 mafsbx_error_kind_name(kind), mafsbx_errno_name(eno));
	if (strstr(err.message, "/var/lib/docker"))
		fail_msg("host path leaked: %s", err.message);
}

static void test_error_kinds_live(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	struct mafsbx_error err;
	char c[HARNESS_NAME_MAX];
	harness_container("engine", c);
	sh_ok(c, "mkdir -p /w/dir /w/sticky /w/sgid && printf 'hello!' > /w/file && ln -s file /w/link_file && "
		 "ln -s loop2 /w/loop1 && ln -s loop1 /w/loop2 && mkfifo /w/fifo && chmod 1777 /w/sticky && "
		 "chmod 2755 /w/sgid && cp /w/file /w/suid && chown 1234:5678 /w/suid && chmod 4755 /w/suid");

	expect_head(c, "/w/missing", MAFSBX_EK_NO_PATH, ENOENT);
	expect_head("mafsbxtest-engine-absent-0", "/w/file", MAFSBX_EK_NO_CONTAINER, ENOENT);
	expect_head(c, "/w/file/x", MAFSBX_EK_NOT_DIR, ENOTDIR);
	expect_head(c, "/w/loop1", MAFSBX_EK_CONFINEMENT, ELOOP);
	expect_head(c, "/w/loop1/x", MAFSBX_EK_CONFINEMENT, ELOOP);
	char longp[400] = "/w/";
	memset(longp + 3, 'x', 300);
	longp[303] = '\0';
	expect_head(c, longp, MAFSBX_EK_NAMETOOLONG, ENAMETOOLONG);
	expect_head(c, "relative", MAFSBX_EK_INVALID, EINVAL);

	/* GET tells them apart the same way. */
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	assert_int_equal(mafsbx_archive_get(e, c, "/w/missing", 0, collect, &b, NULL, &err), -ENOENT);
	assert_int_equal(err.kind, MAFSBX_EK_NO_PATH);
	assert_int_equal(mafsbx_archive_get(e, "mafsbxtest-engine-absent-0", "/w/file", 0, collect, &b, NULL, &err),
			 -ENOENT);
	assert_int_equal(err.kind, MAFSBX_EK_NO_CONTAINER);
	assert_int_equal(mafsbx_archive_get(e, c, "/w/file/x", 0, collect, &b, NULL, &err), -ENOTDIR);
	assert_int_equal(b.len, 0);
	mafsbx_buf_free(&b);

	struct {
		const char *path;
		mode_t mode;
		const char *link;
	} ok[] = {
		{ "/w/file", S_IFREG | 0644, "" },
		{ "/w/dir", S_IFDIR | 0755, "" },
		{ "/w/link_file", S_IFLNK | 0777, "/w/file" },
		{ "/w/fifo", S_IFIFO | 0644, "" },
		{ "/w/sticky", S_IFDIR | S_ISVTX | 0777, "" },
		{ "/w/sgid", S_IFDIR | S_ISGID | 0755, "" },
		{ "/w/suid", S_IFREG | S_ISUID | 0755, "" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct mafsbx_path_stat st;
		harness_check(mafsbx_archive_head(e, c, ok[i].path, &st, &err), &err, ok[i].path);
		if (st.mode != ok[i].mode)
			fail_msg("%s: mode 0%o, want 0%o", ok[i].path, (unsigned)st.mode, (unsigned)ok[i].mode);
		assert_string_equal(st.link_target, ok[i].link);
	}
	/* A char device that the archive view does see: the rootfs /dev/console placeholder is a file,
	 * so check the decoded mtime of a fresh file instead: close to now. */
	struct mafsbx_path_stat st;
	harness_check(mafsbx_archive_head(e, c, "/w/file", &st, &err), &err, "HEAD /w/file");
	long long now = (long long)time(NULL);
	assert_true(st.mtime.tv_sec > now - 3600 && st.mtime.tv_sec < now + 3600);
}

/* ---- many threads on one handle ----------------------------------------- */

struct worker {
	const char *c;
	int failures;
	char msg[MAFSBX_ERR_MSG_MAX];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mafsbx_engine *e = harness_engine();
	for (int i = 0; i < 40; i++) {
		struct mafsbx_error err;
		struct mafsbx_path_stat st;
		json_t *j = NULL;
		int r = (i % 2) ? mafsbx_archive_head(e, w->c, "/etc/passwd", &st, &err)
				: mafsbx_container_inspect(e, w->c, &j, &err);
		json_decref(j);
		if (r < 0) {
			w->failures++;
			snprintf(w->msg, sizeof(w->msg), "%s", err.message);
		} else if ((i % 2) && !S_ISREG(st.mode)) {
			w->failures++;
			snprintf(w->msg, sizeof(w->msg), "bad stat");
		}
		if (i % 10 == 0) {
			struct mafsbx_path_stat s2;
			r = mafsbx_archive_head(e, w->c, "/no/such", &s2, &err);
			if (r != -ENOENT || err.kind != MAFSBX_EK_NO_PATH) {
				w->failures++;
				snprintf(w->msg, sizeof(w->msg), "missing path: %s", err.message);
			}
		}
	}
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	char c[HARNESS_NAME_MAX];
	harness_container("engine", c);
	enum { N = 8 };
	pthread_t th[N];
	struct worker w[N];
	for (int i = 0; i < N; i++) {
		w[i] = (struct worker){ .c = c };
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < N; i++)
		if (w[i].failures)
			fail_msg("thread %d: %d failures, last: %s", i, w[i].failures, w[i].msg);
}

/* ---- networks ------------------------------------------------------------ */

static void test_networks(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	struct mafsbx_error err;
	char n1[HARNESS_NAME_MAX], n2[HARNESS_NAME_MAX], id1[65], id2[65];
	harness_unique_name("engine-net", n1);
	harness_unique_name("engine-net", n2);
	json_t *cfg = json_pack("{s:s, s:s, s:b, s:b, s:{s:s}}", "Name", n1, "Driver", "bridge", "Internal", 1,
				"CheckDuplicate", 1, "Labels", "mafsbxtest", "1");
	harness_check(mafsbx_network_create(e, cfg, id1, &err), &err, "network create");
	harness_register_network(n1);
	/* Duplicate name: conflict. */
	char idx[65];
	assert_true(mafsbx_network_create(e, cfg, idx, &err) < 0);
	assert_int_equal(err.kind, MAFSBX_EK_CONFLICT);
	json_object_set_new(cfg, "Name", json_string(n2));
	harness_check(mafsbx_network_create(e, cfg, id2, &err), &err, "network create 2");
	harness_register_network(n2);
	json_decref(cfg);

	json_t *j = NULL;
	harness_check(mafsbx_network_inspect(e, n1, &j, &err), &err, "network inspect");
	assert_string_equal(json_string_value(json_object_get(j, "Id")), id1);
	assert_true(json_is_true(json_object_get(j, "Internal")));
	json_decref(j);

	json_t *f = mafsbx_filters_new();
	assert_int_equal(mafsbx_filters_add(f, "name", n1), 0);
	harness_check(mafsbx_network_list(e, f, &j, &err), &err, "network list");
	assert_int_equal(json_array_size(j), 1);
	json_decref(j);
	json_decref(f);

	/* A container on n1 (created only), then connected to n2 as well. */
	char c[HARNESS_NAME_MAX];
	json_t *ccfg = json_pack("{s:{s:s}}", "HostConfig", "NetworkMode", n1);
	harness_container_cfg("engine", ccfg, false, c);
	json_decref(ccfg);
	harness_check(mafsbx_network_connect(e, n2, c, &err), &err, "network connect");
	harness_check(mafsbx_container_inspect(e, c, &j, &err), &err, "inspect connected");
	json_t *nets = json_object_get(json_object_get(j, "NetworkSettings"), "Networks");
	assert_non_null(json_object_get(nets, n1));
	assert_non_null(json_object_get(nets, n2));
	json_decref(j);

	harness_check(mafsbx_container_delete(e, c, true, &err), &err, "delete container");
	harness_forget_container(c);
	harness_check(mafsbx_network_delete(e, n1, &err), &err, "network delete");
	harness_check(mafsbx_network_delete(e, id2, &err), &err, "network delete by id");
	assert_int_equal(mafsbx_network_delete(e, n1, &err), -ENOENT);
	assert_int_equal(err.kind, MAFSBX_EK_NO_OBJECT);
	assert_int_equal(mafsbx_network_inspect(e, n1, &j, &err), -ENOENT);
}

/* ---- images -------------------------------------------------------------- */

static void fill_rootfs(struct archive *a)
{
	add_entry(a, "hello.txt", AE_IFREG | 0644, 0, 0, "image content\n");
}

static void test_images(void **state)
{
	(void)state;
	struct mafsbx_engine *e = harness_engine();
	struct mafsbx_error err;
	json_t *j = NULL;
	harness_check(mafsbx_image_inspect(e, harness_image(), &j, &err), &err, "image inspect");
	assert_non_null(json_object_get(j, "Id"));
	json_decref(j);
	assert_int_equal(mafsbx_image_inspect(e, "mafsbxtest-absent/none:latest", &j, &err), -ENOENT);
	assert_int_equal(err.kind, MAFSBX_EK_NO_IMAGE);

	/* No registry is reachable: the pull fails, as a missing image. */
	struct mafsbx_engine_timeouts to = { .pull_ms = 60000 };
	struct mafsbx_engine *e2 = harness_engine_with(&to);
	assert_true(mafsbx_image_pull(e2, "mafsbxtest-absent/none:latest", &err) < 0);
	assert_int_equal(err.kind, MAFSBX_EK_NO_IMAGE);
	mafsbx_engine_close(e2);

	/* import with changes, inspect, delete */
	char repo[HARNESS_NAME_MAX], ref[HARNESS_NAME_MAX + 8];
	harness_unique_name("engine-img", repo);
	snprintf(ref, sizeof(ref), "%s:t1", repo);
	struct tarbuf t;
	build_tar(&t, fill_rootfs);
	const char *changes[] = { "CMD [\"/hello.txt\"]", "ENV A=\"b c\"", "LABEL mafsbxtest=1", NULL };
	int r = mafsbx_image_import(e, t.data, t.len, repo, "t1", changes, &err);
	free(t.data);
	harness_check(r, &err, "image import");
	harness_register_image(ref);
	harness_check(mafsbx_image_inspect(e, ref, &j, &err), &err, "inspect imported");
	json_t *cfg = json_object_get(j, "Config");
	assert_string_equal(json_string_value(json_array_get(json_object_get(cfg, "Cmd"), 0)), "/hello.txt");
	bool env_ok = false;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(cfg, "Env"), i, v)
		env_ok = env_ok || strcmp(json_string_value(v), "A=b c") == 0;
	assert_true(env_ok);
	json_decref(j);
	harness_check(mafsbx_image_delete(e, ref, &err), &err, "image delete");
	assert_int_equal(mafsbx_image_inspect(e, ref, &j, &err), -ENOENT);
	assert_int_equal(mafsbx_image_delete(e, ref, &err), -ENOENT);
	assert_int_equal(err.kind, MAFSBX_EK_NO_IMAGE);
}

/* ---- transport failures -------------------------------------------------- */

static void test_transport_failures(void **state)
{
	(void)state;
	struct mafsbx_error err;
	struct mafsbx_endpoint ep;
	/* Nobody listens: unreachable, ENOTCONN. */
	assert_int_equal(mafsbx_endpoint_parse_url("unix:///nonexistent/mafsbxtest.sock", &ep, &err), 0);
	struct mafsbx_engine *e = mafsbx_engine_open(&ep, NULL, &err);
	assert_non_null(e);
	assert_int_equal(mafsbx_engine_ping(e, &err), -ENOTCONN);
	assert_int_equal(err.kind, MAFSBX_EK_UNREACHABLE);
	json_t *j = NULL;
	assert_int_equal(mafsbx_container_inspect(e, "x", &j, &err), -ENOTCONN);
	mafsbx_engine_close(e);

	assert_int_equal(mafsbx_endpoint_parse_url("tcp://127.0.0.1:1", &ep, &err), 0);
	e = mafsbx_engine_open(&ep, NULL, &err);
	assert_non_null(e);
	assert_int_equal(mafsbx_engine_ping(e, &err), -ENOTCONN);
	mafsbx_engine_close(e);

	/* Something listens and never answers: the total timeout. */
	char path[108];
	snprintf(path, sizeof(path), "/tmp/mafsbxtest-engine-%d.sock", (int)getpid());
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	char url[200];
	snprintf(url, sizeof(url), "unix://%s", path);
	assert_int_equal(mafsbx_endpoint_parse_url(url, &ep, &err), 0);
	struct mafsbx_engine_timeouts to = { .connect_ms = 500, .request_ms = 400 };
	e = mafsbx_engine_open(&ep, &to, &err);
	assert_non_null(e);
	assert_int_equal(mafsbx_engine_ping(e, &err), -ETIMEDOUT);
	assert_int_equal(err.kind, MAFSBX_EK_TIMEOUT);
	const char *argv[] = { "/bin/true", NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 400 };
	struct mafsbx_exec_result res;
	assert_int_equal(mafsbx_exec_run(e, "x", &rq, &res, &err), -ETIMEDOUT);
	mafsbx_exec_result_free(&res);
	mafsbx_engine_close(e);
	close(fd);
	unlink(path);
}

int main(void)
{
	harness_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_paused_archive),
		cmocka_unit_test(test_put_ownership),
		cmocka_unit_test(test_exec),
		cmocka_unit_test(test_big_get_bounded),
		cmocka_unit_test(test_stall_cutoff),
		cmocka_unit_test(test_delete_paused),
		cmocka_unit_test(test_error_kinds_live),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_networks),
		cmocka_unit_test(test_images),
		cmocka_unit_test(test_transport_failures),
	};
	if (getenv("MAFSBX_TEST_FILTER"))
		cmocka_set_test_filter(getenv("MAFSBX_TEST_FILTER"));
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	harness_cleanup();
	return r;
}
