/*
 * Metrics: the daemon's counters as a Prometheus text file (exposition format 0.0.4),
 * for node_exporter's textfile collector. Written whole and renamed into place, so a
 * reader sees the old file or the new one, never half of one.
 */
#ifndef RQB_METRICS_H
#define RQB_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/conf.h"
#include "model/stats.h"

struct metrics {
	char path[CONF_MAX_STR];  /* the file written last, removed at fini; "" = none */
	bool failing;             /* the last write failed: logged once, until one works */
	uint64_t writes;          /* files written */
	uint64_t failures;        /* writes that failed */
};

void metrics_init(struct metrics *m);
/* Removes the file written last: a stopped daemon reports nothing rather than old counts. */
void metrics_fini(struct metrics *m);
/* Formats every metric of f (and m's own failures). 0, or -EIO when out failed. */
int metrics_format(const struct metrics *m, const struct daemon_stats *f, FILE *out);
/*
 * Writes the metrics to path through a new file of a name of its own (path.XXXXXX,
 * which node_exporter's *.prom leaves alone) and rename(2), mode 0644 whatever the
 * umask, once its directory passes safedir_open_parent (util/safedir.h: root's alone,
 * and each above it); removes the file written before if path changed
 * (empty: writes nothing). 0 or -errno; the first of a run of failures is logged.
 */
int metrics_write(struct metrics *m, const struct daemon_stats *f, const char *path);

#endif
