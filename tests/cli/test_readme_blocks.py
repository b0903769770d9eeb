"""The README's offline-runnable blocks are found and every command in them parses (the reliability
tier runs them: ``tests/reliability/test_readme.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_blocks import fenced_blocks, marked_blocks  # noqa: E402


def test_readme_marks_its_offline_blocks():
    blocks = marked_blocks()
    assert len(blocks) >= 3
    assert any(b.file == "run.yaml" for b in blocks) and any(b.python for b in blocks)
    commands = [c for b in blocks for c in b.commands]
    assert {c[1] for c in commands} >= {"play", "crossplay", "gate"}


def test_every_readme_block_is_marked_to_run_or_says_why_not():
    marked = {b.line: b for b in marked_blocks()}
    unmarked = [line for line in fenced_blocks() if line not in marked]
    assert not unmarked, f"README.md lines {unmarked}: a code block without a readme-test marker"
    for b in marked.values():
        assert b.skip is None or len(b.skip) > 10, f"README.md:{b.line}: a skipped block names its reason"
        assert b.skip is not None or b.commands or b.python, f"README.md:{b.line}: a block with nothing to run"


def test_the_readme_blocks_use_their_own_run_directories():
    # blocks run in order in one directory: two blocks writing one --out with different options would
    # refuse the second (a run directory of another configuration)
    outs: dict[str, int] = {}
    for b in marked_blocks():
        for argv in b.commands:
            if "--out" in argv and argv[1] in ("play", "crossplay", "audit", "train"):
                out = argv[argv.index("--out") + 1]
                assert out not in outs, f"README.md:{b.line} and {outs[out]} both write {out}"
                outs[out] = b.line
        if b.python:
            import re

            for out in re.findall(r'out="([^"]+)"', b.text):
                assert out not in outs, f"README.md:{b.line} and {outs[out]} both write {out}"
                outs[out] = b.line


def test_every_marked_command_parses(tmp_path, monkeypatch):
    from collapse_probe.cli import build_parser
    from collapse_probe.cli._config import parse_args

    monkeypatch.chdir(tmp_path)
    for block in marked_blocks():
        if block.file:
            (tmp_path / block.file).write_text(block.text)
        for argv in block.commands:
            if argv[0] != "collapse-probe":
                continue
            args = parse_args(build_parser(), argv[1:])  # a bad flag or config key exits 2 here
            assert args.command == argv[1]
        if block.python:
            compile(block.text, f"README.md:{block.line}", "exec")
