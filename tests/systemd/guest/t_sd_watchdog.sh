# The watchdog: with WatchdogSec=5s (a drop-in of the test's), a SIGSTOPped daemon is
# killed by systemd (SIGABRT) and restarted (Restart=on-failure), and the restarted
# daemon gives back what the killed one had set, from its journal in /run/rqbalance:
# a sleeper's nice 10, SCHED_BATCH and slice; `rqctl get` then says it is not managed.
. /usr/local/lib/rqbt/lib.sh
base_state
mkdir -p "$DROPINS"
printf '[Service]\nWatchdogSec=5s\n' >"$DROPINS/50-rqbt-watchdog.conf"
systemctl daemon-reload
check "a restart with WatchdogSec=5s" systemctl restart "$UNIT"
check "which systemd has" [ "$(systemctl show -P WatchdogUSec "$UNIT")" = 5s ]
sleeper
before=$(task_state "$S")
echo "sleeper $S before: $before"
check "rqctl set -l 10 -p $S" rqctl set -l 10 -p "$S"
after=$(task_state "$S")
echo "sleeper $S with 10: $after"
check "nice 10" [ "$(nice_of "$S")" = 10 ]
check "SCHED_BATCH" [ "$(policy_of "$S")" = 3 ]
if [ -n "$(slice_of "$S")" ]; then
	check "a longer slice" [ "$(slice_of "$S")" -gt "$(echo "$before" | awk '{ print $6 }')" ]
else
	echo "this kernel shows no EEVDF slice: not checked"
fi
rqctl get -p "$S"
pid=$(main_pid)
restarts=$(systemctl show -P NRestarts "$UNIT")
c=$(cursor)
check "SIGSTOP to the daemon ($pid)" kill -STOP "$pid"
restarted() { [ "$(main_pid)" != "$pid" ] && [ "$(main_pid)" != 0 ] && is_active "$UNIT"; }
check "systemd restarts it" poll_until 300 restarted
journal_after "$c" -u "$UNIT" -o short-monotonic
check "on the watchdog's timeout" journal_has "$c" '[Ww]atchdog timeout'
check "having killed it with SIGABRT" journal_has "$c" 'status=6/ABRT'
check "one restart more" [ "$(systemctl show -P NRestarts "$UNIT")" = $((restarts + 1)) ]
check "the old process is gone" [ ! -e "/proc/$pid" ]
rqsync
echo "sleeper $S after the restart: $(task_state "$S")"
check "the restart gave its nice back" [ "$(nice_of "$S")" = 0 ]
check "and its policy" [ "$(policy_of "$S")" = 0 ]
check "and its slice" [ "$(task_state "$S")" = "$before" ]
get=$(rqctl get -p "$S" 2>&1)
rc=$?
echo "rqctl get: exit $rc: $get"
check "rqctl get says it is not managed" eval '[ $rc = 1 ] && echo "$get" | grep -q "not managed"'
rm -rf "$DROPINS"
systemctl daemon-reload
