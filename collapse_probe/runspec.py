"""One description of a run's benchmark arena, shared by ``play``, ``audit``, ``crossplay`` and ``train``.

:class:`ArenaSpec` is ``{benchmark, options}``: the benchmark's name and its options as the user gave
them (the fields of that benchmark's ``Options`` model, see :class:`~collapse_probe.benchmarks.Benchmark`).
:meth:`ArenaSpec.resolve` validates them and fills in what depends on the participants (the
benchmark's ``resolve``: e.g. a turn default, compact prompts when any participant is a small local
model) and :meth:`ArenaSpec.build` makes the arena. Every pipeline goes through these two calls, so
a policy trained by ``train`` is rolled out with exactly the prompts ``crossplay`` later evaluates it
with, and the resolved spec is what ``config.json`` records under ``"arena"``: ``{"benchmark": ...,
<each option>: ..., "data_fingerprints": {...}}`` (the options flat beside the name, as before).

The former flat form ``ArenaSpec(benchmark=..., max_turns=..., personas=...)`` still works: keyword
options are merged into ``options`` (a :class:`DeprecationWarning`), and reading ``spec.max_turns``
gives the option (``None`` when the benchmark has no such option).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collapse_probe.benchmarks import Arena
    from collapse_probe.benchmarks._plugin import Benchmark
from collapse_probe.benchmarks._context import LOCAL_PREFIXES, BuildContext, is_local
from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK, FORMER_FLAT_FIELDS, get_benchmark
from collapse_probe.limits import check_int

__all__ = ["LOCAL_PREFIXES", "ArenaSpec", "arena_record", "is_local", "upgrade_arena_record"]

_SPEC_ATTR = "_collapse_probe_arena_spec"

LEGACY_FIELDS = FORMER_FLAT_FIELDS
"""The former flat fields (see :data:`~collapse_probe.benchmarks._registry.FORMER_FLAT_FIELDS`)."""


def arena_record(arena: Arena) -> dict[str, Any]:
    """What ``config.json`` records under ``"arena"``: the resolved :class:`ArenaSpec` the arena was built
    from, or, for an arena built by other means, its benchmark name and ``"custom": true``."""
    spec = getattr(arena, _SPEC_ATTR, None)
    if isinstance(spec, ArenaSpec):
        return spec.to_dict()
    return {"benchmark": getattr(arena, "name", type(arena).__name__), "custom": True}


@dataclass(frozen=True, init=False)
class ArenaSpec:
    """The benchmark arena of a run: ``benchmark`` and its ``options``.

    Args:
        benchmark: a registered benchmark name (``collapse-probe`` lists them in ``--benchmark``'s help).
        options: that benchmark's options, field name -> value (see its ``Options`` model).
        **flat: deprecated: options as keywords (``ArenaSpec(benchmark=name, max_turns=3)``).
    """

    benchmark: str = DEFAULT_BENCHMARK
    options: Mapping[str, Any] = field(default_factory=dict)

    def __init__(
        self, benchmark: str = DEFAULT_BENCHMARK, options: Mapping[str, Any] | None = None, **flat: Any
    ) -> None:
        merged = dict(options or {})
        if flat:
            warnings.warn(
                "ArenaSpec(benchmark, **options) is deprecated; pass options={...}", DeprecationWarning, stacklevel=2
            )
            merged.update(_applicable(benchmark, flat))
        object.__setattr__(self, "benchmark", benchmark)
        object.__setattr__(self, "options", merged)

    def __getattr__(self, name: str) -> Any:
        # the former flat fields stay readable: spec.max_turns, spec.compact, ...
        if name in LEGACY_FIELDS or (not name.startswith("_") and name in self.__dict__.get("options", {})):
            return self.__dict__["options"].get(name, LEGACY_FIELDS.get(name))
        raise AttributeError(name)

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
    def DATA_FILES(self) -> tuple[str, ...]:  # noqa: N802 - the former class attribute's name
        """Options naming data the arena reads (the benchmark's declared ``data``): ``config.json``
        records a content fingerprint of each given one (``data_fingerprints``), so a run resumed
        after the file changed in place is refused."""
        return self.definition.data

    def data_fingerprints(self) -> dict[str, str]:
        """Option -> ``sha256:...`` of the file (or of every file under the directory) it names; hashed
        once per ``(path, size, mtime)``."""
        from collapse_probe.models._identity import file_fingerprint

        return {k: file_fingerprint(v) for k in self.DATA_FILES if (v := self.options.get(k))}

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
        """The spec a ``config.json`` ``"arena"`` record describes (this version's or the former flat
        one, whose fields other benchmarks' options are dropped); an ``"options"`` mapping is also read."""
        from collapse_probe.benchmarks._plugin import RESERVED

        benchmark = str(record.get("benchmark") or DEFAULT_BENCHMARK)
        values = dict(record.get("options") or {}) if isinstance(record.get("options"), Mapping) else {}
        values.update({k: v for k, v in record.items() if k not in RESERVED})
        return cls(benchmark, _applicable(benchmark, values, record=True))


def _applicable(benchmark: str, values: Mapping[str, Any], *, record: bool = False) -> dict[str, Any]:
    """``values`` the benchmark takes. A former flat field it does not take is dropped when left at its
    default (or, in a stored ``record``, always: it never reached this benchmark's arena); any other
    name is kept, and refused by :meth:`ArenaSpec.resolve` naming the flag."""
    from collapse_probe.errors import CollapseProbeError

    try:
        fields = get_benchmark(benchmark).options.model_fields
    except CollapseProbeError:  # an unknown benchmark: resolve() names it
        return dict(values)
    return {
        k: v
        for k, v in values.items()
        if k in fields or k not in LEGACY_FIELDS or (not record and v != LEGACY_FIELDS[k])
    }


def upgrade_arena_record(record: Any) -> Any:
    """A ``config.json`` ``"arena"`` record in this version's form (a former flat record keeps only the
    options its benchmark takes), for comparing a stored run with a resumed one; others unchanged."""
    if not isinstance(record, Mapping) or record.get("custom") or not isinstance(record.get("benchmark"), str):
        return record
    from collapse_probe.errors import CollapseProbeError

    try:
        get_benchmark(record["benchmark"])
    except CollapseProbeError:
        return record
    spec = ArenaSpec.from_dict(record)
    try:  # the options with their defaults filled, as this version records them
        options = spec.definition.parse(spec.options).model_dump()
    except CollapseProbeError:
        options = dict(spec.options)
    out: dict[str, Any] = {"benchmark": spec.benchmark, **options}
    if "data_fingerprints" in record:
        out["data_fingerprints"] = record["data_fingerprints"]
    return out
