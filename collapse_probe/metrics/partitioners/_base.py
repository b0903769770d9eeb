"""Labels and counts, the partitioner protocol, and exact-text matching."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from collapse_probe.errors import ConfigError
from collapse_probe.metrics._text import normalize_text

# --------------------------------------------------------------------------------------------------
# labels and counts


def canonical_labels(labels: Sequence[Hashable]) -> list[int]:
    """Renumber arbitrary class labels as 0, 1, 2, … in order of first appearance.

    Example:
        >>> canonical_labels(["b", "a", "b", "c"])
        [0, 1, 0, 2]
    """
    ids: dict[Hashable, int] = {}
    return [ids.setdefault(x, len(ids)) for x in labels]


def class_counts(labels: Sequence[Hashable]) -> np.ndarray:
    """Counts of each class, in order of first appearance — the input of every estimator.

    Example:
        >>> class_counts([0, 1, 0, 2, 0]).tolist()
        [3, 1, 1]
    """
    if len(labels) == 0:
        raise ConfigError("labels: no responses to count")
    return np.bincount(canonical_labels(labels)).astype(np.int64)


def _check_texts(texts: Sequence[str], name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise ConfigError(f"{name}: expected a list of response texts, got a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ConfigError(f"{name}[{i}]: expected a string, got {type(t).__name__}")
    return out


@runtime_checkable
class Partitioner(Protocol):
    """What every partitioner implements."""

    name: str

    def partition(self, texts: Sequence[str]) -> list[int]:
        """Class label of each response at one state (0, 1, … by first appearance)."""
        ...

    def partition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        """Labels for many states at once."""
        ...

    async def apartition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        """Async form of :meth:`partition_many` (for pipelines already inside an event loop)."""
        ...


class _SyncPartitioner:
    """Shared code for partitioners that need no model calls: ``partition`` does the work."""

    name = "base"
    by_meaning = False
    needs_model = False
    needs_benchmark = False
    arena_hooks: ClassVar[Mapping[str, str]] = {}

    def partition(self, texts: Sequence[str]) -> list[int]:  # pragma: no cover - overridden
        raise NotImplementedError

    def partition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return [self.partition(g) for g in groups]

    async def apartition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return self.partition_many(groups)


# --------------------------------------------------------------------------------------------------
# exact match


class ExactPartitioner(_SyncPartitioner):
    """Responses are equivalent iff their :func:`normalize_text` forms are equal.

    Example:
        >>> ExactPartitioner().partition(["No.", "no", "Yes!", " NO "])
        [0, 0, 1, 0]
    """

    name = "exact"

    def partition(self, texts: Sequence[str]) -> list[int]:
        return canonical_labels([normalize_text(t) for t in _check_texts(texts)])


def takes_keyword(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` accepts the keyword argument ``name`` (a hook written before it existed does not)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


async def apartition_states(
    partitioner: Any, groups: Sequence[Sequence[str]], contexts: Sequence[str | None] | None
) -> list[list[int]]:
    """``partitioner.apartition_many(groups)``, with each state's context where the partitioner takes
    one (the embedding partition hands it to its meaning key; the others class replies without it)."""
    if contexts is not None and takes_keyword(partitioner.apartition_many, "contexts"):
        return list(await partitioner.apartition_many(groups, contexts=contexts))
    return list(await partitioner.apartition_many(groups))
