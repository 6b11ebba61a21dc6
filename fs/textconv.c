/*
 * textconv.c: text into JSON: the UTF-8 "text view" of exec output, JSON
 * strings from text that should be UTF-8 but may not be, and a JSON value
 * dumped as text ending in a newline (replies, the status files).
 *
 * Exec replies carry stdout/stderr twice: the exact bytes (base64) and a
 * text view that a JSON string can hold. The view keeps valid UTF-8 as is
 * and replaces each maximal invalid subsequence with U+FFFD, the same
 * result as Python's bytes.decode("utf-8", errors="replace") that upstream's
 * ExecResult.stdout_text gives (doc/upstream.md §1.6).
 * Surrogates (ED A0..BF) and overlongs (C0, C1, E0 80..9F, F0 80..8F) are
 * invalid; so is anything above U+10FFFF.
 *
 * A view is bounded by what it costs in the reply, not by its length: a
 * control byte costs 6 bytes of JSON ("\u0001"), so 8 MiB of them would make
 * a 48 MiB string. mfs_utf8_view() stops at a budget of escaped JSON bytes
 * (at a character boundary) and says so; the exact bytes stay in the _b64
 * members.
 */
#include "mfs.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* What jansson writes for one byte of a valid string (JSON_ESCAPE_SLASH off). */
static size_t json_cost(unsigned char c)
{
	if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
		return 2;
	return c < 0x20 ? 6 : 1;
}

char *mfs_utf8_view(const unsigned char *data, size_t len, size_t max_json, size_t *out_len, bool *cut)
{
	*cut = false;
	/* the input bytes the budget covers, at most: each costs at least one */
	size_t take = len < max_json ? len : max_json;
	if (take > (SIZE_MAX - 1) / 3)
		return NULL;
	char *out = malloc(take * 3 + 1);
	if (!out)
		return NULL;
	size_t o = 0, i = 0, cost = 0;
	while (i < len) {
		size_t prefix;
		size_t n = mafsbx_utf8_decode(data + i, len - i, NULL, &prefix);
		/* a multibyte sequence is written as is; U+FFFD is 3 bytes */
		size_t c = n == 0 ? 3 : n == 1 ? json_cost(data[i]) : n;
		if (cost + c > max_json) {
			*cut = true;
			break;
		}
		cost += c;
		if (n) {
			memcpy(out + o, data + i, n);
			o += n;
			i += n;
		} else {
			out[o++] = (char)0xEF;
			out[o++] = (char)0xBF;
			out[o++] = (char)0xBD;
			i += prefix;
		}
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}

char *mfs_utf8_replace(const unsigned char *data, size_t len, size_t *out_len)
{
	/* The view with no budget: a byte costs at most 6, so `cost` cannot reach SIZE_MAX. */
	bool cut;
	return mfs_utf8_view(data, len, SIZE_MAX, out_len, &cut);
}

json_t *mfs_json_text(const char *s)
{
	if (!s)
		return json_null();
	json_t *v = json_string(s);
	if (v)
		return v;
	char *fixed = mfs_utf8_replace((const unsigned char *)s, strlen(s), NULL);
	v = fixed ? json_string(fixed) : json_null();
	free(fixed);
	return v;
}

char *mfs_json_dump_line(const json_t *v, size_t flags, size_t *len)
{
	char *s = json_dumps(v, flags);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *out = realloc(s, n + 2);
	if (!out) {
		free(s);
		return NULL;
	}
	out[n] = '\n';
	out[n + 1] = '\0';
	if (len)
		*len = n + 1;
	return out;
}
