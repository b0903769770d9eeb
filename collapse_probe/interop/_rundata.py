"""A finished run directory read whole, for export, cards and trackers (read-only)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError

CONVERSATION_FILES = {"train": "rollouts.jsonl"}
"""Run kind -> the file of its conversation records (default ``conversations.jsonl``)."""
KINDS = ("play", "audit", "crossplay", "train")
"""Run kinds with records to export."""


@dataclass
class RunData:
    """A run directory's configuration, results and records (every line, in file order)."""

    path: Path
    kind: str
    config: dict[str, Any]
    results: dict[str, Any]
    conversations: list[dict[str, Any]] = field(default_factory=list)
    """Conversation records (``rollouts.jsonl`` for a train run), every line of the file."""
    samples: list[dict[str, Any]] = field(default_factory=list)
    """Audit state records (``samples.jsonl``), every line of the file."""
    metrics: list[dict[str, Any]] = field(default_factory=list)
    """Training steps (``metrics.jsonl``)."""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def conversation_file(self) -> str:
        return CONVERSATION_FILES.get(self.kind, "conversations.jsonl")


def read_results(path: Path) -> dict[str, Any]:
    """A run's ``results.json`` as a JSON object.

    Raises:
        ConfigError: missing (the run is in progress or was killed), unreadable, or not a result.
    """
    p = path / "results.json"
    if not p.is_file():
        raise ConfigError(
            f"{path}: no results.json yet (the run is in progress, or was stopped: rerun its command to finish it)"
        )
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError, OSError) as exc:
        raise ConfigError(f"{p}: unreadable ({type(exc).__name__}); expected a collapse-probe results.json") from None
    if not isinstance(data, dict) or not isinstance(data.get("schema"), str):
        raise ConfigError(f"{p}: expected a collapse-probe results.json (a JSON object with a 'schema')")
    return data


def load_run_data(path: str | Path) -> RunData:
    """Read a finished ``play``, ``audit``, ``crossplay`` or ``train`` run directory.

    Raises:
        ConfigError: not a run directory, a kind without records, or no ``results.json`` yet.
    """
    from collapse_probe.rollout import iter_jsonl
    from collapse_probe.rollout._rundir import read_run_config

    p = Path(path)
    if not p.is_dir():
        raise ConfigError(
            f"{path}: no such run directory (expected the --out of a play, audit, crossplay or train run)"
        )
    config = read_run_config(p)
    kind = config.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{p}: holds a {kind or 'unknown'} run; expected one of {', '.join(KINDS)}")
    results = read_results(p)
    run = RunData(path=p, kind=str(kind), config=config, results=results)
    run.conversations = list(iter_jsonl(p / run.conversation_file))
    run.samples = list(iter_jsonl(p / "samples.jsonl"))
    run.metrics = list(iter_jsonl(p / "metrics.jsonl"))
    return run


def current_flags(records: list[dict[str, Any]], key_fields: tuple[str, ...]) -> list[bool]:
    """Which records count: a resumed run appends a unit again (an infrastructure failure run once
    more), and the last record of a unit wins, as the run itself reads its files back."""
    last: dict[tuple[Any, ...], int] = {}
    for i, r in enumerate(records):
        last[tuple(str(r.get(k)) for k in key_fields)] = i
    keep = set(last.values())
    return [i in keep for i in range(len(records))]


def conversation_key_fields(kind: str) -> tuple[str, ...]:
    """The fields that name one conversation of a run (a training run repeats keys across steps)."""
    return ("step", "key") if kind == "train" else ("key",)
