# A process target's value on a systemd host (doc/latency.md, "On a systemd host"):
# where the process has its unit to itself (every process in the unit's cgroup carries
# its value), the unit gets that value's CPUWeight, over D-Bus and for the runtime only;
# `rqctl reset` and `systemctl stop rqbalance` give it back, `systemctl daemon-reload`
# keeps it. A unit shared with a process without the value is left as it is, and
# `rqctl get` and the log say why; once that process leaves, the unit is weighed. One
# whose CPUWeight someone set below the default is only ever lowered further.
# The scopes are made as on a host where a user runs a command in a scope of its own:
# `systemd-run --scope` in user-1000.slice, the process running as rqbuser (in_scope).
. /usr/local/lib/rqbt/lib.sh
base_state
# A cursor in the daemon's own entries: the last entry of all may be in rqbuser's
# journal (systemd's lines about a scope of user-$RQBUSER_UID.slice go there too).
unit_cursor() { journalctl -q -n1 -o export -u "$UNIT" | sed -n 's/^__CURSOR=//p'; }
# --- a scope of its own ---
in_scope rqbt-lat-own sleep 600
cg=$(sed -n 's/^0:://p' "/proc/$P/cgroup")
echo "pid $P in $cg; user-$RQBUSER_UID.slice enables: $(cat /sys/fs/cgroup/user.slice/user-$RQBUSER_UID.slice/cgroup.subtree_control)"
check "it is the scope's only process" [ "$(cat "/sys/fs/cgroup$cg/cgroup.procs")" = "$P" ]
w0=$(weight_of rqbt-lat-own.scope)
c=$(unit_cursor)
check "rqctl set -l -20 -p $P (root)" rqctl set -l -20 -p "$P"
w=$(weight_of rqbt-lat-own.scope)
echo "CPUWeight: $w0 before, $w at -20; cpu.weight $(cat "/sys/fs/cgroup$cg/cpu.weight")"
check "the scope gets the weight of -20: CPUWeight 8668" [ "$w" = 8668 ]
check "and its nice is -20" [ "$(nice_of "$P")" = -20 ]
get=$(rqctl get -p "$P")
echo "$get"
check "rqctl get names the unit and its weight" \
	eval 'echo "$get" | grep -qx "unit rqbt-lat-own.scope" && echo "$get" | grep -qx "unit_weight 8668"'
check "and the log says so" wait_journal "$c" "unit rqbt-lat-own.scope: its processes all have value -20: CPUWeight 8668"
check "rqctl set -l 19 -p $P as rqbuser (raising its own)" as_user rqctl set -l 19 -p "$P"
w=$(weight_of rqbt-lat-own.scope)
echo "CPUWeight at 19: $w; cpu.weight $(cat "/sys/fs/cgroup$cg/cpu.weight")"
check "the weight of 19: CPUWeight 1" [ "$w" = 1 ]
check "systemctl daemon-reload" systemctl daemon-reload
w=$(weight_of rqbt-lat-own.scope)
echo "after daemon-reload: CPUWeight $w, cpu.weight $(cat "/sys/fs/cgroup$cg/cpu.weight")"
check "keeps it" eval '[ "$w" = 1 ] && [ "$(cat "/sys/fs/cgroup$cg/cpu.weight")" = 1 ]'
check "rqctl reset -p $P" rqctl reset -p "$P"
w=$(weight_of rqbt-lat-own.scope)
echo "after the reset: CPUWeight $w"
check "gives the scope its CPUWeight back" [ "$w" = "$w0" ]
check "and its nice" [ "$(nice_of "$P")" = 0 ]
check "rqctl set -l -20 -p $P again" rqctl set -l -20 -p "$P"
check "CPUWeight 8668 again" [ "$(weight_of rqbt-lat-own.scope)" = 8668 ]
check "systemctl stop $UNIT" systemctl stop "$UNIT"
w=$(weight_of rqbt-lat-own.scope)
echo "after the stop: CPUWeight $w, nice $(nice_of "$P")"
check "gives it back" [ "$w" = "$w0" ]
check "systemctl start $UNIT" systemctl start "$UNIT"

# --- a scope shared with a process without a value ---
in_scope rqbt-lat-shared sh -c 'sleep 600 & wait'
SH=$P
poll_until 60 pgrep -P "$SH" -x sleep >/dev/null || fail "no sleep under sh $SH"
K=$(pgrep -P "$SH" -x sleep)
w0=$(weight_of rqbt-lat-shared.scope)
c=$(unit_cursor)
check "rqctl set -l -20 -p $K, beside its shell" rqctl set -l -20 -p "$K"
w=$(weight_of rqbt-lat-shared.scope)
echo "CPUWeight: $w0 before, $w with -20 on one of its two processes"
check "leaves the shared scope as it was" [ "$w" = "$w0" ]
check "the task's nice still applies" [ "$(nice_of "$K")" = -20 ]
get=$(rqctl get -p "$K")
echo "$get"
check "rqctl get says why" \
	eval 'echo "$get" | grep -q "^unit_why rqbt-lat-shared.scope is shared with 1 process without a value: only the task.s nice applies; give it a scope of its own (systemd-run --scope)"'
check "and so does the log" wait_journal "$c" "process $K: rqbt-lat-shared.scope is shared with 1 process without a value"
list=$(rqctl list)
echo "$list"
check "rqctl list shows the unit, not set, and why" \
	eval 'echo "$list" | grep -q "unit .*rqbt-lat-shared.scope not set: rqbt-lat-shared.scope is shared"'
# The shell leaves: the sleep has the unit to itself, and the unit is weighed.
kill -KILL "$SH"
wait "$SH" 2>/dev/null
rqsync
w=$(weight_of rqbt-lat-shared.scope)
echo "with its shell gone: CPUWeight $w; processes: $(cat "/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$K/cgroup")/cgroup.procs" | paste -sd' ')"
check "the scope gets the weight once the shell left" [ "$w" = 8668 ]
check "rqctl reset -p $K" rqctl reset -p "$K"
check "gives it back" [ "$(weight_of rqbt-lat-shared.scope)" = "$w0" ]
kill -KILL "$K"

# --- a scope whose CPUWeight someone held back: lowered further, never raised ---
in_scope rqbt-lat-held sleep 600
check "systemctl set-property --runtime rqbt-lat-held.scope CPUWeight=50" \
	systemctl set-property --runtime rqbt-lat-held.scope CPUWeight=50
c=$(unit_cursor)
check "rqctl set -l -20 -p $P (root)" rqctl set -l -20 -p "$P"
w=$(weight_of rqbt-lat-held.scope)
echo "CPUWeight 50 before, $w at -20"
check "leaves the held-back scope's CPUWeight at 50" [ "$w" = 50 ]
check "the task's nice still applies" [ "$(nice_of "$P")" = -20 ]
get=$(rqctl get -p "$P")
echo "$get"
check "rqctl get says why" eval 'echo "$get" | grep -q "^unit_why .*below the default.*only the task.s nice applies"'
check "and so does the log" wait_journal "$c" "process $P: its unit's CPUWeight was set below the default by someone else"
check "rqctl set -l 19 -p $P (root)" rqctl set -l 19 -p "$P"
w=$(weight_of rqbt-lat-held.scope)
echo "CPUWeight at 19: $w"
check "lowers it further: CPUWeight 1" [ "$w" = 1 ]
check "rqctl reset -p $P" rqctl reset -p "$P"
check "gives it back its 50" [ "$(weight_of rqbt-lat-held.scope)" = 50 ]
kill -KILL "$P"

# --- a unit in the user manager's delegated subtree ---
if as_user systemd-run --user -q --unit=rqbt-lat-user sleep 600; then
	U=$(as_user systemctl --user show -P MainPID rqbt-lat-user.service)
	check "rqctl set -l 19 -p $U as rqbuser" as_user rqctl set -l 19 -p "$U"
	get=$(rqctl get -p "$U")
	echo "$get"
	check "rqctl get: the user manager's, only nice applies" \
		eval 'echo "$get" | grep -q "^unit_why in a unit.s delegated subtree.*only the task.s nice applies"'
	check "its nice is 19" [ "$(nice_of "$U")" = 19 ]
	as_user systemctl --user stop rqbt-lat-user.service
else
	echo "no unit in rqbuser's manager: the delegated case is not checked"
fi
