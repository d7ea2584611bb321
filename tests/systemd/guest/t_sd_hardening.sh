# The default unit's sandbox against what the daemon does on a systemd host with its
# default config: the sampler the README promises there (`sampler = auto` runs /proc:
# the unit gives no CAP_BPF, CAP_PERFMON nor bpf(2), and the daemon says why in one
# line), a rule applied at exec to another user's program (the proc connector, that
# task's /proc/PID/exe), a value set on a process and on a unit (over D-Bus), and no
# denial in the journal. Prints `systemd-analyze security` as measured in the guest.
. /usr/local/lib/rqbt/lib.sh
base_state
check "the unit has no drop-in" [ -z "$(systemctl show -P DropInPaths "$UNIT")" ]
# A copy of sleep of the test's own: the rule matches it and nothing else.
PROG=/usr/local/lib/rqbt/rqbt-sleep
cp /bin/sleep "$PROG"
printf '[rule rqbt-hard]\nlatency_nice = -3\nexe = %s\nuid = rqbuser\n' "$PROG" \
	>"$RULES_D/rqbt-hard.conf"
c=$(cursor)
check "a restart with a rule in rules.d" systemctl restart "$UNIT"
sampler=$(rqctl status | awk '$1 == "sampler" { print $2 }')
check "the daemon runs the proc sampler, as promised for the default unit ($sampler)" \
	[ "$sampler" = proc ]
check "and said so" journal_has "$c" '^running: sampler proc'
# The default unit grants no CAP_BPF nor CAP_PERFMON: the daemon says, once each, why
# the bpf sampler and the run-queue wait histograms (rqctl latency) are off. Those two
# notices are what the unit is meant to cost; any other denial is a failure.
NOTICES='^(bpf sampler unavailable: |run-queue wait histograms unavailable: )'
why=$(journal_after "$c" -u "$UNIT" -o cat | grep -E "$NOTICES")
echo "$why"
check "with one line on why not bpf" [ "$(echo "$why" | grep -c '^bpf sampler')" = 1 ]
info "notices of what the default unit turns off: $(echo "$why" | grep -c .) lines:" \
	"$(echo "$why" | sed 's/:.*//' | paste -sd, | sed 's/,/, /g')"
lat=$(rqctl latency 2>&1)
rc=$?
echo "rqctl latency: exit $rc: $lat"
if grep -q '^run-queue wait histograms unavailable' <<<"$why"; then
	check "rqctl latency then answers with the reason" eval '[ $rc = 1 ] && [ -n "$lat" ]'
else
	check "rqctl latency answers" [ $rc = 0 ]
fi

UNITS="rqbt-hard-rule.service rqbt-hard-unit.service"
check "rqbuser's program, started" \
	systemd-run -q --uid=rqbuser --unit=rqbt-hard-rule "$PROG" 600
rp=$(systemctl show -P MainPID rqbt-hard-rule.service)
poll_until 60 eval '[ "$(readlink /proc/$rp/exe)" = "$PROG" ]'
rqsync
get=$(rqctl get -p "$rp" 2>&1)
echo "$get"
check "the rule gave it its value at exec" eval 'echo "$get" | grep -q "^source rule rqbt-hard"'
check "nice -3" [ "$(nice_of "$rp")" = -3 ]
sleeper
check "rqctl set -l -5 -p on a process of root's" rqctl set -l -5 -p "$S"
check "nice -5" [ "$(nice_of "$S")" = -5 ]
# With a CPUWeight of its own, so that the unit's cgroup has the cpu controller (see
# t_sd_stop for one without).
check "a unit of the test's own" systemd-run -q --unit=rqbt-hard-unit -p CPUWeight=100 sleep 600
check "rqctl set -l -5 -g on its cgroup (CPUWeight over D-Bus)" \
	rqctl set -l -5 -g /system.slice/rqbt-hard-unit.service
echo "its CPUWeight: $(systemctl show -P CPUWeight rqbt-hard-unit.service)"
rqsync
st=$(rqctl status)
echo "$st" | grep -E '^(errors|latency_errors|sample_errors)'
check "the daemon counts no error" \
	[ -z "$(echo "$st" | awk '$1 ~ /errors/ && $2 != 0')" ]
# The daemon's own lines since the restart, less those two notices.
denied=$(journal_after "$c" -u "$UNIT" -o cat | grep -Ev "$NOTICES" |
	grep -Ei 'EPERM|EACCES|permission denied|operation not permitted|seccomp|denied|not allowed')
echo "denials: ${denied:-none}"
check "no denial in the journal" [ -z "$denied" ]
kern=$(journal_after "$c" -k -o cat | grep -Ei 'audit|seccomp' | grep rqbalanced)
check "nor in the kernel's log" [ -z "$kern" ]
score=$(systemd-analyze security --no-pager "$UNIT" | tail -n1)
echo "$score"
check "systemd-analyze security scores it" eval 'echo "$score" | grep -q "exposure level"'
info "systemd-analyze security $UNIT: $(echo "$score" | sed 's/.*: //; s/ [^ ]*$//')"
file=$(systemctl show -P FragmentPath "$UNIT")
offline=$(systemd-analyze security --offline=true --no-pager "$file" 2>&1 | tail -n1)
echo "offline: $offline"
info "systemd-analyze security --offline=true $file: $(echo "$offline" | sed 's/.*: //; s/ [^ ]*$//')"
rm -f "$RULES_D/rqbt-hard.conf" "$PROG"
