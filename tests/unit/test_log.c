/*
 * test_log.c: the logger's lines on stderr (src/base/log.c): plain
 * "PROGRAM: message", and with sd-daemon(3)'s "<N>" priority in front only
 * when JOURNAL_STREAM names the device and inode of our own fd 2 (as
 * systemd sets it when stderr is the journal); a JOURNAL_STREAM inherited
 * from a parent whose stderr was elsewhere, or malformed, changes nothing.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/* fd 2 onto a fresh temporary file while the lines are written; returns what they wrote. */
struct capture {
	int saved, fd;
	char path[64];
};

static void capture_start(struct capture *c)
{
	fflush(stderr);
	snprintf(c->path, sizeof(c->path), "/tmp/test_log.XXXXXX");
	c->fd = mkstemp(c->path);
	assert_true(c->fd >= 0);
	c->saved = dup(2);
	assert_true(c->saved >= 0);
	assert_int_equal(dup2(c->fd, 2), 2);
}

static char *capture_end(struct capture *c)
{
	fflush(stderr);
	assert_int_equal(dup2(c->saved, 2), 2);
	close(c->saved);
	static char out[4096];
	ssize_t n = pread(c->fd, out, sizeof(out) - 1, 0);
	assert_true(n >= 0);
	out[n] = '\0';
	close(c->fd);
	unlink(c->path);
	return out;
}

/* JOURNAL_STREAM as systemd writes it for the file now on fd 2 (plus `delta` on the inode). */
static void set_journal_stream_to_fd2(uintmax_t delta)
{
	struct stat st;
	assert_int_equal(fstat(2, &st), 0);
	char v[64];
	snprintf(v, sizeof(v), "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino + delta);
	assert_int_equal(setenv("JOURNAL_STREAM", v, 1), 0);
}

static void log_every_level(void)
{
	mafsbx_log_init("prog", MAFSBX_LOG_DEBUG);
	log_error("an error %d", 1);
	log_warn("a warning");
	log_info("some info");
	log_debug("a detail");
}

static void test_journal_prefix(void **state)
{
	(void)state;
	struct capture c;
	capture_start(&c);
	set_journal_stream_to_fd2(0);
	log_every_level();
	mafsbx_log_set_level(MAFSBX_LOG_WARN);
	log_info("filtered out");
	char *out = capture_end(&c);
	assert_string_equal(out, "<3>prog: an error 1\n<4>prog: a warning\n<6>prog: some info\n<7>prog: a detail\n");
}

static void test_plain_without_journal(void **state)
{
	(void)state;
	struct capture c;
	/* unset */
	capture_start(&c);
	assert_int_equal(unsetenv("JOURNAL_STREAM"), 0);
	log_every_level();
	assert_string_equal(capture_end(&c), "prog: an error 1\nprog: a warning\nprog: some info\nprog: a detail\n");
	/* another stream's (inherited from a parent whose stderr was the journal) */
	capture_start(&c);
	set_journal_stream_to_fd2(1);
	log_every_level();
	assert_string_equal(capture_end(&c), "prog: an error 1\nprog: a warning\nprog: some info\nprog: a detail\n");
	/* malformed ones */
	static const char *const bad[] = { "", "12", "x:y", "1:2:3", "1:2 " };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		capture_start(&c);
		assert_int_equal(setenv("JOURNAL_STREAM", bad[i], 1), 0);
		mafsbx_log_init("prog", MAFSBX_LOG_ERROR);
		log_error("e");
		assert_string_equal(capture_end(&c), "prog: e\n");
	}
	/* the stream's own dev:ino with trailing garbage is not it either */
	capture_start(&c);
	struct stat st;
	assert_int_equal(fstat(2, &st), 0);
	char v[64];
	snprintf(v, sizeof(v), "%ju:%jux", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
	assert_int_equal(setenv("JOURNAL_STREAM", v, 1), 0);
	mafsbx_log_init("prog", MAFSBX_LOG_ERROR);
	log_error("e");
	assert_string_equal(capture_end(&c), "prog: e\n");
	unsetenv("JOURNAL_STREAM");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_journal_prefix),
		cmocka_unit_test(test_plain_without_journal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
