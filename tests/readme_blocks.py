"""The README's code blocks marked to run offline, as the README tests run them.

A block is marked by an HTML comment on the line before its opening fence (invisible on GitHub)::

    <!-- readme-test: offline; small: --tasks 1 --rollouts 1 --max-turns 1 -->
    <!-- readme-test: file run.yaml; run: collapse-probe play --config run.yaml; small: --tasks 1 -->
    <!-- readme-test: offline -->   (before a ```python block: run as written)

``offline`` runs every line of a shell block as a command, in order, in one fresh directory.
``file NAME`` writes the block to NAME there and runs the ``run:`` command. ``small:`` flags are
appended to each ``collapse-probe`` command whose subcommand takes them (flags override a config
file, and a later flag overrides an earlier one), so a README example runs at a size a test can
afford while reading as a user would type it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = re.compile(r"^<!--\s*readme-test:(?P<body>.*?)-->\s*$")


@dataclass
class Block:
    line: int
    """1-based line of the block's opening fence in the README."""
    lang: str
    text: str
    commands: list[list[str]] = field(default_factory=list)
    """Each command to run, as argv (``collapse-probe`` commands with the ``small`` flags appended)."""
    file: str | None = None
    python: bool = False


def _small(value: str) -> list[tuple[str, str | None]]:
    args = shlex.split(value)
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            out.append((args[i], args[i + 1]))
            i += 2
        else:
            out.append((args[i], None))
            i += 1
    return out


def _with_small(argv: list[str], small: list[tuple[str, str | None]]) -> list[str]:
    if not argv or argv[0] != "collapse-probe" or len(argv) < 2:
        return argv
    from collapse_probe.cli import build_parser
    from collapse_probe.cli._config import _options_of, _subparsers

    options = _options_of(_subparsers(build_parser()).get(argv[1]) or build_parser())
    extra: list[str] = []
    for flag, value in small:
        if flag in options:
            extra += [flag] + ([value] if value is not None else [])
    return argv + extra


def marked_blocks(readme: Path = README) -> list[Block]:
    """Every marked block of the README, in order."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    blocks = []
    for i, line in enumerate(lines):
        m = MARKER.match(line.strip())
        if m is None:
            continue
        opts: dict[str, str] = {}
        for part in m.group("body").split(";"):
            key, _, value = part.strip().partition(" ")
            key = key.rstrip(":")
            if key:
                opts[key] = value.strip()
        assert i + 1 < len(lines) and lines[i + 1].startswith("```"), f"README line {i + 1}: marker not before a fence"
        lang = lines[i + 1][3:].strip()
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        text = "\n".join(lines[i + 2 : end]) + "\n"
        block = Block(line=i + 2, lang=lang, text=text)
        small = _small(opts.get("small", ""))
        if "file" in opts:
            block.file = opts["file"]
            block.commands = [_with_small(shlex.split(opts["run"]), small)] if opts.get("run") else []
        elif lang == "python":
            block.python = True
        else:
            for cmd in text.splitlines():
                argv = shlex.split(cmd, comments=True)
                if argv:
                    block.commands.append(_with_small(argv, small))
        blocks.append(block)
    return blocks
