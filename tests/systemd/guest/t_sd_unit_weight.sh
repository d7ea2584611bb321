# A value on a unit's cgroup, for a unit as `systemd-run` makes it on Debian's default
# (no CPUWeight of its own, so no cpu controller below the root: only memory and
# pids are enabled there until a unit asks for cpu). doc/latency.md: "on a systemd host a
# unit's cgroup is set as the unit's CPUWeight over D-Bus (runtime only)". So
# `rqctl set -l -5 -g /system.slice/UNIT.service` sets its CPUWeight, and
# `rqctl reset -g` gives back what it had (not set).
. /usr/local/lib/rqbt/lib.sh
base_state
UNITS="rqbt-uw.service"
check "a unit of the test's own" systemd-run -q --unit=rqbt-uw sleep 600
echo "the root enables: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
echo "system.slice enables: $(cat /sys/fs/cgroup/system.slice/cgroup.subtree_control)"
echo "its cgroup's files: $(ls /sys/fs/cgroup/system.slice/rqbt-uw.service | grep '^cpu\.' | paste -sd' ')"
w0=$(systemctl show -P CPUWeight rqbt-uw.service)
c=$(cursor)
out=$(rqctl set -l -5 -g /system.slice/rqbt-uw.service 2>&1)
rc=$?
echo "rqctl set -l -5 -g /system.slice/rqbt-uw.service: exit $rc: $out"
journal_after "$c" -u "$UNIT" -o cat
check "rqctl set -l -5 -g on its cgroup" [ $rc = 0 ]
w1=$(systemctl show -P CPUWeight rqbt-uw.service)
echo "its CPUWeight: $w0 before, $w1 with -5"
check "sets its CPUWeight" [ "$w1" != "$w0" ]
check "rqctl reset -g" rqctl reset -g /system.slice/rqbt-uw.service
w2=$(systemctl show -P CPUWeight rqbt-uw.service)
echo "its CPUWeight after the reset: $w2"
check "gives back what it had" [ "$w2" = "$w0" ]
