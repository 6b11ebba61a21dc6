/*
 * fuzz_ctl.c: the .ctl request framing (fs/ctl.c), differentially against
 * jansson. Input byte 0: 0 = the rest in one write, else the piece size of
 * the writes (only when the rest holds no newline, which would end the
 * request at a piece boundary by design). Invariants:
 *   - when jansson accepts the bytes as one object (duplicates refused, as
 *     the daemon does), the request runs once with that very object, and
 *     every write returns its count;
 *   - when the framing itself refuses (EINVAL at once, not the runner's
 *     parse), jansson refuses the bytes too: no valid request is refused;
 *   - the reply is always one JSON object and one line.
 */
#include <errno.h>
#include <stdbool.h>

#include "fuzz.h"
#include "mfs.h"
#include "mount.h"

static int runs;
static char *ran;

static int stub_run(struct mfs *m, enum mfs_ctl_kind kind, const json_t *req, json_t **reply,
		    struct mafsbx_error *err)
{
	(void)m;
	(void)kind;
	(void)err;
	runs++;
	free(ran);
	ran = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	*reply = json_pack("{s:b}", "ok", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	size_t piece = data[0];
	data++;
	size--;
	if (!piece || memchr(data, '\n', size))
		piece = size ? size : 1;

	static struct mfs fs;
	fs.run = stub_run;
	/* the open handles' state is mount.c's own (mount.h), made once for the run */
	if (!fs.handles)
		FUZZ_CHECK(mfs_handles_init(&fs) == 0);
	runs = 0;
	struct mfs_ctl *c = mfs_ctl_open(&fs, MFS_CTL_EXEC);
	FUZZ_CHECK(c != NULL);
	int first_err = 0;
	for (size_t i = 0; i < size; i += piece) {
		size_t n = size - i < piece ? size - i : piece;
		int r = mfs_ctl_write(&fs, c, (const char *)data + i, n);
		if (r < 0) {
			first_err = r;
			break;
		}
		FUZZ_CHECK(r == (int)n);
	}
	char reply[8192];
	int rn = mfs_ctl_read(c, reply, sizeof(reply) - 1);
	FUZZ_CHECK(rn > 0);
	reply[rn] = '\0';
	FUZZ_CHECK(reply[rn - 1] == '\n' && !memchr(reply, '\n', (size_t)rn - 1));
	json_error_t je;
	json_t *rj = json_loads(reply, 0, &je);
	FUZZ_CHECK(json_is_object(rj));
	const char *msg = json_string_value(json_object_get(json_object_get(rj, "error"), "message"));

	json_t *want = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
	/* jansson 2.14 swallows a NUL right after a number ({"a": 1\0}); the
	 * framing refuses every NUL, as JSON's grammar does: no oracle then */
	if (memchr(data, '\0', size)) {
		json_decref(want);
		want = NULL;
	}
	if (json_is_object(want)) {
		FUZZ_CHECK(first_err == 0);
		FUZZ_CHECK(runs == 1);
		char *w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
		FUZZ_CHECK(w && ran && strcmp(w, ran) == 0);
		free(w);
	}
	if (first_err == -EINVAL && runs == 0 && msg && !strstr(msg, "at line")) {
		/* the framing refused: no object starts with these bytes */
		FUZZ_CHECK(want == NULL || !json_is_object(want));
	}
	/* one write holds at most one request; pieces may hold several in turn */
	if (piece >= size)
		FUZZ_CHECK(runs <= 1);
	json_decref(want);
	json_decref(rj);
	(void)mfs_ctl_flush(c);
	mfs_ctl_release(c);
	free(ran);
	ran = NULL;
	return 0;
}
