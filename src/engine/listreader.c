/*
 * listreader.c: the engine's list answers read element by element
 * (listreader.h). A small state machine finds where each top-level element
 * starts and ends (tracking strings, escapes and nesting); the element's
 * bytes alone are parsed by jansson, which judges their grammar, and the
 * object is handed to the callback and released at once. With a keep list
 * (mafsbx_listreader_keep) only the members asked for are copied out of
 * the element, so jansson builds nothing for the rest.
 */
#include "listreader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

enum lr_state {
	LR_BEFORE,     /* before '[' */
	LR_FIRST,      /* after '[': an element or ']' */
	LR_NEXT,       /* after ',': an element */
	LR_IN,         /* inside an element */
	LR_AFTER,      /* after an element: ',' or ']' */
	LR_DONE,       /* after ']': only white space */
	LR_FAILED,
};

struct mafsbx_listreader {
	mafsbx_list_each_fn each;
	void *ctx;
	size_t max_element;
	enum lr_state st;
	struct mafsbx_buf elem;
	size_t depth;
	bool in_string, escape;
	unsigned long long offset;     /* bytes fed so far */
	size_t count;
	struct mafsbx_error failure;   /* kept to repeat after a failure */
	int failure_r;
	/* the keep list: where a top-level member stands (depth 1 only) */
	const char *const *keep;
	enum { M_BEFORE_KEY, M_KEY, M_VALUE } member;
	bool keep_cur;                 /* the member's bytes are copied */
	bool key_escaped;
	size_t key_len;                /* bytes of the key; over sizeof(key) - 1: no key asked for is as long */
	char key[64];
	size_t kept;                   /* members copied so far in this element */
};

struct mafsbx_listreader *mafsbx_listreader_new(mafsbx_list_each_fn each, void *ctx, size_t max_element)
{
	if (!each)
		return NULL;
	struct mafsbx_listreader *lr = calloc(1, sizeof(*lr));
	if (!lr)
		return NULL;
	lr->each = each;
	lr->ctx = ctx;
	lr->max_element = max_element ? max_element : MAFSBX_LIST_ELEMENT_MAX;
	lr->st = LR_BEFORE;
	return lr;
}

void mafsbx_listreader_free(struct mafsbx_listreader *lr)
{
	if (!lr)
		return;
	mafsbx_buf_free(&lr->elem);
	free(lr);
}

void mafsbx_listreader_keep(struct mafsbx_listreader *lr, const char *const *keys)
{
	if (lr)
		lr->keep = keys;
}

size_t mafsbx_listreader_count(const struct mafsbx_listreader *lr)
{
	return lr ? lr->count : 0;
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

__attribute__((format(printf, 4, 5)))
static int fail(struct mafsbx_listreader *lr, struct mafsbx_error *err, enum mafsbx_err_kind kind,
		const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lr->failure_r = mafsbx_error_setv(&lr->failure, kind, fmt, ap);
	va_end(ap);
	lr->st = LR_FAILED;
	mafsbx_buf_free(&lr->elem);
	if (err)
		*err = lr->failure;
	return lr->failure_r;
}

static int repeat_failure(struct mafsbx_listreader *lr, struct mafsbx_error *err)
{
	if (err)
		*err = lr->failure;
	return lr->failure_r;
}

/* One element's bytes are complete: parse, hand over, release. */
static int element_done(struct mafsbx_listreader *lr, struct mafsbx_error *err)
{
	json_error_t je;
	json_t *obj = json_loadb(lr->elem.data, lr->elem.len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return fail(lr, err, MAFSBX_EK_PROTOCOL, "list element %zu is not a JSON object: %s", lr->count,
			    obj ? "another type" : je.text);
	}
	int r = lr->each(obj, lr->ctx);
	json_decref(obj);
	if (r < 0) {
		if (r == -ENOMEM)
			return fail(lr, err, MAFSBX_EK_NOMEM, "out of memory reading list element %zu", lr->count);
		return fail(lr, err, MAFSBX_EK_SYSTEM, "list element %zu refused: %s", lr->count, strerror(-r));
	}
	lr->count++;
	/* Keep a small buffer for the next element; give back a large one. */
	if (lr->elem.cap > 64 * 1024)
		mafsbx_buf_free(&lr->elem);
	else
		mafsbx_buf_reset(&lr->elem);
	lr->st = LR_AFTER;
	return 0;
}

/* Scan inside an element from p; returns bytes consumed, the element ending at *done. */
static size_t scan_element(struct mafsbx_listreader *lr, const unsigned char *p, size_t n, bool *done)
{
	size_t i = 0;
	*done = false;
	for (; i < n; i++) {
		unsigned char c = p[i];
		if (lr->in_string) {
			if (lr->escape)
				lr->escape = false;
			else if (c == '\\')
				lr->escape = true;
			else if (c == '"')
				lr->in_string = false;
			continue;
		}
		if (c == '"') {
			lr->in_string = true;
		} else if (c == '{' || c == '[') {
			lr->depth++;
		} else if (c == '}' || c == ']') {
			if (--lr->depth == 0) {
				*done = true;
				return i + 1;
			}
		}
	}
	return i;
}

/* The key just read (lr->key): is it asked for? */
static bool key_wanted(const struct mafsbx_listreader *lr)
{
	if (lr->key_len >= sizeof(lr->key))
		return false;   /* a key asked for is short, escaped or not */
	if (lr->key_escaped)
		return true;
	for (const char *const *k = lr->keep; *k; k++)
		if (strlen(*k) == lr->key_len && !memcmp(*k, lr->key, lr->key_len))
			return true;
	return false;
}

/* The key's closing quote: its member is copied (with a separating comma) or passed over. */
static int key_done(struct mafsbx_listreader *lr)
{
	lr->member = M_VALUE;
	lr->keep_cur = key_wanted(lr);
	if (!lr->keep_cur)
		return 0;
	if ((lr->kept++ && mafsbx_buf_append(&lr->elem, ",", 1) < 0) || mafsbx_buf_append(&lr->elem, "\"", 1) < 0 ||
	    mafsbx_buf_append(&lr->elem, lr->key, lr->key_len) < 0 || mafsbx_buf_append(&lr->elem, "\"", 1) < 0)
		return -ENOMEM;
	return 0;
}

/*
 * scan_element with a keep list: the element's '{', the members asked for
 * and its '}' are appended to lr->elem as they are scanned (a run of kept
 * bytes at a time). Returns bytes consumed, or -ENOMEM as (size_t)-1.
 */
static size_t scan_element_keep(struct mafsbx_listreader *lr, const unsigned char *p, size_t n, bool *done)
{
	size_t run = 0;   /* start of the bytes being kept, when keeping */
	bool ok = true;
	*done = false;
#define KEEPING (lr->member == M_VALUE && lr->keep_cur)
#define FLUSH(end) (ok = ok && (!KEEPING || mafsbx_buf_append(&lr->elem, p + run, (end) - run) == 0))
	size_t i = 0;
	for (; i < n && ok; i++) {
		unsigned char c = p[i];
		if (lr->in_string) {
			bool key = lr->depth == 1 && lr->member == M_KEY;
			if (lr->escape) {
				lr->escape = false;
			} else if (c == '\\') {
				lr->escape = true;
				lr->key_escaped |= key;
			} else if (c == '"') {
				lr->in_string = false;
				if (key)
					ok = key_done(lr) == 0, run = i + 1;
				continue;
			}
			if (key && lr->key_len++ < sizeof(lr->key) - 1)
				lr->key[lr->key_len - 1] = (char)c;
			continue;
		}
		if (c == '"') {
			lr->in_string = true;
			if (lr->depth == 1 && lr->member == M_BEFORE_KEY) {
				lr->member = M_KEY;
				lr->key_len = 0;
				lr->key_escaped = false;
			}
		} else if (c == '{' || c == '[') {
			if (lr->depth++ == 0) {
				lr->member = M_BEFORE_KEY;
				lr->kept = 0;
				ok = mafsbx_buf_append(&lr->elem, "{", 1) == 0;
			}
		} else if (c == '}' || c == ']') {
			if (--lr->depth == 0) {
				FLUSH(i);
				ok = ok && mafsbx_buf_append(&lr->elem, "}", 1) == 0;
				*done = true;
				return ok ? i + 1 : (size_t)-1;
			}
		} else if (c == ',' && lr->depth == 1) {
			FLUSH(i);
			lr->member = M_BEFORE_KEY;
			lr->keep_cur = false;
		}
	}
	FLUSH(i);
#undef FLUSH
#undef KEEPING
	return ok ? i : (size_t)-1;
}

int mafsbx_listreader_feed(struct mafsbx_listreader *lr, const void *data, size_t len, struct mafsbx_error *err)
{
	if (!lr)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list reader: none");
	if (lr->st == LR_FAILED)
		return repeat_failure(lr, err);
	const unsigned char *p = data;
	size_t i = 0;
	while (i < len) {
		unsigned char c = p[i];
		unsigned long long at = lr->offset + i;
		switch (lr->st) {
		case LR_BEFORE:
			if (is_space(c)) {
				i++;
			} else if (c == '[') {
				lr->st = LR_FIRST;
				i++;
			} else {
				return fail(lr, err, MAFSBX_EK_PROTOCOL, "the list is not a JSON array (byte %llu is '%c')",
					    at, c >= 0x20 && c < 0x7f ? c : '?');
			}
			break;
		case LR_FIRST:
		case LR_NEXT:
			if (is_space(c)) {
				i++;
			} else if (c == ']' && lr->st == LR_FIRST) {
				lr->st = LR_DONE;
				i++;
			} else if (c == '{') {
				lr->st = LR_IN;
				lr->depth = 0;
				lr->in_string = lr->escape = false;
			} else {
				return fail(lr, err, MAFSBX_EK_PROTOCOL,
					    "list element %zu is not a JSON object (byte %llu is '%c')", lr->count, at,
					    c >= 0x20 && c < 0x7f ? c : '?');
			}
			break;
		case LR_IN: {
			bool done;
			size_t k;
			if (lr->keep) {
				/* the kept members are copied into lr->elem as they are scanned */
				k = scan_element_keep(lr, p + i, len - i, &done);
				if (k == (size_t)-1)
					return fail(lr, err, MAFSBX_EK_NOMEM, "out of memory reading list element %zu",
						    lr->count);
				if (lr->elem.len > lr->max_element)
					return fail(lr, err, MAFSBX_EK_TOO_BIG, "list element %zu is over %zu bytes",
						    lr->count, lr->max_element);
			} else {
				k = scan_element(lr, p + i, len - i, &done);
				if (lr->elem.len + k > lr->max_element)
					return fail(lr, err, MAFSBX_EK_TOO_BIG, "list element %zu is over %zu bytes",
						    lr->count, lr->max_element);
				if (mafsbx_buf_append(&lr->elem, p + i, k) < 0)
					return fail(lr, err, MAFSBX_EK_NOMEM, "out of memory reading list element %zu",
						    lr->count);
			}
			i += k;
			if (done) {
				lr->offset += i;
				p += i;
				len -= i;
				i = 0;
				int r = element_done(lr, err);
				if (r < 0)
					return r;
			}
			break;
		}
		case LR_AFTER:
			if (is_space(c)) {
				i++;
			} else if (c == ',') {
				lr->st = LR_NEXT;
				i++;
			} else if (c == ']') {
				lr->st = LR_DONE;
				i++;
			} else {
				return fail(lr, err, MAFSBX_EK_PROTOCOL, "the list has '%c' after element %zu (byte %llu)",
					    c >= 0x20 && c < 0x7f ? c : '?', lr->count, at);
			}
			break;
		case LR_DONE:
			if (!is_space(c))
				return fail(lr, err, MAFSBX_EK_PROTOCOL, "the list has bytes after its end (byte %llu)", at);
			i++;
			break;
		case LR_FAILED:
			return repeat_failure(lr, err);
		}
	}
	lr->offset += i;
	return 0;
}

int mafsbx_listreader_finish(struct mafsbx_listreader *lr, struct mafsbx_error *err)
{
	if (!lr)
		return mafsbx_error_set(err, MAFSBX_EK_INVALID, "list reader: none");
	if (lr->st == LR_FAILED)
		return repeat_failure(lr, err);
	if (lr->st != LR_DONE)
		return fail(lr, err, MAFSBX_EK_PROTOCOL, "the list ends early (after %zu elements, %llu bytes)", lr->count,
			    lr->offset);
	return 0;
}
