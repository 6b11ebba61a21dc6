/*
 * proxy.h: the pure parts of mafsbx-egress-proxy, the allowlist egress proxy
 * (doc/upstream.md §7.6 semantics): request-head parsing, the
 * host glob table, the "not globally routable" address table and the
 * decision line. No I/O here, so each piece is unit-tested on its own
 * (tests/unit/test_egress_proxy.c); proxy.c is the server around them.
 * libc only: the program is linked statically into a busybox image.
 */
#ifndef MAFSBX_EGRESS_PROXY_H
#define MAFSBX_EGRESS_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define PROXY_DEFAULT_PORT 3128
#define PROXY_ALLOWED_PORT 443
#define PROXY_HEAD_MAX (64 * 1024)        /* asyncio's default stream line limit */
#define PROXY_HEAD_TIMEOUT_MS 10000
#define PROXY_DIAL_TIMEOUT_MS 20000
#define PROXY_PIPE_CHUNK (64 * 1024)
#define PROXY_MAX_CLIENTS 256             /* concurrent tunnels; more wait in the listen queue */

/* The patterns, lowercased, trimmed, empties dropped. */
struct proxy_allow {
	char **pat;
	size_t n;
};

/* Parse MAF_SANDBOX_ALLOW ("a, *.b.com,,c"). NULL text: nothing allowed. 0 or -ENOMEM. */
int proxy_allow_parse(const char *text, struct proxy_allow *out);
void proxy_allow_free(struct proxy_allow *a);
/* "listening on <port>; allowing: <p, p…>|nothing" into out (truncated to outsz). */
void proxy_startup_line(const struct proxy_allow *a, unsigned port, char *out, size_t outsz);

/* Python fnmatch on the lowercased host: '*' (dots too), '?', '[...]', '[!...]'. */
bool proxy_glob(const char *pattern, const char *host);
bool proxy_host_allowed(const struct proxy_allow *a, const char *host);

/*
 * The offset just past "\r\n\r\n" in buf[0..len), or 0 when not there yet.
 */
size_t proxy_head_end(const char *buf, size_t len);

enum proxy_verdict {
	PV_BAD_REQUEST = 400,
	PV_FORBIDDEN = 403,
	PV_METHOD = 405,
	PV_CONNECT = 200,        /* a CONNECT to host:port, to be judged */
};

struct proxy_request {
	char host[256 + 1];      /* as sent (not lowercased), NUL-terminated */
	char port[16];           /* the digits as sent */
	unsigned long port_num;  /* their value; ULONG_MAX when too long */
};

/*
 * Parse a complete head (through "\r\n\r\n"): the first line split on
 * whitespace must have exactly 3 parts, the third starting "HTTP/"; else
 * 400. A method other than CONNECT: 405. The target is split at its last
 * ':'; an empty host or a port that is not all ASCII digits: 400. A host
 * longer than 256 bytes (a DNS name is at most 253) is 400 too, and so is
 * one that is not proxy_host_valid.
 */
enum proxy_verdict proxy_parse_head(const char *head, size_t len, struct proxy_request *rq);

/*
 * A host name of RFC 1123 labels (letters, digits, inner hyphens; 1 to 63
 * bytes each, 253 in all, one root dot allowed; an IPv4 literal is one) or
 * a bracketed IPv6 literal. Anything else (control bytes, spaces, '_', '%')
 * is refused before it is matched, dialled or logged.
 */
bool proxy_host_valid(const char *host);

/* Python ipaddress' "not is_global" (plus multicast): private, loopback, link-local, reserved... */
bool proxy_addr_nonglobal(const struct sockaddr *sa);

enum proxy_decision { PD_ALLOW, PD_DENY, PD_DENY_NONGLOBAL, PD_UNREACHABLE };
/* "ALLOW host:port\n" etc. into out, bytes outside printable ASCII as \xHH;
 * returns the length (truncated lines still end in "\n"). */
size_t proxy_decision_line(enum proxy_decision d, const char *host, const char *port, char *out, size_t outsz);

/* "HTTP/1.1 <status> <reason>\r\ncontent-length: 0\r\n\r\n" */
const char *proxy_error_response(int status);

#endif
