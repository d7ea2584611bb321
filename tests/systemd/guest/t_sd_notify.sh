# Type=notify, as a user enables it: `systemctl enable --now rqbalance.socket
# rqbalance.service` returns once the daemon said READY=1, and only then is the unit
# active: the daemon's "running:" line (written just before READY=1) comes before
# systemd's "Started" line; `systemctl status` shows the daemon's STATUS= line.
. /usr/local/lib/rqbt/lib.sh
base_state
check "systemctl disable --now" systemctl disable -q --now "$UNIT" "$SOCKET"
check "leaves the service inactive" eval '! is_active "$UNIT"'
check "and the socket too" eval '! is_active "$SOCKET"'
check "both disabled" [ "$(systemctl is-enabled "$UNIT" "$SOCKET" | sort -u)" = disabled ]
check "the service is Type=notify" [ "$(systemctl show -P Type "$UNIT")" = notify ]
check "its notify socket takes the main process's messages" \
	[ "$(systemctl show -P NotifyAccess "$UNIT")" = main ]

c=$(cursor)
check "systemctl enable --now rqbalance.socket rqbalance.service" \
	systemctl enable -q --now "$SOCKET" "$UNIT"
# The start job of a Type=notify service ends on READY=1; systemctl waited for it.
check "the service is active when it returns" is_active "$UNIT"
check "and the socket" is_active "$SOCKET"
check "both enabled" [ "$(systemctl is-enabled "$UNIT" "$SOCKET" | sort -u)" = enabled ]
journal_after "$c" -u "$UNIT" -o short-monotonic
# The order of the journal's lines: the daemon's, then systemd's.
order=$(journal_after "$c" -u "$UNIT" -o cat | grep -E '^running: sampler|^Started ' | cut -c1-24)
echo "order: $(echo $order)"
check "the daemon said it runs" eval '[[ "$(echo "$order" | head -n1)" == "running: sampler"* ]]'
check "before systemd had the unit started, once" \
	eval '[ "$(echo "$order" | tail -n +2 | grep -c "^Started ")" = 1 ]'
ready=$(journal_after "$c" -u "$UNIT" -o json | jq -r \
	'select(.MESSAGE | test("running: sampler")) | .__MONOTONIC_TIMESTAMP' | head -n1)
active=$(systemctl show -P ActiveEnterTimestampMonotonic "$UNIT")
start=$(systemctl show -P ExecMainStartTimestampMonotonic "$UNIT")
echo "main process started at $start us, said running at $ready us, active at $active us"
check "systemd had the main process running before it was active" [ "$start" -lt "$active" ]
has_status() { [ -n "$(systemctl show -P StatusText "$UNIT")" ]; }
# STATUS= follows READY=1 in a datagram of its own: waited for, not assumed.
check "the daemon sent a STATUS= line" poll_until 120 has_status
st=$(systemctl show -P StatusText "$UNIT")
echo "StatusText: $st"
check "which names the sampler" eval '[[ "$st" == "sampler "* ]]'
systemctl status --no-pager "$UNIT" >/run/rqbt/status.txt
cat /run/rqbt/status.txt
check "systemctl status shows it" grep -qF "Status: \"$st\"" /run/rqbt/status.txt
check "and the unit active (running)" grep -q 'Active: active (running)' /run/rqbt/status.txt
