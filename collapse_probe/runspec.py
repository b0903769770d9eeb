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
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collapse_probe.benchmarks import Arena
    from collapse_probe.benchmarks._plugin import Benchmark
from collapse_probe._constraints import AtMost, Integer, Number, param, rule
from collapse_probe.benchmarks._context import LOCAL_PREFIXES, BuildContext, is_local
from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK, get_benchmark
from collapse_probe.limits import MAX_STATES, MAX_TURNS, check_int

__all__ = [
    "LOCAL_PREFIXES",
    "ROLLOUT_FIELDS",
    "ArenaSpec",
    "RolloutConfig",
    "arena_record",
    "is_local",
    "options_taken",
]

_SPEC_ATTR = "_collapse_probe_arena_spec"


def arena_record(arena: Arena) -> dict[str, Any]:
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
        from collapse_probe.limits import MAX_TURNS, check_at_most

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
        from collapse_probe._identity import file_fingerprint

        return {k: file_fingerprint(v) for k in self.data_files if (v := self.options.get(k))}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy (what ``config.json`` records under ``"arena"``): the benchmark, its options
        beside it, and the content fingerprints of the data files it names (``data_fingerprints``)."""
        d: dict[str, Any] = {"benchmark": self.benchmark, **self.options}
        fps = self.data_fingerprints()
        if fps:
            d["data_fingerprints"] = fps
        return d

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> ArenaSpec:
        """The spec a ``config.json`` ``"arena"`` record describes: the benchmark and its options beside it
        (an ``"options"`` mapping is also read). An option the benchmark does not take is kept, and
        refused by :meth:`resolve` naming the flag."""
        from collapse_probe.benchmarks._plugin import RESERVED

        benchmark = str(record.get("benchmark") or DEFAULT_BENCHMARK)
        values = dict(record.get("options") or {}) if isinstance(record.get("options"), Mapping) else {}
        values.update({k: v for k, v in record.items() if k not in RESERVED})
        return cls(benchmark, values)


def options_taken(benchmark: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``values`` that benchmark ``benchmark`` declares as options: how a pipeline hands the arena a
    run-wide setting where the benchmark takes it (the audit's ``judge``, a trainer's token budget);
    everything, for an unknown benchmark (:meth:`ArenaSpec.resolve` names it)."""
    from collapse_probe.errors import CollapseProbeError

    try:
        fields = get_benchmark(benchmark).options.model_fields
    except CollapseProbeError:
        return dict(values)
    return {k: v for k, v in values.items() if k in fields}


@dataclass
class RolloutConfig:
    """What every pipeline that rolls out conversations on tasks shares: how many, how long, how sampled.

    Nested as ``rollout`` in :class:`~collapse_probe.play.PlayConfig` and
    :class:`~collapse_probe._crossplay.CrossplayConfig`, whose flat fields (``config.tasks``, the
    ``tasks=`` keyword, ``tasks`` in ``config.json``) read and write it.
    """

    tasks: int = param(4, Integer(1), AtMost(MAX_STATES, "tasks"))
    """Number of tasks (P4G: donor personas), the first of the benchmark's seeded order."""
    rollouts: int = param(2, Integer(1))
    """Conversations per task (and per cell of a cross-play matrix)."""
    max_turns: int | None = param(3, Integer(1, optional=True), AtMost(MAX_TURNS, "rounds of a conversation"))
    """Conversation rounds (P4G: persuader + persuadee exchanges); ``None``: the benchmark's own cap
    (P4G: 3; tau2: none, max steps end an episode)."""
    seed: int = param(0, Integer(None))
    """Seed of the task order and of every conversation."""
    temperature: float = param(1.0, Number(ge=0))
    """Sampling temperature of both sides."""
    max_live: int | None = param(None, Integer(1, optional=True))
    """At most this many conversations in flight (``None``: all). An execution setting: a run may
    resume with another value (every conversation has its own seed)."""


ROLLOUT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RolloutConfig))
"""The fields of :class:`RolloutConfig`, which a config that nests it also takes flat."""


def nest_rollout_and_arena(
    config: Any,
    rollout: RolloutConfig | Mapping[str, Any] | None,
    arena: ArenaSpec | Mapping[str, Any] | None,
    **flat: Any,
) -> None:
    """Set ``config.rollout`` and ``config.arena`` from the nested values and the flat keywords
    (``tasks=``, ..., ``benchmark=``, ``extra=``; a flat keyword given wins over the nested value,
    as :func:`dataclasses.replace` needs). ``extra`` is the arena's options, as recorded."""
    config.rollout = nested_rollout(rollout, **{k: v for k, v in flat.items() if k in ROLLOUT_FIELDS})
    benchmark, extra = flat.get("benchmark", UNSET), flat.get("extra", UNSET)
    config.arena = nested_arena(
        arena, None if benchmark is UNSET else benchmark, None if extra is UNSET else {} if extra is None else extra
    )


def nested_rollout(rollout: RolloutConfig | Mapping[str, Any] | None, **given: Any) -> RolloutConfig:
    """A new ``rollout`` (a config, its ``dataclasses.asdict`` form, or ``None``: the defaults) with the
    ``given`` fields that are not :data:`UNSET` put in (the flat keywords of a config that nests it)."""
    if isinstance(rollout, Mapping):
        rollout = RolloutConfig(**rollout)
    return replace(rollout or RolloutConfig(), **{k: v for k, v in given.items() if v is not UNSET})


def rollout_property(name: str) -> property:
    """A read/write attribute that is ``config.rollout.<name>`` (the flat attribute of a config whose
    keyword of earlier versions is a field of the nested :class:`RolloutConfig`)."""

    def get(config: Any) -> Any:
        return getattr(config.rollout, name)

    def set_(config: Any, value: Any) -> None:
        setattr(config.rollout, name, value)

    return property(get, set_, doc=f"``rollout.{name}``.")


def nested_arena(arena: ArenaSpec | Mapping[str, Any] | None, benchmark: str | None, options: Any) -> ArenaSpec:
    """``arena`` (a spec, its ``dataclasses.asdict`` form, or ``None``: the default) with ``benchmark``
    and ``options`` put in where given (not ``None``). The spec holds the given options mapping
    itself, not a copy, so ``config.extra[k] = v`` still records ``k``; a value that is not a mapping
    is kept for the config's rule to refuse by name."""
    if isinstance(arena, Mapping):
        arena = ArenaSpec(str(arena.get("benchmark") or DEFAULT_BENCHMARK), arena.get("options") or {})
    base = arena or ArenaSpec()
    if options is None:
        options = base.options
    elif isinstance(options, Mapping) and not isinstance(options, dict):
        options = dict(options)
    spec = ArenaSpec.__new__(ArenaSpec)
    object.__setattr__(spec, "benchmark", base.benchmark if benchmark is None else benchmark)
    object.__setattr__(spec, "options", options)
    return spec


def check_options(options: Any, flag: str = "extra") -> None:
    """Refuse benchmark options that are not a mapping of option names, naming ``flag``."""
    from collapse_probe.errors import ConfigError

    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise ConfigError(f"{flag}: expected a mapping of the benchmark's options (name -> value), got {options!r}")


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""A flat keyword not given (``None`` is a value: ``max_turns=None`` is the benchmark's own cap)."""


class FlatRolloutFields:
    """The flat fields of a config that nests ``rollout`` (:class:`RolloutConfig`) and ``arena``
    (:class:`ArenaSpec`), as read/write properties: ``config.tasks`` is ``config.rollout.tasks``,
    ``config.benchmark`` is ``config.arena.benchmark`` and ``config.extra`` the arena's options."""

    rollout: RolloutConfig
    arena: ArenaSpec

    FLAT_FIELDS = (*ROLLOUT_FIELDS, "benchmark", "extra")
    """Keywords the config takes besides its fields (the flat form of earlier versions)."""

    @rule
    def _options_mapping(self) -> None:
        check_options(self.extra)

    def flat_rollout(self) -> dict[str, Any]:
        """The rollout fields as ``config.json`` records them (flat, beside the config's own)."""
        return {name: getattr(self.rollout, name) for name in ROLLOUT_FIELDS}

    @property
    def tasks(self) -> int:
        """``rollout.tasks``."""
        return self.rollout.tasks

    @tasks.setter
    def tasks(self, value: int) -> None:
        self.rollout.tasks = value

    @property
    def rollouts(self) -> int:
        """``rollout.rollouts``."""
        return self.rollout.rollouts

    @rollouts.setter
    def rollouts(self, value: int) -> None:
        self.rollout.rollouts = value

    @property
    def max_turns(self) -> int | None:
        """``rollout.max_turns``."""
        return self.rollout.max_turns

    @max_turns.setter
    def max_turns(self, value: int | None) -> None:
        self.rollout.max_turns = value

    @property
    def seed(self) -> int:
        """``rollout.seed``."""
        return self.rollout.seed

    @seed.setter
    def seed(self, value: int) -> None:
        self.rollout.seed = value

    @property
    def temperature(self) -> float:
        """``rollout.temperature``."""
        return self.rollout.temperature

    @temperature.setter
    def temperature(self, value: float) -> None:
        self.rollout.temperature = value

    @property
    def max_live(self) -> int | None:
        """``rollout.max_live``."""
        return self.rollout.max_live

    @max_live.setter
    def max_live(self, value: int | None) -> None:
        self.rollout.max_live = value

    @property
    def benchmark(self) -> str:
        """``arena.benchmark``."""
        return self.arena.benchmark

    @benchmark.setter
    def benchmark(self, value: str) -> None:
        nest_rollout_and_arena(self, self.rollout, self.arena, benchmark=value)

    @property
    def extra(self) -> dict[str, Any]:
        """``arena.options``: the benchmark's options, as recorded (the mapping itself, so
        ``config.extra[k] = v`` records ``k``)."""
        return self.arena.options  # type: ignore[return-value]  # always the dict nest_rollout_and_arena set

    @extra.setter
    def extra(self, value: dict[str, Any]) -> None:
        nest_rollout_and_arena(self, self.rollout, self.arena, extra=value)
