/*
 * endpoint.c: which Docker engine to talk to, resolved once (mafsbxfs(1) ENGINE ENDPOINT).
 *
 * Owns the resolution order (host option, context option, DOCKER_HOST,
 * DOCKER_CONTEXT, currentContext of the CLI config, the default socket), the
 * reading of the Docker CLI's config.json and context store
 * (contexts/meta/<sha256(name)>/meta.json, contexts/tls/<sha256(name)>/docker/),
 * TLS material from DOCKER_TLS_VERIFY / DOCKER_CERT_PATH, and URL parsing.
 * The result is a plain value: nothing here is consulted again after start,
 * so a later change of the environment or of the current context cannot
 * redirect a running process.
 *
 * Choices where mafsbxfs(1) ENGINE ENDPOINT is silent, following the Docker CLI
 * (docker/cli cli/command/cli.go resolveContextName and
 * resolveDefaultDockerEndpoint):
 *  - The context "default" is the CLI's virtual "DOCKER_HOST based
 *    configuration": DOCKER_HOST (with the TLS environment) when set, else
 *    unix:///var/run/docker.sock. This matters only for `--context default`,
 *    since DOCKER_HOST otherwise already comes first in the order.
 *  - The host option wins over the context option when both are given
 *    (the order of mafsbxfs(1) ENGINE ENDPOINT; the Docker CLI refuses the pair instead).
 *  - An empty environment variable or an empty "currentContext" counts as
 *    unset (as in the CLI); an empty -H/--context value, an empty Host in
 *    meta.json, or an empty part of a URL (host, port, socket path) is refused.
 *  - DOCKER_TLS_VERIFY: any non-empty value (even "0") turns TLS with
 *    verification on, as in the CLI and the Go client; without a ca.pem to
 *    verify with it is refused, as the CLI refuses (never the system store). DOCKER_CERT_PATH alone
 *    turns TLS on without verification (the Go client's FromEnv). Certificates
 *    default to the config directory ($DOCKER_CONFIG or ~/.docker), as the
 *    CLI's default --tlscacert etc. do. TLS applies only to tcp endpoints.
 *  - A context uses TLS when its TLS directory holds material or it says
 *    SkipTLSVerify; verification is on unless SkipTLSVerify is true.
 *  - A URL without "://" ("host:2375") is tcp, as in the CLI; one starting
 *    with "/" is refused with a hint to write unix://.
 *  - ssh://[user@]host[:port] as the CLI's connhelper/ssh parses it: no
 *    password, no path; no port means ssh's own default. TLS settings do not
 *    apply to it. A user or host starting with '-' is refused (it would read
 *     as an ssh option; httpssh.c also passes them after -l and "--").
 */
#include "endpoint.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"

#define DEFAULT_URL "unix:///var/run/docker.sock"
#define DEFAULT_SOCKET "/var/run/docker.sock"
#define DEFAULT_CONTEXT "default"
#define PORT_PLAIN 2375
#define PORT_TLS 2376
/* config.json and meta.json are small; a bigger file is not what we think it is. */
#define MAX_JSON_FILE (4 * 1024 * 1024)

struct resolver {
	mafsbx_getenv_fn env;
	void *env_ctx;
	char config_dir[PATH_MAX];
	bool have_config_dir;
};

/* NULL for an unset or empty variable: the CLI treats both alike. */
static const char *env_get(const struct resolver *r, const char *name)
{
	const char *v = r->env ? r->env(name, r->env_ctx) : getenv(name);
	return v && *v ? v : NULL;
}

static int path_join(char *out, size_t outsz, struct mafsbx_error *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int path_join(char *out, size_t outsz, struct mafsbx_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, outsz, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= outsz)
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "path too long: %.200s...", out);
	return 0;
}

/* $DOCKER_CONFIG, else $HOME/.docker, else the passwd home + /.docker. */
static int find_config_dir(struct resolver *r, struct mafsbx_error *err)
{
	const char *dc = env_get(r, "DOCKER_CONFIG");
	if (dc) {
		r->have_config_dir = true;
		return path_join(r->config_dir, sizeof(r->config_dir), err, "%s", dc);
	}
	const char *home = env_get(r, "HOME");
	char pwbuf[4096];
	struct passwd pw, *res = NULL;
	if (!home && getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res && res->pw_dir &&
	    *res->pw_dir)
		home = res->pw_dir;
	if (!home) {
		/* No home at all: there is no CLI config to read, which is not an error. */
		r->have_config_dir = false;
		r->config_dir[0] = '\0';
		return 0;
	}
	r->have_config_dir = true;
	return path_join(r->config_dir, sizeof(r->config_dir), err, "%s/.docker", home);
}

/*
 * Read a whole small file. -ENOENT (error set, kind SYSTEM) when it does not
 * exist so the caller can decide whether absence is fine.
 */
static int read_file(const char *path, char **data, size_t *len, struct mafsbx_error *err)
{
	__do_buf struct mafsbx_buf b = MAFSBX_BUF_INIT;
	__do_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL, "cannot open %s: %s", path,
					     strerror(e));
	}
	for (;;) {
		if (mafsbx_buf_reserve(&b, 8192) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory reading %s", path);
		ssize_t n = read(fd, b.data + b.len, 8192);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL, "cannot read %s: %s", path,
						     strerror(e));
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
		b.data[b.len] = '\0';
		if (b.len > MAX_JSON_FILE) {
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s is larger than %d bytes", path,
						MAX_JSON_FILE);
		}
	}
	*data = mafsbx_buf_steal(&b, len);
	return *data ? 0 : mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory reading %s", path);
}

static int load_json_object(const char *path, json_t **out, struct mafsbx_error *err)
{
	__do_free char *data = NULL;
	size_t len = 0;
	int ret = read_file(path, &data, &len, err);
	if (ret < 0)
		return ret;
	json_error_t je;
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "malformed JSON in %s (line %d: %s)", path, je.line,
					je.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "malformed %s: not a JSON object", path);
	}
	*out = j;
	return 0;
}

static bool is_regular_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int copy_field(char *dst, size_t dstsz, const char *src, const char *what, struct mafsbx_error *err)
{
	size_t n = strlen(src);
	if (n >= dstsz)
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "%s is too long (%zu bytes, at most %zu)", what, n,
					dstsz - 1);
	memcpy(dst, src, n + 1);
	return 0;
}

/* ---- URL parsing -------------------------------------------------------- */

static bool valid_host_char(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_';
}

/*
 * Parse into out; *port_given says whether the URL named a port, so TLS found
 * later can still move the default from 2375 to 2376.
 */
/* The URL's scheme in lower case ("tcp" for a bare "host:port") and what follows "://". */
static int url_scheme(const char *url, char scheme[16], const char **rest, struct mafsbx_error *err)
{
	if (!url || !*url)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "empty engine endpoint URL");
	for (const char *p = url; *p; p++)
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p))
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"engine endpoint URL '%s' contains whitespace or control characters", url);
	const char *sep = strstr(url, "://");
	if (!sep) {
		if (url[0] == '/')
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"engine endpoint '%s' has no scheme; write unix://%s for a socket", url, url);
		/* The CLI reads "host:port" as tcp. */
		snprintf(scheme, 16, "tcp");
		*rest = url;
		return 0;
	}
	size_t sl = (size_t)(sep - url);
	if (sl == 0 || sl >= 16)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"unsupported scheme in engine endpoint '%s'; use unix://, tcp:// or ssh://", url);
	for (size_t i = 0; i < sl; i++)
		scheme[i] = (char)tolower((unsigned char)url[i]);
	scheme[sl] = '\0';
	*rest = sep + 3;
	return 0;
}

/* unix://PATH */
static int parse_unix_url(const char *url, const char *rest, struct mafsbx_endpoint *out, struct mafsbx_error *err)
{
	out->scheme = MAFSBX_EP_UNIX;
	if (!*rest)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine endpoint '%s' names no socket path", url);
	if (rest[0] != '/')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "socket path in engine endpoint '%s' is not absolute",
					url);
	if (strlen(rest) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG,
					"socket path in engine endpoint '%s' is longer than a unix socket "
					"address allows (%zu bytes)",
					url, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	int r = copy_field(out->socket_path, sizeof(out->socket_path), rest, "socket path", err);
	if (r < 0)
		return r;
	snprintf(out->url, sizeof(out->url), "unix://%s", rest);
	return 0;
}

/*
 * A user or host name of the URL (len bytes at s) into dst: not empty (the
 * `empty` complaint), shorter than cap, not an option to ssh (no leading '-').
 */
static int url_name(const char *url, const char *what, const char *empty, const char *s, size_t len, char *dst,
		    size_t cap, struct mafsbx_error *err)
{
	if (len == 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine endpoint '%s' %s", url, empty);
	if (len >= cap)
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "%s in engine endpoint '%s' is too long", what, url);
	if (s[0] == '-')
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s in engine endpoint '%s' must not start with '-'", what,
					url);
	memcpy(dst, s, len);
	dst[len] = '\0';
	return 0;
}

/*
 * ssh://user@host: the login goes to ssh as -l USER, never as an option.
 * `at` is the '@' in the authority *rest (*alen bytes), which then moves past it.
 */
static int url_user(const char *url, const char *at, const char **rest, size_t *alen, struct mafsbx_endpoint *out,
		    struct mafsbx_error *err)
{
	const char *u = *rest;
	size_t ulen = (size_t)(at - u);
	if (memchr(at + 1, '@', *alen - ulen - 1))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine endpoint '%s' has more than one '@'", url);
	if (memchr(u, ':', ulen))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"engine endpoint '%s' carries a password; ssh:// takes only a user name "
					"(use keys or an agent)",
					url);
	int r = url_name(url, "user name", "has an empty user name", u, ulen, out->user, sizeof(out->user), err);
	if (r < 0)
		return r;
	for (const char *p = u; p < at; p++)
		if (!valid_host_char((unsigned char)*p)) {
			out->user[0] = '\0';
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "malformed user name in engine endpoint '%s'", url);
		}
	*alen -= ulen + 1;
	*rest = at + 1;
	return 0;
}

/* The host of the authority (alen bytes at rest; "[v6]" or a name), and where a port starts (or NULL). */
static int url_host(const char *url, const char *rest, size_t alen, struct mafsbx_endpoint *out, const char **portp,
		    struct mafsbx_error *err)
{
	const char *host = rest, *hend;
	*portp = NULL;
	if (alen && rest[0] == '[') {
		const char *close = memchr(rest, ']', alen);
		if (!close)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "unclosed '[' in engine endpoint '%s'", url);
		host = rest + 1;
		hend = close;
		const char *after = close + 1;
		if (after < rest + alen) {
			if (*after != ':')
				return mafsbx_error_set(err, MAFSBX_EK_INVALID, "malformed host in engine endpoint '%s'",
							url);
			*portp = after + 1;
		}
		for (const char *p = host; p < hend; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
				return mafsbx_error_set(err, MAFSBX_EK_INVALID,
							"malformed IPv6 address in engine endpoint '%s'", url);
	} else {
		const char *colon = memchr(rest, ':', alen);
		hend = colon ? colon : rest + alen;
		if (colon)
			*portp = colon + 1;
		for (const char *p = host; p < hend; p++)
			if (!valid_host_char((unsigned char)*p))
				return mafsbx_error_set(err, MAFSBX_EK_INVALID, "malformed host in engine endpoint '%s'",
							url);
	}
	return url_name(url, "host", "names no host", host, (size_t)(hend - host), out->host, sizeof(out->host), err);
}

/* The decimal port from portp to pend into out->port. */
static int url_port(const char *url, const char *portp, const char *pend, struct mafsbx_endpoint *out,
		    struct mafsbx_error *err)
{
	long port = 0;
	if (portp == pend)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine endpoint '%s' has an empty port", url);
	for (const char *p = portp; p < pend; p++) {
		if (!isdigit((unsigned char)*p) || port > 65535)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "malformed port in engine endpoint '%s'", url);
		port = port * 10 + (*p - '0');
	}
	if (port < 1 || port > 65535)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "port out of range in engine endpoint '%s'", url);
	out->port = (int)port;
	return 0;
}

static int parse_url(const char *url, struct mafsbx_endpoint *out, bool *port_given, struct mafsbx_error *err)
{
	memset(out, 0, sizeof(*out));
	*port_given = false;
	const char *rest = NULL;
	char scheme[16];
	int r = url_scheme(url, scheme, &rest, err);
	if (r < 0)
		return r;
	if (strcmp(scheme, "unix") == 0)
		return parse_unix_url(url, rest, out, err);

	bool tls = false, ssh = false;
	if (strcmp(scheme, "tcp") == 0 || strcmp(scheme, "http") == 0)
		tls = false;
	else if (strcmp(scheme, "https") == 0)
		tls = true;
	else if (strcmp(scheme, "ssh") == 0)
		ssh = true;
	else
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"unsupported scheme '%s://' in engine endpoint '%s'; use unix://, tcp:// or ssh://",
					scheme, url);
	out->scheme = ssh ? MAFSBX_EP_SSH : MAFSBX_EP_TCP;
	out->tls = tls;
	out->tls_verify = tls;

	/* authority = everything up to the first '/'; only "" or "/" may follow. */
	size_t alen = strcspn(rest, "/?#");
	const char *tail = rest + alen;
	if (*tail && strcmp(tail, "/") != 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"engine endpoint '%s' has a path or query ('%s'); only scheme://host[:port] is "
					"supported",
					url, tail);
	const char *at = memchr(rest, '@', alen);
	if (at && !ssh)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "engine endpoint '%s' must not carry user information",
					url);
	const char *portp;
	if ((at && (r = url_user(url, at, &rest, &alen, out, err)) < 0) ||
	    (r = url_host(url, rest, alen, out, &portp, err)) < 0)
		return r;
	if (!portp) {
		/* ssh: no port means ssh's own choice (22 or ~/.ssh/config), as in the CLI. */
		out->port = ssh ? 0 : tls ? PORT_TLS : PORT_PLAIN;
		return 0;
	}
	if ((r = url_port(url, portp, rest + alen, out, err)) < 0)
		return r;
	*port_given = true;
	return 0;
}

static void format_tcp_url(struct mafsbx_endpoint *ep)
{
	bool v6 = strchr(ep->host, ':') != NULL;
	snprintf(ep->url, sizeof(ep->url), "tcp://%s%s%s:%d", v6 ? "[" : "", ep->host, v6 ? "]" : "", ep->port);
}

/* The ssh URL into out; `user` NULL or "" leaves the login name out. */
static void ssh_url(const struct mafsbx_endpoint *ep, const char *user, char *out, size_t n)
{
	bool v6 = strchr(ep->host, ':') != NULL;
	char port[16] = "";
	if (ep->port)
		snprintf(port, sizeof(port), ":%d", ep->port);
	bool u = user && user[0];
	snprintf(out, n, "ssh://%s%s%s%s%s%s", u ? user : "", u ? "@" : "", v6 ? "[" : "", ep->host, v6 ? "]" : "",
		 port);
}

static void format_ssh_url(struct mafsbx_endpoint *ep)
{
	ssh_url(ep, ep->user, ep->url, sizeof(ep->url));
}

void mafsbx_endpoint_url_shown(const struct mafsbx_endpoint *ep, bool to_others, char *out, size_t n)
{
	/* The login name says which account on the engine's host holds the
	 * daemon's key: worth keeping from users who only read the mount. */
	if (to_others && ep->scheme == MAFSBX_EP_SSH)
		ssh_url(ep, NULL, out, n);
	else
		snprintf(out, n, "%s", ep->url);
}

const char *mafsbx_endpoint_kind(const struct mafsbx_endpoint *ep)
{
	switch (ep->scheme) {
	case MAFSBX_EP_UNIX:
		return "unix";
	case MAFSBX_EP_TCP:
		return ep->tls ? "tls" : "tcp";
	case MAFSBX_EP_SSH:
		return "ssh";
	}
	return "unknown";
}

const char *mafsbx_endpoint_plane(const struct mafsbx_endpoint *ep)
{
	return ep->scheme == MAFSBX_EP_UNIX ? "local" : "engine";
}

int mafsbx_endpoint_parse_url(const char *url, struct mafsbx_endpoint *out, struct mafsbx_error *err)
{
	bool port_given;
	int r = parse_url(url, out, &port_given, err);
	if (r < 0)
		return r;
	if (out->scheme == MAFSBX_EP_TCP)
		format_tcp_url(out);
	else if (out->scheme == MAFSBX_EP_SSH)
		format_ssh_url(out);
	return 0;
}

/* ---- TLS material ------------------------------------------------------- */

/*
 * Take ca.pem / cert.pem / key.pem (under the names given) from dir, those
 * that exist. A certificate without its key (or the reverse) cannot be used,
 * so it is refused rather than silently dropped.
 */
static int take_tls_files(struct mafsbx_endpoint *ep, const char *dir, const char *ca_name,
			  const char *cert_name, const char *key_name, bool *found_any, struct mafsbx_error *err)
{
	char ca[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
	int r;
	if ((r = path_join(ca, sizeof(ca), err, "%s/%s", dir, ca_name)) < 0 ||
	    (r = path_join(cert, sizeof(cert), err, "%s/%s", dir, cert_name)) < 0 ||
	    (r = path_join(key, sizeof(key), err, "%s/%s", dir, key_name)) < 0)
		return r;
	bool has_ca = is_regular_file(ca), has_cert = is_regular_file(cert), has_key = is_regular_file(key);
	if (has_cert != has_key)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "TLS client %s without %s in %s",
					has_cert ? cert_name : key_name, has_cert ? key_name : cert_name, dir);
	snprintf(ep->ca, sizeof(ep->ca), "%s", has_ca ? ca : "");
	snprintf(ep->cert, sizeof(ep->cert), "%s", has_cert ? cert : "");
	snprintf(ep->key, sizeof(ep->key), "%s", has_key ? key : "");
	*found_any = has_ca || has_cert || has_key;
	return 0;
}

static void finish_tcp(struct mafsbx_endpoint *ep, bool port_given)
{
	if (ep->tls && !port_given)
		ep->port = PORT_TLS;
	format_tcp_url(ep);
}

/* DOCKER_TLS_VERIFY / DOCKER_CERT_PATH, for -H, DOCKER_HOST and the default context. */
static int apply_env_tls(const struct resolver *r, struct mafsbx_endpoint *ep, bool port_given,
			 struct mafsbx_error *err)
{
	if (ep->scheme == MAFSBX_EP_SSH)
		format_ssh_url(ep);
	if (ep->scheme != MAFSBX_EP_TCP)
		return 0;
	const char *verify = env_get(r, "DOCKER_TLS_VERIFY");
	const char *cert_path = env_get(r, "DOCKER_CERT_PATH");
	if (verify || cert_path) {
		ep->tls = true;
		ep->tls_verify = verify != NULL;
	}
	if (ep->tls) {
		const char *dir = cert_path ? cert_path : (r->have_config_dir ? r->config_dir : NULL);
		if (cert_path) {
			struct stat st;
			if (stat(cert_path, &st) != 0 || !S_ISDIR(st.st_mode))
				return mafsbx_error_set(err, MAFSBX_EK_INVALID,
							"DOCKER_CERT_PATH '%s' is not a directory", cert_path);
		}
		if (dir) {
			bool any;
			int rr = take_tls_files(ep, dir, "ca.pem", "cert.pem", "key.pem", &any, err);
			if (rr < 0)
				return rr;
		}
		/* Verification without ca.pem (from DOCKER_CERT_PATH or the config
		 * directory) would silently trust the system store instead, where any
		 * public CA can vouch for the engine; the Docker CLI refuses too. */
		if (ep->tls_verify && !ep->ca[0]) {
			if (!dir)
				return mafsbx_error_set(err, MAFSBX_EK_INVALID,
							"DOCKER_TLS_VERIFY is set but there is no ca.pem: DOCKER_CERT_PATH "
							"is unset and there is no Docker config directory");
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"DOCKER_TLS_VERIFY is set but %s/ca.pem does not exist%s (the "
						"system CA store is not used in its place)",
						dir, ep->cert[0] ? "" : ", nor cert.pem and key.pem");
		}
	}
	finish_tcp(ep, port_given);
	return 0;
}

/* The CLI's virtual "default" context: DOCKER_HOST based, else the default socket. */
static int resolve_default(const struct resolver *r, struct mafsbx_endpoint *ep, struct mafsbx_error *err)
{
	const char *dh = env_get(r, "DOCKER_HOST");
	bool port_given;
	int ret = parse_url(dh ? dh : DEFAULT_URL, ep, &port_given, err);
	if (ret < 0) {
		if (dh)
			mafsbx_error_prefix(err, "DOCKER_HOST");
		return ret;
	}
	return apply_env_tls(r, ep, port_given, err);
}

/* ---- contexts ----------------------------------------------------------- */

static int context_hash(const char *name, char hex[65], struct mafsbx_error *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (EVP_Digest(name, strlen(name), md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
		return mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "SHA-256 of the context name failed");
	for (unsigned int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

static int resolve_context(const struct resolver *r, const char *name, const char *source,
			   struct mafsbx_endpoint *ep, struct mafsbx_error *err)
{
	__do_json json_t *meta = NULL;
	int ret;
	if (!*name)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "empty Docker context name (%s)", source);
	if (strlen(name) >= sizeof(ep->context))
		return mafsbx_error_set(err, MAFSBX_EK_NAMETOOLONG, "Docker context name is too long (%s)", source);

	if (strcmp(name, DEFAULT_CONTEXT) == 0) {
		ret = resolve_default(r, ep, err);
		if (ret == 0)
			snprintf(ep->context, sizeof(ep->context), "%s", name);
		return ret;
	}
	if (!r->have_config_dir)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"Docker context \"%s\" (%s) does not exist: no Docker config directory "
					"(neither DOCKER_CONFIG nor HOME is set)",
					name, source);

	char hex[65], path[PATH_MAX], tlsdir[PATH_MAX];
	if ((ret = context_hash(name, hex, err)) < 0 ||
	    (ret = path_join(path, sizeof(path), err, "%s/contexts/meta/%s/meta.json", r->config_dir, hex)) < 0 ||
	    (ret = path_join(tlsdir, sizeof(tlsdir), err, "%s/contexts/tls/%s/docker", r->config_dir, hex)) < 0)
		return ret;

	ret = load_json_object(path, &meta, err);
	if (ret == -ENOENT)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "Docker context \"%s\" (%s) does not exist (no %s)",
					name, source, path);
	if (ret < 0) {
		if (err && err->kind == MAFSBX_EK_SYSTEM)
			err->kind = MAFSBX_EK_INVALID;
		mafsbx_error_prefix(err, "Docker context \"%s\"", name);
		return ret;
	}

	json_t *jname = json_object_get(meta, "Name");
	if (jname && (!json_is_string(jname) || strcmp(json_string_value(jname), name) != 0))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "malformed %s: \"Name\" is not \"%s\"", path, name);
	json_t *eps = json_object_get(meta, "Endpoints");
	json_t *dock = json_is_object(eps) ? json_object_get(eps, "docker") : NULL;
	if (!json_is_object(dock)) {
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"malformed %s: Docker context \"%s\" has no Endpoints.docker object", path, name);
	}
	json_t *jhost = json_object_get(dock, "Host");
	if (!json_is_string(jhost) || !*json_string_value(jhost)) {
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"malformed %s: Docker context \"%s\" has no Endpoints.docker.Host", path, name);
	}
	json_t *jskip = json_object_get(dock, "SkipTLSVerify");
	if (jskip && !json_is_boolean(jskip)) {
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"malformed %s: Endpoints.docker.SkipTLSVerify is not a boolean", path);
	}
	bool skip = jskip && json_is_true(jskip);

	bool port_given;
	ret = parse_url(json_string_value(jhost), ep, &port_given, err);
	if (ret < 0) {
		mafsbx_error_prefix(err, "Docker context \"%s\"", name);
		return ret;
	}
	if (ep->scheme == MAFSBX_EP_TCP) {
		bool any = false;
		ret = take_tls_files(ep, tlsdir, "ca.pem", "cert.pem", "key.pem", &any, err);
		if (ret < 0) {
			mafsbx_error_prefix(err, "Docker context \"%s\"", name);
			return ret;
		}
		if (any || skip)
			ep->tls = true;
		if (ep->tls)
			ep->tls_verify = !skip;
		finish_tcp(ep, port_given);
	} else if (ep->scheme == MAFSBX_EP_SSH) {
		format_ssh_url(ep);
	}
	snprintf(ep->context, sizeof(ep->context), "%s", name);
	return 0;
}

/* currentContext of config.json: NULL (with ret 0) when the file or the field is absent. */
static int config_current_context(const struct resolver *r, char *name, size_t namesz, bool *found,
				  struct mafsbx_error *err)
{
	*found = false;
	if (!r->have_config_dir)
		return 0;
	char path[PATH_MAX];
	int ret = path_join(path, sizeof(path), err, "%s/config.json", r->config_dir);
	if (ret < 0)
		return ret;
	json_t *cfg = NULL;
	ret = load_json_object(path, &cfg, err);
	if (ret == -ENOENT) {
		mafsbx_error_clear(err);
		return 0;
	}
	if (ret < 0) {
		if (err && err->kind == MAFSBX_EK_SYSTEM)
			err->kind = MAFSBX_EK_INVALID;
		return ret;
	}
	json_t *cur = json_object_get(cfg, "currentContext");
	if (cur && !json_is_string(cur)) {
		ret = mafsbx_error_set(err, MAFSBX_EK_INVALID, "malformed %s: \"currentContext\" is not a string",
				       path);
	} else if (cur && *json_string_value(cur)) {
		ret = copy_field(name, namesz, json_string_value(cur), "currentContext", err);
		*found = ret == 0;
	}
	json_decref(cfg);
	return ret;
}

int mafsbx_endpoint_resolve(const struct mafsbx_endpoint_options *opts, mafsbx_getenv_fn env, void *env_ctx,
			    struct mafsbx_endpoint *out, struct mafsbx_error *err)
{
	struct resolver r = { .env = env, .env_ctx = env_ctx };
	struct mafsbx_endpoint ep;
	const char *source;
	int ret;

	memset(&ep, 0, sizeof(ep));
	mafsbx_error_clear(err);
	if ((ret = find_config_dir(&r, err)) < 0)
		return ret;

	const char *v;
	if (opts && opts->host) {
		source = "host-option";
		bool port_given;
		if (!*opts->host)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "empty host option");
		ret = parse_url(opts->host, &ep, &port_given, err);
		if (ret == 0)
			ret = apply_env_tls(&r, &ep, port_given, err);
	} else if (opts && opts->context) {
		source = "context-option";
		if (!*opts->context)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "empty context option");
		ret = resolve_context(&r, opts->context, "context option", &ep, err);
	} else if ((v = env_get(&r, "DOCKER_HOST"))) {
		source = "DOCKER_HOST";
		ret = resolve_default(&r, &ep, err);
	} else if ((v = env_get(&r, "DOCKER_CONTEXT"))) {
		source = "DOCKER_CONTEXT";
		ret = resolve_context(&r, v, "DOCKER_CONTEXT", &ep, err);
	} else {
		char name[256];
		bool found;
		ret = config_current_context(&r, name, sizeof(name), &found, err);
		if (ret == 0 && found) {
			source = "config";
			ret = resolve_context(&r, name, "currentContext in config.json", &ep, err);
		} else if (ret == 0) {
			source = "default";
			ret = resolve_default(&r, &ep, err);
		} else {
			source = "config";
		}
	}
	if (ret < 0)
		return ret;
	snprintf(ep.source, sizeof(ep.source), "%s", source);
	*out = ep;
	return 0;
}
