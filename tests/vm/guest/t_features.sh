# The feature report, against what the kernel booted builds (its config, /tests/kconfig)
# and its version: Debian's 6.1 (CFS, no PIDFD_THREAD, no uclamp), the uclamp kernel built
# from the same source, and the PREEMPT_RT kernels (6.1, and 6.12 with EEVDF); BTF and
# schedstats built in each; two real LLCs.
. /tests/lib.sh
rqbalanced --features >/tmp/features
cat /tmp/features
state() { awk -v n="$1" '$1 == n { print $2 }' /tmp/features; }
# present NAME: the kernel has it ("found", or "used" where the daemon takes it at once).
present() { case $(state "$1") in found | used) return 0 ;; esac; return 1; }
check "names the kernel" grep -q "^kernel: Linux $(uname -r) " /tmp/features
check "llc-groups used (two L3 groups)" [ "$(state llc-groups)" = used ]
if kver_ge 6 9; then
	check "pidfd-thread present from 6.9" present pidfd-thread
else
	check "pidfd-thread missing before 6.9" [ "$(state pidfd-thread)" = missing ]
fi
if kver_ge 6 12; then
	check "eevdf-slice present (custom slices, 6.12 on)" present eevdf-slice
else
	check "eevdf-slice missing before 6.12" [ "$(state eevdf-slice)" = missing ]
fi
if kconfig_has UCLAMP_TASK; then
	check "uclamp present (CONFIG_UCLAMP_TASK=y)" present uclamp
else
	check "uclamp missing (not built)" [ "$(state uclamp)" = missing ]
fi
check "btf found" [ "$(state btf)" = found ]
if kconfig_has SCHEDSTATS; then
	check "schedstats found" [ "$(state schedstats)" = found ]
fi
check "cgroup-v1-cpu found (mounted by init)" [ "$(state cgroup-v1-cpu)" = found ]
# 7.3's cgroup_mode, read from debugfs: unknown while it is not mounted, the selected
# mode (in parentheses) once it is. The default slice, from 6.12 a fresh task's.
check "cgroup-mode missing without debugfs" [ "$(state cgroup-mode)" = missing ]
if kver_ge 6 12; then
	slice=$(awk '/^se.slice/ { split($3, a, "."); printf "%.2f", a[1] / 1e6 }' /proc/self/sched)
	check "default slice is a fresh task's ($slice ms)" \
		grep -q "^default slice: $slice ms (sched_getattr" /tmp/features
fi
# Whether class weights are scaled (the kernel scales a group's weight by what it runs):
# by the version where cgroup_mode cannot be read, 7.3's default concur taken; by the
# mode where it can (every mode but up).
grep '^class weights' /tmp/features
if kver_ge 7 3; then
	check "7.3, cgroup_mode unread: classes scaled (concur taken)" \
		grep -q "^class weights: scaled: .*cgroup_mode unreadable, taken at 7.3's default concur" /tmp/features
else
	check "before 7.3: classes scaled, by the version" \
		grep -q "^class weights: scaled: .*(Linux [0-9.]*, before 7.3," /tmp/features
fi
mount -t debugfs debugfs /sys/kernel/debug
if [ -r /sys/kernel/debug/sched/cgroup_mode ]; then
	mode=$(sed -n 's/.*(\([a-z_]*\)).*/\1/p' /sys/kernel/debug/sched/cgroup_mode)
	rqbalanced --features >/tmp/features.mode
	grep '^cgroup-mode' /tmp/features.mode
	check "cgroup-mode found in debugfs: $mode" \
		grep -q "^cgroup-mode  *found  *$mode " /tmp/features.mode
	grep '^class weights' /tmp/features.mode
	if [ "$mode" = up ]; then scaled="not scaled"; else scaled="scaled"; fi
	check "class weights $scaled in cgroup_mode $mode" \
		grep -q "^class weights: $scaled: .*cgroup_mode $mode " /tmp/features.mode
fi
umount /sys/kernel/debug
# Cache-aware scheduling (7.2 on): found with no config file in the guest and debugfs
# not mounted, from the kernel's BTF; switched off in debugfs, rqbalance places alone
# again.
if kconfig_has SCHED_CACHE; then
	check "placed by the kernel's cache-aware scheduling too (BTF, no debugfs)" \
		grep -q "^placed by: the kernel's cache-aware scheduling" /tmp/features
	mount -t debugfs debugfs /sys/kernel/debug
	echo 0 >/sys/kernel/debug/sched/llc_balancing/enabled
	rqbalanced --features >/tmp/features.off
	echo 1 >/sys/kernel/debug/sched/llc_balancing/enabled
	umount /sys/kernel/debug
	grep '^placed by' /tmp/features.off
	check "switched off in debugfs: placed by rqbalance" \
		grep -q "^placed by: rqbalance" /tmp/features.off
else
	check "placed by rqbalance alone (no CONFIG_SCHED_CACHE)" \
		grep -q "^placed by: rqbalance" /tmp/features
fi
start_daemon --dry-run
# What follows reads the start-up log: first that there is one, from a daemon that is up.
check "the daemon runs" wait_running
if kconfig_has SCHED_CACHE; then
	check "the log says the kernel places by cache, from its BTF" \
		wait_log "placement: the kernel is built with cache-aware scheduling (struct sched_cache_group in the kernel's BTF"
fi
if kver_ge 6 9; then
	check "the start-up log does not call pidfd-thread missing" \
		sh -c "! grep -q 'features: cannot use pidfd-thread' $LOG"
else
	check "the start-up log says why pidfd-thread cannot be used" \
		wait_log "features: cannot use pidfd-thread: before 6.9"
fi
if kconfig_has UCLAMP_TASK; then
	check "the start-up log does not call uclamp missing" \
		sh -c "! grep -q 'features: cannot use uclamp' $LOG"
fi
check "clean stop" stop_daemon TERM
cleanup
