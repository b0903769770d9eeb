"""Conversation records as the engine writes them (one JSON object per line of ``conversations.jsonl``):
the status values and what can be read off a set of records without statistics."""

from __future__ import annotations

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
