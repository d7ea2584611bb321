# 2 x |LLC 0| CPU hogs on LLC 0, the other LLCs idle, the kernel's own balancing
# off so the imbalance stays: rqbalanced soft-pins |LLC 0| of them to other LLCs,
# and SIGTERM gives every affinity back.
. /tests/lib.sh
need_llcs
lb_off
pile_on_llc0
for p in $HOGS; do
	check "hog $p on LLC 0 before the daemon starts (cpu $(lastcpu "$p"))" on_llc0 "$p"
done
DAEMON_CONF=$LONG_PINS
RECORD=/tmp/t_spread.rec
start_daemon --record "$RECORD"
check "the daemon runs" wait_running
check "$NLLC0 hogs have a pin planned" wait_hog_pins "$NLLC0"
for p in $HOGS; do echo "hog $p: allowed $(allowed "$p"), cpu $(lastcpu "$p")"; done
check "$NLLC0 hogs run on other LLCs, each pinned to its LLC" [ "$(count_pinned)" -eq "$NLLC0" ]
k=0
for p in $HOGS; do [ "$(allowed "$p")" = "$ALL" ] && on_llc0 "$p" && k=$((k + 1)); done
check "the other $NLLC0 stay on LLC 0, untouched ($ALL)" [ $k -eq "$NLLC0" ]
# Thirty whole ticks, three times min_residency_ms: time for any churn to show.
rqsync 30
grep ' pin tid=' "$LOG"
check "no more than $NLLC0 pins (no churn)" [ "$(grep -c ' pin tid=' "$LOG")" -eq "$NLLC0" ]
check "SIGTERM stops it cleanly" stop_daemon TERM
for p in $HOGS; do
	check "hog $p restored to $ALL" [ "$(allowed "$p")" = "$ALL" ]
done
cleanup
