"""Typed configs filled from keyword arguments, for the public API's one-call functions
(``collapse_probe.audit(sim="smollm2", out="runs/a")``: the fields of :class:`AuditConfig` and the
pipeline's run options, told apart here)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from collapse_probe.errors import ConfigError

C = TypeVar("C")


def config_and_options(
    cls: type[C],
    config: C | Mapping[str, object] | None,
    kwargs: dict[str, Any],
    *,
    what: str,
    options_of: Callable[..., Any] | None = None,
) -> tuple[C, dict[str, Any]]:
    """Split keyword arguments into fields of the typed config ``cls`` and the rest (run options).

    ``config`` is a ``cls``, a mapping of its fields, or ``None`` (the defaults); keyword arguments
    that name a field of ``cls`` override it (``config.replace``), the others must be keyword
    options of ``options_of`` (the pipeline function) and are returned for it.

    Raises:
        ConfigError: ``config`` is neither a ``cls`` nor a mapping, names a field ``cls`` lacks, or a
            keyword is neither a field nor an option; the message lists both.
    """
    names = set(cls.model_fields)  # type: ignore[attr-defined]  # a Config
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
        config = config.replace(**fields) if fields else config  # type: ignore[attr-defined]
    else:
        raise ConfigError(f"{what}: expected a {cls.__name__} (or its fields as keywords), got {type(config).__name__}")
    return config, kwargs
