/*
 * opts.h: the command line (opts.c): our -o options parsed out of libfuse's
 * arguments and validated, their defaults and bounds, --help.
 */
#ifndef MAFSBXFS_OPTS_H
#define MAFSBXFS_OPTS_H

#define FUSE_USE_VERSION 312

#include <fuse.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "plane.h"

struct mafsbx_error;

#define MFS_MIB (1024ull * 1024)
#define MFS_DEFAULT_MAX_READ (64 * MFS_MIB)
#define MFS_DEFAULT_MAX_WRITE (64 * MFS_MIB)
#define MFS_DEFAULT_EXEC_TIMEOUT 300
#define MFS_DEFAULT_MAX_EXEC_TIMEOUT 86400     /* -o max_exec_timeout: 24 h */
#define MFS_MAX_EXEC_TIMEOUT_CEILING 31536000  /* its largest value (a year); 0 is none */
#define MFS_DEFAULT_PULL_TIMEOUT 600
#define MFS_DEFAULT_PIDS_LIMIT 512
#define MFS_DEFAULT_MAX_THREADS 64u
/* Transactions are engine round trips and waits, not CPU: 32 in flight keep
 * a 2-core host's engine busy without letting callers pile up threads. */
#define MFS_DEFAULT_MAX_REQUESTS 32u
#define MFS_MAX_REQUESTS_CEILING 1024
/* Open files one user other than the daemon's may hold (-o max_open_per_user):
 * by default a quarter of the daemon's descriptors, within these bounds. */
#define MFS_OPEN_PER_USER_MIN 64u
#define MFS_OPEN_PER_USER_MAX 16384u
#define MFS_OPEN_PER_USER_CEILING 1048576
/* All users other than the daemon's together (the others' pool, mount.c):
 * half the open-file limit, at most this many. */
#define MFS_OPEN_OTHERS_MAX 65536u
/* Engine-plane file calls one user other than the daemon's may have waiting
 * at once (-o max_calls_per_user): by default a quarter of max_threads
 * (all such users together: half of it, mount.c). */
#define MFS_CALLS_PER_USER_CEILING 65536
#define MFS_CTL_MAX_REQUEST (1024 * 1024)
/* -o reply_budget's default: the bytes exec replies being built may hold at once (reply.c). */
#define MFS_REPLY_BUDGET_DEFAULT ((size_t)256 * 1024 * 1024)

struct mfs_options {
	char *source;                /* the ignored SOURCE before the mount point, or NULL */
	char *host;                  /* -o host= / -H */
	char *context;               /* -o context= / --context */
	char *image;                 /* -o image= */
	char *scope;                 /* -o scope= */
	double attr_timeout;         /* seconds */
	double entry_timeout;        /* seconds: -o entry_timeout, else attr_timeout */
	unsigned max_requests;       /* .ctl transactions running at once (txn.c) */
	unsigned max_open_per_user;  /* open files per user but the daemon's; 0: from RLIMIT_NOFILE at start */
	unsigned max_calls_per_user; /* engine-plane file calls per user but the daemon's; 0: max_threads / 4 */
	uint64_t reply_budget;       /* -o reply_budget: bytes; 0 (a mount not from the command line): the default */
	uint64_t spool_budget;       /* -o spool_budget: bytes; 0: the plane's default (1 GiB) */
	uint64_t max_read;
	uint64_t max_write;
	long exec_timeout;           /* seconds: an exec's timeout when it names none */
	long max_exec_timeout;       /* seconds: the ceiling of an exec's timeout; 0 = none */
	long pull_timeout;           /* seconds: an image pull of an acquire */
	int loglevel;                /* enum mafsbx_log_level: -o loglevel (default warning) */
	bool loglevel_given;
	long pids_limit;
	bool cap_drop_all;
	int64_t memory;              /* bytes, 0 = off */
	double cpus;                 /* 0 = off */
	char *egress_proxy_image;    /* NULL or "" = none (main.c: the default image when it exists) */
	char *egress_outbound_network; /* NULL = bridge */
	bool cluster;                /* -o cluster=swarm (main.c, src/cluster/) */
	char *placement;             /* -o placement: ';'-separated swarm constraints, or NULL */
	unsigned max_threads;        /* FUSE worker ceiling */
	enum mafsbx_plane_mode plane; /* -o plane= */
	bool frozen_reads;
	int burst_ms;                /* -o burst_ms: 0 the default, -1 none (burst.h) */
	int listing;                 /* -o listing: enum mafsbx_plane_listing (plane.h) */
	bool max_read_given;         /* the local plane caps reads only when asked */
	uid_t uid;                   /* owner shown for sandbox files */
	gid_t gid;
	mode_t umask;
	bool allow_other;
	bool default_permissions_given;
	bool max_threads_given;
	bool entry_timeout_given;
	bool attr_timeout_given;
	bool fsname_given;
	bool subtype_given;
	bool show_help;
	bool show_version;
};

/*
 * Parse our options out of `args` (what libfuse needs stays in `args`) and
 * validate every value. 0, or -EINVAL with a message naming the option.
 */
int mfs_options_parse(struct fuse_args *args, struct mfs_options *o, struct mafsbx_error *err);
void mfs_options_free(struct mfs_options *o);
void mfs_options_usage(FILE *out, const char *prog);

/* "64M", "1048576", "2GiB" -> bytes. 0 or -EINVAL. */
int mfs_parse_bytes(const char *text, uint64_t *out);

#endif
