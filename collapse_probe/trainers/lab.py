"""The collapse lab: an exact, fast tabular arena where simulator collapse and its fixes meet theory.

**Arena.** Tasks ``x`` (uniform), agent strategies ``y``, user behaviours ``u``, ``H`` user turns.
The agent picks one strategy per conversation from a softmax table ``pi(y|x) = softmax(theta[x])``;
at each turn the user answers with a behaviour ``u_t``; the terminal trajectory reward is the
mean of the turn rewards, ``R = (1/H) sum_t r(x, y, u_t)`` in [0, 1] (chosen over "reward at the
last turn" because every turn then matters and ``J`` is linear in the per-turn marginals).
Three kinds of strategy (see :mod:`collapse_probe.trainers._lab_world` for the ranges):

- *exploit* strategy ``k``: reward ~0.95 when the user answers with behaviour ``k``, ~0.05 otherwise;
- *robust*: ~0.70 under any behaviour;
- *weak*: ~0.05 under any behaviour.

With the default 8 strategies and 4 behaviours: 4 exploit, 3 robust and 1 weak strategy.

Real users answer i.i.d. from ``rho(u|x)``, which puts mass ``(4, 3, 2, 1)/10`` on the four
behaviours (task-specific order): their most common behaviour has probability 0.4, so on real
users an exploit strategy earns at most ``0.4 * 0.95 + 0.6 * 0.05 ~ 0.41`` while a robust one
earns ~0.70. The *frozen single simulator* is real users with their mode sharpened:
``phi(mode) = 0.95`` (``mode_concentration``), the remaining 0.05 spread like ``rho``.

**Why collapse shows up (principled, not tuned).** Under the single simulator the exploit
strategy of the simulator's mode earns ~0.90 > robust ~0.70 > weak/other exploits ~0.1.
Group-relative REINFORCE climbs that ranking. (i) First, the big gap between the low-reward
strategies and the rest removes the weak and off-mode strategies; both survivors (mode-exploit and
robust) beat them on real users, so the held-out reward *rises*. (ii) Once the batch mean passes
the robust reward, robust strategies have negative advantage and the mass moves to the
mode-exploit strategy, which on real users earns ~0.41 < 0.70: the held-out reward *peaks and
falls* while the training reward keeps rising, and the strategy entropy collapses towards 0
(below a quarter of ``log S``) — it stops only when whole groups pick the exploit and their
std is zero. (iii) Z-scored advantages remove the reward scale: a group with a fraction ``q`` of
exploit rollouts has ``sum_{i: exploit} A_i / G <= sqrt(q (1 - q))`` (``sum A = 0``,
``sum A^2 = G``), so the exploit-vs-rest log-odds ``z`` move by at most about
``2 lr sqrt(p (1 - p)) = lr / cosh(z / 2)`` per step — within a factor 1.5 of constant for
``z`` in [-1, 2]. The log-odds therefore grow about *linearly* in steps in that middle phase (mass
off the exploit decays geometrically: Corollary 3.5), at a rate at most ``lr``, and slow down only
when groups saturate. Vanilla (unnormalised) policy gradient would instead slow down as
``p (1 - p)``; the linear growth is a signature of group-relative normalisation.

**Why the fixes fix it.** Each fix changes the *user distribution the policy trains against*
so that the mode-exploit strategy no longer beats the robust one in expectation: VS samples
from ``(1 - vs_mixture) rho + vs_mixture phi_single`` (mode mass ~0.46, exploit ~0.46 < 0.70);
the ensemble rotates three simulators collapsed onto three *different* behaviours (an exploit
wins at most one step in three); the persona simulator draws a persona ``p ~ rho`` per
conversation and collapses onto ``p`` (its per-turn marginal is ~``rho``); adversarial
co-training learns to answer an exploit with a behaviour it does not exploit, and population
co-training trains against a pool of such snapshots. Cooperative co-training and self-play learn
the opposite (answer with what the agent exploits) and are expected not to help.

**Theorem 3.2 at every logged step.** For the *effective training simulator* (the user-turn
distribution of a rollout, marginalised over what the agent cannot see: persona, ensemble
rotation, pool draw) the lab enumerates all ``B**H`` behaviour sequences and computes exactly
``TV(P_phi, P_mode)``, the accumulated collapse error ``eps_bar_H = E[sum_t eps_phi(s_t)]``, and
the exact gradients of ``J_phi`` and ``J_mode`` with respect to the logit table, and checks
``TV <= eps_bar_H`` and ``||grad J_phi - grad J_mode|| <= 2 B R_max eps_bar_H`` with
``B = sqrt(2)`` (softmax table) and ``R_max`` the largest turn reward.

**Simulator training.** A trainable simulator is a softmax table ``theta_phi[x, y, t, u]``
initialised at the collapsed single simulator and updated by REINFORCE on its own turns of the
same rollouts, with group-relative advantages of its reward: adversarial ``1 - R``, cooperative
``R``, or curriculum ``exp(-(Var_g(R) - 0.25)^2 / 0.02)``. The curriculum reward is constant
within a group, so its within-group advantage is identically zero; it is credited across the
tasks of the batch instead (a batch-level baseline,
:func:`collapse_probe.trainers.advantages.batch_relative_advantages`). When the turns were played by
a lagged snapshot (population pool, self-play) the live table is updated with per-turn importance
weights truncated at 1 (V-trace style), ``min(1, phi_live(u)/phi_played(u))``. Population
co-training pushes a snapshot of the live table into a FIFO pool of ``pool_size`` every
``snapshot_every`` steps and draws one pool member per batch. Self-play: one jointly trained
table holds both sides; its user half is trained on the shared reward ``R`` (one model, one
objective) and the copy that plays the user is a snapshot refreshed every ``snapshot_every`` steps.
"""

from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from collapse_probe.errors import ConfigError
from collapse_probe.trainers._lab_world import (
    SCORE_NORM_BOUND,
    ExactAnalysis,
    LabWorld,
    TabularSimulator,
    analyse,
    make_world,
    modal_distribution,
    policy_entropy,
    softmax,
    trajectory_rewards,
)
from collapse_probe.trainers.advantages import (
    SIMULATOR_REWARD_MODES,
    group_relative_advantages,
    simulator_advantages,
)

SCHEMA = "collapse-probe/lab/v1"
METHODS: tuple[str, ...] = ("single", "vs", "ensemble", "persona", "cotrain", "population", "selfplay")
"""Training methods, in the order ``--compare`` runs them."""

BOUND_RTOL = 1e-9
"""Relative slack for floating-point rounding when checking the Theorem 3.2 bounds."""


@dataclass
class LabConfig:
    """Configuration of one collapse-lab run. Every field is validated in ``__post_init__``."""

    method: str = "single"
    """One of :data:`METHODS`."""
    n_tasks: int = 8
    """Number of tasks ``x``."""
    n_strategies: int = 8
    """Number of agent strategies ``y``; must exceed ``n_behaviours`` (one exploit per behaviour,
    then robust and weak strategies)."""
    n_behaviours: int = 4
    """Number of user behaviours ``u``."""
    horizon: int = 3
    """User turns ``H`` per conversation (exact analysis enumerates ``n_behaviours**horizon`` sequences)."""
    group_size: int = 8
    """Rollouts ``G`` per task per step (one group-relative advantage group)."""
    lr: float = 0.1
    """Step size of the policy's REINFORCE update on the logit table."""
    sim_lr: float = 0.5
    """Step size of a trainable simulator's REINFORCE update (cotrain, population, selfplay)."""
    steps: int = 300
    """Policy updates."""
    seed: int = 0
    """Seed of the arena draw and of all sampling."""
    cotrain_reward: str = "adversarial"
    """Simulator reward for ``cotrain``/``population``: adversarial, cooperative or curriculum."""
    pool_size: int = 5
    """FIFO pool size of ``population`` (the K most recent co-trained snapshots)."""
    snapshot_every: int = 10
    """Steps between simulator snapshots (population pool, self-play user copy)."""
    mode_concentration: float = 0.95
    """Mass the frozen single simulator (and each ensemble member and persona) puts on its mode."""
    vs_mixture: float = 0.1
    """Weight of the collapsed simulator left in the Verbalized-Sampling distribution
    ``(1 - vs_mixture) rho + vs_mixture phi_single``."""
    ensemble_size: int = 3
    """Frozen simulators rotated by ``ensemble`` (collapsed onto the top-k behaviours of ``rho``)."""
    heldout_concentration: float = 0.7
    """Mass each held-out simulator (one per behaviour) puts on its mode."""
    eval_every: int = 5
    """Log the exact metrics every this many steps (and at step 0 and the last step)."""
    adv_eps: float = 1e-6
    """``eps`` of the group-relative advantage."""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {', '.join(METHODS)}; got {self.method!r}")
        if self.cotrain_reward not in SIMULATOR_REWARD_MODES:
            raise ConfigError(
                f"cotrain_reward must be one of {', '.join(SIMULATOR_REWARD_MODES)}; got {self.cotrain_reward!r}"
            )
        for name in (
            "n_tasks",
            "n_behaviours",
            "horizon",
            "group_size",
            "steps",
            "pool_size",
            "snapshot_every",
            "ensemble_size",
            "eval_every",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1; got {value!r}")
        if self.n_behaviours < 2:
            raise ConfigError(f"n_behaviours must be >= 2 (a mode and somewhere else); got {self.n_behaviours}")
        if not isinstance(self.n_strategies, int) or self.n_strategies <= self.n_behaviours:
            raise ConfigError(
                f"n_strategies must be an integer > n_behaviours ({self.n_behaviours}); got {self.n_strategies!r}"
            )
        if self.n_behaviours**self.horizon > 4096:
            raise ConfigError(
                f"n_behaviours**horizon must be <= 4096 for exact enumeration; got {self.n_behaviours}**{self.horizon}"
            )
        if self.ensemble_size > self.n_behaviours:
            raise ConfigError(f"ensemble_size must be <= n_behaviours ({self.n_behaviours}); got {self.ensemble_size}")
        for name in ("lr", "sim_lr"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a finite number > 0; got {value!r}")
        for name in ("mode_concentration", "heldout_concentration"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 1.0 / self.n_behaviours < value <= 1.0):
                raise ConfigError(
                    f"{name} must be in (1/n_behaviours, 1] = ({1 / self.n_behaviours:.3g}, 1]; got {value!r}"
                )
        if not (isinstance(self.vs_mixture, int | float) and 0.0 <= self.vs_mixture <= 1.0):
            raise ConfigError(f"vs_mixture must be in [0, 1]; got {self.vs_mixture!r}")
        if not (isinstance(self.adv_eps, int | float) and self.adv_eps >= 0):
            raise ConfigError(f"adv_eps must be >= 0; got {self.adv_eps!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ConfigError(f"seed must be an integer; got {self.seed!r}")


@dataclass
class LabResult:
    """Per-logged-step metrics of one run; all exact expectations unless named ``sampled_*``."""

    config: LabConfig
    steps: list[int] = field(default_factory=list)
    """Policy updates done before the metrics of this entry were computed."""
    train_reward: list[float] = field(default_factory=list)
    """``J_phi(pi)`` under the effective training simulator."""
    heldout_reward: list[float] = field(default_factory=list)
    """``J(pi)`` under real users ``rho``."""
    heldout_sim_reward: list[float] = field(default_factory=list)
    """``J(pi)`` averaged over the held-out simulators (one per behaviour, ``heldout_concentration`` on it)."""
    policy_entropy: list[float] = field(default_factory=list)
    """Mean over tasks of ``H(pi(.|x))`` in nats."""
    collapse_error: list[float] = field(default_factory=list)
    """``E[eps_phi]`` per visited simulator turn of the effective training simulator."""
    accumulated_collapse_error: list[float] = field(default_factory=list)
    """``eps_bar_H = E[sum_t eps_phi(s_t)]``; the Theorem 3.2 TV bound."""
    tv: list[float] = field(default_factory=list)
    """``TV(P_phi, P_mode)`` of the trajectory distributions."""
    tv_bound: list[float] = field(default_factory=list)
    """``eps_bar_H``."""
    grad_gap: list[float] = field(default_factory=list)
    """``||grad J_phi - grad J_mode||``."""
    grad_bound: list[float] = field(default_factory=list)
    """``2 B R_max eps_bar_H``."""
    exploit_log_odds: list[float] = field(default_factory=list)
    """Mean over tasks of ``log pi(y*|x) / (1 - pi(y*|x))`` with ``y*`` the best strategy under the
    mode-only simulator (the mode-exploit strategy)."""
    sampled_train_reward: list[float] = field(default_factory=list)
    """Mean sampled trajectory reward of the batches since the previous entry (``nan`` at step 0)."""
    zero_std_fraction: list[float] = field(default_factory=list)
    """Fraction of policy groups with zero reward std since the previous entry (``nan`` at step 0)."""
    final_policy: list[list[float]] = field(default_factory=list)
    """``pi(y|x)`` after the last step."""
    strategy_kind: list[str] = field(default_factory=list)
    """Kind of each strategy: exploit, robust or weak."""

    @property
    def tv_bound_holds(self) -> bool:
        return all(t <= b * (1 + BOUND_RTOL) + BOUND_RTOL for t, b in zip(self.tv, self.tv_bound, strict=True))

    @property
    def grad_bound_holds(self) -> bool:
        return all(g <= b * (1 + BOUND_RTOL) + BOUND_RTOL for g, b in zip(self.grad_gap, self.grad_bound, strict=True))

    def summary(self) -> dict[str, float]:
        """End-of-run numbers: held-out peak and end, entropy ratio, final rewards."""
        peak = int(np.argmax(self.heldout_reward))
        return {
            "train_reward_start": self.train_reward[0],
            "train_reward_end": self.train_reward[-1],
            "heldout_reward_start": self.heldout_reward[0],
            "heldout_reward_peak": self.heldout_reward[peak],
            "heldout_reward_peak_step": self.steps[peak],
            "heldout_reward_end": self.heldout_reward[-1],
            "heldout_sim_reward_end": self.heldout_sim_reward[-1],
            "policy_entropy_start": self.policy_entropy[0],
            "policy_entropy_end": self.policy_entropy[-1],
            "entropy_ratio": self.policy_entropy[-1] / self.policy_entropy[0],
            "collapse_error_end": self.collapse_error[-1],
            "max_tv_over_bound": max(t / b if b > 0 else 0.0 for t, b in zip(self.tv, self.tv_bound, strict=True)),
            "max_grad_gap_over_bound": max(
                g / b if b > 0 else 0.0 for g, b in zip(self.grad_gap, self.grad_bound, strict=True)
            ),
        }

    def to_json(self) -> dict[str, Any]:
        """The results object (schema ``collapse-probe/lab/v1``), ready for :func:`json.dumps`.

        ``nan`` entries are written as ``None`` so the output is strict JSON.
        """

        def clean(values: list[float]) -> list[float | None]:
            return [None if isinstance(v, float) and math.isnan(v) else v for v in values]

        return {
            "schema": SCHEMA,
            "method": self.config.method,
            "config": asdict(self.config),
            "steps": list(self.steps),
            "train_reward": clean(self.train_reward),
            "heldout_reward": clean(self.heldout_reward),
            "heldout_sim_reward": clean(self.heldout_sim_reward),
            "policy_entropy": clean(self.policy_entropy),
            "collapse_error": clean(self.collapse_error),
            "accumulated_collapse_error": clean(self.accumulated_collapse_error),
            "tv": clean(self.tv),
            "tv_bound": clean(self.tv_bound),
            "grad_gap": clean(self.grad_gap),
            "grad_bound": clean(self.grad_bound),
            "exploit_log_odds": clean(self.exploit_log_odds),
            "sampled_train_reward": clean(self.sampled_train_reward),
            "zero_std_fraction": clean(self.zero_std_fraction),
            "bound_checks": {"tv_bound_holds": self.tv_bound_holds, "grad_bound_holds": self.grad_bound_holds},
            "summary": self.summary(),
            "final_policy": self.final_policy,
            "strategy_kind": self.strategy_kind,
        }

    def to_json_str(self) -> str:
        """:meth:`to_json` serialised with two-space indentation."""
        return json.dumps(self.to_json(), indent=2)


class _SimulatorSide:
    """The user side of one method: what plays each batch, what is trained, what is analysed."""

    def __init__(self, config: LabConfig, world: LabWorld, rng: np.random.Generator) -> None:
        self.config = config
        self.world = world
        self.rng = rng
        x, s, h = world.n_tasks, world.n_strategies, world.horizon
        rho = world.reference
        rank = np.argsort(-rho, axis=1, kind="stable")
        single = modal_distribution(rho, rank[:, 0], config.mode_concentration)
        self.single = TabularSimulator.from_task_distribution(single, s, h)
        method = config.method
        self.logits: np.ndarray | None = None
        self.pool: deque[np.ndarray] = deque(maxlen=config.pool_size)
        self.snapshot: np.ndarray | None = None
        if method == "vs":
            vs = (1.0 - config.vs_mixture) * rho + config.vs_mixture * single
            self.frozen = TabularSimulator.from_task_distribution(vs, s, h)
        elif method == "ensemble":
            self.members = [
                TabularSimulator.from_task_distribution(
                    modal_distribution(rho, rank[:, k], config.mode_concentration), s, h
                )
                for k in range(config.ensemble_size)
            ]
        elif method == "persona":
            personas = [
                TabularSimulator.from_task_distribution(
                    modal_distribution(rho, np.full(x, p), config.mode_concentration), s, h
                )
                for p in range(world.n_behaviours)
            ]
            self.frozen = TabularSimulator.mixture(personas, weights=rho.copy())
        elif method in ("cotrain", "population", "selfplay"):
            self.logits = np.log(self.single.probs[0])
            self.pool.append(self.logits.copy())
            self.snapshot = self.logits.copy()
        else:
            self.frozen = self.single

    def _table(self, logits: np.ndarray | None) -> TabularSimulator:
        if logits is None:  # only the trainable methods hold logits
            raise RuntimeError(f"method {self.config.method!r} has no trainable simulator table")
        return TabularSimulator.from_table(softmax(logits))

    def effective(self) -> TabularSimulator:
        """The user distribution a rollout of the next batch is drawn from (marginalised)."""
        method = self.config.method
        if method == "ensemble":
            return TabularSimulator.mixture(self.members)
        if method == "cotrain":
            return self._table(self.logits)
        if method == "population":
            return TabularSimulator.mixture([self._table(p) for p in self.pool])
        if method == "selfplay":
            return self._table(self.snapshot)
        return self.frozen

    def played(self, step: int) -> tuple[TabularSimulator, np.ndarray | None]:
        """Simulator that plays the batch of ``step`` and its logits if it is a snapshot table."""
        method = self.config.method
        if method == "ensemble":
            return self.members[step % len(self.members)], None
        if method == "cotrain":
            return self._table(self.logits), self.logits
        if method == "population":
            pick = self.pool[int(self.rng.integers(len(self.pool)))]
            return self._table(pick), pick
        if method == "selfplay":
            return self._table(self.snapshot), self.snapshot
        return self.frozen, None

    def update(
        self,
        step: int,
        tasks: np.ndarray,
        strategies: np.ndarray,
        behaviours: np.ndarray,
        rewards: np.ndarray,
        played_logits: np.ndarray | None,
    ) -> None:
        """REINFORCE on the simulator's own turns of this batch (trainable methods only)."""
        if self.logits is None:
            return
        config = self.config
        mode = "cooperative" if config.method == "selfplay" else config.cotrain_reward
        adv, _ = simulator_advantages(rewards, mode, eps=config.adv_eps)  # [X, G]
        h = self.world.horizon
        turns = np.broadcast_to(np.arange(h), behaviours.shape)
        xs = np.broadcast_to(tasks[..., None], behaviours.shape)
        ys = np.broadcast_to(strategies[..., None], behaviours.shape)
        live = softmax(self.logits)[xs, ys, turns]  # [X, G, H, B]
        weight = np.ones(behaviours.shape)
        if played_logits is not None and played_logits is not self.logits:
            played = softmax(played_logits)[xs, ys, turns]
            pick = behaviours[..., None]
            ratio = np.take_along_axis(live, pick, -1)[..., 0] / np.take_along_axis(played, pick, -1)[..., 0]
            weight = np.minimum(1.0, ratio)
        score = -live
        np.put_along_axis(score, behaviours[..., None], np.take_along_axis(score, behaviours[..., None], -1) + 1.0, -1)
        contrib = (adv[..., None] * weight)[..., None] * score / config.group_size
        np.add.at(self.logits, (xs, ys, turns), config.sim_lr * contrib)
        if config.method in ("population", "selfplay") and (step + 1) % config.snapshot_every == 0:
            self.pool.append(self.logits.copy())
            self.snapshot = self.logits.copy()


def run_lab(config: LabConfig) -> LabResult:
    """Train the tabular policy with one method and log exact metrics.

    Args:
        config: the run configuration.

    Returns:
        A :class:`LabResult` with one entry per logged step (step 0, every ``eval_every`` steps, and
        the last step).
    """
    rng = np.random.default_rng(config.seed)
    world = make_world(config.n_tasks, config.n_strategies, config.n_behaviours, config.horizon, rng)
    rewards_seq = trajectory_rewards(world)
    r_max = float(world.reward.max())
    sim_side = _SimulatorSide(config, world, rng)
    x, s, h, g = world.n_tasks, world.n_strategies, world.horizon, config.group_size
    real_users = TabularSimulator.from_task_distribution(world.reference, s, h)
    heldout_sims = [
        TabularSimulator.from_task_distribution(
            modal_distribution(world.reference, np.full(x, k), config.heldout_concentration), s, h
        )
        for k in range(world.n_behaviours)
    ]
    theta = np.zeros((x, s))
    result = LabResult(config=config, strategy_kind=list(world.strategy_kind))
    pending_rewards: list[float] = []
    pending_zero: list[float] = []

    def log(step: int) -> None:
        policy = softmax(theta)
        exact: ExactAnalysis = analyse(world, sim_side.effective(), policy, rewards_seq)
        heldout = analyse(world, real_users, policy, rewards_seq).expected_reward
        heldout_sim = float(np.mean([analyse(world, m, policy, rewards_seq).expected_reward for m in heldout_sims]))
        best = exact.q_mode.argmax(axis=1)
        p_best = np.clip(policy[np.arange(x), best], 1e-12, 1 - 1e-12)
        result.steps.append(step)
        result.train_reward.append(exact.expected_reward)
        result.heldout_reward.append(heldout)
        result.heldout_sim_reward.append(heldout_sim)
        result.policy_entropy.append(policy_entropy(policy))
        result.collapse_error.append(exact.collapse_error)
        result.accumulated_collapse_error.append(exact.accumulated_collapse_error)
        result.tv.append(exact.tv)
        result.tv_bound.append(exact.accumulated_collapse_error)
        result.grad_gap.append(exact.grad_gap)
        result.grad_bound.append(2.0 * SCORE_NORM_BOUND * r_max * exact.accumulated_collapse_error)
        result.exploit_log_odds.append(float(np.mean(np.log(p_best / (1 - p_best)))))
        result.sampled_train_reward.append(float(np.mean(pending_rewards)) if pending_rewards else math.nan)
        result.zero_std_fraction.append(float(np.mean(pending_zero)) if pending_zero else math.nan)
        pending_rewards.clear()
        pending_zero.clear()

    log(0)
    tasks = np.repeat(np.arange(x)[:, None], g, axis=1)
    rows = np.arange(x)[:, None]
    for step in range(config.steps):
        policy = softmax(theta)
        strategies = (rng.random((x, g, 1)) < np.cumsum(policy, axis=1)[:, None, :]).argmax(axis=-1)
        played, played_logits = sim_side.played(step)
        behaviours = played.sample(tasks, strategies, rng)  # [X, G, H]
        rewards = world.reward[tasks[..., None], strategies[..., None], behaviours].mean(axis=-1)
        adv, zero_std = group_relative_advantages(rewards, eps=config.adv_eps)
        # grad of mean_i A_i log pi(y_i|x) w.r.t. theta[x] = mean_i A_i (e_{y_i} - pi(.|x))
        grad = np.zeros((x, s))
        np.add.at(grad, (np.broadcast_to(rows, strategies.shape), strategies), adv)
        grad = (grad - policy * adv.sum(axis=1, keepdims=True)) / g
        theta += config.lr * grad
        sim_side.update(step, tasks, strategies, behaviours, rewards, played_logits)
        pending_rewards.append(float(rewards.mean()))
        pending_zero.append(float(zero_std.mean()))
        done = step + 1
        if done % config.eval_every == 0 or done == config.steps:
            log(done)
    result.final_policy = softmax(theta).round(6).tolist()
    return result


def run_compare(config: LabConfig, methods: tuple[str, ...] = METHODS) -> dict[str, LabResult]:
    """Run every method with the same arena, seed and hyper-parameters."""
    from dataclasses import replace

    return {m: run_lab(replace(config, method=m)) for m in methods}
