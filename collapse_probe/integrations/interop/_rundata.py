"""A finished run directory read whole, for export, cards and trackers (read-only)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from collapse_probe.errors import ConfigError

CONVERSATION_FILES = {"train": "rollouts.jsonl"}
"""Run kind -> the file of its conversation records (default ``conversations.jsonl``)."""
KINDS = ("play", "audit", "crossplay", "train")
"""Run kinds with records to export."""

JsonObject = dict[str, JsonValue]
"""One record of a run's JSONL file as it was written (the check of its file made its fields' types sure)."""
RecordCheck = Callable[[JsonObject], "str | None"]
"""What is wrong with a record (``None``: nothing)."""


def json_list(value: object) -> list[JsonValue]:
    """``value`` when it is a JSON array, else an empty one (a field a record does not hold)."""
    return value if isinstance(value, list) else []


def json_objects(value: object) -> list[JsonObject]:
    """The JSON objects of ``value`` when it is a JSON array (other items left out), else none."""
    return [v for v in json_list(value) if isinstance(v, dict)]


def checked_number(rec: Mapping[str, object], key: str) -> float:
    """The number at ``key`` of a record its check found well formed (it holds one there).

    Raises:
        ConfigError: it does not (a record that escaped its check), naming the field.
    """
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"a record's {key}: expected a number, got {value!r:.200}")
    return float(value)


@dataclass
class RunData:
    """A run directory's configuration, results and records (every line, in file order)."""

    path: Path
    kind: str
    config: dict[str, Any]
    """``config.json``."""
    results: dict[str, Any]
    """``results.json`` as the typed results write it (:func:`collapse_probe.results.load`)."""
    conversations: list[JsonObject] = field(default_factory=list)
    """Conversation records (``rollouts.jsonl`` for a train run), every line of the file."""
    samples: list[JsonObject] = field(default_factory=list)
    """Audit state records (``samples.jsonl``), every line of the file."""
    metrics: list[JsonObject] = field(default_factory=list)
    """Training steps (``metrics.jsonl``)."""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def conversation_file(self) -> str:
        return CONVERSATION_FILES.get(self.kind, "conversations.jsonl")


REQUIRED = {
    "play": ("conversations.jsonl",),
    "crossplay": ("conversations.jsonl",),
    "train": ("rollouts.jsonl", "metrics.jsonl"),
    "audit": ("samples.jsonl",),
}
"""Run kind -> the record files a finished run of it always has."""


def _read_records(
    p: Path, name: str, check: RecordCheck | None, key_fields: tuple[str, ...] | None
) -> list[JsonObject]:
    """Every record of ``p/name``, each checked; a record without its key, or a finished unit
    recorded twice, is named (file and lines), never dropped or collapsed."""
    from collapse_probe.core._jsonl import iter_jsonl_numbered
    from collapse_probe.core._records import INFRA_ERROR

    f = p / name
    out: list[JsonObject] = []
    seen: dict[tuple[str, ...], tuple[int, JsonObject]] = {}
    for line, rec in iter_jsonl_numbered(f):
        problem = check(rec) if check is not None else None
        if problem is not None:
            raise ConfigError(
                f"{f}: line {line}: {problem}; the run's records are not what it wrote, so it is not exported"
            )
        if key_fields is not None:
            key = tuple(str(rec.get(k)) for k in key_fields)
            if key in seen:
                first_line, first = seen[key]
                # a resumed run appends a unit again after an infrastructure failure: the last counts
                if first.get("status") not in (INFRA_ERROR, "infra_error") and rec.get("status") not in (
                    INFRA_ERROR,
                    "infra_error",
                ):
                    shown = "|".join(key) if len(key) > 1 else key[0]
                    raise ConfigError(
                        f"{f}: lines {first_line} and {line} both record {'/'.join(key_fields)} {shown!r} as finished; "
                        "a run records a unit once (the file was edited or two runs were merged), so it is not exported"
                    )
            seen[key] = (line, rec)
        out.append(rec)
    return out


def _checks(kind: str) -> tuple[RecordCheck, RecordCheck, RecordCheck]:
    """(conversation check, samples check, metrics check) of a run kind."""
    from collapse_probe.core._records import conversation_problem

    def train_rollout(rec: JsonObject) -> str | None:
        from collapse_probe.trainers._train_results import step_problem

        return step_problem(rec) or conversation_problem(rec)

    def metrics(rec: JsonObject) -> str | None:
        from collapse_probe.trainers._train_results import step_problem

        return step_problem(rec)

    def sample(rec: JsonObject) -> str | None:
        from collapse_probe.results._samples import sample_problem

        return sample_problem(rec)

    return (train_rollout if kind == "train" else conversation_problem), sample, metrics


def _incomplete(run: RunData) -> str | None:
    """Why the run's records do not hold what its ``results.json`` reports (``None``: they do)."""
    res = run.results
    conv = [r for r, keep in zip(run.conversations, current_flags(run.conversations,
            conversation_key_fields(run.kind)), strict=True) if keep]  # fmt: skip
    if run.kind == "play":
        want = res.get("tasks", 0) * res.get("rollouts", 0)
        if isinstance(want, int) and len(conv) < want:
            return f"{run.conversation_file} holds {len(conv)} of the {want} conversations results.json reports"
    elif run.kind == "crossplay":
        want = sum(int(c.get("n_conversations") or 0) for c in res.get("cells") or [])
        if len(conv) < want:
            return f"{run.conversation_file} holds {len(conv)} of the {want} conversations results.json reports"
    elif run.kind == "audit":
        mode = str(res.get("mode") or "direct")
        have = {str(r.get("state_id")) for r in run.samples if str(r.get("mode") or "direct") == mode}
        missing = [str(s.get("state_id")) for s in res.get("states") or [] if str(s.get("state_id")) not in have]
        if missing and res.get("mode") != "published":
            return (
                f"samples.jsonl lacks {len(missing)} of the {len(res.get('states') or [])} states results.json "
                f"reports (e.g. {missing[0]!r})"
            )
        if res.get("policy") and not conv:
            return f"results.json reports on-policy conversations, but {run.conversation_file} holds none"
    return None


def load_run_data(path: str | Path) -> RunData:
    """Read a finished ``play``, ``audit``, ``crossplay`` or ``train`` run directory, every record checked.

    Raises:
        ConfigError: not a run directory, a kind without records, no ``results.json`` yet, a field
            of the wrong type (naming the file, line and field), a record file missing or holding
            fewer records than the results report, or a unit recorded twice.
    """
    from collapse_probe.results import load
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
    results = load(p).to_json()
    if results.get("mode") == "published":
        required: tuple[str, ...] = ()
    else:
        required = REQUIRED[str(kind)]
    for name in required:
        if not os.path.lexists(p / name):
            raise ConfigError(
                f"{p}: results.json is there but {name} is missing; the run's records are gone, so there is "
                "nothing to export (restore the file, or rerun the run into a new --out)"
            )
    run = RunData(path=p, kind=str(kind), config=config, results=results)
    conv_check, sample_check, metrics_check = _checks(run.kind)
    run.conversations = _read_records(p, run.conversation_file, conv_check, conversation_key_fields(run.kind))
    run.samples = _read_records(p, "samples.jsonl", sample_check, ("state_id", "mode"))
    run.metrics = _read_records(p, "metrics.jsonl", metrics_check, None)
    why = _incomplete(run)
    if why is not None:
        raise ConfigError(f"{p}: incomplete run: {why}; rerun its command to finish it before exporting")
    return run


def current_flags(records: Sequence[Mapping[str, object]], key_fields: tuple[str, ...]) -> list[bool]:
    """Which records count: a resumed run appends a unit again (an infrastructure failure run once
    more), and the last record of a unit wins, as the run itself reads its files back."""
    last: dict[tuple[str, ...], int] = {}
    for i, r in enumerate(records):
        last[tuple(str(r.get(k)) for k in key_fields)] = i
    keep = set(last.values())
    return [i in keep for i in range(len(records))]


def conversation_key_fields(kind: str) -> tuple[str, ...]:
    """The fields that name one conversation of a run (a training run repeats keys across steps)."""
    return ("step", "key") if kind == "train" else ("key",)
