"""Reward statistics over conversation records: one cross-play cell, one ``play`` run, the per-task
means that the transfer ratio and the gate compare."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from collapse_probe.core._records import ConversationRecord


@dataclass(frozen=True)
class Outcome:
    """What the reward statistics read of a conversation that is not one of collapse-probe's own
    records (a published run's): its task, its reward and whether it failed."""

    task_id: str
    reward: float | None
    """``None``: not scored."""
    infra_error: str | None = None
    """Why it is an infrastructure failure (counted, never scored), or ``None``."""
    success: bool | None = None
    rollout: int = 0


Scored = ConversationRecord | Outcome
"""A conversation the reward statistics read: a conversation record or a published conversation's outcome."""


class RewardStats(TypedDict):
    """Mean reward with its 95 % CI over tasks (``play``'s ``summary``, the audit's ``rollouts``)."""

    n: int
    """Scored conversations."""
    infra_failures: int
    mean_reward: float | None
    ci95: list[float] | None
    ci95_method: str | None
    n_tasks: int
    """Tasks with a scored conversation."""


class CellStats(RewardStats):
    """One cell of a cross-play matrix, as :func:`cell_summary` measures it (``results.json``'s ``cells``)."""

    policy: str
    simulator: str
    n_conversations: int
    ci95_note: str | None
    """Why there is no interval, or why the declared reward range was not used."""
    success_rate: float | None
    infra_rate: float | None
    infra_errors: dict[str, int]
    """Infrastructure failure message (first 200 characters) -> conversations that ended in it."""
    unscored: int
    """Conversations the arena could not judge (no reward, no infrastructure failure)."""
    task_rewards: dict[str, list[float]]
    """Task -> its scored conversations' rewards, in rollout order."""


def cell_summary(
    records: Sequence[Scored],
    policy: str,
    simulator: str,
    task_ids: Sequence[str],
    *,
    reward_range: tuple[float, float] | None = None,
) -> CellStats:
    """One matrix cell: mean reward and 95 % CI over scored conversations; infra failures counted apart.

    A conversation whose arena could not judge it (``reward`` ``None`` without an infra error) is
    counted as ``unscored`` and, like an infra failure, excluded from the mean.

    The mean pools the scored conversations; its CI treats tasks as the independent units (rollouts
    of one task are correlated) and, with the arena's declared ``reward_range``, is Korn–Graubard's,
    inside the range (:func:`~collapse_probe.metrics.transfer.cluster_mean_ci`). ``ci95_method``
    names the interval; ``ci95_note`` says why there is none (fewer than 2 tasks) or why the range
    was not used (a reward outside it).
    """
    scored = [r for r in records if r.infra_error is None and r.reward is not None]
    infra = [r for r in records if r.infra_error is not None]
    task_rewards: dict[str, list[float]] = {t: [] for t in task_ids}
    for r in sorted(scored, key=lambda r: r.rollout):
        if r.reward is not None:
            task_rewards.setdefault(r.task_id, []).append(float(r.reward))
    by_task = {t: v for t, v in task_rewards.items() if v}
    mean, lo, hi, method, note = _cell_interval(by_task, reward_range)
    errors: dict[str, int] = {}
    for r in infra:
        msg = (r.infra_error or "unknown")[:200]
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
        "success_rate": (sum(1 for r in scored if r.success is True) / len(scored)) if scored else None,
        "infra_failures": len(infra),
        "infra_rate": len(infra) / total if total else None,
        "infra_errors": errors,
        "unscored": total - len(scored) - len(infra),
        "task_rewards": task_rewards,
    }


def _cell_interval(
    by_task: dict[str, list[float]], reward_range: tuple[float, float] | None
) -> tuple[float | None, float | None, float | None, str | None, str | None]:
    """``(mean, lo, hi, method, note)`` of a cell's scored rewards, tasks as clusters (all ``None``
    without a scored task): the declared ``reward_range`` is dropped, with a note, when a reward lies
    outside it; sums that overflow leave the finite mean and no interval."""
    from collapse_probe.metrics.transfer import cluster_mean_ci

    if not by_task:
        return None, None, None, None, None
    note = None
    bounds = reward_range
    outside = [x for v in by_task.values() for x in v if bounds is not None and not bounds[0] <= x <= bounds[1]]
    if outside:
        note = f"reward {outside[0]:g} outside the declared range [{bounds[0]:g}, {bounds[1]:g}]: CI without the range"  # type: ignore[index]
        bounds = None
    with np.errstate(all="ignore"):
        est = cluster_mean_ci(by_task, reward_range=bounds)
    mean, lo, hi, method, note = est.value, est.lo, est.hi, est.method, note or est.note
    if not all(math.isfinite(x) for x in (mean, lo, hi) if x is not None):
        # rewards near the float limit (±1e308): their sum overflows, their mean does not
        mean = finite_mean([x for v in by_task.values() for x in v])
        lo = hi = None
        note = "rewards too large for a floating-point interval (their sums overflow): no interval"
    return mean, lo, hi, method, note


def finite_mean(values: Sequence[float]) -> float:
    """The mean of finite numbers without overflow: rewards of ±1e308 sum to infinity, but their
    mean, taken on values scaled by the largest magnitude, is finite.

    >>> finite_mean([1e308, 1e308])
    1e+308
    """
    top = max((abs(v) for v in values), default=0.0)
    if top == 0.0:
        return 0.0
    return top * (math.fsum(v / top for v in values) / len(values))


def summarize_rewards(records: Sequence[Scored], *, reward_range: tuple[float, float] | None = None) -> RewardStats:
    """Mean reward with a 95 % CI over scored conversations (tasks as clusters, inside the arena's
    declared ``reward_range``); infra failures counted, not scored."""
    c = cell_summary(records, "", "", [], reward_range=reward_range)
    return RewardStats(n=c["n"], infra_failures=c["infra_failures"], mean_reward=c["mean_reward"], ci95=c["ci95"],
                       ci95_method=c["ci95_method"], n_tasks=c["n_tasks"])  # fmt: skip


def task_means(cell: Any) -> dict[str, float]:
    """Per-task mean reward of a cell (tasks with no scored conversation left out)."""
    return {t: finite_mean(v) for t, v in cell["task_rewards"].items() if v}


def heldout_task_rewards(cells: Sequence[Any]) -> dict[str, float]:
    """Per-task held-out reward: the mean over the given cells of each cell's per-task mean.

    Only tasks scored in every cell are kept, so each task's value weighs every simulator equally.
    """
    per_cell = [task_means(c) for c in cells]
    if not per_cell:
        return {}
    common = [t for t in per_cell[0] if all(t in m for m in per_cell[1:])]
    return {t: finite_mean([m[t] for m in per_cell]) for t in common}


def conversations(cells: Sequence[Any], tasks: Sequence[str]) -> int:
    """Scored conversations of ``tasks`` in ``cells`` (the evidence behind their per-task means)."""
    return sum(len(c["task_rewards"].get(t) or []) for c in cells for t in tasks)
