/*
 * egress.h: allowlist egress (mafsbxfs(1) EGRESS, doc/upstream.md §7): the topology
 * of an allowlist sandbox, the proof that its network is isolated on THIS
 * host, and the proxy's decision log (NAME/egress).
 *
 * Topology per sandbox NAME, names and labels as upstream: the network
 * NAME-net (bridge, --internal, IPv6 off, com.docker.network.bridge.
 * inhibit_ipv4=true because Engine 20.10 ignores gateway_mode_ipv4=isolated,
 * which is set too for engines >= 28; identity labels), the proxy NAME-proxy
 * (identity labels + key.v1 + role=proxy; MAF_SANDBOX_ALLOW; on NAME-net with
 * a second leg on the outbound network), and the workload on NAME-net only,
 * with HTTPS_PROXY/HTTP_PROXY/https_proxy/http_proxy=http://NAME-proxy:3128
 * and net.ipv6.conf.all.disable_ipv6=1.
 *
 * The proof reads the host, not the engine (whose IPAM still reports a
 * gateway the bridge does not have): the host-side bridge interface must
 * carry no IPv4 address and no IPv6 address (the mount writes disable_ipv6=1
 * on it before anything joins, so not even a link-local one appears; a
 * link-local one is tolerated only when the workload's namespace provably
 * has IPv6 off); the workload's namespace must have IPv6 disabled (read in
 * that namespace through setns, else through an exec of cat); the proxy
 * must run and have said "listening". A bridge this host cannot see (a
 * remote engine) is proven from inside: from the proxy's leg on NAME-net a
 * TCP connect to the gateway address must fail with "No route to host" (no
 * ARP answer); a refused or accepted connection, or an inconclusive probe,
 * is a refusal.
 */
#ifndef MAFSBX_EGRESS_H
#define MAFSBX_EGRESS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "sandbox.h"

#define MAFSBX_DEFAULT_PROXY_IMAGE "mafsbx/egress-proxy:latest"
#define MAFSBX_DEFAULT_OUTBOUND_NETWORK "bridge"
#define MAFSBX_EGRESS_PROXY_PORT 3128
#define MAFSBX_EGRESS_LOG_LINES 2000          /* upstream's drain window */
#define MAFSBX_EGRESS_LOG_BYTES 1024000       /* 2000 x 512 */
/*
 * The workload's upstream DNS server, as the engine's embedded resolver
 * (127.0.0.11) sees it: an address the guest's namespace has no route to
 * (TEST-NET-1), never a loopback one. Engines before 23.0.11/25.0.4/26
 * forward an internal network's outside lookups, from the HOST's namespace
 * when the configured server is on loopback (CVE-2024-29018); with this
 * server the forward, if any, starts in the guest's namespace and goes
 * nowhere. Names of containers on the network (the proxy's) still resolve.
 */
#define MAFSBX_EGRESS_DNS_SINK "192.0.2.1"

/* The decisions of one proxy: text is "WORD host:port\n" lines, oldest first. */
struct mafsbx_egress_log {
	char *text;              /* malloc'd, NUL-terminated ("" when none) */
	size_t len;
	size_t decisions;
	bool truncated;          /* more than 2000 decisions, or the byte cap was hit */
	bool proxy_present;      /* false: no NAME-proxy (a closed sandbox, or disposed) */
};
void mafsbx_egress_log_free(struct mafsbx_egress_log *l);

/*
 * Keep the decision lines of a raw proxy log (doc/upstream.md §7.5: lines matching
 * ^(ALLOW|DENY-NONGLOBAL|DENY|UNREACHABLE) (.+):(\d+)$ after stripping; the
 * last 2000; `capped` means the read hit the byte cap, so the text is cut
 * after its last newline and marked truncated). Control bytes in a line
 * come out as \xHH (the host is the guest's text). Pure.
 */
int mafsbx_egress_decisions(const char *raw, size_t len, bool capped, struct mafsbx_egress_log *out,
			    struct mafsbx_error *err);

/* Read NAME-proxy's decisions (no proxy: empty, proxy_present false). */
int mafsbx_sandbox_egress_log(struct mafsbx_backend *b, const char *name, struct mafsbx_egress_log *out,
			      struct mafsbx_error *err);

/* The proxy image this backend uses, or NULL when allowlist cannot be served. */
const char *mafsbx_egress_proxy_image(const struct mafsbx_backend *b);

/* ---- private to the backend (acquire.c, dispose.c) ---------------------- */

#ifdef MAFSBX_TEST_KNOBS
/*
 * Test hooks.
 * Compiled only into the test libraries (MAFSBX_TEST_KNOBS, src/meson.build):
 * the shipped daemon and CLI have none.
 */
/* Called with the network create body before it is sent. */
extern void (*sbx_test_egress_network)(json_t *config);
/* Act as if the bridge were not visible from this host (a remote engine). */
extern bool sbx_test_egress_hide_bridge;
/*
 * Proxies made while this is set let private peers through (the test build
 * of the proxy reads MAFSBX_TEST_PROXY_ALLOW_NONGLOBAL=1, which they are
 * given); a proxy made with it is not kept while it is unset, nor one made
 * without it while it is set. For tests whose only hosts are this machine's
 * own containers.
 */
extern bool sbx_test_egress_allow_nonglobal;
#endif

/*
 * Before the reuse decision (doc/upstream.md §7.4): when the existing sandbox's
 * network is unusable (not proven isolated) or gone, remove the workload,
 * its proxy and network. *discarded tells whether it did.
 */
int mafsbx_sbx_egress_discard_unusable(struct mafsbx_backend *b, const char *name, bool *discarded,
				struct mafsbx_error *err);
/*
 * Build or adopt NAME-net and NAME-proxy (doc/upstream.md §7.2). A running proxy
 * with our labels that said "listening" is kept (its log is NAME/egress);
 * otherwise it is recreated. With `fresh` (no workload), a failure removes
 * the proxy then the network.
 */
int mafsbx_sbx_egress_ensure(struct mafsbx_backend *b, const struct mafsbx_acquire_spec *spec, const char *name,
		      bool fresh, struct mafsbx_error *err);
/* Put the workload on NAME-net with the proxy variables and IPv6 off (the create body). */
int mafsbx_sbx_egress_workload_config(const char *name, json_t *cfg);
/* The proof, after the workload is on the network (`insp` its inspect). Failure: everything torn down. */
int mafsbx_sbx_egress_prove(struct mafsbx_backend *b, const char *name, json_t *insp, struct mafsbx_error *err);
/*
 * Before a proxy is removed: read its decisions and log them (a summary at
 * info, each line at debug), since NAME/egress goes with the proxy.
 */
void mafsbx_sbx_egress_drain(struct mafsbx_backend *b, const char *proxy);
/* Remove workload (when given), proxy, then network; logs what it could not remove. */
void mafsbx_sbx_egress_teardown(struct mafsbx_backend *b, const char *name, const char *workload);

#endif
