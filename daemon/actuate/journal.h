/*
 * The restore journal: before rqbalance changes a task it appends what the task had,
 * so that a stop, or a start after a crash, can give it back. Text, one record a line:
 *   set TID TGID START_TIME PREV_CPUS SET_CPUS [SINCE]
 *   clear TID START_TIME
 * SINCE (clock ticks after boot, as START_TIME) is when the task was first changed:
 * threads and children it started since then inherited the change.
 */
#ifndef RQB_JOURNAL_H
#define RQB_JOURNAL_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JOURNAL_NAME "affinity.journal"

struct journal_rec {
	pid_t tid;
	pid_t tgid;
	uint64_t start_time;
	cpu_set_t prev;   /* what the task had */
	cpu_set_t set;    /* what rqbalance wrote */
	uint64_t since;   /* clock ticks after boot of the first change; 0 if unknown */
	/*
	 * journal_replay only: what rqbalance had set before the task's last record (prev
	 * where there is one). A run killed between journalling a change and writing it
	 * leaves the task with this.
	 */
	cpu_set_t was;
};

struct journal;

/* The same for another journal file in dir, with records of its owner's own format. */
int journal_open_named(const char *dir, const char *name, struct journal **ret);
void journal_close(struct journal *j);
/* Appends one line (with its newline) in one write(2). */
int journal_append(struct journal *j, const char *line);
/* Calls fn for every line but comments and blank ones, newline cut, with its number. */
int journal_each_line(struct journal *j, void (*fn)(void *ctx, unsigned lineno, char *line),
		      void *ctx);
/* Replaces the file with text, atomically (rename). */
int journal_rewrite_text(struct journal *j, const char *text);
/*
 * Calls fn for every record set and not cleared since, in file order. Malformed lines
 * are logged with their line number and skipped; ret_bad counts them (may be NULL).
 */
int journal_replay(struct journal *j, void (*fn)(void *ctx, const struct journal_rec *r),
		   void *ctx, unsigned *ret_bad);
/* Appends a record; it is on disk (in the page cache) when this returns. */
int journal_set(struct journal *j, const struct journal_rec *r);
int journal_clear(struct journal *j, pid_t tid, uint64_t start_time);
/* Replaces the file with just these records, atomically (rename). */
int journal_rewrite(struct journal *j, const struct journal_rec *recs, size_t n);
/* Lines appended since the last rewrite: the caller compacts when it grows. */
unsigned journal_lines(const struct journal *j);
const char *journal_path(const struct journal *j);

/* Parses one line: 's' for set, 'c' for clear (then only tid and start_time). 0 or -EINVAL. */
int journal_parse_line(const char *line, char *ret_op, struct journal_rec *ret);

#endif
