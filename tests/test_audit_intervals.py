"""The headline interval of ``collapse-probe audit`` against scripted simulators whose ε is known."""

from __future__ import annotations

import json
import math

import pytest

from collapse_probe.cli import main

UNIFORM_10 = [(f"reply number {i}", 0.1) for i in range(10)]  # ε = 0.9: the plug-in reads it as more collapsed
TWO_CLASS = [("Sure, I will donate.", 0.9), ("No thanks.", 0.1)]  # ε = 0.1


def _headline(spec: str, out, states: int, samples: int, seed: int) -> dict:
    argv = ["audit", "--sim", spec, "--partition", "exact", "--states", str(states), "--samples", str(samples),
            "--seed", str(seed), "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    return json.loads((out / "results.json").read_text())


@pytest.mark.parametrize(
    ("responses", "truth", "states", "samples"),
    [(UNIFORM_10, 0.9, 8, 20), (TWO_CLASS, 0.1, 4, 50)],
    ids=["uniform10-8x20", "two-class-4x50"],
)
def test_headline_interval_contains_the_true_mean_collapse_error(
    write_scripted, tmp_path, capsys, responses, truth, states, samples
):
    spec = write_scripted(responses)
    covered, widths = 0, []
    for seed in range(3):
        s = _headline(spec, tmp_path / f"run{seed}", states, samples, seed)["summary"]
        ce = s["collapse_error"]
        lo, hi = ce["ci95"]
        covered += lo <= truth <= hi
        widths.append(hi - lo)
        assert lo <= ce["estimate"] <= hi and lo <= ce["plugin"] <= hi
        assert ce["method"].startswith("exact binomial bounds")
    # nominal 0.95 (30 seeds per configuration: docs/estimator-coverage.md); P(two misses in three) < 0.01
    assert covered >= 2
    assert sum(widths) / len(widths) <= 0.6
    verdict_line = capsys.readouterr().out
    assert ("NOT COLLAPSED" if truth > 0.5 else "COLLAPSED") in verdict_line


def test_headline_estimate_corrects_the_plugin_bias_on_a_diverse_simulator(write_scripted, tmp_path):
    res = _headline(write_scripted(UNIFORM_10), tmp_path / "run", 8, 20, 0)
    s = res["summary"]
    ce = s["collapse_error"]
    assert ce["plugin"] < ce["estimate"] <= 0.95  # the plug-in is biased towards "collapsed"
    ent = s["entropy"]
    assert ent["ci95"][0] <= math.log(10) <= ent["ci95"][1] and "unseen classes" in ent["note"]
    for st in res["states"]:
        lo, hi = st["collapse_error_ci95"]
        assert lo <= st["collapse_error"] <= hi and lo <= st["collapse_error_estimate"] <= hi
        assert "unseen classes" in st["entropy_note"] and "observed classes" in st["hill_note"]
    for src in s["by_source"].values():
        assert src["ci95"][0] <= src["collapse_error"] <= src["ci95"][1] and "collapse_error_plugin" in src


def test_nearly_all_distinct_replies_reach_the_top_and_bound_entropy_from_below_only(write_scripted, tmp_path, capsys):
    # 1000 equally likely replies, 20 samples per state: ε = 0.999, and the number of modes is unbounded
    res = _headline(write_scripted([(f"reply number {i}", 0.001) for i in range(1000)]), tmp_path / "run", 2, 20, 0)
    s = res["summary"]
    assert s["collapse_error"]["ci95"][1] > 0.999  # 1.0 exactly when no two replies of any state agree
    assert all(st["collapse_error_ci95"][1] == 1.0 for st in res["states"] if max(st["class_counts"]) == 1)
    assert sum(max(st["class_counts"]) == 1 for st in res["states"]) >= 2
    ent = s["entropy"]
    assert ent["lower_bound_only"] and ent["ci95"][1] is None and ent["ci95"][0] <= math.log(1000)
    assert all(st["entropy_lower_bound_only"] and st["entropy_ci95"][1] is None for st in res["states"])
    assert s["effective_modes_lower_bound_only"] and 1 < s["effective_modes_lower_bound"] <= 20  # capped at N
    out = capsys.readouterr().out
    assert "no upper bound" in out and "at least" in out
    # the records with an open upper end are read back on resume, not rejected as damaged
    again = _headline(write_scripted([(f"reply number {i}", 0.001) for i in range(1000)]), tmp_path / "run", 2, 20, 0)
    assert again["summary"]["entropy"]["ci95"] == ent["ci95"]
