# hwloc sees the guest's real L3 groups, and they match what the kernel says.
. /tests/lib.sh
rqbalanced --show-topology >/tmp/topology
cat /tmp/topology
check "four CPUs in two LLCs" grep -q '^4 CPUs, 4 cores, 2 LLCs' /tmp/topology
l0=$(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list)
l1=$(cat /sys/devices/system/cpu/cpu2/cache/index3/shared_cpu_list)
check "LLC 0 is the kernel's L3 of CPU 0 ($l0)" grep -q "^llc 0: cpus $l0 " /tmp/topology
check "LLC 1 is the kernel's L3 of CPU 2 ($l1)" grep -q "^llc 1: cpus $l1 " /tmp/topology
