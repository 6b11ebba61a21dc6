/*
 * test_http_tls.c: the HTTP client against a TLS terminator that refuses
 * session resumption (doc/security.md "Findings fixed after review": a TLS server that refuses resumed sessions).
 *
 * socat 1.7 with verify=1 asks for a client certificate but sets no session
 * id context, so OpenSSL answers every resumed handshake with an "internal
 * error" alert ("session id context uninitialized"). libcurl resumes by
 * default, so every request after the first failed while the mount looked
 * healthy. The terminator here is the same mistake made on purpose: an
 * OpenSSL server in a thread, client certificates required, no session id
 * context, one request per connection (Connection: close), so each request
 * is a fresh handshake that offers the cached session.
 * Certificates are made with the openssl command; without it the test skips.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "endpoint.h"
#include "http.h"

static char dir[] = "/tmp/mafsbx-test-http-tls-XXXXXX";
static int lfd = -1;
static int port;
static SSL_CTX *sctx;
static pthread_t server;
static volatile int stop;

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Serve connections one at a time until `stop`: one request each, then close. */
static void *serve(void *arg)
{
	(void)arg;
	while (!stop) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		if (stop) {
			close(fd);
			break;
		}
		SSL *s = SSL_new(sctx);
		SSL_set_fd(s, fd);
		if (SSL_accept(s) == 1) {
			char req[4096];
			size_t got = 0;
			int n;
			while (got < sizeof(req) - 1 && (n = SSL_read(s, req + got, (int)(sizeof(req) - 1 - got))) > 0) {
				got += (size_t)n;
				req[got] = '\0';
				if (strstr(req, "\r\n\r\n"))
					break;
			}
			static const char ans[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
						  "Content-Length: 2\r\nConnection: close\r\n\r\nOK";
			SSL_write(s, ans, (int)sizeof(ans) - 1);
			SSL_shutdown(s);
		} else {
			/* the refused resumption ("session id context uninitialized") */
			ERR_clear_error();
		}
		SSL_free(s);
		close(fd);
	}
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	/* a CA, a server certificate for localhost, a client certificate */
	int r = sh("cd %s && exec >log 2>&1 && "
		   "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 2 -subj /CN=t-ca && "
		   "openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr -subj /CN=localhost && "
		   "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext && "
		   "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 "
		   "-extfile san.ext -out server.pem && "
		   "openssl req -newkey rsa:2048 -nodes -keyout key.pem -out client.csr -subj /CN=client && "
		   "printf 'extendedKeyUsage=clientAuth\\n' > client.ext && "
		   "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 "
		   "-extfile client.ext -out cert.pem", dir);
	if (r != 0) {
		sh("cat %s/log >&2", dir);
		fail_msg("cannot make the certificates");
	}
	char p[600];
	sctx = SSL_CTX_new(TLS_server_method());
	assert_non_null(sctx);
	snprintf(p, sizeof(p), "%s/server.pem", dir);
	assert_int_equal(SSL_CTX_use_certificate_file(sctx, p, SSL_FILETYPE_PEM), 1);
	snprintf(p, sizeof(p), "%s/server-key.pem", dir);
	assert_int_equal(SSL_CTX_use_PrivateKey_file(sctx, p, SSL_FILETYPE_PEM), 1);
	snprintf(p, sizeof(p), "%s/ca.pem", dir);
	assert_int_equal(SSL_CTX_load_verify_locations(sctx, p, NULL), 1);
	/* the terminator's mistake: client certificates required, no session id context */
	SSL_CTX_set_verify(sctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t al = sizeof(a);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
	port = ntohs(a.sin_port);
	assert_int_equal(listen(lfd, 16), 0);
	assert_int_equal(pthread_create(&server, NULL, serve, NULL), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (lfd >= 0) {
		stop = 1;
		/* wake the accept */
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			close(fd);
		pthread_join(server, NULL);
		close(lfd);
	}
	SSL_CTX_free(sctx);
	sh("rm -rf %s", dir);
	return 0;
}

static void test_resumption_refused(void **state)
{
	(void)state;
	char url[64];
	snprintf(url, sizeof(url), "tcp://localhost:%d", port);
	struct mafsbx_endpoint ep;
	struct mafsbx_error err;
	assert_int_equal(mafsbx_endpoint_parse_url(url, &ep, &err), 0);
	ep.tls = true;
	ep.tls_verify = true;
	snprintf(ep.ca, sizeof(ep.ca), "%s/ca.pem", dir);
	snprintf(ep.cert, sizeof(ep.cert), "%s/cert.pem", dir);
	snprintf(ep.key, sizeof(ep.key), "%s/key.pem", dir);
	struct mafsbx_http *h = mafsbx_http_open(&ep, 5000, 10000, &err);
	if (!h)
		fail_msg("open: %s", err.message);
	for (int i = 0; i < 4; i++) {
		struct mafsbx_http_req rq = { .method = "GET", .target = "/_ping" };
		struct mafsbx_http_resp resp = { 0 };
		mafsbx_error_clear(&err);
		int r = mafsbx_http_request(h, &rq, &resp, &err);
		if (r != 0)
			fail_msg("request %d failed: %s", i + 1, err.message);
		assert_int_equal(resp.status, 200);
		assert_int_equal(resp.body.len, 2);
		assert_memory_equal(resp.body.data, "OK", 2);
		mafsbx_http_resp_free(&resp);
	}
	mafsbx_http_close(h);
}

int main(void)
{
	if (system("command -v openssl >/dev/null 2>&1") != 0) {
		fprintf(stderr, "the openssl command is missing: skipped\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resumption_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
