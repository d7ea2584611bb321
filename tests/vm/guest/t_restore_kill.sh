# SIGKILL leaves pins behind; a restart reads the journal and restores them before its
# first tick, then, shown the load spread as the first run left it, pins nothing again.
# The restarted daemon runs on the replay sampler, one snapshot the test writes of
# where the hogs run: the restore at start is the same whatever the sampler, and a
# frozen load keeps the policy from rightly pinning again (a live sampler sees the
# test's own commands too) before the test has looked.
. /tests/lib.sh
need_llcs
lb_off
pile_on_llc0
# The pins must last until the kill, however slow the guest.
DAEMON_CONF=$LONG_PINS
start_daemon
check "the daemon runs" wait_running
check "$NLLC0 hogs have a pin planned" wait_hog_pins "$NLLC0"
check "$NLLC0 hogs pinned" [ "$(count_pinned)" -eq "$NLLC0" ]
kill -KILL "$DPID"
wait "$DPID"
DPID=""
check "after SIGKILL the pins remain" [ "$(count_pinned)" -eq "$NLLC0" ]
check "and the journal holds them" \
	[ "$(grep -c '^set ' /run/rqbalance/affinity.journal)" -ge "$NLLC0" ]

# The load as it is: each hog on the CPU it runs on, allowed every CPU as it will be
# once restored; a CPU's count is its hogs.
REPLAY=/tmp/$NAME.replay
{
	echo "# the hogs where they run, as t_restore_kill found them"
	echo "snapshot 1 100000000 1"
	for c in $(seq 0 $(($(list_len "$ALL") - 1))); do
		k=0
		for p in $HOGS; do [ "$(lastcpu "$p")" -eq "$c" ] && k=$((k + 1)); done
		echo "cpu $c $k $([ $k -gt 0 ] && echo 100 || echo 0)"
	done
	for p in $HOGS; do
		echo "task $p $p $(lastcpu "$p") $(starttime "$p") 0 $ALL sh /"
	done
	echo "end"
} >"$REPLAY"
cat "$REPLAY"
LOG=/tmp/$NAME.daemon2.log
DAEMON_CONF=""
start_daemon --replay "$REPLAY"
check "the restart restores them" wait_log "a previous run left changes: $NLLC0 restored"
check "the daemon runs" wait_running
check "the restore came before its loop started" awk '
	/a previous run left changes/ { r = NR } /running: sampler/ { s = NR }
	END { exit !(r && s && r < s) }' "$LOG"
for p in $HOGS; do
	check "hog $p back to $ALL" [ "$(allowed "$p")" = "$ALL" ]
done
# Thirty whole ticks on that snapshot: a spread load moves nothing.
rqsync 30
check "nothing pinned again: the load is spread" sh -c "! grep -q ' pin tid=' '$LOG'"
for p in $HOGS; do
	check "hog $p keeps $ALL" [ "$(allowed "$p")" = "$ALL" ]
done
check "clean stop" stop_daemon TERM
cleanup
