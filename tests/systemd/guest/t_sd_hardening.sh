# The default unit's sandbox against what the daemon does on a systemd host with its
# default config: BPF where the kernel has BTF, as both guests' stock kernels do (the
# unit gives CAP_BPF, CAP_PERFMON and bpf(2), perf_event_open(2), capset(2)): the bpf
# sampler, fork/exec/exit from the BPF event source and the run-queue wait histograms,
# with not one line on something unavailable; a rule applied at exec to another
# user's program with neither CAP_SYS_PTRACE nor CAP_NET_ADMIN (the exec event's
# device and inode, not that task's /proc/PID/exe); a value set on a process and on a
# unit (over D-Bus); and no denial in the journal. Prints `systemd-analyze security`
# as measured in the guest.
. /usr/local/lib/rqbt/lib.sh
base_state
check "the unit has no drop-in" [ -z "$(systemctl show -P DropInPaths "$UNIT")" ]
check "the kernel has BTF" [ -r /sys/kernel/btf/vmlinux ]
# A copy of sleep of the test's own: the rule matches it and nothing else.
PROG=/usr/local/lib/rqbt/rqbt-sleep
cp /bin/sleep "$PROG"
printf '[rule rqbt-hard]\nlatency_nice = -3\nexe = %s\nuid = rqbuser\n' "$PROG" \
	>"$RULES_D/rqbt-hard.conf"
c=$(cursor)
check "a restart with a rule in rules.d" systemctl restart "$UNIT"
d=$(main_pid)
# The capability a mask in /proc/PID/status has: cap PID field bit.
cap() { [ $(((0x$(awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status") >> $3) & 1)) = 1 ]; }
echo "daemon $d: $(grep -E '^Cap(Prm|Eff|Bnd)' "/proc/$d/status" | paste -sd' ')"
check "its bounding set has no CAP_SYS_PTRACE" eval '! cap $d CapBnd 19'
check "nor CAP_NET_ADMIN" eval '! cap $d CapBnd 12'
check "nor CAP_SYS_ADMIN" eval '! cap $d CapBnd 21'
st=$(rqctl status)
sampler=$(echo "$st" | awk '$1 == "sampler" { print $2 }')
events=$(echo "$st" | awk '$1 == "latency_events" { print $2 }')
check "the daemon runs the bpf sampler, as promised for the default unit ($sampler)" \
	[ "$sampler" = bpf ]
check "and said so" journal_has "$c" '^running: sampler bpf'
check "its fork, exec and exit events come from BPF ($events)" [ "$events" = bpf ]
check "and it said so" journal_has "$c" '^latency: fork, exec and exit events from BPF'
# Once loaded, the daemon keeps neither CAP_PERFMON nor CAP_SYS_ADMIN in effect.
check "CAP_PERFMON dropped once loaded" eval '! cap $d CapEff 38'
# Nothing the default unit turns off: no notice of something unavailable, of a
# fallback to /proc or to the connector.
off=$(journal_after "$c" -u "$UNIT" -o cat |
	grep -Ei 'unavailable|no BPF|using the proc')
echo "notices of something off: ${off:-none}"
check "the daemon turned nothing off" [ -z "$off" ]
lat=$(rqctl latency 2>&1)
rc=$?
echo "rqctl latency: exit $rc"
echo "$lat" | head -n 5
check "rqctl latency answers (the wait histograms run)" [ $rc = 0 ]

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
st=$(rqctl status)
echo "$st" | grep -E '^latency_(events|overflows|rescans|rule_matches)'
# A walk of /proc (after lost events) would match it too: the exec event did.
check "with no event lost, so no walk of /proc found it" \
	[ "$(echo "$st" | awk '$1 == "latency_overflows" { print $2 }')" = 0 ]
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
# The daemon's own lines since the restart.
denied=$(journal_after "$c" -u "$UNIT" -o cat |
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
