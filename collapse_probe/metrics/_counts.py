"""Class counts and the pieces of the estimators that the intervals share: validation of counts,
the plug-in entropy, the Chao-Wang-Jost terms and the Chao et al. (2013) extended assemblage.

Both :mod:`~collapse_probe.metrics.estimators` (point estimates) and
:mod:`~collapse_probe.metrics._intervals` (bias-aware intervals) build on these, so they live below
both and neither imports the other's private helpers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from collapse_probe.errors import ConfigError

Counts = Sequence[int] | np.ndarray | Mapping[Any, int]
"""Class counts: a sequence/array of non-negative ints, or a ``{label: count}`` mapping."""

MIN_CONFIDENT_SAMPLES = 20
"""Below this many responses per state an estimate is flagged low-confidence in reports."""


def as_counts(counts: Counts, name: str = "counts") -> np.ndarray:
    """Validate class counts and return them as a 1-D int64 array with the zero classes dropped.

    Args:
        counts: a sequence/array of non-negative integers or a ``{label: count}`` mapping.
        name: what to call the argument in error messages.

    Raises:
        ConfigError: if the counts are not a non-empty 1-D collection of non-negative integers with a
            positive total.
    """
    if isinstance(counts, Mapping):
        counts = list(counts.values())
    try:
        arr = np.asarray(counts)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name}: expected a 1-D collection of non-negative integers ({exc})") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ConfigError(f"{name}: expected a non-empty 1-D collection of class counts, got shape {arr.shape}")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ConfigError(f"{name}: expected integer class counts, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ConfigError(f"{name}: class counts must be whole numbers, got {arr.tolist()}")
    arr = arr.astype(np.int64)
    if np.any(arr < 0):
        raise ConfigError(f"{name}: class counts must be >= 0, got {arr.tolist()}")
    if arr.sum() == 0:
        raise ConfigError(f"{name}: no responses (all class counts are 0)")
    return arr[arr > 0]


def entropy_plugin(counts: Counts) -> float:
    """Plug-in (maximum-likelihood) Shannon entropy −Σ p̂ log p̂, in nats. Biased low at small N.

    Example:
        >>> round(entropy_plugin([1, 1]), 6)
        0.693147
    """
    c = as_counts(counts)
    p = c / c.sum()
    return float(-np.sum(p * np.log(p)))


def cwj_a(n: int, f1: int, f2: int) -> float:
    """The A term of Chao, Wang & Jost (2013), from singletons f1 and doubletons f2."""
    if f2 > 0:
        return 2.0 * f2 / ((n - 1) * f1 + 2.0 * f2)
    if f1 > 0:
        return 2.0 / ((n - 1) * (f1 - 1) + 2.0)
    return 1.0


def cwj_tail(a: float, n: int) -> float:
    """(1 − A)^(1−N) · (−log A − Σ_{r=1}^{N−1} (1 − A)^r / r), computed stably.

    The bracket is the tail Σ_{r≥N} z^r/r of the series −log A = Σ_{r≥1} z^r/r with z = 1 − A, so
    the product equals Σ_{j≥1} z^j/(j + N − 1). The literal form overflows ((1 − A)^(1−N)) and
    cancels for large N; it is used only when A·N < 1, where it is accurate.
    """
    z = 1.0 - a
    if a * n < 1.0:
        r = np.arange(1, n, dtype=np.float64)
        bracket = -math.log(a) - float(np.sum(z**r / r))
        return math.exp((1 - n) * math.log1p(-a)) * bracket
    # Terms decay like z^j = e^{j log z}; stop once they are below e^-40 of the first.
    j = np.arange(1, int(math.ceil(40.0 / a)) + 2, dtype=np.float64)
    return float(np.sum(z**j / (j + n - 1)))


def extended_assemblage(c: np.ndarray) -> np.ndarray:
    """Chao et al. (2013) bootstrap population: observed classes shrunk for coverage, plus unseen ones.

    Detected class k gets p̃_k = (X_k/N)(1 − λ e^{−X_k}), with λ chosen so that the detected mass
    equals the estimated coverage Ĉ (Chao–Jost), which shrinks rare classes more than common ones;
    the missing mass 1 − Ĉ is spread evenly over f̂0 unseen classes, f̂0 from Chao1
    ((N−1)/N · f1²/(2 f2), or (N−1)/N · f1(f1−1)/2 when f2 = 0).
    """
    n = int(c.sum())
    f1 = int(np.sum(c == 1))
    f2 = int(np.sum(c == 2))
    p = c / n
    cov = 1.0 - f1 / n * (1.0 - cwj_a(n, f1, f2))
    if f1 == 0 or cov >= 1.0:
        return p
    f0 = (n - 1) / n * (f1 * f1 / (2.0 * f2) if f2 > 0 else f1 * (f1 - 1) / 2.0)
    f0_int = int(math.ceil(f0))
    if f0_int == 0:
        return p
    lam = (1.0 - cov) / float(np.sum(p * np.exp(-n * p)))
    detected = np.clip(p * (1.0 - lam * np.exp(-n * p)), 0.0, None)
    out = np.concatenate([detected, np.full(f0_int, (1.0 - cov) / f0_int)])
    return out / out.sum()


def sample_coverage(counts: Counts, method: str = "turing") -> float:
    """Estimated sample coverage: the probability mass of the classes already observed.

    - ``"turing"``: Good–Turing C = 1 − f1/N (f1 = number of classes seen exactly once).
    - ``"chao_jost"``: Chao & Jost (2012) C = 1 − (f1/N)·(1 − A), with A the same f1/f2 term as in
      :func:`entropy_chao_wang_jost`; less biased when f2 is small.

    Example:
        >>> sample_coverage([3, 1, 1, 5])
        0.8
    """
    c = as_counts(counts)
    n = int(c.sum())
    f1 = int(np.sum(c == 1))
    if method == "turing":
        return 1.0 - f1 / n
    if method == "chao_jost":
        return 1.0 - f1 / n * (1.0 - cwj_a(n, f1, int(np.sum(c == 2))))
    raise ConfigError(f"method must be 'turing' or 'chao_jost', got {method!r}")
