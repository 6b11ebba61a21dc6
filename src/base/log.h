/*
 * log.h: the one small logger. "PROGRAM: message" on stderr in the
 * foreground, syslog once mafsbx_log_use_syslog() was called (daemonised).
 */
#ifndef MAFSBX_LOG_H
#define MAFSBX_LOG_H

enum mafsbx_log_level { MAFSBX_LOG_ERROR = 0, MAFSBX_LOG_WARN, MAFSBX_LOG_INFO, MAFSBX_LOG_DEBUG };

void mafsbx_log_init(const char *program, enum mafsbx_log_level level);
void mafsbx_log_set_level(enum mafsbx_log_level level);
enum mafsbx_log_level mafsbx_log_get_level(void);
void mafsbx_log_use_syslog(void);
void mafsbx_log(enum mafsbx_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) mafsbx_log(MAFSBX_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) mafsbx_log(MAFSBX_LOG_WARN, __VA_ARGS__)
#define log_info(...) mafsbx_log(MAFSBX_LOG_INFO, __VA_ARGS__)
#define log_debug(...) mafsbx_log(MAFSBX_LOG_DEBUG, __VA_ARGS__)

#endif
