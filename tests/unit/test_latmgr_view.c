/*
 * What the latency manager shows (latmgr_view.c: get, list, the permission rule's
 * inputs, status counters), on the in-memory daemon of tests/common/ctl_harness.h with
 * every kind of entry seeded: thread entries, process records and cgroup entries.
 */
#include <sched.h>

#include "kit.h"

#include "../common/ctl_harness.h"
#include "latmgr/latmgr.h"
#include "latmgr/latmgr_int.h"

static struct lat_target process(pid_t pid)
{
	return (struct lat_target){ .kind = LAT_T_PROCESS, .pid = pid, .tgid = pid };
}

static struct lat_target thread(pid_t tid, pid_t tgid)
{
	return (struct lat_target){ .kind = LAT_T_THREAD, .pid = tid, .tgid = tgid };
}

static struct lat_target cgroup(const char *path)
{
	struct lat_target t = { .kind = LAT_T_CGROUP };

	snprintf(t.path, sizeof(t.path), "%s", path);
	return t;
}

static bool see_all(void *ctx, pid_t tid, uint64_t start_time)
{
	(void)ctx, (void)tid, (void)start_time;
	return true;
}

/* Hides the one task *ctx names. */
static bool hide_one(void *ctx, pid_t tid, uint64_t start_time)
{
	(void)start_time;
	return tid != *(const pid_t *)ctx;
}

static unsigned lines(const char *s)
{
	unsigned n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static int setup(void **state)
{
	struct ctlh_scenario sc = { .managed = 1 | 2 | 4 };

	*state = ctlh_daemon_new(&sc);
	return 0;
}

/* A process's record first, else the thread's entry; a cgroup's own; -ENOENT for none. */
KIT_TEST_FX(value_and_source, setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_target t;
	const char *src = NULL;
	int v = 99;

	t = process(CTLH_PROC_A);
	assert_int_equal(latmgr_value(&d->lm, &t, &v, &src), 0);
	assert_int_equal(v, 5);
	assert_string_equal(src, "ctl uid 1000");
	t = process(CTLH_PROC_B); /* a record, no thread entry */
	assert_int_equal(latmgr_value(&d->lm, &t, &v, &src), 0);
	assert_int_equal(v, -10);
	t = thread(CTLH_PROC_C + 1, CTLH_PROC_C);
	assert_int_equal(latmgr_value(&d->lm, &t, &v, &src), 0);
	assert_int_equal(v, -3);
	t = cgroup("/sys");
	assert_int_equal(latmgr_value(&d->lm, &t, &v, &src), 0);
	assert_int_equal(v, -2);
	assert_string_equal(src, "ctl uid 0");
	v = 99;
	src = NULL;
	t = process(CTLH_PROC_C); /* only a thread of it has a value */
	assert_int_equal(latmgr_value(&d->lm, &t, &v, &src), -ENOENT);
	t = cgroup("/user/below");
	assert_int_equal(latmgr_value(&d->lm, &t, &v, &src), -ENOENT);
	t = thread(CTLH_PROC_D, CTLH_PROC_D); /* a process record is not a thread's */
	assert_int_equal(latmgr_value(&d->lm, &t, &v, &src), -ENOENT);
	assert_int_equal(v, 99);
	assert_null(src);
}

KIT_TEST_FX(tasks_holding_it, setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_target t;

	t = process(CTLH_PROC_A);
	assert_int_equal(latmgr_tasks_of(&d->lm, &t), 2);
	t = process(CTLH_PROC_C);
	assert_int_equal(latmgr_tasks_of(&d->lm, &t), 1);
	t = process(CTLH_PROC_B);
	assert_int_equal(latmgr_tasks_of(&d->lm, &t), 0);
	t = thread(CTLH_PROC_A + 1, CTLH_PROC_A);
	assert_int_equal(latmgr_tasks_of(&d->lm, &t), 1);
	t = thread(CTLH_PROC_C, CTLH_PROC_C);
	assert_int_equal(latmgr_tasks_of(&d->lm, &t), 0);
	t = cgroup("/user");
	assert_int_equal(latmgr_tasks_of(&d->lm, &t), 0);
}

KIT_TEST_FX(get_text, setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_target t;
	char out[2048];

	t = process(CTLH_PROC_A);
	assert_int_equal(latmgr_get_text(&d->lm, &t, out, sizeof(out)), 0);
	assert_string_equal(out, "value 5\nsource ctl uid 1000\nscope process\ntasks 2\n"
				 "policy other\nslice_ns 0\nuclamp -1 -1\ncgroup /user\n");
	/* A thread rqbalance did not move says where it was left, and why. */
	t = thread(CTLH_PROC_A + 1, CTLH_PROC_A);
	assert_int_equal(latmgr_get_text(&d->lm, &t, out, sizeof(out)), 0);
	assert_int_equal(strncmp(out, "value 5\nsource ctl uid 1000\nscope thread\ntasks 1\n"
				      "policy other\nslice_ns 0\nuclamp -1 -1\ncgroup -\n"
				      "cgroup_left /elsewhere",
				 strlen("value 5\nsource ctl uid 1000\nscope thread\ntasks 1\n"
					"policy other\nslice_ns 0\nuclamp -1 -1\ncgroup -\n"
					"cgroup_left /elsewhere")),
			 0);
	assert_non_null(strstr(out, latency_cg_why(LAT_CG_MOVED)));
	/* A process without a thread entry: no knobs to show. */
	t = process(CTLH_PROC_B);
	assert_int_equal(latmgr_get_text(&d->lm, &t, out, sizeof(out)), 0);
	assert_string_equal(out, "value -10\nsource ctl uid 1000\nscope process\ntasks 0\n");
	t = cgroup("/sys");
	assert_int_equal(latmgr_get_text(&d->lm, &t, out, sizeof(out)), 0);
	assert_string_equal(out, "value -2\nsource ctl uid 0\nweight 100\nidle 0\n");
	t = cgroup("/nocpu");
	assert_int_equal(latmgr_get_text(&d->lm, &t, out, sizeof(out)), -ENOENT);
	t = process(CTLH_PROC_C);
	assert_int_equal(latmgr_get_text(&d->lm, &t, out, sizeof(out)), -ENOENT);
}

KIT_TEST_FX(list_lines, setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	pid_t hidden = CTLH_PROC_C + 1;
	char *all, *some, *cut;
	size_t first;

	all = latmgr_list(&d->lm, see_all, NULL, 1 << 16);
	assert_non_null(all);
	assert_int_equal(lines(all), 7); /* 4 tasks, 3 cgroups */
	assert_int_equal(strncmp(all, "task\t4194401\t4194401\t5\tctl uid 1000\tprocess\tother\t0\t/user\t?\n",
				 strlen("task\t4194401\t4194401\t5\tctl uid 1000\tprocess\tother\t0\t/user\t?\n")),
			 0);
	assert_non_null(strstr(all, "\ntask\t4194404\t4194403\t-3\tctl uid 1000\tthread\t"));
	assert_non_null(strstr(all, "\ncgroup\t/sys\t-2\tctl uid 0\t100\t0\n"));
	assert_null(strstr(all, "truncated"));
	/* A task the asker may not see is neither shown nor counted. */
	some = latmgr_list(&d->lm, hide_one, &hidden, 1 << 16);
	assert_non_null(some);
	assert_int_equal(lines(some), 6);
	assert_null(strstr(some, "\t4194404\t"));
	/* Cut where a whole line no longer fits, with the count of the whole. */
	first = (size_t)(strchr(all, '\n') - all) + 1;
	cut = latmgr_list(&d->lm, see_all, NULL, first + 1);
	assert_non_null(cut);
	assert_int_equal(strncmp(cut, all, first), 0);
	assert_string_equal(cut + first, "truncated\t7\n");
	free(cut);
	cut = latmgr_list(&d->lm, hide_one, &hidden, 0);
	assert_non_null(cut);
	assert_string_equal(cut, "truncated\t6\n");
	free(cut);
	free(some);
	free(all);
}

/* A thread's sched_attr as the kernel would give it: nice and policy, the rest defaults. */
static struct rqb_sched_attr attr_of(int nice, int policy)
{
	return (struct rqb_sched_attr){ .size = sizeof(struct rqb_sched_attr),
					.sched_policy = (uint32_t)policy, .sched_nice = nice };
}

/* Its nice and whether SCHED_IDLE after the request, from the knobs a rule covers. */
static void leave(struct ctlh *d, pid_t tid, int want, const struct rqb_sched_attr *a,
		  int *ret_nice, bool *ret_idle)
{
	struct lat_perm_thread t;

	latmgr_would_leave(&d->lm, tid, CTLH_START_TIME, want, a, &t);
	for (unsigned i = 0; i < t.n; i++)
		if (t.k[i].rule == LAT_PERM_NICE_DOWN)
			*ret_nice = (int)t.k[i].after;
		else if (t.k[i].rule == LAT_PERM_LEAVE_IDLE)
			*ret_idle = t.k[i].after != 0;
}

/*
 * What a request would leave a thread, as the actuator's decide step has it: the
 * mapping's, what it had before, or its own where someone else changed a knob.
 */
KIT_TEST_FX(would_leave, setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_entry *e = (struct lat_entry *)latact_find(&d->lat, CTLH_PROC_A);
	struct rqb_sched_attr a;
	struct lat_knobs k;
	bool idle;
	int nice;

	assert_non_null(e);
	latency_map(&d->lat.lc, -5, &k);
	a = attr_of(3, SCHED_IDLE);
	leave(d, CTLH_PROC_B, -5, &a, &nice, &idle);
	assert_int_equal(nice, k.nice);
	assert_false(idle);
	/* A reset: what it had before rqbalance; for a task with none, what it has. */
	e->prev.nice = 4;
	e->prev.policy = SCHED_IDLE;
	a = attr_of(e->set.nice, e->set.policy);
	leave(d, CTLH_PROC_A, LAT_NONE, &a, &nice, &idle);
	assert_int_equal(nice, 4);
	assert_true(idle);
	a = attr_of(7, SCHED_IDLE);
	leave(d, CTLH_PROC_B, LAT_NONE, &a, &nice, &idle);
	assert_int_equal(nice, 7);
	assert_true(idle);
	/* A knob someone else changed stays as it is now. */
	e->left = LAT_K_NICE;
	a = attr_of(2, e->set.policy);
	leave(d, CTLH_PROC_A, LAT_NONE, &a, &nice, &idle);
	assert_int_equal(nice, 2);
	assert_true(idle);
	e->left = LAT_K_POLICY;
	a = attr_of(e->set.nice, SCHED_BATCH);
	leave(d, CTLH_PROC_A, -5, &a, &nice, &idle);
	assert_int_equal(nice, k.nice);
	assert_false(idle);
	/* Changed since, and not noted yet: the decide step finds it as a set would. */
	e->left = 0;
	a = attr_of(2, SCHED_IDLE);
	leave(d, CTLH_PROC_A, -5, &a, &nice, &idle);
	assert_int_equal(nice, 2);
	assert_true(idle);
	leave(d, CTLH_PROC_A, LAT_NONE, &a, &nice, &idle);
	assert_int_equal(nice, 2);
	assert_true(idle);
}

KIT_TEST_FX(cgroup_owner, setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	uid_t uid = 77;

	assert_int_equal(latmgr_cgroup_owner(&d->lm, "/sys", &uid), 0);
	assert_int_equal(uid, 0);
	if (geteuid() == 0) { /* the harness could chown user's weight file */
		assert_int_equal(latmgr_cgroup_owner(&d->lm, "/user", &uid), 0);
		assert_int_equal(uid, 1000);
	}
	/* cgroup2 without cpu there: root's (only systemd can give it a weight). */
	uid = 77;
	assert_int_equal(latmgr_cgroup_owner(&d->lm, "/nocpu", &uid), 0);
	assert_int_equal(uid, 0);
	uid = 77;
	assert_int_equal(latmgr_cgroup_owner(&d->lm, "/missing", &uid), -ENOENT);
	/* v1 has no group without a weight file. */
	d->lat.cls.v2 = false;
	assert_int_equal(latmgr_cgroup_owner(&d->lm, "/nocpu", &uid), -ENOENT);
	assert_int_equal(uid, 77);
}

KIT_TEST_FX(stats_fields, setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct daemon_stats st = { 0 };

	d->lat.cnt = (struct latact_counters){ .applied = 11, .restored = 12, .errors = 13,
					       .refused = 14 };
	d->lm.cnt = (struct latmgr_counters){ .events = 21, .overflows = 22, .rescans = 23,
					      .rule_matches = 24, .inherited_back = 25 };
	/* Timed execs 1…200 µs (stored backwards): the median, p99 and longest of them. */
	for (uint32_t i = 0; i < 200; i++)
		d->lm.exec_us[i] = 200 - i;
	d->lm.nexec_us = 200;
	latmgr_stats(&d->lm, &st);
	assert_int_equal(st.lat_tasks, 4);
	assert_int_equal(st.lat_cgroups, 3);
	assert_int_equal(st.lat_processes, 3);
	assert_int_equal(st.lat_applied, 11);
	assert_int_equal(st.lat_restored, 12);
	assert_int_equal(st.lat_errors, 13);
	assert_int_equal(st.lat_refused, 14);
	assert_int_equal(st.events, 21);
	assert_int_equal(st.overflows, 22);
	assert_int_equal(st.rescans, 23);
	assert_int_equal(st.rule_matches, 24);
	assert_int_equal(st.lat_inherited_back, 25);
	assert_int_equal(st.exec_timed, 200);
	assert_int_equal(st.exec_us_p50, 101);
	assert_int_equal(st.exec_us_p99, 199);
	assert_int_equal(st.exec_us_max, 200);
	assert_string_equal(st.events_state, "none (test)");
	assert_false(st.events_up);
	assert_false(st.events_bpf);
	assert_null(st.class_mount); /* classes off */
	/* More timed than kept: only the ring counts. */
	d->lm.nexec_us = 5000;
	for (uint32_t i = 0; i < LATMGR_EXEC_TIMES; i++)
		d->lm.exec_us[i] = 7;
	d->lat.cls.on = true;
	latmgr_stats(&d->lm, &st);
	assert_int_equal(st.exec_timed, LATMGR_EXEC_TIMES);
	assert_int_equal(st.exec_us_max, 7);
	assert_string_equal(st.class_mount, ctlh_cg_mount);
	assert_string_equal(latmgr_proc_root(&d->lm), ctlh_proc_root);
}

void kit_before(void)
{
	ctlh_init("rqb-latmgr-view");
}
