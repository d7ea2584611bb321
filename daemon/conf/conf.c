/*
 * Config stage: turns the INI file into a struct rqb_conf through one key table.
 * It never touches the running daemon: callers swap in a new struct only when valid.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ini.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "policy/latency.h"
#include "policy/spread.h"
#include "rqbalance.h"
#include "util/log.h"
#include "util/safedir.h"
#include "testonly.h"

static const char *const sampler_names[] = { "auto", "bpf", "proc", "replay", NULL };
static const char *const class_names[] = { "auto", "yes", "no", NULL };
static const char *const events_names[] = { "auto", "bpf", "connector", NULL };
static const char *const hist_from_names[] = { "queue", "wakeup", NULL };

#define OFF(f) offsetof(struct rqb_conf, f)
#define INT(s, k, lo, hi, d, f, h) { s, k, CONF_INT, lo, hi, NULL, d, OFF(f), h, false, 0 }
#define INTR(s, k, lo, hi, d, f, h) { s, k, CONF_INT, lo, hi, NULL, d, OFF(f), h, true, 0 }

const struct conf_key conf_keys[] = {
	INT("daemon", "interval_ms", 10, 60000, "100", interval_ms,
	    "Tick: how often to sample, decide and act, in milliseconds."),
	INT("daemon", "idle_backoff_ms", 0, 10000, "5000", idle_backoff_ms,
	    "Longest heartbeat, in milliseconds, while nothing is managed and nothing can be "
	    "spread: after 10 quiet ticks the tick slows to 1 s, doubling up to this; any "
	    "event brings back interval_ms. 0: never back off."),
	{ "daemon", "sampler", CONF_ENUM, 0, 0, sampler_names, "auto", OFF(sampler),
	  "Where samples come from: bpf (live, from BPF programs), proc (live, from /proc), "
	  "auto (bpf where it loads, else proc) or replay (replay_file).", true, 0 },
	{ "daemon", "replay_file", CONF_STR, 0, 0, NULL, "", OFF(replay_file),
	  "Snapshot file that sampler = replay reads.", true, 0 },
	{ "daemon", "journal_dir", CONF_STR, 0, 0, NULL, RQB_RUNDIR, OFF(journal_dir),
	  "Directory of the restore journal; must be absolute, root's and writable by root "
	  "alone, reached through no symbolic link.", true, CONF_ABSOLUTE },
	{ "daemon", "topology", CONF_STR, 0, 0, NULL, "", OFF(topology),
	  "hwloc XML file describing this machine; empty asks hwloc.", true, 0 },
	{ "daemon", "ctl_socket", CONF_STR, 0, 0, NULL, RQB_RUNDIR "/ctl.sock", OFF(ctl_socket),
	  "The ctl socket rqctl talks to; must be absolute, in a directory as journal_dir's "
	  "(a socket passed by the service manager takes its place).", true, CONF_ABSOLUTE },
	{ "daemon", "ctl_group", CONF_STR, 0, 0, NULL, "", OFF(ctl_group),
	  "Members of this group (a name, resolved at load and reload, or a gid) may ask for a "
	  "reload through rqctl; empty: root only.", false, 0 },
	INT("daemon", "ctl_max_threads", 1, 4194304, "1024", ctl_max_threads,
	    "The most threads a process may have for a set, reset or foreground request of "
	    "anyone but root and ctl_group, through rqctl or D-Bus; one with more is refused. "
	    "A request holds the daemon's one loop for some 100-250 us a thread."),
	{ "daemon", "dbus", CONF_BOOL, 0, 0, NULL, "yes", OFF(dbus),
	  "Serve the D-Bus API (org.rqbalance1, and com.system76.Scheduler where nothing else "
	  "owns it) on the system bus; without a system bus the daemon runs on without it.",
	  true, 0 },
	{ "daemon", "histograms", CONF_BOOL, 0, 0, NULL, "yes", OFF(histograms),
	  "Run-queue wait histograms per latency-nice class (rqctl latency): a BPF program "
	  "on every context switch (and wakeup, for histograms_from = wakeup).", true, 0 },
	{ "daemon", "histograms_from", CONF_ENUM, 0, 0, hist_from_names, "queue",
	  OFF(histograms_from),
	  "Where a counted wait starts: queue (when the kernel queued the task on the run "
	  "queue it runs from: its schedstat mark, one program) or wakeup (at its wakeup or "
	  "preemption, wherever it then waited: three programs, about three times the cost).",
	  true, 0 },
	{ "daemon", "dry_run", CONF_BOOL, 0, 0, NULL, "no", OFF(dry_run),
	  "Log the plan each tick and change nothing.", true, 0 },
	{ "daemon", "latency_nice", CONF_NICE, LAT_MIN, LAT_MAX, NULL, "-10", OFF(latency_nice),
	  "The daemon's own latency-nice value: its nice, and its slice where the kernel "
	  "takes one, so that it handles an exec ahead of the task that execs and a rule's "
	  "value is in force from that task's first instructions.", false, 0 },
	{ "daemon", "log_level", CONF_LOGLEVEL, 0, 0, NULL, "info", OFF(log_level),
	  "Least important message logged: err, warning, notice, info or debug.", false, 0 },
	{ "daemon", "rules_dir", CONF_STR, 0, 0, NULL, RQB_SYSCONFDIR "/rqbalance/rules.d",
	  OFF(rules_dir),
	  "Directory whose *.conf files hold more [rule NAME] sections, read in byte order "
	  "of name after this file; must be absolute; empty: none.", false, CONF_ABSOLUTE_EMPTY },
	INT("balance", "imbalance_pct", 101, 1000, "117", imbalance_pct,
	    "Move a task only if its LLC is this much more loaded per CPU than the target "
	    "would be after the move; 117 means 17 %, the kernel's imbalance_pct."),
	INT("balance", "max_moves_per_tick", 1, 1024, "32", max_moves_per_tick,
	    "Pins and releases per tick, at most."),
	INT("balance", "min_residency_ms", 0, 3600000, "1000", min_residency_ms,
	    "A task that was moved is not moved again sooner than this, nor one that started "
	    "less than this ago, which the kernel placed then."),
	INT("balance", "max_pin_ms", 100, 86400000, "10000", max_pin_ms,
	    "A pin is released at this age even if the imbalance remains."),
	INT("balance", "min_llc_cores", 1, 1024, "2", min_llc_cores,
	    "Spread only across LLCs with at least this many cores: an LLC of one core (a VM "
	    "that shows no L3, where each core's L2 is the last level) gains a task no cache, "
	    "and a pin to it takes the kernel's balancing from the task. 1: every LLC."),
	{ "balance", "keep_pairs", CONF_BOOL, 0, 0, NULL, "yes", OFF(keep_pairs),
	  "Keep tasks that wake each other in one LLC: move such a pair only together, "
	  "to an LLC with two idle CPUs.", false, 0 },
	{ "balance", "keep_together", CONF_BOOL, 0, 0, NULL, "no", OFF(keep_together),
	  "Hold a process whose busy threads fit one LLC's cores, and whose resident set fits "
	  "its cache, in the LLC where its threads ran most, while that LLC is not more than "
	  "20 % busier than the least busy one. Off until measured on real hardware.",
	  false, 0 },
	{ "balance", "latency_apart", CONF_BOOL, 0, 0, NULL, "no", OFF(latency_apart),
	  "Where there are LLCs to spare, keep the LLCs where tasks with a negative "
	  "latency-nice value run for them: tasks with a positive value are pinned to the "
	  "others, and given back when the latency tasks sleep or exit, or CPUs run short.",
	  false, 0 },
	{ "balance", "fast_cores", CONF_BOOL, 0, 0, NULL, "no", OFF(fast_cores),
	  "On a CPU with two kinds of core (P- and E-cores, or an X3D part's two CCDs), keep "
	  "tasks with a negative latency-nice value on the fastest cores (the CCD that "
	  "amd_x3d_mode prefers) and tasks with a positive value off them; given back when the "
	  "latency tasks sleep or exit, when more of them are busy than the fast cores, or "
	  "when CPUs run short. Off until measured on real hardware.",
	  false, 0 },
	{ "exclude", "comms", CONF_LIST, 0, 0, NULL, "", OFF(exclude_comms),
	  "Never move tasks whose comm matches one of these fnmatch(3) patterns.", false, 0 },
	{ "exclude", "cgroups", CONF_LIST, 0, 0, NULL, "", OFF(exclude_cgroups),
	  "Never move tasks in these cgroups or below (absolute cgroup paths).", false, 0 },
	{ "latency", "class_cgroups", CONF_ENUM, 0, 0, class_names, "auto", OFF(lat_class),
	  "Give a task with a latency-nice value the weight of that nice value through a "
	  "class cgroup of rqbalance's own: yes, no, or auto (yes where systemd is not the "
	  "init system and a cpu controller is mounted). Where systemd is, the unit of a "
	  "process whose processes all have the value gets it as CPUWeight instead.", true, 0 },
	{ "latency", "cgroup_root", CONF_STR, 0, 0, NULL, "", OFF(lat_cgroup_root),
	  "Where the class cgroups are made, as a path in the cpu hierarchy; empty: its top. "
	  "A weight counts only against siblings, so a class below a parent of default "
	  "weight gains nothing against tasks outside it.", true, 0 },
	{ "latency", "move_from", CONF_LIST, 0, 0, NULL, "", OFF(lat_move_from),
	  "Cgroups whose tasks a value may move into a class cgroup, besides the top of the "
	  "hierarchy and the classes themselves: fnmatch(3) patterns of absolute cgroup "
	  "paths, a * matching within one component. A task in any other cgroup keeps it, "
	  "whatever its limits: someone put it there.", false, CONF_ABSOLUTE },
	INT("latency", "boost_cpu_pct", 0, 99, "0", lat_boost_cpu_pct,
	    "Caps a negative value's weight so that, when both want all the CPU, it takes at "
	    "most this share from one competitor of default weight; a weight, never a "
	    "throttle; 0 = the kernel's weight for the value, uncapped."),
	INT("latency", "batch_from", 1, 20, "10", lat_batch_from,
	    "Tasks at this value or above run SCHED_BATCH; 20 = never."),
	{ "latency", "idle_at_19", CONF_BOOL, 0, 0, NULL, "no", OFF(lat_idle_at_19),
	  "At 19 a task runs SCHED_IDLE and a cgroup gets cpu.idle (a unit CPUWeight=idle).", false, 0 },
	{ "latency", "uclamp", CONF_BOOL, 0, 0, NULL, "yes", OFF(lat_uclamp),
	  "Set uclamp min (negative values) and max (positive values) where the kernel has it.",
	  false, 0 },
	{ "latency", "events", CONF_ENUM, 0, 0, events_names, "auto", OFF(lat_events),
	  "Where fork, exec and exit events come from: bpf (tracepoints; exe rules match on "
	  "the device and inode the kernel reports), connector (the proc connector; exe rules "
	  "read /proc/PID/exe), or auto (bpf where it loads, else the connector, else walks "
	  "of /proc).", true, 0 },
	{ "latency", "foreground", CONF_NICE, LAT_MIN, LAT_MAX, NULL, "-5", OFF(lat_foreground),
	  "The value a process gets while a caller of the D-Bus API has put it in front (the "
	  "focused window's); one that has a lower value keeps it.", false, 0 },
	{ "latency", "foreground_group", CONF_STR, 0, 0, NULL, "", OFF(lat_fg_group),
	  "Members of this group (a name, resolved at load and reload, or a gid) may put "
	  "their own processes in front at the foreground value even below what their "
	  "RLIMIT_NICE allows; empty: only root and ctl_group may.", false, 0 },
	{ "latency", "game", CONF_NICE, LAT_MIN, LAT_MAX, NULL, "-10", OFF(lat_game),
	  "The value a game gets while a session agent has registered it over the D-Bus API "
	  "(RegisterGame: GameMode's clients); one that has a lower value keeps it. 0 turns "
	  "games off: RegisterGame is refused.", false, 0 },
	{ "latency", "game_group", CONF_STR, 0, 0, NULL, "", OFF(lat_game_group),
	  "Members of this group (a name, resolved at load and reload, or a gid) may register "
	  "their own games at the game value even below what their RLIMIT_NICE allows; "
	  "empty: only root and ctl_group may.", false, 0 },
	INTR("proc", "rescan_ms", 100, 600000, "10000", proc_rescan_ms,
	    "The proc sampler walks all of /proc at most this far apart (sooner when "
	    "more tasks run than it follows)."),
	INTR("proc", "max_tracked", 16, 65536, "4096", proc_max_tracked,
	    "Busy tasks the proc sampler follows between walks, at most."),
	{ "metrics", "path", CONF_STR, 0, 0, NULL, "", OFF(metrics_path),
	  "Prometheus text file the counters are written to, whole, every interval_ms; "
	  "must be absolute, in a directory only root may write; empty: none.", false,
	  CONF_ABSOLUTE_EMPTY },
	INT("metrics", "interval_ms", 1000, 3600000, "10000", metrics_interval_ms,
	    "How often the metrics file is written, in milliseconds."),
};
const size_t conf_nkeys = ARRAY_SIZE(conf_keys);

#define ROFF(f) offsetof(struct rule, f)
#define MATCH_STR(k, f, fl, h) { "rule", k, CONF_STR, 0, 0, NULL, NULL, ROFF(f), h, false, fl }

_Static_assert(RULE_STR_MAX == CONF_MAX_STR, "a rule's strings are config strings");

/* No defaults: a key the rule leaves out matches anything (rule_start). */
const struct conf_key conf_rule_keys[] = {
	{ "rule", "latency_nice", CONF_NICE, LAT_MIN, LAT_MAX, NULL, NULL, ROFF(latency_nice),
	  "The latency-nice value a matching process gets; required.", false, 0 },
	MATCH_STR("comm", comm, CONF_NOT_EMPTY, "fnmatch(3) pattern on the process's comm."),
	MATCH_STR("exe", exe, CONF_NOT_EMPTY | CONF_ABSOLUTE,
		  "fnmatch(3) pattern (FNM_PATHNAME) on the path of the file it runs."),
	MATCH_STR("cmdline", cmdline, CONF_NOT_EMPTY,
		  "fnmatch(3) pattern on its arguments joined by spaces."),
	MATCH_STR("cgroup", cgroup, CONF_NOT_EMPTY | CONF_ABSOLUTE | CONF_CUT_SLASH,
		  "Cgroup path prefix, matched at a '/' boundary."),
	{ "rule", "uid", CONF_UID, 0, 0, NULL, NULL, ROFF(uid),
	  "Real user id, by number or name (looked up when the config is read).", false, 0 },
	{ "rule", "spoofable", CONF_BOOL, 0, 0, NULL, "no", ROFF(spoofable),
	  "Allow a negative value on comm or cmdline alone, which any process can set.",
	  false, 0 },
	{ "rule", "inherit", CONF_BOOL, 0, 0, NULL, "yes", ROFF(inherit),
	  "Whether the processes a matching one starts inherit its value; no: a launcher's.",
	  false, 0 },
};
const size_t conf_nrule_keys = ARRAY_SIZE(conf_rule_keys);

const char *conf_sampler_name(int sampler)
{
	if (sampler < 0 || (size_t)sampler >= ARRAY_SIZE(sampler_names) - 1)
		return "?";
	return sampler_names[sampler];
}

static const struct conf_key *find_key(const char *section, const char *key)
{
	for (size_t i = 0; i < conf_nkeys; i++)
		if (strcmp(conf_keys[i].section, section) == 0 && strcmp(conf_keys[i].key, key) == 0)
			return &conf_keys[i];
	return NULL;
}

static bool known_section(const char *section)
{
	for (size_t i = 0; i < conf_nkeys; i++)
		if (strcmp(conf_keys[i].section, section) == 0)
			return true;
	return false;
}

static int parse_int(const struct conf_key *k, const char *v, uint32_t *ret, const char **reason)
{
	static char msg[128];
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (end == v || *end != '\0' || errno) {
		*reason = "not a whole number";
		return -EINVAL;
	}
	if (n < k->min || n > k->max) {
		snprintf(msg, sizeof(msg), "%lld is out of range %lld..%lld", n, k->min, k->max);
		*reason = msg;
		return -EINVAL;
	}
	*ret = (uint32_t)n;
	return 0;
}

static int parse_bool(const char *v, bool *ret, const char **reason)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	*reason = "not a boolean (yes or no)";
	return -EINVAL;
}

static int parse_enum(const struct conf_key *k, const char *v, int *ret, const char **reason)
{
	static char msg[160];
	size_t off = 0;

	for (int i = 0; k->names[i]; i++)
		if (strcmp(v, k->names[i]) == 0) {
			*ret = i;
			return 0;
		}
	off += (size_t)snprintf(msg, sizeof(msg), "must be one of:");
	for (int i = 0; k->names[i] && off < sizeof(msg); i++)
		off += (size_t)snprintf(msg + off, sizeof(msg) - off, " %s", k->names[i]);
	*reason = msg;
	return -EINVAL;
}

/* The longest line the reader hands inih whole: its buffer also holds "\n\0". */
#define INI_LINE_MAX (INI_MAX_LINE - 2)
/* What inih strips from either end of a value, so never part of a list entry. */
#define BLANKS " \t\n\v\f\r"

static int parse_list(const struct conf_key *k, const char *v, struct conf_list *ret,
		      const char **reason)
{
	struct conf_list l = *ret;
	const char *p = v;

	while (*p) {
		size_t n;

		p += strspn(p, BLANKS);
		n = strcspn(p, BLANKS);
		if (n == 0)
			break;
		/* The dump writes each entry back on a line with its key: "key=entry" must fit. */
		if (n >= CONF_MAX_STR || strlen(k->key) + 1 + n > INI_LINE_MAX) {
			*reason = "list entry too long";
			return -EINVAL;
		}
		if (l.n >= CONF_MAX_LIST) {
			*reason = "too many list entries";
			return -EINVAL;
		}
		if ((k->flags & CONF_ABSOLUTE) && p[0] != '/') {
			*reason = "each entry must be an absolute path";
			return -EINVAL;
		}
		memcpy(l.v[l.n], p, n);
		l.v[l.n][n] = '\0';
		l.n++;
		p += n;
	}
	*ret = l;
	return 0;
}

static int parse_str(const struct conf_key *k, const char *v, char *ret, const char **reason)
{
	size_t n = strlen(v);

	if (n == 0 && (k->flags & CONF_NOT_EMPTY)) {
		*reason = "empty (leave the key out to match any)";
		return -EINVAL;
	}
	if (n >= CONF_MAX_STR) {
		*reason = "too long";
		return -EINVAL;
	}
	if ((k->flags & CONF_ABSOLUTE) && v[0] != '/') {
		*reason = "must be an absolute path";
		return -EINVAL;
	}
	if ((k->flags & CONF_ABSOLUTE_EMPTY) && v[0] && v[0] != '/') {
		*reason = "must be an absolute path, or empty";
		return -EINVAL;
	}
	memcpy(ret, v, n + 1);
	/* A cgroup prefix is kept without a trailing slash, so that matching stops at one. */
	if (k->flags & CONF_CUT_SLASH)
		while (n > 1 && ret[n - 1] == '/')
			ret[--n] = '\0';
	return 0;
}

/* A user by number, or by name: the lookup is made here, once, not where rules match. */
static int parse_uid(const char *v, uid_t *ret, const char **reason)
{
	struct passwd *pw;

	if (v[0] && v[strspn(v, "0123456789")] == '\0') {
		unsigned long long n;
		char *end;

		errno = 0;
		n = strtoull(v, &end, 10);
		/* RULE_UID_ANY, (uid_t)-1, is no one's: "unchanged" to setresuid(2). */
		if (*end != '\0' || errno || n >= RULE_UID_ANY) {
			*reason = "not a user id";
			return -EINVAL;
		}
		*ret = (uid_t)n;
		return 0;
	}
	pw = v[0] ? getpwnam(v) : NULL;
	if (!pw) {
		*reason = "no such user";
		return -EINVAL;
	}
	*ret = pw->pw_uid;
	return 0;
}

/* Sets k's field in base (a struct rqb_conf, or a struct rule for a rule key). */
static int set_value(void *base, const struct conf_key *k, const char *v, const char **reason)
{
	char *field = (char *)base + k->offset;
	int lvl;

	switch (k->type) {
	case CONF_INT:
		return parse_int(k, v, (uint32_t *)field, reason);
	case CONF_BOOL:
		return parse_bool(v, (bool *)field, reason);
	case CONF_ENUM:
		return parse_enum(k, v, (int *)field, reason);
	case CONF_LIST:
		return parse_list(k, v, (struct conf_list *)field, reason);
	case CONF_STR:
		return parse_str(k, v, field, reason);
	case CONF_LOGLEVEL:
		lvl = log_level_from_name(v);
		if (lvl < 0) {
			*reason = "must be one of: err warning notice info debug";
			return -EINVAL;
		}
		*(int *)field = lvl;
		return 0;
	case CONF_NICE:
		return latency_parse(v, (int *)field, reason);
	case CONF_UID:
		return parse_uid(v, (uid_t *)field, reason);
	}
	*reason = "unknown key type";
	return -EINVAL;
}

int conf_set(struct rqb_conf *c, const char *section, const char *key, const char *value,
	     const char **ret_reason)
{
	const struct conf_key *k = find_key(section, key);

	if (!k) {
		*ret_reason = known_section(section) ? "unknown key" : "unknown section";
		return -EINVAL;
	}
	return set_value(c, k, value, ret_reason);
}

void conf_defaults(struct rqb_conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < conf_nkeys; i++) {
		const char *reason;
		/* A bad default in the table is a programmer error. */
		if (set_value(c, &conf_keys[i], conf_keys[i].def, &reason) < 0)
			abort();
	}
}

/* ---- [rule NAME] sections: parsed through conf_rule_keys, checked as a whole ---- */

#define RULE_SECTION "rule"
#define STR_(x) #x
#define STR(x) STR_(x)

bool conf_rule_section(const char *section, const char **ret_name)
{
	size_t n = strlen(RULE_SECTION);

	/* "[rule]" alone is a rule section too, so that the missing name is what is reported. */
	if (strncmp(section, RULE_SECTION, n) != 0 || (section[n] != '\0' && section[n] != ' '))
		return false;
	*ret_name = section[n] ? section + n + 1 : section + n;
	return true;
}

static const struct conf_key *find_rule_key(const char *key)
{
	for (size_t i = 0; i < conf_nrule_keys; i++)
		if (strcmp(conf_rule_keys[i].key, key) == 0)
			return &conf_rule_keys[i];
	return NULL;
}

/* Whether r names k: every key but a yes/no has an unset state, which the dump leaves out. */
static bool rule_has(const struct rule *r, const struct conf_key *k)
{
	const char *field = (const char *)r + k->offset;

	switch (k->type) {
	case CONF_STR:
		return (*(const char *const *)field)[0] != '\0';
	case CONF_NICE:
		return *(const int *)field != LAT_NONE;
	case CONF_UID:
		return *(const uid_t *)field != RULE_UID_ANY;
	default:
		return false;
	}
}

static const char *check_rule_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return "a rule needs a name: [rule NAME]";
	if (n >= RULE_NAME_MAX)
		return "rule name too long";
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("-_.@", name[i]))
			return "a rule name is letters, digits, '-', '_', '.' and '@'";
	return NULL;
}

/* A file's rules share its name: the last rule's copy is reused when it is the same. */
static const char *file_copy(struct rule_set *rs, const char *file)
{
	if (rs->n && strcmp(rs->r[rs->n - 1].file, file) == 0)
		return rs->r[rs->n - 1].file;
	return conf_rules_strdup(rs, file);
}

static int rule_start(struct rule_set *rs, struct rule *r, const char *name, const char *file,
		      unsigned line)
{
	*r = (struct rule){
		.name = conf_rules_strdup(rs, name),
		.latency_nice = LAT_NONE,
		.comm = "", .exe = "", .cmdline = "", .cgroup = "",
		.uid = RULE_UID_ANY,
		.inherit = true,
		.file = file_copy(rs, file),
		.line = line,
	};
	return r->name && r->file ? 0 : -ENOMEM;
}

/* A string key: checked as a config string, then kept in rs's own memory. */
static int rule_set_str(struct rule_set *rs, struct rule *r, const struct conf_key *k,
			const char *v, const char **reason)
{
	char buf[CONF_MAX_STR];
	const char *copy;
	int ret = parse_str(k, v, buf, reason);

	if (ret < 0)
		return ret;
	copy = conf_rules_strdup(rs, buf);
	if (!copy) {
		*reason = "out of memory";
		return -ENOMEM;
	}
	*(const char **)((char *)r + k->offset) = copy;
	return 0;
}

/*
 * Sets key in r, which holds the rule as the current file has it so far. The unset
 * state of every key but the yes/no ones can be seen, so those are refused twice.
 */
static int rule_set_key(struct rule_set *rs, struct rule *r, const char *key, const char *v,
			const char **reason)
{
	const struct conf_key *k = find_rule_key(key);

	if (!k) {
		*reason = "unknown key";
		return -EINVAL;
	}
	if (rule_has(r, k)) {
		*reason = "set twice in this rule";
		return -EINVAL;
	}
	if (k->type == CONF_STR)
		return rule_set_str(rs, r, k, v, reason);
	return set_value(r, k, v, reason);
}

int conf_rule_set(struct rule_set *rs, const char *name, const char *key, const char *value,
		  const char *file, unsigned line, const char **ret_reason)
{
	const char *reason = check_rule_name(name);
	struct rule r;
	int i, ret;

	if (reason) {
		*ret_reason = reason;
		return -EINVAL;
	}
	i = conf_rules_find(rs, name);
	if (i < 0 && rs->n >= RULES_MAX) {
		*ret_reason = "too many rules (at most " STR(RULES_MAX) ")";
		return -EINVAL;
	}
	/*
	 * Work on a copy: a bad value leaves the set as it was (strings it wrote stay
	 * unused in rs's blocks until rs is freed).
	 */
	if (i >= 0 && strcmp(rs->r[i].file, file) == 0)
		r = rs->r[i];
	else if (rule_start(rs, &r, name, file, line) < 0) {
		*ret_reason = "out of memory";
		return -ENOMEM;
	}
	ret = rule_set_key(rs, &r, key, value, ret_reason);
	if (ret < 0)
		return ret;
	if (i >= 0) {
		rs->r[i] = r;
		conf_rules_changed(rs);
		return 0;
	}
	ret = conf_rules_append(rs, &r);
	if (ret < 0)
		*ret_reason = "out of memory";
	return ret;
}

static void rule_error(FILE *err, const struct rule *r, const char *key, const char *reason)
{
	if (err)
		fprintf(err, "%s:%u: [rule %s]%s%s: %s\n", r->file, r->line, r->name,
			key[0] ? " " : "", key, reason);
}

/* What a rule needs beyond each key being well formed; 0 or -EINVAL. */
static int check_rule(const struct rule *r, FILE *err)
{
	bool has_exe = r->exe[0], has_uid = r->uid != RULE_UID_ANY;
	int ret = 0;

	if (r->latency_nice == LAT_NONE) {
		rule_error(err, r, "latency_nice", "missing: every rule needs a value");
		ret = -EINVAL;
	}
	if (!r->comm[0] && !has_exe && !r->cmdline[0] && !r->cgroup[0] && !has_uid) {
		rule_error(err, r, "",
			   "no match key (comm, exe, cmdline, cgroup or uid): "
			   "it would match every process");
		ret = -EINVAL;
	} else if (r->latency_nice < 0 && !has_exe && !has_uid && !r->spoofable) {
		rule_error(err, r, "latency_nice",
			   "a negative value needs exe or uid, since any process can "
			   "set its own comm and cmdline (or say spoofable = yes)");
		ret = -EINVAL;
	}
	return ret;
}

int conf_rules_check(const struct rule_set *rs, FILE *err)
{
	int ret = 0;

	for (unsigned i = 0; i < rs->n; i++)
		if (check_rule(&rs->r[i], err) < 0)
			ret = -EINVAL;
	return ret;
}

/* inih's section buffer (MAX_SECTION): a longer name would be cut, silently. */
#define INI_SECTION_MAX 50
#define FOREIGN "a rules_dir file holds only [rule NAME] sections"

/* Parser state: inih hands lines to the handler; our reader counts them. */
struct parse_ctx {
	const char *name;         /* the file being read */
	FILE *err;
	struct rqb_conf conf;
	unsigned lineno;          /* line the reader handed out last */
	unsigned nerrors;
	unsigned file_errors;     /* nerrors when this file began */
	bool after_key;           /* inih takes an indented line as the key's continuation */
	bool rules_only;          /* a rules_dir file: [rule NAME] sections only */
	bool foreign;             /* in such a file, in another section (reported once) */
	unsigned empty_rule;      /* line of a [rule NAME] no key has followed yet, or 0 */
	char empty_name[INI_SECTION_MAX];
	unsigned err_lines[64];   /* lines whose error we reported, to tell inih's own apart */
	unsigned seen_line[64];   /* per key index: line of first assignment */
	FILE *in;                 /* file source, or NULL */
	const char *text;         /* string source */
};

static void report_at(struct parse_ctx *p, unsigned line, const char *what, const char *reason)
{
	if (p->err)
		fprintf(p->err, "%s:%u: %s: %s\n", p->name, line, what, reason);
	if (p->nerrors < ARRAY_SIZE(p->err_lines))
		p->err_lines[p->nerrors] = line;
	p->nerrors++;
}

static void report(struct parse_ctx *p, const char *what, const char *reason)
{
	report_at(p, p->lineno, what, reason);
}

/* An error of a whole file, which has no line. */
static void report_file(struct parse_ctx *p, const char *path, const char *what,
			const char *reason)
{
	if (p->err)
		fprintf(p->err, "%s: %s: %s\n", path, what, reason);
	p->nerrors++;
}

/* A [rule NAME] header no key followed would silently define nothing. */
static void end_section(struct parse_ctx *p)
{
	char what[INI_SECTION_MAX + 2];

	if (p->empty_rule) {
		snprintf(what, sizeof(what), "[%s]", p->empty_name);
		report_at(p, p->empty_rule, what,
			  "no keys: a rule needs latency_nice and a match key");
	}
	p->empty_rule = 0;
}

static bool rule_key(struct parse_ctx *p, const char *section, const char *key,
		     const char *value, const char *what)
{
	const char *rule, *reason = NULL;

	if (!conf_rule_section(section, &rule))
		return false;
	p->empty_rule = 0;
	if (conf_rule_set(&p->conf.rules, rule, key, value, p->name, p->lineno, &reason) < 0)
		report(p, what, reason);
	return true;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *p = user;
	const struct conf_key *k = find_key(section, name);
	const char *reason = NULL;
	char what[CONF_MAX_STR * 2];
	size_t idx;

	p->after_key = true;
	snprintf(what, sizeof(what), "[%s] %s", section, name);
	if (rule_key(p, section, name, value, what))
		return 1;
	/* Keys before any section; those of another section were reported with it. */
	if (p->rules_only) {
		if (!p->foreign)
			report(p, what, FOREIGN);
		return 1;
	}
	if (!k) {
		report(p, what, known_section(section) ? "unknown key" : "unknown section");
		return 1;
	}
	idx = (size_t)(k - conf_keys);
	if (p->seen_line[idx] && k->type != CONF_LIST) {
		char msg[64];

		snprintf(msg, sizeof(msg), "set twice (first on line %u)", p->seen_line[idx]);
		report(p, what, msg);
		return 1;
	}
	if (!p->seen_line[idx]) {
		p->seen_line[idx] = p->lineno;
		/* The file's first line for a list replaces the default; later ones add. */
		if (k->type == CONF_LIST)
			((struct conf_list *)((char *)&p->conf + k->offset))->n = 0;
	}
	if (set_value(&p->conf, k, value, &reason) < 0)
		report(p, what, reason);
	return 1;
}

/* A section header as inih will read it: closes the one before, and checks the name. */
static void new_section(struct parse_ctx *p, const char *s)
{
	size_t n = (size_t)(strchr(s, ']') - s - 1);
	const char *rule;

	end_section(p);
	p->foreign = false;
	if (n >= INI_SECTION_MAX) {
		report(p, "line", "section name too long (at most 49 bytes)");
		return;
	}
	memcpy(p->empty_name, s + 1, n);
	p->empty_name[n] = '\0';
	if (conf_rule_section(p->empty_name, &rule)) {
		p->empty_rule = p->lineno;
	} else if (p->rules_only) {
		char what[INI_SECTION_MAX + 2];

		snprintf(what, sizeof(what), "[%s]", p->empty_name);
		report(p, what, FOREIGN);
		p->foreign = true;
	}
}

/* inih returns only the first line it cannot parse: spot every one as it is read. */
static bool bad_syntax(struct parse_ctx *p, const char *line)
{
	const char *s = line + strspn(line, " \t\r");

	if (*s == '\0' || *s == '\n' || *s == ';' || *s == '#')
		return false;
	if (s > line && p->after_key)
		return false;
	if (*s == '[') {
		p->after_key = false;
		if (!strchr(s, ']'))
			return true;
		new_section(p, s);
		return false;
	}
	return !strpbrk(s, "=:");
}

/* An fgets for inih that counts lines and refuses lines longer than inih takes. */
static char *reader(char *str, int num, void *stream)
{
	struct parse_ctx *p = stream;
	size_t n = 0;
	bool too_long = false;
	int ch;

	for (;;) {
		if (p->in) {
			ch = fgetc(p->in);
		} else {
			ch = *p->text ? (unsigned char)*p->text++ : EOF;
		}
		if (ch == EOF) {
			if (n == 0 && !too_long)
				return NULL;
			break;
		}
		if (ch == '\n')
			break;
		if (n + 2 < (size_t)num)
			str[n++] = (char)ch;
		else
			too_long = true;
	}
	p->lineno++;
	if (too_long) {
		report(p, "line", "too long");
		n = 0;
	}
	str[n++] = '\n';
	str[n] = '\0';
	if (bad_syntax(p, str))
		report(p, "line", "syntax error (expected [section] or key = value)");
	return str;
}

static bool reported(const struct parse_ctx *p, unsigned line)
{
	for (unsigned i = p->file_errors; i < p->nerrors && i < ARRAY_SIZE(p->err_lines); i++)
		if (p->err_lines[i] == line)
			return true;
	return false;
}

/* Parses one file (or the string) into p->conf, on top of what is there. */
static void parse(struct parse_ctx *p)
{
	int r;

	p->lineno = 0;
	p->after_key = false;
	p->foreign = false;
	p->file_errors = p->nerrors;
	r = ini_parse_stream(reader, p, handler, p);
	end_section(p);
	if (r > 0 && !reported(p, (unsigned)r)) {
		p->lineno = (unsigned)r;
		report(p, "line", "syntax error (expected [section] or key = value)");
	} else if (r < 0) {
		p->lineno = 0;
		report(p, "file", "cannot parse");
	}
}

/*
 * path opened for reading (a link is followed) if it is a regular file, or, unless
 * regular_only, another kind that is no FIFO (/dev/null: no config); NULL with errno
 * set otherwise, EINVAL for a kind refused. The open does not wait: a FIFO there (no
 * writer) would hold a start or a reload for ever.
 */
static FILE *open_config(const char *path, bool regular_only)
{
	struct stat st;
	FILE *f;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || S_ISFIFO(st.st_mode) ||
	    (regular_only && !S_ISREG(st.st_mode)) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

static void parse_dropin(struct parse_ctx *p, const char *path)
{
	FILE *f = open_config(path, true);

	if (!f) {
		if (errno == EINVAL)
			report_file(p, path, "cannot read", "not a regular file");
		else
			report_file(p, path, "cannot open", strerror(errno));
		return;
	}
	p->name = path;
	p->in = f;
	parse(p);
	if (ferror(f))
		report_file(p, path, "cannot read", strerror(EIO));
	fclose(f);
	p->in = NULL;
}

static int dropin_name(const struct dirent *de)
{
	size_t n = strlen(de->d_name);

	/* Hidden files are editors' and package managers' leftovers. */
	return de->d_name[0] != '.' && n > 5 && strcmp(de->d_name + n - 5, ".conf") == 0;
}

/* Byte order, whatever the locale (alphasort follows LC_COLLATE). */
static int by_bytes(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* The rules in rules_dir's *.conf files; a directory that does not exist holds none. */
static void parse_rules_dir(struct parse_ctx *p)
{
	const char *dir = p->conf.rules_dir, *main_name = p->name;
	struct dirent **names;
	int n;

	if (!dir[0])
		return;
	n = scandir(dir, &names, dropin_name, by_bytes);
	if (n < 0) {
		if (errno != ENOENT)
			report_file(p, dir, "cannot read", strerror(errno));
		return;
	}
	p->rules_only = true;
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		parse_dropin(p, path);
		free(names[i]);
	}
	free(names);
	p->rules_only = false;
	p->name = main_name;
}

/*
 * The metrics file is written by root in its directory: one that a user may write is
 * one where a FIFO or a link can wait for it. Refused at start, check and reload.
 */
static void check_metrics_dir(struct parse_ctx *p)
{
	const struct conf_key *k = find_key("metrics", "path");
	char why[PATH_MAX + 128];

	if (!p->conf.metrics_path[0] ||
	    safedir_check_parent(p->conf.metrics_path, why, sizeof(why)) == 0)
		return;
	report_at(p, p->seen_line[k - conf_keys], "[metrics] path", why);
}

/*
 * The journals and the ctl socket are made by root in these directories: one that a
 * user may write, or a link on the way, lets that user plant a link, a FIFO or a
 * socket of their own there. Refused at start, check and reload (they take effect
 * at a restart, which would then fail).
 */
static void check_run_dir(struct parse_ctx *p, const char *key, const char *path, bool file)
{
	const struct conf_key *k = find_key("daemon", key);
	char dir[CONF_MAX_STR], what[64], why[PATH_MAX + 128];
	const char *slash = strrchr(path, '/');

	if (file)
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), "%s", path);
	if (safedir_check_path(dir, why, sizeof(why)) == 0)
		return;
	snprintf(what, sizeof(what), "[daemon] %s", key);
	report_at(p, p->seen_line[k - conf_keys], what, why);
}

/*
 * ctl_group, foreground_group and game_group are resolved here, at start and reload, so that a
 * request never waits on NSS (LDAP, sssd) in the event loop. A name that does not
 * resolve is an error, not a silent "root only": a number needs no NSS, for groups a
 * directory serves late.
 */
static void resolve_group(struct parse_ctx *p, const char *section, const char *key,
			  const char *name, gid_t *ret_gid, bool *ret_set)
{
	const struct conf_key *k = find_key(section, key);
	char what[64];
	struct group *g;
	char *end;
	unsigned long v;

	*ret_set = false;
	if (!name[0])
		return;
	errno = 0;
	v = strtoul(name, &end, 10);
	if (name[0] >= '0' && name[0] <= '9' && !*end && !errno && v < (gid_t)-1) {
		*ret_gid = (gid_t)v;
		*ret_set = true;
		return;
	}
	errno = 0;
	g = getgrnam(name);
	if (!g) {
		snprintf(what, sizeof(what), "[%s] %s", section, key);
		report_at(p, p->seen_line[k - conf_keys], what,
			  errno ? strerror(errno) : "no such group (a gid may be given as a number)");
		return;
	}
	*ret_gid = g->gr_gid;
	*ret_set = true;
}

/* The rules are checked as a whole only once every file is read without an error. */
static int finish(struct parse_ctx *p, struct rqb_conf *ret)
{
	if (!p->nerrors) {
		check_metrics_dir(p);
		check_run_dir(p, "journal_dir", p->conf.journal_dir, false);
		check_run_dir(p, "ctl_socket", p->conf.ctl_socket, true);
		resolve_group(p, "daemon", "ctl_group", p->conf.ctl_group, &p->conf.ctl_gid,
			      &p->conf.ctl_gid_set);
		resolve_group(p, "latency", "foreground_group", p->conf.lat_fg_group,
			      &p->conf.lat_fg_gid, &p->conf.lat_fg_gid_set);
		resolve_group(p, "latency", "game_group", p->conf.lat_game_group,
			      &p->conf.lat_game_gid, &p->conf.lat_game_gid_set);
	}
	if (!p->nerrors && conf_rules_check(&p->conf.rules, p->err) < 0)
		p->nerrors++;
	if (p->nerrors) {
		conf_free(&p->conf);
		return -EINVAL;
	}
	/* Without memory for the index the rules still match, by scanning. */
	if (conf_rules_indexed(&p->conf.rules) < 0)
		log_warn("config: no memory to index %u rules: each is tried in turn",
			 p->conf.rules.n);
	*ret = p->conf;
	return 0;
}

void conf_free(struct rqb_conf *c)
{
	conf_rules_free(&c->rules);
}

void conf_move(struct rqb_conf *dst, struct rqb_conf *src)
{
	if (dst == src)
		return;
	conf_free(dst);
	*dst = *src;
	memset(&src->rules, 0, sizeof(src->rules));
}

static struct parse_ctx *parse_new(const char *name, FILE *err)
{
	struct parse_ctx *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->name = name;
	p->err = err;
	conf_defaults(&p->conf);
	return p;
}

int conf_load(const char *path, FILE *err, struct rqb_conf *ret)
{
	struct parse_ctx *p;
	int r;
	FILE *f = open_config(path, false);

	if (!f) {
		r = -errno;
		if (err)
			fprintf(err, "%s: cannot open: %s\n", path,
				r == -EINVAL ? "a FIFO (it would wait for a writer)" : strerror(-r));
		return r;
	}
	p = parse_new(path, err);
	if (!p) {
		fclose(f);
		return -ENOMEM;
	}
	p->in = f;
	parse(p);
	fclose(f);
	p->in = NULL;
	parse_rules_dir(p);
	r = finish(p, ret);
	free(p);
	return r;
}

int conf_load_string(const char *name, const char *text, FILE *err, struct rqb_conf *ret)
{
	struct parse_ctx *p = parse_new(name, err);
	int r;

	if (!p)
		return -ENOMEM;
	p->text = text;
	parse(p);
	r = finish(p, ret);
	free(p);
	return r;
}

int conf_load_defaults(FILE *err, struct rqb_conf *ret)
{
	struct parse_ctx *p = parse_new("(defaults)", err);
	int r;

	if (!p)
		return -ENOMEM;
	parse_rules_dir(p);
	r = finish(p, ret);
	free(p);
	return r;
}

/*
 * One "key = value" line, as the reader takes it back: "key=value" when value starts
 * with ';' (a comment after a blank) or the blanks would make it too long.
 */
static void dump_line(FILE *out, const char *key, const char *value)
{
	bool tight = value[0] == ';' || strlen(key) + 3 + strlen(value) > INI_LINE_MAX;

	fprintf(out, "%s%s%s\n", key, tight ? "=" : " = ", value);
}

/* A list on as few lines as fit; each line after the first adds to what it holds. */
static void dump_list(const char *key, const struct conf_list *l, FILE *out)
{
	char line[CONF_MAX_STR + INI_LINE_MAX];
	size_t n = 0;

	for (unsigned i = 0; i < l->n; i++) {
		const char *e = l->v[i];
		size_t el = strnlen(e, CONF_MAX_STR - 1);

		/* After a blank, ';' starts a comment: such an entry opens a line of its own. */
		if (n && (e[0] == ';' || strlen(key) + 3 + n + 1 + el > INI_LINE_MAX)) {
			line[n] = '\0';
			dump_line(out, key, line);
			n = 0;
		}
		if (n)
			line[n++] = ' ';
		memcpy(line + n, e, el);
		n += el;
	}
	line[n] = '\0';
	if (n || l->n == 0)
		dump_line(out, key, line);
}

/* k's line for its field in base (a struct rqb_conf, or a struct rule for a rule key). */
static void dump_value(const void *base, const struct conf_key *k, FILE *out)
{
	const char *field = (const char *)base + k->offset;
	char v[CONF_MAX_STR];

	switch (k->type) {
	case CONF_INT:
		snprintf(v, sizeof(v), "%u", *(const uint32_t *)field);
		break;
	case CONF_BOOL:
		snprintf(v, sizeof(v), "%s", *(const bool *)field ? "yes" : "no");
		break;
	case CONF_ENUM:
		snprintf(v, sizeof(v), "%s", k->names[*(const int *)field]);
		break;
	case CONF_STR:
		snprintf(v, sizeof(v), "%s", field);
		break;
	case CONF_LOGLEVEL:
		snprintf(v, sizeof(v), "%s", log_level_name(*(const int *)field));
		break;
	case CONF_NICE:
		snprintf(v, sizeof(v), "%d", *(const int *)field);
		break;
	case CONF_UID:
		snprintf(v, sizeof(v), "%u", (unsigned)*(const uid_t *)field);
		break;
	case CONF_LIST:
		dump_list(k->key, (const struct conf_list *)field, out);
		return;
	}
	dump_line(out, k->key, v);
}

size_t conf_key_size(const struct conf_key *k)
{
	switch (k->type) {
	case CONF_INT:
		return sizeof(uint32_t);
	case CONF_BOOL:
		return sizeof(bool);
	case CONF_ENUM:
	case CONF_LOGLEVEL:
	case CONF_NICE:
		return sizeof(int);
	case CONF_UID:
		return sizeof(uid_t);
	case CONF_STR:
		return CONF_MAX_STR;
	case CONF_LIST:
		return sizeof(struct conf_list);
	}
	return 0;
}

void conf_placement_rules(const struct rqb_conf *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", c->keep_together ? "keep_together" : "",
		 c->keep_together && (c->latency_apart || c->fast_cores) ? ", " : "",
		 c->latency_apart ? "latency_apart" : "",
		 c->latency_apart && c->fast_cores ? ", " : "", c->fast_cores ? "fast_cores" : "");
}

void conf_spread(const struct rqb_conf *c, struct spread_conf *ret)
{
	_Static_assert(SPREAD_MAX_EXCLUDE >= CONF_MAX_LIST, "an [exclude] list would be cut");
	*ret = (struct spread_conf){
		.imbalance_pct = c->imbalance_pct,
		.max_moves_per_tick = c->max_moves_per_tick,
		.min_residency_ms = c->min_residency_ms,
		.max_pin_ms = c->max_pin_ms,
		.min_llc_cores = c->min_llc_cores,
		.keep_pairs = c->keep_pairs,
		.keep_together = c->keep_together,
		.latency_apart = c->latency_apart,
		.fast_cores = c->fast_cores,
		.nexclude_comms = c->exclude_comms.n,
		.nexclude_cgroups = c->exclude_cgroups.n,
	};
	for (unsigned i = 0; i < c->exclude_comms.n; i++)
		ret->exclude_comms[i] = c->exclude_comms.v[i];
	for (unsigned i = 0; i < c->exclude_cgroups.n; i++)
		ret->exclude_cgroups[i] = c->exclude_cgroups.v[i];
}

void conf_dump(const struct rqb_conf *c, FILE *out)
{
	const char *section = NULL;

	for (size_t i = 0; i < conf_nkeys; i++) {
		const struct conf_key *k = &conf_keys[i];

		if (!section || strcmp(section, k->section) != 0) {
			fprintf(out, "%s[%s]\n", section ? "\n" : "", k->section);
			section = k->section;
		}
		dump_value(c, k, out);
	}
	if (c->rules.n) {
		fputc('\n', out);
		conf_dump_rules(&c->rules, out);
	}
}

void conf_dump_rules(const struct rule_set *rs, FILE *out)
{
	for (unsigned i = 0; i < rs->n; i++) {
		const struct rule *r = &rs->r[i];

		fprintf(out, "%s[rule %s]\n", i ? "\n" : "", r->name);
		for (size_t j = 0; j < conf_nrule_keys; j++) {
			const struct conf_key *k = &conf_rule_keys[j];

			/* A yes/no has no unset state: it is always written. */
			if (k->type == CONF_STR && rule_has(r, k))
				dump_line(out, k->key, *(const char *const *)((const char *)r +
									  k->offset));
			else if (k->type == CONF_BOOL || rule_has(r, k))
				dump_value(r, k, out);
		}
	}
}
