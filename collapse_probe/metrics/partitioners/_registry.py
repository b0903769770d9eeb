"""The partitioner registry: names to classes (with installed entry points), what each needs, and the
factories that build one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collapse_probe.core._plugins import PARTITIONERS_GROUP, Registry
from collapse_probe.errors import ConfigError
from collapse_probe.metrics.partitioners._base import ExactPartitioner, Partitioner, _check_texts, canonical_labels
from collapse_probe.metrics.partitioners._embedding import DisclosurePartitioner, EmbeddingPartitioner
from collapse_probe.metrics.partitioners._judge import JudgeEquivalencePartitioner
from collapse_probe.metrics.partitioners._label import LabelPartitioner

PARTITIONERS: Registry[type] = Registry(
    "partitioner",
    group=PARTITIONERS_GROUP,
    entries={
        "exact": ExactPartitioner,
        "embedding": EmbeddingPartitioner,
        "disclosure": DisclosurePartitioner,
        "judge": JudgeEquivalencePartitioner,
        "label": LabelPartitioner,
    },
)
"""Partitioner name -> class: the one registry of partitioners. An installed distribution adds one
through the entry-point group ``collapse_probe.partitioners`` (the entry point's name is the
partitioner's, its object the class).

A class declares what its callers need to know, as class attributes (a plugin may leave any out; the
defaults are those of exact text matching):

- ``by_meaning`` (``False``): its classes are meanings, so the audit's meaning view may judge them.
- ``needs_model`` (``False``): its constructor takes ``model=`` (a judge ChatModel); only callers with
  a judge can build it (the audit, with ``--judge`` or the simulator's model).
- ``arena_hooks`` (``{}``): constructor keyword -> arena hook filled in from the benchmark when not given
  (the embedding partition's ``key`` from ``meaning_key``).
- ``needs_benchmark`` (``False``): it classes a benchmark's simulator replies through those hooks and a
  benchmark must provide them (``label``: the ``decision_label``); callers that class the policy's own
  messages (strategy entropy) cannot use it.
"""


def _trait(cls: Any, name: str) -> Any:
    default: Any = {} if name == "arena_hooks" else False
    return getattr(cls, name, default)


def partitioner_names() -> list[str]:
    """Every selectable name: the registered ones, then those of installed entry points (not loaded)."""
    return PARTITIONERS.names()


def partitioner_class(name: object) -> Any:
    """The class of partitioner ``name``: registered here, else an installed entry point (``None``: none).

    Raises:
        ConfigError: an entry point of that name that cannot be loaded.
    """
    return PARTITIONERS.find(name)


def _missing_need(cls: Any, *, model: bool, benchmark: bool) -> str | None:
    """Why a caller with (or without) a judge model and a benchmark cannot build ``cls`` (``None``: it can)."""
    if _trait(cls, "needs_model") and not model:
        return "it needs a judge model"
    if _trait(cls, "needs_benchmark") and not benchmark:
        hooks = ", ".join(_trait(cls, "arena_hooks").values()) or "its hooks"
        return f"it classes a benchmark's replies by the benchmark's {hooks}"
    return None


def usable_partitioners(*, model: bool = True, benchmark: bool = True, installed: bool = False) -> tuple[str, ...]:
    """Names a caller can build: one with (``model``) or without a judge model, classing a benchmark's
    simulator replies (``benchmark``) or the policy's own messages.

    Args:
        installed: also the installed entry points (each loaded to read what it needs; one that
            cannot be loaded is left out). Without it: the registered names only.
    """
    names = partitioner_names() if installed else list(PARTITIONERS)
    out = []
    for name in names:
        try:
            cls = partitioner_class(name)
        except ConfigError:
            continue  # a broken plugin is named when it is chosen, not here
        if cls is not None and _missing_need(cls, model=model, benchmark=benchmark) is None:
            out.append(name)
    return tuple(out)


def meaning_partitions() -> tuple[str, ...]:
    """The registered partitions whose classes are meanings (``embedding``, ``judge``)."""
    return tuple(n for n, cls in PARTITIONERS.items() if _trait(cls, "by_meaning"))


def groups_by_meaning(name: str) -> bool:
    """Partition ``name``'s classes are meanings (``False`` for a name not installed here)."""
    try:
        cls = partitioner_class(name)
    except ConfigError:
        return False
    return bool(_trait(cls, "by_meaning"))


def partitioner_needs_model(name: str) -> bool:
    """Partition ``name`` is built with ``model=`` (a judge)."""
    return bool(_trait(partitioner_class(name), "needs_model"))


def check_partitioner(name: object, flag: str, use: str | None = None, *, model: bool = False,
                      benchmark: bool = False) -> None:  # fmt: skip
    """Check at a config boundary that ``name`` is a partitioner this caller can build.

    Args:
        name: the value received.
        flag: the flag or field named in the error.
        use: what the classes are for, named in the error (e.g. "the policy strategy entropy").
        model: the caller hands the partitioner a judge model.
        benchmark: the caller classes a benchmark's simulator replies (its arena hooks are there).

    Raises:
        ConfigError: one line naming ``flag``, the allowed names (installed ones included), the value
            received, why a known name does not fit, and the closest names of an unknown one.
    """
    cls = partitioner_class(name) if isinstance(name, str) else None
    why = None if cls is None else _missing_need(cls, model=model, benchmark=benchmark)
    if cls is not None and why is None:
        return
    allowed = usable_partitioners(model=model, benchmark=benchmark, installed=True)
    if cls is None:  # an unknown name: the error every registry gives
        from collapse_probe.core._plugins import unknown_name

        raise unknown_name(flag, "partitioner", name, allowed)
    where = f" for {use}" if use else ""
    raise ConfigError(f"{flag} must be one of {', '.join(allowed)}{where}, got {name!r} ({why}).")


class _PartitionOnly:
    """A partitioner that implements only ``partition(texts)`` (as a plugin may), with the batch forms
    every pipeline calls; its labels are checked (one per text) and renumbered by first appearance."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", type(inner).__name__))

    def partition(self, texts: Sequence[str]) -> list[int]:
        texts = _check_texts(texts)
        labels = list(self.inner.partition(texts))
        if len(labels) != len(texts):
            raise ConfigError(f"partitioner {self.name!r} returned {len(labels)} labels for {len(texts)} texts")
        return canonical_labels(labels)

    def partition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return [self.partition(g) for g in groups]

    async def apartition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return self.partition_many(groups)

    def __getattr__(self, attr: str) -> Any:  # the plugin's own attributes (options, fitted state)
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)


def get_partitioner(name: str, **kw: Any) -> Partitioner:
    """Construct a partitioner by name (``exact``, ``embedding``, ``judge``, ``label`` or an installed one).

    Args:
        name: partitioner name.
        **kw: constructor arguments (``judge`` needs ``model=``).

    Raises:
        ConfigError: for an unknown name (with close matches) or constructor arguments it does not take.
    """
    cls = PARTITIONERS.load(name)
    if _trait(cls, "needs_model") and "model" not in kw:
        raise ConfigError(f"partitioner {name!r} needs model= (a ChatModel or a model spec such as 'smollm2')")
    import inspect

    allowed = [p for p in inspect.signature(cls).parameters]
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise ConfigError(f"partitioner {name!r} does not take {unknown}; its options are {allowed}")
    made = cls(**kw)
    if not (hasattr(made, "partition_many") and hasattr(made, "apartition_many")):
        return _PartitionOnly(made)
    return made


def partitioner_for(name: str, arena: Any = None, **kw: Any) -> Partitioner:
    """A partitioner of the simulator's replies on ``arena``'s benchmark: each keyword of the class's
    ``arena_hooks`` not given is filled from the arena (``embedding``'s ``key`` from ``meaning_key``,
    ``label``'s ``labeller`` from ``decision_label``; see
    :class:`~collapse_probe.benchmarks._base.AuditHooks`); otherwise as :func:`get_partitioner`.

    Raises:
        ConfigError: a partitioner that needs a benchmark hook the arena lacks, or an unknown name.
    """
    cls = partitioner_class(name)
    for option, hook in dict(_trait(cls, "arena_hooks") if cls is not None else {}).items():
        if option in kw:
            continue
        value = getattr(arena, hook, None)
        if value is None and _trait(cls, "needs_benchmark"):
            where = f"benchmark {arena.name}" if arena is not None and hasattr(arena, "name") else "this benchmark"
            others = ", ".join(usable_partitioners(benchmark=False))
            raise ConfigError(f"partition {name!r}: {where} has no {hook.replace('_', ' ')}; use one of {others}")
        kw[option] = value
    return get_partitioner(name, **kw)
