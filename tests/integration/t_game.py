"""Games over the D-Bus API (issue 53): RegisterGame and UnregisterGame, each naming the
game by a pidfd, called from a D-Bus connection of a real unprivileged user's (A, a
member of [latency] game_group, RLIMIT_NICE 0) that passes fds, as the session agent
(rqctl gamemode-agent) does.

  grant       the game, its threads (one started after the call too) and a child it
              forks get [latency] game (-10); UnregisterGame gives all of them back.
              A second UnregisterGame is NoSuchTask; a second RegisterGame changes
              nothing.
  exit        a game that forked a child exits: its exit gives the child back.
  disconnect  the caller's connection ends (its client exits): the game is given back;
              a game of another connection of the same user's keeps its value.
  refused     B's process (AccessDenied); a pipe's fd, not a pidfd (InvalidArgs); a
              pidfd whose process exited and whose pid was given to a new process of
              A's (NoSuchTask, and the new process gets nothing); a game put at 16 games
              of A's at once (LimitsExceeded); without game_group, below A's
              RLIMIT_NICE (AccessDenied); with game = 0 (AccessDenied).
  kept        a value root set on the game since stays at UnregisterGame; a game that
              had a lower value keeps it, and its unregister leaves it.
  crash       the daemon is killed (SIGKILL) while a game holds its value: the next
              start gives it back from the journal.
  fast        on the fake hybrid topology with fast_cores, a busy game is pinned to
              the P-core while registered, and unpinned when unregistered.

Arguments name the cases to run; all without."""
import os
import signal
import subprocess
import sys

from rqb import (ROOT, Daemon, allowed, check, main, managed, nice_of, require, rqctl,
                 skip, spawn_at, tids_of, tmpdir, uid_of, wait_until)
from rqb_gamecall import GameCaller
from rqb_user import User

GAME = -10  # [latency] game's default
DENIED = "org.freedesktop.DBus.Error.AccessDenied"
INVALID = "org.freedesktop.DBus.Error.InvalidArgs"
LIMITS = "org.freedesktop.DBus.Error.LimitsExceeded"
NO_TASK = "org.rqbalance1.Error.NoSuchTask"
TOPO_HYBRID = os.path.join(ROOT, "tests", "data", "topo-hybrid-1p1e.xml")

# A game of the user's: a thread from the start; on "fork", a child that sleeps (its
# pid printed); on "thread", one more thread (its tid printed); on "spin", a busy loop.
GAME_PY = """
import os, sys, threading, time
threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
print(os.getpid(), flush=True)
for line in sys.stdin:
    if line.startswith("fork"):
        k = os.fork()
        if k == 0:
            time.sleep(600)
            os._exit(0)
        print(k, flush=True)
    elif line.startswith("thread"):
        r, w = os.pipe()
        def run():
            os.write(w, str(threading.get_native_id()).encode())
            time.sleep(600)
        threading.Thread(target=run, daemon=True).start()
        print(os.read(r, 32).decode(), flush=True)
    elif line.startswith("spin"):
        while True:
            pass
"""


class Game:
    """A game of user's (GAME_PY)."""

    def __init__(self, user):
        self.p = user.popen(["/usr/bin/python3", "-c", GAME_PY], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
        self.pid = int(self.p.stdout.readline())
        self.kids = []

    def ask(self, what):
        self.p.stdin.write(what + "\n")
        self.p.stdin.flush()
        if what == "spin":
            return None
        return int(self.p.stdout.readline())

    def fork(self):
        k = self.ask("fork")
        self.kids.append(k)
        return k

    def exit(self):
        """The game ends (its runuser parent reaps it)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()

    def end(self):
        for k in self.kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.exit()


def all_at(pids, v):
    """Whether every thread of pids has nice v."""
    ts = [t for p in pids for t in tids_of(p)]
    return bool(ts) and all(nice_of(t) == v for t in ts)


# ---- the cases


def grant(d, bus, a, b):
    ca = GameCaller(a, bus.address)
    g = Game(a)
    fd = ca.pidfd(g.pid)
    check(ca.ask("RegisterGame", fd) == ["ok", str(GAME)], f"A registers its game: {GAME}")
    later = g.ask("thread")
    kid = g.fork()
    d.sync()
    check(all_at([g.pid], GAME), f"the game's threads have {GAME}: "
          f"{[(t, nice_of(t)) for t in tids_of(g.pid)]}")
    check(later in tids_of(g.pid) and nice_of(later) == GAME, f"a thread started since too")
    check(all_at([kid], GAME), f"and the child it forked: {nice_of(kid)}, {managed(d, kid)}")
    v = managed(d, g.pid)
    check(v is not None and v[0] == GAME and v[1].startswith(f"game uid {a.uid}"),
          f"rqctl get names the grant: {v}")
    check(ca.ask("RegisterGame", fd) == ["ok", str(GAME)], "asked again: the same value")
    check(ca.ask("UnregisterGame", fd) == ["ok"], "A unregisters it")
    d.sync()
    check(all_at([g.pid, kid], 0), f"the game, its threads and its child are given back: "
          f"{[(t, nice_of(t)) for t in tids_of(g.pid) + tids_of(kid)]}")
    check(managed(d, g.pid) is None and managed(d, kid) is None, "and not managed")
    check(ca.ask("UnregisterGame", fd) == ["error", NO_TASK], "unregistered again: NoSuchTask")
    g.end()
    ca.end()


def exit_(d, bus, a, b):
    ca = GameCaller(a, bus.address)
    g = Game(a)
    fd = ca.pidfd(g.pid)
    check(ca.ask("RegisterGame", fd) == ["ok", str(GAME)], "A registers its game")
    kid = g.fork()
    d.sync()
    check(all_at([g.pid, kid], GAME), f"the game and its child have {GAME}")
    g.exit()
    d.sync()
    check(all_at([kid], 0) and managed(d, kid) is None,
          f"the game's exit gives its child back: {nice_of(kid)}, {managed(d, kid)}")
    check(ca.ask("UnregisterGame", fd) == ["error", NO_TASK], "its unregister: NoSuchTask")
    g.end()
    ca.end()


def disconnect(d, bus, a, b):
    ca, other = GameCaller(a, bus.address), GameCaller(a, bus.address)
    g, h = Game(a), Game(a)
    check(ca.ask("RegisterGame", ca.pidfd(g.pid)) == ["ok", str(GAME)], "A registers game G")
    check(other.ask("RegisterGame", other.pidfd(h.pid)) == ["ok", str(GAME)],
          "and, on another connection, game H")
    kid = g.fork()
    d.sync()
    check(all_at([g.pid, kid, h.pid], GAME), f"both have {GAME}")
    ca.end()
    wait_until(lambda: all_at([g.pid, kid], 0), 60)
    d.sync()
    check(all_at([g.pid, kid], 0) and managed(d, g.pid) is None,
          f"the end of G's connection gives G and its child back: {nice_of(g.pid)}, {nice_of(kid)}")
    check(all_at([h.pid], GAME), f"H, the other connection's, keeps {GAME}: {nice_of(h.pid)}")
    other.end()
    wait_until(lambda: all_at([h.pid], 0), 60)
    check(all_at([h.pid], 0), "and its connection's end gives H back")
    g.end()
    h.end()


def refused(d, bus, a, b):
    ca = GameCaller(a, bus.address)
    theirs = b.start("echo $$; exec sleep 300")
    check(ca.ask("RegisterGame", ca.pidfd(theirs)) == ["error", DENIED],
          "B's process: AccessDenied")
    d.sync()
    check(nice_of(theirs) == 0 and managed(d, theirs) is None, "and B's process has nothing")
    check(ca.ask("RegisterGame", "pipe") == ["error", INVALID], "a pipe's fd: InvalidArgs")

    # A pidfd of A's process P; P exits and a new process of A's gets P's number.
    p = a.start("echo $$; exec sleep 300")
    fd = ca.pidfd(p)
    os.kill(p, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{p}"), 30)
    new = spawn_at(p, a)
    try:
        wait_until(lambda: uid_of(new) == a.uid, 30)
        check(new == p, f"A's new process has P's number {p}")
        check(ca.ask("RegisterGame", fd) == ["error", NO_TASK],
              "the pidfd of the exited P: NoSuchTask")
        d.sync()
        check(nice_of(new) == 0 and managed(d, new) is None,
              f"the new process at P's number gets nothing: {nice_of(new)}, {managed(d, new)}")
    finally:
        os.kill(new, signal.SIGKILL)
        os.waitpid(new, 0)

    games = [Game(a) for _ in range(17)]
    for i, g in enumerate(games[:16]):
        check(ca.ask("RegisterGame", ca.pidfd(g.pid)) == ["ok", str(GAME)],
              f"game {i + 1} of 16 registered")
    r = ca.ask("RegisterGame", ca.pidfd(games[16].pid))
    check(r == ["error", LIMITS], f"a 17th at once: LimitsExceeded ({r})")
    d.sync()
    check(nice_of(games[16].pid) == 0, "and it has nothing")
    games[0].end()
    r = ca.ask("RegisterGame", ca.pidfd(games[16].pid))
    check(r == ["ok", str(GAME)], f"once one of the 16 exited, it may ({r})")
    for g in games:
        g.end()
    ca.end()


def denied(what):
    """The case where the conf gives A no game: A's RegisterGame is AccessDenied, and
    the game gets nothing."""
    def case(d, bus, a, b):
        ca = GameCaller(a, bus.address)
        g = Game(a)
        r = ca.ask("RegisterGame", ca.pidfd(g.pid))
        check(r == ["error", DENIED], f"{what}: AccessDenied ({r})")
        d.sync()
        check(all_at([g.pid], 0), "and the game has nothing")
        g.end()
        ca.end()
    return case


def kept(d, bus, a, b):
    ca = GameCaller(a, bus.address)
    g = Game(a)
    fd = ca.pidfd(g.pid)
    check(ca.ask("RegisterGame", fd) == ["ok", str(GAME)], "A registers its game")
    d.sync()
    check(rqctl(d, "set", "-l", "-3", "-p", str(g.pid)).returncode == 0,
          "root gives the game -3 since")
    check(ca.ask("UnregisterGame", fd) == ["ok"], "A unregisters it")
    d.sync()
    check(all_at([g.pid], -3) and managed(d, g.pid) == (-3, "ctl uid 0"),
          f"the value root set stays: {nice_of(g.pid)}, {managed(d, g.pid)}")
    g.end()

    g = Game(a)
    check(rqctl(d, "set", "-l", "-15", "-p", str(g.pid)).returncode == 0,
          "root gives another game -15")
    fd = ca.pidfd(g.pid)
    check(ca.ask("RegisterGame", fd) == ["ok", "-15"], "registered, it keeps its lower -15")
    check(ca.ask("UnregisterGame", fd) == ["ok"], "its unregister is answered")
    d.sync()
    check(all_at([g.pid], -15) and managed(d, g.pid) == (-15, "ctl uid 0"),
          f"and leaves it: {nice_of(g.pid)}, {managed(d, g.pid)}")
    g.end()
    ca.end()


def crash(tmp, bus, a, conf, env):
    g = Game(a)
    with Daemon(tmp, conf=conf, env=env) as d:
        d.wait_for(r"dbus: serving org\.rqbalance1")
        ca = GameCaller(a, bus.address)
        check(ca.ask("RegisterGame", ca.pidfd(g.pid)) == ["ok", str(GAME)],
              "A registers its game")
        kid = g.fork()
        d.sync()
        check(all_at([g.pid, kid], GAME), f"the game and its child have {GAME}")
        check(d.stop(signal.SIGKILL) == -signal.SIGKILL, "the daemon is killed")
        check(all_at([g.pid], GAME), "SIGKILL left the game's value")
    with Daemon(tmp, conf=conf, env=env) as d:
        d.wait_for(r"dbus: serving org\.rqbalance1")
        d.sync()
        check(all_at([g.pid, kid], 0) and managed(d, g.pid) is None,
              f"the next start gave the game and its child back: {nice_of(g.pid)}, {nice_of(kid)}")
        ca.end()
        check(d.stop() == 0, "crash: clean stop")
    g.end()


def fast(tmp, bus, a, conf, env):
    g = Game(a)
    with Daemon(tmp, ["--topology", TOPO_HYBRID], conf=f"[balance]\nfast_cores = yes\n{conf}",
                env=env) as d:
        d.wait_for(r"dbus: serving org\.rqbalance1")
        d.wait_for(r"fast_cores keeps latency work on CPUs 0")
        g.ask("spin")
        ca = GameCaller(a, bus.address)
        fd = ca.pidfd(g.pid)
        check(ca.ask("RegisterGame", fd) == ["ok", str(GAME)], "A registers its busy game")
        d.wait_for(rf"pin tid={g.pid} .* cpus=0 why=fast")
        d.sync()
        check(allowed(g.pid) == {0}, f"the game is pinned to the P-core ({allowed(g.pid)})")
        check(ca.ask("UnregisterGame", fd) == ["ok"], "A unregisters it")
        d.wait_for(rf"unpin tid={g.pid} .*why=latency_gone")
        d.sync()
        check(allowed(g.pid) == {0, 1}, f"given back, it has both CPUs ({allowed(g.pid)})")
        ca.end()
        check(d.stop() == 0, "fast: clean stop")
    g.end()


def test():
    require()
    for prog in ("groupadd", "usermod", "dbus-daemon"):
        if subprocess.run(["sh", "-c", f"command -v {prog}"], capture_output=True).returncode:
            skip(f"{prog} missing")
    if not hasattr(os, "pidfd_open"):
        skip("python has no os.pidfd_open")
    from rqb_dbus import SystemBus
    cases = {"grant": grant, "exit": exit_, "disconnect": disconnect, "refused": refused,
             "no_group": denied("without game_group, below A's RLIMIT_NICE"),
             "off": denied("with game = 0"), "kept": kept}
    apart = {"crash": crash, "fast": fast}
    group = f"rqbgm{os.getpid() % 100000}"
    with tmpdir() as tmp, SystemBus() as bus, User("rqbga") as a, User("rqbgb") as b:
        os.chmod(tmp, 0o755)
        env = {"DBUS_SYSTEM_BUS_ADDRESS": bus.address}
        subprocess.run(["groupadd", group], check=True)
        try:
            subprocess.run(["usermod", "-a", "-G", group, a.name], check=True)
            member = f"[latency]\ngame_group = {group}\n"
            confs = {"no_group": "", "off": f"{member}game = 0\n"}
            for name in sys.argv[1:] or [*cases, *apart]:
                conf = confs.get(name, member)
                if name in apart:
                    apart[name](tmp, bus, a, conf, env)
                    continue
                with Daemon(tmp, conf=conf, env=env) as d:
                    d.wait_for(r"dbus: serving org\.rqbalance1")
                    cases[name](d, bus, a, b)
                    check(d.stop() == 0, f"{name}: clean stop")
        finally:
            subprocess.run(["groupdel", group], capture_output=True, check=False)


main(test)
