"""Checks of the monitor's public arguments, each a :class:`ConfigError` naming the argument.

A trainer calls the monitor thousands of times; a wrong argument must stop the first call with one
line, not be read as something else: a string of rewards is not three rewards, ``policy_texts="abc"``
is not the texts ``a``, ``b``, ``c``, a NaN reward is not a reward to leave out without a word, and an
``extra`` field must not overwrite the row's own figures.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError

ROW_KEYS = frozenset({
    "step", "collapse_error", "reward_collapse_error", "response_entropy", "accumulated_collapse_error",
    "sim_variance_share", "strategy_entropy", "train_reward", "zero_std_share", "shadow_states",
    "simulator_turns", "rollouts", "shadow_failures", "empty_replies", "partition", "samples_per_state", "alarms",
    "monitor_seconds", "collapse_error_pooled", "reward_collapse_error_pooled", "zero_std",
    "collapse_error_alarm_test", "reward_collapse_error_alarm_test",
})  # fmt: skip
"""The fields of a monitor row that the monitor itself writes (``extra`` may not reuse them)."""


def _sequence(value: Any, name: str, of: str) -> Sequence[Any]:
    """``value`` as a sequence of items: a list, tuple or other sequence, never a string, bytes or a mapping."""
    if isinstance(value, str | bytes | bytearray | dict) or not isinstance(value, Sequence):
        if hasattr(value, "tolist") and not isinstance(value, str | bytes):  # a numpy array or a tensor
            items = value.tolist()
            if isinstance(items, list):
                return items
        raise ConfigError(f"monitor {name}: expected a list of {of}, got {type(value).__name__} {_short(value)}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_rewards(rewards: Any, name: str = "rewards") -> list[float | None]:
    """The rewards as floats: each a finite number or ``None`` (a rollout that could not be scored).

    Raises:
        ConfigError: not a list, or an item that is not a finite number (NaN, inf, a string, a dict), naming it.
    """
    out: list[float | None] = []
    for i, r in enumerate(_sequence(rewards, name, "finite numbers (None: not scored)")):
        if r is None:
            out.append(None)
            continue
        if isinstance(r, bool) or not isinstance(r, numbers.Real) or not math.isfinite(float(r)):
            raise ConfigError(
                f"monitor {name}[{i}]: expected a finite number, or None for a rollout that could not be scored; "
                f"got {type(r).__name__} {_short(r)}"
            )
        out.append(float(r))
    return out


def check_groups(groups: Any, n: int, name: str = "groups") -> list[Hashable] | None:
    """The groups of ``n`` rewards: ``None``, or a list of ``n`` hashable values (a prompt or task id).

    Raises:
        ConfigError: not a list, the wrong length, or an unhashable item, naming it.
    """
    if groups is None:
        return None
    items = list(_sequence(groups, name, "group keys (a prompt or task id per reward)"))
    for i, g in enumerate(items):
        try:
            hash(g)
        except TypeError:
            raise ConfigError(
                f"monitor {name}[{i}]: expected a hashable group key (a prompt or task id), got {type(g).__name__} "
                f"{_short(g)}"
            ) from None
    if len(items) != n:
        raise ConfigError(f"monitor {name}: {len(items)} groups for {n} rewards; give one group per reward")
    return items


def check_texts(texts: Any, name: str) -> list[str] | None:
    """``None``, or a list of strings (``policy_texts``: the policy's strategy messages).

    Raises:
        ConfigError: a string (one text, not a list of them), not a list, or an item that is not a string.
    """
    if texts is None:
        return None
    items = list(_sequence(texts, name, "strings"))
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise ConfigError(f"monitor {name}[{i}]: expected a string, got {type(t).__name__} {_short(t)}")
    return items


def check_turn(rollout: Any, reply: Any, shadows: Any, turn: Any, failed: Any) -> list[str | None] | None:
    """The arguments of :meth:`~collapse_probe.integrations.monitor.CollapseMonitor.record_turn`; returns ``shadows``
    as a list (``None`` items are failed shadow replies, counted as empty).

    Raises:
        ConfigError: naming the argument.
    """
    if isinstance(rollout, bool) or not isinstance(rollout, str | int):
        raise ConfigError(f"monitor record_turn rollout: expected the rollout's id (a string), got {_short(rollout)}")
    if not isinstance(reply, str):
        raise ConfigError(f"monitor record_turn reply: expected the reply's text, got {type(reply).__name__}")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 0):
        raise ConfigError(f"monitor record_turn turn: expected an integer >= 0 or None, got {_short(turn)}")
    if not isinstance(failed, bool):
        raise ConfigError(f"monitor record_turn failed: expected True or False, got {_short(failed)}")
    if shadows is None:
        return None
    items = list(_sequence(shadows, "record_turn shadows", "the shadow replies' texts"))
    for i, s in enumerate(items):
        if s is not None and not isinstance(s, str):
            raise ConfigError(
                f"monitor record_turn shadows[{i}]: expected a reply's text (None: a failed reply), got "
                f"{type(s).__name__}"
            )
    return items


def check_extra(extra: object) -> dict[str, object] | None:
    """``extra`` fields of a row: ``None`` or a mapping of new field names.

    Raises:
        ConfigError: not a mapping, a key that is not a string, or a key the row already has (``step``, ...).
    """
    if extra is None:
        return None
    if not isinstance(extra, dict):
        raise ConfigError(f"monitor extra: expected a dict of more fields for the row, got {type(extra).__name__}")
    bad = [k for k in extra if not isinstance(k, str)]
    if bad:
        raise ConfigError(f"monitor extra: field names must be strings, got {_short(bad[0])}")
    clash = sorted(set(extra) & ROW_KEYS)
    if clash:
        raise ConfigError(
            f"monitor extra: {', '.join(map(repr, clash))} would overwrite the row's own field(s); use other names"
        )
    return extra


def check_paths(out: Any, spool: Any, on_alarm: Any) -> None:
    """The monitor's ``out`` (its run directory), ``spool`` (a directory) and ``on_alarm`` (a callable).

    Raises:
        ConfigError: an empty or non-path ``out``/``spool``, a ``spool`` that is an existing file, an
            ``on_alarm`` that is not callable.
    """
    for name, value in (("out", out), ("spool", spool)):
        if value is None:
            continue
        if not isinstance(value, str | os.PathLike) or not str(os.fspath(value)).strip():
            raise ConfigError(f"monitor {name}: expected a directory path, got {_short(value)}")
    if spool is not None:
        p = Path(spool)
        if p.exists() and not p.is_dir():
            raise ConfigError(f"monitor spool {p}: is a file, not a directory; give the directory the workers share")
    if on_alarm is not None and not callable(on_alarm):
        raise ConfigError(f"monitor on_alarm: expected a function (alarm, monitor) -> None, got {_short(on_alarm)}")
