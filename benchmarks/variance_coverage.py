"""Coverage of the variance decomposition's intervals on simulated runs with known components.

    PYTHONPATH=. python benchmarks/variance_coverage.py            # the panel in docs/variance-decomposition.md
    PYTHONPATH=. python benchmarks/variance_coverage.py --seeds 40 # quicker

For each world of the panel (:mod:`collapse_probe.metrics.variance_sim`: tasks × trials, simulator and agent
noise entering at turns, optionally a stochastic judge judged several times), ``--seeds`` runs are simulated
and decomposed; the table gives, per share, the true value (Monte Carlo), the mean estimate, and the share of
seeds whose 95 % interval covers the truth (where the judge's share is not identified, the truth of a side's
share includes the judge noise of the pairs it set off, as documented), the share of seeds whose interval misses
it on each side (the truth below the lower end, above the upper end: a two-sided figure can hide a one-sided
failure, and each end is meant to miss at most 2.5 %), and the median interval and median width of each share's
interval (what the interval says). The check passes when every identified share covers at >= 0.9 (exit 1
otherwise); the worst one-sided miss of the sides' shares is printed beside it. ``--random N`` adds N worlds with
parameters drawn at random from the form; ``--worlds NAME...`` keeps the worlds whose names start with one of
the given prefixes (e.g. ``--worlds "small: 12" "random 3"``); ``--small-runs N`` replaces the panel by N small
runs per world seed drawn from the form (6-20 tasks of 2-4 trials).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from collapse_probe.metrics.variance import COMPONENTS, SIDES, decompose_variance
from collapse_probe.metrics.variance_sim import Turn, VarianceWorld, alternating, sides_of, simulate, true_shares

PANEL: dict[str, VarianceWorld] = {
    "both sides vary, binary, judge rerun twice": VarianceWorld(
        alternating(6, sim=(0.5, 0.8), agent=(0.8, 0.5)), tasks=40, trials=6, judge_sd=0.5, judgements=2
    ),
    "greedy agent (temperature 0), binary, exact judge": VarianceWorld(
        alternating(6, sim=(0.5, 0.8), agent=(1.0, 0.6)), tasks=40, trials=6
    ),
    "greedy simulator, continuous, judge rerun 3 times": VarianceWorld(
        alternating(6, sim=(1.0, 0.6), agent=(0.6, 0.7)), tasks=30, trials=5, judge_sd=0.4, judgements=3,
        reward="continuous",
    ),
    "few tasks, 3-8 trials each, binary": VarianceWorld(
        alternating(5, sim=(0.4, 0.7), agent=(0.7, 0.7)), tasks=15, trials=(3, 8), task_sd=1.5
    ),
    "tau2-like: 12 turns, fresh simulator, near-greedy agent": VarianceWorld(
        alternating(12, sim=(0.2, 0.4), agent=(0.9, 0.3)), tasks=50, trials=4, task_mean=0.3, task_sd=1.2
    ),
    "judge-dominated, continuous, judged twice": VarianceWorld(
        alternating(4, sim=(0.6, 0.3), agent=(0.6, 0.3)), tasks=40, trials=4, judge_sd=1.2, judgements=2,
        reward="continuous",
    ),
    "simulator first, uneven turns, binary, judged once": VarianceWorld(
        (Turn("simulator", 0.3, 1.0), Turn("agent", 0.9, 0.2), Turn("agent", 0.5, 0.8), Turn("simulator", 0.7, 0.3)),
        tasks=40, trials=5, judge_sd=0.3,
    ),
    "small: 8 tasks x 4 trials, binary": VarianceWorld(
        alternating(6, sim=(0.5, 0.8), agent=(0.8, 0.5)), tasks=8, trials=4
    ),
    "small: 12 tasks x 3 trials, judged twice": VarianceWorld(
        alternating(4, sim=(0.4, 0.8), agent=(0.6, 0.6)), tasks=12, trials=3, judge_sd=0.6, judgements=2
    ),
    "wide: 100 tasks x 2 trials, binary": VarianceWorld(
        alternating(6, sim=(0.3, 0.8), agent=(0.9, 0.5)), tasks=100, trials=2
    ),
}  # fmt: skip


def random_world(rng: np.random.Generator) -> VarianceWorld:
    """A world drawn from the form: 2-12 turns, each side's repeat and effect drawn per turn."""
    n = int(rng.integers(2, 13))
    first = "agent" if rng.random() < 0.5 else "simulator"
    other = "simulator" if first == "agent" else "agent"
    turns = tuple(
        Turn(first if i % 2 == 0 else other, float(rng.choice([1.0, rng.uniform(0, 1)])), float(rng.uniform(0.1, 1)))
        for i in range(n)
    )
    judgements = int(rng.integers(1, 4))
    return VarianceWorld(turns, tasks=int(rng.integers(20, 61)), trials=(int(rng.integers(2, 5)), int(rng.integers(5, 9))),
                         task_mean=float(rng.uniform(-0.5, 0.5)), task_sd=float(rng.uniform(0.3, 1.5)),
                         judge_sd=float(rng.choice([0.0, rng.uniform(0.1, 1.0)])), judgements=judgements,
                         reward="binary" if rng.random() < 0.6 else "continuous")  # fmt: skip


def panel(random: int = 0, random_seed: int = 7) -> dict[str, VarianceWorld]:
    """The panel's worlds by name, with ``random`` worlds drawn from the form (``random_seed``) after them."""
    worlds = dict(PANEL)
    rng = np.random.default_rng(random_seed)
    for i in range(random):
        w = random_world(rng)
        worlds[f"random {i}: {sides_of(w.turns)}, {w.reward}, judged {w.judgements}x"] = w
    return worlds


def small_runs(count: int, world_seeds: tuple[int, ...] = (11, 23)) -> dict[str, VarianceWorld]:
    """Small runs drawn from the form, outside the panel: ``count`` worlds per world seed, 6-20 tasks of 2-4 trials."""
    worlds = {}
    for ws in world_seeds:
        rng = np.random.default_rng(ws)
        for i in range(count):
            w = random_world(rng)
            w = dataclasses.replace(w, tasks=int(rng.integers(6, 21)), trials=(2, 4))
            worlds[f"small run {ws}/{i}: {w.tasks} tasks, {sides_of(w.turns)}, {w.reward}, judged {w.judgements}x"] = w
    return worlds


def coverage(world: VarianceWorld, seeds: int, n_boot: int) -> dict[str, dict[str, float | None]]:
    truths = {True: true_shares(world), False: true_shares(world, judge_identified=False)}
    hits: dict[str, list[bool]] = {k: [] for k in COMPONENTS}
    below: dict[str, list[bool]] = {k: [] for k in COMPONENTS}
    above: dict[str, list[bool]] = {k: [] for k in COMPONENTS}
    est: dict[str, list[float]] = {k: [] for k in COMPONENTS}
    used: dict[str, list[float]] = {k: [] for k in COMPONENTS}
    ends: dict[str, list[tuple[float, float]]] = {k: [] for k in COMPONENTS}
    for seed in range(seeds):
        dec = decompose_variance(simulate(world, np.random.default_rng(seed)), n_boot=n_boot, seed=seed)
        truth = truths[dec.judge_source is not None]
        for k in COMPONENTS:
            sh = dec.shares[k]
            if sh is None or sh["ci95"] is None:
                continue
            lo, hi = sh["ci95"]
            below[k].append(truth[k] < lo - 1e-9)
            above[k].append(truth[k] > hi + 1e-9)
            hits[k].append(not (below[k][-1] or above[k][-1]))
            ends[k].append((lo, hi))
            est[k].append(sh["estimate"])
            used[k].append(truth[k])
    return {
        k: {"truth": float(np.mean(used[k])) if used[k] else truths[True][k], "mean": float(np.mean(est[k])) if est[k] else None,
            "coverage": float(np.mean(hits[k])) if hits[k] else None, "runs": len(hits[k]),
            "below": float(np.mean(below[k])) if below[k] else None, "above": float(np.mean(above[k])) if above[k] else None,
            "width": float(np.median([h - lo for lo, h in ends[k]])) if ends[k] else None,
            "median_ci": [float(np.median([e[0] for e in ends[k]])), float(np.median([e[1] for e in ends[k]]))]
            if ends[k] else None}
        for k in COMPONENTS
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--random", type=int, default=0, help="also this many worlds drawn at random from the form")
    ap.add_argument("--random-seed", type=int, default=7)
    ap.add_argument("--worlds", nargs="+", metavar="NAME", help="only the worlds whose names start with one of these")
    ap.add_argument(
        "--small-runs", type=int, default=0, help="instead of the panel, this many small runs per world seed (11, 23)"
    )
    args = ap.parse_args(argv)
    worlds = small_runs(args.small_runs) if args.small_runs else panel(args.random, args.random_seed)
    if args.worlds:
        worlds = {name: w for name, w in worlds.items() if name.startswith(tuple(args.worlds))}
        if not worlds:
            ap.error(f"--worlds: no world's name starts with any of {args.worlds}")
    print(f"| world | share | truth | mean estimate | 95% CI coverage ({args.seeds} seeds) | truth below the interval | "
          "truth above the interval | median interval | median width |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    worst, worst_side = 1.0, (0.0, 0.0)
    for name, w in worlds.items():
        for k, row in coverage(w, args.seeds, args.n_boot).items():
            cov = row["coverage"]
            if cov is None:
                print(f"| {name} | {k} | {row['truth']:.3f} | not identified | – | – | – | – | – |")
                continue
            worst = min(worst, cov)
            if k in SIDES:
                worst_side = (max(worst_side[0], row["below"]), max(worst_side[1], row["above"]))
            lo, hi = row["median_ci"]
            print(f"| {name} | {k} | {row['truth']:.3f} | {row['mean']:.3f} | {cov:.2f} | {row['below']:.3f} | "
                  f"{row['above']:.3f} | [{lo:.2f}, {hi:.2f}] | {row['width']:.3f} |")  # fmt: skip
        sys.stdout.flush()
    print(f"\nworst coverage: {worst:.2f} (target >= 0.90): {'PASS' if worst >= 0.9 else 'FAIL'}")
    print(f"sides' shares, worst one-sided miss: truth below the interval {worst_side[0]:.3f}, above it "
          f"{worst_side[1]:.3f} (each end aims at <= 0.025)")  # fmt: skip
    return 0 if worst >= 0.9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
