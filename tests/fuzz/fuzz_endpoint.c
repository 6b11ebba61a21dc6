/*
 * fuzz_endpoint.c: the endpoint URL and Docker context parser
 * (src/engine/endpoint.c). Input parts ("\n--\n"-separated):
 *   0 a URL for mafsbx_endpoint_parse_url and as the host option (when
 *     part 6 says so), 1 DOCKER_HOST, 2 DOCKER_CONTEXT (or the context
 *     option), 3 config.json, 4 the meta.json of context "fz",
 *   5 DOCKER_TLS_VERIFY, 6 flags: 'h' host option, 'c' context option,
 *     'e' DOCKER_CONFIG set, 'p' DOCKER_CERT_PATH set.
 * Files go to a private directory made once. Invariant: a resolved endpoint
 * is complete (a socket path for unix, a host and a port in 1..65535 for
 * tcp, a source).
 */
#include <openssl/evp.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoint.h"
#include "error.h"
#include "fuzz.h"

static char dir[64];
static char meta_path[512];
static char *parts[7];
static size_t nparts;

static const char *part(size_t i)
{
	return i < nparts ? parts[i] : "";
}

static bool flag(char f)
{
	return strchr(part(6), f) != NULL;
}

static const char *fake_env(const char *name, void *ctx)
{
	(void)ctx;
	if (!strcmp(name, "DOCKER_HOST"))
		return part(1)[0] ? part(1) : NULL;
	if (!strcmp(name, "DOCKER_CONTEXT"))
		return part(2)[0] && !flag('c') ? part(2) : NULL;
	if (!strcmp(name, "DOCKER_CONFIG"))
		return flag('e') ? dir : NULL;
	if (!strcmp(name, "HOME"))
		return flag('e') ? NULL : "/nonexistent-fuzz-home";
	if (!strcmp(name, "DOCKER_TLS_VERIFY"))
		return part(5)[0] ? part(5) : NULL;
	if (!strcmp(name, "DOCKER_CERT_PATH"))
		return flag('p') ? dir : NULL;
	return NULL;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

/* Leave nothing in /tmp (libFuzzer ends with exit()). */
static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static void setup_once(void)
{
	if (dir[0])
		return;
	snprintf(dir, sizeof(dir), "/tmp/mafsbx-fuzz-endpoint-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	atexit(remove_dir);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (EVP_Digest("fz", 2, md, &mdlen, EVP_sha256(), NULL) != 1)
		abort();
	char hex[65];
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	char p[512];
	snprintf(p, sizeof(p), "%s/contexts", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/contexts/meta", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/contexts/meta/%s", dir, hex);
	mkdir(p, 0700);
	snprintf(meta_path, sizeof(meta_path), "%s/meta.json", p);
}

static void check(const struct mafsbx_endpoint *ep)
{
	FUZZ_CHECK(memchr(ep->url, '\0', sizeof(ep->url)));
	FUZZ_CHECK(memchr(ep->socket_path, '\0', sizeof(ep->socket_path)));
	FUZZ_CHECK(memchr(ep->host, '\0', sizeof(ep->host)));
	if (ep->socket_path[0]) {
		FUZZ_CHECK(!ep->host[0]);
	} else {
		FUZZ_CHECK(ep->host[0]);
		/* ssh: 0 means the URL named none (ssh's own default or config) */
		FUZZ_CHECK((ep->port > 0 || (ep->scheme == MAFSBX_EP_SSH && ep->port == 0)) && ep->port <= 65535);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup_once();
	nparts = fuzz_split(data, size, parts, 7);
	struct mafsbx_endpoint ep;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	memset(&ep, 0, sizeof(ep));
	if (mafsbx_endpoint_parse_url(part(0), &ep, &err) == 0)
		check(&ep);

	char p[600];
	snprintf(p, sizeof(p), "%s/config.json", dir);
	write_file(p, part(3));
	write_file(meta_path, part(4));
	struct mafsbx_endpoint_options o = {
		.host = flag('h') ? part(0) : NULL,
		.context = flag('c') ? part(2) : NULL,
	};
	memset(&ep, 0, sizeof(ep));
	mafsbx_error_clear(&err);
	int r = mafsbx_endpoint_resolve(&o, fake_env, NULL, &ep, &err);
	if (r == 0) {
		check(&ep);
		FUZZ_CHECK(ep.source[0]);
	} else {
		FUZZ_CHECK(err.err > 0 && err.message[0]);
	}
	for (size_t i = 0; i < nparts; i++)
		free(parts[i]);
	return 0;
}
