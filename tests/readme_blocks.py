"""The README's code blocks marked to run offline, as the README tests run them.

A block is marked by an HTML comment on the line before its opening fence (invisible on GitHub)::

    <!-- readme-test: offline; small: --tasks 1 --rollouts 1 --max-turns 1 -->
    <!-- readme-test: file run.yaml; run: collapse-probe play --config run.yaml; small: --tasks 1 -->
    <!-- readme-test: offline -->   (before a ```python block: run as written)

``offline`` runs every line of a shell block as a command, in order. Every block runs in one
directory, in the README's order, as a user reading top to bottom would run them (a later block may
use an earlier one's run directory). ``file NAME`` writes the block to NAME there and runs the
``run:`` command. ``small:`` flags are appended to each ``collapse-probe`` command whose subcommand
takes them (flags override a config file, and a later flag overrides an earlier one), so a README
example runs at a size a test can afford while reading as a user would type it. ``exits: 0 1`` gives
each command's exit status (default: any status a command documents). ``copy: PATH ...`` copies
those files of the repository to the same relative path first (a block that runs from a clone's
root). A leading ``NAME=value`` of a command is its environment. ``skip: REASON`` marks a block that
cannot run in the test (it installs packages, needs an API key or a server), with the reason.
"""

from __future__ import annotations

import re
import shlex
import subprocess
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
    exits: list[int] | None = None
    """Each command's expected exit status (``None``: any documented status)."""
    copy: list[str] = field(default_factory=list)
    """Repository files the block reads by their path from the repository root."""
    skip: str | None = None
    """Why the block cannot run in the test (``None``: it runs)."""
    envs: list[dict[str, str]] = field(default_factory=list)
    """Each command's leading ``NAME=value`` assignments."""


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


def _joined_lines(text: str) -> list[str]:
    """The block's commands: lines ending in a backslash continue on the next."""
    out: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def fenced_blocks(readme: Path = README) -> list[int]:
    """The 1-based line of every code fence's opening in the README (marked or not)."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    starts, inside = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            if not inside:
                starts.append(i + 1)
            inside = not inside
    return starts


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
            if key.endswith(":") is False and ":" in key:  # "skip:REASON" without a space
                key, _, rest = key.partition(":")
                value = f"{rest} {value}".strip()
            key = key.rstrip(":")
            if key:
                opts[key] = value.strip()
        assert i + 1 < len(lines) and lines[i + 1].startswith("```"), f"README line {i + 1}: marker not before a fence"
        lang = lines[i + 1][3:].strip()
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        text = "\n".join(lines[i + 2 : end]) + "\n"
        block = Block(line=i + 2, lang=lang, text=text)
        small = _small(opts.get("small", ""))
        if "skip" in opts:
            block.skip = opts["skip"]
            blocks.append(block)
            continue
        block.copy = opts.get("copy", "").split()
        if opts.get("exits"):
            block.exits = [int(x) for x in opts["exits"].split()]
        if "file" in opts:
            block.file = opts["file"]
            block.commands = [_with_small(shlex.split(opts["run"]), small)] if opts.get("run") else []
        elif lang == "python":
            block.python = True
        else:
            for cmd in _joined_lines(text):
                argv = shlex.split(cmd, comments=True)
                env: dict[str, str] = {}
                while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
                    name, _, value = argv.pop(0).partition("=")
                    env[name] = value
                if argv:
                    block.commands.append(_with_small(argv, small))
                    block.envs.append(env)
        blocks.append(block)
    return blocks


REPO = README.parent


def block_env(workdir: Path) -> dict[str, str]:
    """The environment a README block runs in: the worktree's package first, a cache of its own, the
    Hugging Face hub offline; a user's own ``COLLAPSE_PROBE_*`` settings do not reach the commands (the
    torch thread count, a property of the machine, does)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAPSE_PROBE_") or k.endswith("TORCH_THREADS")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
        COLLAPSE_PROBE_CACHE=str(workdir / "cache.sqlite"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


def run_block(block: Block, workdir: Path, timeout: float = 1800) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    """Run one marked block in ``workdir`` as the README test does: ``(what, completed process)`` per
    command (``collapse-probe`` is this checkout's ``python -m collapse_probe.cli``)."""
    import shutil
    import sys

    env = block_env(workdir)
    for rel in block.copy:
        (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, workdir / rel)
    if block.file:
        (workdir / block.file).write_text(block.text)
    done = []
    if block.python:
        proc = subprocess.run([sys.executable, "-c", block.text], cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=timeout)  # fmt: skip
        done.append((f"README.md:{block.line} (python)", proc))
    for i, argv in enumerate(block.commands):
        cmd = [sys.executable, "-m", "collapse_probe.cli", *argv[1:]] if argv[0] == "collapse-probe" else list(argv)
        if cmd[0] == "python":
            cmd[0] = sys.executable
        extra = block.envs[i] if i < len(block.envs) else {}
        proc = subprocess.run(cmd, cwd=workdir, env={**env, **extra}, capture_output=True, text=True, timeout=timeout)
        done.append((f"README.md:{block.line}: {' '.join(argv)}", proc))
    return done
