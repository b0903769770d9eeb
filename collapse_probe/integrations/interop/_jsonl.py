"""A reader of conversations in JSONL: one conversation per line.

Two shapes are read:

- collapse-probe's own conversation records (``conversations.jsonl`` of ``play``/``crossplay``/an
  on-policy audit, ``rollouts.jsonl`` of ``train``): ``key``, ``task_id``, ``rollout``, ``policy``,
  ``simulator``, ``messages`` with roles ``policy``/``simulator``/``tool``, ``reward``, ``status``. A
  resumed run may hold a conversation twice (an infrastructure failure run again): the last record of
  a key wins, as the run itself reads it. A training run's ``step`` keeps the states of different
  steps apart (the simulator may be trained between them).
- generic chat records: ``messages`` with roles ``user``/``assistant``/``tool``/``system`` (the
  simulator is ``user`` unless ``sim_role`` says ``assistant``), a task id in ``task_id`` or
  ``task``, optional ``id``, ``trial`` (or ``rollout``/``epoch``), ``reward`` (or ``score``),
  ``simulator``, ``policy``, ``error`` (an infrastructure failure) and ``simulator_errors``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError
from collapse_probe.integrations.interop._chat import number

NATIVE_ROLES = ("policy", "simulator")


def _role_map(sim_role: str) -> dict[str, str]:
    other = "assistant" if sim_role == "user" else "user"
    return {sim_role: "simulator", other: "policy", "tool": "tool", "system": "system"}


def _records(p: Path) -> list[tuple[int, dict[str, object]]]:
    """``(line number, object)`` of every non-blank line, read with the user-file limits
    (:func:`collapse_probe.core._files.iter_json_lines`: a regular file, size, line length, nesting, long
    integers, lone surrogates, non-finite numbers); a line that is not a JSON object (a torn last line
    included: a published file is complete or it is not that file) is one error naming it, and a JSON
    array given as JSON lines is named as such."""
    from collapse_probe.core._files import FileProblem, MissingFile, TornLastLine, iter_json_lines

    expected = "a JSONL file of conversations (one JSON object per line)"
    out: list[tuple[int, dict[str, object]]] = []
    try:
        for i, rec in iter_json_lines(p, expected=expected):
            if isinstance(rec, list) and not out:
                raise ConfigError(_array_message(p, rec))
            if not isinstance(rec, dict):
                raise ConfigError(f"{p}: line {i}: expected a JSON object (one conversation), got {type(rec).__name__}")
            out.append((i, rec))
    except MissingFile:
        raise ConfigError(f"--from {p}: no such file; expected {expected}") from None
    except TornLastLine as exc:
        raise ConfigError(f"{p}: line {exc.line}: not valid JSON (the last line is cut off: the file is "
                          "incomplete)") from None  # fmt: skip
    except FileProblem:
        raise
    except ConfigError:
        if not out and p.is_file():  # a pretty-printed JSON array fails on its first line
            with open(p, "rb") as f:
                head = f.read(1 << 16).decode("utf-8", "replace")
            if head.lstrip().startswith("["):
                raise ConfigError(_array_message(p, None, head)) from None
        raise
    return out


def _array_message(p: Path, value: list[Any] | None, head: str = "") -> str:
    first = value[0] if value else None
    taubench = (isinstance(first, dict) and "traj" in first) or '"traj"' in head
    hint = " (τ-bench's historical trajectories: --format taubench)" if taubench else ""
    return f"{p}: is one JSON array, not JSON lines (one conversation object per line){hint}"


def read_jsonl_conversations(path: str | Path, sim_role: str = "user") -> Any:
    """Read a JSONL file of conversations into a :class:`PublishedRun`.

    Raises:
        ConfigError: the file is missing or a line is not a conversation (naming the line and field).
    """
    from collapse_probe.integrations.interop._published import PublishedConversation, PublishedRun, file_sha256

    p = Path(path)
    by_key: dict[str, PublishedConversation] = {}
    first_line: dict[str, int] = {}
    policies: set[str] = set()
    simulators: set[str] = set()
    for i, rec in _records(p):
        where = f"{p}: line {i}"
        msgs = rec.get("messages")
        if not isinstance(msgs, list):
            raise ConfigError(
                f"{where}: messages: expected a list of {{role, content}} objects, got {type(msgs).__name__}"
            )
        task = rec.get("task_id", rec.get("task"))
        if task is None or isinstance(task, dict | list):
            raise ConfigError(f"{where}: task_id: expected the task's id (a string or number), got {task!r}")
        native = any(isinstance(m, dict) and m.get("role") in NATIVE_ROLES for m in msgs)
        messages = _messages(msgs, where, native, sim_role)
        status = rec.get("status")
        infra = rec.get("infra_error") or rec.get("error") or ("infra_error" if status == "infra_error" else None)
        trial = rec.get("rollout", rec.get("trial", rec.get("epoch")))
        key = _conversation_key(rec, where, native, i, first_line)
        conv = PublishedConversation(
            conversation_id=key,
            task_id=str(task),
            messages=messages,
            trial=int(trial) if isinstance(trial, int) and not isinstance(trial, bool) else None,
            reward=None if infra else number(rec.get("reward", rec.get("score")), f"{where}: reward"),
            infra_error=str(infra) if infra else None,
            simulator_errors=_simulator_errors(rec.get("simulator_errors")),
            policy=str(rec["policy"]) if rec.get("policy") is not None else None,
            simulator=str(rec["simulator"]) if rec.get("simulator") is not None else None,
            group=tuple(f"{k}={rec[k]}" for k in ("step", "persona_id") if rec.get(k) is not None),
        )
        by_key[key] = conv  # the last record of a conversation wins (a resumed run's retry), at the first's place
        if conv.policy:
            policies.add(conv.policy)
        if conv.simulator:
            simulators.add(conv.simulator)
    return PublishedRun(
        conversations=list(by_key.values()),
        format="jsonl",
        path=str(p),
        sha256=file_sha256(str(p)),
        policy=next(iter(policies)) if len(policies) == 1 else None,
        simulator=next(iter(simulators)) if len(simulators) == 1 else None,
    )


def _messages(msgs: list[Any], where: str, native: bool, sim_role: str) -> list[Any]:
    """A record's messages as published messages, their roles mapped to the audit's (a collapse-probe
    record names ``policy`` and ``simulator`` itself; a chat file's ``sim_role`` is the simulator).

    Raises:
        ConfigError: a message that is not an object with a string role, or content that is not text.
    """
    from collapse_probe.integrations.interop._published import PublishedMessage
    from collapse_probe.integrations.interop._taubench import tool_calls_of

    roles = {r: r for r in (*NATIVE_ROLES, "tool", "system")} if native else _role_map(sim_role)
    messages = []
    for j, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ConfigError(f"{where}: messages[{j}]: expected an object with a string 'role'")
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            raise ConfigError(
                f"{where}: messages[{j}].content: expected a string or null, got {type(content).__name__}"
            )
        calls = tool_calls_of(m.get("tool_calls"), f"{where}: messages[{j}]")
        meta: dict[str, object] = m["meta"] if isinstance(m.get("meta"), dict) else {}
        role = str(roles.get(m["role"], m["role"]))
        messages.append(PublishedMessage(role, content or "", calls, meta))
    return messages


def _simulator_errors(flags: Any) -> list[dict[str, object]]:
    """The record's simulator error flags as ``{flag, critical}`` objects (``true``: one unnamed flag)."""
    if isinstance(flags, list):
        return [e if isinstance(e, dict) else {"flag": str(e), "critical": False} for e in flags]
    return [{"flag": "simulator_errors", "critical": False}] if flags is True else []


def _conversation_key(rec: dict[str, object], where: str, native: bool, i: int, first_line: dict[str, int]) -> str:
    """The conversation's key: its ``key`` (a collapse-probe record) or ``id`` (a chat file), else its
    line, under its training step; a chat file's key seen before is refused (``first_line``: key -> the
    line that first gave it, updated here).

    Raises:
        ConfigError: an id that is not a string or an integer, or a chat file's id given twice.
    """
    ident = rec.get("key") if native else rec.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, str | int)):
        raise ConfigError(f"{where}: {'key' if native else 'id'}: expected a string or integer, got {ident!r}")
    key = str(ident) if ident is not None and ident != "" else f"line-{i}"
    if rec.get("step") is not None:
        key = f"step-{rec['step']}|{key}"  # a training run reuses conversation keys at every step
    if not native and key in first_line:
        # a resumed collapse-probe run repeats a key on purpose (its retry wins); a chat file does not
        raise ConfigError(f"{where}: id {ident!r} repeats line {first_line[key]}'s; each conversation of a "
                          "JSONL file needs its own id (or none)")  # fmt: skip
    first_line.setdefault(key, i)
    return key
