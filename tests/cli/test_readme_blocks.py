"""The README's offline-runnable blocks are found and every command in them parses (the reliability
tier runs them: ``tests/reliability/test_readme.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_blocks import marked_blocks  # noqa: E402


def test_readme_marks_its_offline_blocks():
    blocks = marked_blocks()
    assert len(blocks) >= 3
    assert any(b.file == "run.yaml" for b in blocks) and any(b.python for b in blocks)
    commands = [c for b in blocks for c in b.commands]
    assert {c[1] for c in commands} >= {"play", "crossplay", "gate"}


def test_every_marked_command_parses(tmp_path, monkeypatch):
    from collapse_probe.cli import build_parser
    from collapse_probe.cli._config import parse_args

    monkeypatch.chdir(tmp_path)
    for block in marked_blocks():
        if block.file:
            (tmp_path / block.file).write_text(block.text)
        for argv in block.commands:
            assert argv[0] == "collapse-probe", argv
            args = parse_args(build_parser(), argv[1:])  # a bad flag or config key exits 2 here
            assert args.command == argv[1]
        if block.python:
            compile(block.text, f"README.md:{block.line}", "exec")
