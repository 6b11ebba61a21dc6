/*
 * faultctl.c: one command to the fault relay's control socket (faultctl.h).
 */
#include "faultctl.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int fault_ctl(const char *path, const char *cmd, char *reply, size_t size)
{
	if (!size)
		return -EINVAL;
	reply[0] = '\0';
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	strcpy(a.sun_path, path);
	int r = 0;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		r = -errno;
		goto out;
	}
	char line[1024];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);
	if (n < 0 || (size_t)n >= sizeof(line)) {
		r = -E2BIG;
		goto out;
	}
	for (int off = 0; off < n;) {
		ssize_t w = write(fd, line + off, (size_t)(n - off));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		off += (int)w;
	}
	size_t have = 0;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int pr = poll(&p, 1, 10000);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			r = pr == 0 ? -ETIMEDOUT : -errno;
			goto out;
		}
		ssize_t got = read(fd, reply + have, size - 1 - have);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		have += (size_t)got;
		reply[have] = '\0';
		if (got == 0 || strchr(reply, '\n') || have == size - 1)
			break;
	}
	char *nl = strchr(reply, '\n');
	if (nl)
		*nl = '\0';
	if (!have) {
		r = -ECONNRESET;
		goto out;
	}
	r = strncmp(reply, "ok", 2) == 0 ? 0 : 1;
out:
	close(fd);
	return r;
}
