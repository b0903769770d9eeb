"""Shared test fixtures: shared-dataset paths and scripted-model files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = Path(os.environ.get("COLLAPSE_PROBE_SHARED_DATASETS") or REPO.parent / "shared" / "datasets")
"""The public data sets beside the repository (``$COLLAPSE_PROBE_SHARED_DATASETS`` overrides, e.g. in a worktree)."""


REAL_MODEL_HINT = (
    "use a tiny random model (collapse_probe.models.tiny.build_tiny_llama, as hf/DIR), a scripted model or "
    "--partition exact, or mark the test realmodel (run with -m realmodel)"
)


_REAL_MODEL_GUARD: dict[str, pytest.MonkeyPatch] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The default tier runs on tiny and scripted models: a test that loads an embedded chat model
    (``local/smollm2-135m`` and the other converted checkpoints) or the packaged sentence encoder in
    this process fails, naming what it loaded, unless it is marked ``realmodel``.

    Installed before any fixture of the test is set up, so a module- or session-scoped fixture that loads a
    real model for the first test of its scope is caught too (an autouse function fixture would come after it).
    The browser tier is exempt: it renders real audits, partitioned by meaning, in Chromium (CI runs it with the
    encoder installed)."""
    if item.get_closest_marker("realmodel") is not None or item.get_closest_marker("browser") is not None:
        return
    from collapse_probe.models import _encoder, local

    load_dir, default_encoder = local._load_dir, _encoder._default_model_path

    def guarded_load_dir(path, device, dtype, purpose):
        if purpose.startswith("local/"):
            pytest.fail(f"{item.nodeid} loads the embedded model {purpose}: {REAL_MODEL_HINT}")
        return load_dir(path, device, dtype, purpose)

    def guarded_encoder():
        path = default_encoder()
        pytest.fail(f"{item.nodeid} loads the sentence encoder {path}: {REAL_MODEL_HINT}")

    patch = _REAL_MODEL_GUARD[item.nodeid] = pytest.MonkeyPatch()
    patch.setattr(local, "_load_dir", guarded_load_dir)
    patch.setattr(_encoder, "_default_model_path", guarded_encoder)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    patch = _REAL_MODEL_GUARD.pop(item.nodeid, None)
    if patch is not None:
        patch.undo()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own response cache, so no test reads another's samples."""
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path_factory.mktemp("cache") / "responses.sqlite"))


@pytest.fixture
def p4g_dir() -> Path:
    d = SHARED_DATASETS / "p4g"
    if not (d / "full_info.csv").exists():
        pytest.skip("official P4G CSVs not present at ../shared/datasets/p4g")
    return d


@pytest.fixture
def tau2_dir() -> Path:
    d = SHARED_DATASETS / "tau2"
    if not (d / "retail" / "tasks.json").exists():
        pytest.skip("official tau2 data not present at ../shared/datasets/tau2")
    return d


@pytest.fixture
def write_scripted(tmp_path):
    """Write a scripted-model file and return its ``scripted:`` spec."""

    def _write(responses, turns=None, name="scripted.json"):
        data = {"responses": [{"text": t, "p": p} for t, p in responses]}
        if turns is not None:
            data["turns"] = [[{"text": t, "p": p} for t, p in turn] for turn in turns]
        path = tmp_path / name
        path.write_text(json.dumps(data))
        return f"scripted:{path}"

    return _write


GATE_DEMO_POLICY = "scripted:p4g_persuader_rapport"
"""The gate demo's candidate policy (the scripted rapport persuader)."""


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``collapse-probe ARGV`` in this process: its exit status, stdout and stderr."""
    from collapse_probe.cli import main

    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse and --config errors exit after their one line
        rc = int(exc.code or 0)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.fixture(scope="module")
def gate_demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small finished cross-play of the shipped scripted models (gate, export and card read it)."""
    from collapse_probe.cli import main

    out = tmp_path_factory.mktemp("xp") / "demo"
    rc = main([
        "crossplay", "--policies", f"scripted:p4g_persuader_cause,{GATE_DEMO_POLICY}",
        "--sims", "scripted:p4g_donor_diverse,scripted:p4g_donor_rapport", "--train-sim", "scripted:p4g_donor_diverse",
        "--tasks", "6", "--max-turns", "1", "--no-progress", "--out", str(out),
    ])  # fmt: skip
    assert rc == 0
    return out
