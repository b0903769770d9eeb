"""Every benchmark's declared data (P4G personas, τ2 data, CooperBench data) is fingerprinted in
``config.json`` and a resume on changed data is refused, naming the option."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from collapse_probe.benchmarks import get_benchmark
from collapse_probe.benchmarks._registry import BENCHMARKS
from collapse_probe.errors import ConfigError
from collapse_probe.rollout import RunDir
from collapse_probe.rollout.runspec import ArenaSpec

DATA = Path(__file__).resolve().parents[2] / "collapse_probe" / "data"
DONOR = DATA / "scripted" / "p4g_donor_diverse.json"
# (benchmark, option, shipped file or directory to copy, file inside to change)
CASES = [
    ("p4g", "personas", DATA / "p4g" / "personas.jsonl", None),
    ("tau2-demo", "tau2_data", DATA / "tau2-demo", "tasks.json"),
    ("cooperbench-demo", "cooperbench_data", DATA / "cooperbench-demo", "demo_confparse_task/task3/run_tests.sh"),
    ("scenarios", "scenarios", DATA / "scenarios" / "clinic-intake.yaml", None),
]


def test_every_shipped_benchmark_declares_the_data_it_reads() -> None:
    declared = {name: get_benchmark(name).data for name in BENCHMARKS}
    assert declared == {
        "p4g": ("personas",),
        "tau2-retail": ("tau2_data",),
        "tau2-airline": ("tau2_data",),
        "tau2-demo": ("tau2_data",),
        "cooperbench": ("cooperbench_data",),
        "cooperbench-demo": ("cooperbench_data",),
        "scenarios": ("scenarios",),
    }


@pytest.mark.parametrize(("bench", "option", "source", "inner"), CASES)
def test_changed_data_is_refused_on_resume_for_every_benchmark(tmp_path, bench, option, source, inner) -> None:
    data = tmp_path / source.name
    (shutil.copytree if source.is_dir() else shutil.copy)(source, data)
    changed = data / inner if inner else data
    spec = ArenaSpec(bench, {option: str(data)})
    record = {"arena": spec.to_dict()}
    assert record["arena"]["data_fingerprints"][option].startswith("sha256:")
    out = tmp_path / "run"
    run = RunDir(out)
    run.create(record, kind="play")
    run.write_config()
    run.release()
    again = RunDir(out)
    again.create({"arena": spec.to_dict()}, kind="play")  # unchanged: resumes
    again.release()
    changed.write_bytes(changed.read_bytes() + b"\n")
    with pytest.raises(ConfigError, match=f"data changed since this run started: {option} {data}"):
        RunDir(out).create({"arena": ArenaSpec(bench, {option: str(data)}).to_dict()}, kind="play")


def test_a_run_whose_stored_arena_differs_is_refused_naming_the_option(tmp_path, monkeypatch) -> None:
    from collapse_probe.cli import main

    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    out = tmp_path / "run"
    argv = ["play", "--policy", f"scripted:{DONOR}", "--sim", f"scripted:{DONOR}", "--tasks", "1", "--rollouts", "1",
            "--max-turns", "1", "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["arena"] == {"benchmark": "p4g", "max_turns": 1, "max_tokens": None, "personas": None}
    before = (out / "conversations.jsonl").read_bytes()
    assert main(argv) == 0  # the same configuration: resumed, nothing ran again
    assert (out / "conversations.jsonl").read_bytes() == before
    cfg["arena"] = {**cfg["arena"], "tau2_data": None}  # an option p4g does not take
    (out / "config.json").write_text(json.dumps(cfg))
    assert main(argv) != 0
    assert (out / "conversations.jsonl").read_bytes() == before
