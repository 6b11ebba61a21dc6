/*
 * log.c: level-filtered logging to stderr ("PROGRAM: message") or syslog.
 * When stderr is systemd's journal (JOURNAL_STREAM names its device and
 * inode, as systemd.exec(5) sets it for StandardError=journal), each line
 * starts with sd-daemon(3)'s "<N>" priority, so `journalctl -p err` sees
 * the daemon's errors as errors; anywhere else the lines stay plain.
 */
#include "log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

static char log_program[64] = "mafsbx";
static _Atomic int log_level = MAFSBX_LOG_WARN;
static _Atomic int log_syslog;
static _Atomic int log_journal;

/*
 * Is fd 2 the stream JOURNAL_STREAM names ("DEV:INO", decimal)? The variable
 * is inherited by children whose stderr went elsewhere (a pipe, a file), so
 * only a match of our own stderr counts (sd_journal_stream_fd(3)).
 */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	uintmax_t dev, ino;
	char tail;
	struct stat st;
	if (!js || sscanf(js, "%ju:%ju%c", &dev, &ino, &tail) != 2 || fstat(2, &st) < 0)
		return 0;
	return (uintmax_t)st.st_dev == dev && (uintmax_t)st.st_ino == ino;
}

void mafsbx_log_init(const char *program, enum mafsbx_log_level level)
{
	snprintf(log_program, sizeof(log_program), "%s", program);
	log_level = level;
	log_journal = stderr_is_journal();
}

void mafsbx_log_set_level(enum mafsbx_log_level level) { log_level = level; }
enum mafsbx_log_level mafsbx_log_get_level(void) { return (enum mafsbx_log_level)log_level; }

void mafsbx_log_use_syslog(void)
{
	openlog(log_program, LOG_PID, LOG_DAEMON);
	log_syslog = 1;
}

void mafsbx_log(enum mafsbx_log_level level, const char *fmt, ...)
{
	if ((int)level > log_level)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_syslog) {
		static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
		syslog(prio[level], "%s", msg);
		return;
	}
	/* One fprintf per line so concurrent threads do not interleave mid-line. */
	if (log_journal) {
		/* sd-daemon(3) priorities: 3 err, 4 warning, 6 info, 7 debug */
		static const char prefix[][4] = { "<3>", "<4>", "<6>", "<7>" };
		fprintf(stderr, "%s%s: %s\n", prefix[level], log_program, msg);
		return;
	}
	fprintf(stderr, "%s: %s\n", log_program, msg);
}
