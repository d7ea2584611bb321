# Helpers for the guest tests (busybox sh). A test exits 0 to pass, 77 to skip
# (its last line says why), anything else to fail; it prints what it checked.

HOGS=""
DPID=""
LOG=/tmp/daemon.log
CONF=/tmp/rqbalance.conf

fail() { echo "not ok: $*"; cleanup; exit 1; }
ok() { echo "ok: $*"; }

# check "description" command...
check() {
	msg=$1
	shift
	if "$@"; then ok "$msg"; else fail "$msg"; fi
}

cleanup() {
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	for p in $HOGS; do kill -KILL "$p" 2>/dev/null; done
	HOGS=""
	DPID=""
	lb_on
	echo "--- daemon log ---"
	cat "$LOG" 2>/dev/null
}

# A CPU-bound task on the given CPU list; its pid is appended to HOGS.
hog() {
	taskset -c "$1" sh -c 'while :; do :; done' &
	HOGS="$HOGS $!"
}

allowed() { awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$1/status"; }
# Field 39 of stat (comm "sh" has no blank, so fields split plainly).
lastcpu() { awk '{ print $39 }' "/proc/$1/stat"; }
release() { for p in $HOGS; do taskset -pc "$1" "$p" >/dev/null; done; }

# The kernel's own load balancing off (cpuset root), so that an imbalance made by
# the test stays until rqbalanced moves something: the test then shows the daemon's
# work, not the kernel's.
lb_off() { echo 0 >/sys/fs/cgroup/cpuset/cpuset.sched_load_balance; }
lb_on() { echo 1 >/sys/fs/cgroup/cpuset/cpuset.sched_load_balance 2>/dev/null; }

# start_daemon [args...]: rqbalanced in the foreground, logging to $LOG.
start_daemon() {
	printf '[daemon]\nlog_level = debug\ninterval_ms = 100\n' >"$CONF"
	rqbalanced -f -c "$CONF" "$@" >"$LOG" 2>&1 &
	DPID=$!
}

stop_daemon() { # signal
	kill "-$1" "$DPID"
	wait "$DPID"
	rc=$?
	DPID=""
	return $rc
}

# wait_log pattern seconds
wait_log() {
	i=0
	while [ $i -lt $(($2 * 10)) ]; do
		grep -q "$1" "$LOG" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# The machine as the kernel describes it: all CPUs, and the L3 group of a CPU.
ALL=$(cat /sys/devices/system/cpu/online)
llc_of() { cat "/sys/devices/system/cpu/cpu$1/cache/index3/shared_cpu_list"; }
LLC0=$(llc_of 0)
# in_list cpu list: is cpu in a kernel CPU list such as "0-1,4"?
in_list() {
	echo "$2" | awk -v c="$1" -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-");
		lo = r[1]; hi = n > 1 ? r[2] : r[1]; if (c >= lo && c <= hi) f = 1 } }
		END { exit !f }'
}
list_len() { echo "$1" | awk -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-");
		s += n > 1 ? r[2] - r[1] + 1 : 1 } print s }'; }
NLLC0=$(list_len "$LLC0")

on_llc0() { in_list "$(lastcpu "$1")" "$LLC0"; }
# pinned_away pid: narrowed to exactly one other LLC's CPUs, and running there.
pinned_away() {
	a=$(allowed "$1")
	c=$(lastcpu "$1")
	[ "$a" != "$ALL" ] && [ "$a" = "$(llc_of "$c")" ] && [ "$a" != "$LLC0" ]
}
count_pinned() {
	n=0
	for p in $HOGS; do pinned_away "$p" && n=$((n + 1)); done
	echo $n
}
# 2 x |LLC 0| hogs on LLC 0, then allowed every CPU: with the kernel's balancing off
# they stay piled there until something moves them.
pile_on_llc0() {
	i=0
	while [ $i -lt $((2 * NLLC0)) ]; do hog "$LLC0"; i=$((i + 1)); done
	sleep 1
	release "$ALL"
}

# Two LLCs or more, each of two CPUs or more, or the test cannot say anything.
need_llcs() {
	if [ "$(llc_of 0)" = "$ALL" ] || [ "$NLLC0" -lt 2 ]; then
		echo "needs two LLCs of two CPUs or more (this guest: LLC0 $LLC0 of $ALL)"
		exit 77
	fi
}
