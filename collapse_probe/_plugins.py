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

import dataclasses
import difflib
import functools
import importlib
import inspect
import math
import os
import threading
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from collapse_probe.errors import CollapseProbeError, ConfigError

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


PLUGIN_TIMEOUT_S = 60.0
"""Wall-clock seconds an entry point may take to load (``$COLLAPSE_PROBE_PLUGIN_TIMEOUT`` overrides): a
plugin that waits on import (a network call, a lock, a sleep) is reported, not waited on forever."""


def plugin_timeout() -> float:
    """The load limit: ``$COLLAPSE_PROBE_PLUGIN_TIMEOUT`` seconds when set to a positive number, else
    :data:`PLUGIN_TIMEOUT_S`.

    Raises:
        ConfigError: the variable is set to something else.
    """
    raw = os.environ.get("COLLAPSE_PROBE_PLUGIN_TIMEOUT")
    if raw is None:
        return PLUGIN_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"$COLLAPSE_PROBE_PLUGIN_TIMEOUT: expected a positive number of seconds, got {raw!r}")
    return value


def describe_entry_point(ep: EntryPoint) -> str:
    """``entry point 'x' = 'mod:obj' (group collapse_probe.benchmarks) of distribution dist 0.1``."""
    dist = getattr(ep, "dist", None)
    name = f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    return f"entry point {ep.name!r} = {ep.value!r} (group {ep.group}) of distribution {name}"


def _distribution(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else "the plugin's distribution"


def _failure(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    if isinstance(exc, SyntaxError):
        where = f" ({exc.filename}, line {exc.lineno})" if exc.filename else ""
        return f"SyntaxError: {exc.msg}{where}"
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def load_entry_point(ep: EntryPoint, what: str) -> Any:
    """The object an installed distribution's entry point names, loaded under a guard: whatever its
    import does (raises any exception, has a syntax error, recurses without end, calls ``sys.exit``,
    or does not finish within :func:`plugin_timeout` seconds) is one :class:`ConfigError` naming the
    distribution, the entry point and its group, so a broken plugin breaks only the runs that choose it.

    The import runs in a daemon thread: one that never finishes is left behind (it ends with the
    process) instead of holding the command.
    """
    limit = plugin_timeout()
    box: dict[str, Any] = {}

    def load() -> None:
        try:
            box["value"] = ep.load()
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt of a plugin's import too
            box["error"] = exc

    thread = threading.Thread(target=load, name=f"load plugin {ep.name}", daemon=True)
    thread.start()
    thread.join(limit)
    fix = f"fix or uninstall {_distribution(ep)}"
    if thread.is_alive():
        raise ConfigError(f"{what}: {describe_entry_point(ep)} did not load within {limit:g} s "
                          f"($COLLAPSE_PROBE_PLUGIN_TIMEOUT); {fix}")  # fmt: skip
    if "error" in box:
        raise ConfigError(f"{what}: {describe_entry_point(ep)} failed to load ({_failure(box['error'])}); {fix}")
    return _guarded(box["value"], ep, what)


def _guarded(obj: Any, ep: EntryPoint, what: str) -> Any:
    """The loaded object with the plugin's own code behind :func:`guard_plugin_call`: a partitioner
    class's methods, a model backend factory, a benchmark's ``build``/``resolve``/``factory`` (or a
    bare arena factory)."""
    if ep.group == PARTITIONERS_GROUP:
        return guard_partitioner_class(obj, ep, what)
    if ep.group == BENCHMARKS_GROUP and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        hooks = {
            f: guard_plugin_call(getattr(obj, f), ep, what, f)
            for f in ("build", "resolve", "factory")
            if callable(getattr(obj, f, None))
        }
        return dataclasses.replace(obj, **hooks)
    if ep.group in (BENCHMARKS_GROUP, MODELS_GROUP) and callable(obj) and not isinstance(obj, type):
        return guard_plugin_call(obj, ep, what, "building it")
    return obj


def guard_plugin_call(fn: Callable[..., Any], ep: EntryPoint, what: str, doing: str) -> Callable[..., Any]:
    """``fn`` (a plugin's ``build``, ``partition``, factory) whose failure is one :class:`ConfigError`
    naming the plugin: an error the plugin raised for the user (a :class:`CollapseProbeError`) passes
    as it is, anything else, ``SystemExit`` included, becomes "... raised RuntimeError: ..."."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def aguarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except (CollapseProbeError, KeyboardInterrupt):
                raise
            except BaseException as exc:  # noqa: BLE001 - a plugin's SystemExit too
                raise _call_error(exc, ep, what, doing) from None

        return aguarded

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (CollapseProbeError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - a plugin's SystemExit too
            raise _call_error(exc, ep, what, doing) from None

    return guarded


def _call_error(exc: BaseException, ep: EntryPoint, what: str, doing: str) -> ConfigError:
    return ConfigError(
        f"{what} (plugin {ep.value!r} of distribution {_distribution(ep)}): {doing} failed: {_failure(exc)}; "
        f"fix or uninstall {_distribution(ep)}"
    )


PARTITIONER_METHODS = ("partition", "partition_many", "apartition", "apartition_many")


def guard_partitioner_class(cls: Any, ep: EntryPoint, what: str) -> Any:
    """A subclass of a plugin's partitioner class whose partition methods fail as one line naming the
    plugin (its class attributes, ``needs_model`` and the rest, are inherited unchanged)."""
    if not isinstance(cls, type):
        return cls
    methods = {
        m: guard_plugin_call(getattr(cls, m), ep, what, m)
        for m in PARTITIONER_METHODS
        if callable(getattr(cls, m, None))
    }
    init = cls.__dict__.get("__init__") or next(c.__dict__["__init__"] for c in cls.__mro__ if "__init__" in c.__dict__)
    if init is not object.__init__:
        methods["__init__"] = guard_plugin_call(init, ep, what, "building it")
    return type(cls.__name__, (cls,), {**methods, "__module__": cls.__module__, "__qualname__": cls.__qualname__})


def load_target(target: Any, what: str) -> Any:
    """The object ``target`` names: ``"module:attr"`` (imported now), an entry point (loaded under the
    guard of :func:`load_entry_point`), or the object itself.

    Raises:
        ConfigError: the module cannot be imported or has no such attribute (naming ``what``); for an
            entry point, anything that goes wrong while it loads (naming its distribution and group).
    """
    if isinstance(target, EntryPoint):
        return load_entry_point(target, what)
    try:
        if isinstance(target, str):
            module, _, attr = target.partition(":")
            obj: Any = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
            return obj
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{what}: cannot load {target!r} ({type(exc).__name__}: {exc})") from None
    except CollapseProbeError:
        raise
    except Exception as exc:  # a registered module of the user's that fails on import
        raise ConfigError(f"{what}: cannot load {target!r} ({_failure(exc)})") from None
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
