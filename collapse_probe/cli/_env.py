"""Defaults from the environment: ``$COLLAPSE_PROBE_<OPTION>`` for every option, read in one place.

:func:`apply_env` gives every option of a subcommand the value of its variable (named after its last
long flag: ``--partition/--partitioner`` reads ``$COLLAPSE_PROBE_PARTITIONER``, ``--no-exact``
``$COLLAPSE_PROBE_NO_EXACT``; a ``--x/--no-x`` pair ``$COLLAPSE_PROBE_X``), parsed as the flag parses its text, so options are declared without
knowing about the environment.
"""

from __future__ import annotations

import argparse
import math
import os
from typing import Any

from collapse_probe.errors import ConfigError


class BadEnv:
    """The default of an option whose ``$COLLAPSE_PROBE_*`` value is invalid.

    Parsers are built for every subcommand at start-up, so a bad value must not fail there (it would
    break ``--help`` and every other subcommand): the error is raised by
    :func:`~collapse_probe.cli._common.check_env_defaults` only when the chosen subcommand actually uses
    that default (the flag was not given).
    """

    def __init__(self, var: str, raw: str, expected: str) -> None:
        self.var, self.raw, self.expected = var, raw, expected

    def error(self) -> ConfigError:
        return ConfigError(f"${self.var}: expected {self.expected}, got {_shown(self.raw)}")

    def __repr__(self) -> str:
        return f"${self.var}={_shown(self.raw)} (invalid: expected {self.expected})"

    __str__ = __repr__


def _shown(raw: str, keep: int = 60) -> str:
    """The variable's value for a message, cut to ``keep`` characters (a 10,000-character value is not echoed)."""
    return repr(raw) if len(raw) <= keep else f"{raw[:keep]!r}... ({len(raw):,} characters)"


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")
_SKIP = (argparse._HelpAction, argparse._VersionAction, argparse._CountAction, argparse._AppendAction)


def env_var(action: argparse.Action) -> str | None:
    """The variable of ``action`` (``None``: an option without one, such as ``--help`` or ``-M``)."""
    longs = [s for s in action.option_strings if s.startswith("--")]
    if isinstance(action, argparse.BooleanOptionalAction):
        longs = longs[:1]  # --compact / --no-compact: $COLLAPSE_PROBE_COMPACT
    name = longs[-1][2:] if longs else (action.dest if action.nargs == "?" else None)
    if name is None or isinstance(action, _SKIP) or name == "config":
        return None
    switch = isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction)
    if isinstance(action, argparse._StoreConstAction) and not switch and name != action.dest:
        return None  # --no-batch: the variable of --batch, the option it pairs with, sets both
    return "COLLAPSE_PROBE_" + name.upper().replace("-", "_")


def apply_env(p: argparse.ArgumentParser) -> None:
    """Make ``$COLLAPSE_PROBE_<OPTION>`` the default of each option of ``p`` that has one set (a
    required option given so is no longer required); an invalid value becomes a :class:`BadEnv`."""
    for action in p._actions:
        var = env_var(action)
        raw = os.environ.get(var) if var is not None else None
        if var is None or raw is None:
            continue
        action.default = _value(action, var, raw)
        action.required = False


def _value(a: argparse.Action, var: str, raw: str) -> Any:
    switch = isinstance(a, argparse._StoreTrueAction | argparse._StoreFalseAction | argparse.BooleanOptionalAction)
    if switch:
        v = raw.strip().lower()
        if v not in _TRUE and v not in _FALSE:
            return BadEnv(var, raw, "1/0, true/false, yes/no or on/off")
        return (v in _TRUE) is not isinstance(a, argparse._StoreFalseAction)
    if isinstance(a, argparse._StoreConstAction):
        return raw  # --batch: on, off or auto, checked where it is applied
    kind = a.type
    flag = a.option_strings[-1] if a.option_strings else a.dest
    expected = "an integer" if kind is int else "a number" if kind is float else f"a value accepted by {flag}"
    try:
        value = kind(raw.strip() if kind in (int, float) else raw) if callable(kind) else raw
    except argparse.ArgumentTypeError as exc:  # the flag's parser says what is wrong (JSON too deep, ...)
        return BadEnv(var, raw, f"{expected}: {exc}")
    except (TypeError, ValueError):
        return BadEnv(var, raw, expected)
    if isinstance(value, float) and not math.isfinite(value):
        return BadEnv(var, raw, "a finite number")
    allowed = getattr(a, "allowed", None) or a.choices
    if allowed is not None and value not in allowed:
        return BadEnv(var, raw, "one of " + ", ".join(map(str, allowed)))
    return value
