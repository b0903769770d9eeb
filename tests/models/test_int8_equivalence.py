"""benchmarks/int8_equivalence.py: the equivalence test that justifies the int8 default (docs/embedded-int8.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
try:
    import int8_equivalence as eq
finally:
    sys.path.pop(0)


def test_a_reply_means_its_first_word():
    assert eq.meaning(" Yes, I think so") == "yes"
    assert eq.meaning("  no.") == "no"
    assert eq.meaning(" ...") == ""
    assert eq.eps(["yes"] * 8 + ["no", ""]) == pytest.approx(0.2)


def test_tost_is_its_90_percent_interval_inside_the_margin():
    """TOST at level 0.05 per side decides equivalence exactly when the 90 % t interval lies inside (−m, +m)."""
    from scipy.stats import t

    diffs = [0.01, -0.02, 0.015, 0.0, -0.005, 0.02, -0.01, 0.005]
    r = eq.tost(diffs, 0.05)
    m = sum(diffs) / len(diffs)
    se = r["sd"] / len(diffs) ** 0.5
    assert r["ci90"][1] - m == pytest.approx(t.ppf(0.95, 7) * se)
    assert r["equivalent"] and r["p_tost"] < 0.05
    shifted = [d + 0.04 for d in diffs]  # mean 0.0434: its upper end crosses +0.05
    s = eq.tost(shifted, 0.05)
    assert not s["equivalent"] and s["p_tost"] > 0.05
    assert eq.tost(diffs, 0.01)["equivalent"] is False  # the same data, a margin the interval does not fit


def test_candidates_are_the_templates_times_the_questions():
    pool = eq.candidates()
    assert len(pool) == len(eq.TEMPLATES) * len(eq.QUESTIONS) and len(set(pool)) == len(pool)
    assert all(p.endswith(" A:") for p in pool)


@pytest.mark.slow
def test_both_dtypes_draw_seeded_forced_choice_replies():
    """The real embedded model in both dtypes: the same seeds give the same float32 replies twice, and every
    reply is read as an answer word (the states' meanings need no partitioner)."""
    from collapse_probe.models.local import make_local_model

    prompts = eq.candidates()[:2]
    f32 = make_local_model("local/smollm2-135m", "smollm2-135m", dtype="float32")
    a, b = eq.draw(f32, prompts, 8, eq.TEST_SEED), eq.draw(f32, prompts, 8, eq.TEST_SEED)
    assert a == b and all(len(x) == 8 for x in a)
    i8 = eq.draw(make_local_model("local/smollm2-135m", "smollm2-135m", dtype="int8"), prompts, 8, eq.TEST_SEED)
    assert all(len(x) == 8 for x in i8)
    assert sum(w in ("yes", "no") for x in a + i8 for w in x) >= 24  # the quiz's format is followed
