# rqctl on the guest: status names the real LLCs and the sampler; a reload works.
. /tests/lib.sh
start_daemon
check "the daemon runs" wait_running
rqctl status >/tmp/status
cat /tmp/status
check "status names the sampler" grep -qE '^sampler (bpf|proc)$' /tmp/status
check "and LLC 0 with the kernel's L3 of CPU 0" grep -q "^llc 0 cpus $LLC0 runnable " /tmp/status
check "rqctl reload" rqctl reload
check "clean stop" stop_daemon TERM
cleanup
