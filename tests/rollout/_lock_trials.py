"""Simultaneous acquisition of one run directory's lock by several processes (used by the run-lock tests)."""

from __future__ import annotations

import multiprocessing as mp
import tempfile
import time
from pathlib import Path

from collapse_probe.errors import ConfigError
from collapse_probe.rollout._rundir import LOCK_FILE, RunLock


def _contender(d: str, barrier, queue, hold_s: float) -> None:  # noqa: ANN001 - multiprocessing primitives
    barrier.wait()  # every contender calls acquire at the same instant
    lock = RunLock(Path(d))
    try:
        lock.acquire()
    except ConfigError:
        queue.put(None)
        return
    start = time.monotonic()  # system-wide: comparable across processes
    time.sleep(hold_s)
    end = time.monotonic()
    lock.release()
    queue.put((start, end))


def trial(root: Path, *, processes: int = 6, stale: bool = False, hold_s: float = 0.1) -> tuple[int, int]:
    """One trial: ``(holders, overlapping holds)``; ``stale`` plants the lock file of a dead process first."""
    d = Path(tempfile.mkdtemp(dir=root))
    if stale:
        (d / LOCK_FILE).write_text("999999999 12345\n")  # no such pid: its owner was killed
    ctx = mp.get_context("fork")
    barrier, queue = ctx.Barrier(processes), ctx.Queue()
    procs = [ctx.Process(target=_contender, args=(str(d), barrier, queue, hold_s)) for _ in range(processes)]
    for p in procs:
        p.start()
    holds = sorted(h for h in (queue.get(timeout=60) for _ in procs) if h is not None)
    for p in procs:
        p.join(timeout=60)
    overlaps = sum(1 for a, b in zip(holds, holds[1:], strict=False) if b[0] < a[1])
    return len(holds), overlaps
