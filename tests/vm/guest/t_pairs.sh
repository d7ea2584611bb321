# Wake pairs, live: on each CPU of LLC 0 a CPU hog held there (a user narrowed it: the
# daemon never moves it, but it counts as load) and a pair of shells that ping-pong a
# byte through two fifos (each wakes the other), the other LLC idle, the kernel's own
# balancing off so that nothing moves but what the daemon pins. The pairs are held
# to LLC 0 until the daemon has seen them, then allowed every CPU: the only tasks it
# may move are pair members. With keep_pairs = no it pins members away from their
# partners; with keep_pairs = yes (the bpf sampler notes who wakes whom at sched_waking) a
# member whose partner sleeps beside it stays, and no pin splits a pair. One CPU of
# LLC 1 is held busy too, so that a pin moves one task and a pair has nowhere to move
# whole. The test's shell stays on LLC 0, where its commands hide no idle CPU. Both
# counts are printed.
. /tests/lib.sh
need_llcs
A=${LLC0%%[,-]*}
B=$(echo "$LLC0" | awk -F'[-,]' '{ print $2 }')
C=$(echo "$ALL" | awk -F'[-,]' '{ print $NF }')
PAIRS=""

# pair cpu: two shells that ping-pong a byte through two fifos on cpu, each waking
# the other in turn; their pids go in PAIRS as first:second. (A pipe's writer and
# reader are no pair: where the reader keeps up, it never wakes the writer.)
pair() {
	local f=/tmp/pair.$1 a b
	rm -f "$f".1 "$f".2
	mkfifo "$f".1 "$f".2
	taskset -c "$1" sh -c "exec 3<>$f.2 4<>$f.1; while :; do echo x >&4; read -r y <&3; done" &
	a=$!
	taskset -c "$1" sh -c "exec 3<>$f.1 4<>$f.2; while :; do read -r y <&3; echo x >&4; done" &
	b=$!
	HOGS="$HOGS $a $b"
	PAIRS="$PAIRS $a:$b"
}

# seen_pairs: the daemon's record lists every pair's tasks with each other as partner.
seen_pairs() {
	local p y c
	for p in $PAIRS; do
		y=${p%:*}
		c=${p#*:}
		grep -q "^task $y .* partner=$c@" /tmp/pairs.rec || return 1
		grep -q "^task $c .* partner=$y@" /tmp/pairs.rec || return 1
	done
}

# pinned_llc pid: the target LLC of the daemon's last pin of pid in $LOG, or "-".
pinned_llc() {
	grep " pin tid=$1 " "$LOG" | tail -n1 | sed -n 's/.* llc=[0-9]*->\([0-9]*\) .*/\1/p' |
		grep . || echo -
}

# splits whole_ok: pins that split a pair when they were made, read in the log's
# order: a pin of one member to an LLC splits its pair unless the partner is pinned
# there already or, with whole_ok 1, is the very next pin, to the same LLC (a pair
# moved whole, in one tick). With one move a tick (the keep_pairs = no case) the next
# pin is a later tick's: whole_ok 0, the partner was left behind for a tick at least.
splits() {
	grep ' pin tid=' "$LOG" | sed -n 's/.* pin tid=\([0-9]*\) .* llc=[0-9]*->\([0-9]*\) .*/\1 \2/p' |
		awk -v pairs="$PAIRS" -v whole_ok="$1" '
		BEGIN { n = split(pairs, ps, " "); for (i = 1; i <= n; i++) {
			split(ps[i], m, ":"); partner[m[1]] = m[2]; partner[m[2]] = m[1] } }
		{ tid[NR] = $1; llc[NR] = $2 }
		END {
			for (i = 1; i <= NR; i++) {
				t = tid[i]; p = partner[t]; at[t] = llc[i]
				if (p == "") continue
				if (at[p] == llc[i]) continue
				if (whole_ok && tid[i + 1] == p && llc[i + 1] == llc[i]) {
					at[p] = llc[i]; i++; continue
				}
				s++
			}
			print s + 0
		}'
}

# as_sampled: what the sampler said of each pair's tasks in the record: how many
# snapshots listed it on which CPU, with which partner.
as_sampled() {
	local p t
	for p in $PAIRS; do
		for t in ${p%:*} ${p#*:}; do
			echo "task $t as sampled: $(grep "^task $t " /tmp/pairs.rec |
				awk '{ print $4, $10 }' | sort | uniq -c | tr '\n' ';')"
		done
	done
}

# free_pairs list: the pairs' tasks allowed the CPUs in list (the hogs stay held).
free_pairs() {
	local p
	for p in $PAIRS; do taskset -pc "$1" "${p%:*}" >/dev/null; taskset -pc "$1" "${p#*:}" >/dev/null; done
}

pins_at_least() { [ "$(grep -c ' pin tid=' "$LOG")" -ge "$1" ]; }

# run_case keep_pairs: the workload, a daemon with keep_pairs as given for fifty ticks
# after the pairs are free to move, then its pins and the splits they made.
run_case() {
	HOGS=""
	PAIRS=""
	taskset -pc "$LLC0" $$ >/dev/null
	lb_off
	hog "$A"
	hog "$B"
	# One CPU of LLC 1 held busy too: one idle CPU there, so a pin moves one task, and
	# a pair can move whole only where two CPUs are free: nowhere.
	hog "$C"
	pair "$A"
	pair "$B"
	# Two CPUs, not one: the kernel records who wakes whom only for a task that may
	# run on more than one CPU.
	free_pairs "$LLC0"
	# Without keep_pairs, one move a tick: the control case must show a split, and two
	# moves in one tick could carry both members of a pair by chance (CI once saw
	# tids 670 and 671, one pair, pinned one after the other, and counted no split).
	DAEMON_CONF="sampler = bpf
$LONG_PINS
keep_pairs = $1"
	[ "$1" = no ] && DAEMON_CONF="$DAEMON_CONF
max_moves_per_tick = 1"
	rm -f /tmp/pairs.rec
	start_daemon --record /tmp/pairs.rec
	check "the daemon runs (keep_pairs = $1)" wait_running
	grep "wake-pairs" "$LOG"
	if [ "$1" = yes ]; then
		T0=$(cut -d' ' -f1 /proc/uptime)
		# The wait gives up before the runner's limit (lib.sh's DEADLINE) and then
		# says what the sampler made of each task, and which pairs it logged.
		if ! poll_until 1200 seen_pairs; then
			as_sampled
			grep -E "wake each other|no pair:" "$LOG"
			fail "the daemon never saw both pairs ($PAIRS)"
		fi
		ok "it sees both pairs after $(awk "BEGIN { print $(cut -d' ' -f1 /proc/uptime) - $T0 }") s"
	else
		rqsync 5
	fi
	free_pairs "$ALL"
	if [ "$1" = no ]; then
		check "it pins pair members to the idle LLC" poll_until 1200 pins_at_least 1
	fi
	# Fifty whole ticks: time for the pins still to come (and, with keep_pairs = yes,
	# for any that should not).
	rqsync 50
	grep ' pin tid=' "$LOG"
	{
		echo "keep_pairs = $1:"
		grep ' pin tid=' "$LOG"
		for p in $PAIRS; do
			echo "pair $p: pinned to llc $(pinned_llc "${p%:*}") and $(pinned_llc "${p#*:}")"
		done
		as_sampled
	} >>/tmp/pairs.summary
	SPLITS=$(splits "$([ "$1" = yes ] && echo 1 || echo 0)")
	echo "keep_pairs = $1: $(grep -c ' pin tid=' "$LOG") pins, $SPLITS of them split a pair"
	check "SIGTERM stops it cleanly" stop_daemon TERM
	cleanup
	HOGS=""
}

rm -f /tmp/pairs.summary
run_case no
OFF=$SPLITS
check "with keep_pairs = no the daemon's pins split pairs ($OFF)" [ "$OFF" -ge 1 ]
run_case yes
ON=$SPLITS
cat /tmp/pairs.summary
check "the daemon says it sees wake pairs" grep -q "features: wake-pairs: the bpf sampler" "$LOG"
check "with keep_pairs = yes no pin splits a pair ($ON, against $OFF without)" [ "$ON" -eq 0 ]
echo "pairs split by pins: keep_pairs = no $OFF, keep_pairs = yes $ON"
