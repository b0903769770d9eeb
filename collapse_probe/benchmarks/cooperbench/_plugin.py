"""The CooperBench benchmarks as the registry finds them: ``cooperbench`` and ``cooperbench-demo``."""

from __future__ import annotations

from functools import partial
from typing import Any, Literal, TypedDict

from pydantic import Field, field_validator

from collapse_probe.benchmarks._plugin import Benchmark, BenchmarkOptions, BuildContext
from collapse_probe.benchmarks.cooperbench._arena import CooperBenchArena, make_arena


class CooperBenchOptions(BenchmarkOptions):
    """The options of the CooperBench benchmarks."""

    cooperbench_data: str | None = Field(
        None,
        description="CooperBench dataset root holding <repo>_task/task<ID>/ (or $COLLAPSE_PROBE_COOPERBENCH_DATA)",
    )
    partial_reward: bool = Field(
        False, description="0.5 when the pair fails but the policy's own feature passes (default: no partial credit)"
    )
    cooperbench_mode: Literal["coop", "solo"] = Field(
        "coop",
        description="coop (two agents, one feature each, merged) or solo (the policy alone does both; the "
        "reference's baseline)",
    )

    @field_validator("cooperbench_mode", mode="before")
    @classmethod
    def _default_mode(cls, value: Any) -> Any:
        return "coop" if value is None else value  # the former records' "not given"

    compact: bool | None = Field(
        None,
        description="small-context prompts and the text tool protocol (default: when a participant is a small "
        "local model)",
    )


def _resolve(options: CooperBenchOptions, context: BuildContext) -> CooperBenchOptions:
    if options.compact is not None:
        return options
    return options.model_copy(update={"compact": context.any_local()})


class _ArenaArguments(TypedDict, total=False):
    """The :func:`~collapse_probe.benchmarks.cooperbench.make_arena` arguments the options set."""

    data_dir: str | None
    max_turns: int | None
    partial_reward: bool
    compact: bool
    tool_protocol: str
    mode: str
    turn_max_tokens: int


def _build(name: str, options: CooperBenchOptions, context: BuildContext) -> CooperBenchArena:
    kwargs: _ArenaArguments = {
        "data_dir": options.cooperbench_data,
        "max_turns": options.max_turns,
        "partial_reward": options.partial_reward,
    }
    if options.compact:
        kwargs["compact"] = True
        kwargs["tool_protocol"] = "text"
    kwargs["mode"] = options.cooperbench_mode
    if options.max_tokens is not None:
        kwargs["turn_max_tokens"] = options.max_tokens
    return make_arena(name, **kwargs)


def _benchmark(name: str, description: str) -> Benchmark:
    return Benchmark(
        name,
        CooperBenchOptions,
        build=partial(_build, name),
        data=("cooperbench_data",),
        resolve=_resolve,
        description=description,
        factory=partial(make_arena, name),
    )


BENCHMARK = _benchmark("cooperbench", "CooperBench: two coding agents implement two features of one repository")
DEMO = _benchmark("cooperbench-demo", "CooperBench over small pure-Python tasks that ship here")
