"""Conversation records as the engine writes them (one JSON object per line of ``conversations.jsonl``):
the status values and what can be read off a set of records without statistics."""

from __future__ import annotations

import math
import reprlib
from collections.abc import Sequence
from typing import Any

INFRA_ERROR = "infra_error"
"""``status`` of a conversation that ended in an infrastructure failure (never scored, retried on resume)."""


def record_fingerprints(records: Sequence[dict[str, Any]]) -> dict[str, str | list[str]]:
    """Spec -> the model fingerprint its conversations were run with (a sorted list when they differ,
    which the gate refuses to judge: one spec answered by two models)."""
    seen: dict[str, set[str]] = {}
    for r in records:
        fps = r.get("fingerprints") or {}
        for side in ("policy", "simulator"):
            if isinstance(fps, dict) and fps.get(side):
                seen.setdefault(str(r.get(side)), set()).add(str(fps[side]))
    return {k: (next(iter(v)) if len(v) == 1 else sorted(v)) for k, v in seen.items()}


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def field_problem(field: str, expected: str, value: Any) -> str:
    """How a record check names a bad field: ``field 'reward': expected ..., got 'zzz'``."""
    return f"field {field!r}: expected {expected}, got {reprlib.repr(value)}"


def conversation_problem(rec: dict[str, Any]) -> str | None:
    """What is wrong with one ``conversations.jsonl`` record, or ``None`` when it is well formed.

    A resumed run trusts what it reads back: a record with ``"reward": "zzz"`` would fail the
    summary, one with another ``policy`` would silently fall out of its matrix cell. The key must
    also be the one its fields make (``policy|simulator|task_id|rollout``), so a record is counted
    in exactly the cell and task it was run for.
    """
    for field in ("key", "task_id", "policy", "simulator", "status"):
        if not isinstance(rec.get(field), str):
            return field_problem(field, "a string", rec.get(field))
    if not _whole(rec.get("rollout")):
        return field_problem("rollout", "a whole number >= 0", rec.get("rollout"))
    if isinstance(rec.get("seed"), bool) or not isinstance(rec.get("seed"), int):
        return field_problem("seed", "an integer", rec.get("seed"))
    key = f"{rec['policy']}|{rec['simulator']}|{rec['task_id']}|{rec['rollout']}"
    if rec["key"] != key:
        return (
            f"its key {reprlib.repr(rec['key'])} does not match its fields policy|simulator|task_id|rollout "
            f"{reprlib.repr(key)}"
        )
    messages = rec.get("messages")
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content", ""), str | None)
        for m in messages
    ):
        return field_problem("messages", "a list of {role, content} messages", messages)
    fps = rec.get("fingerprints")
    if fps is not None and not (
        isinstance(fps, dict) and all(isinstance(fps.get(side, ""), str) for side in ("policy", "simulator"))
    ):
        return field_problem("fingerprints", "{policy: fingerprint, simulator: fingerprint}", fps)
    if rec["status"] == INFRA_ERROR:
        if not isinstance(rec.get("infra_error"), str):
            return field_problem("infra_error", "the failure's message", rec.get("infra_error"))
        return None
    if rec.get("infra_error") is not None:
        return field_problem("infra_error", f"null (status is {rec['status']!r})", rec.get("infra_error"))
    if rec.get("reward") is not None and not _finite(rec["reward"]):
        return field_problem("reward", "a finite number or null", rec.get("reward"))
    if rec.get("success") is not None and not isinstance(rec["success"], bool):
        return field_problem("success", "true, false or null", rec.get("success"))
    if rec.get("info") is not None and not isinstance(rec["info"], dict):
        return field_problem("info", "an object", rec["info"])
    return None
