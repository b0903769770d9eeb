"""Candidate upper ends for a side's variance share, measured on the coverage panel (the study behind "A side's
upper end" in ``docs/variance-decomposition.md``).

    PYTHONPATH=. python benchmarks/variance_upper_ends.py --seeds 200 --random 8
    PYTHONPATH=. python benchmarks/variance_upper_ends.py --seeds 1000 --worlds "small: 12" "tau2" "wide"
    PYTHONPATH=. python benchmarks/variance_upper_ends.py --seeds 100 --small-runs 12   # 6-20 tasks of 2-4 trials

Each world of :mod:`variance_coverage`'s panel is simulated and decomposed as there; for each side's share the
ingredients of its upper end are recorded (the side's pairs' spread ``A``, its jackknife variance, the dispersion
``φ``, the t critical value, and with the judge identified the judge noise ``B`` its pairs carry and ``B``'s BCa lower
end), the shipped end is rebuilt from them (the run stops if it differs from what ``decompose_variance`` returned),
and every candidate end for ``A`` is combined with ``B`` by the same MOVER step, floored by BCa's end or not, and
rounded outward as shipped. The lower end is the shipped one throughout. Candidates (``k = Â / φ``, the effective
count; ``c`` the t critical value):

- ``score``: the shipped end, the largest θ with (Â − θ)² ≤ c² max(Var_jack, φθ);
- ``vst``: the variance-stabilised end (√Â + c √φ / 2)² (Anscombe-type: Var ∝ size);
- ``garwood``: the exact Poisson (gamma) end on k, φ · Γ⁻¹(k + 1; 0.975);
- ``garwood_t``: the same at the t interval's tail, φ · Γ⁻¹(k + 1; 1 − Φ(−c));
- ``jeffreys``: the Jeffreys (mid-count) Poisson end on k, φ · Γ⁻¹(k + 1/2; 0.975);
- ``lr``: the likelihood-ratio end under a Poisson model for k, 2 [(θ − Â)/φ − k ln(θ/Â)] = c²;
- ``boot_t_sqrt``: a bootstrap-t on √A (the jackknife SE of √A inside each of 400 resamples).

The first six keep the shipped floor Â + c SE_jack. Printed per side's cell: the share of seeds whose truth is above
the upper end and the median interval width, each candidate with BCa's end as a floor (``+bca``) and without;
then per candidate the worst two-sided coverage and the worst upper-end miss over the cells, and the 12 tasks × 3
trials world's simulator width (the cell the docs quote).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaincinv, ndtr

import collapse_probe.metrics.variance as V
from collapse_probe.metrics.variance_sim import VarianceWorld, simulate, true_shares

sys.path.insert(0, str(Path(__file__).resolve().parent))
from variance_coverage import panel, small_runs  # noqa: E402

End = Callable[[float, float, float, float], float]


def score(a: float, var_jack: float, phi: float, c: float) -> float:
    return V._score_upper(a, var_jack, phi, c)


def _floor(u: float, a: float, var_jack: float, c: float) -> float:
    return min(1.0, max(u, a + c * math.sqrt(max(var_jack, 0.0))))


def vst(a: float, var_jack: float, phi: float, c: float) -> float:
    a = max(a, 0.0)
    return _floor((math.sqrt(a) + c * math.sqrt(phi) / 2) ** 2, a, var_jack, c)


def garwood(a: float, var_jack: float, phi: float, c: float, tail: float = 0.025) -> float:
    a = max(a, 0.0)
    return _floor(phi * float(gammaincinv(a / phi + 1, 1 - tail)), a, var_jack, c)


def garwood_t(a: float, var_jack: float, phi: float, c: float) -> float:
    return garwood(a, var_jack, phi, c, tail=float(ndtr(-c)))


def jeffreys(a: float, var_jack: float, phi: float, c: float) -> float:
    a = max(a, 0.0)
    return _floor(phi * float(gammaincinv(a / phi + 0.5, 0.975)), a, var_jack, c)


def lr(a: float, var_jack: float, phi: float, c: float) -> float:
    a = max(a, 0.0)
    if a <= 0:
        return _floor(c * c * phi / 2, a, var_jack, c)
    k = a / phi
    u = brentq(
        lambda th: 2 * ((th - a) / phi - k * math.log(th / a)) - c * c, a * (1 + 1e-12), a + 10 * c * c * phi + 10
    )
    return _floor(u, a, var_jack, c)


CANDIDATES: dict[str, End] = {
    "score": score,
    "vst": vst,
    "garwood": garwood,
    "garwood_t": garwood_t,
    "jeffreys": jeffreys,
    "lr": lr,
}
BOOT_T = "boot_t_sqrt"
NAMES = (*CANDIDATES, BOOT_T)


def _boot_t_sqrt(table: np.ndarray, key: str, judge_from: str | None, a: float, theta: np.ndarray, c_tail: float,
                 n: int = 400) -> float:  # fmt: skip
    """The bootstrap-t upper end of A on the √ scale (jackknife SE inside each resample), squared back."""
    t = table.shape[0]
    rng = np.random.default_rng(99)
    loo = np.array([[j for j in range(t) if j != i] for i in range(t)])
    zs = []
    for start in range(0, n, 50):
        idx = rng.integers(0, t, (min(50, n - start), t))
        full = V._components(table, idx, judge_from)
        jack = V._components(table, idx[:, loo].reshape(-1, t - 1), judge_from)
        with np.errstate(all="ignore"):
            th = np.sqrt(np.maximum(full[key] / full["_total"], 0))
            tj = np.sqrt(np.maximum(jack[key] / jack["_total"], 0)).reshape(-1, t)
            se = np.sqrt((t - 1) / t * np.sum((tj - tj.mean(1, keepdims=True)) ** 2, 1))
            zs.append((th - math.sqrt(max(a, 0))) / se)
    z = np.concatenate(zs)
    z = z[np.isfinite(z)]
    se0 = V._jack_se(np.sqrt(np.maximum(theta, 0)))
    if z.size < n / 2 or se0 == 0:
        return min(1.0, max(a, 0.0))
    return min(1.0, (math.sqrt(max(a, 0)) - float(np.quantile(z, c_tail)) * se0) ** 2)


_RECORDS: list[dict[str, float | str | None]] = []


def _recording_side_upper(side: str, table: np.ndarray, point: dict[str, float], total: float,
                          theta: dict[str, np.ndarray], bca: dict[str, tuple[float, float]], judge_from: str | None,
                          level: float) -> float:  # fmt: skip
    """The shipped :func:`V._side_upper`, returned unchanged, with every candidate's end recorded beside it."""
    shipped = _SHIPPED(side, table, point, total, theta, bca, judge_from, level)
    keys = [f"{V._WITH_JUDGE}{s}" if judge_from is not None else s for s in V.SIDES]
    key_a = keys[V.SIDES.index(side)]
    t_count = table.shape[0]
    c = float(V.stdtrit(t_count - 1, 1 - (1 - level) / 2))
    a = point[key_a] / total
    pooled = sum(point[k] for k in keys) / total
    rec: dict[str, float | str | None] = {"side": side, "bca_hi": bca.get(side, (math.nan, math.nan))[1]}
    if pooled <= 0:  # no pair differs: every candidate gives way to the shipped count bound (applied after this)
        rec.update({n: a for n in NAMES if n != BOOT_T or _BOOT_T_ON[0]})
        rec["no_difference"] = 1.0
    else:
        differing = float(np.sum(table[:, V._C["p_simulator"]] + table[:, V._C["p_agent"]]))
        d_pair = (
            float(np.sum(table[:, V._C["d_simulator"]] + table[:, V._C["d_agent"]])) / differing if differing else 0.0
        )
        per_comparison = float(np.mean(1 / np.maximum(table[:, V._C["n"]] - 1, 1))) / t_count
        pooled_jack = np.sum([theta[k] for k in keys], axis=0)
        phi = max(V._jack_se(pooled_jack) ** 2 / pooled, d_pair / total * per_comparison)
        var_jack = V._jack_se(theta[key_a]) ** 2
        ends = {n: f(a, var_jack, phi, c) for n, f in CANDIDATES.items()}
        if _BOOT_T_ON[0]:
            ends[BOOT_T] = _boot_t_sqrt(table, key_a, judge_from, a, theta[key_a], (1 - level) / 2)
        if judge_from is not None:
            b = point[f"{V._JUDGE_PART}{side}"] / total
            l_b = max(bca.get(f"{V._JUDGE_PART}{side}", (b, b))[0], 0.0)
            ends = {n: a - b + math.hypot(u - a, b - l_b) for n, u in ends.items()}
        rec.update(ends)
    if not math.isclose(float(rec["score"] or 0.0), shipped, rel_tol=1e-12, abs_tol=1e-12):
        raise SystemExit(f"the rebuilt score end {rec['score']} differs from the shipped {shipped}: update this study")
    _RECORDS.append(rec)
    return shipped


_SHIPPED = V._side_upper
_BOOT_T_ON = [True]
"""Whether the bootstrap-t candidate is computed (``--no-bootstrap-t``: not; it costs most of the run)."""


def _out(x: float) -> float:
    """Rounded outward to 0.001 and clipped, as the shipped ends."""
    return min(1.0, max(0.0, math.ceil(x * 1000) / 1000 + 0.001))


def study(
    world: VarianceWorld, seeds: int, start: int, n_boot: int
) -> dict[str, list[tuple[float, float, dict[str, float]]]]:
    """Per side, per seed: (truth, lower end, {candidate (``+bca``): upper end})."""
    truths = {True: true_shares(world), False: true_shares(world, judge_identified=False)}
    out: dict[str, list[tuple[float, float, dict[str, float]]]] = {s: [] for s in V.SIDES}
    V._side_upper = _recording_side_upper
    try:
        for seed in range(start, start + seeds):
            _RECORDS.clear()
            dec = V.decompose_variance(simulate(world, np.random.default_rng(seed)), n_boot=n_boot, seed=seed)
            truth = truths[dec.judge_source is not None]
            for rec in _RECORDS:
                side = str(rec["side"])
                sh = dec.shares[side]
                if sh is None or sh["ci95"] is None:
                    continue
                bca_hi = float(rec["bca_hi"] or 0.0)
                names = [n for n in NAMES if n in rec]
                ends = {n: _out(float(rec[n] or 0.0)) for n in names}
                ends.update({f"{n}+bca": _out(max(float(rec[n] or 0.0), bca_hi)) for n in names})
                if rec.get("no_difference"):
                    ends = {n: max(e, sh["ci95"][1]) for n, e in ends.items()}
                if ends["score+bca"] != sh["ci95"][1]:
                    raise SystemExit(f"seed {seed}, {side}: rebuilt upper end {ends['score+bca']} != {sh['ci95'][1]}")
                out[side].append((truth[side], sh["ci95"][0], ends))
    finally:
        V._side_upper = _SHIPPED
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--start", type=int, default=0, help="the first seed")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--random", type=int, default=8)
    ap.add_argument(
        "--small-runs", type=int, default=0, help="instead of the panel, this many small runs per world seed"
    )
    ap.add_argument("--worlds", nargs="+", metavar="NAME", help="only the worlds whose names start with one of these")
    ap.add_argument("--no-bootstrap-t", action="store_true", help="leave the bootstrap-t candidate out (the slow one)")
    args = ap.parse_args(argv)
    _BOOT_T_ON[0] = not args.no_bootstrap_t
    names = [n for n in NAMES if n != BOOT_T or _BOOT_T_ON[0]]
    worlds = small_runs(args.small_runs) if args.small_runs else panel(args.random)
    if args.worlds:
        worlds = {k: w for k, w in worlds.items() if k.startswith(tuple(args.worlds))}
        if not worlds:
            ap.error(f"--worlds: no world's name starts with any of {args.worlds}")
    variants = [f"{n}+bca" for n in names] + names
    print(f"upper end missed (truth above it) / median width, {args.seeds} seeds from {args.start}")
    print("| world | side | truth | " + " | ".join(variants) + " |")
    print("|---|---|---|" + "---|" * len(variants))
    worst = {v: (1.0, 0.0, "") for v in variants}
    quoted: dict[str, float] = {}
    for name, w in worlds.items():
        for side, rows in study(w, args.seeds, args.start, args.n_boot).items():
            if not rows:
                continue
            truth = np.array([r[0] for r in rows])
            lo = np.array([r[1] for r in rows])
            cells = []
            for v in variants:
                hi = np.array([r[2][v] for r in rows])
                above = float(np.mean(truth > hi + 1e-9))
                cov = 1 - above - float(np.mean(truth < lo - 1e-9))
                width = float(np.median(hi - lo))
                cov_w, above_w, cell_w = worst[v]
                worst[v] = (min(cov_w, cov), max(above_w, above), f"{name} / {side}" if above > above_w else cell_w)
                if name.startswith("small: 12") and side == "simulator":
                    quoted[v] = width
                cells.append(f"{above:.3f} / {width:.3f}")
            print(f"| {name} | {side} | {float(np.mean(truth)):.3f} | " + " | ".join(cells) + " |")
            sys.stdout.flush()
    print("\n| candidate | worst coverage | worst upper miss (cell) | 12 x 3 simulator width |\n|---|---|---|---|")
    for v in variants:
        cov, above, cell = worst[v]
        q = f"{quoted[v]:.3f}" if v in quoted else "-"
        print(f"| {v} | {cov:.3f} | {above:.3f} ({cell or '-'}) | {q} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
