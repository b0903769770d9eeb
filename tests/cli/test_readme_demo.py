"""The README's demo runs as written and decides: the cross-play of the shipped scripted persuaders
and donors, then the gate, which passes one policy (exit 0) and fails the other (exit 1), within the
two minutes the README promises on 2 cores."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_blocks import marked_blocks, run_block  # noqa: E402


def _demo():
    # the first block that names its exit statuses and gates: "A decision in seconds" (the scenarios
    # section's clinic block after it reads a scenario file, so it is not the any-directory demo)
    blocks = [b for b in marked_blocks() if b.exits and any(c[1:2] == ["gate"] for c in b.commands)]
    assert blocks, "the README has a demo block whose marker names its exit statuses"
    return blocks[0]


def test_the_readme_demo_block_exits_with_a_gate_decision_for_each_policy(tmp_path):
    block = _demo()
    assert [c[1] for c in block.commands] == ["crossplay", "gate", "gate"] and block.exits == [0, 0, 1]
    assert not block.copy and not any(block.envs), "the demo runs from any directory, no environment needed"
    start = time.monotonic()
    done = run_block(block, tmp_path, timeout=300)
    took = time.monotonic() - start
    for (what, proc), expected in zip(done, block.exits, strict=True):
        assert proc.returncode == expected, f"{what}: exit {proc.returncode}\n{(proc.stdout + proc.stderr)[-2000:]}"
        assert "Traceback" not in proc.stdout + proc.stderr
    passed, failed = done[1][1].stdout, done[2][1].stdout
    assert "passed: transfer" in passed and "clears 0.8" in passed
    assert "failed: transfer" in failed and "lies below 0.8" in failed
    assert took < 120, f"the demo took {took:.0f} s; the README promises a decision in under two minutes"
