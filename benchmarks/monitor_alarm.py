"""How fast the monitor's collapse alarm fires after a collapse, and how often it fires falsely, at small steps.

Drives :class:`~collapse_probe.monitor.CollapseMonitor` (exact-text classes) with ``--states`` shadowed
states of ``--samples`` replies per step, drawn from known distributions: a simulator diverse at
ε = 0.4 ([.6, .4]) that collapses to [.98, .02] at step ``--collapse-at``; per seed it records the first
alarm after the collapse (and any before it). A second run keeps the simulator at [.6, .4] for
``--stationary`` steps and counts false alarms. A step of 2 states × 8 replies can never alarm alone
(identical replies give an upper end of 0.37 above ε* = 0.2): the alarm pools the last steps' states
(:func:`~collapse_probe.monitor._core.alarm_window`).

Run: ``python benchmarks/monitor_alarm.py [--seeds 50] [--states 2] [--samples 8] [--collapse-at 50]
[--stationary 100]``; ``tests/monitor/test_alarm_window.py`` runs a few seeds of the same check.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence

import numpy as np

from collapse_probe.monitor import CollapseMonitor

DIVERSE = np.array([0.6, 0.4])
COLLAPSED = np.array([0.98, 0.02])


def run(seed: int, steps: int, collapse_at: int | None, states: int, samples: int) -> list[int]:
    """Steps at which a collapse alarm fired, over ``steps`` steps (collapse from ``collapse_at``)."""
    rng = np.random.default_rng([seed, states, samples])
    m = CollapseMonitor(shadow_fraction=1.0, shadow_samples=samples, partition="exact", seed=seed)
    fired = []
    for step in range(steps):
        p = COLLAPSED if collapse_at is not None and step >= collapse_at else DIVERSE
        for s in range(states):
            texts = [f"reply {k}" for k in rng.choice(p.size, size=samples, p=p)]
            m.record_turn(f"r{step}-{s}", texts[0], texts[1:], turn=0)
        row = m.end_step(step)
        if any(a["kind"] == "collapse" for a in row["alarms"]):
            fired.append(step)
    return fired


def check(
    seeds: int, states: int, samples: int, collapse_at: int, stationary: int, within: int = 5
) -> dict[str, float]:
    """Share of seeds alarmed within ``within`` steps of the collapse, and seeds with a false alarm."""
    logging.getLogger("collapse_probe.monitor._core").setLevel(logging.ERROR)
    delays, early, false = [], 0, 0
    for seed in range(seeds):
        fired = run(seed, collapse_at + within + 5, collapse_at, states, samples)
        early += any(f < collapse_at for f in fired)
        after = [f for f in fired if f >= collapse_at]
        delays.append(after[0] - collapse_at + 1 if after else np.inf)
        false += bool(run(1000 + seed, stationary, None, states, samples))
    d = np.array(delays)
    return {"alarmed_within": float(np.mean(d <= within)), "median_steps": float(np.median(d)),
            "early": early / seeds, "false": false / seeds}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--states", type=int, default=2, help="shadowed states per step")
    ap.add_argument("--samples", type=int, default=8, help="replies per shadowed state")
    ap.add_argument("--collapse-at", type=int, default=50)
    ap.add_argument("--stationary", type=int, default=100, help="steps of the run without a collapse")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    r = check(args.seeds, args.states, args.samples, args.collapse_at, args.stationary)
    print(f"{args.states} shadowed states x {args.samples} replies per step, {args.seeds} seeds, collapse to [.98, .02] "
          f"at step {args.collapse_at}:")  # fmt: skip
    print(f"  alarmed within 5 steps of the collapse (the collapse step counted as 1): {r['alarmed_within']:.2f} of seeds"
          f" (median {r['median_steps']:g} steps); alarm before the collapse: {r['early']:.2f}")  # fmt: skip
    print(f"  {args.stationary} stationary steps at ε 0.4: seeds with any false alarm {r['false']:.2f}")
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
