"""The tabular arena of the collapse lab and its exact (enumerated) analysis.

A trajectory is ``(x, y, u_1..u_H)``: a task ``x`` (uniform), the agent's strategy
``y ~ pi(.|x)`` chosen once for the conversation, and the user's behaviour at each of the ``H``
turns. A simulator is a mixture over components ``c`` (personas, pool members, ensemble members)
with weights ``w(c|x)``; component ``c`` answers turn ``t`` with ``phi_c(u|x, y, t)``. The
component is drawn once per conversation and hidden from the agent, so the user's turn
distribution given the history, ``phi(u_t | x, y, u_<t)``, is the Bayes mixture and depends on the
history whenever there is more than one component. The terminal reward is the mean over turns,
``R = (1/H) sum_t r(x, y, u_t)``.

Everything here is exact: the ``B**H`` behaviour sequences are enumerated (``H`` is small), so the
collapse error, the trajectory distribution under the mode-only simulator, total variation and
policy gradients carry no sampling noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXPLOIT_HIT = (0.9, 1.0)
"""Reward range of an exploit strategy when the user answers with the behaviour it exploits."""
EXPLOIT_MISS = (0.0, 0.1)
"""Reward range of an exploit strategy under any other behaviour."""
ROBUST = (0.65, 0.75)
"""Reward range of a robust strategy (per task; a small per-behaviour jitter is added)."""
ROBUST_JITTER = 0.03
"""Half-width of the per-behaviour jitter of a robust strategy's reward."""
WEAK = (0.0, 0.1)
"""Reward range of a weak strategy (low under every user)."""


@dataclass(frozen=True)
class LabWorld:
    """Reward table and real-user distribution of the arena."""

    reward: np.ndarray
    """``r(x, y, u)``, shape ``[n_tasks, n_strategies, n_behaviours]``, values in [0, 1]."""
    reference: np.ndarray
    """Real users ``rho(u|x)``, shape ``[n_tasks, n_behaviours]``; i.i.d. over turns."""
    strategy_kind: tuple[str, ...]
    """``"exploit"``, ``"robust"`` or ``"weak"`` for each strategy."""
    exploited_behaviour: np.ndarray
    """Behaviour each exploit strategy needs (``-1`` for robust and weak strategies)."""
    horizon: int
    """Number of user turns ``H``."""

    @property
    def n_tasks(self) -> int:
        return self.reward.shape[0]

    @property
    def n_strategies(self) -> int:
        return self.reward.shape[1]

    @property
    def n_behaviours(self) -> int:
        return self.reward.shape[2]


def make_world(n_tasks: int, n_strategies: int, n_behaviours: int, horizon: int, rng: np.random.Generator) -> LabWorld:
    """Draw a reward table and real-user distribution.

    Strategies ``0..B-1`` exploit behaviour ``0..B-1``; of the remaining ``S - B`` strategies all
    but the last are robust and the last is weak (a single remaining strategy is robust). Real users put decreasing mass
    ``(B, B-1, ..., 1) / sum`` on the behaviours in a task-specific random order, so the most
    common behaviour has mass ``2 / (B + 1)`` (0.4 for ``B = 4``): no behaviour is a near-certainty.
    """
    x, s, b = n_tasks, n_strategies, n_behaviours
    reward = np.empty((x, s, b))
    kind: list[str] = []
    exploited = np.full(s, -1)
    n_robust = max(1, s - b - 1)
    for y in range(s):
        if y < b:
            kind.append("exploit")
            exploited[y] = y
            reward[:, y, :] = rng.uniform(*EXPLOIT_MISS, size=(x, b))
            reward[:, y, y] = rng.uniform(*EXPLOIT_HIT, size=x)
        elif y < b + n_robust:
            kind.append("robust")
            reward[:, y, :] = rng.uniform(*ROBUST, size=(x, 1)) + rng.uniform(
                -ROBUST_JITTER, ROBUST_JITTER, size=(x, b)
            )
        else:
            kind.append("weak")
            reward[:, y, :] = rng.uniform(*WEAK, size=(x, b))
    base = np.arange(b, 0, -1, dtype=float)
    base /= base.sum()
    reference = np.stack([rng.permutation(base) for _ in range(x)])
    return LabWorld(
        reward=np.clip(reward, 0.0, 1.0),
        reference=reference,
        strategy_kind=tuple(kind),
        exploited_behaviour=exploited,
        horizon=horizon,
    )


def modal_distribution(reference: np.ndarray, mode: np.ndarray, concentration: float) -> np.ndarray:
    """A simulator distribution per task with mass ``concentration`` on ``mode[x]``.

    The rest is spread over the other behaviours in proportion to the reference, i.e. the
    simulator is the real-user distribution with its mode sharpened to ``concentration``.

    Args:
        reference: ``[n_tasks, B]`` real-user distribution.
        mode: ``[n_tasks]`` modal behaviour per task.
        concentration: mass on the mode, in (0, 1].

    Returns:
        ``[n_tasks, B]`` distribution.
    """
    n_tasks = reference.shape[0]
    rows = np.arange(n_tasks)
    rest = reference.copy()
    rest[rows, mode] = 0.0
    rest /= rest.sum(axis=1, keepdims=True)
    out = (1.0 - concentration) * rest
    out[rows, mode] = concentration
    return out


@dataclass(frozen=True)
class TabularSimulator:
    """A mixture-of-components user simulator over the arena."""

    weights: np.ndarray
    """``w(c|x)``, shape ``[n_tasks, C]``; the component is drawn once per conversation."""
    probs: np.ndarray
    """``phi_c(u|x, y, t)``, shape ``[C, n_tasks, n_strategies, H, B]``."""

    @classmethod
    def from_table(cls, probs: np.ndarray) -> TabularSimulator:
        """One-component simulator from ``[n_tasks, S, H, B]`` turn distributions."""
        return cls(weights=np.ones((probs.shape[0], 1)), probs=probs[None])

    @classmethod
    def from_task_distribution(cls, dist: np.ndarray, n_strategies: int, horizon: int) -> TabularSimulator:
        """One-component simulator answering every strategy and turn with ``dist[x]`` (``[n_tasks, B]``)."""
        x, b = dist.shape
        return cls.from_table(np.broadcast_to(dist[:, None, None, :], (x, n_strategies, horizon, b)).copy())

    @classmethod
    def mixture(cls, members: list[TabularSimulator], weights: np.ndarray | None = None) -> TabularSimulator:
        """Mixture of one-component simulators; ``weights`` ``[n_tasks, K]`` (default uniform)."""
        probs = np.concatenate([m.probs for m in members], axis=0)
        if weights is None:
            weights = np.full((probs.shape[1], probs.shape[0]), 1.0 / probs.shape[0])
        return cls(weights=weights, probs=probs)

    def sample(self, tasks: np.ndarray, strategies: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Sample user behaviours ``[..., H]`` for conversations ``(tasks, strategies)`` (same shape)."""
        cum_w = np.cumsum(self.weights[tasks], axis=-1)
        comp = (rng.random(tasks.shape + (1,)) < cum_w).argmax(axis=-1)
        turn_probs = self.probs[comp, tasks, strategies]  # [..., H, B]
        cum = np.cumsum(turn_probs, axis=-1)
        return (rng.random(turn_probs.shape[:-1] + (1,)) < cum).argmax(axis=-1)


@dataclass(frozen=True)
class ExactAnalysis:
    """Exact quantities of one (policy, simulator) pair; per-(x, y) arrays are ``[n_tasks, S]``."""

    q_sim: np.ndarray
    """``E_phi[R | x, y]``."""
    q_mode: np.ndarray
    """``R`` of the mode-only simulator's (deterministic) trajectory given ``(x, y)``."""
    eps_sum: np.ndarray
    """``E_phi[sum_t eps_phi(s_t) | x, y]``: accumulated collapse error per (x, y)."""
    tv_xy: np.ndarray
    """``TV(P_phi(.|x, y), P_mode(.|x, y))`` over behaviour sequences, by enumeration."""
    mode_path_prob: np.ndarray
    """``P_phi(mode path | x, y)``; equals ``1 - tv_xy``."""
    expected_reward: float
    """``J_phi(pi) = E_x E_pi E_phi[R]``."""
    expected_reward_mode: float
    """``J_mode(pi)``."""
    accumulated_collapse_error: float
    """``eps_bar_H = E[sum_t eps_phi(s_t)]`` over trajectories of ``(pi, phi)``."""
    collapse_error: float
    """``eps_bar_H / H``: mean collapse error per visited simulator turn."""
    tv: float
    """``TV(P_phi, P_mode)`` of the full trajectory distributions ``(x, y, u_1..u_H)``."""
    grad_sim: np.ndarray
    """``grad_theta J_phi``, shape ``[n_tasks, S]`` (logit table)."""
    grad_mode: np.ndarray
    """``grad_theta J_mode``."""
    grad_gap: float
    """``||grad J_phi - grad J_mode||`` (Frobenius norm over the logit table)."""


SCORE_NORM_BOUND = float(np.sqrt(2.0))
"""``B``: for a softmax table, ``||grad log pi(y|x)|| = ||e_y - pi(.|x)|| <= sqrt(2)``."""


def sequence_digits(n_behaviours: int, horizon: int) -> np.ndarray:
    """All behaviour sequences, ``[B**H, H]``, in the row-major order used by :func:`analyse`."""
    return np.stack(np.unravel_index(np.arange(n_behaviours**horizon), (n_behaviours,) * horizon), axis=1)


def trajectory_rewards(world: LabWorld) -> np.ndarray:
    """``R(x, y, u_1..u_H)`` for every sequence, ``[n_tasks, S, B**H]`` (mean of the turn rewards)."""
    digits = sequence_digits(world.n_behaviours, world.horizon)
    return world.reward[:, :, digits].mean(axis=-1)


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def policy_entropy(policy: np.ndarray) -> float:
    """Mean over tasks of the strategy entropy ``H(pi(.|x))`` in nats."""
    p = np.clip(policy, 1e-300, 1.0)
    return float(-(policy * np.log(p)).sum(axis=-1).mean())


def expected_reward(world: LabWorld, policy: np.ndarray, turn_marginals: np.ndarray) -> float:
    """``J`` under a simulator whose per-turn marginal is ``turn_marginals`` ``[n_tasks, S, H, B]``.

    The reward is the mean of the turn rewards, so ``J`` depends on the simulator only through its
    per-turn marginals (linearity of expectation).
    """
    q = np.einsum("xsb,xsb->xs", world.reward, turn_marginals.mean(axis=2))
    return float((policy * q).sum(axis=-1).mean())


def analyse(world: LabWorld, sim: TabularSimulator, policy: np.ndarray, rewards_seq: np.ndarray) -> ExactAnalysis:
    """Exact collapse error, TV to the mode-only simulator and both policy gradients.

    The mode-only simulator answers every visited state ``s_t = (x, y, u_<t)`` with the modal
    behaviour of ``phi(.|s_t)``; given ``(x, y)`` it follows one deterministic path.
    ``eps_phi(s) = 1 - max_u phi(u|s)``. With joint prefix probabilities ``P(u_<=t)`` (mixture
    over components), ``E[eps at turn t] = sum_prefix (P(prefix) - max_u P(prefix, u))``.

    Args:
        world: the arena.
        sim: the simulator.
        policy: ``pi(y|x)``, ``[n_tasks, S]``.
        rewards_seq: :func:`trajectory_rewards` of ``world``.
    """
    c, x, s, h, b = sim.probs.shape
    comp = np.ones((c, x, s, 1))
    eps_sum = np.zeros((x, s))
    path = np.zeros((x, s), dtype=int)  # flat index of the mode path prefix
    for t in range(h):
        comp = (comp[..., :, None] * sim.probs[:, :, :, t, None, :]).reshape(c, x, s, -1)
        joint = np.einsum("xc,cxsk->xsk", sim.weights, comp).reshape(x, s, -1, b)  # [x, s, prefix, u]
        eps_sum += (joint.sum(axis=-1) - joint.max(axis=-1)).sum(axis=-1)
        step = np.take_along_axis(joint, path[:, :, None, None], axis=2)[:, :, 0, :]  # [x, s, B]
        path = path * b + step.argmax(axis=-1)
    p_seq = joint.reshape(x, s, -1)  # P_phi(u_1..u_H | x, y)
    delta = np.zeros_like(p_seq)
    np.put_along_axis(delta, path[:, :, None], 1.0, axis=2)
    tv_xy = 0.5 * np.abs(p_seq - delta).sum(axis=-1)
    mode_path_prob = np.take_along_axis(p_seq, path[:, :, None], axis=2)[:, :, 0]

    q_sim = (p_seq * rewards_seq).sum(axis=-1)
    q_mode = np.take_along_axis(rewards_seq, path[:, :, None], axis=2)[:, :, 0]

    def grad(q: np.ndarray) -> np.ndarray:
        # d/d theta_x of (1/X) sum_y pi(y|x) q(x, y) = (1/X) pi (q - E_pi q)
        return policy * (q - (policy * q).sum(axis=-1, keepdims=True)) / x

    g_sim, g_mode = grad(q_sim), grad(q_mode)
    acc = float((policy * eps_sum).sum(axis=-1).mean())
    return ExactAnalysis(
        q_sim=q_sim,
        q_mode=q_mode,
        eps_sum=eps_sum,
        tv_xy=tv_xy,
        mode_path_prob=mode_path_prob,
        expected_reward=float((policy * q_sim).sum(axis=-1).mean()),
        expected_reward_mode=float((policy * q_mode).sum(axis=-1).mean()),
        accumulated_collapse_error=acc,
        collapse_error=acc / h,
        # (x, y) have the same law under both simulators, so the joint TV is the pi-average.
        tv=float((policy * tv_xy).sum(axis=-1).mean()),
        grad_sim=g_sim,
        grad_mode=g_mode,
        grad_gap=float(np.linalg.norm(g_sim - g_mode)),
    )
