"""The README's code blocks run as written: every block marked ``<!-- readme-test: ... -->`` (see
``tests/readme_blocks.py``) is run on the embedded models, offline, at the small sizes its marker
names, in the README's order and in one directory (a later block uses an earlier one's runs, as a
reader's would), and the test fails when a command errors (an ``error:`` line, a traceback, the
internal-error backstop, an exit status no command documents, or not the one the marker names). A
block marked ``skip: REASON`` (it installs packages, needs an API key or a server) is reported
skipped with its reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_blocks import marked_blocks, run_block  # noqa: E402

pytestmark = pytest.mark.reliability

BLOCKS = marked_blocks()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("readme")


def _check(what: str, proc: subprocess.CompletedProcess, expected: int | None) -> None:
    out = proc.stdout + proc.stderr
    if expected is not None:
        assert proc.returncode == expected, f"{what}: exit {proc.returncode}, expected {expected}\n{out[-3000:]}"
    documented = (0, 1, 2, 3) if "collapse-probe gate " in what else (0, 1, 2)  # the gate's 3: could not judge
    assert proc.returncode in documented, f"{what}: exit {proc.returncode}\n{out[-3000:]}"
    assert "Traceback" not in out and "rerun with -v for the traceback" not in out, f"{what}:\n{out[-3000:]}"
    errors = [line for line in proc.stderr.splitlines() if " error: " in line or line.startswith("error:")]
    assert not errors, f"{what}:\n{out[-3000:]}"


@pytest.mark.parametrize("block", BLOCKS, ids=[f"README.md:{b.line}" for b in BLOCKS])
def test_readme_block_runs_as_written(block, workdir):
    if block.skip:
        pytest.skip(f"README.md:{block.line}: {block.skip}")
    done = run_block(block, workdir)
    for i, (what, proc) in enumerate(done):
        expected = block.exits[i] if block.exits and not block.python else None
        _check(what, proc, expected)
