"""Embedding- and text-level diversity of N responses: Vendi score, distinct-n, mean pairwise cosine.

These complement the class-count estimators when no partition is wanted: the Vendi score is the
effective number of distinct responses under a similarity kernel (Friedman & Dieng 2023), here with
the cosine kernel on sentence embeddings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from collapse_probe.core._constraints import Integer, OneOf, check_value
from collapse_probe.errors import ConfigError
from collapse_probe.metrics.estimators import HILL_ORDER

__all__ = ["distinct_n", "mean_pairwise_cosine", "normalize_rows", "vendi_eigenvalues", "vendi_score"]


def normalize_rows(X: np.ndarray | Sequence[Sequence[float]], name: str = "X") -> np.ndarray:
    """Return ``X`` as a float64 (n, d) array with unit-norm rows.

    Raises:
        ConfigError: if ``X`` is not a non-empty 2-D finite array or has an all-zero row.
    """
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ConfigError(f"{name}: expected a non-empty 2-D array of embeddings (n, d), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ConfigError(f"{name}: embeddings contain NaN or inf")
    norms = np.linalg.norm(arr, axis=1)
    if np.any(norms == 0):
        raise ConfigError(f"{name}: rows {np.flatnonzero(norms == 0).tolist()[:10]} are all-zero embeddings")
    return arr / norms[:, None]


def vendi_eigenvalues(X: np.ndarray | Sequence[Sequence[float]], method: str = "auto") -> np.ndarray:
    """Eigenvalues of K/n for the cosine kernel K = X̂ X̂ᵀ (X̂ = row-normalised X); they sum to 1.

    K/n = X̂ X̂ᵀ/n (n × n) and the d × d dual X̂ᵀ X̂/n have the same non-zero eigenvalues, so when
    d < n the dual is used: O(n d² + d³) instead of O(n² d + n³).

    Args:
        X: (n, d) embeddings.
        method: ``"auto"`` (dual when d < n), ``"dual"`` or ``"naive"``.

    Returns:
        Non-negative eigenvalues (round-off negatives set to 0), descending.
    """
    Xn = normalize_rows(X)
    n, d = Xn.shape
    check_value(method, "method", [OneOf(("auto", "dual", "naive"))])
    use_dual = method == "dual" or (method == "auto" and d < n)
    gram = (Xn.T @ Xn) / n if use_dual else (Xn @ Xn.T) / n
    lam = np.linalg.eigvalsh(gram)
    return np.clip(lam, 0.0, None)[::-1]


def vendi_score(X: np.ndarray | Sequence[Sequence[float]], q: float = 1, method: str = "auto") -> float:
    """Vendi score of order q: the Hill number of the eigenvalues λ of K/n (cosine kernel).

    VS_q = exp(H_q(λ)) with H_q the Rényi entropy: VS_1 = exp(−Σ λ log λ) (the von Neumann
    entropy of K/n, Friedman & Dieng 2023), VS_q = (Σ λ^q)^{1/(1−q)}, VS_∞ = 1/max λ. It ranges from
    1 (all responses identical) to n (mutually orthogonal embeddings); q orders sensitivity to rare
    directions exactly as Hill numbers do for classes. Zero eigenvalues are excluded (0 log 0 = 0).

    Args:
        X: (n, d) embeddings; rows are normalised, so scale does not matter.
        q: order ≥ 0, or ``float("inf")``.
        method: eigenvalue route, see :func:`vendi_eigenvalues`.

    Example:
        >>> vendi_score([[1.0, 0.0], [2.0, 0.0]])
        1.0
        >>> round(vendi_score([[1.0, 0.0], [0.0, 1.0]], q=2), 6)
        2.0
    """
    check_value(q, "q", [HILL_ORDER])
    lam = vendi_eigenvalues(X, method=method)
    lam = lam[lam > 1e-12]
    lam = lam / lam.sum()
    if q == 1:
        return float(np.exp(-np.sum(lam * np.log(lam))))
    if math.isinf(q):
        return float(1.0 / lam.max())
    return float(np.sum(lam**q) ** (1.0 / (1.0 - q)))


def mean_pairwise_cosine(X: np.ndarray | Sequence[Sequence[float]]) -> float:
    """Mean cosine similarity over the n(n−1)/2 distinct pairs of embeddings (high = homogeneous).

    Computed in O(n d) from Σ_{i≠j} x̂_i·x̂_j = ‖Σ_i x̂_i‖² − n.

    Example:
        >>> mean_pairwise_cosine([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
        0.3333333333333333
    """
    Xn = normalize_rows(X)
    n = Xn.shape[0]
    if n < 2:
        raise ConfigError(f"X: mean pairwise cosine needs at least 2 embeddings, got {n}")
    s = Xn.sum(axis=0)
    return float((s @ s - n) / (n * (n - 1)))


def distinct_n(texts: Sequence[str], n: int = 2) -> float | None:
    """Distinct-n: unique n-grams / total n-grams over all texts (Li et al. 2016).

    Tokens are whitespace-separated words after casefolding. Texts shorter than n words contribute
    no n-grams.

    Args:
        texts: the responses.
        n: n-gram order ≥ 1.

    Returns:
        The ratio in (0, 1], or ``None`` if no text has n words (the ratio is undefined).

    Example:
        >>> distinct_n(["I will donate", "I will not"], 1)
        0.6666666666666666
    """
    check_value(n, "n", [Integer(1)])
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise ConfigError("texts: expected a sequence of strings")
    total = 0
    seen: set[tuple[str, ...]] = set()
    for t in texts:
        toks = t.casefold().split()
        grams = [tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)]
        total += len(grams)
        seen.update(grams)
    if total == 0:
        return None
    return len(seen) / total
