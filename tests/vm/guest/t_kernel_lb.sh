# With the kernel's own balancing on, rqbalanced and the kernel work side by side:
# hogs released from LLC 0 end up spread (no LLC with more hogs than CPUs while
# another has an idle CPU), no task is pinned twice and none is moved back and forth.
. /tests/lib.sh
need_llcs
n=$((2 * NLLC0))
i=0
while [ $i -lt $n ]; do hog "$LLC0"; i=$((i + 1)); done
sleep 1
start_daemon
check "the daemon runs" wait_log "running: sampler" 30
release "$ALL"
sleep 5
on0=0
for p in $HOGS; do
	echo "hog $p: allowed $(allowed "$p"), cpu $(lastcpu "$p")"
	on_llc0 "$p" && on0=$((on0 + 1))
done
check "LLC 0 keeps no more hogs than CPUs ($on0 of $n on $NLLC0 CPUs)" [ $on0 -le "$NLLC0" ]
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
