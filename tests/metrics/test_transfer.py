"""Mean CI, paired cluster bootstrap and transfer ratio against hand values and known truth."""

from __future__ import annotations

import numpy as np
import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.metrics import cluster_bootstrap_diff, mean_ci, transfer_ratio


def test_mean_ci_hand_value():
    e = mean_ci([1.0, 2.0, 3.0])
    half = 4.302652729911275 / np.sqrt(3)  # t_{2, 0.975} · s / √n with s = 1
    assert e.value == 2.0 and e.lo == pytest.approx(2 - half) and e.hi == pytest.approx(2 + half)
    one = mean_ci([0.7])
    assert one.value == 0.7 and one.lo is None and one.note


def test_mean_ci_coverage_on_normal_data():
    hits = sum(mean_ci(np.random.default_rng(s).normal(0.3, 1.0, size=10)).contains(0.3) for s in range(300))
    assert 0.92 <= hits / 300 <= 0.98


def test_cluster_bootstrap_diff_hand_estimate_and_pairing_by_key():
    a = {"t1": [1.0, 1.0], "t2": [1.0, 0.0]}
    b = {"t2": [1.0, 0.0], "t1": [0.0, 0.0]}
    e = cluster_bootstrap_diff(a, b, n_boot=500)
    assert e.value == pytest.approx(0.75 - 0.25)
    assert e.lo <= e.value <= e.hi
    assert e.n == 2


def test_paired_cluster_bootstrap_cancels_task_difficulty():
    rng = np.random.default_rng(0)
    difficulty = rng.uniform(0, 1, size=40)
    b = [list(d + rng.normal(0, 0.01, size=4)) for d in difficulty]
    a = [list(np.array(x) + 0.1) for x in b]
    e = cluster_bootstrap_diff(a, b, n_boot=1000, seed=1)
    assert e.value == pytest.approx(0.1)
    assert e.hi - e.lo < 0.01  # tasks vary by ~0.3 but the paired difference does not


def test_cluster_bootstrap_diff_validates_pairing():
    with pytest.raises(ConfigError, match="same tasks"):
        cluster_bootstrap_diff({"t1": [1.0]}, {"t2": [1.0]})
    with pytest.raises(ConfigError, match="paired"):
        cluster_bootstrap_diff([[1.0], [0.0]], [[1.0]])
    with pytest.raises(ConfigError, match="no rewards"):
        cluster_bootstrap_diff([[1.0], []], [[1.0], [0.0]])


def test_transfer_ratio_hand_value_and_ci():
    e = transfer_ratio([[0.5, 0.5], [0.25, 0.25], [0.3]], [[1.0, 1.0], [0.5, 0.5], [0.6]], n_boot=500)
    assert e.value == pytest.approx(((0.5 + 0.5 + 0.25 + 0.25 + 0.3) / 5) / ((1 + 1 + 0.5 + 0.5 + 0.6) / 5))
    assert e.lo <= e.value <= e.hi


def test_transfer_ratio_undefined_when_training_mean_is_zero():
    e = transfer_ratio([[0.5], [0.2]], [[0.0], [0.0]])
    assert e.value is None and e.lo is None and "undefined" in e.note
