"""Benchmarks (arenas): tasks, environment and reward, behind one protocol and a lazy registry."""

from typing import TYPE_CHECKING, Any

from collapse_probe.benchmarks._registry import (
    BENCHMARKS,
    DEFAULT_BENCHMARK,
    benchmark_names,
    get_benchmark,
    make_arena,
    register_benchmark,
)

if TYPE_CHECKING:
    from collapse_probe.benchmarks._base import (
        Arena,
        ArenaToolCall,
        AuditHooks,
        Episode,
        EpisodeMessage,
        ProbeSpec,
        Score,
        Side,
        Task,
        TurnPrompt,
        declared_reward_range,
        tool_call_arguments,
    )
    from collapse_probe.benchmarks._plugin import Benchmark, BenchmarkOptions, BuildContext

_LAZY = {
    **dict.fromkeys(
        (
            "Arena",
            "ArenaToolCall",
            "AuditHooks",
            "Episode",
            "EpisodeMessage",
            "ProbeSpec",
            "Score",
            "Side",
            "Task",
            "TurnPrompt",
            "declared_reward_range",
            "tool_call_arguments",
        ),
        "collapse_probe.benchmarks._base",
    ),
    **dict.fromkeys(("Benchmark", "BenchmarkOptions", "BuildContext"), "collapse_probe.benchmarks._plugin"),
}


def __getattr__(name: str) -> Any:
    # the arena protocol and the plugin types load on first use: the registry's names stay cheap to import
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BENCHMARKS",
    "DEFAULT_BENCHMARK",
    "Arena",
    "ArenaToolCall",
    "AuditHooks",
    "Benchmark",
    "BenchmarkOptions",
    "BuildContext",
    "Episode",
    "EpisodeMessage",
    "ProbeSpec",
    "Score",
    "Side",
    "Task",
    "TurnPrompt",
    "benchmark_names",
    "declared_reward_range",
    "get_benchmark",
    "make_arena",
    "register_benchmark",
    "tool_call_arguments",
]
