/*
 * opts.c: the mafsbxfs command line (mafsbxfs(1) OPTIONS).
 *
 * Our options are parsed out of the argument list with fuse_opt; what
 * libfuse understands (-f, -d, -s, -o allow_other, max_threads, ...) stays in
 * the list for fuse_parse_cmdline() and fuse_session_new(). Every value is
 * checked here, before any engine call or mount, so a bad one is a one-line
 * usage error. attr_timeout and entry_timeout are ours: fs/lowlevel.c
 * answers every lookup with them (a ctl file's with 0).
 *
 * The arguments that are not options are the mount point, optionally
 * preceded by a source: mount.fuse3 runs `mafsbxfs SOURCE MOUNTPOINT -o ...`
 * for the fstab type fuse.mafsbxfs (the sshfs convention). The source means
 * nothing to us and is ignored, but it must be a plain word (mafsbxfs,
 * none): a path there is more likely a mistyped second mount point.
 */
#include "opts.h"

#include <errno.h>
#include <fuse_opt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "burst.h"
#include "log.h"

/* The raw text of each option, as fuse_opt stores it (malloc'd strings). */
struct raw_opts {
	char *host, *context, *image, *scope;
	char *attr_timeout, *max_read, *max_write, *exec_timeout, *max_exec_timeout, *pids_limit;
	char *memory, *cpus, *egress_proxy_image, *egress_outbound_network;
	char *plane, *uid, *gid, *umask, *burst_ms, *listing, *entry_timeout, *max_requests, *max_open_per_user,
		*max_calls_per_user;
	char *pull_timeout, *loglevel, *reply_budget, *spool_budget;
	char *cluster, *placement;
	int cap_drop_all, frozen_reads;
	int allow_other_seen, default_permissions_seen, dev_seen, suid_seen;
	int max_threads_seen, fsname_seen, subtype_seen;
	int help, version;
	char *nonopt[2];             /* [SOURCE] MOUNTPOINT, as given */
	int nonopts;                 /* how many were given (more than 2 is refused) */
	char *extra;                 /* the first argument beyond those two */
};

enum {
	KEY_HELP = 1, KEY_VERSION, KEY_MAX_THREADS, KEY_FSNAME, KEY_SUBTYPE,
	KEY_ALLOW_OTHER, KEY_DEFAULT_PERMISSIONS, KEY_DEV, KEY_SUID,
};

#define RAW(t, f) { t, offsetof(struct raw_opts, f), 1 }

static const struct fuse_opt raw_spec[] = {
	RAW("host=%s", host),
	RAW("-H %s", host),
	RAW("--host=%s", host),
	RAW("context=%s", context),
	RAW("--context=%s", context),
	RAW("--context %s", context),
	RAW("image=%s", image),
	RAW("scope=%s", scope),
	RAW("attr_timeout=%s", attr_timeout),
	RAW("entry_timeout=%s", entry_timeout),
	RAW("max_requests=%s", max_requests),
	RAW("max_open_per_user=%s", max_open_per_user),
	RAW("max_calls_per_user=%s", max_calls_per_user),
	RAW("max_read=%s", max_read),
	RAW("max_write=%s", max_write),
	RAW("exec_timeout=%s", exec_timeout),
	RAW("max_exec_timeout=%s", max_exec_timeout),
	RAW("pull_timeout=%s", pull_timeout),
	RAW("loglevel=%s", loglevel),
	RAW("reply_budget=%s", reply_budget),
	RAW("spool_budget=%s", spool_budget),
	RAW("pids_limit=%s", pids_limit),
	RAW("cap_drop_all", cap_drop_all),
	RAW("memory=%s", memory),
	RAW("cpus=%s", cpus),
	RAW("egress_proxy_image=%s", egress_proxy_image),
	RAW("plane=%s", plane),
	RAW("frozen_reads", frozen_reads),
	RAW("burst_ms=%s", burst_ms),
	RAW("listing=%s", listing),
	RAW("uid=%s", uid),
	RAW("gid=%s", gid),
	RAW("umask=%s", umask),
	RAW("egress_outbound_network=%s", egress_outbound_network),
	RAW("cluster=%s", cluster),
	RAW("placement=%s", placement),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	/* seen, and left for libfuse */
	FUSE_OPT_KEY("max_threads=", KEY_MAX_THREADS),
	FUSE_OPT_KEY("fsname=", KEY_FSNAME),
	FUSE_OPT_KEY("subtype=", KEY_SUBTYPE),
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	FUSE_OPT_KEY("default_permissions", KEY_DEFAULT_PERMISSIONS),
	FUSE_OPT_KEY("dev", KEY_DEV),
	FUSE_OPT_KEY("suid", KEY_SUID),
	FUSE_OPT_END,
};

static int raw_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct raw_opts *r = data;
	(void)outargs;
	switch (key) {
	case KEY_HELP:
		r->help = 1;
		return 0;
	case KEY_VERSION:
		r->version = 1;
		return 0;
	case KEY_MAX_THREADS:
		r->max_threads_seen = 1;
		return 1;
	case KEY_FSNAME:
		r->fsname_seen = 1;
		return 1;
	case KEY_SUBTYPE:
		r->subtype_seen = 1;
		return 1;
	case KEY_ALLOW_OTHER:
		r->allow_other_seen = 1;
		return 1;
	case KEY_DEFAULT_PERMISSIONS:
		r->default_permissions_seen = 1;
		return 1;
	case KEY_DEV:
		r->dev_seen = 1;
		return 0;
	case KEY_SUID:
		r->suid_seen = 1;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		/* Kept out of libfuse's list until we know which is the mount point. */
		if (r->nonopts < 2) {
			if (!(r->nonopt[r->nonopts] = strdup(arg)))
				return -1;
		} else if (!r->extra && !(r->extra = strdup(arg))) {
			return -1;
		}
		r->nonopts++;
		return 0;
	default:
		(void)arg;
		return 1;
	}
}

/* A source mount.fuse3 may pass: letters, digits, '.', '_', '-', not first '-'. */
static bool plain_word(const char *s)
{
	if (!*s || *s == '-' || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

/* Put the mount point back for fuse_parse_cmdline(), the source checked and dropped. */
static int take_mountpoint(struct raw_opts *r, struct fuse_args *args, struct mfs_options *o,
			   struct mafsbx_error *err)
{
	if (r->nonopts > 2)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"too many arguments: '%s' after the mount point '%s' (one mount point, "
					"optionally after a source such as 'mafsbxfs')", r->extra, r->nonopt[1]);
	if (r->nonopts == 0)
		return 0;  /* main() says "no mount point given" unless --help or --version */
	const char *mnt = r->nonopt[r->nonopts - 1];
	if (r->nonopts == 2) {
		if (!plain_word(r->nonopt[0]))
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"two arguments '%s' and '%s': the first would be the source, which "
						"must be a plain word such as 'mafsbxfs' or 'none' (one mount point only)",
						r->nonopt[0], mnt);
		o->source = r->nonopt[0];
		r->nonopt[0] = NULL;
	}
	if (fuse_opt_add_arg(args, mnt) != 0)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	return 0;
}

static void raw_free(struct raw_opts *r)
{
	char **all[] = { &r->host, &r->context, &r->image, &r->scope, &r->attr_timeout, &r->max_read,
			 &r->max_write, &r->exec_timeout, &r->max_exec_timeout, &r->pids_limit, &r->memory, &r->cpus,
			 &r->egress_proxy_image, &r->egress_outbound_network, &r->plane, &r->uid, &r->gid, &r->umask,
			 &r->nonopt[0], &r->nonopt[1], &r->extra,
			 &r->burst_ms, &r->entry_timeout, &r->max_requests, &r->max_open_per_user, &r->pull_timeout,
			 &r->loglevel, &r->max_calls_per_user, &r->listing, &r->reply_budget, &r->spool_budget, &r->cluster,
			 &r->placement };
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(all); i++) {
		free(*all[i]);
		*all[i] = NULL;
	}
}

int mfs_parse_bytes(const char *text, uint64_t *out)
{
	if (!text || !*text)
		return -EINVAL;
	const char *p = text;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno == ERANGE)
		return -EINVAL;
	uint64_t mul = 1;
	if (*end) {
		char u = *end++;
		switch (u) {
		case 'b': case 'B': mul = 1; break;
		case 'k': case 'K': mul = 1024ull; break;
		case 'm': case 'M': mul = 1024ull * 1024; break;
		case 'g': case 'G': mul = 1024ull * 1024 * 1024; break;
		case 't': case 'T': mul = 1024ull * 1024 * 1024 * 1024; break;
		default: return -EINVAL;
		}
		/* "64M", "64MB", "64MiB" all mean mebibytes, as the Docker CLI reads "64m". */
		if (mul > 1) {
			if (*end == 'i' || *end == 'I')
				end++;
			if (*end == 'b' || *end == 'B')
				end++;
		}
		if (*end)
			return -EINVAL;
	}
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*out = (uint64_t)v * mul;
	return 0;
}

static int parse_long(const char *text, long min, long max, long *out)
{
	if (!text || !*text)
		return -EINVAL;
	errno = 0;
	char *end;
	long v = strtol(text, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_real(const char *text, double min, double max, double *out)
{
	if (!text || !*text)
		return -EINVAL;
	errno = 0;
	char *end;
	double v = strtod(text, &end);
	if (errno || *end || !isfinite(v) || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static char *take(char **p)
{
	char *v = *p;
	*p = NULL;
	return v;
}

/* -o attr_timeout, max_read, max_write, exec_timeout, max_exec_timeout, pids_limit, memory, cpus. 0 or -EINVAL. */
static int parse_limits(const struct raw_opts *r, struct mfs_options *o, struct mafsbx_error *err)
{
	if (r->attr_timeout) {
		if (parse_real(r->attr_timeout, 0, 86400, &o->attr_timeout) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"-o attr_timeout=%s: expected seconds between 0 and 86400",
						r->attr_timeout);
		o->attr_timeout_given = true;
	}
	o->entry_timeout = o->attr_timeout;
	if (r->entry_timeout) {
		if (parse_real(r->entry_timeout, 0, 86400, &o->entry_timeout) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"-o entry_timeout=%s: expected seconds between 0 and 86400",
						r->entry_timeout);
		o->entry_timeout_given = true;
	}
	if (r->max_requests) {
		long v;
		if (parse_long(r->max_requests, 1, MFS_MAX_REQUESTS_CEILING, &v) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"-o max_requests=%s: expected a whole number from 1 to %d",
						r->max_requests, MFS_MAX_REQUESTS_CEILING);
		o->max_requests = (unsigned)v;
	}
	if (r->max_open_per_user) {
		long v;
		if (parse_long(r->max_open_per_user, 1, MFS_OPEN_PER_USER_CEILING, &v) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"-o max_open_per_user=%s: expected a whole number from 1 to %d",
						r->max_open_per_user, MFS_OPEN_PER_USER_CEILING);
		o->max_open_per_user = (unsigned)v;
	}
	if (r->max_calls_per_user) {
		long v;
		if (parse_long(r->max_calls_per_user, 1, MFS_CALLS_PER_USER_CEILING, &v) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"-o max_calls_per_user=%s: expected a whole number from 1 to %d",
						r->max_calls_per_user, MFS_CALLS_PER_USER_CEILING);
		o->max_calls_per_user = (unsigned)v;
	}
	if (r->max_read && (mfs_parse_bytes(r->max_read, &o->max_read) < 0 || o->max_read == 0 ||
			    o->max_read > (1ull << 40)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"-o max_read=%s: expected a byte count from 1 to 1T (suffix K, M, G allowed)",
					r->max_read);
	if (r->max_write && (mfs_parse_bytes(r->max_write, &o->max_write) < 0 || o->max_write == 0 ||
			     o->max_write > (1ull << 40)))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"-o max_write=%s: expected a byte count from 1 to 1T (suffix K, M, G allowed)",
					r->max_write);
	if (r->exec_timeout && parse_long(r->exec_timeout, 1, 7 * 86400, &o->exec_timeout) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"-o exec_timeout=%s: expected whole seconds from 1 to 604800", r->exec_timeout);
	if (r->max_exec_timeout &&
	    parse_long(r->max_exec_timeout, 0, MFS_MAX_EXEC_TIMEOUT_CEILING, &o->max_exec_timeout) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"-o max_exec_timeout=%s: expected whole seconds from 0 (no ceiling) to %d",
					r->max_exec_timeout, MFS_MAX_EXEC_TIMEOUT_CEILING);
	/* the default a request gets must be one it could ask for */
	if (o->max_exec_timeout && o->exec_timeout > o->max_exec_timeout)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"-o exec_timeout=%ld is over -o max_exec_timeout=%ld: the default timeout "
					"cannot pass the ceiling (raise max_exec_timeout, or 0 for none)",
					o->exec_timeout, o->max_exec_timeout);
	if (r->pull_timeout && parse_long(r->pull_timeout, 1, 7 * 86400, &o->pull_timeout) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID,
					"-o pull_timeout=%s: expected whole seconds from 1 to 604800", r->pull_timeout);
	if (r->pids_limit && parse_long(r->pids_limit, 1, INT32_MAX, &o->pids_limit) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o pids_limit=%s: expected a positive integer",
					r->pids_limit);
	if (r->memory) {
		uint64_t m;
		/* The engine refuses less than 6 MiB. */
		if (mfs_parse_bytes(r->memory, &m) < 0 || m < 6 * MFS_MIB || m > (uint64_t)INT64_MAX)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"-o memory=%s: expected a byte count of at least 6M "
						"(suffix K, M, G allowed)", r->memory);
		o->memory = (int64_t)m;
	}
	if (r->cpus && (parse_real(r->cpus, 0.01, 1024, &o->cpus) < 0))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o cpus=%s: expected a number from 0.01 to 1024",
					r->cpus);
	long b;
	if (r->burst_ms && parse_long(r->burst_ms, 0, MAFSBX_BURST_LINGER_MAX_MS, &b) < 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o burst_ms=%s: expected milliseconds from 0 to %d",
					r->burst_ms, MAFSBX_BURST_LINGER_MAX_MS);
	if (r->burst_ms)
		o->burst_ms = b == 0 ? -1 : (int)b;
	if (r->listing && strcmp(r->listing, "auto") == 0)
		o->listing = MAFSBX_LISTING_AUTO;
	else if (r->listing && strcmp(r->listing, "exec") == 0)
		o->listing = MAFSBX_LISTING_EXEC;
	else if (r->listing)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o listing=%s: expected auto or exec", r->listing);
	return 0;
}

/* -o reply_budget, spool_budget: byte counts from 1M to 1T. 0 or -EINVAL. */
static int parse_budgets(const struct raw_opts *r, struct mfs_options *o, struct mafsbx_error *err)
{
	const struct {
		const char *name, *text;
		uint64_t *out;
	} b[] = { { "reply_budget", r->reply_budget, &o->reply_budget },
		  { "spool_budget", r->spool_budget, &o->spool_budget } };
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(b); i++) {
		uint64_t v;
		if (!b[i].text)
			continue;
		if (mfs_parse_bytes(b[i].text, &v) < 0 || v < MFS_MIB || v > (1ull << 40))
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"-o %s=%s: expected a byte count from 1M to 1T (suffix K, M, G allowed)",
						b[i].name, b[i].text);
		*b[i].out = v;
	}
	return 0;
}

/* -o loglevel=error|warning|info|debug. 0 or -EINVAL. */
static int parse_loglevel(const struct raw_opts *r, struct mfs_options *o, struct mafsbx_error *err)
{
	static const char *const names[] = { [MAFSBX_LOG_ERROR] = "error", [MAFSBX_LOG_WARN] = "warning",
					     [MAFSBX_LOG_INFO] = "info", [MAFSBX_LOG_DEBUG] = "debug" };
	o->loglevel = MAFSBX_LOG_WARN;
	if (!r->loglevel)
		return 0;
	for (size_t i = 0; i < MAFSBX_ARRAY_SIZE(names); i++) {
		if (strcmp(r->loglevel, names[i]) == 0) {
			o->loglevel = (int)i;
			o->loglevel_given = true;
			return 0;
		}
	}
	return mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o loglevel=%s: expected error, warning, info or debug",
				r->loglevel);
}

/* -o uid, gid, umask: what sandbox files show (default: ours, 022). 0 or -EINVAL. */
static int parse_owner(const struct raw_opts *r, struct mfs_options *o, struct mafsbx_error *err)
{
	long v;
	o->uid = getuid();
	o->gid = getgid();
	o->umask = 022;
	if (r->uid) {
		if (parse_long(r->uid, 0, UINT32_MAX - 1, &v) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o uid=%s: expected a numeric user id",
						r->uid);
		o->uid = (uid_t)v;
	}
	if (r->gid) {
		if (parse_long(r->gid, 0, UINT32_MAX - 1, &v) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o gid=%s: expected a numeric group id",
						r->gid);
		o->gid = (gid_t)v;
	}
	if (r->umask) {
		char *end;
		errno = 0;
		unsigned long m = strtoul(r->umask, &end, 8);
		if (!*r->umask || *end || errno || m > 0777)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"-o umask=%s: expected an octal mask up to 0777", r->umask);
		o->umask = (mode_t)m;
	}
	return 0;
}

int mfs_options_parse(struct fuse_args *args, struct mfs_options *o, struct mafsbx_error *err)
{
	struct raw_opts r;
	int ret = 0;
	memset(&r, 0, sizeof(r));
	memset(o, 0, sizeof(*o));
	o->attr_timeout = 1.0;
	o->max_read = MFS_DEFAULT_MAX_READ;
	o->max_write = MFS_DEFAULT_MAX_WRITE;
	o->exec_timeout = MFS_DEFAULT_EXEC_TIMEOUT;
	o->max_exec_timeout = MFS_DEFAULT_MAX_EXEC_TIMEOUT;
	o->pull_timeout = MFS_DEFAULT_PULL_TIMEOUT;
	o->pids_limit = MFS_DEFAULT_PIDS_LIMIT;
	o->max_threads = MFS_DEFAULT_MAX_THREADS;
	o->max_requests = MFS_DEFAULT_MAX_REQUESTS;
	o->reply_budget = MFS_REPLY_BUDGET_DEFAULT;

	if (fuse_opt_parse(args, &r, raw_spec, raw_proc) != 0) {
		ret = mafsbx_error_set(err, MAFSBX_EK_INVALID, "cannot parse the options");
		goto out;
	}
	o->show_help = r.help;
	o->show_version = r.version;
	if ((ret = take_mountpoint(&r, args, o, err)) < 0)
		goto out;
	o->max_threads_given = r.max_threads_seen;
	o->fsname_given = r.fsname_seen;
	o->subtype_given = r.subtype_seen;
	o->cap_drop_all = r.cap_drop_all;

#define NONEMPTY(field, what)                                                                   \
	if (r.field && !*r.field) {                                                             \
		ret = mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s must not be empty", what);   \
		goto out;                                                                       \
	}
	NONEMPTY(host, "-o host");
	NONEMPTY(context, "-o context");
	NONEMPTY(image, "-o image");
	NONEMPTY(scope, "-o scope");
#undef NONEMPTY
	if (r.host && r.context) {
		ret = mafsbx_error_set(err, MAFSBX_EK_INVALID,
				       "conflicting options: give -o host (-H) or -o context (--context), not both");
		goto out;
	}
	if ((ret = parse_limits(&r, o, err)) < 0 || (ret = parse_loglevel(&r, o, err)) < 0 ||
	    (ret = parse_budgets(&r, o, err)) < 0)
		goto out;
	/* A guest's device node or setuid file must never act on the host: dev
	 * and suid (which mount.fuse3 adds by itself for root) are dropped, and
	 * libfuse mounts nodev,nosuid. */
	if (r.dev_seen || r.suid_seen)
		fprintf(stderr, "mafsbxfs: -o dev/suid ignored: sandbox files are always nodev,nosuid\n");
	if (r.plane && mafsbx_plane_mode_parse(r.plane, &o->plane) < 0) {
		ret = mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o plane=%s: expected auto, local or engine", r.plane);
		goto out;
	}
	if (r.cluster && strcmp(r.cluster, "swarm") != 0) {
		ret = mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o cluster=%s: the only cluster is 'swarm'", r.cluster);
		goto out;
	}
	if (r.placement && !r.cluster) {
		ret = mafsbx_error_set(err, MAFSBX_EK_INVALID, "-o placement needs -o cluster=swarm");
		goto out;
	}
	o->cluster = r.cluster != NULL;
	o->placement = take(&r.placement);
	o->frozen_reads = r.frozen_reads;
	o->max_read_given = r.max_read != NULL;
	if ((ret = parse_owner(&r, o, err)) < 0)
		goto out;
	o->allow_other = r.allow_other_seen;
	o->default_permissions_given = r.default_permissions_seen;
	o->host = take(&r.host);
	o->context = take(&r.context);
	o->image = take(&r.image);
	o->scope = take(&r.scope);
	o->egress_proxy_image = take(&r.egress_proxy_image);
	if (o->egress_proxy_image && !*o->egress_proxy_image) {
		free(o->egress_proxy_image);
		o->egress_proxy_image = NULL;
	}
	o->egress_outbound_network = take(&r.egress_outbound_network);
out:
	raw_free(&r);
	if (ret < 0)
		mfs_options_free(o);
	return ret;
}

void mfs_options_free(struct mfs_options *o)
{
	free(o->host);
	free(o->context);
	free(o->image);
	free(o->scope);
	free(o->egress_proxy_image);
	free(o->egress_outbound_network);
	free(o->placement);
	o->placement = NULL;
	free(o->source);
	o->source = NULL;
	o->host = o->context = o->image = o->scope = o->egress_proxy_image = o->egress_outbound_network = NULL;
}
