/*
 * listreader.h: a streaming reader of the engine's list answers (a JSON
 * array of objects, as GET /containers/json gives). The body is fed in
 * chunks as it arrives; each element is parsed on its own (jansson sees one
 * object at a time, never the whole document) and handed to a callback,
 * then released. Memory is bounded by the largest element, not the list.
 */
#ifndef MAFSBX_LISTREADER_H
#define MAFSBX_LISTREADER_H

#include <stddef.h>

#include <jansson.h>

#include "error.h"

/* Largest element accepted (one container's summary is a few KiB). */
#define MAFSBX_LIST_ELEMENT_MAX (4u * 1024 * 1024)

/* One element (borrowed: released after the call). 0 to go on, a negative errno to stop. */
typedef int (*mafsbx_list_each_fn)(json_t *obj, void *ctx);

struct mafsbx_listreader;

/* A reader that calls `each` per element; max_element 0: MAFSBX_LIST_ELEMENT_MAX. NULL when out of memory. */
struct mafsbx_listreader *mafsbx_listreader_new(mafsbx_list_each_fn each, void *ctx, size_t max_element);
void mafsbx_listreader_free(struct mafsbx_listreader *lr);
/*
 * Hand the callback only these top-level members of each element (`keys`:
 * NULL-terminated, borrowed for the reader's life; NULL: every member, the
 * default). The others' bytes are passed over by the scanner, never copied
 * nor parsed: a container's list entry is mostly NetworkSettings, Ports and
 * Mounts, which a listing of sandboxes does not read (doc/performance.md).
 * Their strings and nesting are still followed, their grammar no longer
 * judged; a member whose key has an escape is kept (it may spell a key asked for).
 */
void mafsbx_listreader_keep(struct mafsbx_listreader *lr, const char *const *keys);

/*
 * Feed the next bytes of the body. 0, or a negative errno with `err` set
 * (EK_PROTOCOL naming the offset for a malformed list, EK_TOO_BIG for an
 * element over the bound, or the callback's errno with its message). After
 * a failure every further feed fails the same way.
 */
int mafsbx_listreader_feed(struct mafsbx_listreader *lr, const void *data, size_t len, struct mafsbx_error *err);
/* The body ended: 0 when it was one complete array, else EK_PROTOCOL. */
int mafsbx_listreader_finish(struct mafsbx_listreader *lr, struct mafsbx_error *err);
/* Elements handed to the callback so far. */
size_t mafsbx_listreader_count(const struct mafsbx_listreader *lr);

#endif
