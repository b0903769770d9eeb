"""The dashboard reads results through the typed results models: a file its model refuses is one line
on the page, an older file without the newer optional fields still renders, and reading a file
through its model keeps every field (the page is drawn from the same values)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fixtures  # noqa: E402

from collapse_probe.errors import ConfigError  # noqa: E402
from collapse_probe.report import runs as rd  # noqa: E402
from collapse_probe.results import AuditResults, load, read_results  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "collapse_probe" / "dashboard" / "app.py"

NEWER_TOP = ("verdicts", "notices", "meaning_key", "states_note", "states_audited")
"""Audit fields added on 2026-11-30 and 2026-12-01 (``git log -S``): an audit written on 2026-11-29 has none."""
NEWER_SUMMARY = ("reward_view", "decision_collapse_error", "effective_modes_lower_bound_only")
NEWER_STATE = ("collapse_error_estimate", "reward_view", "hill_note")


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory) -> Path:
    return fixtures.write_audit_run(
        tmp_path_factory.mktemp("runs"), "audit", "sim_div", samples=8, states=2, partition="exact"
    )


def _app(root: Path, monkeypatch, view: str, run: str | None = None):
    st_testing = pytest.importorskip("streamlit.testing.v1")
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(root))
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.query_params["view"] = view
    if run is not None:
        at.query_params["run"] = run
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_reading_through_the_model_keeps_every_field(audit_dir):
    data = json.loads((audit_dir / "results.json").read_text())
    typed = load(audit_dir)
    assert isinstance(typed, AuditResults) and typed.to_json() == data
    assert rd.load_run(audit_dir).typed == typed


def test_a_field_of_the_wrong_type_is_one_line_naming_the_file_and_the_field(audit_dir, tmp_path, monkeypatch):
    d = tmp_path / "runs" / "bad"
    shutil.copytree(audit_dir, d)
    data = json.loads((d / "results.json").read_text())
    data["summary"]["n_states"] = "3"
    (d / "results.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"results.json field summary.n_states is '3'; expected an integer"):
        load(d)
    run = rd.load_run(d)
    assert run.status == "invalid" and run.results is None and run.typed is None
    assert run.invalid == "results.json field summary.n_states is '3'; expected an integer"
    at = _app(tmp_path / "runs", monkeypatch, "Simulator", "bad")
    assert [e.value.replace("\\", "") for e in at.error] == [f"bad: {run.invalid}"]
    runs = _app(tmp_path / "runs", monkeypatch, "Runs").dataframe[0].value
    assert runs["status"].tolist() == ["invalid"] and runs["notes"].tolist() == [run.invalid]


def test_a_file_that_is_not_an_object_or_of_an_unknown_schema_never_raises():
    assert read_results([1, 2], "r.json") == (None, "r.json: expected a JSON object, got list")
    typed, problem = read_results({"schema": "collapse-probe/audit/v9"}, "r.json")
    assert typed is None and problem is not None and problem.startswith("r.json: unknown results schema")


def test_an_earlier_audit_without_the_newer_optional_fields_loads_and_renders(audit_dir, tmp_path, monkeypatch):
    d = tmp_path / "runs" / "old"
    shutil.copytree(audit_dir, d)
    data = json.loads((d / "results.json").read_text())
    for k in NEWER_TOP:
        data.pop(k, None)
    for k in NEWER_SUMMARY:
        data["summary"].pop(k, None)
    for s in data["states"]:
        for k in NEWER_STATE:
            s.pop(k, None)
    data["verdict"] = "COLLAPSED (an earlier verdict line)"
    (d / "results.json").write_text(json.dumps(data))
    typed = load(d)
    assert typed.verdicts is None and typed.summary.reward_view is None and typed.to_json() == data
    at = _app(tmp_path / "runs", monkeypatch, "Simulator", "old")
    assert not at.error and not at.warning, [w.value for w in [*at.error, *at.warning]]
    assert any("an earlier verdict line" in i.value for i in at.info)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["meaning ε̂"] == f"{data['summary']['collapse_error']['estimate']:.3f}"
    assert metrics["reward-view ε̂"] == "n/a"  # no reward view in the earlier file
    # the per-state figure falls back to the plug-in ε̂ of records written before the estimate existed
    traces = json.loads(at.get("plotly_chart")[1].proto.spec)["data"]
    drawn = {x: y for t in traces if t["name"].startswith("direct:") for x, y in zip(t["x"], t["y"], strict=True)}
    assert drawn == {s["state_id"]: s["collapse_error"] for s in data["states"]}


def test_the_terminal_table_reads_the_model_and_an_earlier_file(audit_dir):
    from collapse_probe.report.audit_report import summary_table

    data = json.loads((audit_dir / "results.json").read_text())
    table = summary_table(data)
    assert summary_table(load(audit_dir)) == table  # the pipeline's JSON and the file read back print alike
    estimate = f"{data['summary']['collapse_error']['estimate']:.3f}"

    def row(text: str, name: str) -> str:
        return next(line for line in text.splitlines() if line.startswith(name)).removeprefix(name).strip()

    assert row(table, "  collapse error ε̂ (mean)").startswith(estimate)
    for k in NEWER_TOP:
        data.pop(k, None)
    for k in NEWER_SUMMARY:
        data["summary"].pop(k, None)
    earlier = summary_table(data)
    assert row(earlier, "reward view") == "not measured"  # the estimate row says why, once
    assert row(earlier, "  collapse error ε̂ (mean)").startswith(f"{estimate} [")  # no verdict: estimate and interval
