"""The per-state rows of an audit's ``results.json``."""

from __future__ import annotations

from typing import Any


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
