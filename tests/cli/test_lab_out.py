"""``lab --out`` is a run directory like every command's: it never writes among a user's files, never
replaces a lab run made with other settings (naming the setting), runs the same settings again in
place, starts over with --fresh, and takes --no-progress."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from collapse_probe.cli import main


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    return rc, capsys.readouterr().err


def _snapshot(d: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(d.iterdir()) if p.is_file()}


def test_a_folder_of_user_files_is_refused_untouched(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine\n")
    before = _snapshot(tmp_path)
    rc, err = _cli(["lab", "--steps", "2", "--no-progress", "--out", str(tmp_path)], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "notes.txt" in err, err
    assert _snapshot(tmp_path) == before
    (tmp_path / "config.json").write_text('{"project": "mine"}\n')  # a project's own config.json beside them
    before = _snapshot(tmp_path)
    rc, err = _cli(["lab", "--steps", "2", "--no-progress", "--out", str(tmp_path)], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and str(tmp_path) in err, err
    assert _snapshot(tmp_path) == before


def test_a_lab_run_with_other_settings_is_refused_naming_them(tmp_path, capsys):
    out = tmp_path / "lab"
    assert _cli(["lab", "--steps", "3", "--no-progress", "--out", str(out)], capsys)[0] == 0
    before = _snapshot(out)
    rc, err = _cli(["lab", "--steps", "4", "--delta", "0.7", "--out", str(out)], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "differs in: delta, steps" in err, err
    rc, err = _cli(["lab", "--steps", "3", "--compare", "--seeds", "2", "--out", str(out)], capsys)
    assert rc == 2 and "compare" in err, err
    rc, err = _cli(["lab", "--steps", "3", "--sweep", "delta=0.1,0.2", "--seeds", "2", "--out", str(out)], capsys)
    assert rc == 2 and "lab-sweep" in err, err
    assert _snapshot(out) == before


def test_the_same_settings_run_again_in_place_and_fresh_starts_over(tmp_path, capsys):
    out = tmp_path / "lab"
    argv = ["lab", "--steps", "3", "--compare", "--seeds", "2", "--no-progress", "--out", str(out)]
    assert _cli(argv, capsys)[0] == 0
    first = json.loads((out / "compare.json").read_text())
    assert _cli(argv, capsys)[0] == 0  # the same settings: the same exact numbers, rewritten
    assert json.loads((out / "compare.json").read_text()) == first
    assert _cli([*argv[:2], "5", *argv[3:], "--fresh"], capsys)[0] == 0
    assert json.loads((out / "config.json").read_text())["steps"] == 5
    (kept,) = (out / ".previous").iterdir()
    assert json.loads((kept / "config.json").read_text())["steps"] == 3 and (kept / "compare.json").is_file()
    assert not os.path.lexists(out / ".lock")


def test_no_progress_hides_the_bar(tmp_path, capsys):
    argv = ["lab", "--steps", "2", "--compare", "--seeds", "2", "--out"]
    assert _cli([*argv, str(tmp_path / "a"), "--no-progress"], capsys)[0] == 0
    assert "method" not in capsys.readouterr().err
    rc, err = _cli([*argv, str(tmp_path / "b")], capsys)
    assert rc == 0 and "0/9" in err  # the bar counts the compared methods
