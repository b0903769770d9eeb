"""The dashboard's "Simulator effects" view over a ``collapse-probe compare`` run (Streamlit AppTest, headless)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_compare import tau2_file  # noqa: E402  (tests/test_compare.py)

from collapse_probe.pipelines.compare import CompareConfig, run_compare  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "collapse_probe" / "dashboard" / "app.py"


def test_simulator_effects_view_shows_the_lines_the_terminal_prints(tmp_path, monkeypatch):
    st_testing = pytest.importorskip("streamlit.testing.v1")
    root = tmp_path / "runs"
    root.mkdir()
    files = []
    for agent, sim, rewards in (("A", "x", [1.0, 1.0, 0.0, 1.0]), ("A", "y", [0.0, 1.0, 0.0, 0.0]),
                                ("B", "x", [0.0, 1.0, 0.0, 0.0]), ("B", "y", [1.0, 1.0, 1.0, 0.0])):  # fmt: skip
        files.append(str(tau2_file(tmp_path / f"{agent}{sim}.json", agent, sim,
                                   {f"t{i}": [r, r] for i, r in enumerate(rewards)})))  # fmt: skip
    run_compare(files, CompareConfig(n_boot=100), root / "cmp")
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(root))
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.sidebar.radio(key="view").set_value("Simulator effects").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]
    text = " ".join(m.value for m in at.markdown)
    assert "A: y vs x: -50.0 points [" in text and "B: y vs x: +50.0 points [" in text
    (chart,) = list(at.get("plotly_chart"))
    fig = json.loads(chart.proto.spec)
    assert [round(x, 6) for x in fig["data"][0]["x"]] == [-50.0, 50.0]
    assert any("Rank flips" in m.value for m in at.markdown)
    frames = [d.value for d in at.dataframe]
    assert any("flip rate" in f.columns for f in frames)


def test_the_runs_table_gives_a_comparison_its_count_of_effects_beyond_zero(tmp_path, monkeypatch):
    st_testing = pytest.importorskip("streamlit.testing.v1")
    root = tmp_path / "runs"
    root.mkdir()
    a = tau2_file(tmp_path / "a.json", "A", "x", {f"t{i}": [1.0, 1.0] for i in range(12)})
    b = tau2_file(tmp_path / "b.json", "A", "y", {f"t{i}": [0.0, 0.0] for i in range(12)})
    run_compare([str(a), str(b)], CompareConfig(), root / "cmp")
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(root))
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    row = table[table["run"] == "cmp"].iloc[0]
    assert row["kind"] == "compare" and row["verdict"] == "1 of 1 simulator effects exclude 0"
