# Helpers for the guest tests (busybox sh). A test exits 0 to pass, 77 to skip
# (its last line says why), anything else to fail; it prints what it checked.

HOGS=""
DPID=""
# Each test's own files: a log left by an earlier test must never answer a wait_log.
NAME=$(basename "$0" .sh)
LOG=/tmp/$NAME.daemon.log
CONF=/tmp/$NAME.conf
# Lines added after the [daemon] section that start_daemon writes ("sampler = bpf"
# goes into it; a line "[balance]" starts another section).
DAEMON_CONF=""

echo "test shell: pid $$, comm $(cat /proc/$$/comm)"

# RECORD: a test that starts its daemon with --record "$RECORD" has the snapshots
# printed when it fails, to be replayed as a unit test: the three that led to each
# plan (its "# plan" lines follow them), then the last 100 lines. (A pin made in the
# first ticks was once cut off by a plain tail.)
RECORD=""
print_record() {
	echo "--- snapshots ${RECORD#/tmp/}: the 3 before each plan (at most 300 lines) ---"
	awk '
	/^snapshot / { blk = "" }
	{ blk = blk $0 "\n" }
	/^end$/ { ring[n % 3] = blk; n++; next }
	/^# plan / {
		for (k = (n > 3 ? n - 3 : 0); k < n; k++)
			if (k > shown) { printf "%s", ring[k % 3]; shown = k }
		print
	}
	BEGIN { shown = -1 }' "$RECORD" | head -n 300
	echo "--- snapshots ${RECORD#/tmp/} (last 100 lines) ---"
	tail -n 100 "$RECORD"
}
fail() {
	echo "not ok: $* ($(when))"
	cleanup
	[ -n "$RECORD" ] && [ -e "$RECORD" ] && print_record
	exit 1
}
ok() { echo "ok: $*"; }

# check "description" command...
check() {
	msg=$1
	shift
	if "$@"; then ok "$msg"; else fail "$msg"; fi
}

cleanup() {
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	for p in $HOGS; do kill -KILL "$p" 2>/dev/null; done
	HOGS=""
	DPID=""
	lb_on
	for f in /tmp/"$NAME".daemon*.log; do
		[ -e "$f" ] || continue
		# Its end first: a digest of a long failure may keep only the lines that come
		# first, and what went wrong is at the end.
		echo "--- daemon log ${f#/tmp/}, its last 15 lines of $(wc -l <"$f") ---"
		tail -n 15 "$f"
		echo "--- daemon log ${f#/tmp/}, whole ---"
		cat "$f"
	done
}

# A CPU-bound task on the given CPU list; its pid is appended to HOGS. Returns once
# taskset has set the list and the task runs its loop: a release or a daemon started
# before that would race taskset's own sched_setaffinity.
hog() {
	taskset -c "$1" sh -c 'while :; do :; done' &
	HOGS="$HOGS $!"
	wait_hog "$!" "$1"
}

# Every wait of a test gives up by DEADLINE (seconds of uptime), a minute before the
# runner kills the test (TEST_LIMIT, its limit), so that a wait that gives up always
# has the time to say what it saw. (A wait of 300 tries once outlived the test's
# 300 s: a guest that runs slowly makes each try slow too.)
uptime_s() { local up _; read -r up _ </proc/uptime; echo "${up%.*}"; }
T0=$(uptime_s)
DEADLINE=$((T0 + ${TEST_LIMIT:-300} - 60))
past_deadline() { [ "$(uptime_s)" -ge "$DEADLINE" ]; }
# when: how far into the test, for a wait's message ("at 37 s of 240").
when() { echo "at $(($(uptime_s) - T0)) s of $((DEADLINE - T0))"; }

# kconfig_has OPT: the booted kernel has CONFIG_OPT=y (its config, put in /tests/kconfig
# by tests/vm/run). kver_ge MAJOR MINOR: it is that version or later.
kconfig_has() { grep -q "^CONFIG_$1=y" /tests/kconfig 2>/dev/null; }
kver_ge() {
	local v=$(uname -r) maj min
	maj=${v%%.*}
	v=${v#*.}
	min=${v%%[!0-9]*}
	[ "$maj" -gt "$1" ] || { [ "$maj" -eq "$1" ] && [ "$min" -ge "$2" ]; }
}

# poll_until tenths command...: runs command every tenth of a second until it
# succeeds (0), or gives up after that many tries, or at DEADLINE (1). Only for what
# the kernel or busybox does; the limit is a safety net, not a time the test expects.
poll_until() {
	local n=$1 i=0
	shift
	while [ $i -lt "$n" ] && ! past_deadline; do
		"$@" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	"$@"
}

# hog_runs pid list: the hog has exec'd its loop, with that CPU list.
hog_runs() {
	tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q 'while :' &&
		[ "$(allowed "$1")" = "$2" ]
}

# wait_hog pid list: the kernel's and busybox's doing (exec, affinity), so polled.
wait_hog() {
	poll_until 600 hog_runs "$1" "$2" || fail "hog $1 did not start its loop on CPUs $2"
}

allowed() { awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$1/status"; }
starttime() { awk '{ print $22 }' "/proc/$1/stat"; }
# Field 39 of stat (comm "sh" has no blank, so fields split plainly).
lastcpu() { awk '{ print $39 }' "/proc/$1/stat"; }
release() { for p in $HOGS; do taskset -pc "$1" "$p" >/dev/null; done; }

# The kernel's own load balancing off, so that an imbalance made by the test stays
# until rqbalanced moves something: the test then shows the daemon's work, not the
# kernel's. Through cgroup v1's cpuset.sched_load_balance where the kernel has it;
# kernels without it (CONFIG_CPUSETS_V1 off, Debian 13's 6.12 and Debian's 7.x) are
# booted for these tests with isolcpus=domain on every CPU but the first
# (tests/vm/run), which leaves no balancing domain at all. The kernel's cache-aware
# scheduling (7.2 and later) is switched off too, in debugfs, mounted where the daemon
# looks (it would otherwise stand its placement rules down for a balancer that has no
# domain to act in).
LB_DEBUGFS=""
lb_off() {
	if [ -e /sys/fs/cgroup/cpuset/cpuset.sched_load_balance ]; then
		echo 0 >/sys/fs/cgroup/cpuset/cpuset.sched_load_balance
	elif ! grep -q 'isolcpus=domain' /proc/cmdline; then
		fail "cannot switch the kernel's balancing off: no cgroup v1 cpuset, and the" \
			"guest was not booted with isolcpus=domain"
	fi
	if [ ! -e /sys/kernel/debug/sched ]; then
		mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null && LB_DEBUGFS=mounted
	fi
	if [ -e /sys/kernel/debug/sched/llc_balancing/enabled ]; then
		echo 0 >/sys/kernel/debug/sched/llc_balancing/enabled
		echo "the kernel's cache-aware scheduling: switched off"
		LB_DEBUGFS="$LB_DEBUGFS off"
	fi
}
lb_on() {
	local lb=/sys/fs/cgroup/cpuset/cpuset.sched_load_balance
	if [ -e $lb ]; then echo 1 >$lb; fi
	case $LB_DEBUGFS in *off) echo 1 >/sys/kernel/debug/sched/llc_balancing/enabled ;; esac
	case $LB_DEBUGFS in mounted*) umount /sys/kernel/debug ;; esac
	LB_DEBUGFS=""
}

# start_daemon [args...]: rqbalanced in the foreground, logging to $LOG, which is
# emptied here, before the daemon is started: a background job opens its redirection
# only once it runs, and a wait_log that came first would read the old lines. The
# test's shell (init runs it as "ash") is excluded: pinned, it would take every
# command the test runs after with it.
start_daemon() {
	printf '[daemon]\nlog_level = debug\ninterval_ms = 100\n%s\n[exclude]\ncomms = ash\n' \
		"$DAEMON_CONF" >"$CONF"
	: >"$LOG"
	rqbalanced -f -c "$CONF" "$@" >>"$LOG" 2>&1 &
	DPID=$!
}

# wait_running: the daemon has started its loop (and serves its ctl socket). A daemon
# that exited instead (a zombie until stop_daemon waits for it) fails at once.
daemon_gone() { [ "$(awk '/^State:/ { print $2 }' "/proc/$DPID/status" 2>/dev/null)" = Z ] ||
	[ ! -e "/proc/$DPID" ]; }
running_or_gone() { log_has "running: sampler" 1 || daemon_gone; }
wait_running() {
	poll_until 1200 running_or_gone
	log_has "running: sampler" 1 && return 0
	echo "the daemon did not start its loop; its log:"
	cat "$LOG"
	return 1
}

stop_daemon() { # signal
	kill "-$1" "$DPID"
	wait "$DPID"
	rc=$?
	DPID=""
	return $rc
}

# wait_log pattern [count]: until $LOG has count lines (default 1) that match. The
# limit, 120 s, is only a safety net for a daemon that never logs it: under software
# emulation a second means nothing, so no test gives a time of its own.
log_has() { [ "$(grep -c "$1" "$LOG" 2>/dev/null)" -ge "$2" ]; }
wait_log() {
	poll_until 1200 log_has "$1" "${2:-1}" && return 0
	echo "no ${2:-1} line(s) matching '$1' in $LOG ($(when))"
	return 1
}

# rqsync [ticks]: `rqctl sync` against the daemon's default socket
# /run/rqbalance/ctl.sock. Its answer comes once the daemon has handled every fork,
# exec and exit before the call and then ended a whole tick that began after it: what
# the daemon was to do about what the test did is done, so check the outcome at once.
# With ticks, syncs again until the daemon has ended that many ticks since the first
# answer: "and nothing more happens", counted in the daemon's ticks however slow the
# guest (a sync under busy CPUs spans many ticks, so counting syncs would not do).
rqsync() {
	local out t0
	out=$(rqctl sync 2>&1) || fail "rqctl sync: $out"
	t0=${out#ticks }
	while [ $((${out#ticks } - t0)) -lt "${1:-0}" ]; do
		past_deadline && fail "rqsync: $((${out#ticks } - t0)) of ${1:-0} ticks by the deadline"
		out=$(rqctl sync 2>&1) || fail "rqctl sync: $out"
	done
	echo "synced: $out (${1:-0} ticks wanted, $((${out#ticks } - t0)) seen)"
}

# For start_daemon's DAEMON_CONF, in a test that counts pins over ticks: a pin is
# released at max_pin_ms (10 s by default), a time, which a slow guest may reach
# while the test looks for churn. With a day, any release such a test sees comes from
# the load, not from the clock.
LONG_PINS='[balance]
max_pin_ms = 86400000'

# The machine as the kernel describes it: all CPUs, and the L3 group of a CPU.
ALL=$(cat /sys/devices/system/cpu/online)
llc_of() { cat "/sys/devices/system/cpu/cpu$1/cache/index3/shared_cpu_list"; }
LLC0=$(llc_of 0)
# in_list cpu list: is cpu in a kernel CPU list such as "0-1,4"?
in_list() {
	echo "$2" | awk -v c="$1" -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-");
		lo = r[1]; hi = n > 1 ? r[2] : r[1]; if (c >= lo && c <= hi) f = 1 } }
		END { exit !f }'
}
list_len() { echo "$1" | awk -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-");
		s += n > 1 ? r[2] - r[1] + 1 : 1 } print s }'; }
NLLC0=$(list_len "$LLC0")

on_llc0() { in_list "$(lastcpu "$1")" "$LLC0"; }
# pinned_away pid: narrowed to exactly one other LLC's CPUs, and running there.
pinned_away() {
	a=$(allowed "$1")
	c=$(lastcpu "$1")
	[ "$a" != "$ALL" ] && [ "$a" = "$(llc_of "$c")" ] && [ "$a" != "$LLC0" ]
}
count_pinned() {
	local n=0 p
	for p in $HOGS; do pinned_away "$p" && n=$((n + 1)); done
	echo $n
}
# hog_pins: how many pin lines in $LOG name one of the hogs.
hog_pins() {
	local n=0 p
	for p in $HOGS; do
		grep -q " pin tid=$p " "$LOG" && n=$((n + 1))
	done
	echo $n
}
# wait_hog_pins count: until the daemon has logged pins of count hogs (an event), then
# one sync, so that those pins have also been written: check their outcome at once.
# The wait is counted in the daemon's ticks (600, a minute at full speed), one sync at
# a time, not in polls of the log: a slow guest's polls once outlasted the test's
# 300 s before the wait gave up. Giving up, it says what the daemon saw and did. The
# test's shell waits on LLC 0: its syncs and greps are load, and on another LLC they
# hid the idle CPU a second hog was to go to (seen: one of two pinned after 600
# ticks, a CPU of LLC 1 busy with the test's own commands).
hog_pins_at_least() { [ "$(hog_pins)" -ge "$1" ]; }
wait_hog_pins() {
	local out t0 t r=0
	taskset -pc "$LLC0" $$ >/dev/null
	wait_hog_pins_here "$1" || r=1
	taskset -pc "$ALL" $$ >/dev/null
	return $r
}
wait_hog_pins_here() {
	local out t0 t
	out=$(rqctl sync 2>&1) || fail "rqctl sync: $out"
	t0=${out#ticks }
	t=$t0
	while ! hog_pins_at_least "$1"; do
		if [ $((t - t0)) -ge 600 ] || past_deadline; then
			echo "$(hog_pins) of $1 hogs pinned after $((t - t0)) ticks; the hogs:"
			for p in $HOGS; do echo "hog $p: allowed $(allowed "$p"), cpu $(lastcpu "$p")"; done
			rqctl status
			grep -E ' (un)?pin tid=' "$LOG"
			return 1
		fi
		out=$(rqctl sync 2>&1) || fail "rqctl sync: $out"
		t=${out#ticks }
	done
	rqsync
	hog_pins_at_least "$1"
}
# 2 x |LLC 0| hogs on LLC 0, then allowed every CPU: with the kernel's balancing off
# they stay piled there until something moves them.
pile_on_llc0() {
	local i=0
	while [ $i -lt $((2 * NLLC0)) ]; do hog "$LLC0"; i=$((i + 1)); done
	release "$ALL"
}

# Two LLCs or more, each of two CPUs or more, or the test cannot say anything.
need_llcs() {
	if [ "$(llc_of 0)" = "$ALL" ] || [ "$NLLC0" -lt 2 ]; then
		echo "needs two LLCs of two CPUs or more (this guest: LLC0 $LLC0 of $ALL)"
		exit 77
	fi
}

# For t_scx and t_scx_share: a sched_ext scheduler of the kernel's examples
# (tests/vm/scx builds them, tests/vm/run --scx puts them in /bin). need_scx skips a
# test without. scx_load NAME starts one (its pid in SCX and HOGS) and waits until
# the kernel has enabled it: it returns 1 when the kernel had already unloaded it
# again (its watchdog ejects a scheduler that leaves a task runnable 30 s, which an
# emulated guest on a busy host can trip: scx_why says why), and fails when it never
# loaded. The kernel counts each scheduler it enables (enable_seq), so that
# scx_stayed can say the one scx_load saw was loaded all along since. scx_unload
# stops it and waits until the kernel says disabled.
need_scx() {
	[ -e /sys/kernel/sched_ext/state ] || { echo "no sched_ext in this kernel"; exit 77; }
	[ -e /sys/kernel/sched_ext/enable_seq ] ||
		{ echo "this kernel's sched_ext counts no enables (enable_seq came in 6.12)"; exit 77; }
	command -v scx_simple >/dev/null ||
		{ echo "no scx_simple in this guest (tests/vm/run --scx DIR; tests/vm/scx builds it)"; exit 77; }
}
scx_state() { cat /sys/kernel/sched_ext/state; }
scx_seq() { cat /sys/kernel/sched_ext/enable_seq; }
# scx_why NAME: what the kernel and the scheduler said when it unloaded.
scx_why() {
	echo "the kernel says $(scx_state); $1 printed: $(tail -n 5 "/tmp/$1.out");" \
		"dmesg: $(dmesg | grep -i 'sched_ext' | tail -n 3)"
}
scx_is() { [ "$(scx_state)" = "$1" ]; }
SCX="" SCX_SEQ=""
scx_came() { scx_is enabled || [ "$(scx_seq)" != "$SCX_SEQ" ]; }
scx_load() {
	local t=$(uptime_s)
	SCX_SEQ=$(scx_seq)
	"$1" >"/tmp/$1.out" 2>&1 &
	SCX=$!
	HOGS="$HOGS $SCX"
	poll_until 600 scx_came || fail "$1 did not load: $(scx_state); $(cat "/tmp/$1.out")"
	if ! scx_is enabled; then
		echo "$1 loaded, and the kernel unloaded it before the test looked: $(scx_why "$1")"
		scx_end
		return 1
	fi
	SCX_SEQ=$(scx_seq)
	echo "$1 loaded in $(($(uptime_s) - t)) s: ops $(cat /sys/kernel/sched_ext/root/ops)"
}
scx_stayed() { scx_is enabled && [ "$(scx_seq)" = "$SCX_SEQ" ]; }
# scx_end: the scheduler process stopped (if the kernel has not stopped it) and reaped.
scx_end() {
	kill -INT "$SCX" 2>/dev/null
	wait "$SCX" 2>/dev/null
	SCX=""
}
scx_unload() {
	scx_end
	poll_until 600 scx_is disabled || fail "the scheduler did not unload: $(scx_state)"
}

# cgroup2 for a test: the guest boots with its cpu controller in cgroup v1. use_cgroup2
# RC unmounts v1's cpu hierarchy and mounts cgroup2 at V2 until exit, and exits RC
# where cgroup2 does not get the cpu controller. At exit, v1_back puts back the cgroup
# mode the kernel booted in (use_debugfs noted it), runs the test's own cgroup2_undo
# where it defines one, unmounts debugfs where use_debugfs mounted it, and mounts v1's
# cpu hierarchy again.
V2=/sys/fs/cgroup/unified
MODE_FILE=/sys/kernel/debug/sched/cgroup_mode
DEBUGFS=""
BOOT_MODE=""
v1_back() {
	[ -n "$BOOT_MODE" ] && echo "$BOOT_MODE" >$MODE_FILE
	command -v cgroup2_undo >/dev/null && cgroup2_undo
	[ -n "$DEBUGFS" ] && umount /sys/kernel/debug
	umount $V2
	mount -t cgroup -o cpu cgroup /sys/fs/cgroup/cpu
}
use_cgroup2() {
	umount /sys/fs/cgroup/cpu || fail "cannot unmount the v1 cpu hierarchy"
	mkdir -p $V2
	mount -t cgroup2 none $V2 || fail "cannot mount cgroup2"
	trap v1_back EXIT
	# A v1 hierarchy lets its controllers go only once it is destroyed, a moment later:
	# the kernel's doing, so polled, with a limit only as a safety net.
	poll_until 600 grep -qw cpu $V2/cgroup.controllers || {
		echo "cgroup2 has no cpu controller here: $(cat $V2/cgroup.controllers)"
		exit "$1"
	}
}
# "up smp (concur) max tasks": the one in parentheses is in force.
mode_now() { sed 's/.*(\(.*\)).*/\1/' $MODE_FILE 2>/dev/null || echo unknown; }
# debugfs, where the scheduler's cgroup mode is (7.3), mounted if it is not; the mode
# the kernel booted in noted, for v1_back.
use_debugfs() {
	if [ ! -e /sys/kernel/debug/sched ]; then
		mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null && DEBUGFS=mounted
	fi
	[ -e $MODE_FILE ] && BOOT_MODE=$(mode_now)
}

# ---- class shares (t_class_share, t_eight) ----
# CPU time of the listed tasks in microseconds: the scheduler's own sum_exec_runtime
# (/proc/PID/schedstat, ns), not utime + stime, which are sampled at the tick: a task
# whose slice is shorter than a tick is seen running at the ticks by its luck.
cputime() { local s=0 p; for p in "$@"; do s=$((s + $(awk '{ print int($1 / 1000) }' "/proc/$p/schedstat"))); done; echo $s; }
# What the kernel gives each class's group entity on each CPU (se->load.weight in
# debugfs, scaled by 1024), for a failure's reader: the kernel's own multiplier.
entity_weights() {
	[ -r /sys/kernel/debug/sched/debug ] || return 0
	awk '/^cfs_rq\[/ { g = $0 } /se->load.weight/ && g ~ /rqbalance-lat/ {
		sub(/^cfs_rq\[/, "", g); sub(/\]:\/rqbalance-lat/, " ", g); printf " cpu%s:%d", g, $NF / 1024 }' \
		/sys/kernel/debug/sched/debug
	echo
}
# entity_ok CLASS WEIGHT: on every CPU where class CLASS has an entity, the kernel gives
# it WEIGHT (cpu.shares' unit) within 4 % (the cgroup2 weight's rounding to a hundredth
# of 1024, and a load average a little stale): what the daemon undoes is the kernel's
# multiplier, read back. Not the shares' noise: the kernel's arithmetic, exact.
# A third argument is another weight the kernel may give (7.3's concur counting N, not
# N - 1: t_class_share's measure).
entity_ok() {
	awk -v c="$1" -v e="$2" -v f="${3:-$2}" '/^cfs_rq\[/ { g = $0 }
		/se->load.weight/ && g ~ ("/rqbalance-lat" c "$") { n++; w = $NF / 1024
			if ((w < e * 0.96 || w > e * 1.04) && (w < f * 0.96 || w > f * 1.04)) bad++ }
		END { exit !(n > 0 && !bad) }' /sys/kernel/debug/sched/debug
}
in_range() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
ordered() { [ "$1" -gt "$2" ] && [ "$2" -gt "$3" ]; }
# The share a of b, in %.
pct() { echo $((100 * $1 / $2)); }
# Class V's cgroup2 cpu.weight.
weight() { cat "$V2/rqbalance-lat$1/cpu.weight"; }
