"""Defaults from the environment: ``$COLLAPSE_PROBE_<OPTION>`` for every option, read once.

Below both the shared options (:mod:`~collapse_probe.cli._common`) and the options built from
dataclass fields (:mod:`~collapse_probe.cli._config`), which both read their defaults here.
"""

from __future__ import annotations

import math
import os
from typing import Any

from collapse_probe.errors import ConfigError


class BadEnv:
    """The default of an option whose ``$COLLAPSE_PROBE_*`` value is invalid.

    Parsers are built for every subcommand at start-up, so a bad value must not fail there (it would
    break ``--help`` and every other subcommand): the error is raised by :func:`check_env_defaults`
    only when the chosen subcommand actually uses that default (the flag was not given).
    """

    def __init__(self, var: str, raw: str, expected: str) -> None:
        self.var, self.raw, self.expected = var, raw, expected

    def error(self) -> ConfigError:
        return ConfigError(f"${self.var}: expected {self.expected}, got {self.raw!r}")

    def __repr__(self) -> str:
        return f"${self.var}={self.raw!r} (invalid: expected {self.expected})"

    __str__ = __repr__


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def env(name: str, default: Any, kind: type | None = None) -> Any:
    """Default for option ``--name`` from ``$COLLAPSE_PROBE_NAME`` (dashes become underscores).

    The value is converted to ``kind`` (default: the type of ``default``; strings stay strings). An
    invalid value gives a :class:`BadEnv` that :func:`check_env_defaults` reports when used.
    """
    var = "COLLAPSE_PROBE_" + name.upper().replace("-", "_")
    raw = os.environ.get(var)
    if raw is None:
        return default
    kind = kind or (type(default) if default is not None else str)
    if kind is bool:
        v = raw.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
        return BadEnv(var, raw, "1/0, true/false, yes/no or on/off")
    if kind is int:
        try:
            return int(raw.strip())
        except ValueError:
            return BadEnv(var, raw, "an integer")
    if kind is float:
        try:
            value = float(raw.strip())
        except ValueError:
            return BadEnv(var, raw, "a number")
        if not math.isfinite(value):
            return BadEnv(var, raw, "a finite number")
        return value
    return raw
