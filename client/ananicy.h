/*
 * rqctl import-ananicy: ananicy(-cpp) rule files (*.rules, *.types, *.cgroups, one
 * JSON object a line) become rqbalance [rule NAME] sections. The mapping is in
 * rqctl(1): a rule's value is its latency_nice, else its nice, else its type's
 * latency_nice or nice, else 19 for sched idle and 10 for sched batch; whatever else
 * it says is written as comments, so that nothing is dropped unseen.
 */
#ifndef RQB_ANANICY_H
#define RQB_ANANICY_H

#include <stdbool.h>
#include <stdio.h>

struct ananicy_result {
	unsigned skipped; /* lines (or files, directories) that could not be read */
	unsigned live;    /* [rule NAME] sections written live */
};

/*
 * Reads every *.rules, *.types and *.cgroups file under dir, recursively (symbolic
 * links to directories are not followed), in byte order of path, and writes the rules
 * to out. A bad line is reported on err as "FILE:LINE: reason" and skipped. A negative
 * value is written commented out unless allow_spoofable, then with spoofable = yes.
 * Returns 0, or -errno when dir cannot be read (reported on err).
 */
int ananicy_import(const char *dir, bool allow_spoofable, FILE *out, FILE *err,
		   struct ananicy_result *ret);

#endif
