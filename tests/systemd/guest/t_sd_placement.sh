# Who places tasks by cache, found where users run the daemon (issue #42): on a kernel
# built with cache-aware scheduling (trixie's guest boots trixie-backports' 7.3), the
# daemon inside the shipped unit's sandbox finds it switched on in debugfs (systemd 257's
# ProtectKernelTunables= leaves /sys/kernel/debug readable there) and, with debugfs
# unmounted, from the kernel's BTF, since ProtectKernelModules= hides the config in
# /usr/lib/modules; it says so in the journal and in rqctl status. rqbalanced
# --features outside the sandbox, with debugfs unmounted, reads the config where
# Debian 13 puts it. On a kernel without it (bookworm's 6.1) both say rqbalance
# places alone.
. /usr/local/lib/rqbt/lib.sh
base_state
r=$(uname -r)
st=$(rqctl status)
echo "$st" | grep '^placement_by'
rqbalanced --features >/tmp/features 2>&1
grep '^placed by' /tmp/features
if grep -q '^CONFIG_SCHED_CACHE=y' "/usr/lib/modules/$r/config" 2>/dev/null; then
	check "rqctl status: the kernel places by cache too" \
		eval 'echo "$st" | grep -q "^placement_by kernel: "'
	# Which way the sandboxed daemon found it: debugfs where the sandbox shows it, else
	# the kernel's BTF (its config under /usr/lib/modules is hidden there).
	info "inside the sandbox: $(echo "$st" | sed -n 's/^placement_by kernel: //p')"
	check "found inside the unit's sandbox, from debugfs or the kernel's BTF" \
		eval 'echo "$st" | grep -qE "struct sched_cache_group in the kernel.s BTF|llc_balancing/enabled"'
	check "not from the config the sandbox hides" \
		eval '! echo "$st" | grep -q "/usr/lib/modules"'
	check "and the journal says so" eval "journalctl -b -u $UNIT -o cat | grep -qE 'placement: the kernel.s cache-aware scheduling is on|placement: the kernel is built with cache-aware scheduling'"
	# debugfs unmounted: the sandboxed daemon has the BTF left to tell.
	if mountpoint -q /sys/kernel/debug; then
		check "debugfs unmounted" systemctl stop sys-kernel-debug.mount
	fi
	c=$(cursor)
	check "the daemon restarted" systemctl restart "$UNIT"
	wait_journal "$c" "running: sampler" || fail "the daemon did not start again"
	st=$(rqctl status)
	echo "$st" | grep '^placement_by'
	check "without debugfs, the sandboxed daemon finds it in the kernel's BTF" \
		eval 'echo "$st" | grep -q "^placement_by kernel: .*struct sched_cache_group in the kernel.s BTF"'
	# Outside the sandbox, still without debugfs (which would be read first): the config.
	rqbalanced --features >/tmp/features 2>&1
	grep '^placed by' /tmp/features
	check "rqbalanced --features outside the sandbox: the kernel's cache-aware scheduling" \
		grep -q "^placed by: the kernel's cache-aware scheduling" /tmp/features
	check "read from /usr/lib/modules/$r/config" \
		grep -q "CONFIG_SCHED_CACHE=y in /usr/lib/modules/$r/config" /tmp/features
	check "debugfs mounted again" systemctl start sys-kernel-debug.mount
	check "the daemon restarted once more" systemctl restart "$UNIT"
else
	check "rqctl status: rqbalance places alone" \
		eval 'echo "$st" | grep -q "^placement_by rqbalance$"'
	check "rqbalanced --features agrees" grep -q "^placed by: rqbalance" /tmp/features
fi
cleanup
