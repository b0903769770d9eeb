"""Accumulated collapse error, bounds and the simulator variance share against hand computations."""

from __future__ import annotations

import numpy as np
import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.metrics import (
    accumulated_collapse_error,
    gradient_bias_bound,
    reward_variance_bound,
    simulator_variance_share,
    tv_bound,
)


def test_accumulated_collapse_error_is_mean_of_per_rollout_sums():
    assert accumulated_collapse_error([[0.1, 0.2, 0.3], [0.0], []]) == pytest.approx((0.6 + 0.0 + 0.0) / 3)
    assert accumulated_collapse_error([np.array([0.5, 0.5])]) == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [[], [[1.5]], [[-0.1]], [[float("nan")]], ["ab"]])
def test_accumulated_collapse_error_rejects_bad_input(bad):
    with pytest.raises(ConfigError, match="per_turn_eps"):
        accumulated_collapse_error(bad)


def test_bounds_hand_values():
    assert gradient_bias_bound(0.1, B=3.0, R_max=2.0) == pytest.approx(1.2)
    assert tv_bound(0.3) == 0.3 and tv_bound(2.5) == 1.0
    assert reward_variance_bound(0.2, R_max=2.0) == pytest.approx(0.8)
    with pytest.raises(ConfigError, match="R_max"):
        gradient_bias_bound(0.1, B=1.0, R_max=-1.0)


def test_variance_share_hand_computation_plugin():
    res = simulator_variance_share([[0.0, 1.0], [1.0, 1.0]])
    # within = mean(0.25, 0) = 0.125; between = var(0.5, 1) = 0.0625; total = pooled var of [0,1,1,1]
    assert res.within == pytest.approx(0.125)
    assert res.between == pytest.approx(0.0625)
    assert res.total == pytest.approx(np.var([0, 1, 1, 1]))
    assert res.share == pytest.approx(2 / 3)
    assert res.n_prefixes == 2


def test_variance_share_hand_computation_anova():
    res = simulator_variance_share([[0.0, 1.0], [1.0, 1.0]], estimator="anova")
    # within = mean(0.5, 0) = 0.25; between = var(means, ddof=1) − mean(s²/m) = 0.125 − 0.125 = 0
    assert res.within == pytest.approx(0.25)
    assert res.between == 0.0
    assert res.share == pytest.approx(1.0)


def test_variance_share_extremes():
    collapsed = simulator_variance_share([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.5, 0.5, 0.5]])
    assert collapsed.share == 0.0 and collapsed.ci == (0.0, 0.0)
    constant = simulator_variance_share([[1.0, 1.0], [1.0, 1.0]])
    assert constant.share is None and "undefined" in constant.note


def test_variance_share_recovers_scripted_components():
    # Agent prefixes with mean μ_i ~ N(0, 1); simulator noise N(0, 1): true share 0.5.
    rng = np.random.default_rng(0)
    mu = rng.normal(size=400)
    rewards = (mu[:, None] + rng.normal(size=(400, 4))).tolist()
    res = simulator_variance_share(rewards, estimator="anova", n_boot=300)
    assert res.share == pytest.approx(0.5, abs=0.06)
    assert res.ci[0] <= 0.5 <= res.ci[1]
    plug = simulator_variance_share(rewards, estimator="plugin", n_boot=300)
    # plug-in: within biased by (m−1)/m = 3/4, between by +σ²/m: 0.75 / (0.75 + 1.25) = 0.375
    assert plug.share == pytest.approx(0.375, abs=0.05)


def test_variance_share_validates():
    with pytest.raises(ConfigError, match="rewards_by_prefix"):
        simulator_variance_share([])
    with pytest.raises(ConfigError, match=r"rewards_by_prefix\[0\]"):
        simulator_variance_share([[1.0], [0.0, 1.0]], estimator="anova")
    with pytest.raises(ConfigError, match="estimator"):
        simulator_variance_share([[1.0]], estimator="mle")
