# SIGKILL leaves pins behind; a restart reads the journal and restores them, then
# finds the load spread and pins nothing again.
. /tests/lib.sh
need_llcs
lb_off
pile_on_llc0
start_daemon
check "pins planned" wait_log "pin tid=.*llc=0->" 30
i=0
while [ "$(count_pinned)" -lt "$NLLC0" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "$NLLC0 hogs pinned" [ "$(count_pinned)" -eq "$NLLC0" ]
kill -KILL "$DPID"
wait "$DPID"
DPID=""
sleep 0.5
check "after SIGKILL the pins remain" [ "$(count_pinned)" -eq "$NLLC0" ]
check "and the journal holds them" \
	[ "$(grep -c '^set ' /run/rqbalance/affinity.journal)" -ge "$NLLC0" ]
mv "$LOG" /tmp/daemon-first.log
start_daemon
check "the restart restores them" wait_log "a previous run left changes: $NLLC0 restored" 30
for p in $HOGS; do
	check "hog $p back to $ALL" [ "$(allowed "$p")" = "$ALL" ]
done
sleep 2
check "nothing pinned again: the load is spread" sh -c "! grep -q ' pin tid=' '$LOG'"
check "clean stop" stop_daemon TERM
cleanup
