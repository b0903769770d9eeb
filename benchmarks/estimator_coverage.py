"""Coverage and width of the collapse-error and entropy intervals on a panel of known distributions.

For every panel distribution, responses per state N and number of states S, draws ``--reps`` audits
(S states of N multinomial responses each, seeded), builds every interval and prints, per estimator,
the share of intervals that contain the truth (coverage), their mean width and the bias of the point
estimate. The truth of a mean is the average of the states' true values (the audited states are the
population; see :mod:`collapse_probe.metrics._intervals`). ``mixed`` cycles through the panel, one
distribution per state. The old intervals are printed beside the new ones for contrast.

Run: ``python benchmarks/estimator_coverage.py [--reps 400] [--seed 0] [--only eps|entropy]
[--n 10 20 50 400] [--states 1 4 16] [--panel NAME ...]``; ``--reps 50`` for a quick look. The shipped
table is ``docs/estimator-coverage.md`` (its header lists the commands that made it).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from collapse_probe.metrics import _intervals as iv
from collapse_probe.metrics import estimators as est


def _zipf(k: int) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1)
    return w / w.sum()


PANEL: dict[str, np.ndarray] = {
    "[.55,.25,.12,.08]": np.array([0.55, 0.25, 0.12, 0.08]),
    "uniform-10": np.full(10, 0.1),
    "uniform-3": np.full(3, 1.0 / 3.0),
    "[.9,.1]": np.array([0.9, 0.1]),
    "[.4,.4,.2]": np.array([0.4, 0.4, 0.2]),
    "Zipf-200": _zipf(200),
    ".7 + tail-50": np.concatenate([[0.7], np.full(50, 0.3 / 50)]),
}
"""The panel: a clear mode, uniform (the hardest case for ε), a two-way tie, a collapsed simulator and
two long tails (the hardest cases for entropy)."""


def true_eps(p: np.ndarray) -> float:
    return float(1.0 - p.max())


def true_entropy(p: np.ndarray) -> float:
    q = p[p > 0]
    return float(-(q * np.log(q)).sum())


Interval = tuple[float, float, float]  # lo, hi, estimate


def _eps_new(cs: Sequence[np.ndarray], seed: int) -> Interval:
    r = iv.mean_collapse_error_interval(cs, seed=seed)
    return r.ci95[0], r.ci95[1], r.estimate


def _eps_old(cs: Sequence[np.ndarray], seed: int) -> Interval:
    if len(cs) == 1:
        lo, hi = est.collapse_error_ci(cs[0])
        return lo, hi, est.collapse_error(cs[0])
    r = iv.mean_collapse_error_bootstrap(cs, n_boot=300, seed=seed)
    return r.ci95[0], r.ci95[1], r.estimate


def _ent_new(cs: Sequence[np.ndarray], seed: int) -> Interval:
    r = iv.mean_entropy_interval(cs, seed=seed)
    return r.ci95[0], r.ci95[1], r.estimate


def _ent_old(cs: Sequence[np.ndarray], seed: int) -> Interval:
    ests = [est.entropy(c) for c in cs]
    cis = [est.entropy_ci(c, n_boot=60, seed=seed) for c in cs]
    if len(cs) == 1:
        return cis[0][0], cis[0][1], ests[0]
    r = iv.mean_with_state_se(ests, cis, n_boot=300, seed=seed)
    return r.ci95[0], r.ci95[1], r.estimate


ESTIMATORS: dict[str, tuple[Callable[[np.ndarray], float], dict[str, Callable[..., Interval]]]] = {
    "eps": (true_eps, {"new": _eps_new, "old": _eps_old}),
    "entropy": (true_entropy, {"new": _ent_new, "old": _ent_old}),
}
OLD_NAMES = {
    "eps": "old: Wilson-max per state / two-level basic bootstrap of the mean",
    "entropy": "old: CWJ ± z·bootstrap SE per state (60 resamples) / two-level normal bootstrap of the mean",
}


def run_cell(
    quantity: str, dists: list[np.ndarray], n: int, s: int, reps: int, seed: int
) -> dict[str, tuple[float, float, float]]:
    """Coverage, mean width and bias of each estimator for one (panel entry, N, S) cell."""
    truth_fn, methods = ESTIMATORS[quantity]
    states = [dists[i % len(dists)] for i in range(s)]
    truth = float(np.mean([truth_fn(p) for p in states]))
    rng = np.random.default_rng([seed, n, s, len(dists), int(1e6 * truth)])
    hits = {m: 0 for m in methods}
    widths: dict[str, list[float]] = {m: [] for m in methods}
    errs: dict[str, list[float]] = {m: [] for m in methods}
    for rep in range(reps):
        cs = []
        for p in states:
            x = rng.multinomial(n, p)
            cs.append(x[x > 0])
        for m, fn in methods.items():
            lo, hi, e = fn(cs, rep)
            hits[m] += lo <= truth <= hi
            widths[m].append(hi - lo)
            errs[m].append(e - truth)
    return {m: (hits[m] / reps, float(np.mean(widths[m])), float(np.mean(errs[m]))) for m in methods}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400, help="simulated audits per cell (default 400)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=sorted(ESTIMATORS), help="one quantity only")
    ap.add_argument("--n", type=int, nargs="+", default=[10, 20, 50, 400], help="responses per state")
    ap.add_argument("--states", type=int, nargs="+", default=[1, 4, 16], help="states per audit")
    ap.add_argument("--panel", nargs="+", choices=sorted(PANEL) + ["mixed"], help="panel entries (default all)")
    args = ap.parse_args(argv)
    names = args.panel or [*PANEL, "mixed"]
    quantities = [args.only] if args.only else list(ESTIMATORS)
    t0 = time.perf_counter()
    print(f"level 0.95, {args.reps} simulated audits per cell, seed {args.seed}; target coverage 0.92-0.98")
    for q in quantities:
        print(f"\n### {'collapse error ε = 1 − max p' if q == 'eps' else 'entropy (nats)'}\n")
        print(f"new: {iv.COLLAPSE_ERROR_METHOD if q == 'eps' else iv.ENTROPY_METHOD}; {OLD_NAMES[q]}\n")
        print(
            "| distribution | N | states | truth | new coverage | new width | new bias | old coverage | old width | old bias |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in args.n:
            for s in args.states:
                for name in names:
                    if name == "mixed" and s == 1:
                        continue
                    dists = list(PANEL.values()) if name == "mixed" else [PANEL[name]]
                    res = run_cell(q, dists, n, s, args.reps, args.seed)
                    truth_fn = ESTIMATORS[q][0]
                    truth = float(np.mean([truth_fn(dists[i % len(dists)]) for i in range(s)]))
                    (cn, wn, bn), (co, wo, bo) = res["new"], res["old"]
                    flag = "" if 0.92 <= cn <= 0.98 else (" ▲" if cn > 0.98 else " ▼")
                    print(f"| {name} | {n} | {s} | {truth:.3f} | {cn:.3f}{flag} | {wn:.3f} | {bn:+.3f} | "
                          f"{co:.3f} | {wo:.3f} | {bo:+.3f} |", flush=True)  # fmt: skip
    print(f"\n{time.perf_counter() - t0:.0f} s; ▲ above 0.98 (conservative), ▼ below 0.92; N = 10 is low-confidence.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
