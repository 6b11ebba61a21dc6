/*
 * egress.c: allowlist egress (see egress.h): building the network and the
 * proxy of an allowlist sandbox, proving on this host that the network is
 * isolated, tearing it all down in upstream's order when it is not, and
 * reading the proxy's decision log. The engine is driven only through
 * engine.h; the host is read through getifaddrs(3), /proc/sys and setns(2).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cgroup.h"
#include "egress.h"
#include "log.h"
#include "sbx_internal.h"
#include "names.h"

#ifdef MAFSBX_TEST_KNOBS
void (*sbx_test_egress_network)(json_t *config);
bool sbx_test_egress_hide_bridge;
bool sbx_test_egress_allow_nonglobal;
/* What the test build of the proxy (mafsbx-egress-proxy-test) reads; the installed proxy reads nothing of it. */
#define PROXY_NONGLOBAL_ENV "MAFSBX_TEST_PROXY_ALLOW_NONGLOBAL"
#endif

#define OPT_INHIBIT_IPV4 "com.docker.network.bridge.inhibit_ipv4"
#define OPT_GW_MODE_V4 "com.docker.network.bridge.gateway_mode_ipv4"
#define OPT_GW_MODE_V6 "com.docker.network.bridge.gateway_mode_ipv6"
#define OPT_BRIDGE_NAME "com.docker.network.bridge.name"
#define READY_TRIES 20
#define READY_SLEEP_US 250000
#define PROXY_PIDS_LIMIT 512

const char *mafsbx_egress_proxy_image(const struct mafsbx_backend *b)
{
	return b && b->cfg.egress_proxy_image && *b->cfg.egress_proxy_image ? b->cfg.egress_proxy_image : NULL;
}

static const char *outbound(const struct mafsbx_backend *b)
{
	return b->cfg.egress_outbound_network && *b->cfg.egress_outbound_network ? b->cfg.egress_outbound_network
										    : MAFSBX_DEFAULT_OUTBOUND_NETWORK;
}

/* ---- the decision log --------------------------------------------------- */

void mafsbx_egress_log_free(struct mafsbx_egress_log *l)
{
	if (!l)
		return;
	free(l->text);
	memset(l, 0, sizeof(*l));
}

/* ^(ALLOW|DENY-NONGLOBAL|DENY|UNREACHABLE) (.+):(\d+)$ on a stripped line */
static bool decision_line(const char *s, size_t n)
{
	static const char *const words[] = { "ALLOW ", "DENY-NONGLOBAL ", "DENY ", "UNREACHABLE " };
	size_t w = 0;
	for (size_t i = 0; i < 4 && !w; i++)
		if (n > strlen(words[i]) && memcmp(s, words[i], strlen(words[i])) == 0)
			w = strlen(words[i]);
	if (!w)
		return false;
	size_t d = n;
	while (d > w && s[d - 1] >= '0' && s[d - 1] <= '9')
		d--;
	/* at least one digit, then ':', then a non-empty host (the greedy .+ keeps IPv6 colons) */
	return d < n && d > w + 1 && s[d - 1] == ':';
}

/*
 * Copy one decision line, every control byte (C0, DEL) as \xHH: the host in
 * it is the guest's text (its CONNECT), and NAME/egress is read on a
 * terminal, where ESC or BEL would be obeyed. Returns the bytes written
 * (at most 4 per byte in).
 */
static size_t copy_escaped(char *out, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		} else {
			out[o++] = (char)c;
		}
	}
	return o;
}

int mafsbx_egress_decisions(const char *raw, size_t len, bool capped, struct mafsbx_egress_log *out,
			    struct mafsbx_error *err)
{
	memset(out, 0, sizeof(out[0]));
	if (capped) {
		/* cut after the last newline: a line cut by the cap is not a decision */
		while (len && raw[len - 1] != '\n')
			len--;
		out->truncated = true;
	}
	/* two passes: count, then copy the last MAFSBX_EGRESS_LOG_LINES */
	size_t total = 0;
	for (int pass = 0; pass < 2; pass++) {
		size_t seen = 0, o = 0;
		const char *p = raw, *end = raw + len;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *e = nl ? nl : end;
			const char *a = p, *z = e;
			while (a < z && (*a == ' ' || *a == '\t' || *a == '\r'))
				a++;
			while (z > a && (z[-1] == ' ' || z[-1] == '\t' || z[-1] == '\r'))
				z--;
			if (decision_line(a, (size_t)(z - a))) {
				if (pass == 1 && seen >= total - out->decisions) {
					o += copy_escaped(out->text + o, a, (size_t)(z - a));
					out->text[o++] = '\n';
				}
				seen++;
			}
			p = nl ? nl + 1 : end;
		}
		if (pass == 0) {
			total = seen;
			out->decisions = total > MAFSBX_EGRESS_LOG_LINES ? MAFSBX_EGRESS_LOG_LINES : total;
			if (total > MAFSBX_EGRESS_LOG_LINES)
				out->truncated = true;
			if (len > (SIZE_MAX - 1) / 4 || !(out->text = malloc(4 * len + 1)))
				return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		} else {
			out->text[o] = '\0';
			out->len = o;
		}
	}
	return 0;
}

int mafsbx_sandbox_egress_log(struct mafsbx_backend *b, const char *name, struct mafsbx_egress_log *out,
			      struct mafsbx_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!b || !mafsbx_is_workload_name(name))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "egress log: not a sandbox name");
	char proxy[MAFSBX_NAME_LEN + 8];
	mafsbx_proxy_name(name, proxy);
	struct mafsbx_exec_result res;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_container_logs(b->engine, proxy, MAFSBX_EGRESS_LOG_LINES + 1, MAFSBX_EGRESS_LOG_BYTES, &res, &e);
	if (r < 0 && mafsbx_error_is_gone(&e, proxy)) {
		mafsbx_exec_result_free(&res);
		out->text = strdup("");
		return out->text ? 0 : mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
	if (r < 0) {
		mafsbx_exec_result_free(&res);
		if (err)
			*err = e;
		return r;
	}
	r = mafsbx_egress_decisions((const char *)res.out, res.out_len, res.truncated, out, err);
	out->proxy_present = true;
	mafsbx_exec_result_free(&res);
	return r;
}

/* ---- building ----------------------------------------------------------- */

static json_t *identity_labels(const struct mafsbx_acquire_spec *spec)
{
	json_t *l = mafsbx_workload_labels(&spec->key, spec->kind, spec->labels, NULL);
	if (l)
		json_object_del(l, MAFSBX_LABEL_WORK_DIR_V1);
	return l;
}

static void remove_container(struct mafsbx_backend *b, const char *ref)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	mafsbx_sbx_facts_drop(b, NULL, ref);
	if (mafsbx_container_delete(b->engine, ref, true, &e) < 0 && !mafsbx_error_is_gone(&e, ref))
		log_warn("could not remove container %s: %s", ref, e.message);
}

static void remove_network(struct mafsbx_backend *b, const char *net)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_network_delete(b->engine, net, &e) < 0 && !mafsbx_error_is_gone(&e, net))
		log_warn("could not remove network %s: %s", net, e.message);
}

void mafsbx_sbx_egress_drain(struct mafsbx_backend *b, const char *proxy)
{
	char name[MAFSBX_NAME_LEN + 1];
	if (mafsbx_name_parse(proxy, name) != MAFSBX_NAME_PROXY)
		return;
	struct mafsbx_egress_log lg;
	struct mafsbx_error e;
	if (mafsbx_sandbox_egress_log(b, name, &lg, &e) < 0) {
		log_warn("egress proxy %s: its decisions could not be read before removal: %s", proxy, e.message);
		return;
	}
	const char *txt = lg.text ? lg.text : "";
	if (lg.proxy_present) {
		unsigned allowed = 0;
		for (const char *p = txt; (p = strstr(p, "ALLOW ")); p++)
			if (p == txt || p[-1] == '\n')
				allowed++;
		log_info("egress of %s: %zu decisions (%u allowed)%s", name, lg.decisions, allowed,
			 lg.truncated ? ", only the last ones kept" : "");
		for (const char *p = txt; *p;) {
			size_t n = strcspn(p, "\n");
			log_debug("egress of %s: %.*s", name, (int)n, p);
			p += n + (p[n] == '\n');
		}
	}
	mafsbx_egress_log_free(&lg);
}

void mafsbx_sbx_egress_teardown(struct mafsbx_backend *b, const char *name, const char *workload)
{
	char buf[MAFSBX_NAME_LEN + 8];
	if (workload)
		remove_container(b, workload);
	/* proxy before network: a network with a live endpoint cannot go */
	mafsbx_proxy_name(name, buf);
	mafsbx_sbx_egress_drain(b, buf);
	remove_container(b, buf);
	mafsbx_network_name(name, buf);
	remove_network(b, buf);
}

/* The host-side interface of a bridge network: its bridge.name option, else br-<12 of the ID>. */
static void bridge_ifname(json_t *ninsp, char out[IF_NAMESIZE])
{
	const char *opt = json_string_value(json_object_get(json_object_get(ninsp, "Options"), OPT_BRIDGE_NAME));
	const char *id = json_string_value(json_object_get(ninsp, "Id"));
	if (opt && *opt && strlen(opt) < IF_NAMESIZE)
		snprintf(out, IF_NAMESIZE, "%s", opt);
	else
		snprintf(out, IF_NAMESIZE, "br-%.12s", id ? id : "");
}

/* Best effort, before anything joins: no IPv6 link-local address ever appears on the bridge. */
static void bridge_ipv6_off(const char *ifname)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1\n", 2) != 2)
		log_info("bridge %s: could not turn IPv6 off (%s); the proof then needs IPv6 off in the guest", ifname,
			 strerror(errno));
	if (fd >= 0)
		close(fd);
}

enum bridge_state { BR_CLEAN, BR_LINK_LOCAL_ONLY, BR_ADDRESSED, BR_UNSEEN };

/*
 * What the host has on the bridge interface: no address at all, only IPv6
 * link-local ones, or something routable. BR_UNSEEN when this host has no
 * such interface (a remote engine, or another network namespace).
 */
static enum bridge_state read_bridge(const char *ifname, char *why, size_t whysz)
{
	bool unseen = if_nametoindex(ifname) == 0;
#ifdef MAFSBX_TEST_KNOBS
	unseen = unseen || sbx_test_egress_hide_bridge;
#endif
	if (unseen) {
		snprintf(why, whysz, "its host-side bridge %s is not visible from this host (a remote engine?), so its "
			 "isolation cannot be proven", ifname);
		return BR_UNSEEN;
	}
	struct ifaddrs *ifa = NULL;
	if (getifaddrs(&ifa) < 0) {
		snprintf(why, whysz, "the host's addresses cannot be read: %s", strerror(errno));
		return BR_UNSEEN;
	}
	enum bridge_state st = BR_CLEAN;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ifname) != 0)
			continue;
		char a[INET6_ADDRSTRLEN] = "?";
		if (i->ifa_addr->sa_family == AF_INET) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, a, sizeof(a));
			snprintf(why, whysz, "its bridge %s has the IPv4 address %s", ifname, a);
			st = BR_ADDRESSED;
			break;
		}
		if (i->ifa_addr->sa_family == AF_INET6) {
			struct in6_addr *x = &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
			inet_ntop(AF_INET6, x, a, sizeof(a));
			if (!IN6_IS_ADDR_LINKLOCAL(x)) {
				snprintf(why, whysz, "its bridge %s has the IPv6 address %s", ifname, a);
				st = BR_ADDRESSED;
				break;
			}
			snprintf(why, whysz, "its bridge %s has the IPv6 link-local address %s", ifname, a);
			st = BR_LINK_LOCAL_ONLY;
		}
	}
	freeifaddrs(ifa);
	return st;
}

/* The engine's side of the network: a bridge, internal, IPv6 off. */
static bool network_shape(json_t *ninsp, char *why, size_t whysz)
{
	const char *drv = json_string_value(json_object_get(ninsp, "Driver"));
	if (!drv || strcmp(drv, "bridge") != 0) {
		snprintf(why, whysz, "its driver is %s, not bridge", drv ? drv : "unset");
		return false;
	}
	if (!json_is_true(json_object_get(ninsp, "Internal"))) {
		snprintf(why, whysz, "it is not internal");
		return false;
	}
	if (json_is_true(json_object_get(ninsp, "EnableIPv6"))) {
		snprintf(why, whysz, "it has IPv6 enabled");
		return false;
	}
	return true;
}

int mafsbx_sbx_egress_discard_unusable(struct mafsbx_backend *b, const char *name, bool *discarded,
				struct mafsbx_error *err)
{
	*discarded = false;
	char net[MAFSBX_NAME_LEN + 8], why[300] = "";
	mafsbx_network_name(name, net);
	json_t *n = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_network_inspect(b->engine, net, &n, &e) < 0) {
		if (!mafsbx_error_is_gone(&e, net)) {
			if (err)
				*err = e;
			mafsbx_error_prefix(err, "sandbox %s: its network could not be read", name);
			return -EIO;
		}
		snprintf(why, sizeof(why), "its network is gone");
	} else if (network_shape(n, why, sizeof(why))) {
		char ifname[IF_NAMESIZE];
		bridge_ifname(n, ifname);
		/* a link-local-only bridge is judged with the guest's IPv6, an unseen one from inside, in
		 * mafsbx_sbx_egress_prove */
		enum bridge_state st = read_bridge(ifname, why, sizeof(why));
		if (st != BR_ADDRESSED)
			why[0] = '\0';
	}
	json_decref(n);
	if (!why[0])
		return 0;
	log_warn("sandbox %s: %s: removing it with its proxy and network to rebuild them", name, why);
	mafsbx_sbx_egress_teardown(b, name, name);
	*discarded = true;
	return 0;
}

static int ensure_network(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *net,
			  struct mafsbx_error *err)
{
	json_t *labels = identity_labels(spec);
	json_t *cfg = labels ? json_pack("{s:s, s:s, s:b, s:b, s:b, s:b, s:{s:s, s:s, s:s}, s:O}", "Name", net, "Driver",
					 "bridge", "Internal", 1, "CheckDuplicate", 1, "EnableIPv6", 0, "Attachable", 0,
					 "Options", OPT_INHIBIT_IPV4, "true", OPT_GW_MODE_V4, "isolated", OPT_GW_MODE_V6,
					 "isolated", "Labels", labels)
			     : NULL;
	json_decref(labels);
	if (!cfg)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
#ifdef MAFSBX_TEST_KNOBS
	if (sbx_test_egress_network)
		sbx_test_egress_network(cfg);
#endif
	char id[65];
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_network_create(b->engine, cfg, id, &e);
	json_decref(cfg);
	if (r < 0 && e.kind != MAFSBX_EK_CONFLICT && !strstr(e.message, "already exists")) {
		if (err)
			*err = e;
		mafsbx_error_prefix(err, "docker could not create network %s", net);
		return r;
	}
	/* created, or there already (adopted: the proof judges it like a new one) */
	json_t *n = NULL;
	if ((r = mafsbx_network_inspect(b->engine, net, &n, err)) < 0) {
		mafsbx_error_prefix(err, "network %s could not be read back", net);
		return r;
	}
	char ifname[IF_NAMESIZE];
	bridge_ifname(n, ifname);
	json_decref(n);
	bridge_ipv6_off(ifname);
	return 0;
}

#ifdef MAFSBX_TEST_KNOBS
/* The proxy container `p` (its inspect answer) was made with the tests' non-global switch. */
static bool proxy_env_nonglobal(const json_t *p)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(p, "Config"), "Env"), i, v) {
		const char *s = json_string_value(v);
		if (s && strcmp(s, PROXY_NONGLOBAL_ENV "=1") == 0)
			return true;
	}
	return false;
}
#endif

/* A running proxy of ours that said it listens; else why not (in why, when given). */
static bool proxy_ready(struct mafsbx_backend *b, const char *proxy, bool *running, char *why, size_t whysz)
{
	json_t *p = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	*running = false;
	char dummy[8];
	if (!why)
		why = dummy, whysz = sizeof(dummy);
	if (mafsbx_container_inspect(b->engine, proxy, &p, &e) < 0) {
		snprintf(why, whysz, "%s", e.message);
		return false;
	}
	json_t *labels = json_object_get(json_object_get(p, "Config"), "Labels");
	const char *role = json_string_value(json_object_get(labels, MAFSBX_LABEL_ROLE));
	bool is_proxy = role && strcmp(role, "proxy") == 0;
	*running = json_is_true(json_object_get(json_object_get(p, "State"), "Running"));
#ifdef MAFSBX_TEST_KNOBS
	bool nonglobal = proxy_env_nonglobal(p);
#endif
	json_decref(p);
	if (!is_proxy) {
		snprintf(why, whysz, "it has no %s=proxy label", MAFSBX_LABEL_ROLE);
		return false;
	}
#ifdef MAFSBX_TEST_KNOBS
	/* a proxy made with the non-global switch is kept only while the switch is on, and the other way round */
	if (nonglobal != sbx_test_egress_allow_nonglobal) {
		snprintf(why, whysz, "its non-global setting is not this backend's");
		return false;
	}
#endif
	if (!*running) {
		snprintf(why, whysz, "it is not running");
		return false;
	}
	struct mafsbx_exec_result res;
	int r = mafsbx_container_logs(b->engine, proxy, 0, 64 * 1024, &res, &e);
	bool ok = r == 0 && res.out && strstr((const char *)res.out, "listening");
	if (r < 0)
		snprintf(why, whysz, "%s", e.message);
	else if (!ok)
		snprintf(why, whysz, "its log has no 'listening' line");
	mafsbx_exec_result_free(&res);
	return ok;
}

static int create_proxy(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *proxy,
			const char *net, struct mafsbx_error *err)
{
	const char *image = mafsbx_egress_proxy_image(b);
	__do_free char *allow = NULL;
	size_t len = 0;
	for (size_t i = 0; i < spec->n_egress_allow; i++)
		len += strlen(spec->egress_allow[i]) + 1;
	__do_json json_t *labels = identity_labels(spec);
	__do_free char *attribution = mafsbx_key_attribution(&spec->key);
	__do_json json_t *env = json_array();
	int r;
	if (!labels || !attribution || !env || !(allow = malloc(len + sizeof("MAF_SANDBOX_ALLOW="))))
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	/* upstream: ",".join(egress_allow), in the request's order (the name sorts, the proxy does not) */
	char *p = allow + sprintf(allow, "MAF_SANDBOX_ALLOW=");
	for (size_t i = 0; i < spec->n_egress_allow; i++)
		p += sprintf(p, "%s%s", i ? "," : "", spec->egress_allow[i]);
	/* a proxy without its allowlist or its role label is never made: a setting lost is ENOMEM */
	if (json_array_append_new(env, json_string(allow)) < 0 ||
#ifdef MAFSBX_TEST_KNOBS
	    (sbx_test_egress_allow_nonglobal &&
	     json_array_append_new(env, json_string(PROXY_NONGLOBAL_ENV "=1")) < 0) ||
#endif
	    json_object_set_new(labels, MAFSBX_LABEL_KEY_V1, json_string(attribution)) < 0 ||
	    json_object_set_new(labels, MAFSBX_LABEL_ROLE, json_string("proxy")) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	/* Upstream gives the proxy no hardening; it needs no capability (port 3128) and no privilege. */
	json_t *hc = json_pack("{s:s, s:[s], s:[s], s:I}", "NetworkMode", net, "SecurityOpt", "no-new-privileges",
			       "CapDrop", "ALL", "PidsLimit", (json_int_t)(PROXY_PIDS_LIMIT));
	__do_json json_t *cfg = hc ? json_pack("{s:s, s:O, s:O, s:o}", "Image", image, "Env", env, "Labels", labels,
					       "HostConfig", hc)
				   : NULL;
	if (!cfg)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	char id[65];
	struct mafsbx_error ce;
	mafsbx_error_clear(&ce);
	bool running = false;
	char why[300] = "";
	if ((r = mafsbx_container_create(b->engine, proxy, cfg, id, &ce)) < 0 && ce.kind == MAFSBX_EK_CONFLICT) {
		/* another process (a second mount, the Python backend) is building the same proxy: use it when ready */
		for (int i = 0; i < READY_TRIES; i++) {
			if (proxy_ready(b, proxy, &running, why, sizeof(why)))
				return 0;
			usleep(READY_SLEEP_US);
		}
		return mafsbx_error_set(err, MAFSBX_EK_ENGINE, "egress proxy %s: made by another process, and not ready (%s)",
					proxy, why);
	}
	if (r < 0) {
		if (err)
			*err = ce;
		mafsbx_error_prefix(err, "egress proxy %s could not be created from %s", proxy, image);
		return r;
	}
	/* the outbound leg: without it the allowlist would silently act as closed */
	if ((r = mafsbx_network_connect(b->engine, outbound(b), id, err)) < 0) {
		mafsbx_error_prefix(err, "egress proxy %s: its outbound leg on network %s", proxy, outbound(b));
		return r;
	}
	if ((r = mafsbx_container_start(b->engine, id, err)) < 0) {
		mafsbx_error_prefix(err, "egress proxy %s did not start", proxy);
		return r;
	}
	for (int i = 0; i < READY_TRIES; i++) {
		if (proxy_ready(b, id, &running, why, sizeof(why)))
			return 0;
		usleep(READY_SLEEP_US);
	}
	return mafsbx_error_set(err, MAFSBX_EK_ENGINE, "egress proxy %s never reported listening (%s)", proxy, why);
}

int mafsbx_sbx_egress_ensure(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *name,
		      bool fresh, struct mafsbx_error *err)
{
	char net[MAFSBX_NAME_LEN + 8], proxy[MAFSBX_NAME_LEN + 8];
	mafsbx_network_name(name, net);
	mafsbx_proxy_name(name, proxy);
	const char *image = mafsbx_egress_proxy_image(b);
	if (!image)
		return mafsbx_error_set(err, MAFSBX_EK_UNSUPPORTED, "no egress proxy image");
	/* the image first: a missing one leaves nothing behind */
	json_t *img = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	if (mafsbx_image_inspect(b->engine, image, &img, &e) < 0)
		return mafsbx_error_set(err, e.kind, "egress proxy image %s: %s (build it with `mafsbx mkimage --egress-proxy`)",
					image, e.message);
	json_decref(img);
	int r = ensure_network(b, spec, net, err);
	if (r < 0)
		return r;
	bool running;
	if (proxy_ready(b, proxy, &running, NULL, 0))
		return 0;
	remove_container(b, proxy);
	if ((r = create_proxy(b, spec, proxy, net, err)) < 0 && fresh) {
		remove_container(b, proxy);
		remove_network(b, net);
		mafsbx_error_prefix(err, "sandbox %s (its proxy and network were removed)", name);
	}
	return r;
}

int mafsbx_sbx_egress_workload_config(const char *name, json_t *cfg)
{
	char url[MAFSBX_NAME_LEN + 64], net[MAFSBX_NAME_LEN + 8];
	mafsbx_network_name(name, net);
	json_t *hc = json_object_get(cfg, "HostConfig");
	json_t *env = json_object_get(cfg, "Env");
	if (!hc)
		return -EINVAL;
	if (!env) {
		env = json_array();
		if (!env || json_object_set_new(cfg, "Env", env) < 0)
			return -ENOMEM;
	}
	static const char *const vars[] = { "HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy" };
	int r = json_object_set_new(hc, "NetworkMode", json_string(net));
	for (size_t i = 0; i < 4; i++) {
		snprintf(url, sizeof(url), "%s=http://%s-proxy:%d", vars[i], name, MAFSBX_EGRESS_PROXY_PORT);
		r |= json_array_append_new(env, json_string(url));
	}
	r |= json_object_set_new(hc, "Sysctls", json_pack("{s:s}", "net.ipv6.conf.all.disable_ipv6", "1"));
	r |= json_object_set_new(hc, "Dns", json_pack("[s]", MAFSBX_EGRESS_DNS_SINK));
	return r ? -ENOMEM : 0;
}

/* ---- the guest's IPv6, read in its network namespace ---------------------- */

struct ns_probe {
	int nsfd;
	int err;
	int disable_ipv6;        /* -1 unknown */
	unsigned v6_addrs;
};

static void *ns_thread(void *arg)
{
	struct ns_probe *p = arg;
	if (setns(p->nsfd, CLONE_NEWNET) < 0) {
		p->err = errno;
		return NULL;
	}
	/* /proc/sys/net answers for the opener's namespace: this thread's, now */
	int fd = open("/proc/sys/net/ipv6/conf/all/disable_ipv6", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char c = 0;
		if (read(fd, &c, 1) == 1)
			p->disable_ipv6 = c == '1';
		close(fd);
	} else if (errno == ENOENT) {
		p->disable_ipv6 = 1;    /* no IPv6 in this kernel at all */
	}
	struct ifaddrs *ifa = NULL;
	if (getifaddrs(&ifa) == 0) {
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6)
				p->v6_addrs++;
		freeifaddrs(ifa);
	} else {
		p->err = errno;
	}
	return NULL;
}

/*
 * /proc/PID of the container's init, opened as a directory (so a reused PID
 * cannot swap the process under us: reads through the fd fail once it is
 * gone), and only when its cgroup names the container ID: the engine's PID
 * is meaningless in another PID namespace. -1 when it is not ours to read.
 */
static int pidfd_dir(long long pid, const char *id)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%lld", pid);
	int d = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return -1;
	char buf[4096];
	ssize_t n = -1;
	int c = openat(d, "cgroup", O_RDONLY | O_CLOEXEC);
	if (c >= 0) {
		n = read(c, buf, sizeof(buf) - 1);
		close(c);
	}
	if (n <= 0 || (buf[n] = '\0', !mafsbx_cgroup_names_container(buf, id))) {
		close(d);
		return -1;
	}
	return d;
}

/* 1 IPv6 provably off in the guest, 0 provably on, -1 unknown (why says so). */
static int guest_ipv6_off(struct mafsbx_backend *b, json_t *insp, char *why, size_t whysz)
{
	json_int_t pid = json_integer_value(json_object_get(json_object_get(insp, "State"), "Pid"));
	const char *id = json_string_value(json_object_get(insp, "Id"));
	int pfd = -1;
	if (pid > 0 && mafsbx_is_engine_id(id) && (pfd = pidfd_dir(pid, id)) >= 0) {
		struct ns_probe p = { .nsfd = openat(pfd, "ns/net", O_RDONLY | O_CLOEXEC), .disable_ipv6 = -1 };
		close(pfd);
		pthread_t t;
		if (p.nsfd >= 0 && pthread_create(&t, NULL, ns_thread, &p) == 0) {
			pthread_join(t, NULL);
			close(p.nsfd);
			if (!p.err && p.disable_ipv6 >= 0) {
				if (p.disable_ipv6 == 1 && p.v6_addrs == 0)
					return 1;
				snprintf(why, whysz, "the guest's namespace has IPv6 on (disable_ipv6=%d, %u addresses)",
					 p.disable_ipv6, p.v6_addrs);
				return 0;
			}
		} else if (p.nsfd >= 0) {
			close(p.nsfd);
		}
	}
	/* not on this host's PID namespace, or no privilege: ask the guest */
	static const char *const argv[] = { "cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6", NULL };
	struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = b->cfg.probe_timeout_ms, .max_output = 64 };
	struct mafsbx_exec_result res = { .exit_code = -1 };
	struct mafsbx_error e;
	int r = -1;
	if (id && mafsbx_sbx_exec(b, id, &rq, &res, &e) == 0 && res.exit_code == 0 && res.out)
		r = res.out[0] == '1' ? 1 : 0;
	mafsbx_exec_result_free(&res);
	if (r < 0)
		snprintf(why, whysz, "the guest's IPv6 state could not be read");
	else if (r == 0)
		snprintf(why, whysz, "the guest's namespace has IPv6 on");
	return r;
}

/* The first host address of an IPv4 subnet "a.b.c.d/n" (where an engine puts the gateway), into out. */
static bool first_host(const char *subnet, char out[INET_ADDRSTRLEN])
{
	char a[INET_ADDRSTRLEN];
	const char *slash = subnet ? strchr(subnet, '/') : NULL;
	if (!slash || (size_t)(slash - subnet) >= sizeof(a))
		return false;
	memcpy(a, subnet, (size_t)(slash - subnet));
	a[slash - subnet] = '\0';
	struct in_addr x;
	if (inet_pton(AF_INET, a, &x) != 1)
		return false;
	x.s_addr = htonl(ntohl(x.s_addr) + 1);
	return inet_ntop(AF_INET, &x, out, INET_ADDRSTRLEN) != NULL;
}

/*
 * The proof from inside, for a bridge this host cannot see (a remote
 * engine): from the proxy's leg on NAME-net, a TCP connect to each IPv4
 * gateway the engine reports (else the subnet's first address) must fail
 * with "No route to host": no ARP answer, so no host address on the bridge.
 * "Connection refused" or a connection means the host holds that address;
 * anything else (a timeout behind a firewall, an image without busybox nc)
 * proves nothing. IPv6 is judged in the guest (its namespace has it off).
 * 1 proven, 0 not (why says so).
 */
static int prove_from_inside(struct mafsbx_backend *b, const char *proxy, json_t *ninsp, char *why, size_t whysz)
{
	size_t i;
	json_t *c;
	unsigned probed = 0;
	json_array_foreach(json_object_get(json_object_get(ninsp, "IPAM"), "Config"), i, c) {
		const char *gw = json_string_value(json_object_get(c, "Gateway"));
		char addr[INET_ADDRSTRLEN];
		struct in_addr x;
		if (gw && *gw && inet_pton(AF_INET, gw, &x) == 1)
			snprintf(addr, sizeof(addr), "%s", gw);
		else if (!first_host(json_string_value(json_object_get(c, "Subnet")), addr))
			continue;
		const char *const argv[] = { "nc", "-w", "5", addr, "1", NULL };
		struct mafsbx_exec_request rq = { .argv = argv, .timeout_ms = 15000, .max_output = 4096 };
		struct mafsbx_exec_result res = { .exit_code = -1 };
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		int r = mafsbx_exec_run(b->engine, proxy, &rq, &res, &e);
		bool unreachable = r == 0 && res.exit_code != 0 && res.err && strstr((char *)res.err, "No route to host");
		bool answered = r == 0 && (res.exit_code == 0 || (res.err && strstr((char *)res.err, "refused")));
		mafsbx_exec_result_free(&res);
		if (answered) {
			snprintf(why, whysz, "its bridge answers for the gateway address %s from inside the network", addr);
			return 0;
		}
		if (!unreachable) {
			snprintf(why, whysz, "its bridge is not visible from this host and the probe from inside (nc to %s in "
				 "the proxy) was inconclusive%s%s", addr, r < 0 ? ": " : "", r < 0 ? e.message : "");
			return 0;
		}
		probed++;
	}
	if (!probed) {
		snprintf(why, whysz, "its bridge is not visible from this host and the network has no IPv4 subnet to probe");
		return 0;
	}
	return 1;
}

int mafsbx_sbx_egress_prove(struct mafsbx_backend *b, const char *name, json_t *insp, struct mafsbx_error *err)
{
	char net[MAFSBX_NAME_LEN + 8], proxy[MAFSBX_NAME_LEN + 8], why[300] = "";
	mafsbx_network_name(name, net);
	mafsbx_proxy_name(name, proxy);
	json_t *n = NULL;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	const char *mode = json_string_value(json_object_get(json_object_get(insp, "HostConfig"), "NetworkMode"));
	json_t *nets = json_object_get(json_object_get(insp, "NetworkSettings"), "Networks");
	bool running;
	if (!mode || strcmp(mode, net) != 0 || json_object_size(nets) != 1 || !json_object_get(nets, net)) {
		snprintf(why, sizeof(why), "the workload is not on %s alone", net);
	} else if (mafsbx_network_inspect(b->engine, net, &n, &e) < 0) {
		snprintf(why, sizeof(why), "its network could not be read: %s", e.message);
	} else if (network_shape(n, why, sizeof(why))) {
		char ifname[IF_NAMESIZE];
		bridge_ifname(n, ifname);
		char bwhy[150] = "", gwhy[150] = "";
		enum bridge_state st = read_bridge(ifname, bwhy, sizeof(bwhy));
		if (st == BR_ADDRESSED)
			snprintf(why, sizeof(why), "%s", bwhy);
		else if (st == BR_UNSEEN && prove_from_inside(b, proxy, n, why, sizeof(why)) != 1) {
			/* why says what the probe found */
		}
		else if (guest_ipv6_off(b, insp, gwhy, sizeof(gwhy)) != 1)
			snprintf(why, sizeof(why), "%s%s%s", gwhy, st == BR_LINK_LOCAL_ONLY ? " and " : "",
				 st == BR_LINK_LOCAL_ONLY ? bwhy : "");
		else
			why[0] = '\0';
		char pwhy[200] = "";
		if (!why[0] && !proxy_ready(b, proxy, &running, pwhy, sizeof(pwhy)))
			snprintf(why, sizeof(why), "its egress proxy %s does not answer: %s", proxy, pwhy);
	}
	json_decref(n);
	if (!why[0])
		return 0;
	mafsbx_sbx_egress_teardown(b, name, json_string_value(json_object_get(insp, "Id")));
	return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, 0, "SandboxEgressNotEnforced",
				     "sandbox %s: the isolation of network %s is not proven: %s; the workload, its proxy "
				     "and its network were removed",
				     name, net, why);
}
