"""Typed results: one pydantic model per ``results.json`` kind, written and read through it.

Each pipeline builds its model and writes :meth:`~ResultsModel.to_json`; readers (the gate, resume
code) parse files through the same model, so a field has one definition, with its type and meaning,
and its JSON Schema ships in the package as ``collapse_probe/schemas/<kind>.json`` (:func:`published_schema`;
written by ``python scripts/write_schemas.py``).

==================  ======================  ==============================================
kind                model                   file
==================  ======================  ==============================================
``play``            :class:`PlayResults`    ``results.json``
``audit``           :class:`AuditResults`   ``results.json`` (also ``audit --from``)
``crossplay``       :class:`CrossplayResults` ``results.json``
``train``           :class:`TrainResults`   ``results.json``
``lab``             :data:`LabOutput`       ``results.json``, ``compare.json``, ``sweep.json``
``gate``            :class:`GateResults`    ``gate --json FILE``
``compare``         :class:`CompareResults` ``results.json``
==================  ======================  ==============================================
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import JsonValue, TypeAdapter, ValidationError

from collapse_probe.core._records import ConversationRecord
from collapse_probe.errors import ConfigError
from collapse_probe.results._audit import AUDIT_SCHEMA, AuditResults, AuditSummary, StateRow, VerdictView
from collapse_probe.results._base import ResultsModel, describe_error
from collapse_probe.results._common import ModelUsage, RewardSummary
from collapse_probe.results._compare import COMPARE_SCHEMA, CompareResults
from collapse_probe.results._crossplay import (
    CROSSPLAY_SCHEMA,
    Cell,
    CrossplayResults,
    PolicyDiversity,
    Transfer,
    read_crossplay,
)
from collapse_probe.results._gate import GATE_SCHEMA, GateCheck, GateResults
from collapse_probe.results._lab import (
    LAB_COMPARE_SCHEMA,
    LAB_SCHEMA,
    LAB_SWEEP_SCHEMA,
    LabCompareResults,
    LabOutput,
    LabRunResults,
    LabSweepResults,
)
from collapse_probe.results._play import PLAY_SCHEMA, PlayResults
from collapse_probe.results._samples import SampleRecord
from collapse_probe.results._train import TRAIN_SCHEMA, TrainResults, TrainStep

KINDS: dict[str, Any] = {
    "play": PlayResults,
    "audit": AuditResults,
    "crossplay": CrossplayResults,
    "train": TrainResults,
    "lab": LabOutput,
    "gate": GateResults,
    "compare": CompareResults,
}
"""Results kind -> its model (``lab``: the union of its three outputs, a type pydantic's ``TypeAdapter``
reads); ``collapse_probe/schemas/<kind>.json``."""

BY_SCHEMA: dict[str, type[ResultsModel]] = {
    PLAY_SCHEMA: PlayResults,
    AUDIT_SCHEMA: AuditResults,
    CROSSPLAY_SCHEMA: CrossplayResults,
    TRAIN_SCHEMA: TrainResults,
    LAB_SCHEMA: LabRunResults,
    LAB_COMPARE_SCHEMA: LabCompareResults,
    LAB_SWEEP_SCHEMA: LabSweepResults,
    GATE_SCHEMA: GateResults,
    COMPARE_SCHEMA: CompareResults,
}
"""The ``schema`` string of a file -> the model that reads it."""


SCHEMA_ID_PREFIX = "urn:collapse-probe:results:"
"""Each published schema's ``$id`` is this prefix and its kind (``urn:collapse-probe:results:audit``)."""

RECORDS: dict[str, Any] = {"conversation": ConversationRecord, "sample": SampleRecord}
"""Record kind -> the model of one line of a run's JSONL file (``conversation``: ``conversations.jsonl``,
``sample``: an audit's ``samples.jsonl``);
its schema ships beside the results schemas, ``collapse_probe/schemas/<kind>.json``."""
RECORD_ID_PREFIX = "urn:collapse-probe:records:"
"""A record schema's ``$id`` is this prefix and its kind (``urn:collapse-probe:records:conversation``)."""


def json_schema(kind: str) -> dict[str, JsonValue]:
    """The JSON Schema of a results kind or a record kind (:data:`RECORDS`), generated from its model (what
    :func:`published_schema` ships)."""
    record = kind in RECORDS
    adapter = TypeAdapter(RECORDS[kind] if record else KINDS[kind])
    schema = adapter.json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = (RECORD_ID_PREFIX if record else SCHEMA_ID_PREFIX) + kind
    schema.setdefault("title", f"collapse-probe {kind} {'record' if record else 'results'}")
    return schema


def schema_text(kind: str) -> str:
    """The file content of ``collapse_probe/schemas/<kind>.json``: sorted keys, two-space indent, a final newline."""
    return json.dumps(json_schema(kind), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def published_schema(kind: str) -> dict[str, JsonValue]:
    """The JSON Schema of a results kind as the installed package ships it (``collapse_probe/schemas/``,
    read through :mod:`importlib.resources`, so a wheel or a zip holds it too).

    Raises:
        ConfigError: ``kind`` is not one of :data:`KINDS`.
    """
    from importlib.resources import files

    if kind not in KINDS and kind not in RECORDS:
        raise ConfigError(f"unknown results kind {kind!r}; expected one of {', '.join([*KINDS, *RECORDS])}")
    text = files("collapse_probe").joinpath("schemas", f"{kind}.json").read_text(encoding="utf-8")
    schema: dict[str, JsonValue] = json.loads(text)
    return schema


def _parse(data: Any, where: str) -> Results:
    """The typed results of loaded JSON data, by its ``schema`` (what :func:`load` does after reading the file).

    Raises:
        ConfigError: not an object, an unknown schema, or a known field of the wrong type (one line
            naming ``where`` and the field; for a cross-play result, the cell).
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(data).__name__}")
    model = BY_SCHEMA.get(str(data.get("schema")))
    if model is None:
        raise ConfigError(
            f"{where}: unknown results schema {data.get('schema')!r}; expected one of {', '.join(BY_SCHEMA)}"
        )
    if model is CrossplayResults:
        return read_crossplay(data, where)  # names the cell: ``cell P vs S: 'n' is '8'; expected ...``
    try:
        return model.parse(data)  # type: ignore[return-value]  # BY_SCHEMA holds exactly the members of Results
    except ValidationError as exc:
        raise ConfigError(describe_error(exc, model, where)) from None


def read_json(path: str | Path, what: str = "results.json") -> Any:
    """Load a JSON file through the package's one reader of users' files (:mod:`collapse_probe.core._files`).

    Args:
        path: the file, or a run directory (then its ``results.json``).
        what: what the file should be, for the messages.

    Raises:
        ConfigError: one line naming the file: missing, not a regular file, too large, not UTF-8,
            not JSON, nested too deeply.
    """
    from collapse_probe.core._files import parse_json, read_bytes

    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    return parse_json(read_bytes(p, max_bytes=1 << 30, expected=what), p, expected=what)


Results = (
    PlayResults
    | AuditResults
    | CrossplayResults
    | TrainResults
    | LabRunResults
    | LabCompareResults
    | LabSweepResults
    | GateResults
    | CompareResults
)
"""Any typed results file (what :func:`load` returns): the model of its ``schema``."""


def load(path: str | Path, kind: str | None = None) -> Results:
    """The typed results of a file or a run directory (its ``results.json``), by the file's ``schema``:
    the one reader of a run's results (the gate, the exporters, cards and resume code read through it).

    Args:
        path: a results file (``results.json``, a lab's ``compare.json`` / ``sweep.json``) or a run directory.
        kind: the kind of run the file must hold (one of :data:`KINDS`: ``"crossplay"`` for the gate);
            ``None`` takes any.

    Example:
        ``collapse_probe.results.load("runs/audit").summary.collapse_error.estimate``

    Raises:
        ConfigError: one line naming the file: a run directory without its results yet, missing or not
            JSON (:func:`read_json`), an unknown schema or another kind than ``kind``, or a known field of
            the wrong type (naming the field and what was expected).
    """
    if kind is not None and kind not in KINDS:
        raise ConfigError(f"unknown results kind {kind!r}; expected one of {', '.join(KINDS)}")
    what = "results.json" if kind is None else f"{_KIND_WORDS.get(kind, kind)} results.json"
    p = Path(path)
    if p.is_dir():
        if not os.path.lexists(p / "results.json"):
            raise ConfigError(
                f"{p}: no {what} yet (the run is in progress, or was stopped: rerun its command to finish it)"
            )
        p = p / "results.json"
    data = read_json(p, what)
    if kind is not None and isinstance(data, dict):
        schema = data.get("schema")
        if BY_SCHEMA.get(str(schema)) not in _MODELS_OF_KIND[kind]:
            word = _KIND_WORDS.get(kind, kind)
            raise ConfigError(
                f"{p}: holds results of schema {schema!r}; expected the results of {'an' if word[0] in 'aeiou' else 'a'} "
                f"{word} run"
            )
    return _parse(data, str(p))


_KIND_WORDS = {"crossplay": "cross-play"}
_MODELS_OF_KIND: dict[str, tuple[type[ResultsModel], ...]] = {
    **{kind: (model,) for kind, model in KINDS.items() if kind != "lab"},
    "lab": (LabRunResults, LabCompareResults, LabSweepResults),
}
""":func:`load`'s ``kind`` -> the models a file of that kind is read by."""


def read_results(data: Any, where: str = "results.json") -> tuple[Results | None, str | None]:
    """``(typed results, None)`` of loaded JSON data, or ``(None, the one-line problem)``; never raises.

    For readers that must keep going over files another process is writing or that another program
    wrote (the dashboard): the problem is the line :func:`load` would raise for the file.
    """
    try:
        return _parse(data, where), None
    except ConfigError as exc:
        return None, str(exc)


__all__ = [
    "BY_SCHEMA",
    "KINDS",
    "RECORDS",
    "RECORD_ID_PREFIX",
    "AuditResults",
    "AuditSummary",
    "Cell",
    "CompareResults",
    "CrossplayResults",
    "GateCheck",
    "GateResults",
    "LabCompareResults",
    "LabOutput",
    "LabRunResults",
    "LabSweepResults",
    "ModelUsage",
    "PlayResults",
    "PolicyDiversity",
    "ResultsModel",
    "RewardSummary",
    "SCHEMA_ID_PREFIX",
    "StateRow",
    "TrainResults",
    "TrainStep",
    "Transfer",
    "VerdictView",
    "describe_error",
    "json_schema",
    "published_schema",
    "Results",
    "load",
    "read_crossplay",
    "read_results",
    "read_json",
    "schema_text",
]
