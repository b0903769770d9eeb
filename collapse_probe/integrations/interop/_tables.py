"""A run directory as tables (pyarrow): the schema behind ``export --to parquet`` and ``--to hf``.

Every table keeps the records of the run's JSONL files field for field: a scalar field is a typed
column (the types of known fields are fixed, so the same query works on every run), a list of
numbers or strings is an Arrow list, and any field holding objects (``messages``, ``info``,
``fingerprints``, ...) is a string column of its JSON text, named in the table's metadata
(``collapse_probe.json_columns``) and in each such field's metadata (``encoding: json``).
:func:`read_table` undoes exactly that, giving back the records.

Tables (``docs/interop.md`` lists every column):

- ``run``: one row: kind, schema, tool version, the run directory's name, ``config`` and ``results``
  (JSON), so a table set can always be traced to the figures it came from;
- ``conversations``: one row per line of ``conversations.jsonl`` (``rollouts.jsonl`` of a train
  run), with ``record_line`` (1-based line) and ``is_current`` (the record that counts: the last one
  of its conversation, as a resumed run reads it);
- ``turns``: one row per message of every conversation (``record_line``, ``turn``, ``role``,
  ``content``, ...), for SQL over turns without unpacking JSON;
- ``states``: one row per line of an audit's ``samples.jsonl`` (``record_line``, ``is_current``);
- ``audit_samples``: one row per sampled reply of an audited state (``sample`` index, ``response``,
  its ``label`` and ``class_name``);
- ``cells``, ``transfer``, ``policy_diversity``: a cross-play run's ``results.json`` lists;
- ``metrics``: one row per training step (``metrics.jsonl``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collapse_probe.errors import ConfigError, require
from collapse_probe.integrations.interop._rundata import (
    RunData,
    conversation_key_fields,
    current_flags,
    json_list,
    json_objects,
)

if TYPE_CHECKING:
    import pyarrow as pa

JSON = "json"
"""Column type of fields that hold objects: their JSON text."""
JSON_COLUMNS_KEY = b"collapse_probe.json_columns"
TABLE_KEY = b"collapse_probe.table"


def _types() -> dict[str, object]:
    """Short name -> the Arrow type of a known column (``json``: JSON text, :data:`JSON`)."""
    pa = require("pyarrow", "parquet", "parquet and Hugging Face export")
    f64, i64, s, b = pa.float64(), pa.int64(), pa.string(), pa.bool_()
    return {"f64": f64, "i64": i64, "str": s, "bool": b, "f64s": pa.list_(f64), "i64s": pa.list_(i64),
            "strs": pa.list_(s), "json": JSON}  # fmt: skip


# Fixed column types of the known fields of each table ("json": JSON text). Unknown fields are inferred.
KNOWN: dict[str, dict[str, str]] = {
    "run": {"kind": "str", "schema": "str", "version": "str", "run": "str", "config": "json", "results": "json"},
    "conversations": {
        "record_line": "i64", "is_current": "bool", "step": "i64", "key": "str", "task_id": "str", "rollout": "i64",
        "policy": "str", "simulator": "str", "seed": "i64", "messages": "json", "reward": "f64", "success": "bool",
        "status": "str", "infra_error": "str", "fingerprints": "json", "info": "json", "seconds": "f64",
        "persona_id": "str",
    },
    "turns": {
        "record_line": "i64", "step": "i64", "key": "str", "task_id": "str", "rollout": "i64", "policy": "str",
        "simulator": "str", "turn": "i64", "role": "str", "content": "str", "tool_calls": "json", "meta": "json",
    },
    "states": {
        "record_line": "i64", "is_current": "bool", "state_id": "str", "mode": "str", "simulator": "str",
        "source": "str", "turn": "i64", "task_id": "str", "conversation": "str", "closed_set": "bool",
        "kind": "str", "context": "json", "human_reply": "str", "status": "str", "error": "str", "n": "i64",
        "class_counts": "i64s", "class_names": "strs", "class_examples": "json", "responses": "strs",
        "labels": "i64s", "collapse_error": "f64", "collapse_error_estimate": "f64", "collapse_error_ci95": "f64s",
        "collapse_error_corrected": "f64", "entropy": "f64", "entropy_ci95": "f64s", "entropy_note": "str",
        "entropy_plugin": "f64", "entropy_miller_madow": "f64", "hill": "json", "hill_note": "str",
        "sample_coverage": "f64", "distinct_1": "f64", "distinct_2": "f64", "low_confidence": "bool",
        "n_empty": "i64", "vendi": "f64", "mean_pairwise_cosine": "f64", "decision": "json", "exact": "json",
        "vs": "json", "conversations": "strs",
    },
    "audit_samples": {
        "record_line": "i64", "state_id": "str", "mode": "str", "simulator": "str", "task_id": "str", "kind": "str",
        "sample": "i64", "response": "str", "label": "i64", "class_name": "str",
    },
    "cells": {
        "policy": "str", "simulator": "str", "n": "i64", "infra_failures": "i64", "mean_reward": "f64",
        "ci95": "f64s", "success_rate": "f64", "task_rewards": "json",
    },
    "transfer": {
        "policy": "str", "train_simulator": "str", "heldout_simulators": "strs", "train_reward": "f64",
        "heldout_reward": "f64", "transfer_ratio": "f64", "ci95": "f64s", "n_tasks": "i64", "note": "str",
    },
    "policy_diversity": {
        "policy": "str", "partitioner": "str", "estimator": "str", "turns": "str", "n_messages": "i64",
        "n_classes": "i64", "strategy_entropy": "f64", "collapse_error": "f64", "low_confidence": "bool",
    },
    "metrics": {
        "step": "i64", "train_reward": "f64", "heldout_reward": "f64", "zero_std_share": "f64",
        "policy_entropy": "f64", "sim_collapse_error": "f64", "loss": "f64", "seconds": "f64", "simulator": "str",
        "n_conversations": "i64", "infra_failures": "i64",
    },
}  # fmt: skip


def _is_json_value(v: Any) -> bool:
    return isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, dict | list) for x in v))


def _column(name: str, values: list[Any], kind: str | None) -> tuple[Any, Any]:
    """``(arrow field, arrow array)`` of one column; ``kind`` is the known type or ``None`` to infer."""
    import pyarrow as pa

    types = _types()
    if kind is None:
        present = [v for v in values if v is not None]
        if any(_is_json_value(v) for v in present):
            kind = "json"
        elif present and all(isinstance(v, bool) for v in present):
            kind = "bool"
        elif present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            kind = "i64"
        elif present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
            kind = "f64"
        elif all(isinstance(v, str) for v in present):
            kind = "str"
        else:
            try:
                arr = pa.array(values)
                return pa.field(name, arr.type), arr
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                kind = "json"
    if kind == "json":
        texts = [None if v is None else json.dumps(v, ensure_ascii=False) for v in values]
        return pa.field(name, pa.string(), metadata={b"encoding": b"json"}), pa.array(texts, pa.string())
    typ = types[kind]
    try:
        return pa.field(name, typ), pa.array(values, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        # a value this column's usual type cannot hold (an old or hand-edited record): keep it, as JSON
        texts = [None if v is None else json.dumps(v, ensure_ascii=False) for v in values]
        return pa.field(name, pa.string(), metadata={b"encoding": b"json"}), pa.array(texts, pa.string())


def table_from_rows(name: str, rows: Sequence[Mapping[str, object]]) -> pa.Table:
    """An Arrow table of ``rows`` (dicts), typed by :data:`KNOWN` for table ``name``.

    A field absent from a row is null in that row; the known columns come first in their listed
    order, then the others in order of first appearance.
    """
    import pyarrow as pa

    known = KNOWN.get(name, {})
    seen: dict[str, None] = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    order = [k for k in known if k in seen] + [k for k in seen if k not in known]
    fields, arrays = [], []
    for k in order:
        f, a = _column(k, [r.get(k) for r in rows], known.get(k))
        fields.append(f)
        arrays.append(a)
    json_cols = [f.name for f in fields if (f.metadata or {}).get(b"encoding") == b"json"]
    meta = {TABLE_KEY: name.encode(), JSON_COLUMNS_KEY: json.dumps(json_cols).encode()}
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))


def run_tables(run: RunData) -> dict[str, pa.Table]:
    """The tables of a run (see the module docstring); only tables with rows are returned."""
    res = run.results
    rows: dict[str, Sequence[Mapping[str, object]]] = {
        "run": [
            {
                "kind": run.kind,
                "schema": res.get("schema"),
                "version": res.get("version"),
                "run": run.name,
                "config": run.config,
                "results": res,
            }
        ],  # fmt: skip
    }
    if run.conversations:
        flags = current_flags(run.conversations, conversation_key_fields(run.kind))
        convs: list[dict[str, object]] = []
        turns: list[dict[str, object]] = []
        for i, (rec, cur) in enumerate(zip(run.conversations, flags, strict=True), start=1):
            convs.append({"record_line": i, "is_current": cur, **rec})
            for t, m in enumerate(json_list(rec.get("messages"))):
                if not isinstance(m, dict):
                    continue
                head: dict[str, object] = {
                    k: rec.get(k) for k in ("step", "key", "task_id", "rollout", "policy", "simulator") if k in rec
                }
                turns.append({"record_line": i, **head, "turn": t, **m})
        rows["conversations"], rows["turns"] = convs, turns
    if run.samples:
        flags = current_flags(run.samples, ("state_id", "mode"))
        states: list[dict[str, object]] = []
        samples: list[dict[str, object]] = []
        for i, (rec, cur) in enumerate(zip(run.samples, flags, strict=True), start=1):
            states.append({"record_line": i, "is_current": cur, **rec})
            names = json_list(rec.get("class_names"))
            labels = json_list(rec.get("labels"))
            for j, text in enumerate(json_list(rec.get("responses"))):
                lab = labels[j] if j < len(labels) else None
                samples.append({
                    "record_line": i, "state_id": rec.get("state_id"), "mode": rec.get("mode"),
                    "simulator": rec.get("simulator"), "task_id": rec.get("task_id"), "kind": rec.get("kind"),
                    "sample": j, "response": text, "label": lab,
                    "class_name": names[lab] if isinstance(lab, int) and 0 <= lab < len(names) else None,
                })  # fmt: skip
        rows["states"], rows["audit_samples"] = states, samples
    for name in ("cells", "transfer", "policy_diversity"):
        if isinstance(res.get(name), list) and res[name]:
            rows[name] = json_objects(res[name])
    if run.metrics:
        rows["metrics"] = list(run.metrics)
    return {name: table_from_rows(name, r) for name, r in rows.items() if r}


def json_columns(schema: Any) -> list[str]:
    """The JSON-text columns of a table written by :func:`table_from_rows` (from its metadata)."""
    meta = schema.metadata or {}
    if JSON_COLUMNS_KEY in meta:
        return list(json.loads(meta[JSON_COLUMNS_KEY]))
    return [f.name for f in schema if (f.metadata or {}).get(b"encoding") == b"json"]


def read_table(path: str | Path) -> list[dict[str, object]]:
    """The rows of an exported parquet table as dicts with every column, JSON columns decoded. For
    ``conversations`` and ``states`` each row holds its JSONL record field for field (a field the
    record lacks reads as ``None``), plus ``record_line`` and ``is_current``.

    Raises:
        ConfigError: the file is not a parquet table.
    """
    require("pyarrow", "parquet", "reading exported tables")
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(path))
    except (OSError, pa.ArrowInvalid) as exc:
        raise ConfigError(f"{path}: not a parquet table ({exc})") from None
    decode = set(json_columns(table.schema))
    return [
        {k: json.loads(v) if k in decode and v is not None else v for k, v in row.items()} for row in table.to_pylist()
    ]
