/*
 * proxy_core.c: the pure parts of the egress proxy (see proxy.h): the allow
 * table and its glob, request-head parsing, the non-global address table
 * (Python ipaddress' is_global, which upstream's proxy.py uses, plus
 * multicast) and the decision line. No I/O, no allocation beyond the table.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

static char *lower_trimmed(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s))
		s++, n--;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	char *o = malloc(n + 1);
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++)
		o[i] = (char)tolower((unsigned char)s[i]);
	o[n] = '\0';
	return o;
}

int proxy_allow_parse(const char *text, struct proxy_allow *out)
{
	out->pat = NULL;
	out->n = 0;
	if (!text)
		return 0;
	const char *p = text;
	for (;;) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		char *t = lower_trimmed(p, n);
		if (!t)
			goto nomem;
		if (*t) {
			char **v = realloc(out->pat, (out->n + 1) * sizeof(*v));
			if (!v) {
				free(t);
				goto nomem;
			}
			out->pat = v;
			out->pat[out->n++] = t;
		} else {
			free(t);
		}
		if (!c)
			break;
		p = c + 1;
	}
	return 0;
nomem:
	proxy_allow_free(out);
	return -ENOMEM;
}

void proxy_allow_free(struct proxy_allow *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->pat[i]);
	free(a->pat);
	a->pat = NULL;
	a->n = 0;
}

void proxy_startup_line(const struct proxy_allow *a, unsigned port, char *out, size_t outsz)
{
	size_t o = (size_t)snprintf(out, outsz, "listening on %u; allowing: ", port);
	if (a->n == 0)
		snprintf(out + (o < outsz ? o : outsz - 1), o < outsz ? outsz - o : 1, "nothing");
	for (size_t i = 0; i < a->n && o < outsz; i++)
		o += (size_t)snprintf(out + o, outsz - o, "%s%s", i ? ", " : "", a->pat[i]);
}

/*
 * Python's fnmatch.translate: '*' any run (dots included), '?' one char,
 * '[...]' a set ('!' negates, ']' first is literal, ranges with '-'), a '['
 * with no closing ']' is a literal '['. No escapes. Iterative with one
 * backtrack point, so a hostile pattern cannot blow the stack or go
 * exponential.
 */
static int match_set(const char *p, char c, const char **end)
{
	const char *q = p + 1;
	bool neg = false;
	if (*q == '!') {
		neg = true;
		q++;
	}
	const char *first = q;
	bool hit = false;
	while (*q && (*q != ']' || q == first)) {
		if (q[1] == '-' && q[2] && q[2] != ']') {
			if ((unsigned char)q[0] <= (unsigned char)c && (unsigned char)c <= (unsigned char)q[2])
				hit = true;
			q += 3;
		} else {
			if (*q == c)
				hit = true;
			q++;
		}
	}
	if (*q != ']')
		return -1;       /* no closing bracket: '[' is literal */
	*end = q + 1;
	return hit != neg;
}

bool proxy_glob(const char *p, const char *s)
{
	const char *star_p = NULL, *star_s = NULL;
	while (*s) {
		if (*p == '*') {
			while (*p == '*')
				p++;
			star_p = p;
			star_s = s;
			continue;
		}
		if (*p == '?') {
			p++, s++;
			continue;
		}
		if (*p == '[') {
			const char *end;
			int m = match_set(p, *s, &end);
			if (m == 1) {
				p = end, s++;
				continue;
			}
			if (m < 0 && *s == '[') {
				p++, s++;
				continue;
			}
		} else if (*p && *p == *s) {
			p++, s++;
			continue;
		}
		if (!star_p)
			return false;
		p = star_p;
		s = ++star_s;
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

bool proxy_host_allowed(const struct proxy_allow *a, const char *host)
{
	char h[257];
	size_t n = strlen(host);
	if (n >= sizeof(h))
		return false;
	for (size_t i = 0; i <= n; i++)
		h[i] = (char)tolower((unsigned char)host[i]);
	for (size_t i = 0; i < a->n; i++)
		if (proxy_glob(a->pat[i], h))
			return true;
	return false;
}

size_t proxy_head_end(const char *buf, size_t len)
{
	for (size_t i = 3; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

/* Python's str.split(): runs of whitespace; here only within the first line. */
/* One RFC 1123 label: 1 to 63 letters, digits and hyphens, no hyphen at either end. */
static bool label_ok(const char *s, size_t n)
{
	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

bool proxy_host_valid(const char *host)
{
	size_t n = strlen(host);
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		/* an IPv6 literal: what inet_pton takes, nothing else */
		char in[INET6_ADDRSTRLEN];
		unsigned char a[16];
		if (n - 2 >= sizeof(in))
			return false;
		memcpy(in, host + 1, n - 2);
		in[n - 2] = '\0';
		return inet_pton(AF_INET6, in, a) == 1;
	}
	if (n && host[n - 1] == '.')
		n--;  /* one root dot: an absolute name */
	if (n == 0 || n > 253)
		return false;
	/* dot-separated labels (an IPv4 literal is such a name too) */
	for (size_t i = 0; i <= n;) {
		const char *dot = memchr(host + i, '.', n - i);
		size_t l = dot ? (size_t)(dot - (host + i)) : n - i;
		if (!label_ok(host + i, l))
			return false;
		i += l + 1;
		if (!dot)
			break;
	}
	return true;
}

enum proxy_verdict proxy_parse_head(const char *head, size_t len, struct proxy_request *rq)
{
	memset(rq, 0, sizeof(*rq));
	const char *eol = memchr(head, '\n', len);
	if (!eol)
		return PV_BAD_REQUEST;
	const char *part[4];
	size_t plen[4], n = 0;
	const char *p = head;
	while (p < eol) {
		while (p < eol && isspace((unsigned char)*p))
			p++;
		if (p >= eol)
			break;
		const char *s = p;
		while (p < eol && !isspace((unsigned char)*p))
			p++;
		if (n == 3)
			return PV_BAD_REQUEST;
		part[n] = s;
		plen[n++] = (size_t)(p - s);
	}
	if (n != 3 || plen[2] < 5 || memcmp(part[2], "HTTP/", 5) != 0)
		return PV_BAD_REQUEST;
	if (memchr(head, '\0', (size_t)(eol - head)))
		return PV_BAD_REQUEST;
	if (plen[0] != 7 || memcmp(part[0], "CONNECT", 7) != 0)
		return PV_METHOD;
	const char *t = part[1];
	size_t tl = plen[1];
	const char *colon = NULL;
	for (size_t i = tl; i > 0; i--)
		if (t[i - 1] == ':') {
			colon = t + i - 1;
			break;
		}
	if (!colon)
		return PV_BAD_REQUEST;
	size_t hl = (size_t)(colon - t), pl = tl - hl - 1;
	if (hl == 0 || hl >= sizeof(rq->host) || pl == 0)
		return PV_BAD_REQUEST;
	for (size_t i = 0; i < pl; i++)
		if (colon[1 + i] < '0' || colon[1 + i] > '9')
			return PV_BAD_REQUEST;
	memcpy(rq->host, t, hl);
	rq->host[hl] = '\0';
	/* The host is the guest's text, logged and matched: a name or an IP literal, nothing else. */
	if (!proxy_host_valid(rq->host))
		return PV_BAD_REQUEST;
	if (pl >= sizeof(rq->port)) {
		/* int("000…0443") is 443 in Python: a long run of zeros still names a port */
		size_t z = 0;
		while (z < pl && colon[1 + z] == '0')
			z++;
		if (pl - z >= sizeof(rq->port) - 1) {
			snprintf(rq->port, sizeof(rq->port), "%.*s", (int)sizeof(rq->port) - 1, colon + 1);
			rq->port_num = ULONG_MAX;
			return PV_CONNECT;
		}
	}
	snprintf(rq->port, sizeof(rq->port), "%.*s", (int)(pl < sizeof(rq->port) ? pl : sizeof(rq->port) - 1),
		 colon + 1);
	unsigned long v = 0;
	for (size_t i = 0; i < pl; i++) {
		v = v * 10 + (unsigned long)(colon[1 + i] - '0');
		if (v > 100000)
			v = 100000;
	}
	rq->port_num = v;
	return PV_CONNECT;
}

struct net4 {
	uint32_t addr;
	unsigned len;
};

static bool in4(uint32_t a, const struct net4 *n)
{
	uint32_t mask = n->len ? 0xffffffffu << (32 - n->len) : 0;
	return (a & mask) == (n->addr & mask);
}

#define IP4(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

/* Python 3.12 IPv4Address._private_networks, the shared space 100.64/10 (not is_global) and multicast. */
static bool nonglobal4(uint32_t a)
{
	static const struct net4 exceptions[] = { { IP4(192, 0, 0, 9), 32 }, { IP4(192, 0, 0, 10), 32 } };
	static const struct net4 table[] = {
		{ IP4(0, 0, 0, 0), 8 },       { IP4(10, 0, 0, 0), 8 },       { IP4(100, 64, 0, 0), 10 },
		{ IP4(127, 0, 0, 0), 8 },     { IP4(169, 254, 0, 0), 16 },   { IP4(172, 16, 0, 0), 12 },
		{ IP4(192, 0, 0, 0), 24 },    { IP4(192, 0, 2, 0), 24 },     { IP4(192, 168, 0, 0), 16 },
		{ IP4(198, 18, 0, 0), 15 },   { IP4(198, 51, 100, 0), 24 },  { IP4(203, 0, 113, 0), 24 },
		{ IP4(224, 0, 0, 0), 4 },     { IP4(240, 0, 0, 0), 4 },      { IP4(255, 255, 255, 255), 32 },
	};
	for (size_t i = 0; i < sizeof(exceptions) / sizeof(exceptions[0]); i++)
		if (in4(a, &exceptions[i]))
			return false;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (in4(a, &table[i]))
			return true;
	return false;
}

struct net6 {
	uint8_t addr[16];
	unsigned len;
};

static bool in6(const uint8_t *a, const struct net6 *n)
{
	unsigned full = n->len / 8, rest = n->len % 8;
	if (memcmp(a, n->addr, full) != 0)
		return false;
	if (!rest)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (n->addr[full] & mask);
}

/* Python 3.12 IPv6Address._private_networks (with its 2001::/23 exceptions), multicast, site-local. */
static bool nonglobal6(const uint8_t *a)
{
	static const struct net6 exceptions[] = {
		{ { 0x20, 0x01, 0, 0x01, [15] = 0x01 }, 128 }, { { 0x20, 0x01, 0, 0x01, [15] = 0x02 }, 128 },
		{ { 0x20, 0x01, 0, 0x03 }, 32 },               { { 0x20, 0x01, 0, 0x04, 0x01, 0x12 }, 48 },
		{ { 0x20, 0x01, 0, 0x20 }, 28 },               { { 0x20, 0x01, 0, 0x30 }, 28 },
	};
	static const struct net6 table[] = {
		{ { 0 }, 128 },                                  /* :: */
		{ { [15] = 1 }, 128 },                           /* ::1 */
		{ { 0, 0x64, 0xff, 0x9b, 0, 0x01 }, 48 },        /* 64:ff9b:1::/48 */
		{ { 0x01, 0x00 }, 64 },                          /* 100::/64 */
		{ { 0x20, 0x01 }, 23 },                          /* 2001::/23 */
		{ { 0x20, 0x01, 0x0d, 0xb8 }, 32 },              /* 2001:db8::/32 */
		{ { 0x20, 0x02 }, 16 },                          /* 2002::/16 */
		{ { 0x3f, 0xff }, 20 },                          /* 3fff::/20 */
		{ { 0xfc }, 7 },                                 /* fc00::/7 */
		{ { 0xfe, 0x80 }, 10 },                          /* fe80::/10 */
		{ { 0xfe, 0xc0 }, 10 },                          /* fec0::/10 (site-local, deprecated) */
		{ { 0xff }, 8 },                                 /* multicast */
	};
	/*
	 * An address that carries an IPv4 one reaches that IPv4 host, so it is
	 * judged as it: ::ffff:a.b.c.d (IPv4-mapped; Python 3.13 does the same)
	 * and 64:ff9b::a.b.c.d (the NAT64 well-known prefix, RFC 6052: a
	 * translator forwards it to a.b.c.d, which may be internal).
	 */
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0)
		return nonglobal4(IP4(a[12], a[13], a[14], a[15]));
	/* ::a.b.c.d (IPv4-compatible, deprecated by RFC 4291) is never a real peer */
	static const uint8_t compat[12] = { 0 };
	if (memcmp(a, compat, 12) == 0)
		return true;
	for (size_t i = 0; i < sizeof(exceptions) / sizeof(exceptions[0]); i++)
		if (in6(a, &exceptions[i]))
			return false;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (in6(a, &table[i]))
			return true;
	return false;
}

bool proxy_addr_nonglobal(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return nonglobal4(ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return nonglobal6(((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr);
	return true;
}

/* `s` with every byte outside printable ASCII as \xHH, into out (truncated, NUL-terminated). */
static void escape_into(const char *s, char *out, size_t outsz)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (; *s && o + 5 <= outsz; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c >= 0x7f) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
}

size_t proxy_decision_line(enum proxy_decision d, const char *host, const char *port, char *out, size_t outsz)
{
	static const char *const word[] = { "ALLOW", "DENY", "DENY-NONGLOBAL", "UNREACHABLE" };
	/* Never a raw control byte in the log that NAME/egress shows: the host is the guest's. */
	char h[4 * 257 + 1], p[4 * 16 + 1];
	escape_into(host, h, sizeof(h));
	escape_into(port, p, sizeof(p));
	int n = snprintf(out, outsz, "%s %s:%s\n", word[d], h, p);
	size_t len = n < 0 ? 0 : (size_t)n;
	if (len >= outsz) {
		len = outsz - 1;
		out[len - 1] = '\n';
	}
	return len;
}

const char *proxy_error_response(int status)
{
	switch (status) {
	case 400: return "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
	case 403: return "HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n";
	case 405: return "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n";
	case 502: return "HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n";
	case 503: return "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n";
	default: return "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n";
	}
}
