/*
 * cmd_mkimage.c: `mafsbx mkimage`: builds the offline test image. No
 * registry is reachable, so the image is a rootfs made from the host's
 * busybox-static (src/admin/rootfs.c) imported through the Engine API, the way
 * `docker import` does it, with CMD ["/bin/sleep","infinity"]. Prints the
 * new image's ID. With --egress-proxy it builds the allowlist egress proxy
 * image instead: the same tree plus the static mafsbx-egress-proxy, run as
 * CMD (mafsbxfs(1) EGRESS). The proxy program is the one built beside this
 * mafsbx in a build tree (egress-proxy/mafsbx-egress-proxy next to it),
 * else the installed one, else what --proxy-program names.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cli_common.h"
#include "mafsbx.h"
#include "egress.h"
#include "rootfs.h"

#define DEFAULT_TAG "mafsbx/busybox:latest"
#define DEFAULT_PROXY_TAG MAFSBX_DEFAULT_PROXY_IMAGE
#ifndef MAFSBX_PROXY_PROGRAM
#define MAFSBX_PROXY_PROGRAM "/usr/local/libexec/mafsbx/mafsbx-egress-proxy"
#endif

static void mkimage_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " mkimage [--egress-proxy [--proxy-program PATH]] [--tag NAME] [--busybox PATH]\n"
		"                      [-H URL | --context NAME]\n"
		"\n"
		"Build the offline test image from the host's static busybox (Debian's\n"
		"busybox-static): /bin/busybox with a link in /bin for every applet,\n"
		"/etc/passwd and /etc/group with root and sandbox (uid/gid 1000),\n"
		"/tmp 1777, /root 0700, /home/sandbox owned by 1000:1000, and\n"
		"CMD [\"/bin/sleep\",\"infinity\"]. It is imported through the Engine API\n"
		"(no registry needed) and its ID is printed.\n"
		"\n"
		"With --egress-proxy, build the allowlist egress proxy image instead: the\n"
		"same tree plus the static proxy program at " MAFSBX_ROOTFS_PROXY_IN_IMAGE ",\n"
		"which is its CMD (port 3128). mafsbxfs uses it for egress 'allowlist'.\n"
		"\n"
		"Options:\n"
		"  -t, --tag NAME       image name (default " DEFAULT_TAG ",\n"
		"                       with --egress-proxy " DEFAULT_PROXY_TAG ")\n"
		"      --egress-proxy   build the egress proxy image\n"
		"      --proxy-program PATH\n"
		"                       the static proxy to copy (default: the one built beside\n"
		"                       this program, egress-proxy/mafsbx-egress-proxy in a\n"
		"                       build tree, else " MAFSBX_PROXY_PROGRAM ")\n"
		"      --busybox PATH   static busybox to copy (default " MAFSBX_ROOTFS_BUSYBOX ")\n" CLI_ENGINE_OPTIONS_HELP
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: 0 done, 1 failed, 125 usage, 3 engine unreachable.\n");
}

/*
 * The proxy to copy when --proxy-program is not given: the one built beside
 * this program (a build tree: BUILD/tools/mafsbx and
 * BUILD/tools/egress-proxy/mafsbx-egress-proxy), else the installed one.
 */
static const char *default_proxy(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		struct stat st;
		if (slash) {
			*slash = '\0';
			int w = snprintf(buf, size, "%s/egress-proxy/mafsbx-egress-proxy", self);
			if (w > 0 && (size_t)w < size && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
			    access(buf, X_OK) == 0)
				return buf;
		}
	}
	return MAFSBX_PROXY_PROGRAM;
}

static bool repo_char(unsigned char c)
{
	return islower(c) || isdigit(c) || c == '.' || c == '_' || c == '-' || c == '/' || c == ':';
}

static bool tag_char(unsigned char c)
{
	return isalnum(c) || c == '.' || c == '_' || c == '-';
}

/*
 * "repo[:tag]" -> repo and tag ("latest" when none). A ':' before the last
 * '/' belongs to a registry host:port, not to the tag. 0, or the usage exit
 * code after saying what is wrong.
 */
static int split_reference(const char *ref, char *repo, size_t repo_sz, char *tag, size_t tag_sz)
{
	size_t n = strlen(ref);
	if (n == 0)
		return cli_usage_error("mkimage", "empty image name");
	if (strchr(ref, '@'))
		return cli_usage_error("mkimage", "image name '%s' has a digest; an import can only be tagged", ref);
	const char *slash = strrchr(ref, '/');
	const char *colon = strrchr(slash ? slash : ref, ':');
	size_t rlen = colon ? (size_t)(colon - ref) : n;
	const char *t = colon ? colon + 1 : "latest";
	if (rlen == 0 || rlen >= repo_sz || ref[0] == '/' || ref[rlen - 1] == '/')
		return cli_usage_error("mkimage", "invalid image name '%s'", ref);
	for (size_t i = 0; i < rlen; i++)
		if (!repo_char((unsigned char)ref[i]))
			return cli_usage_error("mkimage",
					       "invalid image name '%s': a repository name is lower-case letters, "
					       "digits and . _ - /",
					       ref);
	/* A ':' left in the repository can only be a registry's port, in the first component. */
	const char *first_slash = memchr(ref, '/', rlen);
	const char *repo_colon = memchr(ref, ':', rlen);
	if (repo_colon && (!first_slash || repo_colon > first_slash))
		return cli_usage_error("mkimage", "invalid image name '%s'", ref);
	if (repo_colon) {
		bool digits = repo_colon + 1 < first_slash;
		for (const char *p = repo_colon + 1; p < first_slash; p++)
			digits = digits && isdigit((unsigned char)*p);
		if (!digits)
			return cli_usage_error("mkimage", "invalid registry port in image name '%s'", ref);
	}
	size_t tlen = strlen(t);
	if (tlen == 0 || tlen > 128 || tlen >= tag_sz || (!isalnum((unsigned char)t[0]) && t[0] != '_'))
		return cli_usage_error("mkimage", "invalid tag in image name '%s'", ref);
	for (size_t i = 0; i < tlen; i++)
		if (!tag_char((unsigned char)t[i]))
			return cli_usage_error("mkimage", "invalid tag in image name '%s'", ref);
	memcpy(repo, ref, rlen);
	repo[rlen] = '\0';
	memcpy(tag, t, tlen + 1);
	return 0;
}

/* Import `tar` as repo:tag with the image's CMD, and print the new image's ID. An exit code. */
static int import_and_print(struct mafsbx_engine *e, const void *tar, size_t tar_len, const char *repo,
			    const char *tag, bool egress_proxy)
{
	static const char *const changes[] = { "CMD [\"/bin/sleep\",\"infinity\"]", NULL };
	static const char *const proxy_changes[] = { "CMD [\"" MAFSBX_ROOTFS_PROXY_IN_IMAGE "\"]", "EXPOSE 3128",
						     NULL };
	struct mafsbx_error err;
	json_t *inspect = NULL;
	int rc = MAFSBX_EXIT_FAILURE;
	if (mafsbx_image_import(e, tar, tar_len, repo, tag, egress_proxy ? proxy_changes : changes, &err) < 0) {
		cli_error("importing %s:%s: %s", repo, tag, err.message);
		return rc;
	}
	char full[512];
	snprintf(full, sizeof(full), "%s:%s", repo, tag);
	if (mafsbx_image_inspect(e, full, &inspect, &err) < 0) {
		cli_error("imported, but inspecting %s failed: %s", full, err.message);
		return rc;
	}
	const char *id = json_string_value(json_object_get(inspect, "Id"));
	if (!id) {
		cli_error("imported, but the engine reports no Id for %s", full);
	} else {
		printf("%s\n", id);
		if (fflush(stdout) != 0)
			cli_error("cannot write to standard output");
		else
			rc = MAFSBX_EXIT_OK;
	}
	json_decref(inspect);
	return rc;
}

int cmd_mkimage(int argc, char **argv)
{
	const char *ref = NULL, *busybox = NULL, *proxy = NULL;
	bool egress_proxy = false;
	struct cli_engine_args ea = { NULL, NULL };
	const struct cli_opt opts[] = {
		{ "tag", 't', CLI_STRING, &ref, 0, NULL },
		{ "busybox", 0, CLI_STRING, &busybox, 0, NULL },
		{ "egress-proxy", 0, CLI_FLAG, &egress_proxy, 0, NULL },
		{ "proxy-program", 0, CLI_STRING, &proxy, 0, NULL },
	};
	const struct cli_command cmd = { "mkimage", mkimage_usage, opts, MAFSBX_ARRAY_SIZE(opts), &ea };
	int rc = cli_parse(&cmd, argc, argv);
	if (rc == CLI_GO_ON)
		rc = cli_no_operands(&cmd, argc, argv);
	if (rc != CLI_GO_ON)
		return rc;
	if (proxy && !egress_proxy)
		return cli_usage_error("mkimage", "--proxy-program needs --egress-proxy");
	if (!ref)
		ref = egress_proxy ? DEFAULT_PROXY_TAG : DEFAULT_TAG;

	char repo[256], tag[160];
	if ((rc = split_reference(ref, repo, sizeof(repo), tag, sizeof(tag))) != 0)
		return rc;
	struct mafsbx_endpoint ep;
	if ((rc = cli_resolve(ea.host, ea.context, &ep)) != MAFSBX_EXIT_OK)
		return rc;

	/* Build before connecting: a missing or dynamic busybox is reported without touching the engine. */
	struct mafsbx_error err;
	void *tar = NULL;
	size_t tar_len = 0, applets = 0;
	char beside[PATH_MAX];
	if (egress_proxy && !proxy)
		proxy = default_proxy(beside, sizeof(beside));
	if ((egress_proxy ? mafsbx_rootfs_build_proxy(busybox, proxy, &tar, &tar_len, &err)
			  : mafsbx_rootfs_build(busybox, &tar, &tar_len, &applets, &err)) < 0) {
		cli_error("%s", err.message);
		free(tar);
		return MAFSBX_EXIT_FAILURE;
	}
	struct mafsbx_engine *e = cli_connect(&ep, &rc);
	if (e) {
		rc = import_and_print(e, tar, tar_len, repo, tag, egress_proxy);
		mafsbx_engine_close(e);
	}
	free(tar);
	return rc;
}
