/*
 * fuzz_guestpath.c: guest path normalisation and confinement (src/guestfs/guestpath.c).
 * Input: "WORK_DIR\n--\nPATH" (one part: PATH under /maf-sandbox/work).
 * Invariants: normalising is idempotent and yields no "." / ".." / "//";
 * a resolved path is inside the normalised work_dir; its relative form
 * re-resolves to it; the ancestor chain is top-down and ends inside the
 * target's directory; dirname stays absolute.
 */
#include <stdbool.h>

#include "error.h"
#include "fuzz.h"
#include "guestpath.h"

static bool has_dot_component(const char *p)
{
	const char *c = p;
	while (*c) {
		while (*c == '/')
			c++;
		size_t n = strcspn(c, "/");
		if ((n == 1 && c[0] == '.' && strcmp(p, ".") != 0) || (n == 2 && c[0] == '.' && c[1] == '.' && p[0] == '/'))
			return true;
		c += n;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *parts[2];
	size_t n = fuzz_split(data, size, parts, 2);
	const char *wd = n == 2 ? parts[0] : "/maf-sandbox/work";
	const char *path = parts[n - 1];
	struct mafsbx_error err;
	mafsbx_error_clear(&err);

	(void)mafsbx_gp_check_text(path, &err);
	(void)mafsbx_gp_check_bytes((const char *)data, size, &err);
	(void)mafsbx_gp_check_name(path, 0, &err);
	(void)mafsbx_gp_check_name(path, MAFSBX_GP_NAME_STRICT, &err);

	char *norm = mafsbx_gp_normalise(path, &err);
	if (norm) {
		FUZZ_CHECK(norm[0] != '\0');
		FUZZ_CHECK(!strstr(norm, "//"));
		FUZZ_CHECK(!has_dot_component(norm));
		char *again = mafsbx_gp_normalise(norm, &err);
		FUZZ_CHECK(again && strcmp(again, norm) == 0);
		free(again);
		if (norm[0] == '/') {
			char *dir = mafsbx_gp_dirname(norm, &err);
			FUZZ_CHECK(dir && dir[0] == '/');
			FUZZ_CHECK(mafsbx_gp_is_within(dir, norm));
			free(dir);
		}
	}

	char *nwd = wd[0] == '/' ? mafsbx_gp_normalise(wd, &err) : NULL;
	char *res = mafsbx_gp_resolve(wd, path, &err);
	if (res) {
		FUZZ_CHECK(nwd != NULL);
		FUZZ_CHECK(res[0] == '/');
		FUZZ_CHECK(mafsbx_gp_is_within(nwd, res));
		char *rel = mafsbx_gp_relative(wd, res, &err);
		FUZZ_CHECK(rel != NULL);
		char *back = mafsbx_gp_resolve(wd, rel, &err);
		FUZZ_CHECK(back && strcmp(back, res) == 0);
		free(back);
		free(rel);
		for (int self = 0; self < 2; self++) {
			struct mafsbx_gp_chain ch = { 0 };
			if (mafsbx_gp_ancestors(wd, res, self, &ch, &err) == 0) {
				for (size_t i = 0; i < ch.n; i++) {
					FUZZ_CHECK(ch.paths[i][0] == '/');
					if (i)
						FUZZ_CHECK(mafsbx_gp_is_within(ch.paths[i - 1], ch.paths[i]));
					FUZZ_CHECK(mafsbx_gp_is_within(ch.paths[i], res));
				}
				FUZZ_CHECK(ch.n_above <= ch.n);
				mafsbx_gp_chain_free(&ch);
			}
		}
	}
	char *wres = mafsbx_gp_resolve_write(wd, path, &err);
	if (wres) {
		FUZZ_CHECK(res && strcmp(res, wres) == 0);
		FUZZ_CHECK(strcmp(wres, nwd) != 0);
	}
	free(wres);
	free(res);
	free(nwd);
	free(norm);
	for (size_t i = 0; i < n; i++)
		free(parts[i]);
	return 0;
}
