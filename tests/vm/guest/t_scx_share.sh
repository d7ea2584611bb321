# The CPU share of hogs at values -5 and 5 beside a sched_ext scheduler (issue #42),
# for the record: printed, not bounded, since which knobs a BPF scheduler honours is
# its own choice. As many hogs at each value as CPUs, on cgroup2 (class cgroups with
# weights), under the kernel's own scheduler, scx_simple, and scx_flatcg, which
# honours cgroup weights. t_scx has the daemon's stand-down; this half was split from
# it so that each has a test's whole time limit under emulation.
. /tests/lib.sh
need_scx
cgroup2_undo() { [ -n "$SCX" ] && kill -INT "$SCX" 2>/dev/null; }
use_cgroup2 0
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
sum_ticks() { local p n=0; for p in "$@"; do n=$((n + $(cpu_ticks "$p"))); done; echo $n; }
# share LABEL: the hogs' CPU time over a window of 40 half seconds; prints the -5
# hogs' share in percent.
share() {
	local a0 b0 a b i=0
	a0=$(sum_ticks $HA)
	b0=$(sum_ticks $HB)
	while [ $i -lt 40 ]; do sleep 0.5; i=$((i + 1)); done
	a=$(($(sum_ticks $HA) - a0))
	b=$(($(sum_ticks $HB) - b0))
	echo "share under $1: the -5 hogs $a ticks, the 5 hogs $b ticks: $((100 * a / (a + b + 1)))% to -5"
}
# scx_share NAME: the share under a sched_ext scheduler, over a window it stayed
# loaded for. The kernel may eject it (lib.sh's scx_load): then it is loaded once
# more. Ejected twice, the share is said to be unmeasured, with the kernel's reason:
# the figure is for the record, and an ejection under emulation is not the daemon's.
# Whether the daemon had any part in it shows in the reason printed.
scx_share() {
	local try
	for try in 1 2; do
		if scx_load "$1"; then
			share "$1" >/tmp/share.out
			if scx_stayed; then
				cat /tmp/share.out
				scx_unload
				return 0
			fi
			echo "the kernel unloaded $1 during the window: $(scx_why "$1")"
			scx_end
		fi
	done
	echo "share under $1: not measured: the kernel unloaded it twice"
	poll_until 600 scx_is disabled || fail "$1 did not unload: $(scx_state)"
}
# As many hogs at each value as there are CPUs, free to run anywhere: a sched_ext
# scheduler sends a task that may run on one CPU only straight to that CPU's queue
# (scx_flatcg and scx_simple both do), past its cgroup weighing.
start_daemon
check "the daemon runs on cgroup2" wait_running
HA="" HB=""
for c in $(seq 1 "$(nproc)"); do
	hog "$ALL"
	HA="$HA $!"
	hog "$ALL"
	HB="$HB $!"
done
for p in $HA; do rqctl set -l -5 -p "$p" >/dev/null || fail "rqctl set -l -5 -p $p"; done
for p in $HB; do rqctl set -l 5 -p "$p" >/dev/null || fail "rqctl set -l 5 -p $p"; done
ok "$(nproc) hogs at -5, $(nproc) at 5"
echo "classes: -5 weight $(cat $V2/rqbalance-lat-5/cpu.weight 2>/dev/null), 5 weight $(cat $V2/rqbalance-lat5/cpu.weight 2>/dev/null)"
share "the kernel's scheduler (EEVDF)"
scx_share scx_simple
scx_share scx_flatcg
check "clean stop" stop_daemon TERM
cleanup
