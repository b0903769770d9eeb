"""Runs on a scenario file are runs like any other: a ``--config`` file and the Python API name the file,
the run directories are found, reported and drawn by the dashboard."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from collapse_probe.benchmarks import make_arena
from collapse_probe.benchmarks.scenarios import ScenarioArena, example_path
from collapse_probe.cli import main
from collapse_probe.rollout.runspec import ArenaSpec

APP = Path(__file__).resolve().parents[2] / "collapse_probe" / "dashboard" / "app.py"
SIMS = "scripted:clinic_patient_train,scripted:clinic_patient_cautious,scripted:clinic_patient_anxious"


def _cli(*argv: str) -> int:
    try:
        return int(main(list(argv)) or 0)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_the_python_api_and_the_registry_build_the_arena(tmp_path):
    spec = ArenaSpec("scenarios", {"scenarios": str(example_path()), "max_turns": 2})
    arena = spec.build()
    assert isinstance(arena, ScenarioArena) and arena.max_turns == 2 and len(arena.load_tasks()) == 6
    recorded = spec.resolve().to_dict()
    assert recorded["benchmark"] == "scenarios" and recorded["data_fingerprints"]["scenarios"].startswith("sha256:")
    assert isinstance(make_arena("scenarios", scenarios=str(example_path())), ScenarioArena)


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    shutil.copy(example_path(), root / "clinic.yaml")
    (root / "audit.yaml").write_text(
        "benchmark: scenarios\nscenarios: clinic.yaml\nsim: scripted:clinic_patient_train\n"
        "policy: scripted:clinic_agent_promise\nmax-turns: 2\nstates: 3\nsamples: 20\npartition: exact\n"
    )
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert _cli("audit", "--config", "audit.yaml", "--no-progress", "--out", "audit") == 0
        assert _cli("crossplay", "--benchmark", "scenarios", "--scenarios", "clinic.yaml", "--max-turns", "2",
                    "--policies", "scripted:clinic_agent_promise,scripted:clinic_agent_thorough", "--sims", SIMS,
                    "--train-sim", "scripted:clinic_patient_train", "--tasks", "3", "--rollouts", "2",
                    "--no-progress", "--out", "crossplay") == 0  # fmt: skip
    finally:
        os.chdir(cwd)
    return root


def test_a_config_file_names_the_scenario_file(runs_root):
    config = json.loads((runs_root / "audit" / "config.json").read_text())
    assert config["arena"]["benchmark"] == "scenarios" and config["arena"]["scenarios"] == "clinic.yaml"
    res = json.loads((runs_root / "audit" / "results.json").read_text())
    assert res["summary"]["reward_view"]["estimate"] == 0.0  # the training patient always agrees to a promise
    assert (runs_root / "audit" / "report.html").is_file() and (runs_root / "crossplay" / "report.html").is_file()


def test_the_dashboard_draws_scenario_runs(runs_root, monkeypatch):
    from collapse_probe.report import runs as rd

    kinds = {r.path.name: r.kind for r in rd.discover_runs(runs_root)}
    assert kinds == {"audit": "audit", "crossplay": "crossplay"}
    st_testing = pytest.importorskip("streamlit.testing.v1")
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(runs_root))
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    assert not at.exception
    for view in ("Simulator", "Cross-play"):
        at.sidebar.radio(key="view").set_value(view).run()
        assert not at.exception, [e.value for e in at.exception]
        assert not at.warning, [w.value for w in at.warning]
        assert list(at.get("plotly_chart")), view


def test_the_train_config_takes_the_scenario_file(tmp_path):
    from collapse_probe.trainers.config import TrainConfig

    config = TrainConfig(benchmark="scenarios", arena_options={"scenarios": str(example_path())},
                         sims=["scripted:clinic_patient_train"], max_turns=2)  # fmt: skip
    arena = config.arena.build(["smollm2", "scripted:clinic_patient_train"])
    assert isinstance(arena, ScenarioArena) and arena.max_turns == 3  # train hands max_turns to it itself
    assert config.arena.options["scenarios"] == str(example_path())


@pytest.mark.slow
def test_train_runs_a_step_on_a_scenario_file(tmp_path, monkeypatch):
    pytest.importorskip("peft")
    monkeypatch.chdir(tmp_path)
    shutil.copy(example_path(), tmp_path / "clinic.yaml")
    code = _cli("train", "--benchmark", "scenarios", "--scenarios", "clinic.yaml", "--policy", "smollm2",
                "--sim", "scripted:clinic_patient_train", "--steps", "1", "--tasks", "1", "--group-size", "2",
                "--max-turns", "2", "--max-tokens", "16", "--collapse-states", "1", "--collapse-samples", "2",
                "--out", "runs/train")  # fmt: skip
    assert code == 0
    config = json.loads((tmp_path / "runs/train/config.json").read_text())
    assert config["arena"]["benchmark"] == "scenarios" and config["arena"]["scenarios"] == "clinic.yaml"
    rollouts = [json.loads(x) for x in (tmp_path / "runs/train/rollouts.jsonl").read_text().splitlines()]
    assert rollouts and all(r["messages"][0]["meta"] == {"given": "opening"} for r in rollouts)


def test_a_wheel_ships_the_example_and_its_scripted_models(tmp_path):
    """A non-editable install finds the example and ``scripted:clinic_*`` by name from any directory."""
    import subprocess
    import sys
    import zipfile

    repo = Path(__file__).resolve().parents[2]
    src = tmp_path / "src"
    shutil.copytree(repo / "collapse_probe", src / "collapse_probe", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(repo / name, src / name)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {proc.stderr[-300:]}")
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "collapse_probe/data/scenarios/clinic-intake.yaml" in names
    assert "collapse_probe/benchmarks/scenarios/_schema.py" in names
    for model in ("patient_train", "patient_cautious", "patient_anxious", "agent_promise", "agent_thorough"):
        assert f"collapse_probe/data/scripted/clinic_{model}.json" in names
