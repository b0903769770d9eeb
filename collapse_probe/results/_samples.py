"""An audit's ``samples.jsonl`` records (one measured state each) and the per-state rows of its
``results.json`` built from them: the record check the audit runs on resume and the exporters run on a
finished run, beside the results model (the audit pipeline and ``interop`` both read them, neither
imports the other for it)."""

from __future__ import annotations

from typing import Any

from collapse_probe._records import field_problem


def state_row(r: dict[str, Any]) -> dict[str, Any]:
    """The per-state entry of ``results.json`` (responses stay in ``samples.jsonl``)."""
    keys = ("state_id", "mode", "source", "kind", "turn", "task_id", "status", "n", "class_counts", "class_names",
            "collapse_error", "collapse_error_ci95", "collapse_error_corrected", "collapse_error_estimate",
            "entropy", "entropy_ci95", "entropy_lower_bound_only", "entropy_note", "hill", "hill_note", "distinct_1", "distinct_2", "vendi", "low_confidence", "exact", "reward_view", "decision", "vs", "n_empty", "error")  # fmt: skip
    row = {k: r[k] for k in keys if k in r}
    row.setdefault("n", 0)
    row.setdefault("class_counts", [])
    row.setdefault("collapse_error", None)
    row.setdefault("collapse_error_ci95", None)
    row.setdefault("entropy", None)
    if "vs" in row:
        row["vs"] = {k: v for k, v in row["vs"].items() if k != "examples"}
    return row


_REQUIRED_NUMBERS = ("collapse_error", "collapse_error_corrected", "entropy")
"""Per-state estimates every measured state has (the summaries average them)."""
_NUMBERS = ("collapse_error_estimate", "entropy_plugin", "entropy_miller_madow", "sample_coverage", "distinct_1",
            "distinct_2", "vendi", "mean_pairwise_cosine")  # fmt: skip
"""Per-state estimates a ``samples.jsonl`` record may hold (``null`` where undefined)."""


def sample_problem(rec: dict[str, Any]) -> str | None:
    """What is wrong with one ``samples.jsonl`` record, or ``None`` when it is well formed (the
    fields the audit's summaries read back on resume; see :func:`~collapse_probe.rollout.iter_jsonl`)."""
    for field in ("state_id", "mode", "status", "source", "kind"):
        if not isinstance(rec.get(field), str):
            return field_problem(field, "a string", rec.get(field))
    if rec.get("turn") is not None and not _whole(rec["turn"]):
        return field_problem("turn", "a whole number >= 0 or null", rec["turn"])
    if rec["status"] != "ok":
        return _row_problem(rec)
    return _classes_problem(rec) or _numbers_problem(rec) or _row_problem(rec)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _texts(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(t, str) for t in v)


def _classes_problem(rec: dict[str, Any]) -> str | None:
    """What is wrong with a measured record's replies and their classes (``n``, ``class_counts``,
    ``responses``, ``class_names``, ``class_examples``, ``labels``, ``n_empty``), or ``None``."""
    n, counts, responses = rec.get("n"), rec.get("class_counts"), rec.get("responses")
    if not isinstance(n, int) or not _whole(n) or n < 1:
        return field_problem("n", "a whole number >= 1", n)
    if not isinstance(counts, list) or not counts or not all(_whole(c) and c > 0 for c in counts) or sum(counts) != n:
        return field_problem("class_counts", f"whole numbers >= 1 summing to n = {n}", counts)
    if not isinstance(responses, list) or not _texts(responses) or len(responses) != n:
        return field_problem("responses", f"{n} reply texts", responses)
    if not _texts(rec.get("class_names")) or len(rec["class_names"]) != len(counts):
        return field_problem("class_names", f"{len(counts)} class names", rec.get("class_names"))
    examples = rec.get("class_examples")
    if not isinstance(examples, list) or len(examples) != len(counts) or not all(_texts(e) for e in examples):
        return field_problem("class_examples", f"{len(counts)} lists of example replies", examples)
    labels = rec.get("labels")
    if labels is not None and not (
        isinstance(labels, list) and len(labels) == n and all(_whole(x) and x < len(counts) for x in labels)
    ):
        return field_problem("labels", f"{n} class indices", labels)
    if "n_empty" in rec and not _whole(rec["n_empty"]):
        return field_problem("n_empty", "a whole number >= 0", rec["n_empty"])
    return None


def _numbers_problem(rec: dict[str, Any]) -> str | None:
    """What is wrong with a measured record's estimates and their intervals, or ``None``."""
    for field in _REQUIRED_NUMBERS:
        if not _number(rec.get(field)):
            return field_problem(field, "a number", rec.get(field))
    for field in _NUMBERS:
        if rec.get(field) is not None and not _number(rec[field]):
            return field_problem(field, "a number or null", rec[field])
    for field in ("collapse_error_ci95", "entropy_ci95"):
        v = rec.get(field)
        # an entropy that is a lower bound only has no upper end: [lo, null]
        open_top = field == "entropy_ci95" and isinstance(v, list) and len(v) == 2 and v[1] is None
        if v is not None and not (
            isinstance(v, list) and len(v) == 2 and _number(v[0]) and (open_top or _number(v[1]))
        ):
            return field_problem(
                field, "two numbers or null" + (" (or [number, null])" if field == "entropy_ci95" else ""), v
            )
    for field in ("hill", "exact", "decision", "vs"):
        if rec.get(field) is not None and not isinstance(rec[field], dict):
            return field_problem(field, "an object", rec[field])
    return None


def _row_problem(rec: dict[str, Any]) -> str | None:
    """What keeps the record's per-state row of ``results.json`` from its typed model (a field the
    checks above do not read, e.g. ``task_id`` or ``low_confidence`` of the wrong type), or ``None``."""
    from pydantic import ValidationError

    from collapse_probe.results._audit import StateRow
    from collapse_probe.results._base import describe_error

    try:
        StateRow.parse(state_row(rec))
    except ValidationError as exc:
        return describe_error(exc, StateRow, "the record's")
    return None
