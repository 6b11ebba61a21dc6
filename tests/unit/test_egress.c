/*
 * test_egress.c: the pure part of egress.c: reading decisions out of a
 * proxy's raw log (doc/upstream.md §7.5): only lines matching
 * ^(ALLOW|DENY-NONGLOBAL|DENY|UNREACHABLE) (.+):(\d+)$ after stripping, the
 * host greedy (IPv6 colons kept), the last 2000, the byte cap cutting after
 * the last newline and flagging truncation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "egress.h"

static void decisions(const char *raw, bool capped, struct mafsbx_egress_log *l)
{
	struct mafsbx_error e;
	assert_int_equal(mafsbx_egress_decisions(raw, strlen(raw), capped, l, &e), 0);
}

static void test_filter(void **state)
{
	(void)state;
	struct mafsbx_egress_log l;
	decisions("listening on 3128; allowing: a.com\n"
		  "ALLOW a.com:443\n"
		  "  DENY b.com:80 \r\n"
		  "DENY-NONGLOBAL 10.0.0.1:443\n"
		  "UNREACHABLE [2001:db8::1]:443\n"
		  "ALLOW a.com:\n"           /* no port digits */
		  "ALLOW :443\n"             /* empty host */
		  "ALLOWa.com:443\n"         /* no space */
		  "allow a.com:443\n"        /* case matters */
		  "DENY x:44a\n"             /* port not digits */
		  "Traceback (most recent call last):\n"
		  "UNREACHABLE c.com:443",   /* last line without newline */
		  false, &l);
	assert_string_equal(l.text, "ALLOW a.com:443\nDENY b.com:80\nDENY-NONGLOBAL 10.0.0.1:443\n"
				    "UNREACHABLE [2001:db8::1]:443\nUNREACHABLE c.com:443\n");
	assert_int_equal(l.decisions, 5);
	assert_false(l.truncated);
	mafsbx_egress_log_free(&l);
	decisions("", false, &l);
	assert_string_equal(l.text, "");
	assert_int_equal(l.len, 0);
	mafsbx_egress_log_free(&l);
}

static void test_cap_cuts_after_last_newline(void **state)
{
	(void)state;
	struct mafsbx_egress_log l;
	decisions("ALLOW a.com:443\nDENY b.com:44", true, &l);   /* the cap cut the last line */
	assert_string_equal(l.text, "ALLOW a.com:443\n");
	assert_true(l.truncated);
	mafsbx_egress_log_free(&l);
}

/* A CONNECT host is the guest's text: ESC and BEL never reach NAME/egress raw (doc/security.md "Findings fixed after review": no guest bytes reach NAME/egress raw). */
static void test_control_bytes_escaped(void **state)
{
	(void)state;
	struct mafsbx_egress_log l;
	decisions("DENY \x1b]0;pwn\x07x.example.com:443\nALLOW \x7f" "a.com:443\n", false, &l);
	assert_int_equal(l.decisions, 2);
	assert_string_equal(l.text, "DENY \\x1b]0;pwn\\x07x.example.com:443\nALLOW \\x7fa.com:443\n");
	for (size_t i = 0; i < l.len; i++)
		if (l.text[i] != '\n' && ((unsigned char)l.text[i] < 0x20 || l.text[i] == 0x7f))
			fail_msg("a raw control byte 0x%02x at %zu", (unsigned char)l.text[i], i);
	mafsbx_egress_log_free(&l);
}

static void test_last_2000(void **state)
{
	(void)state;
	size_t n = MAFSBX_EGRESS_LOG_LINES + 5;
	char *raw = malloc(n * 32);
	size_t o = 0;
	for (size_t i = 0; i < n; i++)
		o += (size_t)sprintf(raw + o, "DENY h%zu.com:443\n", i);
	struct mafsbx_egress_log l;
	decisions(raw, false, &l);
	assert_int_equal(l.decisions, MAFSBX_EGRESS_LOG_LINES);
	assert_true(l.truncated);
	assert_true(strncmp(l.text, "DENY h5.com:443\n", 16) == 0);
	assert_non_null(strstr(l.text, "DENY h2004.com:443\n"));
	assert_null(strstr(l.text, "DENY h4.com:443\n"));
	mafsbx_egress_log_free(&l);
	free(raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_cap_cuts_after_last_newline),
		cmocka_unit_test(test_last_2000),
		cmocka_unit_test(test_control_bytes_escaped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
