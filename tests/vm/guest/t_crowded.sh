# A crowded run queue beside the bpf sampler, on the last CPU: more runnable tasks
# than a sample lists (RQS_MAX_TASKS, 32). On Debian 12's 6.1 the verifier checked the
# list walk's bpf_loop() callback as if it ran once, took the count of listed tasks
# for the constant 0 and removed the bound on it as dead code: entries were written
# past the CPU's record, past the map on the last CPU, and the kernel panicked in the
# sample's interrupt. The guest must survive, the daemon run on, and the CPU's count
# say every hog is there although no sample lists them all.
. /tests/lib.sh
LAST=$(echo "$ALL" | awk -F'[-,]' '{ print $NF }')
N=48
DAEMON_CONF="sampler = bpf"
start_daemon
check "the daemon runs" wait_running
check "with the bpf sampler" grep -q "running: sampler bpf" "$LOG"
for k in $(seq 1 $N); do
	taskset -c "$LAST" sh -c 'while :; do :; done' &
	HOGS="$HOGS $!"
done
# The hogs are on CPU $LAST's run queue once each has run there.
for p in $HOGS; do wait_hog "$p" "$LAST"; done
# Twenty whole ticks of samples, each walking the crowded queue many times.
rqsync 20
check "the daemon still runs" [ -e "/proc/$DPID" ]
llc=$(rqctl status | awk -v c="$LAST" '$1 == "llc" { n = split($4, r, "[-,]"); if (r[n] == c) print $6 }')
echo "LLC of CPU $LAST: $llc runnable"
check "the count holds every hog ($llc, $N started)" [ "${llc:-0}" -ge "$N" ]
check "clean stop" stop_daemon TERM
cleanup
