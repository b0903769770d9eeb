"""Registries that other installed packages extend: ``"module:attr"`` targets imported only when
chosen, entry-point groups, and "did you mean" for unknown names.

A separately installed distribution adds a benchmark, a model backend or a partitioner by declaring
an entry point in one of :data:`GROUPS` (``pyproject.toml``)::

    [project.entry-points."collapse_probe.benchmarks"]
    hotel-survey = "hotel_survey:BENCHMARK"

The entry point's name is the name users give (``--benchmark hotel-survey``); its object is loaded
only when that name is chosen, so a broken plugin breaks only the runs that choose it.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from collapse_probe.errors import ConfigError

BENCHMARKS_GROUP = "collapse_probe.benchmarks"
"""Entry points naming a :class:`~collapse_probe.benchmarks.Benchmark` (or an arena factory)."""
MODELS_GROUP = "collapse_probe.models"
"""Entry points naming a backend factory ``(spec, name, **options) -> ChatModel``; the entry point's name
is the spec prefix (``myprovider/some-model``)."""
PARTITIONERS_GROUP = "collapse_probe.partitioners"
"""Entry points naming a partitioner class (``partition(texts) -> list[int]``)."""
GROUPS = (BENCHMARKS_GROUP, MODELS_GROUP, PARTITIONERS_GROUP)


def plugin_entry_points(group: str) -> dict[str, EntryPoint]:
    """Name -> entry point of every installed distribution's ``group`` (first one wins on a clash)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def load_target(target: Any, what: str) -> Any:
    """The object ``target`` names: ``"module:attr"`` (imported now), an entry point, or the object itself.

    Raises:
        ConfigError: the module cannot be imported or has no such attribute (naming ``what``).
    """
    try:
        if isinstance(target, EntryPoint):
            return target.load()
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            obj: Any = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
            return obj
    except (ImportError, AttributeError) as exc:
        where = target.value if isinstance(target, EntryPoint) else target
        raise ConfigError(f"{what}: cannot load {where!r} ({type(exc).__name__}: {exc})") from None
    return target


def check_target(target: Any, what: str) -> None:
    """A registration target is ``"module:attr"`` or an object (never imported here).

    Raises:
        ConfigError: a string that is not ``"module:attr"``.
    """
    if isinstance(target, str) and (target.count(":") != 1 or not all(target.split(":"))):
        raise ConfigError(f"{what}: expected 'module:attr' or an object, got {target!r}")


def unknown_name(flag: str, kind: str, name: object, known: Iterable[str]) -> ConfigError:
    """The one-line error for an unknown registry name, with close matches and the known names."""
    known = list(known)
    close = difflib.get_close_matches(str(name), known, n=2, cutoff=0.5)
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    return ConfigError(f"{flag}: unknown {kind} {name!r}.{hint} Known: {', '.join(known)}")
