# rqctl through the installed paths (/usr/bin/rqctl, the unit's socket
# /run/rqbalance/ctl.sock): status as text and as JSON, as root and as an unprivileged
# user with its own user manager; a reload is root's; a user may raise its own
# process's value, not lower it (nor reset it, which lowers it: RLIMIT_NICE is 0).
. /usr/local/lib/rqbt/lib.sh
base_state
out=$(rqctl status 2>&1)
rc=$?
echo "$out"
check "rqctl status" [ $rc = 0 ]
check "names the version" eval 'echo "$out" | grep -q "^version "'
check "the sampler" eval 'echo "$out" | grep -qE "^sampler (proc|bpf)$"'
check "and two LLCs" [ "$(echo "$out" | grep -c '^llc ')" = 2 ]
json=$(rqctl --json status)
echo "$json"
check "rqctl --json status parses" eval 'echo "$json" | jq -e . >/dev/null'
check "with the same sampler" [ "$(echo "$json" | jq -r .sampler)" = \
	"$(echo "$out" | awk '$1 == "sampler" { print $2 }')" ]
check "and the daemon's tick count, a number" eval 'echo "$json" | jq -e ".ticks | numbers" >/dev/null'
check "rqbuser's user@$RQBUSER_UID.service runs" is_active "user@$RQBUSER_UID.service"
check "rqctl status as rqbuser" as_user rqctl status >/dev/null
check "rqctl --json status as rqbuser" eval 'as_user rqctl --json status | jq -e .sampler >/dev/null'
r=$(as_user rqctl reload 2>&1)
rc=$?
echo "rqctl reload as rqbuser: exit $rc: $r"
check "rqctl reload as rqbuser is refused" [ $rc = 1 ]
check "rqctl reload as root" rqctl reload
# A process in rqbuser's own user manager, started through it (systemd-run --user).
check "a sleeper in rqbuser's user manager" \
	as_user systemd-run --user -q --unit=rqbt-user-sleep sleep 600
p=$(as_user systemctl --user show -P MainPID rqbt-user-sleep.service)
echo "its pid: $p, cgroup $(cat /proc/$p/cgroup)"
check "rqctl set -l 5 on it as rqbuser" as_user rqctl set -l 5 -p "$p"
check "gives it nice 5" [ "$(nice_of "$p")" = 5 ]
r=$(as_user rqctl set -l -5 -p "$p" 2>&1)
rc=$?
echo "rqctl set -l -5 as rqbuser: exit $rc: $r"
check "-5 as rqbuser is refused" [ $rc = 1 ]
r=$(as_user rqctl reset -p "$p" 2>&1)
rc=$?
echo "rqctl reset as rqbuser: exit $rc: $r"
check "and so is a reset, which lowers it" [ $rc = 1 ]
check "rqctl reset as root" rqctl reset -p "$p"
check "gives its nice 0 back" [ "$(nice_of "$p")" = 0 ]
as_user systemctl --user stop rqbt-user-sleep.service
