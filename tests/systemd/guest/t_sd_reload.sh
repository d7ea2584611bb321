# `systemctl reload rqbalance` (ExecReload= rqctl reload): a broken config is refused,
# with file:line in the unit's journal, the running config kept and the unit still
# active (same main process); a good one is applied. The config's effect is read back
# from the daemon: `rqctl status` gives the tick interval it runs with (interval_ms,
# which a reload changes).
. /usr/local/lib/rqbt/lib.sh
base_state
tick() { rqctl status | awk '$1 == "tick_ms" { print $2 }'; }
printf '[daemon]\ninterval_ms = 700\n' >"$CONF"
check "a good config: systemctl reload" systemctl reload "$UNIT"
check "is applied: tick 700 ms" [ "$(tick)" = 700 ]
pid=$(main_pid)

c=$(cursor)
printf '[daemon]\ninterval_ms = 900\nno_such_key = 1\n' >"$CONF"
out=$(systemctl reload "$UNIT" 2>&1)
rc=$?
echo "systemctl reload: exit $rc: $out"
check "a broken config: systemctl reload fails" [ $rc != 0 ]
journal_after "$c" -u "$UNIT" -o cat
check "the journal has the error at $CONF:3" journal_has "$c" "$CONF:3:.*no_such_key"
check "the unit is still active" is_active "$UNIT"
check "with the same main process" [ "$(main_pid)" = "$pid" ]
check "the running config is kept: tick 700 ms" [ "$(tick)" = 700 ]
st=$(systemctl show -P StatusText "$UNIT")
echo "StatusText: $st"

printf '[daemon]\ninterval_ms = 800\n' >"$CONF"
check "a good config again: systemctl reload" systemctl reload "$UNIT"
check "is applied: tick 800 ms" [ "$(tick)" = 800 ]
check "by the same process" [ "$(main_pid)" = "$pid" ]
check "which says so in the journal" journal_has "$c" "^reloaded $CONF"
