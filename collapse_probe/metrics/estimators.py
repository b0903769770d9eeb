"""Collapse estimators: pure functions over the class counts of N responses sampled at one state.

A *partitioner* (:mod:`collapse_probe.metrics.partitioners`) maps the N responses to semantic
equivalence classes; the counts of those classes are all the estimators below need. ``counts`` may be
a list or 1-D array of non-negative integers, or a mapping ``{label: count}`` (e.g. a ``Counter``).

Everything here follows the definitions in DESIGN.md ("Estimators"):

- collapse error ε = 1 − φ(a*|s, a^π) = TV(φ(·|s, a^π), δ_{a*}), estimated by ε̂ = 1 − max_count/N;
- Shannon entropy (nats) by plug-in, Miller–Madow and Chao–Wang–Jost (default);
- Hill numbers D_q, with D_∞ = 1/(1 − ε);
- the exact class distribution from log-probabilities over a closed answer set.

All metrics are registered in :data:`METRICS` with their direction (``higher_is_better``), which is
what a regression gate needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from scipy.special import digamma, logsumexp
from scipy.stats import norm

from collapse_probe.core._constraints import Integer, Number, check_value
from collapse_probe.core._plugins import Registry
from collapse_probe.errors import ConfigError
from collapse_probe.metrics._counts import MIN_CONFIDENT_SAMPLES, Counts, as_counts, entropy_plugin, sample_coverage
from collapse_probe.metrics._counts import cwj_a as _cwj_a
from collapse_probe.metrics._counts import cwj_tail as _cwj_tail
from collapse_probe.metrics._counts import extended_assemblage as _extended_assemblage
from collapse_probe.metrics._intervals import (
    IntervalEstimate,
    bootstrap_collapse_errors,
    collapse_error_interval,
    collapse_error_intervals,
    decisive_sample_size,
    entropy_interval,
    entropy_intervals,
    mean_collapse_error_bootstrap,
    mean_collapse_error_interval,
    mean_entropy_interval,
    mean_with_state_se,
    wilson,
)

__all__ = [
    "METRICS",
    "MIN_CONFIDENT_SAMPLES",
    "Counts",
    "IntervalEstimate",
    "MetricInfo",
    "as_counts",
    "bootstrap_collapse_errors",
    "collapse_error",
    "collapse_error_ci",
    "collapse_error_corrected",
    "collapse_error_interval",
    "collapse_error_intervals",
    "decisive_sample_size",
    "entropy",
    "entropy_chao_wang_jost",
    "entropy_ci",
    "entropy_interval",
    "entropy_intervals",
    "entropy_miller_madow",
    "entropy_plugin",
    "exact_class_distribution",
    "exact_collapse_error",
    "get_metric",
    "higher_is_better",
    "hill_number",
    "low_confidence",
    "mean_collapse_error_bootstrap",
    "mean_collapse_error_interval",
    "mean_entropy_interval",
    "mean_with_state_se",
    "sample_coverage",
]


# --------------------------------------------------------------------------------------------------
# input validation


HILL_ORDER = Number(ge=0, inf=True, numpy=True)
"""What the order ``q`` of a Hill number (and of a Vendi score) accepts: a number >= 0, or inf."""


def _check_level(level: float) -> None:
    check_value(level, "level", [Number(gt=0, lt=1, numpy=True)])


def _check_n_boot(n_boot: int) -> None:
    check_value(n_boot, "n_boot", [Integer(10, numpy=True)])


# --------------------------------------------------------------------------------------------------
# collapse error


def collapse_error(counts: Counts) -> float:
    """Plug-in collapse error ε̂ = 1 − max_count / N.

    ε(s, a^π) = 1 − φ(a*|s, a^π) is the total-variation distance between the simulator's response
    distribution over equivalence classes and the point mass on its modal class a*. Small ε means
    collapsed. The plug-in estimate is biased *low* (towards "collapsed") when several classes are
    close to modal, most strongly for diverse simulators at small N; see
    :func:`collapse_error_corrected` and :func:`collapse_error_ci`.

    Example:
        >>> collapse_error([6, 3, 1])
        0.4
        >>> collapse_error([20])
        0.0
    """
    c = as_counts(counts)
    return float(1.0 - c.max() / c.sum())


def _wilson(k: np.ndarray, n: int, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for binomial proportions ``k/n`` at normal quantile ``z``."""
    return wilson(k / n, n, z)


def _bootstrap_collapse_errors(c: np.ndarray, n_boot: int, seed: int, p: np.ndarray | None = None) -> np.ndarray:
    """ε̂ of ``n_boot`` multinomial resamples of the N responses (one vectorised draw)."""
    n = int(c.sum())
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, c / n if p is None else p, size=n_boot)
    return 1.0 - draws.max(axis=1) / n


def collapse_error_ci(
    counts: Counts,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    method: str = "wilson_max",
) -> tuple[float, float]:
    """Confidence interval for the collapse error ε = 1 − max_k p_k (the earlier per-state interval).

    Reports use :func:`collapse_error_interval` instead, which holds its level on uniform simulators
    where ``wilson_max`` does not (uniform over 10 at N = 10 / 20 / 50: 0.873 / 0.894 / 0.913, every
    miss on the "more collapsed" side; ``docs/estimator-coverage.md``).

    Methods:

    - ``"wilson_max"`` (default, analytic; ``n_boot``/``seed`` unused): Wilson score intervals
      [L_k, U_k] for every observed class proportion. The upper bound of max p is max_k U_k at
      α/2: it fails only if the *true* modal class's own interval fails, so no multiplicity
      correction is needed. The lower bound of max p is max_k L_k, Bonferroni-corrected over the
      M classes that could plausibly be modal (U_k ≥ L of the observed modal class, both at α/2),
      because it fails if *any* class's lower bound overshoots max p. With one clear mode M = 1
      and the interval is the Wilson interval of the modal class. The interval always contains ε̂.
    - ``"percentile"``: percentile bootstrap of ε̂ under multinomial resampling of the N responses.
    - ``"basic"``: basic (reverse-percentile) bootstrap, 2ε̂ − quantiles, which undoes the bias of
      the max to first order.

    Why not the percentile bootstrap: max_k p̂_k is biased upwards when classes tie, and resampling
    adds the same bias again, so the percentile interval sits on the wrong side of the truth.
    Measured coverage at level 0.95 over 400 seeds, N = 400 (N = 30 in brackets)::

        true p              wilson_max     percentile     basic
        (.6, .3, .1)        .95 (.98)      .95 (.98)      .94 (.80)
        (.4, .4, .2)        .96 (.98)      .78 (.86)      .94 (.93)
        (.45, .4, .15)      .97 (.97)      .97 (.87)      .85 (.92)
        uniform over 3      .96 (.97)      .00 (.09)      .91 (.95)
        uniform over 10     .96 (.92)      .00 (.00)      .90 (.97)
        (.97, .03)          .94 (.93)      .96 (.64)      .95 (.65)
        Zipf over 20        .95 (.98)      .94 (.98)      .95 (.81)

    ``wilson_max`` is the only method that holds its level across ties, collapse and small N
    (``tests/metrics/test_estimators.py`` re-checks it at N = 400 over 200 seeds).

    Args:
        counts: class counts of the N responses at one state.
        n_boot: bootstrap resamples (bootstrap methods only).
        level: confidence level in (0, 1).
        seed: seed of the bootstrap resampling (bootstrap methods only).
        method: ``"wilson_max"``, ``"percentile"`` or ``"basic"``.

    Returns:
        ``(lo, hi)`` with 0 ≤ lo ≤ hi ≤ 1.

    Example:
        >>> lo, hi = collapse_error_ci([200, 120, 80])
        >>> round(lo, 3), round(hi, 3)
        (0.451, 0.549)
    """
    c = as_counts(counts)
    _check_level(level)
    n = int(c.sum())
    alpha = 1.0 - level
    if method == "wilson_max":
        z = float(norm.ppf(1 - alpha / 2))
        lo_k, hi_k = _wilson(c, n, z)
        upper_max_p = float(hi_k.max())
        plausible = int(np.sum(hi_k >= lo_k[int(c.argmax())]))
        z_m = float(norm.ppf(1 - alpha / (2 * plausible)))
        lower_max_p = float(_wilson(c, n, z_m)[0].max())
        return max(0.0, 1.0 - upper_max_p), min(1.0, 1.0 - lower_max_p)
    if method in ("percentile", "basic"):
        _check_n_boot(n_boot)
        boot = _bootstrap_collapse_errors(c, n_boot, seed)
        q_lo, q_hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
        if method == "percentile":
            return float(q_lo), float(q_hi)
        est = 1.0 - c.max() / n
        return float(max(0.0, 2 * est - q_hi)), float(min(1.0, 2 * est - q_lo))
    raise ConfigError(f"method must be one of 'wilson_max', 'percentile', 'basic'; got {method!r}")


def collapse_error_corrected(counts: Counts, n_boot: int = 2000, seed: int = 0) -> float:
    """Bias-corrected collapse error: ε̂_BC = 2ε̂ − E*[ε̂*], clipped to [0, 1].

    E*[ε̂*] is the mean plug-in estimate over ``n_boot`` multinomial resamples of the N responses
    (bootstrap bias correction, Efron & Tibshirani 1993, ch. 10). The plug-in ε̂ is biased low
    because E[max_k p̂_k] ≥ max_k p_k when several classes are near-modal; the correction subtracts
    the same bias measured one level down. With one dominant class it changes nothing (bias ≈ 0);
    for diverse simulators at small N it removes most of the bias (measured over 300 seeds, N = 20:
    uniform over 50 classes, bias −0.096 → −0.022; uniform over 10, −0.120 → −0.057; a collapsed
    p = (.9, 100 × .001), +0.010 → +0.010).

    Why not the delete-one jackknife: the maximum is not smooth, and the jackknife of ε̂ is
    degenerate. With a unique modal count M the leave-one-out values average exactly to ε̂
    (correction 0, whatever the runner-up counts); with a tie at M they all equal 1 − M/(N − 1) and
    the jackknife returns exactly 1.

    The coverage (Good–Turing) view: the sample coverage C = 1 − f1/N (:func:`sample_coverage`)
    estimates the probability mass of the classes already observed, so 1 − C estimates the mass of
    classes not yet seen, all of which lies outside the mode. Small C flags that N is too small for
    ε̂ to be trusted. Rescaling every class by C (Chao–Shen) is *not* used for ε: the unseen mass
    is taken from the rare classes, not from the mode, and the rescaled 1 − C·max p̂ overstates ε for
    collapsed simulators (bias +0.10 on the collapsed example above).

    Args:
        counts: class counts of the N responses at one state.
        n_boot: bootstrap resamples.
        seed: seed of the resampling (the result is deterministic given it).

    Example:
        >>> collapse_error_corrected([20])
        0.0
        >>> collapse_error_corrected([1] * 10) > collapse_error([1] * 10)
        True
    """
    c = as_counts(counts)
    _check_n_boot(n_boot)
    est = 1.0 - c.max() / c.sum()
    if c.size == 1:
        return 0.0
    boot = _bootstrap_collapse_errors(c, n_boot, seed)
    return float(np.clip(2 * est - boot.mean(), 0.0, 1.0))


def low_confidence(n: int) -> bool:
    """True when N responses per state are too few (N < :data:`MIN_CONFIDENT_SAMPLES`) to trust ε̂.

    Example:
        >>> low_confidence(10), low_confidence(20)
        (True, False)
    """
    check_value(n, "n", [Integer(0, numpy=True, why="a number of samples")])
    return int(n) < MIN_CONFIDENT_SAMPLES


# --------------------------------------------------------------------------------------------------
# entropy (nats)


def entropy_miller_madow(counts: Counts) -> float:
    """Miller–Madow entropy: plug-in + (K_obs − 1)/(2N), in nats (first-order bias correction).

    Example:
        >>> round(entropy_miller_madow([1, 1]), 6)
        0.943147
    """
    c = as_counts(counts)
    return entropy_plugin(c) + (c.size - 1) / (2.0 * float(c.sum()))


def entropy_chao_wang_jost(counts: Counts) -> float:
    """Chao–Wang–Jost (2013) entropy estimator, in nats (the default small-sample estimator).

    Chao, A., Wang, Y. T. & Jost, L. (2013), "Entropy and the species accumulation curve: a novel
    entropy estimator via discovery rates of new species", Methods Ecol. Evol. 4, 1091–1100, eq. 7::

        Ĥ = Σ_{1≤X_i≤N−1} (X_i/N) Σ_{k=X_i}^{N−1} 1/k
            + (f1/N) (1 − A)^{1−N} (−log A − Σ_{r=1}^{N−1} (1 − A)^r / r)

        A = 2 f2 / ((N − 1) f1 + 2 f2)          if f2 > 0
          = 2 / ((N − 1)(f1 − 1) + 2)           if f2 = 0, f1 > 0
          = 1                                    if f1 = f2 = 0

    with f1, f2 the numbers of classes seen once and twice; Σ_{k=X}^{N−1} 1/k = ψ(N) − ψ(X). The
    second term (mass of unseen classes) vanishes when A = 1.

    Example:
        >>> round(entropy_chao_wang_jost([2, 1, 1]), 6)
        1.58746
    """
    c = as_counts(counts)
    n = int(c.sum())
    f1 = int(np.sum(c == 1))
    f2 = int(np.sum(c == 2))
    h = float(np.sum(c * (digamma(n) - digamma(c)))) / n
    a = _cwj_a(n, f1, f2)
    if f1 > 0 and a != 1.0:
        h += f1 / n * _cwj_tail(a, n)
    return h


_ENTROPY_ESTIMATORS: dict[str, Callable[[Counts], float]] = {
    "chao_wang_jost": entropy_chao_wang_jost,
    "miller_madow": entropy_miller_madow,
    "plugin": entropy_plugin,
}


def entropy(counts: Counts, estimator: str = "chao_wang_jost") -> float:
    """Shannon entropy of the class distribution in nats, by the named estimator.

    Args:
        counts: class counts.
        estimator: ``"chao_wang_jost"`` (default), ``"miller_madow"`` or ``"plugin"``.
    """
    return _entropy_estimator(estimator)(counts)


def _entropy_estimator(estimator: str) -> Callable[[Counts], float]:
    if estimator not in _ENTROPY_ESTIMATORS:
        raise ConfigError(f"estimator must be one of {sorted(_ENTROPY_ESTIMATORS)}, got {estimator!r}")
    return _ENTROPY_ESTIMATORS[estimator]


def entropy_ci(
    counts: Counts,
    estimator: str = "chao_wang_jost",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Confidence interval for the Shannon entropy (nats): estimate ± z·ŝe, lower end clipped at 0.

    Reports use :func:`entropy_interval` instead: this normal interval is centred on an estimate that
    is still short on long tails and collapses to [0, 0] when every reply shares one class ([.9, .1]
    at N = 10: coverage 0.58; ``docs/estimator-coverage.md``).

    ŝe is the standard deviation of the estimator over ``n_boot`` multinomial samples of size N drawn
    from the *extended* assemblage of Chao et al. (2013) — the observed classes shrunk to the
    estimated coverage plus the estimated unseen classes — because resampling only the observed
    classes understates the variability when many classes are unseen. A normal interval around the
    bias-corrected estimate is used rather than bootstrap percentiles, which would inherit the
    estimator's small-sample bias.

    Args:
        counts: class counts.
        estimator: ``"chao_wang_jost"`` (default), ``"miller_madow"`` or ``"plugin"``.
        n_boot: bootstrap samples.
        level: confidence level in (0, 1).
        seed: seed of the resampling.

    Returns:
        ``(lo, hi)``.
    """
    c = as_counts(counts)
    fn = _entropy_estimator(estimator)
    _check_level(level)
    _check_n_boot(n_boot)
    est = fn(c)
    population = _extended_assemblage(c)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(int(c.sum()), population, size=n_boot)
    boot = np.array([fn(d[d > 0]) for d in draws])
    se = float(boot.std(ddof=1))
    z = float(norm.ppf(1 - (1 - level) / 2))
    return max(0.0, est - z * se), est + z * se


# --------------------------------------------------------------------------------------------------
# Hill numbers


def hill_number(counts: Counts, q: float) -> float:
    """Plug-in Hill number (effective number of classes) D_q = (Σ p_k^q)^{1/(1−q)}.

    - q = 0: number of observed classes;
    - q = 1: exp(H) with the plug-in entropy H;
    - q = 2: 1/Σ p²  (inverse Simpson);
    - q = ∞: 1/max p = 1/(1 − ε̂)  (Berger–Parker), so D_∞ and the collapse error carry the same
      information.

    Args:
        counts: class counts.
        q: order, any real q ≥ 0 or ``float("inf")``.

    Example:
        >>> hill_number([2, 2, 2, 2], 2), hill_number([6, 3, 1], float("inf"))
        (4.0, 1.6666666666666667)
    """
    c = as_counts(counts)
    check_value(q, "q", [HILL_ORDER])
    p = c / c.sum()
    if q == 0:
        return float(c.size)
    if q == 1:
        return float(np.exp(-np.sum(p * np.log(p))))
    if math.isinf(q):
        return float(1.0 / p.max())
    return float(np.sum(p**q) ** (1.0 / (1.0 - q)))


# --------------------------------------------------------------------------------------------------
# exact class distributions from log-probabilities


def exact_class_distribution(
    logprobs: Mapping[Hashable, float],
    label_of: Callable[[Hashable], Hashable] | None = None,
) -> dict[Hashable, float]:
    """Exact class distribution over a closed answer set: softmax of the answers' log-probabilities.

    Where a local model scores every answer of a closed set (e.g. each donation amount), the class
    distribution is computed exactly instead of sampled: p(a) = exp(ℓ_a) / Σ_b exp(ℓ_b), i.e. the
    model's distribution conditioned on answering inside the set.

    Args:
        logprobs: ``{answer: log-probability}``; ``-inf`` means impossible.
        label_of: optional map from answer to equivalence class (e.g. ``"$1"`` and ``"$1.00"`` to
            ``"donate:$1"``); answers of one class are merged by log-sum-exp.

    Returns:
        ``{class: probability}``, summing to 1.

    Example:
        >>> exact_class_distribution({"yes": 0.0, "no": 0.0})
        {'yes': 0.5, 'no': 0.5}
    """
    if not isinstance(logprobs, Mapping) or not logprobs:
        raise ConfigError("logprobs: expected a non-empty mapping {answer: log-probability}")
    grouped: dict[Hashable, list[float]] = {}
    for answer, lp in logprobs.items():
        if isinstance(lp, bool) or not isinstance(lp, (int, float, np.integer, np.floating)) or math.isnan(lp):
            raise ConfigError(f"logprobs[{answer!r}]: expected a log-probability (float or -inf), got {lp!r}")
        if lp == math.inf:
            raise ConfigError(f"logprobs[{answer!r}]: log-probability +inf is not valid")
        label = label_of(answer) if label_of is not None else answer
        grouped.setdefault(label, []).append(float(lp))
    labels = list(grouped)
    merged = np.array([logsumexp(grouped[k]) for k in labels])
    if np.all(np.isneginf(merged)):
        raise ConfigError("logprobs: every answer has probability 0 (all log-probabilities are -inf)")
    probs = np.exp(merged - logsumexp(merged))
    return {k: float(v) for k, v in zip(labels, probs, strict=True)}


def exact_collapse_error(probs: Mapping[Hashable, float] | Sequence[float] | np.ndarray) -> float:
    """Exact collapse error ε = 1 − max_k p_k of a known class distribution.

    Args:
        probs: class probabilities (mapping or sequence), non-negative and summing to 1 (± 1e-6).

    Example:
        >>> exact_collapse_error({"donate:$1": 0.7, "refuse": 0.3})
        0.30000000000000004
    """
    values = list(probs.values()) if isinstance(probs, Mapping) else probs
    p = np.asarray(values, dtype=np.float64)
    if p.ndim != 1 or p.size == 0 or not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ConfigError(f"probs: expected non-negative finite class probabilities, got {values!r}")
    if abs(p.sum() - 1.0) > 1e-6:
        raise ConfigError(f"probs: class probabilities sum to {p.sum():.9g}, expected 1 (within 1e-6)")
    return float(1.0 - p.max())


# --------------------------------------------------------------------------------------------------
# metric registry


@dataclass(frozen=True)
class MetricInfo:
    """A registered metric: where it lives and which direction is better."""

    name: str
    target: str
    """``"module:attr"`` of the function; imported only when :meth:`load` is called."""
    higher_is_better: bool
    """True for diversity-like metrics (``*_score``, entropy), False for ``*_error``."""
    description: str

    def load(self) -> Callable[..., Any]:
        from collapse_probe.core._plugins import load_target  # the package's one loader of "module:attr" names

        return cast(Callable[..., Any], load_target(self.target, f"metric {self.name!r}"))


def _m(name: str, target: str, higher: bool, description: str) -> tuple[str, MetricInfo]:
    return name, MetricInfo(name, target, higher, description)


_E = "collapse_probe.metrics.estimators"
METRICS: Registry[MetricInfo] = Registry(
    "metric",
    entries=dict(
        [
            _m("collapse_error", f"{_E}:collapse_error", False, "1 − max_count/N (TV to the modal class)"),
            _m("collapse_error_corrected", f"{_E}:collapse_error_corrected", False, "bootstrap bias-corrected ε̂"),
            _m("exact_collapse_error", f"{_E}:exact_collapse_error", False, "1 − max p of an exact distribution"),
            _m("entropy", f"{_E}:entropy", True, "Shannon entropy (nats), Chao–Wang–Jost"),
            _m("entropy_chao_wang_jost", f"{_E}:entropy_chao_wang_jost", True, "Chao–Wang–Jost entropy (nats)"),
            _m("entropy_miller_madow", f"{_E}:entropy_miller_madow", True, "Miller–Madow entropy (nats)"),
            _m("entropy_plugin", f"{_E}:entropy_plugin", True, "plug-in entropy (nats)"),
            _m("hill_number", f"{_E}:hill_number", True, "Hill number D_q (effective number of classes)"),
            _m("sample_coverage", f"{_E}:sample_coverage", True, "estimated mass of observed classes"),
            _m("vendi_score", "collapse_probe.metrics.vendi:vendi_score", True, "Vendi score of embeddings"),
            _m("distinct_n", "collapse_probe.metrics.vendi:distinct_n", True, "unique/total n-grams"),
            _m(
                "mean_pairwise_cosine",
                "collapse_probe.metrics.vendi:mean_pairwise_cosine",
                False,
                "mean cosine similarity between responses (high = homogeneous)",
            ),
            _m(
                "accumulated_collapse_error",
                "collapse_probe.metrics.trajectory:accumulated_collapse_error",
                False,
                "ε̄_H = E[Σ_t ε_t] over rollouts",
            ),
            _m(
                "simulator_variance_share",
                "collapse_probe.metrics.trajectory:simulator_variance_share",
                True,
                "share of reward variance due to simulator randomness",
            ),
            _m(
                "transfer_ratio",
                "collapse_probe.metrics.transfer:transfer_ratio",
                True,
                "held-out / training-simulator mean reward",
            ),
        ]
    ),
)
"""Every metric by name, with its direction (the gate reads ``higher_is_better``)."""


def get_metric(name: str) -> MetricInfo:
    """Look up a registered metric; an unknown name answers with close matches and the list."""
    return METRICS.load(name)


def higher_is_better(name: str) -> bool:
    """Direction of the named metric (True for diversity scores, False for errors)."""
    return get_metric(name).higher_is_better
