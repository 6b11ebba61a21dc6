/*
 * pin.c: pin a running container's init process and root directory (pin.h).
 *
 * Order matters: inspect (PID, StartedAt), pidfd of that PID, then every
 * /proc read through a directory handle of /proc/PID opened after the pidfd,
 * then the pidfd must still say "alive" (so /proc/PID was that process, not
 * a recycled PID), then a second inspect must agree (so the process is the
 * container's init of the same start, not a restart that raced us).
 */
#include "pin.h"
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/magic.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "engine.h"
#include "names.h"

static int proc_fd = -1;
static int proc_errno;
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;

/* /proc is opened once and verified to be procfs (libpathrs' lesson: never
 * trust a path named /proc without checking what is mounted there). */
static void proc_open_once(void)
{
	int fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		proc_errno = errno;
		return;
	}
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC) {
		close(fd);
		proc_errno = EXDEV;
		return;
	}
	proc_fd = fd;
}

int mafsbx_proc_fd_path(int opath_fd, int *dirfd, char *name, size_t size)
{
	pthread_once(&proc_once, proc_open_once);
	if (proc_fd < 0)
		return -(proc_errno ? proc_errno : EXDEV);
	*dirfd = proc_fd;
	snprintf(name, size, "thread-self/fd/%d", opath_fd);
	return 0;
}

int mafsbx_reopen(int opath_fd, int flags)
{
	int dirfd;
	char name[48];
	int r = mafsbx_proc_fd_path(opath_fd, &dirfd, name, sizeof(name));
	if (r < 0)
		return r;
	int fd = openat(dirfd, name, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int read_small(int dirfd, const char *name, char *buf, size_t size)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	while (got + 1 < size) {
		ssize_t n = read(fd, buf + got, size - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (int)got;
}

/*
 * The second proof that a process is the container's init, for an engine
 * that gives containers no cgroup (the cgroup driver 'none': a rootless
 * engine on cgroup v1, whose containers stay in the engine's own cgroup):
 * its parent is the runtime shim the engine started for this container,
 * "containerd-shim-runc-v2 -namespace NS -id ID ...". The shim runs outside
 * the container (a guest cannot be it or rename it) and is the init's
 * parent for the container's life (it is a subreaper). piddir: an O_PATH
 * handle of /proc/PID. The caller checks the pidfd afterwards, as for the
 * cgroup read.
 *
 * A process's arguments are its own to choose, so the parent's name and
 * arguments alone prove nothing: a process of another local user, or a
 * guest's process in a rootful engine, can take them, fork, and wait for
 * its child to get the PID of a dead init. So the proof holds only where it
 * is needed and cannot be forged: the process is in no container's cgroup
 * (with containers in cgroups the first proof decides, and a process of
 * another container is refused), and the shim's real and effective uids are
 * this daemon's own (a rootless engine's shims run as the user the daemon
 * runs as; another user cannot make a process of that uid).
 */
static bool uids_are(int pdir, uid_t want)
{
	char text[4096];
	if (read_small(pdir, "status", text, sizeof(text)) <= 0)
		return false;
	const char *u = strstr(text, "\nUid:");
	unsigned long real, eff;
	return u && sscanf(u + 5, "%lu %lu", &real, &eff) == 2 && real == want && eff == want;
}

bool mafsbx_pid_shim_names(int piddir, const char *id)
{
	char text[4096];
	if (!mafsbx_is_engine_id(id) || read_small(piddir, "cgroup", text, sizeof(text)) < 0 ||
	    mafsbx_cgroup_names_some_container(text))
		return false;
	if (read_small(piddir, "stat", text, sizeof(text)) <= 0)
		return false;
	/* "PID (COMM) STATE PPID ...": COMM may hold anything; the last ')' ends it. */
	const char *q = strrchr(text, ')');
	char state;
	long ppid;
	if (!q || sscanf(q + 1, " %c %ld", &state, &ppid) != 2 || ppid <= 1)
		return false;
	pthread_once(&proc_once, proc_open_once);
	if (proc_fd < 0)
		return false;
	char path[32];
	snprintf(path, sizeof(path), "%ld", ppid);
	int pdir = openat(proc_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pdir < 0)
		return false;
	int n = uids_are(pdir, geteuid()) ? read_small(pdir, "cmdline", text, sizeof(text)) : -1;
	close(pdir);
	if (n <= 0)
		return false;
	/* argv[0]'s last component names a containerd shim; "-id" then the full ID follow as whole arguments. */
	const char *a0 = strrchr(text, '/');
	a0 = a0 ? a0 + 1 : text;
	if (strncmp(a0, "containerd-shim", strlen("containerd-shim")) != 0)
		return false;
	const char *end = text + n;
	bool after_id = false;
	for (const char *a = text; a < end; a += strlen(a) + 1) {
		if (after_id)
			return strcmp(a, id) == 0;
		after_id = strcmp(a, "-id") == 0;
	}
	return false;
}

int mafsbx_id_map_parse(const char *text, struct mafsbx_id_map *out, size_t max, size_t *n)
{
	*n = 0;
	const char *p = text;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		char *end;
		unsigned long long v[3];
		for (int i = 0; i < 3; i++) {
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p < '0' || *p > '9')
				return -EINVAL;
			errno = 0;
			v[i] = strtoull(p, &end, 10);
			if (errno || v[i] > UINT32_MAX)
				return -EINVAL;
			p = end;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p && *p != '\n')
			return -EINVAL;
		if (*n == max)
			return -EINVAL;
		out[*n].inside = (uint32_t)v[0];
		out[*n].outside = (uint32_t)v[1];
		out[*n].count = (uint32_t)v[2];
		(*n)++;
	}
	return 0;
}

bool mafsbx_pidmode_shared(const char *pidmode)
{
	return pidmode && *pidmode && strcmp(pidmode, "private") != 0;
}

static int map_id(const struct mafsbx_id_map *m, size_t n, uint32_t id, bool to_host, uint32_t *out)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t from = to_host ? m[i].inside : m[i].outside;
		uint32_t to = to_host ? m[i].outside : m[i].inside;
		if (id >= from && (uint64_t)id - from < m[i].count) {
			*out = to + (id - from);
			return 0;
		}
	}
	return -ERANGE;
}

int mafsbx_pin_host_uid(const struct mafsbx_pin *p, uid_t guest, uid_t *host)
{
	uint32_t v;
	int r = map_id(p->uid_map, p->n_uid_map, guest, true, &v);
	if (r == 0)
		*host = v;
	return r;
}

int mafsbx_pin_host_gid(const struct mafsbx_pin *p, gid_t guest, gid_t *host)
{
	uint32_t v;
	int r = map_id(p->gid_map, p->n_gid_map, guest, true, &v);
	if (r == 0)
		*host = v;
	return r;
}

int mafsbx_pin_guest_uid(const struct mafsbx_pin *p, uid_t host, uid_t *guest)
{
	uint32_t v;
	int r = map_id(p->uid_map, p->n_uid_map, host, false, &v);
	if (r == 0)
		*guest = v;
	return r;
}

int mafsbx_pin_guest_gid(const struct mafsbx_pin *p, gid_t host, gid_t *guest)
{
	uint32_t v;
	int r = map_id(p->gid_map, p->n_gid_map, host, false, &v);
	if (r == 0)
		*guest = v;
	return r;
}

bool mafsbx_pin_alive(const struct mafsbx_pin *p)
{
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
	int r;
	do
		r = poll(&pfd, 1, 0);
	while (r < 0 && errno == EINTR);
	return r == 0;
}

/* Parse "Uid:\t0\t0\t0\t0" style lines of /proc/PID/status. */
static void parse_status(struct mafsbx_pin *p, const char *text)
{
	const char *l;
	if ((l = strstr(text, "\nUid:")))
		p->init_uid = (uid_t)strtoul(l + 5, NULL, 10);   /* real uid: the first */
	if ((l = strstr(text, "\nGid:")))
		p->init_gid = (gid_t)strtoul(l + 5, NULL, 10);
	p->n_groups = 0;
	if ((l = strstr(text, "\nGroups:"))) {
		const char *q = l + 8;
		while (*q && *q != '\n' && p->n_groups < sizeof(p->groups) / sizeof(p->groups[0])) {
			while (*q == ' ' || *q == '\t')
				q++;
			if (*q < '0' || *q > '9')
				break;
			char *end;
			p->groups[p->n_groups++] = (gid_t)strtoul(q, &end, 10);
			q = end;
		}
	}
}

struct inspect_facts {
	char id[65];
	bool running;
	long long pid;
	char started_at[64];
	bool privileged;
	bool host_pid;
	char pidmode[80];        /* HostConfig.PidMode as said, for messages */
	char merged_dir[512];    /* GraphDriver.Data.MergedDir, "" when none or too long */
};

static int inspect_facts(struct mafsbx_engine *e, const char *container, struct inspect_facts *f,
			 struct mafsbx_error *err)
{
	json_t *insp = NULL;
	int r = mafsbx_container_inspect(e, container, &insp, err);
	if (r < 0)
		return r;
	memset(f, 0, sizeof(*f));
	const char *id = json_string_value(json_object_get(insp, "Id"));
	json_t *state = json_object_get(insp, "State");
	json_t *host = json_object_get(insp, "HostConfig");
	const char *started = json_string_value(json_object_get(state, "StartedAt"));
	const char *pidmode = json_string_value(json_object_get(host, "PidMode"));
	if (!mafsbx_is_engine_id(id) || !json_is_object(state)) {
		json_decref(insp);
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "inspect of %s: no Id or State", container);
	}
	snprintf(f->id, sizeof(f->id), "%s", id);
	f->running = json_is_true(json_object_get(state, "Running"));
	f->pid = json_integer_value(json_object_get(state, "Pid"));
	snprintf(f->started_at, sizeof(f->started_at), "%s", started ? started : "");
	f->privileged = json_is_true(json_object_get(host, "Privileged"));
	f->host_pid = mafsbx_pidmode_shared(pidmode);
	snprintf(f->pidmode, sizeof(f->pidmode), "%s", pidmode ? pidmode : "");
	const char *merged =
		json_string_value(json_object_get(json_object_get(json_object_get(insp, "GraphDriver"), "Data"), "MergedDir"));
	if (merged && merged[0] == '/' && strlen(merged) < sizeof(f->merged_dir))
		snprintf(f->merged_dir, sizeof(f->merged_dir), "%s", merged);
	json_decref(insp);
	return 0;
}

int mafsbx_proc_ident_of(int piddir, struct mafsbx_proc_ident *out)
{
	struct stat ns, root;
	/* both are magic links: followed, they are the namespace's nsfs inode and the root directory */
	if (fstatat(piddir, "ns/pid", &ns, 0) < 0 || fstatat(piddir, "root", &root, 0) < 0)
		return -errno;
	*out = (struct mafsbx_proc_ident){ ns.st_dev, ns.st_ino, root.st_dev, root.st_ino };
	return 0;
}

/* This process's own, through the checked /proc. */
static int self_ident(struct mafsbx_proc_ident *out)
{
	pthread_once(&proc_once, proc_open_once);
	if (proc_fd < 0)
		return -(proc_errno ? proc_errno : EXDEV);
	int d = openat(proc_fd, "self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return -errno;
	int r = mafsbx_proc_ident_of(d, out);
	close(d);
	return r;
}

/*
 * Where the engine's own view of the container's root filesystem can be
 * seen from here, the init's root must be it: GraphDriver.Data.MergedDir
 * (overlay2) is the mount the runtime pivots into, so its root has the
 * same device and inode as the container's "/". Only where that directory
 * is a mount point in this mount namespace (its device differs from its
 * parent's): a rootless engine mounts it in its own namespace, and here it
 * is an empty directory, which proves nothing either way. 1 checked and
 * equal, 0 not checkable, -1 different.
 */
static int root_is_merged(const struct mafsbx_proc_ident *init, const char *merged_dir)
{
	if (!merged_dir || !*merged_dir)
		return 0;
	int d = open(merged_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return 0;
	struct stat m, parent;
	int r = fstat(d, &m) == 0 && fstatat(d, "..", &parent, 0) == 0 ? 0 : -1;
	close(d);
	if (r < 0 || m.st_dev == parent.st_dev)
		return 0;
	return m.st_dev == init->root_dev && m.st_ino == init->root_ino ? 1 : -1;
}

int mafsbx_pin_prove_init(int piddir, pid_t pid, const char *id, const char *pidmode, const char *merged_dir,
			  struct mafsbx_error *err)
{
	char text[4096];
	if (read_small(piddir, "cgroup", text, sizeof(text)) < 0 ||
	    (!mafsbx_cgroup_names_container(text, id) && !mafsbx_pid_shim_names(piddir, id))) {
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "the cgroup proof failed: PID %d is not in the container's cgroup, nor a "
					     "child of its runtime shim (the engine runs in another PID namespace or on "
					     "another host)", pid);
	}
	struct mafsbx_proc_ident init, self;
	int r = mafsbx_proc_ident_of(piddir, &init);
	if (r == 0)
		r = self_ident(&self);
	if (r == 0 && !mafsbx_pidmode_shared(pidmode) &&
	    init.ns_dev == self.ns_dev && init.ns_ino == self.ns_ino) {
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "the PID namespace proof failed: PID %d is in this daemon's own PID "
					     "namespace, but the engine gives the container its own (PidMode '%s')",
					     pid, pidmode ? pidmode : "");
	}
	if (r < 0) {
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "cannot read the PID namespace and root of PID %d: %s", pid, strerror(-r));
	}
	if (root_is_merged(&init, merged_dir) < 0) {
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "the root filesystem proof failed: the root of PID %d is not the "
					     "container's (the engine's GraphDriver MergedDir %s)", pid, merged_dir);
	}
	return 0;
}

static void pin_freep(struct mafsbx_pin **p)
{
	mafsbx_pin_free(*p);
}

int mafsbx_pin_open(struct mafsbx_engine *e, const char *container, struct mafsbx_pin **out,
		    struct mafsbx_error *err)
{
	*out = NULL;
	pthread_once(&proc_once, proc_open_once);
	if (proc_fd < 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "/proc cannot be used to reach containers (%s)", strerror(proc_errno));
	struct inspect_facts a, b;
	int r = inspect_facts(e, container, &a, err);
	if (r < 0)
		return r;
	if (!a.running || a.pid <= 0)
		return mafsbx_error_set(err, MAFSBX_EK_NOT_RUNNING, "sandbox %s is not running", container);
	if (a.pid > INT32_MAX)
		return mafsbx_error_set(err, MAFSBX_EK_PROTOCOL, "inspect of %s: PID %lld out of range", container,
					a.pid);

	__attribute__((cleanup(pin_freep))) struct mafsbx_pin *p = calloc(1, sizeof(*p));
	if (!p)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	p->pidfd = p->root = -1;
	__do_close int piddir = -1;
	char path[32], text[4096];
	snprintf(p->id, sizeof(p->id), "%s", a.id);
	snprintf(p->started_at, sizeof(p->started_at), "%s", a.started_at);
	p->pid = (pid_t)a.pid;
	p->privileged = a.privileged;
	p->host_pid = a.host_pid;

	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (p->pidfd < 0) {
		return errno == ESRCH ? mafsbx_error_set(err, MAFSBX_EK_NOT_RUNNING,
							 "sandbox %s: its init process (PID %d) is gone", container,
							 p->pid)
				      : mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
							      "sandbox %s: pidfd_open(%d): %s", container, p->pid,
							      strerror(errno));
	}
	snprintf(path, sizeof(path), "%d", p->pid);
	piddir = openat(proc_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (piddir < 0) {
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "sandbox %s: its init process (PID %d) is not visible in this PID namespace",
					     container, p->pid);
	}
	if ((r = mafsbx_pin_prove_init(piddir, p->pid, p->id, a.pidmode, a.merged_dir, err)) < 0) {
		mafsbx_error_prefix(err, "sandbox %s", container);
		return r;
	}
	if (read_small(piddir, "uid_map", text, sizeof(text)) < 0 ||
	    mafsbx_id_map_parse(text, p->uid_map, MAFSBX_PIN_MAP_MAX, &p->n_uid_map) < 0 ||
	    read_small(piddir, "gid_map", text, sizeof(text)) < 0 ||
	    mafsbx_id_map_parse(text, p->gid_map, MAFSBX_PIN_MAP_MAX, &p->n_gid_map) < 0) {
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "sandbox %s: cannot read the id maps of PID %d", container, p->pid);
	}
	if (read_small(piddir, "status", text, sizeof(text)) > 0)
		parse_status(p, text);
	p->root = openat(piddir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (p->root < 0) {
		return mafsbx_error_set_full(err, MAFSBX_EK_UNSUPPORTED, EOPNOTSUPP, NULL,
					     "sandbox %s: cannot open the root of PID %d: %s", container, p->pid,
					     strerror(errno));
	}
	/* Everything above was read from /proc/PID while the pidfd says PID was
	 * still our process: a PID recycled after this point cannot matter. */
	if (!mafsbx_pin_alive(p)) {
		return mafsbx_error_set(err, MAFSBX_EK_NOT_RUNNING, "sandbox %s: its init process exited while pinning",
					container);
	}
	r = inspect_facts(e, container, &b, err);
	if (r < 0)
		return r;
	if (strcmp(a.id, b.id) || a.pid != b.pid || strcmp(a.started_at, b.started_at) || !b.running)
		return mafsbx_error_set(err, MAFSBX_EK_NOT_RUNNING, "sandbox %s restarted while pinning", container);
	*out = move_ptr(p);
	return 0;
}

void mafsbx_pin_free(struct mafsbx_pin *p)
{
	if (!p)
		return;
	if (p->root >= 0)
		close(p->root);
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p);
}
