/*
 * mfs_tool.c: what the mount tests (the tests/mount scripts) need besides a shell,
 * so they depend on neither the docker CLI nor jq. Engine calls go through
 * libmafsbx's engine.h, as every test in this project does.
 *
 *   mfs_tool ping                      0 when the engine answers, 1 otherwise
 *   mfs_tool image REF                 0 when the image exists
 *   mfs_tool ctl PATH JSON             one .ctl transaction: prints "OK" or the
 *                                      write's errno name, then the reply line
 *   mfs_tool try OP PATH [ARG]         stat | read | write TEXT | append TEXT | mkdir | unlink | rmdir | rename [TO] |
 *                                      readdir | readlink: prints "OK" (read:
 *                                      "OK <bytes>") or the errno name
 *   mfs_tool rename2 FROM TO FLAGS     renameat2(2) with FLAGS: 0 | noreplace |
 *                                      exchange | whiteout | a number; prints
 *                                      "OK" or the errno name
 *   mfs_tool preads PATH LEN OFF...    one open, then pread LEN bytes at each
 *                                      offset: one line each (the bytes as read)
 *   mfs_tool jget KEY[.KEY...]         a member of the JSON on stdin (strings raw)
 *   mfs_tool state NAME                running | paused | exited | ... | absent
 *   mfs_tool initpid NAME              the host PID of the container's init (State.Pid)
 *   mfs_tool prove NAME PID            the proofs that PID is the container's (src/host):
 *                                      three lines "cgroup: ", "init: ", "member: ",
 *                                      each "OK" or the refusal: the cgroup proof
 *                                      alone, the pin's proofs of its init, the
 *                                      exec kill's proofs of one of its processes
 *   mfs_tool killexec NAME CMD         the kill a caller without the exec's marker
 *                                      does (mafsbx_exec_kill_tree: the marker read
 *                                      from the exec's process) on the running
 *                                      exec of NAME that runs `sh -c CMD`; prints
 *                                      how many processes were signalled
 *   mfs_tool paused SCOPE              how many containers of that scope are paused
 *   mfs_tool handmade SCOPE THREAD AGENT KIND [CALL]
 *                                      create + start a sandbox by hand with the
 *                                      upstream name and labels; prints the name
 *                                      (MFS_HANDMADE_PROXY=1: its proxy instead;
 *                                      MFS_HANDMADE_PLAIN=1: a plain container
 *                                      under that name, scope label only)
 *   mfs_tool rm-scope SCOPE            force-remove every container and network
 *                                      labelled with that scope (test cleanup)
 *   mfs_tool fwd LISTEN TARGET         relay a unix socket to another (a stand-in
 *                                      engine socket a test can stop and start);
 *                                      LISTEN "tcp": a port of 127.0.0.1 instead,
 *                                      its number printed once listening (the
 *                                      engine as a remote one, tcp://)
 *   mfs_tool errname N                 errno name of a number
 *   mfs_tool timecalls FILE N          N times: stat then open+read FILE; prints
 *                                      the median microseconds of one pair
 *   mfs_tool storm FILE THREADS ITERS  THREADS threads each stat FILE ITERS times
 *                                      (on a mount with attr_timeout=0 each is a
 *                                      round trip to the daemon); exit 1 on any
 *                                      failure
 *   mfs_tool race DIR STOPFILE         until STOPFILE exists (or 600 s): read,
 *                                      lstat, list, write and remove DIR/passwd
 *                                      and DIR/out; prints "iterations N reads R
 *                                      leaks L": a leak is read content or a
 *                                      listed name that is not DIR's own
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <unistd.h>

#include "buf.h"
#include "endpoint.h"
#include "engine.h"
#include "error.h"
#include "execkill.h"
#include "cgroup.h"
#include "names.h"

static struct mafsbx_engine *engine_or_die(bool quiet)
{
	struct mafsbx_endpoint ep;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_endpoint_options o = { NULL, NULL };
	if (mafsbx_endpoint_resolve(&o, NULL, NULL, &ep, &e) < 0) {
		if (!quiet)
			fprintf(stderr, "mfs_tool: %s\n", e.message);
		exit(1);
	}
	struct mafsbx_engine *eng = mafsbx_engine_open(&ep, NULL, &e);
	if (!eng || mafsbx_engine_ping(eng, &e) < 0) {
		if (!quiet)
			fprintf(stderr, "mfs_tool: %s\n", e.message);
		exit(1);
	}
	return eng;
}

static int cmd_ctl(const char *path, const char *json)
{
	int fd = open(path, O_RDWR);
	if (fd < 0) {
		printf("%s\n\n", mafsbx_errno_name(errno));
		return 0;
	}
	size_t len = strlen(json), off = 0;
	int werr = 0;
	while (off < len) {
		ssize_t n = write(fd, json + off, len - off);
		if (n < 0) {
			werr = errno;
			break;
		}
		off += (size_t)n;
	}
	printf("%s\n", werr ? mafsbx_errno_name(werr) : "OK");
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	if (n < 0)
		printf("read failed: %s\n", mafsbx_errno_name(errno));
	if (close(fd) < 0)
		printf("close failed: %s\n", mafsbx_errno_name(errno));
	return 0;
}

static int cmd_try(const char *op, const char *path, const char *arg)
{
	int err = 0;
	long long bytes = -1;
	struct stat st;
	if (!strcmp(op, "stat")) {
		if (lstat(path, &st) < 0)
			err = errno;
	} else if (!strcmp(op, "read")) {
		int fd = open(path, O_RDONLY);
		if (fd < 0) {
			err = errno;
		} else {
			char buf[65536];
			ssize_t n;
			bytes = 0;
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				bytes += n;
			if (n < 0)
				err = errno;
			close(fd);
		}
	} else if (!strcmp(op, "write") || !strcmp(op, "append")) {
		int fd = open(path, !strcmp(op, "write") ? O_WRONLY | O_CREAT | O_TRUNC : O_WRONLY | O_APPEND, 0644);
		if (fd < 0) {
			err = errno;
		} else {
			const char *t = arg ? arg : "x";
			if (write(fd, t, strlen(t)) < 0)
				err = errno;
			if (close(fd) < 0 && !err)
				err = errno;
		}
	} else if (!strcmp(op, "mkdir")) {
		if (mkdir(path, 0755) < 0)
			err = errno;
	} else if (!strcmp(op, "rmdir")) {
		if (rmdir(path) < 0)
			err = errno;
	} else if (!strcmp(op, "rename")) {
		char to[4096];
		snprintf(to, sizeof(to), "%s", arg ? arg : path);
		if (!arg)
			strncat(to, ".renamed", sizeof(to) - strlen(to) - 1);
		if (rename(path, to) < 0)
			err = errno;
	} else if (!strcmp(op, "unlink")) {
		if (unlink(path) < 0)
			err = errno;
	} else if (!strcmp(op, "readdir")) {
		DIR *d = opendir(path);
		if (!d) {
			err = errno;
		} else {
			errno = 0;
			while (readdir(d))
				;
			if (errno)
				err = errno;
			closedir(d);
		}
	} else if (!strcmp(op, "readlink")) {
		char buf[4096];
		ssize_t n = readlink(path, buf, sizeof(buf) - 1);
		if (n < 0) {
			err = errno;
		} else {
			buf[n] = '\0';
			printf("OK %s\n", buf);
			return 0;
		}
	} else {
		fprintf(stderr, "mfs_tool: unknown op %s\n", op);
		return 2;
	}
	if (err)
		printf("%s\n", mafsbx_errno_name(err));
	else if (bytes >= 0)
		printf("OK %lld\n", bytes);
	else
		printf("OK\n");
	return 0;
}

/* renameat2(2) through the raw call (older glibcs have no wrapper). */
static int cmd_rename2(const char *from, const char *to, const char *flags)
{
	unsigned long f;
	char *end;
	if (!strcmp(flags, "noreplace"))
		f = RENAME_NOREPLACE;
	else if (!strcmp(flags, "exchange"))
		f = RENAME_EXCHANGE;
	else if (!strcmp(flags, "whiteout"))
		f = RENAME_WHITEOUT;
	else if (errno = 0, f = strtoul(flags, &end, 0), errno || *end || end == flags) {
		fprintf(stderr, "mfs_tool: rename2: bad flags %s\n", flags);
		return 2;
	}
	if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, (unsigned)f) < 0)
		printf("%s\n", mafsbx_errno_name(errno));
	else
		printf("OK\n");
	return 0;
}

static int cmd_preads(int argc, char **argv)
{
	int fd = open(argv[0], O_RDONLY);
	if (fd < 0) {
		printf("%s\n", mafsbx_errno_name(errno));
		return 1;
	}
	size_t len = (size_t)atol(argv[1]);
	char *buf = malloc(len + 1);
	for (int i = 2; buf && i < argc; i++) {
		ssize_t n = pread(fd, buf, len, (off_t)atoll(argv[i]));
		if (n < 0) {
			printf("%s\n", mafsbx_errno_name(errno));
			continue;
		}
		fwrite(buf, 1, (size_t)n, stdout);
		putchar('\n');
	}
	free(buf);
	close(fd);
	return 0;
}

static int cmd_jget(const char *key)
{
	json_error_t je;
	json_t *root = json_loadf(stdin, JSON_DISABLE_EOF_CHECK, &je);
	if (!root) {
		fprintf(stderr, "mfs_tool: not JSON: %s\n", je.text);
		return 1;
	}
	json_t *v = root;
	char *k = strdup(key), *save = NULL;
	for (char *p = strtok_r(k, ".", &save); p && v; p = strtok_r(NULL, ".", &save))
		v = json_is_array(v) ? json_array_get(v, (size_t)atol(p)) : json_object_get(v, p);
	free(k);
	int r = 0;
	if (!v) {
		r = 1;
	} else if (json_is_string(v)) {
		fwrite(json_string_value(v), 1, json_string_length(v), stdout);
		putchar('\n');
	} else {
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		printf("%s\n", s ? s : "");
		free(s);
	}
	json_decref(root);
	return r;
}

static int cmd_state(const char *name)
{
	struct mafsbx_engine *e = engine_or_die(false);
	json_t *j = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	if (mafsbx_container_inspect(e, name, &j, &err) < 0) {
		printf("%s\n", err.kind == MAFSBX_EK_NO_CONTAINER ? "absent" : "error");
		mafsbx_engine_close(e);
		return err.kind == MAFSBX_EK_NO_CONTAINER ? 0 : 1;
	}
	const char *s = json_string_value(json_object_get(json_object_get(j, "State"), "Status"));
	printf("%s\n", s ? s : "unknown");
	json_decref(j);
	mafsbx_engine_close(e);
	return 0;
}

static json_t *list_scope(struct mafsbx_engine *e, const char *scope)
{
	char lv[MAFSBX_LABEL_VALUE_MAX + 1];
	mafsbx_label_value(scope, lv);
	char f[256];
	snprintf(f, sizeof(f), MAFSBX_LABEL_SCOPE "=%s", lv);
	json_t *filters = mafsbx_filters_new();
	mafsbx_filters_add(filters, "label", f);
	json_t *arr = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	if (mafsbx_container_list(e, filters, true, &arr, &err) < 0) {
		fprintf(stderr, "mfs_tool: list: %s\n", err.message);
		arr = NULL;
	}
	json_decref(filters);
	return arr;
}

static int cmd_initpid(const char *name)
{
	struct mafsbx_engine *e = engine_or_die(false);
	json_t *j = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_container_inspect(e, name, &j, &err);
	mafsbx_engine_close(e);
	if (r < 0) {
		fprintf(stderr, "mfs_tool initpid %s: %s\n", name, err.message);
		return 1;
	}
	json_t *pid = json_object_get(json_object_get(j, "State"), "Pid");
	printf("%lld\n", json_is_integer(pid) ? (long long)json_integer_value(pid) : 0LL);
	json_decref(j);
	return 0;
}

static int open_proc(long pid)
{
	char path[32];
	snprintf(path, sizeof(path), "/proc/%ld", pid);
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* The library's own proofs, on a process the test chose (the pin and the kill take the PID from the engine). */
static int cmd_prove(const char *name, const char *pidarg)
{
	struct mafsbx_engine *e = engine_or_die(false);
	json_t *j = NULL;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_container_inspect(e, name, &j, &err);
	mafsbx_engine_close(e);
	if (r < 0) {
		fprintf(stderr, "mfs_tool prove %s: %s\n", name, err.message);
		return 1;
	}
	const char *id = json_string_value(json_object_get(j, "Id"));
	long init_pid = (long)json_integer_value(json_object_get(json_object_get(j, "State"), "Pid"));
	const char *pidmode = json_string_value(json_object_get(json_object_get(j, "HostConfig"), "PidMode"));
	const char *merged = json_string_value(
		json_object_get(json_object_get(json_object_get(j, "GraphDriver"), "Data"), "MergedDir"));
	long pid = atol(pidarg);
	int dir = open_proc(pid), idir = open_proc(init_pid);
	struct mafsbx_proc_ident init;
	if (!id || dir < 0 || idir < 0 || mafsbx_proc_ident_of(idir, &init) < 0) {
		fprintf(stderr, "mfs_tool prove %s %s: no such process, or no init\n", name, pidarg);
		json_decref(j);
		return 1;
	}
	char text[4096] = "";
	int cfd = openat(dir, "cgroup", O_RDONLY | O_CLOEXEC);
	ssize_t n = cfd >= 0 ? read(cfd, text, sizeof(text) - 1) : -1;
	text[n > 0 ? n : 0] = '\0';
	if (cfd >= 0)
		close(cfd);
	printf("cgroup: %s\n", mafsbx_cgroup_names_container(text, id) ? "OK" : "refused");
	mafsbx_error_clear(&err);
	printf("init: %s\n", mafsbx_pin_prove_init(dir, (pid_t)pid, id, pidmode, merged, &err) == 0 ? "OK" : err.message);
	const char *why = NULL;
	printf("member: %s\n", mafsbx_proc_prove_member(dir, id, &init, &why) == 0 ? "OK" : why);
	close(dir);
	close(idir);
	json_decref(j);
	return 0;
}

/* Whether the host process `pid` runs `sh -c cmd` (its /proc/PID/cmdline). */
static bool runs_shell_command(long pid, const char *cmd)
{
	char path[48], buf[8192];
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	size_t cl = strlen(cmd);
	return n == (ssize_t)(6 + cl + 1) && !memcmp(buf, "sh\0-c\0", 6) && !memcmp(buf + 6, cmd, cl + 1);
}

static int cmd_killexec(const char *name, const char *cmd)
{
	struct mafsbx_engine *e = engine_or_die(false);
	json_t *j = NULL, *x;
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_container_inspect(e, name, &j, &err), found = 0, killed = 0;
	const char *id = json_string_value(json_object_get(j, "Id"));
	size_t i;
	json_array_foreach(json_object_get(j, "ExecIDs"), i, x) {
		const char *eid = json_string_value(x);
		long pid = 0;
		bool running = false;
		if (found || !eid || !id || mafsbx_exec_pid(e, eid, &pid, &running, &err) < 0 || !running ||
		    !runs_shell_command(pid, cmd))
			continue;
		found = 1;
		r = mafsbx_exec_kill_tree(e, id, eid, &killed, &err);
	}
	json_decref(j);
	mafsbx_engine_close(e);
	if (r < 0 || !found) {
		fprintf(stderr, "mfs_tool killexec %s: %s\n", name, r < 0 ? err.message : "no running exec runs that");
		return 1;
	}
	printf("%d\n", killed);
	return 0;
}

static int cmd_paused(const char *scope)
{
	struct mafsbx_engine *e = engine_or_die(false);
	json_t *arr = list_scope(e, scope);
	if (!arr)
		return 1;
	int n = 0;
	size_t i;
	json_t *c;
	json_array_foreach(arr, i, c) {
		const char *st = json_string_value(json_object_get(c, "State"));
		if (st && !strcmp(st, "paused"))
			n++;
	}
	printf("%d\n", n);
	json_decref(arr);
	mafsbx_engine_close(e);
	return 0;
}

static int cmd_rm_scope(const char *scope)
{
	struct mafsbx_engine *e = engine_or_die(true);
	json_t *arr = list_scope(e, scope);
	size_t i;
	json_t *c;
	struct mafsbx_error err;
	json_array_foreach(arr, i, c) {
		const char *id = json_string_value(json_object_get(c, "Id"));
		mafsbx_error_clear(&err);
		if (id)
			mafsbx_container_delete(e, id, true, &err);
	}
	json_decref(arr);
	char lv[MAFSBX_LABEL_VALUE_MAX + 1], f[256];
	mafsbx_label_value(scope, lv);
	snprintf(f, sizeof(f), MAFSBX_LABEL_SCOPE "=%s", lv);
	json_t *filters = mafsbx_filters_new();
	mafsbx_filters_add(filters, "label", f);
	json_t *nets = NULL;
	mafsbx_error_clear(&err);
	if (mafsbx_network_list(e, filters, &nets, &err) == 0) {
		json_array_foreach(nets, i, c) {
			const char *id = json_string_value(json_object_get(c, "Id"));
			mafsbx_error_clear(&err);
			if (id)
				mafsbx_network_delete(e, id, &err);
		}
	}
	json_decref(nets);
	json_decref(filters);
	mafsbx_engine_close(e);
	return 0;
}

static int cmd_handmade(int argc, char **argv)
{
	struct mafsbx_engine *e = engine_or_die(false);
	struct mafsbx_key key = { argv[0], argv[1], argv[2], argc > 4 ? argv[4] : "" };
	const char *kind = argv[3];
	char name[MAFSBX_NAME_LEN + 16];
	mafsbx_container_name(&key, kind, "", name);
	json_t *labels = mafsbx_workload_labels(&key, kind, NULL, MAFSBX_DEFAULT_WORK_DIR);
	/* MFS_HANDMADE_PROXY=1: the sandbox's egress proxy instead (not a sandbox). */
	const char *proxy = getenv("MFS_HANDMADE_PROXY");
	if (proxy && !strcmp(proxy, "1")) {
		strcat(name, "-proxy");
		json_object_del(labels, MAFSBX_LABEL_WORK_DIR_V1);
		json_object_set_new(labels, MAFSBX_LABEL_ROLE, json_string("proxy"));
	}
	/* MFS_HANDMADE_PLAIN=1: a plain container under that name (the scope label only, for rm-scope) */
	const char *plain = getenv("MFS_HANDMADE_PLAIN");
	if (plain && !strcmp(plain, "1")) {
		char lv[MAFSBX_LABEL_VALUE_MAX + 1];
		mafsbx_label_value(argv[0], lv);
		json_decref(labels);
		labels = json_pack("{s:s}", MAFSBX_LABEL_SCOPE, lv);
	}
	const char *image = getenv("MAFSBX_TEST_IMAGE") ? getenv("MAFSBX_TEST_IMAGE") : "mafsbx/busybox:latest";
	json_t *cfg = json_pack("{s:s, s:[s,s], s:o, s:{s:s}}", "Image", image, "Cmd", "sleep", "infinity", "Labels",
				labels, "HostConfig", "NetworkMode", "none");
	char id[65];
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_container_create(e, name, cfg, id, &err);
	if (r == 0)
		r = mafsbx_container_start(e, id, &err);
	json_decref(cfg);
	mafsbx_engine_close(e);
	if (r < 0) {
		fprintf(stderr, "mfs_tool: handmade: %s\n", err.message);
		return 1;
	}
	printf("%s\n", name);
	return 0;
}

/* ---- a unix socket relay ------------------------------------------------ */

static volatile sig_atomic_t fwd_stop;
static void on_term(int sig)
{
	(void)sig;
	fwd_stop = 1;
}

static int unix_socket(const char *path, bool listening)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (listening) {
		unlink(path);
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0) {
			close(fd);
			return -1;
		}
	} else if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A listening socket on 127.0.0.1, its port chosen by the kernel and printed. */
static int tcp_listener(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	printf("%u\n", ntohs(a.sin_port));
	fflush(stdout);
	return fd;
}

static void relay(int a, int b)
{
	struct pollfd p[2] = { { a, POLLIN, 0 }, { b, POLLIN, 0 } };
	char buf[65536];
	bool open_a = true, open_b = true;
	while (open_a || open_b) {
		p[0].fd = open_a ? a : -1;
		p[1].fd = open_b ? b : -1;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int from = i == 0 ? a : b, to = i == 0 ? b : a;
			ssize_t n = read(from, buf, sizeof(buf));
			if (n <= 0) {
				/* half-close: the other side sees EOF, as with a direct connection */
				shutdown(to, SHUT_WR);
				if (i == 0)
					open_a = false;
				else
					open_b = false;
				continue;
			}
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write(to, buf + off, (size_t)(n - off));
				if (w <= 0)
					_exit(0);
				off += w;
			}
		}
	}
	_exit(0);
}

static int cmd_fwd(const char *listen_path, const char *target)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGCHLD, SIG_IGN);
	bool tcp = !strcmp(listen_path, "tcp");
	int ls = tcp ? tcp_listener() : unix_socket(listen_path, true);
	if (ls < 0) {
		fprintf(stderr, "mfs_tool: cannot listen on %s: %s\n", listen_path, strerror(errno));
		return 1;
	}
	pid_t me = getpid();
	while (!fwd_stop) {
		struct pollfd p = { ls, POLLIN, 0 };
		if (poll(&p, 1, 200) <= 0)
			continue;
		int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		pid_t pid = fork();
		if (pid == 0) {
			/* A relay dies with the forwarder: stopping it cuts every connection. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != me)
				_exit(0);
			close(ls);
			int t = unix_socket(target, false);
			if (t < 0)
				_exit(0);
			relay(c, t);
		}
		close(c);
	}
	close(ls);
	if (!tcp)
		unlink(listen_path);
	return 0;
}

/* The race: DIR is, in turn, a guest directory holding only "passwd" (with
 * the text "inside") and a link to somewhere else. Whatever the timing, only
 * DIR's own bytes and names may be seen, and writes land only in DIR. */
static int cmd_race(const char *dir, const char *stopfile)
{
	char pw[4096], out[4096];
	snprintf(pw, sizeof(pw), "%s/passwd", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	unsigned long iters = 0, reads = 0, leaks = 0, writes = 0;
	time_t end = time(NULL) + 600;
	struct stat st;
	while (access(stopfile, F_OK) != 0 && time(NULL) < end) {
		iters++;
		int fd = open(pw, O_RDONLY);
		if (fd >= 0) {
			char buf[256];
			ssize_t n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n >= 0) {
				buf[n] = '\0';
				reads++;
				if (strcmp(buf, "inside\n")) {
					leaks++;
					fprintf(stderr, "race: read %zd bytes that are not DIR's: %.40s\n", n, buf);
				}
			}
		}
		(void)lstat(pw, &st);
		DIR *d = opendir(dir);
		if (d) {
			struct dirent *de;
			while ((de = readdir(d))) {
				if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "passwd") &&
				    strcmp(de->d_name, "out")) {
					leaks++;
					fprintf(stderr, "race: listed %s, not DIR's\n", de->d_name);
				}
			}
			closedir(d);
		}
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			if (write(fd, "x", 1) == 1)
				writes++;
			close(fd);
		}
		(void)unlink(out);
	}
	printf("iterations %lu reads %lu writes %lu leaks %lu\n", iters, reads, writes, leaks);
	return leaks ? 1 : 0;
}

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

static int cmd_timecalls(const char *path, int n)
{
	if (n < 1 || n > 10000)
		return 2;
	long long *t = calloc((size_t)n, sizeof(*t));
	char buf[4096];
	if (!t)
		return 1;
	for (int i = 0; i < n; i++) {
		struct stat st;
		long long t0 = now_us();
		int fd = -1;
		if (stat(path, &st) < 0 || (fd = open(path, O_RDONLY)) < 0 || read(fd, buf, sizeof(buf)) < 0) {
			fprintf(stderr, "timecalls %s: %s\n", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			free(t);
			return 1;
		}
		close(fd);
		t[i] = now_us() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_ll);
	printf("%lld\n", t[n / 2]);
	free(t);
	return 0;
}

struct storm {
	const char *path;
	int iters;
	int failures;
};

static void *storm_main(void *arg)
{
	struct storm *s = arg;
	struct stat st;
	for (int i = 0; i < s->iters; i++)
		if (stat(s->path, &st) < 0)
			__atomic_add_fetch(&s->failures, 1, __ATOMIC_RELAXED);
	return NULL;
}

static int cmd_storm(const char *path, int threads, int iters)
{
	if (threads < 1 || threads > 1024 || iters < 1)
		return 2;
	struct storm s = { .path = path, .iters = iters };
	pthread_t *t = calloc((size_t)threads, sizeof(*t));
	if (!t)
		return 1;
	int started = 0;
	for (; started < threads; started++)
		if (pthread_create(&t[started], NULL, storm_main, &s) != 0)
			break;
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	if (started < threads || s.failures) {
		fprintf(stderr, "storm: %d of %d threads, %d failed stats\n", started, threads, s.failures);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mfs_tool COMMAND ...\n");
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "ping")) {
		struct mafsbx_engine *e = engine_or_die(true);
		mafsbx_engine_close(e);
		return 0;
	}
	if (!strcmp(cmd, "image") && argc == 3) {
		struct mafsbx_engine *e = engine_or_die(true);
		json_t *j = NULL;
		int r = mafsbx_image_inspect(e, argv[2], &j, NULL);
		json_decref(j);
		mafsbx_engine_close(e);
		return r < 0 ? 1 : 0;
	}
	if (!strcmp(cmd, "ctl") && argc == 4)
		return cmd_ctl(argv[2], argv[3]);
	if (!strcmp(cmd, "try") && (argc == 4 || argc == 5))
		return cmd_try(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	if (!strcmp(cmd, "rename2") && argc == 5)
		return cmd_rename2(argv[2], argv[3], argv[4]);
	if (!strcmp(cmd, "preads") && argc >= 5)
		return cmd_preads(argc - 2, argv + 2);
	if (!strcmp(cmd, "jget") && argc == 3)
		return cmd_jget(argv[2]);
	if (!strcmp(cmd, "state") && argc == 3)
		return cmd_state(argv[2]);
	if (!strcmp(cmd, "initpid") && argc == 3)
		return cmd_initpid(argv[2]);
	if (!strcmp(cmd, "prove") && argc == 4)
		return cmd_prove(argv[2], argv[3]);
	if (!strcmp(cmd, "killexec") && argc == 4)
		return cmd_killexec(argv[2], argv[3]);
	if (!strcmp(cmd, "paused") && argc == 3)
		return cmd_paused(argv[2]);
	if (!strcmp(cmd, "handmade") && (argc == 6 || argc == 7))
		return cmd_handmade(argc - 2, argv + 2);
	if (!strcmp(cmd, "rm-scope") && argc == 3)
		return cmd_rm_scope(argv[2]);
	if (!strcmp(cmd, "fwd") && argc == 4)
		return cmd_fwd(argv[2], argv[3]);
	if (!strcmp(cmd, "timecalls") && argc == 4)
		return cmd_timecalls(argv[2], atoi(argv[3]));
	if (!strcmp(cmd, "storm") && argc == 5)
		return cmd_storm(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(cmd, "race") && argc == 4)
		return cmd_race(argv[2], argv[3]);
	if (!strcmp(cmd, "errname") && argc == 3) {
		printf("%s\n", mafsbx_errno_name(atoi(argv[2])));
		return 0;
	}
	fprintf(stderr, "mfs_tool: bad command line\n");
	return 2;
}
