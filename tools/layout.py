#!/usr/bin/env python3
"""Measures the daemon's layout (issue 52): run from the top of the tree.

  tools/layout.py names    every non-static function whose name's prefix is not
                           its file: the longest file stem that prefixes the name
                           (cut at an underscore) must be the file defining it, or
                           its module (latmgr_ in latmgr_view.c), never a sibling
                           (latact_cg_ in latact_cls.c) nor no file at all
  tools/layout.py statics  static functions of one name defined in two or more files,
                           but those listed as meaning the same in each
  tools/layout.py circles  [BUILD] the circles of calls between files: the strongly
                           connected components of the graph "a.o refers to a
                           symbol b.o defines", from nm over BUILD/daemon (default
                           build), printed when more than 3 files large
  tools/layout.py includes the project headers each daemon/ctl/ file reaches,
                           directly or through other headers
  tools/layout.py sizes    the door and the rules' common file that must stay
                           thin (daemon/ctl/ctl.c, daemon/policy/place.c) at 800
                           lines or more

Exits 1 when it prints a finding, so a test can run it.
"""
import json, os, re, subprocess, sys, collections

def c_files():
    out = []
    for root, _, files in os.walk("daemon"):
        if "/bpf" in root + "/":
            continue
        out += [os.path.join(root, f) for f in files if f.endswith(".c")]
    return sorted(out)

def functions():
    """(name, file, static) of every function defined in daemon/."""
    out = subprocess.run(["ctags", "--output-format=json", "-f", "-",
                          "--kinds-C=f", "--fields=+f"] + c_files(),
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        t = json.loads(line)
        yield t["name"], t["path"], bool(t.get("file"))

def stem(path):
    return os.path.basename(path)[:-2]

def owner(name, stems):
    best = None
    for s in stems:
        if (name == s or name.startswith(s + "_")) and (best is None or len(s) > len(best)):
            best = s
    return best

def names():
    files = c_files()
    stems = {stem(f) for f in files}
    bad = 0
    for name, path, static in sorted(functions(), key=lambda t: (t[1], t[0])):
        if static or name == "main":
            continue
        want, own = owner(name, stems), stem(path)
        if want != own and not (want and own.startswith(want + "_")):
            print(f"{path}: {name}: prefix says {want + '.c' if want else 'no file'}")
            bad += 1
    return bad

# Statics of one name in several files that mean the same there: one interface's
# operations (evsrc's es_*), the same comparison or read on different records, a BPF
# object loaded, a journal line replayed, a task walk. A name that means another
# thing in another file is renamed instead (tools/rename-52.txt).
SAME_MEANING = {"cmp_tid", "es_close", "es_dispatch", "es_empty", "es_fd", "es_open",
                "later", "load", "read_cgroup", "read_online", "replay_line",
                "sched_same", "walk"}

def statics():
    where = collections.defaultdict(set)
    for name, path, static in functions():
        if static:
            where[name].add(path)
    bad = 0
    for name in sorted(where):
        if len(where[name]) > 1 and name not in SAME_MEANING:
            print(f"{name}: " + " ".join(sorted(where[name])))
            bad += 1
    return bad

def objects(build):
    objs = []
    for root, _, files in os.walk(os.path.join(build, "daemon")):
        objs += [os.path.join(root, f) for f in files
                 if f.endswith(".o") and not f.endswith(".bpf.o")
                 and not f.endswith(".skel.o")]
    return sorted(objs)

def call_graph(build):
    defs, refs = {}, collections.defaultdict(set)
    for o in objects(build):
        out = subprocess.run(["nm", "--defined-only", "-g", o], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBR":
                defs[parts[2]] = o
        out = subprocess.run(["nm", "-u", o], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            refs[o].add(line.split()[-1])
    edges = collections.defaultdict(set)
    for o, syms in refs.items():
        for s in syms:
            d = defs.get(s)
            if d and d != o:
                edges[o].add(d)
    return objects(build), edges

def scc(nodes, edges):
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1
        stack.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            comps.append(comp)
    for v in nodes:
        if v not in index:
            visit(v)
    return comps

def circles(build="build"):
    nodes, edges = call_graph(build)
    bad = 0
    for comp in sorted(scc(nodes, edges), key=len, reverse=True):
        if len(comp) < 2:
            continue
        names = sorted(os.path.relpath(c, os.path.join(build, "daemon"))[:-2] for c in comp)
        print(f"{len(comp)} files: " + " ".join(names))
        bad += len(comp) > 3
    return bad

def reach(hdr, seen):
    if hdr in seen or not os.path.exists(hdr):
        return
    seen.add(hdr)
    for m in re.finditer(r'^#\s*include\s+"([^"]+)"', open(hdr).read(), re.M):
        inc = m.group(1)
        for base in (os.path.dirname(hdr), "daemon", "include"):
            p = os.path.normpath(os.path.join(base, inc))
            if os.path.exists(p):
                reach(p, seen)
                break

def includes():
    bad = 0
    for f in sorted(os.listdir("daemon/ctl")):
        seen = set()
        reach(os.path.join("daemon/ctl", f), seen)
        far = sorted(h for h in seen if h.startswith(("daemon/actuate/", "daemon/policy/",
                                                     "daemon/snapshot/")))
        if far:
            print(f"daemon/ctl/{f}: " + " ".join(far))
            bad += 1
    return bad

THIN = ("daemon/ctl/ctl.c", "daemon/policy/place.c")

def sizes():
    bad = 0
    for f in THIN:
        with open(f) as fh:
            n = sum(1 for _ in fh)
        if n >= 800:
            print(f"{f}: {n} lines")
            bad += 1
    return bad

if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    cmds = {"names": names, "statics": statics, "includes": includes, "sizes": sizes,
            "circles": lambda: circles(*sys.argv[2:3])}
    if what not in cmds:
        sys.exit(__doc__)
    sys.exit(1 if cmds[what]() else 0)
