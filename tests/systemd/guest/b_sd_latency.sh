# A benchmark, not a test (bench/latency-systemd boots the guest for it, with two
# CPUs): what a latency-nice value buys on a systemd host through the unit's
# CPUWeight. Two CPU hogs run in one scope of user-1000.slice, the wakeup-latency
# workload (wakelat, as bench/latency runs it) in another, both as rqbuser, beside
# the installed daemon on its shipped config:
#   A  no value;
#   B  -20 on the workload (rqctl set, as root: lowering needs CAP_SYS_NICE), given
#      before it starts, so its scope has CPUWeight 8668 throughout;
#   C  +19 on the hogs' shell and both hogs (rqctl set, as rqbuser: raising its own),
#      so their scope has CPUWeight 1.
# A, B and C run one after another in each round. Per run: the workload's p50, p99 and
# p99.9 wakeup delay (µs) and the hogs' CPU (their scope's usage_usec over the
# workload's wall time, in CPUs); then the medians per case and the ratios A/B and
# A/C. Under software emulation absolute times mean little; the ratios do.
# Arguments come from b_sd_latency.args beside it (ROUNDS=, SECS=, WORKLOAD=).
. /usr/local/lib/rqbt/lib.sh
ROUNDS=3
SECS=8
WORKLOAD="--workers 8 --interval-us 500"
[ -f /usr/local/lib/rqbt/b_sd_latency.args ] && . /usr/local/lib/rqbt/b_sd_latency.args
WAKELAT=/usr/local/lib/rqbt/wakelat
[ -x "$WAKELAT" ] || skip "no wakelat beside the bench (bench/latency-systemd adds it)"
base_state
SLICE=/sys/fs/cgroup/user.slice/user-$RQBUSER_UID.slice
echo "$(nproc) CPUs; user.slice enables: $(cat /sys/fs/cgroup/user.slice/cgroup.subtree_control);" \
	"user-$RQBUSER_UID.slice enables: $(cat $SLICE/cgroup.subtree_control)"
D=$(mktemp -d /run/rqbt/bench.XXXXXX)
chmod 755 "$D"
usage_of() { awk '$1 == "usage_usec" { print $2 }' "$SLICE/$1/cpu.stat"; }
# A run whose scopes do not have the weights the case is about: its figures mean nothing.
problem() { echo "PROBLEM: $*"; FAILED=1; }
now_us() { awk '{ printf "%d", $1 * 1000000 }' /proc/uptime; }

# run_case ROUND CASE: one run; appends "CASE p50 p99 p999 samples hogs_cpu" to $D/results.
run_case() {
	local rnd=$1 c=$2 hs=rqbt-b-hogs-$1$2 ws=rqbt-b-work-$1$2 hp wp h1 h2 u0 u1 t0 t1 out
	local fifo=$D/go-$rnd$c
	mkfifo -m 666 "$fifo"
	# The workload runs as rqbuser: its output file is rqbuser's.
	install -o "$RQBUSER_UID" -m 644 /dev/null "$D/out-$rnd$c"
	in_scope "$hs" sh -c "$WAKELAT --hog --seconds $((SECS * 4)) & $WAKELAT --hog --seconds $((SECS * 4)) & wait"
	hp=$P
	poll_until 60 eval '[ "$(pgrep -P '"$hp"' -c)" = 2 ]' || fail "the hogs did not start"
	read -r h1 h2 <<<"$(pgrep -P "$hp" | paste -sd' ')"
	if [ "$c" = C ]; then
		for p in "$hp" "$h1" "$h2"; do
			as_user rqctl set -l 19 -p "$p" >/dev/null || fail "rqctl set -l 19 -p $p as rqbuser"
		done
	fi
	# The workload waits on a FIFO, so that its value is in place before it measures.
	in_scope "$ws" sh -c "read _ <$fifo; exec $WAKELAT $WORKLOAD --seconds $SECS >$D/out-$rnd$c"
	wp=$P
	[ "$c" = B ] && { rqctl set -l -20 -p "$wp" >/dev/null || fail "rqctl set -l -20 -p $wp"; }
	echo "round $rnd $c: hogs $(weight_of "$hs.scope"), workload $(weight_of "$ws.scope")" >>"$D/weights"
	local wh wwl
	wh=$(weight_of "$hs.scope")
	wwl=$(weight_of "$ws.scope")
	case $c in
	A) [ "$wh" = "$wwl" ] && [ "$wh" != 8668 ] && [ "$wh" != 1 ] || problem "round $rnd A: a scope has a weight ($wh, $wwl)" ;;
	B) [ "$wwl" = 8668 ] || problem "round $rnd B: the workload's scope has CPUWeight $wwl, not 8668" ;;
	C) [ "$wh" = 1 ] || problem "round $rnd C: the hogs' scope has CPUWeight $wh, not 1" ;;
	esac
	u0=$(usage_of "$hs.scope")
	t0=$(now_us)
	echo go >"$fifo"
	wait "$wp"
	t1=$(now_us)
	u1=$(usage_of "$hs.scope")
	out=$(cat "$D/out-$rnd$c")
	[ "$(echo "$out" | wc -w)" = 4 ] || problem "round $rnd $c: wakelat printed '$out'"
	kill "$hp" "$h1" "$h2" 2>/dev/null
	wait "$hp" 2>/dev/null
	rqsync >/dev/null
	echo "$c $out $(awk -v u="$((u1 - u0))" -v t="$((t1 - t0))" 'BEGIN { printf "%.2f", u / t }')" >>"$D/results"
	echo "round $rnd $c: p50 p99 p99.9 samples hogs_cpu: $(tail -n1 "$D/results" | cut -d' ' -f2-)"
}

for rnd in $(seq 1 "$ROUNDS"); do
	for c in A B C; do
		run_case "$rnd" "$c"
	done
done
cat "$D/weights"
# Medians per case, then the ratios, as a Markdown table.
awk -v rounds="$ROUNDS" '
function median(c, f,   n, i, j, t, a) {
	n = 0
	for (i = 1; i <= NR; i++) if (cs[i] == c) a[++n] = v[i, f]
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ cs[NR] = $1; for (f = 2; f <= 6; f++) v[NR, f] = $f }
function r(a, b) { return a / (b > 0 ? b : 1) }
END {
	name["A"] = "A no value"; name["B"] = "B workload at -20"; name["C"] = "C hogs at +19"
	print "| case | p50 µs | p99 µs | p99.9 µs | hogs CPU |"
	print "|---|---|---|---|---|"
	for (k = 0; k < 3; k++) {
		c = substr("ABC", k + 1, 1)
		for (f = 2; f <= 6; f++) m[c, f] = median(c, f)
		printf "| %s | %d | %d | %d | %.2f |\n", name[c], m[c, 2], m[c, 3], m[c, 4], m[c, 6]
	}
	printf "medians of %d rounds; A/B: p50 %.2f, p99 %.2f, p99.9 %.2f, hogs CPU B/A %.2f; " \
		"A/C: p50 %.2f, p99 %.2f, p99.9 %.2f, hogs CPU C/A %.2f\n", rounds,
		r(m["A", 2], m["B", 2]), r(m["A", 3], m["B", 3]), r(m["A", 4], m["B", 4]), r(m["B", 6], m["A", 6]),
		r(m["A", 2], m["C", 2]), r(m["A", 3], m["C", 3]), r(m["A", 4], m["C", 4]), r(m["C", 6], m["A", 6])
}' "$D/results" | tee "$D/table"
while IFS= read -r line; do info "$line"; done <"$D/table"
rm -rf "$D"
