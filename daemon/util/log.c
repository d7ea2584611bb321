/*
 * Logging for every stage: writes to stderr (with <N> level prefixes when journald
 * reads it) or to syslog. It never decides anything and never exits; the helpers
 * every stage shares are in util.c, so that the pure policy never links a logger.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "rqbalance.h"
#include "util/log.h"

static int log_level = LOG_INFO;
static bool log_syslog;
static bool log_journal;  /* stderr is connected to journald */
static const char *log_ident = "rqbalanced";

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
	[LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_init(const char *ident, int use_syslog)
{
	log_ident = ident;
	log_syslog = use_syslog;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
	if (log_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
}

void log_fini(void)
{
	if (log_syslog)
		closelog();
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

int log_level_from_name(const char *name)
{
	for (size_t i = LOG_ERR; i < ARRAY_SIZE(level_names); i++)
		if (strcmp(name, level_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *log_level_name(int level)
{
	if (level < 0 || (size_t)level >= ARRAY_SIZE(level_names))
		return "?";
	return level_names[level];
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	if (log_syslog) {
		vsyslog(level, fmt, ap);
	} else {
		char msg[2048];

		vsnprintf(msg, sizeof(msg), fmt, ap);
		if (log_journal)
			fprintf(stderr, "<%d>%s\n", level, msg);
		else if (level <= LOG_WARNING)
			fprintf(stderr, "%s: %s: %s\n", log_ident, level_names[level], msg);
		else
			fprintf(stderr, "%s: %s\n", log_ident, msg);
	}
	va_end(ap);
}
