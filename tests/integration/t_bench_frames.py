"""bench/frames' game workload counts what it claims: every period boundary of the run is
a frame rendered or a frame dropped, a frame's time is never below the CPU work it holds,
and a frame whose work cannot fit its period is missed, every one, with the boundaries it
overran dropped. Behaviour only: no timing is asked of the machine."""
import os
import subprocess

from rqb import BUILD, ROOT, check, main, skip

FRAMES = os.path.join(ROOT, BUILD, "bench", "frames")


def frames(*args):
    p = subprocess.run([FRAMES, *args], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"frames {' '.join(args)} exits 0 ({p.stderr.strip()})")
    f = p.stdout.split()
    check(len(f) == 7, f"one line of 7 fields: {p.stdout!r}")
    slots, n, missed, dropped, p50, p99, mx = map(int, f)
    print(f"frames {' '.join(args)}: slots {slots} frames {n} missed {missed} "
          f"dropped {dropped} p50 {p50} p99 {p99} max {mx} us")
    check(n + dropped == slots, f"frames {n} + dropped {dropped} = slots {slots}")
    check(0 < n and missed <= n, "at least one frame, no more missed than rendered")
    check(p50 <= p99 <= mx, "p50 <= p99 <= max")
    return slots, n, missed, dropped, p50, p99, mx


def test():
    if not os.path.exists(FRAMES):
        skip(f"{FRAMES} is not built")
    # 1 s at 100 Hz: 100 boundaries, however many of them a busy machine lets it render.
    slots, *_ = frames("--hz", "100", "--seconds", "1", "--work-pct", "0", "--render-pct", "0")
    check(slots == 100, "100 Hz for 1 s is 100 boundaries")

    # One worker of half the 20 ms period's CPU time: no frame is shorter than its work.
    slots, n, missed, dropped, p50, p99, mx = frames("--hz", "50", "--seconds", "1",
                                                     "--workers", "1", "--work-pct", "50",
                                                     "--render-pct", "0")
    check(slots == 50, "50 Hz for 1 s is 50 boundaries")
    frame_us = 1000000 // 50
    check(p50 >= frame_us // 2, f"p50 {p50} us holds the worker's {frame_us // 2} us of work")

    # Starved: each worker's work is one and a half periods of CPU time, so every frame
    # is over budget and overruns at least one boundary, which is dropped.
    slots, n, missed, dropped, p50, p99, mx = frames("--hz", "100", "--seconds", "1",
                                                     "--workers", "2", "--work-pct", "150")
    check(missed == n, f"every frame is missed ({missed} of {n})")
    check(dropped >= n, f"each dropped a boundary at least ({dropped} for {n} frames)")
    check(p50 >= 15000, f"p50 {p50} us holds 15 ms of work")

    # A bad argument is refused with exit 2, before any frame.
    for bad in (["--hz", "0"], ["--workers", "x"], ["--seconds"], ["extra"]):
        p = subprocess.run([FRAMES, *bad], capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and not p.stdout, f"frames {' '.join(bad)} exits 2")


main(test)
