"""The lab's typed numbers (``RunSummary``, ``SampledTVCheck``, ``LogOddsFit``, ``SeedStat``) hold exactly
the keys a run returns and its results read."""

from __future__ import annotations

from collapse_probe.trainers.lab import (
    LabConfig,
    LogOddsFit,
    RunSummary,
    SampledTVCheck,
    SeedStat,
    mean_ci,
    paired_vs_single,
    run_lab,
)


def test_a_runs_numbers_are_what_their_types_declare():
    runs = {m: [run_lab(LabConfig(method=m, seed=s, steps=20)) for s in (0, 1)] for m in ("single", "vs")}
    r = runs["vs"][0]
    assert set(r.summary()) == set(RunSummary.__required_keys__) == set(RunSummary.__annotations__)
    assert set(r.tv_sampled_check()) == set(SampledTVCheck.__annotations__)
    assert set(r.corollary_3_5()) == set(LogOddsFit.__annotations__)
    assert set(mean_ci([1.0, 2.0, None])) == set(SeedStat.__annotations__) and mean_ci([1.0, 2.0])["n_seeds"] == 2
    paired = paired_vs_single(runs, "vs")
    assert set(paired) == {"heldout_final_vs_single", "heldout_sim_final_vs_single", "train_final_vs_single"}
    assert all(set(v) == set(SeedStat.__annotations__) for v in paired.values())
