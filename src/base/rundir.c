/*
 * rundir.c: the runtime directory (rundir.h). One place decides where a
 * process's private files go, so the freezer's lock files and the ssh
 * transport's sockets share the same, checked, directory.
 */
#include "rundir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

char *mafsbx_rundir_choose(const char *explicit_dir)
{
	if (explicit_dir)
		return strdup(explicit_dir);
	const char *env = getenv(MAFSBX_RUNDIR_ENV);
	if (env && *env)
		return strdup(env);
	if (geteuid() == 0)
		return strdup(MAFSBX_RUNDIR_DEFAULT);
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct mafsbx_buf b = MAFSBX_BUF_INIT;
	if (x && x[0] == '/')
		mafsbx_buf_printf(&b, "%s/mafsbxfs", x);
	else
		mafsbx_buf_printf(&b, "/tmp/mafsbxfs-%u", (unsigned)geteuid());
	return b.data;
}

int mafsbx_rundir_ensure(const char *dir, struct mafsbx_error *err)
{
	char *p = strdup(dir);
	if (!p)
		return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0700) < 0 && errno != EEXIST) {
				int e = errno;
				mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, e, NULL, "cannot create runtime directory %s: %s",
						      p, strerror(e));
				free(p);
				return -e;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	struct stat st;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, ENOTDIR, NULL,
					     "runtime directory %s is not a directory", dir);
	if (st.st_uid != geteuid())
		return mafsbx_error_set_full(err, MAFSBX_EK_SYSTEM, EACCES, NULL,
					     "runtime directory %s is not owned by uid %u", dir, (unsigned)geteuid());
	return 0;
}
