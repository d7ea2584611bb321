# A lone hog on CPU 0, every other CPU idle: it is never moved, however busy.
. /tests/lib.sh
lb_off
hog 0
release "$ALL"
start_daemon
check "the daemon runs" wait_running
# Thirty whole ticks: far more than the two in a row that make a lone overload count.
rqsync 30
p=$(echo $HOGS)
check "no pin planned" sh -c "! grep -q ' pin tid=' '$LOG'"
check "the hog keeps $ALL" [ "$(allowed "$p")" = "$ALL" ]
check "and still runs on CPU 0" [ "$(lastcpu "$p")" -eq 0 ]
check "clean stop" stop_daemon TERM
cleanup
