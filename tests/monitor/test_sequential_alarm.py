"""The monitor's run-wide collapse test: hand-computed factors and bets, and its mean under the null."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, multinomial

from collapse_probe.integrations.monitor._sequential import (
    CollapseTest,
    max_bet,
    plug_in_bet,
    start_weight,
    state_factor,
    weight_after,
)


def test_state_factor_by_hand():
    # [2, 1] at λ = 1, m = 0.5: orders AAB (hit, miss), ABA (miss, tie 1/2), BAA (miss, tie 1/2)
    hit, miss, half = 1.5, 0.5, 1.0
    assert state_factor([2, 1], 1.0, 0.5) == pytest.approx((hit * miss + 2 * miss * half) / 3)
    # identical replies: every reply after the first hits
    assert state_factor([8], 0.9, 0.8) == pytest.approx((1 + 0.9 * 0.2) ** 7)
    # [7, 1]: the odd reply first or second costs a miss and a tie, anywhere else one miss
    a, b, tie = 1 + 0.9 * 0.2, 1 - 0.9 * 0.8, 1 + 0.9 * (0.5 - 0.8)
    assert state_factor([7, 1], 0.9, 0.8) == pytest.approx((2 * b * tie * a**5 + 6 * a**6 * b) / 8)
    assert state_factor([3, 2], 0.0, 0.8) == 1.0 and state_factor([1], 0.9, 0.8) == 1.0


def test_a_state_with_very_many_replies_is_averaged_over_sampled_orders():
    v = state_factor(list(range(1, 12)), 0.5, 0.8)  # 12! partial counts: sampled, deterministic
    assert 0 < v < 1 and v == state_factor(list(range(11, 0, -1)), 0.5, 0.8)


@pytest.mark.parametrize("p", [[0.8, 0.2], [0.8, 0.1, 0.1], [0.5, 0.5], [0.6, 0.2, 0.2]])
@pytest.mark.parametrize("n", [2, 5, 8])
def test_the_factor_has_mean_at_most_one_when_epsilon_is_at_least_epsilon_star(p, n):
    m = 0.8
    lam = max_bet(m)
    k = len(p)
    grid = [c for c in np.ndindex(*(n + 1,) * k) if sum(c) == n]
    mean = sum(multinomial.pmf(c, n, p) * state_factor(c, lam, m) for c in grid)
    assert mean <= 1 + 1e-9


def test_the_factor_grows_when_collapsed():
    m = 0.8
    mean_log = sum(binom.pmf(k, 8, 0.98) * math.log(state_factor([k, 8 - k], 0.8, m)) for k in range(9))
    assert mean_log > 0.8


def test_bets_by_hand():
    assert plug_in_bet([], 0.8) == 0.0
    assert plug_in_bet([[[5, 3], [4, 4]]], 0.8) == 0.0
    q = 16.5 / 17
    se = math.sqrt(q * (1 - q) / 16)
    assert plug_in_bet([[[8], [8]]], 0.8) == pytest.approx((q - se / 2 - 0.8) / 0.16)
    assert plug_in_bet([[[8], [8]]] * 8, 0.8) == pytest.approx(max_bet(0.8))  # capped: a miss keeps 1/4
    assert max_bet(0.8) * 0.8 == pytest.approx(0.75)
    assert plug_in_bet([[[8]]], 1.0) == 0.0


def test_start_weights_sum_to_one_and_the_recursion_is_the_mixture():
    assert sum(start_weight(j) for j in range(10_000)) + weight_after(9_999) == pytest.approx(1.0)
    t, factors = CollapseTest(0.2, 0.95), []
    rng = np.random.default_rng(0)
    history: list = []
    for _ in range(6):
        counts = [np.bincount(rng.choice(2, 8, p=[0.95, 0.05]), minlength=2).tolist() for _ in range(2)]
        rec = t.update(counts, history)
        history.append(counts)
        factors.append(rec["step_factor"])
        mix = sum(start_weight(j) * math.prod(factors[j:]) for j in range(len(factors)))
        assert rec["e_value"] == pytest.approx(mix + weight_after(len(factors) - 1))


def test_false_alarms_over_a_long_run_at_the_threshold_stay_under_alpha():
    """At ε = ε* exactly for 400 steps of 4 states x 8 replies, 100 runs: Ville's inequality allows 5 %."""
    fired = 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        t, history = CollapseTest(0.2, 0.95), []
        for _ in range(400):
            counts = [np.bincount(rng.choice(2, 8, p=[0.8, 0.2]), minlength=2).tolist() for _ in range(4)]
            t.update(counts, history[-20:])
            history.append(counts)
            if t.rejected:
                fired += 1
                break
    assert fired <= 5
