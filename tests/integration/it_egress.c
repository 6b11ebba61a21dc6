/*
 * it_egress.c: allowlist egress against the real dockerd (mafsbxfs(1) EGRESS,
 * doc/upstream.md §7, §9.7). The only hosts are this machine's own containers: a
 * test outbound network (user-defined, so container names resolve) with a
 * busybox httpd on port 443; the proxy image is built by `mafsbx mkimage
 * --egress-proxy` under a unique tag (argv[1] the CLI, argv[2] the proxy's
 * test build, mafsbx-egress-proxy-test).
 *
 *  - topology: upstream names and labels on workload, proxy and network (the
 *    reap inventory, which follows upstream's validation, sees all three);
 *    the host bridge carries no address (read here with getifaddrs); IPv6 is
 *    off in the guest; a warm acquire reuses and re-proves;
 *  - EGRESS probes through the proxy: the allowed host answers (bytes both
 *    ways), a denied host and a non-443 port get 403, a GET gets 405, a
 *    private peer is DENY-NONGLOBAL without the test switch
 *    (sbx_test_egress_allow_nonglobal, which the proxy's test build obeys);
 *    NAME's decision log shows each;
 *  - no direct reach from the guest: the gateway address and the bridge's
 *    link-local address on a port this test opens on the host, the outbound
 *    host by IP, and DNS for the outside (a control container on the outbound
 *    network reaches the same host, so each failure means something);
 *  - the proof refuses a network with an address (created without
 *    inhibit_ipv4 on purpose) and removes workload, proxy and network;
 *  - a bridge this host "cannot see" (a test switch, as with a remote
 *    engine) is proven from inside the network and refused when its gateway
 *    address answers there;
 *  - a reuse is proven again: an address added to the bridge by hand makes
 *    the next acquire rebuild; a second network on the workload makes it
 *    refuse and remove everything;
 *  - dispose and reap remove workload, proxy and network; a crash between
 *    the proxy and the workload leaves what the next acquire or a reap
 *    cleans.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "egress.h"
#include "reap.h"
#include "sbx_internal.h"
#include "sbx_testlib.h"

static const char *cli, *proxy_prog;
static char proxy_image[HARNESS_NAME_MAX + 8];
static char outnet[HARNESS_NAME_MAX], responder[HARNESS_NAME_MAX], responder_ip[64];
static struct mafsbx_backend *eb;

static struct mafsbx_backend *backend(void)
{
	struct mafsbx_sandbox_config cfg;
	mafsbx_sandbox_config_defaults(&cfg);
	cfg.default_image = harness_image();
	cfg.egress_proxy_image = proxy_image;
	cfg.egress_outbound_network = outnet;
	return sbxt_backend_with(&cfg);
}

/* Every test but a part of test_egress_probes runs with the test switch on: the responder is private.
 * The reap clock is the real one unless a test sets it (and a failed one may have left it set). */
static int switch_on(void **state)
{
	(void)state;
	sbx_test_egress_allow_nonglobal = true;
	sbx_test_reap_now = NULL;
	return 0;
}

static void build_proxy_image(void)
{
	char tag[HARNESS_NAME_MAX];
	harness_unique_name("egproxy", tag);
	snprintf(proxy_image, sizeof(proxy_image), "%s:latest", tag);
	harness_register_image(proxy_image);
	pid_t p = fork();
	if (p == 0) {
		int dn = open("/dev/null", O_WRONLY);
		dup2(dn, 1);
		execl(cli, cli, "mkimage", "--egress-proxy", "--proxy-program", proxy_prog, "--tag", proxy_image,
		      (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(p, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("mafsbx mkimage --egress-proxy failed (status %d)", st);
}

static int setup(void **state)
{
	(void)state;
	build_proxy_image();
	struct mafsbx_error e;
	char id[65];
	harness_unique_name("egout", outnet);
	json_t *ncfg = json_pack("{s:s, s:s, s:{s:s}}", "Name", outnet, "Driver", "bridge", "Labels", "mafsbxtest", "1");
	harness_check(mafsbx_network_create(harness_engine(), ncfg, id, &e), &e, "create the outbound test network");
	json_decref(ncfg);
	harness_register_network(outnet);
	/* the responder: busybox httpd on 443 serving /www/hello.txt */
	json_t *rcfg = json_pack("{s:[s,s,s], s:{s:s}}", "Cmd", "sh", "-c",
				 "mkdir -p /www && echo egress-hello-body > /www/hello.txt && exec httpd -f -p 443 -h /www",
				 "HostConfig", "NetworkMode", outnet);
	harness_container_cfg("egresp", rcfg, true, responder);
	json_decref(rcfg);
	json_t *ri = sbxt_inspect(responder);
	const char *ip = json_string_value(json_object_get(
		json_object_get(json_object_get(json_object_get(ri, "NetworkSettings"), "Networks"), outnet), "IPAddress"));
	assert_non_null(ip);
	snprintf(responder_ip, sizeof(responder_ip), "%s", ip);
	json_decref(ri);
	eb = backend();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mafsbx_backend_free(eb);
	return 0;
}

static struct mafsbx_acquire_spec *allow_spec(const char *scope, const char *agent, const char *hosts)
{
	return sbxt_spec("{\"scope\":\"%s\",\"thread\":\"t\",\"agent\":\"%s\",\"kind\":\"k\",\"egress\":\"allowlist\","
			 "\"egress_allow\":[%s]}",
			 scope, agent, hosts);
}

/* Acquire an allowlist sandbox; registers workload, proxy and network for cleanup. */
static int acquire(struct mafsbx_backend *b, const char *scope, const char *agent, const char *hosts,
		   struct mafsbx_acquire_result *r, struct mafsbx_error *e)
{
	struct mafsbx_acquire_spec *s = allow_spec(scope, agent, hosts);
	char *eid = mafsbx_egress_id((const char *const *)s->egress_allow, s->n_egress_allow);
	char name[MAFSBX_NAME_LEN + 1], buf[MAFSBX_NAME_LEN + 8];
	mafsbx_container_name(&s->key, s->kind, eid, name);
	free(eid);
	harness_register_container(name);
	snprintf(buf, sizeof(buf), "%s-proxy", name);
	harness_register_container(buf);
	snprintf(buf, sizeof(buf), "%s-net", name);
	harness_register_network(buf);
	mafsbx_error_clear(e);
	int rc = mafsbx_sandbox_acquire(b, s, r, e);
	mafsbx_acquire_spec_free(s);
	return rc;
}

static void acquire_ok(struct mafsbx_backend *b, const char *scope, const char *agent, const char *hosts,
		       struct mafsbx_acquire_result *r)
{
	struct mafsbx_error e;
	if (acquire(b, scope, agent, hosts, r, &e) < 0)
		fail_msg("allowlist acquire: %s", e.message);
}

static bool network_exists(const char *net)
{
	json_t *n = NULL;
	struct mafsbx_error e;
	int r = mafsbx_network_inspect(harness_engine(), net, &n, &e);
	json_decref(n);
	return r == 0;
}

static void assert_all_gone(const char *name)
{
	char buf[MAFSBX_NAME_LEN + 8];
	assert_false(sbxt_exists(name));
	snprintf(buf, sizeof(buf), "%s-proxy", name);
	assert_false(sbxt_exists(buf));
	snprintf(buf, sizeof(buf), "%s-net", name);
	assert_false(network_exists(buf));
}

static const char *label(json_t *labels, const char *k)
{
	return json_string_value(json_object_get(labels, k));
}

/* Addresses the host has on the network's bridge (IPv4 and IPv6 counted). */
static unsigned bridge_addresses(const char *net, char ifname[IF_NAMESIZE])
{
	json_t *n = NULL;
	struct mafsbx_error e;
	harness_check(mafsbx_network_inspect(harness_engine(), net, &n, &e), &e, "inspect network");
	snprintf(ifname, IF_NAMESIZE, "br-%.12s", json_string_value(json_object_get(n, "Id")));
	json_decref(n);
	assert_true(if_nametoindex(ifname) > 0);
	struct ifaddrs *ifa;
	assert_int_equal(getifaddrs(&ifa), 0);
	unsigned count = 0;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && !strcmp(i->ifa_name, ifname) &&
		    (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
			count++;
	freeifaddrs(ifa);
	return count;
}

static void test_topology_names_labels(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r, w;
	char hosts[2 * HARNESS_NAME_MAX];
	snprintf(hosts, sizeof(hosts), "\"zz.example\",\"%s\"", responder);
	acquire_ok(eb, scope, "agent one", hosts, &r);
	assert_int_equal(r.state, MAFSBX_ACQ_CREATED);
	/* upstream's name: the egress id is "allow:" + the sorted list */
	struct mafsbx_key k = { scope, "t", "agent one", "" };
	char eid[512], want[MAFSBX_NAME_LEN + 1];
	snprintf(eid, sizeof(eid), "allow:%s,zz.example", responder);
	mafsbx_container_name(&k, "k", eid, want);
	assert_string_equal(r.name, want);

	char net[MAFSBX_NAME_LEN + 8], proxy[MAFSBX_NAME_LEN + 8];
	snprintf(net, sizeof(net), "%s-net", r.name);
	snprintf(proxy, sizeof(proxy), "%s-proxy", r.name);
	char lv[MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value("agent one", lv);

	/* workload: on NAME-net only, proxy variables, IPv6 off, no role */
	json_t *wi = sbxt_inspect(r.id);
	json_t *hc = json_object_get(wi, "HostConfig");
	assert_string_equal(json_string_value(json_object_get(hc, "NetworkMode")), net);
	assert_string_equal(json_string_value(json_object_get(json_object_get(hc, "Sysctls"), "net.ipv6.conf.all.disable_ipv6")),
			    "1");
	/* the embedded resolver's upstream is unroutable from the guest, never loopback (CVE-2024-29018) */
	assert_string_equal(json_string_value(json_array_get(json_object_get(hc, "Dns"), 0)), MAFSBX_EGRESS_DNS_SINK);
	json_t *nets = json_object_get(json_object_get(wi, "NetworkSettings"), "Networks");
	assert_int_equal(json_object_size(nets), 1);
	char var[128];
	snprintf(var, sizeof(var), "http://%s:3128", proxy);
	json_t *env = json_object_get(json_object_get(wi, "Config"), "Env");
	static const char *const vars[] = { "HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy" };
	for (size_t v = 0; v < 4; v++) {
		bool found = false;
		size_t i;
		json_t *x;
		json_array_foreach(env, i, x) {
			const char *s = json_string_value(x);
			size_t n = strlen(vars[v]);
			if (!strncmp(s, vars[v], n) && s[n] == '=' && !strcmp(s + n + 1, var))
				found = true;
		}
		if (!found)
			fail_msg("%s=%s missing from the workload's env", vars[v], var);
	}
	json_t *wl = json_object_get(json_object_get(wi, "Config"), "Labels");
	assert_null(label(wl, MAFSBX_LABEL_ROLE));
	assert_string_equal(label(wl, MAFSBX_LABEL_AGENT), lv);
	json_decref(wi);

	/* proxy: identity labels, role=proxy, key.v1 (upstream's attribution), on both networks */
	json_t *pi = sbxt_inspect(proxy);
	json_t *pl = json_object_get(json_object_get(pi, "Config"), "Labels");
	assert_string_equal(label(pl, MAFSBX_LABEL_ROLE), "proxy");
	assert_string_equal(label(pl, MAFSBX_LABEL_SCOPE), scope);
	assert_string_equal(label(pl, MAFSBX_LABEL_THREAD), "t");
	assert_string_equal(label(pl, MAFSBX_LABEL_AGENT), lv);
	assert_string_equal(label(pl, MAFSBX_LABEL_KIND), "k");
	char *attr = mafsbx_key_attribution(&k);
	assert_string_equal(label(pl, MAFSBX_LABEL_KEY_V1), attr);
	free(attr);
	json_t *pn = json_object_get(json_object_get(pi, "NetworkSettings"), "Networks");
	assert_non_null(json_object_get(pn, net));
	assert_non_null(json_object_get(pn, outnet));
	json_decref(pi);

	/* network: identity labels only, internal, inhibit_ipv4 */
	json_t *ni = NULL;
	struct mafsbx_error e;
	harness_check(mafsbx_network_inspect(harness_engine(), net, &ni, &e), &e, "inspect network");
	json_t *nl = json_object_get(ni, "Labels");
	assert_string_equal(label(nl, MAFSBX_LABEL_SCOPE), scope);
	assert_string_equal(label(nl, MAFSBX_LABEL_KIND), "k");
	assert_null(label(nl, MAFSBX_LABEL_ROLE));
	assert_null(label(nl, MAFSBX_LABEL_WORK_DIR_V1));
	assert_true(json_is_true(json_object_get(ni, "Internal")));
	assert_string_equal(label(json_object_get(ni, "Options"), "com.docker.network.bridge.inhibit_ipv4"), "true");
	json_decref(ni);

	/* the host side, read here independently: no address at all on the bridge */
	char ifname[IF_NAMESIZE];
	assert_int_equal(bridge_addresses(net, ifname), 0);
	/* IPv6 off in the guest */
	char *o = sbxt_sh_out(r.name, "cat /proc/sys/net/ipv6/conf/all/disable_ipv6; ip -6 addr | grep -c inet6 || true");
	assert_string_equal(o, "1\n0");
	free(o);

	/* interop: upstream's reap inventory (its name/label/role validation) sees all three as ours */
	struct mafsbx_reap_options ro = { .older_than_s = 3600, .scope = scope, .dry_run = true };
	struct mafsbx_time later = { time(NULL) + 86400, 0 };
	sbx_test_reap_now = &later;
	struct mafsbx_reap_result rr;
	harness_check(mafsbx_reap(harness_engine(), &ro, &rr, &e), &e, "reap dry run");
	sbx_test_reap_now = NULL;
	assert_int_equal(rr.disposed, 1);
	assert_int_equal(rr.proxies_removed, 1);
	assert_int_equal(rr.networks_removed, 1);
	mafsbx_reap_result_free(&rr);

	/* warm: reused, re-proven, same proxy */
	acquire_ok(eb, scope, "agent one", hosts, &w);
	assert_int_equal(w.state, MAFSBX_ACQ_REUSED);
	assert_string_equal(w.id, r.id);

	/* .ctl/declarations lists allowlist with a proxy image */
	json_t *d = mafsbx_sandbox_declarations(eb, &e);
	assert_int_equal(json_array_size(json_object_get(d, "egress_modes")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(d, "egress_modes"), 1)), "allowlist");
	json_decref(d);

	assert_int_equal(sbxt_dispose_scope(scope), 1);
	assert_all_gone(r.name);
}

/* One CONNECT (plus `then`) sent through the sandbox's proxy from inside; the answer. */
static char *through_proxy(const char *name, const char *request)
{
	char script[1024];
	snprintf(script, sizeof(script),
		 "p=${HTTPS_PROXY#http://}; h=${p%%:*}; printf '%s' | timeout 15 nc -w 5 \"$h\" 3128; true", request);
	return sbxt_sh_out(name, script);
}

static void test_egress_probes(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r;
	char hosts[HARNESS_NAME_MAX + 4], req[512];
	snprintf(hosts, sizeof(hosts), "\"%s\"", responder);
	acquire_ok(eb, scope, "a", hosts, &r);

	/* an allowed host is reachable: bytes both ways through the tunnel */
	snprintf(req, sizeof(req), "CONNECT %s:443 HTTP/1.1\\r\\n\\r\\nGET /hello.txt HTTP/1.0\\r\\n\\r\\n", responder);
	char *o = through_proxy(r.name, req);
	if (!strstr(o, "HTTP/1.1 200 Connection Established") || !strstr(o, "egress-hello-body"))
		fail_msg("allowed host: %s", o);
	free(o);
	/* a denied host: 403, no 2xx */
	o = through_proxy(r.name, "CONNECT denied.example:443 HTTP/1.1\\r\\n\\r\\n");
	assert_non_null(strstr(o, "HTTP/1.1 403 Forbidden"));
	assert_null(strstr(o, " 200 "));
	free(o);
	/* the allowed host on another port */
	snprintf(req, sizeof(req), "CONNECT %s:80 HTTP/1.1\\r\\n\\r\\n", responder);
	o = through_proxy(r.name, req);
	assert_non_null(strstr(o, "HTTP/1.1 403 Forbidden"));
	free(o);
	/* not CONNECT */
	snprintf(req, sizeof(req), "GET http://%s:443/hello.txt HTTP/1.1\\r\\n\\r\\n", responder);
	o = through_proxy(r.name, req);
	assert_non_null(strstr(o, "HTTP/1.1 405 Method Not Allowed"));
	assert_null(strstr(o, "egress-hello-body"));
	free(o);

	/* the decision log (NAME/egress) */
	struct mafsbx_egress_log lg;
	struct mafsbx_error e;
	harness_check(mafsbx_sandbox_egress_log(eb, r.name, &lg, &e), &e, "egress log");
	char want[1024];
	snprintf(want, sizeof(want), "ALLOW %s:443\nDENY denied.example:443\nDENY %s:80\n", responder, responder);
	assert_string_equal(lg.text, want);
	assert_true(lg.proxy_present);
	assert_false(lg.truncated);
	mafsbx_egress_log_free(&lg);

	/* the same sandbox acquired with the test switch off, as in use: its proxy is not kept */
	char proxy[MAFSBX_NAME_LEN + 8];
	snprintf(proxy, sizeof(proxy), "%s-proxy", r.name);
	json_t *pi = sbxt_inspect(proxy);
	char pid1[65];
	snprintf(pid1, sizeof(pid1), "%s", json_string_value(json_object_get(pi, "Id")));
	json_decref(pi);
	struct mafsbx_acquire_result r2;
	sbx_test_egress_allow_nonglobal = false;
	acquire_ok(eb, scope, "a", hosts, &r2);
	assert_int_equal(r2.state, MAFSBX_ACQ_REUSED);
	pi = sbxt_inspect(proxy);
	assert_string_not_equal(json_string_value(json_object_get(pi, "Id")), pid1);
	json_decref(pi);
	snprintf(req, sizeof(req), "CONNECT %s:443 HTTP/1.1\\r\\n\\r\\n", responder);
	o = through_proxy(r.name, req);
	assert_non_null(strstr(o, "HTTP/1.1 403 Forbidden"));
	free(o);

	/* without the test switch the responder's private address is refused */
	struct mafsbx_acquire_result s;
	acquire_ok(eb, scope, "b", hosts, &s);
	snprintf(req, sizeof(req), "CONNECT %s:443 HTTP/1.1\\r\\n\\r\\nGET /hello.txt HTTP/1.0\\r\\n\\r\\n", responder);
	o = through_proxy(s.name, req);
	assert_non_null(strstr(o, "HTTP/1.1 403 Forbidden"));
	assert_null(strstr(o, "egress-hello-body"));
	free(o);
	harness_check(mafsbx_sandbox_egress_log(eb, s.name, &lg, &e), &e, "egress log");
	sbx_test_egress_allow_nonglobal = true;
	snprintf(want, sizeof(want), "DENY-NONGLOBAL %s:443\n", responder);
	assert_string_equal(lg.text, want);
	mafsbx_egress_log_free(&lg);
	assert_int_equal(sbxt_dispose_scope(scope), 2);
	assert_all_gone(r.name);
	assert_all_gone(s.name);
}

/*
 * A listener on the host's wildcard addresses (IPv4 and IPv6): what a direct
 * path would reach. A thread answers every connection with a banner and
 * counts them, so a client that got through says so and exits.
 */
#define BANNER "host-listener-reached"
static int listener_fd;
static volatile int listener_hits;

static void *listener_thread(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(listener_fd, NULL, NULL);
		if (c < 0)
			return NULL;
		listener_hits++;
		ssize_t w = write(c, BANNER "\n", sizeof(BANNER));
		(void)w;
		close(c);
	}
}

static pthread_t host_listener(unsigned short *port)
{
	int s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int zero = 0;
	setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s, 16), 0);
	socklen_t l = sizeof(sa);
	getsockname(s, (struct sockaddr *)&sa, &l);
	*port = ntohs(sa.sin6_port);
	listener_fd = s;
	listener_hits = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, listener_thread, NULL), 0);
	return t;
}

/* The EUI-64 link-local address a bridge with this MAC would have. */
static void link_local_of(const char *ifname, char out[INET6_ADDRSTRLEN])
{
	char path[96], mac[32] = "";
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", ifname);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(mac, sizeof(mac), f));
	fclose(f);
	unsigned m[6];
	assert_int_equal(sscanf(mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]), 6);
	snprintf(out, INET6_ADDRSTRLEN, "fe80::%x:%xff:fe%x:%x", ((m[0] ^ 2) << 8) | m[1], m[2], m[3],
		 (m[4] << 8) | m[5]);
}

static void test_no_direct_reach(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r;
	char hosts[HARNESS_NAME_MAX + 4];
	snprintf(hosts, sizeof(hosts), "\"%s\"", responder);
	acquire_ok(eb, scope, "a", hosts, &r);
	char net[MAFSBX_NAME_LEN + 8], ifname[IF_NAMESIZE], ll[INET6_ADDRSTRLEN];
	snprintf(net, sizeof(net), "%s-net", r.name);
	assert_int_equal(bridge_addresses(net, ifname), 0);
	link_local_of(ifname, ll);
	json_t *ni = NULL;
	struct mafsbx_error e;
	harness_check(mafsbx_network_inspect(harness_engine(), net, &ni, &e), &e, "inspect network");
	/* the engine still reports a gateway: the proof must not believe it, and the guest must not reach it */
	const char *gw = json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(ni, "IPAM"),
										     "Config"), 0), "Gateway"));
	char gateway[64];
	snprintf(gateway, sizeof(gateway), "%s", gw ? gw : "");
	json_decref(ni);
	unsigned short port;
	pthread_t lt = host_listener(&port);

	/* control: the same targets are reachable from a container on the outbound network */
	json_t *ccfg = json_pack("{s:{s:s}}", "HostConfig", "NetworkMode", outnet);
	char control[HARNESS_NAME_MAX];
	harness_container_cfg("egctl", ccfg, true, control);
	json_decref(ccfg);
	char script[512];
	snprintf(script, sizeof(script), "printf 'GET /hello.txt HTTP/1.0\\r\\n\\r\\n' | timeout 10 nc -w 3 %s 443",
		 responder_ip);
	char *o = sbxt_sh_out(control, script);
	assert_non_null(strstr(o, "egress-hello-body"));
	free(o);
	/* ...and the host listener from an addressed bridge (its gateway) */
	json_t *ci = sbxt_inspect(control);
	const char *cgw = json_string_value(json_object_get(
		json_object_get(json_object_get(json_object_get(ci, "NetworkSettings"), "Networks"), outnet), "Gateway"));
	snprintf(script, sizeof(script), "timeout 8 nc -w 3 %s %u </dev/null", cgw ? cgw : "none", port);
	json_decref(ci);
	o = sbxt_sh_out(control, script);
	assert_string_equal(o, BANNER);
	free(o);
	assert_int_equal(listener_hits, 1);
	listener_hits = 0;

	/* from the guest: each attempt must fail (exit code kept, output shown on surprise) */
	struct {
		const char *what;
		char cmd[300];
	} tries[5];
	snprintf(tries[0].cmd, sizeof(tries[0].cmd), "timeout 8 nc -w 3 %s %u </dev/null | grep -q " BANNER, gateway,
		 port);
	tries[0].what = "the gateway address on a host port";
	snprintf(tries[1].cmd, sizeof(tries[1].cmd), "timeout 8 nc -w 3 %s%%eth0 %u </dev/null | grep -q " BANNER, ll,
		 port);
	tries[1].what = "the bridge's link-local address on a host port";
	snprintf(tries[2].cmd, sizeof(tries[2].cmd),
		 "printf 'GET /hello.txt HTTP/1.0\\r\\n\\r\\n' | timeout 8 nc -w 3 %s 443 | grep -q egress-hello-body",
		 responder_ip);
	tries[2].what = "the outbound test host by IP";
	snprintf(tries[3].cmd, sizeof(tries[3].cmd), "timeout 8 nslookup %s", responder);
	tries[3].what = "DNS for the outbound host's name";
	snprintf(tries[4].cmd, sizeof(tries[4].cmd), "timeout 8 nslookup example.com");
	tries[4].what = "DNS for an outside name";
	for (size_t i = 0; i < 5; i++) {
		int code = -1;
		assert_int_equal(harness_sh(r.name, tries[i].cmd, &code), 0);
		if (code == 0)
			fail_msg("the guest reached %s: `%s` succeeded", tries[i].what, tries[i].cmd);
	}
	/* the resolver itself works (the proxy's name resolves), so the DNS failures above are real refusals */
	char *pr = sbxt_sh_out(r.name, "p=${HTTPS_PROXY#http://}; nslookup ${p%%:*} >/dev/null && echo resolved");
	assert_string_equal(pr, "resolved");
	free(pr);
	/* nothing arrived at the host listener */
	assert_int_equal(listener_hits, 0);
	shutdown(listener_fd, SHUT_RDWR);
	pthread_join(lt, NULL);
	close(listener_fd);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
	assert_all_gone(r.name);
}

static void no_inhibit(json_t *cfg)
{
	json_object_del(json_object_get(cfg, "Options"), "com.docker.network.bridge.inhibit_ipv4");
}

static void test_proof_refuses_addressed_bridge(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r;
	struct mafsbx_error e;
	sbx_test_egress_network = no_inhibit;
	int rc = acquire(eb, scope, "a", "\"x.example\"", &r, &e);
	sbx_test_egress_network = NULL;
	assert_int_equal(rc, -EOPNOTSUPP);
	assert_string_equal(e.type, "SandboxEgressNotEnforced");
	if (!strstr(e.message, "has the IPv4 address") || !strstr(e.message, "were removed"))
		fail_msg("unexpected refusal: %s", e.message);
	struct mafsbx_acquire_spec *s = allow_spec(scope, "a", "\"x.example\"");
	char name[MAFSBX_NAME_LEN + 1];
	mafsbx_container_name(&s->key, "k", "allow:x.example", name);
	mafsbx_acquire_spec_free(s);
	assert_all_gone(name);
	/* and the next acquire, with the option, builds a proven one */
	acquire_ok(eb, scope, "a", "\"x.example\"", &r);
	assert_string_equal(r.name, name);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
	assert_all_gone(name);
}

/* A bridge this host cannot see (as with a remote engine) is proven from inside, and refused when it answers. */
static void test_proof_from_inside(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r;
	struct mafsbx_error e;
	sbx_test_egress_hide_bridge = true;
	int rc = acquire(eb, scope, "a", "\"x.example\"", &r, &e);
	if (rc < 0) {
		sbx_test_egress_hide_bridge = false;
		fail_msg("an isolated network proven from inside was refused: %s", e.message);
	}
	assert_int_equal(r.state, MAFSBX_ACQ_CREATED);
	/* the warm path proves it from inside again */
	assert_int_equal(acquire(eb, scope, "a", "\"x.example\"", &r, &e), 0);
	assert_int_equal(r.state, MAFSBX_ACQ_REUSED);
	/* an addressed bridge answers from inside: refused, everything removed */
	sbx_test_egress_network = no_inhibit;
	rc = acquire(eb, scope, "b", "\"x.example\"", &r, &e);
	sbx_test_egress_network = NULL;
	sbx_test_egress_hide_bridge = false;
	assert_int_equal(rc, -EOPNOTSUPP);
	if (!strstr(e.message, "answers for the gateway address") || !strstr(e.message, "were removed"))
		fail_msg("unexpected refusal: %s", e.message);
	struct mafsbx_acquire_spec *s = allow_spec(scope, "b", "\"x.example\"");
	char name[MAFSBX_NAME_LEN + 1];
	mafsbx_container_name(&s->key, "k", "allow:x.example", name);
	mafsbx_acquire_spec_free(s);
	assert_all_gone(name);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
}

/* Every reuse is proven again: an address put on the bridge by hand, or a second network on the workload. */
static void test_reuse_is_proven_again(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r, w;
	struct mafsbx_error e;
	acquire_ok(eb, scope, "a", "\"x.example\"", &r);
	char net[MAFSBX_NAME_LEN + 8], ifname[IF_NAMESIZE], cmd[160];
	snprintf(net, sizeof(net), "%s-net", r.name);
	assert_int_equal(bridge_addresses(net, ifname), 0);
	/* the host's bridge gains an address: the warm acquire discards the sandbox and rebuilds a clean one */
	snprintf(cmd, sizeof(cmd), "ip addr add 192.0.2.77/32 dev %s", ifname);
	assert_int_equal(system(cmd), 0);
	acquire_ok(eb, scope, "a", "\"x.example\"", &w);
	assert_int_equal(w.state, MAFSBX_ACQ_CREATED);
	assert_string_not_equal(w.id, r.id);
	assert_false(sbxt_exists(r.id));
	char ifname2[IF_NAMESIZE];
	assert_int_equal(bridge_addresses(net, ifname2), 0);
	assert_string_not_equal(ifname2, ifname);   /* a new network, so a new bridge */

	/* the workload is put on a second network by hand: the reuse is refused and everything removed */
	harness_check(mafsbx_network_connect(harness_engine(), outnet, w.id, &e), &e, "connect by hand");
	assert_int_equal(acquire(eb, scope, "a", "\"x.example\"", &r, &e), -EOPNOTSUPP);
	if (!strstr(e.message, "is not on") || !strstr(e.message, "were removed"))
		fail_msg("unexpected refusal: %s", e.message);
	assert_all_gone(w.name);
	assert_int_equal(sbxt_dispose_scope(scope), 0);
}

static void test_dispose_reap_and_crash(void **state)
{
	(void)state;
	char scope[HARNESS_NAME_MAX];
	sbxt_scope(scope);
	struct mafsbx_acquire_result r;
	struct mafsbx_error e;
	/* dispose by name */
	acquire_ok(eb, scope, "a", "\"x.example\"", &r);
	struct mafsbx_dispose_result dr;
	harness_check(mafsbx_sandbox_dispose_name(eb, r.name, &dr, &e), &e, "dispose");
	assert_int_equal(dr.disposed, 1);
	mafsbx_dispose_result_free(&dr);
	assert_all_gone(r.name);

	/* a crash between the proxy and the workload: proxy and network exist, no workload */
	struct mafsbx_acquire_spec *s = allow_spec(scope, "c", "\"x.example\"");
	char name[MAFSBX_NAME_LEN + 1], buf[MAFSBX_NAME_LEN + 8];
	mafsbx_container_name(&s->key, "k", "allow:x.example", name);
	harness_register_container(name);
	snprintf(buf, sizeof(buf), "%s-proxy", name);
	harness_register_container(buf);
	assert_true(true);
	harness_check(mafsbx_sbx_egress_ensure(eb, s, name, true, &e), &e, "build the topology only");
	assert_false(sbxt_exists(name));
	assert_true(sbxt_exists(buf));
	/* ...the next acquire completes it */
	acquire_ok(eb, scope, "c", "\"x.example\"", &r);
	assert_string_equal(r.name, name);
	assert_int_equal(r.state, MAFSBX_ACQ_CREATED);
	assert_int_equal(sbxt_dispose_scope(scope), 1);
	assert_all_gone(name);

	/* ...or a reap removes the orphans on their own age */
	harness_check(mafsbx_sbx_egress_ensure(eb, s, name, true, &e), &e, "build the topology only");
	struct mafsbx_reap_options ro = { .older_than_s = 3600, .scope = scope };
	struct mafsbx_time later = { time(NULL) + 86400, 0 };
	sbx_test_reap_now = &later;
	struct mafsbx_reap_result rr;
	harness_check(mafsbx_reap(harness_engine(), &ro, &rr, &e), &e, "reap");
	assert_int_equal(rr.disposed, 0);
	assert_int_equal(rr.proxies_removed, 1);
	assert_int_equal(rr.networks_removed, 1);
	mafsbx_reap_result_free(&rr);
	assert_all_gone(name);

	/* a whole sandbox reaped: workload, proxy and network */
	acquire_ok(eb, scope, "d", "\"x.example\"", &r);
	harness_check(mafsbx_reap(harness_engine(), &ro, &rr, &e), &e, "reap");
	assert_int_equal(rr.disposed, 1);
	assert_int_equal(rr.proxies_removed, 1);
	assert_int_equal(rr.networks_removed, 1);
	mafsbx_reap_result_free(&rr);
	assert_all_gone(r.name);
	sbx_test_reap_now = NULL;
	mafsbx_acquire_spec_free(s);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s MAFSBX-CLI PROXY-PROGRAM\n", argv[0]);
		return 2;
	}
	cli = argv[1];
	proxy_prog = argv[2];
	sbxt_open();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_topology_names_labels, switch_on),
		cmocka_unit_test_setup(test_egress_probes, switch_on),
		cmocka_unit_test_setup(test_no_direct_reach, switch_on),
		cmocka_unit_test_setup(test_proof_refuses_addressed_bridge, switch_on),
		cmocka_unit_test_setup(test_reuse_is_proven_again, switch_on),
		cmocka_unit_test_setup(test_proof_from_inside, switch_on),
		cmocka_unit_test_setup(test_dispose_reap_and_crash, switch_on),
	};
	int r = cmocka_run_group_tests(tests, setup, teardown);
	sbxt_close();
	return r;
}
