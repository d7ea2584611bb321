# What a value's weight buys on a kernel that splits a group's weight among the CPUs it
# runs on (issue #51): 4 busy hogs at -5, 4 at 5 and 4 untouched on the 4 vCPUs, on
# cgroup2, through the daemon, get the shares of CPU time the nice ratio promises,
# 3121 : 1024 : 335 (70 / 23 / 7 %), within 5 points. Before the classes were weighed
# for their busy tasks, 6.1 gave 38 / 55 / 6: each -5 hog competed, on its CPU, with a
# quarter of its class's weight. Shares of CPU time are a behaviour TCG shows
# faithfully, unlike timings. On 7.3 the test runs in the mode the kernel booted in
# (concur: it multiplies a group's split weight by its busy tasks, one short, 3 for 4
# hogs; unscaled -5 got 60 to 65 %, now the daemon undoes the 3 with 4/3) and again in
# smp (split, scaled as on 6.1); both are checked within 5 points.
# Then the same hogs at -10 and 10, beside the untouched and 4 more at 19, with
# boost_cpu_pct = 80, which caps -10's weight at 1024 x 80 / 20 = 4096 a CPU against
# 1024, 110 and 15: the shares rqbalanced(8) promises, 78 / 20 / 2 / 0.3 %, -10's and
# the untouched's within 5 points, 10's at most 7 % and 19's below 10's (on 7.3 in
# smp, then back in the mode it booted in).
# The guest's v1 cpu hierarchy is unmounted for the test and mounted again after.
# Four windows of 30 s and their warm-ups on 7.3, each up to a minute beside another
# guest: more than a boot's 300 s.
# limit: 480
. /tests/lib.sh
NCPU=$(list_len "$ALL")
[ "$NCPU" -ge 4 ] || { echo "needs 4 CPUs, the guest has $NCPU"; exit 77; }
use_cgroup2 77
use_debugfs
# One LLC group for the daemon: no pins, only the latency half and the kernel's balancing.
DAEMON_CONF='[balance]
min_llc_cores = 1024
[latency]
boost_cpu_pct = 80'
start_daemon
check "the daemon runs" wait_running
check "with its classes in cgroup2" grep -q "class cgroups in $V2 (cgroup2)" "$LOG"
# One hog of each kind on each CPU: the class still spans the 4 CPUs (the daemon weighs
# it for 4), and the kernel's balancing of 12 hogs on 4 CPUs cannot blur the weights
# (unpinned, 7.3's smp once gave -5 65 %, at the edge, from one placement).
NEG="" POS="" PLAIN=""
for c in 0 1 2 3; do
	hog $c; NEG="$NEG $!"
	hog $c; POS="$POS $!"
	hog $c; PLAIN="$PLAIN $!"
done
for p in $NEG; do rqctl set -l -5 -p "$p" >/dev/null || fail "rqctl set -l -5 -p $p"; done
for p in $POS; do rqctl set -l 5 -p "$p" >/dev/null || fail "rqctl set -l 5 -p $p"; done
ok "4 hogs at -5 ($NEG), 4 at 5 ($POS), 4 untouched ($PLAIN)"


# measure LABEL SPLIT PHASE: the groups' shares over a window of 30 s (TCG's vCPUs run
# in turn on a loaded host: a short window sees one CPU's luck). SPLIT (yes or no):
# whether the kernel scales a group's weight by what it runs (every mode but up), and
# the daemon undoes it: then the shares are checked against what the values promise;
# else the classes keep their value's weight and the shares keep their order. PHASE 5:
# -5, untouched and 5 (70 / 23 / 7 within 5 points); PHASE 10: -10 (capped), untouched,
# 10 and 19 (78 / 20 within 5 points, 10 at most 7 %, 19 below 10). The daemon first
# follows the busy hogs for 50 ticks (rqsync), past its 2 s hold, then 10 s more let
# the kernel's load averages (its 32 ms half-life) and balancing settle on the new
# weights before the window opens.
measure() {
	local t0 t1 n u p z t FULL=""
	# concur and tasks multiply by a count the kernel rounds down from its tasks'
	# runnable averages: N - 1 for N busy tasks, which the daemon undoes, but N while
	# every one sits at a full average, which then leaves a class 4/3 of its weight
	# here (-5 75 %, -10 83 %; seen once, in concur after up). Both are accepted there;
	# the entity weight read back tells the unscaled (3/4) apart.
	case $1 in concur|tasks|unread) FULL=yes ;; esac
	rqsync 50
	sleep 10
	if [ "$3" = 5 ]; then
		echo "class weights: -5 $(weight -5), 5 $(weight 5)"
	else
		echo "class weights: -10 $(weight -10), 10 $(weight 10), 19 $(weight 19)"
	fi
	t0="$(cputime $NEG) $(cputime $PLAIN) $(cputime $POS) $(cputime $POS19)"
	sleep 30
	t1="$(cputime $NEG) $(cputime $PLAIN) $(cputime $POS) $(cputime $POS19)"
	set -- "$1" "$2" "$3" $t0 $t1
	n=$((${8} - $4)) u=$((${9} - $5)) p=$((${10} - $6)) z=$((${11} - $7))
	t=$((n + u + p + z))
	[ "$t" -gt 0 ] || fail "$1: the hogs used no CPU time"
	if [ "$3" = 5 ]; then
		echo "SHARES $1 kernel $(uname -r) cgroup_mode $(mode_now): -5 $(pct $n $t) %, untouched $(pct $u $t) %, 5 $(pct $p $t) % ($t us)"
	else
		echo "SHARES $1 kernel $(uname -r) cgroup_mode $(mode_now): -10 $(pct $n $t) %, untouched $(pct $u $t) %, 10 $(pct $p $t) %, 19 $(pct $z $t) % ($z of $t us)"
	fi
	echo "entity weights (cpu class:weight):$(entity_weights)"
	if [ "$3" = 10 ]; then
		n=$(pct $n $t) u=$(pct $u $t) p=$((1000 * p / t)) z=$((1000 * z / t))
		if [ "$2" = no ]; then
			check "$1: -10 gets more than the untouched, they more than 10" ordered $n $u $((p / 10))
			check "$1: 19 gets less than 10 ($z, $p per mille)" [ $z -lt $p ]
			return
		fi
		if [ -n "$FULL" ]; then
			[ -r /sys/kernel/debug/sched/debug ] &&
				check "$1: the kernel gives -10's class, capped, 4096 on each CPU, or 4/3 of it" \
					entity_ok -10 4096 5461
			check "$1: the hogs at -10, capped, get 78 % within 5 points, or 83 % ($n %)" in_range $n 73 88
			check "$1: the untouched get 20 % within 5 points, or 15 % ($u %)" in_range $u 10 25
		else
			[ -r /sys/kernel/debug/sched/debug ] &&
				check "$1: the kernel gives -10's class, capped, 4096 on each CPU" entity_ok -10 4096
			check "$1: the hogs at -10, capped, get 78 % within 5 points ($n %)" in_range $n 73 83
			check "$1: the untouched get 20 % within 5 points ($u %)" in_range $u 15 25
		fi
		check "$1: the hogs at 10 get at most 7 % ($p per mille)" [ $p -le 70 ]
		check "$1: the hogs at 19 get less than those at 10 ($z per mille)" [ $z -lt $p ]
		return
	fi
	n=$(pct $n $t) u=$(pct $u $t) p=$(pct $p $t)
	if [ "$2" = no ]; then
		check "$1: the classes keep their value's weight (305, 33)" [ "$(weight -5) $(weight 5)" = "305 33" ]
		check "$1: -5 gets more than the untouched, they more than 5" ordered $n $u $p
		return
	fi
	if [ -n "$FULL" ]; then
		if [ -r /sys/kernel/debug/sched/debug ]; then
			check "$1: the kernel gives -5's class 3121 on each CPU, or 4/3 of it" entity_ok -5 3121 4161
			check "$1: the kernel gives 5's class 335 on each CPU, or 4/3 of it" entity_ok 5 335 447
		fi
		check "$1: the hogs at -5 get 70 % within 5 points, or 75 % ($n %)" in_range $n 65 80
		check "$1: the untouched get 23 % within 5 points, or 19 % ($u %)" in_range $u 14 28
	else
		if [ -r /sys/kernel/debug/sched/debug ]; then
			check "$1: the kernel gives -5's class 3121 on each CPU" entity_ok -5 3121
			check "$1: the kernel gives 5's class 335 on each CPU" entity_ok 5 335
		fi
		check "$1: the hogs at -5 get 70 % within 5 points ($n %)" in_range $n 65 75
		check "$1: the untouched get 23 % within 5 points ($u %)" in_range $u 18 28
	fi
	check "$1: the hogs at 5 get 7 % within 5 points ($p %)" in_range $p 2 12
}
# to MODE: 7.3's cgroup_mode set to MODE, and the daemon following it.
to() {
	echo "$1" >$MODE_FILE || fail "cannot set cgroup_mode $1"
	check "the daemon follows cgroup_mode $1" wait_log "cgroup_mode is $1 now"
}

# Scaled in every mode but up (the whole weight on each CPU); a 7.3 whose mode is
# unreadable is taken at its default, concur, by the daemon too.
POS19=""
if [ "$BOOT_MODE" = up ]; then
	FIRST=up SPLIT=no
elif kver_ge 7 3; then
	FIRST=${BOOT_MODE:-unread} SPLIT=yes
else
	FIRST=split SPLIT=yes
fi
measure "$FIRST" $SPLIT 5
SWITCH=""
if [ -n "$BOOT_MODE" ] && [ "$BOOT_MODE" != smp ] && grep -qw smp $MODE_FILE; then
	SWITCH=yes
	to smp
	measure smp yes 5
fi
set -- $NEG
rqctl explain -p "$1" 2>&1 | grep class_weight
# The second phase: the same hogs at -10 and 10, 4 more at 19.
for c in 0 1 2 3; do hog $c; POS19="$POS19 $!"; done
for p in $NEG; do rqctl set -l -10 -p "$p" >/dev/null || fail "rqctl set -l -10 -p $p"; done
for p in $POS; do rqctl set -l 10 -p "$p" >/dev/null || fail "rqctl set -l 10 -p $p"; done
for p in $POS19; do rqctl set -l 19 -p "$p" >/dev/null || fail "rqctl set -l 19 -p $p"; done
ok "4 hogs at -10 ($NEG), 4 at 10 ($POS), 4 at 19 ($POS19), 4 untouched ($PLAIN)"
if [ -n "$SWITCH" ]; then
	measure smp yes 10
	to "$BOOT_MODE"
fi
measure "$FIRST" $SPLIT 10
check "clean stop" stop_daemon TERM
cleanup
