"""``lab`` without ``--out`` gets a new run directory of its own, like the other commands."""

from __future__ import annotations

import json

from collapse_probe.cli import main


def test_lab_compare_without_out_writes_a_new_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COLLAPSE_PROBE_OUT", raising=False)
    for _ in range(2):
        assert main(["lab", "--compare", "--steps", "5", "--seeds", "2"]) == 0
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all(r.name.startswith("lab-") for r in runs)
    for r in runs:
        assert json.loads((r / "config.json").read_text())["compare"] is True
        assert (r / "compare.json").is_file() and (r / "compare.html").is_file()
    assert "run directory: " in capsys.readouterr().err
