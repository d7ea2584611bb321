# Beside a sched_ext scheduler (issue #42): the kernel's own examples scx_simple and
# scx_flatcg, built from Debian's linux-source-7.3 by tests/vm/scx and put in the guest
# by tests/vm/run --scx. Not in the boot with isolcpus=domain (lib.sh's lb_off): the
# kernel refuses to load a sched_ext scheduler there (EINVAL at attach). So the
# kernel's balancing is on, and whether the daemon holds a pin when the scheduler comes
# depends on the kernel's moves; hogs are piled on LLC 0 just before, and the test
# prints how many pins were given back. Then, with scx_simple loaded:
# - the daemon says a sched_ext scheduler places tasks, every hog has every CPU (no pin
#   left behind), and it makes no pin while the scheduler is loaded (rqctl status:
#   placement_by sched_ext);
# - latency-nice goes on (a value still sets nice), and rqctl explain says what a
#   sched_ext scheduler does with the knobs;
# - unloaded, the daemon says who places again.
# The CPU share of hogs under each scheduler, for the record, is t_scx_share: together
# the two took up to 241 s of a test's 300 under the CI's load.
. /tests/lib.sh
need_llcs
need_scx
pile_on_llc0
DAEMON_CONF=$LONG_PINS
start_daemon
check "the daemon runs" wait_running
rqsync 5
pins=$(grep -c ' pin tid=' "$LOG")
echo "pins made before the scheduler: $pins"
# The daemon looks once a second. The kernel may unload the scheduler first (its
# watchdog ejects one that leaves a task runnable 30 s, or on a soft lockup, both of
# which an emulated guest on a busy host can trip): then what the daemon missed was
# never there to see, and the test says why and loads it once more. While it stays
# loaded, the daemon must say so.
# The daemon names the state it saw: "enabling" where it looked while the kernel was
# still switching the tasks over (a load of 4 s once), else "enabled"; it stands
# down at either.
SAYS="placement: sched_ext scheduler [^ ]* is [a-z]*: it places the tasks it takes; spread and placement stand down, pins given back"
said_or_unloaded() { log_has "$SAYS" 1 || ! scx_is enabled; }
for try in 1 2; do
	if scx_load scx_simple; then
		poll_until 1200 said_or_unloaded
		log_has "$SAYS" 1 && break
		scx_is enabled && fail "the daemon says a sched_ext scheduler places tasks: not in $LOG with scx_simple loaded"
		echo "the kernel unloaded scx_simple before the daemon looked: $(scx_why scx_simple)"
		scx_end
	fi
	[ $try = 2 ] && fail "the daemon says a sched_ext scheduler places tasks: scx_simple did not stay loaded"
done
ok "the daemon says a sched_ext scheduler places tasks"
rqsync 2
grep 'pins given back' "$LOG" || echo "(no pin was held when it loaded)"
for p in $HOGS; do
	[ "$p" = "$SCX" ] && continue
	check "hog $p has every CPU" [ "$(allowed "$p")" = "$ALL" ]
done
check "rqctl status: placement_by sched_ext" \
	sh -c "rqctl status | grep -q '^placement_by sched_ext: sched_ext scheduler '"
pins=$(grep -c ' pin tid=' "$LOG")
# Twenty whole ticks with the hogs where scx_simple puts them: no pin.
rqsync 20
scx_is enabled || fail "scx_simple stayed loaded for twenty ticks: $(scx_why scx_simple)"
check "no pin while it is loaded" [ "$(grep -c ' pin tid=' "$LOG")" -eq "$pins" ]
set -- $HOGS
H1=$1
check "rqctl set -l 10 on a hog" rqctl set -l 10 -p "$H1"
check "gives it nice 10 (the knob sched_ext passes on as the task's weight)" \
	[ "$(awk '{ print $19 }' "/proc/$H1/stat")" = 10 ]
rqctl explain -p "$H1" >/tmp/scx.explain 2>&1
cat /tmp/scx.explain
check "rqctl explain says a sched_ext scheduler decides" grep -q "sched_ext" /tmp/scx.explain
check "rqctl reset" rqctl reset -p "$H1"
scx_unload
# Unloaded: back to what placed before it, here the kernel's cache-aware scheduling
# beside the daemon (7.x, debugfs not mounted: found from the BTF), else the daemon alone.
if kconfig_has SCHED_CACHE; then
	check "unloaded: the daemon says the kernel places by cache again" \
		wait_log "placement: the kernel is built with cache-aware scheduling" 2
	check "rqctl status: placement_by kernel" \
		sh -c "rqctl status | grep -q '^placement_by kernel: '"
else
	check "unloaded: the daemon says it places again" \
		wait_log "placement: nothing else places tasks by cache now: spread and placement act"
	check "rqctl status: placement_by rqbalance" \
		sh -c "rqctl status | grep -q '^placement_by rqbalance$'"
fi
check "clean stop" stop_daemon TERM
cleanup
