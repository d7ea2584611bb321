# Beside the kernel's own cache-aware scheduling (7.2 and later, on by default), the
# daemon never splits what the kernel keeps together (issue #42). A process of two
# threads that share a buffer (shareload) and one CPU hog on two LLCs of two CPUs: the
# kernel keeps the two threads in one LLC. Measured over the same window first with no
# daemon, then with the daemon (default config: spread on):
# - no pin names either thread, and their affinity stays every CPU;
# - their migrations (se.nr_migrations in /proc/PID/task/TID/sched), and the samples
#   that find them in two LLCs, are printed side by side and bounded: no more than
#   without the daemon, give or take what the daemon's own wake-ups every tick make the
#   kernel's balancer do (0 to 8 migrations in a window of this size were seen from
#   runs that differed only by chance; SLACK below). A fight would show as pins.
# Then, with the daemon still running, llc_balancing switched off and on in debugfs:
# it says rqbalance places alone, then that the kernel does again (rqctl status too).
# The rules acting as before with it off is what t_spread, t_together, t_apart and
# t_pairs show on these kernels (lib.sh's lb_off switches it off).
. /tests/lib.sh
need_llcs
if ! kconfig_has SCHED_CACHE; then
	echo "no cache-aware scheduling in this kernel (CONFIG_SCHED_CACHE off)"
	exit 77
fi
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
EN=/sys/kernel/debug/sched/llc_balancing/enabled
[ -w "$EN" ] || fail "no $EN"
echo 1 >"$EN"
SAMPLES=30
SLACK=10

SL=""
migrations() { awk '/nr_migrations/ { print $3; exit }' "/proc/$P/task/$1/sched"; }
# child_of pid: the child process of pid (shareload's worker).
child_of() {
	local d
	for d in /proc/[0-9]*; do
		[ "$(awk '{ print $4 }' "$d/stat" 2>/dev/null)" = "$1" ] && { echo "${d#/proc/}"; return 0; }
	done
	return 1
}
two_threads() { [ "$(ls "/proc/$P/task" 2>/dev/null | wc -l)" -eq 2 ]; }
# workload: the hog and shareload; sets P (the worker process) and A, B (its threads).
workload() {
	hog "$ALL"
	shareload --procs 1 --threads 2 --kib 2048 --warmup 0 --seconds 3600 >/dev/null &
	SL=$!
	HOGS="$HOGS $SL"
	poll_until 600 child_of "$SL" >/dev/null || fail "shareload started no worker"
	P=$(child_of "$SL")
	HOGS="$HOGS $P"
	poll_until 600 two_threads || fail "shareload's worker $P did not start two threads"
	set -- $(ls "/proc/$P/task")
	A=$1 B=$2
}
# window: SAMPLES samples half a second apart; sets MIG (both threads' migrations in
# it) and SPLIT (samples with the threads in two LLCs).
window() {
	local a0 b0 i=0 la lb
	a0=$(migrations "$A")
	b0=$(migrations "$B")
	SPLIT=0
	while [ $i -lt $SAMPLES ]; do
		sleep 0.5
		la=$(llc_of "$(lastcpu "$P/task/$A")")
		lb=$(llc_of "$(lastcpu "$P/task/$B")")
		[ "$la" = "$lb" ] || SPLIT=$((SPLIT + 1))
		i=$((i + 1))
	done
	MIG=$(($(migrations "$A") - a0 + $(migrations "$B") - b0))
}

workload
window
MIG0=$MIG SPLIT0=$SPLIT
echo "no daemon: threads $A $B of $P: $MIG0 migrations, apart in $SPLIT0 of $SAMPLES samples"
start_daemon
check "the daemon runs" wait_running
check "it finds the kernel's cache-aware scheduling on" \
	wait_log "placement: the kernel's cache-aware scheduling is on"
rqsync 2
window
echo "daemon: threads $A $B of $P: $MIG migrations, apart in $SPLIT of $SAMPLES samples"
grep ' pin tid=' "$LOG"
check "no pin names a thread of $P" sh -c "! grep -q ' pin tid=[0-9]* tgid=$P ' '$LOG'"
check "thread $A keeps every CPU" [ "$(allowed "$P/task/$A")" = "$ALL" ]
check "thread $B keeps every CPU" [ "$(allowed "$P/task/$B")" = "$ALL" ]
check "migrations: $MIG with the daemon, $MIG0 without (slack $SLACK)" \
	[ "$MIG" -le $((MIG0 + SLACK)) ]
check "apart in $SPLIT samples with the daemon, $SPLIT0 without (slack 5)" \
	[ "$SPLIT" -le $((SPLIT0 + 5)) ]
echo 0 >"$EN"
check "llc_balancing off: it says rqbalance places alone" \
	wait_log "placement: nothing else places tasks by cache now"
check "rqctl status: placement_by rqbalance" sh -c "rqctl status | grep -q '^placement_by rqbalance$'"
echo 1 >"$EN"
check "on again: the kernel places too" \
	wait_log "placement: the kernel's cache-aware scheduling is on" 2
check "rqctl status: placement_by kernel" sh -c "rqctl status | grep -q '^placement_by kernel: '"
check "clean stop" stop_daemon TERM
umount /sys/kernel/debug
cleanup
