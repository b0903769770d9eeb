"""The benchmark registry: benchmark name -> its :class:`~collapse_probe.benchmarks.Benchmark`, imported lazily.

This module, the benchmark packages under ``collapse_probe/benchmarks/`` and the shipped data files
are the only places that name a shipped benchmark; everything else (pipelines, CLI, metrics) asks the
registry. Names come from :data:`BENCHMARKS` (the shipped ones and :func:`register_benchmark`) and
from the entry-point group ``collapse_probe.benchmarks`` of every installed distribution, found the
same way: a ``"module:attr"`` target is imported only when its name is chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from collapse_probe.core._plugins import BENCHMARKS_GROUP, Registry
from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.benchmarks._base import Arena
    from collapse_probe.benchmarks._plugin import Benchmark

DEFAULT_BENCHMARK = "p4g"
"""The benchmark of a run that names none."""


def _benchmark_of(name: str, target: Any, obj: Any) -> Benchmark:
    from importlib.metadata import EntryPoint

    from collapse_probe.benchmarks._plugin import Benchmark
    from collapse_probe.core._plugins import describe_entry_point

    if isinstance(obj, Benchmark):
        return obj
    what = describe_entry_point(target) if isinstance(target, EntryPoint) else repr(target)
    raise ConfigError(
        f"benchmark {name!r}: {what} names a {type(obj).__name__}, not a collapse_probe.benchmarks.Benchmark "
        "(an arena factory registers as Benchmark(name, build=lambda options, context: ...))"
    )


BENCHMARKS: Registry[Benchmark] = Registry(
    "benchmark",
    flag="--benchmark",
    group=BENCHMARKS_GROUP,
    entries={  # imported when chosen
        "p4g": "collapse_probe.benchmarks.p4g:BENCHMARK",
        "tau2-retail": "collapse_probe.benchmarks.tau2:RETAIL",
        "tau2-airline": "collapse_probe.benchmarks.tau2:AIRLINE",
        "tau2-demo": "collapse_probe.benchmarks.tau2:DEMO",
        "cooperbench": "collapse_probe.benchmarks.cooperbench:BENCHMARK",
        "cooperbench-demo": "collapse_probe.benchmarks.cooperbench:DEMO",
        "scenarios": "collapse_probe.benchmarks.scenarios:BENCHMARK",
    },
    check=_benchmark_of,
)
"""Benchmark name -> ``"module:attr"`` of a :class:`Benchmark`, or a :class:`Benchmark`; installed
distributions add names through the entry-point group ``collapse_probe.benchmarks``."""


TRAIN_ARENA_OPTIONS: tuple[str, ...] = ("personas", "tau2_data")
"""Arena options the train config has as fields of its own (its ``--personas`` and ``--tau2-data`` flags)."""

PUBLISHED_FORMATS: Registry[Callable[..., Any]] = Registry(
    "published format",
    flag="--format",
    entries={
        "tau2": "collapse_probe.integrations.interop._tau2:read_tau2_results",
        "verifiers": "collapse_probe.integrations.interop._verifiers:read_verifiers_traces",
        "verifiers-results": "collapse_probe.integrations.interop._verifiers:read_verifiers_results",
        "nemo-gym": "collapse_probe.integrations.interop._nemo_gym:read_nemo_gym_rollouts",
    },
)
"""Formats of published trajectories ``audit --from`` reads (besides the generic ``inspect``, ``jsonl``
and ``taubench``, whose readers take the simulator's role): name -> ``"module:reader"``, the reader taking
the path. :mod:`collapse_probe.integrations.interop._detect` tells a file's format from its content."""
TAU2_FORMAT = "tau2"
"""The published format of a τ2 results file (its reader is :data:`PUBLISHED_FORMATS`' ``tau2``)."""

DIRECTORY_FORMAT = TAU2_FORMAT
"""The published format of a directory or a ``results.json`` (the τ2-bench layout)."""
TAU2_BENCHMARK_PREFIX = "tau2-"
"""The τ2 benchmarks' names are this prefix and the domain (``tau2-retail``)."""


def benchmark_names() -> list[str]:
    """Every benchmark name: registered here, then those of installed distributions' entry points."""
    return BENCHMARKS.names()


def get_benchmark(name: str) -> Benchmark:
    """The :class:`Benchmark` called ``name`` (its module imported now).

    Raises:
        ConfigError: an unknown name (with close matches), or a target that is not a benchmark.
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"--benchmark: expected a benchmark name, got {name!r}")
    return BENCHMARKS.load(name)


def labeller_of(name: str) -> Callable[[str], str] | None:
    """The decision labeller of benchmark ``name`` (``None``: no such benchmark, or it declares none)."""
    from collapse_probe.errors import CollapseProbeError

    try:
        return get_benchmark(name).labeller
    except CollapseProbeError:
        return None


def make_arena(name: str, **options: Any) -> Arena:
    """Build the arena of benchmark ``name`` from keyword options of its arena factory (e.g. ``max_turns``).

    Prefer :class:`~collapse_probe.rollout.runspec.ArenaSpec` (typed options, recorded with the run).
    """
    from collapse_probe.benchmarks._plugin import BuildContext

    bench = get_benchmark(name)
    if bench.factory is not None:
        return bench.factory(**options)
    return bench.build(bench.parse(options), BuildContext())


def register_benchmark(name: str, target: str | Benchmark) -> None:
    """Add a benchmark: ``target`` is ``"module:attr"`` (imported when chosen) of a :class:`Benchmark`,
    or a :class:`Benchmark`. The audit, cross-play and trainers
    then take ``--benchmark name``; the audit uses the arena's optional hooks
    (:class:`~collapse_probe.benchmarks._base.AuditHooks`). An installed distribution registers through
    the entry-point group ``collapse_probe.benchmarks`` instead.

    Raises:
        ConfigError: ``name`` is taken or ``target`` is neither.
    """
    from collapse_probe.benchmarks._plugin import Benchmark

    if not isinstance(target, (str, Benchmark)):
        raise ConfigError(f"benchmark {name!r}: expected 'module:attr' or a Benchmark, got {target!r}")
    BENCHMARKS.register(name, target)


__all__ = ["BENCHMARKS", "DEFAULT_BENCHMARK", "benchmark_names", "get_benchmark", "make_arena", "register_benchmark"]
