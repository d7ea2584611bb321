"""The folders of daemon/ form layers: which folder's headers each folder includes,
read from the #include lines, has no cycle, so that a stage can be read, tested and
replaced without the ones above it. model/ includes nothing of the daemon's.

A cycle that is there on purpose would be listed in KNOWN (none is): one not listed
fails, and so does a listed one that is gone, so that the list is kept true."""
import glob
import os
import re

from packaging import only_on_first_build
from rqb import ROOT, check, main

KNOWN = set()
DAEMON = os.path.join(ROOT, "daemon")


def graph():
    """folder -> {folder it includes a header of: (file, line) of the first include}"""
    g = {}
    folders = {d for d in os.listdir(DAEMON) if os.path.isdir(os.path.join(DAEMON, d))}
    for path in glob.glob(os.path.join(DAEMON, "**", "*.[ch]"), recursive=True):
        rel = os.path.relpath(path, DAEMON)
        src = rel.split(os.sep)[0]
        if src not in folders:
            continue
        with open(path) as f:
            for n, line in enumerate(f, 1):
                m = re.match(r'#include "([a-z_]+)/', line)
                if m and m.group(1) in folders and m.group(1) != src:
                    g.setdefault(src, {}).setdefault(m.group(1), (rel, n))
    return folders, g


def reaches(g, a, b):
    seen, todo = set(), [a]
    while todo:
        x = todo.pop()
        if x == b:
            return True
        if x not in seen:
            seen.add(x)
            todo.extend(g.get(x, {}))
    return False


def test():
    only_on_first_build()
    folders, g = graph()
    check(not g.get("model"), f"model/ includes no folder of the daemon's ({g.get('model', {})})")
    cycles = {frozenset({a, b}) for a in g for b in g[a] if reaches(g, b, a)}
    for c in sorted(cycles, key=sorted):
        a, b = sorted(c)
        print(f"cycle {a} <-> {b}: {g[a].get(b) or 'via others'} / {g[b].get(a) or 'via others'}")
    check(cycles <= KNOWN, f"no cycle between folders but the known ones ({len(cycles)} found)")
    check(KNOWN <= cycles, "each known cycle is still there (else take it off KNOWN)")


if __name__ == "__main__":
    main(test)
