"""What else shapes scheduling, against the real gamemoded and tuned: each is named, with
what it means for rqbalance, in --features, in the start-up and reload log and in
rqctl status (text and JSON), and is gone from status once it stops.

gamemoded runs on a session bus of its own (dbus-run-session). tuned runs in a mount
namespace of its own, on a private /etc/tuned and /run, with a profile whose
[scheduler] comes through include= and matches no process, and no other plugin: the
machine's tuning and its /etc/tuned are never touched. Another run's peers may be there
too: a peer is known by its pid."""
import json
import os
import re
import shutil
import signal
import subprocess

from rqb import (DAEMON, RQCTL, Daemon, check, comm_of, main, ppid_of, require, skip, tmpdir,
                 wait_until)

TUNED = r"""
set -e
mount -t tmpfs rqb-tuned /etc/tuned
mount -t tmpfs rqb-tuned /run
mkdir -p /etc/tuned/rqbtest /etc/tuned/rqbsched /run/tuned
printf 'daemon = 1\ndynamic_tuning = 0\nreapply_sysctl = 0\n' >/etc/tuned/tuned-main.conf
printf '[main]\nsummary=rqbalance test\ninclude=rqbsched\n' >/etc/tuned/rqbtest/tuned.conf
printf '[main]\nsummary=rqbalance test base\n[scheduler]\nruntime=0\n%s\n' \
    'group.rqbnone=0:f:0:*:^rqb-no-such-process$' >/etc/tuned/rqbsched/tuned.conf
echo rqbtest >/etc/tuned/active_profile
exec tuned --no-dbus --profile rqbtest --log=/run/tuned/tuned.log
"""
TUNED_SAYS = ('runs profile "rqbtest", whose [scheduler] (/etc/tuned/rqbsched/tuned.conf) '
              "sets the affinity, policy and priority of the processes its regexes match")
GAMEMODED_SAYS = "runs: while a game asks for it, it may renice the game"
LAST_WINS = "(rqctl explain says whose it is): give no process a value in both"


def child_named(parent, name):
    for d in os.listdir("/proc"):
        if d.isdigit() and comm_of(d) == name and ppid_of(d) == parent:
            return int(d)
    return None


def tuned_applied(pid):
    """tuned's own log, in its namespace: the profile is applied."""
    try:
        with open(f"/proc/{pid}/root/run/tuned/tuned.log") as f:
            return "static tuning from profile 'rqbtest' applied" in f.read()
    except OSError:
        return False


def named(tool, pid):
    """A finding's start for tool with pid among its processes."""
    return rf"{tool} \(pids? (?:\d+, )*{pid}\b[^)]*\) "


def status(d, *args):
    r = subprocess.run([RQCTL, "-s", d.ctl, *args, "status"], capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 0, " ".join(["rqctl", *args, "status answers"]))
    return r.stdout


def start_peers(tmp):
    out = open(os.path.join(tmp, "peers.log"), "w")
    gm = subprocess.Popen(["dbus-run-session", "--", "gamemoded"], stdout=out,
                          stderr=subprocess.STDOUT)
    tu = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", TUNED],
                          stdout=out, stderr=subprocess.STDOUT)
    return gm, tu


def stop(proc, pid=None):
    """SIGTERM to pid (proc's own by default), then proc reaped."""
    if proc.poll() is None:
        try:
            os.kill(pid or proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def peers_log(tmp):
    with open(os.path.join(tmp, "peers.log")) as f:
        return f.read()


def wait_peers(tmp, gm, tu):
    """The gamemoded that dbus-run-session started, once tuned has applied its profile."""
    ok = wait_until(lambda: child_named(gm.pid, "gamemoded") and tuned_applied(tu.pid), 60)
    check(ok, f"gamemoded and tuned run (their output: {peers_log(tmp)!r})")
    check(comm_of(tu.pid) == "tuned", "tuned is known by its comm")
    return child_named(gm.pid, "gamemoded")


def check_features(g, t):
    out = subprocess.run([DAEMON, "--features"], capture_output=True, text=True,
                         check=True).stdout
    rows = [l for l in out.splitlines() if l.startswith("shaping ")]
    check(any(re.search(r"^shaping +gamemoded: " + named("gamemoded", g) + GAMEMODED_SAYS, l)
              for l in rows), f"--features names gamemoded: {rows}")
    check(any(re.search(r"^shaping +tuned: " + named("tuned", t) + re.escape(TUNED_SAYS), l)
              for l in rows), f"--features names tuned's profile and its [scheduler]: {rows}")


def log_lines(d, tool, pid, says):
    return re.findall(r"shaping: " + tool + ": " + named(tool, pid) + re.escape(says)
                      + r".*" + re.escape(LAST_WINS), d.text())


def check_status(d, g, t):
    text = status(d)
    check(re.search(r"^shaping gamemoded " + named("gamemoded", g) + GAMEMODED_SAYS,
                    text, re.M), "status names gamemoded with what it means")
    check(re.search(r"^shaping tuned " + named("tuned", t) + re.escape(TUNED_SAYS), text, re.M),
          "status names tuned, its profile and where its [scheduler] is")
    j = json.loads(status(d, "--json"))
    by_id = {f["id"]: f["text"] for f in j["shaping"]}
    check(re.match(named("gamemoded", g), by_id.get("gamemoded", ""))
          and LAST_WINS in by_id["gamemoded"], "--json status has gamemoded's finding")
    check(re.match(named("tuned", t), by_id.get("tuned", ""))
          and TUNED_SAYS in by_id["tuned"], "--json status has tuned's finding")


def gone(d, tool, pid):
    """No finding of tool names pid, in text and JSON."""
    if re.search(r"^shaping " + tool + " " + named(tool, pid), status(d), re.M):
        return False
    j = json.loads(status(d, "--json"))
    return not any(f["id"] == tool and re.match(named(tool, pid), f["text"])
                   for f in j["shaping"])


def with_peers(tmp, gm, tu):
    g = wait_peers(tmp, gm, tu)
    t = tu.pid
    check_features(g, t)
    with Daemon(tmp, ["--dry-run"]) as d:
        d.wait_for(r"running: sampler")
        check(len(log_lines(d, "gamemoded", g, GAMEMODED_SAYS)) == 1,
              "the start-up log names gamemoded and what it means")
        check(len(log_lines(d, "tuned", t, TUNED_SAYS)) == 1,
              "the start-up log names tuned, its profile and its [scheduler]")
        check_status(d, g, t)
        r = subprocess.run([RQCTL, "-s", d.ctl, "reload"], capture_output=True, text=True,
                           timeout=30)
        check(r.returncode == 0, "reload")
        d.wait_for(r"reloaded ")
        check(len(log_lines(d, "gamemoded", g, GAMEMODED_SAYS)) == 2
              and len(log_lines(d, "tuned", t, TUNED_SAYS)) == 2,
              "a reload logs both again")
        stop(gm, g)
        # status reads the tools again at most once a second: polled, with a cap.
        check(wait_until(lambda: gone(d, "gamemoded", g), 60),
              "status no longer names gamemoded once it stopped")
        check(not gone(d, "tuned", t), "while tuned still runs")
        stop(tu)
        check(wait_until(lambda: gone(d, "tuned", t), 60), "nor tuned once it stopped")
        check(d.stop() == 0, "clean stop")


def test():
    require()
    for prog in ("gamemoded", "tuned", "dbus-run-session", "unshare"):
        if not shutil.which(prog):
            skip(f"no {prog}: .ci/deps test installs gamemode and tuned only in CI or with "
                 "RQB_PEER_TOOLS=1 (tuned's install starts tuned.service where systemd runs)")
    if not os.path.exists(RQCTL):
        skip(f"{RQCTL} is not built")
    with tmpdir() as tmp:
        gm, tu = start_peers(tmp)
        try:
            with_peers(tmp, gm, tu)
        finally:
            g = child_named(gm.pid, "gamemoded")
            stop(gm, g)
            stop(tu)
            print("--- peers' output ---")
            print(peers_log(tmp))


main(test)
