# The guest side of bench/stock-ab (busybox sh, run by tests/vm/run --bench as
# PID 1's child, under the name "ash"): the daemon at its default config against no
# daemon, with the kernel's own load balancing ON (cpuset.sched_load_balance is never
# touched). bench/stock-ab puts ROUNDS and SECS in front of this file (WORKLOADS, a
# list of wakeup pairs messaging hogs, runs fewer).
#
# Prints one line per run:
#   ROW round case workload p99=US p999=US thr=N [more] pins=N [dcpu=TICKS] drc=RC
# (p99/p999 only for wakeup; thr is the workload's throughput; dcpu the daemon's CPU
# time in clock ticks from "running:" (its BPF start-up left out) to SIGTERM; drc its exit status after SIGTERM, "-" in case
# A), each daemon's pin lines as "PIN ...", its sampler line as "DAEMON ...", and
# "PROBLEM: ..." for a daemon that did not start or did not exit 0.
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-3}
ALL=$(cat /sys/devices/system/cpu/online)
LLC0=$(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list)
DIR=/run/rqb-ab
CONF=/tmp/ab.conf
LOG=/tmp/ab.daemon.log
DPID=
problems=0

echo "INFO kernel $(uname -r), CPUs $ALL, LLC0 $LLC0, rounds $ROUNDS, ${SECS}s a workload"
[ "$LLC0" != "$ALL" ] || echo "PROBLEM: one LLC only ($LLC0)"
echo "INFO sched_load_balance $(cat /sys/fs/cgroup/cpuset/cpuset.sched_load_balance 2>/dev/null || echo n/a, no cgroup v1 cpuset)"
# The default config; only the journal and the ctl socket elsewhere.
printf '[daemon]\njournal_dir = %s\nctl_socket = %s/ctl.sock\n' "$DIR" "$DIR" >"$CONF"

up() { cut -d' ' -f1 /proc/uptime; }
# This shell, whatever a daemon did to it before: every CPU (its children inherit).
unpin_self() { taskset -pc "$ALL" $$ >/dev/null 2>&1; }

start_daemon() {
	: >"$LOG"
	rqbalanced -f -c "$CONF" >>"$LOG" 2>&1 &
	DPID=$!
	i=0
	while [ $i -lt 600 ]; do
		if grep -q "running: sampler" "$LOG"; then
			DCPU0=$(cputime "$DPID")
			return 0
		fi
		[ -e "/proc/$DPID" ] || break
		sleep 0.1
		i=$((i + 1))
	done
	echo "PROBLEM: the daemon did not start; its log:"
	sed 's/^/  /' "$LOG"
	problems=$((problems + 1))
	return 1
}

# stop_daemon: SIGTERM, its exit status in DRC, its pins in PINS (and printed).
stop_daemon() {
	DCPU=$(($(cputime "$DPID") - DCPU0))
	[ "$1" = 1 ] && grep -m1 'running: sampler' "$LOG" | sed 's/^/DAEMON /'
	kill -TERM "$DPID"
	wait "$DPID"
	DRC=$?
	DPID=
	[ "$DRC" = 0 ] || { echo "PROBLEM: daemon exit $DRC after SIGTERM"; problems=$((problems + 1)); }
	PINS=$(grep -c ' pin tid=' "$LOG")
	grep -E ' (pin|unpin|restore)' "$LOG" | sed 's/^/PIN /' | head -n 40
}

cputime() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# Each workload prints "p99=.. p999=.. thr=.." on its last line.
w_wakeup() {
	set -- $(wakelat --workers 8 --seconds "$SECS")
	echo "p99=$2 p999=$3 thr=$4"
}

# Two pairs of shells that ping-pong a byte through two fifos (each wakes the other),
# started on LLC 0 then allowed every CPU. Only builtins in the loops: no fork. The
# first of each pair counts its round trips until /tmp/ab.stop appears.
w_pairs() {
	rm -f /tmp/ab.stop /tmp/ab.count.*
	pids=
	for k in 1 2; do
		f=/tmp/ab.fifo.$k
		rm -f "$f".1 "$f".2
		mkfifo "$f".1 "$f".2
		taskset -c "$LLC0" sh -c "exec 3<>$f.2 4<>$f.1; n=0
			while [ ! -e /tmp/ab.stop ]; do echo x >&4; read -r y <&3; n=\$((n + 1)); done
			echo \$n >/tmp/ab.count.$k; echo q >&4" &
		pids="$pids $!"
		taskset -c "$LLC0" sh -c "exec 3<>$f.1 4<>$f.2
			while read -r y <&3 && [ \"\$y\" = x ]; do echo x >&4; done" &
		pids="$pids $!"
	done
	sleep 0.2
	for p in $pids; do taskset -pc "$ALL" "$p" >/dev/null; done
	sleep "$SECS"
	: >/tmp/ab.stop
	for p in $pids; do wait "$p"; done
	echo "p99=- p999=- thr=$(($(cat /tmp/ab.count.1) + $(cat /tmp/ab.count.2)))"
}

# hackbench, again and again for SECS: its median time; thr = runs a second, 1/median.
w_messaging() {
	: >/tmp/ab.hb
	t0=$(up)
	while :; do
		hackbench --loops 50 | awk '{ print $1 }' >>/tmp/ab.hb
		awk -v a="$t0" -v b="$(up)" -v s="$SECS" 'BEGIN { exit !(b - a >= s) }' && break
	done
	sort -n /tmp/ab.hb | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "p99=- p999=- thr=%.3f runs=%d median_s=%.4f\n", 1 / m, NR, m }'
}

# Four busy shells started on LLC 0, then allowed every CPU: their CPU time over SECS
# (clock ticks, all four summed), and how long until two run on each LLC.
w_hogs() {
	pids=
	for k in 1 2 3 4; do
		taskset -c "$LLC0" sh -c 'while :; do :; done' &
		pids="$pids $!"
	done
	sleep 0.2
	c0=0
	for p in $pids; do c0=$((c0 + $(cputime "$p"))); done
	t0=$(up)
	for p in $pids; do taskset -pc "$ALL" "$p" >/dev/null; done
	spread=-
	while awk -v a="$t0" -v b="$(up)" -v s="$SECS" 'BEGIN { exit !(b - a < s) }'; do
		if [ "$spread" = - ]; then
			n0=0
			for p in $pids; do
				c=$(awk '{ print $39 }' "/proc/$p/stat")
				echo ",$LLC0," | grep -q ",$c," && n0=$((n0 + 1))
			done
			[ "$n0" = 2 ] && spread=$(awk -v a="$t0" -v b="$(up)" 'BEGIN { printf "%.2f", b - a }')
		fi
		sleep 0.2
	done
	c1=0
	for p in $pids; do c1=$((c1 + $(cputime "$p"))); done
	# Killed by run(), once a daemon has stopped and given their affinity back.
	HOGPIDS=$pids
	echo "p99=- p999=- thr=$((c1 - c0)) spread_s=$spread"
}

# LLC0 as a comma list (0,1) for w_hogs' match.
LLC0=$(echo "$LLC0" | awk -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-")
	for (c = r[1]; c <= (n > 1 ? r[2] : r[1]); c++) s = s (s == "" ? "" : ",") c } print s }')

run() { # round case workload
	unpin_self
	if [ "$2" = B ]; then start_daemon || return; fi
	HOGPIDS=
	w_$3 >/tmp/ab.res
	res=$(tail -n1 /tmp/ab.res)
	if [ "$2" = B ]; then
		stop_daemon "$1"
		for p in $HOGPIDS; do
			a=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$p/status")
			[ "$a" = "$ALL" ] || { echo "PROBLEM: hog $p left on CPUs $a"; problems=$((problems + 1)); }
		done
		echo "ROW $1 $2 $3 $res pins=$PINS dcpu=$DCPU drc=$DRC"
	else
		echo "ROW $1 $2 $3 $res pins=- drc=-"
	fi
	for p in $HOGPIDS; do kill -KILL "$p"; wait "$p" 2>/dev/null; done
}

r=1
while [ $r -le "$ROUNDS" ]; do
	for w in ${WORKLOADS:-wakeup pairs messaging hogs}; do
		# A then B in odd rounds, B then A in even ones.
		if [ $((r % 2)) = 1 ]; then run $r A $w; run $r B $w; else run $r B $w; run $r A $w; fi
	done
	r=$((r + 1))
done
echo "INFO done, $problems problem(s)"
[ "$problems" = 0 ]
