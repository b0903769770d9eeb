"""Modules that are also functions, and typed configs filled from keyword arguments.

``collapse_probe.audit``, ``collapse_probe.crossplay`` and ``collapse_probe.gate`` are modules
(``from collapse_probe.audit import run_audit`` keeps working) and the public API's functions
(``collapse_probe.audit(simulator="smollm2", out="runs/a")``). Each such module calls
:func:`make_callable` on itself once it is defined: its class becomes :class:`CallableModule`, whose
``__call__`` is the module's own entry point. Nothing else about the module changes (attributes,
``import``, ``reload``, pickling of what it defines).
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, TypeVar

from collapse_probe.errors import ConfigError

C = TypeVar("C")


class CallableModule(ModuleType):
    """A module whose call is its ``__call_entry__`` (see :func:`make_callable`)."""

    __call_entry__: Callable[..., Any]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__call_entry__(*args, **kwargs)


def make_callable(module_name: str, entry: Callable[..., Any]) -> None:
    """Make the (already imported) module ``module_name`` callable: calling it calls ``entry``."""
    module = sys.modules[module_name]
    module.__class__ = CallableModule
    module.__call_entry__ = entry  # type: ignore[attr-defined]
    # ``inspect.signature(collapse_probe.audit)`` and ``help`` show the entry's parameters, not ``*args``
    module.__signature__ = inspect.signature(entry)  # type: ignore[attr-defined]


def config_and_options(
    cls: type[C],
    config: C | Mapping[str, Any] | None,
    kwargs: dict[str, Any],
    *,
    what: str,
    options_of: Callable[..., Any] | None = None,
) -> tuple[C, dict[str, Any]]:
    """Split keyword arguments into fields of the typed config ``cls`` and the rest (run options).

    ``config`` is a ``cls``, a mapping of its fields, or ``None`` (the defaults); keyword arguments
    that name a field of ``cls`` override it (``dataclasses.replace``), the others must be keyword
    options of ``options_of`` (the pipeline function) and are returned for it.

    Raises:
        ConfigError: ``config`` is neither a ``cls`` nor a mapping, names a field ``cls`` lacks, or a
            keyword is neither a field nor an option; the message lists both.
    """
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    names |= set(getattr(cls, "FLAT_FIELDS", ()))  # the flat keywords a config that nests others also takes
    fields = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    allowed = set()
    if options_of is not None:
        params = inspect.signature(options_of).parameters.values()
        allowed = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
    unknown_options = sorted(set(kwargs) - allowed)
    if unknown_options:
        raise ConfigError(
            f"{what}: unknown argument {unknown_options[0]!r}; expected a field of {cls.__name__} "
            f"({', '.join(sorted(names))})" + (f" or an option ({', '.join(sorted(allowed))})" if allowed else "")
        )
    if config is None:
        config = cls(**fields)
    elif isinstance(config, Mapping):
        unknown = sorted(set(config) - names)
        if unknown:
            raise ConfigError(f"{what}: config has no field {unknown[0]!r}; its fields are {', '.join(sorted(names))}")
        config = cls(**{**config, **fields})
    elif isinstance(config, cls):
        config = dataclasses.replace(config, **fields) if fields else config  # type: ignore[type-var]
    else:
        raise ConfigError(f"{what}: expected a {cls.__name__} (or its fields as keywords), got {type(config).__name__}")
    return config, kwargs
