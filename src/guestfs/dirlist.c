/*
 * dirlist.c: parsing a guest's NUL-separated listing (dirlist.h).
 */
#include "dirlist.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A name the guest may give: not empty, not "." or "..", no '/', at most NAME_MAX bytes. */
static bool good_name(const char *s, size_t n)
{
	if (n == 0 || n > MAFSBX_DIRLIST_NAME_MAX)
		return false;
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	return memchr(s, '/', n) == NULL;
}

int mafsbx_dirlist_parse(const void *buf, size_t len, size_t max_entries, struct mafsbx_dirlist *out,
			 struct mafsbx_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!max_entries)
		max_entries = MAFSBX_DIRLIST_MAX;
	const char *p = buf ? buf : "", *end = p + len;
	size_t cap = 0;
	while (p < end) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul) {
			out->unterminated = true;
			break;
		}
		size_t n = (size_t)(nul - p);
		const char *name = p + 2;
		bool ok = n >= 2 && p[0] == '.' && p[1] == '/' && good_name(name, n - 2);
		p = nul + 1;
		if (!ok) {
			out->refused++;
			continue;
		}
		if (out->n == max_entries) {
			out->dropped++;
			continue;
		}
		if (mafsbx_array_grow(&out->names, &cap, out->n + 1, sizeof(*out->names), 64, max_entries) < 0)
			goto nomem;
		if (!(out->names[out->n] = strndup(name, n - 2)))
			goto nomem;
		out->n++;
	}
	if (out->n > 1) {
		qsort(out->names, out->n, sizeof(*out->names), cmp_names);
		size_t k = 1;
		for (size_t i = 1; i < out->n; i++) {
			if (strcmp(out->names[i], out->names[k - 1]) == 0) {
				free(out->names[i]);
				out->refused++;
			} else {
				out->names[k++] = out->names[i];
			}
		}
		out->n = k;
	}
	return 0;
nomem:
	mafsbx_dirlist_free(out);
	return mafsbx_error_set(err, MAFSBX_EK_NOMEM, "out of memory");
}

bool mafsbx_dirlist_has(const struct mafsbx_dirlist *l, const char *name)
{
	return l->n && bsearch(&name, l->names, l->n, sizeof(*l->names), cmp_names) != NULL;
}

void mafsbx_dirlist_free(struct mafsbx_dirlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	memset(l, 0, sizeof(*l));
}
