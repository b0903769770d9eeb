"""Estimators against hand computations, scripted categorical distributions and invariants."""

from __future__ import annotations

import asyncio
import math
from collections import Counter

import numpy as np
import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.metrics import (
    METRICS,
    MIN_CONFIDENT_SAMPLES,
    as_counts,
    class_counts,
    collapse_error,
    collapse_error_ci,
    collapse_error_corrected,
    entropy,
    entropy_chao_wang_jost,
    entropy_ci,
    entropy_miller_madow,
    entropy_plugin,
    exact_class_distribution,
    exact_collapse_error,
    get_metric,
    get_partitioner,
    higher_is_better,
    hill_number,
    low_confidence,
    sample_coverage,
)
from collapse_probe.metrics.estimators import _cwj_tail

ZIPF20 = (1 / np.arange(1, 21)) / np.sum(1 / np.arange(1, 21))
SCRIPTED = {
    "clear mode": np.array([0.6, 0.3, 0.1]),
    "two-way tie": np.array([0.4, 0.4, 0.2]),
    "uniform over 3": np.ones(3) / 3,
    "uniform over 10": np.ones(10) / 10,
    "collapsed": np.array([0.97, 0.03]),
    "zipf over 20": ZIPF20,
}


# ---------------------------------------------------------------------------------------------- counts


def test_as_counts_accepts_lists_arrays_mappings_and_drops_zeros():
    assert as_counts([3, 0, 1]).tolist() == [3, 1]
    assert as_counts(np.array([2.0, 1.0])).tolist() == [2, 1]
    assert sorted(as_counts(Counter("aab")).tolist()) == [1, 2]


@pytest.mark.parametrize("bad", [[], [0, 0], [-1, 2], [1.5, 2], [[1, 2]], ["a"], [True, False]])
def test_as_counts_rejects_bad_input(bad):
    with pytest.raises(ConfigError, match="counts"):
        as_counts(bad)


# ---------------------------------------------------------------------------------------------- ε̂


def test_collapse_error_hand_values():
    assert collapse_error([6, 3, 1]) == pytest.approx(0.4)
    assert collapse_error([20]) == 0.0
    assert collapse_error([1] * 10) == pytest.approx(0.9)
    assert collapse_error({"refuse": 3, "donate:$1": 1}) == pytest.approx(0.25)


def test_collapse_error_ci_contains_estimate_and_is_ordered():
    for counts in ([200, 120, 80], [20], [1] * 10, [5, 5], [19, 1]):
        for method in ("wilson_max", "percentile", "basic"):
            lo, hi = collapse_error_ci(counts, method=method, n_boot=500)
            assert 0.0 <= lo <= hi <= 1.0
            if method == "wilson_max":
                assert lo <= collapse_error(counts) <= hi


def test_collapse_error_ci_fully_collapsed_sample_keeps_an_honest_upper_bound():
    # 20 identical answers do not prove ε = 0: the Wilson bound for a 20/20 proportion is ~0.16.
    lo, hi = collapse_error_ci([20])
    assert lo == 0.0
    assert 0.10 < hi < 0.20


def test_collapse_error_ci_wilson_hand_value_for_clear_mode():
    # One clear mode: the interval is 1 − Wilson(200/400) at z = 1.959964.
    z = 1.959963984540054
    p, n = 0.5, 400
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    lo, hi = collapse_error_ci([200, 120, 80])
    assert lo == pytest.approx(1 - (centre + half), abs=1e-12)
    assert hi == pytest.approx(1 - (centre - half), abs=1e-12)


@pytest.mark.parametrize("name", list(SCRIPTED))
def test_collapse_error_ci_covers_true_eps_at_the_stated_rate(name):
    p = SCRIPTED[name]
    eps = 1 - p.max()
    hits = 0
    for seed in range(200):
        counts = np.random.default_rng(seed).multinomial(400, p)
        lo, hi = collapse_error_ci(counts, level=0.95)
        hits += lo <= eps + 1e-12 and eps - 1e-12 <= hi
    assert 0.91 <= hits / 200 <= 0.995, f"{name}: coverage {hits / 200}"


def test_percentile_bootstrap_undercovers_on_ties_which_is_why_it_is_not_the_default():
    p = SCRIPTED["uniform over 3"]
    eps = 1 - p.max()
    hits = 0
    for seed in range(40):
        counts = np.random.default_rng(seed).multinomial(400, p)
        lo, hi = collapse_error_ci(counts, method="percentile", n_boot=300, seed=seed)
        hits += lo <= eps <= hi
    assert hits / 40 < 0.5


def test_collapse_error_ci_validates_arguments():
    with pytest.raises(ConfigError, match="method"):
        collapse_error_ci([3, 1], method="bca")
    with pytest.raises(ConfigError, match="level"):
        collapse_error_ci([3, 1], level=1.5)
    with pytest.raises(ConfigError, match="n_boot"):
        collapse_error_ci([3, 1], method="percentile", n_boot=2)


def test_bootstrap_ci_is_deterministic_given_seed():
    a = collapse_error_ci([5, 4, 3], method="percentile", seed=3)
    assert a == collapse_error_ci([5, 4, 3], method="percentile", seed=3)


def test_corrected_estimate_is_closer_to_truth_on_diverse_simulator_at_small_n():
    p = np.ones(10) / 10  # ε = 0.9
    plug, corr = [], []
    for seed in range(100):
        c = np.random.default_rng(seed).multinomial(20, p)
        plug.append(collapse_error(c))
        corr.append(collapse_error_corrected(c, n_boot=500, seed=seed))
    err_plug = abs(np.mean(plug) - 0.9)
    err_corr = abs(np.mean(corr) - 0.9)
    assert err_corr < 0.6 * err_plug
    assert np.mean(np.abs(np.array(corr) - 0.9)) < np.mean(np.abs(np.array(plug) - 0.9))


def test_corrected_estimate_leaves_collapsed_simulators_alone():
    assert collapse_error_corrected([20]) == 0.0
    p = np.array([0.95, 0.05])
    diffs = [
        collapse_error_corrected(c, n_boot=500) - collapse_error(c)
        for c in (np.random.default_rng(s).multinomial(40, p) for s in range(30))
    ]
    assert np.max(np.abs(diffs)) < 0.01


def test_sample_coverage_hand_values():
    assert sample_coverage([3, 1, 1, 5]) == pytest.approx(0.8)
    # Chao–Jost: f1 = 2, f2 = 0, N = 10: A = 2/(9·1 + 2) = 2/11; C = 1 − 0.2·(9/11)
    assert sample_coverage([3, 1, 1, 5], method="chao_jost") == pytest.approx(1 - 0.2 * 9 / 11)
    assert sample_coverage([5, 5]) == 1.0


def test_low_confidence_threshold():
    assert MIN_CONFIDENT_SAMPLES == 20
    assert low_confidence(19) and not low_confidence(20) and low_confidence(0)
    with pytest.raises(ConfigError):
        low_confidence(-1)


# ---------------------------------------------------------------------------------------------- entropy


def test_entropy_hand_values():
    assert entropy_plugin([1, 1]) == pytest.approx(math.log(2))
    assert entropy_plugin([2, 1, 1]) == pytest.approx(-(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)))
    assert entropy_miller_madow([2, 1, 1]) == pytest.approx(entropy_plugin([2, 1, 1]) + 2 / 8)
    assert entropy_plugin([7]) == 0.0


def test_chao_wang_jost_hand_value_with_singletons_and_doubletons():
    # N = 4, f1 = 2, f2 = 1 -> A = 2/(3·2 + 2) = 1/4.
    first = 2 / 4 * (1 / 2 + 1 / 3) + 2 * (1 / 4) * (1 + 1 / 2 + 1 / 3)
    z = 0.75
    second = 2 / 4 * z ** (-3) * (-math.log(0.25) - (z + z**2 / 2 + z**3 / 3))
    assert entropy_chao_wang_jost([2, 1, 1]) == pytest.approx(first + second, abs=1e-12)


def test_chao_wang_jost_without_singletons_is_the_digamma_sum():
    # [3, 3]: A = 1, H = Σ (3/6)(1/3 + 1/4 + 1/5)·2
    assert entropy_chao_wang_jost([3, 3]) == pytest.approx(1 / 3 + 1 / 4 + 1 / 5)
    assert entropy_chao_wang_jost([5]) == 0.0


@pytest.mark.parametrize("a,n", [(0.2, 30), (0.05, 40), (0.5, 12), (0.01, 20)])
def test_cwj_tail_matches_literal_formula_where_it_is_accurate(a, n):
    z = 1 - a
    literal = z ** (1 - n) * (-math.log(a) - sum(z**r / r for r in range(1, n)))
    assert _cwj_tail(a, n) == pytest.approx(literal, rel=1e-6)


def test_chao_wang_jost_is_finite_at_large_n():
    counts = [1] * 500 + [2] * 200 + [50] * 10
    h = entropy_chao_wang_jost(counts)
    assert math.isfinite(h) and h > entropy_plugin(counts)


def test_chao_wang_jost_is_least_biased_on_scripted_diverse_distribution():
    p = np.ones(50) / 50
    truth = math.log(50)
    est = {"plugin": [], "miller_madow": [], "chao_wang_jost": []}
    for seed in range(100):
        c = np.random.default_rng(seed).multinomial(30, p)
        for k in est:
            est[k].append(entropy(c, estimator=k))
    bias = {k: abs(np.mean(v) - truth) for k, v in est.items()}
    assert bias["chao_wang_jost"] < bias["miller_madow"] < bias["plugin"]


def test_entropy_ci_covers_truth():
    p = ZIPF20
    truth = float(-(p * np.log(p)).sum())
    hits = 0
    for seed in range(60):
        c = np.random.default_rng(seed).multinomial(200, p)
        lo, hi = entropy_ci(c, n_boot=200, seed=seed)
        hits += lo <= truth <= hi
    assert hits / 60 >= 0.88


def test_entropy_rejects_unknown_estimator():
    with pytest.raises(ConfigError, match="estimator"):
        entropy([1, 2], estimator="nsb")


# ---------------------------------------------------------------------------------------------- Hill


def test_hill_numbers_of_uniform_counts_equal_number_of_classes():
    for q in (0, 0.5, 1, 2, 3, float("inf")):
        assert hill_number([2, 2, 2, 2], q) == pytest.approx(4.0)


def test_hill_numbers_hand_values_and_d_inf_identity():
    c = [6, 3, 1]
    p = np.array(c) / 10
    assert hill_number(c, 0) == 3
    assert hill_number(c, 1) == pytest.approx(math.exp(entropy_plugin(c)))
    assert hill_number(c, 2) == pytest.approx(1 / np.sum(p**2))
    assert hill_number(c, 3) == pytest.approx(np.sum(p**3) ** (-1 / 2))
    assert hill_number(c, float("inf")) == pytest.approx(1 / (1 - collapse_error(c)))
    qs = [0, 0.5, 1, 2, 3, float("inf")]
    values = [hill_number(c, q) for q in qs]
    assert all(a > b for a, b in zip(values[:-1], values[1:], strict=True))  # strictly decreasing in q (non-uniform)


def test_hill_number_rejects_negative_q():
    with pytest.raises(ConfigError, match="q"):
        hill_number([1, 2], -1)


# ---------------------------------------------------------------------------------------------- exact


def test_exact_class_distribution_is_softmax_and_merges_classes():
    probs = exact_class_distribution({"a": math.log(0.2), "b": math.log(0.6), "c": math.log(0.2)})
    assert probs == pytest.approx({"a": 0.2, "b": 0.6, "c": 0.2})
    # unnormalised log-probabilities over a closed set are renormalised
    probs = exact_class_distribution({"$1": -1.0, "$1.00": -1.0, "no": math.log(2) - 1.0}, label_of=lambda a: a[:2])
    assert probs == pytest.approx({"$1": 0.5, "no": 0.5})
    assert exact_class_distribution({"x": 0.0, "y": float("-inf")}) == {"x": 1.0, "y": 0.0}


@pytest.mark.parametrize("bad", [{}, {"a": float("nan")}, {"a": float("-inf")}, {"a": float("inf")}, {"a": "x"}])
def test_exact_class_distribution_rejects_bad_logprobs(bad):
    with pytest.raises(ConfigError, match="logprobs"):
        exact_class_distribution(bad)


def test_exact_collapse_error_and_validation():
    assert exact_collapse_error({"a": 0.7, "b": 0.3}) == pytest.approx(0.3)
    assert exact_collapse_error([0.25] * 4) == pytest.approx(0.75)
    with pytest.raises(ConfigError, match="sum"):
        exact_collapse_error([0.5, 0.4])


def test_exact_and_sampled_collapse_error_agree_on_scripted_model(write_scripted):
    """A scripted simulator with a known distribution: exact ε from its scores; sampled ε̂ CI covers it."""
    from collapse_probe.models import GenerationRequest, SamplingParams, get_model

    dist = [("[DONATE $1]", 0.45), ("[donate $1.00]", 0.15), ("No thanks.", 0.3), ("Maybe later", 0.1)]
    model = get_model(write_scripted(dist))
    request = GenerationRequest(
        messages=({"role": "user", "content": "Will you donate?"},), n=400, params=SamplingParams(seed=7)
    )
    part = get_partitioner("label")
    texts = [t for t, _ in dist]
    logprobs = asyncio.run(model.score_choices(request, texts))
    exact = exact_class_distribution(
        dict(zip(texts, logprobs, strict=True)), label_of=lambda t: part.labels_for([t])[0]
    )
    assert exact == pytest.approx({"donate:$1": 0.6, "refuse": 0.3, "undecided": 0.1})
    eps = exact_collapse_error(exact)
    assert eps == pytest.approx(0.4)

    (result,) = asyncio.run(model.generate([request]))
    counts = class_counts(part.partition([c.text for c in result.completions]))
    lo, hi = collapse_error_ci(counts)
    assert lo <= eps <= hi
    assert abs(collapse_error(counts) - eps) < 0.08


# ---------------------------------------------------------------------------------------------- registry


def test_metric_registry_directions():
    assert higher_is_better("collapse_error") is False
    assert higher_is_better("accumulated_collapse_error") is False
    assert higher_is_better("entropy") is True
    assert higher_is_better("vendi_score") is True
    assert higher_is_better("mean_pairwise_cosine") is False
    for name, info in METRICS.items():
        if name != "mean_pairwise_cosine":
            assert ("_error" in name) is (not info.higher_is_better), name
        assert callable(info.load())


def test_unknown_metric_suggests_close_names():
    with pytest.raises(ConfigError, match="Did you mean 'collapse_error'"):
        get_metric("colapse_error")
