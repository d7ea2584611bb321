# Beside a sched_ext scheduler (issue #42): the kernel's own examples scx_simple and
# scx_flatcg, built from Debian's linux-source-7.3 by tests/vm/scx and put in the guest
# by tests/vm/run --scx. Not in the boot with isolcpus=domain (lib.sh's lb_off): the
# kernel refuses to load a sched_ext scheduler there (EINVAL at attach). So the
# kernel's balancing is on, and whether the daemon holds a pin when the scheduler comes
# depends on the kernel's moves; hogs are piled on LLC 0 just before, and the test
# prints how many pins were given back. Then, with scx_simple loaded:
# - the daemon says a sched_ext scheduler places tasks, every hog has every CPU (no pin
#   left behind), and it makes no pin while the scheduler is loaded (rqctl status:
#   placement_by sched_ext);
# - latency-nice goes on (a value still sets nice), and rqctl explain says what a
#   sched_ext scheduler does with the knobs;
# - unloaded, the daemon says who places again.
# Then, for the record (printed, not bounded: which knobs a BPF scheduler honours is
# its own choice), the CPU share of hogs at values -5 and 5, as many of each as CPUs,
# on cgroup2 (class cgroups with weights), under the kernel's own scheduler, scx_simple
# and scx_flatcg, which honours cgroup weights.
. /tests/lib.sh
need_llcs
[ -e /sys/kernel/sched_ext/state ] || { echo "no sched_ext in this kernel"; exit 77; }
command -v scx_simple >/dev/null ||
	{ echo "no scx_simple in this guest (tests/vm/run --scx DIR; tests/vm/scx builds it)"; exit 77; }
scx_state() { cat /sys/kernel/sched_ext/state; }
scx_is() { [ "$(scx_state)" = "$1" ]; }
SCX=""
# scx_load NAME: the scheduler running, its state enabled; scx_unload: it exits.
scx_load() {
	"$1" >"/tmp/$1.out" 2>&1 &
	SCX=$!
	HOGS="$HOGS $SCX"
	poll_until 600 scx_is enabled || fail "$1 did not load: $(scx_state); $(cat "/tmp/$1.out")"
	echo "$1 loaded: ops $(cat /sys/kernel/sched_ext/root/ops)"
}
scx_unload() {
	kill -INT "$SCX"
	wait "$SCX" 2>/dev/null
	poll_until 600 scx_is disabled || fail "the scheduler did not unload: $(scx_state)"
	SCX=""
}

pile_on_llc0
DAEMON_CONF=$LONG_PINS
start_daemon
check "the daemon runs" wait_running
rqsync 5
pins=$(grep -c ' pin tid=' "$LOG")
echo "pins made before the scheduler: $pins"
scx_load scx_simple
check "the daemon says a sched_ext scheduler places tasks" \
	wait_log "placement: sched_ext scheduler [^ ]* is enabled: it places the tasks it takes; spread and placement stand down, pins given back"
rqsync 2
grep 'pins given back' "$LOG" || echo "(no pin was held when it loaded)"
for p in $HOGS; do
	[ "$p" = "$SCX" ] && continue
	check "hog $p has every CPU" [ "$(allowed "$p")" = "$ALL" ]
done
check "rqctl status: placement_by sched_ext" \
	sh -c "rqctl status | grep -q '^placement_by sched_ext: sched_ext scheduler '"
pins=$(grep -c ' pin tid=' "$LOG")
# Twenty whole ticks with the hogs where scx_simple puts them: no pin.
rqsync 20
check "no pin while it is loaded" [ "$(grep -c ' pin tid=' "$LOG")" -eq "$pins" ]
set -- $HOGS
H1=$1
check "rqctl set -l 10 on a hog" rqctl set -l 10 -p "$H1"
check "gives it nice 10 (the knob sched_ext passes on as the task's weight)" \
	[ "$(awk '{ print $19 }' "/proc/$H1/stat")" = 10 ]
rqctl explain -p "$H1" >/tmp/scx.explain 2>&1
cat /tmp/scx.explain
check "rqctl explain says a sched_ext scheduler decides" grep -q "sched_ext" /tmp/scx.explain
check "rqctl reset" rqctl reset -p "$H1"
scx_unload
# Unloaded: back to what placed before it, here the kernel's cache-aware scheduling
# beside the daemon (7.x, debugfs not mounted: found from the BTF), else the daemon alone.
if kconfig_has SCHED_CACHE; then
	check "unloaded: the daemon says the kernel places by cache again" \
		wait_log "placement: the kernel is built with cache-aware scheduling" 2
	check "rqctl status: placement_by kernel" \
		sh -c "rqctl status | grep -q '^placement_by kernel: '"
else
	check "unloaded: the daemon says it places again" \
		wait_log "placement: nothing else places tasks by cache now: spread and placement act"
	check "rqctl status: placement_by rqbalance" \
		sh -c "rqctl status | grep -q '^placement_by rqbalance$'"
fi
check "clean stop" stop_daemon TERM
cleanup

# The CPU share of hogs at -5 and at 5, for the record.
V2=/sys/fs/cgroup/unified
umount /sys/fs/cgroup/cpu || fail "cannot unmount the v1 cpu hierarchy"
mkdir -p $V2
mount -t cgroup2 none $V2 || fail "cannot mount cgroup2"
restore_v1() {
	[ -n "$SCX" ] && kill -INT "$SCX" 2>/dev/null
	umount $V2
	mount -t cgroup -o cpu cgroup /sys/fs/cgroup/cpu
}
trap restore_v1 EXIT
poll_until 600 grep -qw cpu $V2/cgroup.controllers || {
	echo "cgroup2 has no cpu controller here: $(cat $V2/cgroup.controllers)"
	exit 0
}
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
scx_load scx_simple
share "scx_simple"
scx_unload
scx_load scx_flatcg
share "scx_flatcg"
scx_unload
check "clean stop" stop_daemon TERM
cleanup
