"""Coverage and width of the human-reference intervals over states (``audit --human``) on a panel.

``results.json`` → ``human_reference.grounding`` holds means over the human-grounded states: the
mean share of the human's class (values in [0, 1], mostly near 0) with a BCa bootstrap interval
(``scipy.stats.bootstrap``), and two shares of yes/no states (the human outside the simulator's
classes, the human is its mode) with Wilson score intervals. This script draws per-state values
from known distributions — shares with ties, many zeros, uniform; yes/no states at small and large
rates — and measures over ``--draws`` simulated audits per cell how often the 95 % interval covers
the true mean, and its mean width, for the audit's interval and for the earlier hand-written
percentile bootstrap, scipy's percentile bootstrap and the Student-t interval.

    python benchmarks/human_reference_coverage.py                 # the table in docs/estimator-coverage.md
    python benchmarks/human_reference_coverage.py --draws 100     # quicker
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np

from collapse_probe.metrics.transfer import mean_ci
from collapse_probe.pipelines.audit._human import _mean_ci, _share_ci

Interval = Callable[[np.ndarray, int], tuple[float, float]]


def old_percentile(v: np.ndarray, seed: int) -> tuple[float, float]:
    """The audit's earlier interval: a hand-written percentile bootstrap of the mean over states."""
    rng = np.random.default_rng(seed)
    m = v[rng.integers(0, v.size, size=(1000, v.size))].mean(axis=1)
    lo, hi = np.quantile(m, [0.025, 0.975])
    return float(lo), float(hi)


def scipy_percentile(v: np.ndarray, seed: int) -> tuple[float, float]:
    from scipy.stats import bootstrap

    if np.ptp(v) == 0:
        return float(v[0]), float(v[0])
    ci = bootstrap((v,), np.mean, n_resamples=1000, method="percentile", random_state=seed).confidence_interval
    return float(ci.low), float(ci.high)


def student_t(v: np.ndarray, seed: int) -> tuple[float, float]:
    e = mean_ci(v)
    return (e.value, e.value) if e.lo is None else (e.lo, e.hi)  # type: ignore[return-value]


def audit_mean(v: np.ndarray, seed: int) -> tuple[float, float]:
    lo, hi = _mean_ci(v, 1000, seed)["ci95"]
    return lo, hi


def audit_share(v: np.ndarray, seed: int) -> tuple[float, float]:
    lo, hi = _share_ci([bool(x) for x in v])["ci95"]
    return lo, hi


def _zero_inflated(r: np.random.Generator, n: int) -> np.ndarray:
    return np.where(r.random(n) < 0.7, 0.0, r.beta(2, 5, n))


SHARES = {  # name -> (draw n values, true mean)
    "70 % zeros + Beta(2,5)": (_zero_inflated, 0.3 * 2 / 7),
    "uniform(0, 1)": (lambda r, n: r.random(n), 0.5),
    "ties {0, .5, 1}": (lambda r, n: r.choice([0.0, 0.5, 1.0], n), 0.5),
}
FLAGS = {f"yes/no, rate {p}": (lambda r, n, p=p: (r.random(n) < p).astype(float), p) for p in (0.05, 0.2, 0.5, 0.85)}
METHODS: dict[str, Interval] = {
    "earlier percentile": old_percentile,
    "scipy percentile": scipy_percentile,
    "t": student_t,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=400, help="simulated audits per cell")
    ap.add_argument("--states", type=int, nargs="+", default=[5, 10, 20, 40, 100])
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # scipy's warnings on resamples of few distinct values
    t0 = time.perf_counter()
    rng = np.random.default_rng(1)
    head = ["values per state", "states", "audit's interval", *METHODS]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for panel, ours, label in ((SHARES, audit_mean, "BCa"), (FLAGS, audit_share, "Wilson")):
        for name, (draw, truth) in panel.items():
            for n in args.states:
                hits = dict.fromkeys(["ours", *METHODS], 0)
                width = dict.fromkeys(hits, 0.0)
                for d in range(args.draws):
                    v = draw(rng, n)
                    for k, f in (("ours", ours), *METHODS.items()):
                        lo, hi = f(v, d)
                        hits[k] += lo <= truth <= hi
                        width[k] += hi - lo
                cells = [f"{hits[k] / args.draws:.3f} ({width[k] / args.draws:.3f})" for k in hits]
                print(f"| {name} | {n} | {label} {cells[0]} | " + " | ".join(cells[1:]) + " |", flush=True)
    print(f"\ncoverage (mean width) of the 95 % interval over {args.draws} draws per cell; "
          f"{time.perf_counter() - t0:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
