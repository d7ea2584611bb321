# GameMode's clients through the packaged session agent, under rqbuser's real
# systemd --user and session bus: the user unit rqbalance-gamemode.service serves
# com.feralinteractive.GameMode, and the real gamemoderun's game (libgamemodeauto in a
# sleep) gets [latency] game (-10); busctl's UnregisterGame gives it back and
# RegisterGame gives it again; root's process is refused (-2); the agent's stop gives
# the game back. Then beside the real gamemoded (its own user unit, started first): the
# agent follows its game, and its stop gives it back. rqbuser is in game_group (its
# own group), as its RLIMIT_NICE is 0.
. /usr/local/lib/rqbt/lib.sh
AGENT=rqbalance-gamemode.service
GM=com.feralinteractive.GameMode
GM_PATH=/com/feralinteractive/GameMode
check "the package installed the agent's user unit" [ -f /usr/lib/systemd/user/$AGENT ]
check "and its session bus activation file" \
	[ -f /usr/share/dbus-1/services/$GM.rqbalance.service ]
[ -x /usr/games/gamemoderun ] || skip "no gamemoderun (the gamemode package) in the guest"

cp "$ORIG_CONF" "$CONF"
printf '\n[latency]\ngame_group = rqbuser\n' >>"$CONF"
systemctl restart "$UNIT" || fail "systemctl restart $UNIT"
c=$(cursor)
wait_journal "$T0" "dbus: serving org\.rqbalance1 on the system bus" ||
	fail "the service does not serve org.rqbalance1"

uctl() { as_user systemctl --user "$@"; }
gm() { as_user busctl --user call $GM $GM_PATH $GM "$@"; }
value_of() { rqctl get -p "$1" 2>/dev/null | awk '$1 == "value" { print $2 }'; }
has_value() { [ "$(value_of "$1")" = "$2" ]; }
no_value() { [ -z "$(value_of "$1")" ]; }
# The bus driver's answer, which never starts a service (busctl status may).
owner_pid() {
	as_user busctl --user call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
		GetConnectionUnixProcessID s $GM 2>/dev/null | awk '{ print $2 }'
}
# The agent's journal (journalctl --user-unit matches the caller's own uid, root's here).
agent_says() {
	journalctl --sync
	journalctl -q --no-pager _UID="$RQBUSER_UID" _SYSTEMD_USER_UNIT="$AGENT" -o cat |
		grep -q "$1"
}
# game NAME: gamemoderun sleep in rqbuser's manager, as unit rqbt-NAME; its pid in $G.
game() {
	check "$1: gamemoderun sleep as rqbuser" \
		as_user systemd-run --user -q --unit="rqbt-$1" /usr/games/gamemoderun sleep 600
	G=$(uctl show -P MainPID "rqbt-$1.service")
	PIDS="$PIDS $G"
	poll_until 60 grep -qx sleep "/proc/$G/comm"
}
# The runner stops rqbt-* units; the agent and gamemoded are stopped here, and lib.sh's
# cleanup gets the test's exit status.
cleanup_user() { uctl stop "$AGENT" gamemoded.service >/dev/null 2>&1; }
trap 'r=$?; cleanup_user; (exit $r); cleanup' EXIT
# On a failure, what the agent's unit and the session bus say, after lib.sh's diag (the
# runner shows a failed test's last lines).
user_diag() {
	echo "--- systemctl --user status $AGENT gamemoded.service ---"
	uctl status --no-pager -l "$AGENT" 2>&1 | tail -n 12
	uctl status --no-pager -l gamemoded.service 2>&1 | head -n 4
	echo "--- rqbuser's journal ---"
	journalctl --sync
	journalctl -q --no-pager _UID="$RQBUSER_UID" -o short-monotonic | tail -n 25
	echo "--- $GM's owner ---"
	echo "pid $(owner_pid)"
	echo "--- the agent by hand, for 3 s ---"
	as_user timeout 3 /usr/bin/rqctl gamemode-agent 2>&1 | head -n 5
}
fail() { echo "not ok: $*"; diag; user_diag; exit 1; }

cleanup_user
check "the agent's user unit starts" uctl start "$AGENT"
agent=$(uctl show -P MainPID "$AGENT")
check "it says it serves $GM" poll_until 60 agent_says "serving $GM"
check "it owns $GM on rqbuser's session bus" poll_until 60 eval '[ "$(owner_pid)" = "$agent" ]'
game alone
check "gamemoderun's game gets [latency] game (-10)" poll_until 60 has_value "$G" -10
check "QueryStatus: 2" [ "$(gm QueryStatus i "$G")" = "i 2" ]
check "UnregisterGame answers 0" [ "$(gm UnregisterGame i "$G")" = "i 0" ]
check "and gives the game back" poll_until 60 no_value "$G"
check "RegisterGame answers 0" [ "$(gm RegisterGame i "$G")" = "i 0" ]
check "and gives it the value again" poll_until 60 has_value "$G" -10
sleeper
check "root's process is refused (-2)" [ "$(gm RegisterGame i "$S")" = "i -2" ]
check "and gets nothing" no_value "$S"
check "the agent stops" uctl stop "$AGENT"
check "which gives the game back" poll_until 60 no_value "$G"
uctl stop rqbt-alone.service

if [ -f /usr/lib/systemd/user/gamemoded.service ]; then
	check "gamemoded's user unit starts" uctl start gamemoded.service
	check "the agent starts beside it" uctl start "$AGENT"
	check "gamemoded owns $GM" poll_until 60 eval \
		'[ "$(owner_pid)" = "$(uctl show -P MainPID gamemoded.service)" ]'
	check "the agent says it follows it" poll_until 60 agent_says "beside the owner"
	game beside
	check "gamemoded's game gets the value through the agent" poll_until 60 has_value "$G" -10
	check "the agent stops" uctl stop "$AGENT"
	check "which gives it back" poll_until 60 no_value "$G"
else
	echo "no gamemoded user unit: the case beside gamemoded was not run"
fi
exit $FAILED
