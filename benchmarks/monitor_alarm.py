"""How fast the monitor's collapse alarm fires after a collapse, and how often it fires falsely, at small steps.

Drives :class:`~collapse_probe.integrations.monitor.CollapseMonitor` (exact-text classes) with ``--states`` shadowed
states of ``--samples`` replies per step, drawn from known distributions: a simulator diverse at
ε = 0.4 ([.6, .4]) that collapses to [.98, .02] at step ``--collapse-at``; per seed it records the first
alarm after the collapse (and any before it). A second run keeps the simulator at ε = ``--stationary-eps``
([1 − ε, ε]; default 0.20, exactly at ε* = 0.2, the hardest case for the guarantee) for ``--stationary``
steps and counts runs with any false alarm. The alarm is the run-wide sequential test of
:mod:`~collapse_probe.integrations.monitor._sequential` (a false alarm anywhere in a run has chance ≤ 0.05); both
shares are printed with Clopper–Pearson 95 % intervals.

Run: ``python benchmarks/monitor_alarm.py [--seeds 200] [--states 2] [--samples 8] [--collapse-at 50]
[--stationary 1000] [--stationary-eps 0.2]``; ``tests/monitor/test_alarm_window.py`` runs a few seeds of
the same check.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence

import numpy as np

from collapse_probe.integrations.monitor import CollapseMonitor

DIVERSE = np.array([0.6, 0.4])
COLLAPSED = np.array([0.98, 0.02])


def run(
    seed: int,
    steps: int,
    collapse_at: int | None,
    states: int,
    samples: int,
    before: np.ndarray = DIVERSE,
    stop: bool = False,
) -> list[int]:
    """Steps at which a collapse alarm fired, over ``steps`` steps (``before`` until ``collapse_at``, then
    [.98, .02]); with ``stop``, the run ends at its first alarm."""
    rng = np.random.default_rng([seed, states, samples])
    m = CollapseMonitor(shadow_fraction=1.0, shadow_samples=samples, partition="exact", seed=seed)
    fired = []
    for step in range(steps):
        p = COLLAPSED if collapse_at is not None and step >= collapse_at else before
        for s in range(states):
            texts = [f"reply {k}" for k in rng.choice(p.size, size=samples, p=p)]
            m.record_turn(f"r{step}-{s}", texts[0], texts[1:], turn=0)
        row = m.end_step(step)
        if any(a["kind"] == "collapse" for a in row["alarms"]):
            fired.append(step)
            if stop:
                break
    return fired


def run_test(
    seed: int,
    steps: int,
    collapse_at: int | None,
    states: int,
    samples: int,
    before: np.ndarray = DIVERSE,
    stop: bool = False,
) -> list[int]:
    """:func:`run` without the monitor around it: the same draws fed to the alarm's own test
    (:class:`~collapse_probe.integrations.monitor._sequential.CollapseTest`, with the history the monitor keeps), so
    thousands of steps per seed take seconds. ``--through-monitor`` runs :func:`run` instead."""
    from collapse_probe.integrations.monitor._core import MAX_ALARM_WINDOW
    from collapse_probe.integrations.monitor._sequential import CollapseTest

    rng = np.random.default_rng([seed, states, samples])
    test, history, fired = CollapseTest(0.2, 0.95), [], []
    for step in range(steps):
        p = COLLAPSED if collapse_at is not None and step >= collapse_at else before
        counts = []
        for _ in range(states):
            k = rng.choice(p.size, size=samples, p=p)
            counts.append(np.bincount(k, minlength=p.size).tolist())
        test.update(counts, history[-MAX_ALARM_WINDOW:])
        history.append(counts)
        if test.rejected:
            fired.append(step)
            if stop:
                break
    return fired


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact 95 % interval of a share k / n."""
    from scipy.stats import beta

    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return lo, hi


def check(
    seeds: int,
    states: int,
    samples: int,
    collapse_at: int,
    stationary: int,
    within: int = 5,
    stationary_eps: float = 0.2,
    through_monitor: bool = False,
) -> dict[str, float]:
    """Share of seeds alarmed within ``within`` steps of the collapse, and seeds with a false alarm over
    ``stationary`` steps at ε = ``stationary_eps``."""
    logging.getLogger("collapse_probe.integrations.monitor._core").setLevel(logging.ERROR)
    delays, early, false = [], 0, 0
    flat = np.array([1.0 - stationary_eps, stationary_eps])
    go = run if through_monitor else run_test
    for seed in range(seeds):
        fired = go(seed, collapse_at + within + 5, collapse_at, states, samples)
        early += any(f < collapse_at for f in fired)
        after = [f for f in fired if f >= collapse_at]
        delays.append(after[0] - collapse_at + 1 if after else np.inf)
        false += bool(go(1000 + seed, stationary, None, states, samples, before=flat, stop=True))
    d = np.array(delays)
    hit = int(np.sum(d <= within))
    return {"alarmed_within": hit / seeds, "alarmed_ci": clopper_pearson(hit, seeds),
            "median_steps": float(np.median(d)), "early": early / seeds, "false": false / seeds,
            "false_ci": clopper_pearson(false, seeds)}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--states", type=int, default=2, help="shadowed states per step")
    ap.add_argument("--samples", type=int, default=8, help="replies per shadowed state")
    ap.add_argument("--collapse-at", type=int, default=50)
    ap.add_argument("--stationary", type=int, default=1000, help="steps of the run without a collapse")
    ap.add_argument("--stationary-eps", type=float, default=0.2, help="ε of the run without a collapse")
    ap.add_argument("--through-monitor", action="store_true",
                    help="drive CollapseMonitor itself (slow: ~0.05 s a step) rather than its alarm's test")  # fmt: skip
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    r = check(args.seeds, args.states, args.samples, args.collapse_at, args.stationary,
              stationary_eps=args.stationary_eps, through_monitor=args.through_monitor)  # fmt: skip
    print("$ python benchmarks/monitor_alarm.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print(f"{args.states} shadowed states x {args.samples} replies per step, {args.seeds} seeds, collapse to [.98, .02] "
          f"at step {args.collapse_at}:")  # fmt: skip
    lo, hi = r["alarmed_ci"]
    print(f"  alarmed within 5 steps of the collapse (the collapse step counted as 1): {r['alarmed_within']:.3f} of seeds"
          f" [{lo:.3f}, {hi:.3f}] (median {r['median_steps']:g} steps); alarm before the collapse: {r['early']:.3f}")  # fmt: skip
    lo, hi = r["false_ci"]
    print(f"  {args.stationary} stationary steps at ε {args.stationary_eps:g}: seeds with any false alarm "
          f"{r['false']:.3f} [{lo:.3f}, {hi:.3f}]")  # fmt: skip
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
