"""Reward statistics over conversation records: one cross-play cell, or one ``play`` run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collapse_probe.rollout.records import INFRA_ERROR


def cell_summary(
    records: Sequence[dict[str, Any]], policy: str, simulator: str, task_ids: Sequence[str]
) -> dict[str, Any]:
    """One matrix cell: mean reward and 95 % CI over scored conversations; infra failures counted apart.

    A conversation whose arena could not judge it (``reward`` ``None`` without an infra error) is
    counted as ``unscored`` and, like an infra failure, excluded from the mean.
    """
    from collapse_probe.metrics.transfer import mean_ci

    scored = [r for r in records if r.get("status") != INFRA_ERROR and r.get("reward") is not None]
    infra = [r for r in records if r.get("status") == INFRA_ERROR]
    rewards = [float(r["reward"]) for r in scored]
    task_rewards: dict[str, list[float]] = {t: [] for t in task_ids}
    for r in sorted(scored, key=lambda r: int(r.get("rollout", 0))):
        task_rewards.setdefault(str(r["task_id"]), []).append(float(r["reward"]))
    est = mean_ci(rewards)
    mean, lo, hi = est.value, est.lo, est.hi
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
        "mean_reward": mean,
        "ci95": [lo, hi] if lo is not None and hi is not None else None,
        "success_rate": (sum(1 for r in scored if r.get("success") is True) / len(scored)) if scored else None,
        "infra_failures": len(infra),
        "infra_rate": len(infra) / total if total else None,
        "infra_errors": errors,
        "unscored": total - len(scored) - len(infra),
        "task_rewards": task_rewards,
    }
