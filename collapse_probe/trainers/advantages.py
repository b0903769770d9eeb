"""Group-relative advantages for REINFORCE over whole trajectories, shared by every trainer.

Each task is rolled out ``G`` times; the ``G`` trajectory rewards of one task form a *group*, and
every trajectory is credited with its reward z-scored within its group:

    A_i = (R_i - mean_g R) / (std_g R + eps),

where ``std_g`` is the **population** standard deviation of the group (``ddof=0``: divide by ``G``,
not ``G - 1``), so a group of two rewards ``{0, 1}`` has std 0.5 and advantages ``{-1, +1}``
(up to ``eps``). The advantage is applied to every turn of the trained side.

A group whose rewards are all equal (a *zero-std group*) carries no ranking signal: its advantages
are set to exactly 0 (not ``0 / eps`` rounding noise) and the group is flagged in the returned mask
so that callers can count how often the learning signal vanishes. Under a collapsed simulator this
happens often (the simulator-side reward contrast vanishes, so only the agent's own choices move
the reward), which is why trainers log the fraction of zero-std groups.

Simulator-side rewards for co-training live here too: adversarial ``1 - R``, cooperative ``R``, and
the curriculum reward ``exp(-(Var_g(R) - 0.25)^2 / 0.02)``, which is one number per *group*. A
group-constant reward has zero advantage within its group by construction, so the curriculum
reward is credited with :func:`batch_relative_advantages` — z-scored across the groups of a batch
(a batch-level baseline) — and every simulator turn of a group receives its group's advantage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np

from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.core._records import ConversationRecord

ZERO_STD_ATOL = 1e-12
"""A group is zero-std when ``max(R) - min(R) <= ZERO_STD_ATOL`` (exact ties up to float noise)."""

CURRICULUM_TARGET_VARIANCE = 0.25
"""Target group variance of the curriculum reward: the largest variance of a [0, 1] reward."""

CURRICULUM_WIDTH = 0.02
"""Width of the curriculum reward's Gaussian bump in variance units."""

SimulatorRewardMode = Literal["adversarial", "cooperative", "curriculum"]
SIMULATOR_REWARD_MODES: tuple[str, ...] = ("adversarial", "cooperative", "curriculum")


def _as_groups(rewards: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(rewards, dtype=float)
    if arr.ndim != 2:
        raise ConfigError(f"{name}: expected a 2-D array [groups, G], got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ConfigError(f"{name}: expected at least one group of at least one reward, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ConfigError(f"{name}: rewards must be finite numbers (found NaN or inf)")
    return arr


def group_relative_advantages(rewards: np.ndarray, eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Z-score each group of trajectory rewards (population std, ``ddof=0``).

    Args:
        rewards: array ``[groups, G]`` of trajectory rewards; row ``g`` holds the ``G`` rollouts of
            one task.
        eps: added to the group std before dividing, so near-ties do not blow up.

    Returns:
        ``(advantages, zero_std_mask)``: ``advantages`` has the shape of ``rewards``;
        ``zero_std_mask`` is a boolean array ``[groups]`` that is True where every reward of the
        group is equal (within :data:`ZERO_STD_ATOL`); those groups get advantage exactly 0.

    Raises:
        ConfigError: ``rewards`` is not 2-D, is empty, or holds NaN/inf; ``eps`` is negative.

    Example:
        >>> adv, zero = group_relative_advantages(np.array([[0.0, 1.0], [0.5, 0.5]]))
        >>> np.round(adv, 4).tolist(), zero.tolist()
        ([[-1.0, 1.0], [0.0, 0.0]], [False, True])
    """
    if not eps >= 0:
        raise ConfigError(f"eps must be >= 0, got {eps}")
    arr = _as_groups(rewards, "rewards")
    mean = arr.mean(axis=1, keepdims=True)
    std = arr.std(axis=1, ddof=0, keepdims=True)
    zero_std = np.ptp(arr, axis=1) <= ZERO_STD_ATOL
    denom = std + eps
    # Exact-zero groups with eps=0 would divide 0 by 0; they are overwritten below anyway.
    safe = np.where(zero_std[:, None], 1.0, denom)
    adv = (arr - mean) / safe
    adv[zero_std] = 0.0
    return adv, zero_std


def batch_relative_advantages(values: np.ndarray, eps: float = 1e-6) -> tuple[np.ndarray, bool]:
    """Z-score one number per group across the groups of a batch (a batch-level baseline).

    Used for group-constant rewards such as the curriculum reward, whose within-group advantage
    is identically zero.

    Args:
        values: array ``[groups]``, one reward per group.
        eps: added to the batch std (``ddof=0``) before dividing.

    Returns:
        ``(advantages, zero_std)``: advantages ``[groups]`` and whether the whole batch was tied
        (then every advantage is exactly 0).
    """
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ConfigError(f"values: expected a 1-D array [groups], got shape {arr.shape}")
    adv, zero = group_relative_advantages(arr[None, :], eps=eps)
    return adv[0], bool(zero[0])


def curriculum_reward(rewards: np.ndarray) -> np.ndarray:
    """Curriculum simulator reward per group: ``exp(-(Var_g(R) - 0.25)^2 / 0.02)``.

    ``Var_g`` is the population variance (``ddof=0``) of the group's trajectory rewards; the reward
    is largest when the group's outcomes are maximally split, i.e. when the simulator poses tasks
    the agent solves about half of the time.

    Args:
        rewards: array ``[groups, G]`` of trajectory rewards in [0, 1].

    Returns:
        Array ``[groups]``.

    Example:
        >>> curriculum_reward(np.array([[0.0, 1.0], [1.0, 1.0]])).round(4).tolist()
        [1.0, 0.0439]
    """
    arr = _as_groups(rewards, "rewards")
    var = arr.var(axis=1, ddof=0)
    return np.exp(-((var - CURRICULUM_TARGET_VARIANCE) ** 2) / CURRICULUM_WIDTH)


def simulator_advantages(rewards: np.ndarray, mode: str, eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Advantages of the simulator's turns for co-training, from the agent's trajectory rewards.

    Args:
        rewards: array ``[groups, G]`` of the agent's trajectory rewards ``R`` in [0, 1].
        mode: ``"adversarial"`` (simulator reward ``1 - R``), ``"cooperative"`` (``R``) or
            ``"curriculum"`` (group reward :func:`curriculum_reward`, credited across groups with
            :func:`batch_relative_advantages` and broadcast to every rollout of the group).
        eps: see :func:`group_relative_advantages`.

    Returns:
        ``(advantages [groups, G], zero_std_mask [groups])``. For the curriculum mode the mask is
        all True when the whole batch was tied and all False otherwise.
    """
    arr = _as_groups(rewards, "rewards")
    if mode == "adversarial":
        return group_relative_advantages(1.0 - arr, eps=eps)
    if mode == "cooperative":
        return group_relative_advantages(arr, eps=eps)
    if mode == "curriculum":
        adv, tied = batch_relative_advantages(curriculum_reward(arr), eps=eps)
        return np.repeat(adv[:, None], arr.shape[1], axis=1), np.full(arr.shape[0], tied)
    raise ConfigError(f"simulator reward mode must be one of {', '.join(SIMULATOR_REWARD_MODES)}; got {mode!r}")


def group_advantages_by_key(
    groups: dict[str, list[str]], rewards: dict[str, float], eps: float = 1e-6
) -> tuple[dict[str, float], float | None]:
    """Group-relative advantages per conversation key, and the share of zero-std groups.

    Each group (the ``G`` rollouts of one task) is z-scored on its scored conversations with the
    population std (``ddof=0``), ``A = (R - mean) / (std + eps)``; a group whose rewards are all equal
    (or that has a single scored conversation) gets ``A = 0`` and counts as zero-std. Conversations
    without a reward (infrastructure failures) get no advantage and do not enter their group.

    Args:
        groups: task id -> conversation keys of its group.
        rewards: conversation key -> trajectory reward (scored conversations only).
        eps: see :func:`~collapse_probe.trainers.advantages.group_relative_advantages`.

    Returns:
        ``(advantages, zero_std_share)``; the share is ``None`` when no group has a scored conversation.

    Example:
        >>> adv, share = group_advantages_by_key({"a": ["a0", "a1"], "b": ["b0", "b1"]},
        ...                                      {"a0": 0.0, "a1": 1.0, "b0": 0.5, "b1": 0.5})
        >>> {k: round(v, 4) for k, v in adv.items()}, share
        ({'a0': -1.0, 'a1': 1.0, 'b0': 0.0, 'b1': 0.0}, 0.5)
    """
    adv: dict[str, float] = {}
    n_groups = n_zero = 0
    for keys in groups.values():
        scored = [k for k in keys if k in rewards]
        if not scored:
            continue
        a, z = group_relative_advantages(np.array([[rewards[k] for k in scored]]), eps=eps)
        n_groups += 1
        n_zero += int(z[0])
        adv.update(zip(scored, (float(v) for v in a[0]), strict=True))
    return adv, (n_zero / n_groups if n_groups else None)


class ZeroStdCauses(TypedDict):
    """A step's zero-std groups by cause, as flat metrics of its ``metrics.jsonl`` record."""

    zero_std_all_success_share: float | None
    """Share of all groups whose conversations all succeeded."""
    zero_std_all_fail_share: float | None
    """Share of all groups whose conversations all failed."""
    zero_std_sim_caused_share: float | None
    """Share of the zero-std groups whose simulator said the same text, turn by turn."""


def zero_std_causes(
    groups: dict[str, list[str]], rewards: dict[str, float], simulator_turns: Mapping[str, list[str | None]]
) -> ZeroStdCauses:
    """The step's zero-std groups by cause, as flat metrics: ``zero_std_all_success_share`` and
    ``zero_std_all_fail_share`` (of all groups) and ``zero_std_sim_caused_share`` (of the zero-std groups:
    the simulator's messages of the group's conversations were the same text, turn by turn).
    ``simulator_turns``: conversation key -> the simulator's messages, in order.

    Example:
        >>> turns = {"a0": ["hi"], "a1": ["hi"], "b0": ["no"], "b1": ["yes"]}
        >>> zero_std_causes({"a": ["a0", "a1"], "b": ["b0", "b1"]}, {"a0": 1.0, "a1": 1.0, "b0": 0.0, "b1": 0.0}, turns)
        {'zero_std_all_success_share': 0.5, 'zero_std_all_fail_share': 0.5, 'zero_std_sim_caused_share': 0.5}
    """
    from collapse_probe.metrics.variance import zero_std_by_cause

    reward_groups, classes = [], []
    for keys in groups.values():
        scored = [k for k in keys if k in rewards]
        reward_groups.append([rewards[k] for k in scored])
        classes.append([simulator_turns.get(k, []) for k in scored])
    out = zero_std_by_cause(reward_groups, classes)
    return {
        "zero_std_all_success_share": out["all_success_share"],
        "zero_std_all_fail_share": out["all_fail_share"],
        "zero_std_sim_caused_share": out["simulator_caused_share"],
    }


def reward_groups(records: Sequence[ConversationRecord]) -> tuple[dict[str, list[str]], dict[str, float]]:
    """A step's groups: task id -> conversation keys in rollout order, and key -> reward of the scored
    conversations (an infrastructure failure has no reward and enters no group's statistics)."""
    groups: dict[str, list[str]] = {}
    rewards: dict[str, float] = {}
    for r in sorted(records, key=lambda r: (r.task_id, r.rollout)):
        groups.setdefault(r.task_id, []).append(r.key)
        if r.scored and r.reward is not None:
            rewards[r.key] = r.reward
    return groups, rewards
