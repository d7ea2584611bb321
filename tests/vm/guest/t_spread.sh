# Four CPU hogs on LLC 0 (CPUs 0-1), LLC 1 idle, the kernel's own balancing off so
# the imbalance stays: rqbalanced soft-pins two of them to LLC 1, and SIGTERM gives
# every affinity back.
. /tests/lib.sh
lb_off
for i in 1 2 3 4; do hog 0-1; done
sleep 1
release 0-3
sleep 1
for p in $HOGS; do
	check "hog $p still on LLC 0 without the daemon (cpu $(lastcpu "$p"))" on_llc0 "$p"
done
start_daemon
check "two pins planned" wait_log "pin tid=.*llc=0->1 cpus=2-3" 30
i=0
while [ "$(count_pinned)" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
for p in $HOGS; do echo "hog $p: allowed $(allowed "$p"), cpu $(lastcpu "$p")"; done
check "two hogs run on LLC 1, pinned to 2-3" [ "$(count_pinned)" -eq 2 ]
n=0
for p in $HOGS; do [ "$(allowed "$p")" = 0-3 ] && on_llc0 "$p" && n=$((n + 1)); done
check "the other two stay on LLC 0, untouched (0-3)" [ $n -eq 2 ]
sleep 1
check "no more than two pins (no churn)" [ "$(grep -c ' pin tid=' "$LOG")" -eq 2 ]
check "SIGTERM stops it cleanly" stop_daemon TERM
for p in $HOGS; do
	check "hog $p restored to 0-3" [ "$(allowed "$p")" = 0-3 ]
done
cleanup
