"""Reward statistics over conversation records: one cross-play cell, or one ``play`` run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collapse_probe.rollout.records import INFRA_ERROR


def cell_summary(
    records: Sequence[dict[str, Any]],
    policy: str,
    simulator: str,
    task_ids: Sequence[str],
    *,
    reward_range: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """One matrix cell: mean reward and 95 % CI over scored conversations; infra failures counted apart.

    A conversation whose arena could not judge it (``reward`` ``None`` without an infra error) is
    counted as ``unscored`` and, like an infra failure, excluded from the mean.

    The mean pools the scored conversations; its CI treats tasks as the independent units (rollouts
    of one task are correlated) and, with the arena's declared ``reward_range``, is Korn–Graubard's,
    inside the range (:func:`~collapse_probe.metrics.transfer.cluster_mean_ci`). ``ci95_method``
    names the interval; ``ci95_note`` says why there is none (fewer than 2 tasks) or why the range
    was not used (a reward outside it).
    """
    from collapse_probe.metrics.transfer import cluster_mean_ci

    scored = [r for r in records if r.get("status") != INFRA_ERROR and r.get("reward") is not None]
    infra = [r for r in records if r.get("status") == INFRA_ERROR]
    task_rewards: dict[str, list[float]] = {t: [] for t in task_ids}
    for r in sorted(scored, key=lambda r: int(r.get("rollout", 0))):
        task_rewards.setdefault(str(r["task_id"]), []).append(float(r["reward"]))
    by_task = {t: v for t, v in task_rewards.items() if v}
    mean = lo = hi = method = note = None
    if by_task:
        bounds = reward_range
        outside = [x for v in by_task.values() for x in v if bounds is not None and not bounds[0] <= x <= bounds[1]]
        if outside:
            note = (
                f"reward {outside[0]:g} outside the declared range [{bounds[0]:g}, {bounds[1]:g}]: CI without the range"  # type: ignore[index]
            )
            bounds = None
        est = cluster_mean_ci(by_task, reward_range=bounds)
        mean, lo, hi, method, note = est.value, est.lo, est.hi, est.method, note or est.note
    errors: dict[str, int] = {}
    for r in infra:
        msg = str(r.get("infra_error") or "unknown")[:200]
        errors[msg] = errors.get(msg, 0) + 1
    total = len(records)
    return {
        "policy": policy,
        "simulator": simulator,
        "n": len(scored),
        "n_conversations": total,
        "n_tasks": len(by_task),
        "mean_reward": mean,
        "ci95": [lo, hi] if lo is not None and hi is not None else None,
        "ci95_method": method,
        "ci95_note": note,
        "success_rate": (sum(1 for r in scored if r.get("success") is True) / len(scored)) if scored else None,
        "infra_failures": len(infra),
        "infra_rate": len(infra) / total if total else None,
        "infra_errors": errors,
        "unscored": total - len(scored) - len(infra),
        "task_rewards": task_rewards,
    }
