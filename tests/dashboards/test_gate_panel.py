"""The dashboard's gate verdict panel reads the verdict through :class:`~collapse_probe.results.GateResults`:
a verdict the gate wrote shows its checks from the model; an older or hand-edited ``gate --json`` file
still shows whose verdict it is and its outcome, with the one line its model gives instead of the checks."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fixtures  # noqa: E402

from collapse_probe.report.runs import read_gate_verdict  # noqa: E402
from collapse_probe.results import GateResults  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "collapse_probe" / "dashboard" / "app.py"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    cp = fixtures.write_crossplay_run(root)
    fixtures.write_gate_verdict(cp, root / "gate" / "verdict.json")
    return root


def _page(root: Path, monkeypatch):
    st_testing = pytest.importorskip("streamlit.testing.v1")
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(root))
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.query_params["view"] = "Cross-play"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _checks_tables(at) -> list:
    return [d.value for d in at.dataframe if "check" in d.value.columns]


def test_a_verdict_the_gate_wrote_shows_its_checks_from_the_model(root, monkeypatch):
    verdict = json.loads((root / "gate" / "verdict.json").read_text())
    typed, problem = read_gate_verdict(verdict, "gate/verdict.json")
    assert isinstance(typed, GateResults) and problem is None and typed.to_json() == verdict
    at = _page(root, monkeypatch)
    (table,) = _checks_tables(at)
    assert table["check"].tolist() == [c.name for c in typed.checks]
    assert table["message"].tolist() == [c.message for c in typed.checks]
    assert not [w for w in at.warning if "checks not shown" in w.value]


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda v: [v.pop(k) for k in ("schema", "level", "exit_code")], "gate/verdict.json field 'level' is missing"),
        (lambda v: v["checks"][0].update(status="maybe"), "gate/verdict.json field checks[0].status is 'maybe'"),
    ],
    ids=["older file without level and exit_code", "hand-edited check status"],
)
def test_a_verdict_its_model_refuses_shows_the_outcome_and_the_one_line_problem(
    root, tmp_path, monkeypatch, edit, problem
):
    runs = tmp_path / "runs"
    shutil.copytree(root, runs)
    path = runs / "gate" / "verdict.json"
    verdict = json.loads(path.read_text())
    edit(verdict)
    path.write_text(json.dumps(verdict))
    typed, line = read_gate_verdict(verdict, "gate/verdict.json")
    assert typed is None and line is not None and line.startswith(problem) and "\n" not in line
    at = _page(runs, monkeypatch)
    assert not _checks_tables(at)
    warnings = [w.value.replace("\\", "") for w in at.warning if "checks not shown" in w.value]
    assert warnings == [f"checks not shown: {line}"]
    heads = [m.value.replace("\\", "") for m in at.markdown if "(gate/verdict.json)" in m.value]
    assert len(heads) == 1 and verdict["outcome"] in heads[0] and verdict["policy"] in heads[0]
