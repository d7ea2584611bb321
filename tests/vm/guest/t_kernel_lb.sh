# With the kernel's own balancing on, rqbalanced and the kernel work side by side:
# hogs released from LLC 0 end up spread (no LLC with more hogs than CPUs while
# another has an idle CPU), no task is pinned twice and none is moved back and forth.
. /tests/lib.sh
need_llcs
n=$((2 * NLLC0))
i=0
while [ $i -lt $n ]; do hog "$LLC0"; i=$((i + 1)); done
DAEMON_CONF=$LONG_PINS
start_daemon
check "the daemon runs" wait_running
release "$ALL"
# on_llc0_count: how many hogs run on LLC 0 now.
on_llc0_count() {
	local k=0 p
	for p in $HOGS; do on_llc0 "$p" && k=$((k + 1)); done
	echo $k
}
# Who spreads them, the kernel or the daemon, is not for this test to say, and the
# kernel's part is not the daemon's doing (nor is a moment when its balancing has
# not yet evened out what the daemon did): polled, with a limit only as a safety net.
spread_out() { [ "$(on_llc0_count)" -le "$NLLC0" ]; }
wait_spread() { poll_until 1200 spread_out; }
wait_spread
# Then thirty whole ticks, three times min_residency_ms: time for any churn to show.
rqsync 30
wait_spread
on0=$(on_llc0_count)
for p in $HOGS; do echo "hog $p: allowed $(allowed "$p"), cpu $(lastcpu "$p")"; done
check "LLC 0 keeps no more hogs than CPUs ($on0 of $n on $NLLC0 CPUs)" [ "$on0" -le "$NLLC0" ]
pins=$(grep -c ' pin tid=' "$LOG")
uniq=$(grep ' pin tid=' "$LOG" | sed 's/.*pin tid=\([0-9]*\).*/\1/' | sort -u | wc -l)
echo "pins: $pins, tasks pinned: $uniq"
check "at most $NLLC0 pins" [ "$pins" -le "$NLLC0" ]
check "no task pinned twice" [ "$pins" -eq "$uniq" ]
check "clean stop" stop_daemon TERM
for p in $HOGS; do
	check "hog $p has $ALL" [ "$(allowed "$p")" = "$ALL" ]
done
cleanup
