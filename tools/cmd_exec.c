/*
 * cmd_exec.c: the shell verb `mafsbx exec` (mafsbx(1)), as `docker
 * exec`: the command line becomes the very JSON request .ctl/exec takes
 * (same spec.c rules), run through sandbox.h with the mount's defaults.
 *
 *  - The guest's stdout and stderr are streamed to ours as they arrive.
 *  - -i: our stdin is streamed to the guest as it arrives, both ways at
 *    once (a line typed or piped reaches the guest while its output comes
 *    back), closed at our end of file; without -i the guest's stdin is
 *    empty. Input is read only as the connection to the guest takes it (one
 *    64 KiB chunk held at most), so its amount is not bounded.
 *  - -d: the command starts in the background; its exec ID is printed and
 *    the verb returns, as `docker exec -d` (its output is not kept). A child
 *    process in its own session (forked while this process has one thread)
 *    runs it to its end, so the exec stays registered against freezes for
 *    its whole life, as every exec must be (freeze.h); the parent returns
 *    once the process runs (the engine gives it a PID) or has ended. A
 *    command the runtime cannot start is reported by the parent (126/127),
 *    as a foreground run would.
 *  - --timeout (default 300 s, ceiling 24 h, as a mount's defaults) ends the
 *    command, foreground or -d: its processes killed and the sandbox kept
 *    where the engine runs on this host (--on-timeout dispose: disposed, as
 *    upstream); elsewhere the sandbox is disposed.
 *
 * Exit status: the guest's; 124 on timeout (as timeout(1)); 125 when the
 * request itself failed (usage, a bad or absent sandbox, the engine; as
 * `docker run`); 126 when the runtime could not start the command, 127 when
 * it was not found. With -d: 0 once started, else as above.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "envfile.h"
#include "log.h"
#include "mafsbx.h"
#include "sandbox.h"
#include "spec.h"
#include "verbs.h"

#define EXEC_EXIT_TIMEOUT 124
#define EXEC_EXIT_FAILED 125
#define EXEC_EXIT_CANNOT_RUN 126
#define EXEC_EXIT_NOT_FOUND 127

enum { O_CONTEXT = 256, O_CWD, O_ENV, O_ENV_FILE, O_USER, O_INTERACTIVE, O_TTY, O_DETACH, O_TIMEOUT, O_ON_TIMEOUT };

static void exec_usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROGRAM " exec NAME [-w|--workdir DIR] [-e|--env K[=V]]... [--env-file FILE]...\n"
		"                   [-u|--user USER] [-i] [-d] [--timeout SECS]\n"
		"                   [--on-timeout kill|dispose] [-H URL | --context NAME]\n"
		"                   [--] ARGV...\n"
		"\n"
		"Run ARGV (no shell) in sandbox NAME, as a write to .ctl/exec does (same\n"
		"rules): the guest's stdout and stderr are streamed to this command's as\n"
		"they arrive. The flags mean what docker exec's mean.\n"
		"\n"
		"Options:\n"
		"  -w, --workdir, --cwd DIR\n"
		"                       working directory: relative to the sandbox's work dir\n"
		"                       (default), or absolute\n"
		"  -e, --env K=V        environment variable, repeatable; K alone: its value\n"
		"                       here, none when K is unset here (as docker)\n"
		"      --env-file FILE  K=V or K lines (docker's format: '#' comments, blank\n"
		"                       lines skipped), repeatable; -e wins over a file\n"
		"  -u, --user USER      run as USER: NAME, UID, NAME:GROUP or UID:GID\n"
		"                       (default: the image's user)\n"
		"  -i, --interactive    stream this command's standard input to the command as\n"
		"                       it arrives, while its output comes back; without -i the\n"
		"                       command's stdin is empty\n"
		"  -d, --detach         start the command in the background, print its exec ID\n"
		"                       and return (its output is not kept)\n"
		"  -t, --tty            refused: no terminal is allocated (-it: use -i)\n"
		"      --timeout SECS   bound on the whole run (default 300, at most 86400); on\n"
		"                       expiry the command is killed and the sandbox kept where\n"
		"                       the engine runs on this host, else the sandbox is disposed\n"
		"      --on-timeout kill|dispose\n"
		"                       dispose: a timeout disposes the sandbox everywhere (as\n"
		"                       upstream); kill (default): as above\n" CLI_ENGINE_OPTIONS_HELP
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: the command's; 124 timed out; 125 the request failed (usage,\n"
		"no such sandbox, engine unreachable); 126 the command could not be started;\n"
		"127 the command was not found. With -d: 0 once the command runs.\n");
}

/* What the command line asked beyond the request itself. */
struct exec_flags {
	const char *host, *context;
	bool interactive;            /* -i */
	bool detach;                 /* -d */
	json_t *file_env;            /* --env-file's variables, under -e's (docker's precedence) */
};

/* The verb's argument parser has one context pointer for the rest: this run's flags. */
static struct exec_flags *exec_flags_of_run;

/* A number of seconds for --timeout (the ceiling is spec.c's). */
static int put_timeout(json_t *req, const char *s)
{
	char *end;
	errno = 0;
	double secs = strtod(s, &end);
	if (errno || end == s || *end || secs != secs) {
		cli_usage_error("exec", "--timeout: want a number of seconds, not '%s'", s);
		return -1;
	}
	return json_object_set_new(req, "timeout", json_real(secs));
}

/* The request's "env" object, made on first use. */
static json_t *env_of(json_t *req)
{
	json_t *env = json_object_get(req, "env");
	if (!env && json_object_set_new(req, "env", env = json_object()) < 0)
		return NULL;
	return env;
}

/* -e KEY=VALUE, or -e KEY: the value here, or nothing when KEY is unset here (as docker exec). */
static int put_env(json_t *req, const char *opt, const char *word)
{
	char why[512];
	json_t *env = env_of(req);
	if (!env) {
		cli_error("exec: out of memory");
		return -1;
	}
	if (envfile_put(env, word, why, sizeof(why)) < 0) {
		cli_usage_error("exec", "%s: %s", opt, why);
		return -1;
	}
	return 0;
}

/* --env-file FILE: into f->file_env, merged under -e's once the whole command line is read. */
static int put_env_file(struct exec_flags *f, const char *path)
{
	char why[PATH_MAX + 512];
	if (!f->file_env && !(f->file_env = json_object())) {
		cli_error("exec: out of memory");
		return -1;
	}
	if (envfile_load(f->file_env, path, why, sizeof(why)) < 0) {
		cli_usage_error("exec", "--env-file %s", why);
		return -1;
	}
	return 0;
}

/* The files' variables that no -e set (docker: -e wins, whatever the order on the line). */
static int merge_file_env(json_t *req, json_t *file_env)
{
	if (!file_env || !json_object_size(file_env))
		return 0;
	json_t *env = env_of(req);
	const char *k;
	json_t *v;
	if (!env)
		return -1;
	json_object_foreach (file_env, k, v)
		if (!json_object_get(env, k) && json_object_set(env, k, v) < 0)
			return -1;
	return 0;
}

/* One option into the request or the flags: 0, or -1 when refused (said). */
static int exec_option(int c, json_t *req, struct exec_flags *f, char **argv)
{
	switch (c) {
	case 'H':
		f->host = optarg;
		return 0;
	case O_CONTEXT:
		f->context = optarg;
		return 0;
	case 'w':
	case O_CWD:
		return verb_set_str(req, "cwd", optarg);
	case 'e':
	case O_ENV:
		return put_env(req, c == 'e' ? "-e" : "--env", optarg);
	case O_ENV_FILE:
		return put_env_file(f, optarg);
	case 'u':
	case O_USER:
		return verb_set_str(req, "user", optarg);
	case 'i':
	case O_INTERACTIVE:
		f->interactive = true;
		return 0;
	case 'd':
	case O_DETACH:
		f->detach = true;
		return 0;
	case 't':
	case O_TTY:
		/* A terminal would need a pty on both ends and a raw local tty;
		 * the output is streamed through pipes. Refused rather than
		 * ignored: a program that needs a terminal would misbehave
		 * without saying why. */
		cli_usage_error("exec", "-t: no terminal is allocated (output is streamed through pipes); "
				"drop -t (-i alone gives the command this standard input)");
		return -1;
	case O_TIMEOUT:
		return put_timeout(req, optarg);
	case O_ON_TIMEOUT:
		return verb_set_str(req, "on_timeout", optarg);
	}
	cli_option_error("exec", c, argv);
	return -1;
}

/*
 * NAME [options] [--] ARGV...: options may stand before or after NAME; the
 * first word after NAME that is not an option (or everything after "--")
 * starts ARGV. Returns 0 with req filled, -1 after --help, else the exit
 * code (usage: 125).
 */
static int exec_args(int argc, char **argv, json_t *req, const char **host, const char **context)
{
	static const struct option opts[] = {
		{ "cwd", required_argument, NULL, O_CWD },
		{ "workdir", required_argument, NULL, O_CWD },
		{ "env", required_argument, NULL, O_ENV },
		{ "env-file", required_argument, NULL, O_ENV_FILE },
		{ "user", required_argument, NULL, O_USER },
		{ "interactive", no_argument, NULL, O_INTERACTIVE },
		{ "detach", no_argument, NULL, O_DETACH },
		{ "tty", no_argument, NULL, O_TTY },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "on-timeout", required_argument, NULL, O_ON_TIMEOUT },
		{ "host", required_argument, NULL, 'H' },
		{ "context", required_argument, NULL, O_CONTEXT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct exec_flags *f = exec_flags_of_run;
	const char *name = NULL;
	int c;
	for (;;) {
		/* docker exec's short flags: -w -e -u -i -d -t (and -it, -di) */
		c = getopt_long(argc, argv, "+:hH:w:e:u:idt", opts, NULL);
		if (c == -1) {
			bool dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
			if (!name && !dashdash && optind < argc) {
				name = argv[optind++];
				continue;
			}
			break;
		}
		if (c == 'h') {
			exec_usage(stdout);
			return -1;
		}
		if (exec_option(c, req, f, argv) < 0)
			return EXEC_EXIT_FAILED;
	}
	*host = f->host;
	*context = f->context;
	if (!name) {
		cli_usage_error("exec", "no sandbox NAME given");
		return EXEC_EXIT_FAILED;
	}
	if (optind >= argc) {
		cli_usage_error("exec", "no command given (mafsbx exec NAME -- ARGV...)");
		return EXEC_EXIT_FAILED;
	}
	if (f->detach && f->interactive) {
		cli_usage_error("exec", "-d and -i: a command started in the background has no standard input");
		return EXEC_EXIT_FAILED;
	}
	if (merge_file_env(req, f->file_env) < 0) {
		cli_error("exec: out of memory");
		return EXEC_EXIT_FAILED;
	}
	if (verb_set_str(req, "sandbox", name) < 0)
		return EXEC_EXIT_FAILED;
	for (int i = optind; i < argc; i++)
		if (verb_push_str(req, "argv", argv[i]) < 0)
			return EXEC_EXIT_FAILED;
	return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -(n < 0 ? errno : EIO);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Streamed output: straight to our own stdout / stderr, unbuffered. */
static int exec_sink(int stream, const void *data, size_t len, void *ctx)
{
	(void)ctx;
	return write_all(stream == 2 ? STDERR_FILENO : STDOUT_FILENO, data, len);
}

/* The exit status for a run that returned `r` with `res`. */
static int exec_status(int r, const struct mafsbx_exec_result *res, const struct mafsbx_error *err)
{
	if (r == 0) {
		if (res->launch_failed)   /* its message was streamed as it came; the status says which */
			fprintf(stderr, PROGRAM ": exec: the runtime could not start the command (exit %d)\n",
				res->exit_code);
		return res->exit_code >= 0 && res->exit_code <= 255 ? res->exit_code : EXEC_EXIT_FAILED;
	}
	verb_report("exec", err);
	if (res->timed_out || err->kind == MAFSBX_EK_TIMEOUT)
		return EXEC_EXIT_TIMEOUT;
	if (res->launch_failed)
		return err->err == ENOENT ? EXEC_EXIT_NOT_FOUND : EXEC_EXIT_CANNOT_RUN;
	return EXEC_EXIT_FAILED;
}

/* ---- -d: the background run --------------------------------------------- */

/* The child's side of a detached run. */
struct detached {
	struct mafsbx_engine *engine;
	pthread_mutex_t mu;
	int report_fd;               /* the parent's pipe; -1 once the parent was told */
	char exec_id[65];
	bool stop;                   /* the run ended: the watcher stops */
	pthread_t watcher;
	bool watching;
};

/*
 * Tell the parent the command runs ("ok ID\n") and let go of everything the
 * caller holds: the terminal, the pipes of a `$(...)` that waits for their
 * end, the working directory. From here on messages go to syslog.
 */
static void detached_report_started(struct detached *d)
{
	pthread_mutex_lock(&d->mu);
	if (d->report_fd >= 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			close(null);
		}
		if (chdir("/") < 0)
			log_debug("chdir /: %s", strerror(errno));
		mafsbx_log_use_syslog();
		char line[80];
		int n = snprintf(line, sizeof(line), "ok %s\n", d->exec_id);
		if (write_all(d->report_fd, line, (size_t)n) < 0)
			log_warn("exec %.12s: could not tell the caller it started", d->exec_id);
		close(d->report_fd);
		d->report_fd = -1;
	}
	pthread_mutex_unlock(&d->mu);
}

/* Watch the exec until the engine gives it a PID (it runs) or the run ends. */
static void *detached_watch(void *arg)
{
	struct detached *d = arg;
	for (unsigned i = 0;; i++) {
		pthread_mutex_lock(&d->mu);
		bool stop = d->stop || d->report_fd < 0;
		pthread_mutex_unlock(&d->mu);
		if (stop)
			return NULL;
		char id[sizeof(d->exec_id)];
		pthread_mutex_lock(&d->mu);
		memcpy(id, d->exec_id, sizeof(id));
		pthread_mutex_unlock(&d->mu);
		long pid = 0;
		bool running = false;
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		if (mafsbx_exec_pid(d->engine, id, &pid, &running, &e) == 0 && pid > 0) {
			detached_report_started(d);
			return NULL;
		}
		usleep(i < 50 ? 10000 : 100000);
	}
}

static void detached_created(const char *container_id, const char *exec_id, void *ctx)
{
	(void)container_id;
	struct detached *d = ctx;
	/* a re-issued exec (the container was being paused) has a new ID: the watcher follows it */
	pthread_mutex_lock(&d->mu);
	snprintf(d->exec_id, sizeof(d->exec_id), "%s", exec_id);
	pthread_mutex_unlock(&d->mu);
	if (!d->watching)
		d->watching = pthread_create(&d->watcher, NULL, detached_watch, d) == 0;
}

static int detached_discard(int stream, const void *data, size_t len, void *ctx)
{
	(void)stream, (void)data, (void)len, (void)ctx;
	return 0;
}

/* The child: run the exec to its end; returns its exit code (what the parent exits with before "ok"). */
static int detached_child(const struct verb_open_opts *vo, const struct mafsbx_exec_spec *spec, int report_fd)
{
	struct detached d = { .report_fd = report_fd };
	pthread_mutex_init(&d.mu, NULL);
	struct verb_env v;
	int code = verb_open(vo, &v, EXEC_EXIT_FAILED);
	if (code != MAFSBX_EXIT_OK)
		return code;
	d.engine = v.engine;
	struct mafsbx_exec_hooks h = { .on_output = detached_discard, .on_created = detached_created, .ctx = &d,
				       .kill_on_timeout = true };
	struct mafsbx_exec_result res;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_sandbox_exec_run(v.b, spec, &h, &res, &err);
	pthread_mutex_lock(&d.mu);
	d.stop = true;
	bool told = d.report_fd < 0;
	pthread_mutex_unlock(&d.mu);
	if (d.watching)
		pthread_join(d.watcher, NULL);
	if (told) {
		if (r < 0)
			log_warn("exec %.12s in %s: %s", d.exec_id, spec->sandbox, err.message);
		code = MAFSBX_EXIT_OK;
	} else if (r == 0 && !res.launch_failed) {
		detached_report_started(&d);   /* it ran, and ended before the watcher saw it */
		code = MAFSBX_EXIT_OK;
	} else {
		if (res.launch_failed && res.err_len)
			(void)write_all(STDERR_FILENO, res.err, res.err_len);
		code = exec_status(r, &res, &err);
	}
	mafsbx_exec_result_free(&res);
	verb_close(&v);
	pthread_mutex_destroy(&d.mu);
	return code;
}

/*
 * -d: fork the child that runs the command (this process has no thread yet:
 * the engine is opened in the child) and wait for its word: "ok ID" (print
 * the ID, exit 0), or its end before that (its exit code; it said why).
 */
static int exec_detached(const struct verb_open_opts *vo, const struct mafsbx_exec_spec *spec)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		cli_error("exec: pipe: %s", strerror(errno));
		return EXEC_EXIT_FAILED;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("exec: fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return EXEC_EXIT_FAILED;
	}
	if (pid == 0) {
		close(p[0]);
		/* its own session: the terminal's ^C and hangup are the caller's, not its */
		(void)setsid();
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			close(null);
		}
		int code = detached_child(vo, spec, p[1]);
		fflush(NULL);
		_exit(code);
	}
	close(p[1]);
	char line[96];
	size_t got = 0;
	for (;;) {
		ssize_t n = read(p[0], line + got, sizeof(line) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(line) - 1)
			break;
	}
	close(p[0]);
	line[got] = '\0';
	if (got > 3 && strncmp(line, "ok ", 3) == 0) {
		printf("%s", line + 3);   /* the ID and its newline */
		return fflush(stdout) == 0 ? MAFSBX_EXIT_OK : EXEC_EXIT_FAILED;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			cli_error("exec: waitpid: %s", strerror(errno));
			return EXEC_EXIT_FAILED;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		return WEXITSTATUS(status);
	cli_error("exec: the background run ended before the command started");
	return EXEC_EXIT_FAILED;
}

/* ---- the verb ----------------------------------------------------------- */

int cmd_exec(int argc, char **argv)
{
	__do_json json_t *file_env = NULL;
	struct exec_flags flags = { NULL, NULL, false, false, NULL };
	exec_flags_of_run = &flags;
	const char *host = NULL, *context = NULL;
	int code;
	json_t *req = verb_request("exec", exec_args, argc, argv, &host, &context, EXEC_EXIT_FAILED, &code);
	file_env = flags.file_env;
	if (!req)
		return code;
	struct mafsbx_exec_spec *spec = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	struct verb_open_opts vo = { .host = host, .context = context };
	/* the rules of .ctl/exec, before any engine call */
	if (mafsbx_exec_spec_parse(req, NULL, &spec, &err) < 0) {
		verb_report("exec", &err);
		code = EXEC_EXIT_FAILED;
	} else if (flags.detach) {
		code = exec_detached(&vo, spec);
	} else {
		struct verb_env v;
		if ((code = verb_open(&vo, &v, EXEC_EXIT_FAILED)) == MAFSBX_EXIT_OK) {
			/* without -i the guest's stdin is empty (not attached) */
			/* a timeout kills the command where this host can (execkill.c's proofs), as -d does */
			struct mafsbx_exec_hooks h = { .on_output = exec_sink,
						       .kill_on_timeout = true,
						       .stdin_from_fd = flags.interactive,
						       .stdin_fd = STDIN_FILENO };
			struct mafsbx_exec_result res;
			int r = mafsbx_sandbox_exec_run(v.b, spec, &h, &res, &err);
			code = exec_status(r, &res, &err);
			mafsbx_exec_result_free(&res);
			verb_close(&v);
		}
	}
	mafsbx_exec_spec_free(spec);
	json_decref(req);
	return code;
}
