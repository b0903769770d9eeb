"""Benchmarks (arenas): tasks, environment and reward, behind one protocol and a lazy registry."""

from collapse_probe.benchmarks._base import (
    Arena,
    AuditHooks,
    Episode,
    ProbeSpec,
    Score,
    Side,
    Task,
    TurnPrompt,
    declared_reward_range,
)
from collapse_probe.benchmarks._registry import BENCHMARKS, make_arena, register_benchmark

__all__ = [
    "BENCHMARKS",
    "Arena",
    "AuditHooks",
    "Episode",
    "ProbeSpec",
    "Score",
    "Side",
    "Task",
    "TurnPrompt",
    "declared_reward_range",
    "make_arena",
    "register_benchmark",
]
