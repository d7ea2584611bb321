/*
 * rqctl status's text, the daemon's to build (the doors only send it): what each stage
 * did, the machine's LLCs and kinds of core, and what else shapes scheduling as the
 * asker may see it. It reads what the daemon holds and changes nothing.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "ctl/ctl_req.h"
#include "diag/peers.h"
#include "model/stats.h"
#include "policy/spread.h"
#include "rqbalance.h"
#include "sample/topo.h"
#include "snapshot/snap.h"
#include "util/cpumask.h"
#include "util/util.h"

/* The daemon's open file descriptors, this count's own left out; -1 if unknown. */
static int open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	int n = -1; /* the directory's own */

	if (!dir)
		return -1;
	while (readdir(dir))
		n++;
	closedir(dir);
	return n - 2; /* . and .. */
}

/*
 * What else shapes scheduling, as k may see it: "shaping ID TEXT" lines, TEXT escaped
 * as a list field is (it may hold a profile's or a scheduler's name).
 */
static size_t status_shaping(const struct peers *p, struct ctl_env *x, const struct ctl_caller *k,
			     char *out, size_t len)
{
	struct peers_finding shown;
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return 0;
	for (size_t i = 0; i < p->n; i++) {
		/* A tool's processes, as the asker's /proc would show them. */
		if (!ctl_req_finding(x, k, &p->f[i], &shown))
			continue;
		fprintf(f, "shaping %s ", shown.id);
		util_put_field(f, shown.text);
		fputc('\n', f);
	}
	fclose(f);
	n = n < len ? n : 0;
	memcpy(out, buf, n);
	free(buf);
	return n;
}

/*
 * The kinds of core, most efficient first, where there are two or more, as "kind K k v
 * k v" lines that rqctl --json groups as it does the LLCs; then the X3D mode where the
 * kernel says one, and the CPUs fast_cores keeps latency work on.
 */
static size_t status_kinds(const struct topo *tp, char *out, size_t len)
{
	char cpus[CPUMASK_STRLEN], desc[CPUMASK_STRLEN + 128];
	size_t off = 0;
	cpu_set_t fast;

#define PUT(...) (off += (size_t)snprintf(out + off, off < len ? len - off : 0, __VA_ARGS__))
	for (int k = 0; tp->nkinds >= 2 && k < tp->nkinds; k++) {
		topo_kind_describe(tp, k, desc, sizeof(desc));
		PUT("kind %d %s\n", k, desc);
	}
	if (tp->x3d_mode != TOPO_X3D_NONE)
		PUT("x3d_mode %s\n", topo_x3d_name(tp->x3d_mode));
	if (place_fast_cpus(tp, &fast))
		PUT("fast_cpus %s\n", cpumask_format(&fast, cpus, sizeof(cpus)));
#undef PUT
	return off;
}

void status_text(const struct daemon_stats *st, const struct peers *p, struct ctl_env *x,
		 const struct ctl_caller *k, char *out, size_t len)
{
	const struct topo *tp = st->topo;
	size_t off = 0;

#define PUT(...) (off += (size_t)snprintf(out + off, off < len ? len - off : 0, __VA_ARGS__))
	PUT("version %s\nsampler %s\ntick_ms %u\ntick_now_ms %u\nidle %s\ndry_run %s\nticks %" PRIu64
	    "\n", RQB_VERSION, st->sampler, st->interval_ms, st->tick_now_ms,
	    st->tick_now_ms > st->interval_ms ? "yes" : "no", st->dry_run ? "yes" : "no", st->ticks);
	PUT("managed %" PRIu64 "\nmoves %" PRIu64 "\nrestores %" PRIu64 "\nleft_alone %" PRIu64
	    "\ngone %" PRIu64 "\nerrors_transient %" PRIu64 "\nerrors_permanent %" PRIu64
	    "\nsample_errors %" PRIu64 "\n",
	    st->managed, st->moves, st->restores, st->left_alone, st->gone, st->transient,
	    st->permanent, st->sample_errors);
	/* Between handlers: only what the daemon holds, and the asker's own connection. */
	PUT("ctl_connections %u\nopen_fds %d\n", st->ctl_connections, open_fds());
	PUT("latency_tasks %" PRIu64 "\nlatency_cgroups %" PRIu64 "\nlatency_processes %" PRIu64
	    "\nlatency_events %s\nlatency_overflows %" PRIu64 "\nlatency_rescans %" PRIu64
	    "\nlatency_rule_matches %" PRIu64 "\nlatency_restored %" PRIu64
	    "\nlatency_inherited_back %" PRIu64
	    "\nlatency_errors %" PRIu64 "\nlatency_class_cgroups %s%s%s\nlatency_exec_wakes %s\n",
	    st->lat_tasks, st->lat_cgroups, st->lat_processes, st->events_state, st->overflows,
	    st->rescans, st->rule_matches, st->lat_restored, st->lat_inherited_back, st->lat_errors,
	    st->class_mount ? st->class_mount : "off",
	    st->class_mount && st->class_root[0] ? "/" : "", st->class_mount ? st->class_root : "",
	    !st->events_up ? "none" : st->exec_lazy ? "next_tick" : "at_once");
	/* From an exec event to its rule's value written, over the last execs timed, in µs. */
	PUT("latency_exec_us n %u p50 %u p99 %u max %u\n", st->exec_timed, st->exec_us_p50,
	    st->exec_us_p99, st->exec_us_max);
	/* What a tick takes, on average by stage and at most, in µs. */
	PUT("tick_us sample %.1f verify %.1f latency %.1f policy %.1f act %.1f max %.1f\n",
	    st->tick_avg_us[TICK_SAMPLE], st->tick_avg_us[TICK_VERIFY],
	    st->tick_avg_us[TICK_LATENCY], st->tick_avg_us[TICK_POLICY], st->tick_avg_us[TICK_ACT],
	    st->tick_max_us);
	/* Who places tasks by cache: rqbalance alone, or the kernel or a BPF scheduler too. */
	PUT("placement_by %s%s%s\n", st->placement_by ? st->placement_by : "rqbalance",
	    st->placement_why && st->placement_why[0] ? ": " : "",
	    st->placement_why ? st->placement_why : "");
	/* What the kernel makes of a value: its default slice, and 7.3's cgroup_mode. */
	PUT("sched_default_slice_ns %" PRIu64 "\nsched_cgroup_mode %s\n", st->default_slice_ns,
	    st->cgroup_mode ? st->cgroup_mode : "unknown");
	/* The D-Bus API: the names owned, or off. */
	PUT("dbus %s%s%s\n", st->dbus ? "org.rqbalance1" : "off", st->dbus_s76 ? " " : "",
	    st->dbus_s76 ? "com.system76.Scheduler" : "");
	for (int l = 0; l < tp->nllcs; l++) {
		char cpus[CPUMASK_STRLEN];
		unsigned nr = 0;

		for (int c = 0; c < tp->nr_cpu_ids; c++)
			if (tp->cpus[c].present && tp->cpus[c].llc == l)
				nr += st->snap->cpus[c].nr_running;
		/* cache_kb last: readers that match "llc N cpus L runnable R" still do. */
		PUT("llc %d cpus %s runnable %u cache_kb %" PRIu64 "\n", l,
		    cpumask_format(&tp->llcs[l].cpus, cpus, sizeof(cpus)), nr,
		    tp->llcs[l].size_kb);
	}
	if (off < len)
		off += status_kinds(tp, out + off, len - off);
	if (off < len) {
		off += status_shaping(p, x, k, out + off, len - off);
		out[off < len ? off : len - 1] = '\0';
	}
#undef PUT
}
