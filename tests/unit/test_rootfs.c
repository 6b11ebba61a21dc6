/*
 * test_rootfs.c: the offline image's rootfs tar, read back with libarchive
 * (every applet linked, passwd/group, modes and owners), and the refusal of
 * missing, non-ELF and dynamically linked binaries (ELF files crafted here,
 * so the parser is tested without depending on what the host has).
 */
#include <archive.h>
#include <archive_entry.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rootfs.h"

static char tmpdir[PATH_MAX];

static int group_setup(void **state)
{
	(void)state;
	const char *t = getenv("TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/mafsbx-test-rootfs-XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_bytes(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	chmod(path, mode);
}

/* A minimal native ELF64 executable image: header + program headers. */
static void craft_elf(const char *path, bool with_interp, uint16_t type)
{
	unsigned char buf[sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr)];
	memset(buf, 0, sizeof(buf));
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = type;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 2;
	Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(Elf64_Ehdr));
	ph[0].p_type = PT_LOAD;
	ph[1].p_type = with_interp ? PT_INTERP : PT_NOTE;
	write_bytes(path, buf, sizeof(buf), 0755);
}

static void expect_refused(const char *path, const char *needle)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	int r = mafsbx_rootfs_check_static(path, &err);
	if (r == 0)
		fail_msg("%s accepted", path);
	assert_int_equal(r, -err.err);
	if (!strstr(err.message, needle))
		fail_msg("message '%s' lacks '%s'", err.message, needle);
	/* The build refuses the same way, before running anything. */
	void *tar = NULL;
	size_t len = 0;
	mafsbx_error_clear(&err);
	assert_int_equal(mafsbx_rootfs_build(path, &tar, &len, NULL, &err), r);
	assert_null(tar);
	assert_non_null(strstr(err.message, needle));
}

static void test_refusals(void **state)
{
	(void)state;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/absent", tmpdir);
	expect_refused(p, "not found: install Debian's busybox-static");

	snprintf(p, sizeof(p), "%s/script", tmpdir);
	write_bytes(p, "#!/bin/sh\necho\n", 15, 0755);
	expect_refused(p, "not an ELF executable");

	snprintf(p, sizeof(p), "%s/noexec", tmpdir);
	craft_elf(p, false, ET_EXEC);
	chmod(p, 0644);
	expect_refused(p, "not an executable regular file");

	expect_refused(tmpdir, "not an executable regular file");

#if defined(__x86_64__)
	snprintf(p, sizeof(p), "%s/dynamic", tmpdir);
	craft_elf(p, true, ET_EXEC);
	expect_refused(p, "dynamically linked");

	snprintf(p, sizeof(p), "%s/dynpie", tmpdir);
	craft_elf(p, true, ET_DYN);
	expect_refused(p, "dynamically linked");

	snprintf(p, sizeof(p), "%s/object", tmpdir);
	craft_elf(p, false, ET_REL);
	expect_refused(p, "not an executable");

	snprintf(p, sizeof(p), "%s/truncated", tmpdir);
	write_bytes(p, ELFMAG "\x02\x01\x01", 7, 0755);
	expect_refused(p, "ELF");

	/* A static one passes the check (it is never run by this test). */
	snprintf(p, sizeof(p), "%s/static", tmpdir);
	craft_elf(p, false, ET_EXEC);
	struct mafsbx_error err;
	assert_int_equal(mafsbx_rootfs_check_static(p, &err), 0);
#endif

	/* This test program itself is dynamically linked. */
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = '\0';
	expect_refused(self, "dynamically linked");
}

struct seen {
	const char *path;
	mode_t type;
	mode_t perm;
	int uid, gid;
	bool found;
};

static void test_build_from_host_busybox(void **state)
{
	(void)state;
	if (access(MAFSBX_ROOTFS_BUSYBOX, X_OK) != 0)
		skip(); /* contrib/setup.sh installs busybox-static; CI fails on a skip */

	struct mafsbx_error err;
	void *tar = NULL;
	size_t len = 0, applets = 0;
	if (mafsbx_rootfs_build(NULL, &tar, &len, &applets, &err) != 0)
		fail_msg("build failed: %s", err.message);
	assert_true(applets > 100); /* Debian's busybox-static has ~270 */

	char **names = NULL;
	size_t count = 0;
	assert_int_equal(mafsbx_rootfs_applets(MAFSBX_ROOTFS_BUSYBOX, &names, &count, &err), 0);
	assert_int_equal(count, applets);

	struct stat bst;
	assert_int_equal(stat(MAFSBX_ROOTFS_BUSYBOX, &bst), 0);

	struct seen want[] = {
		{ "bin/", AE_IFDIR, 0755, 0, 0, false },
		{ "bin/busybox", AE_IFREG, 0755, 0, 0, false },
		{ "etc/passwd", AE_IFREG, 0644, 0, 0, false },
		{ "etc/group", AE_IFREG, 0644, 0, 0, false },
		{ "tmp/", AE_IFDIR, 01777, 0, 0, false },
		{ "root/", AE_IFDIR, 0700, 0, 0, false },
		{ "home/sandbox/", AE_IFDIR, 0755, 1000, 1000, false },
		{ "dev/", AE_IFDIR, 0755, 0, 0, false },
		{ "proc/", AE_IFDIR, 0555, 0, 0, false },
	};

	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	assert_int_equal(archive_read_open_memory(a, tar, len), ARCHIVE_OK);
	struct archive_entry *e;
	size_t links = 0;
	bool sh = false, sleep_ = false, bracket = false;
	char *passwd = NULL, *group = NULL;
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		const char *path = archive_entry_pathname(e);
		assert_true(path[0] != '/');
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			if (strcmp(path, want[i].path) != 0)
				continue;
			if (archive_entry_filetype(e) != want[i].type || archive_entry_perm(e) != want[i].perm ||
			    archive_entry_uid(e) != want[i].uid || archive_entry_gid(e) != want[i].gid)
				fail_msg("%s: type %o perm %o owner %lld:%lld", path, archive_entry_filetype(e),
					 archive_entry_perm(e), (long long)archive_entry_uid(e),
					 (long long)archive_entry_gid(e));
			assert_false(want[i].found);
			want[i].found = true;
		}
		if (archive_entry_filetype(e) == AE_IFLNK) {
			assert_string_equal(archive_entry_symlink(e), "busybox");
			assert_int_equal(strncmp(path, "bin/", 4), 0);
			assert_null(strchr(path + 4, '/'));
			bool listed = false;
			for (size_t i = 0; i < count && !listed; i++)
				listed = strcmp(names[i], path + 4) == 0;
			assert_true(listed);
			links++;
			sh |= strcmp(path, "bin/sh") == 0;
			sleep_ |= strcmp(path, "bin/sleep") == 0;
			bracket |= strcmp(path, "bin/[") == 0;
		}
		if (strcmp(path, "bin/busybox") == 0) {
			assert_int_equal(archive_entry_size(e), bst.st_size);
			char *data = malloc((size_t)bst.st_size);
			assert_non_null(data);
			assert_int_equal(archive_read_data(a, data, (size_t)bst.st_size), bst.st_size);
			FILE *fp = fopen(MAFSBX_ROOTFS_BUSYBOX, "rb");
			char *host = malloc((size_t)bst.st_size);
			assert_non_null(fp);
			assert_non_null(host);
			assert_int_equal(fread(host, 1, (size_t)bst.st_size, fp), (size_t)bst.st_size);
			fclose(fp);
			assert_memory_equal(data, host, (size_t)bst.st_size);
			free(data);
			free(host);
		}
		if (strcmp(path, "etc/passwd") == 0 || strcmp(path, "etc/group") == 0) {
			size_t n = (size_t)archive_entry_size(e);
			char *s = calloc(1, n + 1);
			assert_non_null(s);
			assert_int_equal(archive_read_data(a, s, n), (la_ssize_t)n);
			if (path[4] == 'p')
				passwd = s;
			else
				group = s;
		}
	}
	archive_read_free(a);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!want[i].found)
			fail_msg("%s missing from the rootfs", want[i].path);
	assert_int_equal(links, applets);
	assert_true(sh && sleep_ && bracket);
	assert_non_null(passwd);
	assert_non_null(group);
	assert_string_equal(passwd, "root:x:0:0:root:/root:/bin/sh\n"
				    "sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n");
	assert_string_equal(group, "root:x:0:\nsandbox:x:1000:\n");
	free(passwd);
	free(group);
	mafsbx_rootfs_free_names(names);
	free(tar);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_build_from_host_busybox),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
