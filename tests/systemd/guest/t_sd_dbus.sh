# The D-Bus interface on the guest's real system bus, through the policy the package
# installs in /usr/share/dbus-1/system.d: the service owns org.rqbalance1 (and
# com.system76.Scheduler, which nothing else owns here), and busctl reaches it as root
# and as rqbuser. Root sets, reads and resets a sleeper's value, and its nice follows;
# rqbuser may raise its own process, lower it only as far as its RLIMIT_NICE allows,
# and not touch root's; SetForegroundProcess as root puts a process in front.
. /usr/local/lib/rqbt/lib.sh
POLICY=/usr/share/dbus-1/system.d/org.rqbalance1.conf
check "the package installed the bus policy" [ -f "$POLICY" ]
check "it belongs to the package" grep -qx "$POLICY" /var/lib/dpkg/info/rqbalance.list
c=$(cursor)
base_state
wait_journal "$c" "dbus: serving org\.rqbalance1 on the system bus" ||
	fail "the service does not serve org.rqbalance1"
ok "the service serves org.rqbalance1 on the system bus"
check "and owns com.system76.Scheduler, which nothing else owns here" \
	busctl status com.system76.Scheduler

lat() { busctl call org.rqbalance1 /org/rqbalance1 org.rqbalance1.Latency "$@"; }
user_lat() { as_user busctl call org.rqbalance1 /org/rqbalance1 org.rqbalance1.Latency "$@"; }
# A call as rqbuser that must be refused: busctl shows only the errno's text of an
# error it knows ("Access denied"), dbus-send its name and the daemon's message.
# user_refused "description" method args...: ok if AccessDenied, saying why.
user_refused() {
	local msg=$1 method=$2 r rc
	shift 2
	r=$(as_user dbus-send --system --print-reply --dest=org.rqbalance1 /org/rqbalance1 \
		"org.rqbalance1.Latency.$method" "$@" 2>&1)
	rc=$?
	echo "$method $* as rqbuser: exit $rc: $r"
	check "$msg" eval '[ $rc != 0 ] &&
		echo "$r" | grep -q "^Error org.freedesktop.DBus.Error.AccessDenied: permission denied: ."'
}

out=$(as_user busctl introspect org.rqbalance1 /org/rqbalance1 org.rqbalance1.Latency)
echo "$out"
check "rqbuser may introspect it: SetProcess(ui) -> u" \
	eval 'echo "$out" | grep -qE "^\.SetProcess +method +ui +u "'
check "and SetForeground(u) -> i" eval 'echo "$out" | grep -qE "^\.SetForeground +method +u +i "'

sleeper
root_s=$S
check "root: SetProcess on a sleeper of root's, 7" [ "$(lat SetProcess ui "$root_s" 7)" = "u 1" ]
check "gives it nice 7" [ "$(nice_of "$root_s")" = 7 ]
check "GetProcess says 7, from dbus uid 0" [ "$(lat GetProcess u "$root_s")" = 'is 7 "dbus uid 0"' ]
check "rqctl get agrees" eval 'rqctl get -p "$root_s" | grep -qx "source dbus uid 0"'
check "ResetProcess" [ "$(lat ResetProcess u "$root_s")" = "u 1" ]
check "gives nice 0 back" [ "$(nice_of "$root_s")" = 0 ]

check "a sleeper in rqbuser's user manager" \
	as_user systemd-run --user -q --unit=rqbt-dbus-sleep sleep 600
p=$(as_user systemctl --user show -P MainPID rqbt-dbus-sleep.service)
PIDS="$PIDS $p"
check "rqbuser: SetProcess on its own process, 5" [ "$(user_lat SetProcess ui "$p" 5)" = "u 1" ]
check "gives it nice 5" [ "$(nice_of "$p")" = 5 ]
user_refused "lowering it to 3 is refused, saying why" SetProcess uint32:"$p" int32:3
check "and leaves nice 5" [ "$(nice_of "$p")" = 5 ]
# Root here has CAP_SYS_RESOURCE (the integration test's container may not): with
# RLIMIT_NICE 17 the process may go down to 3, not below.
check "root raises its RLIMIT_NICE to 17" prlimit --pid "$p" --nice=17:17
check "then rqbuser may lower it to 3" [ "$(user_lat SetProcess ui "$p" 3)" = "u 1" ]
check "nice 3" [ "$(nice_of "$p")" = 3 ]
user_refused "but not to 2" SetProcess uint32:"$p" int32:2
check "which leaves nice 3" [ "$(nice_of "$p")" = 3 ]
check "RLIMIT_NICE back to 0" prlimit --pid "$p" --nice=0:0
user_refused "raising root's process is refused" SetProcess uint32:"$root_s" int32:10
check "and leaves it at nice 0" [ "$(nice_of "$root_s")" = 0 ]
r=$(as_user busctl call com.system76.Scheduler /com/system76/Scheduler com.system76.Scheduler \
	SetForegroundProcess u "$p" 2>&1)
rc=$?
echo "SetForegroundProcess as rqbuser, in no foreground_group: exit $rc: $r"
check "rqbuser may not put its process in front at -5 (RLIMIT_NICE 0)" [ $rc != 0 ]
check "which stays at nice 3" [ "$(nice_of "$p")" = 3 ]
check "root may reset rqbuser's process" [ "$(lat ResetProcess u "$p")" = "u 1" ]

check "root: SetForegroundProcess on its sleeper" busctl call com.system76.Scheduler \
	/com/system76/Scheduler com.system76.Scheduler SetForegroundProcess u "$root_s"
check "puts it in front at -5" [ "$(nice_of "$root_s")" = -5 ]
check "SetForeground(0) takes it out" lat SetForeground u 0
check "with nice 0 back" [ "$(nice_of "$root_s")" = 0 ]
as_user systemctl --user stop rqbt-dbus-sleep.service
