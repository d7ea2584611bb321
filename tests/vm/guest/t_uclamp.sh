# uclamp on a kernel that has it (tests/vm/kernel uclamp: Debian's 6.1 source and config
# with CONFIG_UCLAMP_TASK and CONFIG_UCLAMP_TASK_GROUP): what latency-nice maps to, read
# back from the kernel's own /proc/PID/sched. A negative value sets uclamp.min
# (-10: 512), a positive one uclamp.max (10: 755, 19: 512), on a process's threads made
# after the value and on its children; class cgroups get cpu.uclamp.min or .max; the
# sysctl sched_util_clamp_min bounds what a task gets; reset, stop and a restart after
# SIGKILL give the clamps back. The PELT utilization beside the effective clamps shows
# what schedutil would be asked for (this guest has no cpufreq driver to ask).
. /tests/lib.sh
kconfig_has UCLAMP_TASK || { echo "this kernel has no uclamp (CONFIG_UCLAMP_TASK off)"; exit 77; }

# sched_val TASKDIR KEY: KEY's value in /proc/TASKDIR/sched ("uclamp.min", ...).
sched_val() {
	awk -v k="$2" -F: '{ n = $1; sub(/ +$/, "", n) } n == k { gsub(/ /, "", $2); print $2 }' \
		"/proc/$1/sched"
}
has_clamp() { [ "$(sched_val "$1" "$2")" = "$3" ]; }
# all_threads PID KEY VALUE: every thread of PID has it.
all_threads() {
	local t
	for t in /proc/$1/task/*; do
		has_clamp "$1/task/${t##*/}" "$2" "$3" || return 1
	done
}
CG=/sys/fs/cgroup/cpu
SYSCTL_MIN=/proc/sys/kernel/sched_util_clamp_min
restore_sysctl() { [ -w $SYSCTL_MIN ] && echo 1024 >$SYSCTL_MIN; }
trap restore_sysctl EXIT

DAEMON_CONF=$(printf '[rule spin]\nlatency_nice = -10\nexe = /bin/spinner\n')
start_daemon
check "the daemon runs" wait_running
check "it uses uclamp (no 'no uclamp' line)" sh -c "! grep -q 'no uclamp in this kernel' $LOG"

# A rule at exec: the spinner's threads are all made after its value.
spinner --sleepers 2 --busy 1 >/tmp/uc.spin &
SP=$!
HOGS="$SP"
check "the spinner started its threads" poll_until 600 grep -q ready /tmp/uc.spin
rqsync
check "the spinner has 4 threads" [ "$(ls /proc/$SP/task | wc -l)" = 4 ]
check "each has uclamp.min 512 (-10)" all_threads $SP uclamp.min 512
check "and uclamp.max 1024" all_threads $SP uclamp.max 1024

# A positive value caps.
sleep 600 &
S=$!
HOGS="$HOGS $S"
check "rqctl set -l 10" rqctl set -l 10 -p $S
check "uclamp.max 755 (10)" has_clamp $S uclamp.max 755
check "uclamp.min 0" has_clamp $S uclamp.min 0
rqctl explain -p $S >/tmp/uc.explain 2>&1
cat /tmp/uc.explain
check "rqctl explain shows uclamp applied" grep -q "uclamp.*applied: 0-755" /tmp/uc.explain

# A child made after the value inherits the clamps and is managed.
# (It waits on a fifo with a builtin, so that its only child is the one after the value.)
rm -f /tmp/uc.fifo
mkfifo /tmp/uc.fifo
sh -c 'read x </tmp/uc.fifo; sleep 600 & wait' &
P=$!
HOGS="$HOGS $P"
check "rqctl set -l -10 on a shell" rqctl set -l -10 -p $P
echo go >/tmp/uc.fifo
child_of() { C=$(cat /proc/$P/task/$P/children 2>/dev/null); [ -n "$C" ]; }
check "the shell forked" poll_until 600 child_of
HOGS="$HOGS $C"
rqsync
check "its child has uclamp.min 512" has_clamp $C uclamp.min 512
check "and is managed (rqctl get)" rqctl get -p $C

# Class cgroups, where groups have clamps (CONFIG_UCLAMP_TASK_GROUP).
if kconfig_has UCLAMP_TASK_GROUP; then
	check "class -10 has cpu.uclamp.min 50.00" [ "$(cat $CG/rqbalance-lat-10/cpu.uclamp.min)" = 50.00 ]
	check "class 10 has cpu.uclamp.max 73.73" [ "$(cat $CG/rqbalance-lat10/cpu.uclamp.max)" = 73.73 ]
fi

# What schedutil would be asked for: PELT's utilization, clamped by the effective pair.
B=""
sh -c 'while :; do :; done' &
B=$!
HOGS="$HOGS $B"
check "rqctl set -l 19 on a busy loop" rqctl set -l 19 -p $B
check "its uclamp.max is 512 (19)" has_clamp $B uclamp.max 512
busy_util() { [ "$(sched_val $B se.avg.util_avg)" -gt 512 ]; }
check "the busy loop's PELT utilization passes 512" poll_until 600 busy_util
UB=$(sched_val $B se.avg.util_avg)
EB=$(sched_val $B "effective uclamp.max")
echo "busy loop at 19: util_avg $UB, effective uclamp.max $EB: schedutil is asked for $EB, not $UB"
check "its effective uclamp.max (512) caps it" [ "$EB" = 512 ] && [ "$UB" -gt "$EB" ]
SLEEPER=$(for t in /proc/$SP/task/*; do
	[ "$(sched_val $SP/task/${t##*/} se.avg.util_avg)" -lt 512 ] && echo "${t##*/}" && break
done)
check "a spinner thread at rest uses less than 512" [ -n "$SLEEPER" ]
US=$(sched_val $SP/task/$SLEEPER se.avg.util_avg)
ES=$(sched_val $SP/task/$SLEEPER "effective uclamp.min")
echo "sleeper at -10: util_avg $US, effective uclamp.min $ES: schedutil is asked for at least $ES"
check "its effective uclamp.min (512) raises it" [ "$ES" = 512 ]
if [ -d /sys/devices/system/cpu/cpu0/cpufreq ]; then
	echo "cpufreq: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null)"
else
	ok "no cpufreq driver in this guest: no frequency to read, the clamps above are what schedutil would use"
fi

# The kernel bounds a request by the sysctl.
if [ -w $SYSCTL_MIN ]; then
	echo 256 >$SYSCTL_MIN
	check "with sched_util_clamp_min 256 the -10 threads ask 512" all_threads $SP uclamp.min 512
	check "and get 256" all_threads $SP "effective uclamp.min" 256
	echo 1024 >$SYSCTL_MIN
fi

check "rqctl reset gives the cap back" rqctl reset -p $S
check "uclamp.max 1024 again" has_clamp $S uclamp.max 1024
check "clean stop" stop_daemon TERM
check "the spinner's threads have uclamp.min 0 again" all_threads $SP uclamp.min 0
check "the shell's child too" has_clamp $C uclamp.min 0
check "the busy loop has uclamp.max 1024 again" has_clamp $B uclamp.max 1024

# SIGKILL, then a restart: the journal gives the clamps back at start.
DAEMON_CONF=""
start_daemon
check "the daemon runs again" wait_running
check "rqctl set -l -10" rqctl set -l -10 -p $S
check "uclamp.min 512" has_clamp $S uclamp.min 512
kill -KILL "$DPID"
wait "$DPID"
DPID=""
check "after SIGKILL the clamp stays" has_clamp $S uclamp.min 512
start_daemon
check "a restart runs" wait_running
check "and has given uclamp.min back from the journal" has_clamp $S uclamp.min 0
check "clean stop" stop_daemon TERM
cleanup
