/* flipper: the guest's side of files.sh's race, run inside the sandbox.
 *
 *   flipper DIR NAME HOSTDIR MIN_FLIPS MIN_SECONDS
 *
 * In DIR, NAME is in turn the real directory, a link to /etc and a link to
 * HOSTDIR (a path that exists on the host, not in the guest), six system
 * calls per flip:
 *
 *   rename NAME NAME.d; symlink /etc NAME; unlink NAME;
 *   symlink HOSTDIR NAME; unlink NAME; rename NAME.d NAME
 *
 * It flips at least MIN_FLIPS times and for at least MIN_SECONDS, then
 * leaves NAME a directory, writes the count to DIR/race.done and prints it.
 * A shell loop does the same with six forks per flip, which a sandbox's
 * half-CPU quota makes take 15 ms; this takes microseconds, so the host's
 * race sees many more flips in a shorter run.
 *
 * Linked statically (libc only): the guest is a busybox image. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int step(int r, const char *what, const char *path)
{
	if (r != 0) {
		fprintf(stderr, "flipper: %s %s: %s\n", what, path, strerror(errno));
		exit(1);
	}
	return r;
}

static unsigned long number(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "flipper: %s is not a number: %s\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: flipper DIR NAME HOSTDIR MIN_FLIPS MIN_SECONDS\n");
		return 2;
	}
	const char *name = argv[2], *hostdir = argv[3];
	unsigned long min_flips = number(argv[4], "MIN_FLIPS");
	unsigned long min_secs = number(argv[5], "MIN_SECONDS");
	int dfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	step(dfd < 0 ? -1 : 0, "open", argv[1]);
	char away[4096];
	if (snprintf(away, sizeof(away), "%s.d", name) >= (int)sizeof(away)) {
		fprintf(stderr, "flipper: NAME too long\n");
		return 2;
	}
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long flips = 0;
	for (;;) {
		step(renameat(dfd, name, dfd, away), "rename", name);
		step(symlinkat("/etc", dfd, name), "symlink /etc", name);
		step(unlinkat(dfd, name, 0), "unlink", name);
		step(symlinkat(hostdir, dfd, name), "symlink", hostdir);
		step(unlinkat(dfd, name, 0), "unlink", name);
		step(renameat(dfd, away, dfd, name), "rename", away);
		flips++;
		if (flips >= min_flips && (flips & 255) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((unsigned long)(now.tv_sec - t0.tv_sec) >= min_secs)
				break;
		}
	}
	char count[32];
	int n = snprintf(count, sizeof(count), "%lu\n", flips);
	int fd = openat(dfd, "race.done", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
	step(fd < 0 ? -1 : 0, "create", "race.done");
	step(write(fd, count, (size_t)n) == n ? 0 : -1, "write", "race.done");
	close(fd);
	close(dfd);
	fputs(count, stdout);
	return 0;
}
