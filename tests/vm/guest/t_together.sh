# keep_together, live: a process of two busy threads, one started on each LLC, is
# held in one LLC (both threads pinned there, why=together); one of five busy
# threads, more than an LLC's two cores, is not; a stop gives the threads back
# the CPUs they had. The kernel's own balancing is off, so that nothing moves but
# what the daemon pins. Needs hwloc to report the L3's size (else nothing is held,
# as the rule says).
. /tests/lib.sh
need_llcs
rqbalanced --show-topology >/tmp/topology
cat /tmp/topology
if grep -q "^llc .* cache unknown" /tmp/topology; then
	echo "hwloc reports no L3 size in this guest: keep_together holds nothing"
	exit 77
fi
C=$(echo "$ALL" | awk -F'[-,]' '{ print $NF }')
LLC1=$(llc_of "$C")

# threads pid: the process's tids other than its first (the spinner's main thread
# waits; its workers spin).
threads() { ls "/proc/$1/task" | grep -v "^$1\$"; }
# spinners n: a spinner of n busy threads allowed every CPU (the test's shell is
# held on LLC 0); its pid in SP, added to HOGS.
spinners() {
	taskset -c "$ALL" spinner --sleepers 0 --busy "$1" &
	SP=$!
	HOGS="$HOGS $SP"
	poll_until 600 sh -c "[ \$(ls /proc/$SP/task | wc -l) -gt $1 ]" ||
		fail "spinner $SP did not start $1 threads"
}
together_pins() { grep -c " pin tid=[0-9]* tgid=$1 .*why=together" "$LOG"; }
pinned_together() { [ "$(together_pins "$1")" -ge "$2" ]; }

lb_off
taskset -pc "$LLC0" $$ >/dev/null
DAEMON_CONF="sampler = bpf
$LONG_PINS
keep_together = yes"
RECORD=/tmp/$NAME.record
start_daemon --record "$RECORD"
check "the daemon runs" wait_running
check "it says keep_together is on" grep -q "features: placement: keep_together on" "$LOG"

# Two busy threads, one on each LLC: with the kernel's balancing off they stay apart
# until the daemon holds them together.
spinners 2
set -- $(threads "$SP")
taskset -pc "${LLC0%%[,-]*}" "$1" >/dev/null
taskset -pc "$C" "$2" >/dev/null
# Settled where they were put, then free: the daemon sees a process split in two.
rqsync 5
taskset -pc "$ALL" "$1" >/dev/null
taskset -pc "$ALL" "$2" >/dev/null
if ! poll_until 1200 pinned_together "$SP" 2; then
	grep -E ' (un)?pin tid=' "$LOG"
	for t in "$@"; do echo "thread $t: allowed $(allowed "$SP/task/$t"), cpu $(lastcpu "$SP/task/$t")"; done
	fail "the two threads of $SP were not both held"
fi
rqsync
grep " pin tid=" "$LOG"
a1=$(allowed "$SP/task/$1")
a2=$(allowed "$SP/task/$2")
echo "threads $1 and $2: allowed $a1 and $a2"
check "both threads are held in one LLC" [ "$a1" = "$a2" ]
check "which is an LLC ($a1: $LLC0 or $LLC1)" sh -c "[ '$a1' = '$LLC0' ] || [ '$a1' = '$LLC1' ]"
check "the record carries the process's resident set" grep -q "^task $1 $SP .* rss=[0-9]" "$RECORD"
# Held: thirty more ticks pin nothing more and give nothing back.
rqsync 30
check "no thread is let go while it fits" sh -c "! grep -q 'unpin tid=[0-9]* tgid=$SP ' '$LOG'"
check "SIGTERM stops it cleanly" stop_daemon TERM
check "the stop gives both threads back $ALL" \
	sh -c "[ '$(allowed "$SP/task/$1")' = '$ALL' ] && [ '$(allowed "$SP/task/$2")' = '$ALL' ]"
kill -KILL "$SP"
wait "$SP" 2>/dev/null
HOGS=""

# Five busy threads, more than an LLC's cores: never held.
spinners 5
start_daemon
check "the daemon runs again" wait_running
rqsync 40
grep " pin tid=" "$LOG" || true
check "no thread of the five is held together" [ "$(together_pins "$SP")" -eq 0 ]
check "SIGTERM stops it cleanly" stop_daemon TERM
taskset -pc "$ALL" $$ >/dev/null
cleanup
