"""The CooperBench benchmarks as the registry finds them: ``cooperbench`` and ``cooperbench-demo``."""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from pydantic import Field

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
    cooperbench_mode: Literal["coop", "solo"] | None = Field(
        None,
        description="coop (two agents, one feature each, merged) or solo (the policy alone does both; the "
        "reference's baseline)",
    )
    compact: bool | None = Field(
        None,
        description="small-context prompts and the text tool protocol (default: when a participant is a small "
        "local model)",
    )


def _resolve(options: CooperBenchOptions, context: BuildContext) -> CooperBenchOptions:
    if options.compact is not None:
        return options
    return options.model_copy(update={"compact": context.any_local()})


def _build(name: str, options: CooperBenchOptions, context: BuildContext) -> CooperBenchArena:
    kwargs: dict[str, Any] = {
        "data_dir": options.cooperbench_data,
        "max_turns": options.max_turns,
        "partial_reward": options.partial_reward,
    }
    if options.compact:
        kwargs.update(compact=True, tool_protocol="text")
    if options.cooperbench_mode is not None:
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
