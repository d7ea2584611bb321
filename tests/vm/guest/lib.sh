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

# on_llc1 pid: the task runs on CPU 2 or 3 and may only run there.
on_llc1() { [ "$(allowed "$1")" = "2-3" ] && [ "$(lastcpu "$1")" -ge 2 ]; }
on_llc0() { c=$(lastcpu "$1"); [ "$c" -le 1 ]; }
count_pinned() {
	n=0
	for p in $HOGS; do on_llc1 "$p" && n=$((n + 1)); done
	echo $n
}
