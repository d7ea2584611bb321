# A lone hog on CPU 0, every other CPU idle: it is never moved, however busy.
# Not on PREEMPT_RT: there the tick's softirq work, RCU callbacks and the console's
# printk run in per-CPU threads (ktimers/N, rcuc/N at SCHED_FIFO, pr/ttyS0), which the
# emulated guest shows runnable beside the hog in most samples (2 or 3 on its run queue,
# on CPU 0 as on CPU 3): no CPU has the hog alone, and the policy moves it to the idle
# LLC as its rules say for an overloaded one.
. /tests/lib.sh
if kconfig_has PREEMPT_RT; then
	echo "PREEMPT_RT: per-CPU threads run beside any hog, so none runs alone"
	exit 77
fi
lb_off
hog 0
release "$ALL"
RECORD=/tmp/$NAME.record
start_daemon --record "$RECORD"
check "the daemon runs" wait_running
# Thirty whole ticks: far more than the two in a row that make a lone overload count.
rqsync 30
p=$(echo $HOGS)
check "no pin planned" sh -c "! grep -q ' pin tid=' '$LOG'"
check "the hog keeps $ALL" [ "$(allowed "$p")" = "$ALL" ]
check "and still runs on CPU 0" [ "$(lastcpu "$p")" -eq 0 ]
check "clean stop" stop_daemon TERM
cleanup
