/*
 * dirlist.h: the engine plane's listing of a guest directory, as the guest's
 * own `find . -mindepth 1 -maxdepth 1 -print0` prints it (plane_engine.c).
 *
 * The bytes come from the guest and are parsed as hostile: every entry must
 * be "./NAME" ended by a NUL, and NAME is only a name: empty, ".", "..",
 * anything holding a '/' or longer than NAME_MAX is refused (counted, never
 * listed); a last entry without its NUL (output cut short) is dropped;
 * duplicates are listed once. At most `max_entries` names are kept, in
 * byte order, and the listing says whether (and why) it was cut. Nothing
 * here trusts a name for more than a name: every later access to it is
 * checked by the plane as any other path.
 */
#ifndef MAFSBX_DIRLIST_H
#define MAFSBX_DIRLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define MAFSBX_DIRLIST_MAX 10000      /* entries listed at most */
#define MAFSBX_DIRLIST_NAME_MAX 255   /* a name's bytes at most (NAME_MAX) */

struct mafsbx_dirlist {
	char **names;         /* sorted (strcmp), unique; malloc'd */
	size_t n;
	size_t refused;       /* entries that were not names (see above) */
	size_t dropped;       /* names beyond max_entries, not listed */
	bool unterminated;    /* the output ended inside an entry (cut short): that entry was dropped */
};

/*
 * Parse `len` bytes of find -print0 output. 0, or EK_NOMEM. The result
 * holds at most max_entries names (0: MAFSBX_DIRLIST_MAX); `dropped` counts
 * the valid names seen past that bound (the guest's output is read no
 * further than needed to count them).
 */
int mafsbx_dirlist_parse(const void *buf, size_t len, size_t max_entries, struct mafsbx_dirlist *out,
			 struct mafsbx_error *err);
/* Whether `name` is in the listing (binary search). */
bool mafsbx_dirlist_has(const struct mafsbx_dirlist *l, const char *name);
void mafsbx_dirlist_free(struct mafsbx_dirlist *l);

#endif
