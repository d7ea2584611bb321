#!/usr/bin/env python3
"""Writes the hwloc XML topologies of desktop parts with two kinds of core or two
CCDs (issue #44), for tests that have no such hardware: no machine here has core
kinds. Run from this folder: python3 gen_topo.py. The layouts are the vendors'
published ones; the kinds are what hwloc 2.4+ reports on Linux for a hybrid part
(CoreType from CPUID, ranked by efficiency), and for an AMD part whose CCDs differ
in their highest frequency (FrequencyMaxMHz from cpufreq). The frequencies are the
parts' published boost clocks.

- topo-hybrid-8p16e.xml: Core i9-13900K. 8 P-cores with two threads each (CPUs
  0-15, 2 MiB L2 each), 16 E-cores in clusters of four sharing a 4 MiB L2 (CPUs
  16-31), one 36 MiB L3.
- topo-hybrid-lp.xml: Core Ultra 7 155H. 6 P-cores with two threads (CPUs 0-11),
  8 E-cores in two clusters (12-19) sharing the compute tile's 24 MiB L3 with them,
  2 low-power E-cores on the SoC tile (20-21) with a 2 MiB L2 of their own and no L3:
  a last-level cache of their own.
- topo-7950x3d.xml, topo-9950x3d.xml: Ryzen 9 7950X3D and 9950X3D. Two CCDs of 8
  cores with two threads; CCD 0 (CPUs 0-7 and 16-23, Linux's numbering of SMT
  siblings) has the 96 MiB L3 (V-cache), CCD 1 (8-15, 24-31) 32 MiB and the higher
  boost clock.
- topo-hybrid-2cpu.xml: no real part, the i9-13900K's two kinds cut to the two CPUs
  of the test machines, so that a daemon that keeps only online CPUs still sees two
  kinds: a P-core (CPU 0) and an E-core (CPU 1) under one 36 MiB L3.
"""

MiB = 1 << 20
gp = [0]


def gpi():
    gp[0] += 1
    return gp[0]


def cpuset(cpus):
    """hwloc's text form: 32-bit words, most significant first, comma-separated."""
    mask = 0
    for c in cpus:
        mask |= 1 << c
    words = []
    while True:
        words.append(mask & 0xFFFFFFFF)
        mask >>= 32
        if not mask:
            break
    return ",".join("0x%08x" % w for w in reversed(words))


def attrs(cpus):
    s = cpuset(cpus)
    return ('cpuset="%s" complete_cpuset="%s" nodeset="0x00000001" '
            'complete_nodeset="0x00000001" gp_index="%d"' % (s, s, gpi()))


def core(os_index, pus, ind):
    out = [ind + '<object type="Core" os_index="%d" %s>' % (os_index, attrs(pus))]
    for p in pus:
        out.append(ind + '  <object type="PU" os_index="%d" %s/>' % (p, attrs([p])))
    out.append(ind + '</object>')
    return out


def cache(kind, depth, size, cpus, inner, ind):
    out = [ind + '<object type="%s" %s cache_size="%d" depth="%d" cache_linesize="64" '
           'cache_associativity="0" cache_type="0">' % (kind, attrs(cpus), size, depth)]
    for line in inner:
        out.append("  " + line)
    out.append(ind + '</object>')
    return out


def write(path, pkg_children, allcpus, kinds, desc):
    """pkg_children() gives the lines under the package; kinds: (cpus, efficiency, infos)."""
    gp[0] = 0
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
             '<topology version="2.0">']
    s = cpuset(allcpus)
    lines.append('  <object type="Machine" os_index="0" cpuset="%s" complete_cpuset="%s" '
                 'allowed_cpuset="%s" nodeset="0x00000001" complete_nodeset="0x00000001" '
                 'allowed_nodeset="0x00000001" gp_index="%d">' % (s, s, s, gpi()))
    lines.append('    <info name="Backend" value="rqbalance tests/data/gen_topo.py"/>')
    lines.append('    <info name="Description" value="%s"/>' % desc)
    lines.append('    <object type="Package" os_index="0" %s>' % attrs(allcpus))
    lines.append('      <object type="NUMANode" os_index="0" %s local_memory="34359738368">'
                 % attrs(allcpus))
    lines.append('        <page_type size="4096" count="8388608"/>')
    lines.append('      </object>')
    for line in pkg_children():
        lines.append("      " + line)
    lines.append('    </object>')
    lines.append('  </object>')
    for cpus, eff, infos in kinds:
        lines.append('  <cpukind cpuset="%s" forced_efficiency="%d">' % (cpuset(cpus), eff))
        for k, v in infos:
            lines.append('    <info name="%s" value="%s"/>' % (k, v))
        lines.append('  </cpukind>')
    lines.append('</topology>')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def p_core(i, first_pu):
    pus = [first_pu, first_pu + 1]
    return cache("L2Cache", 2, 2 * MiB, pus, core(i, pus, ""), "")


def hybrid_8p16e():
    def children():
        inner = []
        for i in range(8):
            inner += p_core(i, 2 * i)
        for cl in range(4):
            cpus = list(range(16 + 4 * cl, 20 + 4 * cl))
            cl_inner = []
            for j, c in enumerate(cpus):
                cl_inner += core(8 + 4 * cl + j, [c], "")
            inner += cache("L2Cache", 2, 4 * MiB, cpus, cl_inner, "")
        return cache("L3Cache", 3, 36 * MiB, list(range(32)), inner, "")
    kinds = [(list(range(16, 32)), 0, [("CoreType", "IntelAtom"), ("FrequencyMaxMHz", "4300")]),
             (list(range(0, 16)), 1, [("CoreType", "IntelCore"), ("FrequencyMaxMHz", "5800")])]
    write("topo-hybrid-8p16e.xml", children, list(range(32)), kinds,
          "Core i9-13900K: 8 P-cores (CPUs 0-15), 16 E-cores (16-31), one 36 MiB L3")


def hybrid_lp():
    def children():
        inner = []
        for i in range(6):
            inner += p_core(i, 2 * i)
        for cl in range(2):
            cpus = list(range(12 + 4 * cl, 16 + 4 * cl))
            cl_inner = []
            for j, c in enumerate(cpus):
                cl_inner += core(6 + 4 * cl + j, [c], "")
            inner += cache("L2Cache", 2, 2 * MiB, cpus, cl_inner, "")
        out = cache("L3Cache", 3, 24 * MiB, list(range(20)), inner, "")
        lp = core(14, [20], "") + core(15, [21], "")
        out += cache("L2Cache", 2, 2 * MiB, [20, 21], lp, "")
        return out
    kinds = [([20, 21], 0, [("CoreType", "IntelAtom"), ("FrequencyMaxMHz", "2500")]),
             (list(range(12, 20)), 1, [("CoreType", "IntelAtom"), ("FrequencyMaxMHz", "3800")]),
             (list(range(0, 12)), 2, [("CoreType", "IntelCore"), ("FrequencyMaxMHz", "4800")])]
    write("topo-hybrid-lp.xml", children, list(range(22)), kinds,
          "Core Ultra 7 155H: 6 P-cores (0-11), 8 E-cores (12-19) under the L3, "
          "2 low-power E-cores (20-21) with an L2 of their own")


def x3d(path, name, mhz0, mhz1):
    ccd0 = [c for i in range(8) for c in (i, i + 16)]
    ccd1 = [c for i in range(8, 16) for c in (i, i + 16)]

    def ccd(first, size):
        inner = []
        for i in range(first, first + 8):
            pus = [i, i + 16]
            inner += cache("L2Cache", 2, 1 * MiB, pus, core(i, pus, ""), "")
        cpus = sorted(c for i in range(first, first + 8) for c in (i, i + 16))
        return cache("L3Cache", 3, size, cpus, inner, "")

    def children():
        return ccd(0, 96 * MiB) + ccd(8, 32 * MiB)
    kinds = [(sorted(ccd0), 0, [("FrequencyMaxMHz", str(mhz0))]),
             (sorted(ccd1), 1, [("FrequencyMaxMHz", str(mhz1))])]
    write(path, children, list(range(32)), kinds,
          "%s: CCD 0 (CPUs 0-7, 16-23) 96 MiB L3, CCD 1 (8-15, 24-31) 32 MiB L3" % name)


def hybrid_2cpu():
    def children():
        inner = cache("L2Cache", 2, 2 * MiB, [0], core(0, [0], ""), "")
        inner += cache("L2Cache", 2, 4 * MiB, [1], core(1, [1], ""), "")
        return cache("L3Cache", 3, 36 * MiB, [0, 1], inner, "")
    kinds = [([1], 0, [("CoreType", "IntelAtom"), ("FrequencyMaxMHz", "4300")]),
             ([0], 1, [("CoreType", "IntelCore"), ("FrequencyMaxMHz", "5800")])]
    write("topo-hybrid-2cpu.xml", children, [0, 1], kinds,
          "a hybrid part cut to two CPUs: a P-core (CPU 0) and an E-core (1), one L3")


if __name__ == "__main__":
    hybrid_8p16e()
    hybrid_lp()
    x3d("topo-7950x3d.xml", "Ryzen 9 7950X3D", 5250, 5700)
    x3d("topo-9950x3d.xml", "Ryzen 9 9950X3D", 5450, 5700)
    hybrid_2cpu()
