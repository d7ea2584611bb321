# The guest side of bench/cgmove (busybox sh, run by tests/vm/run --bench as PID 1's
# child, under the name "ash"): how soon after exec a rule's value is in force, first
# knob (the nice, from sched_setattr) and all knobs (the class cgroup), with the class
# cgroups on each of these hierarchies, in turn within one boot:
#   v1    the v1 cpu hierarchy (the guest's default; cgroup2 mounted beside it, no
#         controllers, no favordynmods: this project's host)
#   v2    cgroup2 alone with the cpu controller, mounted without favordynmods
#   v2f   the same cgroup2 remounted with favordynmods
#   v1f   the v1 cpu hierarchy again, with the cgroup2 beside it remounted with
#         favordynmods (cgroup_threadgroup_rwsem, which an attach write-locks, is one
#         for every hierarchy, and favordynmods on any root keeps it in its slow mode)
# bench/cgmove puts ROUNDS, SPAWNS, EXEC_GAP (and MODES, MOVES, GAP) in front of
# this file.
#
# Prints per run:
#   ROW round mode first_p50 first_p99 first_max all_p50 all_p99 all_max seen spawns
#       poll_us first_spawn_us drc=RC
#   MOVE round mode p50_us p99_us max_us moves
# (MOVE: the kernel's cost of one move without the daemon, bench/cgattach writing a
# sleeping process's pid to cgroup.procs, or tasks on v1, MOVES times, GAP ms apart),
# "INFO ..." lines, and "PROBLEM: ..." for whatever went wrong.
ROUNDS=${ROUNDS:-3}
SPAWNS=${SPAWNS:-150}
MODES=${MODES:-v1 v2 v2f v1f}
MOVES=${MOVES:-60}
GAP=${GAP:-50}
# execlat's pause between spawns: a move within about two grace periods of the last
# one finds the lock still in the state that one waited for, and waits for nothing;
# a rule's program is rarely exec'd that often.
EXEC_GAP=${EXEC_GAP:-100}
V1=/sys/fs/cgroup/cpu
V2=/sys/fs/cgroup/unified
DIR=/run/rqb-cgmove
CONF=/tmp/cgmove.conf
LOG=/tmp/cgmove.daemon.log
SLEEPER=/tmp/sleep
CLASS=rqbalance-lat-20
DPID=
problems=0

problem() { echo "PROBLEM: $*"; problems=$((problems + 1)); }
up() { cut -d' ' -f1 /proc/uptime; }

# poll_until tenths command...: for what the kernel does in its own time (a v1
# hierarchy lets its controller go a moment after its unmount); a safety net only.
poll_until() {
	n=$1
	shift
	i=0
	while [ "$i" -lt "$n" ]; do
		"$@" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	"$@"
}

v1_mounted() { grep -q " $V1 cgroup " /proc/mounts; }
# Super options are mountinfo's last field: what the kernel applies, not what was asked.
v2_opts() { awk -v d="$V2" '$5 == d { print $NF }' /proc/self/mountinfo; }
v2_fdm() { v2_opts | tr ',' '\n' | grep -qx favordynmods; }
v2_cpu() { grep -qw cpu "$V2/cgroup.controllers"; }
mount_v1() { mount -t cgroup -o cpu cgroup "$V1" 2>/dev/null; }

# set_mode MODE: the hierarchies as MODE wants them, checked; 1 (and a PROBLEM) if not.
set_mode() {
	case $1 in
	v1) want_v1=1 fdm= ;;
	v2) want_v1=0 fdm= ;;
	v2f) want_v1=0 fdm=,favordynmods ;;
	v1f) want_v1=1 fdm=,favordynmods ;;
	*) problem "unknown mode $1"; return 1 ;;
	esac
	# On: a remount, whatever cgroups and tasks the tree holds. Off: busybox's remount
	# adds the options /proc/mounts shows, favordynmods among them, so a new mount
	# (each mount of cgroup2 applies exactly its options; the tree and its tasks stay).
	if [ -n "$fdm" ] && ! v2_fdm && ! mount -o remount,favordynmods "$V2"; then
		problem "$1: mount -o remount,favordynmods $V2 failed"
		return 1
	fi
	if [ -z "$fdm" ] && v2_fdm && ! { umount "$V2" && mount -t cgroup2 none "$V2"; }; then
		problem "$1: cannot mount $V2 again without favordynmods"
		return 1
	fi
	if [ "$want_v1" = 1 ]; then
		# cgroup2 gives cpu up once no cgroup of its has it (the classes are gone).
		v2_cpu && echo -cpu >"$V2/cgroup.subtree_control"
		v1_mounted || poll_until 600 mount_v1 || { problem "$1: cannot mount the v1 cpu hierarchy"; return 1; }
	else
		# A v1 hierarchy is destroyed at its unmount only if it has no child then; a
		# group removed a moment before may still be dying, and the hierarchy, kept,
		# holds cpu unseen. Mounted again it is the same one: unmount it once more.
		k=0
		while v1_mounted && [ $k -lt 20 ]; do
			umount "$V1"
			poll_until 30 v2_cpu && break
			mount_v1
			k=$((k + 1))
		done
		[ $k = 0 ] || echo "INFO $1: the v1 cpu hierarchy unmounted $((k + 1)) times before cgroup2 had cpu"
		poll_until 600 v2_cpu || { problem "$1: cgroup2 has no cpu controller: $(cat "$V2/cgroup.controllers")"; return 1; }
	fi
	if [ "$want_v1" = 1 ] && ! v1_mounted; then problem "$1: v1 cpu not mounted"; return 1; fi
	if [ "$want_v1" = 0 ] && v1_mounted; then problem "$1: v1 cpu still mounted"; return 1; fi
	if [ -n "$fdm" ] && ! v2_fdm; then problem "$1: favordynmods not in force: $(v2_opts)"; return 1; fi
	if [ -z "$fdm" ] && v2_fdm; then problem "$1: favordynmods still in force: $(v2_opts)"; return 1; fi
	return 0
}

start_daemon() {
	: >"$LOG"
	rqbalanced -f -c "$CONF" >>"$LOG" 2>&1 &
	DPID=$!
	i=0
	while [ $i -lt 1200 ]; do
		grep -q "running: sampler" "$LOG" && return 0
		[ -e "/proc/$DPID" ] || break
		sleep 0.1
		i=$((i + 1))
	done
	problem "the daemon did not start; its log:"
	sed 's/^/  /' "$LOG"
	kill -KILL "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=
	return 1
}

stop_daemon() {
	kill -TERM "$DPID"
	wait "$DPID"
	DRC=$?
	DPID=
	[ "$DRC" = 0 ] || { problem "daemon exit $DRC after SIGTERM; its log:"; tail -n 20 "$LOG" | sed 's/^/  /'; }
}

# The kernel's own cost of one isolated move, without the daemon: cgattach moves a
# sleeping child between two groups of the hierarchy in use, one write every GAP ms.
rm_groups() {
	rmdir "$1/cgm-a" "$1/cgm-b" 2>/dev/null
	[ ! -d "$1/cgm-a" ] && [ ! -d "$1/cgm-b" ]
}
move_bench() { # round mode
	if [ "$2" = v1 ] || [ "$2" = v1f ]; then root=$V1 file=tasks; else root=$V2 file=cgroup.procs; fi
	mkdir -p "$root/cgm-a" "$root/cgm-b"
	res=$(cgattach "$MOVES" "$GAP" "$root/cgm-a/$file" "$root/cgm-b/$file") ||
		problem "$2: cgattach failed"
	# The child's group empties once it is reaped; a moment later on v1.
	poll_until 100 rm_groups "$root" || problem "$2: cannot remove the move groups"
	echo "MOVE $1 $2 $res"
}

run() { # round mode
	set_mode "$2" || return
	move_bench "$1" "$2"
	start_daemon || return
	grep -m1 "latency: class cgroups" "$LOG" | sed "s/^/INFO $2 daemon: /"
	# The first spawn also makes the class group: apart, outside the percentiles.
	set -- "$1" "$2" $(execlat --cgroup "$CLASS" --nice -20 --spawns 1 -- "$SLEEPER" 600)
	first=$5
	set -- "$1" "$2" $(execlat --cgroup "$CLASS" --nice -20 --spawns "$SPAWNS" --gap-ms "$EXEC_GAP" -- "$SLEEPER" 600)
	stop_daemon
	[ -d "$V1/$CLASS" ] || [ -d "$V2/$CLASS" ] && problem "$2: the class group was left behind"
	if [ $# != 12 ]; then
		problem "$2: execlat printed: $*"
		return
	fi
	# execlat: all_p50 all_p99 all_max seen spawns poll first_p50 first_p99 first_max first_seen
	[ "$6" = "$SPAWNS" ] && [ "${12}" = "$SPAWNS" ] || problem "$2: seen $6 (class) and ${12} (nice) of $SPAWNS spawns"
	echo "ROW $1 $2 $9 ${10} ${11} $3 $4 $5 $6 $7 $8 $first drc=$DRC"
}

echo "INFO kernel $(uname -r), CPUs $(cat /sys/devices/system/cpu/online), rounds $ROUNDS, $SPAWNS spawns $EXEC_GAP ms apart, $MOVES moves $GAP ms apart, modes $MODES"
echo "INFO cgroup features: $(tr '\n' ' ' </sys/kernel/cgroup/features 2>/dev/null)"
mkdir -p "$V2"
mount -t cgroup2 none "$V2" || problem "cannot mount cgroup2"
echo "INFO cgroup2 as mounted: $(v2_opts)"
cp /bin/busybox "$SLEEPER"
printf '[daemon]\njournal_dir = %s\nctl_socket = %s/ctl.sock\nrules_dir =\n[rule bench]\nlatency_nice = -20\nexe = %s\n' \
	"$DIR" "$DIR" "$SLEEPER" >"$CONF"

# Does a remount with favordynmods take while cgroup2 holds a populated child? Once,
# before the rounds: a process in a group of its own, cpu enabled (no v1 cpu then).
if set_mode v2; then
	mkdir "$V2/cgm-busy"
	sleep 600 &
	s=$!
	echo "$s" >"$V2/cgm-busy/cgroup.procs"
	if mount -o remount,favordynmods "$V2" && v2_fdm; then
		echo "INFO remount,favordynmods with a task in $V2/cgm-busy: works ($(v2_opts))"
	else
		problem "remount,favordynmods with a task in a child group failed ($(v2_opts))"
	fi
	# Off again: busybox's plain remount passes the options it reads in /proc/mounts,
	# favordynmods with them; say whether the kernel takes nofavordynmods.
	if mount -o remount,nofavordynmods "$V2" 2>/tmp/cgm.err && ! v2_fdm; then
		echo "INFO remount,nofavordynmods, the task still there: off again ($(v2_opts))"
	else
		echo "INFO remount,nofavordynmods: not taken ($(v2_opts); $(cat /tmp/cgm.err))"
	fi
	set_mode v2 || problem "cannot mount cgroup2 again without favordynmods"
	kill -KILL "$s"
	wait "$s" 2>/dev/null
	rmdir "$V2/cgm-busy"
fi

r=1
while [ $r -le "$ROUNDS" ]; do
	# Odd rounds in the order given, even ones reversed: drift hits every mode alike.
	order=$MODES
	[ $((r % 2)) = 0 ] && order=$(echo "$MODES" | awk '{ for (i = NF; i > 0; i--) printf "%s ", $i }')
	for m in $order; do
		run $r "$m"
	done
	r=$((r + 1))
done
set_mode v1 >/dev/null
echo "INFO done, $problems problem(s)"
[ "$problems" = 0 ]
