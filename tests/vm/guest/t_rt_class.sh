# Real-time tasks beside latency-nice, on each kernel of the tiers (the PREEMPT_RT ones
# among them, where interrupts and softirqs are SCHED_FIFO threads too): a process given
# -20 makes itself SCHED_FIFO inside its class, as an audio server does; a busy
# real-time task is refused a value and left exactly as it is, while the daemon goes on
# ticking and managing others beside it; a stop, and a restart after SIGKILL, give the
# others back and leave the real-time task alone. The busy one is SCHED_RR 1: on
# PREEMPT_RT the timer and RCU threads are SCHED_FIFO 1, and a busy loop above them
# starves its CPU's timers (a first version of this test, at SCHED_FIFO 10, hung there).
. /tests/lib.sh
command -v chrt >/dev/null || { echo "no chrt in the guest"; exit 77; }
rt_group=no
kconfig_has RT_GROUP_SCHED && rt_group=yes
echo "sched_rt_runtime_us $(cat /proc/sys/kernel/sched_rt_runtime_us) of $(cat /proc/sys/kernel/sched_rt_period_us); RT group scheduling: $rt_group; PREEMPT_RT: $(kconfig_has PREEMPT_RT && echo yes || echo no)"
policy_of() { chrt -p "$1" | awk -F': ' '/policy/ { print $2 }'; }
prio_of() { chrt -p "$1" | awk -F': ' '/priority/ { print $2 }'; }
nice_of() { awk '{ print $19 }' "/proc/$1/stat"; }

start_daemon
check "the daemon runs" wait_running

rqctl run -l -20 -- chrt -f 10 sh -c 'chrt -p $$; cat /proc/self/cgroup' >/tmp/rt.out 2>&1
cat /tmp/rt.out
check "in class -20 a process makes itself SCHED_FIFO" grep -q SCHED_FIFO /tmp/rt.out
check "and runs in rqbalance-lat-20" grep -q "cpu.*:/rqbalance-lat-20$" /tmp/rt.out

# A managed process beside a busy real-time one.
sleep 600 &
S=$!
HOGS="$S"
check "rqctl set -l 10 on a sleeper" rqctl set -l 10 -p $S
LAST=$(($(list_len "$ALL") - 1))
taskset -c $LAST chrt -r 1 sh -c 'while :; do :; done' &
R=$!
HOGS="$HOGS $R"
rt_runs() { [ "$(policy_of $R)" = SCHED_RR ]; }
check "a busy SCHED_RR loop runs on CPU $LAST" poll_until 600 rt_runs
out=$(rqctl set -l -10 -p $R 2>&1)
rc=$?
echo "rqctl set -l -10 on it: exit $rc: $out"
check "a value for the real-time task is refused" [ $rc -ne 0 ]
check "saying why" sh -c "echo '$out' | grep -q real-time"
check "the daemon still ends ticks beside it" rqsync 5
check "the real-time task keeps SCHED_RR 1" [ "$(policy_of $R)" = SCHED_RR ] && [ "$(prio_of $R)" = 1 ]
check "and nice 0" [ "$(nice_of $R)" = 0 ]
check "the sleeper has nice 10" [ "$(nice_of $S)" = 10 ]
check "clean stop" stop_daemon TERM
check "the sleeper has nice 0 again" [ "$(nice_of $S)" = 0 ]
check "the real-time task is as it was" [ "$(policy_of $R)" = SCHED_RR ] && [ "$(prio_of $R)" = 1 ]
check "in its own cgroup" sh -c "! grep -q rqbalance-lat /proc/$R/cgroup"

# SIGKILL beside the real-time task, then a restart: the journal gives the value back.
start_daemon
check "the daemon runs again" wait_running
check "rqctl set -l 10 on the sleeper" rqctl set -l 10 -p $S
kill -KILL "$DPID"
wait "$DPID"
DPID=""
check "after SIGKILL the sleeper keeps nice 10" [ "$(nice_of $S)" = 10 ]
start_daemon
check "a restart runs" wait_running
check "and has given nice 0 back from the journal" [ "$(nice_of $S)" = 0 ]
check "the sleeper is out of the class" sh -c "! grep -q rqbalance-lat /proc/$S/cgroup"
check "clean stop" stop_daemon TERM
check "the real-time task is still as it was" [ "$(policy_of $R)" = SCHED_RR ] && [ "$(prio_of $R)" = 1 ]
cleanup
