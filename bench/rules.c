/*
 * Rule load and match cost: a config of 1 rule and one of 20000 (an ananicy-sized
 * collection: plain comm rules mostly, some plain exe paths, a few patterns), each
 * loaded by the config parser and matched against the same processes, through the
 * index and by scanning. Then what an exec costs before the match: reading this
 * process's identity as the daemon reads a new one's (ident_read_known, the kernel's
 * word on its file given), with the exe rules' (device, inode) table and by lstat()ing
 * every plain-path exe rule. Prints the rows side by side with their ratio to 1 rule,
 * and the goals. Reads only /proc/self and needs no privilege: the daemon's own
 * objects on made-up rules.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "policy/rules.h"
#include "taskev/ident.h"

#define NPROCS 1000   /* processes matched per row, half of them named by no rule */
#define REPEAT 20     /* passes over them, for a stable per-match time */
#define IDENT_READS 200 /* identity reads per row and way */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Rule i of a made-up collection: 1 in 50 a pattern, 1 in 10 a plain exe. */
static void put_rule(FILE *f, unsigned i)
{
	fprintf(f, "[rule r%u]\nlatency_nice = %d\n", i, (int)(i % 20));
	if (i % 50 == 49)
		fprintf(f, "comm = pat%u*\n", i);
	else if (i % 10 == 9)
		fprintf(f, "exe = /usr/bin/prog%u\n", i);
	else
		fprintf(f, "comm = prog%u\n", i);
}

static char *config(unsigned n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	fprintf(f, "[daemon]\nrules_dir =\n");
	for (unsigned i = 0; i < n; i++)
		put_rule(f, i);
	fclose(f);
	return text;
}

/* Process k: named by rule k*7 of a 20000-rule set when k is even, by none when odd. */
static void proc_of(unsigned k, char *comm, char *exe, struct proc_ident *ret)
{
	unsigned i = k * 7 % 20000;

	snprintf(comm, 16, k % 2 ? "other%u" : "prog%u", i);
	snprintf(exe, 64, k % 2 ? "/usr/bin/other%u" : "/usr/bin/prog%u", i);
	*ret = (struct proc_ident){ .pid = (pid_t)k + 1, .uid = 1000, .comm = comm, .exe = exe,
				    .cmdline = comm, .cgroup = "/user.slice" };
}

/* ns per match over NPROCS processes, REPEAT times; linear: scan, not the index. */
static double match_ns(const struct rule_set *rs, bool linear, unsigned *ret_hits)
{
	char comm[NPROCS][16], exe[NPROCS][64];
	struct proc_ident id[NPROCS];
	uint64_t t0;
	unsigned hits = 0;

	for (unsigned k = 0; k < NPROCS; k++)
		proc_of(k, comm[k], exe[k], &id[k]);
	t0 = now_ns();
	for (int r = 0; r < REPEAT; r++)
		for (unsigned k = 0; k < NPROCS; k++)
			hits += (linear ? rules_match_linear(rs, &id[k]) : rules_match(rs, &id[k])) >= 0;
	*ret_hits = hits / REPEAT;
	return (double)(now_ns() - t0) / (NPROCS * REPEAT);
}

/* ns per identity read of this process, with the table t (NULL: every rule tried). */
static double ident_ns(const struct rule_set *rs, const struct ident_exetab *t)
{
	struct ident_buf *buf = malloc(sizeof(*buf));
	struct ident_exe k;
	struct proc_ident id;
	struct stat st;
	uint64_t t0;

	if (!buf || stat("/proc/self/exe", &st) < 0)
		abort();
	k = (struct ident_exe){ .dev = st.st_dev, .ino = st.st_ino };
	t0 = now_ns();
	for (int i = 0; i < IDENT_READS; i++)
		if (ident_read_known("/proc", getpid(), &k, rs, t, buf, &id) < 0)
			abort();
	free(buf);
	return (double)(now_ns() - t0) / IDENT_READS;
}

struct row {
	unsigned n;           /* rules */
	double load_ms;       /* conf_load_string, index included */
	double bytes_per_rule; /* heap the loaded rules hold, per rule */
	double index_ns;      /* per match, through the index */
	double scan_ns;       /* per match, every rule in turn */
	unsigned hits;        /* processes of NPROCS some rule matched */
	double ident_ns;      /* per identity read, with the exe table */
	double ident_scan_ns; /* per identity read, every exe rule lstat()ed */
};

static void run(unsigned n, struct row *ret)
{
	char *text = config(n);
	struct rqb_conf c;
	size_t before = mallinfo2().uordblks;
	uint64_t t0 = now_ns();
	unsigned hits2;

	if (conf_load_string("bench.conf", text, stderr, &c) < 0)
		abort();
	ret->n = n;
	ret->load_ms = (double)(now_ns() - t0) / 1e6;
	ret->bytes_per_rule = (double)(mallinfo2().uordblks - before) / n;
	ret->index_ns = match_ns(&c.rules, false, &ret->hits);
	ret->scan_ns = match_ns(&c.rules, true, &hits2);
	if (hits2 != ret->hits)
		abort();
	{
		struct ident_exetab *t = NULL;

		if (ident_exetab_build(&c.rules, &t) < 0)
			abort();
		ret->ident_ns = ident_ns(&c.rules, t);
		ret->ident_scan_ns = ident_ns(&c.rules, NULL);
		ident_exetab_free(t);
	}
	conf_free(&c);
	free(text);
}

int main(void)
{
	struct row rows[3];

	run(1, &rows[0]);
	/* 50 rules: every kind the 20000 hold (comm, exe, a pattern), so every field. */
	run(50, &rows[1]);
	run(20000, &rows[2]);
	printf("%8s %10s %8s %10s %10s %6s %10s %10s %10s\n", "rules", "load_ms", "B/rule",
	       "index_ns", "scan_ns", "hits", "load_x", "index_x", "scan_x");
	for (int i = 0; i < 3; i++)
		printf("%8u %10.2f %8.0f %10.1f %10.1f %6u %10.1f %10.2f %10.1f\n", rows[i].n,
		       rows[i].load_ms, rows[i].bytes_per_rule, rows[i].index_ns, rows[i].scan_ns,
		       rows[i].hits, rows[i].load_ms / rows[0].load_ms,
		       rows[i].index_ns / rows[0].index_ns, rows[i].scan_ns / rows[0].scan_ns);
	/* An identity reads what the rules match on: against 50 rules, which need as much. */
	printf("\n%8s %12s %14s %10s %10s\n", "rules", "ident_ns", "ident_scan_ns", "ident_x",
	       "scan_x");
	for (int i = 1; i < 3; i++)
		printf("%8u %12.0f %14.0f %10.2f %10.1f\n", rows[i].n, rows[i].ident_ns,
		       rows[i].ident_scan_ns, rows[i].ident_ns / rows[1].ident_ns,
		       rows[i].ident_scan_ns / rows[1].ident_scan_ns);
	/* Within 10 %, or 1 us where the figure is too small for a ratio to mean much. */
	printf("\ngoal: a match with 20000 rules within 10 %% (or 1 us) of 1 rule's: %s\n",
	       rows[2].index_ns <= rows[0].index_ns * 1.1 ||
	       rows[2].index_ns - rows[0].index_ns <= 1000 ? "met" : "NOT MET");
	printf("goal: an identity read with 20000 rules within 10 %% (or 1 us) of 50 rules': "
	       "%s\n", rows[2].ident_ns <= rows[1].ident_ns * 1.1 ||
	       rows[2].ident_ns - rows[1].ident_ns <= 1000 ? "met" : "NOT MET");
	return 0;
}
