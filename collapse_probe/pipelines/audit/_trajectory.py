"""On-policy trajectory: ε per turn, accumulated ε̄_H, the gradient-bias bound, the variance share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

import numpy as np

from collapse_probe.benchmarks import Arena, Task
from collapse_probe.core._records import INFRA_ERROR
from collapse_probe.metrics.trajectory import VarianceShareFields
from collapse_probe.models import GenerationRequest, derive_seed
from collapse_probe.pipelines.audit._config import AuditConfig
from collapse_probe.pipelines.audit._types import StateRecord
from collapse_probe.rollout import EngineConfig, RunDir, make_specs, run_conversations
from collapse_probe.simulators import Participant

# ----------------------------------------------------------------------------------------------- trajectory


class TurnMean(TypedDict):
    """Mean ε over the on-policy states of one simulator turn."""

    turn: int | None
    mean: float
    n_states: int


class TrajectorySummary(TypedDict):
    """``results.json``'s ``trajectory``: ε along the on-policy rollouts and the Theorem 3.2 bounds."""

    collapse_error_by_turn: list[TurnMean]
    accumulated_collapse_error: float
    """ε̄_H: the mean over rollouts of the sum of the per-turn ε̂."""
    accumulated_collapse_error_plugin: float
    """ε̄_H from the plug-in per-state ε."""
    tv_bound: float
    gradient_bias_bound: float
    """2·B·R_max·ε̄_H."""
    B: float
    R_max: float
    n_rollouts: int
    note: NotRequired[str]
    """Why the bounds are vacuous (ε̄_H ≥ 1)."""


class VarianceShareSummary(VarianceShareFields):
    """``results.json``'s ``variance_share``: the simulator's share of reward variance (Lemma 3.3) by nested
    resampling, and what it was measured over."""

    infra_failures: int
    agents: int
    """Agent seeds per task (``--variance-agents``)."""
    sims: int
    """Simulator draws per agent seed (``--variance-sims``)."""
    n_conversations: int
    reward_variance_bound: NotRequired[float]
    """R_max²·ε̄_H (with the audit's accumulated collapse error)."""
    within_le_bound: NotRequired[bool]


class NoVarianceShare(TypedDict):
    """``variance_share`` when there is none to measure, and why."""

    share: None
    note: str
    infra_failures: NotRequired[int]


def trajectory_summary(records: Sequence[StateRecord], config: AuditConfig) -> TrajectorySummary | None:
    """ε per turn, accumulated ε̄_H over the on-policy rollouts, and the gradient-bias bound."""
    from collapse_probe.metrics.trajectory import accumulated_collapse_error, gradient_bias_bound, tv_bound

    ok = [r for r in records if r.get("status") == "ok" and r["source"] == "on_policy"]
    if not ok:
        return None
    per_conv: dict[str | None, list[float]] = {}
    per_conv_plugin: dict[str | None, list[float]] = {}
    by_turn: dict[int | None, list[float]] = {}
    for r in sorted(ok, key=lambda r: (r["conversation"], r["turn"])):
        # the bias-aware per-state estimate, as in the headline: summing plug-in ε̂ over turns adds up
        # the plug-in's small-N bias towards "collapsed" once per turn
        eps = r.get("collapse_error_estimate")
        eps = r["collapse_error"] if eps is None else eps
        per_conv.setdefault(r["conversation"], []).append(eps)
        per_conv_plugin.setdefault(r["conversation"], []).append(r["collapse_error"])
        by_turn.setdefault(r["turn"], []).append(eps)
    eps_bar = accumulated_collapse_error(list(per_conv.values()))
    out: TrajectorySummary = {
        "collapse_error_by_turn": [
            {"turn": t, "mean": float(np.mean(v)), "n_states": len(v)} for t, v in sorted(by_turn.items())
        ],
        "accumulated_collapse_error": eps_bar,
        "accumulated_collapse_error_plugin": accumulated_collapse_error(list(per_conv_plugin.values())),
        "tv_bound": tv_bound(eps_bar),
        "gradient_bias_bound": gradient_bias_bound(eps_bar, config.bound_b, config.r_max),
        "B": config.bound_b,
        "R_max": config.r_max,
        "n_rollouts": len(per_conv),
    }
    if eps_bar is not None and eps_bar >= 1:
        out["note"] = (
            f"ε̄_H = {eps_bar:.3g} ≥ 1: the TV bound is vacuous (TV ≤ 1 always) and the gradient-bias bound "
            "is no tighter than the trivial one; the simulator is far from its mode along these rollouts"
        )
    return out


class _SeedOverride:
    """The policy with its own randomness fixed: turn t samples with ``derive_seed(agent_seed, t)``
    whatever the conversation seed, so resampled conversations differ only by the simulator's draws."""

    def __init__(self, inner: Any, agent_seed: int) -> None:
        self.inner, self.agent_seed, self.spec = inner, agent_seed, inner.spec

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[Any]:
        from dataclasses import replace

        fixed = []
        for r in requests:
            turn = sum(1 for m in r.messages if m.get("role") == "assistant")
            fixed.append(replace(r, params=replace(r.params, seed=derive_seed(self.agent_seed, turn))))
        return await self.inner.generate(fixed)


async def variance_share(arena: Arena, tasks: Sequence[Task], policy: Participant, sim: Participant,
                         config: AuditConfig, run_dir: RunDir | None, progress: bool,
                         eps_bar: float | None = None) -> VarianceShareSummary | NoVarianceShare:  # fmt: skip
    """Simulator-side share of reward variance (Lemma 3.3) by nested resampling.

    For every task and each of ``variance_agents`` agent seeds, the policy's random numbers are
    fixed (:class:`_SeedOverride`) and ``variance_sims`` conversations are run with different
    simulator seeds; the rewards of one (task, agent seed) form one inner group.
    """
    from collapse_probe.metrics.trajectory import reward_variance_bound, simulator_variance_share

    participants: dict[str, Participant] = {sim.label: sim}
    specs = []
    for g in range(config.variance_agents):
        label = f"{policy.label}#agent{g}"
        participants[label] = Participant(label, _SeedOverride(policy.model, derive_seed(config.rollout.seed, 7919 + g)),
                                          policy.mode, policy.vs_k)  # fmt: skip
        specs += make_specs(tasks, [label], [sim.label], config.variance_sims, config.rollout.seed + 1 + g)
    sub = RunDir(run_dir.path / "variance") if run_dir is not None else None
    records = await run_conversations(arena, specs, participants, run_dir=sub,
                                      config=EngineConfig(temperature=config.rollout.temperature, progress=progress))  # fmt: skip
    groups: dict[tuple[str, str], list[float]] = {}
    infra = 0
    for rec in records:
        if rec.status == INFRA_ERROR or rec.reward is None:
            infra += 1
            continue
        groups.setdefault((rec.policy, rec.task_id), []).append(rec.reward)
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    if not groups:
        return {"share": None, "note": "no agent prefix had 2 scored continuations", "infra_failures": infra}
    vs = simulator_variance_share(list(groups.values()), seed=config.rollout.seed, estimator="anova")
    out: VarianceShareSummary = {**vs.to_dict(), "infra_failures": infra, "agents": config.variance_agents,
                                 "sims": config.variance_sims, "n_conversations": len(records)}  # fmt: skip
    if eps_bar is not None:
        # Lemma 3.3 with ε_H estimated by the accumulated collapse error of the audited rollouts.
        out["reward_variance_bound"] = reward_variance_bound(eps_bar, config.r_max)
        out["within_le_bound"] = bool(vs.within <= out["reward_variance_bound"])
    return out
