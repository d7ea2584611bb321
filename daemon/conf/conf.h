/* Configuration: one table of keys drives parsing, range checks, --dump-config and tests. */
#ifndef RQB_CONF_H
#define RQB_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"

enum conf_sampler { CONF_SAMPLER_AUTO, CONF_SAMPLER_BPF, CONF_SAMPLER_PROC, CONF_SAMPLER_REPLAY };
enum conf_class { CONF_CLASS_AUTO, CONF_CLASS_YES, CONF_CLASS_NO };
enum conf_events { CONF_EVENTS_AUTO, CONF_EVENTS_BPF, CONF_EVENTS_CONNECTOR };
enum conf_hist_from { CONF_HIST_QUEUE, CONF_HIST_WAKEUP };

#define CONF_MAX_LIST 64     /* entries in a list value */
#define CONF_MAX_STR 256     /* bytes in a string or list entry */

struct conf_list {
	unsigned n;
	char v[CONF_MAX_LIST][CONF_MAX_STR];
};

struct rqb_conf {
	/* [daemon] */
	uint32_t interval_ms;           /* tick: sample, decide, act */
	uint32_t idle_backoff_ms;       /* longest idle heartbeat; 0: off (core/idle.h) */
	int sampler;                    /* enum conf_sampler */
	char replay_file[CONF_MAX_STR]; /* snapshots for sampler = replay */
	char journal_dir[CONF_MAX_STR]; /* where the restore journal lives */
	char topology[CONF_MAX_STR];    /* hwloc XML file; "" = this machine */
	char ctl_socket[CONF_MAX_STR];  /* where rqctl connects */
	char ctl_group[CONF_MAX_STR];   /* a group whose members may control it; "" = root only */
	bool ctl_gid_set;               /* ctl_group named a group: ctl_gid is its gid */
	gid_t ctl_gid;                  /* resolved at load, never in the event loop (NSS may block) */
	uint32_t ctl_max_threads;       /* threads a target of a caller who is not an admin
					   may have (ctl_req.c) */
	bool dry_run;                   /* plan and log, change nothing */
	int log_level;                  /* syslog level */
	int latency_nice;               /* the daemon's own latency-nice value */
	char rules_dir[CONF_MAX_STR];   /* drop-ins of [rule NAME] sections; "" = none */
	bool dbus;                      /* serve the D-Bus API on the system bus */
	bool histograms;                /* run-queue wait histograms (rqctl latency) */
	enum conf_hist_from histograms_from; /* where a wait starts: queued, or woken */
	/* [balance] */
	uint32_t imbalance_pct;         /* target must be this much less loaded, 117 = 17 % */
	uint32_t max_moves_per_tick;    /* pins plus releases per tick */
	uint32_t min_residency_ms;      /* no task moves again sooner than this */
	uint32_t max_pin_ms;            /* a pin is released at this age at the latest */
	bool keep_pairs;                /* move tasks that wake each other only together */
	bool keep_together;             /* hold a process that fits one LLC there */
	bool latency_apart;             /* LLCs of their own for negative latency-nice tasks */
	bool fast_cores;                /* the fastest cores for them, batch kept off */
	uint32_t min_llc_cores;         /* LLCs with fewer cores are not spread across */
	/* [exclude] */
	struct conf_list exclude_comms;   /* fnmatch(3) patterns on comm */
	struct conf_list exclude_cgroups; /* cgroup path prefixes */
	/* [latency] */
	int lat_class;                  /* enum conf_class */
	char lat_cgroup_root[CONF_MAX_STR]; /* class cgroups' directory; "" = find one */
	struct conf_list lat_move_from;  /* fnmatch(3) patterns of cgroups a value moves from */
	uint32_t lat_boost_cpu_pct;     /* bound on a negative weight, % against one default peer */
	uint32_t lat_batch_from;        /* SCHED_BATCH from this value up */
	bool lat_idle_at_19;            /* SCHED_IDLE / cpu.idle at 19 */
	bool lat_uclamp;                /* uclamp where the kernel has it */
	int lat_events;                 /* enum conf_events: where fork/exec/exit come from */
	int lat_foreground;             /* what a process put in front (D-Bus) gets */
	char lat_fg_group[CONF_MAX_STR]; /* its members may put their own in front at it */
	bool lat_fg_gid_set;            /* lat_fg_group named a group: lat_fg_gid is its gid */
	gid_t lat_fg_gid;
	int lat_game;                   /* what a registered game gets (D-Bus); 0: games off */
	char lat_game_group[CONF_MAX_STR]; /* its members may register their own at it */
	bool lat_game_gid_set;          /* lat_game_group named a group: lat_game_gid is its gid */
	gid_t lat_game_gid;
	/* [proc] */
	uint32_t proc_rescan_ms;        /* full /proc walk at most this far apart */
	uint32_t proc_max_tracked;      /* tasks whose stat file stays open */
	/* [metrics] */
	char metrics_path[CONF_MAX_STR]; /* Prometheus text file; "" = none */
	uint32_t metrics_interval_ms;   /* how often it is written */
	/* [rule NAME] sections, the main file's then rules_dir's */
	struct rule_set rules;
};

enum conf_type {
	CONF_INT, CONF_BOOL, CONF_STR, CONF_ENUM, CONF_LIST, CONF_LOGLEVEL,
	CONF_NICE,   /* a latency-nice value, LAT_MIN…LAT_MAX (int) */
	CONF_UID,    /* a user id, by number or by name (uid_t) */
};

/* What a CONF_STR value must be, beyond fitting. */
#define CONF_ABSOLUTE       0x1u  /* an absolute path */
#define CONF_ABSOLUTE_EMPTY 0x2u  /* an absolute path, or empty */
#define CONF_NOT_EMPTY      0x4u  /* a rule's match key: left out, not empty, to match any */
#define CONF_CUT_SLASH      0x8u  /* stored without its trailing slashes ("/" stays) */

struct conf_key {
	const char *section;
	const char *key;
	enum conf_type type;
	long long min, max;        /* CONF_INT range, inclusive */
	const char *const *names;  /* CONF_ENUM values, NULL-terminated; index = value */
	const char *def;           /* default, as it is written in the file */
	size_t offset;             /* into struct rqb_conf (a rule key's: into struct rule) */
	const char *help;
	bool restart;              /* names what is set up at start: a reload keeps it */
	unsigned flags;            /* CONF_STR and each CONF_LIST entry: CONF_ABSOLUTE… */
};

/* The table: every key the daemon knows. */
extern const struct conf_key conf_keys[];
extern const size_t conf_nkeys;
/* The keys of a [rule NAME] section, in the order the dump writes them. */
extern const struct conf_key conf_rule_keys[];
extern const size_t conf_nrule_keys;

/* Fills c with every default, and no rules (whatever c held is not freed). */
void conf_defaults(struct rqb_conf *c);
/*
 * Parses path into a fresh struct, then the rules in rules_dir/NAME.conf (in byte order
 * of NAME; a missing directory is none). Every error goes to err as
 * "file:line: [section] key: reason" (err may be NULL). Returns 0, -EINVAL when any key
 * or rule was bad (ret untouched), or -errno when the main file cannot be read.
 */
int conf_load(const char *path, FILE *err, struct rqb_conf *ret);
/* Same, from a string, without rules_dir; name stands for the file in messages. */
int conf_load_string(const char *name, const char *text, FILE *err, struct rqb_conf *ret);
/* The defaults and the rules of the default rules_dir: for when there is no main file. */
int conf_load_defaults(FILE *err, struct rqb_conf *ret);
/* Bytes the key's value takes in struct rqb_conf. */
size_t conf_key_size(const struct conf_key *k);
/* Prints the effective config as an INI file that conf_load accepts. */
void conf_dump(const struct rqb_conf *c, FILE *out);
struct spread_conf;
/* The keys the spread policy reads (policy/spread.h); its lists point into c. */
void conf_spread(const struct rqb_conf *c, struct spread_conf *ret);
/* The placement rules that are on, as "keep_together, fast_cores"; "" for none. */
void conf_placement_rules(const struct rqb_conf *c, char *buf, size_t len);
/* Prints the [rule NAME] sections of rs as conf_dump does. */
void conf_dump_rules(const struct rule_set *rs, FILE *out);
/* Sets one key from its text form, as the file would; 0 or -EINVAL with reason. */
int conf_set(struct rqb_conf *c, const char *section, const char *key, const char *value,
	     const char **ret_reason);
/* True if the section name is "rule NAME" (or "rule", NAME ""); *ret_name then points at NAME. */
bool conf_rule_section(const char *section, const char **ret_name);
/*
 * Sets key = value of rule name in rs (creating it, or starting it afresh the first time
 * a file names it), as the file would; a bad value leaves rs as it was. 0, or -EINVAL
 * (-ENOMEM) with a reason for the message. At most RULES_MAX rules.
 */
int conf_rule_set(struct rule_set *rs, const char *name, const char *key, const char *value,
		  const char *file, unsigned line, const char **ret_reason);
/*
 * Checks every rule as a whole (a value is required; a favour needs exe or uid). 0 or
 * -EINVAL; errors go to err (may be NULL) as "file:line: [rule NAME] key: reason".
 */
int conf_rules_check(const struct rule_set *rs, FILE *err);
/* ---- rule set memory (conf_ruleset.c) ---- */
/* Frees every rule and string of rs and leaves it empty; an empty set is all zeros. */
void conf_rules_free(struct rule_set *rs);
/* A copy of s that lives as long as rs ("" is never copied); NULL when out of memory. */
const char *conf_rules_strdup(struct rule_set *rs, const char *s);
/* The index of the rule named name, or -1. */
int conf_rules_find(const struct rule_set *rs, const char *name);
/* Drops rs's index, after its rules were changed in place: matching scans them. */
void conf_rules_changed(struct rule_set *rs);
/* Builds rs's index (none for no rules), for matching by lookup; 0, or -ENOMEM (then it scans). */
int conf_rules_indexed(struct rule_set *rs);
/* Adds r (its strings rs's own, its name new) at the end; 0 or -ENOMEM. */
int conf_rules_append(struct rule_set *rs, const struct rule *r);
/*
 * A struct rqb_conf owns its rules: conf_load fills one afresh, conf_free frees it,
 * conf_move hands it on. Never copy one by value, and free each one loaded.
 */
void conf_free(struct rqb_conf *c);
/* Frees what dst held and moves src into it; src is left with no rules. */
void conf_move(struct rqb_conf *dst, struct rqb_conf *src);
const char *conf_sampler_name(int sampler);

#endif
