"""The dashboard (Streamlit AppTest, headless) over fixture runs of every kind, and run discovery."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fixtures  # noqa: E402  (tests/dashboards/fixtures.py)

from collapse_probe.report import runs as rd  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory) -> Path:
    """Finished runs of every kind (made by the real pipelines where they exist) plus half-written ones."""
    root = tmp_path_factory.mktemp("runs")
    cp = fixtures.write_crossplay_run(root)
    fixtures.write_gate_verdict(cp, root / "gate" / "verdict.json")
    fixtures.write_audit_run(root, "audit_mode", "sim_mode", compare_vs=True)
    fixtures.write_audit_run(root, "audit_div", "sim_div", samples_per_state=30)
    fixtures.write_train_run(root, "train_single", "single")
    fixtures.write_train_run(root, "train_vs", "vs")
    fixtures.write_lab_run(root, "lab_population", "population", steps=20)
    fixtures.write_half_written_runs(root / "live")
    return root


@pytest.fixture(scope="module")
def half_written_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("live")
    fixtures.write_half_written_runs(root)
    return root


def _app(root: Path):
    """Run the app once; the caller has pointed ``$COLLAPSE_PROBE_RUNS_DIR`` at ``root`` (monkeypatch)."""
    st_testing = pytest.importorskip("streamlit.testing.v1")
    assert os.environ["COLLAPSE_PROBE_RUNS_DIR"] == str(root)
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    return at


@pytest.fixture
def app(runs_root, monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(runs_root))
    return _app(runs_root)


def _view(at, name: str):
    at.sidebar.radio(key="view").set_value(name).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]  # no run was misread as off-schema
    return at


def _plotly(at) -> list:
    return list(at.get("plotly_chart"))


def _figure(chart) -> dict:
    return json.loads(chart.proto.spec)


# ------------------------------------------------------------------------------------------------ views


def test_runs_view_lists_every_kind(app):
    assert not app.exception
    table = app.dataframe[0].value
    kinds = dict(zip(table["run"], table["kind"], strict=True))
    assert kinds["crossplay"] == "crossplay" and kinds["gate"] == "gate" and kinds["audit_mode"] == "audit"
    assert kinds["train_single"] == "train" and kinds["lab_population"] == "lab"
    status = dict(zip(table["run"], table["status"], strict=True))
    assert status["live/crossplay_resuming"] == "in progress" and status["crossplay"] == "complete"
    assert status["gate"] == "complete"


def test_simulator_view_shows_state_classes_and_vs(app, runs_root):
    at = _view(app, "Simulator")
    assert [s.label for s in at.selectbox] == ["Audit run", "State"]
    assert len(_plotly(at)) == 2  # audit_div (first) has no VS results
    at.selectbox(key="sim_run").set_value("audit_mode [audit, complete]").run()
    assert not at.exception
    charts = _plotly(at)
    assert len(charts) == 3  # per state, by turn, direct vs VS
    names = {t.get("name") for t in _figure(charts[2])["data"]}
    assert names == {"direct", "verbalized sampling"}
    # the class table of the chosen state holds its responses, counts summing to N
    classes = at.dataframe[0].value
    assert classes["count"].sum() == 12
    assert set(classes.columns) >= {"class", "count", "share", "examples"}
    assert any("DONATE" in e for e in classes["examples"])
    # ε values in the figure are those of results.json, sorted ascending
    res = json.loads((runs_root / "audit_mode" / "results.json").read_text())
    ys = _figure(charts[0])["data"][0]["y"]
    assert ys == sorted(s["collapse_error"] for s in res["states"])


def test_simulator_view_state_selection(app):
    at = _view(app, "Simulator")
    options = at.selectbox(key="sim_state").options
    assert len(options) == 6
    at.selectbox(key="sim_state").set_value(options[-1]).run()
    assert not at.exception
    assert at.dataframe[0].value["count"].sum() == 30


def test_crossplay_view_heatmap_transfer_and_gate(app):
    at = _view(app, "Cross-play")
    assert [s.label for s in at.selectbox] == ["Cross-play run"]
    charts = [_figure(c) for c in _plotly(at)]
    types = [f["data"][0]["type"] for f in charts]
    assert types[0] == "heatmap" and "bar" in types[1:]
    heat = charts[0]["data"][0]
    assert len(heat["z"]) == 2 and len(heat["z"][0]) == 2
    md = " ".join(m.value for m in at.markdown)
    assert "Gate verdicts" in md and "pass" in md


def test_crossplay_view_in_progress_run(app):
    at = _view(app, "Cross-play")
    at.selectbox(key="cp_run").set_value("live/crossplay_resuming [crossplay, in progress]").run()
    assert not at.exception
    assert any("in progress" in i.value for i in at.info)
    progress = at.dataframe[0].value
    assert progress["finished"].tolist() == [1]  # the torn second record is not counted


def test_training_view_overlays_runs(app):
    at = _view(app, "Training")
    chosen = at.multiselect(key="train_runs")
    labels = [o for o in chosen.options if not o.startswith("live/")]
    chosen.set_value(labels).run()
    assert not at.exception
    charts = [_figure(c) for c in _plotly(at)]
    assert len(charts) == 4
    reward_traces = {t["name"] for t in charts[0]["data"]}
    assert {
        "train_single — train",
        "train_single — held-out",
        "train_vs — train",
        "lab_population — held-out",
    } <= reward_traces
    held = next(t for t in charts[0]["data"] if t["name"] == "train_single — held-out")
    assert held["x"] == [0, 10, 20, 30, 40, 50, 60]  # held-out only where the trainer evaluated
    assert any("bound checks" in m.value for m in at.markdown)


def test_compare_view_two_audits(app):
    at = _view(app, "Compare")
    assert [s.label for s in at.selectbox] == ["Audit A", "Audit B"]
    charts = [_figure(c) for c in _plotly(at)]
    assert len(charts) == 3
    names = {t["name"] for t in charts[2]["data"]}
    assert names == {"audit_div", "audit_mode"}


@pytest.mark.parametrize("view", ["Runs", "Simulator", "Cross-play", "Training", "Compare"])
def test_half_written_runs_do_not_crash(half_written_root, monkeypatch, view):
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(half_written_root))
    at = _app(half_written_root)
    at = _view(at, view)
    if view in ("Simulator", "Cross-play"):
        assert any("in progress" in i.value for i in at.info)
    if view == "Training":
        assert len(_plotly(at)) == 4  # the steps recorded before the torn line are drawn


def test_off_schema_results_are_a_warning_not_a_crash(tmp_path, monkeypatch):
    d = tmp_path / "odd"
    d.mkdir()
    (d / "results.json").write_text(json.dumps({"schema": "collapse-probe/audit/v1", "summary": [1], "states": "x"}))
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(tmp_path))
    at = _app(tmp_path)
    at.sidebar.radio(key="view").set_value("Simulator").run()
    assert not at.exception
    assert at.warning and "expected schema" in at.warning[0].value


def test_missing_runs_dir_is_an_error_box(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(tmp_path / "nope"))
    at = _app(tmp_path / "nope")
    assert not at.exception
    assert "not a directory" in at.error[0].value


# ------------------------------------------------------------------------------------------------ discovery


def test_read_jsonl_skips_torn_tail_and_bad_lines(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"a": 1}\nnot json\n[1]\n{"a": 2}\n{"a": 3')
    read = rd.read_jsonl(p)
    assert [r["a"] for r in read.records] == [1, 2]
    assert read.torn_tail and read.bad_lines == [2, 3]
    assert rd.read_jsonl(tmp_path / "absent.jsonl").records == []


def test_read_json_reports_partial_file(tmp_path):
    (tmp_path / "r.json").write_text('{"schema": "x", "cells": [')
    value, problem = rd.read_json(tmp_path / "r.json")
    assert value is None and "not complete JSON" in problem
    assert rd.read_json(tmp_path / "none.json") == (None, "none.json is missing")


def test_discovery_of_half_written_runs(half_written_root):
    runs = {r.name: r for r in rd.discover_runs(half_written_root)}
    assert set(runs) == {"audit_running", "crossplay_resuming", "train_running", "lab_starting", "foreign_results"}
    assert all(r.status == "in progress" for r in runs.values())
    assert runs["crossplay_resuming"].kind == "crossplay"
    assert any("not complete JSON" in p for p in runs["crossplay_resuming"].problems)
    assert any("empty" in p for p in runs["lab_starting"].problems)
    curve = rd.training_curve(runs["train_running"])
    assert [r["step"] for r in curve] == [0, 1, 2, 3]


def test_training_curve_from_lab_lists_and_repeated_steps(tmp_path):
    lab = rd.RunInfo(
        path=tmp_path, name="lab", kind="lab", config=None, files=(),
        results={"schema": "collapse-probe/lab/v1", "steps": [0, 5], "train_reward": [0.1, 0.2],
                 "zero_std_fraction": [None, 0.5], "method": "single", "bound_checks": {"tv_bound_holds": True}},
    )  # fmt: skip
    assert rd.training_curve(lab) == [
        {"step": 0, "train_reward": 0.1},
        {"step": 5, "train_reward": 0.2, "zero_std_fraction": 0.5},
    ]
    # a resumed trainer that redid step 1: the last record wins
    rows = [
        {"step": 0, "x": 1.0},
        {"step": 1, "x": 2.0},
        {"step": 1, "x": 3.0},
        {"step": "bad"},
        {"step": 2, "x": float("nan")},
    ]
    assert rd.training_curve_from_records(rows) == [{"step": 0, "x": 1.0}, {"step": 1, "x": 3.0}, {"step": 2}]


def test_discovery_does_not_follow_symlink_loops(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text('{"kind": "audit"}')
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    assert [r.name for r in rd.discover_runs(tmp_path)] == ["a"]


def test_discover_runs_rejects_a_file(tmp_path):
    from collapse_probe.errors import ConfigError

    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        rd.discover_runs(tmp_path / "f")


def test_cli_command_binds_localhost(tmp_path):
    from collapse_probe.cli import build_parser
    from collapse_probe.cli.dashboard import streamlit_command

    args = build_parser().parse_args(["dashboard", str(tmp_path)])
    assert args.host == "127.0.0.1" and args.port == 8501
    cmd = streamlit_command(args.runs_dir, args.port, args.host)
    assert cmd[1:4] == ["-m", "streamlit", "run"] and Path(cmd[4]) == APP
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert cmd[-2:] == ["--", str(tmp_path.resolve())]


def test_cli_rejects_missing_runs_dir(tmp_path, capsys):
    from collapse_probe.cli import main

    assert main(["dashboard", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_human_reference_overlay_matches_states():
    from collapse_probe.report import dashboard_plots as dp

    states = [{"state_id": f"s{i}", "turn": 0, "n": 20, "collapse_error": e} for i, e in enumerate([0.5, 0.1, 0.3])]
    ref = {"states": [{"state_id": "s1", "collapse_error": 0.6}, {"state_id": "s0", "collapse_error": 0.7}],
           "summary": {"collapse_error": {"estimate": 0.65}}}  # fmt: skip
    fig = dp.human_reference_figure({"states": states, "human_reference": ref})
    sim, human = fig.data[0], fig.data[1]
    assert list(sim.y) == [0.1, 0.3, 0.5]  # sorted: s1, s2, s0
    assert list(human.x) == [0, 2] and list(human.y) == [0.6, 0.7]  # drawn above s1 and s0
    with pytest.raises(ValueError, match="no human reference"):
        dp.human_reference_figure({"states": states})
