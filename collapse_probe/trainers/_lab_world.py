"""The world of the collapse lab, its simulators, and their exact (enumerated) analysis.

Every array carries a leading *seed* axis ``N``: one lab run trains ``N`` independent worlds at
once (one per seed), so a many-seed comparison costs about as much as one seed.

**The parts of the world, each its own object drawn from its own seed stream.**

- :class:`RealUsers` -- the people: ``q*(b|x) = softmax(user_spread * z[x, b])``, ``z ~ N(0, 1)``,
  i.i.d. over the ``H`` turns of a conversation.
- :class:`RewardTable` -- ``r(x, y, b) = sigmoid(mu[y] + sigma[y] * z[x, y, b])`` with
  ``mu[y] ~ N(0, REWARD_MU_SCALE**2)``, ``sigma[y] ~ U(0, REWARD_SIGMA_MAX)`` and ``z ~ N(0, 1)``:
  strategies differ in their average quality (``mu``) and in how much their reward depends on the
  user's behaviour (``sigma``: near 0 a strategy works with anyone, large it works with some users
  and fails with others). No strategy is built to exploit a simulator; whether a
  behaviour-dependent strategy beats a behaviour-independent one, and where, comes out of the draw.
- :class:`SimulatorFamilies` -- ``K`` families of user simulators (base models from different
  labs). Family ``k``'s base (reference) distribution is the people's perturbed by family noise of
  size ``delta``: ``log P_ref,k = log q* + delta * xi_k``, ``xi_k ~ N(0, 1)``. Its aligned
  simulator is ``phi_k = softmax(log P_ref,k / tau)`` (``tau`` = ``sim_temperature``; ``tau = 1``
  is the base model itself, ``tau < 1`` sharpens it towards its mode). Each family also has its own
  persona prior ``w_k ~ Dirichlet(1, ..., 1)`` over ``P`` personas and persona logit shifts
  ``v_{k,p} ~ N(0, persona_scale**2)``; persona ``p`` answers with
  ``softmax((log P_ref,k + v_{k,p}) / tau)`` -- collapsed by ``tau`` like the rest of ``phi_k``.

The families are built from the people (that is what a base model trained on people's text is),
but they hold only their own logits: nothing downstream of :class:`SimulatorFamilies` can reach
``q*``, and the trainer in :mod:`collapse_probe.trainers.lab` is handed simulator objects only.

**Trajectories.** ``(x, y, u_1..u_H)``: a task ``x`` (uniform), the agent's strategy
``y ~ pi(.|x)`` chosen once per conversation, and the user's behaviour at each of the ``H`` turns.
A simulator is a mixture over components ``c`` (personas, pool members, ensemble members) with
weights ``w(c|x)``; component ``c`` answers turn ``t`` with ``phi_c(u|x, y, t)``. The component is
drawn once per conversation and hidden from the agent, so the user's turn distribution given the
history is the Bayes mixture. The terminal reward is the mean over turns,
``R = (1/H) sum_t r(x, y, u_t)``.

Everything in :func:`analyse` is exact: the ``B**H`` behaviour sequences are enumerated (``H`` is
small), so the collapse error, the trajectory distribution under the mode-only simulator, total
variation and policy gradients carry no sampling noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REWARD_FAMILY = "r(x, y, b) = sigmoid(mu[y] + sigma[y] * z[x, y, b]); mu ~ N(0, 1), sigma ~ U(0, 3), z ~ N(0, 1)"
"""The seeded family the reward table is drawn from (one draw per seed)."""
REWARD_MU_SCALE = 1.0
"""Standard deviation of a strategy's average logit quality ``mu[y]``."""
REWARD_SIGMA_MAX = 3.0
"""Upper end of a strategy's behaviour sensitivity ``sigma[y] ~ U(0, REWARD_SIGMA_MAX)``."""
SPECIALIST_SIGMA = REWARD_SIGMA_MAX / 2
"""A strategy with ``sigma[y]`` above this is labelled ``"specialist"``, else ``"generalist"``
(a description of the draw for reports; nothing depends on it)."""

STREAMS = ("users", "reward", "families", "personas", "train", "eval")
"""Independent seed streams spawned from each run seed, in this order (``numpy.random.SeedSequence``)."""


def seed_streams(seed: int) -> dict[str, np.random.Generator]:
    """One generator per part of the world (and for training and evaluation sampling)."""
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: np.random.default_rng(ss) for name, ss in zip(STREAMS, children, strict=True)}


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


@dataclass(frozen=True)
class RealUsers:
    """The people: ``q*(b|x)``, ``[N, X, B]``, i.i.d. over turns. Only evaluation reads it."""

    probs: np.ndarray


@dataclass(frozen=True)
class RewardTable:
    """``r(x, y, b)`` in (0, 1), ``[N, X, S, B]``, and the family parameters it was drawn with."""

    reward: np.ndarray
    mu: np.ndarray
    """``[N, S]``."""
    sigma: np.ndarray
    """``[N, S]``."""


@dataclass(frozen=True)
class SimulatorFamilies:
    """``K`` simulator families: base logits, persona priors and persona shifts (no ``q*``)."""

    base_logits: np.ndarray
    """``log P_ref,k(b|x)``, ``[N, K, X, B]``."""
    persona_prior: np.ndarray
    """``w_k(p)``, ``[N, K, P]``."""
    persona_shift: np.ndarray
    """``v_{k,p}(x, b)``, ``[N, K, P, X, B]``."""

    @property
    def n_families(self) -> int:
        return self.base_logits.shape[1]

    def base(self, k: int) -> np.ndarray:
        """``P_ref,k``, ``[N, X, B]``."""
        return softmax(self.base_logits[:, k])

    def aligned_logits(self, k: int, tau: float) -> np.ndarray:
        """Logits of ``phi_k``: ``log P_ref,k / tau`` (exactly ``log P_ref,k`` when ``tau == 1``)."""
        return self.base_logits[:, k] / tau

    def aligned(self, k: int, tau: float) -> np.ndarray:
        """``phi_k = softmax(log P_ref,k / tau)``, ``[N, X, B]``; equals :meth:`base` bit for bit at ``tau = 1``."""
        return softmax(self.aligned_logits(k, tau))

    def verbalized(self, k: int, tau: float, vs_error: float) -> np.ndarray:
        """Verbalized Sampling on family ``k``: ``(1 - vs_error) P_ref,k + vs_error phi_k``, ``[N, X, B]``.

        VS recovers the family's base distribution up to a share ``vs_error`` of the aligned
        (collapsed) one; it never sees the people. ``vs_error = 1`` is ``phi_k`` exactly.
        """
        return (1.0 - vs_error) * self.base(k) + vs_error * self.aligned(k, tau)

    def personas(self, k: int, tau: float) -> np.ndarray:
        """Persona simulators of family ``k``: ``softmax((log P_ref,k + v_{k,p}) / tau)``, ``[N, P, X, B]``."""
        return softmax((self.base_logits[:, k, None] + self.persona_shift[:, k]) / tau)


@dataclass(frozen=True)
class LabWorld:
    """One world per seed (leading axis ``N``)."""

    real_users: RealUsers
    rewards: RewardTable
    families: SimulatorFamilies
    horizon: int

    @property
    def reward(self) -> np.ndarray:
        """``r(x, y, b)``, ``[N, X, S, B]``."""
        return self.rewards.reward

    @property
    def reference(self) -> np.ndarray:
        """``q*(b|x)`` (the people), ``[N, X, B]``."""
        return self.real_users.probs

    @property
    def n_seeds(self) -> int:
        return self.reward.shape[0]

    @property
    def n_tasks(self) -> int:
        return self.reward.shape[1]

    @property
    def n_strategies(self) -> int:
        return self.reward.shape[2]

    @property
    def n_behaviours(self) -> int:
        return self.reward.shape[3]

    def strategy_kind(self) -> list[list[str]]:
        """``"specialist"`` / ``"generalist"`` per seed and strategy (see :data:`SPECIALIST_SIGMA`)."""
        return [["specialist" if s > SPECIALIST_SIGMA else "generalist" for s in row] for row in self.rewards.sigma]


def draw_world(
    seeds: list[int],
    *,
    n_tasks: int,
    n_strategies: int,
    n_behaviours: int,
    horizon: int,
    n_families: int,
    n_personas: int,
    user_spread: float,
    delta: float,
    persona_scale: float,
) -> LabWorld:
    """Draw one world per seed, each part from its own stream of that seed (see :data:`STREAMS`).

    The draw does not depend on the training method, the simulator temperature or the VS error:
    runs that differ only in those train in the same world.
    """
    x, s, b, k, p = n_tasks, n_strategies, n_behaviours, n_families, n_personas
    users, rewards, mus, sigmas, base, prior, shift = [], [], [], [], [], [], []
    for seed in seeds:
        g = seed_streams(seed)
        log_q = log_softmax(user_spread * g["users"].normal(size=(x, b)))
        users.append(np.exp(log_q))
        mu = g["reward"].normal(0.0, REWARD_MU_SCALE, size=s)
        sigma = g["reward"].uniform(0.0, REWARD_SIGMA_MAX, size=s)
        z = g["reward"].normal(size=(x, s, b))
        rewards.append(1.0 / (1.0 + np.exp(-(mu[None, :, None] + sigma[None, :, None] * z))))
        mus.append(mu)
        sigmas.append(sigma)
        base.append(log_softmax(log_q[None] + delta * g["families"].normal(size=(k, x, b))))
        prior.append(g["personas"].dirichlet(np.ones(p), size=k))
        shift.append(persona_scale * g["personas"].normal(size=(k, p, x, b)))
    return LabWorld(
        real_users=RealUsers(probs=np.stack(users)),
        rewards=RewardTable(reward=np.stack(rewards), mu=np.stack(mus), sigma=np.stack(sigmas)),
        families=SimulatorFamilies(
            base_logits=np.stack(base), persona_prior=np.stack(prior), persona_shift=np.stack(shift)
        ),
        horizon=horizon,
    )


@dataclass(frozen=True)
class TabularSimulator:
    """A mixture-of-components user simulator, one per seed (leading axis ``N``)."""

    weights: np.ndarray
    """``w(c|x)``, shape ``[N, X, C]``; the component is drawn once per conversation."""
    probs: np.ndarray
    """``phi_c(u|x, y, t)``, shape ``[N, C, X, S, H, B]`` (may be a read-only broadcast view)."""

    @classmethod
    def from_table(cls, probs: np.ndarray) -> TabularSimulator:
        """One-component simulator from ``[N, X, S, H, B]`` turn distributions."""
        n, x = probs.shape[:2]
        return cls(weights=np.ones((n, x, 1)), probs=probs[:, None])

    @classmethod
    def from_task_distribution(cls, dist: np.ndarray, n_strategies: int, horizon: int) -> TabularSimulator:
        """One-component simulator answering every strategy and turn with ``dist[n, x]`` (``[N, X, B]``)."""
        n, x, b = dist.shape
        return cls.from_table(np.broadcast_to(dist[:, :, None, None, :], (n, x, n_strategies, horizon, b)))

    @classmethod
    def from_components(
        cls, dists: np.ndarray, weights: np.ndarray, n_strategies: int, horizon: int
    ) -> TabularSimulator:
        """Mixture of ``[N, C, X, B]`` per-task components with weights ``[N, X, C]``."""
        n, c, x, b = dists.shape
        probs = np.broadcast_to(dists[:, :, :, None, None, :], (n, c, x, n_strategies, horizon, b))
        return cls(weights=weights, probs=probs)

    @classmethod
    def mixture(cls, members: list[TabularSimulator], weights: np.ndarray | None = None) -> TabularSimulator:
        """Mixture of one-component simulators; ``weights`` ``[N, X, K]`` (default uniform)."""
        probs = np.concatenate([m.probs for m in members], axis=1)
        n, c, x = probs.shape[:3]
        if weights is None:
            weights = np.full((n, x, c), 1.0 / c)
        return cls(weights=weights, probs=probs)

    def turn_marginals(self) -> np.ndarray:
        """Per-turn marginal ``sum_c w(c|x) phi_c(u|x, y, t)``, ``[N, X, S, H, B]``."""
        return np.einsum("nxc,ncxstb->nxstb", self.weights, self.probs)

    def sample(
        self, tasks: np.ndarray, strategies: np.ndarray, u_component: np.ndarray, u_turns: np.ndarray
    ) -> np.ndarray:
        """User behaviours ``[N, ...task shape, H]`` from given uniforms (the caller owns the randomness).

        Args:
            tasks: task of each conversation, shape ``T`` (shared by the seeds).
            strategies: ``[N, *T]`` the agent's strategy per conversation.
            u_component: ``[N, *T, 1]`` uniforms choosing the component.
            u_turns: ``[N, *T, H, 1]`` uniforms choosing each turn's behaviour.
        """
        n = strategies.shape[0]
        cum_w = np.cumsum(self.weights[:, tasks], axis=-1)  # [N, *T, C]
        cum_w[..., -1] = 1.0
        comp = (u_component < cum_w).argmax(axis=-1)  # [N, *T]
        seed_idx = np.arange(n).reshape((n,) + (1,) * tasks.ndim)
        turn_probs = self.probs[seed_idx, comp, tasks[None], strategies]  # [N, *T, H, B]
        cum = np.cumsum(turn_probs, axis=-1)
        cum[..., -1] = 1.0
        return (u_turns < cum).argmax(axis=-1)


@dataclass(frozen=True)
class ExactAnalysis:
    """Exact quantities of one (policy, simulator) pair per seed; per-(x, y) arrays are ``[N, X, S]``."""

    q_sim: np.ndarray
    """``E_phi[R | x, y]``."""
    q_mode: np.ndarray
    """``R`` of the mode-only simulator's (deterministic) trajectory given ``(x, y)``."""
    mode_path: np.ndarray
    """Flat index (row-major over the ``H`` turns) of the mode-only simulator's path per ``(x, y)``."""
    tv_xy: np.ndarray
    """``TV(P_phi(.|x, y), P_mode(.|x, y))`` over behaviour sequences, by enumeration."""
    expected_reward: np.ndarray
    """``J_phi(pi) = E_x E_pi E_phi[R]``, ``[N]``."""
    expected_reward_mode: np.ndarray
    """``J_mode(pi)``, ``[N]``."""
    accumulated_collapse_error: np.ndarray
    """``eps_bar_H = E[sum_t eps_phi(s_t)]`` over trajectories of ``(pi, phi)``, ``[N]``."""
    collapse_error: np.ndarray
    """``eps_bar_H / H``: mean collapse error per visited simulator turn, ``[N]``."""
    tv: np.ndarray
    """``TV(P_phi, P_mode)`` of the full trajectory distributions ``(x, y, u_1..u_H)``, ``[N]``."""
    grad_sim: np.ndarray
    """``grad_theta J_phi``, shape ``[N, X, S]`` (logit table)."""
    grad_mode: np.ndarray
    """``grad_theta J_mode``."""
    grad_gap: np.ndarray
    """``||grad J_phi - grad J_mode||`` (Frobenius norm over the logit table), ``[N]``."""


SCORE_NORM_BOUND = float(np.sqrt(2.0))
"""``B``: for a softmax table, ``||grad log pi(y|x)|| = ||e_y - pi(.|x)|| <= sqrt(2)``."""


def sequence_digits(n_behaviours: int, horizon: int) -> np.ndarray:
    """All behaviour sequences, ``[B**H, H]``, in the row-major order used by :func:`analyse`."""
    return np.stack(np.unravel_index(np.arange(n_behaviours**horizon), (n_behaviours,) * horizon), axis=1)


def trajectory_rewards(reward: np.ndarray, horizon: int) -> np.ndarray:
    """``R(x, y, u_1..u_H)`` for every sequence, ``[N, X, S, B**H]`` (mean of the turn rewards)."""
    digits = sequence_digits(reward.shape[-1], horizon)
    return reward[..., digits].mean(axis=-1)


def policy_entropy(policy: np.ndarray) -> np.ndarray:
    """Mean over tasks of the strategy entropy ``H(pi(.|x))`` in nats, ``[N]``."""
    p = np.clip(policy, 1e-300, 1.0)
    return -(policy * np.log(p)).sum(axis=-1).mean(axis=-1)


def expected_reward(reward: np.ndarray, policy: np.ndarray, turn_marginals: np.ndarray) -> np.ndarray:
    """``J`` per seed under a simulator whose per-turn marginal is ``turn_marginals``.

    The reward is the mean of the turn rewards, so ``J`` depends on the simulator only through its
    per-turn marginals (linearity of expectation).

    Args:
        reward: ``[N, X, S, B]``.
        policy: ``[N, X, S]``.
        turn_marginals: ``[N, X, S, H, B]``, or ``[N, X, B]`` for a simulator that answers every
            strategy and turn alike.
    """
    if turn_marginals.ndim == 3:
        q = np.einsum("nxsb,nxb->nxs", reward, turn_marginals)
    else:
        q = np.einsum("nxsb,nxsb->nxs", reward, turn_marginals.mean(axis=3))
    return (policy * q).sum(axis=-1).mean(axis=-1)


def analyse(sim: TabularSimulator, policy: np.ndarray, rewards_seq: np.ndarray) -> ExactAnalysis:
    """Exact collapse error, TV to the mode-only simulator and both policy gradients, per seed.

    The mode-only simulator answers every visited state ``s_t = (x, y, u_<t)`` with the modal
    behaviour of ``phi(.|s_t)``; given ``(x, y)`` it follows one deterministic path.
    ``eps_phi(s) = 1 - max_u phi(u|s)``. With joint prefix probabilities ``P(u_<=t)`` (mixture
    over components), ``E[eps at turn t] = sum_prefix (P(prefix) - max_u P(prefix, u))``.

    Args:
        sim: the simulator.
        policy: ``pi(y|x)``, ``[N, X, S]``.
        rewards_seq: :func:`trajectory_rewards` of the world.
    """
    n, c, x, s, h, b = sim.probs.shape
    comp = np.ones((n, c, x, s, 1))
    eps_sum = np.zeros((n, x, s))
    path = np.zeros((n, x, s), dtype=int)  # flat index of the mode path prefix
    joint = comp
    for t in range(h):
        comp = (comp[..., :, None] * sim.probs[:, :, :, :, t, None, :]).reshape(n, c, x, s, -1)
        joint = np.einsum("nxc,ncxsk->nxsk", sim.weights, comp).reshape(n, x, s, -1, b)  # [n, x, s, prefix, u]
        eps_sum += (joint.sum(axis=-1) - joint.max(axis=-1)).sum(axis=-1)
        step = np.take_along_axis(joint, path[..., None, None], axis=3)[:, :, :, 0, :]  # [n, x, s, B]
        path = path * b + step.argmax(axis=-1)
    p_seq = joint.reshape(n, x, s, -1)  # P_phi(u_1..u_H | x, y)
    mode_path_prob = np.take_along_axis(p_seq, path[..., None], axis=3)[..., 0]
    # TV to a point mass: 1 - P(mode path)
    tv_xy = 1.0 - mode_path_prob

    q_sim = (p_seq * rewards_seq).sum(axis=-1)
    q_mode = np.take_along_axis(rewards_seq, path[..., None], axis=3)[..., 0]

    def grad(q: np.ndarray) -> np.ndarray:
        # d/d theta_x of (1/X) sum_y pi(y|x) q(x, y) = (1/X) pi (q - E_pi q)
        return policy * (q - (policy * q).sum(axis=-1, keepdims=True)) / x

    g_sim, g_mode = grad(q_sim), grad(q_mode)
    acc = (policy * eps_sum).sum(axis=-1).mean(axis=-1)
    return ExactAnalysis(
        q_sim=q_sim,
        q_mode=q_mode,
        mode_path=path,
        tv_xy=tv_xy,
        expected_reward=(policy * q_sim).sum(axis=-1).mean(axis=-1),
        expected_reward_mode=(policy * q_mode).sum(axis=-1).mean(axis=-1),
        accumulated_collapse_error=acc,
        collapse_error=acc / h,
        # (x, y) have the same law under both simulators, so the joint TV is the pi-average.
        tv=(policy * tv_xy).sum(axis=-1).mean(axis=-1),
        grad_sim=g_sim,
        grad_mode=g_mode,
        grad_gap=np.sqrt(((g_sim - g_mode) ** 2).sum(axis=(1, 2))),
    )
