"""Coverage and width of the collapse-error and entropy intervals on a panel of known distributions and mixes.

For every panel entry, responses per state N and number of states S, draws ``--reps`` audits (S states
of N multinomial responses each, seeded), builds every interval and prints, per estimator, the share of
intervals that contain the truth (coverage), their mean width and the bias of the point estimate. The
truth of a mean is the average of the states' true values (the audited states are the population; see
:mod:`collapse_probe.metrics._intervals`). A *mix* gives the states different distributions in turn
(real audits mix collapsed and diverse states); ``mixed`` cycles through the whole panel. The interval
each one replaces is printed beside it (``old``).

An entropy interval that is a lower bound only (nearly all replies distinct) covers when its lower end is
at most the truth; its width is left out of the mean width, and the share of such intervals is printed.

Run: ``python benchmarks/estimator_coverage.py [--reps 200] [--seed 0] [--only eps|entropy]
[--n 10 20 50 400] [--states 1 4 16 48] [--panel NAME ...]``; ``--reps 50`` for a quick look,
``--list`` for the names; ``--unequal`` for states with different N; ``--shares`` for the held-out
modal share behind the upper end of ε; ``--audit 30`` runs the CLI's audit instead, 30 seeds per
scripted simulator. The shipped table is ``docs/estimator-coverage.md`` (its header lists the
commands that made it).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from collapse_probe.metrics import _intervals as iv


def _zipf(k: int) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1)
    return w / w.sum()


PANEL: dict[str, np.ndarray] = {
    "[.55,.25,.12,.08]": np.array([0.55, 0.25, 0.12, 0.08]),
    "uniform-10": np.full(10, 0.1),
    "uniform-3": np.full(3, 1.0 / 3.0),
    "[.5,.5]": np.array([0.5, 0.5]),
    "[.9,.1]": np.array([0.9, 0.1]),
    "[.95,.05]": np.array([0.95, 0.05]),
    "[.8,.2]": np.array([0.8, 0.2]),
    "[.7,.3]": np.array([0.7, 0.3]),
    "[.4,.4,.2]": np.array([0.4, 0.4, 0.2]),
    "Zipf-200": _zipf(200),
    ".7 + tail-50": np.concatenate([[0.7], np.full(50, 0.3 / 50)]),
    ".9 + tail-200": np.concatenate([[0.9], np.full(200, 0.1 / 200)]),
    "uniform-200": np.full(200, 1.0 / 200),
    "uniform-500": np.full(500, 1.0 / 500),
    "uniform-1000": np.full(1000, 1.0 / 1000),
    "Zipf-1000": _zipf(1000),
}
"""Every state from one distribution: a clear mode, uniform and tied classes (the hardest cases for the
upper end of ε), collapsed, long tails and a tail hidden behind a strong mode (the hardest cases for
entropy), and nearly all-distinct replies (ε near 1, entropy without an honest upper end)."""

POINT_MASS = np.array([1.0])

MIXES: dict[str, list[np.ndarray]] = {
    "point mass / [.5,.5]": [POINT_MASS, PANEL["[.5,.5]"]],
    "2 point masses / uniform-3": [POINT_MASS, POINT_MASS, PANEL["uniform-3"]],
    "[1] / [.9,.1] / [.5,.5] / [.4,.4,.2]": [POINT_MASS, PANEL["[.9,.1]"], PANEL["[.5,.5]"], PANEL["[.4,.4,.2]"]],
    "point mass / uniform-10": [POINT_MASS, PANEL["uniform-10"]],
    "point mass / uniform-1000": [POINT_MASS, PANEL["uniform-1000"]],
    "[.9,.1] / Zipf-200": [PANEL["[.9,.1]"], PANEL["Zipf-200"]],
    "point mass / uniform-500": [POINT_MASS, PANEL["uniform-500"]],
    "Zipf-50 / [.95,.05]": [_zipf(50), PANEL["[.95,.05]"]],
    "mixed": list(PANEL.values()),
}
NEAR_DISTINCT = (
    "uniform-200",
    "uniform-500",
    "uniform-1000",
    "Zipf-1000",
    "point mass / uniform-1000",
    "point mass / uniform-500",
    "mixed",
)
"""Entries with states whose replies are nearly all distinct: left out of the median width ratio over the
ordinary cells (the issue of the max count there is its overshoot, not its spread)."""

"""States cycle through these distributions (state i gets entry i mod length): collapsed states beside
tied and diverse ones, where one common modal probability across states is the wrong assumption."""


def true_eps(p: np.ndarray) -> float:
    return float(1.0 - p.max())


def true_entropy(p: np.ndarray) -> float:
    q = p[p > 0]
    return float(-(q * np.log(q)).sum())


Interval = tuple[float, float, float]  # lo, hi (inf when lower bound only), estimate


def _eps_new(cs: Sequence[np.ndarray], seed: int) -> Interval:
    r = iv.mean_collapse_error_interval(cs, seed=seed)
    return r.ci95[0] or 0.0, r.ci95[1] or 0.0, r.estimate


def _eps_old(cs: Sequence[np.ndarray], seed: int) -> Interval:
    """The interval this one replaced: both ends pooled exact (one binomial of all S·N replies, Hoeffding),
    the held-out share credited with N trials at every N."""
    ns = np.array([int(np.sum(c)) for c in cs])
    maxes = np.array([int(np.max(c)) for c in cs])
    shares = iv.held_out_modal_shares(cs, seed)
    hi_m = iv._mean_share_bound(float(np.sum(maxes / ns)), ns, 0.025, upper=True)
    lo_m = iv._mean_share_bound(float(np.sum(shares)), ns, 0.025, upper=False)
    plugin = 1.0 - float(np.mean(maxes / ns))
    return min(max(0.0, 1.0 - hi_m), plugin), max(min(1.0, 1.0 - lo_m), plugin), plugin


def _ent_new(cs: Sequence[np.ndarray], seed: int) -> Interval:
    r = iv.mean_entropy_interval(cs, seed=seed)
    return r.ci95[0] or 0.0, math.inf if r.ci95[1] is None else r.ci95[1], r.estimate


def _ent_old(cs: Sequence[np.ndarray], seed: int) -> Interval:
    r = iv._entropy_interval(cs, 0.95, seed, min_coverage=None)
    return r.ci95[0] or 0.0, r.ci95[1] or 0.0, r.estimate


ESTIMATORS: dict[str, tuple[Callable[[np.ndarray], float], dict[str, Callable[..., Interval]]]] = {
    "eps": (true_eps, {"new": _eps_new, "old": _eps_old}),
    "entropy": (true_entropy, {"new": _ent_new, "old": _ent_old}),
}
METHODS = {
    "eps": (
        iv.COLLAPSE_ERROR_METHOD,
        "the same bounds pooled over all S·N replies (one binomial), the held-out share "
        "credited with N trials at every N (old bias column: the plug-in's)",
    ),
    "entropy": (iv.ENTROPY_METHOD + "; lower bound only below sample coverage 0.5", "the same, two-sided everywhere"),
}


def states_of(name: str, s: int) -> list[np.ndarray]:
    """The S state distributions of a panel entry or a mix."""
    dists = MIXES[name] if name in MIXES else [PANEL[name]]
    return [dists[i % len(dists)] for i in range(s)]


def run_cell(quantity: str, name: str, n: int, s: int, reps: int, seed: int) -> dict[str, tuple[float, ...]]:
    """Coverage, mean width, bias and lower-bound-only share of each estimator for one (entry, N, S) cell."""
    truth_fn, methods = ESTIMATORS[quantity]
    states = states_of(name, s)
    truth = float(np.mean([truth_fn(p) for p in states]))
    rng = np.random.default_rng([seed, n, s, sum(map(ord, name))])
    hits = dict.fromkeys(methods, 0)
    widths: dict[str, list[float]] = {m: [] for m in methods}
    errs: dict[str, list[float]] = {m: [] for m in methods}
    only_lower = dict.fromkeys(methods, 0)
    plugin_errors = []
    for rep in range(reps):
        cs = []
        for p in states:
            x = rng.multinomial(n, p)
            cs.append(x[x > 0])
        plugin_errors.append(float(np.mean([1.0 - c.max() / n for c in cs])) - truth)
        for m, fn in methods.items():
            lo, hi, e = fn(cs, rep)
            hits[m] += lo <= truth <= hi
            if math.isinf(hi):
                only_lower[m] += 1
            else:
                widths[m].append(hi - lo)
            errs[m].append(e - truth)
    q_lo, q_hi = np.quantile(plugin_errors, [0.025, 0.975])
    out: dict[str, tuple[float, ...]] = {
        m: (hits[m] / reps, float(np.mean(widths[m])) if widths[m] else math.nan, float(np.mean(errs[m])),
            only_lower[m] / reps, float(np.median(widths[m])) if widths[m] else math.nan)
        for m in methods
    }  # fmt: skip
    out["oracle"] = (float(q_hi - q_lo),)
    return out


UNEQUAL: dict[str, tuple[list[np.ndarray], list[int], int]] = {
    "point mass at N = 50 / [.5,.5] at N = 10": ([POINT_MASS, PANEL["[.5,.5]"]], [50, 10], 16),
    "[.5,.5] at N = 50 / point mass at N = 10": ([PANEL["[.5,.5]"], POINT_MASS], [50, 10], 16),
    "uniform-10 at N = 20 / 15 / 18": ([PANEL["uniform-10"]], [20, 15, 18], 16),
    "2 point masses / uniform-3 at N = 20 / 19 / 20 / 17": (MIXES["2 point masses / uniform-3"], [20, 19, 20, 17], 48),
    "one [.5,.5] at N = 5, 15 point masses at N = 50": ([PANEL["[.5,.5]"]] + [POINT_MASS] * 15, [5] + [50] * 15, 16),
}
"""States with different numbers of replies (state i gets entry i mod length of each list)."""


def unequal_runs(reps: int, seed: int) -> None:
    """Coverage of the mean-ε interval when the states' numbers of replies differ."""
    print("| states (distribution at N) | states | truth | coverage | truth below / above | width |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (dists, ns, s) in UNEQUAL.items():
        states = [(dists[i % len(dists)], ns[i % len(ns)]) for i in range(s)]
        truth = float(np.mean([true_eps(p) for p, _ in states]))
        rng = np.random.default_rng([seed, s, sum(map(ord, name))])
        below = above = 0
        widths = []
        for rep in range(reps):
            cs = [x[x > 0] for x in (rng.multinomial(n, p) for p, n in states)]
            lo, hi = iv.mean_collapse_error_interval(cs, seed=rep).ci95
            below += truth < (lo or 0.0)
            above += truth > (hi or 0.0)
            widths.append((hi or 0.0) - (lo or 0.0))
        cover = 1 - (below + above) / reps
        print(f"| {name} | {s} | {truth:.3f} | {cover:.3f} | {below / reps:.3f} / {above / reps:.3f} | {np.mean(widths):.3f} |",
              flush=True)  # fmt: skip


SHARE_CASES: list[tuple[str, list[int], int]] = [
    ("[.5,.5]", [10, 20, 50, 400], 48_000),
    ("uniform-3", [10, 20, 50, 400], 48_000),
    ("uniform-10", [10, 20, 50, 400], 48_000),
    ("[.9,.1]", [10, 50], 6_000),
    ("[.4,.4,.2]", [10, 50], 6_000),
]
"""Distributions, N and states per N for ``--shares`` (N = 400 with a sixteenth of the states)."""


def share_runs(seed: int) -> None:
    """The held-out modal share against what the upper end of ε refers it to: Binomial(N, m) per state.

    Prints the mean share minus m (never above 0 beyond noise: the choice of class does not inflate
    the held-out count), its variance over m(1 − m)/N, and at exact ties, where the mean has no slack,
    the one-sided miss rate of the upper end (lower bound of m above m) for audits of 1, 4, 16 and 48
    states made of consecutive simulated states (nominal 0.025).
    """
    print("| distribution | N | states simulated | mean share − m | variance / binomial | upper end misses at "
          "1 / 4 / 16 / 48 states |\n|---|---:|---:|---:|---:|---|")  # fmt: skip
    for name, ns, count in SHARE_CASES:
        p = PANEL[name]
        m = float(p.max())
        for n in ns:
            k = count // 16 if n >= 400 else count
            rng = np.random.default_rng([seed, n, sum(map(ord, name))])
            cs = [x[x > 0] for x in rng.multinomial(n, p, size=k)]
            g = iv.held_out_modal_shares(cs, seed=seed)
            misses = "–"
            if np.allclose(p, m) and n < 400:
                rates = []
                for s in (1, 4, 16, 48):
                    r = k // s
                    lows = [iv._mean_share_bound(float(g[i * s : (i + 1) * s].sum()), np.full(s, n), 0.025, upper=False)
                            for i in range(r)]  # fmt: skip
                    rates.append(f"{np.mean(np.array(lows) > m):.3f}")
                misses = " / ".join(rates)
            ratio = g.var() / (m * (1 - m) / n)
            print(f"| {name} | {n} | {k} | {g.mean() - m:+.4f} | {ratio:.2f} | {misses} |", flush=True)


AUDITS: dict[str, tuple[list[tuple[str, float]], list[tuple[str, float]] | None, int, int]] = {
    "uniform over 10": ([(f"reply number {i}", 0.1) for i in range(10)], None, 8, 20),
    "[.9, .1]": ([("Sure, I will donate.", 0.9), ("No thanks.", 0.1)], None, 4, 50),
    "point mass / [.5, .5]": ([("Hello!", 1.0)], [("Yes, [DONATE $1]", 0.5), ("No, [DONATE $0]", 0.5)], 8, 20),
    "point mass / uniform over 1000": ([("Hello!", 1.0)], [(f"answer {i}", 0.001) for i in range(1000)], 8, 20),
}
"""Scripted simulators for ``--audit``: replies at opening states, replies at the final donation question
(``None``: the same), ``--states`` and ``--samples``. Each audit has 2 × ``--states`` probe states, half
of each kind, so the two-distribution entries are mixes of collapsed and tied or nearly distinct states."""


def audit_runs(seeds: int) -> None:
    """The headline interval of ``collapse-probe audit`` (the CLI itself) on scripted simulators."""
    import contextlib
    import io
    import json
    import tempfile
    from pathlib import Path

    from collapse_probe.cli import main as cli

    print("| scripted simulator (openings / donation question) | true ε | --states × --samples | states audited |"
          " CI contains truth | mean width |\n|---|---:|---|---:|---:|---:|")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, (opening, question, states, samples)) in enumerate(AUDITS.items()):
            spec = {"responses": [{"text": t, "p": p} for t, p in opening]}
            if question is not None:
                spec["rules"] = [{"if_contains": ["Before we finish"], "responses": [{"text": t, "p": p} for t, p in question]}]  # type: ignore[list-item]  # fmt: skip
            path = Path(tmp) / f"sim{k}.json"
            path.write_text(json.dumps(spec))
            eps = {"opening": true_eps(np.array([p for _, p in opening]))}
            eps["elicitation"] = true_eps(np.array([p for _, p in question])) if question else eps["opening"]
            hits, widths, n_states = 0, [], 0
            for seed in range(seeds):
                out = Path(tmp) / f"sim{k}-run{seed}"
                argv = ["audit", "--sim", f"scripted:{path}", "--partition", "exact", "--states", str(states),
                        "--samples", str(samples), "--seed", str(seed), "--out", str(out), "--no-progress"]  # fmt: skip
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    if cli(argv) != 0:
                        raise SystemExit(f"audit failed: {' '.join(argv)}")
                res = json.loads((out / "results.json").read_text())
                truth = float(np.mean([eps[st["kind"]] for st in res["states"]]))
                lo, hi = res["summary"]["collapse_error"]["ci95"]
                hits += lo <= truth <= hi
                widths.append(hi - lo)
                n_states = len(res["states"])
            print(f"| {name} | {truth:.3f} | {states} × {samples} | {n_states} | {hits}/{seeds} | {np.mean(widths):.3f} |",
                  flush=True)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="simulated audits per cell (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=sorted(ESTIMATORS), help="one quantity only")
    ap.add_argument("--n", type=int, nargs="+", default=[10, 20, 50, 400], help="responses per state")
    ap.add_argument("--states", type=int, nargs="+", default=[1, 4, 16, 48], help="states per audit")
    ap.add_argument("--panel", nargs="+", choices=[*PANEL, *MIXES], metavar="NAME", help="entries (default all)")
    ap.add_argument("--list", action="store_true", help="print the panel and mix names and exit")
    ap.add_argument("--audit", type=int, metavar="SEEDS", help="instead: SEEDS audits per scripted simulator")
    ap.add_argument("--unequal", action="store_true", help="instead: mean ε where the states' N differ")
    ap.add_argument("--shares", action="store_true", help="instead: the held-out modal share against its binomial")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join([*PANEL, *MIXES]))
        return 0
    if args.audit:
        audit_runs(args.audit)
        return 0
    if args.unequal:
        unequal_runs(args.reps, args.seed)
        return 0
    if args.shares:
        share_runs(args.seed)
        return 0
    names = args.panel or [*PANEL, *MIXES]
    quantities = [args.only] if args.only else list(ESTIMATORS)
    t0 = time.perf_counter()
    print(
        f"level 0.95, {args.reps} simulated audits per cell, seed {args.seed}; target coverage >= 0.95; oracle "
        "width: the 2.5-97.5 % spread of the plug-in's error over the same draws (ε only); widths in the ratios "
        "are medians"
    )
    for q in quantities:
        print(f"\n### {'collapse error ε = 1 − max p' if q == 'eps' else 'entropy (nats)'}\n")
        print(f"new: {METHODS[q][0]}; old: {METHODS[q][1]}\n")
        extra = " new lower bound only |" if q == "entropy" else " oracle width | new / oracle | old / oracle |"
        print(f"| distribution | N | states | truth | new coverage | new width |{extra} new bias | old coverage | "
              "old width | old bias |")  # fmt: skip
        print(
            "|---|---:|---:|---:|---:|---:|"
            + ("---:|" if q == "entropy" else "---:|---:|---:|")
            + "---:|---:|---:|---:|"
        )
        ratios: list[float] = []
        worst = (2.0, "")
        for n in args.n:
            for s in args.states:
                for name in names:
                    if name in MIXES and s < len(MIXES[name]):
                        continue
                    res = run_cell(q, name, n, s, args.reps, args.seed)
                    truth = float(np.mean([ESTIMATORS[q][0](p) for p in states_of(name, s)]))
                    (cn, wn, bn, ln, mn), (co, wo, bo, _, mo) = res["new"], res["old"]
                    flag = "" if 0.95 <= cn <= 0.99 else (" ▲" if cn > 0.99 else " ▼")
                    if q == "entropy":
                        share = f" {ln:.2f} |"
                    else:
                        ow = res["oracle"][0]
                        share = f" {ow:.3f} | {mn / ow:.2f} | {mo / ow:.2f} |" if ow > 0 else " 0 | – | – |"
                        if ow > 0 and name not in NEAR_DISTINCT:
                            ratios.append(mn / ow)
                        worst = min(worst, (cn, f"{name} N = {n} S = {s}"))
                    width = "–" if math.isnan(wn) else f"{wn:.3f}"
                    print(f"| {name} | {n} | {s} | {truth:.3f} | {cn:.3f}{flag} | {width} |{share} {bn:+.3f} | "
                          f"{co:.3f} | {wo:.3f} | {bo:+.3f} |", flush=True)  # fmt: skip
        if q == "eps" and ratios:
            print(f"\nmedian of the median width over the oracle width, {len(ratios)} cells without nearly all-distinct "
                  f"states: {np.median(ratios):.2f}; lowest coverage: {worst[0]:.3f} ({worst[1]})")  # fmt: skip
    print(f"\n{time.perf_counter() - t0:.0f} s; ▲ above 0.99 (conservative), ▼ below 0.95; N < 20 is low-confidence.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
