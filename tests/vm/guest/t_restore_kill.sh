# SIGKILL leaves pins behind; a restart reads the journal and restores them before its
# first tick, then, shown the load spread, pins nothing again. The restarted daemon
# runs on the replay sampler, one snapshot the test writes of the hogs one a CPU: the
# restore at start is the same whatever the sampler, and a frozen load keeps the
# policy from rightly pinning again (a live sampler sees the test's own commands too)
# before the test has looked.
. /tests/lib.sh
need_llcs
lb_off
pile_on_llc0
# The pins must last until the kill, however slow the guest.
DAEMON_CONF=$LONG_PINS
start_daemon
check "the daemon runs" wait_running
check "$NLLC0 hogs have a pin planned" wait_hog_pins "$NLLC0"
check "$NLLC0 hogs pinned" [ "$(count_pinned)" -ge "$NLLC0" ]
kill -KILL "$DPID"
wait "$DPID"
DPID=""
# The live policy may have pinned one more since (the test's own commands are load
# too): what the restart must give back is every pin the killed daemon left.
K=0
for p in $HOGS; do
	if [ "$(allowed "$p")" != "$ALL" ]; then
		K=$((K + 1))
		check "hog $p, narrowed to $(allowed "$p"), has a pin in the log" \
			grep -q " pin tid=$p " "$LOG"
	fi
done
check "after SIGKILL the pins remain ($K hogs narrowed)" [ "$K" -ge "$NLLC0" ]
check "and the journal holds them" \
	[ "$(grep -c '^set ' /run/rqbalance/affinity.journal)" -ge "$K" ]

# The load spread: hog i alone on CPU i, allowed every CPU as it will be once
# restored. (The hogs' real places do not matter: only a pin, which must not come,
# would act on them.)
REPLAY=/tmp/$NAME.replay
{
	echo "# written by t_restore_kill: the hogs spread, one a CPU"
	echo "snapshot 1 100000000 1"
	c=0
	for p in $HOGS; do
		echo "cpu $c 1 100"
		c=$((c + 1))
	done
	while [ $c -lt "$(list_len "$ALL")" ]; do
		echo "cpu $c 0 0"
		c=$((c + 1))
	done
	c=0
	for p in $HOGS; do
		echo "task $p $p $c $(starttime "$p") 0 $ALL sh /"
		c=$((c + 1))
	done
	echo "end"
} >"$REPLAY"
cat "$REPLAY"
LOG=/tmp/$NAME.daemon2.log
DAEMON_CONF=""
start_daemon --replay "$REPLAY"
check "the restart restores them" wait_log "a previous run left changes: $K restored"
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
