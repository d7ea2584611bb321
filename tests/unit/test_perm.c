/*
 * The ctl permission matrix, as the kernel would rule on the same request; the peer's
 * credentials as taken at accept and compared before each request; and what hidepid=
 * shows whom.
 */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl/ctl_peer.h"

#include "ctl/ctl_perm.h"
#include "kit.h"

/* The thread of user()'s facts: one each, as each test builds one set of facts. */
static struct ctl_perm_thread one;

/* A one-thread task of uid 1000's at nice cur, asked for nice want by uid 1000. */
static struct ctl_perm_facts user(int cur, int want)
{
	struct ctl_perm_facts f = {
		.peer_euid = 1000, .target_ruid = 1000, .target_euid = 1000,
		.th = &one, .nth = 1,
	};

	one = (struct ctl_perm_thread){ .nice = cur, .want_nice = want };
	return f;
}

/* A cgroup of uid 1000's at value cur, asked for want. */
static struct ctl_perm_facts cgroup(int cur, int want)
{
	struct ctl_perm_facts f = {
		.peer_euid = 1000, .target_ruid = 1000, .target_euid = 1000,
		.cur = cur, .want = want,
	};

	return f;
}

static int check(const struct ctl_perm_facts *f)
{
	const char *why = NULL;
	int r = ctl_perm_check(f, &why);

	if (r < 0)
		assert_non_null(why);
	return r;
}

KIT_TEST(own_task_raise_allowed)
{
	struct ctl_perm_facts f = user(0, 5);

	assert_int_equal(check(&f), 0);
	f = user(5, 5);
	assert_int_equal(check(&f), 0);
	f = user(-3, 0); /* reset of a value someone privileged lowered: a raise */
	assert_int_equal(check(&f), 0);
}

KIT_TEST(own_task_lower_refused)
{
	struct ctl_perm_facts f = user(0, -1);

	assert_int_equal(check(&f), -EPERM);
	f = user(10, 9);
	assert_int_equal(check(&f), -EPERM);
	f = user(10, 0); /* reset from 10 lowers it */
	assert_int_equal(check(&f), -EPERM);
}

KIT_TEST(rlimit_nice_allows_lowering_to_its_bound)
{
	struct ctl_perm_facts f = user(10, 5);

	f.rlim_nice = 15; /* the kernel lets this user renice down to 20 - 15 = 5 */
	assert_int_equal(check(&f), 0);
	one.want_nice = 4;
	assert_int_equal(check(&f), -EPERM);
	f.rlim_nice = 40;
	one.want_nice = -20;
	assert_int_equal(check(&f), 0);
}

KIT_TEST(other_users_task_refused)
{
	struct ctl_perm_facts f = user(0, 10);

	f.target_ruid = f.target_euid = 1001;
	assert_int_equal(check(&f), -EPERM);
	f.target_euid = 1000; /* euid matches: the kernel's check_same_owner */
	assert_int_equal(check(&f), 0);
}

KIT_TEST(cap_sys_nice_allows_any)
{
	struct ctl_perm_facts f = user(0, -20);

	f.target_ruid = f.target_euid = 0;
	f.cap_sys_nice = true;
	assert_int_equal(check(&f), 0);
}

KIT_TEST(admin_allows_any)
{
	struct ctl_perm_facts f = user(19, -20);

	f.target_ruid = f.target_euid = 4242;
	f.admin = true;
	assert_int_equal(check(&f), 0);
}

/* Finding 3 of the second review: the kernel's nice counts, not rqbalance's record. */
KIT_TEST(judged_on_the_kernels_nice)
{
	struct ctl_perm_facts f = user(19, 0); /* root reniced it to 19; rqbalance has nothing */

	assert_int_equal(check(&f), -EPERM);
	one.want_nice = 5;
	assert_int_equal(check(&f), -EPERM);
	one.want_nice = 19;
	assert_int_equal(check(&f), 0);
}

KIT_TEST(every_thread_counts)
{
	struct ctl_perm_thread th[3] = {
		{ .nice = 0, .want_nice = 5 }, { .nice = 0, .want_nice = 5 },
		{ .nice = 10, .want_nice = 5 }, /* one thread root reniced */
	};
	struct ctl_perm_facts f = user(0, 5);

	f.th = th;
	f.nth = 3;
	assert_int_equal(check(&f), -EPERM);
	th[2].want_nice = 10; /* a knob someone else set stays theirs: not written */
	assert_int_equal(check(&f), 0);
}

/* The kernel lets a SCHED_IDLE thread leave it only where RLIMIT_NICE covers its nice. */
KIT_TEST(leaving_sched_idle)
{
	struct ctl_perm_facts f = user(0, 5);

	one.idle = true;
	assert_int_equal(check(&f), -EPERM);
	one.want_idle = true;
	assert_int_equal(check(&f), 0);
	one.want_idle = false;
	f.rlim_nice = 20; /* 20 - 0: nice 0 is within it */
	assert_int_equal(check(&f), 0);
	one.nice = one.want_nice = 19;
	f.rlim_nice = 0;
	assert_int_equal(check(&f), -EPERM); /* idle at 19 to batch at 19: refused too */
}

KIT_TEST(owner_only_asks_no_value)
{
	struct ctl_perm_facts f = user(19, -20);

	f.owner_only = true;
	assert_int_equal(check(&f), 0);
	f.target_ruid = f.target_euid = 1001;
	assert_int_equal(check(&f), -EPERM);
}

KIT_TEST(cgroup_values)
{
	struct ctl_perm_facts f = cgroup(0, 5);

	assert_int_equal(check(&f), 0);
	f = cgroup(5, 0);
	assert_int_equal(check(&f), -EPERM);
}

static struct ctl_peer peer(const char *uid, uint64_t cap_eff, uid_t owner)
{
	struct ctl_peer p = { .start_time = 100, .cap_eff = cap_eff, .cap_prm = cap_eff,
			      .owner = owner, .same_userns = true };

	snprintf(p.uid, sizeof(p.uid), "%s", uid);
	snprintf(p.gid, sizeof(p.gid), "100\t100\t100\t100");
	return p;
}

#define NICE (1ULL << 23)

KIT_TEST(accept_counts_cap_sys_nice_only_when_sound)
{
	struct ctl_peer p = peer("1000\t1000\t1000\t1000", NICE, 1000);
	const char *why = NULL;
	bool cap = false;

	assert_int_equal(ctl_perm_peer_accept(1000, 100, &p, &cap, &why), 0);
	assert_true(cap);
	p.same_userns = false; /* a container's own CAP_SYS_NICE */
	assert_int_equal(ctl_perm_peer_accept(1000, 100, &p, &cap, &why), 0);
	assert_false(cap);
	p = peer("1000\t1000\t1000\t1000", NICE, 0); /* non-dumpable: raised by an exec */
	assert_int_equal(ctl_perm_peer_accept(1000, 100, &p, &cap, &why), 0);
	assert_false(cap);
	p = peer("1000\t1000\t1000\t1000", 0, 1000);
	assert_int_equal(ctl_perm_peer_accept(1000, 100, &p, &cap, &why), 0);
	assert_false(cap);
}

KIT_TEST(accept_refuses_ids_changed_since_connect)
{
	struct ctl_peer p = peer("1000\t0\t0\t0", ~0ULL, 0); /* a set-user-ID root exec */
	const char *why = NULL;
	bool cap = true;

	assert_int_equal(ctl_perm_peer_accept(1000, 100, &p, &cap, &why), -EPERM);
	assert_non_null(why);
	p = peer("1000\t1000\t1000\t1000", 0, 1000);
	assert_int_equal(ctl_perm_peer_accept(1000, 101, &p, &cap, &why), -EPERM);
	assert_int_equal(ctl_perm_peer_accept(0, 100, &p, &cap, &why), -EPERM);
}

KIT_TEST(same_peer_or_stale)
{
	struct ctl_peer a = peer("1000\t1000\t1000\t1000", 0, 1000), b = a;
	const char *why = NULL;

	assert_int_equal(ctl_perm_peer_same(&a, &b, &why), 0);
	b = peer("1000\t0\t0\t0", ~0ULL, 0);
	assert_int_equal(ctl_perm_peer_same(&a, &b, &why), -EPERM);
	b = a;
	b.cap_prm = NICE; /* file capabilities */
	assert_int_equal(ctl_perm_peer_same(&a, &b, &why), -EPERM);
	b = a;
	b.owner = 0; /* made non-dumpable */
	assert_int_equal(ctl_perm_peer_same(&a, &b, &why), -EPERM);
	b = a;
	b.start_time++; /* its pid reused */
	assert_int_equal(ctl_perm_peer_same(&a, &b, &why), -EPERM);
	b = a;
	snprintf(b.gid, sizeof(b.gid), "100\t0\t0\t0");
	assert_int_equal(ctl_perm_peer_same(&a, &b, &why), -EPERM);
	assert_non_null(why);
}

/* The real /proc: this process as its own peer, then a child that has exited. */
KIT_TEST(read_self_and_a_gone_child)
{
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	struct ctl_peer p, q;
	char uid[64];
	pid_t child;

	assert_true(pidfd >= 0);
	assert_int_equal(ctl_peer_read("/proc", getpid(), pidfd, &p), 0);
	snprintf(uid, sizeof(uid), "%u\t%u\t", getuid(), geteuid());
	assert_memory_equal(p.uid, uid, strlen(uid));
	assert_true(p.same_userns);
	assert_int_equal(p.owner, geteuid());
	assert_int_equal(ctl_peer_read("/proc", getpid(), -1, &q), 0);
	assert_int_equal(q.start_time, p.start_time);
	close(pidfd);

	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	assert_true(pidfd >= 0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(ctl_peer_read("/proc", child, pidfd, &p), -ESRCH);
	close(pidfd);
}

/* ---- who is shown what: hidepid= and gid= as the kernel rules on /proc/PID ---- */

static const struct ctl_view off = { 0 },
	invisible = { .hidepid = CTL_HIDEPID_INVISIBLE, .by_group = true, .gid = 0 },
	noaccess = { .hidepid = CTL_HIDEPID_NOACCESS, .by_group = true, .gid = 4 },
	ptraceable = { .hidepid = CTL_HIDEPID_PTRACEABLE, .by_group = true, .gid = 4 },
	closed = { .hidepid = CTL_HIDEPID_INVISIBLE };

/* A task of uid 1000 and gid 100, dumpable. */
static struct ctl_peer task(void)
{
	return peer("1000\t1000\t1000\t1000", 0, 1000);
}

KIT_TEST(hidepid_off_shows_everything)
{
	struct ctl_perm_seer s = { .uid = 1001, .gid = 1001 };
	struct ctl_peer t = peer("0\t0\t0\t0", 0, 0);

	assert_true(ctl_perm_visible(&off, &s, &t));
}

KIT_TEST(hidepid_shows_the_same_user_its_own)
{
	struct ctl_perm_seer s = { .uid = 1000, .gid = 100 };
	struct ctl_peer t = task();

	assert_true(ctl_perm_visible(&invisible, &s, &t));
	assert_true(ctl_perm_visible(&noaccess, &s, &t));
	assert_true(ctl_perm_visible(&ptraceable, &s, &t));
	s.uid = 1001;
	assert_false(ctl_perm_visible(&invisible, &s, &t));
	assert_false(ctl_perm_visible(&noaccess, &s, &t));
	assert_false(ctl_perm_visible(&ptraceable, &s, &t));
}

KIT_TEST(hidepid_hides_what_ptrace_would_refuse)
{
	struct ctl_perm_seer s = { .uid = 1000, .gid = 100 };
	struct ctl_peer t = task();

	t.owner = 0; /* not dumpable: a set-user-ID exec, or prctl */
	assert_false(ctl_perm_visible(&invisible, &s, &t));
	t = peer("1000\t0\t0\t0", 0, 0); /* the user's own set-user-ID root exec */
	assert_false(ctl_perm_visible(&invisible, &s, &t));
	t = task();
	snprintf(t.gid, sizeof(t.gid), "100\t5\t5\t5"); /* a set-group-ID exec */
	assert_false(ctl_perm_visible(&invisible, &s, &t));
	t = task();
	s.gid = 5; /* the caller runs with another group than the task */
	assert_false(ctl_perm_visible(&invisible, &s, &t));
	/* The bus does not say which group is the caller's own: one of its groups stands. */
	s.gid = (gid_t)-1;
	s.groups = (const gid_t[]){ 7, 100 };
	s.ngroups = 2;
	assert_true(ctl_perm_visible(&invisible, &s, &t));
	s.ngroups = 1;
	assert_false(ctl_perm_visible(&invisible, &s, &t));
	snprintf(t.uid, sizeof(t.uid), "garbage");
	s.cap_sys_ptrace = false;
	assert_false(ctl_perm_visible(&invisible, &s, &t));
}

KIT_TEST(hidepid_spares_ptrace_and_the_group)
{
	struct ctl_perm_seer s = { .uid = 1001, .gid = 1001 };
	struct ctl_peer t = peer("0\t0\t0\t0", 0, 0);
	gid_t four = 4, zero = 0;

	s.cap_sys_ptrace = true;
	assert_true(ctl_perm_visible(&invisible, &s, &t));
	assert_true(ctl_perm_visible(&ptraceable, &s, &t));
	s.cap_sys_ptrace = false;
	s.groups = &four;
	s.ngroups = 1;
	assert_true(ctl_perm_visible(&noaccess, &s, &t));
	assert_false(ctl_perm_visible(&ptraceable, &s, &t)); /* gid= does not count there */
	/* No gid= on the mount: the kernel's pid_gid is root's group. */
	assert_false(ctl_perm_visible(&invisible, &s, &t));
	s.groups = &zero;
	assert_true(ctl_perm_visible(&invisible, &s, &t));
	/* A view the daemon could not read shows no group anything. */
	assert_false(ctl_perm_visible(&closed, &s, &t));
}

/* The real /proc: this process's own view, and the daemon's (pid 0). */
KIT_TEST(view_of_self)
{
	struct parse_procfs v;

	assert_int_equal(ctl_peer_view("/proc", getpid(), &v), 0);
	assert_int_equal(ctl_peer_view("/proc", 0, &v), 0);
	assert_int_equal(ctl_peer_view("/nonexistent-rqb", 0, &v), -ENOENT);
	assert_int_equal(ctl_peer_view("/nonexistent-rqb", getpid(), &v), -ESRCH);
}
