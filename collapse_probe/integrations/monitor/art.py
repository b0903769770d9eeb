"""ART adapter: the collapse monitor around ``art.gather_trajectory_groups(after_each=…)``.

ART rollouts are the user's own async functions; inside them the simulator answers through
:func:`~collapse_probe.integrations.monitor.simulator_reply` with a simulator from :meth:`CollapseMonitor.wrap`
(shadow-sampled and recorded). :func:`after_each` is the gather hook that hands each finished group's
rewards and opening moves to the monitor and writes the monitor's latest figures into every
trajectory's ``metrics`` (ART averages trajectory metrics into ``model.log``): the same ``collapse/…``
keys in every trajectory, NaN before the first step has closed. :func:`end_step` closes the step after
the gather (tested with ART 0.5.23, which needs Python >= 3.12; another release is named in one
warning)::

    sim = monitor.wrap("smollm2")
    groups = await art.gather_trajectory_groups(
        (art.TrajectoryGroup(rollout(model, scenario, sim) for _ in range(8)) for scenario in batch),
        after_each=after_each(monitor),
    )
    row = await end_step(monitor, step)        # then: await model.train(groups), await model.log(groups)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from collapse_probe.integrations.monitor._adapters import check_version, fixed_scalars
from collapse_probe.integrations.monitor._core import CollapseMonitor, MonitorRow


def _opening(trajectory: Any) -> str | None:
    """The policy's first message of an ART trajectory (a ``Choice`` or an assistant message dict)."""
    for m in getattr(trajectory, "messages_and_choices", None) or []:
        if isinstance(m, dict):
            if m.get("role") == "assistant" and m.get("content"):
                return str(m["content"])
            continue
        msg = getattr(m, "message", None)
        content = getattr(msg, "content", None)
        if content:
            return str(content)
    return None


def after_each(
    monitor: CollapseMonitor, *, group_key: Callable[[Any, int], Any] | None = None
) -> Callable[[Any], Awaitable[Any]]:
    """The ``after_each`` hook: record a finished group's rewards and openings, tag its trajectories.

    Args:
        monitor: the monitor whose simulator the rollouts use.
        group_key: ``(group, index) -> key`` naming a group for the zero-std share (default: its index).
    """
    check_version("art")
    count = [0]

    async def hook(group: Any) -> Any:
        trajectories = list(getattr(group, "trajectories", group))
        key = group_key(group, count[0]) if group_key is not None else f"group{count[0]}"
        count[0] += 1
        rewards = [getattr(t, "reward", None) for t in trajectories]
        openings = [o for o in (_opening(t) for t in trajectories) if o]
        monitor.record_results(rewards, groups=[key] * len(rewards), policy_texts=openings or None)
        last = fixed_scalars(monitor, monitor.rows_[-1] if monitor.rows_ else None)
        for t in trajectories:
            metrics = getattr(t, "metrics", None)
            if isinstance(metrics, dict):
                metrics.update(last)
        return group

    return hook


async def end_step(monitor: CollapseMonitor, step: int) -> MonitorRow:
    """Close training step ``step`` (after the gather, before ``model.train``); returns the row."""
    return await monitor.aend_step(step)
