/* Logging: stderr in the foreground (with <N> prefixes under journald), syslog otherwise. */
#ifndef RQB_LOG_H
#define RQB_LOG_H

#include <syslog.h>

void log_init(const char *ident, int use_syslog);
void log_fini(void);
void log_set_level(int level);
int log_get_level(void);
/* Parses "err", "warning", "notice", "info" or "debug"; -1 if unknown. */
int log_level_from_name(const char *name);
const char *log_level_name(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
