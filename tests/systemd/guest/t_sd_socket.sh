# Socket activation: with the service stopped and the socket still listening, the first
# `rqctl status` starts the service, and is answered by it.
. /usr/local/lib/rqbt/lib.sh
base_state
check "systemctl stop rqbalance.service" systemctl stop "$UNIT"
check "leaves the service inactive" eval '! is_active "$UNIT"'
check "and the socket listening" is_active "$SOCKET"
check "on /run/rqbalance/ctl.sock" [ -S /run/rqbalance/ctl.sock ]
c=$(cursor)
out=$(rqctl status 2>&1)
rc=$?
echo "$out"
check "rqctl status answers (exit $rc)" [ $rc = 0 ]
check "with the daemon's status" eval 'echo "$out" | grep -q "^sampler "'
check "the service is active now" is_active "$UNIT"
check "started by the socket" journal_has "$c" '^Started '
check "its trigger is the socket" [ "$(systemctl show -P TriggeredBy "$UNIT")" = "$SOCKET" ]
journal_after "$c" -u "$UNIT" -u "$SOCKET" -o short-monotonic
