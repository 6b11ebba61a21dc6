/*
 * jsonscan.h: an incremental JSON syntax checker for one top-level object.
 *
 * A pushdown automaton over the bytes, as strict as jansson's parser about
 * grammar, strings, escapes and UTF-8, that sees every byte once and says at
 * the first byte that no JSON object can begin or continue with the bytes so
 * far. The .ctl files (fs/ctl.c) use it to refuse a malformed request at the
 * write that brings the bad byte, and to find where a request ends when the
 * kernel splits it into many writes. No allocation: a zeroed struct is the
 * state before the first byte.
 */
#ifndef MAFSBX_JSONSCAN_H
#define MAFSBX_JSONSCAN_H

#include <stdbool.h>

/* Nesting deeper than jansson's parser accepts (JSON_PARSER_MAX_DEPTH). */
#define MAFSBX_JSONSCAN_MAX_DEPTH 2048

/* Where the syntax checker stands: what the next byte may be. */
enum mafsbx_jsonscan_state {
	JS_START,           /* before the object: whitespace or '{' */
	JS_KEY_OR_END,      /* after '{': '"' or '}' */
	JS_KEY,             /* after ',' in an object: '"' */
	JS_COLON,           /* after a key: ':' */
	JS_VALUE,           /* after ':' or ',' in an array: a value */
	JS_VALUE_OR_END,    /* after '[': a value or ']' */
	JS_AFTER_VALUE,     /* ',' or the closing bracket of the container */
	JS_STRING,          /* inside a string (key or value) */
	JS_NUMBER,          /* inside a number */
	JS_LITERAL,         /* inside true / false / null */
	JS_DONE,            /* the object closed */
};

/* Inside a number: the part being read (the JSON number grammar). */
enum mafsbx_jsonscan_num { JS_NUM_MINUS, JS_NUM_ZERO, JS_NUM_INT, JS_NUM_DOT, JS_NUM_FRAC, JS_NUM_E, JS_NUM_ESIGN, JS_NUM_EXP };

struct mafsbx_jsonscan {
	enum mafsbx_jsonscan_state st;
	int depth;
	unsigned char is_array[MAFSBX_JSONSCAN_MAX_DEPTH / 8];  /* one bit per open container */
	/* strings */
	bool key;               /* the string is an object key */
	bool escape;            /* after a backslash */
	int hex_left;           /* \u digits still to come */
	unsigned hex;           /* the \u code unit being read */
	bool want_low;          /* a high surrogate needs a "\uDC00".."\uDFFF" next */
	int utf8_left;          /* continuation bytes still to come */
	unsigned char utf8_lo, utf8_hi;  /* the range of the next continuation byte */
	/* numbers and literals */
	enum mafsbx_jsonscan_num num;
	const char *lit;        /* the rest of "true", "false" or "null" */
};


enum mafsbx_scan_result { MAFSBX_SCAN_MORE, MAFSBX_SCAN_DONE, MAFSBX_SCAN_BAD };

/* Back to the state before the first byte. */
void mafsbx_jsonscan_reset(struct mafsbx_jsonscan *s);

/*
 * Feed one byte. MAFSBX_SCAN_DONE when it closes the top-level object (and
 * for whitespace after it); MAFSBX_SCAN_BAD, with *why naming the problem,
 * when no JSON object starts with the bytes seen so far.
 */
enum mafsbx_scan_result mafsbx_jsonscan_byte(struct mafsbx_jsonscan *s, unsigned char ch, const char **why);

/* JSON's whitespace: space, tab, newline, carriage return. */
bool mafsbx_json_is_ws(unsigned char ch);

#endif
