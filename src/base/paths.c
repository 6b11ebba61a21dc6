/*
 * paths.c: the segment check of paths.h. One pass from the left; the
 * message names the path as the caller does and the segment's fault.
 */
#include "paths.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *segment_fault(const char *seg, size_t len, unsigned flags)
{
	if (len == 0)
		return flags & MAFSBX_SEG_ALLOW_EMPTY ? NULL : "an empty path segment";
	if (len == 1 && seg[0] == '.')
		return flags & MAFSBX_SEG_ALLOW_DOT ? NULL : "a '.' segment";
	if (len == 2 && seg[0] == '.' && seg[1] == '.')
		return "a '..' segment";
	return len > MAFSBX_PATH_SEGMENT_MAX ? "a segment over 255 bytes" : NULL;
}

int mafsbx_path_check_segments(const char *path, unsigned flags, struct mafsbx_error *err, const char *fmt, ...)
{
	const char *fault = NULL;
	size_t len = 0;
	for (const char *p = path;; p += len + 1) {
		len = strcspn(p, "/");
		fault = segment_fault(p, len, flags);
		if (fault || !p[len])
			break;
	}
	if (!fault)
		return 0;
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return mafsbx_error_set(err, len > MAFSBX_PATH_SEGMENT_MAX ? MAFSBX_EK_NAMETOOLONG : MAFSBX_EK_INVALID,
				"%s has %s", what, fault);
}
