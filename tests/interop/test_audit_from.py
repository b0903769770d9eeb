"""``audit --from``: published trajectories audited by shared prefix, checked against an independent
computation from the same file."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from collapse_probe.cli import main
from collapse_probe.metrics.estimators import mean_collapse_error_interval
from collapse_probe.pipelines.audit import AuditConfig, run_audit_from

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_results import GREETING, make_results, reply_counts  # noqa: E402

TASKS = {
    "12": [("I want to return a jacket.", 0.5), ("My order arrived broken.", 0.3), ("Where is my refund?", 0.2)],
    "31": [("Cancel my order please.", 0.85), ("I need to change my address.", 0.15)],
    "40": [("Hello, I need help with an exchange.", 0.4), ("Can you check my order status?", 0.35),
           ("I was charged twice.", 0.25)],
}  # fmt: skip


def independent_states(results_file: Path) -> list[tuple[str, list[str]]]:
    """Per shared prefix (task and every earlier message: role, content, tool calls by name and arguments;
    tool-call ids differ between trials and are bookkeeping), the user's replies; written from the file
    with plain json, not the package's reader. Order: first appearance."""
    data = json.loads(results_file.read_text())
    groups: dict[tuple, tuple[str, list[str]]] = {}
    for sim in data["simulations"]:
        if sim["termination_reason"] in ("infrastructure_error", "context_window_exceeded"):
            continue
        msgs = sim["messages"]
        for i, m in enumerate(msgs):
            if m["role"] != "user":
                continue
            prefix = tuple(
                (
                    p["role"],
                    p.get("content") or "",
                    json.dumps([(c["name"], c["arguments"]) for c in p.get("tool_calls") or []], sort_keys=True),
                )
                for p in msgs[:i]
            )
            groups.setdefault((sim["task_id"], prefix), (sim["task_id"], []))[1].append(m["content"])
    return [g for g in groups.values() if len(g[1]) >= 2]


@pytest.mark.parametrize("trials,seed", [(7, 3), (11, 5)])
def test_tau2_per_prefix_epsilon_and_the_mean_interval_equal_an_independent_computation(tmp_path, trials, seed):
    f = tmp_path / "results.json"
    make_results(f, TASKS, trials, seed=seed, infra_failures=2, reviewed_user_errors=3)
    res = run_audit_from(f, "tau2", AuditConfig(partition="exact"), tmp_path / "run", progress=False)

    expected = independent_states(f)
    assert len(res["states"]) == len(expected) and res["summary"]["n_states"] == len(expected)
    for row, (task, replies) in zip(res["states"], expected, strict=True):
        assert row["task_id"] == task and row["n"] == len(replies)
        assert row["class_counts"] == reply_counts(replies)
        assert row["collapse_error"] == pytest.approx(1 - max(reply_counts(replies)) / len(replies), abs=1e-12)
    mean = mean_collapse_error_interval([reply_counts(r) for _, r in expected], seed=0)
    assert res["summary"]["collapse_error"]["estimate"] == pytest.approx(mean.estimate, abs=1e-12)
    assert res["summary"]["collapse_error"]["ci95"] == pytest.approx(list(mean.ci95), abs=1e-12)
    # the opening state of each task: the reply to the fixed greeting, every evaluable trial
    openings = [s for s in res["states"] if s["kind"] == "opening"]
    assert len(openings) == len(TASKS)
    assert sum(s["n"] for s in openings) == len(TASKS) * trials - 2  # two infrastructure failures excluded
    assert res["source"]["infra_failures"] == 2 and res["source"]["format"] == "tau2"
    assert res["simulator"] == "gpt-4.1-2025-04-14" and res["benchmark"] == "tau2-retail"


def test_run_directory_is_a_normal_audit_with_report_samples_and_published_blocks(tmp_path):
    f = tmp_path / "results.json"
    make_results(f, TASKS, 6, seed=1, infra_failures=1, reviewed_user_errors=2)
    out = tmp_path / "run"
    assert main(["audit", "--from", str(f), "--partition", "exact", "--out", str(out), "--no-progress"]) == 0
    res = json.loads((out / "results.json").read_text())
    cfg = json.loads((out / "config.json").read_text())
    assert res["schema"] == "collapse-probe/audit/v1" and cfg["kind"] == "audit"
    assert cfg["source"]["sha256"] == res["source"]["sha256"] and cfg["fingerprints"]
    assert (out / "report.html").stat().st_size > 5000
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["state_id"] for s in samples] == [s["state_id"] for s in res["states"]]
    assert all(len(s["conversations"]) == s["n"] for s in samples)
    assert res["verdicts"]["meaning"]["label"] in ("COLLAPSED", "NOT COLLAPSED", "INCONCLUSIVE")
    assert res["verdict"].startswith(("COLLAPSED", "NOT COLLAPSED", "INCONCLUSIVE"))
    assert "--states" not in res["verdict_text"]["next"]  # a published file cannot be sampled again
    errs = res["simulator_errors"]
    assert errs["flagged"] == 2 and errs["flagged_critical"] == 2 and errs["conversations"] == 3 * 6 - 1
    var = res["variance"]
    assert var["n_tasks"] == 3 and set(var["shares"]) == {"task", "simulator", "agent", "judge"}
    assert "variance_share" not in res  # the decomposition replaces the single across-trials share
    # the dashboard reads it like any audit run
    from collapse_probe.report.runs import discover_runs

    (run,) = discover_runs(out)
    assert run.kind == "audit" and run.status == "complete"


def test_rerun_resumes_and_a_changed_file_is_refused(tmp_path):
    f = tmp_path / "results.json"
    make_results(f, TASKS, 5, seed=2)
    out = tmp_path / "run"
    first = run_audit_from(f, "tau2", AuditConfig(partition="exact"), out, progress=False)
    again = run_audit_from(f, "tau2", AuditConfig(partition="exact"), out, progress=False)
    assert again["summary"] == first["summary"]
    assert len((out / "samples.jsonl").read_text().splitlines()) == len(first["states"])  # nothing measured twice
    moved = tmp_path / "elsewhere" / "results.json"
    moved.parent.mkdir()
    moved.write_bytes(f.read_bytes())
    run_audit_from(moved, "tau2", AuditConfig(partition="exact"), out, progress=False)  # the same content resumes
    assert len((out / "samples.jsonl").read_text().splitlines()) == len(first["states"])
    make_results(f, TASKS, 5, seed=9)
    from collapse_probe.errors import ConfigError

    with pytest.raises(ConfigError, match="different configuration"):
        run_audit_from(f, "tau2", AuditConfig(partition="exact"), out, progress=False)


def test_directory_format_reads_like_the_monolithic_file(tmp_path):
    make_results(tmp_path / "mono" / "results.json", TASKS, 5, seed=4)
    make_results(tmp_path / "dir" / "results.json", TASKS, 5, seed=4, dir_format=True)
    a = run_audit_from(tmp_path / "mono" / "results.json", "tau2", AuditConfig(partition="exact"), None, progress=False)
    b = run_audit_from(tmp_path / "dir", "tau2", AuditConfig(partition="exact"), None, progress=False)
    key = lambda r: sorted((s["task_id"], s["kind"], s["class_counts"]) for s in r["states"])  # noqa: E731
    assert key(a) == key(b)
    assert a["summary"]["collapse_error"]["plugin"] == pytest.approx(b["summary"]["collapse_error"]["plugin"])
    # states come in the order of first appearance: for the directory format, the simulation files sorted by
    # name, as tau2-bench's own loader reads them; the bias-aware estimate is seeded, so order matters to it
    mean = mean_collapse_error_interval([s["class_counts"] for s in b["states"]], seed=0)
    assert b["summary"]["collapse_error"]["estimate"] == pytest.approx(mean.estimate, abs=1e-12)


@pytest.mark.realmodel
def test_meaning_partition_by_default_merges_paraphrases_that_exact_text_splits(tmp_path):
    pytest.importorskip("sentence_transformers")
    # one task; the user's opening says one of two things, each in several wordings (true ε = 0.3)
    para = [("I'd like to return the jacket I bought.", 0.25), ("I want to send back my jacket.", 0.25),
            ("Can I return this jacket?", 0.2), ("My package never arrived.", 0.15),
            ("The order I placed has not shown up.", 0.15)]  # fmt: skip
    f = tmp_path / "results.json"
    make_results(f, {"1": para, "2": para}, 16, seed=7)
    by_meaning = run_audit_from(f, "tau2", AuditConfig(), None, progress=False)
    exact = run_audit_from(f, "tau2", AuditConfig(partition="exact"), None, progress=False)
    assert by_meaning["partitioner"] == "disclosure"  # τ2 has no meaning key: the customer-service partition
    opening = {s["task_id"]: s for s in by_meaning["states"] if s["kind"] == "opening"}
    opening_exact = {s["task_id"]: s for s in exact["states"] if s["kind"] == "opening"}
    for t in ("1", "2"):
        assert len(opening[t]["class_counts"]) < len(opening_exact[t]["class_counts"])
        assert opening[t]["collapse_error"] < opening_exact[t]["collapse_error"]


def test_user_error_termination_hallucination_and_audio_records(tmp_path):
    f = tmp_path / "results.json"
    data = make_results(f, TASKS, 4, seed=3)
    sims = data["simulations"]
    sims[0]["termination_reason"] = "user_error"
    sims[1]["hallucination_check"] = {"reasoning": "", "hallucination_found": True, "errors": [], "summary": ""}
    sims[2]["messages"] = None
    sims[2]["ticks"] = [{"tick_id": 0, "timestamp": "t"}]
    sims[3]["review"] = {"has_errors": True, "agent_error": True, "errors": [{"source": "agent", "reasoning": "x"}]}
    sims[4]["unknown_future_field"] = {"anything": [1, 2]}
    f.write_text(json.dumps(data))
    res = run_audit_from(f, "tau2", AuditConfig(partition="exact"), None, progress=False)
    errs = res["simulator_errors"]
    assert errs["flags"] == {
        "termination:user_error": 1,
        "hallucination_check": 1,
    }  # the agent's error is not the simulator's
    # a voice simulation is read from its ticks; one whose ticks carry no text at all is skipped, counted
    assert res["source"]["skipped"] == {"full-duplex (ticks carry no text: no chunk text, no transcript)": 1}


@pytest.mark.parametrize(
    "content,match",
    [
        ("{not json", "not valid JSON"),
        ('{"info": {}, "simulations": [{"task_id": "1"}]}', r"simulations\[0\]\.id: Field required"),
        ('{"simulations": [{"id": "a", "task_id": "1", "messages": [{"content": "x"}]}]}', r"messages\[0\]\.role"),
        ("[1, 2]", "expected a JSON object"),
        ('{"info": {}}', "no 'simulations'"),
    ],
)
def test_bad_tau2_files_are_one_line_errors(tmp_path, capsys, content, match):
    f = tmp_path / "results.json"
    f.write_text(content)
    assert main(["audit", "--from", str(f), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len([line for line in err if "error:" in line]) == 1
    import re

    assert re.search(match, err[0]), err
    assert not (tmp_path / "run").exists()


def test_no_shared_prefix_is_a_clear_error(tmp_path, capsys):
    f = tmp_path / "results.json"
    make_results(f, TASKS, 1, seed=0)
    assert main(["audit", "--from", str(f), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    assert "no conversation prefix has 2 or more simulator replies" in capsys.readouterr().err


def test_flags_that_do_not_apply_are_refused(tmp_path, capsys):
    f = tmp_path / "results.json"
    make_results(f, TASKS, 3, seed=0)
    assert main(["audit", "--from", str(f), "--compare-vs", "--out", str(tmp_path / "run")]) == 2
    assert "--compare-vs does not apply to --from" in capsys.readouterr().err


def test_greeting_is_the_shared_opening_prefix(tmp_path):
    f = tmp_path / "results.json"
    make_results(f, {"9": [("a b c", 0.5), ("d e f", 0.5)]}, 8, seed=1)
    res = run_audit_from(f, "tau2", AuditConfig(partition="exact"), tmp_path / "run", progress=False)
    (opening,) = [s for s in res["states"] if s["kind"] == "opening"]
    assert opening["n"] == 8 and math.isclose(opening["collapse_error"], 1 - max(opening["class_counts"]) / 8)
    recs = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    (rec,) = [r for r in recs if r["state_id"] == opening["state_id"]]
    assert rec["context"] == [{"role": "policy", "content": GREETING}] and rec["source"] == "published"
