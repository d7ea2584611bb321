# The feature report on Debian's 6.1: CFS, no PIDFD_THREAD, no uclamp; BTF and
# schedstats built; two real LLCs.
. /tests/lib.sh
rqbalanced --features >/tmp/features
cat /tmp/features
state() { awk -v n="$1" '$1 == n { print $2 }' /tmp/features; }
check "names the kernel" grep -q "^kernel: Linux $(uname -r) " /tmp/features
check "llc-groups used (two L3 groups)" [ "$(state llc-groups)" = used ]
check "pidfd-thread missing before 6.9" [ "$(state pidfd-thread)" = missing ]
check "eevdf-slice missing on CFS" [ "$(state eevdf-slice)" = missing ]
check "uclamp missing (not built)" [ "$(state uclamp)" = missing ]
check "btf found" [ "$(state btf)" = found ]
check "schedstats found" [ "$(state schedstats)" = found ]
check "cgroup-v1-cpu found (mounted by init)" [ "$(state cgroup-v1-cpu)" = found ]
start_daemon --dry-run
check "the start-up log says why pidfd-thread cannot be used" \
	wait_log "features: cannot use pidfd-thread: before 6.9"
check "clean stop" stop_daemon TERM
cleanup
