"""How often the audit's verdict is right, wrong and undecided at a given true mean collapse error.

Simulates the meaning view of an audit: ``--states`` states of ``--samples`` replies each, drawn from
known per-state distributions whose mean collapse error ε̄ is set, judged against ε* (``--epsilon-star``)
with the headline interval (:func:`~collapse_probe.metrics.mean_collapse_error_interval`) alone
(:func:`~collapse_probe.pipelines.audit._verdict.view_label`), as the audit judged it before its sequential verdict
(``benchmarks/sequential_verdict.py`` measures that one). For ε̄ from 0.05 to 0.5 in steps of
0.05 it prints the share of audits called COLLAPSED, NOT COLLAPSED and INCONCLUSIVE, per family of states:

- ``two classes``: every state [1 − ε̄, ε̄];
- ``mode + tail``: every state a mode of 1 − ε̄ and ε̄ spread over 10 classes;
- ``collapsed / diverse``: states alternate between a point mass and a state of ε = 2ε̄ (mode 1 − 2ε̄,
  the rest over 5 classes; ε̄ ≤ 0.35, where that mode is still the largest class).

Beside each ε̄ it prints the most any test could do at that design: the power of the Neyman–Pearson
test of ε = ε* against the truth for the two-class family (the count of the modal class is binomial
with S·N trials; one-sided level 0.025, the share of an audit's 95 % interval that lies on each side).

``--find`` instead searches the replies per state at which the verdict is decisive (the interval
excludes ε*) in at least 80 % of audits at ε̄ = ε* ± 0.1, beside what
:func:`~collapse_probe.metrics.decisive_sample_size` (the audit's rerun advice) says.

Run: ``python benchmarks/verdict_error_rates.py [--reps 400] [--states 4] [--samples 20]
[--epsilon-star 0.2] [--find]``. The shipped table is in ``docs/audit-verdict.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np
from scipy.stats import binom

from collapse_probe.metrics import decisive_sample_size, mean_collapse_error_interval
from collapse_probe.pipelines.audit._verdict import COLLAPSED, INCONCLUSIVE, NOT_COLLAPSED, view_label


def family_states(family: str, eps: float, s: int) -> list[np.ndarray] | None:
    """The S state distributions of a family at mean collapse error ``eps`` (``None``: not defined there)."""
    if family == "two classes":
        return [np.array([1 - eps, eps])] * s
    if family == "mode + tail":
        return [np.concatenate([[1 - eps], np.full(10, eps / 10)])] * s
    if family == "collapsed / diverse":
        if eps > 0.35 or s < 2:
            return None
        return [
            np.array([1.0]) if i % 2 == 0 else np.concatenate([[1 - 2 * eps], np.full(5, 2 * eps / 5)])
            for i in range(s)
        ]
    raise ValueError(family)


FAMILIES = ("two classes", "mode + tail", "collapsed / diverse")
GRID = [round(0.05 * k, 2) for k in range(1, 11)]


def verdict_shares(
    family: str, eps: float, s: int, n: int, star: float, reps: int, seed: int
) -> dict[str, float] | None:
    """Share of audits per verdict label."""
    states = family_states(family, eps, s)
    if states is None:
        return None
    # the truth must be exactly eps over the audited states (the mix alternates; odd S shifts it)
    rng = np.random.default_rng([seed, s, n, int(eps * 1000), len(family)])
    counts = dict.fromkeys((COLLAPSED, NOT_COLLAPSED, INCONCLUSIVE), 0)
    for rep in range(reps):
        cs = [x[x > 0] for x in (rng.multinomial(n, p) for p in states)]
        r = mean_collapse_error_interval(cs, seed=rep)
        counts[view_label(r.estimate, r.ci95, star)] += 1
    return {k: v / reps for k, v in counts.items()}


def np_power(eps: float, s: int, n: int, star: float, alpha_half: float = 0.025) -> float:
    """Power of the most powerful level-α/2 test of ε = ε* against ε = ``eps`` on S·N binomial trials."""
    trials = s * n
    if eps == star:
        return float("nan")
    m0, m1 = 1 - star, 1 - eps
    if m1 < m0:  # NOT COLLAPSED: few modal replies
        c = int(binom.ppf(alpha_half, trials, m0))
        c = c if binom.cdf(c, trials, m0) <= alpha_half else c - 1
        return float(binom.cdf(c, trials, m1))
    c = int(binom.isf(alpha_half, trials, m0)) + 1
    return float(binom.sf(c - 1, trials, m1))


def table(s: int, n: int, star: float, reps: int, seed: int) -> None:
    print(f"{s} states × {n} replies, ε* = {star:g}, {reps} simulated audits per cell, seed {seed}\n")
    print("| true ε̄ | family | COLLAPSED | NOT COLLAPSED | INCONCLUSIVE | best possible decisive (two classes) |")
    print("|---:|---|---:|---:|---:|---:|")
    for eps in GRID:
        for family in FAMILIES:
            r = verdict_shares(family, eps, s, n, star, reps, seed)
            if r is None:
                continue
            best = np_power(eps, s, n, star)
            best_txt = "–" if family != "two classes" or np.isnan(best) else f"{best:.2f}"
            print(f"| {eps:.2f} | {family} | {r[COLLAPSED]:.3f} | {r[NOT_COLLAPSED]:.3f} | {r[INCONCLUSIVE]:.3f} | {best_txt} |",
                  flush=True)  # fmt: skip


def find(s: int, star: float, reps: int, seed: int, gap: float = 0.1) -> None:
    """Replies per state at which ε* ± gap is decided in ≥ 80 % of audits, per family and side."""
    advice = decisive_sample_size(star, s, gap=gap)
    print(f"{s} states, ε* = {star:g}, |ε̄ − ε*| = {gap:g}: the rerun advice says {advice} replies per state\n")
    print(
        "| family | true ε̄ | replies per state | decisive | right | best possible (two classes) |\n|---|---:|---:|---:|---:|---:|"
    )
    for family in FAMILIES[:2]:
        for eps in (round(star + gap, 3), round(star - gap, 3)):
            if not 0 < eps < 1:
                continue
            right = NOT_COLLAPSED if eps > star else COLLAPSED
            for n in sorted({20, 30, 40, 50, 60, 80, advice}):
                r = verdict_shares(family, eps, s, n, star, reps, seed)
                assert r is not None
                decisive = r[COLLAPSED] + r[NOT_COLLAPSED]
                best = np_power(eps, s, n, star)
                print(f"| {family} | {eps:.2f} | {n}{' (advice)' if n == advice else ''} | {decisive:.3f} | {r[right]:.3f} | "
                      f"{best:.2f} |", flush=True)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--reps", type=int, default=400, help="simulated audits per cell (default 400)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--states", type=int, default=4, help="states per audit (default 4, the README's audit)")
    ap.add_argument("--samples", type=int, default=20, help="replies per state (default 20)")
    ap.add_argument("--epsilon-star", type=float, default=0.2)
    ap.add_argument("--find", action="store_true", help="instead: replies per state for 80 %% decisive verdicts")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.find:
        find(args.states, args.epsilon_star, args.reps, args.seed)
    else:
        table(args.states, args.samples, args.epsilon_star, args.reps, args.seed)
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
