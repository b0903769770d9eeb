"""Scenarios written in one file: audit, cross-play, gate and train a simulator on a user's own domain.

``--benchmark scenarios --scenarios FILE`` reads a YAML, JSON or JSONL list of scenarios, each with
an ``id``, the simulated user's ``instructions``, the agent's ``opening`` and optionally a ``prefix``
(a fixed conversation to probe a later state), a ``closing`` question and a ``reward`` (a ``pattern``
whose group is the user's closed answer, with its ``values``; or a ``judge`` question). The file is
validated when read (:func:`load_scenarios`). A clinic-intake example ships as
``collapse_probe/data/scenarios/clinic-intake.yaml`` (:func:`example_path`), with scripted patients
and agents of stated distributions (``scripted:clinic_*``). See ``docs/scenarios.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from collapse_probe.benchmarks._plugin import Benchmark, BenchmarkOptions, BuildContext
from collapse_probe.benchmarks.scenarios._arena import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TURNS,
    ScenarioArena,
    answer_value,
    stated_answer,
)
from collapse_probe.benchmarks.scenarios._schema import Reward, Scenario, Turn, load_scenarios, pattern_answers
from collapse_probe.core.limits import MAX_TURNS
from collapse_probe.errors import ConfigError

EXAMPLE = "clinic-intake.yaml"
"""The shipped example scenario file."""


def example_path(name: str = EXAMPLE) -> Path:
    """A scenario file shipped with the package (``collapse_probe/data/scenarios/NAME``)."""
    from collapse_probe.core._resources import package_path

    return package_path("data", "scenarios", name)


class ScenarioOptions(BenchmarkOptions):
    """The options of ``--benchmark scenarios``."""

    max_turns: int | None = Field(
        None, ge=1, le=MAX_TURNS, description="user reply + agent answer rounds before the closing question (default 3)"
    )
    scenarios: str | None = Field(
        None, description="scenario file (YAML, JSON or JSONL: id, instructions, opening, prefix, closing, reward)"
    )
    judge: str | None = Field(None, description="judge model spec of the scenarios whose reward is a judge question")


def _resolve(options: ScenarioOptions, context: BuildContext) -> ScenarioOptions:
    return options.model_copy(update={"max_turns": options.max_turns or DEFAULT_MAX_TURNS})


def _build(options: ScenarioOptions, context: BuildContext) -> ScenarioArena:
    if not options.scenarios:
        raise ConfigError(
            "--scenarios: benchmark 'scenarios' needs a scenario file (YAML, JSON or JSONL); the shipped example is "
            f"{example_path()}"
        )
    scenarios = load_scenarios(options.scenarios)
    needs_judge = any(s.reward is not None and s.reward.judge is not None for s in scenarios)
    return ScenarioArena(
        scenarios,
        max_turns=options.max_turns or DEFAULT_MAX_TURNS,
        max_tokens=options.max_tokens or DEFAULT_MAX_TOKENS,
        judge=context.judge(options.judge) if needs_judge else None,
        source=str(options.scenarios),
    )


def make_arena(scenarios: str | Path | None = None, **options: Any) -> ScenarioArena:
    """The arena of a scenario file from keyword options (``max_turns``, ``max_tokens``, ``judge``)."""
    parsed = BENCHMARK.parse({"scenarios": None if scenarios is None else str(scenarios), **options})
    return _build(parsed, BuildContext())  # type: ignore[arg-type]


BENCHMARK = Benchmark(
    "scenarios",
    ScenarioOptions,
    build=_build,
    data=("scenarios",),
    resolve=_resolve,
    description="your own scenarios from one YAML, JSON or JSONL file (--scenarios FILE)",
    factory=make_arena,
)
"""The scenarios benchmark as the registry finds it."""

__all__ = [
    "BENCHMARK",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MAX_TURNS",
    "EXAMPLE",
    "Reward",
    "Scenario",
    "ScenarioArena",
    "ScenarioOptions",
    "Turn",
    "answer_value",
    "example_path",
    "load_scenarios",
    "make_arena",
    "pattern_answers",
    "stated_answer",
]
