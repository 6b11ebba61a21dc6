/*
 * rootfs.c: builds the offline test image's root filesystem as an in-memory
 * tar with libarchive's write API, from the host's static busybox.
 *
 * The applet list comes from running the host busybox (`busybox --list`),
 * after checking it is a static ELF: that is the binary going into the
 * image, so its own list is the truth, and a dynamic one is refused before
 * anything runs. The child gets an empty environment, /dev/null as stdin and
 * stderr, and a bounded wait; it is killed when it overstays.
 */
#include "rootfs.h"

#include <archive.h>
#include <archive_entry.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"

#define BUSYBOX_MAX (64 * 1024 * 1024)
#define LIST_MAX (256 * 1024)
#define LIST_TIMEOUT_MS 10000
#define MAX_APPLETS 4096
#define SANDBOX_ID 1000

static int missing(const char *path, int e, struct mafsbx_error *err)
{
	if (e == ENOENT && strstr(path, "egress-proxy"))
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, ENOENT, NULL,
					     "%s not found: it is built and installed with mafsbxfs (tools/egress-proxy)",
					     path);
	if (e == ENOENT)
		return mafsbx_error_set_full(err, MAFSBX_EK_INVALID, ENOENT, NULL,
					     "%s not found: install Debian's busybox-static", path);
	return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL, "cannot open %s: %s", path, strerror(e));
}

static int read_exact_at(int fd, void *p, size_t n, off_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, (char *)p + done, n - done, off + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static int malformed(const char *path, struct mafsbx_error *err)
{
	return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s is a truncated or malformed ELF file", path);
}

int mafsbx_rootfs_check_static(const char *path, struct mafsbx_error *err)
{
	__do_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return missing(path, errno, err);
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR))
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s is not an executable regular file", path);
	unsigned char ident[EI_NIDENT];
	if (read_exact_at(fd, ident, sizeof(ident), 0) < 0 || memcmp(ident, ELFMAG, SELFMAG) != 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s is not an ELF executable", path);
	/* Only the host's own word size and byte order can run here anyway. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const unsigned char native_data = ELFDATA2LSB;
#else
	const unsigned char native_data = ELFDATA2MSB;
#endif
	const unsigned char native_class = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
	if (ident[EI_CLASS] != native_class || ident[EI_DATA] != native_data)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s is an ELF file for another architecture", path);

	uint64_t phoff;
	unsigned phnum, phentsize, type;
	if (native_class == ELFCLASS64) {
		Elf64_Ehdr eh;
		if (read_exact_at(fd, &eh, sizeof(eh), 0) < 0)
			return malformed(path, err);
		phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize, type = eh.e_type;
		if (phentsize != sizeof(Elf64_Phdr) && phnum)
			return malformed(path, err);
	} else {
		Elf32_Ehdr eh;
		if (read_exact_at(fd, &eh, sizeof(eh), 0) < 0)
			return malformed(path, err);
		phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize, type = eh.e_type;
		if (phentsize != sizeof(Elf32_Phdr) && phnum)
			return malformed(path, err);
	}
	if (type != ET_EXEC && type != ET_DYN)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s is an ELF file but not an executable", path);
	if (phnum == 0 || phoff > (uint64_t)st.st_size)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s is an ELF file without program headers", path);
	for (unsigned i = 0; i < phnum; i++) {
		uint32_t ptype;
		off_t at = (off_t)(phoff + (uint64_t)i * phentsize);
		/* p_type is the first 32-bit field in both classes. */
		if (read_exact_at(fd, &ptype, sizeof(ptype), at) < 0)
			return malformed(path, err);
		if (ptype == PT_INTERP) {
			return mafsbx_error_set(err, MAFSBX_EK_INVALID,
						"%s is dynamically linked; the image has no libc: install Debian's "
						"busybox-static (its /bin/busybox is static)",
						path);
		}
	}
	return 0;
}

void mafsbx_rootfs_free_names(char **names)
{
	if (!names)
		return;
	for (char **p = names; *p; p++)
		free(*p);
	free(names);
}

static void free_namesp(char ***names)
{
	mafsbx_rootfs_free_names(*names);
}
#define __do_free_names __attribute__((cleanup(free_namesp)))

/* A name that can sit in /bin as a plain entry ("[" and "[[" are applets). */
static bool applet_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 64 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || (unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

/* Start `busybox --list` with its stdout on a pipe: *pid and *rfd (the read end). */
static int spawn_list(const char *busybox, pid_t *pid, int *rfd, struct mafsbx_error *err)
{
	int pipefd[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "pipe: %s", strerror(errno));
	int ret = posix_spawn_file_actions_init(&fa);
	if (ret != 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, ret, NULL, "posix_spawn: %s", strerror(ret));
	}
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	char *const argv[] = { (char *)busybox, (char *)"--list", NULL };
	char *const envp[] = { NULL };
	ret = posix_spawn(pid, busybox, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (ret != 0) {
		close(pipefd[0]);
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, ret, NULL, "cannot run %s --list: %s", busybox,
					     strerror(ret));
	}
	*rfd = pipefd[0];
	return 0;
}

/* Read the child's stdout to its end, at most LIST_MAX bytes, until `deadline`. */
static int read_list(const char *busybox, int fd, long long deadline, struct mafsbx_buf *out,
		     struct mafsbx_error *err)
{
	for (;;) {
		long long left = deadline - mafsbx_now_ms();
		if (left <= 0)
			return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "%s --list did not finish within %d ms", busybox,
						LIST_TIMEOUT_MS);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "poll: %s", strerror(errno));
		if (pr == 0)
			continue;
		char chunk[4096];
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "read: %s", strerror(errno));
		if (n == 0)
			return 0;
		if (out->len + (size_t)n > LIST_MAX)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s --list printed more than %d bytes", busybox,
						LIST_MAX);
		if (mafsbx_buf_append(out, chunk, (size_t)n) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	}
}

/* stdout closed: the child is exiting. Reap it, still bounded by `deadline`; *pid is -1 once reaped. */
static int reap_list(const char *busybox, pid_t *pid, long long deadline, struct mafsbx_error *err)
{
	int status = 0;
	pid_t w;
	for (;;) {
		w = waitpid(*pid, &status, WNOHANG);
		if (w < 0 && errno == EINTR)
			continue;
		if (w != 0)
			break;
		if (mafsbx_now_ms() >= deadline)
			return mafsbx_error_set(err, MAFSBX_EK_TIMEOUT, "%s --list did not exit within %d ms", busybox,
						LIST_TIMEOUT_MS);
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	*pid = -1;
	if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s --list failed (is it busybox?)", busybox);
	return 0;
}

/* Run `busybox --list` and collect its stdout (bounded in size and time). */
static int run_list(const char *busybox, struct mafsbx_buf *out, struct mafsbx_error *err)
{
	pid_t pid = -1;
	int fd = -1;
	int ret = spawn_list(busybox, &pid, &fd, err);
	if (ret < 0)
		return ret;
	long long deadline = mafsbx_now_ms() + LIST_TIMEOUT_MS;
	ret = read_list(busybox, fd, deadline, out, err);
	close(fd);
	if (ret == 0)
		ret = reap_list(busybox, &pid, deadline, err);
	if (pid > 0) {
		/* Only on failure paths: our own child, killed and reaped. */
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	return ret;
}

int mafsbx_rootfs_applets(const char *busybox, char ***names, size_t *count, struct mafsbx_error *err)
{
	__do_buf struct mafsbx_buf list = MAFSBX_BUF_INIT;
	size_t n = 0;
	int ret = run_list(busybox, &list, err);
	if (ret < 0)
		return ret;
	__do_free_names char **v = calloc(MAX_APPLETS + 1, sizeof(*v));
	if (!v)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	const char *p = list.data ? list.data : "";
	while (*p) {
		size_t len = strcspn(p, "\n");
		const char *line = p;
		p += len + (p[len] == '\n');
		if (len && line[len - 1] == '\r')
			len--;
		if (len == 0)
			continue;
		if (!applet_name_ok(line, len)) {
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s --list printed an impossible applet name '%.*s'",
						busybox, (int)(len > 64 ? 64 : len), line);
		}
		if (len == strlen("busybox") && memcmp(line, "busybox", len) == 0)
			continue;
		if (n == MAX_APPLETS) {
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s --list printed more than %d applets",
						busybox, MAX_APPLETS);
		}
		if (!(v[n] = strndup(line, len)))
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
		n++;
	}
	if (n == 0)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s --list printed no applets", busybox);
	*names = move_ptr(v);
	*count = n;
	return 0;
}

/* ---- tar writing -------------------------------------------------------- */

struct writer {
	struct archive *a;
	struct archive_entry *e;
	struct mafsbx_buf out;
	time_t mtime;
};

static void writer_free(struct writer *w)
{
	if (w->a)
		archive_write_free(w->a);
	if (w->e)
		archive_entry_free(w->e);
	mafsbx_buf_free(&w->out);
}

static la_ssize_t write_cb(struct archive *a, void *ctx, const void *buf, size_t len)
{
	struct writer *w = ctx;
	if (mafsbx_buf_append(&w->out, buf, len) < 0) {
		archive_set_error(a, ENOMEM, "out of memory");
		return -1;
	}
	return (la_ssize_t)len;
}

static int add(struct writer *w, const char *path, mode_t type, mode_t perm, int id, const char *link,
	       const void *data, size_t size, struct mafsbx_error *err)
{
	struct archive_entry *e = archive_entry_clear(w->e);
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm);
	archive_entry_set_uid(e, id);
	archive_entry_set_gid(e, id);
	archive_entry_set_uname(e, id ? "sandbox" : "root");
	archive_entry_set_gname(e, id ? "sandbox" : "root");
	archive_entry_set_mtime(e, w->mtime, 0);
	if (link)
		archive_entry_set_symlink(e, link);
	archive_entry_set_size(e, type == AE_IFREG ? (la_int64_t)size : 0);
	if (archive_write_header(w->a, e) != ARCHIVE_OK)
		goto fail;
	if (type == AE_IFREG && size) {
		la_ssize_t n = archive_write_data(w->a, data, size);
		if (n < 0 || (size_t)n != size)
			goto fail;
	}
	return 0;
fail:
	return mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "writing %s into the rootfs tar: %s", path,
				archive_error_string(w->a) ? archive_error_string(w->a) : "unknown error");
}

static int slurp(const char *path, char **data, size_t *len, time_t *mtime, struct mafsbx_error *err)
{
	__do_buf struct mafsbx_buf b = MAFSBX_BUF_INIT;
	__do_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return missing(path, errno, err);
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size > BUSYBOX_MAX)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s is larger than %d bytes", path, BUSYBOX_MAX);
	*mtime = st.st_mtime;
	for (;;) {
		if (mafsbx_buf_reserve(&b, 65536) < 0)
			return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory reading %s", path);
		ssize_t n = read(fd, b.data + b.len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, errno, NULL, "cannot read %s: %s", path,
						     strerror(errno));
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
		if (b.len > BUSYBOX_MAX)
			return mafsbx_error_set(err, MAFSBX_EK_INVALID, "%s is larger than %d bytes", path, BUSYBOX_MAX);
	}
	*data = mafsbx_buf_steal(&b, len);
	if (!*data)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory reading %s", path);
	return 0;
}

static int build(const char *busybox, const char *proxy, void **tar, size_t *tar_len, size_t *applets,
		 struct mafsbx_error *err)
{
	__attribute__((cleanup(writer_free))) struct writer w = { .out = MAFSBX_BUF_INIT };
	__do_free_names char **names = NULL;
	size_t count = 0;
	__do_free char *bb = NULL;
	size_t bb_len = 0;
	int ret;

	if (!busybox)
		busybox = MAFSBX_ROOTFS_BUSYBOX;
	if ((ret = mafsbx_rootfs_check_static(busybox, err)) < 0)
		return ret;
	if ((ret = slurp(busybox, &bb, &bb_len, &w.mtime, err)) < 0)
		return ret;
	if ((ret = mafsbx_rootfs_applets(busybox, &names, &count, err)) < 0)
		return ret;
	__do_free char *px = NULL;
	size_t px_len = 0;
	time_t px_mtime;
	if (proxy && ((ret = mafsbx_rootfs_check_static(proxy, err)) < 0 ||
		      (ret = slurp(proxy, &px, &px_len, &px_mtime, err)) < 0))
		return ret;

	w.a = archive_write_new();
	w.e = archive_entry_new();
	if (!w.a || !w.e)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (archive_write_set_format_pax_restricted(w.a) != ARCHIVE_OK ||
	    archive_write_add_filter_none(w.a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w.a, 1) != ARCHIVE_OK ||
	    archive_write_open(w.a, &w, NULL, write_cb, NULL) != ARCHIVE_OK) {
		return mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "cannot start the rootfs tar: %s",
					archive_error_string(w.a) ? archive_error_string(w.a) : "unknown error");
	}

	static const char passwd[] = MAFSBX_ROOTFS_PASSWD;
	static const char group[] = MAFSBX_ROOTFS_GROUP;
	if ((ret = add(&w, "bin/", AE_IFDIR, 0755, 0, NULL, NULL, 0, err)) < 0 ||
	    (ret = add(&w, "bin/busybox", AE_IFREG, 0755, 0, NULL, bb, bb_len, err)) < 0)
		return ret;
	for (size_t i = 0; i < count; i++) {
		char path[80];
		snprintf(path, sizeof(path), "bin/%s", names[i]);
		/* Relative, so the link resolves inside any root it lands in. */
		if ((ret = add(&w, path, AE_IFLNK, 0777, 0, "busybox", NULL, 0, err)) < 0)
			return ret;
	}
	if ((ret = add(&w, "dev/", AE_IFDIR, 0755, 0, NULL, NULL, 0, err)) < 0 ||
	    (ret = add(&w, "etc/", AE_IFDIR, 0755, 0, NULL, NULL, 0, err)) < 0 ||
	    (ret = add(&w, "etc/group", AE_IFREG, 0644, 0, NULL, group, sizeof(group) - 1, err)) < 0 ||
	    (ret = add(&w, "etc/passwd", AE_IFREG, 0644, 0, NULL, passwd, sizeof(passwd) - 1, err)) < 0 ||
	    (ret = add(&w, "home/", AE_IFDIR, 0755, 0, NULL, NULL, 0, err)) < 0 ||
	    (ret = add(&w, "home/sandbox/", AE_IFDIR, 0755, SANDBOX_ID, NULL, NULL, 0, err)) < 0 ||
	    (ret = add(&w, "proc/", AE_IFDIR, 0555, 0, NULL, NULL, 0, err)) < 0 ||
	    (ret = add(&w, "root/", AE_IFDIR, 0700, 0, NULL, NULL, 0, err)) < 0 ||
	    (ret = add(&w, "sys/", AE_IFDIR, 0555, 0, NULL, NULL, 0, err)) < 0 ||
	    (ret = add(&w, "tmp/", AE_IFDIR, 01777, 0, NULL, NULL, 0, err)) < 0)
		return ret;
	if (px && ((ret = add(&w, "usr/", AE_IFDIR, 0755, 0, NULL, NULL, 0, err)) < 0 ||
		   (ret = add(&w, "usr/bin/", AE_IFDIR, 0755, 0, NULL, NULL, 0, err)) < 0 ||
		   (ret = add(&w, &MAFSBX_ROOTFS_PROXY_IN_IMAGE[1], AE_IFREG, 0755, 0, NULL, px, px_len, err)) < 0))
		return ret;
	if (archive_write_close(w.a) != ARCHIVE_OK) {
		return mafsbx_error_set(err, MAFSBX_EK_SYSTEM, "cannot finish the rootfs tar: %s",
					archive_error_string(w.a) ? archive_error_string(w.a) : "unknown error");
	}
	*tar = mafsbx_buf_steal(&w.out, tar_len);
	if (!*tar)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	if (applets)
		*applets = count;
	return 0;
}

int mafsbx_rootfs_build(const char *busybox, void **tar, size_t *tar_len, size_t *applets,
			struct mafsbx_error *err)
{
	return build(busybox, NULL, tar, tar_len, applets, err);
}

int mafsbx_rootfs_build_proxy(const char *busybox, const char *proxy, void **tar, size_t *tar_len,
			      struct mafsbx_error *err)
{
	if (!proxy)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "no egress proxy program given");
	return build(busybox, proxy, tar, tar_len, NULL, err);
}
