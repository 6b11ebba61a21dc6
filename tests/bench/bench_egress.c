/*
 * bench_egress.c: what allowlist egress costs. Prints a markdown table of
 * medians (ms):
 *   - acquire cold (network + proxy + workload + proof) and warm (reuse +
 *     proof) of an allowlist sandbox, next to a closed one;
 *   - one request to a test host (busybox httpd on 443, on this program's
 *     own outbound network) through the proxy (CONNECT + GET) against the
 *     same request sent directly, both from this host: the difference is the
 *     proxy's added latency per connection.
 *
 *   bench_egress [RUNS] [PROXY-IMAGE]   (default 5 acquires, 50 requests;
 *                                        image mafsbx/egress-proxy-test:latest)
 *
 * The test host has a private address, which the installed proxy refuses:
 * the image holds the proxy's test build, whose switch this program turns
 * (sbx_test_egress_allow_nonglobal), made by
 *   mafsbx mkimage --egress-proxy --tag mafsbx/egress-proxy-test:latest \
 *       --proxy-program build/tools/egress-proxy/mafsbx-egress-proxy-test
 *
 * A program, not a test. Everything it makes carries a unique scope or name
 * and is removed at exit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "egress.h"
#include "endpoint.h"
#include "engine.h"
#include "freeze.h"
#include "sandbox.h"
#include "spec.h"

static struct mafsbx_engine *eng;
static struct mafsbx_freezer *fz;
static struct mafsbx_backend *be;
static char net[64], resp[64], scope[64], rundir[64];

static void cleanup(void)
{
	struct mafsbx_error e;
	struct mafsbx_dispose_result dr;
	if (be && scope[0]) {
		for (int t = 0; t < 64; t++) {
			char th[16];
			snprintf(th, sizeof(th), "t%d", t);
			if (mafsbx_sandbox_dispose_scope(be, scope, th, &dr, &e) == 0)
				mafsbx_dispose_result_free(&dr);
		}
	}
	if (eng && resp[0])
		mafsbx_container_delete(eng, resp, true, &e);
	if (eng && net[0])
		mafsbx_network_delete(eng, net, &e);
	if (rundir[0])
		rmdir(rundir);
}

static void die(const char *what, const struct mafsbx_error *err)
{
	fprintf(stderr, "bench_egress: %s: %s\n", what, err ? err->message : strerror(errno));
	exit(1);
}

static double acquire_ms(int thread, bool allowlist, struct mafsbx_acquire_result *r)
{
	char req[512];
	snprintf(req, sizeof(req),
		 "{\"scope\":\"%s\",\"thread\":\"t%d\",\"agent\":\"a\",\"kind\":\"k\",\"capabilities\":[]%s%s%s}", scope,
		 thread, allowlist ? ",\"egress\":\"allowlist\",\"egress_allow\":[\"" : "", allowlist ? resp : "",
		 allowlist ? "\"]" : "");
	json_error_t je;
	json_t *j = json_loads(req, 0, &je);
	struct mafsbx_spec_config sc;
	mafsbx_backend_spec_config(be, &sc);
	struct mafsbx_acquire_spec *s = NULL;
	struct mafsbx_error e;
	if (!j || mafsbx_acquire_spec_parse(j, &sc, &s, &e) < 0)
		die("spec", &e);
	json_decref(j);
	double t0 = bench_now_ms();
	if (mafsbx_sandbox_acquire(be, s, r, &e) < 0)
		die("acquire", &e);
	double dt = bench_now_ms() - t0;
	mafsbx_acquire_spec_free(s);
	return dt;
}

static const char *ip_on(const char *container, const char *network)
{
	static char ip[64];
	json_t *j = NULL;
	struct mafsbx_error e;
	if (mafsbx_container_inspect(eng, container, &j, &e) < 0)
		die("inspect", &e);
	const char *a = json_string_value(json_object_get(
		json_object_get(json_object_get(json_object_get(j, "NetworkSettings"), "Networks"), network), "IPAddress"));
	snprintf(ip, sizeof(ip), "%s", a ? a : "");
	json_decref(j);
	if (!ip[0])
		die("no address on the outbound network", NULL);
	return ip;
}

/* One request: connect, optionally CONNECT first, GET /i, read to EOF. Returns ms, or -1. */
static double request_ms(const char *ip, unsigned short port, bool via_proxy)
{
	double t0 = bench_now_ms();
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct timeval tv = { 5, 0 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	inet_pton(AF_INET, ip, &sa.sin_addr);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(s);
		return -1;
	}
	char buf[4096];
	if (via_proxy) {
		int n = snprintf(buf, sizeof(buf), "CONNECT %s:443 HTTP/1.1\r\n\r\n", resp);
		if (write(s, buf, (size_t)n) != n)
			goto fail;
		/* the 200 line and its blank line */
		size_t have = 0;
		while (have < 4 || memcmp(buf + have - 4, "\r\n\r\n", 4) != 0) {
			if (read(s, buf + have, 1) != 1 || ++have >= sizeof(buf))
				goto fail;
		}
		if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
			goto fail;
	}
	static const char get[] = "GET /i HTTP/1.0\r\n\r\n";
	if (write(s, get, sizeof(get) - 1) != (ssize_t)sizeof(get) - 1)
		goto fail;
	size_t total = 0;
	ssize_t n;
	while ((n = read(s, buf, sizeof(buf))) > 0)
		total += (size_t)n;
	close(s);
	return total ? bench_now_ms() - t0 : -1;
fail:
	close(s);
	return -1;
}

/* The outbound network and, on it, the test host: busybox httpd on 443. */
static void make_outbound(const char *image)
{
	struct mafsbx_error err;
	char id[65];
	json_t *ncfg = json_pack("{s:s, s:s, s:{s:s}}", "Name", net, "Driver", "bridge", "Labels", "mafsbxtest", "1");
	if (mafsbx_network_create(eng, ncfg, id, &err) < 0)
		die("outbound network", &err);
	json_decref(ncfg);
	json_t *rcfg = json_pack("{s:s, s:[s,s,s], s:{s:s}, s:{s:s}}", "Image", image, "Cmd", "sh", "-c",
				 "mkdir -p /www && echo hello > /www/i && exec httpd -f -p 443 -h /www", "Labels",
				 "mafsbxtest", "1", "HostConfig", "NetworkMode", net);
	if (mafsbx_container_create(eng, resp, rcfg, id, &err) < 0 || mafsbx_container_start(eng, id, &err) < 0)
		die("responder", &err);
	json_decref(rcfg);
}

struct requests {
	double via[50], direct[50];
	int nv, nd;
};

/* 50 requests from this host: to the proxy's outbound address, and directly. */
static void measure_requests(const char *proxy, struct requests *q)
{
	char pip[64], rip[64];
	snprintf(pip, sizeof(pip), "%s", ip_on(proxy, net));
	snprintf(rip, sizeof(rip), "%s", ip_on(resp, net));
	enum { REQS = 50 };
	q->nv = q->nd = 0;
	for (int i = 0; i < REQS; i++) {
		double a = request_ms(pip, MAFSBX_EGRESS_PROXY_PORT, true);
		double b = request_ms(rip, 443, false);
		if (a >= 0)
			q->via[q->nv++] = a;
		if (b >= 0)
			q->direct[q->nd++] = b;
	}
	if (!q->nv || !q->nd)
		die("no request through the proxy or directly succeeded", NULL);

}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	const char *pimg = argc > 2 ? argv[2] : "mafsbx/egress-proxy-test:latest";
	if (runs < 3)
		runs = 3;
	atexit(cleanup);
	struct mafsbx_error err;
	snprintf(rundir, sizeof(rundir), "/tmp/mafsbxbench-egress-XXXXXX");
	const char *step = bench_engine_setup(rundir, &eng, &fz, &err);
	if (step)
		die(step, &err);
	const char *image = getenv("MAFSBX_TEST_IMAGE") ? getenv("MAFSBX_TEST_IMAGE") : "mafsbx/busybox:latest";
	srand((unsigned)(time(NULL) ^ getpid()));
	unsigned tag = (unsigned)rand();
	snprintf(scope, sizeof(scope), "mafsbxbench-egress-%08x", tag);
	snprintf(net, sizeof(net), "mafsbxbench-egnet-%08x", tag);
	snprintf(resp, sizeof(resp), "mafsbxbench-egresp-%08x", tag);

	make_outbound(image);

	struct mafsbx_sandbox_config cfg;
	mafsbx_sandbox_config_defaults(&cfg);
	cfg.default_image = image;
	cfg.egress_proxy_image = pimg;
	cfg.egress_outbound_network = net;
	sbx_test_egress_allow_nonglobal = true;   /* the responder has a private address */
	if (!(be = mafsbx_backend_new(eng, fz, &cfg, &err)))
		die("backend", &err);

	double cold_a[32], warm_a[32], cold_c[32], warm_c[32];
	if (runs > 32)
		runs = 32;
	struct mafsbx_acquire_result r;
	char proxy[MAFSBX_NAME_LEN + 8] = "";
	for (int i = 0; i < runs; i++) {
		cold_a[i] = acquire_ms(2 * i, true, &r);
		warm_a[i] = acquire_ms(2 * i, true, &r);
		snprintf(proxy, sizeof(proxy), "%s-proxy", r.name);
		cold_c[i] = acquire_ms(2 * i + 1, false, &r);
		warm_c[i] = acquire_ms(2 * i + 1, false, &r);
	}

	struct requests q;
	measure_requests(proxy, &q);

	printf("| allowlist egress (medians, ms) | value |\n|---|---:|\n");
	printf("| acquire cold, allowlist (network + proxy + workload + proof) | %.0f |\n", bench_median(cold_a, runs));
	printf("| acquire warm, allowlist (reuse + proof) | %.1f |\n", bench_median(warm_a, runs));
	printf("| acquire cold, closed | %.0f |\n", bench_median(cold_c, runs));
	printf("| acquire warm, closed | %.1f |\n", bench_median(warm_c, runs));
	double mv = bench_median(q.via, q.nv), md = bench_median(q.direct, q.nd);
	printf("| one request via the proxy (CONNECT + GET) | %.2f |\n", mv);
	printf("| the same request, direct | %.2f |\n", md);
	printf("| added by the proxy per connection | %.2f |\n", mv - md);
	printf("\n(%d acquires each, %d/%d requests; %s)\n", runs, q.nv, q.nd, pimg);
	return 0;
}
