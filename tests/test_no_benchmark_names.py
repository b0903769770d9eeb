"""No shipped benchmark's name outside ``collapse_probe/benchmarks/`` (the benchmark packages and the
registry, ``benchmarks/_registry.py``) and the shipped data files: the pipelines, the CLI, metrics and
interop ask the registry."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "collapse_probe"
NAMES = ("p4g", "tau2", "cooperbench")
# a string literal (either quote) that is, or starts with, a shipped benchmark's name
LITERAL = re.compile("[\"'](?:" + "|".join(NAMES) + ")")
ALLOWED = (PACKAGE / "benchmarks", PACKAGE / "data")


def test_no_benchmark_name_literal_outside_the_benchmarks_and_the_registry() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(path.is_relative_to(a) for a in ALLOWED):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if LITERAL.search(line):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}")
    assert not found, "benchmark names outside benchmarks/ and the registry:\n" + "\n".join(found)


def test_the_check_finds_a_literal(tmp_path) -> None:
    assert LITERAL.search('benchmark: str = "p4g"') and LITERAL.search("x = 'tau2-demo'")
    assert LITERAL.search('"cooperbench_data"') and not LITERAL.search("``p4g`` in a docstring")
