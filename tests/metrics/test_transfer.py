"""Mean CIs, paired differences and the transfer ratio against hand values, independent formulas
(Fieller, paired t, Clopper–Pearson) and coverage on panels with ties at the bounds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from collapse_probe.errors import ConfigError
from collapse_probe.metrics import (
    cluster_bootstrap_diff,
    cluster_mean_ci,
    mean_ci,
    paired_mean_diff,
    transfer_ratio,
)


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
    h, t = [[0.5, 0.5], [0.25, 0.25], [0.3]], [[1.0, 1.0], [0.5, 0.5], [0.6]]
    e = transfer_ratio(h, t)
    assert e.value == pytest.approx(((0.5 + 0.5 + 0.25 + 0.25 + 0.3) / 5) / ((1 + 1 + 0.5 + 0.5 + 0.6) / 5))
    # 3 tasks: the training mean's interval reaches 0, so the ratio has no upper end (Fieller's answer too)
    assert e.lo == 0.0 and e.hi is None and "no upper end" in e.note and e.method == "Fieller over tasks"
    old = transfer_ratio(h, t, method="percentile", n_boot=500)
    assert old.lo <= old.value <= old.hi and "percentile" in old.method


def _fieller(h: np.ndarray, t: np.ndarray, level: float) -> tuple[float, float | None]:
    """Fieller's set {θ >= 0: a θ² − 2bθ + k <= 0} for mean(h) / mean(t) from its textbook quadratic,
    as (lower, upper) with ``None`` for an unbounded upper end (a <= 0: the denominator is not
    significantly above 0)."""
    n = h.size
    q = stats.t.ppf(1 - (1 - level) / 2, n - 1)
    c = np.cov(h, t, ddof=1) / n
    a = t.mean() ** 2 - q**2 * c[1, 1]
    b = h.mean() * t.mean() - q**2 * c[0, 1]
    k = h.mean() ** 2 - q**2 * c[0, 0]
    r = np.sqrt(max(b * b - a * k, 0.0))
    if a <= 0:  # the set is unbounded above; 0 is in it iff k <= 0, else it starts at the positive root
        return (0.0 if k <= 0 else max((b - r) / a, (b + r) / a)), None
    return max((b - r) / a, 0.0), (b + r) / a


def test_ratio_without_a_range_is_fiellers_interval_and_the_difference_paired_t():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(3, 40))
        p = rng.uniform(0.05, 1, n)
        t = rng.binomial(3, p) / 3
        h = rng.binomial(3, np.clip(p * rng.uniform(0.3, 1.2), 0, 1)) / 3
        if t.mean() == 0:
            continue
        e = transfer_ratio([[x] for x in h], [[x] for x in t], level=0.9)
        lo, hi = _fieller(h, t, 0.9)
        assert e.lo == pytest.approx(lo, rel=1e-6, abs=1e-9)
        assert (e.hi is None and hi is None) or e.hi == pytest.approx(hi, rel=1e-6)
        d = paired_mean_diff([[x] for x in h], [[x] for x in t], level=0.9)
        half = stats.t.ppf(0.95, n - 1) * (h - t).std(ddof=1) / np.sqrt(n)
        assert d.lo == pytest.approx((h - t).mean() - half) and d.hi == pytest.approx((h - t).mean() + half)


def test_identical_arms_and_constant_rewards_without_a_range():
    same = [[1.0], [2 / 3], [1 / 3]]
    e = transfer_ratio(same, same, level=0.9)  # numerator = denominator on every task: exactly 1
    assert e.value == 1.0 and e.lo == pytest.approx(1.0) and e.hi == pytest.approx(1.0)
    const = transfer_ratio([[0.625]] * 5, [[1.0]] * 5)  # no spread and no declared range: a point
    assert (const.value, const.lo, const.hi) == (0.625, 0.625, 0.625)


def test_korn_graubard_hand_values():
    # 10 tasks of one conversation, all 1: Clopper-Pearson at n = 10, lower end 0.025^(1/10)
    e = cluster_mean_ci([[1.0]] * 10, reward_range=(0, 1))
    assert e.value == 1.0 and e.hi == 1.0 and e.lo == pytest.approx(0.025 ** (1 / 10))
    assert cluster_mean_ci([[0.0]] * 10, reward_range=(0, 1)).hi == pytest.approx(1 - 0.025 ** (1 / 10))
    # one binary reward per task: s^2 = n p(1-p) / (n-1), so the effective size is n - 1
    y = [1.0] * 6 + [0.0] * 4
    e = cluster_mean_ci([[v] for v in y], reward_range=(0, 1))
    x, m = 0.6 * 9, 9
    assert e.lo == pytest.approx(stats.beta.ppf(0.025, x, m - x + 1))
    assert e.hi == pytest.approx(stats.beta.ppf(0.975, x + 1, m - x))
    # a range other than [0, 1] is the same interval rescaled
    s = cluster_mean_ci([[2 + 3 * v] for v in y], reward_range=(2, 5))
    assert s.lo == pytest.approx(2 + 3 * e.lo) and s.hi == pytest.approx(2 + 3 * e.hi)
    assert "Korn-Graubard" in e.method and cluster_mean_ci([[1.0]]).lo is None


def test_reward_range_is_checked():
    with pytest.raises(ConfigError, match=r"by_task\['b'\]: reward 1.5 outside the reward range \[0, 1\]"):
        cluster_mean_ci({"a": [0.5], "b": [1.5]}, reward_range=(0, 1))
    with pytest.raises(ConfigError, match="reward_range"):
        cluster_mean_ci([[0.5], [0.2]], reward_range=(1, 0))


def _bernoulli_tasks(rng, p: np.ndarray, rollouts: int) -> list[list[float]]:
    return [list((rng.random(rollouts) < q).astype(float)) for q in p]


@pytest.mark.parametrize(("tasks", "rollouts"), [(4, 1), (10, 1), (10, 4), (40, 1)])
@pytest.mark.parametrize("task_dist", ["ceiling", "mid", "floor"])
def test_cell_interval_covers_with_ties_at_the_bounds(tasks, rollouts, task_dist):
    """Tasks that nearly always succeed (or fail) tie at the bound: the t interval collapses to a point
    there; the Korn-Graubard interval keeps >= 0.93 of 300 draws and never leaves [0, 1]."""
    rng = np.random.default_rng([tasks, rollouts, len(task_dist)])
    a, b = {"ceiling": (8, 1), "mid": (2, 2), "floor": (1, 8)}[task_dist]
    truth = a / (a + b)
    hits = 0
    for _ in range(300):
        e = cluster_mean_ci(_bernoulli_tasks(rng, rng.beta(a, b, tasks), rollouts), reward_range=(0, 1))
        assert 0 <= e.lo <= e.value <= e.hi <= 1
        hits += e.contains(truth)
    assert hits / 300 >= 0.93


def test_difference_interval_holds_at_the_ceiling():
    """Baseline 1.0 vs candidate 0.9 over 10 tasks x 1 rollout: most draws are all ones in both arms.
    The paired t interval is then [0, 0] (coverage 0.64); with the range it covers."""
    rng = np.random.default_rng(0)
    hits = hits_t = 0
    for _ in range(400):
        base = [[1.0]] * 10
        cand = _bernoulli_tasks(rng, np.full(10, 0.9), 1)
        hits += paired_mean_diff(base, cand, reward_range=(0, 1)).contains(0.1)
        hits_t += paired_mean_diff(base, cand).contains(0.1)
    assert hits / 400 >= 0.93 and hits_t / 400 < 0.8


def test_transfer_ratio_undefined_when_training_mean_is_zero():
    e = transfer_ratio([[0.5], [0.2]], [[0.0], [0.0]])
    assert e.value is None and e.lo is None and "undefined" in e.note
