"""A reader of τ-bench's historical trajectories (sierra-research/tau-bench ``historical_trajectories/``,
and the results files ``run.py`` writes): a JSON array of ``{task_id, reward, info, traj, trial}``,
``traj`` in OpenAI chat format (``system``, ``user`` = the user simulator, ``assistant`` = the agent with
its ``tool_calls`` as ``{"function": {"name", "arguments"}}``, ``tool`` = a tool's answer).

What is read: the messages (the sides named as the rollout engine names them), ``task_id``, ``trial``,
``reward``, ``info.task.instruction`` (the task's text, which pairs tasks across files); an ``info.error`` (τ-bench's record of a run that raised) makes the record an
infrastructure failure, excluded from every estimate and counted. The file names no domain or user
model: pass ``--benchmark`` for a benchmark's hooks and ``--sim NAME`` to name the simulator.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError

_ROLES = {"user": "simulator", "assistant": "policy", "tool": "tool", "system": "system", "function": "tool"}


def _instruction(info: dict[str, object]) -> str | None:
    """The task's instruction to the user simulator (``info.task.instruction``), ``None`` when absent."""
    task = info.get("task")
    text = task.get("instruction") if isinstance(task, dict) else None
    return text if isinstance(text, str) and text else None


def _where(p: Path, i: int) -> str:
    return f"{p}: record {i}"


def tool_calls_of(calls: Any, where: str) -> tuple[tuple[str, str], ...]:
    """``(name, canonical arguments)`` of OpenAI-style (``{"function": {"name", "arguments"}}``) or flat
    (``{"name", "arguments"}``) tool calls.

    Raises:
        ConfigError: ``calls`` is not a list of such objects (naming ``where``).
    """
    from collapse_probe.integrations.interop._published import canonical_arguments

    if calls is None:
        return ()
    if not isinstance(calls, list):
        raise ConfigError(f"{where}: tool_calls: expected a list of tool calls, got {type(calls).__name__}")
    out = []
    for k, c in enumerate(calls):
        fn = c.get("function") if isinstance(c, dict) and isinstance(c.get("function"), dict) else c
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ConfigError(f"{where}: tool_calls[{k}]: expected an object with a function name")
        out.append((fn["name"], canonical_arguments(fn.get("arguments", {}), f"{where}: tool_calls[{k}]")))
    return tuple(out)


def read_taubench(path: str | Path) -> Any:
    """Read a τ-bench trajectories file into a :class:`~collapse_probe.integrations.interop.PublishedRun`.

    Raises:
        ConfigError: the file is missing, not a JSON array of trajectories, or a record's field has the
            wrong type (naming the record and the field).
    """
    from collapse_probe.core._files import MissingFile, read_json_file
    from collapse_probe.integrations.interop._published import (
        PublishedConversation,
        PublishedMessage,
        PublishedRun,
        file_sha256,
    )

    p = Path(path)
    expected = "τ-bench's JSON array of trajectories"
    try:
        data = read_json_file(p, expected=expected)
    except MissingFile:
        raise ConfigError(f"--from {path}: no such file; expected {expected}") from None
    if not isinstance(data, list):
        raise ConfigError(f"{p}: expected a JSON array of {{task_id, reward, info, traj, trial}}, got a "
                          f"{type(data).__name__}")  # fmt: skip
    convs = []
    seen: dict[tuple[str, int | None], int] = {}
    for i, rec in enumerate(data):
        where = _where(p, i)
        if not isinstance(rec, dict):
            raise ConfigError(f"{where}: expected an object {{task_id, reward, info, traj, trial}}")
        task = rec.get("task_id")
        if isinstance(task, bool) or not isinstance(task, int | str):
            raise ConfigError(f"{where}: task_id: expected an integer or string, got {task!r}")
        trial = rec.get("trial")
        if trial is not None and (isinstance(trial, bool) or not isinstance(trial, int)):
            raise ConfigError(f"{where}: trial: expected an integer, got {trial!r}")
        traj = rec.get("traj")
        if not isinstance(traj, list):
            raise ConfigError(f"{where}: traj: expected a list of chat messages, got {type(traj).__name__}")
        raw_info = rec.get("info")
        info: dict[str, object] = raw_info if isinstance(raw_info, dict) else {}
        error = info.get("error")
        reward = rec.get("reward")
        if reward is not None and (isinstance(reward, bool) or not isinstance(reward, int | float)
                                   or not math.isfinite(reward)):  # fmt: skip
            raise ConfigError(f"{where}: reward: expected a finite number or null, got {reward!r}")
        messages = []
        for j, m in enumerate(traj):
            mw = f"{where}: traj[{j}]"
            if not isinstance(m, dict) or m.get("role") not in _ROLES:
                raise ConfigError(f"{mw}: expected a message with role user, assistant, tool or system")
            content = m.get("content")
            if content is not None and not isinstance(content, str):
                raise ConfigError(f"{mw}.content: expected a string or null, got {type(content).__name__}")
            messages.append(PublishedMessage(_ROLES[m["role"]], content or "", tool_calls_of(m.get("tool_calls"), mw)))
        key = (str(task), trial)
        if key in seen:
            raise ConfigError(f"{where}: task {task} trial {trial} repeats record {seen[key]}; each trial of a task "
                              "must appear once")  # fmt: skip
        seen[key] = i
        convs.append(PublishedConversation(
            conversation_id=f"{task}:{trial if trial is not None else i}", task_id=str(task), messages=messages,
            trial=trial, reward=None if error else (None if reward is None else float(reward)),
            infra_error=str(error) if error else None, task_content=_instruction(info)))  # fmt: skip
    return PublishedRun(conversations=convs, format="taubench", path=str(p), sha256=file_sha256(str(p)))
