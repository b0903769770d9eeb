"""Views of the measured states beside the headline: ε by kind of state, and the decision ε."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from collapse_probe.audit._config import AuditConfig
from collapse_probe.audit._summary import mean_collapse_error


def _kind_order(kind: str) -> tuple[int, int, str]:
    if kind == "opening":
        return (0, 0, kind)
    if kind.startswith("turn "):
        return (1, int(kind.split()[1]) if kind.split()[1].isdigit() else 0, kind)
    if kind == "elicitation":
        return (2, 0, kind)
    return (3, 0, kind)


def kind_views(records: Sequence[dict[str, Any]], config: AuditConfig) -> dict[str, Any]:
    """``by_kind``: mean ε̂ with its CI per kind of state (opening, turn k, elicitation), and
    ``decision``: the mean collapse error of the benchmark's decision label (what the reward reads)
    over the states that ask for a decision, ``None`` where no state does; ``exact_outside_mass``: the
    mean probability outside the closed answer set at the states with an exact distribution."""
    ok = [r for r in records if r.get("status") == "ok"]
    by_kind: dict[str, Any] = {}
    for kind in sorted({r.get("kind") or r["source"] for r in ok}, key=_kind_order):
        rs = [r for r in ok if (r.get("kind") or r["source"]) == kind]
        e = mean_collapse_error([r["class_counts"] for r in rs], n_boot=config.n_boot, seed=config.seed)
        by_kind[kind] = {"collapse_error": e["estimate"], "ci95": e["ci95"], "n_states": len(rs),
                         "entropy": float(np.mean([r["entropy"] for r in rs]))}  # fmt: skip
    dec = [r["decision"] for r in ok if r.get("decision")]
    decision = None
    if dec:
        e = mean_collapse_error([d["class_counts"] for d in dec], n_boot=config.n_boot, seed=config.seed)
        decision = {"estimate": e["estimate"], "ci95": e["ci95"], "n_states": len(dec),
                    "partition": "decision label (what the reward reads)"}  # fmt: skip
    outside = [r["exact"]["outside_mass"] for r in ok if (r.get("exact") or {}).get("outside_mass") is not None]
    return {"by_kind": by_kind, "decision_collapse_error": decision,
            "exact_outside_mass": float(np.mean(outside)) if outside else None}  # fmt: skip
