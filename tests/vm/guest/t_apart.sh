# latency_apart, live: a hog with latency-nice -10 on LLC 0 and a batch hog (+10)
# beside it: the -10 task is kept on LLC 0 (why=latency) and the batch task pinned to
# the other LLC (why=apart); when the -10 task exits, the batch task gets every CPU
# back (why=latency_gone). Then the same with a -10 task that mostly sleeps (a shell
# waking every 20 ms), which a sample of the run queues seldom lists: the daemon's
# looks in /proc see where it runs. The kernel's own balancing is off, so that
# nothing moves but what the daemon pins.
. /tests/lib.sh
need_llcs
A=${LLC0%%[,-]*}
B=$(echo "$LLC0" | awk -F'[-,]' '{ print $2 }')
C=$(echo "$ALL" | awk -F'[-,]' '{ print $NF }')
LLC1=$(llc_of "$C")

pin_of() { grep -q " pin tid=$1 .*why=$2" "$LOG"; }
not_in_list() { ! in_list "$1" "$2"; }
unpin_of() { grep -q " unpin tid=$1 .*why=$2" "$LOG"; }

lb_off
taskset -pc "$LLC0" $$ >/dev/null
DAEMON_CONF="sampler = bpf
$LONG_PINS
latency_apart = yes"
RECORD=/tmp/$NAME.record
start_daemon --record "$RECORD"
check "the daemon runs" wait_running
check "it says latency_apart is on" grep -q "features: placement: latency_apart on" "$LOG"
hog "$A"
LAT=$(echo $HOGS)
hog "$B"
BATCH=${HOGS##* }
check "rqctl set -l -10 the latency task" rqctl set -l -10 -p "$LAT"
check "rqctl set -l 10 the batch task" rqctl set -l 10 -p "$BATCH"
release "$ALL"
if ! poll_until 1200 pin_of "$BATCH" apart; then
	grep -E ' (un)?pin tid=' "$LOG"
	fail "the batch task was not pinned apart"
fi
rqsync
grep -E ' (un)?pin tid=' "$LOG"
check "the latency task is kept on LLC 0 ($(allowed "$LAT"))" [ "$(allowed "$LAT")" = "$LLC0" ]
check "the batch task is pinned to LLC 1 ($(allowed "$BATCH"))" [ "$(allowed "$BATCH")" = "$LLC1" ]
check "and runs there" in_list "$(lastcpu "$BATCH")" "$LLC1"
# Kept: thirty more ticks give nothing back.
rqsync 30
check "nothing is given back while the latency task runs" sh -c "! grep -q ' unpin tid=' '$LOG'"
kill -KILL "$LAT"
wait "$LAT" 2>/dev/null
HOGS=$BATCH
if ! poll_until 1200 unpin_of "$BATCH" latency_gone; then
	grep -E ' (un)?pin tid=' "$LOG"
	fail "the batch task was not given back after the latency task exited"
fi
rqsync
check "the batch task has every CPU again ($(allowed "$BATCH"))" [ "$(allowed "$BATCH")" = "$ALL" ]

# A -10 task that sleeps between short bursts, on LLC 0 where the batch task runs.
taskset -pc "$A" "$BATCH" >/dev/null
taskset -c "$A" sh -c 'while :; do usleep 20000; done' &
SLEEPY=$!
HOGS="$HOGS $SLEEPY"
check "rqctl set -l -10 the sleepy task" rqctl set -l -10 -p "$SLEEPY"
rqsync 5
release "$ALL"
if ! poll_until 1200 sh -c "[ \$(grep -c ' pin tid=$BATCH .*why=apart' '$LOG') -ge 2 ]"; then
	grep -E ' (un)?pin tid=' "$LOG"
	grep "^latency $SLEEPY " "$RECORD" | tail -n 3
	fail "the batch task was not pinned away from the sleepy -10 task's LLC"
fi
rqsync
grep -E ' (un)?pin tid=' "$LOG" | tail -n 3
ba=$(allowed "$BATCH")
sc=$(lastcpu "$SLEEPY")
check "the batch task is pinned to one LLC ($ba)" sh -c "[ '$ba' = '$LLC0' ] || [ '$ba' = '$LLC1' ]"
check "not the sleepy task's (last on CPU $sc)" not_in_list "$sc" "$ba"
check "the record saw the sleepy task run" grep -q "^latency $SLEEPY [0-9]* -10 ran=" "$RECORD"
check "SIGTERM stops it cleanly" stop_daemon TERM
taskset -pc "$ALL" $$ >/dev/null
cleanup
