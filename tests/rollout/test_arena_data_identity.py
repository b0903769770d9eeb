"""A data file the arena reads (personas) that changed in place is refused on resume, naming it."""

from __future__ import annotations

import json
from pathlib import Path

from collapse_probe.cli import main

REPO = Path(__file__).resolve().parents[2]
PERSONAS = REPO / "collapse_probe" / "data" / "p4g" / "personas.jsonl"
DONOR = REPO / "collapse_probe" / "data" / "scripted" / "p4g_donor_diverse.json"


def _play(personas: Path, out: Path) -> int:
    return main(["play", "--policy", f"scripted:{DONOR}", "--sim", f"scripted:{DONOR}", "--tasks", "1",
                 "--rollouts", "1", "--max-turns", "1", "--personas", str(personas), "--out", str(out),
                 "--no-progress"])  # fmt: skip


def test_changed_personas_file_is_refused_on_resume(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    lines = PERSONAS.read_text(encoding="utf-8").splitlines()
    personas = tmp_path / "personas.jsonl"
    personas.write_text(lines[3] + "\n")
    out = tmp_path / "run"
    assert _play(personas, out) == 0
    recorded = json.loads((out / "config.json").read_text())["arena"]
    assert recorded["data_fingerprints"]["personas"].startswith("sha256:")
    assert _play(personas, out) == 0  # unchanged: resumes
    before = (out / "results.json").read_bytes()
    personas.write_text(lines[5] + "\n")
    capsys.readouterr()
    assert _play(personas, out) == 2
    err = capsys.readouterr().err
    assert f"data changed since this run started: personas {personas}" in err and len(err.splitlines()) == 1, err
    assert (out / "results.json").read_bytes() == before


def test_a_run_recorded_without_data_fingerprints_is_refused(tmp_path, monkeypatch, capsys):
    """Its data cannot be checked, so it is not resumed as if it could."""
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    personas = tmp_path / "personas.jsonl"
    personas.write_text(PERSONAS.read_text(encoding="utf-8").splitlines()[3] + "\n")
    out = tmp_path / "run"
    assert _play(personas, out) == 0
    cfg = json.loads((out / "config.json").read_text())
    del cfg["arena"]["data_fingerprints"]
    (out / "config.json").write_text(json.dumps(cfg))
    capsys.readouterr()
    assert _play(personas, out) != 0
    assert "differs in: arena" in capsys.readouterr().err
