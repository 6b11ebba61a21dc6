/*
 * ctl.c: the .ctl transaction files (doc/protocol.md "The transactions"), one private channel
 * per open file in the style of Plan 9's factotum rpc file.
 *
 * A handle collects request bytes until they form ONE JSON object, so the
 * kernel may split the request into any number of writes. An incremental
 * JSON syntax checker (a pushdown automaton over the bytes, as strict as
 * jansson's parser about grammar, strings, escapes and UTF-8) sees every
 * byte once: a byte that cannot begin or continue a JSON object fails its
 * write at once with EINVAL, and a write that ends with a newline ends the
 * request (JSON Lines framing), so `echo '{not json' > .ctl/acquire` fails
 * in the shell instead of waiting for a close() whose error the shell
 * ignores. The write that completes the object runs it and returns the full
 * count, or the request's errno; the reply (`{"ok": ...}\n`) is then read
 * back from the same handle. An unfinished request fails close(). The file is
 * a pipe: offsets are ignored, a read continues where the last one stopped,
 * and a new request replaces the reply. All state is per handle, under the
 * handle's mutex, so requests on one handle are strictly ordered while
 * different handles run in parallel.
 */
#include "mfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "utf8.h"

#define FALLTHROUGH __attribute__((fallthrough))

/* Nesting deeper than jansson's parser accepts (JSON_PARSER_MAX_DEPTH). */
#define CTL_MAX_DEPTH 2048

/* Where the syntax checker stands: what the next byte may be. */
enum scan_state {
	SC_START,           /* before the object: whitespace or '{' */
	SC_KEY_OR_END,      /* after '{': '"' or '}' */
	SC_KEY,             /* after ',' in an object: '"' */
	SC_COLON,           /* after a key: ':' */
	SC_VALUE,           /* after ':' or ',' in an array: a value */
	SC_VALUE_OR_END,    /* after '[': a value or ']' */
	SC_AFTER_VALUE,     /* ',' or the closing bracket of the container */
	SC_STRING,          /* inside a string (key or value) */
	SC_NUMBER,          /* inside a number */
	SC_LITERAL,         /* inside true / false / null */
	SC_DONE,            /* the object closed */
};

/* Inside a number: the part being read (the JSON number grammar). */
enum num_state { NUM_MINUS, NUM_ZERO, NUM_INT, NUM_DOT, NUM_FRAC, NUM_E, NUM_ESIGN, NUM_EXP };

struct json_scan {
	enum scan_state st;
	int depth;
	unsigned char is_array[CTL_MAX_DEPTH / 8];  /* one bit per open container */
	/* strings */
	bool key;               /* the string is an object key */
	bool escape;            /* after a backslash */
	int hex_left;           /* \u digits still to come */
	unsigned hex;           /* the \u code unit being read */
	bool want_low;          /* a high surrogate needs a "\uDC00".."\uDFFF" next */
	int utf8_left;          /* continuation bytes still to come */
	unsigned char utf8_lo, utf8_hi;  /* the range of the next continuation byte */
	/* numbers and literals */
	enum num_state num;
	const char *lit;        /* the rest of "true", "false" or "null" */
};

struct mfs_ctl {
	struct mfs_handle h;         /* must stay first: ops.c dispatches on it */
	enum mfs_ctl_kind kind;
	pthread_mutex_t lock;
	/* the request being collected */
	struct mafsbx_buf req;
	bool started;                /* the opening '{' was seen */
	struct json_scan scan;
	bool oversized;              /* over the cap: refuse until truncated or closed */
	/* the last reply */
	char *reply;
	size_t reply_len, reply_pos;
	/* a completed request is running (maybe on a transaction thread, with
	 * `lock` released): every other call on this handle waits for its end */
	bool running;
	pthread_cond_t done;
};

/* With c->lock held: until no request of this handle runs. */
static void wait_idle(struct mfs_ctl *c)
{
	while (c->running)
		pthread_cond_wait(&c->done, &c->lock);
}

const char *mfs_ctl_kind_name(enum mfs_ctl_kind k)
{
	switch (k) {
	case MFS_CTL_ACQUIRE: return "acquire";
	case MFS_CTL_DISPOSE: return "dispose";
	case MFS_CTL_EXEC: return "exec";
	}
	return "?";
}

static void ctl_discard(struct mfs_handle *h)
{
	mfs_ctl_release((struct mfs_ctl *)h);
}

struct mfs_ctl *mfs_ctl_open(enum mfs_ctl_kind kind)
{
	struct mfs_ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->h.type = MFS_H_CTL;
	c->h.discard = ctl_discard;
	c->kind = kind;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->done, NULL);
	return c;
}

static void request_reset(struct mfs_ctl *c)
{
	mafsbx_buf_free(&c->req);
	c->started = false;
	memset(&c->scan, 0, sizeof(c->scan));
}

/* Replace the reply. Takes ownership of `text`. */
static void set_reply_text(struct mfs_ctl *c, char *text, size_t len)
{
	free(c->reply);
	c->reply = text;
	c->reply_len = len;
	c->reply_pos = 0;
}

static void set_reply(struct mfs_ctl *c, const json_t *reply)
{
	size_t len = 0;
	char *text = reply ? mfs_reply_dump(reply, &len) : NULL;
	if (!text) {
		static const char fallback[] =
			"{\"ok\": false, \"error\": {\"errno\": \"ENOMEM\", \"type\": \"MemoryError\", "
			"\"message\": \"out of memory building the reply\"}}\n";
		text = strdup(fallback);
		len = text ? sizeof(fallback) - 1 : 0;
	}
	set_reply_text(c, text, len);
}

static void set_error_reply(struct mfs_ctl *c, const struct mafsbx_error *e, const json_t *extra)
{
	json_t *r = mfs_error_reply(e, extra);
	set_reply(c, r);
	json_decref(r);
}

static int refuse(struct mfs_ctl *c, enum mafsbx_err_kind kind, const char *msg)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_error_set(&e, kind, "%s: %s", mfs_ctl_kind_name(c->kind), msg);
	set_error_reply(c, &e, NULL);
	mfs_txn_log(c->kind, NULL, NULL, r, &e, 0);
	return r;
}

/* Parse and run the collected object. Returns 0 or the negative errno. */
static int run(struct mfs *fs, struct mfs_ctl *c)
{
	struct mafsbx_error e;
	json_error_t jerr;
	mafsbx_error_clear(&e);
	long long t0 = mafsbx_now_ms();
	json_t *req = json_loadb(c->req.data, c->req.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req) {
		int r = mafsbx_error_set(&e, MAFSBX_EK_INVALID, "%s: malformed JSON request at line %d column %d: %s",
					 mfs_ctl_kind_name(c->kind), jerr.line, jerr.column, jerr.text);
		set_error_reply(c, &e, NULL);
		mfs_txn_log(c->kind, NULL, NULL, r, &e, mafsbx_now_ms() - t0);
		return r;
	}
	if (!json_is_object(req)) {
		json_decref(req);
		int r = mafsbx_error_set(&e, MAFSBX_EK_INVALID, "%s: the request must be one JSON object",
					 mfs_ctl_kind_name(c->kind));
		set_error_reply(c, &e, NULL);
		mfs_txn_log(c->kind, NULL, NULL, r, &e, mafsbx_now_ms() - t0);
		return r;
	}
	json_t *reply = NULL;
	int r;
	if (!fs || !fs->run)
		r = mafsbx_error_set(&e, MAFSBX_EK_ENGINE, "no request runner");
	else
		r = fs->run(fs, c->kind, req, &reply, &e);
	if (r < 0 && e.err <= 0)
		mafsbx_error_set_full(&e, MAFSBX_EK_SYSTEM, -r, NULL, "%s failed", mfs_ctl_kind_name(c->kind));
	mfs_txn_log(c->kind, req, reply, r, &e, mafsbx_now_ms() - t0);
	json_decref(req);
	if (r < 0) {
		set_error_reply(c, &e, reply);
		json_decref(reply);
		log_debug("%s: %s (%s)", mfs_ctl_kind_name(c->kind), e.message, mafsbx_errno_name(e.err));
		return -e.err;
	}
	set_reply(c, reply);
	json_decref(reply);
	return 0;
}

static bool is_ws(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* ---- the syntax checker ----------------------------------------------------- */

enum scan_result { SCAN_MORE, SCAN_DONE, SCAN_BAD };

static void set_container(struct json_scan *s, bool array)
{
	unsigned d = (unsigned)s->depth - 1;
	if (array)
		s->is_array[d / 8] |= (unsigned char)(1u << (d % 8));
	else
		s->is_array[d / 8] &= (unsigned char)~(1u << (d % 8));
}

static bool in_array(const struct json_scan *s)
{
	unsigned d = (unsigned)s->depth - 1;
	return s->is_array[d / 8] & (1u << (d % 8));
}

/* After a value ends: back in the container it belongs to. */
static void value_done(struct json_scan *s)
{
	s->st = SC_AFTER_VALUE;
}

/* Open an object or an array. */
static enum scan_result open_container(struct json_scan *s, bool array, const char **why)
{
	if (s->depth >= CTL_MAX_DEPTH) {
		*why = "nested deeper than 2048 levels";
		return SCAN_BAD;
	}
	s->depth++;
	set_container(s, array);
	s->st = array ? SC_VALUE_OR_END : SC_KEY_OR_END;
	return SCAN_MORE;
}

/* Close the innermost container with `ch` ('}' or ']'). */
static enum scan_result close_container(struct json_scan *s, unsigned char ch, const char **why)
{
	if ((ch == ']') != in_array(s)) {
		*why = ch == ']' ? "']' closes an object" : "'}' closes an array";
		return SCAN_BAD;
	}
	if (--s->depth == 0) {
		s->st = SC_DONE;
		return SCAN_DONE;
	}
	value_done(s);
	return SCAN_MORE;
}

/* The first byte of a value. */
static enum scan_result value_start(struct json_scan *s, unsigned char ch, const char **why)
{
	switch (ch) {
	case '{':
		return open_container(s, false, why);
	case '[':
		return open_container(s, true, why);
	case '"':
		s->st = SC_STRING;
		s->key = false;
		return SCAN_MORE;
	case 't': case 'f': case 'n':   /* the rest of true, false, null */
		s->lit = ch == 't' ? "rue" : ch == 'f' ? "alse" : "ull";
		s->st = SC_LITERAL;
		return SCAN_MORE;
	case '-':
		s->num = NUM_MINUS;
		s->st = SC_NUMBER;
		return SCAN_MORE;
	default:
		if (ch >= '0' && ch <= '9') {
			s->num = ch == '0' ? NUM_ZERO : NUM_INT;
			s->st = SC_NUMBER;
			return SCAN_MORE;
		}
		*why = "expected a value";
		return SCAN_BAD;
	}
}

static enum scan_result after_value(struct json_scan *s, unsigned char ch, const char **why)
{
	if (is_ws(ch))
		return SCAN_MORE;
	if (ch == ',') {
		s->st = in_array(s) ? SC_VALUE : SC_KEY;
		return SCAN_MORE;
	}
	if (ch == '}' || ch == ']')
		return close_container(s, ch, why);
	*why = in_array(s) ? "expected ',' or ']'" : "expected ',' or '}'";
	return SCAN_BAD;
}

static int hex_value(unsigned char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* One byte inside a string (after its opening quote). */
/* One hex digit of a \u escape; at the fourth, the code unit is checked. */
static enum scan_result string_hex_byte(struct json_scan *s, unsigned char ch, const char **why)
{
	int v = hex_value(ch);
	if (v < 0) {
		*why = "expected a hex digit in a \\u escape";
		return SCAN_BAD;
	}
	s->hex = s->hex << 4 | (unsigned)v;
	if (--s->hex_left)
		return SCAN_MORE;
	unsigned u = s->hex;
	if (s->want_low) {
		s->want_low = false;
		if (u < 0xDC00 || u > 0xDFFF) {
			*why = "a high surrogate \\u escape not followed by a low one";
			return SCAN_BAD;
		}
	} else if (u >= 0xD800 && u <= 0xDBFF) {
		s->want_low = true;
	} else if (u >= 0xDC00 && u <= 0xDFFF) {
		*why = "a lone low surrogate \\u escape";
		return SCAN_BAD;
	} else if (u == 0) {
		*why = "\\u0000 in a string";
		return SCAN_BAD;
	}
	return SCAN_MORE;
}

/* The byte after a backslash. */
static enum scan_result string_escape_byte(struct json_scan *s, unsigned char ch, const char **why)
{
	s->escape = false;
	if (s->want_low && ch != 'u') {
		*why = "a high surrogate \\u escape not followed by a low one";
		return SCAN_BAD;
	}
	switch (ch) {
	case 'u':
		s->hex_left = 4;
		s->hex = 0;
		return SCAN_MORE;
	case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
		return SCAN_MORE;
	default:
		*why = "an invalid escape in a string";
		return SCAN_BAD;
	}
}

/* A UTF-8 lead byte: no overlong forms, surrogates, or beyond U+10FFFF. */
static enum scan_result string_utf8_lead(struct json_scan *s, unsigned char ch, const char **why)
{
	size_t need;
	if (!mafsbx_utf8_lead(ch, &need, &s->utf8_lo, &s->utf8_hi)) {
		*why = "invalid UTF-8 in a string";
		return SCAN_BAD;
	}
	s->utf8_left = (int)need - 1;
	return SCAN_MORE;
}

static enum scan_result string_byte(struct json_scan *s, unsigned char ch, const char **why)
{
	if (s->utf8_left) {
		if (ch < s->utf8_lo || ch > s->utf8_hi) {
			*why = "invalid UTF-8 in a string";
			return SCAN_BAD;
		}
		s->utf8_lo = 0x80;
		s->utf8_hi = 0xBF;
		s->utf8_left--;
		return SCAN_MORE;
	}
	if (s->hex_left)
		return string_hex_byte(s, ch, why);
	if (s->escape)
		return string_escape_byte(s, ch, why);
	if (s->want_low && ch != '\\') {
		*why = "a high surrogate \\u escape not followed by a low one";
		return SCAN_BAD;
	}
	if (ch == '\\') {
		s->escape = true;
		return SCAN_MORE;
	}
	if (ch == '"') {
		if (s->key)
			s->st = SC_COLON;
		else
			value_done(s);
		return SCAN_MORE;
	}
	if (ch < 0x20) {
		*why = "a control character in a string (escape it)";
		return SCAN_BAD;
	}
	return ch < 0x80 ? SCAN_MORE : string_utf8_lead(s, ch, why);
}

/* One byte inside a number. A byte that ends it is handed on (*again). */
/* Where each byte class takes a number (-1: it cannot continue it). */
static const struct num_rule {
	signed char digit, dot, exp, sign;
	const char *why;   /* a byte that cannot continue the number is this error; NULL: the number ends */
} num_rules[] = {
	[NUM_MINUS] = { NUM_INT, -1, -1, -1, "expected a digit after '-'" },
	[NUM_ZERO] = { -1, NUM_DOT, NUM_E, -1, NULL },       /* a digit here: a leading zero */
	[NUM_INT] = { NUM_INT, NUM_DOT, NUM_E, -1, NULL },
	[NUM_DOT] = { NUM_FRAC, -1, -1, -1, "expected a digit after '.'" },
	[NUM_FRAC] = { NUM_FRAC, -1, NUM_E, -1, NULL },
	[NUM_E] = { NUM_EXP, -1, -1, NUM_ESIGN, "expected a digit in an exponent" },
	[NUM_ESIGN] = { NUM_EXP, -1, -1, -1, "expected a digit in an exponent" },
	[NUM_EXP] = { NUM_EXP, -1, -1, -1, NULL },
};

static enum scan_result number_byte(struct json_scan *s, unsigned char ch, bool *again, const char **why)
{
	bool digit = ch >= '0' && ch <= '9';
	const struct num_rule *rule = &num_rules[s->num];
	if (digit && s->num == NUM_ZERO) {
		*why = "a number with a leading zero";
		return SCAN_BAD;
	}
	int next = digit ? rule->digit
		 : ch == '.' ? rule->dot
		 : ch == 'e' || ch == 'E' ? rule->exp
		 : ch == '+' || ch == '-' ? rule->sign : -1;
	if (next >= 0) {
		s->num = s->num == NUM_MINUS && ch == '0' ? NUM_ZERO : (enum num_state)next;
		return SCAN_MORE;
	}
	if (rule->why) {
		*why = rule->why;
		return SCAN_BAD;
	}
	/* The number ended; this byte belongs to what follows it. */
	value_done(s);
	*again = true;
	return SCAN_MORE;
}

/*
 * Feed one byte. SCAN_DONE when it closes the top-level object; SCAN_BAD
 * (with *why) when no JSON object starts with the bytes seen so far.
 */
static enum scan_result scan_byte(struct json_scan *s, unsigned char ch, const char **why)
{
	for (;;) {
		bool again = false;
		enum scan_result r;
		switch (s->st) {
		case SC_START:
			if (is_ws(ch))
				return SCAN_MORE;
			if (ch != '{') {
				*why = "expected one JSON object starting with '{'";
				return SCAN_BAD;
			}
			return open_container(s, false, why);
		case SC_KEY_OR_END:
			if (ch == '}')
				return close_container(s, ch, why);
			FALLTHROUGH;
		case SC_KEY:
			if (is_ws(ch))
				return SCAN_MORE;
			if (ch != '"') {
				*why = s->st == SC_KEY ? "expected '\"' starting a member name"
						       : "expected '\"' starting a member name, or '}'";
				return SCAN_BAD;
			}
			s->st = SC_STRING;
			s->key = true;
			return SCAN_MORE;
		case SC_COLON:
			if (is_ws(ch))
				return SCAN_MORE;
			if (ch != ':') {
				*why = "expected ':' after a member name";
				return SCAN_BAD;
			}
			s->st = SC_VALUE;
			return SCAN_MORE;
		case SC_VALUE_OR_END:
			if (ch == ']')
				return close_container(s, ch, why);
			FALLTHROUGH;
		case SC_VALUE:
			if (is_ws(ch))
				return SCAN_MORE;
			return value_start(s, ch, why);
		case SC_AFTER_VALUE:
			return after_value(s, ch, why);
		case SC_STRING:
			return string_byte(s, ch, why);
		case SC_NUMBER:
			r = number_byte(s, ch, &again, why);
			if (!again)
				return r;
			continue;
		case SC_LITERAL:
			if (ch != (unsigned char)*s->lit) {
				*why = "expected true, false or null";
				return SCAN_BAD;
			}
			if (!*++s->lit)
				value_done(s);
			return SCAN_MORE;
		case SC_DONE:
			if (is_ws(ch))
				return SCAN_DONE;
			*why = "data after the JSON object (one request per write sequence)";
			return SCAN_BAD;
		}
		*why = "internal scanner state";
		return SCAN_BAD;
	}
}

static int refuse_byte(struct mfs_ctl *c, unsigned char ch, size_t at, const char *why)
{
	char shown[8];
	if (ch >= 0x20 && ch < 0x7f && ch != '\'')
		snprintf(shown, sizeof(shown), "'%c'", ch);
	else
		snprintf(shown, sizeof(shown), "0x%02x", ch);
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	int r = mafsbx_error_set(&e, MAFSBX_EK_INVALID, "%s: malformed JSON request: byte %zu (%s): %s",
				 mfs_ctl_kind_name(c->kind), at, shown, why);
	set_error_reply(c, &e, NULL);
	mfs_txn_log(c->kind, NULL, NULL, r, &e, 0);
	return r;
}

int mfs_ctl_write_take(struct mfs_ctl *c, const char *data, size_t size, bool *run_it)
{
	/* FUSE sends at most max_write (<= a few MiB) per write: the count fits. */
	int ret = (int)size;
	*run_it = false;
	pthread_mutex_lock(&c->lock);
	wait_idle(c);
	if (c->oversized) {
		ret = -EMSGSIZE;
		goto out;
	}
	size_t i = 0;
	size_t begin = 0;          /* first byte of this write that belongs to the request */
	bool complete = false;
	for (; i < size; i++) {
		unsigned char ch = (unsigned char)data[i];
		if (!c->started && is_ws(ch)) {
			begin = i + 1;
			continue;
		}
		const char *why = NULL;
		enum scan_result sr = scan_byte(&c->scan, ch, &why);
		if (sr == SCAN_BAD) {
			size_t at = c->req.len + (i - begin);
			request_reset(c);
			ret = refuse_byte(c, ch, at, why);
			goto out;
		}
		c->started = true;
		if (sr == SCAN_DONE) {
			complete = true;
			i++;
			break;
		}
	}
	size_t take = i - begin;
	if (c->started && c->req.len + take > MFS_CTL_MAX_REQUEST) {
		request_reset(c);
		c->oversized = true;
		ret = refuse(c, MAFSBX_EK_TOO_LARGE_MSG, "request over 1 MiB refused");
		goto out;
	}
	if (c->started && take && mafsbx_buf_append(&c->req, data + begin, take) < 0) {
		request_reset(c);
		ret = refuse(c, MAFSBX_EK_NOMEM, "out of memory collecting the request");
		goto out;
	}
	if (!complete) {
		/* JSON Lines: a write ending in a newline ends the request. */
		if (c->started && size && data[size - 1] == '\n') {
			size_t have = c->req.len;
			request_reset(c);
			struct mafsbx_error e;
			mafsbx_error_clear(&e);
			ret = mafsbx_error_set(&e, MAFSBX_EK_INVALID,
					       "%s: malformed JSON request: a newline ended the request after %zu bytes, "
					       "before its JSON object closed",
					       mfs_ctl_kind_name(c->kind), have);
			set_error_reply(c, &e, NULL);
			mfs_txn_log(c->kind, NULL, NULL, ret, &e, 0);
		}
		goto out;
	}
	/* Only whitespace may follow the object in the same write. */
	for (size_t j = i; j < size; j++) {
		const char *why = NULL;
		if (scan_byte(&c->scan, (unsigned char)data[j], &why) == SCAN_BAD) {
			size_t at = c->req.len + (j - i);
			request_reset(c);
			ret = refuse_byte(c, (unsigned char)data[j], at, why);
			goto out;
		}
	}
	c->running = true;
	*run_it = true;
out:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int mfs_ctl_write_run(struct mfs *fs, struct mfs_ctl *c, int taken)
{
	/* `running` keeps every other call of this handle out: no lock needed
	 * for the request and the reply while the runner works. */
	int r = run(fs, c);
	pthread_mutex_lock(&c->lock);
	request_reset(c);
	c->running = false;
	pthread_cond_broadcast(&c->done);
	pthread_mutex_unlock(&c->lock);
	return r < 0 ? r : taken;
}

int mfs_ctl_write_cancel(struct mfs_ctl *c, int e, const char *why)
{
	struct mafsbx_error err;
	mafsbx_error_clear(&err);
	mafsbx_error_set_full(&err, MAFSBX_EK_CONFLICT, e, "RuntimeError", "%s: %s", mfs_ctl_kind_name(c->kind), why);
	pthread_mutex_lock(&c->lock);
	set_error_reply(c, &err, NULL);
	request_reset(c);
	c->running = false;
	pthread_cond_broadcast(&c->done);
	pthread_mutex_unlock(&c->lock);
	return -e;
}

int mfs_ctl_write(struct mfs *fs, struct mfs_ctl *c, const char *data, size_t size)
{
	bool run_it;
	int r = mfs_ctl_write_take(c, data, size, &run_it);
	return run_it ? mfs_ctl_write_run(fs, c, r) : r;
}

int mfs_ctl_read(struct mfs_ctl *c, char *out, size_t size)
{
	pthread_mutex_lock(&c->lock);
	wait_idle(c);
	if (!c->reply) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		if (c->started)
			mafsbx_error_set(&e, MAFSBX_EK_INVALID,
					 "%s: the request is incomplete (%zu bytes so far, the JSON object is not closed)",
					 mfs_ctl_kind_name(c->kind), c->req.len);
		else
			mafsbx_error_set(&e, MAFSBX_EK_INVALID,
					 "%s: no request on this open file: write one JSON object, then read the reply",
					 mfs_ctl_kind_name(c->kind));
		set_error_reply(c, &e, NULL);
	}
	size_t n = 0;
	if (c->reply && c->reply_pos < c->reply_len) {
		n = c->reply_len - c->reply_pos;
		if (n > size)
			n = size;
		memcpy(out, c->reply + c->reply_pos, n);
		c->reply_pos += n;
	}
	pthread_mutex_unlock(&c->lock);
	return (int)n;
}

void mfs_ctl_truncate(struct mfs_ctl *c)
{
	pthread_mutex_lock(&c->lock);
	wait_idle(c);
	request_reset(c);
	c->oversized = false;
	pthread_mutex_unlock(&c->lock);
}

int mfs_ctl_flush(struct mfs_ctl *c)
{
	pthread_mutex_lock(&c->lock);
	wait_idle(c);
	/* The bytes stay: another descriptor of this open file may finish them. */
	int r = c->started ? -EINVAL : 0;
	pthread_mutex_unlock(&c->lock);
	return r;
}

void mfs_ctl_release(struct mfs_ctl *c)
{
	if (!c)
		return;
	request_reset(c);
	free(c->reply);
	pthread_cond_destroy(&c->done);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
