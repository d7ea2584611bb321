# Wake pairs, live: on each CPU of LLC 0 a CPU hog and a yes | cat pair (through a
# fifo: each wakes the other, the writer when the pipe has room, the reader when it
# has data), the other LLC idle, the kernel's own balancing off so that nothing moves
# but what the daemon pins. The youngest task on a busy CPU is a pair's reader: with
# keep_pairs = no the daemon pins readers away from their writers; with keep_pairs =
# yes (the bpf sampler reads the kernel's last_wakee) no pin splits a pair: a pair
# moves whole, or the hog goes. Both counts are printed.
. /tests/lib.sh
need_llcs
A=${LLC0%%[,-]*}
B=$(echo "$LLC0" | awk -F'[-,]' '{ print $2 }')
PAIRS=""

# pair cpu: a yes | cat pair on cpu, then allowed everywhere; its pids go in PAIRS as
# writer:reader.
pair() {
	local f=/tmp/pair.$1 y c
	rm -f "$f"
	mkfifo "$f"
	taskset -c "$1" cat "$f" >/dev/null &
	c=$!
	taskset -c "$1" yes >"$f" &
	y=$!
	HOGS="$HOGS $y $c"
	PAIRS="$PAIRS $y:$c"
}

# pinned_llc pid: the target LLC of the daemon's pin of pid in $LOG, or "-".
pinned_llc() {
	grep " pin tid=$1 " "$LOG" | tail -n1 | sed -n 's/.* llc=[0-9]*->\([0-9]*\) .*/\1/p' |
		grep . || echo -
}

# splits: pairs whose members the daemon's pins left in different places.
splits() {
	local n=0 p y c
	for p in $PAIRS; do
		y=${p%:*}
		c=${p#*:}
		[ "$(pinned_llc "$y")" = "$(pinned_llc "$c")" ] || n=$((n + 1))
	done
	echo $n
}

pins_at_least() { [ "$(grep -c ' pin tid=' "$LOG")" -ge "$1" ]; }

# run_case keep_pairs: the workload, a daemon with keep_pairs as given until it has
# filled the idle LLC (two pins), then its pins and the splits they made.
run_case() {
	HOGS=""
	PAIRS=""
	lb_off
	hog "$A"
	hog "$B"
	pair "$A"
	pair "$B"
	release "$ALL"
	DAEMON_CONF="sampler = bpf
$LONG_PINS
keep_pairs = $1"
	start_daemon
	check "the daemon runs (keep_pairs = $1)" wait_running
	grep "wake-pairs" "$LOG"
	check "it pins two tasks to the idle LLC" poll_until 1200 pins_at_least 2
	# Twenty whole ticks more: any pin still to come is made.
	rqsync 20
	grep ' pin tid=' "$LOG"
	for p in $PAIRS; do echo "pair $p: pinned to llc $(pinned_llc "${p%:*}") and $(pinned_llc "${p#*:}")"; done
	SPLITS=$(splits)
	echo "keep_pairs = $1: $(grep -c ' pin tid=' "$LOG") pins, $SPLITS pairs split by them"
	check "SIGTERM stops it cleanly" stop_daemon TERM
	cleanup
	HOGS=""
}

run_case no
OFF=$SPLITS
check "with keep_pairs = no the daemon's pins split pairs ($OFF)" [ "$OFF" -ge 1 ]
run_case yes
ON=$SPLITS
check "the daemon says it sees wake pairs" grep -q "features: wake-pairs: the bpf sampler" "$LOG"
check "with keep_pairs = yes no pin splits a pair ($ON, against $OFF without)" [ "$ON" -eq 0 ]
echo "pairs split by pins: keep_pairs = no $OFF, keep_pairs = yes $ON"
