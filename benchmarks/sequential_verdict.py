"""Error rates and cost of the audit's sequential verdict on exact, mix-free bounds.

Simulates audits of S states whose per-state class distributions are known (scripted multinomial
states), draws replies in the looks of :class:`~collapse_probe.metrics.LookSchedule` until the
verdict is decisive or the cap is reached, and decides each look exactly as the audit does (the
pooled max counts for NOT COLLAPSED, the predictable-mode hits for COLLAPSED;
:func:`~collapse_probe.metrics.exact_collapse_error_bounds`). Per mix family, number of states and
true mean collapse error ε̄ it prints the share of audits called COLLAPSED and NOT COLLAPSED, the wrong
calls per side with a one-sided 97.5 % Clopper–Pearson upper bound on their rate, and the mean replies
per state the audit drew, for a fixed cap and for "run with a lower cap, then raise it" (the rerun
replays the earlier replies from the cache and continues the same looks).

Mix families at ε̄ (ε_s = 1 − modal probability of state s; the mean over the states is ε̄ exactly):

- ``two classes``: every state [1 − ε̄, ε̄];
- ``mode + tail``: every state a mode of 1 − ε̄ and ε̄ spread over 40 classes;
- ``ties``: about half of the states tied [.5, .5], the others two classes set to keep ε̄
  (defined where that is possible);
- ``low-mode among point masses``: ⌈S·ε̄/0.8⌉ states with a low mode and a long tail over 40
  classes, the others point masses (at S = 4, ε̄ = 0.2: three point masses and a state of mode 0.2);
- ``collapsed / diverse``: states alternate between a point mass and a state of ε = 2ε̄ (mode
  1 − 2ε̄, the rest over 5 classes).

Tie shapes (``--ties``, on unless ``--quick``): ``k-way ties at t of S``: t states uniform over k tied
classes (ε = 1 − 1/k), the other S − t states two classes set to keep ε̄, for k = 2, 3, 4, t = one
state, a quarter or half of them (where the others can keep ε̄), and S = 2, 4, 16, 100, at ε̄ = ε* and ε̄ = 0.30.

Every cell replays its first ``--verify`` audits (default 40) through the product's own
:func:`~collapse_probe.metrics.sequential_verdict` on the same replies and stops if a decision or the
replies it used differ from the vectorised simulation: the table measures what the audit computes.

``--frontier`` prints what no look schedule can change for the ties: the share of ``two-way ties at 2
of 4`` audits (ε̄ = 0.30) that one fixed-size test at N replies per state decides when it spends all
of 0.025, and the Neyman–Pearson bound for any label-invariant fixed-size test at level 0.025
(``docs/collapse-error-intervals.md``, "What ties cost").

Run: ``python benchmarks/sequential_verdict.py [--reps 4000] [--seed 0] [--cap 80] [--quick] [--frontier]``.
The shipped table is in ``docs/audit-verdict.md``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence

import numpy as np
from scipy.stats import beta, binom

from collapse_probe.metrics import LookSchedule, collapsed_cutoff, not_collapsed_cutoff, sequential_verdict

FAMILIES = ("two classes", "mode + tail", "ties", "low-mode among point masses", "collapsed / diverse")


def _two(eps: float) -> np.ndarray:
    return np.array([1.0]) if eps == 0 else np.array([1 - eps, eps])


def _tail(eps: float, k: int = 40) -> np.ndarray:
    return np.array([1.0]) if eps == 0 else np.concatenate([[1 - eps], np.full(k, eps / k)])


def family_states(family: str, eps: float, s: int) -> list[np.ndarray] | None:
    """The S state distributions of a family at mean collapse error ``eps`` (``None``: not defined)."""
    if family == "two classes":
        return [_two(eps)] * s if eps <= 0.5 else None
    if family == "mode + tail":
        return [_tail(eps)] * s
    if family == "ties":
        t = s // 2
        rest = (s * eps - 0.5 * t) / (s - t)
        while t > 0 and rest < 0:
            t -= 1
            rest = (s * eps - 0.5 * t) / (s - t)
        if t == 0 or rest > 0.5:
            return None
        return [np.array([0.5, 0.5])] * t + [_two(rest)] * (s - t)
    if family == "low-mode among point masses":
        t = math.ceil(s * eps / 0.8 - 1e-9)
        low = s * eps / t
        if t >= s or low > 0.8 + 1e-9:
            return None
        return [_tail(low)] * t + [np.array([1.0])] * (s - t)
    if family == "collapsed / diverse":
        if s % 2 or 2 * eps > 0.8:
            return None
        div = np.concatenate([[1 - 2 * eps], np.full(5, 2 * eps / 5)])
        return [np.array([1.0]) if i % 2 == 0 else div for i in range(s)]
    raise ValueError(family)


def tie_states(k: int, tied: int, eps: float, s: int) -> list[np.ndarray] | None:
    """``tied`` states uniform over ``k`` tied classes, the other ``s − tied`` states two classes whose
    ε keeps the mean at ``eps`` (``None``: not possible)."""
    if not 1 <= tied < s:
        return None
    rest = (s * eps - tied * (1 - 1 / k)) / (s - tied)
    if not 0 <= rest <= 0.5:
        return None
    return [np.full(k, 1 / k)] * tied + [_two(rest)] * (s - tied)


def tie_shapes(s: int) -> list[tuple[str, int, int]]:
    """(name, k, tied states) of the tie shapes at ``s`` states: one tied state, a quarter and half of them."""
    counts = sorted({1, s // 4, s // 2} - {0})
    return [(f"{k}-way ties at {t} of {s}", k, t) for k in (2, 3, 4) for t in counts]


def _state_paths(
    rng: np.random.Generator, p: np.ndarray, reps: int, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per audit, the running max count and running predictable-mode hits of one state after
    1..n replies (arrays of shape (reps, n)); ties go to the class seen first, as in the audit.
    Also the replies' classes themselves (shape (reps, n)), for the check against the product."""
    k = len(p)
    labels = rng.choice(k, size=(reps, n), p=p / p.sum())
    counts = np.zeros((reps, k), dtype=np.int32)
    first = np.full((reps, k), n + 1, dtype=np.int32)
    maxes = np.empty((reps, n), dtype=np.int32)
    hits = np.empty((reps, n), dtype=np.int32)
    rows = np.arange(reps)
    h = np.zeros(reps, dtype=np.int32)
    for j in range(n):
        lab = labels[:, j]
        if j > 0:
            # modal class of replies 1..j, ties to the class seen first
            pred = np.argmax(counts * (n + 2) - first, axis=1)
            h = h + (pred == lab)
        counts[rows, lab] += 1
        first[rows, lab] = np.minimum(first[rows, lab], j)
        maxes[:, j] = counts.max(axis=1)
        hits[:, j] = h
    return maxes, hits, labels


def simulate(states: Sequence[np.ndarray], reps: int, cap: int, star: float, schedule: LookSchedule,
             rng: np.random.Generator, verify: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Decision per look (+1 COLLAPSED, −1 NOT COLLAPSED, 0 none) of ``reps`` audits, shape
    (reps, looks), the replies per state at each look, and the pooled max counts and hits after
    1..cap replies per state (shape (reps, cap)). The first ``verify`` audits are replayed through
    :func:`~collapse_probe.metrics.sequential_verdict` (:func:`check_against_product`)."""
    looks = schedule.looks(cap)
    n = looks[-1]
    tot_max = np.zeros((reps, n), dtype=np.int64)
    tot_hit = np.zeros((reps, n), dtype=np.int64)
    kept: list[np.ndarray] = []
    for p in states:
        m, h, labels = _state_paths(rng, p, reps, n)
        tot_max += m
        tot_hit += h
        kept.append(labels[:verify])
    s = len(states)
    dec = np.zeros((reps, len(looks)), dtype=np.int8)
    for i, nl in enumerate(looks):
        a = schedule.alpha_at(i + 1)
        c_nc = not_collapsed_cutoff(s * nl, a, 1 - star)
        c_c = collapsed_cutoff(s * (nl - 1), a, 1 - star)
        if c_c is not None:
            dec[tot_hit[:, nl - 1] >= c_c, i] = 1
        if c_nc is not None:
            dec[tot_max[:, nl - 1] <= c_nc, i] = -1
    check_against_product(kept, dec, np.array(looks), cap, star, schedule)
    return dec, np.array(looks), tot_max, tot_hit


def check_against_product(labels: list[np.ndarray], dec: np.ndarray, looks: np.ndarray, cap: int, star: float,
                          schedule: LookSchedule) -> None:  # fmt: skip
    """Replay audits through the product's :func:`sequential_verdict` on the same replies (per state
    ``labels[s][i]`` of audit i) and stop where its decision or replies per state differ."""
    if not labels or not len(labels[0]):
        return
    final, used = outcome(dec, looks, len(looks))
    code = {"COLLAPSED": 1, "NOT COLLAPSED": -1, None: 0}
    for i in range(len(labels[0])):
        v = sequential_verdict([lab[i].tolist() for lab in labels], cap, star, schedule)
        if code[v.decision] != final[i] or (v.decision is not None and v.replies_per_state != used[i]):
            raise SystemExit(f"simulation and product disagree on audit {i}: product {v.decision} at "
                             f"N = {v.replies_per_state}, simulation {final[i]} at N = {used[i]}")  # fmt: skip


def fixed_decision(tot_max: np.ndarray, tot_hit: np.ndarray, s: int, n: int, alpha: float, star: float) -> np.ndarray:
    """The decision of one fixed-size test at ``n`` replies per state spending all of ``alpha`` per side."""
    out = np.zeros(len(tot_max), dtype=np.int8)
    c_c = collapsed_cutoff(s * (n - 1), alpha, 1 - star)
    c_nc = not_collapsed_cutoff(s * n, alpha, 1 - star)
    if c_c is not None:
        out[tot_hit[:, n - 1] >= c_c] = 1
    if c_nc is not None:
        out[tot_max[:, n - 1] <= c_nc] = -1
    return out


def outcome(dec: np.ndarray, looks: np.ndarray, n_looks: int) -> tuple[np.ndarray, np.ndarray]:
    """Final decision and replies per state of audits that may use the first ``n_looks`` looks."""
    d = dec[:, :n_looks]
    decided = d != 0
    first = np.where(decided.any(axis=1), decided.argmax(axis=1), n_looks - 1)
    final = d[np.arange(len(d)), first] * decided.any(axis=1)
    return final, looks[first]


def cp_upper(x: int, n: int) -> float:
    return 1.0 if x >= n else float(beta.ppf(0.975, x + 1, n - x))


def table(args: argparse.Namespace) -> None:
    schedule = LookSchedule()
    star = args.epsilon_star
    print(f"looks at {schedule.looks(args.cap)} replies per state (then every {schedule.step}), one-sided error "
          f"per look {[round(schedule.alpha_at(k), 5) for k in range(1, 7)]}…, ε* = {star:g}, seed {args.seed}\n")  # fmt: skip
    print("| family | states | true ε̄ | audits | pattern | COLLAPSED | NOT COLLAPSED | wrong COLLAPSED (≤ 97.5 % CP) "
          "| wrong NOT COLLAPSED (≤ 97.5 % CP) | mean replies per state |")  # fmt: skip
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    cells: list[tuple[str, int, float, int, list[np.ndarray] | None]] = [
        (f, 4, e, args.cap, family_states(f, e, 4)) for e in (0.05, 0.2, 0.3, 0.45) for f in FAMILIES
    ]
    if not args.quick:
        cells += [(f, s, star, args.cap, family_states(f, star, s)) for s in (2, 16, 100) for f in FAMILIES]
        cells += [(f, 4, star, cap, family_states(f, star, 4)) for cap in (20, 200) for f in FAMILIES]
    if args.ties:
        cells += [(name, s, e, args.cap, tie_states(k, t, e, s)) for e in (star, 0.3) for s in (2, 4, 16, 100)
                  for name, k, t in tie_shapes(s)]  # fmt: skip
    worst: list[tuple[float, str]] = []
    at_030: list[tuple[float, float, str]] = []
    at_005: list[tuple[float, float, str]] = []
    for i, (family, s, eps, cap, states) in enumerate(cells):
        if states is None:
            continue
        reps = args.reps
        key = FAMILIES.index(family) if family in FAMILIES else 100 + i
        rng = np.random.default_rng([args.seed, s, int(round(eps * 1000)), key, cap])
        dec, looks, tot_max, tot_hit = simulate(states, reps, cap, star, schedule, rng, verify=args.verify)
        n_first = len(schedule.looks(args.first_cap))
        patterns = [f"cap {cap}"] + ([f"cap {args.first_cap}, then {cap}"] if n_first < len(looks) else [])
        if eps == star and cap == args.cap and s == 4 and family in FAMILIES:
            patterns.append(f"restart: fixed {args.first_cap}, then fixed {cap}")
        for pattern in patterns:
            if pattern.startswith("restart"):
                # what the sequential design avoids: each run a new fixed-size test at the full error,
                # the rerun replaying the first run's replies from the cache
                f1 = fixed_decision(tot_max, tot_hit, s, args.first_cap, schedule.alpha_side, star)
                f2 = fixed_decision(tot_max, tot_hit, s, cap, schedule.alpha_side, star)
                final = np.where(f1 != 0, f1, f2)
                used = np.where(f1 != 0, args.first_cap, cap)
                seen_c, seen_nc = (f1 == 1) | (f2 == 1), (f1 == -1) | (f2 == -1)
            elif "then" not in pattern:
                final, used = outcome(dec, looks, len(looks))
                seen_c, seen_nc = final == 1, final == -1
            else:
                # first run: cap first_cap; its verdict is what the user sees if decisive, else the
                # cap is raised and the rerun continues the looks on the cached replies
                f1, _ = outcome(dec, looks, n_first)
                final, used = outcome(dec, looks, len(looks))
                seen_c = (f1 == 1) | (final == 1)
                seen_nc = (f1 == -1) | (final == -1)
            wrong_c = seen_c if eps >= star else np.zeros(reps, bool)
            wrong_nc = seen_nc if eps <= star else np.zeros(reps, bool)
            wc, wn = int(wrong_c.sum()), int(wrong_nc.sum())
            row = f"{family}, {s} states, ε̄ {eps:.2f}, {pattern}"
            if not pattern.startswith("restart"):
                worst += [(wc / reps, f"wrong COLLAPSED {wc / reps:.4f} (≤ {cp_upper(wc, reps):.4f}): {row}"),
                          (wn / reps, f"wrong NOT COLLAPSED {wn / reps:.4f} (≤ {cp_upper(wn, reps):.4f}): {row}")]  # fmt: skip
                if cap == args.cap and "then" not in pattern and s == 4 and eps in (0.05, 0.3):
                    right = np.mean(final == (1 if eps < star else -1))
                    (at_005 if eps < star else at_030).append((float(right), float(used.mean()), row))
            print(f"| {family} | {s} | {eps:.2f} | {reps} | {pattern} | {np.mean(final == 1):.3f} | "
                  f"{np.mean(final == -1):.3f} | {wc / reps:.4f} (≤ {cp_upper(wc, reps):.4f}) | "
                  f"{wn / reps:.4f} (≤ {cp_upper(wn, reps):.4f}) | {used.mean():.1f} |", flush=True)  # fmt: skip
    print("\nworst wrong call:", max(worst)[1])
    for name, rows in (("ε̄ 0.05 → COLLAPSED", at_005), ("ε̄ 0.30 → NOT COLLAPSED", at_030)):
        if rows:
            lo, hi = min(rows), max(rows, key=lambda r: r[1])
            print(f"{name} at 4 states, cap {args.cap}: least often {lo[0]:.3f} ({lo[2]}), "
                  f"most replies {hi[1]:.1f} per state ({hi[2]})")  # fmt: skip


def ties_frontier(reps: int, seed: int, star: float = 0.2, s: int = 4) -> None:
    """What no look schedule changes for two-way ties at 2 of 4 states (ε̄ = 0.30): the share of audits
    one fixed-size test at N replies per state decides spending all of 0.025 (pooled max counts), and
    the Neyman–Pearson bound for any label-invariant fixed-size test of level 0.025."""
    states = tie_states(2, s // 2, 0.3, s)
    assert states is not None
    rng = np.random.default_rng([seed, 7])
    _, _, tot_max, tot_hit = simulate(states, reps, 80, star, LookSchedule(), rng)
    r = float(1 - states[-1].max())
    print(f"two-way ties at {s // 2} of {s} (the others [{1 - r:.2f}, {r:.2f}]), ε̄ = 0.30, {reps} audits\n")
    print(
        "| replies per state | fixed test at 0.025, pooled max counts | Neyman–Pearson bound (any label-invariant test) | its null (mode of tied, other states) |"
    )
    print("|---:|---:|---:|---|")
    for n in (30, 40, 50, 60, 80):
        dec = fixed_decision(tot_max, tot_hit, s, n, 0.025, star)
        bound, q = (np.nan, np.nan) if n > 60 else np_bound(n, 0.025, 1 - r, s, 1 - star)
        null = "–" if n > 60 else f"{q:.2f}, {2 * (1 - star) - q:.2f}"
        print(f"| {n} | {np.mean(dec == -1):.3f} | {'–' if n > 60 else f'{bound:.3f}'} | {null} |", flush=True)


def np_bound(n: int, alpha: float, m_other: float, s: int, m_star: float) -> tuple[float, float]:
    """The most powerful level-``alpha`` test of one null point against two-way ties [.5, .5] at half the
    ``s`` states and [m_other, 1 − m_other] at the others, minimised over null points with the tied
    states at [q, 1 − q] and the others at [q', 1 − q'], q + q' = 2·m_star (mean mode m_star; labels of
    each state's classes mixed evenly, which a label-invariant test cannot tell apart). Returns the
    power and its q."""

    def per_state(q: float) -> np.ndarray:
        x = np.arange(n + 1)
        return 0.5 * (binom.pmf(x, n, q) + binom.pmf(x, n, 1 - q))

    def joint(q_tie: float, q_other: float) -> np.ndarray:
        out = np.array([1.0])
        for q in [q_tie] * (s // 2) + [q_other] * (s - s // 2):
            out = np.outer(out, per_state(q)).ravel()
        return out

    alt = joint(0.5, m_other)
    best = (1.0, float("nan"))
    for q in np.arange(0.62, 0.705, 0.01):
        null = joint(q, 2 * m_star - q)
        order = np.argsort(-(alt / np.maximum(null, 1e-300)), kind="stable")
        c0, ca = np.cumsum(null[order]), np.cumsum(alt[order])
        k = int(np.searchsorted(c0, alpha, side="right"))
        base0, basea = (c0[k - 1], ca[k - 1]) if k else (0.0, 0.0)
        power = basea + (alpha - base0) / null[order][k] * alt[order][k]  # randomised at the boundary
        best = min(best, (float(power), float(q)))
    return best


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000, help="simulated audits per cell (default 4000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cap", type=int, default=80, help="replies per state the audit may draw (default 80)")
    ap.add_argument("--first-cap", type=int, default=40, help='the first run\'s cap in "raise cap" (default 40)')
    ap.add_argument("--epsilon-star", type=float, default=0.2)
    ap.add_argument("--quick", action="store_true", help="4 states only, no tie shapes")
    ap.add_argument("--ties", action=argparse.BooleanOptionalAction, default=None,
                    help="the tie shapes at 2, 4, 16 and 100 states (default: on unless --quick)")  # fmt: skip
    ap.add_argument("--verify", type=int, default=40, help="audits per cell replayed through the product (default 40)")
    ap.add_argument("--frontier", action="store_true", help="the ties' fixed-size frontier and Neyman–Pearson bound")
    args = ap.parse_args(argv)
    if args.ties is None:
        args.ties = not args.quick
    t0 = time.perf_counter()
    if args.frontier:
        ties_frontier(args.reps, args.seed, args.epsilon_star)
    else:
        table(args)
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
