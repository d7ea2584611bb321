# Helpers for the systemd tier's guest tests (bash, as root, on a host whose PID 1 is
# systemd). A test exits 0 to pass, 77 to skip (its last line says why), anything else
# to fail; it prints what it checked, and on failure the unit's state and journal.
# Tests wait for events (a unit's state, a journal line, `rqctl sync`); the limits of
# the waits are safety nets only: under software emulation a second means little.

NAME=$(basename "$0" .sh)
UNIT=rqbalance.service
SOCKET=rqbalance.socket
CONF=/etc/rqbalance/rqbalance.conf
# The shipped config, kept by t_sd_install: each test starts from it.
ORIG_CONF=/var/lib/rqbt/rqbalance.conf.orig
DROPINS=/etc/systemd/system/rqbalance.service.d
RULES_D=/etc/rqbalance/rules.d
# What the daemon writes where the unit lets it: node_exporter's textfile directory.
METRICS_DIR=/var/lib/prometheus/node-exporter
INFO=/run/rqbt/info
PIDS=""
UNITS=""

FAILED=0
fail() { echo "not ok: $*"; diag; exit 1; }
ok() { echo "ok: $*"; }
skip() { echo "$*"; exit 77; }
# check "description" command...: the test stops at the first that fails.
check() {
	local msg=$1
	shift
	if "$@"; then ok "$msg"; else fail "$msg"; fi
}
# expect "description" command...: the test fails, but goes on to what does not
# depend on it (and shows it).
expect() {
	local msg=$1
	shift
	if "$@"; then ok "$msg"; else echo "not ok: $msg"; FAILED=1; fi
}
# info text: a line the host prints in its summary (scores, timings).
info() {
	echo "info: $*"
	echo "$NAME: $*" >>"$INFO"
}

# Every wait gives up by DEADLINE ($SECONDS), a minute and a half before the runner
# kills the test (RQBT_LIMIT), so that a wait that gives up can say what it saw.
DEADLINE=$((SECONDS + ${RQBT_LIMIT:-900} - 90))

# poll_until seconds command...: runs command every 0.2 s until it succeeds, or gives up
# after that many seconds or at DEADLINE (a safety net, never a time the test expects).
poll_until() {
	local end=$((SECONDS + $1))
	shift
	[ $end -le $DEADLINE ] || end=$DEADLINE
	while [ $SECONDS -lt $end ]; do
		"$@" && return 0
		sleep 0.2
	done
	"$@"
}

# The journal: a cursor taken now, and what came after one. `journalctl --sync` first,
# so that every line written before the call is in (a line's absence means something).
cursor() { journalctl -q -n1 -o export | sed -n 's/^__CURSOR=//p'; }
journal_after() { # cursor [journalctl args...]
	local c=$1
	shift
	journalctl --sync
	journalctl -q --no-pager --after-cursor="$c" "$@"
}
journal_has() { journal_after "$1" -u "$UNIT" -o cat | grep -qE -- "$2"; }
# wait_journal cursor regex: until a line of the unit's journal after cursor matches.
wait_journal() {
	poll_until 120 journal_has "$1" "$2" && return 0
	echo "no journal line of $UNIT matching '$2'"
	return 1
}
T0=$(cursor)

is_active() { [ "$(systemctl is-active "$1")" = active ]; }
main_pid() { systemctl show -P MainPID "$UNIT"; }
# wait_active unit: until systemd says active (a start job of a Type=notify service
# ends on READY=1).
wait_active() { poll_until 120 is_active "$1"; }

# rqsync: `rqctl sync` answers once the daemon has handled every fork, exec and exit
# before the call and ended a tick begun after it: what the test did has been acted on.
rqsync() {
	local out
	out=$(rqctl sync 2>&1) || fail "rqctl sync: $out"
	echo "synced: $out"
}

# The task's state as the kernel shows it: nice, policy (0 normal, 3 batch, 5 idle),
# EEVDF slice (6.6 and later; empty before), allowed CPUs.
nice_of() { awk '{ print $19 }' "/proc/$1/stat"; }
policy_of() { awk '{ print $41 }' "/proc/$1/stat"; }
slice_of() { awk '$1 == "se.slice" { print $3 }' "/proc/$1/sched" 2>/dev/null; }
allowed_of() { awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$1/status"; }
task_state() { echo "nice $(nice_of "$1") policy $(policy_of "$1") slice $(slice_of "$1") cpus $(allowed_of "$1")"; }

# sleeper: a process of the test's own; its pid in $S (and in PIDS, killed at exit).
sleeper() {
	sleep 600 &
	S=$!
	PIDS="$PIDS $S"
	# Once it runs sleep (the exec is the kernel's doing, so polled).
	poll_until 60 grep -qx sleep "/proc/$S/comm"
}

# rqbuser, the guest's unprivileged user (mkroot makes it): its uid; a command as it,
# with its user manager's runtime directory; a unit's CPUWeight.
RQBUSER_UID=$(id -u rqbuser 2>/dev/null)
as_user() { runuser -u rqbuser -- env XDG_RUNTIME_DIR=/run/user/$RQBUSER_UID "$@"; }
weight_of() { systemctl show -P CPUWeight "$1"; }

# in_scope NAME CMD...: CMD as rqbuser in a new scope NAME in user-$RQBUSER_UID.slice,
# as on a host where a user runs a command in a scope of its own. systemd-run --scope
# execs the command, and setpriv execs it too: its pid is in $P, killed at exit, and
# the scope stopped. Returns once the scope is active and runs CMD.
in_scope() {
	local name=$1
	shift
	systemd-run -q --scope --unit="$name" --slice="user-$RQBUSER_UID.slice" \
		setpriv --reuid="$RQBUSER_UID" --regid="$RQBUSER_UID" --clear-groups "$@" &
	P=$!
	PIDS="$PIDS $P"
	UNITS="$UNITS $name.scope"
	poll_until 60 is_active "$name.scope" || fail "$name.scope did not start"
	poll_until 60 grep -qx "$(basename "$1")" "/proc/$P/comm" || fail "$1 did not start"
}

# The package's state as installed, each test's start: the shipped config, no drop-in
# or rule of a test's, both units enabled, the service started anew and ready.
base_state() {
	cp "$ORIG_CONF" "$CONF"
	rm -rf "$DROPINS" "$RULES_D"/rqbt-*.conf
	systemctl daemon-reload
	systemctl enable -q "$SOCKET" "$UNIT"
	systemctl start "$SOCKET"
	systemctl restart "$UNIT" || fail "systemctl restart $UNIT"
	is_active "$UNIT" || fail "$UNIT is not active after a restart"
}

diag() {
	echo "--- systemctl status $UNIT ---"
	systemctl status --no-pager -l "$UNIT" 2>&1 | tail -n 20
	echo "--- journal of $UNIT since the test began ---"
	journal_after "$T0" -u "$UNIT" -u "$SOCKET" -o short-monotonic | tail -n 60
}

cleanup() {
	local rc=$? p u
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	for u in $UNITS; do systemctl stop "$u" 2>/dev/null; done
	# A test that reached its end passed unless an expect failed; one that stopped
	# early said why (fail, skip).
	if [ $FAILED = 1 ]; then
		[ $rc = 0 ] && diag
		exit 1
	fi
	exit $rc
}
trap cleanup EXIT

echo "test $NAME on $(. /etc/os-release && echo "$PRETTY_NAME"), Linux $(uname -r)"
