/*
 * envfile.c: docker's environment words and --env-file format (envfile.h)
 * for `mafsbx exec`. Names are checked here with the rule the request
 * parser applies (spec.c: [A-Za-z_][A-Za-z0-9_]*), so a bad line of a file
 * is reported with its file and line rather than as a field of the request.
 */
#include "envfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

static bool name_ok(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

int envfile_put(json_t *env, const char *word, char *why, size_t n)
{
	const char *eq = strchr(word, '=');
	size_t klen = eq ? (size_t)(eq - word) : strlen(word);
	if (!name_ok(word, klen)) {
		snprintf(why, n, "'%.*s': not a variable name (want [A-Za-z_][A-Za-z0-9_]*)", (int)klen, word);
		return -1;
	}
	__do_free char *key = strndup(word, klen);
	if (!key) {
		snprintf(why, n, "out of memory");
		return -1;
	}
	/* docker: a name alone is the caller's value, and nothing when the caller has none */
	const char *value = eq ? eq + 1 : getenv(key);
	if (!value)
		return 0;
	json_t *s = json_string(value);
	if (!s) {
		snprintf(why, n, "the value of %s is not valid UTF-8", key);
		return -1;
	}
	if (json_object_set_new(env, key, s) < 0) {
		snprintf(why, n, "out of memory");
		return -1;
	}
	return 0;
}

/* One line of a file (NUL-terminated copy): 0 when used or skipped, -1 with why set. */
static int parse_line(json_t *env, char *line, char *why, size_t n)
{
	size_t len = strlen(line);
	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	char *p = line + strspn(line, " \t\v\f");
	if (*p == '\0' || *p == '#')
		return 0;
	return envfile_put(env, p, why, n);
}

long envfile_parse(json_t *env, const char *text, size_t len, char *why, size_t n)
{
	/* a UTF-8 byte order mark at the start is not part of the first name (docker drops it too) */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		text += 3;
		len -= 3;
	}
	long lineno = 0;
	while (len) {
		lineno++;
		const char *nl = memchr(text, '\n', len);
		size_t ll = nl ? (size_t)(nl - text) : len;
		if (memchr(text, '\0', ll)) {
			snprintf(why, n, "a NUL byte");
			return lineno;
		}
		__do_free char *line = strndup(text, ll);
		if (!line) {
			snprintf(why, n, "out of memory");
			return lineno;
		}
		if (parse_line(env, line, why, n) < 0)
			return lineno;
		text += nl ? ll + 1 : ll;
		len -= nl ? ll + 1 : ll;
	}
	return 0;
}

int envfile_load(json_t *env, const char *path, char *why, size_t n)
{
	__do_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, n, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* read up to one byte past the bound, so that "too large" is said, not a cut file parsed */
	__do_buf struct mafsbx_buf b = { 0 };
	char chunk[65536];
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(why, n, "%s: %s", path, strerror(errno));
			return -1;
		}
		if (r == 0)
			break;
		if (b.len + (size_t)r > ENVFILE_MAX_BYTES) {
			snprintf(why, n, "%s: larger than %d bytes", path, ENVFILE_MAX_BYTES);
			return -1;
		}
		if (mafsbx_buf_append(&b, chunk, (size_t)r) < 0) {
			snprintf(why, n, "%s: out of memory", path);
			return -1;
		}
	}
	char line_why[512];
	long bad = envfile_parse(env, b.data ? b.data : "", b.len, line_why, sizeof(line_why));
	if (bad) {
		snprintf(why, n, "%s:%ld: %s", path, bad, line_why);
		return -1;
	}
	return 0;
}
