"""Classes from a domain labeller: :class:`LabelPartitioner` and the named labellers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from collapse_probe.core._plugins import Registry
from collapse_probe.errors import ConfigError
from collapse_probe.metrics.partitioners._base import _check_texts, _SyncPartitioner, canonical_labels

LABELLERS: Registry[Callable[[str], str]] = Registry("labeller")
"""Named labellers registered in this process for :class:`LabelPartitioner`
(``LABELLERS.register(name, fn)``); a benchmark name also names its labeller (the ``labeller`` of its
:class:`~collapse_probe.benchmarks.Benchmark`)."""


def _named_labeller(name: str) -> Callable[[str], str]:
    """The labeller ``name`` names: one in :data:`LABELLERS`, else the benchmark ``name``'s own.

    Raises:
        ConfigError: neither (naming the known labellers)."""
    own = LABELLERS.find(name)
    if own is not None:
        return own
    from collapse_probe.benchmarks._registry import labeller_of

    found = labeller_of(name)
    if found is None:
        raise ConfigError(f"labeller must be a benchmark with a decision labeller, a name in {LABELLERS.names()} "
                          f"or a callable, got {name!r}")  # fmt: skip
    return found


class LabelPartitioner(_SyncPartitioner):
    """Classes from a domain labeller (a function text -> class name); default: P4G donation decisions.

    Args:
        labeller: a callable ``str -> str``, a name in :data:`LABELLERS` or a benchmark's name (its own
            labeller); default: the default benchmark's.

    Example:
        >>> LabelPartitioner().labels_for(["[DONATE $1]", "no", "[donate 1.00]"])
        ['donate:$1', 'refuse', 'donate:$1']
    """

    name = "label"
    needs_benchmark = True
    arena_hooks: ClassVar[Mapping[str, str]] = {"labeller": "decision_label"}

    def __init__(self, labeller: str | Callable[[str], str] | None = None) -> None:
        if labeller is None:
            from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK

            labeller = DEFAULT_BENCHMARK
        if isinstance(labeller, str):
            self._fn = _named_labeller(labeller)
        elif not callable(labeller):
            raise ConfigError(f"labeller must be a name or a callable str -> str, got {type(labeller).__name__}")
        self.labeller = labeller

    def labels_for(self, texts: Sequence[str]) -> list[str]:
        """The class name of each response."""
        fn = self._fn if isinstance(self.labeller, str) else self.labeller
        return [fn(t) for t in _check_texts(texts)]

    def partition(self, texts: Sequence[str]) -> list[int]:
        return canonical_labels(self.labels_for(texts))
