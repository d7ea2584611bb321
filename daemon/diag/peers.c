/*
 * Diagnostics (diag/): what else shapes scheduling here, read under one root prefix at
 * start, reload and status only. It only reads; never under another process's root but
 * through util/safeopen.h, and it passes on nothing read there but a plain profile name.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "diag/features.h"
#include "diag/peers.h"
#include "taskev/ident.h"
#include "util/log.h"
#include "util/safeopen.h"
#include "util/timedread.h"
#include "util/util.h"

/* The most of tuned's files read: active_profile's line, a profile's tuned.conf. */
#define ACTIVE_MAX 256
#define PROFILE_CONF_MAX 65536
/* A profile name tuned ships or a user would give, as shown to any ctl caller. */
#define PROFILE_NAME_MAX 64

static const char *const tool_names[PEERS_NTOOLS] = {
	[PEERS_ANANICY_CPP] = "ananicy-cpp",       [PEERS_ANANICY] = "ananicy",
	[PEERS_GAMEMODED] = "gamemoded",           [PEERS_SYSTEM76] = "system76-scheduler",
	[PEERS_TUNED] = "tuned",
};

/* What each tool changes (tuned's depends on its profile: peers_tuned_text). */
static const char *const tool_does[PEERS_NTOOLS] = {
	[PEERS_ANANICY_CPP] = "it sets the nice, I/O priority, scheduling policy and cgroup of "
			      "the processes whose comm its rules name",
	[PEERS_ANANICY] = "it sets the nice, I/O priority, scheduling policy and cgroup of the "
			  "processes whose comm its rules name",
	[PEERS_GAMEMODED] = "while a game asks for it, it may renice the game, set its I/O "
			    "priority and SCHED_ISO (where the kernel has it), and switch the "
			    "CPU governor",
	[PEERS_SYSTEM76] = "it sets the nice and I/O priority of foreground and background "
			   "processes, and of those its process profiles name",
};

/* What rqbalance does about another tool that changes the same knobs. */
#define LAST_WINS                                                                        \
	"rqbalance sets a knob once, when it gives the value, and leaves it to a tool that " \
	"changes it after (rqctl explain says whose it is): give no process a value in both"

static void add(struct peers *p, const struct peers_finding *f)
{
	if (p->n < PEERS_MAX)
		p->f[p->n++] = *f;
}

/* A finding's text; one that names processes says so afterwards (note_pids). */
#define say(f, ...)                                                                       \
	((f)->npids = 0, (f)->pids_at = (f)->pids_len = 0,                                \
	 snprintf((f)->text, sizeof((f)->text), __VA_ARGS__))

/* The first line of root/path, its newline cut. 0 or -errno. */
static int read_line(const char *root, const char *path, char *buf, size_t len)
{
	char p[PATH_MAX];
	ssize_t n;

	snprintf(p, sizeof(p), "%s%s", root, path);
	n = util_read_file(p, buf, len);
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* ---- the kernel ---- */

void peers_sched_ext_text(const char *state, const char *ops, int switch_all,
			  struct peers_finding *ret)
{
	char name[160];

	snprintf(ret->id, sizeof(ret->id), "sched-ext");
	snprintf(name, sizeof(name), ops && *ops ? "\"%s\"" : "(name unread)", ops);
	if (strcmp(state, "enabled") != 0)
		say(ret, "BPF scheduler %s is %s: while it runs, it orders the tasks it takes, "
			 "and a value's nice, cgroup weight and slice mean what it makes of them; "
			 "pins still apply", name, state);
	else if (switch_all == 0)
		say(ret, "BPF scheduler %s is loaded for SCHED_EXT tasks only: values act as "
			 "usual on the others; a value on a SCHED_EXT task sets SCHED_OTHER or "
			 "SCHED_BATCH, which takes it back to the fair class; pins still apply",
		    name);
	else
		say(ret, "BPF scheduler %s is loaded for every fair task: it alone orders them, "
			 "so a value buys what it makes of the task's nice (its weight), cgroup "
			 "weight only if it implements sched_ext's cgroup ops (scx_flatcg does, "
			 "most do not), and no EEVDF slice; pins still apply (the kernel keeps "
			 "each task on its allowed CPUs)", name);
}

bool peers_sched_ext(const char *root, struct peers_finding *ret)
{
	char state[32], ops[128] = "", sw[8] = "";

	if (read_line(root, "/sys/kernel/sched_ext/state", state, sizeof(state)) < 0 ||
	    strcmp(state, "disabled") == 0)
		return false;
	read_line(root, "/sys/kernel/sched_ext/root/ops", ops, sizeof(ops));
	read_line(root, "/sys/kernel/sched_ext/switch_all", sw, sizeof(sw));
	peers_sched_ext_text(state, ops, sw[0] ? sw[0] == '1' : -1, ret);
	return true;
}

static void scan_sched_ext(const char *root, struct peers *p)
{
	struct peers_finding f;

	if (peers_sched_ext(root, &f))
		add(p, &f);
}

void peers_autogroup_text(const struct peers_ctx *ctx, struct peers_finding *ret)
{
	const char *what = "on (kernel.sched_autogroup_enabled = 1): a task in the root cpu "
			   "cgroup competes only inside its session's autogroup, so its nice "
			   "and policy weigh only against its own session's tasks";

	snprintf(ret->id, sizeof(ret->id), "autogroup");
	if (ctx->class_cgroups)
		say(ret, "%s; a value moves its task into a class cgroup, out of the autogroup, "
			 "so that it weighs against every session", what);
	else
		say(ret, "%s; class cgroups are off, so there a value buys nothing against other "
			 "sessions (each weighs as one nice-0 task): give the session a nice "
			 "(/proc/PID/autogroup)%s", what,
		    ctx->cpu_controller ? ", or a cgroup of its own" : "");
}

/* ---- other tools ---- */

static const char *base(const char *s)
{
	const char *b = strrchr(s, '/');

	return b ? b + 1 : s;
}

/* The comm the kernel keeps for name: its first 15 bytes. */
static bool comm_is(const char *comm, const char *name)
{
	char cut[16];

	snprintf(cut, sizeof(cut), "%s", name);
	return strcmp(comm, cut) == 0;
}

bool peers_wants_cmdline(const char *comm)
{
	return strncmp(comm, "python", 6) == 0;
}

/* The script an interpreter runs: its first argument past argv[0] that is no option. */
static void script_of(const char *cmdline, size_t len, char *ret, size_t size)
{
	size_t off = strnlen(cmdline, len) + 1;

	ret[0] = '\0';
	while (off < len) {
		const char *a = cmdline + off;
		size_t n = strnlen(a, len - off);

		if (n && a[0] != '-') {
			snprintf(ret, size, "%.*s", (int)n, a);
			return;
		}
		off += n + 1;
	}
}

int peers_match(const char *comm, const char *cmdline, size_t len)
{
	char script[256] = "";

	if (cmdline && peers_wants_cmdline(comm))
		script_of(cmdline, len, script, sizeof(script));
	for (int t = 0; t < PEERS_NTOOLS; t++)
		if (comm_is(comm, tool_names[t]) ||
		    (script[0] && strcmp(base(script), tool_names[t]) == 0))
			return t;
	return -1;
}

/* root's /proc/PID, held so that a pid reused meanwhile is not read instead; or -errno. */
static int proc_dir(const char *root, pid_t pid)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/proc/%d", root, (int)pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Whether the process of /proc/PID dir runs as root: its effective uid, as we see it. */
static bool runs_as_root(int dir)
{
	char status[4096];
	uid_t euid;

	return util_read_file_at(dir, "status", status, sizeof(status)) > 0 &&
	       ident_parse_euid(status, &euid) == 0 && euid == 0;
}

/*
 * The tool the process of /proc/PID dir is, or -1. tuned, and a tool an interpreter
 * runs, count only as root: tuned's files are read under its root, which any other
 * user's process (in a user namespace of its own) may fill at will, and a cmdline is
 * memory its process controls, which may block its reader (peers.h): even root's is
 * read within a bound (util/timedread.h).
 */
static int tool_of(int dir)
{
	char comm[64], cmd[4096];
	ssize_t n;
	int t, fd;

	if (util_read_file_at(dir, "comm", comm, sizeof(comm)) <= 0)
		return -1;
	comm[strcspn(comm, "\n")] = '\0';
	if (!peers_wants_cmdline(comm)) {
		t = peers_match(comm, NULL, 0);
		return t == PEERS_TUNED && !runs_as_root(dir) ? -1 : t;
	}
	if (!runs_as_root(dir))
		return -1;
	fd = openat(dir, "cmdline", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -errno : timedread_proc(fd, cmd, sizeof(cmd));
	if (fd >= 0)
		close(fd);
	return peers_match(comm, n > 0 ? cmd : NULL, n > 0 ? (size_t)n : 0);
}

/* The processes of each tool running: the first PEERS_PIDS by pid, and how many. */
struct tool_pids {
	pid_t pid[PEERS_PIDS];
	int n;
};

static void pids_add(struct tool_pids *t, pid_t pid)
{
	int i = t->n < PEERS_PIDS ? t->n : PEERS_PIDS - 1;

	if (t->n >= PEERS_PIDS && pid > t->pid[i])
		i = -1;
	t->n++;
	for (; i > 0 && t->pid[i - 1] > pid; i--)
		t->pid[i] = t->pid[i - 1];
	if (i >= 0)
		t->pid[i] = pid;
}

static void scan_procs(const char *root, struct tool_pids ret[PEERS_NTOOLS])
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/proc", root);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		int t, fd;

		if (pid <= 0 || *end || (fd = proc_dir(root, (pid_t)pid)) < 0)
			continue;
		t = tool_of(fd);
		close(fd);
		if (t >= 0)
			pids_add(&ret[t], (pid_t)pid);
	}
	closedir(d);
}

void peers_pids_text(const pid_t *pids, int n, int total, char *out, size_t len)
{
	size_t off = (size_t)snprintf(out, len, "pid%s", total > 1 ? "s" : "");

	for (int i = 0; i < n && i < PEERS_PIDS && off < len; i++)
		off += (size_t)snprintf(out + off, len - off, "%s %d", i ? "," : "", (int)pids[i]);
	if (total > PEERS_PIDS && off < len)
		snprintf(out + off, len - off, " and %d more", total - PEERS_PIDS);
}

/* Where f's text names the tool's processes, as who says them. */
static void note_pids(struct peers_finding *f, const struct tool_pids *t, const char *who)
{
	const char *at = strstr(f->text, who);

	if (!at)
		return; /* cut off: the text names none then */
	memcpy(f->pid, t->pid, sizeof(f->pid));
	f->npids = t->n;
	f->pids_at = (unsigned)(at - f->text);
	f->pids_len = (unsigned)strlen(who);
}

void peers_tool_text(enum peers_tool t, const char *pids, struct peers_finding *ret)
{
	snprintf(ret->id, sizeof(ret->id), "%s", tool_names[t]);
	say(ret, "%s (%s) runs: %s; %s", tool_names[t], pids, tool_does[t], LAST_WINS);
}

void peers_tuned_text(const char *pids, const char *profile, const char *sched_in,
		      const char *unknown, struct peers_finding *ret)
{
	snprintf(ret->id, sizeof(ret->id), "tuned");
	if (unknown)
		say(ret, "tuned (%s) runs, its profile unknown (%s): its scheduler plugin, "
			 "where a profile has one, sets the affinity, policy and priority of the "
			 "processes its regexes match; %s", pids, unknown, LAST_WINS);
	else if (sched_in)
		say(ret, "tuned (%s) runs profile \"%s\", whose [scheduler] (%s) sets the "
			 "affinity, policy and priority of the processes its regexes match, and "
			 "with isolated_cores moves every task off those CPUs; %s", pids,
		    profile, sched_in, LAST_WINS);
	else
		say(ret, "tuned (%s) runs profile \"%s\", which has no [scheduler]: it "
			 "changes no process's nice, policy or affinity, so it does not meet "
			 "rqbalance there", pids, profile);
}

/* ---- gamemoded's settings ---- */

/* Where gamemoded reads its settings as root wrote them, the later over the earlier. */
static const char *const gamemode_files[] = { "/usr/share/gamemode/gamemode.ini",
					      "/etc/gamemode.ini" };
#define GAMEMODE_INI_MAX 16384

/* "renice 4 (on)": a setting's state, off when unset or a "no" gamemoded reads as off. */
static void gamemode_state(const char *key, const char *v, bool unset_on, char *out, size_t len)
{
	bool off = !v[0] ? !unset_on
			 : strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0 ||
				   strcasecmp(v, "false") == 0;

	if (!v[0])
		snprintf(out, len, "%s unset (%s)", key,
			 unset_on ? "1.8: on where it knows the CPU's core kinds" : "off");
	else
		snprintf(out, len, "%s=%s (%s)", key, v, off ? "off" : "on");
}

void peers_gamemode_text(const char *pids, const struct peers_gamemode_conf *c,
			 struct peers_finding *ret)
{
	char renice[48], pin[80], park[48];

	snprintf(ret->id, sizeof(ret->id), "%s", tool_names[PEERS_GAMEMODED]);
	gamemode_state("renice", c->renice, false, renice, sizeof(renice));
	gamemode_state("pin_cores", c->pin_cores, true, pin, sizeof(pin));
	gamemode_state("park_cores", c->park_cores, false, park, sizeof(park));
	if (!c->read)
		snprintf(renice, sizeof(renice), "no system gamemode.ini read");
	say(ret, "%s (%s) runs: %s; %s; for games, turn off in gamemode.ini its renice "
		 "([general] renice=0) and 1.8's [cpu] pin_cores=no, park_cores=no; the "
		 "system's: %s%s%s%s%s", tool_names[PEERS_GAMEMODED], pids,
	    tool_does[PEERS_GAMEMODED], LAST_WINS, renice, c->read ? ", " : "",
	    c->read ? pin : "", c->read ? ", " : "", c->read ? park : "");
}

/* tuned's parsers' helpers, below, serve gamemode.ini too. */
static const char *next_line(const char *p, char *buf, size_t len);
static bool key_value(char *line, char **ret_key, char **ret_value);

/* v into out where plain (it is shown to any ctl caller), else "?". */
static void gamemode_value(const char *v, char *out, size_t len)
{
	size_t n = strlen(v);
	bool plain = n > 0 && n < len;

	for (size_t i = 0; plain && i < n; i++)
		plain = isalnum((unsigned char)v[i]) || v[i] == ',' || v[i] == '-';
	snprintf(out, len, "%s", plain ? v : "?");
}

void peers_gamemode_parse(const char *text, struct peers_gamemode_conf *ret)
{
	char line[512], sect[32] = "", *k, *v;

	ret->read = true;
	for (const char *p = text; p && *p;) {
		p = next_line(p, line, sizeof(line));
		if (line[0] == ';' || line[0] == '#' || !line[0])
			continue;
		if (line[0] == '[') {
			snprintf(sect, sizeof(sect), "%.*s", (int)strcspn(line + 1, "]"), line + 1);
		} else if (key_value(line, &k, &v)) {
			if (strcmp(sect, "general") == 0 && strcmp(k, "renice") == 0)
				gamemode_value(v, ret->renice, sizeof(ret->renice));
			else if (strcmp(sect, "cpu") == 0 && strcmp(k, "pin_cores") == 0)
				gamemode_value(v, ret->pin_cores, sizeof(ret->pin_cores));
			else if (strcmp(sect, "cpu") == 0 && strcmp(k, "park_cores") == 0)
				gamemode_value(v, ret->park_cores, sizeof(ret->park_cores));
		}
	}
}

/* The system's gamemode.ini files under root, root's own only (util/safeopen.h). */
static void gamemode_finding(const char *root, const char *pids, struct peers_finding *f)
{
	struct peers_gamemode_conf c = { 0 };
	int rootfd = open(root[0] ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char *text = malloc(GAMEMODE_INI_MAX);

	for (size_t i = 0; rootfd >= 0 && text && i < sizeof(gamemode_files) / sizeof(*gamemode_files);
	     i++)
		if (safeopen_read(rootfd, gamemode_files[i], SAFEOPEN_ROOT_OWNED, text,
				  GAMEMODE_INI_MAX) >= 0)
			peers_gamemode_parse(text, &c);
	free(text);
	if (rootfd >= 0)
		close(rootfd);
	peers_gamemode_text(pids, &c, f);
}

/* ---- tuned's profiles ---- */

/* One line of text at p into buf, blanks around it cut; the next line, or NULL. */
static const char *next_line(const char *p, char *buf, size_t len)
{
	size_t n = strcspn(p, "\n"), s = 0, e = n;

	while (s < e && (p[s] == ' ' || p[s] == '\t'))
		s++;
	while (e > s && (p[e - 1] == ' ' || p[e - 1] == '\t' || p[e - 1] == '\r'))
		e--;
	snprintf(buf, len, "%.*s", (int)(e - s), p + s);
	return p[n] ? p + n + 1 : NULL;
}

/* "key = value" into its trimmed halves, in place; false if no '='. */
static bool key_value(char *line, char **ret_key, char **ret_value)
{
	char *eq = strchr(line, '='), *k = line, *v;

	if (!eq)
		return false;
	*eq = '\0';
	for (char *e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
		e[-1] = '\0';
	for (v = eq + 1; *v == ' ' || *v == '\t'; v++)
		;
	*ret_key = k;
	*ret_value = v;
	return true;
}

void peers_tuned_parse(const char *text, struct peers_tuned_conf *ret)
{
	char line[512], sect[64] = "", *k, *v;

	memset(ret, 0, sizeof(*ret));
	for (const char *p = text; p && *p;) {
		p = next_line(p, line, sizeof(line));
		if (line[0] == '#' || line[0] == ';' || !line[0])
			continue;
		if (line[0] == '[') {
			snprintf(sect, sizeof(sect), "%.*s", (int)strcspn(line + 1, "]"), line + 1);
			ret->scheduler |= strcmp(sect, "scheduler") == 0;
		} else if (key_value(line, &k, &v)) {
			if (strcmp(sect, "main") == 0 && strcmp(k, "include") == 0)
				snprintf(ret->include, sizeof(ret->include), "%s", v);
			ret->scheduler |= strcmp(k, "type") == 0 && strcmp(v, "scheduler") == 0;
		}
	}
}

/*
 * Whether name may be shown as a profile's: letters, digits and "._+-", a letter or
 * digit first, as tuned's own profiles are named. Text from a file under tuned's root
 * is shown to any ctl caller only when it is one.
 */
static bool plain_profile(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > PROFILE_NAME_MAX || !isalnum((unsigned char)name[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._+-", name[i]))
			return false;
	return true;
}

/*
 * A profile's tuned.conf under rootfd, where tuned looks for it, /etc first: its path
 * into ret, its text into text (PROFILE_CONF_MAX). 0, -EINVAL for a name that is not
 * plain, -ENOENT, or the safe open's error for the first file that is there.
 */
static int tuned_file(int rootfd, const char *profile, char *ret, size_t len, char *text)
{
	static const char *const dirs[] = { "/etc/tuned", "/etc/tuned/profiles",
					    "/usr/lib/tuned", "/usr/lib/tuned/profiles" };
	ssize_t r = -ENOENT;

	if (!plain_profile(profile))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && r == -ENOENT; i++) {
		snprintf(ret, len, "%s/%s/tuned.conf", dirs[i], profile);
		r = safeopen_read(rootfd, ret, SAFEOPEN_ROOT_OWNED, text, PROFILE_CONF_MAX);
	}
	return r < 0 ? (int)r : 0;
}

/*
 * Which tuned.conf, the profile's own or one it includes (include= in [main], names
 * only: a ${f:...} choice is not followed), has a [scheduler]: into ret, "" if none.
 * 0, or -errno where the profile's own file cannot be read.
 */
static int tuned_sched(int rootfd, const char *profile, int depth, char *ret, size_t len)
{
	struct peers_tuned_conf c;
	char path[PATH_MAX], *text;
	int r;

	ret[0] = '\0';
	if (depth > 8)
		return -ELOOP;
	text = malloc(PROFILE_CONF_MAX);
	if (!text)
		return -ENOMEM;
	r = tuned_file(rootfd, profile, path, sizeof(path), text);
	if (r == 0)
		peers_tuned_parse(text, &c);
	free(text);
	if (r < 0 || c.scheduler) {
		snprintf(ret, len, "%s", r < 0 ? "" : path);
		return r;
	}
	for (char *s = c.include, *tok; (tok = strsep(&s, ", \t"));)
		if (*tok && !strstr(tok, "${") &&
		    tuned_sched(rootfd, tok, depth + 1, ret, len) == 0 && ret[0])
			return 0;
	return 0;
}

/*
 * The root that the tuned of /proc/PID dir sees, O_PATH: its /proc/PID/root where the
 * daemon may open it (it may not without CAP_SYS_PTRACE), else root's own. -errno.
 */
static int tuned_root(const char *root, int dir)
{
	int fd = openat(dir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		fd = open(root[0] ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Whether every blank-separated name of list is plain. */
static bool plain_profiles(const char *list)
{
	char names[ACTIVE_MAX];

	snprintf(names, sizeof(names), "%s", list);
	for (char *s = names, *p; (p = strsep(&s, " \t"));)
		if (*p && !plain_profile(p))
			return false;
	return true;
}

/* tuned's active profile(s) under rootfd into ret, plain names only; or why not, in why. */
static int tuned_active(int rootfd, char *ret, size_t len, char *why, size_t wlen)
{
	static const char active[] = "/etc/tuned/active_profile";
	ssize_t n = safeopen_read(rootfd, active, SAFEOPEN_ROOT_OWNED, ret, len);

	if (n >= 0)
		ret[strcspn(ret, "\n")] = '\0';
	if (n < 0 || !ret[0])
		snprintf(why, wlen, "%s: %s", active, n < 0 ? safeopen_strerror((int)n) : "empty");
	else if (!plain_profiles(ret))
		snprintf(why, wlen, "%s: not a list of profile names, not shown", active);
	else
		return 0;
	return -EINVAL;
}

/* Why tuned's profile is unknown when the root it sees cannot be opened or checked. */
static int tuned_open(const char *root, pid_t pid, int *ret_root, char *why, size_t wlen)
{
	int dir = proc_dir(root, pid), r = dir;

	/* Checked again through the directory held: the pid may be another's by now. */
	if (dir >= 0 && !runs_as_root(dir))
		r = -ESRCH;
	else if (dir >= 0)
		r = tuned_root(root, dir);
	if (dir >= 0)
		close(dir);
	if (r < 0) {
		snprintf(why, wlen, "its root: %s", strerror(-r));
		return r;
	}
	*ret_root = r;
	return 0;
}

/* tuned's profile, as the lowest pid of its processes sees its files. */
static void tuned_finding(const char *root, pid_t pid, const char *pids, struct peers_finding *f)
{
	char profiles[ACTIVE_MAX], names[ACTIVE_MAX], why[320], where[PATH_MAX] = "";
	int rootfd = -1, r = 0;

	if (tuned_open(root, pid, &rootfd, why, sizeof(why)) < 0 ||
	    (r = tuned_active(rootfd, profiles, sizeof(profiles), why, sizeof(why))) < 0) {
		if (rootfd >= 0)
			close(rootfd);
		peers_tuned_text(pids, "", NULL, why, f);
		return;
	}
	/* Several profiles (tuned 2.19+) are named with blanks between them. */
	snprintf(names, sizeof(names), "%s", profiles);
	for (char *s = names, *p; (p = strsep(&s, " \t"));) {
		r = *p ? tuned_sched(rootfd, p, 0, where, sizeof(where)) : 0;
		if (r < 0) {
			snprintf(why, sizeof(why), "profile \"%s\": %s", p, safeopen_strerror(r));
			break;
		}
		if (where[0])
			break;
	}
	close(rootfd);
	if (r < 0)
		peers_tuned_text(pids, "", NULL, why, f);
	else
		peers_tuned_text(pids, profiles, where[0] ? where : NULL, NULL, f);
}

static void scan_tools(const char *root, struct peers *p)
{
	struct tool_pids pids[PEERS_NTOOLS] = { 0 };
	struct peers_finding f;
	char who[96];

	scan_procs(root, pids);
	for (int t = 0; t < PEERS_NTOOLS; t++) {
		if (!pids[t].n)
			continue;
		peers_pids_text(pids[t].pid, pids[t].n, pids[t].n, who, sizeof(who));
		memset(&f, 0, sizeof(f));
		if (t == PEERS_TUNED)
			tuned_finding(root, pids[t].pid[0], who, &f);
		else if (t == PEERS_GAMEMODED)
			gamemode_finding(root, who, &f);
		else
			peers_tool_text((enum peers_tool)t, who, &f);
		note_pids(&f, &pids[t], who);
		add(p, &f);
	}
}

void peers_scan(const char *root, const struct peers_ctx *ctx, struct peers *ret)
{
	struct peers p = { 0 };
	struct peers_finding f;

	root = root ? root : "";
	scan_sched_ext(root, &p);
	if (features_autogroup_on(root)) {
		peers_autogroup_text(ctx, &f);
		add(&p, &f);
	}
	if (!ctx->cpu_controller) {
		snprintf(f.id, sizeof(f.id), "no-cpu-controller");
		say(&f, "neither a v1 cpu hierarchy nor cgroup2 with the cpu controller: values "
			"buy only nice, policy and slice (no class cgroups; a cgroup target gets "
			"no weight)");
		add(&p, &f);
	}
	scan_tools(root, &p);
	*ret = p;
}

void peers_log(const struct peers *p)
{
	for (size_t i = 0; i < p->n; i++)
		log_notice("shaping: %s: %s", p->f[i].id, p->f[i].text);
}

void peers_print(const struct peers *p, FILE *out)
{
	for (size_t i = 0; i < p->n; i++)
		fprintf(out, "%-14s %s: %s\n", "shaping", p->f[i].id, p->f[i].text);
}
