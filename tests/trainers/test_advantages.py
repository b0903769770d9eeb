"""Group-relative advantages and simulator-side rewards against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.trainers.advantages import (
    batch_relative_advantages,
    curriculum_reward,
    group_relative_advantages,
    simulator_advantages,
)


def test_population_std_convention_by_hand():
    # group [0, 0, 1]: mean 1/3, population std sqrt(2)/3 (ddof=0), not sqrt(1/3) (ddof=1)
    adv, zero = group_relative_advantages(np.array([[0.0, 0.0, 1.0]]), eps=0.0)
    std = math.sqrt(2) / 3
    np.testing.assert_allclose(adv[0], [-1 / 3 / std, -1 / 3 / std, 2 / 3 / std])
    np.testing.assert_allclose(adv[0], [-1 / math.sqrt(2), -1 / math.sqrt(2), math.sqrt(2)])
    assert not zero[0]


def test_two_point_group_and_eps():
    adv, _ = group_relative_advantages(np.array([[0.0, 1.0]]), eps=0.5)
    np.testing.assert_allclose(adv, [[-0.5, 0.5]])  # (0 - 0.5) / (0.5 + 0.5)


def test_zero_std_groups_get_exact_zero_and_are_counted():
    rewards = np.array([[0.3, 0.3, 0.3], [0.1, 0.2, 0.3], [1.0, 1.0, 1.0]])
    adv, zero = group_relative_advantages(rewards, eps=0.0)
    assert zero.tolist() == [True, False, True]
    assert np.all(adv[0] == 0.0) and np.all(adv[2] == 0.0)
    assert np.all(np.isfinite(adv))
    # float noise in a tie (0.1 + 0.2 vs 0.3) is still a tie
    adv, zero = group_relative_advantages(np.array([[0.1 + 0.2, 0.3]]))
    assert zero[0] and np.all(adv == 0.0)


def test_advantages_are_zscores():
    rng = np.random.default_rng(0)
    rewards = rng.random((5, 16))
    adv, zero = group_relative_advantages(rewards, eps=0.0)
    assert not zero.any()
    np.testing.assert_allclose(adv.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(adv.std(axis=1), 1.0, atol=1e-12)
    # invariant to an affine change of the reward
    adv2, _ = group_relative_advantages(3.0 * rewards + 7.0, eps=0.0)
    np.testing.assert_allclose(adv, adv2, atol=1e-9)


def test_single_rollout_groups_are_zero_std():
    adv, zero = group_relative_advantages(np.array([[0.2], [0.9]]))
    assert zero.all() and np.all(adv == 0.0)


@pytest.mark.parametrize(
    "bad, match",
    [(np.array([0.1, 0.2]), "2-D"), (np.zeros((0, 3)), "at least one"), (np.array([[0.1, np.nan]]), "finite")],
)
def test_bad_rewards_raise_config_error(bad, match):
    with pytest.raises(ConfigError, match=match):
        group_relative_advantages(bad)


def test_negative_eps_raises():
    with pytest.raises(ConfigError, match="eps"):
        group_relative_advantages(np.array([[0.0, 1.0]]), eps=-1.0)


def test_curriculum_reward_by_hand():
    # Var([0, 1]) = 0.25 -> exp(0) = 1; Var([1, 1]) = 0 -> exp(-0.0625 / 0.02); Var([0, .5]) = 1/16
    rewards = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 0.5]])
    expected = [1.0, math.exp(-(0.25**2) / 0.02), math.exp(-((1 / 16 - 0.25) ** 2) / 0.02)]
    np.testing.assert_allclose(curriculum_reward(rewards), expected)


def test_simulator_advantages_modes():
    rewards = np.array([[0.0, 1.0, 0.5], [0.2, 0.2, 0.2]])
    coop, zero_c = simulator_advantages(rewards, "cooperative")
    adv, zero_a = simulator_advantages(rewards, "adversarial")
    np.testing.assert_allclose(adv, -coop, atol=1e-12)  # 1 - R flips the ranking exactly
    assert zero_a.tolist() == zero_c.tolist() == [False, True]
    cur, zero = simulator_advantages(rewards, "curriculum", eps=0.0)
    # one value per group, broadcast to its rollouts; two groups z-score to -1, +1
    c = curriculum_reward(rewards)
    assert np.all(cur[0] == cur[0, 0]) and np.all(cur[1] == cur[1, 0])
    assert np.sign(cur[0, 0]) == np.sign(c[0] - c[1])
    np.testing.assert_allclose(sorted([cur[0, 0], cur[1, 0]]), [-1.0, 1.0])
    assert not zero.any()
    with pytest.raises(ConfigError, match="adversarial, cooperative, curriculum"):
        simulator_advantages(rewards, "hostile")


def test_batch_relative_advantages():
    adv, tied = batch_relative_advantages(np.array([1.0, 2.0, 3.0]), eps=0.0)
    np.testing.assert_allclose(adv, np.array([-1.0, 0.0, 1.0]) / math.sqrt(2 / 3))
    assert not tied
    adv, tied = batch_relative_advantages(np.array([0.4, 0.4]))
    assert tied and np.all(adv == 0.0)
