# hwloc sees the guest's real L3 groups, and they match what the kernel says.
. /tests/lib.sh
rqbalanced --show-topology >/tmp/topology
cat /tmp/topology
ncpu=$(list_len "$ALL")
llcs=$(for c in $(seq 0 $((ncpu - 1))); do llc_of "$c"; done | sort -u)
nllc=$(echo "$llcs" | wc -l)
check "$ncpu CPUs in $nllc LLCs" grep -q "^$ncpu CPUs, .* $nllc LLCs" /tmp/topology
for l in $llcs; do
	check "the kernel's L3 group $l is an LLC" grep -q "^llc [0-9]*: cpus $l " /tmp/topology
done
