/*
 * log.c: level-filtered logging to stderr ("PROGRAM: message") or syslog.
 */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

static char log_program[64] = "mafsbx";
static _Atomic int log_level = MAFSBX_LOG_WARN;
static _Atomic int log_syslog;

void mafsbx_log_init(const char *program, enum mafsbx_log_level level)
{
	snprintf(log_program, sizeof(log_program), "%s", program);
	log_level = level;
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
	fprintf(stderr, "%s: %s\n", log_program, msg);
}
