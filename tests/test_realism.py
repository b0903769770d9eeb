"""Realism against people: donation comparison against an independent computation on the official
CSVs, human-grounded states against the dialogues, and where human replies fall among the simulator's classes."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from collapse_probe.metrics.partitioners import ExactPartitioner
from collapse_probe.pipelines.audit._human import (
    DONATION_BIN_LABELS,
    donation_bins,
    donation_comparison,
    grounding_summary,
    human_grounding,
)


def _human_donations_from_csv(p4g_dir: Path) -> np.ndarray:
    """Independently: every persuadee row of full_info.csv, B6 capped at $2."""
    with open(p4g_dir / "full_info.csv", newline="", encoding="utf-8") as f:
        return np.array([min(float(r["B6"]), 2.0) for r in csv.DictReader(f) if r["B4"].strip() == "1"])


def _binned_by_hand(x: np.ndarray) -> np.ndarray:
    conds = [x == 0, (x > 0) & (x <= 0.5), (x > 0.5) & (x <= 1), (x > 1) & (x <= 1.5), (x > 1.5) & (x <= 2)]
    return np.array([c.mean() for c in conds])


def test_bins_are_right_closed_and_labelled_as_they_are():
    assert DONATION_BIN_LABELS == ("$0", "($0, $0.5]", "($0.5, $1]", "($1, $1.5]", "($1.5, $2]")
    assert donation_bins([0.0, 0.01, 0.5, 0.51, 1.0, 1.5, 1.51, 2.0]).tolist() == [0, 1, 1, 2, 2, 3, 4, 4]


@pytest.mark.parametrize("amount", [0.0, 0.5, 1.0, 2.0])
def test_point_mass_simulator_matches_an_independent_computation(p4g_dir, amount):
    from scipy.stats import ks_2samp

    human = _human_donations_from_csv(p4g_dir)
    assert human.size == 1017
    sim = np.full(40, amount)
    out = donation_comparison(sim, human, n_boot=50)
    # W1 between a point mass at a and the people is E|X - a|
    assert out["wasserstein"] == pytest.approx(np.abs(human - amount).mean(), abs=1e-12)
    assert out["ks_statistic"] == pytest.approx(ks_2samp(sim, human).statistic, abs=1e-12)
    hb = _binned_by_hand(human)
    sb = _binned_by_hand(sim)
    assert out["human_binned"] == pytest.approx(hb.tolist()) and out["simulated_binned"] == pytest.approx(sb.tolist())
    assert out["l1_binned"] == pytest.approx(np.abs(hb - sb).sum(), abs=1e-12)
    assert out["human_share_zero"] == pytest.approx((human == 0).mean())
    if amount == 0.5:
        assert out["wasserstein"] == pytest.approx(0.523, abs=5e-4) and out["ks_statistic"] == pytest.approx(
            0.688, abs=5e-4
        )
        assert hb[2] > 0.129  # the people who gave exactly $1 are in ($0.5, $1]
    lo, hi = out["ci95"]["wasserstein"]
    assert lo <= out["wasserstein"] <= hi


def test_human_grounded_states_hold_the_persuadees_actual_next_turn(p4g_dir):
    from collapse_probe.benchmarks import make_arena
    from collapse_probe.benchmarks.p4g import load_official_p4g
    from collapse_probe.pipelines.audit import human_probe_states

    _, dialogues = load_official_p4g(p4g_dir)
    states = human_probe_states(make_arena("p4g", max_turns=3), dialogues, 12, 3, seed=4)
    assert len(states) >= 8
    # the dialogues read back independently, sentence by sentence
    by_dialogue: dict[str, list[tuple[str, str]]] = {}
    with open(p4g_dir / "full_dialog.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            by_dialogue.setdefault(r["B2"], []).append((r["B4"].strip(), r["Unit"].strip()))
    for s in states:
        _, did, k = s.state_id.split(":")
        sentences = by_dialogue[did]
        turns: list[tuple[str, list[str]]] = []
        for role, text in sentences:
            if turns and turns[-1][0] == role:
                turns[-1][1].append(text)
            else:
                turns.append((role, [text]))
        k = int(k)
        assert turns[k - 1][0] == "0" and turns[k][0] == "1"  # a persuader turn, then the persuadee's reply
        assert s.human_reply == " ".join(turns[k][1])
        history = [m for m in s.episode.messages]
        assert [m["content"] for m in history] == [" ".join(t[1]) for t in turns[:k]]
        assert s.episode.task.data["persona"]["dialogue_id"] == did  # the persona is that persuadee's survey


def test_first_dialogue_checked_by_hand(p4g_dir):
    from collapse_probe.benchmarks.p4g import load_official_p4g

    _, dialogues = load_official_p4g(p4g_dir)
    d = next(x for x in dialogues if x.dialogue_id == "20180904-045349_715_live")
    assert d.turns[0] == ("policy", "Good morning. How are you doing today?")
    assert d.turns[1] == ("simulator", "Hi. I am doing good. How about you?")
    assert d.turns[3] == ("simulator", "Haha. Same here, but it really feels like a Monday.")


def test_human_reply_is_placed_among_the_simulators_classes():
    recs = [
        {"state_id": "a", "status": "ok", "responses": ["no"] * 6 + ["yes"] * 3 + ["maybe"], "human_reply": "Yes!"},
        {"state_id": "b", "status": "ok", "responses": ["no"] * 10, "human_reply": "I'd like to give $1"},
        {"state_id": "c", "status": "ok", "responses": ["ok"] * 5 + ["fine"] * 5, "human_reply": "fine"},
        {"state_id": "d", "status": "infra_error", "responses": [], "human_reply": "x"},
        {"state_id": "e", "status": "ok", "responses": ["x"] * 4},
    ]
    rows = asyncio.run(human_grounding(recs, ExactPartitioner()))
    assert [r["state_id"] for r in rows] == ["a", "b", "c"]
    a, b, c = rows
    assert a["human_class_share"] == pytest.approx(0.3) and a["human_class_rank"] == 2 and not a["outside"]
    assert b["human_class_share"] == 0 and b["human_class_rank"] is None and b["outside"]
    assert c["human_class_rank"] == 1  # tied with the other class: both are modes
    g = grounding_summary(rows, n_boot=200)
    assert g["outside_share"]["estimate"] == pytest.approx(1 / 3)
    assert g["human_class_share"]["estimate"] == pytest.approx((0.3 + 0 + 0.5) / 3)
    lo, hi = g["human_class_share"]["ci95"]
    assert 0 <= lo <= hi <= 0.5


def test_audit_with_human_reports_realism(p4g_dir, write_scripted, tmp_path, monkeypatch, capsys):
    from collapse_probe.benchmarks.p4g import stance as p4g_stance
    from collapse_probe.cli import main

    # the rules stance reader: the default one embeds with the packaged sentence encoder (the real-model tier's)
    monkeypatch.setattr(p4g_stance, "default_stance_reader", lambda: p4g_stance.StanceReader("rules"))
    sim = write_scripted([("No thanks.", 0.6), ("Sure [DONATE $1]", 0.4)])
    out = tmp_path / "audit"
    rc = main(["audit", "--sim", sim, "--human", str(p4g_dir), "--states", "3", "--samples", "10", "--partition",
               "exact", "--out", str(out), "--no-progress"])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    res = json.loads((out / "results.json").read_text())
    ref = res["human_reference"]
    assert ref["donations"]["bins_closed"] == "right" and ref["donations"]["n_human"] == 1017
    assert ref["grounding"]["n_states"] >= 1 and len(ref["grounding_states"]) == ref["grounding"]["n_states"]
    for r in ref["grounding_states"]:
        # the scripted simulator says only two things: a human reply is outside unless it is one of them
        assert r["outside"] == (r["human_reply"].strip().lower().rstrip(".") not in ("no thanks", "sure [donate $1]"))
    assert "matched_states" in ref and ref["matched_states"]["length_words"]["difference_ci95"] is not None
    html = (out / "report.html").read_text()
    assert "Realism: the human" in html and "Realism: the simulator next to the people" in html


def test_grounding_intervals_are_scipys_bca_and_the_wilson_interval():
    from scipy import stats

    from collapse_probe.pipelines.audit._human import _mean_ci, _share_ci

    v = np.array([0.0, 0.0, 0.1, 0.0, 0.5, 0.2, 0.0, 0.05, 0.0, 0.3])
    got = _mean_ci(v, 1000, seed=3)
    ref = stats.bootstrap((v,), np.mean, n_resamples=1000, method="BCa", random_state=np.random.default_rng(3))
    assert got["estimate"] == pytest.approx(v.mean())
    assert got["ci95"] == [ref.confidence_interval.low, ref.confidence_interval.high] and "BCa" in got["method"]
    assert _mean_ci([0.4] * 7, 1000, 0)["ci95"] == pytest.approx(
        [0.4, 0.4]
    )  # every resample is 0.4 (BCa's acceleration is 0/0)
    assert _mean_ci([], 1000, 0) == {"estimate": None, "ci95": None, "n": 0}
    # a share of 0 of 12 yes/no states is not a point: Wilson's upper end, as scipy computes it
    none = _share_ci([False] * 12)
    w = stats.binomtest(0, 12).proportion_ci(method="wilson")
    assert none["estimate"] == 0 and none["ci95"] == pytest.approx([w.low, w.high]) and none["ci95"][1] > 0.2
    assert _share_ci([True, False, True, True])["ci95"] == pytest.approx(
        list(stats.binomtest(3, 4).proportion_ci(method="wilson"))
    )
