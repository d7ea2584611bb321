# SIGKILL leaves pins behind; a restart reads the journal and restores them, then
# finds the load balanced and pins nothing again.
. /tests/lib.sh
lb_off
for i in 1 2 3 4; do hog 0-1; done
sleep 1
release 0-3
start_daemon
check "two pins" wait_log "pin tid=.*llc=0->1" 30
i=0
while [ "$(count_pinned)" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "two hogs pinned" [ "$(count_pinned)" -eq 2 ]
kill -KILL "$DPID"
wait "$DPID"
DPID=""
sleep 0.5
check "after SIGKILL the pins remain" [ "$(count_pinned)" -eq 2 ]
check "and the journal holds them" [ "$(grep -c '^set ' /run/rqbalance/affinity.journal)" -ge 2 ]
mv "$LOG" /tmp/daemon-first.log
start_daemon
check "the restart restores both" wait_log "a previous run left changes: 2 restored" 30
for p in $HOGS; do
	check "hog $p back to 0-3" [ "$(allowed "$p")" = 0-3 ]
done
sleep 2
check "nothing pinned again: the load is spread" sh -c "! grep -q ' pin tid=' '$LOG'"
check "clean stop" stop_daemon TERM
cleanup
