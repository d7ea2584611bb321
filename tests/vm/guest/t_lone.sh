# A lone hog on CPU 0, every other CPU idle: it is never moved, however busy.
. /tests/lib.sh
lb_off
hog 0
sleep 0.5
release "$ALL"
start_daemon
check "the daemon runs" wait_log "running: sampler" 30
sleep 3
p=$(echo $HOGS)
check "no pin planned" sh -c "! grep -q ' pin tid=' '$LOG'"
check "the hog keeps $ALL" [ "$(allowed "$p")" = "$ALL" ]
check "and still runs on CPU 0" [ "$(lastcpu "$p")" -eq 0 ]
check "clean stop" stop_daemon TERM
cleanup
