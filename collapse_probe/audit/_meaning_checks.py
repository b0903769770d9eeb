"""Whether the meaning view's classes can carry the verdict: the domain its partition is validated on,
and whether exact text would decide the other way.

An offline meaning partition is a model of what replies mean, fitted and checked on one kind of text
(the customer-service ``disclosure`` partition on real τ2 / τ-bench user-simulator replies; the
embedding partition's threshold on P4G persuadee replies). Two checks guard the meaning view:

- **domain**: a partition that knows its domain (``in_domain`` / ``domain_similarity``) says how many
  of the audited states' replies lie in it; when fewer than :data:`MIN_IN_DOMAIN_SHARE` of them do,
  the classes are outside what was validated and the meaning view is INCONCLUSIVE;
- **flip**: the exact-text partition is measured on the same replies; when exact text and the
  offline meaning partition give opposite verdicts (one interval below ε*, the other above), the
  verdict rests entirely on which replies the partition merges, so the meaning view is INCONCLUSIVE.

Either way the meaning view keeps its estimate and interval, records the label it would have had
(``partition_label``) and says why and what to run: ``--judge MODEL`` (the rubric's definition of a
meaning class, asked of an LLM), which both checks trust.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MIN_IN_DOMAIN_SHARE = 0.5
"""The share of measured states whose replies must lie in the partition's validated domain."""


def meaning_checks(records: Sequence[dict[str, Any]], partition: str, seed: int, star: float) -> dict[str, Any]:
    """``summary.meaning_checks``: the partition's validated domain, the states in it, and the
    exact-text view of the same replies (estimate, interval, label against ``star``)."""
    from collapse_probe.audit._verdict import view_label
    from collapse_probe.metrics.estimators import mean_collapse_error_interval
    from collapse_probe.metrics.partitioners import ExactPartitioner, class_counts, partitioner_class

    ok = [r for r in records if r.get("status") == "ok" and r.get("responses")]
    cls = partitioner_class(partition)
    out: dict[str, Any] = {"partition": partition, "validated_on": getattr(cls, "validated_on", None),
                           "states_in_domain": None, "states_checked": 0, "exact": None}  # fmt: skip
    sims = [r["domain_similarity"] for r in ok if isinstance(r.get("domain_similarity"), int | float)]
    if sims and hasattr(cls, "domain_threshold"):
        out["states_checked"] = len(sims)
        out["states_in_domain"] = sum(1 for s in sims if s >= cls.domain_threshold())
        out["domain_threshold"] = cls.domain_threshold()
    if ok:
        exact = ExactPartitioner()
        counts = [class_counts(exact.partition(r["responses"])) for r in ok]
        iv = mean_collapse_error_interval(counts, seed=seed).to_dict()
        out["exact"] = {"estimate": iv.get("estimate"), "ci95": iv.get("ci95"),
                        "label": view_label(iv.get("estimate"), iv.get("ci95"), star), "n_states": len(ok)}  # fmt: skip
    return out


def judge_advice(partition: str) -> str:
    return "rerun with --judge MODEL (an LLM classes the replies by the rubric's definition of a meaning)"


def checked_meaning_view(view: dict[str, Any], checks: dict[str, Any] | None, judged: bool) -> dict[str, Any]:
    """The meaning view after the domain and flip checks (unchanged for a judge partition, which
    applies the definition itself, and for views that are not COLLAPSED / NOT COLLAPSED)."""
    from collapse_probe.audit._verdict import COLLAPSED, INCONCLUSIVE, NOT_COLLAPSED

    view = dict(view)
    view["validated_on"] = (checks or {}).get("validated_on") if not judged else "the rubric's definition (judge)"
    if not checks or judged or view.get("label") not in (COLLAPSED, NOT_COLLAPSED):
        return view
    reasons = []
    n, k = checks.get("states_checked") or 0, checks.get("states_in_domain")
    if n and k is not None and k < MIN_IN_DOMAIN_SHARE * n:
        reasons.append(f"the replies of {n - k} of {n} states are outside the domain the {checks['partition']} "
                       f"partition is validated on ({checks.get('validated_on')})")  # fmt: skip
    ex = checks.get("exact") or {}
    flips = {COLLAPSED: NOT_COLLAPSED, NOT_COLLAPSED: COLLAPSED}
    if ex.get("label") == flips[view["label"]]:
        lo, hi = ex["ci95"]
        reasons.append(f"exact text reads {ex['label']} (ε̂ {ex['estimate']:.3f} [{lo:.3f}, {hi:.3f}]) where the "
                       f"{checks['partition']} classes read {view['label']}: the verdict rests on which replies the "
                       "partition merges")  # fmt: skip
    if reasons:
        view.update(partition_label=view["label"], label=INCONCLUSIVE,
                    reason="; ".join(reasons) + f"; {judge_advice(checks['partition'])}")  # fmt: skip
    return view
