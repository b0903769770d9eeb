"""Coverage and width of the audit's VS − direct interval on a small panel of known distributions.

``collapse-probe audit --compare-vs`` prints the direct ε̂, the VS ε̂ and ``VS − direct``: the
difference of the two printed bias-aware estimates with an interval made of each side's interval at
level 1 − α/2 (:func:`collapse_probe.pipelines.audit.collapse_error_difference`). This script draws both
modes' replies from known per-state distributions (cycled over the states), and measures, over
``--draws`` simulated audits per cell, how often the 95 % interval covers the true difference of the
mean collapse errors, its mean width, and — for the earlier paired bootstrap of the plug-in
difference — coverage, width and how often its point estimate disagreed with the difference of the
printed estimates by more than the printed precision (0.0005).

    python benchmarks/difference_coverage.py                 # the table in docs/audit-verdict.md
    python benchmarks/difference_coverage.py --draws 50      # quicker
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from collapse_probe.pipelines.audit import collapse_error_difference

UNIFORM = {k: [1.0 / k] * k for k in (5, 10, 200)}
PANEL = {
    "same, collapsed: [1] → [1]": ([[1.0]], [[1.0]]),
    "same, tie: [.5,.5] → [.5,.5]": ([[0.5, 0.5]], [[0.5, 0.5]]),
    "collapsed → uniform-5": ([[1.0]], [UNIFORM[5]]),
    "[.9,.1] → [.5,.5]": ([[0.9, 0.1]], [[0.5, 0.5]]),
    "mix [1],[.5,.5] → mix [.5,.5],[.4,.4,.2]": ([[1.0], [0.5, 0.5]], [[0.5, 0.5], [0.4, 0.4, 0.2]]),
    "uniform-10 → uniform-200": ([UNIFORM[10]], [UNIFORM[200]]),
}


def _true_eps(dists: list[list[float]], states: int) -> float:
    return float(np.mean([1.0 - max(dists[s % len(dists)]) for s in range(states)]))


def _draw(rng: np.random.Generator, dists: list[list[float]], states: int, n: int) -> list[np.ndarray]:
    return [rng.multinomial(n, dists[s % len(dists)]) for s in range(states)]


def old_paired_difference(
    ca: list[np.ndarray], cb: list[np.ndarray], n_boot: int, seed: int
) -> tuple[float, list[float]]:
    """The audit's earlier ``VS − direct``: mean plug-in difference with a two-level paired basic bootstrap."""
    rng = np.random.default_rng(seed)

    def boot(cs: list[np.ndarray]) -> np.ndarray:
        out = np.empty((len(cs), n_boot))
        for i, c in enumerate(cs):
            draws = rng.multinomial(int(c.sum()), c / c.sum(), size=n_boot)
            out[i] = 1.0 - draws.max(axis=1) / c.sum()
        return out

    diff = np.array([(1 - y.max() / y.sum()) - (1 - x.max() / x.sum()) for x, y in zip(ca, cb, strict=True)])
    ma, mb = boot(ca), boot(cb)
    idx = rng.integers(0, len(ca), size=(n_boot, len(ca)))
    b = (mb[idx, np.arange(n_boot)[:, None]] - ma[idx, np.arange(n_boot)[:, None]]).mean(axis=1)
    est = float(diff.mean())
    lo_q, hi_q = np.quantile(b, [0.025, 0.975])
    return est, [float(2 * est - hi_q), float(2 * est - lo_q)]


def run(draws: int, states: list[int], samples: list[int], seed: int) -> list[dict[str, object]]:
    rows = []
    for name, (da, db) in PANEL.items():
        for s in states:
            for n in samples:
                truth = _true_eps(db, s) - _true_eps(da, s)
                rng = np.random.default_rng([seed, s, n, len(rows)])
                cover, width, old_cover, old_width, disagree = 0, 0.0, 0, 0.0, 0
                for d in range(draws):
                    ca, cb = _draw(rng, da, s, n), _draw(rng, db, s, n)
                    new = collapse_error_difference(ca, cb, seed=d)
                    lo, hi = new["ci95"]
                    cover += lo <= truth <= hi
                    width += hi - lo
                    old_est, (olo, ohi) = old_paired_difference(ca, cb, 500, d)
                    old_cover += olo <= truth <= ohi
                    old_width += ohi - olo
                    disagree += abs(old_est - (round(new["b"], 3) - round(new["a"], 3))) > 0.0005
                rows.append({"cell": name, "S": s, "N": n, "truth": truth, "cover": cover / draws,
                             "width": width / draws, "old_cover": old_cover / draws, "old_width": old_width / draws,
                             "old_disagrees": disagree / draws})  # fmt: skip
                print(_fmt(rows[-1]), flush=True)
    return rows


def _fmt(r: dict[str, object]) -> str:
    return (f"| {r['cell']} | {r['S']} | {r['N']} | {r['truth']:+.3f} | {r['cover']:.3f} | {r['width']:.3f} | "
            f"{r['old_cover']:.3f} | {r['old_width']:.3f} | {r['old_disagrees']:.2f} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=200, help="simulated audits per cell (default 200)")
    ap.add_argument("--states", default="4,16", help="state counts, comma-separated (default 4,16)")
    ap.add_argument("--samples", default="20,50", help="replies per state N, comma-separated (default 20,50)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    start = time.time()
    print("| direct → VS (per-state distributions, cycled) | states | N | true VS − direct | coverage | mean width "
          "| earlier: coverage | earlier: width | earlier estimate ≠ difference of the printed ε̂ |")  # fmt: skip
    print("|" + " --- |" * 9)
    run(args.draws, [int(x) for x in args.states.split(",")], [int(x) for x in args.samples.split(",")], args.seed)
    print(f"\n{args.draws} draws per cell, 95 % intervals, {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
