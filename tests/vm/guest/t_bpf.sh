# The bpf sampler on this guest's kernel (Debian's, 6.1): it starts, says which way
# it reaches the run queues (the runqueues ksym where /proc/kallsyms names it, that
# is CONFIG_KALLSYMS_ALL; else the current task), lists a hog pinned to CPU 1 on
# CPU 1, and once running has CAP_PERFMON and CAP_SYS_ADMIN no longer effective. The
# other BPF programs load on 6.1 too: the run-queue wait histograms (rqctl latency
# answers), timing waits from the kernel's enqueue mark, and the fork, exec and exit
# events.
. /tests/lib.sh
REC=/tmp/$NAME.rec
hog 1
p=$(echo $HOGS)
DAEMON_CONF="sampler = bpf"
start_daemon -n --record "$REC"
check "the daemon runs" wait_running
check "with the bpf sampler" grep -q "running: sampler bpf" "$LOG"
check "the run-queue wait histograms load" grep -q "^rqbalanced: run-queue wait histograms: on" "$LOG"
check "timing waits from the kernel's enqueue mark" \
	grep -q "^rqbalanced: run-queue wait histograms: on (rqctl latency), waits from the enqueue$" "$LOG"
check "and the BPF event source" grep -q "^rqbalanced: latency: fork, exec and exit events from BPF" "$LOG"
grep "bpf: rq via\|capabilities:" "$LOG"
if grep -q ' runqueues$' /proc/kallsyms; then
	check "kallsyms names runqueues: rq via the runqueues ksym" \
		grep -q "bpf: rq via runqueues ksym" "$LOG"
else
	check "no runqueues in kallsyms: rq via the current task" \
		grep -q "bpf: rq via current task" "$LOG"
fi
eff=$((0x$(awk '/^CapEff/ { print $2 }' "/proc/$DPID/status")))
check "CAP_PERFMON no longer effective" [ $(((eff >> 38) & 1)) -eq 0 ]
check "CAP_SYS_ADMIN no longer effective" [ $(((eff >> 21) & 1)) -eq 0 ]
check "CAP_SYS_NICE still effective" [ $(((eff >> 23) & 1)) -eq 1 ]
# Five whole ticks more, each one snapshot recorded.
rqsync 5
# rqctl latency answers on 6.1 with waits counted (the hog and this shell wait).
LAT=/tmp/$NAME.latency
rqctl latency >"$LAT" 2>&1
head -3 "$LAT"
check "rqctl latency answers with a histogram" grep -q '^class .*: [1-9][0-9]* waits' "$LAT"
check "clean stop" stop_daemon TERM
n=$(grep -c "^task $p $p 1 " "$REC")
echo "the hog (pid $p) is listed on CPU 1 in $n of $(grep -c '^end' "$REC") snapshots"
check "the hog is listed on CPU 1 in 3 snapshots or more" [ "$n" -ge 3 ]
check "and never on another CPU" sh -c "! grep '^task $p ' '$REC' | grep -qv '^task $p $p 1 '"
cleanup
