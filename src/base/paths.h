/*
 * paths.h: the one check of a path's segments. A '/'-separated path given
 * by a user, a declaration or a caller is refused when a segment is empty
 * ("a//b", "dir/"), is "." or "..", or is over 255 bytes; callers whose
 * path may be absolute or lexically cleaned later say which of those they
 * accept. What a caller checks beside the segments (a leading '/', a
 * backslash, control bytes, UTF-8) stays its own.
 */
#ifndef MAFSBX_PATHS_H
#define MAFSBX_PATHS_H

#include "error.h"

#define MAFSBX_PATH_SEGMENT_MAX 255   /* bytes in one segment (NAME_MAX) */

enum mafsbx_path_seg_flags {
	MAFSBX_SEG_STRICT = 0,                /* no empty, ".", ".." or long segment */
	MAFSBX_SEG_ALLOW_EMPTY = 1u << 0,     /* "//", a leading or a trailing '/' */
	MAFSBX_SEG_ALLOW_DOT = 1u << 1,       /* "." */
};

/*
 * 0 when every segment of `path` passes; else -EINVAL ("." / ".." / empty)
 * or -ENAMETOOLONG, with the message "<what> has a '..' segment" (likewise
 * "an empty path segment", "a '.' segment", "a segment over 255 bytes"),
 * where <what> is the printf-formatted `fmt`. The first bad segment from
 * the left is the one named.
 */
int mafsbx_path_check_segments(const char *path, unsigned flags, struct mafsbx_error *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
