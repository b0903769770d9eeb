"""Benchmark name -> arena factory, imported lazily."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from collapse_probe.benchmarks._base import Arena
from collapse_probe.errors import ConfigError

BENCHMARKS: dict[str, str] = {
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
    module, attr = BENCHMARKS[name].split(":")
    factory = getattr(importlib.import_module(module), attr)
    if name.startswith("tau2"):
        return factory(name, **options)
    return factory(**options)
