/*
 * What else shapes scheduling here (peers.c): a sched_ext scheduler, autogroup, a
 * missing cpu controller, and other tools that change nice, policy or affinity
 * (ananicy, gamemoded, system76-scheduler, tuned). One finding each, one line: what it
 * is and what it means for rqbalance. Read at start, at reload and for status (at
 * most once a second), never per tick.
 */
#ifndef RQB_PEERS_H
#define RQB_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#define PEERS_MAX 12
#define PEERS_PIDS 4 /* the processes of a tool named, by pid */

struct peers_finding {
	char id[24];     /* "sched-ext", "autogroup", "no-cpu-controller", a tool's name */
	char text[640];  /* what it is: what it means for rqbalance; one line */
	/*
	 * A tool's processes, which the text names ("pids 40, 41"): the first PEERS_PIDS
	 * by pid, how many there are (0: the finding names none), and where in text their
	 * words are, so that a reader who may not see them all can be told fewer.
	 */
	pid_t pid[PEERS_PIDS];
	int npids;
	unsigned pids_at, pids_len;
};

struct peers {
	size_t n;
	struct peers_finding f[PEERS_MAX];
};

/* What the meanings depend on, known to the daemon. */
struct peers_ctx {
	bool cpu_controller; /* a v1 cpu hierarchy, or cgroup2 with cpu (the feature probe) */
	bool class_cgroups;  /* values move tasks into rqbalance's class cgroups */
};

/* The other tools, as peers_match names them. */
enum peers_tool {
	PEERS_ANANICY_CPP,
	PEERS_ANANICY,
	PEERS_GAMEMODED,
	PEERS_SYSTEM76,
	PEERS_TUNED,
	PEERS_NTOOLS
};

/*
 * Reads root's /sys/kernel/sched_ext, /proc/sys/kernel/sched_autogroup_enabled, every
 * /proc/PID/comm (and the cmdline of root's python processes) and tuned's profile
 * under /etc/tuned and /usr/lib/tuned. root "" is the real system; tests give a fake
 * tree.
 * A process named tuned, and a tool known by the script an interpreter runs, count
 * only when they run as root (their effective uid, as /proc/PID/status shows it to
 * us): another user's process can be named tuned, and in a user namespace of its own
 * put any file, link or FIFO at /etc/tuned; it cannot change other users' processes,
 * which is what tuned is named for; and its cmdline is memory it controls, which can
 * block a read (a FUSE file mapped over it). tuned's files are opened through
 * util/safeopen.h under the root it sees (files of root's only), and its profile
 * names are shown only when they are plain names (letters, digits, "._+-").
 */
void peers_scan(const char *root, const struct peers_ctx *ctx, struct peers *ret);
/*
 * Just the sched_ext finding (rqctl explain): true and *ret where a scheduler is
 * loaded under root ("" for the real system), else false.
 */
bool peers_sched_ext(const char *root, struct peers_finding *ret);
/* One log line a finding: "shaping: ID: TEXT". */
void peers_log(const struct peers *p);
/* One "shaping ID: TEXT" row a finding, for --features. */
void peers_print(const struct peers *p, FILE *out);

/*
 * Pure parts, for the tests. The tool a process is, from its comm and its cmdline
 * (NUL-separated, len bytes; NULL if not read), or -1. A python tool is known by its
 * comm or, run as "python3 [-opts] SCRIPT", by SCRIPT's base name.
 */
int peers_match(const char *comm, const char *cmdline, size_t len);
/*
 * "pid 40", "pids 40, 41", "pids 40, 41, 42, 43 and 2 more": n pids (the first
 * PEERS_PIDS of them named) of total.
 */
void peers_pids_text(const pid_t *pids, int n, int total, char *out, size_t len);
/* Whether comm is one peers_match needs the cmdline of (an interpreter's). */
bool peers_wants_cmdline(const char *comm);

struct peers_tuned_conf {
	bool scheduler;     /* a [scheduler] section, or one with type = scheduler */
	char include[256];  /* [main] include =, as written ("" if none) */
};
/* Parses a tuned.conf. */
void peers_tuned_parse(const char *text, struct peers_tuned_conf *ret);

/*
 * The settings of gamemoded's that act on knobs rqbalance sets, as the system's
 * gamemode.ini files leave them (/usr/share/gamemode/gamemode.ini, then
 * /etc/gamemode.ini over it; a user's ~/.config/gamemode.ini is not read). A value is
 * shown only when plain (letters, digits, ",-", at most 15 characters), else "?".
 */
struct peers_gamemode_conf {
	bool read;          /* a file was read */
	char renice[16];    /* [general] renice; "" unset (off: gamemoded's default is 0) */
	char pin_cores[16]; /* [cpu] pin_cores (1.8); "" unset */
	char park_cores[16]; /* [cpu] park_cores (1.8); "" unset */
};
/* Parses a gamemode.ini over ret (a later file's keys replace an earlier's). */
void peers_gamemode_parse(const char *text, struct peers_gamemode_conf *ret);

/* The finding lines, made from what was read. */
void peers_sched_ext_text(const char *state, const char *ops, int switch_all,
			  struct peers_finding *ret);
void peers_autogroup_text(const struct peers_ctx *ctx, struct peers_finding *ret);
/* ananicy-cpp, ananicy, gamemoded, system76-scheduler (not tuned). */
void peers_tool_text(enum peers_tool t, const char *pids, struct peers_finding *ret);
/* gamemoded: what to turn off in gamemode.ini, and what the system's files say (c). */
void peers_gamemode_text(const char *pids, const struct peers_gamemode_conf *c,
			 struct peers_finding *ret);
/*
 * pids: "pid N" or "pids N, M" (the tool's processes).
 * tuned: its profile(s) as active_profile names them; sched_in the profile file with
 * its [scheduler] (NULL: none in the profile or what it includes); unknown, why the
 * profile could not be read (NULL: it was).
 */
void peers_tuned_text(const char *pids, const char *profile, const char *sched_in,
		      const char *unknown, struct peers_finding *ret);

#endif
