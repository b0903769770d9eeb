"""``collapse_probe.integrations.monitor``: a live collapse monitor inside the RL trainers people use.

Wrap the simulator, hand the wrapped one to the trainer, close each step::

    from collapse_probe.integrations.monitor import CollapseMonitor

    monitor = CollapseMonitor(shadow_fraction=0.1, shadow_samples=8, arena=arena, out="runs/monitor")
    sim = monitor.wrap("smollm2")                 # shadow-samples N - 1 extra replies at 10% of turns
    ...                                           # the trainer rolls out against ``sim``
    row = monitor.end_step(step, rewards=rewards, groups=groups, policy_texts=openings)
    row["collapse_error"]["ci95"], row["alarms"]

Framework adapters, one module each, import their framework only when used:
:mod:`collapse_probe.integrations.monitor.trl` (``GRPOTrainer``), :mod:`collapse_probe.integrations.monitor.verl`,
:mod:`collapse_probe.integrations.monitor.openrlhf`, :mod:`collapse_probe.integrations.monitor.art`; our own trainers
(:mod:`collapse_probe.trainers.llm`) use the same monitor through the rollout engine's turn hook.
"""

from collapse_probe.integrations.monitor._config import TRACKERS, MonitorConfig
from collapse_probe.integrations.monitor._core import (
    MONITOR_ROWS,
    SCHEMA,
    Alarm,
    AlarmCallback,
    AlarmCallbackError,
    CollapseMonitor,
    MonitorRow,
    PooledInterval,
    ShadowState,
)
from collapse_probe.integrations.monitor._play import play_simulator_turns, simulator_reply
from collapse_probe.integrations.monitor._rng import rng_isolated
from collapse_probe.integrations.monitor._shadow import CallableSimulator, ShadowSimulator
from collapse_probe.integrations.monitor._views import (
    ArenaRewardView,
    FunctionRewardView,
    RewardView,
    meaning_partition,
    reward_view_for,
)

__all__ = [
    "MONITOR_ROWS",
    "SCHEMA",
    "TRACKERS",
    "Alarm",
    "AlarmCallback",
    "AlarmCallbackError",
    "ArenaRewardView",
    "CallableSimulator",
    "CollapseMonitor",
    "FunctionRewardView",
    "MonitorConfig",
    "MonitorRow",
    "PooledInterval",
    "RewardView",
    "ShadowSimulator",
    "ShadowState",
    "meaning_partition",
    "play_simulator_turns",
    "simulator_reply",
    "reward_view_for",
    "rng_isolated",
]
