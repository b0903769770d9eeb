"""Meaning keys: what a benchmark's ``meaning_key`` hook returns and the embedding partitioner honours.

A key is a class name (``"donate:$1"``), ``None`` (no constraint) or a :class:`KeyFamily`. It is
the vocabulary both sides share, so it sits below both: a benchmark produces keys without importing
the metrics, and the metrics read them without importing any benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KeyFamily:
    """A key that separates without joining: replies keyed with a family are never in one class
    with replies of another key, but join each other by distance only (e.g. questions: never the
    same meaning as a decision, but two questions need not ask the same thing)."""

    name: str
