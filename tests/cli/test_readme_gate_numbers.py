"""The numbers the README quotes for its gate demo are the ones the demo's gates print: the transfer
ratio and 90 % interval of the policy that passes and of the one that fails, in the prose above the
block (two decimals) and in the measurements table (three)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_blocks import marked_blocks, run_block  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"
HEADLINE = re.compile(r"transfer (\d+\.\d+) \(90% CI \[(\d+\.\d+), (\d+\.\d+)\]\)")


def _demo():
    (block,) = [
        b for b in marked_blocks()
        if [c[1] for c in b.commands] == ["crossplay", "gate", "gate"] and b.exits == [0, 0, 1] and not b.copy
    ]  # fmt: skip
    return block


def test_the_readme_quotes_what_the_demo_gates_print(tmp_path):
    done = run_block(_demo(), tmp_path, timeout=300)
    printed = []
    for _, proc in done[1:]:
        m = HEADLINE.search(proc.stdout)
        assert m, proc.stdout[-2000:]
        printed.append(tuple(float(x) for x in m.groups()))
    (passes, fails) = printed
    text = " ".join(README.read_text(encoding="utf-8").split())
    prose = (
        f"(transfer {passes[0]:.2f}, 90 % CI [{passes[1]:.2f}, {passes[2]:.2f}]: exit 0) and fails the keyword "
        f"exploiter (transfer {fails[0]:.2f}, CI [{fails[1]:.2f}, {fails[2]:.2f}]: exit 1)"
    )
    assert prose in text, f"the README's demo sentence should read: {prose}"
    table = (
        f"(transfer {passes[0]:.3f}, 90 % CI [{passes[1]:.3f}, {passes[2]:.3f}]), exit 1 for the keyword "
        f"exploiter ({fails[0]:.3f}, [{fails[1]:.3f}, {fails[2]:.3f}])"
    )
    assert table in text, f"the README's measurements table should read: {table}"
