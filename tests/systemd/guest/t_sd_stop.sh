# `systemctl stop rqbalance` gives back everything rqbalance set: pins (from the
# balancer, where it made any), nice, policy and slice of processes given values in
# both directions, and a unit's CPUWeight (set over D-Bus for a value on its cgroup);
# nothing of rqbalance is left in the cgroup tree.
# Two units of the test's own: one with a CPUWeight of its own (100), and one as
# systemd-run makes it (CPUWeight not set), started after the first: on Debian's
# default only memory and pids are enabled below the root until a unit asks for cpu,
# and a unit's cgroup without the cpu controller is refused today (t_sd_unit_weight).
. /usr/local/lib/rqbt/lib.sh
base_state
ALL=$(cat /sys/devices/system/cpu/online)
LLC0=$(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list)
sleeper
S1=$S
sleeper
S2=$S
b1=$(task_state "$S1")
b2=$(task_state "$S2")
check "rqctl set -l 12 -p $S1" rqctl set -l 12 -p "$S1"
check "rqctl set -l -5 -p $S2" rqctl set -l -5 -p "$S2"
echo "$S1: $(task_state "$S1"); $S2: $(task_state "$S2")"
check "$S1 has nice 12 and SCHED_BATCH" [ "$(nice_of "$S1")/$(policy_of "$S1")" = 12/3 ]
check "$S2 has nice -5" [ "$(nice_of "$S2")" = -5 ]
UNITS="rqbt-stop-w.service rqbt-stop.service"
check "a unit with CPUWeight=100" systemd-run -q --unit=rqbt-stop-w -p CPUWeight=100 sleep 600
check "rqctl set -l -5 -g /system.slice/rqbt-stop-w.service" \
	rqctl set -l -5 -g /system.slice/rqbt-stop-w.service
v1=$(systemctl show -P CPUWeight rqbt-stop-w.service)
echo "its CPUWeight: 100 before, $v1 with -5"
check "changes its CPUWeight" [ "$v1" != 100 ]
check "a unit without" systemd-run -q --unit=rqbt-stop sleep 600
echo "system.slice enables: $(cat /sys/fs/cgroup/system.slice/cgroup.subtree_control)"
w0=$(systemctl show -P CPUWeight rqbt-stop.service)
check "rqctl set -l 7 -g /system.slice/rqbt-stop.service" \
	rqctl set -l 7 -g /system.slice/rqbt-stop.service
w1=$(systemctl show -P CPUWeight rqbt-stop.service)
echo "its CPUWeight: $w0 before, $w1 with 7"
check "changes its CPUWeight" [ "$w1" != "$w0" ]
# Load for the balancer: twice LLC 0's CPUs worth of busy loops started there, then
# allowed every CPU. Whether the kernel spreads them before the daemon does is the
# kernel's affair: whatever the daemon pinned is in its journal, and must come back.
HOGS=""
for i in 1 2 3 4; do
	taskset -c "$LLC0" sh -c 'while :; do :; done' &
	HOGS="$HOGS $!"
	PIDS="$PIDS $!"
done
for p in $HOGS; do taskset -pc "$ALL" "$p" >/dev/null; done
rqsync
rqsync
rqsync
# The pins the daemon holds: "set" lines of its affinity journal without a "clear".
pins=$(awk '$1 == "set" && !($2 in s) { s[$2] = $5 } $1 == "clear" { delete s[$2] }
	END { for (t in s) print t, s[t] }' /run/rqbalance/affinity.journal)
echo "pins held: ${pins:-none}"
c=$(cursor)
check "systemctl stop rqbalance" systemctl stop "$UNIT"
journal_after "$c" -u "$UNIT" -o cat
expect "says what it gave back" journal_has "$c" '^stopped: [0-9]+ latency setting'
n=0
while read -r t prev; do
	[ -n "$t" ] || continue
	[ -e "/proc/$t" ] || continue
	n=$((n + 1))
	expect "task $t has its CPUs back ($prev)" [ "$(allowed_of "$t")" = "$prev" ]
done <<<"$pins"
info "pins held at stop and given back: $n"
echo "$S1: $(task_state "$S1"); $S2: $(task_state "$S2")"
expect "$S1 has its nice, policy and slice back" [ "$(task_state "$S1")" = "$b1" ]
expect "$S2 too" [ "$(task_state "$S2")" = "$b2" ]
w2=$(systemctl show -P CPUWeight rqbt-stop.service)
echo "rqbt-stop.service CPUWeight after the stop: $w2"
expect "the unit without one has its CPUWeight back ($w0)" [ "$w2" = "$w0" ]
v2=$(systemctl show -P CPUWeight rqbt-stop-w.service)
echo "rqbt-stop-w.service CPUWeight after the stop: $v2"
expect "the unit with 100 has it back" [ "$v2" = 100 ]
left=$(find /sys/fs/cgroup -name '*rqbalance*')
echo "left in the cgroup tree: ${left:-nothing}"
expect "nothing of rqbalance is left in the cgroup tree" [ -z "$left" ]
for p in $HOGS; do kill -KILL "$p"; done
grep -H . /run/systemd/system.control/rqbt-stop*.service.d/* 2>/dev/null
exit 0
