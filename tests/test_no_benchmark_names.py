"""No shipped benchmark's name outside ``collapse_probe/benchmarks/`` (the benchmark packages and the
registry, ``benchmarks/_registry.py``) and the shipped data files: the pipelines, the CLI, metrics and
interop ask the registry."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "collapse_probe"
NAMES = ("p4g", "tau2", "cooperbench", "scenarios")
# a string literal (either quote) that is, or starts with, a shipped benchmark's name
LITERAL = re.compile("[\"'](?:" + "|".join(NAMES) + ")")
ALLOWED = (PACKAGE / "benchmarks", PACKAGE / "data")


def _lines_matching(pattern: re.Pattern[str]) -> list[str]:
    """``path:line: text`` of every line outside :data:`ALLOWED` that ``pattern`` finds."""
    found = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(PACKAGE / "dashboard").rglob("*.py")]):
        if any(path.is_relative_to(a) for a in ALLOWED):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}")
    return found


def test_no_benchmark_name_literal_outside_the_benchmarks_and_the_registry() -> None:
    found = _lines_matching(LITERAL)
    assert not found, "benchmark names outside benchmarks/ and the registry:\n" + "\n".join(found)


def test_the_check_finds_a_literal(tmp_path) -> None:
    assert LITERAL.search('benchmark: str = "p4g"') and LITERAL.search("x = 'tau2-demo'")
    assert LITERAL.search('"cooperbench_data"') and not LITERAL.search("``p4g`` in a docstring")


# writing an episode's state: ``ep.state["rounds"] = ...``, ``episode.state.update(...)``
STATE_WRITE = re.compile(r"\.state\[[^\]]+\]\s*=(?!=)|\.state\.(?:update|setdefault|pop|clear)\(")
# importing a shipped benchmark's own module (not the ``collapse_probe.benchmarks`` interface)
BENCHMARK_MODULE = re.compile(r"collapse_probe\.benchmarks\.(?:" + "|".join(NAMES) + r")\w*")
BENCHMARK_IMPORTS = {
    # former exports that name P4G's own constants and its exact closed-set distribution
    "collapse_probe/pipelines/audit/_config.py",
    "collapse_probe/pipelines/audit/_sampling.py",
    # the comparison with the human P4G persuadees (donations, people's own ε by annotated acts)
    "collapse_probe/pipelines/audit/_human.py",
}
"""The modules outside ``benchmarks/`` that still import a benchmark's own module, each with its reason;
the list may only shrink (the audit's states, verdict and pipeline ask the arena's hooks)."""


def test_no_pipeline_writes_a_benchmarks_episode_state() -> None:
    found = _lines_matching(STATE_WRITE)
    assert not found, "an episode's state is the arena's own (its episode_at hook rebuilds it):\n" + "\n".join(found)


def test_only_the_listed_modules_import_a_benchmarks_own_module() -> None:
    importing = set()
    for path in sorted([*PACKAGE.rglob("*.py"), *(PACKAGE / "dashboard").rglob("*.py")]):
        if any(path.is_relative_to(a) for a in ALLOWED):
            continue
        text = path.read_text(encoding="utf-8")
        if any(BENCHMARK_MODULE.search(line) for line in text.splitlines() if "import" in line):
            importing.add(path.relative_to(PACKAGE.parent).as_posix())
    assert importing <= BENCHMARK_IMPORTS, (
        f"new imports of a benchmark's module: {sorted(importing - BENCHMARK_IMPORTS)}"
    )
    assert importing == BENCHMARK_IMPORTS, (
        f"no longer importing (remove from the list): {sorted(BENCHMARK_IMPORTS - importing)}"
    )


def test_the_state_check_finds_a_write() -> None:
    assert STATE_WRITE.search('    ep.state["rounds"] = 3') and STATE_WRITE.search("ep.state.update(rounds=1)")
    assert not STATE_WRITE.search('if ep.state["rounds"] == 3:') and not STATE_WRITE.search('ep.state.get("x")')
    assert BENCHMARK_MODULE.search("from collapse_probe.benchmarks.p4g.stance import turn_act")
    assert not BENCHMARK_MODULE.search("from collapse_probe.benchmarks import Arena")
