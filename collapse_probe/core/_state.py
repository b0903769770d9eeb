"""The process's caches, in one place: every module-level cache registers here, one call empties them.

A process builds some things once and keeps them: the model backends (:func:`collapse_probe.models.get_model`,
keyed by spec *and* options), the response-cache wrappers of those backends (keyed by the backend
object itself and the cache file), loaded weights and sentence encoders, file fingerprints, benchmark
data read from disk. Each such cache is a dict, set or list at module level that the module hands to
:func:`process_cache` where it declares it; state that is not a container (an installed model
provider, a TLS context) registers a function that resets it with :func:`on_reset`. The registry
sits at the bottom of the layer order, so a module of any layer can register without importing
upward, and a module not yet imported has nothing cached.

:func:`reset_caches` (``collapse_probe.reset_caches()``) empties them all: the next call builds,
loads and reads again. A notebook that edited a scripted model, a test that points the same spec at a
new local server, a long process that wants the memory back call it. What is not a cache is not
here: the run's reliability tally and usage ledger, the locks and flush hooks of runs open in this
process, a pending message, the model provider a Ray session installs for the length of its ``with``
block (their modules keep them; ``tests/test_state.py`` lists the containers among them with the
reason each stays out).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol, TypeVar


class Clearable(Protocol):
    def clear(self) -> None: ...

    def __len__(self) -> int: ...


C = TypeVar("C", bound=Clearable)

_lock = threading.Lock()
_caches: dict[str, Clearable] = {}
_resets: dict[str, Callable[[], None]] = {}


def process_cache(name: str, cache: C) -> C:
    """Register ``cache`` (a dict, set or list kept for the life of the process) under ``name``.

    Returns ``cache``, so a module declares and registers in one line:
    ``_ENCODERS: dict[str, Encoder] = process_cache("models.encoders", {})``. Registering a name again
    (the module was reloaded) replaces the old container.
    """
    with _lock:
        _caches[name] = cache
    return cache


def on_reset(name: str, reset: Callable[[], None]) -> None:
    """Register ``reset()``, which puts a piece of process-global state that is no container back to
    its start (``None``), under ``name``."""
    with _lock:
        _resets[name] = reset


def process_caches() -> dict[str, Clearable]:
    """The registered caches by name (the containers themselves)."""
    with _lock:
        return dict(_caches)


def reset_caches() -> None:
    """Empty every process-global cache: backends, cache wrappers, loaded weights, encoders, file
    fingerprints, benchmark data. What is built, loaded or read next is built, loaded or read anew."""
    with _lock:
        caches, resets = list(_caches.values()), list(_resets.values())
    for cache in caches:
        cache.clear()
    for reset in resets:
        reset()


__all__ = ["on_reset", "process_cache", "process_caches", "reset_caches"]
