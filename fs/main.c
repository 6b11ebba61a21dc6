/*
 * main.c: the mafsbxfs daemon. Thin on purpose: parse the options, bind the
 * endpoint and ping the engine BEFORE mounting (a failure exits non-zero
 * with "mafsbxfs: message" and mounts nothing), mount with fsname/subtype
 * mafsbxfs, start the background recovery of freezes left behind
 * (janitor.c), and run the multi-threaded loop until SIGTERM/SIGINT/SIGHUP
 * or `fusermount3 -u`.
 *
 * Unless -f, the process forks FIRST, right after the command line, while it
 * has one thread (daemon.c): the library starts threads (the transfer
 * watchdog, the burst timer, the janitor) that a later fork would lose. The
 * caller still sees every start-up error on its terminal with its exit
 * status: the parent waits until the daemon is mounted and serving, or has
 * failed. Logging goes to syslog from then on.
 *
 * The end is bounded: from the moment the session ends (an unmount, a
 * signal) every engine call, in flight or new, ends within
 * MFS_TEARDOWN_MS (engine.h, mafsbx_engine_end_by), so a stalled engine
 * cannot hold a FUSE worker, an exec stream or the teardown for longer.
 *
 * Exit status: 0 after a clean unmount, 1 when the engine or the mount
 * failed, 2 for a usage error.
 */
#include "execs.h"
#include "janitor.h"
#include "jobs.h"
#include "daemon.h"
#include "mfs.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "egress.h"
#include "engine.h"
#include "calib.h"
#include "freeze.h"
#include "job.h"
#include "log.h"
#include "sandbox.h"

#define PROG "mafsbxfs"
/* How long engine calls may go on once the session ended. */
#define MFS_TEARDOWN_MS 10000

/*
 * The end watch: a thread that notices the session's end (libfuse's loop
 * only returns once every worker finished its request, and a worker may be
 * waiting on a stalled engine) and sets the engine's end deadline.
 */
struct end_watch {
	struct fuse_session *se;
	struct mafsbx_engine *engine;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	bool started;
	pthread_t thread;
};

static void end_engine_calls(struct mafsbx_engine *engine)
{
	mafsbx_engine_end_by(engine, mafsbx_now_ms() + MFS_TEARDOWN_MS);
}

static void *end_watch_main(void *arg)
{
	struct end_watch *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->stop && !fuse_session_exited(w->se)) {
		struct timespec until = mafsbx_monotonic_after_ms(200);
		pthread_cond_timedwait(&w->cv, &w->mu, &until);
	}
	pthread_mutex_unlock(&w->mu);
	if (fuse_session_exited(w->se)) {
		log_info("the session ended: engine calls end within %d s", MFS_TEARDOWN_MS / 1000);
		end_engine_calls(w->engine);
	}
	return NULL;
}

static void end_watch_start(struct end_watch *w, struct fuse_session *se, struct mafsbx_engine *engine)
{
	w->se = se;
	w->engine = engine;
	w->stop = false;
	pthread_mutex_init(&w->mu, NULL);
	mafsbx_cond_init_monotonic(&w->cv);
	w->started = pthread_create(&w->thread, NULL, end_watch_main, w) == 0;
	if (!w->started)
		log_warn("cannot start the end watch; a stalled engine may delay the end of the mount");
}

static void end_watch_stop(struct end_watch *w)
{
	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	w->started = false;
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
}

static int usage_error(const char *msg)
{
	log_error("%s", msg);
	fputs("Try '" PROG " --help' for more information.\n", stderr);
	return 2;
}

/* Append "-oNAME=VALUE" for libfuse. */
static int add_opt(struct fuse_args *args, const char *name, const char *value)
{
	char buf[1200];
	snprintf(buf, sizeof(buf), "-o%s=%s", name, value);
	return fuse_opt_add_arg(args, buf);
}

/* Our options, then libfuse's command line. -1 to go on, else the exit status. */
static int parse_command_line(struct fuse_args *args, struct mfs *fs, struct fuse_cmdline_opts *copts)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	if (mfs_options_parse(args, &fs->opt, &err) < 0)
		return usage_error(err.message);
	if (fs->opt.show_help) {
		/* ours and the libfuse options that apply, with our defaults (libfuse's
		 * own help would contradict them: max_threads, caching options) */
		mfs_options_usage(stdout, PROG);
		return 0;
	}
	if (fs->opt.show_version) {
		printf(PROG " %s\nFUSE library version %s\n", MAFSBX_VERSION, fuse_pkgversion());
		return 0;
	}
	if (fuse_parse_cmdline(args, copts) != 0)
		return usage_error("bad FUSE options");
	if (!copts->mountpoint)
		return usage_error("no mount point given");
	if (fs->opt.loglevel_given)
		mafsbx_log_set_level((enum mafsbx_log_level)fs->opt.loglevel);
	else if (copts->debug)
		mafsbx_log_set_level(MAFSBX_LOG_DEBUG);
	if (!fs->opt.max_threads_given)
		copts->max_threads = MFS_DEFAULT_MAX_THREADS;
	fs->opt.max_threads = copts->max_threads;
	return -1;
}

/* The options we hand libfuse. 0, or -1 out of memory. */
static int add_fuse_opts(struct fuse_args *args, const struct mfs_options *o)
{
	/* Attribute and entry timeouts are ours (lowlevel.c answers with them). */
	if ((!o->fsname_given && add_opt(args, "fsname", PROG)) || (!o->subtype_given && add_opt(args, "subtype", PROG)) ||
	    /* Other users reach the mount only through the modes it shows. */
	    (o->allow_other && !o->default_permissions_given && fuse_opt_add_arg(args, "-odefault_permissions"))) {
		log_error("out of memory");
		return -1;
	}
	return 0;
}

/* Bind the endpoint, open and ping the engine, make the freezer. 0, or -1 with the message printed. */
static int open_engine(struct mfs *fs, struct mafsbx_error *err)
{
	/* Bind the endpoint once; later environment changes cannot move us. */
	struct mafsbx_endpoint_options eo = { .host = fs->opt.host, .context = fs->opt.context };
	if (mafsbx_endpoint_resolve(&eo, NULL, NULL, &fs->ep, err) < 0)
		goto fail;
	if (fs->opt.plane == MAFSBX_PLANE_LOCAL && fs->ep.scheme != MAFSBX_EP_UNIX) {
		log_error("-o plane=local: the engine at %s is not reached through a unix socket on this "
			  "host; use plane=auto or plane=engine", fs->ep.url);
		return -1;
	}
	struct mafsbx_engine_timeouts to = { .pull_ms = fs->opt.pull_timeout * 1000 };
	fs->engine = mafsbx_engine_open(&fs->ep, &to, err);
	if (!fs->engine)
		goto fail;
	if (mafsbx_engine_ping(fs->engine, err) < 0) {
		log_error("cannot reach the Docker engine at %s: %s", fs->ep.url, err->message);
		return -1;
	}
	mafsbx_calib_enable(); /* this mount's freezers, and its cluster's node freezers made later */
	fs->fz = mafsbx_freezer_new(fs->engine, NULL, err);
	if (fs->fz)
		return 0;
fail:
	log_error("%s", err->message);
	return -1;
}

/* The sandbox backend and the planes over the open engine. 0, or -1 with the message printed. */
static int open_backend(struct mfs *fs, struct mafsbx_error *err)
{
	struct mafsbx_sandbox_config sc;
	mafsbx_sandbox_config_defaults(&sc);
	sc.default_image = fs->opt.image;
	sc.pids_limit = fs->opt.pids_limit;
	sc.cap_drop_all = fs->opt.cap_drop_all;
	sc.memory_bytes = fs->opt.memory;
	sc.cpus = fs->opt.cpus;
	/* allowlist egress: the configured proxy image, else ours when `mafsbx mkimage --egress-proxy` built it */
	json_t *pimg = NULL;
	struct mafsbx_error perr;
	if (!fs->opt.egress_proxy_image &&
	    mafsbx_image_inspect(fs->engine, MAFSBX_DEFAULT_PROXY_IMAGE, &pimg, &perr) == 0 &&
	    !(fs->opt.egress_proxy_image = strdup(MAFSBX_DEFAULT_PROXY_IMAGE))) {
		/* not a mount without allowlist egress that says nothing: refuse to start */
		json_decref(pimg);
		mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		goto fail;
	}
	json_decref(pimg);
	sc.egress_proxy_image = fs->opt.egress_proxy_image;
	sc.egress_outbound_network = fs->opt.egress_outbound_network;
	sc.exec_timeout_s = fs->opt.exec_timeout;
	sc.exec_timeout_max_s = fs->opt.max_exec_timeout ? fs->opt.max_exec_timeout : MAFSBX_EXEC_TIMEOUT_NO_CEILING;
	sc.pull_timeout_ms = fs->opt.pull_timeout * 1000;
	sc.max_read_bytes = fs->opt.max_read;
	sc.max_write_bytes = fs->opt.max_write;
	fs->backend = mafsbx_backend_new(fs->engine, fs->fz, &sc, err);
	if (!fs->backend || mfs_cluster_open(fs, err) < 0)
		goto fail;
	struct mafsbx_plane_config pc = {
		.mode = fs->opt.plane,
		.endpoint_local = fs->ep.scheme == MAFSBX_EP_UNIX,
		.frozen_reads = fs->opt.frozen_reads,
		.burst_ms = fs->opt.burst_ms,
		.listing = (enum mafsbx_plane_listing)fs->opt.listing,
		.local_max_read = fs->opt.max_read_given ? fs->opt.max_read : 0,
		.caller_uid = mfs_work_caller_uid,   /* spools are charged to the user who opens them */
		.spool_budget = fs->opt.spool_budget,   /* 0: the plane's default */
	};
	fs->planes = mafsbx_planes_new(fs->engine, fs->fz, fs->backend, &pc, err);
	if (!fs->planes)
		goto fail;
	if (fs->opt.plane == MAFSBX_PLANE_LOCAL &&
	    mafsbx_planes_check_local(fs->planes, pc.endpoint_local ? fs->ep.socket_path : NULL, err) < 0)
		goto fail;
	return 0;
fail:
	log_error("%s", err->message);
	return -1;
}

/* The loop until a signal or an unmount: 0 for a clean stop, 1 otherwise. */
static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *copts)
{
	int lr;
	if (copts->singlethread) {
		lr = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *lcfg = fuse_loop_cfg_create();
		if (!lcfg) {
			log_error("out of memory");
			return 1;
		}
		fuse_loop_cfg_set_clone_fd(lcfg, (unsigned)copts->clone_fd);
		if (copts->max_idle_threads != UINT_MAX)  /* UINT_MAX: not given */
			fuse_loop_cfg_set_idle_threads(lcfg, copts->max_idle_threads);
		fuse_loop_cfg_set_max_threads(lcfg, copts->max_threads);
		lr = fuse_session_loop_mt(se, lcfg);
		fuse_loop_cfg_destroy(lcfg);
	}
	/* libfuse reports the signal that ended the loop; that is a clean stop. */
	return (lr == 0 || lr == SIGTERM || lr == SIGINT || lr == SIGHUP) ? 0 : 1;
}

/* One run of the daemon: what main() sets up and takes down. */
struct run {
	struct fuse_args args;
	struct fuse_cmdline_opts copts;
	struct mfs fs;
	struct fuse_session *se;
	bool mounted, inited, lowlevel;
	int ready_fd;
};

/* The engine, the backend, the FUSE session and its mount, the signals:
 * 0 when serving may start, else the exit status. */
static int start(struct run *rn, struct mafsbx_error *err)
{
	struct mfs *fs = &rn->fs;
	if (add_fuse_opts(&rn->args, &fs->opt) < 0 || open_engine(fs, err) < 0 || open_backend(fs, err) < 0)
		return 1;
	/* The kernel applied the caller's umask to every mode it sends us;
	 * ours must not apply a second one to what we create in a guest. */
	umask(0);
	fs->run = mfs_run_request;
	if (mfs_init(fs) < 0) {
		log_error("out of memory");
		return 1;
	}
	rn->inited = true;
	/* jobs an earlier daemon left are there before the first request */
	if (mfs_jobs_open(fs) == 0)
		mfs_jobs_adopt(fs, mfs_exec_adopt);
	if (mfs_lowlevel_start(fs) < 0) {
		log_error("out of memory");
		return 1;
	}
	rn->lowlevel = true;

	rn->se = fuse_session_new(&rn->args, &mfs_lowlevel_ops, sizeof(mfs_lowlevel_ops), fs);
	if (!rn->se)
		return usage_error("bad mount options");
	fs->se = rn->se;

	if (fuse_session_mount(rn->se, rn->copts.mountpoint) != 0) {
		log_error("cannot mount on %s", rn->copts.mountpoint);
		return 1;
	}
	rn->mounted = true;
	/* SIGINT and SIGTERM always unmount (mafsbxfs(1) EXIT STATUS), even when the
	 * parent ignored them, as a shell does for a background job; libfuse
	 * only takes over signals left at their default. SIGHUP keeps what
	 * the parent chose (nohup). */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(rn->se) != 0) {
		log_error("cannot install signal handlers");
		return 1;
	}
	return 0;
}

/* Serve until unmounted or signalled; the session's end, bounded. The exit
 * status of the loop. Does not return when transactions outlived the grace. */
static int serve(struct run *rn, struct mafsbx_error *err)
{
	struct mfs *fs = &rn->fs;
	if (mfs_janitor_start(fs) < 0)
		log_warn("cannot start the freeze recovery thread; freezes left behind stay until the next start");
	/* Serving: the caller may go on (the parent exits 0); stderr is syslog from here. */
	mfs_daemon_ready(rn->ready_fd);
	rn->ready_fd = -1;
	/* The same moment for systemd (the unit runs -f, Type=notify): units
	 * ordered after ours start only once the mount is there. A request made
	 * now waits in the kernel for the loop below, never on an empty dir. */
	if (mfs_daemon_notify("READY=1", err) < 0)
		log_warn("%s", err->message);
	log_info("mounted %s on %s (engine %s)", PROG, rn->copts.mountpoint, fs->ep.url);
	struct end_watch ew;
	end_watch_start(&ew, rn->se, fs->engine);
	int ret = run_loop(rn->se, &rn->copts);
	/* The loop ended without the watch seeing it (it had not yet looked):
	 * the deadline starts now. An earlier one stays. */
	end_engine_calls(fs->engine);
	end_watch_stop(&ew);
	/* The unmount and the release of freezes may take a while: systemd
	 * should not take it for a hang of a running service. */
	mafsbx_error_clear(err);
	if (mfs_daemon_notify("STOPPING=1", err) < 0)
		log_warn("%s", err->message);
	fuse_remove_signal_handlers(rn->se);
	/* Transactions answer through the session: they end before it does. */
	if (!mfs_lowlevel_stop(fs)) {
		/* Some outlived the grace: their threads still use the session and
		 * the engine, so nothing is freed under them; the exit ends them. */
		mfs_janitor_stop(fs);
		fuse_session_unmount(rn->se);
		fflush(NULL);
		_exit(ret);
	}
	mfs_janitor_stop(fs);
	return ret;
}

/* Everything start() made, in reverse. */
static void finish(struct run *rn)
{
	struct mfs *fs = &rn->fs;
	if (rn->mounted)
		fuse_session_unmount(rn->se);
	if (rn->se)
		fuse_session_destroy(rn->se);
	if (rn->lowlevel) {
		mfs_lowlevel_stop(fs);
		mfs_lowlevel_free(fs);
	}
	if (rn->inited) {
		mfs_fini(fs);
		mfs_jobs_close(fs);
	}
	mafsbx_planes_free(fs->planes);
	mafsbx_backend_free(fs->backend);
	mfs_cluster_close(fs);
	if (fs->fz)
		mafsbx_freezer_free(fs->fz);
	if (fs->engine)
		mafsbx_engine_close(fs->engine);
	mfs_options_free(&fs->opt);
	free(rn->copts.mountpoint);
	fuse_opt_free_args(&rn->args);
}

int main(int argc, char *argv[])
{
	struct run rn;
	struct mafsbx_error err;

	/* a job monitor (fs/jobs.c): this binary started by a daemon, FUSE-free */
	if (argc == 3 && strcmp(argv[1], MFS_JOB_MONITOR_VERB) == 0)
		return mafsbx_job_monitor_main(argv[2], 3);
	memset(&rn, 0, sizeof(rn));
	rn.args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	rn.ready_fd = -1;
	mafsbx_error_clear(&err);
	mafsbx_log_init(PROG, MAFSBX_LOG_WARN);
	mfs_memory_init();

	int ret = parse_command_line(&rn.args, &rn.fs, &rn.copts);
	if (ret < 0) {
		/* A busy mount holds a descriptor per open file and per engine
		 * connection: use all the administrator allows (LimitNOFILE=). */
		if (mfs_daemon_raise_nofile(&err) < 0) {
			log_warn("%s; the open-file limit stays as it was", err.message);
			mafsbx_error_clear(&err);
		}
		/* Nothing may start a thread before this (daemon.c checks). */
		if (!rn.copts.foreground && mfs_daemon_fork(&rn.ready_fd) < 0)
			ret = 1;
		else
			ret = start(&rn, &err);
		if (ret == 0)
			ret = serve(&rn, &err);
	}
	finish(&rn);
	return ret;
}
