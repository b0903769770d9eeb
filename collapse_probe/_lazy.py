"""A name -> ``"module:attr"`` table whose entries are imported only when looked up.

A lower layer names code of a higher one this way without importing it (the metrics name the P4G
decision labeller, which is the benchmark's code): nothing is loaded until a user asks for that name,
and asking for an unknown name lists the known ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any


def load_target(target: str) -> Any:
    """The object a ``"module:attr"`` string names (the module is imported now)."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


class LazyRegistry(Mapping[str, Any]):
    """A read-only mapping of names to objects given as objects or as ``"module:attr"`` strings."""

    def __init__(self, entries: Mapping[str, Any]) -> None:
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> Any:
        value = self._entries[name]
        if isinstance(value, str):
            value = self._entries[name] = load_target(value)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"LazyRegistry({sorted(self._entries)})"
