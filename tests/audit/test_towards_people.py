"""Which sampling mode is nearer to people (``compare_vs.towards_people``), by hand and end to end."""

from __future__ import annotations

import pytest

from collapse_probe.pipelines.audit._human import HumanReference, towards_people


def _reference(w1: float, ks: float, share: float | None, outside: float) -> HumanReference:
    return {
        "donations": {"wasserstein": w1, "ks_statistic": ks, "l1_binned": 0.5, "ci95": {"wasserstein": [0.0, w1 * 2]}},
        "grounding": {
            "n_states": 4,
            "human_class_share": {"estimate": share, "ci95": None if share is None else [0.0, 1.0], "n": 4},
            "outside_share": {"estimate": outside, "ci95": [0.1, 0.9], "n": 4},
            "human_is_mode_share": {"estimate": 0.5, "ci95": [0.1, 0.9], "n": 4},
            "mean_rank_when_inside": 1.5,
        },
    }


def test_each_measure_names_the_mode_nearer_to_people():
    direct = _reference(w1=0.8, ks=0.3, share=0.2, outside=0.5)
    verbalized = _reference(w1=0.4, ks=0.3, share=0.1, outside=0.25)
    rows = towards_people(direct, verbalized)
    assert list(rows) == ["wasserstein", "ks_statistic", "l1_binned", "human_class_share", "outside_share"]
    # a lower distance is nearer; a tie is a tie
    assert rows["wasserstein"] == {"direct": 0.8, "direct_ci95": [0.0, 1.6], "verbalized": 0.4,
                                   "verbalized_ci95": [0.0, 0.8], "closer": "verbalized"}  # fmt: skip
    assert rows["ks_statistic"]["closer"] == "tie" and rows["ks_statistic"]["direct_ci95"] is None
    # a higher share of the human's class is nearer, a higher share outside the simulator's classes is not
    assert rows["human_class_share"]["closer"] == "direct"
    assert rows["outside_share"] == {"direct": 0.5, "direct_ci95": [0.1, 0.9], "verbalized": 0.25,
                                     "verbalized_ci95": [0.1, 0.9], "closer": "verbalized"}  # fmt: skip


def test_a_measure_one_mode_lacks_is_left_out():
    direct = _reference(w1=0.8, ks=0.3, share=None, outside=0.5)
    verbalized: HumanReference = {"donations": {"note": "no simulated or no human donations to compare",
                                                "n_simulated": 0, "n_human": 10}}  # fmt: skip
    assert towards_people(direct, verbalized) == {}
    # no estimate of the human's class share in one mode: that row only is left out
    rows = towards_people(direct, _reference(w1=0.8, ks=0.3, share=0.3, outside=0.5))
    assert "human_class_share" not in rows and rows["outside_share"]["closer"] == "tie"


@pytest.mark.slow  # reads the official P4G dialogues and runs the audit twice over them (~13 s)
def test_compare_vs_with_people_compares_both_modes_references(write_scripted, p4g_dir, monkeypatch):
    from collapse_probe.benchmarks.p4g import stance as p4g_stance
    from collapse_probe.pipelines.audit import AuditConfig, run_audit

    monkeypatch.setattr(p4g_stance, "default_stance_reader", lambda: p4g_stance.StanceReader("rules"))
    spec = write_scripted([("[DONATE $1]", 0.5), ("No thanks, not today.", 0.5)])
    res = run_audit(AuditConfig(sim=spec, samples=4, states=1, human=str(p4g_dir), compare_vs=True,
                                partition="label", stop_early=False), None, progress=False).to_json()  # fmt: skip
    direct, other = res["human_reference"], res["compare_vs"]["human_reference"]
    rows = res["compare_vs"]["towards_people"]
    assert rows["wasserstein"]["direct"] == pytest.approx(direct["donations"]["wasserstein"])
    assert rows["wasserstein"]["verbalized"] == pytest.approx(other["donations"]["wasserstein"])
    assert other["people_epsilon"]["n_states"] >= 1
