/*
 * test_endpoint.c: engine endpoint resolution (mafsbxfs(1) ENGINE ENDPOINT) against
 * temporary Docker config directories and an injected environment: every
 * step of the order, environment permutations, the "default" context,
 * refusals (missing contexts, malformed ssh:// URLs, unknown schemes, malformed files, empty
 * values), TLS material from the environment and from contexts, URL parsing.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "endpoint.h"

/* ---- fixture: a temp dir as $HOME, a fake environment ------------------- */

struct fx {
	char root[PATH_MAX];     /* temp dir; HOME */
	char dconf[PATH_MAX];    /* root/.docker */
	const char *names[16];
	const char *values[16];
	char owned[16][PATH_MAX];
	int n;
};

static const char *fake_getenv(const char *name, void *ctx)
{
	struct fx *f = ctx;
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->names[i], name) == 0)
			return f->values[i];
	return NULL;
}

static void setenv_fx(struct fx *f, const char *name, const char *value)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->names[i], name) == 0) {
			snprintf(f->owned[i], sizeof(f->owned[i]), "%s", value);
			f->values[i] = f->owned[i];
			return;
		}
	assert_true(f->n < 16);
	f->names[f->n] = name;
	snprintf(f->owned[f->n], sizeof(f->owned[f->n]), "%s", value);
	f->values[f->n] = f->owned[f->n];
	f->n++;
}

static void unsetenv_fx(struct fx *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->names[i], name) == 0) {
			f->names[i] = "\x01unset";
		}
}

static void mkdirs(const char *path)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(tmp, 0755);
			*p = '/';
		}
	mkdir(tmp, 0755);
}

static void write_file(const char *path, const char *content)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	*slash = '\0';
	mkdirs(dir);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(content, fp);
	fclose(fp);
}

static void sha256_hex(const char *s, char hex[65])
{
	unsigned char md[32];
	unsigned int n = 0;
	assert_int_equal(EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL), 1);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* Write a context's meta.json under cfgdir; `host_json` is the JSON value of Host (or NULL: omit). */
static void make_context_raw(const char *cfgdir, const char *name, const char *meta)
{
	char hex[65], path[PATH_MAX];
	sha256_hex(name, hex);
	snprintf(path, sizeof(path), "%s/contexts/meta/%s/meta.json", cfgdir, hex);
	write_file(path, meta);
}

static void make_context(const char *cfgdir, const char *name, const char *host, const char *skip)
{
	char meta[2048];
	snprintf(meta, sizeof(meta),
		 "{\"Name\":\"%s\",\"Metadata\":{\"Description\":\"t\"},"
		 "\"Endpoints\":{\"docker\":{\"Host\":\"%s\",\"SkipTLSVerify\":%s}}}",
		 name, host, skip ? skip : "false");
	make_context_raw(cfgdir, name, meta);
}

static void make_context_tls(const char *cfgdir, const char *name, bool ca, bool cert, bool key)
{
	char hex[65], path[PATH_MAX];
	sha256_hex(name, hex);
	const char *files[3] = { "ca.pem", "cert.pem", "key.pem" };
	bool want[3] = { ca, cert, key };
	for (int i = 0; i < 3; i++) {
		if (!want[i])
			continue;
		snprintf(path, sizeof(path), "%s/contexts/tls/%s/docker/%s", cfgdir, hex, files[i]);
		write_file(path, "-----BEGIN CERTIFICATE-----\n");
	}
}

static void make_config(const char *cfgdir, const char *content)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/config.json", cfgdir);
	write_file(path, content);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	const char *tmp = getenv("TMPDIR");
	snprintf(f->root, sizeof(f->root), "%s/mafsbx-test-endpoint-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->root)) {
		free(f);
		return -1;
	}
	snprintf(f->dconf, sizeof(f->dconf), "%s/.docker", f->root);
	setenv_fx(f, "HOME", f->root);
	*state = f;
	return 0;
}

static void rm_rf(const char *path)
{
	char cmd[PATH_MAX + 32];
	/* The path is our own mkdtemp result: no quoting hazards. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", path);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	rm_rf(f->root);
	free(f);
	return 0;
}

static int resolve(struct fx *f, const char *host, const char *context, struct mafsbx_endpoint *ep,
		   struct mafsbx_error *err)
{
	struct mafsbx_endpoint_options o = { .host = host, .context = context };
	memset(ep, 0x5a, sizeof(*ep));
	return mafsbx_endpoint_resolve(&o, fake_getenv, f, ep, err);
}

static void expect_ok(struct fx *f, const char *host, const char *context, struct mafsbx_endpoint *ep)
{
	struct mafsbx_error err;
	int r = resolve(f, host, context, ep, &err);
	if (r != 0)
		fail_msg("resolve failed: %s", err.message);
}

static void expect_refused(struct fx *f, const char *host, const char *context, const char *needle)
{
	struct mafsbx_error err;
	struct mafsbx_endpoint ep;
	int r = resolve(f, host, context, &ep, &err);
	if (r == 0)
		fail_msg("resolved to %.100s (source %.31s), wanted a refusal containing '%s'", ep.url, ep.source,
			 needle);
	assert_int_equal(r, -err.err);
	if (err.kind != MAFSBX_EK_INVALID && err.kind != MAFSBX_EK_NAMETOOLONG)
		fail_msg("kind %s for '%s'", mafsbx_error_kind_name(err.kind), err.message);
	if (!strstr(err.message, needle))
		fail_msg("message '%s' lacks '%s'", err.message, needle);
}

/* The whole order populated; each step removed in turn reveals the next. */
static void populate_all(struct fx *f)
{
	make_context(f->dconf, "ctxopt", "unix:///run/ctxopt.sock", NULL);
	make_context(f->dconf, "ctxenv", "unix:///run/ctxenv.sock", NULL);
	make_context(f->dconf, "ctxcfg", "unix:///run/ctxcfg.sock", NULL);
	make_config(f->dconf, "{\"auths\":{},\"currentContext\":\"ctxcfg\"}");
	setenv_fx(f, "DOCKER_HOST", "unix:///run/envhost.sock");
	setenv_fx(f, "DOCKER_CONTEXT", "ctxenv");
}

/* ---- the order ---------------------------------------------------------- */

static void test_default_when_nothing_set(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	expect_ok(f, NULL, NULL, &ep);
	assert_int_equal(ep.scheme, MAFSBX_EP_UNIX);
	assert_string_equal(ep.url, "unix:///var/run/docker.sock");
	assert_string_equal(ep.socket_path, "/var/run/docker.sock");
	assert_string_equal(ep.source, "default");
	assert_string_equal(ep.context, "");
	assert_false(ep.tls);

	/* NULL options behave as "none given". */
	struct mafsbx_error err;
	assert_int_equal(mafsbx_endpoint_resolve(NULL, fake_getenv, f, &ep, &err), 0);
	assert_string_equal(ep.source, "default");
}

static void test_order_each_step(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	populate_all(f);

	expect_ok(f, "unix:///run/hostopt.sock", "ctxopt", &ep);
	assert_string_equal(ep.url, "unix:///run/hostopt.sock");
	assert_string_equal(ep.source, "host-option");

	expect_ok(f, NULL, "ctxopt", &ep);
	assert_string_equal(ep.url, "unix:///run/ctxopt.sock");
	assert_string_equal(ep.source, "context-option");
	assert_string_equal(ep.context, "ctxopt");

	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.url, "unix:///run/envhost.sock");
	assert_string_equal(ep.source, "DOCKER_HOST");
	assert_string_equal(ep.context, "");

	unsetenv_fx(f, "DOCKER_HOST");
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.url, "unix:///run/ctxenv.sock");
	assert_string_equal(ep.source, "DOCKER_CONTEXT");
	assert_string_equal(ep.context, "ctxenv");

	unsetenv_fx(f, "DOCKER_CONTEXT");
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.url, "unix:///run/ctxcfg.sock");
	assert_string_equal(ep.source, "config");
	assert_string_equal(ep.context, "ctxcfg");

	make_config(f->dconf, "{\"auths\":{}}");
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.url, "unix:///var/run/docker.sock");
	assert_string_equal(ep.source, "default");
}

static void test_empty_env_counts_as_unset(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	populate_all(f);
	setenv_fx(f, "DOCKER_HOST", "");
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.source, "DOCKER_CONTEXT");
	setenv_fx(f, "DOCKER_CONTEXT", "");
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.source, "config");
	make_config(f->dconf, "{\"currentContext\":\"\"}");
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.source, "default");
}

static void test_docker_config_overrides_home(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	char other[PATH_MAX];
	snprintf(other, sizeof(other), "%s/elsewhere", f->root);
	make_context(f->dconf, "inhome", "unix:///run/inhome.sock", NULL);
	make_config(f->dconf, "{\"currentContext\":\"inhome\"}");
	make_context(other, "inother", "unix:///run/inother.sock", NULL);
	make_config(other, "{\"currentContext\":\"inother\"}");

	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.url, "unix:///run/inhome.sock");

	setenv_fx(f, "DOCKER_CONFIG", other);
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.url, "unix:///run/inother.sock");
	/* The contexts of the other directory are not looked up under HOME's. */
	expect_refused(f, NULL, "inhome", "does not exist");
}

static void test_context_dir_is_sha256_of_name(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	/* Known vector: sha256("test"). Written by hand, not by the helper. */
	char path[PATH_MAX];
	snprintf(path, sizeof(path),
		 "%s/contexts/meta/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08/meta.json",
		 f->dconf);
	write_file(path, "{\"Name\":\"test\",\"Endpoints\":{\"docker\":{\"Host\":\"tcp://10.1.2.3:2375\"}}}");
	expect_ok(f, NULL, "test", &ep);
	assert_int_equal(ep.scheme, MAFSBX_EP_TCP);
	assert_string_equal(ep.host, "10.1.2.3");
	assert_int_equal(ep.port, 2375);
	assert_string_equal(ep.url, "tcp://10.1.2.3:2375");
	assert_false(ep.tls);
}

/* ---- the "default" context ---------------------------------------------- */

static void test_default_context(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	make_context(f->dconf, "ctxcfg", "unix:///run/ctxcfg.sock", NULL);
	make_config(f->dconf, "{\"currentContext\":\"ctxcfg\"}");

	/* DOCKER_CONTEXT=default beats the config's current context. */
	setenv_fx(f, "DOCKER_CONTEXT", "default");
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.url, "unix:///var/run/docker.sock");
	assert_string_equal(ep.source, "DOCKER_CONTEXT");
	assert_string_equal(ep.context, "default");

	/* --context default is the DOCKER_HOST based configuration, as in the CLI. */
	setenv_fx(f, "DOCKER_HOST", "tcp://dockerhost.example:1234");
	expect_ok(f, NULL, "default", &ep);
	assert_string_equal(ep.url, "tcp://dockerhost.example:1234");
	assert_string_equal(ep.source, "context-option");
	assert_string_equal(ep.context, "default");

	/* A config whose current context is "default". */
	unsetenv_fx(f, "DOCKER_HOST");
	unsetenv_fx(f, "DOCKER_CONTEXT");
	make_config(f->dconf, "{\"currentContext\":\"default\"}");
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.url, "unix:///var/run/docker.sock");
	assert_string_equal(ep.source, "config");
	assert_string_equal(ep.context, "default");
}

/* ---- refusals ----------------------------------------------------------- */

static void test_missing_context_never_falls_back(void **state)
{
	struct fx *f = *state;
	expect_refused(f, NULL, "nosuch", "\"nosuch\"");
	expect_refused(f, NULL, "nosuch", "does not exist");

	setenv_fx(f, "DOCKER_CONTEXT", "nosuchenv");
	expect_refused(f, NULL, NULL, "\"nosuchenv\" (DOCKER_CONTEXT) does not exist");

	unsetenv_fx(f, "DOCKER_CONTEXT");
	make_config(f->dconf, "{\"currentContext\":\"nosuchcfg\"}");
	expect_refused(f, NULL, NULL, "\"nosuchcfg\" (currentContext in config.json) does not exist");

	/* Without any config directory a named context cannot exist. */
	unsetenv_fx(f, "HOME");
	setenv_fx(f, "DOCKER_CONTEXT", "x");
	struct mafsbx_endpoint ep;
	struct mafsbx_error err;
	int r = resolve(f, NULL, NULL, &ep, &err);
	/* (HOME unset falls back to the passwd entry's home; either way "x" is absent.) */
	assert_int_equal(r, -EINVAL);
	assert_non_null(strstr(err.message, "does not exist"));
}

/* ssh:// resolves from every source, TLS settings never apply to it. */
static void test_ssh_everywhere(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	struct mafsbx_error err;
	setenv_fx(f, "DOCKER_TLS_VERIFY", "1");  /* ignored for ssh */
	assert_int_equal(resolve(f, "ssh://me@host", NULL, &ep, &err), 0);
	assert_int_equal(ep.scheme, MAFSBX_EP_SSH);
	assert_string_equal(ep.url, "ssh://me@host");
	assert_string_equal(ep.user, "me");
	assert_string_equal(ep.host, "host");
	assert_int_equal(ep.port, 0);
	assert_false(ep.tls);
	assert_string_equal(mafsbx_endpoint_kind(&ep), "ssh");
	assert_string_equal(mafsbx_endpoint_plane(&ep), "engine");
	make_context(f->dconf, "remote", "ssh://me@host:2200", NULL);
	assert_int_equal(resolve(f, NULL, "remote", &ep, &err), 0);
	assert_string_equal(ep.url, "ssh://me@host:2200");
	assert_int_equal(ep.port, 2200);
	assert_string_equal(ep.context, "remote");
	setenv_fx(f, "DOCKER_CONTEXT", "remote");
	assert_int_equal(resolve(f, NULL, NULL, &ep, &err), 0);
	assert_string_equal(ep.source, "DOCKER_CONTEXT");
	assert_int_equal(ep.scheme, MAFSBX_EP_SSH);
	setenv_fx(f, "DOCKER_HOST", "ssh://host:22");
	assert_int_equal(resolve(f, NULL, NULL, &ep, &err), 0);
	assert_string_equal(ep.source, "DOCKER_HOST");
	assert_string_equal(ep.url, "ssh://host:22");
	assert_string_equal(ep.user, "");
	expect_refused(f, "ssh://me:secret@host", NULL, "password");
	setenv_fx(f, "DOCKER_HOST", "ssh://-evil.example");
	expect_refused(f, NULL, NULL, "must not start with '-'");
	expect_refused(f, NULL, NULL, "DOCKER_HOST");
}

static void test_unknown_scheme_refused(void **state)
{
	struct fx *f = *state;
	expect_refused(f, "npipe:////./pipe/docker_engine", NULL, "unsupported scheme 'npipe://'");
	expect_refused(f, "fd://", NULL, "unsupported scheme");
	expect_refused(f, "://x", NULL, "unsupported scheme");
	setenv_fx(f, "DOCKER_HOST", "ftp://h:21");
	expect_refused(f, NULL, NULL, "unsupported scheme 'ftp://'");
	make_context(f->dconf, "weird", "gopher://h", NULL);
	expect_refused(f, NULL, "weird", "unsupported scheme");
}

static void test_empty_values_refused(void **state)
{
	struct fx *f = *state;
	expect_refused(f, "", NULL, "empty host option");
	expect_refused(f, NULL, "", "empty context option");
	expect_refused(f, "unix://", NULL, "no socket path");
	expect_refused(f, "tcp://", NULL, "no host");
	expect_refused(f, "tcp://:2375", NULL, "no host");
	expect_refused(f, "tcp://h:", NULL, "empty port");
	make_context_raw(f->dconf, "emptyhost", "{\"Name\":\"emptyhost\",\"Endpoints\":{\"docker\":{\"Host\":\"\"}}}");
	expect_refused(f, NULL, "emptyhost", "no Endpoints.docker.Host");
}

static void test_malformed_config_refused(void **state)
{
	struct fx *f = *state;
	make_config(f->dconf, "{\"currentContext\": ");
	expect_refused(f, NULL, NULL, "malformed JSON");
	expect_refused(f, NULL, NULL, "config.json");
	make_config(f->dconf, "[\"currentContext\"]");
	expect_refused(f, NULL, NULL, "not a JSON object");
	make_config(f->dconf, "{\"currentContext\": 7}");
	expect_refused(f, NULL, NULL, "\"currentContext\" is not a string");
	make_config(f->dconf, "{\"currentContext\":\"a\",\"currentContext\":\"b\"}");
	expect_refused(f, NULL, NULL, "malformed JSON");
	/* An earlier step does not read the config at all. */
	struct mafsbx_endpoint ep;
	setenv_fx(f, "DOCKER_HOST", "unix:///run/x.sock");
	expect_ok(f, NULL, NULL, &ep);
	assert_string_equal(ep.url, "unix:///run/x.sock");
}

static void test_malformed_meta_refused(void **state)
{
	struct fx *f = *state;
	make_context_raw(f->dconf, "m1", "not json");
	expect_refused(f, NULL, "m1", "malformed JSON");
	expect_refused(f, NULL, "m1", "\"m1\"");
	make_context_raw(f->dconf, "m2", "{\"Name\":\"m2\"}");
	expect_refused(f, NULL, "m2", "no Endpoints.docker object");
	make_context_raw(f->dconf, "m3", "{\"Name\":\"m3\",\"Endpoints\":{\"docker\":{}}}");
	expect_refused(f, NULL, "m3", "no Endpoints.docker.Host");
	make_context_raw(f->dconf, "m4", "{\"Name\":\"m4\",\"Endpoints\":{\"docker\":{\"Host\":7}}}");
	expect_refused(f, NULL, "m4", "no Endpoints.docker.Host");
	make_context_raw(f->dconf, "m5",
			 "{\"Name\":\"m5\",\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h\",\"SkipTLSVerify\":\"yes\"}}}");
	expect_refused(f, NULL, "m5", "SkipTLSVerify is not a boolean");
	make_context_raw(f->dconf, "m6", "{\"Name\":\"other\",\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h\"}}}");
	expect_refused(f, NULL, "m6", "\"Name\" is not \"m6\"");
	make_context_raw(f->dconf, "m7", "[1]");
	expect_refused(f, NULL, "m7", "not a JSON object");
	make_context(f->dconf, "m8", "tcp://h:2375/some/path", NULL);
	expect_refused(f, NULL, "m8", "path or query");
}

/* ---- URL parsing -------------------------------------------------------- */

struct url_ok {
	const char *in;
	int scheme;
	const char *url;
	const char *host_or_path;
	int port;
	bool tls;
};

static void test_parse_url_accepts(void **state)
{
	(void)state;
	static const struct url_ok rows[] = {
		{ "unix:///var/run/docker.sock", MAFSBX_EP_UNIX, "unix:///var/run/docker.sock", "/var/run/docker.sock", 0, false },
		{ "UNIX:///run/d.sock", MAFSBX_EP_UNIX, "unix:///run/d.sock", "/run/d.sock", 0, false },
		{ "tcp://127.0.0.1:2375", MAFSBX_EP_TCP, "tcp://127.0.0.1:2375", "127.0.0.1", 2375, false },
		{ "tcp://dockerhost", MAFSBX_EP_TCP, "tcp://dockerhost:2375", "dockerhost", 2375, false },
		{ "tcp://dockerhost/", MAFSBX_EP_TCP, "tcp://dockerhost:2375", "dockerhost", 2375, false },
		{ "tcp://[::1]:2376", MAFSBX_EP_TCP, "tcp://[::1]:2376", "::1", 2376, false },
		{ "tcp://[fe80::1]", MAFSBX_EP_TCP, "tcp://[fe80::1]:2375", "fe80::1", 2375, false },
		{ "http://h.example:80", MAFSBX_EP_TCP, "tcp://h.example:80", "h.example", 80, false },
		{ "https://h.example", MAFSBX_EP_TCP, "tcp://h.example:2376", "h.example", 2376, true },
		{ "host-1.example:4243", MAFSBX_EP_TCP, "tcp://host-1.example:4243", "host-1.example", 4243, false },
		{ "tcp://h:65535", MAFSBX_EP_TCP, "tcp://h:65535", "h", 65535, false },
		{ "ssh://me@h.example", MAFSBX_EP_SSH, "ssh://me@h.example", "h.example", 0, false },
		{ "SSH://me@h.example:2222/", MAFSBX_EP_SSH, "ssh://me@h.example:2222", "h.example", 2222, false },
		{ "ssh://h", MAFSBX_EP_SSH, "ssh://h", "h", 0, false },
		{ "ssh://u_1.x-y@[::1]:22", MAFSBX_EP_SSH, "ssh://u_1.x-y@[::1]:22", "::1", 22, false },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mafsbx_endpoint ep;
		struct mafsbx_error err;
		if (mafsbx_endpoint_parse_url(rows[i].in, &ep, &err) != 0)
			fail_msg("'%s' refused: %s", rows[i].in, err.message);
		assert_int_equal(ep.scheme, rows[i].scheme);
		assert_string_equal(ep.url, rows[i].url);
		if (rows[i].scheme == MAFSBX_EP_UNIX) {
			assert_string_equal(ep.socket_path, rows[i].host_or_path);
		} else {
			assert_string_equal(ep.host, rows[i].host_or_path);
			assert_int_equal(ep.port, rows[i].port);
		}
		assert_int_equal(ep.tls, rows[i].tls);
	}
}

static void test_parse_url_refuses(void **state)
{
	(void)state;
	char longsock[200];
	memset(longsock, 'a', sizeof(longsock));
	memcpy(longsock, "unix:///", 8);
	longsock[sizeof(longsock) - 1] = '\0';
	const struct {
		const char *in;
		const char *needle;
	} rows[] = {
		{ "", "empty" },
		{ "/var/run/docker.sock", "write unix:///var/run/docker.sock" },
		{ "unix://relative.sock", "not absolute" },
		{ longsock, "longer than a unix socket address allows" },
		{ "tcp://h:0", "out of range" },
		{ "tcp://h:65536", "out of range" },
		{ "tcp://h:99999999999", "port" },
		{ "tcp://h:2x", "malformed port" },
		{ "tcp://user@h:2375", "user information" },
		{ "tcp://h:2375?x=1", "path or query" },
		{ "tcp://h:2375/v1.41", "path or query" },
		{ "tcp://[::1", "unclosed" },
		{ "tcp://[::1]x", "malformed host" },
		{ "tcp://[zz]:1", "IPv6" },
		{ "tcp://h h:1", "whitespace" },
		{ "tcp://h\n:1", "control" },
		{ "tcp://h/../x:1", "path or query" },
		{ "tcp://h%41:1", "malformed host" },
		{ "ssh://", "names no host" },
		{ "ssh://u@", "names no host" },
		{ "ssh://@h", "empty user name" },
		{ "ssh://u:p@h", "password" },
		{ "ssh://a@b@h", "more than one '@'" },
		{ "ssh://-l@h", "must not start with '-'" },
		{ "ssh://u@-oport", "must not start with '-'" },
		{ "ssh://u@h/path", "path or query" },
		{ "ssh://u@h:", "empty port" },
		{ "ssh://u@h:0", "port out of range" },
		{ "ssh://u;x@h", "malformed user name" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mafsbx_endpoint ep;
		struct mafsbx_error err;
		int r = mafsbx_endpoint_parse_url(rows[i].in, &ep, &err);
		if (r == 0)
			fail_msg("'%s' accepted as %s", rows[i].in, ep.url);
		assert_int_equal(r, -err.err);
		if (!strstr(err.message, rows[i].needle))
			fail_msg("'%s': message '%s' lacks '%s'", rows[i].in, err.message, rows[i].needle);
	}
}

/* ---- TLS ---------------------------------------------------------------- */

static void make_certs(const char *dir, bool ca, bool cert, bool key)
{
	char p[PATH_MAX];
	mkdirs(dir);
	if (ca) {
		snprintf(p, sizeof(p), "%s/ca.pem", dir);
		write_file(p, "ca");
	}
	if (cert) {
		snprintf(p, sizeof(p), "%s/cert.pem", dir);
		write_file(p, "cert");
	}
	if (key) {
		snprintf(p, sizeof(p), "%s/key.pem", dir);
		write_file(p, "key");
	}
}

static void test_env_tls(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	char certs[PATH_MAX], want[PATH_MAX];
	snprintf(certs, sizeof(certs), "%s/certs", f->root);
	make_certs(certs, true, true, true);

	setenv_fx(f, "DOCKER_HOST", "tcp://secure.example");
	expect_ok(f, NULL, NULL, &ep);
	assert_false(ep.tls);
	assert_int_equal(ep.port, 2375);

	setenv_fx(f, "DOCKER_TLS_VERIFY", "1");
	setenv_fx(f, "DOCKER_CERT_PATH", certs);
	expect_ok(f, NULL, NULL, &ep);
	assert_true(ep.tls);
	assert_true(ep.tls_verify);
	assert_int_equal(ep.port, 2376);
	assert_string_equal(ep.url, "tcp://secure.example:2376");
	snprintf(want, sizeof(want), "%s/ca.pem", certs);
	assert_string_equal(ep.ca, want);
	snprintf(want, sizeof(want), "%s/cert.pem", certs);
	assert_string_equal(ep.cert, want);
	snprintf(want, sizeof(want), "%s/key.pem", certs);
	assert_string_equal(ep.key, want);

	/* An explicit port stays. */
	setenv_fx(f, "DOCKER_HOST", "tcp://secure.example:9999");
	expect_ok(f, NULL, NULL, &ep);
	assert_int_equal(ep.port, 9999);

	/* Any non-empty DOCKER_TLS_VERIFY means verify, as in the CLI. */
	setenv_fx(f, "DOCKER_TLS_VERIFY", "0");
	expect_ok(f, NULL, NULL, &ep);
	assert_true(ep.tls_verify);

	/* DOCKER_CERT_PATH alone: TLS without verification. */
	unsetenv_fx(f, "DOCKER_TLS_VERIFY");
	expect_ok(f, NULL, NULL, &ep);
	assert_true(ep.tls);
	assert_false(ep.tls_verify);

	/* -H takes the TLS environment too (the CLI's default context). */
	setenv_fx(f, "DOCKER_TLS_VERIFY", "1");
	expect_ok(f, "tcp://other.example", NULL, &ep);
	assert_true(ep.tls);
	assert_int_equal(ep.port, 2376);
	assert_string_equal(ep.source, "host-option");

	/* A unix endpoint never speaks TLS. */
	expect_ok(f, "unix:///run/s.sock", NULL, &ep);
	assert_false(ep.tls);
	assert_string_equal(ep.ca, "");
}

static void test_env_tls_default_cert_dir(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	char want[PATH_MAX];
	make_certs(f->dconf, true, false, false);
	setenv_fx(f, "DOCKER_HOST", "tcp://h");
	setenv_fx(f, "DOCKER_TLS_VERIFY", "1");
	expect_ok(f, NULL, NULL, &ep);
	assert_true(ep.tls_verify);
	snprintf(want, sizeof(want), "%s/ca.pem", f->dconf);
	assert_string_equal(ep.ca, want);
	assert_string_equal(ep.cert, "");
	assert_string_equal(ep.key, "");
}

static void test_env_tls_refusals(void **state)
{
	struct fx *f = *state;
	char certs[PATH_MAX];
	snprintf(certs, sizeof(certs), "%s/certs", f->root);
	setenv_fx(f, "DOCKER_HOST", "tcp://h");
	setenv_fx(f, "DOCKER_CERT_PATH", certs);
	expect_refused(f, NULL, NULL, "is not a directory");

	make_certs(certs, false, true, true);
	setenv_fx(f, "DOCKER_TLS_VERIFY", "1");
	expect_refused(f, NULL, NULL, "ca.pem does not exist");

	char certs2[PATH_MAX];
	snprintf(certs2, sizeof(certs2), "%s/certs2", f->root);
	make_certs(certs2, true, true, false);
	setenv_fx(f, "DOCKER_CERT_PATH", certs2);
	expect_refused(f, NULL, NULL, "cert.pem without key.pem");
	/* Verification with no certificates at all, in DOCKER_CERT_PATH or the
	 * default directory: refused naming them, never the system CA store (doc/security.md "Findings fixed after review": DOCKER_TLS_VERIFY without certificates). */
	char empty[PATH_MAX], want[PATH_MAX + 64];
	snprintf(empty, sizeof(empty), "%s/empty", f->root);
	assert_int_equal(mkdir(empty, 0700), 0);
	unsetenv_fx(f, "DOCKER_CERT_PATH");
	snprintf(want, sizeof(want), "%s/ca.pem does not exist, nor cert.pem and key.pem", f->dconf);
	expect_refused(f, NULL, NULL, want);
	expect_refused(f, "tcp://other.example:2376", NULL, "system CA store is not used");
	setenv_fx(f, "DOCKER_CERT_PATH", empty);
	snprintf(want, sizeof(want), "%s/ca.pem does not exist, nor cert.pem and key.pem", empty);
	expect_refused(f, NULL, NULL, want);
	/* without verification there is nothing to verify against: still allowed */
	unsetenv_fx(f, "DOCKER_TLS_VERIFY");
	setenv_fx(f, "DOCKER_CERT_PATH", empty);
	struct mafsbx_endpoint ep;
	expect_ok(f, NULL, NULL, &ep);
	assert_true(ep.tls);
	assert_false(ep.tls_verify);
}

static void test_context_tls(void **state)
{
	struct fx *f = *state;
	struct mafsbx_endpoint ep;
	char hex[65], want[PATH_MAX];

	make_context(f->dconf, "plain", "tcp://plain.example", NULL);
	expect_ok(f, NULL, "plain", &ep);
	assert_false(ep.tls);
	assert_int_equal(ep.port, 2375);

	make_context(f->dconf, "secure", "tcp://secure.example", NULL);
	make_context_tls(f->dconf, "secure", true, true, true);
	expect_ok(f, NULL, "secure", &ep);
	assert_true(ep.tls);
	assert_true(ep.tls_verify);
	assert_int_equal(ep.port, 2376);
	sha256_hex("secure", hex);
	snprintf(want, sizeof(want), "%s/contexts/tls/%s/docker/ca.pem", f->dconf, hex);
	assert_string_equal(ep.ca, want);
	snprintf(want, sizeof(want), "%s/contexts/tls/%s/docker/key.pem", f->dconf, hex);
	assert_string_equal(ep.key, want);

	/* SkipTLSVerify without material: TLS, no verification. */
	make_context(f->dconf, "skip", "tcp://skip.example:3000", "true");
	expect_ok(f, NULL, "skip", &ep);
	assert_true(ep.tls);
	assert_false(ep.tls_verify);
	assert_int_equal(ep.port, 3000);
	assert_string_equal(ep.ca, "");

	/* The TLS environment does not apply to a named context. */
	setenv_fx(f, "DOCKER_TLS_VERIFY", "1");
	expect_ok(f, NULL, "plain", &ep);
	assert_false(ep.tls);

	/* Half a client key pair is refused. */
	make_context(f->dconf, "half", "tcp://half.example", NULL);
	make_context_tls(f->dconf, "half", false, true, false);
	expect_refused(f, NULL, "half", "cert.pem without key.pem");

	/* A unix context ignores TLS material. */
	make_context(f->dconf, "local", "unix:///run/local.sock", NULL);
	make_context_tls(f->dconf, "local", true, true, true);
	expect_ok(f, NULL, "local", &ep);
	assert_false(ep.tls);
}

/* Under allow_other, .ctl/engine shows an ssh endpoint without its login name (doc/security.md "Findings fixed after review": .ctl/engine keeps the ssh login name). */
static void test_url_shown(void **state)
{
	(void)state;
	static const char *const rows[][3] = {
		/* URL, shown to the mounting user, shown to others */
		{ "ssh://me@h.example:2222", "ssh://me@h.example:2222", "ssh://h.example:2222" },
		{ "ssh://u_1.x-y@[::1]:22", "ssh://u_1.x-y@[::1]:22", "ssh://[::1]:22" },
		{ "ssh://me@h.example", "ssh://me@h.example", "ssh://h.example" },
		{ "ssh://h", "ssh://h", "ssh://h" },
		{ "tcp://h.example:2376", "tcp://h.example:2376", "tcp://h.example:2376" },
		{ "unix:///run/d.sock", "unix:///run/d.sock", "unix:///run/d.sock" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mafsbx_endpoint ep;
		struct mafsbx_error err;
		char out[1024];
		assert_int_equal(mafsbx_endpoint_parse_url(rows[i][0], &ep, &err), 0);
		mafsbx_endpoint_url_shown(&ep, false, out, sizeof(out));
		assert_string_equal(out, rows[i][1]);
		mafsbx_endpoint_url_shown(&ep, true, out, sizeof(out));
		assert_string_equal(out, rows[i][2]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_default_when_nothing_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_order_each_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_env_counts_as_unset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_docker_config_overrides_home, setup, teardown),
		cmocka_unit_test_setup_teardown(test_context_dir_is_sha256_of_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_context_never_falls_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ssh_everywhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_scheme_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_values_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_config_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_meta_refused, setup, teardown),
		cmocka_unit_test(test_parse_url_accepts),
		cmocka_unit_test(test_parse_url_refuses),
		cmocka_unit_test(test_url_shown),
		cmocka_unit_test_setup_teardown(test_env_tls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_tls_default_cert_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_tls_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_context_tls, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
