"""What a new user meets in the first hour: ``audit --from``'s usage line, the help of ``--states`` and
``--judge``, an unknown shipped scripted model, and a Verbalized-Sampling turn whose candidates hold no reply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collapse_probe.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def _help(command: str, flag: str) -> str:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    return next(a.help for a in sub._actions if flag in a.option_strings) or ""


@pytest.mark.parametrize("partition", [["--partition", "exact"], pytest.param([], marks=pytest.mark.realmodel)])
def test_audit_from_says_the_replies_were_read_from_the_file(tmp_path, capsys, partition):
    # the README's command (the default partition, by meaning) in the real-model tier; by exact text here
    sample = ROOT / "examples" / "tau2-sample.json"
    out = tmp_path / "from"
    argv = ["audit", "--from", str(sample), "--format", "tau2", *partition, "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"usage: no model called (the replies were read from {sample})" in printed
    assert "from the cache" not in printed
    # a view that is not measured is over no states: no "over none" after its reason
    report = (out / "report.html").read_text()
    assert "not measured:" in report and "over none" not in report
    res = json.loads((out / "results.json").read_text())
    assert res["verdicts"]["reward"]["label"] == "NOT MEASURED" and res["verdicts"]["reward"]["over"] is None
    from collapse_probe.integrations.interop._card import simulator_card

    names = {f["name"] for f in simulator_card([out])["figures"]}
    assert "reward view: reason" in names and "reward view: over" not in names


def test_states_help_says_tasks_and_the_probe_states_they_give():
    text = _help("audit", "--states")
    assert "not of states" in text and "2 tasks are 4 probe states" in text


def test_judge_help_is_benchmark_neutral():
    text = _help("audit", "--judge")
    assert "--partition judge" in text
    for word in ("τ2", "tau2", "DB-only", "natural-language assertions"):
        assert word not in text


def test_an_unknown_scripted_model_lists_the_shipped_ones(capsys):
    assert main(["audit", "--sim", "scripted:nope", "--states", "1", "--samples", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'nope' does not exist" in err[0]
    assert "scripted:p4g_donor_diverse" in err[0] and "scripted:p4g_persuader_cause" in err[0]
    assert main(["audit", "--sim", "scripted:p4g_donor_divers", "--states", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'scripted:p4g_donor_diverse'" in err


def test_a_vs_turn_whose_candidates_are_only_picks_is_asked_as_a_direct_reply(tmp_path, write_scripted, capsys):
    # a small model answers the candidate format with a pick ("third reply"): no reply to sample; the same
    # seeded request would give the same pick, so the turn is asked once more as a direct reply
    sim = write_scripted([("1. (p=0.5) third reply\n2. (p=0.5) first reply", 1.0)], name="picks.json")
    pol = write_scripted([("How much would you like to give?", 1.0)], name="pol.json")
    out = tmp_path / "play"
    argv = ["play", "--policy", pol, "--sim", f"vs:{sim}", "--tasks", "1", "--rollouts",
            "1", "--max-turns", "1", "--vs-k", "2", "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr()
    rec = json.loads((out / "conversations.jsonl").read_text().splitlines()[0])
    assert rec["status"] != "infra_error"
    turns = [m for m in rec["messages"] if m["role"] == "simulator"]
    assert turns and all(m["meta"]["vs"]["fallback"] == "direct" for m in turns)
    assert all(m["meta"]["vs"]["failure_reason"] == "a pick among replies, not replies" for m in turns)
    assert all(m["content"].strip() for m in turns)


def test_an_empty_reply_failure_does_not_advise_the_rerun_that_reproduces_it():
    from collapse_probe.core._observe import no_result_reason

    text = no_result_reason(1, "vs:smollm2: empty reply (simulator turn), also when asked again")
    assert "rerun the same command" not in text and "another --seed" in text
    other = no_result_reason(1, "openai/x: ConnectionError: refused")
    assert "rerun the same command to retry them" in other
