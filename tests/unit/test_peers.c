/*
 * What else shapes scheduling, read from fake trees: sched_ext, autogroup, no cpu
 * controller, other tools by comm and cmdline, tuned's profile through include=.
 */
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag/peers.h"
#include "kit.h"

#define PUT(root, path, text) kit_putn(root, path, text, sizeof(text) - 1)

/* /proc/PID/status of a process whose uids are all uid. */
static void uid_is(const char *root, int pid, unsigned uid)
{
	char path[64], text[128];

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	snprintf(text, sizeof(text), "Name:\tx\nUid:\t%u\t%u\t%u\t%u\n", uid, uid, uid, uid);
	kit_put(root, path, text);
}

static const struct peers_finding *find(const struct peers *p, const char *id)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->f[i].id, id) == 0)
			return &p->f[i];
	return NULL;
}

static const struct peers_ctx cg_on = { .cpu_controller = true, .class_cgroups = true };

/* A tree with nothing of note: no sched_ext, autogroup off, no tool running. */
static void quiet_tree(const char *root)
{
	PUT(root, "/proc/sys/kernel/sched_autogroup_enabled", "0\n");
	PUT(root, "/proc/1/comm", "init\n");
	PUT(root, "/proc/2/comm", "python3\n");
	PUT(root, "/proc/2/cmdline", "python3\0-Es\0/usr/bin/other\0");
}

KIT_TEST(nothing_found)
{
	char root[] = "/tmp/rqb-peers.XXXXXX";
	struct peers p;

	kit_tmp(root, sizeof(root), "peers");
	quiet_tree(root);
	peers_scan(root, &cg_on, &p);
	assert_int_equal(p.n, 0);
	/* A kernel with sched_ext and none loaded says nothing either. */
	PUT(root, "/sys/kernel/sched_ext/state", "disabled\n");
	peers_scan(root, &cg_on, &p);
	assert_int_equal(p.n, 0);
	assert_int_equal(kit_rm(root), 0);
}

KIT_TEST(sched_ext_loaded)
{
	char root[] = "/tmp/rqb-peers.XXXXXX";
	const struct peers_finding *f;
	struct peers p;

	kit_tmp(root, sizeof(root), "peers");
	quiet_tree(root);
	PUT(root, "/sys/kernel/sched_ext/state", "enabled\n");
	PUT(root, "/sys/kernel/sched_ext/root/ops", "lavd_1.0.6_x86_64\n");
	PUT(root, "/sys/kernel/sched_ext/switch_all", "1\n");
	peers_scan(root, &cg_on, &p);
	assert_int_equal(p.n, 1);
	f = find(&p, "sched-ext");
	assert_non_null(f);
	assert_non_null(strstr(f->text, "BPF scheduler \"lavd_1.0.6_x86_64\" is loaded for every "
					"fair task"));
	assert_non_null(strstr(f->text, "pins still apply"));
	assert_null(strchr(f->text, '\n'));

	PUT(root, "/sys/kernel/sched_ext/switch_all", "0\n");
	peers_scan(root, &cg_on, &p);
	assert_non_null(strstr(find(&p, "sched-ext")->text, "for SCHED_EXT tasks only"));
	PUT(root, "/sys/kernel/sched_ext/state", "disabling\n");
	peers_scan(root, &cg_on, &p);
	assert_non_null(strstr(find(&p, "sched-ext")->text, "is disabling"));
	assert_int_equal(kit_rm(root), 0);
}

KIT_TEST(autogroup_and_controller)
{
	char root[] = "/tmp/rqb-peers.XXXXXX";
	const struct peers_ctx off = { .cpu_controller = true, .class_cgroups = false };
	const struct peers_ctx none = { 0 };
	struct peers p;

	kit_tmp(root, sizeof(root), "peers");
	quiet_tree(root);
	PUT(root, "/proc/sys/kernel/sched_autogroup_enabled", "1\n");
	peers_scan(root, &cg_on, &p);
	assert_int_equal(p.n, 1);
	assert_non_null(strstr(find(&p, "autogroup")->text, "moves its task into a class cgroup"));
	peers_scan(root, &off, &p);
	assert_non_null(strstr(find(&p, "autogroup")->text, "class cgroups are off"));
	assert_non_null(strstr(find(&p, "autogroup")->text, "or a cgroup of its own"));
	peers_scan(root, &none, &p);
	assert_int_equal(p.n, 2);
	assert_null(strstr(find(&p, "autogroup")->text, "or a cgroup of its own"));
	assert_non_null(strstr(find(&p, "no-cpu-controller")->text,
			       "values buy only nice, policy and slice"));
	PUT(root, "/proc/sys/kernel/sched_autogroup_enabled", "0\n");
	peers_scan(root, &none, &p);
	assert_int_equal(p.n, 1);
	assert_null(find(&p, "autogroup"));
	assert_int_equal(kit_rm(root), 0);
}

KIT_TEST(match_by_comm_and_cmdline)
{
	static const char tuned[] = "/usr/bin/python3\0-Es\0/usr/sbin/tuned\0-l\0-P\0";
	static const char ananicy[] = "python3\0/usr/bin/ananicy\0start\0";
	static const char other[] = "python3\0-c\0import tuned\0";

	assert_int_equal(peers_match("ananicy-cpp", NULL, 0), PEERS_ANANICY_CPP);
	assert_int_equal(peers_match("gamemoded", NULL, 0), PEERS_GAMEMODED);
	/* The kernel keeps 15 bytes of a comm. */
	assert_int_equal(peers_match("system76-schedu", NULL, 0), PEERS_SYSTEM76);
	assert_int_equal(peers_match("tuned", NULL, 0), PEERS_TUNED);
	assert_int_equal(peers_match("python3", tuned, sizeof(tuned) - 1), PEERS_TUNED);
	assert_int_equal(peers_match("python3", ananicy, sizeof(ananicy) - 1), PEERS_ANANICY);
	assert_int_equal(peers_match("python3", other, sizeof(other) - 1), -1);
	assert_int_equal(peers_match("gamemode", NULL, 0), -1);
	assert_int_equal(peers_match("bash", tuned, sizeof(tuned) - 1), -1);
	assert_true(peers_wants_cmdline("python3.11"));
	assert_false(peers_wants_cmdline("gamemoded"));
}

KIT_TEST(tools_found)
{
	char root[] = "/tmp/rqb-peers.XXXXXX";
	struct peers p;

	kit_tmp(root, sizeof(root), "peers");
	quiet_tree(root);
	PUT(root, "/proc/300/comm", "ananicy-cpp\n");
	PUT(root, "/proc/41/comm", "gamemoded\n");
	PUT(root, "/proc/40/comm", "gamemoded\n");
	PUT(root, "/proc/500/comm", "system76-schedu\n");
	for (int i = 0; i < 6; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/comm", 90 - i);
		kit_put(root, path, "tuned\n");
		uid_is(root, 90 - i, 0);
	}
	PUT(root, "/proc/600/comm", "python3\n");
	PUT(root, "/proc/600/cmdline", "python3\0/usr/bin/ananicy\0start\0");
	uid_is(root, 600, 0);
	/* Not root: no tuned, nor a tool known by a cmdline (which is not even read). */
	PUT(root, "/proc/30/comm", "tuned\n");
	uid_is(root, 30, 1000);
	PUT(root, "/proc/31/comm", "tuned\n");
	PUT(root, "/proc/601/comm", "python3\n");
	PUT(root, "/proc/601/cmdline", "python3\0/usr/sbin/tuned\0");
	uid_is(root, 601, 1000);
	peers_scan(root, &cg_on, &p);
	assert_int_equal(p.n, 5);
	assert_non_null(strstr(find(&p, "ananicy-cpp")->text, "ananicy-cpp (pid 300) runs: it sets "
							      "the nice"));
	assert_non_null(strstr(find(&p, "ananicy")->text, "(pid 600)"));
	/* A tool's processes, by pid. */
	assert_non_null(strstr(find(&p, "gamemoded")->text, "gamemoded (pids 40, 41) runs"));
	assert_non_null(strstr(find(&p, "system76-scheduler")->text, "foreground and background"));
	assert_non_null(strstr(find(&p, "tuned")->text, "tuned (pids 85, 86, 87, 88 and 2 more) "
							"runs, its profile unknown"));
	for (size_t i = 0; i < p.n; i++)
		assert_non_null(strstr(p.f[i].text, "leaves it to a tool that changes it after"));
	assert_int_equal(kit_rm(root), 0);
}

KIT_TEST(tuned_parse)
{
	struct peers_tuned_conf c;

	peers_tuned_parse("[main]\nsummary=x\ninclude = network-latency\n\n[variables]\n"
			  "include = /etc/tuned/realtime-variables.conf\n[sysctl]\nkernel.x=1\n",
			  &c);
	assert_false(c.scheduler);
	assert_string_equal(c.include, "network-latency");
	peers_tuned_parse("# comment\n[ main ]\n[scheduler]\nisolated_cores=1\n", &c);
	assert_true(c.scheduler);
	assert_string_equal(c.include, "");
	peers_tuned_parse("[main]\n[cpus]\ntype = scheduler\ngroup.x=0:f:0:*:^x$\n", &c);
	assert_true(c.scheduler);
}

KIT_TEST(tuned_profiles)
{
	char root[] = "/tmp/rqb-peers.XXXXXX";
	const struct peers_finding *f;
	struct peers p;

	kit_tmp(root, sizeof(root), "peers");
	quiet_tree(root);
	PUT(root, "/proc/700/comm", "tuned\n");
	uid_is(root, 700, 0);
	/* The profile in /etc includes one in /usr/lib that includes one with [scheduler]. */
	PUT(root, "/etc/tuned/active_profile", "mine\n");
	PUT(root, "/etc/tuned/mine/tuned.conf", "[main]\ninclude=${f:virt_check:a:b}, middle\n"
						"[cpu]\ngovernor=performance\n");
	PUT(root, "/usr/lib/tuned/middle/tuned.conf", "[main]\ninclude=base\n[sysctl]\nvm.x=1\n");
	PUT(root, "/usr/lib/tuned/base/tuned.conf", "[main]\n[scheduler]\nisolated_cores=1\n");
	peers_scan(root, &cg_on, &p);
	f = find(&p, "tuned");
	assert_non_null(f);
	assert_non_null(strstr(f->text, "tuned (pid 700) runs profile \"mine\", whose [scheduler] "
					"(/usr/lib/tuned/base/tuned.conf) sets the affinity"));
	assert_non_null(strstr(f->text, "leaves it to a tool that changes it after"));

	/* /etc's copy of a profile is tuned's, not /usr/lib's. */
	PUT(root, "/etc/tuned/base/tuned.conf", "[main]\n[cpu]\ngovernor=powersave\n");
	peers_scan(root, &cg_on, &p);
	f = find(&p, "tuned");
	assert_non_null(strstr(f->text, "runs profile \"mine\", which has no [scheduler]"));
	assert_null(strstr(f->text, "leaves it to a tool that changes it after"));

	PUT(root, "/etc/tuned/active_profile", "gone\n");
	peers_scan(root, &cg_on, &p);
	assert_non_null(strstr(find(&p, "tuned")->text, "its profile unknown (profile \"gone\": "));
	assert_int_equal(kit_rm(root), 0);
}

/* A tree where tuned (pid 700, root) runs; its /etc/tuned/active_profile is the test's. */
static void planted_tree(const char *root)
{
	quiet_tree(root);
	PUT(root, "/proc/700/comm", "tuned\n");
	uid_is(root, 700, 0);
	PUT(root, "/etc/tuned/mine/tuned.conf", "[main]\n[scheduler]\nisolated_cores=1\n");
}

static const char *tuned_says(const char *root)
{
	static struct peers p;

	peers_scan(root, &cg_on, &p);
	assert_non_null(find(&p, "tuned"));
	return find(&p, "tuned")->text;
}

/* What another user may plant in tuned's root is neither followed, nor opened, nor shown. */
KIT_TEST(tuned_planted)
{
	char root[] = "/tmp/rqb-peers.XXXXXX", secret[PATH_MAX], path[PATH_MAX];

	kit_tmp(root, sizeof(root), "peers");
	planted_tree(root);
	snprintf(secret, sizeof(secret), "%s/secret", root);
	PUT(root, "/secret", "rqb-secret-line\n");
	snprintf(path, sizeof(path), "%s/etc/tuned/active_profile", root);
	assert_int_equal(symlink(secret, path), 0);
	assert_non_null(strstr(tuned_says(root), "its profile unknown (/etc/tuned/active_profile: "
						 "a symbolic link, not followed)"));
	assert_null(strstr(tuned_says(root), "rqb-secret-line"));

	/* A FIFO would block the open for good: it is not opened at all. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0644), 0);
	alarm(20);
	assert_non_null(strstr(tuned_says(root), "(/etc/tuned/active_profile: not a regular file"));
	alarm(0);

	/* A line that is no profile name is not shown: it may be any file's first line. */
	assert_int_equal(unlink(path), 0);
	PUT(root, "/etc/tuned/active_profile", "root:*:19000:0:99999:7:::\n");
	assert_non_null(strstr(tuned_says(root), "(/etc/tuned/active_profile: not a list of "
						 "profile names, not shown)"));
	assert_null(strstr(tuned_says(root), "root:*"));
	PUT(root, "/etc/tuned/active_profile", "mine \x1b[2J\n");
	assert_null(strstr(tuned_says(root), "\x1b"));

	/* An include that is no plain name is not followed (nor echoed). */
	PUT(root, "/etc/tuned/active_profile", "other\n");
	PUT(root, "/etc/tuned/other/tuned.conf", "[main]\ninclude=../../../secret\n");
	assert_non_null(strstr(tuned_says(root), "runs profile \"other\", which has no "
						 "[scheduler]"));
	PUT(root, "/etc/tuned/active_profile", "mine\n");
	assert_non_null(strstr(tuned_says(root), "runs profile \"mine\", whose [scheduler] "
						 "(/etc/tuned/mine/tuned.conf)"));
	if (geteuid() == 0) {
		/* Root's tuned writes its files itself: another user's is planted. */
		snprintf(path, sizeof(path), "%s/etc/tuned/active_profile", root);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_non_null(strstr(tuned_says(root), "(/etc/tuned/active_profile: owned by "
							 "another user than root)"));
	}
	assert_int_equal(kit_rm(root), 0);
}

/* What gamemoded's finding says of the system's gamemode.ini: /etc's over /usr/share's. */
KIT_TEST(gamemode_settings)
{
	char root[] = "/tmp/rqb-peers.XXXXXX";
	struct peers_gamemode_conf c = { 0 };
	struct peers_finding f;
	struct peers p;
	const char *text;

	peers_gamemode_text("pid 40", &c, &f);
	assert_non_null(strstr(f.text, "gamemoded (pid 40) runs: while a game asks for it"));
	assert_non_null(strstr(f.text, "turn off in gamemode.ini its renice ([general] renice=0) "
				       "and 1.8's [cpu] pin_cores=no, park_cores=no"));
	assert_non_null(strstr(f.text, "the system's: no system gamemode.ini read"));
	assert_true(strlen(f.text) < sizeof(f.text) - 1);

	kit_tmp(root, sizeof(root), "peers");
	quiet_tree(root);
	PUT(root, "/proc/40/comm", "gamemoded\n");
	PUT(root, "/usr/share/gamemode/gamemode.ini",
	    "[general]\nrenice=0\n; renice=9\n[cpu]\n;park_cores=no\n;pin_cores=yes\n");
	PUT(root, "/etc/gamemode.ini", "[general]\nrenice = 4\n[cpu]\npark_cores=1,8-15\n"
				      "[gpu]\npin_cores=no\n");
	peers_scan(root, &cg_on, &p);
	text = find(&p, "gamemoded")->text;
	assert_non_null(strstr(text, "gamemoded (pid 40) runs"));
	assert_non_null(strstr(text, "the system's: renice=4 (on), pin_cores unset (1.8: on where "
				     "it knows the CPU's core kinds), park_cores=1,8-15 (on)"));
	assert_true(strlen(text) < sizeof(f.text) - 1);

	memset(&c, 0, sizeof(c));
	peers_gamemode_parse("[general]\nrenice=$(evil)\n[cpu]\npin_cores=No\n", &c);
	assert_string_equal(c.renice, "?");
	peers_gamemode_text("pid 40", &c, &f);
	assert_non_null(strstr(f.text, "renice=? (on), pin_cores=No (off), park_cores unset (off)"));
	assert_int_equal(kit_rm(root), 0);
}
