/*
 * jsonscan.c: the incremental JSON syntax checker (jsonscan.h).
 */
#include "jsonscan.h"

#include <string.h>

#include "utf8.h"

#define FALLTHROUGH __attribute__((fallthrough))

void mafsbx_jsonscan_reset(struct mafsbx_jsonscan *s)
{
	memset(s, 0, sizeof(*s));
}

bool mafsbx_json_is_ws(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static void set_container(struct mafsbx_jsonscan *s, bool array)
{
	unsigned d = (unsigned)s->depth - 1;
	if (array)
		s->is_array[d / 8] |= (unsigned char)(1u << (d % 8));
	else
		s->is_array[d / 8] &= (unsigned char)~(1u << (d % 8));
}

static bool in_array(const struct mafsbx_jsonscan *s)
{
	unsigned d = (unsigned)s->depth - 1;
	return s->is_array[d / 8] & (1u << (d % 8));
}

/* After a value ends: back in the container it belongs to. */
static void value_done(struct mafsbx_jsonscan *s)
{
	s->st = JS_AFTER_VALUE;
}

/* Open an object or an array. */
static enum mafsbx_scan_result open_container(struct mafsbx_jsonscan *s, bool array, const char **why)
{
	if (s->depth >= MAFSBX_JSONSCAN_MAX_DEPTH) {
		*why = "nested deeper than 2048 levels";
		return MAFSBX_SCAN_BAD;
	}
	s->depth++;
	set_container(s, array);
	s->st = array ? JS_VALUE_OR_END : JS_KEY_OR_END;
	return MAFSBX_SCAN_MORE;
}

/* Close the innermost container with `ch` ('}' or ']'). */
static enum mafsbx_scan_result close_container(struct mafsbx_jsonscan *s, unsigned char ch, const char **why)
{
	if ((ch == ']') != in_array(s)) {
		*why = ch == ']' ? "']' closes an object" : "'}' closes an array";
		return MAFSBX_SCAN_BAD;
	}
	if (--s->depth == 0) {
		s->st = JS_DONE;
		return MAFSBX_SCAN_DONE;
	}
	value_done(s);
	return MAFSBX_SCAN_MORE;
}

/* The first byte of a value. */
static enum mafsbx_scan_result value_start(struct mafsbx_jsonscan *s, unsigned char ch, const char **why)
{
	switch (ch) {
	case '{':
		return open_container(s, false, why);
	case '[':
		return open_container(s, true, why);
	case '"':
		s->st = JS_STRING;
		s->key = false;
		return MAFSBX_SCAN_MORE;
	case 't': case 'f': case 'n':   /* the rest of true, false, null */
		s->lit = ch == 't' ? "rue" : ch == 'f' ? "alse" : "ull";
		s->st = JS_LITERAL;
		return MAFSBX_SCAN_MORE;
	case '-':
		s->num = JS_NUM_MINUS;
		s->st = JS_NUMBER;
		return MAFSBX_SCAN_MORE;
	default:
		if (ch >= '0' && ch <= '9') {
			s->num = ch == '0' ? JS_NUM_ZERO : JS_NUM_INT;
			s->st = JS_NUMBER;
			return MAFSBX_SCAN_MORE;
		}
		*why = "expected a value";
		return MAFSBX_SCAN_BAD;
	}
}

static enum mafsbx_scan_result after_value(struct mafsbx_jsonscan *s, unsigned char ch, const char **why)
{
	if (mafsbx_json_is_ws(ch))
		return MAFSBX_SCAN_MORE;
	if (ch == ',') {
		s->st = in_array(s) ? JS_VALUE : JS_KEY;
		return MAFSBX_SCAN_MORE;
	}
	if (ch == '}' || ch == ']')
		return close_container(s, ch, why);
	*why = in_array(s) ? "expected ',' or ']'" : "expected ',' or '}'";
	return MAFSBX_SCAN_BAD;
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
static enum mafsbx_scan_result string_hex_byte(struct mafsbx_jsonscan *s, unsigned char ch, const char **why)
{
	int v = hex_value(ch);
	if (v < 0) {
		*why = "expected a hex digit in a \\u escape";
		return MAFSBX_SCAN_BAD;
	}
	s->hex = s->hex << 4 | (unsigned)v;
	if (--s->hex_left)
		return MAFSBX_SCAN_MORE;
	unsigned u = s->hex;
	if (s->want_low) {
		s->want_low = false;
		if (u < 0xDC00 || u > 0xDFFF) {
			*why = "a high surrogate \\u escape not followed by a low one";
			return MAFSBX_SCAN_BAD;
		}
	} else if (u >= 0xD800 && u <= 0xDBFF) {
		s->want_low = true;
	} else if (u >= 0xDC00 && u <= 0xDFFF) {
		*why = "a lone low surrogate \\u escape";
		return MAFSBX_SCAN_BAD;
	} else if (u == 0) {
		*why = "\\u0000 in a string";
		return MAFSBX_SCAN_BAD;
	}
	return MAFSBX_SCAN_MORE;
}

/* The byte after a backslash. */
static enum mafsbx_scan_result string_escape_byte(struct mafsbx_jsonscan *s, unsigned char ch, const char **why)
{
	s->escape = false;
	if (s->want_low && ch != 'u') {
		*why = "a high surrogate \\u escape not followed by a low one";
		return MAFSBX_SCAN_BAD;
	}
	switch (ch) {
	case 'u':
		s->hex_left = 4;
		s->hex = 0;
		return MAFSBX_SCAN_MORE;
	case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
		return MAFSBX_SCAN_MORE;
	default:
		*why = "an invalid escape in a string";
		return MAFSBX_SCAN_BAD;
	}
}

/* A UTF-8 lead byte: no overlong forms, surrogates, or beyond U+10FFFF. */
static enum mafsbx_scan_result string_utf8_lead(struct mafsbx_jsonscan *s, unsigned char ch, const char **why)
{
	size_t need;
	if (!mafsbx_utf8_lead(ch, &need, &s->utf8_lo, &s->utf8_hi)) {
		*why = "invalid UTF-8 in a string";
		return MAFSBX_SCAN_BAD;
	}
	s->utf8_left = (int)need - 1;
	return MAFSBX_SCAN_MORE;
}

static enum mafsbx_scan_result string_byte(struct mafsbx_jsonscan *s, unsigned char ch, const char **why)
{
	if (s->utf8_left) {
		if (ch < s->utf8_lo || ch > s->utf8_hi) {
			*why = "invalid UTF-8 in a string";
			return MAFSBX_SCAN_BAD;
		}
		s->utf8_lo = 0x80;
		s->utf8_hi = 0xBF;
		s->utf8_left--;
		return MAFSBX_SCAN_MORE;
	}
	if (s->hex_left)
		return string_hex_byte(s, ch, why);
	if (s->escape)
		return string_escape_byte(s, ch, why);
	if (s->want_low && ch != '\\') {
		*why = "a high surrogate \\u escape not followed by a low one";
		return MAFSBX_SCAN_BAD;
	}
	if (ch == '\\') {
		s->escape = true;
		return MAFSBX_SCAN_MORE;
	}
	if (ch == '"') {
		if (s->key)
			s->st = JS_COLON;
		else
			value_done(s);
		return MAFSBX_SCAN_MORE;
	}
	if (ch < 0x20) {
		*why = "a control character in a string (escape it)";
		return MAFSBX_SCAN_BAD;
	}
	return ch < 0x80 ? MAFSBX_SCAN_MORE : string_utf8_lead(s, ch, why);
}

/* One byte inside a number. A byte that ends it is handed on (*again). */
/* Where each byte class takes a number (-1: it cannot continue it). */
static const struct num_rule {
	signed char digit, dot, exp, sign;
	const char *why;   /* a byte that cannot continue the number is this error; NULL: the number ends */
} num_rules[] = {
	[JS_NUM_MINUS] = { JS_NUM_INT, -1, -1, -1, "expected a digit after '-'" },
	[JS_NUM_ZERO] = { -1, JS_NUM_DOT, JS_NUM_E, -1, NULL },       /* a digit here: a leading zero */
	[JS_NUM_INT] = { JS_NUM_INT, JS_NUM_DOT, JS_NUM_E, -1, NULL },
	[JS_NUM_DOT] = { JS_NUM_FRAC, -1, -1, -1, "expected a digit after '.'" },
	[JS_NUM_FRAC] = { JS_NUM_FRAC, -1, JS_NUM_E, -1, NULL },
	[JS_NUM_E] = { JS_NUM_EXP, -1, -1, JS_NUM_ESIGN, "expected a digit in an exponent" },
	[JS_NUM_ESIGN] = { JS_NUM_EXP, -1, -1, -1, "expected a digit in an exponent" },
	[JS_NUM_EXP] = { JS_NUM_EXP, -1, -1, -1, NULL },
};

static enum mafsbx_scan_result number_byte(struct mafsbx_jsonscan *s, unsigned char ch, bool *again, const char **why)
{
	bool digit = ch >= '0' && ch <= '9';
	const struct num_rule *rule = &num_rules[s->num];
	if (digit && s->num == JS_NUM_ZERO) {
		*why = "a number with a leading zero";
		return MAFSBX_SCAN_BAD;
	}
	int next = digit ? rule->digit
		 : ch == '.' ? rule->dot
		 : ch == 'e' || ch == 'E' ? rule->exp
		 : ch == '+' || ch == '-' ? rule->sign : -1;
	if (next >= 0) {
		s->num = s->num == JS_NUM_MINUS && ch == '0' ? JS_NUM_ZERO : (enum mafsbx_jsonscan_num)next;
		return MAFSBX_SCAN_MORE;
	}
	if (rule->why) {
		*why = rule->why;
		return MAFSBX_SCAN_BAD;
	}
	/* The number ended; this byte belongs to what follows it. */
	value_done(s);
	*again = true;
	return MAFSBX_SCAN_MORE;
}

/*
 * Feed one byte. MAFSBX_SCAN_DONE when it closes the top-level object; MAFSBX_SCAN_BAD
 * (with *why) when no JSON object starts with the bytes seen so far.
 */
enum mafsbx_scan_result mafsbx_jsonscan_byte(struct mafsbx_jsonscan *s, unsigned char ch, const char **why)
{
	for (;;) {
		bool again = false;
		enum mafsbx_scan_result r;
		switch (s->st) {
		case JS_START:
			if (mafsbx_json_is_ws(ch))
				return MAFSBX_SCAN_MORE;
			if (ch != '{') {
				*why = "expected one JSON object starting with '{'";
				return MAFSBX_SCAN_BAD;
			}
			return open_container(s, false, why);
		case JS_KEY_OR_END:
			if (ch == '}')
				return close_container(s, ch, why);
			FALLTHROUGH;
		case JS_KEY:
			if (mafsbx_json_is_ws(ch))
				return MAFSBX_SCAN_MORE;
			if (ch != '"') {
				*why = s->st == JS_KEY ? "expected '\"' starting a member name"
						       : "expected '\"' starting a member name, or '}'";
				return MAFSBX_SCAN_BAD;
			}
			s->st = JS_STRING;
			s->key = true;
			return MAFSBX_SCAN_MORE;
		case JS_COLON:
			if (mafsbx_json_is_ws(ch))
				return MAFSBX_SCAN_MORE;
			if (ch != ':') {
				*why = "expected ':' after a member name";
				return MAFSBX_SCAN_BAD;
			}
			s->st = JS_VALUE;
			return MAFSBX_SCAN_MORE;
		case JS_VALUE_OR_END:
			if (ch == ']')
				return close_container(s, ch, why);
			FALLTHROUGH;
		case JS_VALUE:
			if (mafsbx_json_is_ws(ch))
				return MAFSBX_SCAN_MORE;
			return value_start(s, ch, why);
		case JS_AFTER_VALUE:
			return after_value(s, ch, why);
		case JS_STRING:
			return string_byte(s, ch, why);
		case JS_NUMBER:
			r = number_byte(s, ch, &again, why);
			if (!again)
				return r;
			continue;
		case JS_LITERAL:
			if (ch != (unsigned char)*s->lit) {
				*why = "expected true, false or null";
				return MAFSBX_SCAN_BAD;
			}
			if (!*++s->lit)
				value_done(s);
			return MAFSBX_SCAN_MORE;
		case JS_DONE:
			if (mafsbx_json_is_ws(ch))
				return MAFSBX_SCAN_DONE;
			*why = "data after the JSON object (one request per write sequence)";
			return MAFSBX_SCAN_BAD;
		}
		*why = "internal scanner state";
		return MAFSBX_SCAN_BAD;
	}
}
