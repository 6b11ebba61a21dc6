/*
 * test_archive_head.c: a HEAD of the archive API (src/engine/engine_archive.c)
 * against a scripted fake engine on a private unix socket, for the race two
 * acquires of one sandbox run into: the HEAD of a path answers 404, another
 * process makes the path, and the GET that asks for the 404's reason
 * succeeds. The HEAD's answer is then stale: the stat is asked again and
 * answers what is there. A path that keeps changing under it is asked again
 * once only, and the first answer stands.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base64.h"
#include "engine.h"

#define MAX_ANSWERS 8

static char sock_path[108];
static int listen_fd = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *answers[MAX_ANSWERS];
static char methods[MAX_ANSWERS][8];
static size_t n_answers, next_answer;

/* Read one request's head (these requests have no body); its method into `method`. */
static void read_request(int fd, char method[8])
{
	char buf[8192];
	size_t have = 0;
	method[0] = '\0';
	while (have < sizeof(buf) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[have] = '\0';
	size_t m = strcspn(buf, " ");
	if (m < 8) {
		memcpy(method, buf, m);
		method[m] = '\0';
	}
}

/* One connection per request: each answer closes its connection. */
static void *server(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(listen_fd, NULL, NULL);
		if (fd < 0)
			return NULL;
		char method[8];
		read_request(fd, method);
		pthread_mutex_lock(&mu);
		const char *a = NULL;
		if (next_answer < n_answers) {
			snprintf(methods[next_answer], sizeof(methods[0]), "%s", method);
			a = answers[next_answer++];
		}
		pthread_mutex_unlock(&mu);
		if (a)
			(void)!send(fd, a, strlen(a), MSG_NOSIGNAL);
		close(fd);
	}
}

/* The engine is asked its API version first (mafsbx_engine_ping). */
static const char ping_ok[] = "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK";
static const char not_found[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
static const char get_ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-tar\r\nContent-Length: 1024\r\n"
			     "Connection: close\r\n\r\n"
			     "maf-sandbox/";
static char head_ok[1024];

static int setup(void **state)
{
	(void)state;
	snprintf(sock_path, sizeof(sock_path), "/tmp/mafsbx-test-archive-head-%d.sock", (int)getpid());
	unlink(sock_path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(listen_fd, 16) < 0)
		return -1;
	pthread_t t;
	if (pthread_create(&t, NULL, server, NULL) != 0)
		return -1;
	pthread_detach(t);
	/* a directory, as dockerd 20.10 states one: Go's ModeDir | 0755 */
	const char *stat_json = "{\"name\":\"maf-sandbox\",\"size\":4096,\"mode\":2147484141,"
				"\"mtime\":\"2026-12-06T00:00:00Z\",\"linkTarget\":\"\"}";
	char *b64 = mafsbx_base64_encode(stat_json, strlen(stat_json), 0);
	if (!b64)
		return -1;
	snprintf(head_ok, sizeof(head_ok),
		 "HTTP/1.1 200 OK\r\nX-Docker-Container-Path-Stat: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
		 b64);
	free(b64);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(sock_path);
	return 0;
}

static struct mafsbx_engine *open_fake(void)
{
	struct mafsbx_endpoint ep;
	struct mafsbx_error err;
	char url[160];
	snprintf(url, sizeof(url), "unix://%s", sock_path);
	assert_int_equal(mafsbx_endpoint_parse_url(url, &ep, &err), 0);
	struct mafsbx_engine *e = mafsbx_engine_open(&ep, NULL, &err);
	assert_non_null(e);
	return e;
}

static void script(const char *const *a, size_t n)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n; i++)
		answers[i] = a[i];
	n_answers = n;
	next_answer = 0;
	pthread_mutex_unlock(&mu);
}

static size_t answered(void)
{
	pthread_mutex_lock(&mu);
	size_t n = next_answer;
	pthread_mutex_unlock(&mu);
	return n;
}

static void test_path_appears_after_the_head(void **state)
{
	(void)state;
	const char *const a[] = { ping_ok, not_found, get_ok, head_ok };
	script(a, 4);
	struct mafsbx_engine *e = open_fake();
	struct mafsbx_path_stat st;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_archive_head(e, "0123456789ab", "/maf-sandbox", &st, &err);
	if (r != 0)
		fail_msg("stat of a path that appeared: %d (%s)", r, err.message);
	assert_true(S_ISDIR(st.mode));
	assert_int_equal(answered(), 4);
	assert_string_equal(methods[1], "HEAD");
	assert_string_equal(methods[2], "GET");
	assert_string_equal(methods[3], "HEAD");
	mafsbx_engine_close(e);
}

static void test_path_that_keeps_changing_is_asked_once_more(void **state)
{
	(void)state;
	const char *const a[] = { ping_ok, not_found, get_ok, not_found, get_ok, head_ok };
	script(a, 6);
	struct mafsbx_engine *e = open_fake();
	struct mafsbx_path_stat st;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_archive_head(e, "0123456789ab", "/maf-sandbox", &st, &err);
	assert_true(r < 0);
	assert_int_equal(answered(), 5);
	mafsbx_engine_close(e);
}

static void test_missing_path_stays_missing(void **state)
{
	(void)state;
	static const char gone[] = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n"
				   "Content-Length: 76\r\n\r\n"
				   "{\"message\":\"Could not find the file /maf-sandbox in container 0123456789ab\"}";
	const char *const a[] = { ping_ok, not_found, gone };
	script(a, 3);
	struct mafsbx_engine *e = open_fake();
	struct mafsbx_path_stat st;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_archive_head(e, "0123456789ab", "/maf-sandbox", &st, &err);
	assert_int_equal(r, -ENOENT);
	assert_int_equal(err.kind, MAFSBX_EK_NO_PATH);
	assert_int_equal(answered(), 3);
	mafsbx_engine_close(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_appears_after_the_head),
		cmocka_unit_test(test_path_that_keeps_changing_is_asked_once_more),
		cmocka_unit_test(test_missing_path_stays_missing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
