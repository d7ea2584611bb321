"""The layout stays what doc/design.md says (tools/layout.py): every function's name
starts with its file's or its module's, no static name means two things in two files,
no circle of calls between the daemon's files spans more than 3 of them (from the
objects of build/), ctl/ reaches no actuate/, policy/ or snapshot/ header, not
even through another header, and the door ctl.c and place.c stay under 800 lines."""
import os
import subprocess
import sys

from packaging import need, only_on_first_build
from rqb import BUILD, ROOT, check, main


def test():
    only_on_first_build()
    need("ctags", "nm")
    build = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
    for what, args, says in [
            ("names", [], "every function's prefix names its file or its module"),
            ("statics", [], "no static name means two things in two files"),
            ("circles", [build], "no circle of calls spans more than 3 files"),
            ("includes", [], "ctl/ includes no actuate/, policy/ or snapshot/ header"),
            ("sizes", [], "ctl.c and place.c stay under 800 lines")]:
        r = subprocess.run([sys.executable, "tools/layout.py", what, *args], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        print(f"tools/layout.py {what}:\n{r.stdout}{r.stderr}")
        check(r.returncode == 0, says)


main(test)
