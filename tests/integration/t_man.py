"""The man pages render without a warning (mandoc -Tlint -Wwarning), each has an
EXAMPLES section, and each names the others. That conf(5) documents every key of the
daemon's table is test_conf's man_page_documents_every_key."""
import os
import re
import subprocess

from packaging import need, only_on_first_build
from rqb import ROOT, check, main, tmpdir

PAGES = ["man/rqbalanced.8", "man/rqctl.1", "man/rqbalance.conf.5"]


def test():
    only_on_first_build()
    need("mandoc")
    paths = [os.path.join(ROOT, p) for p in PAGES]
    r = subprocess.run(["mandoc", "-Tlint", "-Wwarning", *paths], capture_output=True,
                       text=True, timeout=60)
    print(r.stdout + r.stderr)
    check(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
          "mandoc -Tlint -Wwarning finds nothing in " + ", ".join(PAGES))
    for p in paths:
        text = open(p).read()
        name = os.path.basename(p)
        check(re.search(r"^\.Sh EXAMPLES$", text, re.M), f"{name} has EXAMPLES")
        others = {re.sub(r"\.(\d)$", r" \1", os.path.basename(q)) for q in paths if q != p}
        missing = [o for o in others if f".Xr {o}" not in text]
        check(not missing, f"{name} refers to the other pages ({missing or 'all'})")
    with tmpdir() as tmp:
        bad = os.path.join(tmp, "bad.8")
        with open(bad, "w") as f:
            f.write(".Dd January 1, 2026\n.Dt BAD 8\n.Os\n.Sh NAME\n.Nm bad\n.Nd a page\n"
                    ".Sh DESCRIPTION\n.Bl -tag\n.It x\n.El\n")
        r = subprocess.run(["mandoc", "-Tlint", "-Wwarning", bad], capture_output=True,
                           text=True, timeout=60)
    check(r.returncode != 0, "the lint speaks up about a page with a mistake")


main(test)
