"""The README's code blocks run as written: every block marked ``<!-- readme-test: ... -->`` (see
``tests/readme_blocks.py``) is run on the embedded models, offline, at the small sizes its marker
names, and the test fails when a command errors (an ``error:`` line, a traceback, the internal-error
backstop, or an exit status no command documents)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_blocks import marked_blocks  # noqa: E402

pytestmark = pytest.mark.reliability

REPO = Path(__file__).resolve().parents[2]
BLOCKS = marked_blocks()


def _env(tmp_path: Path) -> dict[str, str]:
    # a user's own COLLAPSE_PROBE_* settings do not reach the README's commands (the torch thread count,
    # a property of the machine, does)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAPSE_PROBE_") or k.endswith("TORCH_THREADS")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
        COLLAPSE_PROBE_CACHE=str(tmp_path / "cache.sqlite"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


def _check(what: str, proc: subprocess.CompletedProcess) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1, 2), f"{what}: exit {proc.returncode}\n{out[-3000:]}"
    assert "Traceback" not in out and "rerun with -v for the traceback" not in out, f"{what}:\n{out[-3000:]}"
    errors = [line for line in proc.stderr.splitlines() if " error: " in line or line.startswith("error:")]
    assert not errors, f"{what}:\n{out[-3000:]}"


@pytest.mark.parametrize("block", BLOCKS, ids=[f"README.md:{b.line}" for b in BLOCKS])
def test_readme_block_runs_as_written(block, tmp_path):
    env = _env(tmp_path)
    if block.file:
        (tmp_path / block.file).write_text(block.text)
    if block.python:
        proc = subprocess.run([sys.executable, "-c", block.text], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=1800)  # fmt: skip
        _check(f"README.md:{block.line} (python)", proc)
    for argv in block.commands:
        cmd = [sys.executable, "-m", "collapse_probe.cli", *argv[1:]] if argv[0] == "collapse-probe" else argv
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
        _check(f"README.md:{block.line}: {' '.join(argv)}", proc)
