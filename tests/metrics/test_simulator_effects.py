"""The statistics of ``collapse-probe compare`` against independent computations: the interval's parts
(Clopper–Pearson from scipy's exact binomial test, MOVER by hand), its coverage where a paired t
interval fails, the noise floor against direct counts, rank flips and Kendall's τ."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from collapse_probe.metrics.simulator_effects import (
    clopper_pearson,
    noise_floor,
    rank_correlation,
    rank_flips,
    simulator_effect,
    success_rate,
)


def _outcomes(counts: dict[str, tuple[int, int]]) -> dict[str, list[bool]]:
    """task -> (successes, trials) as a list of trial outcomes."""
    return {t: [True] * c + [False] * (k - c) for t, (c, k) in counts.items()}


@pytest.mark.parametrize(("x", "n"), [(0, 5), (5, 5), (3, 7), (17, 40), (1, 1)])
def test_clopper_pearson_is_scipys_exact_interval(x: int, n: int) -> None:
    ci = stats.binomtest(x, n).proportion_ci(0.95, method="exact")
    assert clopper_pearson(x, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_the_effect_is_the_mover_of_two_exact_intervals() -> None:
    a = _outcomes({"t1": (2, 4), "t2": (4, 4), "t3": (1, 4)})  # 7 of 12
    b = _outcomes({"t1": (0, 4), "t2": (3, 4), "t3": (1, 4), "t4": (4, 4)})  # t4 is not shared
    e = simulator_effect(a, b)
    assert e.n_tasks == 3
    r1, r0 = 7 / 12, 4 / 12
    assert e.difference == pytest.approx(r1 - r0)
    c1 = stats.binomtest(7, 12).proportion_ci(0.95, method="exact")
    c0 = stats.binomtest(4, 12).proportion_ci(0.95, method="exact")
    lo = r1 - r0 - math.sqrt((r1 - c1.low) ** 2 + (c0.high - r0) ** 2)
    hi = r1 - r0 + math.sqrt((c1.high - r1) ** 2 + (r0 - c0.low) ** 2)
    assert e.ci95 == pytest.approx((lo, hi), abs=1e-9)


def test_unequal_trials_weigh_tasks_equally_and_use_the_effective_trials() -> None:
    a = _outcomes({"t1": (1, 1), "t2": (1, 4)})  # task means 1 and 0.25: rate 0.625 (not 2/5 pooled)
    r = success_rate(a)
    assert r.rate == pytest.approx(0.625)
    assert r.effective_trials == pytest.approx(4 / (1 + 0.25))


def test_tasks_whose_trials_all_agree_still_get_an_interval_that_covers() -> None:
    """Every trial succeeds under both simulators: a paired t interval is [0, 0]; the truth may be
    −0.05 (0.9 vs 0.95), which it misses; this interval must include it."""
    a = _outcomes({f"t{i}": (1, 1) for i in range(5)})
    e = simulator_effect(a, a)
    assert e.difference == 0.0
    assert e.ci95[0] < -0.05 and e.ci95[1] > 0.05


def test_coverage_where_a_paired_t_interval_fails() -> None:
    """5 tasks, 1 trial, p = 0.9 vs 0.95 on every task: the paired t covers about half the time."""
    rng = np.random.default_rng(3)
    truth, cover = 0.9 - 0.95, 0
    for _ in range(300):
        a = {str(t): [bool(rng.random() < 0.9)] for t in range(5)}
        b = {str(t): [bool(rng.random() < 0.95)] for t in range(5)}
        lo, hi = simulator_effect(a, b).ci95
        cover += lo <= truth <= hi
    assert cover / 300 >= 0.95


def test_coverage_in_the_middle_with_many_tasks() -> None:
    """40 tasks, 4 trials, p = 0.3 vs 0.7 everywhere (the binomial case, where the bound is tight)."""
    rng = np.random.default_rng(4)
    cover = 0
    for _ in range(400):
        a = {str(t): list(rng.random(4) < 0.3) for t in range(40)}
        b = {str(t): list(rng.random(4) < 0.7) for t in range(40)}
        lo, hi = simulator_effect(a, b).ci95
        cover += lo <= -0.4 <= hi
    assert 0.93 <= cover / 400 <= 0.995  # near nominal: not a vacuous [-1, 1]


def test_no_shared_task_is_an_error() -> None:
    with pytest.raises(ValueError, match="share no task"):
        simulator_effect({"a": [True]}, {"b": [True]})


def test_noise_floor_counts() -> None:
    out = _outcomes({"t1": (2, 4), "t2": (4, 4), "t3": (0, 3), "t4": (1, 1), "t5": (1, 2)})
    nf = noise_floor(out)
    # tasks with >= 2 trials: t1, t2, t3, t5; with both a success and a failure: t1, t5
    assert (nf.tasks_with_repeats, nf.flipping_tasks, nf.flip_rate) == (4, 2, 0.5)
    assert nf.trials == 14
    assert nf.pass_k == {"1": pytest.approx(np.mean([0.5, 1.0, 0.0, 1.0, 0.5]))}  # k up to the fewest trials
    # rerun range: z * sqrt(2 * sum_t v_t / k_t) / n over t1, t2, t3, t5, v_t = k/(k-1) p(1-p)
    v = [4 / 3 * 0.25 / 4, 0.0, 0.0, 2 * 0.25 / 2]
    h = 1.959963984540054 * math.sqrt(2 * sum(v)) / 4
    assert nf.rerun_difference_ci95 == pytest.approx((-h, h))


def test_rerun_range_matches_a_simulation_of_two_reruns() -> None:
    """The ±h of one configuration is where 95 % of the differences between two reruns fall."""
    rng = np.random.default_rng(5)
    p = rng.uniform(0.1, 0.9, 30)
    drawn = {str(t): list(rng.random(50) < p[t]) for t in range(30)}  # many trials: a precise estimate
    h = noise_floor(drawn).rerun_difference_ci95
    assert h is not None
    diffs = [np.mean(rng.random((50, 30)) < p, axis=0).mean() - np.mean(rng.random((50, 30)) < p, axis=0).mean()
             for _ in range(4000)]  # fmt: skip
    inside = np.mean(np.abs(diffs) <= h[1])
    assert 0.93 <= inside <= 0.97


def test_one_trial_per_task_has_no_flip_rate_nor_rerun_range() -> None:
    nf = noise_floor(_outcomes({"t1": (1, 1), "t2": (0, 1)}))
    assert nf.flip_rate is None and nf.rerun_difference_ci95 is None and nf.tasks_with_repeats == 0


def test_rank_flips_are_strict_reversals_only() -> None:
    tasks = ("t1", "t2")

    def cell(*rates: float) -> dict[str, list[bool]]:  # per task: 4 trials at the given share
        return {t: [True] * round(4 * r) + [False] * (4 - round(4 * r)) for t, r in zip(tasks, rates, strict=True)}

    cells = {
        ("A", "x"): cell(1.0, 0.5), ("B", "x"): cell(0.5, 0.5), ("C", "x"): cell(0.5, 0.5),  # A > B = C
        ("A", "y"): cell(0.25, 0.25), ("B", "y"): cell(0.5, 0.5), ("C", "y"): cell(0.75, 0.75),  # A < B < C
        ("A", "z"): cell(0.75, 0.75), ("B", "z"): cell(0.75, 0.75),  # A = B; C not run under z
    }  # fmt: skip
    got = {(f.agents, f.simulators) for f in rank_flips(cells)}
    # x → y: A/B reverse (A > B, then A < B) and A/C reverse; B/C tie under x: no flip.
    # x → z and y → z: A ties B under z: no flip; C has no z cell.
    assert got == {(("A", "B"), ("x", "y")), (("A", "C"), ("x", "y"))}
    flip = next(f for f in rank_flips(cells) if f.agents == ("A", "B"))
    assert flip.rates == {"x": {"A": 0.75, "B": 0.5}, "y": {"A": 0.25, "B": 0.5}} and flip.n_tasks == 2


def test_rank_flips_use_the_tasks_the_four_cells_share() -> None:
    cells = {("A", "x"): {"t1": [True], "t2": [False]}, ("B", "x"): {"t1": [False], "t2": [True], "t3": [True]},
             ("A", "y"): {"t1": [False], "t2": [False]}, ("B", "y"): {"t1": [True], "t2": [False]}}  # fmt: skip
    # over t1, t2: A = B under x (a tie, though B's three tasks give it 2/3): no flip
    assert rank_flips(cells) == []


def test_rank_correlation_is_kendalls_tau_b() -> None:
    rng = np.random.default_rng(6)
    cells = {}
    for i, a in enumerate("ABCD"):
        for s, shift in (("x", 0.0), ("y", 0.2)):
            p = min(1.0, 0.15 * i + shift) if s == "x" else [0.6, 0.2, 0.9, 0.4][i]
            cells[(a, s)] = {str(t): list(rng.random(3) < p) for t in range(12)}
    rc = rank_correlation(cells, "x", "y", n_boot=300)
    assert rc is not None
    rx = [success_rate(cells[(a, "x")]).rate for a in "ABCD"]
    ry = [success_rate(cells[(a, "y")]).rate for a in "ABCD"]
    assert rc.tau == pytest.approx(stats.kendalltau(rx, ry).statistic)
    assert rc.ci95 is not None and rc.ci95[0] <= rc.ci95[1] and rc.n_tasks == 12


def test_rank_correlation_undefined_when_every_agent_ties() -> None:
    cells = {(a, s): {"t1": [True]} for a in "AB" for s in "xy"}
    rc = rank_correlation(cells, "x", "y")
    assert rc is not None and rc.tau is None and rc.ci95 is None
    assert rank_correlation({("A", "x"): {"t": [True]}, ("A", "y"): {"t": [True]}}, "x", "y") is None


def test_rates_that_tie_exactly_are_a_tie_whatever_the_floating_point_sum() -> None:
    """1/10 + 2/10 is 0.30000000000000004 in floating point and 3/10 + 0/10 is 0.3: the two agents tie
    under x, so their reversal under y is no flip."""

    def cell(*successes: int) -> dict[str, list[bool]]:
        return {f"t{i}": [True] * c + [False] * (10 - c) for i, c in enumerate(successes)}

    assert (0.1 + 0.2) / 2 > (0.3 + 0.0) / 2  # what a float comparison would read as an order
    cells = {("A", "x"): cell(1, 2), ("B", "x"): cell(3, 0), ("A", "y"): cell(0, 0), ("B", "y"): cell(9, 9)}
    assert rank_flips(cells) == []
    cells[("A", "x")] = cell(2, 2)  # now A leads under x and trails under y
    assert [(f.agents, f.simulators) for f in rank_flips(cells)] == [(("A", "B"), ("x", "y"))]


def test_coverage_when_the_uncertain_tasks_lost_their_repeats() -> None:
    """Half the tasks at p = 0.5 with 1 trial left (the others lost to infrastructure failures), half at 0
    with 20: one effective number of trials for the whole rate (n² / Σ 1/k) understates its variance
    (coverage 0.929 here); grouping the tasks by their trials keeps it (0.953)."""
    rng = np.random.default_rng(11)
    p = np.r_[np.full(20, 0.5), np.full(20, 0.0)]
    k = np.r_[np.full(20, 1), np.full(20, 20)]
    cover = 0
    for _ in range(800):
        a = {str(t): list(rng.random(k[t]) < p[t]) for t in range(40)}
        b = {str(t): list(rng.random(k[t]) < p[t]) for t in range(40)}
        lo, hi = simulator_effect(a, b).ci95
        cover += lo <= 0.0 <= hi
    assert cover / 800 >= 0.94


def test_equal_trials_give_the_plain_exact_interval() -> None:
    """One group of tasks: the rate's interval is the Clopper–Pearson interval of all its trials."""
    out = _outcomes({"t1": (1, 3), "t2": (3, 3), "t3": (0, 3)})
    ci = stats.binomtest(4, 9).proportion_ci(0.95, method="exact")
    assert success_rate(out).ci95 == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_the_rerun_range_never_exceeds_a_whole_success_rate() -> None:
    """One task with two split trials: the estimate's ±1.96·√(2·0.5/2) ≈ ±1.39 is capped at ±1 (two rates in
    [0, 1] differ by at most 1), in the noise floor and in an effect's rerun range."""
    out = _outcomes({"t1": (1, 2)})
    assert noise_floor(out).rerun_difference_ci95 == (-1.0, 1.0)
    assert simulator_effect(out, out).rerun_difference_ci95 == (-1.0, 1.0)
