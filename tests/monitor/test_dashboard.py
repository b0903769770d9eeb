"""The dashboard's Monitor view over a monitor run directory (Streamlit AppTest, headless)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collapse_probe.integrations.monitor import CollapseMonitor

APP = Path(__file__).resolve().parents[2] / "collapse_probe" / "dashboard" / "app.py"


def test_monitor_view_shows_the_figures_and_the_alarms(tmp_path, monkeypatch):
    st_testing = pytest.importorskip("streamlit.testing.v1")
    m = CollapseMonitor(partition="exact", out=tmp_path / "runs" / "grpo-monitor")
    for k, replies in enumerate([["[DONATE $1]", "[DONATE $2]", "[DONATE $0]"], ["[DONATE $1]"] * 60]):
        m.record_turn(f"{k}", replies[0], replies[1:])
        m.end_step(k)
    m.close()
    assert json.loads((tmp_path / "runs" / "grpo-monitor" / "monitor.jsonl").read_text().splitlines()[1])["alarms"]
    from collapse_probe.report.runs import discover_runs

    # a closed monitor is a finished run (it writes no results.json: its rows are the result)
    assert [(r.kind, r.status) for r in discover_runs(tmp_path / "runs")] == [("monitor", "complete")]
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(tmp_path / "runs"))
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.sidebar.radio(key="view").set_value("Monitor").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]
    charts = list(at.get("plotly_chart"))
    assert len(charts) == 4
    spec = json.loads(charts[0].proto.spec)
    assert any("ε̂ (meaning view)" == tr.get("name") for tr in spec["data"])
    assert len(at.dataframe) == 1  # the alarms
