"""Bias-aware estimates and confidence intervals for collapse error and entropy, per state and averaged.

The headline numbers of an audit: the collapse error ε = 1 − max_k p_k of each state, the mean ε over
the audited states, and the Shannon entropy. Each comes as an :class:`IntervalEstimate` with a point
estimate that corrects the small-sample bias and an interval whose coverage is *measured* on a panel of
known distributions and of mixes of them across states (ties, uniform, long tails, nearly all distinct;
``benchmarks/estimator_coverage.py`` prints the table, ``docs/estimator-coverage.md`` ships it, and
``docs/collapse-error-intervals.md`` gives the argument).

What the mean is a mean of: the audited states are the population of interest, so the target of the
headline is (1/S) Σ_s ε_s over *these* states, and the uncertainty is the sampling noise of the N
responses inside each state, not the choice of states. Resampling states (the old two-level bootstrap)
answers a different question ("states like these") and, worse, narrows around a biased centre as S grows.
The one assumption: given its state, the N replies are independent draws from the simulator.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
from scipy.special import betainc, betaincinv, stdtrit
from scipy.stats import beta, chi2, norm, poisson

from collapse_probe.core._constraints import Integer, Number, check_value
from collapse_probe.errors import ConfigError
from collapse_probe.metrics._counts import (
    MIN_CONFIDENT_SAMPLES,
    as_counts,
    cwj_a,
    cwj_tail,
    entropy_plugin,
    extended_assemblage,
    sample_coverage,
)

__all__ = [
    "COLLAPSE_ERROR_METHOD",
    "ENTROPY_METHOD",
    "IntervalEstimate",
    "bootstrap_collapse_errors",
    "collapse_error_interval",
    "collapse_error_intervals",
    "decisive_sample_size",
    "entropy_interval",
    "entropy_intervals",
    "held_out_modal_shares",
    "mean_collapse_error_bootstrap",
    "mean_collapse_error_interval",
    "mean_collapse_error_least_favourable",
    "mean_entropy_interval",
    "mean_with_state_se",
]

_BC_DRAWS = 300
"""Bootstrap chains for the iterated bias correction of ε̂."""

_SPLITS = 100
"""Held-out evaluations per state (half as many random splits, each used in both directions)."""

_SPLIT_CELLS = 2000
"""At least this many held-out replies per state are averaged, so states with few replies get more splits."""

_EXACT_CONVOLUTION_MAX = 6000
"""Sum over states of N up to which the least-favourable max-count sum is convolved exactly (old method)."""

COLLAPSE_ERROR_METHOD = (
    "exact binomial bounds, valid for any mix of states: upper ε from the held-out count of the modal "
    "class chosen on the other half of each state's replies (random half-splits used both ways, at least "
    "100 per state; half the replies credited below N = 10), lower ε from the max counts (Clopper–Pearson, "
    "pooled over states by Hoeffding's Poisson-binomial bound); narrowed to the states' own spread where "
    "it is well below one binomial's (a design effect); iterated-bootstrap bias-corrected estimate"
)


class IntervalFields(TypedDict):
    """An :class:`IntervalEstimate` as ``results.json`` holds it, in its field order (see its fields)."""

    estimate: float
    ci95: list[float | None]
    method: str
    plugin: float
    level: float
    n: int
    n_states: int
    low_confidence: bool
    note: str
    lower_bound_only: bool


@dataclass(frozen=True)
class IntervalEstimate:
    """A point estimate with its confidence interval and how both were obtained."""

    estimate: float
    """Bias-aware point estimate (always inside ``ci95``)."""
    ci95: list[float | None]
    """``[lo, hi]`` at ``level`` (named for the default level 0.95, which every report uses). Always two
    entries; ``hi`` is ``None`` when ``lower_bound_only`` (no finite upper end is honest)."""
    method: str
    """How the estimate and interval were computed, in words."""
    plugin: float
    """The plug-in value (biased at small N; kept for comparison and for old readers)."""
    level: float
    """Confidence level of ``ci95``."""
    n: int
    """Responses per state (the smallest, when states differ)."""
    n_states: int
    """Number of states averaged (1 for a per-state interval)."""
    low_confidence: bool
    """True when some state has fewer than ``MIN_CONFIDENT_SAMPLES`` responses."""
    note: str = ""
    """What the number includes, e.g. that an entropy counts estimated unseen classes."""
    lower_bound_only: bool = False
    """True when the data bound the quantity from below only (``ci95[1]`` is ``None``): an entropy of a
    state whose replies are nearly all distinct, where the classes not seen could be any number."""

    def to_dict(self) -> IntervalFields:
        """Plain dict for ``results.json``."""
        return {"estimate": self.estimate, "ci95": list(self.ci95), "method": self.method, "plugin": self.plugin,
                "level": self.level, "n": self.n, "n_states": self.n_states, "low_confidence": self.low_confidence,
                "note": self.note, "lower_bound_only": self.lower_bound_only}  # fmt: skip


# --------------------------------------------------------------------------------------------------
# helpers


def _counts_matrix(counts_list: Sequence[Any], name: str) -> tuple[list[np.ndarray], np.ndarray]:

    if isinstance(counts_list, (str, bytes)) or not isinstance(counts_list, Sequence) or len(counts_list) == 0:
        raise ConfigError(f"{name}: expected a non-empty list of per-state class counts")
    cs = [as_counts(c, f"{name}[{i}]") for i, c in enumerate(counts_list)]
    return cs, np.array([int(c.sum()) for c in cs], dtype=np.int64)


def _check(level: float, seed: int) -> None:
    check_value(level, "level", [Number(gt=0, lt=1)])
    check_value(seed, "seed", [Integer(0, numpy=True)])


def _padded(cs: Sequence[np.ndarray]) -> np.ndarray:
    k = max(c.size for c in cs)
    out = np.zeros((len(cs), k), dtype=np.int64)
    for i, c in enumerate(cs):
        out[i, : c.size] = np.sort(c)[::-1]
    return out


def wilson(p: Any, n: Any, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of binomial proportions ``p = k / n`` at normal quantile ``z`` (arrays
    broadcast): the package's one implementation (per-state intervals, the lab's TV check)."""
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def _wilson_upper(p: np.ndarray, n: np.ndarray, z: float) -> np.ndarray:
    return wilson(p, n, z)[1]


# --------------------------------------------------------------------------------------------------
# sample splitting: a count of the modal class that the choice of the class does not inflate


def held_out_modal_shares(counts_list: Sequence[Any], seed: int = 0, splits: int = _SPLITS) -> np.ndarray:
    """Per state, the share of held-out replies in the class that is modal among the other replies.

    A random split puts ⌊N/2⌋ of a state's replies in one half and the rest in the other; the modal
    class k̂ of one half (ties broken at random) is counted in the other half. Given the first half,
    that count is Binomial(half size, p_k̂) with p_k̂ ≤ max_k p_k: choosing the class on one half does
    not inflate its count in the other, which is what biases the max count upwards when classes tie.
    Each split is used in both directions (cross-fitting: every reply is held out once per split), and
    the shares are averaged over ``splits`` evaluations. A state of one reply cannot be split and gets
    0, the conservative end.

    The replies of a state are exchangeable given the state, so a random split of the class counts
    (which replies fall in which half is drawn, not read from the data) is a random split of the
    replies. Every state draws its own splits, from ``seed``, its counts and how many states before it
    had the same counts, so a state gets the same value alone or as the first of its counts in a batch.
    (Splits shared by several states would not do: the Monte Carlo error of a set of splits is then
    common to those states and does not average out over them; one set for all states is worse still,
    as the replies are laid out class by class and a fixed set of positions favours some classes.)

    Args:
        counts_list: per-state class counts.
        seed: seed of the splits.
        splits: evaluations per state (half as many random splits, each used in both directions); at
            least 2000/N, so states with few replies, where the splits cost little, get more.

    Returns:
        An array of one share in [0, 1] per state.

    Example:
        >>> held_out_modal_shares([[20], [1] * 20]).tolist()
        [1.0, 0.0]
    """
    cs = [np.asarray(c, dtype=np.int64) for c in counts_list]
    ns = np.array([int(c.sum()) for c in cs], dtype=np.int64)
    # the j-th state with the same counts draws stream j: equal counts must not share one Monte Carlo error
    seen: dict[tuple[int, ...], int] = {}
    streams = []
    for c in cs:
        key = tuple(c.tolist())
        seen[key] = seen.get(key, -1) + 1
        streams.append([seed, int(c.sum()), seen[key], *key])
    out = np.zeros(len(cs))
    for n in (int(v) for v in np.unique(ns)):
        if n < 2:
            continue
        group = np.nonzero(ns == n)[0]
        a = n // 2
        k = max(1, splits // 2, -(-_SPLIT_CELLS // (2 * n)))  # few replies: more splits, as they are cheap
        step = max(1, 4_000_000 // (k * n))  # at most ~4M cells per chunk of states
        for start in range(0, group.size, step):
            sel = group[start : start + step]
            g = sel.size
            draws = [np.random.default_rng(streams[j]).random((3, k, n)) for j in sel]
            keys = np.stack([d[0] for d in draws])  # (g, k, n): the order of a random split
            jitter = 0.5 * np.stack([d[1:] for d in draws])  # (g, 2, k, n): < 1, breaks ties only
            labels = np.stack([np.repeat(np.arange(cs[j].size), cs[j]) for j in sel])  # (g, n)
            first = np.take_along_axis(labels[:, None, :], np.argsort(keys, axis=2)[:, :, :a], axis=2)
            cell = (np.arange(g * k).reshape(g, k, 1) * n + first).ravel()
            count_1 = np.bincount(cell, minlength=g * k * n).reshape(g, k, n)
            total = np.zeros((g, 1, n), dtype=np.int64)
            for i, j in enumerate(sel):
                total[i, 0, : cs[j].size] = cs[j]
            count_2 = total - count_1
            share = np.zeros(g)
            for d, (chosen_on, held_out, size) in enumerate(((count_1, count_2, n - a), (count_2, count_1, a))):
                k_hat = np.argmax(chosen_on + jitter[:, d], axis=2)[:, :, None]  # (g, k, 1)
                share += np.take_along_axis(held_out, k_hat, axis=2)[:, :, 0].mean(axis=1) / size
            out[sel] = share / 2
    return out


# --------------------------------------------------------------------------------------------------
# binomial bounds on the mean of per-state shares


def _worst_case_variance(theta: np.ndarray, ns: np.ndarray) -> np.ndarray:
    """max Σ_s p_s(1 − p_s)/N_s over p ∈ [0, 1]^S with mean θ, for every θ of a grid (water-filling).

    The Lagrange condition (1 − 2 p_s)/N_s = λ gives p_s = (1 − λ N_s)/2 clipped to [0, 1]; λ is found
    by bisection so that the p_s average θ. With equal N the maximum is at p_s = θ: Sθ(1 − θ)/N.
    """
    inv = 1.0 / ns.astype(np.float64)
    lo = np.full(theta.size, -float(inv.max()) * 1.0001)
    hi = -lo
    target = theta * ns.size
    for _ in range(60):
        lam = 0.5 * (lo + hi)
        total = np.clip((1.0 - lam[:, None] * ns[None, :]) / 2.0, 0.0, 1.0).sum(axis=1)
        big = total > target  # Σ p_s falls as λ grows
        lo = np.where(big, lam, lo)
        hi = np.where(big, hi, lam)
    p = np.clip((1.0 - 0.5 * (lo + hi)[:, None] * ns[None, :]) / 2.0, 0.0, 1.0)
    return np.asarray((p * (1.0 - p) * inv[None, :]).sum(axis=1))


def _mean_share_bound(total: float, ns: np.ndarray, alpha_half: float, upper: bool) -> float:
    """Exact binomial (Clopper–Pearson) bound on the mean of per-state probabilities θ_s from the sum
    of per-state shares ``total`` = Σ_s X_s/N_s, where X_s is (stochastically no less / no more than)
    Binomial(N_s, θ_s) and the states are independent.

    Equal N: Σ X_s is a sum of S·N independent Bernoulli trials with mean θ̄, a Poisson-binomial law
    whose tails beyond its mean are bounded by those of Binomial(S·N, θ̄) (Hoeffding 1956, Ann. Math.
    Statist. 27, 713–721), so the Clopper–Pearson bound of the pooled count holds for any mix of θ_s.
    (For level ≥ 0.5, α/2 ≤ 1/4: a binomial has more than 1/4 of its mass on each side of its mean, so
    a rejected count lies more than one trial beyond the mean, where the bound applies.) Unequal N: the
    reference binomial at each θ has the effective size that matches the largest variance any θ_s with
    mean θ can give (:func:`_worst_case_variance`), and the bound is found on a grid. ``total`` may be fractional
    (an average over splits); the bound is then the continuous extension (regularised incomplete beta).
    """
    s = ns.size
    if np.all(ns == ns[0]):
        n = float(s * ns[0])
        x = float(total) * float(ns[0])
        if upper:
            return 1.0 if x >= n else float(beta.ppf(1.0 - alpha_half, x + 1.0, n - x))
        return 0.0 if x <= 0 else float(beta.ppf(alpha_half, x, n - x + 1.0))
    mean = float(total) / s
    if upper and mean >= 1.0:
        return 1.0
    if not upper and mean <= 0.0:
        return 0.0
    theta = np.linspace(0.0, 1.0, 4001)[1:-1]
    n_ref = s * s * theta * (1.0 - theta) / _worst_case_variance(theta, ns)  # trials of the reference
    x = n_ref * mean
    if upper:  # keep θ while P(X ≤ x) > α/2; the bound is the next grid point past the last kept
        keep = np.nonzero(1.0 - betainc(x + 1.0, n_ref - x, theta) > alpha_half)[0]
        last = int(keep[-1]) if keep.size else -1
        return float(theta[last + 1]) if last + 1 < theta.size else 1.0
    keep = np.nonzero(betainc(x, n_ref - x + 1.0, theta) > alpha_half)[0]  # P(X ≥ x) > α/2
    first = int(keep[0]) if keep.size else theta.size
    return float(theta[first - 1]) if first > 0 else 0.0


_SMALL_N = 10
"""Below this many replies a state's held-out share is credited with ⌊N/2⌋ trials, not N (see :func:`held_out_trials`)."""

_HELD_OUT_MARGIN = 0.8
"""Each end is computed at this share of its α/2: crediting the held-out average with N trials is
measured, not proven (at exact ties it missed up to 0.030 against 0.025), the design-effect narrowing
is measured, and at clear modes, where the max count has no slack, the two ends at α/2 covered
0.955–0.96 (600 audits): at 0.8 α/2 each end misses at most about 0.02."""

_DESIGN_MIN = 1.5
"""The design-effect size replaces the pooled exact one only when it is at least this many times the trials:
alike states estimate a size near the trials, above or below it by chance, and their exact bound stays."""

_DESIGN_CAP = 16.0
"""The design-effect reference binomial has at most this many times the trials the states hold."""


def held_out_trials(ns: np.ndarray) -> np.ndarray:
    """Trials a state's held-out modal share is referred to: N, or ⌊N/2⌋ (one half-split's held-out
    count) when N < 10, where the average over splits is measured to vary more than Binomial(N)'s share
    (at N = 2 it is one Bernoulli draw, whether the two replies agree: twice the variance of a share of 2)."""
    ns = np.asarray(ns, dtype=np.int64)
    return np.where(ns < _SMALL_N, np.maximum(ns // 2, 1), ns)


def _clopper_pearson_at(p: float, n_ref: float, alpha_half: float, upper: bool) -> float:
    """Clopper–Pearson bound of a mean share ``p`` credited with ``n_ref`` (fractional) trials."""
    x = p * n_ref
    if upper:
        return 1.0 if x >= n_ref else float(betaincinv(x + 1.0, n_ref - x, 1.0 - alpha_half))
    return 0.0 if x <= 0 else float(betaincinv(x, n_ref - x + 1.0, alpha_half))


def _design_effect_bound(shares: np.ndarray, trials: np.ndarray, alpha_half: float, upper: bool) -> float:
    """One end of a bound on the mean of per-state probabilities θ_s from shares whose means are θ_s
    (upper: no less than θ_s in distribution; lower: no more), referring the mean share to a binomial
    whose size is set by the states' own spread (a design effect, as in Korn & Graubard 1998).

    The pooled Clopper–Pearson bound of :func:`_mean_share_bound` refers the mean share to
    Binomial(S·N), the largest variance any mix with that mean can have (Hoeffding 1956). A mix of
    collapsed and diverse states varies far less: a point mass contributes nothing. Here each state's
    share variance is estimated without bias, ŝ_s(1 − ŝ_s)/(n_s − 1) for a binomial share of n_s
    trials, and the mean share p̂ gets the effective size n* = p̂(1 − p̂)/V̂ (V̂ the estimated variance of
    the mean), shrunk by (z/t_ν)² for the ν Satterthwaite degrees of freedom of V̂ and at most 16·Σ n_s.
    An effective size below the trials held is noise (no mix varies more than that binomial), and one
    near them is what alike states show by chance, so below 1.5 times the trials the pooled exact bound
    stays; above, the narrower of the two is returned. One state, no spread
    (every share 0 or 1) or a mean share of 0 or 1: the pooled exact bound. The narrowing is not a
    theorem; its coverage is measured (``benchmarks/estimator_coverage.py``,
    ``docs/collapse-error-intervals.md``).
    """
    s = shares.size
    total = float(np.sum(shares))
    p = total / s
    exact = _mean_share_bound(total, trials, alpha_half, upper)
    v = shares * (1.0 - shares) / np.maximum(trials - 1, 1)
    var = float(v.sum()) / (s * s)
    if s == 1 or var <= 0.0 or p <= 0.0 or p >= 1.0:
        return exact
    df = float(v.sum() ** 2 / np.sum(v * v / np.maximum(trials - 1, 1)))
    shrink = (float(norm.ppf(1.0 - alpha_half)) / float(stdtrit(max(df, 1.0), 1.0 - alpha_half))) ** 2
    n_ref = min(p * (1.0 - p) / var * shrink, _DESIGN_CAP * float(trials.sum()))
    if n_ref < _DESIGN_MIN * float(trials.sum()):
        return exact
    design = _clopper_pearson_at(p, n_ref, alpha_half, upper)
    return min(exact, design) if upper else max(exact, design)


def _collapse_error_bounds(maxes: np.ndarray, shares: np.ndarray, ns: np.ndarray, alpha: float) -> tuple[float, float]:
    """``(lo, hi)`` of the mean ε from the max counts and the held-out modal shares of the states.

    lower end: the true modal class's count X_s ≤ M_s (the max count) is Binomial(N_s, m_s), so an
    upper bound on the mean m from the shares M_s/N_s bounds 1 − ε̄ from above whatever the states are.
    upper end: the held-out share of each state has mean p_k̂ ≤ m_s, so a lower bound on its mean bounds
    1 − ε̄ from below; at exact ties nothing is lost (every tied class is modal) and when every reply
    differs the share is 0, so the upper end of ε reaches 1. Both ends: :func:`_design_effect_bound`.
    """
    hi_m = _design_effect_bound(maxes / ns, ns, _HELD_OUT_MARGIN * alpha / 2, upper=True)
    lo_m = _design_effect_bound(shares, held_out_trials(ns), _HELD_OUT_MARGIN * alpha / 2, upper=False)
    plugin = 1.0 - float(np.mean(maxes / ns))
    # the held-out share averages to at most the max share, so 1 − lo_m ≥ plug-in up to the Monte Carlo
    # noise of the splits; the guards keep the plug-in inside the interval exactly
    return min(max(0.0, 1.0 - hi_m), plugin), max(min(1.0, 1.0 - lo_m), plugin)


# --------------------------------------------------------------------------------------------------
# bias-corrected point estimate


def bootstrap_collapse_errors(
    counts_list: Sequence[Any], n_boot: int, rng: np.random.Generator | int = 0
) -> np.ndarray:
    """Plug-in ε̂ of ``n_boot`` multinomial resamples of each state's N responses: an ``(S, n_boot)`` array.

    Vectorised over states (one batched draw per chunk of states).

    Args:
        counts_list: per-state class counts.
        n_boot: resamples per state.
        rng: a generator or a seed.
    """
    return _resampled_collapse_errors(counts_list, n_boot, rng, twice=False)[0]


def _resampled_collapse_errors(
    counts_list: Sequence[Any], n_boot: int, rng: np.random.Generator | int, twice: bool
) -> tuple[np.ndarray, np.ndarray]:
    """ε̂* of resamples and, when ``twice``, ε̂** of one resample of each resample (else a copy of ε̂*).

    States with few classes beside N are drawn as multinomials (vectorised over states); states with
    many classes (nearly all replies distinct) by resampling their N replies, whose cost does not grow
    with the number of classes.
    """
    cs = [np.asarray(c, dtype=np.int64) for c in counts_list]
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    first = np.empty((len(cs), n_boot))
    second = np.empty((len(cs), n_boot)) if twice else first
    wide = np.array([8 * c.size > c.sum() for c in cs])
    narrow = np.nonzero(~wide)[0]
    if narrow.size:
        mat = _padded([cs[i] for i in narrow])
        ns = mat.sum(axis=1)
        # chunk over states so that one draw holds at most ~4M counts, whatever the number of classes
        step = max(1, 4_000_000 // (n_boot * mat.shape[1]))
        for a in range(0, narrow.size, step):
            sl, rows = slice(a, a + step), narrow[a : a + step]
            n = ns[sl]
            x1 = rng.multinomial(n, mat[sl] / n[:, None], size=(n_boot, n.size))
            first[rows] = (1.0 - x1.max(axis=2) / n).T
            if twice:
                x2 = rng.multinomial(n, x1 / n[:, None], size=(n_boot, n.size))
                second[rows] = (1.0 - x2.max(axis=2) / n).T
    for i in np.nonzero(wide)[0]:
        c = cs[i]
        n = int(c.sum())
        offsets = (np.arange(n_boot) * c.size)[:, None]
        x1 = np.repeat(np.arange(c.size), c)[rng.integers(0, n, size=(n_boot, n))]  # resampled class labels
        first[i] = 1.0 - np.bincount((x1 + offsets).ravel(), minlength=n_boot * c.size).reshape(n_boot, -1).max(1) / n
        if twice:
            x2 = np.take_along_axis(x1, rng.integers(0, n, size=(n_boot, n)), axis=1)
            second[i] = (
                1.0 - np.bincount((x2 + offsets).ravel(), minlength=n_boot * c.size).reshape(n_boot, -1).max(1) / n
            )
    return first, second


def _iterated_bias_corrected(cs: Sequence[np.ndarray], ns: np.ndarray, seed: int) -> np.ndarray:
    """Per-state ε̂ with the bootstrap bias correction iterated once (Hall 1992, §1.4; Efron & Tibshirani 1993, §10.6).

    One correction, 2ε̂ − E*ε̂*, measures the bias at p̂, which is itself less tied than the truth, so
    it removes only about half of it (uniform over 10 at N = 20: −0.116 → −0.050). Correcting the
    correction, 3ε̂ − 3E*ε̂* + E**ε̂**, takes the remaining bias to −0.03…+0.03 for N ≥ 20 except
    Zipf over 200 at N = 20 (+0.07); E** needs no nested loop: each chain resamples once from p̂ and
    once more from its own resample.
    """
    plug = 1.0 - np.array([c.max() for c in cs]) / ns
    e1, e2 = _resampled_collapse_errors(cs, _BC_DRAWS, np.random.default_rng(seed), twice=True)
    corrected = 3.0 * plug - 3.0 * e1.mean(axis=1) + e2.mean(axis=1)
    single = np.array([c.size == 1 for c in cs])
    return np.where(single, 0.0, np.clip(corrected, 0.0, 1.0))


# --------------------------------------------------------------------------------------------------
# public intervals


def mean_collapse_error_interval(counts_list: Sequence[Any], level: float = 0.95, seed: int = 0) -> IntervalEstimate:
    """Mean collapse error (1/S) Σ_s ε_s over the audited states, with an interval valid for any mix of states.

    Both ends are exact binomial bounds on the mean modal probability m̄ = (1/S) Σ_s m_s (m_s = max_k p_sk),
    built from counts whose law is known whatever each state's distribution is:

    - lower end of ε: the count X_s of a state's true modal class is Binomial(N, m_s) and at most the
      max count M_s. Σ X_s is Poisson-binomial, and its tails are bounded by those of Binomial(S·N, m̄)
      (Hoeffding 1956), so the Clopper–Pearson upper bound computed from Σ M_s bounds m̄ from above.
    - upper end of ε: the max count is biased upwards when classes tie, because the class is chosen on
      the same replies that are counted. Sample splitting removes that: the modal class k̂ of one half
      of a state's replies, counted on the other half, is Binomial(N/2, p_k̂) with p_k̂ ≤ m_s. Averaged
      over 50 random half-splits, each used both ways (:func:`held_out_modal_shares`), and bounded from
      below by Clopper–Pearson at S·N trials, it bounds m̄ from below. When every reply differs the share is 0
      and the upper end is 1; at an exact tie every tied class is modal and nothing is lost.

    The first bound holds by construction; the second does for one split, and the average over splits
    is referred to the binomial of all S·N replies (from N = 10 on; below, of ⌊N/2⌋ per state, one
    split's count, see :func:`held_out_trials`), which its measured spread stays within (at exact ties
    its variance is 0.53–0.86 of that binomial's); it is computed at 0.8 of its α/2, a margin for that
    measured step (the lower end too, for the design-effect step). With unequal N the reference binomial takes the largest variance the states' shares
    could have (:func:`_mean_share_bound`). Where the states' own spread is well below one binomial's
    (collapsed states beside diverse ones) both ends are narrowed to it (:func:`_design_effect_bound`):
    measured, not proven (``docs/collapse-error-intervals.md``).

    Why not the earlier interval: its upper end assumed that states sharing one modal probability is
    the least favourable case, which is false for mixes: alternating point-mass and [.5, .5] states
    covered 0.665 at 16 states and 0.145 at 32, and a grid floor kept the upper end below 1 − 0.5/N,
    so nearly all-distinct replies were never covered. Measured table and the
    argument: ``docs/estimator-coverage.md``, ``docs/collapse-error-intervals.md``.

    The point estimate is the mean of the per-state iterated-bootstrap bias-corrected ε̂ (see
    :func:`_iterated_bias_corrected`), kept inside the interval; the plug-in mean stays in ``plugin``.

    Args:
        counts_list: class counts of each state.
        level: confidence level in (0, 1).
        seed: seed of the splits and of the bias-correction bootstrap; the same counts and seed give
            the same interval.

    Example:
        >>> r = mean_collapse_error_interval([[5, 4, 3, 3, 2, 2, 1], [6, 5, 4, 3, 2]])
        >>> r.ci95[0] <= r.estimate <= r.ci95[1], r.plugin < r.estimate
        (True, True)
    """
    _check(level, seed)
    cs, ns = _counts_matrix(counts_list, "counts_list")
    maxes = np.array([c.max() for c in cs], dtype=np.int64)
    lo, hi = _collapse_error_bounds(maxes, held_out_modal_shares(cs, seed), ns, 1.0 - level)
    return _mean_collapse_error_estimate(cs, ns, maxes, (lo, hi), level, seed, COLLAPSE_ERROR_METHOD)


def _mean_collapse_error_estimate(
    cs: Sequence[np.ndarray],
    ns: np.ndarray,
    maxes: np.ndarray,
    bounds: tuple[float, float],
    level: float,
    seed: int,
    method: str,
) -> IntervalEstimate:
    """The mean-ε :class:`IntervalEstimate` of an interval: the bias-corrected estimate kept inside it."""

    lo, hi = bounds
    est = float(np.mean(_iterated_bias_corrected(cs, ns, seed)))
    return IntervalEstimate(
        estimate=float(np.clip(est, lo, hi)),
        ci95=[lo, hi],
        method=method,
        plugin=float(np.mean(1.0 - maxes / ns)),
        level=level,
        n=int(ns.min()),
        n_states=len(cs),
        low_confidence=bool(ns.min() < MIN_CONFIDENT_SAMPLES),
    )


def collapse_error_interval(counts: Any, level: float = 0.95, seed: int = 0) -> IntervalEstimate:
    """Collapse error ε = 1 − max_k p_k of one state with a bias-aware interval.

    The one-state case of :func:`mean_collapse_error_interval`: the lower end is the Clopper–Pearson
    upper bound of the modal share, the upper end the Clopper–Pearson lower bound of the held-out modal
    share. It reaches 1 when every reply differs, where the earlier interval's upper end stopped at
    1 − 0.5/N. Measured table:
    ``docs/estimator-coverage.md``.

    Example:
        >>> r = collapse_error_interval([20])
        >>> r.estimate, r.ci95[0], round(r.ci95[1], 3)
        (0.0, 0.0, 0.178)
        >>> collapse_error_interval([1] * 20).ci95[1]
        1.0
    """
    return mean_collapse_error_interval([counts], level=level, seed=seed)


def collapse_error_intervals(counts_list: Sequence[Any], level: float = 0.95, seed: int = 0) -> list[IntervalEstimate]:
    """:func:`collapse_error_interval` for many states at once (one batch of splits and of bootstrap draws).

    Each state's interval equals the one :func:`collapse_error_interval` gives it alone (states with the
    same counts share the splits of the first, unlike in a mean, where their Monte Carlo errors must
    average out); the bias-corrected estimates share one bootstrap stream.
    """

    _check(level, seed)
    cs, ns = _counts_matrix(counts_list, "counts_list")
    maxes = np.array([c.max() for c in cs], dtype=np.int64)
    keys = [tuple(c.tolist()) for c in cs]
    unique = list(dict.fromkeys(keys))
    by_counts = dict(zip(unique, held_out_modal_shares([np.array(k) for k in unique], seed), strict=True))
    shares = np.array([by_counts[k] for k in keys])
    est = _iterated_bias_corrected(cs, ns, seed)
    out = []
    for i in range(len(cs)):
        lo, hi = _collapse_error_bounds(maxes[i : i + 1], shares[i : i + 1], ns[i : i + 1], 1.0 - level)
        out.append(
            IntervalEstimate(
                estimate=float(np.clip(est[i], lo, hi)),
                ci95=[lo, hi],
                method=COLLAPSE_ERROR_METHOD,
                plugin=float(1.0 - maxes[i] / ns[i]),
                level=level,
                n=int(ns[i]),
                n_states=1,
                low_confidence=bool(ns[i] < MIN_CONFIDENT_SAMPLES),
            )
        )
    return out


DECISIVE_INFLATION = 1.25
"""Variance of the interval's ends over the binomial ideal, measured (``benchmarks/verdict_error_rates.py
--find``): the upper end's held-out share varies more than the max count and the choice of the modal
class on half the replies costs a little more."""


def decisive_sample_size(
    epsilon_star: float, n_states: int, *, gap: float = 0.1, power: float = 0.8, level: float = 0.95
) -> int:
    """Replies per state at which an audit of ``n_states`` states decides (its interval excludes ε*) with
    probability at least ``power`` when the true mean collapse error lies ``gap`` away from ε*.

    The interval's end on the side of ε* moves with the mean modal share, whose standard deviation is at
    most √(m(1 − m)/(S·N)) (m = 1 − ε̄; Hoeffding: a mix of states varies no more than one binomial). A
    decision at distance ``gap`` needs ``gap`` ≥ (z_{1−α/2} + z_power)·σ, taken at the harder of ε* ± gap
    and with the measured inflation :data:`DECISIVE_INFLATION` of the interval's variance; the result is
    rounded up to whole replies (at least 2). Used by the audit's rerun advice.

    Example:
        >>> decisive_sample_size(0.2, 4)
        52
    """
    check_value(epsilon_star, "epsilon_star", [Number(gt=0, lt=1)])
    check_value(n_states, "n_states", [Integer(1)])
    check_value(gap, "gap", [Number(gt=0, lt=1)])
    check_value(power, "power", [Number(gt=0, lt=1)])
    check_value(level, "level", [Number(gt=0, lt=1)])
    z = float(norm.ppf(1.0 - (1.0 - level) / 2)) + float(norm.ppf(power))
    sides = [e for e in (epsilon_star - gap, epsilon_star + gap) if 0.0 < e < 1.0] or [epsilon_star]
    var = max(e * (1.0 - e) for e in sides)
    total = DECISIVE_INFLATION * var * (z / gap) ** 2
    return max(2, math.ceil(total / n_states))


# --------------------------------------------------------------------------------------------------
# the earlier intervals, kept for comparison (benchmarks/estimator_coverage.py prints them side by side)


def _boot_ci(boot: np.ndarray, est: float, level: float, basic: bool) -> list[float]:
    alpha = 1 - level
    lo_q, hi_q = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    if basic:
        return [float(2 * est - hi_q), float(2 * est - lo_q)]
    return [float(lo_q), float(hi_q)]


def mean_collapse_error_bootstrap(
    counts_list: Sequence[Any], n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> IntervalEstimate:
    """Mean plug-in ε̂ with a two-level basic bootstrap interval (states, then responses in each state).

    Superseded by :func:`mean_collapse_error_interval`: it centres on the plug-in, whose bias towards
    "collapsed" does not average out, and resampling states narrows the interval around that biased
    centre as states are added (uniform over 10, 16 states × N = 20: coverage 0.33).
    """

    _check(level, seed)
    cs, ns = _counts_matrix(counts_list, "counts_list")
    rng = np.random.default_rng(seed)
    plug = 1.0 - np.array([c.max() for c in cs]) / ns
    est = float(plug.mean())
    mat = bootstrap_collapse_errors(cs, n_boot, rng)
    s = len(cs)
    idx = rng.integers(0, s, size=(n_boot, s)) if s > 1 else np.zeros((n_boot, 1), dtype=int)
    boot = mat[idx, np.arange(n_boot)[:, None]].mean(axis=1)
    lo, hi = _boot_ci(boot, est, level, basic=True)
    return IntervalEstimate(
        estimate=est,
        ci95=[max(0.0, min(lo, est)), min(1.0, max(hi, est))],
        method="two-level basic bootstrap (states, then responses within each state)",
        plugin=est,
        level=level,
        n=int(ns.min()),
        n_states=s,
        low_confidence=bool(ns.min() < MIN_CONFIDENT_SAMPLES),
    )


def mean_with_state_se(
    estimates: Sequence[float], cis: Sequence[Sequence[float]], n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> IntervalEstimate:
    """Mean of per-state estimates with a two-level CI: states resampled, and each drawn state's estimate
    perturbed by a normal draw with the standard error implied by its own CI (the earlier entropy mean)."""
    est = np.asarray(estimates, dtype=np.float64)
    if est.size == 0:
        raise ConfigError("estimates: expected at least one per-state estimate")
    se = np.array([(hi - lo) / (2 * 1.959964) for lo, hi in cis])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, est.size, size=(n_boot, est.size)) if est.size > 1 else np.zeros((n_boot, 1), dtype=int)
    boot = (est[idx] + se[idx] * rng.standard_normal(idx.shape)).mean(axis=1)
    lo, hi = _boot_ci(boot, float(est.mean()), level, basic=False)
    return IntervalEstimate(
        estimate=float(est.mean()),
        ci95=[max(0.0, lo), hi],
        method="mean of per-state estimates, two-level normal bootstrap",
        plugin=float(est.mean()),
        level=level,
        n=0,
        n_states=int(est.size),
        low_confidence=False,
    )


def _lf_grid(n: int) -> np.ndarray:
    """Grid of modal probabilities m; below 1/(2N) every class is a singleton anyway."""
    lo = max(0.002, 0.5 / n)
    fine = np.geomspace(lo, 0.1, 40) if lo < 0.1 else np.empty(0)
    return np.unique(np.concatenate([fine, np.linspace(0.1, 1.0, 121)]))


def _lf_max_count_cdf(n: int, m: float) -> np.ndarray:
    """P(max count ≤ t), t = 0..N, among N draws from LF(m), exactly.

    Poissonisation: with independent Y_k ~ Poisson(N q_k), the multinomial law is the law of Y given
    Σ Y = N, so P(max ≤ t) = P(all Y_k ≤ t, Σ Y = N) / P(Poisson(N) = N). The numerator is
    coefficient N of the product of the truncated Poisson pmfs, one FFT per t (the transform is long
    enough that nothing wraps around).
    """
    k = int(math.floor(1.0 / m + 1e-9))
    r = 1.0 - k * m
    r = r if r > 1e-12 else 0.0
    lam = n * m
    t_hi = int(min(n, math.ceil(lam + 8.0 * math.sqrt(lam) + 8.0)))
    t_lo = max(0, math.ceil(n / (k + (r > 0))) - 1)
    cdf = np.ones(n + 1)
    cdf[:t_lo] = 0.0
    ts = np.arange(t_lo, t_hi + 1)
    if ts.size:
        size = 1 << int(math.ceil(math.log2((k + 1) * t_hi + 2)))
        j = np.arange(t_hi + 1)
        keep = j[None, :] <= ts[:, None]
        base = np.where(keep, poisson.pmf(j, lam), 0.0)
        rest = np.where(keep, poisson.pmf(j, n * r) if r > 0 else (j == 0).astype(np.float64), 0.0)
        prod = np.fft.rfft(base, size, axis=1) ** k * np.fft.rfft(rest, size, axis=1)
        coef = np.fft.irfft(prod, size, axis=1)[:, n]
        cdf[t_lo : t_hi + 1] = np.clip(coef / poisson.pmf(n, n), 0.0, 1.0)
    return np.maximum.accumulate(cdf)


@functools.lru_cache(maxsize=32)
def _lf_max_count_pmf(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(grid, pmf)`` with ``pmf[g, t]`` = P(max count = t) among N draws from LF(m_g).

    LF(m) is the least-favourable class distribution with modal probability m: ⌊1/m⌋ classes of mass m
    and one remainder class. P(max count ≥ t) is Schur-convex in the class probabilities (Marshall,
    Olkin & Arnold 2011, *Inequalities*, ch. 12), and LF(m) majorises every distribution whose largest
    probability is m, so no such distribution makes a large max count likelier. Computed exactly
    (:func:`_lf_max_count_cdf`) once per N and kept for the process.
    """
    grid = _lf_grid(n)
    cdf = np.array([_lf_max_count_cdf(n, float(m)) for m in grid])
    # P(M >= t) = 1 - cdf(t - 1) must not decrease in m; guard against rounding by a running minimum.
    cdf = np.minimum.accumulate(cdf, axis=0)
    pmf = np.diff(np.concatenate([np.zeros((grid.size, 1)), cdf], axis=1), axis=1)
    return grid, np.clip(pmf, 0.0, None)


def _sum_pmf(pmf: np.ndarray, s: int) -> np.ndarray:
    """pmf of the sum of ``s`` independent draws, row-wise (FFT convolution)."""
    if s == 1:
        return pmf
    length = (pmf.shape[1] - 1) * s + 1
    nfft = 1 << int(math.ceil(math.log2(length)))
    f = np.fft.rfft(pmf, nfft, axis=1)
    return np.clip(np.fft.irfft(f**s, nfft, axis=1)[:, :length], 0.0, None)


def _invert(grid: np.ndarray, pval: np.ndarray, target: float) -> float:
    """Smallest m on the grid where the (non-decreasing) p-value reaches ``target``, interpolated."""
    pval = np.maximum.accumulate(pval)
    ok = np.nonzero(pval >= target)[0]
    if ok.size == 0:
        return 1.0
    g = int(ok[0])
    if g == 0 or pval[g] == pval[g - 1]:
        return float(grid[g])
    frac = (target - pval[g - 1]) / (pval[g] - pval[g - 1])
    return float(grid[g - 1] + frac * (grid[g] - grid[g - 1]))


def _lf_lower_modal_bound(maxes: np.ndarray, ns: np.ndarray, alpha_half: float) -> float:
    """Lower confidence bound of the mean modal probability from the summed max counts (mid-p)."""
    s = maxes.size
    if np.all(ns == ns[0]) and s * int(ns[0]) <= _EXACT_CONVOLUTION_MAX:
        grid, pmf = _lf_max_count_pmf(int(ns[0]))
        total = _sum_pmf(pmf, s)
        t_int = int(maxes.sum())
        pval = total[:, t_int:].sum(axis=1) - 0.5 * total[:, t_int]
        return _invert(grid, pval, alpha_half)
    # Normal approximation of Σ M_s/N_s (CLT over many states or mixed N); common grid over [0, 1].
    grid = _lf_grid(int(ns.min()))
    mean = np.zeros(grid.size)
    var = np.zeros(grid.size)
    for n_val, k in zip(*np.unique(ns, return_counts=True), strict=True):
        g_n, pmf = _lf_max_count_pmf(int(n_val))
        share = np.arange(int(n_val) + 1) / n_val
        mu = pmf @ share
        mean += k * np.interp(grid, g_n, mu)
        var += k * np.interp(grid, g_n, pmf @ share**2 - mu**2)
    t = float(np.sum(maxes / ns))
    pval = norm.sf((t - mean) / np.sqrt(np.maximum(var, 1e-12)))
    return _invert(grid, pval, alpha_half)


LEAST_FAVOURABLE_METHOD = (
    "max-count test inversion: binomial bound on the modal class (lower ε), least-favourable tied "
    "classes (upper ε); iterated-bootstrap bias-corrected estimate"
)


def mean_collapse_error_least_favourable(
    counts_list: Sequence[Any], level: float = 0.95, seed: int = 0
) -> IntervalEstimate:
    """The earlier mean-ε interval: a test on the summed max counts under least-favourable tied classes.

    Superseded by :func:`mean_collapse_error_interval`. Its upper end takes every state to be LF(m)
    (⌊1/m⌋ classes tied at m) for one common m, which is the least favourable case only when the
    states share their modal probability: on mixes of collapsed and tied states it under-covers, and
    more samples do not help (point mass / [.5, .5] alternating, 32 states: 0.15). Its grid of m stops
    at max(0.002, 0.5/N), so the upper end never passes 1 − 0.5/N and nearly all-distinct replies are
    never covered. Kept so that ``benchmarks/estimator_coverage.py`` can print it beside the new one.
    """
    _check(level, seed)
    cs, ns = _counts_matrix(counts_list, "counts_list")
    alpha = 1.0 - level
    maxes = np.array([c.max() for c in cs], dtype=np.int64)
    s = len(cs)
    z = float(norm.ppf(1.0 - alpha / 2))
    share = float(np.mean(maxes / ns))
    n_eff = s * s / float(np.sum(1.0 / ns))
    upper_m = float(_wilson_upper(np.array(share), np.array(n_eff), z))
    lower_m = _lf_lower_modal_bound(maxes, ns, alpha / 2)
    plugin = 1.0 - share
    lo, hi = min(max(0.0, 1.0 - upper_m), plugin), max(min(1.0, 1.0 - lower_m), plugin)
    return _mean_collapse_error_estimate(cs, ns, maxes, (lo, hi), level, seed, LEAST_FAVOURABLE_METHOD)


# --------------------------------------------------------------------------------------------------
# entropy

ENTROPY_METHOD = (
    "Chao–Wang–Jost estimate (incl. unseen classes); interval: union of basic and bias-shifted percentile "
    "bootstrap intervals from the Chao et al. (2013) extended assemblage, upper end also from an "
    "assemblage with more unseen classes (Chao1 upper limit) and at least the rule-of-three unseen mass"
)
ENTROPY_NOTE = "estimate incl. unseen classes (Chao–Wang–Jost), nats"
ENTROPY_LOWER_BOUND_NOTE = (
    "lower bound only: more than half of the probability mass lies in classes no reply showed (estimated "
    "sample coverage below 0.5), which could be any number, so no finite upper end is honest; the lower "
    "end also holds by the collision bound H ≥ −log Σp²"
)
PARTLY_BOUNDED_NOTE = (
    "{k} of {s} states (index {which}) have more than half of their mass in classes no reply showed "
    "(sample coverage below 0.5): for them the upper end assumes at most the Chao1 upper limit of unseen "
    "classes, and the lower end is their collision bound; the other states' part of the interval holds as measured"
)
MIN_ENTROPY_COVERAGE = 0.5
"""Estimated sample coverage (Chao–Jost) below which a state's entropy gets a lower bound only."""
_ENTROPY_DRAWS = 300
"""Bootstrap draws per state and assemblage for the entropy interval."""


@functools.lru_cache(maxsize=65536)
def _cwj_unseen_term(n: int, f1: int, f2: int) -> float:
    """The unseen-class term of Chao–Wang–Jost, which depends on (N, f1, f2) only."""

    a = cwj_a(n, f1, f2)
    return f1 / n * cwj_tail(a, n) if f1 > 0 and a != 1.0 else 0.0


def _cwj_rows(x: np.ndarray, n: int) -> np.ndarray:
    """Chao–Wang–Jost entropy of every row of a count matrix (rows sum to ``n``; zeros allowed)."""
    # ψ(N) − ψ(X) = Σ_{k=X}^{N−1} 1/k: a table of harmonic numbers instead of digamma calls
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])
    h = (x * (harmonic[n - 1] - harmonic[np.maximum(x, 1) - 1])).sum(axis=-1) / n
    f1 = (x == 1).sum(axis=-1)
    f2 = (x == 2).sum(axis=-1)
    keys = f1 * (n + 1) + f2
    uniq, inv = np.unique(keys.ravel(), return_inverse=True)
    add = np.array([_cwj_unseen_term(n, *divmod(int(k), n + 1)) for k in uniq])
    return np.asarray(h + add[inv].reshape(h.shape), dtype=np.float64)


def _chao1_unseen_upper(c: np.ndarray, n: int, z: float) -> float:
    """Upper confidence limit of the number of unseen classes: Chao1 with its log-normal interval.

    Chao (1987), Biometrics 43, 783–791; the bias-corrected variance forms of Chao (2005), *Encyclopedia
    of Statistical Sciences*, "Species estimation and applications".
    """
    f1 = int(np.sum(c == 1))
    f2 = int(np.sum(c == 2))
    k = (n - 1) / n
    if f1 == 0:
        return 0.0
    if f2 > 0:
        f0 = k * f1 * f1 / (2.0 * f2)
        r = f1 / f2
        var = f2 * (k * 0.5 * r**2 + k * k * r**3 + k * k * 0.25 * r**4)
    else:
        f0 = k * f1 * (f1 - 1) / 2.0
        total = c.size + f0
        var = k * f1 * (f1 - 1) / 2.0 + k * k * f1 * (2 * f1 - 1) ** 2 / 4.0 - k * k * f1**4 / (4.0 * total)
    if f0 <= 0:
        return 1.0
    return f0 * math.exp(z * math.sqrt(math.log(1.0 + max(var, 0.0) / f0**2)))


def _upper_assemblage(c: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """A plausible assemblage richer than the data suggest: the Chao et al. detected classes, the unseen
    mass raised to at least the rule-of-three bound 1 − (α/2)^(1/N) (N draws can miss that much mass
    with probability α/2) and spread over the Chao1 upper limit of unseen classes."""

    ext = extended_assemblage(c)
    detected = ext[: c.size]
    w = max(1.0 - float(detected.sum()), 1.0 - (alpha / 2) ** (1.0 / n))
    unseen = max(1, int(math.ceil(_chao1_unseen_upper(c, n, float(norm.ppf(1 - alpha / 2))))))
    return np.concatenate([detected / detected.sum() * (1.0 - w), np.full(unseen, w / unseen)])


def _plugin_entropy(p: np.ndarray) -> float:
    q = p[p > 0]
    return float(-(q * np.log(q)).sum())


def _draw_counts(rng: np.random.Generator, n: int, p: np.ndarray, size: int) -> np.ndarray:
    """``size`` multinomial(N, p) count vectors; by inverse-CDF draws when N is small beside the number of
    classes (N·log K < K), where the per-class binomial loop of ``Generator.multinomial`` is the cost."""
    k = p.size
    if n * max(1.0, math.log2(k)) >= k:
        return rng.multinomial(n, p, size=size)
    cdf = np.cumsum(p)
    idx = np.minimum(np.searchsorted(cdf, rng.random((size, n)) * cdf[-1], side="right"), k - 1)
    offsets = (np.arange(size, dtype=np.int64) * k)[:, None]
    return np.bincount((idx + offsets).ravel(), minlength=size * k).reshape(size, k)


def _entropy_pivots(cs: Sequence[np.ndarray], ns: np.ndarray, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """(2, S, B) bootstrap pivots CWJ* − H(world) in the extended and in the upper assemblage."""

    out = np.empty((2, len(cs), _ENTROPY_DRAWS))
    for s, (c, n) in enumerate(zip(cs, ns, strict=True)):
        for w, world in enumerate((extended_assemblage(c), _upper_assemblage(c, int(n), alpha))):
            draws = _draw_counts(rng, int(n), world, _ENTROPY_DRAWS)
            out[w, s] = _cwj_rows(draws, int(n)) - _plugin_entropy(world)
    return out


def _collision_entropy_floor(c: np.ndarray, n: int, alpha_half: float) -> float:
    """A lower confidence bound on the Shannon entropy from the pairs of replies that share a class.

    H ≥ H₂ = −log Σ p_k² (Rényi), and the number of colliding pairs W = Σ_k C(X_k, 2) has mean
    C(N, 2) Σ p_k². When collisions are rare (the only case it is used for: nearly all replies differ)
    W is close to Poisson (the birthday problem), so the exact Poisson upper bound of E[W] bounds Σ p_k²
    from above. 20 distinct replies out of 20: H ≥ 3.94 nats, where uniform over 57 classes (4.04)
    still shows 20 distinct replies 2.5 % of the time. Unlike the bootstrap, this needs no guess of the
    classes not seen.
    """
    pairs = n * (n - 1) / 2.0
    if pairs == 0:
        return 0.0
    w = float(np.sum(c * (c - 1)) / 2.0)
    upper = float(chi2.ppf(1.0 - alpha_half, 2.0 * (w + 1.0))) / 2.0
    return max(0.0, -math.log(min(1.0, upper / pairs)))


def _entropy_from_pivots(est: float, piv: np.ndarray, alpha: float) -> tuple[float, float]:
    """Interval for ``est`` from mean-over-states pivots ``piv`` (2, B) of the two assemblages."""
    qa_lo, qa_hi = np.quantile(piv[0], [alpha / 2, 1 - alpha / 2])
    qb_lo, qb_hi = np.quantile(piv[1], [alpha / 2, 1 - alpha / 2])
    ma, mb = float(piv[0].mean()), float(piv[1].mean())
    # basic (reflected) interval: right when the estimator's bias dominates (long tails);
    # bias-shifted percentile (unreflected): right near the maximum entropy of few classes, where the
    # sampling distribution is skewed the other way. The union holds in both regimes.
    lo = min(est - qa_hi, est - ma + (qa_lo - ma))
    hi = max(est - qa_lo, est - qb_lo, est - ma + (qa_hi - ma), est - mb + (qb_hi - mb))
    return max(0.0, float(lo)), float(hi)


def mean_entropy_interval(counts_list: Sequence[Any], level: float = 0.95, seed: int = 0) -> IntervalEstimate:
    """Mean Shannon entropy (nats) over the audited states, Chao–Wang–Jost per state, with an interval.

    The estimate counts classes not yet seen (the Chao–Wang–Jost estimator extrapolates the discovery
    curve), so it can exceed the log of the number of observed classes. The interval comes from
    bootstrap pivots CWJ* − H(world), averaged over states, in two worlds per state: the Chao et al.
    (2013) extended assemblage (observed classes shrunk to the estimated coverage plus Chao1 unseen
    classes) and a richer one (unseen mass at least the rule-of-three bound, spread over the Chao1
    upper limit of unseen classes). Its lower end is the lower of the basic and the bias-shifted
    percentile intervals; its upper end the highest of those in both worlds.

    Why: CWJ is the least-biased estimator we have, but on long tails it still falls short (Zipf over
    200 at N = 20: −0.42 nats), and averaging over states does not remove that; a normal interval
    around it covers 0.58 on [.9, .1] at N = 10 and collapses to [0, 0] when all replies share a class.
    The richer world gives the upper end room for classes the sample cannot show; the union of
    reflected and unreflected bootstrap shapes holds both near the maximum entropy of a few classes and
    in the undersampled regime. Measured at level 0.95 (old normal interval / two-level mean in
    brackets): Zipf over 200, 16 states × N = 20: coverage 0.96, width 0.99 (0.45); [.9, .1], one state,
    N = 10: 0.96 (0.58), N = 20: 0.96 (0.77); every cell at N ≥ 20 covers 0.88–1.00, over-covering
    near-uniform few-class distributions (1.00). N = 10 on a long tail stays short (0.7 + tail of 50,
    16 states: 0.62): flagged low-confidence. Full table: ``docs/estimator-coverage.md``.

    Lower bound only: where a state's replies are nearly all distinct (Chao–Jost sample coverage below
    ``MIN_ENTROPY_COVERAGE`` = 0.5, i.e. more than half of the probability mass is in classes no reply
    showed), the classes not seen could be any number and carry any entropy, so an upper end would be a
    guess that reads as measured (20 distinct replies: the richer assemblage said at most 7.2 nats,
    while uniform over 10⁵ classes would give 11.5). Then ``ci95[1]`` is ``None``, ``lower_bound_only``
    is set and the note says why; the lower end is at most the collision bound H ≥ −log Σp² of
    :func:`_collision_entropy_floor`, which needs no guess of the unseen classes either (the bootstrap's
    lower end missed uniform over 57 at N = 20 in 0.14 of draws). A mean over states is a lower bound
    only when every one of its states is; where only some are, the statement narrows for those states
    alone: the mean keeps its upper end, those states enter it through the richer assemblage (at most
    the Chao1 upper limit of unseen classes) and their collision bound, and the note names them.

    Args:
        counts_list: class counts of each state.
        level: confidence level in (0, 1).
        seed: seed of the bootstrap.

    Example:
        >>> r = mean_entropy_interval([[20], [19, 1]])
        >>> r.ci95[0] <= r.estimate < r.ci95[1] and r.ci95[1] > 0
        True
        >>> mean_entropy_interval([[1] * 20, [1] * 20]).ci95[1] is None
        True
        >>> mean_entropy_interval([[20], [1] * 20]).ci95[1] is None  # one state short: that state's statement narrows
        False
    """
    return _entropy_interval(counts_list, level, seed, MIN_ENTROPY_COVERAGE)


def _entropy_interval(
    counts_list: Sequence[Any], level: float, seed: int, min_coverage: float | None
) -> IntervalEstimate:
    """:func:`mean_entropy_interval`; ``min_coverage=None`` is the earlier interval, two-sided everywhere."""
    _check(level, seed)
    cs, ns = _counts_matrix(counts_list, "counts_list")
    alpha = 1.0 - level
    ests = np.array([_cwj_rows(c[None, :], int(n))[0] for c, n in zip(cs, ns, strict=True)])
    est = float(ests.mean())
    piv = _entropy_pivots(cs, ns, alpha, np.random.default_rng(seed)).mean(axis=1)
    lo, hi = _entropy_from_pivots(est, piv, alpha)
    # A state whose N replies all share one class: N identical draws have probability >= α/2 only if
    # the other mass is below w = 1 − (α/2)^(1/N), so its entropy may be as high as that of (1 − w, w)
    # (exact inversion). The bootstrap cannot see this, as every resample repeats the one class.
    w = 1.0 - (alpha / 2) ** (1.0 / ns.astype(np.float64))
    single = np.array([c.size == 1 for c in cs])
    floor = np.where(single, -(w * np.log(w) + (1 - w) * np.log1p(-w)), ests)
    hi = max(hi, float(floor.mean()))
    # Nearly all replies distinct: the unseen classes could be any number, so the entropy has no honest
    # upper end (the Chao1-based assemblage would print one that reads as measured), and the bootstrap's
    # lower end rests on an extrapolated assemblage; the collision bound holds without one.
    unbounded = np.array([min_coverage is not None and sample_coverage(c, "chao_jost") < min_coverage for c in cs])
    if unbounded.any():
        collision = [_collision_entropy_floor(c, int(n), alpha / 2) for c, n in zip(cs, ns, strict=True)]
        lo = min(lo, float(np.mean(np.where(unbounded, np.minimum(collision, ests), ests))))
    # Only a mean whose every state is nearly all distinct loses its upper end; where some are, the upper
    # end stands and the note says which states' share of it rests on the assemblage's unseen classes.
    only_lower = bool(unbounded.all())
    note = ENTROPY_NOTE
    if only_lower:
        note = f"{ENTROPY_NOTE}; {ENTROPY_LOWER_BOUND_NOTE}"
    elif unbounded.any():
        which = ", ".join(str(i) for i in np.nonzero(unbounded)[0][:10]) + (", …" if unbounded.sum() > 10 else "")
        note = f"{ENTROPY_NOTE}; {PARTLY_BOUNDED_NOTE.format(k=int(unbounded.sum()), s=len(cs), which=which)}"
    return IntervalEstimate(
        estimate=est,
        ci95=[float(min(lo, est)), None if only_lower else float(max(hi, est))],
        method=ENTROPY_METHOD,
        plugin=float(np.mean([entropy_plugin(c) for c in cs])),
        level=level,
        n=int(ns.min()),
        n_states=len(cs),
        low_confidence=bool(ns.min() < MIN_CONFIDENT_SAMPLES),
        note=note,
        lower_bound_only=only_lower,
    )


def entropy_interval(counts: Any, level: float = 0.95, seed: int = 0) -> IntervalEstimate:
    """Shannon entropy (nats) of one state: Chao–Wang–Jost with the interval of :func:`mean_entropy_interval`.

    Example:
        >>> r = entropy_interval([20])
        >>> r.estimate, r.ci95[0], r.ci95[1] > 0.3
        (0.0, 0.0, True)
    """
    return mean_entropy_interval([counts], level=level, seed=seed)


def entropy_intervals(counts_list: Sequence[Any], level: float = 0.95, seed: int = 0) -> list[IntervalEstimate]:
    """:func:`entropy_interval` of each state (independent seeds derived from ``seed``)."""
    _check(level, seed)
    return [entropy_interval(c, level=level, seed=seed + i) for i, c in enumerate(counts_list)]
