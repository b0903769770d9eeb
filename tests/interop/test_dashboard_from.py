"""The dashboard shows an audit of published trajectories like any audit (Streamlit AppTest, headless)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from collapse_probe.pipelines.audit import AuditConfig, run_audit_from
from collapse_probe.report.audit_plots import state_estimate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_results import make_results  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "collapse_probe" / "dashboard" / "app.py"


def test_simulator_view_of_a_published_audit(tmp_path, monkeypatch):
    st_testing = pytest.importorskip("streamlit.testing.v1")
    f = tmp_path / "results.json"
    make_results(f, {"1": [("a", 0.6), ("b", 0.4)], "2": [("c", 0.5), ("d", 0.5)]}, 6, seed=3, infra_failures=1)
    root = tmp_path / "runs"
    run_audit_from(f, "tau2", AuditConfig(partition="exact"), root / "tau2-audit", progress=False)
    res = json.loads((root / "tau2-audit" / "results.json").read_text())
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(root))
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    assert not at.exception
    at.sidebar.radio(key="view").set_value("Simulator").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]
    assert any(res["verdict"] in i.value.replace("\\", "") for i in at.info)
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    # the ε-per-state figure (the collapse map comes before it)
    (per_state,) = [c for c in charts if c["layout"]["title"]["text"].startswith("Collapse error per state")]
    trace = per_state["data"][0]  # then the ε* line's legend entry
    assert trace["x"] == [s["state_id"] for s in res["states"]]
    assert trace["y"] == [state_estimate(s) for s in res["states"]]  # the bias-aware ε̂ the audit prints
