"""Benchmark name -> arena factory, imported lazily."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import Any

from collapse_probe.benchmarks._base import Arena
from collapse_probe.errors import ConfigError

BENCHMARKS: dict[str, str | Callable[..., Arena]] = {
    "p4g": "collapse_probe.benchmarks.p4g:P4GArena",
    "tau2-retail": "collapse_probe.benchmarks.tau2:make_arena",
    "tau2-airline": "collapse_probe.benchmarks.tau2:make_arena",
    "tau2-demo": "collapse_probe.benchmarks.tau2:make_arena",
    "cooperbench": "collapse_probe.benchmarks.cooperbench:make_arena",
    "cooperbench-demo": "collapse_probe.benchmarks.cooperbench:make_demo_arena",
}


def make_arena(name: str, **options: Any) -> Arena:
    """Build the arena of benchmark ``name`` with its options (e.g. ``max_turns``)."""
    if name not in BENCHMARKS:
        close = difflib.get_close_matches(name, list(BENCHMARKS), n=2)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ConfigError(f"--benchmark: unknown benchmark {name!r}.{hint} Known: {', '.join(BENCHMARKS)}")
    target = BENCHMARKS[name]
    if callable(target):
        return target(**options)
    module, attr = target.split(":")
    factory = getattr(importlib.import_module(module), attr)
    if name.startswith("tau2"):
        return factory(name, **options)
    return factory(**options)


def register_benchmark(name: str, target: str | Callable[..., Arena]) -> None:
    """Add a benchmark: ``target`` is ``"module:attr"`` (imported when chosen) or a factory
    ``(**options) -> Arena``. The audit, cross-play and trainers then take ``--benchmark name``; the
    audit uses the arena's optional hooks (:class:`~collapse_probe.benchmarks._base.AuditHooks`).

    Raises:
        ConfigError: ``name`` is taken or ``target`` is neither.
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"benchmark name must be a non-empty string, got {name!r}")
    if name in BENCHMARKS:
        raise ConfigError(f"benchmark {name!r} is already registered")
    if not callable(target) and not (isinstance(target, str) and target.count(":") == 1):
        raise ConfigError(f"benchmark {name!r}: expected 'module:attr' or a factory callable, got {target!r}")
    BENCHMARKS[name] = target
