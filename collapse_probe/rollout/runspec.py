"""One description of a run's benchmark arena, shared by ``play``, ``audit``, ``crossplay`` and ``train``.

:class:`ArenaSpec` is ``{benchmark, options}``: the benchmark's name and its options as the user gave
them (the fields of that benchmark's ``Options`` model, see :class:`~collapse_probe.benchmarks.Benchmark`).
:meth:`ArenaSpec.resolve` validates them and fills in what depends on the participants (the
benchmark's ``resolve``: e.g. a turn default, compact prompts when any participant is a small local
model) and :meth:`ArenaSpec.build` makes the arena. Every pipeline goes through these two calls, so
a policy trained by ``train`` is rolled out with exactly the prompts ``crossplay`` later evaluates it
with, and the resolved spec is what ``config.json`` records under ``"arena"``: ``{"benchmark": ...,
<each option>: ..., "data_fingerprints": {...}}`` (the options flat beside the name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

if TYPE_CHECKING:
    from collapse_probe.benchmarks import Arena
    from collapse_probe.benchmarks._plugin import Benchmark
from collapse_probe.benchmarks._context import LOCAL_PREFIXES, BuildContext, is_local
from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK, get_benchmark
from collapse_probe.core._constraints import AtMost, Config, Constraint, Integer, Number
from collapse_probe.core.limits import MAX_LIVE, MAX_ROLLOUTS, MAX_SEED, MAX_STATES, MAX_TURNS, check_int

__all__ = [
    "LOCAL_PREFIXES",
    "ROLLOUT_FIELDS",
    "ArenaSpec",
    "RolloutConfig",
    "RunConfig",
    "arena_record",
    "is_local",
    "options_taken",
]

_SPEC_ATTR = "_collapse_probe_arena_spec"


def arena_record(arena: Arena) -> dict[str, object]:
    """What ``config.json`` records under ``"arena"``: the resolved :class:`ArenaSpec` the arena was built
    from, or, for an arena built by other means, its benchmark name and ``"custom": true``."""
    spec = getattr(arena, _SPEC_ATTR, None)
    if isinstance(spec, ArenaSpec):
        return spec.to_dict()
    return {"benchmark": getattr(arena, "name", type(arena).__name__), "custom": True}


@dataclass(frozen=True)
class ArenaSpec:
    """The benchmark arena of a run: ``benchmark`` and its ``options``
    (``ArenaSpec(name, {"max_turns": 3})``; read an option as ``spec.options["max_turns"]``).

    Args:
        benchmark: a registered benchmark name (``collapse-probe`` lists them in ``--benchmark``'s help).
        options: that benchmark's options, field name -> value (see its ``Options`` model).
    """

    benchmark: str = DEFAULT_BENCHMARK
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", dict(self.options or {}))

    @property
    def definition(self) -> Benchmark:
        """The registered :class:`~collapse_probe.benchmarks.Benchmark` (its module imported now).

        Raises:
            ConfigError: an unknown benchmark (with close matches).
        """
        return get_benchmark(self.benchmark)

    def resolve(self, participants: Sequence[str] = ()) -> ArenaSpec:
        """The spec with its options validated and every participant-dependent choice made (idempotent).

        Raises:
            ConfigError: an unknown benchmark, or an option its ``Options`` model refuses (naming the flag).
        """
        bench = self.definition
        for name in ("max_turns", "max_tokens"):
            if name in bench.options.model_fields:
                check_int(self.options.get(name), f"--{name.replace('_', '-')}", optional=True)
        from collapse_probe.core.limits import MAX_TURNS, check_at_most

        check_at_most(self.options.get("max_turns"), MAX_TURNS, "--max-turns", "rounds of a conversation")
        parsed = bench.parse(self.options)
        resolved = bench.resolve(parsed, BuildContext(participants=tuple(participants)))
        return ArenaSpec(self.benchmark, resolved.model_dump())

    def build(self, participants: Sequence[str] = (), *, cache: bool = True, judge_model: Any = None) -> Arena:
        """Resolve against ``participants`` and build the arena.

        Args:
            participants: the run's participant specs (decide compact prompts).
            cache: serve the judge through the response cache.
            judge_model: an already built judge model (default: built from the ``judge`` option).
        """
        spec = self.resolve(participants)
        bench = spec.definition
        context = BuildContext(participants=tuple(participants), cache=cache, judge_model=judge_model)
        arena = bench.build(bench.parse(spec.options), context)
        setattr(arena, _SPEC_ATTR, spec)
        return arena

    @property
    def data_files(self) -> tuple[str, ...]:
        """Options naming data the arena reads (the benchmark's declared ``data``): ``config.json``
        records a content fingerprint of each given one (``data_fingerprints``), so a run resumed
        after the file changed in place is refused."""
        return self.definition.data

    def data_fingerprints(self) -> dict[str, str]:
        """Option -> ``sha256:...`` of the file (or of every file under the directory) it names; hashed
        once per ``(path, size, mtime)``."""
        from collapse_probe.core._identity import file_fingerprint

        return {k: file_fingerprint(v) for k in self.data_files if (v := self.options.get(k))}

    def to_dict(self) -> dict[str, object]:
        """JSON-ready copy (what ``config.json`` records under ``"arena"``): the benchmark, its options
        beside it, and the content fingerprints of the data files it names (``data_fingerprints``)."""
        d: dict[str, object] = {"benchmark": self.benchmark, **self.options}
        fps = self.data_fingerprints()
        if fps:
            d["data_fingerprints"] = fps
        return d

    @classmethod
    def from_dict(cls, record: Mapping[str, object]) -> ArenaSpec:
        """The spec a ``config.json`` ``"arena"`` record describes: the benchmark and its options beside it
        (an ``"options"`` mapping is also read). An option the benchmark does not take is kept, and
        refused by :meth:`resolve` naming the flag."""
        from collapse_probe.benchmarks._plugin import RESERVED

        benchmark = str(record.get("benchmark") or DEFAULT_BENCHMARK)
        options = record.get("options")
        values: dict[str, object] = dict(options) if isinstance(options, Mapping) else {}
        values.update({k: v for k, v in record.items() if k not in RESERVED})
        return cls(benchmark, values)


def options_taken(benchmark: str, values: Mapping[str, object]) -> dict[str, object]:
    """The ``values`` that benchmark ``benchmark`` declares as options: how a pipeline hands the arena a
    run-wide setting where the benchmark takes it (the audit's ``judge``, a trainer's token budget);
    everything, for an unknown benchmark (:meth:`ArenaSpec.resolve` names it)."""
    from collapse_probe.errors import CollapseProbeError

    try:
        fields = get_benchmark(benchmark).options.model_fields
    except CollapseProbeError:
        return dict(values)
    return {k: v for k, v in values.items() if k in fields}


@dataclass(frozen=True)
class BenchmarkOptions(Constraint):
    """A mapping of a benchmark's option names to values (which the benchmark's ``Options`` checks);
    ``optional`` also accepts ``None``."""

    optional: bool = False

    def check(self, value: Any, flag: str) -> None:
        if not (self.optional and value is None):
            check_options(value, flag.lstrip("-"))


class RolloutConfig(Config):
    """What every pipeline that rolls out conversations on tasks shares: how many, how long, how sampled.

    :class:`RunConfig` (so :class:`~collapse_probe.pipelines.play.PlayConfig` and
    :class:`~collapse_probe.pipelines.crossplay.CrossplayConfig`) has these fields itself; the audit and the
    trainers name some of them differently (``states``, ``group_size``) and give theirs as
    ``config.rollout``.
    """

    tasks: Annotated[int, Integer(1), AtMost(MAX_STATES, "tasks")] = 4
    """Number of tasks (P4G: donor personas), the first of the benchmark's seeded order."""
    rollouts: Annotated[int, Integer(1, most=MAX_ROLLOUTS)] = 2
    """Conversations per task (and per cell of a cross-play matrix)."""
    max_turns: Annotated[int | None, Integer(1, optional=True), AtMost(MAX_TURNS, "rounds of a conversation")] = 3
    """Conversation rounds (P4G: persuader + persuadee exchanges); ``None``: the benchmark's own cap
    (P4G: 3; tau2: none, max steps end an episode)."""
    seed: Annotated[int, Integer(None, most=MAX_SEED)] = 0
    """Seed of the task order and of every conversation."""
    temperature: Annotated[float, Number(ge=0)] = 1.0
    """Sampling temperature of both sides."""
    max_live: Annotated[int | None, Integer(1, optional=True, most=MAX_LIVE)] = None
    """At most this many conversations in flight (``None``: all). An execution setting: a run may
    resume with another value (every conversation has its own seed)."""


ROLLOUT_FIELDS: tuple[str, ...] = tuple(RolloutConfig.model_fields)
"""The fields of :class:`RolloutConfig`."""


class RunConfig(RolloutConfig):
    """The rollout fields and the benchmark arena: what ``play`` and ``crossplay`` configs share."""

    benchmark: str = DEFAULT_BENCHMARK
    """Benchmark name (a registered one, see :func:`~collapse_probe.benchmarks.benchmark_names`)."""
    extra: Annotated[dict[str, object], BenchmarkOptions()] = {}
    """The benchmark's options, as given (the fields of its ``Options`` model, e.g. a persona file or a
    data directory)."""

    @property
    def rollout(self) -> RolloutConfig:
        """The rollout fields as a :class:`RolloutConfig` (a copy)."""
        return RolloutConfig(**{name: getattr(self, name) for name in ROLLOUT_FIELDS})

    @property
    def arena(self) -> ArenaSpec:
        """The benchmark and its options as an :class:`ArenaSpec` (what builds the arena)."""
        return ArenaSpec(self.benchmark, self.extra)


def check_options(options: Any, flag: str = "extra") -> None:
    """Refuse benchmark options that are not a mapping of option names, naming ``flag``."""
    from collapse_probe.errors import ConfigError

    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise ConfigError(f"{flag}: expected a mapping of the benchmark's options (name -> value), got {options!r}")
