"""Registries that other installed packages extend: ``"module:attr"`` targets imported only when
chosen, entry-point groups, and "did you mean" for unknown names.

A separately installed distribution adds a benchmark, a model backend or a partitioner by declaring
an entry point in one of :data:`GROUPS` (``pyproject.toml``)::

    [project.entry-points."collapse_probe.benchmarks"]
    hotel-survey = "hotel_survey:BENCHMARK"

The entry point's name is the name users give (``--benchmark hotel-survey``); its object is loaded
only when that name is chosen, so a broken plugin breaks only the runs that choose it. A fourth group,
``collapse_probe.reports`` (:mod:`collapse_probe.core._reports`), adds a report writer for a run kind of the
package's own. Every one of them is read through a :class:`Registry`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import difflib
import functools
import importlib
import inspect
import math
import os
import signal
import threading
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypedDict, TypeVar

from collapse_probe.errors import CollapseProbeError, ConfigError, InfraError, RunAbortedError

BENCHMARKS_GROUP = "collapse_probe.benchmarks"
"""Entry points naming a :class:`~collapse_probe.benchmarks.Benchmark`."""
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


class _Outcome(TypedDict, total=False):
    """What a guarded call left behind in its thread: its result, or the exception it raised."""

    value: object
    """The call's result (a plugin's object: whatever it returns)."""
    error: BaseException


def load_entry_point(ep: EntryPoint, what: str) -> Any:
    """The object an installed distribution's entry point names, loaded under a guard: whatever its
    import does (raises any exception, has a syntax error, recurses without end, calls ``sys.exit``,
    or does not finish within :func:`plugin_timeout` seconds) is one :class:`ConfigError` naming the
    distribution, the entry point and its group, so a broken plugin breaks only the runs that choose it.

    The import runs in a daemon thread: one that never finishes is left behind (it ends with the
    process) instead of holding the command.
    """
    limit = plugin_timeout()
    box: _Outcome = {}

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
    class's methods, a model backend factory (and the first ``generate`` of the model it builds), a
    benchmark's ``build``/``resolve``/``factory`` (and what ``build`` returns checked as an arena)."""
    if ep.group == PARTITIONERS_GROUP:
        return guard_partitioner_class(obj, ep, what)
    if ep.group == BENCHMARKS_GROUP and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        hooks = {
            f: guard_plugin_call(getattr(obj, f), ep, what, f, check=_arena_check(ep, what) if f == "build" else None)
            for f in ("build", "resolve", "factory")
            if callable(getattr(obj, f, None))
        }
        return dataclasses.replace(obj, **hooks)
    if ep.group == MODELS_GROUP and callable(obj) and not isinstance(obj, type):
        return guard_plugin_call(obj, ep, what, "building it", check=_model_check(ep, what))
    return obj


ARENA_METHODS = ("load_tasks", "new_episode", "next_side", "prompt_for", "apply", "score")
"""What a benchmark's ``build`` must return: an object with these methods (the ``Arena`` protocol); the
ones before ``score`` fail as one line naming the plugin, ``load_tasks`` under the time limit."""


def _arena_check(ep: EntryPoint, what: str) -> Callable[[Any], Any]:
    def check(arena: Any) -> Any:
        missing = [m for m in ARENA_METHODS if not callable(getattr(arena, m, None))]
        if missing:
            raise BrokenPlugin(
                f"{_plugin(ep, what)}: build returned {_a(arena)}, not an arena (it lacks {', '.join(missing)}); "
                f"fix or uninstall {_distribution(ep)}"
            )
        for m in ARENA_METHODS[:-1]:  # the plugin's own code as the engine calls it (score's failures are per episode)
            try:
                setattr(arena, m, guard_plugin_call(getattr(arena, m), ep, what, m,
                                                    limit="first" if m == "load_tasks" else "never"))  # fmt: skip
            except (AttributeError, TypeError):  # an arena with read-only attributes keeps its own methods
                pass
        return arena

    return check


def _model_check(ep: EntryPoint, what: str) -> Callable[[Any], Any]:
    def check(model: Any) -> Any:
        generate = getattr(model, "generate", None)
        if not callable(generate) or not isinstance(getattr(model, "spec", None), str):
            raise BrokenPlugin(
                f"{_plugin(ep, what)}: its factory returned {_a(model)}, not a model backend (an object with a "
                f"string spec and async generate(requests)); fix or uninstall {_distribution(ep)}"
            )
        try:  # the first generate is the first use: under the time limit like the factory
            model.generate = guard_plugin_call(
                generate,
                ep,
                what,
                "generate",
                limit="first",
                errors=False,
                check=_sequence_check(ep, what, "generate", "a list of results"),
            )
        except (AttributeError, TypeError):  # a backend with read-only attributes keeps its own generate
            pass
        return model

    return check


def _sequence_check(ep: EntryPoint, what: str, doing: str, expected: str) -> Callable[[Any], Any]:
    """A result that must be a sequence (a list, a tuple, an array): anything else is one line naming
    the plugin, not a ``TypeError`` further on."""

    def check(value: Any) -> Any:
        if isinstance(value, str | bytes | Mapping) or not hasattr(value, "__len__") or not hasattr(value, "__iter__"):
            raise BrokenPlugin(
                f"{_plugin(ep, what)}: {doing} returned {_a(value)}, not {expected}; fix or uninstall "
                f"{_distribution(ep)}"
            )
        return value

    return check


def _a(obj: Any) -> str:
    name = type(obj).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}" if obj is not None else "None"


def _plugin(ep: EntryPoint, what: str) -> str:
    return f"{what} (plugin {ep.value!r} of distribution {_distribution(ep)})"


class BrokenPlugin(ConfigError, RunAbortedError):
    """A plugin that cannot work as installed (its factory returns no model, its ``generate`` no list):
    the run stops, naming it; pipelines that record other failures per request let this through."""


class PluginTimeout(BrokenPlugin):
    """A plugin's construction or first use did not finish within :func:`plugin_timeout` seconds: the
    run stops (a backend's first ``generate`` that hangs is not one failed request among many)."""


def _timeout(ep: EntryPoint, what: str, doing: str, limit: float) -> PluginTimeout:
    return PluginTimeout(
        f"{_plugin(ep, what)}: {doing} did not finish within {limit:g} s ($COLLAPSE_PROBE_PLUGIN_TIMEOUT); "
        f"fix or uninstall {_distribution(ep)}"
    )


def _run_limited(fn: Callable[..., Any], args: Any, kwargs: Any, limit: float) -> tuple[bool, Any]:
    """``fn(*args, **kwargs)`` in a daemon thread, waited on for ``limit`` seconds: ``(finished, outcome)``,
    the outcome a result or a ``("error", exception)`` box. A call that never finishes is left behind
    (it ends with the process) instead of holding the command."""
    box: _Outcome = {}
    context = contextvars.copy_context()

    def call() -> None:
        try:
            box["value"] = context.run(fn, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=call, name=f"plugin call {getattr(fn, '__qualname__', fn)}", daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        return False, None
    if "error" in box:
        raise box["error"]
    return True, box.get("value")


@contextlib.contextmanager
def _alarm(seconds: float, error: Callable[[], BaseException]) -> Iterator[None]:
    """Raise ``error()`` in the main thread after ``seconds``: the backstop for a coroutine that blocks
    the event loop (a ``time.sleep`` inside ``async def generate``), which ``asyncio.wait_for`` cannot
    interrupt. Only in the main thread, and only where no other timer or SIGALRM handler is in use."""
    usable = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )
    if not usable:
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise error()

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def guard_plugin_call(
    fn: Callable[..., Any],
    ep: EntryPoint,
    what: str,
    doing: str,
    *,
    limit: str = "always",
    check: Callable[[Any], Any] | None = None,
    errors: bool = True,
) -> Callable[..., Any]:
    """``fn`` (a plugin's ``build``, ``partition``, factory, ``generate``) whose failure is one
    :class:`ConfigError` naming the plugin: an error the plugin raised for the user (a
    :class:`CollapseProbeError`) keeps its class and gets the plugin's name when it lacks it, anything
    else, ``SystemExit`` included, becomes "... raised RuntimeError: ...".

    Args:
        limit: ``"always"`` (construction: every call), ``"first"`` (first use: the first call that
            finishes) or ``"never"``: the calls that must finish within :func:`plugin_timeout` seconds,
            else one line naming the plugin (:class:`PluginTimeout`).
        check: applied to the result (raises :class:`ConfigError` for one that is not what the plugin
            must return).
        errors: ``False``: an exception ``fn`` raises becomes an :class:`InfraError` naming the plugin
            (a backend's failed ``generate`` fails its requests, not the run); ``True``: a
            :class:`ConfigError` (a broken plugin stops the run).
    """
    done = threading.Event()

    def limited() -> float | None:
        return plugin_timeout() if limit == "always" or (limit == "first" and not done.is_set()) else None

    def named(exc: BaseException) -> BaseException:
        if isinstance(exc, PluginTimeout):
            return exc
        if isinstance(exc, CollapseProbeError):
            text = str(exc)
            if ep.name not in text and _distribution(ep) not in text:
                exc.args = (f"{_plugin(ep, what)}: {doing}: {text}", *exc.args[1:])
            return exc
        if not errors and isinstance(exc, Exception):  # a failed call, not a broken plugin: named, same handling
            return InfraError(f"{_plugin(ep, what)}: {doing} failed: {_failure(exc)}")
        return _call_error(exc, ep, what, doing)

    def checked(value: Any) -> Any:
        done.set()
        return check(value) if check is not None else value

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def aguarded(*args: Any, **kwargs: Any) -> Any:
            seconds = limited()
            try:
                if seconds is None:
                    value = await fn(*args, **kwargs)
                else:
                    with _alarm(seconds + 1, lambda: _timeout(ep, what, doing, seconds)):
                        try:
                            value = await asyncio.wait_for(fn(*args, **kwargs), seconds)
                        except asyncio.TimeoutError:
                            raise _timeout(ep, what, doing, seconds) from None
            except (KeyboardInterrupt, asyncio.CancelledError):
                raise
            except BaseException as exc:  # noqa: BLE001 - a plugin's SystemExit too
                raise named(exc) from None
            return checked(value)

        return aguarded

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        seconds = limited()
        try:
            if seconds is None:
                value = fn(*args, **kwargs)
            else:
                finished, value = _run_limited(fn, args, kwargs, seconds)
                if not finished:
                    raise _timeout(ep, what, doing, seconds)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a plugin's SystemExit too
            raise named(exc) from None
        return checked(value)

    return guarded


def _call_error(exc: BaseException, ep: EntryPoint, what: str, doing: str) -> ConfigError:
    return ConfigError(f"{_plugin(ep, what)}: {doing} failed: {_failure(exc)}; fix or uninstall {_distribution(ep)}")


PARTITIONER_METHODS = ("partition", "partition_many", "apartition", "apartition_many")


def guard_partitioner_class(cls: Any, ep: EntryPoint, what: str) -> Any:
    """A subclass of a plugin's partitioner class whose partition methods fail as one line naming the
    plugin (its class attributes, ``needs_model`` and the rest, are inherited unchanged)."""
    if not isinstance(cls, type):
        return cls
    methods = {
        m: guard_plugin_call(
            getattr(cls, m), ep, what, m, limit="first", check=_sequence_check(ep, what, m, "a list of class labels")
        )  # fmt: skip
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


def unknown_name(flag: str | None, kind: str, name: object, known: Iterable[str]) -> ConfigError:
    """The one-line error for an unknown registry name, with close matches and the known names
    (``flag``: where the name was given, e.g. ``--benchmark``; ``None``: a name given in code)."""
    known = list(known)
    close = difflib.get_close_matches(str(name), known, n=2, cutoff=0.5)
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    where = f"{flag}: " if flag else ""
    return ConfigError(f"{where}unknown {kind} {name!r}.{hint} Known: {', '.join(known)}")


T = TypeVar("T")


class Registry(Mapping[str, Any], Generic[T]):
    """Names of one kind (benchmarks, backends, partitioners, ...) and what each names, found one way.

    A name is registered in this process (:meth:`register`: a ``"module:attr"`` target imported only
    when the name is chosen, or the object itself), else it is an entry point of ``group`` in an
    installed distribution (loaded under :func:`load_entry_point`'s guard). :meth:`load` turns a name
    into its object through :func:`load_target`, the package's one loader, and refuses an unknown name
    with :func:`unknown_name`'s one-line error. As a mapping, the registry reads the registered names
    and their targets (entry points are listed by :meth:`names`, not loaded).

    Args:
        kind: what a name names, in messages (``"benchmark"``, ``"partitioner"``).
        flag: the flag or field an unknown name is reported under (``--benchmark``); ``None``: none.
        group: the entry-point group installed distributions extend (``None``: none).
        entries: the shipped names and their targets, in the order :meth:`names` lists them.
        check: turns a loaded object into the registry's type or raises :class:`ConfigError`
            (called with the name, the target and the object; default: the object as it is).
    """

    def __init__(
        self,
        kind: str,
        *,
        flag: str | None = None,
        group: str | None = None,
        entries: Mapping[str, object] | None = None,
        check: Callable[[str, Any, Any], T] | None = None,
    ) -> None:
        self.kind, self.flag, self.group = kind, flag, group
        self._check = check
        self._entries: dict[str, object] = {}
        """Name -> what it names: the object, or the ``module:attribute`` text of one not imported yet."""
        for name, target in (entries or {}).items():
            self.register(name, target)

    # --- the registered names, as a read-only mapping
    def __getitem__(self, name: str) -> Any:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._entries)})"

    # --- registering
    def register(self, name: str, target: Any, *, replace: bool = False) -> None:
        """Add ``name`` (``replace``: or change what it names).

        Raises:
            ConfigError: an empty or non-string name, a name already registered (without ``replace``),
                or a string target that is not ``"module:attr"``.
        """
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if name in self._entries and not replace:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        check_target(target, f"{self.kind} {name!r}")
        self._entries[name] = target

    def unregister(self, name: str) -> None:
        """Remove a registered ``name`` (an entry point stays installed).

        Raises:
            ConfigError: ``name`` is not registered in this process.
        """
        if name not in self._entries:
            raise ConfigError(f"{self.kind} {name!r} is not registered in this process")
        del self._entries[name]

    # --- finding and loading
    def plugins(self) -> dict[str, EntryPoint]:
        """Name -> entry point of the installed distributions (``{}`` without a group)."""
        return plugin_entry_points(self.group) if self.group else {}

    def names(self) -> list[str]:
        """Every name: the registered ones in order, then the installed entry points', sorted (none loaded)."""
        return [*self._entries, *sorted(n for n in self.plugins() if n not in self._entries)]

    def target(self, name: object) -> Any | None:
        """What ``name`` names, not loaded: its registered target, else its entry point (``None``: neither)."""
        if not isinstance(name, str):
            return None
        if name in self._entries:
            return self._entries[name]
        return self.plugins().get(name)

    def known(self, name: object) -> bool:
        """``name`` is registered or installed."""
        return self.target(name) is not None

    def find(self, name: object) -> T | None:
        """The object ``name`` names, loaded now (``None``: an unknown name).

        Raises:
            ConfigError: the target cannot be loaded, or is not of this registry's kind.
        """
        target = self.target(name)
        if target is None:
            return None
        obj = load_target(target, f"{self.kind} {name!r}")
        return obj if self._check is None else self._check(str(name), target, obj)

    def load(self, name: object) -> T:
        """The object ``name`` names, loaded now.

        Raises:
            ConfigError: an unknown name (one line: the flag, the close matches, the known names), a
                target that cannot be loaded, or one that is not of this registry's kind.
        """
        found = self.find(name)
        if found is None:
            raise self.unknown(name)
        return found

    def unknown(self, name: object) -> ConfigError:
        """The error for an unknown ``name`` (:func:`unknown_name`)."""
        return unknown_name(self.flag, self.kind, name, self.names())


def refuse_clashing_options(parser: Any, bench: Any, shared: Iterable[str] = ()) -> None:
    """Refuse a plugin benchmark whose options would become flags the command already has for
    something else: ``sims`` (``--sims``, a run's simulators) or ``no_exact`` (``--no-exact``). A field
    in ``shared`` (the options every benchmark declares, the arena options a command keeps as its own
    fields) is the built-in flag's own field and is not a clash.

    Raises:
        ConfigError: naming the benchmark, its distribution, the option and the flag.
    """
    shared = set(shared)
    taken: dict[str, str] = {s: a.dest for a in parser._actions for s in a.option_strings}
    dests = {a.dest for a in parser._actions if a.option_strings}
    for name, info in bench.options.model_fields.items():
        if name in shared:
            continue
        flag = "--" + name.replace("_", "-")
        annotation = getattr(info, "annotation", None)
        switch = annotation is bool or bool in typing.get_args(annotation)
        flags = [flag, "--no-" + flag[2:]] if switch else [flag]
        clash = next((f"{f} is already a flag of this command" for f in flags if f in taken), None)
        if clash is None and name in dests:
            given = next((s for s, d in taken.items() if d == name), flag)
            clash = f"the command's {given} already sets {name!r}"
        if clash is not None:
            ep = plugin_entry_points(BENCHMARKS_GROUP).get(bench.name)
            owner = f"plugin {ep.value!r} of distribution {_distribution(ep)}" if ep is not None else "a plugin"
            raise ConfigError(
                f"benchmark {bench.name!r} ({owner}): its option {name!r} would be the flag {flag}, but {clash}; "
                "rename the option in the benchmark's Options"
            )
