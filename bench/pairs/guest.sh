# The guest side of bench/pairs-ab (busybox sh, run by tests/vm/run --bench): the
# round trips of wake pairs when the daemon's pins may split them, against when they
# may not. The setting is tests/vm/guest/t_pairs.sh's, where the daemon's pins do
# split pairs without keep_pairs: the kernel's balancing off (cpuset
# sched_load_balance = 0, so nothing moves but what the daemon pins), on each CPU of
# LLC 0 a CPU hog held there (a user narrowed it: counted as load, never moved) and
# a pair of shells that ping-pong a byte through two fifos, one CPU of LLC 1 held
# busy too, one idle. Three cases, in turn in every round (order rotated):
#   A  no daemon
#   B  the daemon, keep_pairs = yes (the default)
#   C  the daemon, keep_pairs = no
# Each pair counts its round trips for SECS once it may run on every CPU; a line
#   ROW round case trips=N pins=N split=N pairs=A:B,C:D
# (split: pairs whose members the daemon's last pins left in two LLCs)
# then per case the median and its ratio to A. bench/pairs-ab puts ROUNDS and SECS
# in front of this file.
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
ALL=$(cat /sys/devices/system/cpu/online)
LLC0=$(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list)
A=${LLC0%%[,-]*}
B=$(echo "$LLC0" | awk -F'[-,]' '{ print $2 }')
C=$(echo "$ALL" | awk -F'[-,]' '{ print $NF }')
DIR=/run/rqb-pairs
CONF=/tmp/pairs.conf
LOG=/tmp/pairs.daemon.log
LB=/sys/fs/cgroup/cpuset/cpuset.sched_load_balance
problems=0
mkdir -p "$DIR"

echo "INFO kernel $(uname -r), CPUs $ALL, LLC0 $LLC0, hogs on $A $B $C, rounds $ROUNDS, ${SECS}s a case"
[ "$LLC0" != "$ALL" ] || { echo "PROBLEM: one LLC only ($LLC0)"; exit 1; }
[ -w "$LB" ] || { echo "PROBLEM: no cgroup v1 cpuset to turn the kernel's balancing off"; exit 1; }
echo 0 >"$LB"

up() { cut -d' ' -f1 /proc/uptime; }

# pair k cpu: two shells on cpu, each waking the other in turn; the first counts its
# round trips once /tmp/pairs.go appears, until /tmp/pairs.stop does.
pair() {
	f=/tmp/pairs.fifo.$1
	rm -f "$f".1 "$f".2 /tmp/pairs.count."$1"
	mkfifo "$f".1 "$f".2
	taskset -c "$2" sh -c "exec 3<>$f.2 4<>$f.1; n=0
		while [ ! -e /tmp/pairs.stop ]; do echo x >&4; read -r y <&3
			[ -e /tmp/pairs.go ] && n=\$((n + 1)); done
		echo \$n >/tmp/pairs.count.$1; echo q >&4" &
	a=$!
	taskset -c "$2" sh -c "exec 3<>$f.1 4<>$f.2
		while read -r y <&3 && [ \"\$y\" = x ]; do echo x >&4; done" &
	PIDS="$PIDS $a $!"
	PAIRS="$PAIRS $a:$!"
}

# seen_pairs: the daemon's record lists every pair's tasks with each other as partner.
seen_pairs() {
	for p in $PAIRS; do
		grep -q "^task ${p%:*} .* partner=${p#*:}@" /tmp/pairs.rec || return 1
		grep -q "^task ${p#*:} .* partner=${p%:*}@" /tmp/pairs.rec || return 1
	done
}

# pinned_llc pid: the LLC of the daemon's last pin of pid, or 0 (where it began).
pinned_llc() {
	grep " pin tid=$1 " "$LOG" | tail -n1 | sed -n 's/.* llc=[0-9]*->\([0-9]*\) .*/\1/p' |
		grep . || echo 0
}

# split: the pairs whose members' last pins put them in two LLCs.
split() {
	n=0
	for p in $PAIRS; do
		[ "$(pinned_llc "${p%:*}")" = "$(pinned_llc "${p#*:}")" ] || n=$((n + 1))
	done
	echo $n
}

run() { # round case
	rm -f /tmp/pairs.go /tmp/pairs.stop
	HOGS=
	for c in $A $B $C; do
		taskset -c "$c" sh -c 'while :; do :; done' &
		HOGS="$HOGS $!"
	done
	PIDS=
	PAIRS=
	pair 1 "$A"
	pair 2 "$B"
	# Two CPUs first: the kernel records who wakes whom only for a task that may run
	# on more than one.
	for p in $PIDS; do taskset -pc "$LLC0" "$p" >/dev/null; done
	pins=-
	splits=-
	if [ "$2" != A ]; then
		printf '[daemon]\njournal_dir = %s\nctl_socket = %s/ctl.sock\n[balance]\nkeep_pairs = %s\n' \
			"$DIR" "$DIR" "$([ "$2" = B ] && echo yes || echo no)" >"$CONF"
		: >"$LOG"
		rm -f /tmp/pairs.rec
		rqbalanced -f -c "$CONF" --record /tmp/pairs.rec >>"$LOG" 2>&1 &
		DPID=$!
		i=0
		while ! grep -q "running: sampler" "$LOG" && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
		grep -q "running: sampler" "$LOG" || { echo "PROBLEM: the daemon did not start"; problems=$((problems + 1)); }
		# B: its sampler has seen both pairs (who wakes whom, from sched_waking) before they may
		# move, as in t_pairs; C reads no pairs: a second of ticks.
		if [ "$2" = B ]; then
			i=0
			while ! seen_pairs && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
			seen_pairs || { echo "PROBLEM: the daemon did not see both pairs in 30 s"; problems=$((problems + 1)); }
		else
			sleep 1
		fi
	fi
	for p in $PIDS; do taskset -pc "$ALL" "$p" >/dev/null; done
	: >/tmp/pairs.go
	sleep "$SECS"
	: >/tmp/pairs.stop
	for p in $PIDS; do wait "$p"; done
	if [ "$2" != A ]; then
		kill -TERM "$DPID"
		wait "$DPID" || { echo "PROBLEM: daemon exit $? after SIGTERM"; problems=$((problems + 1)); }
		pins=$(grep -c ' pin tid=' "$LOG")
		splits=$(split)
		grep ' pin tid=' "$LOG" | sed 's/^/PIN /'
	fi
	for p in $HOGS; do kill -KILL "$p"; wait "$p" 2>/dev/null; done
	echo "ROW $1 $2 trips=$(($(cat /tmp/pairs.count.1) + $(cat /tmp/pairs.count.2))) pins=$pins split=$splits pairs=$(echo $PAIRS | tr ' ' ,)"
}

r=1
while [ $r -le "$ROUNDS" ]; do
	case $((r % 3)) in
	1) run $r A; run $r B; run $r C ;;
	2) run $r B; run $r C; run $r A ;;
	0) run $r C; run $r A; run $r B ;;
	esac
	r=$((r + 1))
done
echo 1 >"$LB"
echo "INFO done, $problems problem(s)"
[ "$problems" = 0 ]
