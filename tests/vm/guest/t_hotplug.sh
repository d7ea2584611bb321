# A CPU going offline while the daemon runs (LLCs 0-1 and 2-3, CPU 3 unplugged): the
# daemon leaves it out of its LLC, so it counts no idle CPU there and pins nothing to
# it: one hog goes to CPU 2 alone. Back online, CPU 3 takes a second hog (2-3).
# min_llc_cores = 1 lets the daemon spread to an LLC left with one core, as this test
# follows the CPU itself; by default (2) it would pin nothing there at all.
. /tests/lib.sh
need_llcs
LAST=$(echo "$ALL" | awk -F- '{ print $NF }')
OFF=/sys/devices/system/cpu/cpu$LAST/online
if [ ! -w "$OFF" ]; then
	echo "CPU $LAST cannot be taken offline in this guest"
	exit 77
fi
LLCN=$(llc_of "$LAST")
if [ "$(list_len "$LLCN")" -ne 2 ]; then
	echo "needs two CPUs in CPU $LAST's LLC, not $LLCN"
	exit 77
fi
FIRST=${LLCN%-*}
# The kernel's default slice follows the online CPUs, and a value's slice is a ratio of
# it: from 6.12 the daemon's status shows the one a fresh task gets (se.slice, in ns),
# read again when a CPU goes or comes.
kernel_slice() { awk '/^se.slice/ { split($3, a, "."); print a[1] }' /proc/self/sched; }
status_slice() { rqctl status | awk '$1 == "sched_default_slice_ns" { print $2 }'; }
same_slice() { [ "$(status_slice)" = "$(kernel_slice)" ]; }
trap 'echo 1 >"$OFF" 2>/dev/null' EXIT
# pinned_to list: how many hogs have exactly that affinity.
pinned_to() {
	local n=0 p
	for p in $HOGS; do [ "$(allowed "$p")" = "$1" ] && n=$((n + 1)); done
	echo $n
}
lb_off
# The proc sampler reads every CPU afresh each tick; how the bpf sampler's per-CPU perf
# events take a CPU that comes back is its own matter (t_bpf).
DAEMON_CONF="sampler = proc
$LONG_PINS
min_llc_cores = 1"
start_daemon
check "the daemon runs" wait_running
check "with the proc sampler" grep -q "running: sampler proc" "$LOG"
echo 0 >"$OFF"
check "it sees CPU $LAST go offline" wait_log "CPU $LAST went offline"
if kver_ge 6 12; then
	echo "default slice: kernel $(kernel_slice), rqctl status $(status_slice)"
	check "rqctl status has the kernel's default slice with CPU $LAST offline" \
		poll_until 100 same_slice
fi
pile_on_llc0
for p in $HOGS; do echo "hog $p: allowed $(allowed "$p")"; done
check "a hog is pinned" wait_hog_pins 1
check "one hog is pinned to CPU $FIRST alone" [ "$(pinned_to "$FIRST")" -eq 1 ]
# Twenty whole ticks more: the policy counts an idle CPU seen two ticks in a row.
rqsync 20
for p in $HOGS; do echo "hog $p: allowed $(allowed "$p"), cpu $(lastcpu "$p")"; done
check "and no more: CPU $LAST is not counted idle" [ "$(grep -c ' pin tid=' "$LOG")" -eq 1 ]
check "no pin names CPU $LAST" sh -c "! grep ' pin tid=' '$LOG' | grep -q 'cpus=[^ ]*$LAST'"

echo 1 >"$OFF"
check "it sees CPU $LAST come back" wait_log "CPU $LAST online again"
if kver_ge 6 12; then
	echo "default slice: kernel $(kernel_slice), rqctl status $(status_slice)"
	check "and with CPU $LAST back" poll_until 100 same_slice
fi
# The kernel narrowed the hogs' masks while CPU $LAST was away: give the others it back.
for p in $HOGS; do
	[ "$(allowed "$p")" = "$FIRST" ] || taskset -pc "$ALL" "$p" >/dev/null
done
# With the kernel's balancing off, a hog pinned to $LLCN may land beside the one on CPU
# $FIRST while CPU $LAST idles, and the daemon may then send one more: at least one.
# Asked of the daemon's log, not of the hogs' masks: the daemon may pin a hog before
# the loop above widens it, and then the loop's own taskset undoes that pin (the daemon
# leaves a mask someone else set), as it did on 7.3, where the daemon came sooner.
check "a second hog is pinned, to $LLCN" wait_log "pin tid=[0-9]* .* cpus=$LLCN why="
check "the first stays on CPU $FIRST" [ "$(pinned_to "$FIRST")" -eq 1 ]
check "SIGTERM stops it cleanly" stop_daemon TERM
check "every pin is given back" [ "$(pinned_to "$FIRST") $(pinned_to "$LLCN")" = "0 0" ]
cleanup
