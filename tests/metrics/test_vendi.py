"""Vendi score, distinct-n and mean pairwise cosine against invariants and hand values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.metrics import distinct_n, mean_pairwise_cosine, vendi_eigenvalues, vendi_score

QS = (0.5, 1, 2, 3, float("inf"))


@pytest.mark.parametrize("q", QS)
def test_identical_rows_score_one(q):
    X = np.tile(np.random.default_rng(0).normal(size=(1, 16)), (10, 1)) * np.arange(1, 11)[:, None]
    assert vendi_score(X, q=q) == pytest.approx(1.0)


@pytest.mark.parametrize("q", QS)
def test_orthonormal_rows_score_n(q):
    Q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(32, 7)))
    assert vendi_score(Q.T, q=q) == pytest.approx(7.0)


def test_dual_equals_naive_spectrum_and_score():
    rng = np.random.default_rng(2)
    for n, d in ((60, 8), (8, 60), (30, 30)):
        X = rng.normal(size=(n, d)) + 0.5
        lam_d = vendi_eigenvalues(X, method="dual")
        lam_n = vendi_eigenvalues(X, method="naive")
        k = min(n, d)
        np.testing.assert_allclose(lam_d[:k], lam_n[:k], atol=1e-10)
        assert lam_n.sum() == pytest.approx(1.0)
        for q in QS:
            assert vendi_score(X, q=q, method="dual") == pytest.approx(vendi_score(X, q=q, method="naive"), rel=1e-8)


def test_q_is_not_ignored_hand_values():
    # Three copies of e1 and one e2: λ = (3/4, 1/4).
    X = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert vendi_score(X, q=1) == pytest.approx(math.exp(h))
    assert vendi_score(X, q=2) == pytest.approx(1 / (0.75**2 + 0.25**2))
    assert vendi_score(X, q=float("inf")) == pytest.approx(4 / 3)
    assert vendi_score(X, q=0) == pytest.approx(2.0)
    values = [vendi_score(X, q=q) for q in (0, 1, 2, float("inf"))]
    assert len(set(np.round(values, 9))) == 4


def test_vendi_validates_input():
    with pytest.raises(ConfigError, match="all-zero"):
        vendi_score([[0.0, 0.0], [1.0, 0.0]])
    with pytest.raises(ConfigError, match="2-D"):
        vendi_score([1.0, 2.0])
    with pytest.raises(ConfigError, match="q"):
        vendi_score([[1.0, 0.0]], q=-1)
    with pytest.raises(ConfigError, match="method"):
        vendi_eigenvalues([[1.0, 0.0]], method="svd")


def test_mean_pairwise_cosine_matches_pairwise_loop():
    X = np.random.default_rng(3).normal(size=(9, 5))
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    naive = np.mean([Xn[i] @ Xn[j] for i, j in itertools.combinations(range(9), 2)])
    assert mean_pairwise_cosine(X) == pytest.approx(naive)
    assert mean_pairwise_cosine([[1, 0], [2, 0]]) == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="at least 2"):
        mean_pairwise_cosine([[1.0, 0.0]])


def test_distinct_n_hand_values():
    texts = ["I will donate", "I will not donate"]
    assert distinct_n(texts, 1) == pytest.approx(4 / 7)  # i, will, donate, not
    assert distinct_n(texts, 2) == pytest.approx(4 / 5)  # (i will) repeats
    assert distinct_n(["No", "no"], 1) == pytest.approx(0.5)
    assert distinct_n(["No"], 2) is None
    with pytest.raises(ConfigError):
        distinct_n("a string", 1)
    with pytest.raises(ConfigError):
        distinct_n(["a"], 0)
