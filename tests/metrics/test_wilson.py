"""The one Wilson score interval against scipy's (``binomtest(...).proportion_ci(method="wilson")``), and
the lab's seed means against the one Student-t interval, on panels with the hard cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from collapse_probe.metrics._intervals import wilson
from collapse_probe.metrics.transfer import mean_ci
from collapse_probe.trainers.lab import TV_CHECK_Z, wilson_interval
from collapse_probe.trainers.lab import mean_ci as lab_mean_ci


@pytest.mark.parametrize("z", [1.96, TV_CHECK_Z, 1.6448536269514722])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 20, 57, 200, 4096])
def test_wilson_equals_scipy_at_every_count(n, z):
    level = 2 * stats.norm.cdf(z) - 1
    k = np.arange(n + 1)
    lo, hi = wilson(k / n, n, z)
    for i in range(n + 1):
        ref = stats.binomtest(int(i), n).proportion_ci(confidence_level=level, method="wilson")
        assert lo[i] == pytest.approx(ref.low, abs=1e-12) and hi[i] == pytest.approx(ref.high, abs=1e-12)
        assert wilson_interval(int(i), n, z) == (float(lo[i]), float(hi[i]))
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_lab_seed_means_are_the_one_t_interval():
    rng = np.random.default_rng(0)
    panels = [[], [None], [math.nan], [0.3], [0.5] * 7, [0.0, 1.0] * 10, [None, 0.2, math.nan, 0.4]]
    for n in (2, 3, 5, 20):
        panels += [list(rng.random(n)), list(rng.pareto(1.2, n)), list(rng.integers(0, 3, n).astype(float))]
    for values in panels:
        kept = [v for v in values if v is not None and math.isfinite(v)]
        est = mean_ci(kept)
        got = lab_mean_ci(values)
        assert got["n_seeds"] == len(kept) and got["mean"] == est.value
        if len(kept) < 2:
            assert got["ci95"] is None
            continue
        t = stats.t.ppf(0.975, len(kept) - 1) * np.std(kept, ddof=1) / math.sqrt(len(kept))
        assert got["ci95"] == pytest.approx([np.mean(kept) - t, np.mean(kept) + t], abs=1e-12)
