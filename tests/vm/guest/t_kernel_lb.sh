# With the kernel's own balancing on, rqbalanced and the kernel work side by side:
# four hogs released from LLC 0 end up two per LLC, no task is pinned twice and
# none is moved back and forth.
. /tests/lib.sh
for i in 1 2 3 4; do hog 0-1; done
sleep 1
start_daemon
check "the daemon runs" wait_log "running: sampler proc" 30
release 0-3
sleep 5
on1=0
for p in $HOGS; do
	echo "hog $p: allowed $(allowed "$p"), cpu $(lastcpu "$p")"
	[ "$(lastcpu "$p")" -ge 2 ] && on1=$((on1 + 1))
done
check "two hogs per LLC" [ $on1 -eq 2 ]
pins=$(grep -c ' pin tid=' "$LOG")
uniq=$(grep ' pin tid=' "$LOG" | sed 's/.*pin tid=\([0-9]*\).*/\1/' | sort -u | wc -l)
echo "pins: $pins, tasks pinned: $uniq"
check "at most two pins" [ "$pins" -le 2 ]
check "no task pinned twice" [ "$pins" -eq "$uniq" ]
check "clean stop" stop_daemon TERM
for p in $HOGS; do
	check "hog $p has 0-3" [ "$(allowed "$p")" = 0-3 ]
done
cleanup
