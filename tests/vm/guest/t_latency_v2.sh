# Latency-nice on pure cgroup2, on Debian's stock kernel: a negative value moves the
# process into rqbalance-latN with the cgroup2 weight of that nice value and no CPU
# quota, and sets that nice; uclamp min is set where the kernel has it; a stop gives
# all of it back.
# The guest's v1 cpu hierarchy is unmounted for the test and mounted again after.
. /tests/lib.sh
use_cgroup2 77
start_daemon
check "the daemon runs" wait_running
check "it found the classes' place in cgroup2" grep -q "class cgroups in $V2 (cgroup2)" "$LOG"
# Mounted here without favordynmods (Debian's kernels are not built to favour it).
check "and says no cgroup mount has favordynmods" \
	grep -q "(cgroup2); no cgroup mount has favordynmods" "$LOG"
sleep 600 &
S=$!
HOGS="$S"
before=$(cat /proc/$S/cgroup)
check "rqctl set -l -10" rqctl set -l -10 -p $S
check "the process is in rqbalance-lat-10" grep -q '^0::/rqbalance-lat-10$' /proc/$S/cgroup
check "with the cgroup2 weight of nice -10" [ "$(cat $V2/rqbalance-lat-10/cpu.weight)" = 932 ]
check "and no CFS quota, which would stall a busy task" \
	[ "$(cat $V2/rqbalance-lat-10/cpu.max)" = "max 100000" ]
check "the process has nice -10" [ "$(awk '{ print $19 }' /proc/$S/stat)" = -10 ]
if grep -q '^uclamp.min' /proc/$S/sched; then
	check "uclamp min 512" grep -q '^uclamp.min .*: *512$' /proc/$S/sched
else
	ok "this kernel has no uclamp: skipped"
fi
rqctl list
check "clean stop" stop_daemon TERM
check "the process is back in its cgroup" [ "$(cat /proc/$S/cgroup)" = "$before" ]
check "with nice 0 again" [ "$(awk '{ print $19 }' /proc/$S/stat)" = 0 ]
check "the class is gone" [ ! -d $V2/rqbalance-lat-10 ]
if grep -q '^uclamp.min' /proc/$S/sched; then
	check "uclamp min back to 0" grep -q '^uclamp.min .*: *0$' /proc/$S/sched
fi
cleanup
