/*
 * endpoint.h: which Docker engine to talk to (mafsbxfs(1) ENGINE ENDPOINT).
 *
 * Resolved once at start from flags, the environment and the Docker CLI's
 * config/context files, then bound: the result is a plain value that later
 * environment or context changes cannot redirect.
 */
#ifndef MAFSBX_ENDPOINT_H
#define MAFSBX_ENDPOINT_H

#include <limits.h>
#include <stdbool.h>

#include "error.h"

enum mafsbx_endpoint_scheme { MAFSBX_EP_UNIX = 1, MAFSBX_EP_TCP = 2, MAFSBX_EP_SSH = 3 };

struct mafsbx_endpoint {
	enum mafsbx_endpoint_scheme scheme;
	char url[1024];          /* as resolved: "unix:///var/run/docker.sock", "tcp://h:2376", "ssh://u@h:22" */
	char socket_path[PATH_MAX]; /* unix: the socket */
	char host[256];          /* tcp, ssh: host name or address (IPv6 without brackets) */
	int port;                /* tcp: port (2375, or 2376 with TLS, when the URL has none);
				    ssh: port, 0 when the URL has none (ssh's own default/config) */
	char user[256];          /* ssh: login name, "" when the URL has none */
	bool tls;                /* tcp: speak TLS */
	bool tls_verify;         /* tcp+tls: verify the server against ca */
	char ca[PATH_MAX];       /* "" when unset */
	char cert[PATH_MAX];
	char key[PATH_MAX];
	char context[256];       /* the Docker context used, "" when none */
	char source[32];         /* "host-option", "context-option", "DOCKER_HOST", "DOCKER_CONTEXT",
				    "config", "default" */
};

struct mafsbx_endpoint_options {
	const char *host;        /* -H URL / -o host=URL, or NULL */
	const char *context;     /* --context NAME / -o context=NAME, or NULL */
};

/* Environment lookup, injectable for tests; NULL means getenv(3). */
typedef const char *(*mafsbx_getenv_fn)(const char *name, void *ctx);

/*
 * Resolve in the order of mafsbxfs(1) ENGINE ENDPOINT: host option, context option,
 * DOCKER_HOST, DOCKER_CONTEXT, currentContext of $DOCKER_CONFIG/config.json
 * (default ~/.docker/config.json), then unix:///var/run/docker.sock.
 * A context named "default" means the default endpoint. A named context that
 * does not exist, an unknown scheme, or malformed files are refused with
 * EK_INVALID and a message naming the problem; never a silent fallback.
 */
int mafsbx_endpoint_resolve(const struct mafsbx_endpoint_options *opts, mafsbx_getenv_fn env, void *env_ctx,
			    struct mafsbx_endpoint *out, struct mafsbx_error *err);

/* Parse one URL (unix://, tcp://, http://, https://, ssh://) into `out` (no TLS material). */
int mafsbx_endpoint_parse_url(const char *url, struct mafsbx_endpoint *out, struct mafsbx_error *err);

/*
 * The URL as shown to a reader (.ctl/engine): `to_others` (a mount with
 * allow_other, read by users other than the one who mounted it) leaves out
 * an ssh URL's login name; otherwise ep->url. Always NUL-terminated.
 */
void mafsbx_endpoint_url_shown(const struct mafsbx_endpoint *ep, bool to_others, char *out, size_t n);

/* "unix", "tcp", "tls" (tcp with TLS) or "ssh": how the engine is reached. */
const char *mafsbx_endpoint_kind(const struct mafsbx_endpoint *ep);

/*
 * The file plane the endpoint implies (mafsbxfs(1) READING AND WRITING FILES): "local" for a
 * unix socket, which is on this host so the engine's processes are too;
 * "engine" for anything reached over a network (tcp, TLS, ssh).
 */
const char *mafsbx_endpoint_plane(const struct mafsbx_endpoint *ep);

#endif
