# [metrics] path under the default unit: the file appears in node_exporter's textfile
# directory (the one path besides /run/rqbalance the sandbox lets the daemon write),
# readable by another user, and parses as the Prometheus text format.
. /usr/local/lib/rqbt/lib.sh
base_state
M=$METRICS_DIR/rqbalance.prom
mkdir -p "$METRICS_DIR"
rm -f "$M"
printf '[metrics]\npath = %s\ninterval_ms = 1000\n' "$M" >"$CONF"
# ReadWritePaths= is set up at start, for a directory that exists then: a restart.
check "a restart with [metrics] path = $M" systemctl restart "$UNIT"
check "the file appears" poll_until 120 test -s "$M"
head -n 12 "$M"
echo "..."
check "another user can read it" runuser -u rqbuser -- cat "$M" >/dev/null
check "no temporary file is left beside it" [ -z "$(ls "$METRICS_DIR" | grep -v '^rqbalance.prom$')" ]
# The text format, strictly: HELP and TYPE lines, then samples of a TYPEd name, with
# well-formed labels and a number.
parse() {
	awk '
	function bad(why) { printf "line %d: %s: %s\n", NR, why, $0; err = 1 }
	/^# HELP / { if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) bad("HELP name"); next }
	/^# TYPE / { if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/ ||
			$4 !~ /^(counter|gauge|histogram|summary|untyped)$/ || NF != 4) bad("TYPE")
		type[$3] = $4; next }
	/^#/ { next }
	{
		line = $0
		if (!match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) { bad("name"); next }
		name = substr(line, 1, RLENGTH); line = substr(line, RLENGTH + 1)
		if (!(name in type)) bad("sample without a TYPE")
		if (substr(line, 1, 1) == "{") {
			if (!match(line, /^\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\}/)) { bad("labels"); next }
			line = substr(line, RLENGTH + 1)
		}
		if (line !~ /^ [-+]?([0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|NaN|[-+]?Inf)( [0-9]+)?$/) bad("value")
		n++
	}
	END { if (!err) print n " samples"; exit err }' "$1"
}
check "it parses as the Prometheus text format" parse "$M"
check "with the sampler the daemon runs" \
	grep -qx "rqbalance_sampler{name=\"$(rqctl status | awk '$1 == "sampler" { print $2 }')\"} 1" "$M"
check "and two LLCs of two CPUs" [ "$(grep -c '^rqbalance_llc_cpus{.*} 2$' "$M")" = 2 ]
check "and the configured tick" grep -qx 'rqbalance_tick_interval_seconds [0-9.]*' "$M"
# It is written again each interval: the file is replaced (a new inode), whole.
ino=$(stat -c %i "$M")
replaced() { [ "$(stat -c %i "$M" 2>/dev/null)" != "$ino" ] && [ -s "$M" ]; }
check "and replaced whole at the next interval" poll_until 120 replaced
check "which parses too" parse "$M"
check "metrics off again: a restart on the shipped config" base_state
