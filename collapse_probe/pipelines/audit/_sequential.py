"""The sequential audit: replies are drawn in looks (20, 40, 60, … per state) until each view's
verdict is decisive by the exact bounds of :mod:`collapse_probe.metrics._exact` or ``--samples`` (the
cap) is reached. A look's error share depends on its number alone, so a rerun with a raised cap makes
the same looks on the cached replies and continues the same test."""

from __future__ import annotations

from collections.abc import Sequence

from collapse_probe.metrics._exact import LookSchedule, SequentialVerdict, sequential_verdict
from collapse_probe.pipelines.audit._types import SequentialSummary, SequentialViewRecord, StateRecord

VIEWS = ("meaning", "reward")

SCHEDULE = LookSchedule()
"""The audit's looks and error shares (each side's 0.025 of a 95 % verdict)."""


def schedule_text(schedule: LookSchedule = SCHEDULE) -> str:
    """The spending rule in words (what ``results.json`` and the report state)."""
    front = ", ".join(str(schedule.replies_at(k)) for k in range(1, schedule.front_looks + 1))
    return (
        f"looks at {front} replies per state, then every {schedule.step}; look k spends "
        f"{schedule.alpha_side:g} × {schedule.front / schedule.front_looks:g} of each side's error for k ≤ "
        f"{schedule.front_looks}, then {schedule.alpha_side:g} × {1 - schedule.front:.2g} × 2^-(k-{schedule.front_looks}) "
        "(shares fixed by k, not by the cap: a raised cap continues the same test)"
    )


def look_plan(cap: int, schedule: LookSchedule = SCHEDULE) -> list[int]:
    """Replies per state to draw at each round: the looks up to the cap, or the cap alone below the
    first look (which then decides nothing)."""
    return schedule.looks(cap) or [cap]


def label_sequences(records: Sequence[StateRecord], view: str) -> list[list[int]] | None:
    """Per measured state, its replies' classes in sample-index order in one view (``None``: the view
    has no per-reply classes here, e.g. records written before they were kept)."""
    seqs: list[list[int]] = []
    for r in records:
        if r.get("status") != "ok":
            continue
        if view == "meaning":
            labels = r.get("labels")
        else:
            rv = r.get("reward_view")
            if not rv:
                continue  # the reward does not read this state
            labels = rv.get("labels")
        if labels is None:
            return None
        seqs.append([int(x) for x in labels])
    return seqs or None


def drawn_per_state(records: Sequence[StateRecord]) -> int:
    """Replies asked for per state (kept plus empty ones dropped), the smallest over measured states."""
    ok = [int(r.get("n") or 0) + int(r.get("n_empty") or 0) for r in records if r.get("status") == "ok"]
    return min(ok, default=0)


def view_tests(
    records: Sequence[StateRecord], cap: int, epsilon_star: float, schedule: LookSchedule = SCHEDULE
) -> dict[str, SequentialVerdict]:
    """The sequential test of each view that has per-reply classes."""
    drawn = drawn_per_state(records)
    out: dict[str, SequentialVerdict] = {}
    for view in VIEWS:
        seqs = label_sequences(records, view)
        if seqs is not None:
            out[view] = sequential_verdict(seqs, cap, epsilon_star, schedule, drawn=drawn)
    return out


def all_decided(records: Sequence[StateRecord], cap: int, epsilon_star: float) -> bool:
    """Whether every view with classes is decisive (the audit then draws no more)."""
    tests = view_tests(records, cap, epsilon_star)
    return bool(tests) and all(t.decision is not None for t in tests.values())


def _view_record(t: SequentialVerdict, epsilon_star: float) -> SequentialViewRecord:
    return {
        "decision": t.decision,
        "stop_reason": t.stop_reason,
        "reason": t.reason_text(epsilon_star),
        "replies_per_state": t.replies_per_state,
        "lower": t.looks[-1].bounds.lower if t.looks else None,
        "upper": t.looks[-1].bounds.upper if t.looks else None,
        "looks": [
            {
                "look": lk.index,
                "replies_per_state": lk.replies_per_state,
                "alpha_side": lk.alpha_side,
                "lower": lk.bounds.lower,
                "upper": lk.bounds.upper,
                "modal_replies": lk.bounds.modal_replies,
                "modal_trials": lk.bounds.modal_trials,
                "hits": lk.bounds.hits,
                "hit_trials": lk.bounds.hit_trials,
                "decision": lk.decision,
            }
            for lk in t.looks
        ],
    }


def sequential_summary(records: Sequence[StateRecord], cap: int, epsilon_star: float) -> SequentialSummary:
    """``summary.sequential``: the rule, the cap, the replies drawn and each view's looks and stop."""
    tests = view_tests(records, cap, epsilon_star)
    return {
        "cap": cap,
        "drawn_per_state": drawn_per_state(records),
        "rule": schedule_text(),
        "views": {view: _view_record(t, epsilon_star) for view, t in tests.items()},
    }


def looks_line(sequential: SequentialSummary | None) -> str | None:
    """One terminal line: each view's looks (ε̄ bounds at each) and why the audit stopped."""
    if not sequential or not sequential.get("views"):
        return None
    parts = []
    for view, v in sequential["views"].items():
        looks = "; ".join(
            f"N = {lk['replies_per_state']}: ε̄ in [{lk['lower']:.3f}, {lk['upper']:.3f}]"
            + (f" → {lk['decision']}" if lk["decision"] else "")
            for lk in v["looks"]
        )
        parts.append(f"{view}: {looks or 'no look'} ({v['reason']})")
    return (
        f"sequential verdict (exact bounds, cap {sequential['cap']} replies per state, "
        f"{sequential['drawn_per_state']} drawn): " + " | ".join(parts)
    )
