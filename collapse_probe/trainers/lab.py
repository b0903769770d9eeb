"""The collapse lab: an exact, fast tabular arena where simulator collapse and its fixes meet theory.

**World** (:mod:`collapse_probe.trainers._lab_world`). Real users ``q*(b|x)``; a reward table
``r(x, y, b)`` drawn from a documented seeded family; ``K`` simulator families whose base
distributions are ``q*`` perturbed by family noise ``delta``; each family's aligned simulator
``phi_k = softmax(log P_ref,k / tau)`` (``tau`` = ``sim_temperature``) and its own personas. Each
part has its own seed stream, so two runs with the same seed train in the same world whatever the
method or simulator settings.

**Policy.** A softmax table ``pi(y|x) = softmax(theta[x])``; one strategy per conversation; the
terminal reward is the mean of the ``H`` turn rewards. Group-relative REINFORCE: ``G`` rollouts per
task per step, z-scored advantages (:mod:`collapse_probe.trainers.advantages`).

**Methods** (what the policy trains against; training families are ``0..ensemble_size-1``):

- ``single``: family 0's aligned simulator ``phi_0``.
- ``vs``: Verbalized Sampling on family 0, ``(1 - vs_error) P_ref,0 + vs_error phi_0``. At
  ``vs_error = 1`` this is ``phi_0`` (the run equals ``single`` bit for bit); at ``tau = 1`` and
  ``vs_error = 0`` it is ``P_ref,0 = phi_0`` (again ``single``). It never sees ``q*``.
- ``ensemble``: rotation over the aligned simulators of families ``0..ensemble_size-1``, one per step.
- ``persona``: family 0's persona simulator: a persona drawn per conversation from family 0's own
  persona prior, each persona's logits shifted and collapsed by ``tau`` like ``phi_0``.
- ``cotrain``: a trainable simulator (a softmax table over ``(x, y, t)``, initialised at ``phi_0``)
  updated by REINFORCE on its own turns of the same rollouts with its own reward: adversarial
  ``1 - R``, cooperative ``R`` or curriculum ``exp(-(Var_g(R) - 0.25)^2 / 0.02)`` (credited across
  the groups of a batch, since it is constant within one).
- ``population``: as ``cotrain``, but each batch is played by one member of a FIFO pool of the
  ``pool_size`` most recent snapshots (one every ``snapshot_every`` steps); the live table is
  updated with per-turn importance weights truncated at 1.
- ``selfplay``: one jointly trained table holds both sides; its user half is trained on the shared
  reward ``R``; a snapshot refreshed every ``snapshot_every`` steps plays the user.

**No object that trains reads ``q*``.** :func:`train_policy` receives the reward table, a
:class:`SimulatorSide` (built from :class:`~collapse_probe.trainers._lab_world.SimulatorFamilies`
only) and its random generators; the people are read only by the evaluation callback
(:class:`Evaluator`), which sees the policy, never the other way round.

**Held-out, twice.** Real users ``q*`` (``heldout_reward``) and the aligned simulators of the
families no method trains on, ``ensemble_size..n_families-1`` (``heldout_sim_reward``).

**Theorem 3.2 and Corollary 3.5, checked where they could fail.** At every logged step the lab
enumerates the ``B**H`` behaviour sequences of the effective training simulator (marginalised over
what the agent cannot see: persona, pool draw, ensemble rotation) and computes exactly
``TV(P_phi, P_mode)``, ``eps_bar_H`` and both policy gradients; it also estimates the TV by sampling
``tv_samples`` fresh rollouts (the share whose behaviours leave the mode path) and checks the bound
against that estimate's confidence interval -- a wrong analysis or sampler would break it. The
gradient bound ``2 B R_max eps_bar_H`` (``B = sqrt(2)``) is reported with its tightness (gap /
bound), which is far from 1: it holds, but loosely. Corollary 3.5 (mass off the mode-exploit
decays geometrically) is fitted as a line through the exploit log-odds in their middle phase and
reported with its R^2.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypedDict

import numpy as np
from pydantic import JsonValue

from collapse_probe.core._constraints import Config, Integer, Number, OneOf, check_field, rule
from collapse_probe.core.limits import (
    MAX_GROUP,
    MAX_LAB_HORIZON,
    MAX_LAB_SIZE,
    MAX_SAMPLES_PER_STATE,
    MAX_SEED,
    MAX_STEPS,
    MAX_SWEEP_VALUES,
)
from collapse_probe.errors import ConfigError
from collapse_probe.trainers._lab_world import (
    REWARD_FAMILY,
    SCORE_NORM_BOUND,
    LabWorld,
    SimulatorFamilies,
    TabularSimulator,
    analyse,
    draw_world,
    expected_reward,
    policy_entropy,
    sequence_digits,
    softmax,
    trajectory_rewards,
)
from collapse_probe.trainers.advantages import (
    SIMULATOR_REWARD_MODES,
    group_relative_advantages,
    simulator_advantages,
)
from collapse_probe.trainers.methods import BASELINE, LAB_METHODS, TrainMethod, get_method

if TYPE_CHECKING:
    from collapse_probe.results import LabCompareResults, LabSweepResults

SCHEMA = "collapse-probe/lab/v1"
COMPARE_SCHEMA = "collapse-probe/lab-compare/v2"
SWEEP_SCHEMA = "collapse-probe/lab-sweep/v1"

METHODS: tuple[str, ...] = LAB_METHODS
"""Training methods of the lab, in the order ``--compare`` runs them (from the one registry,
:mod:`collapse_probe.trainers.methods`)."""

SWEEP_PARAMS: dict[str, str] = {"sim-temperature": "sim_temperature", "vs-error": "vs_error", "delta": "delta"}
"""``--sweep`` parameter names and the :class:`LabConfig` field each sets."""

BOUND_RTOL = 1e-9
"""Relative slack for floating-point rounding when checking the Theorem 3.2 bounds exactly."""

TV_CHECK_Z = 3.29
"""Two-sided 99.9% normal quantile: the sampled TV check fails only when the bound lies below the
lower end of this Wilson interval (many runs are checked; a 95% interval would flag 1 in 40 by chance)."""

LOG_ODDS_PHASE = (-1.0, 2.0)
"""Middle phase of Corollary 3.5's fit: logged steps whose mode-exploit log-odds lie in this range
(the exploit holds 27%..88% of the mass: past the start, before groups saturate)."""


class LabConfig(Config):
    """Configuration of one collapse-lab run, checked when built."""

    method: str = "single"
    """One of :data:`METHODS`."""
    n_tasks: Annotated[int, Integer(1, most=MAX_LAB_SIZE)] = 8
    """Number of tasks ``x``."""
    n_strategies: Annotated[int, Integer(2, most=MAX_LAB_SIZE)] = 8
    """Number of agent strategies ``y``."""
    n_behaviours: Annotated[int, Integer(2, most=MAX_LAB_SIZE)] = 4
    """Number of user behaviours ``b``."""
    horizon: Annotated[int, Integer(1, most=MAX_LAB_HORIZON)] = 3
    """User turns ``H`` per conversation (exact analysis enumerates ``n_behaviours**horizon`` sequences)."""
    group_size: Annotated[int, Integer(1, most=MAX_GROUP)] = 8
    """Rollouts ``G`` per task per step (one group-relative advantage group)."""
    lr: Annotated[float, Number(gt=0)] = 0.1
    """Step size of the policy's REINFORCE update on the logit table."""
    sim_lr: Annotated[float, Number(gt=0)] = 0.5
    """Step size of a trainable simulator's REINFORCE update (cotrain, population, selfplay)."""
    steps: Annotated[int, Integer(1, most=MAX_STEPS)] = 300
    """Policy updates."""
    seed: Annotated[int, Integer(0, why="the lab's worlds are seeded by numpy", most=MAX_SEED)] = 0
    """Seed of the world and of all sampling (one run)."""
    cotrain_reward: Annotated[str, OneOf(SIMULATOR_REWARD_MODES)] = "adversarial"
    """Simulator reward for ``cotrain``/``population``: adversarial, cooperative or curriculum."""
    pool_size: Annotated[int, Integer(1, most=MAX_GROUP)] = 5
    """FIFO pool size of ``population`` (the K most recent co-trained snapshots)."""
    snapshot_every: Annotated[int, Integer(1, most=MAX_STEPS)] = 10
    """Steps between simulator snapshots (population pool, self-play user copy)."""
    sim_temperature: Annotated[float, Number(gt=0)] = 0.3
    """``tau``: aligned simulators are ``softmax(log P_ref / tau)``; 1 is the base model (no collapse)."""
    vs_error: Annotated[float, Number(ge=0, le=1)] = 0.3
    """``eta``: Verbalized Sampling returns ``(1 - eta) P_ref + eta phi`` (0: the base model, 1: ``phi``)."""
    delta: Annotated[float, Number(ge=0)] = 0.5
    """Family noise: ``log P_ref,k = log q* + delta * xi_k`` (how far a base model is from people)."""
    user_spread: Annotated[float, Number(ge=0)] = 1.0
    """Real users ``q*(.|x) = softmax(user_spread * z)``: 0 is uniform, large is near-deterministic."""
    n_families: Annotated[int, Integer(1, most=MAX_LAB_SIZE)] = 6
    """Simulator families ``K``; the first :attr:`ensemble_size` are trained on, the rest are held out."""
    ensemble_size: Annotated[int, Integer(1, most=MAX_LAB_SIZE)] = 3
    """Families rotated by ``ensemble``."""
    n_personas: Annotated[int, Integer(1, most=MAX_LAB_SIZE)] = 8
    """Personas in each family's persona prior."""
    persona_scale: Annotated[float, Number(ge=0)] = 1.0
    """Standard deviation of a persona's logit shift (the same scale as :attr:`user_spread`)."""
    eval_every: Annotated[int, Integer(1, most=MAX_STEPS)] = 5
    """Log the exact metrics every this many steps (and at step 0 and the last step)."""
    tv_samples: Annotated[int, Integer(1, most=MAX_SAMPLES_PER_STATE)] = 256
    """Fresh rollouts per logged step for the sampled TV estimate."""
    adv_eps: Annotated[float, Number(ge=0)] = 1e-6
    """``eps`` of the group-relative advantage."""

    FLAG_FORMAT: ClassVar[str] = "{name}"
    """The lab's configuration is named by its fields (the CLI sets a few, named like them)."""

    @rule
    def _known_method(self) -> None:
        get_method(self.method, "method", lab=True)

    @rule
    def _exact_enumeration(self) -> None:
        if self.n_behaviours**self.horizon > 4096:
            raise ConfigError(
                f"n_behaviours**horizon must be <= 4096 for exact enumeration; got {self.n_behaviours}**{self.horizon}"
            )

    @rule
    def _some_families_held_out(self) -> None:
        if self.ensemble_size >= self.n_families:
            raise ConfigError(
                f"ensemble_size must be < n_families ({self.n_families}) so some families stay held out; "
                f"got {self.ensemble_size}"
            )

    @property
    def heldout_families(self) -> range:
        """Families no method trains on."""
        return range(self.ensemble_size, self.n_families)


@dataclass
class LabResult:
    """Per-logged-step metrics of one run (one seed); exact expectations unless named ``*sampled*``."""

    config: LabConfig
    steps: list[int] = field(default_factory=list)
    """Policy updates done before the metrics of this entry were computed."""
    train_reward: list[float] = field(default_factory=list)
    """``J_phi(pi)`` under the effective training simulator."""
    heldout_reward: list[float] = field(default_factory=list)
    """``J(pi)`` under real users ``q*``."""
    heldout_sim_reward: list[float] = field(default_factory=list)
    """``J(pi)`` averaged over the aligned simulators of the held-out families."""
    policy_entropy: list[float] = field(default_factory=list)
    """Mean over tasks of ``H(pi(.|x))`` in nats."""
    collapse_error: list[float] = field(default_factory=list)
    """``E[eps_phi]`` per visited simulator turn of the effective training simulator."""
    accumulated_collapse_error: list[float] = field(default_factory=list)
    """``eps_bar_H = E[sum_t eps_phi(s_t)]``; the Theorem 3.2 TV bound."""
    tv: list[float] = field(default_factory=list)
    """``TV(P_phi, P_mode)`` of the trajectory distributions (exact)."""
    tv_sampled: list[float] = field(default_factory=list)
    """Share of ``tv_samples`` fresh rollouts whose behaviours leave the mode path (estimates ``tv``)."""
    tv_bound: list[float] = field(default_factory=list)
    """``eps_bar_H``."""
    grad_gap: list[float] = field(default_factory=list)
    """``||grad J_phi - grad J_mode||``."""
    grad_bound: list[float] = field(default_factory=list)
    """``2 B R_max eps_bar_H``."""
    grad_tightness: list[float] = field(default_factory=list)
    """``grad_gap / grad_bound`` (``nan`` where the bound is 0)."""
    exploit_log_odds: list[float] = field(default_factory=list)
    """Mean over tasks of ``log pi(y*|x) / (1 - pi(y*|x))`` with ``y*`` the best strategy under the
    mode-only simulator (the mode-exploit strategy)."""
    sampled_train_reward: list[float] = field(default_factory=list)
    """Mean sampled trajectory reward of the batches since the previous entry (``nan`` at step 0)."""
    zero_std_fraction: list[float] = field(default_factory=list)
    """Fraction of policy groups with zero reward std since the previous entry (``nan`` at step 0)."""
    tv_sampled_off: int = 0
    """Sampled rollouts off the mode path, over all logged steps."""
    tv_sampled_total: int = 0
    """Sampled rollouts, over all logged steps."""
    final_policy: list[list[float]] = field(default_factory=list)
    """``pi(y|x)`` after the last step."""
    strategy_kind: list[str] = field(default_factory=list)
    """``specialist`` or ``generalist`` per strategy (a description of the reward draw)."""

    @property
    def tv_bound_holds(self) -> bool:
        return all(t <= b * (1 + BOUND_RTOL) + BOUND_RTOL for t, b in zip(self.tv, self.tv_bound, strict=True))

    @property
    def grad_bound_holds(self) -> bool:
        return all(g <= b * (1 + BOUND_RTOL) + BOUND_RTOL for g, b in zip(self.grad_gap, self.grad_bound, strict=True))

    def tv_sampled_check(self) -> SampledTVCheck:
        """The TV bound against the sampled TV, pooled over the logged steps."""
        return tv_sampled_check(self.tv_sampled_off, self.tv_sampled_total, float(np.mean(self.tv_bound)))

    def corollary_3_5(self) -> LogOddsFit:
        """Line through the exploit log-odds in their middle phase (Corollary 3.5)."""
        return log_odds_fit(self.steps, self.exploit_log_odds)

    def summary(self) -> RunSummary:
        """End-of-run numbers: rewards at start, peak and end, entropy ratio, bound tightness."""
        peak = int(np.argmax(self.heldout_reward))
        tight = [t for t in self.grad_tightness if not math.isnan(t)]
        return {
            "train_reward_start": self.train_reward[0],
            "train_reward_peak": max(self.train_reward),
            "train_reward_end": self.train_reward[-1],
            "heldout_reward_start": self.heldout_reward[0],
            "heldout_reward_peak": self.heldout_reward[peak],
            "heldout_reward_peak_step": self.steps[peak],
            "heldout_reward_end": self.heldout_reward[-1],
            "heldout_sim_reward_start": self.heldout_sim_reward[0],
            "heldout_sim_reward_peak": max(self.heldout_sim_reward),
            "heldout_sim_reward_end": self.heldout_sim_reward[-1],
            "policy_entropy_start": self.policy_entropy[0],
            "policy_entropy_end": self.policy_entropy[-1],
            "entropy_ratio": self.policy_entropy[-1] / self.policy_entropy[0],
            "collapse_error_end": self.collapse_error[-1],
            "max_tv_over_bound": max(t / b if b > 0 else 0.0 for t, b in zip(self.tv, self.tv_bound, strict=True)),
            "max_grad_gap_over_bound": max(tight) if tight else 0.0,
            "grad_tightness_end": self.grad_tightness[-1] if not math.isnan(self.grad_tightness[-1]) else None,
        }

    def to_json(self) -> dict[str, JsonValue]:
        """The results object (schema ``collapse-probe/lab/v1``), ready for :func:`json.dumps`.

        ``nan`` entries are written as ``None`` so the output is strict JSON.
        """

        def clean(values: Sequence[float]) -> list[float | None]:
            return [None if isinstance(v, float) and math.isnan(v) else v for v in values]

        from collapse_probe.results import LabRunResults

        tv_check = self.tv_sampled_check()
        payload = {
            "schema": SCHEMA,
            "method": self.config.method,
            "config": self.config.to_dict(),
            "reward_family": REWARD_FAMILY,
            "steps": list(self.steps),
            "train_reward": clean(self.train_reward),
            "heldout_reward": clean(self.heldout_reward),
            "heldout_sim_reward": clean(self.heldout_sim_reward),
            "policy_entropy": clean(self.policy_entropy),
            "collapse_error": clean(self.collapse_error),
            "accumulated_collapse_error": clean(self.accumulated_collapse_error),
            "tv": clean(self.tv),
            "tv_sampled": clean(self.tv_sampled),
            "tv_bound": clean(self.tv_bound),
            "grad_gap": clean(self.grad_gap),
            "grad_bound": clean(self.grad_bound),
            "grad_tightness": clean(self.grad_tightness),
            "exploit_log_odds": clean(self.exploit_log_odds),
            "sampled_train_reward": clean(self.sampled_train_reward),
            "zero_std_fraction": clean(self.zero_std_fraction),
            "bound_checks": {
                "tv_bound_holds": self.tv_bound_holds,
                "grad_bound_holds": self.grad_bound_holds,
                "tv_sampled_bound_holds": tv_check["holds"],
            },
            "tv_sampled_check": tv_check,
            "corollary_3_5": _clean_json(self.corollary_3_5()),
            "summary": _clean_json(self.summary()),
            "final_policy": self.final_policy,
            "strategy_kind": self.strategy_kind,
        }
        return LabRunResults.build(payload).to_json()

    def to_json_str(self) -> str:
        """:meth:`to_json` serialised with two-space indentation."""
        return json.dumps(self.to_json(), indent=2)


def _clean_json(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean_json(v) for v in obj]
    if isinstance(obj, np.floating | np.integer):
        return _clean_json(obj.item())
    return obj


# ---------------------------------------------------------------- checks and statistics


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (:func:`collapse_probe.metrics._intervals.wilson`)."""
    from collapse_probe.metrics._intervals import wilson

    if n <= 0:
        return (0.0, 1.0)
    lo, hi = wilson(successes / n, n, z)
    return (float(lo), float(hi))


class SampledTVCheck(TypedDict):
    """Theorem 3.2's TV bound against the sampled TV (:func:`tv_sampled_check`)."""

    estimate: float | None
    """Share of sampled rollouts that left the mode path (``None`` without any)."""
    ci95: list[float]
    n: int
    bound: float
    holds: bool
    """Whether even the lower end of the 99.9 % Wilson interval stays within the bound."""


class LogOddsFit(TypedDict):
    """A least-squares line through the exploit log-odds in their middle phase (:func:`log_odds_fit`)."""

    slope: float | None
    intercept: float | None
    r2: float | None
    n_points: int


class SeedStat(TypedDict):
    """A number's mean over seeds with its 95 % Student-t interval (:func:`mean_ci`)."""

    mean: float | None
    ci95: list[float | None] | None
    n_seeds: int


class RunSummary(TypedDict):
    """A lab run's end-of-run numbers (:meth:`LabResult.summary`)."""

    train_reward_start: float
    train_reward_peak: float
    train_reward_end: float
    heldout_reward_start: float
    heldout_reward_peak: float
    heldout_reward_peak_step: int
    heldout_reward_end: float
    heldout_sim_reward_start: float
    heldout_sim_reward_peak: float
    heldout_sim_reward_end: float
    policy_entropy_start: float
    policy_entropy_end: float
    entropy_ratio: float
    collapse_error_end: float
    max_tv_over_bound: float
    max_grad_gap_over_bound: float
    grad_tightness_end: float | None


SummaryNumber = Literal[
    "train_reward_start",
    "train_reward_peak",
    "train_reward_end",
    "heldout_reward_start",
    "heldout_reward_peak",
    "heldout_reward_end",
    "heldout_sim_reward_start",
    "heldout_sim_reward_peak",
    "heldout_sim_reward_end",
    "policy_entropy_start",
    "policy_entropy_end",
    "entropy_ratio",
    "collapse_error_end",
    "max_tv_over_bound",
    "max_grad_gap_over_bound",
]
"""A number of :class:`RunSummary` that a comparison averages over seeds."""


def tv_sampled_check(off: int, total: int, bound: float) -> SampledTVCheck:
    """Theorem 3.2's TV bound against a sampled estimate of ``TV(P_phi, P_mode)``.

    ``TV`` to the mode-only simulator is the probability that a rollout leaves the mode path, so
    the share of sampled rollouts that leave it estimates it without the exact analysis. The check
    fails when even the lower end of the 99.9% Wilson interval exceeds ``bound``.
    """
    lo, hi = wilson_interval(off, total)
    lo_check, _ = wilson_interval(off, total, z=TV_CHECK_Z)
    return {
        "estimate": off / total if total else None,
        "ci95": [lo, hi],
        "n": total,
        "bound": bound,
        "holds": bool(lo_check <= bound * (1 + BOUND_RTOL) + BOUND_RTOL),
    }


def log_odds_fit(
    steps: Sequence[float], log_odds: Sequence[float], phase: tuple[float, float] = LOG_ODDS_PHASE
) -> LogOddsFit:
    """Least-squares line through the log-odds in ``phase`` with its R^2 (``None`` with fewer than 5 points)."""
    s, lo = np.asarray(steps, dtype=float), np.asarray(log_odds, dtype=float)
    mid = (lo >= phase[0]) & (lo <= phase[1])
    n = int(mid.sum())
    if n < 5 or np.ptp(s[mid]) == 0:
        return {"slope": None, "intercept": None, "r2": None, "n_points": n}
    slope, intercept = np.polyfit(s[mid], lo[mid], 1)
    resid = lo[mid] - (slope * s[mid] + intercept)
    var = lo[mid].var()
    r2 = 1.0 - resid.var() / var if var > 0 else None
    return {
        "slope": float(slope),
        "intercept": float(intercept),
        "r2": None if r2 is None else float(r2),
        "n_points": n,
    }


def mean_ci(values: Sequence[float | None]) -> SeedStat:
    """Mean over seeds with a two-sided 95% Student-t interval (:func:`collapse_probe.metrics.transfer.mean_ci`);
    ``None`` and ``nan`` are left out."""
    from collapse_probe.metrics.transfer import mean_ci as t_interval

    est = t_interval([v for v in values if v is not None and math.isfinite(v)])
    return {"mean": est.value, "ci95": None if est.lo is None else [est.lo, est.hi], "n_seeds": est.n}


# ---------------------------------------------------------------- the simulator side


class SimulatorSide:
    """The user side of one method, for every seed at once: what plays each batch, what is trained,
    what the exact analysis sees. Built from the simulator families alone (it cannot reach ``q*``).
    """

    def __init__(self, config: LabConfig, families: SimulatorFamilies, n_strategies: int, horizon: int) -> None:
        self.config = config
        self.method: TrainMethod = get_method(config.method, "method", lab=True)
        self.n_strategies = n_strategies
        self.horizon = horizon
        tau = config.sim_temperature
        m = self.method
        s, h = n_strategies, horizon
        self.logits: np.ndarray | None = None
        self.pool: deque[np.ndarray] = deque(maxlen=config.pool_size)
        self.snapshot: np.ndarray | None = None
        self.members: list[TabularSimulator] = []
        self.frozen: TabularSimulator | None = None
        if m.trains_simulator:  # a table initialised at phi_0, trained on its own turns
            if m.verbalized or m.personas or m.schedule == "rotate":
                raise ConfigError(f"method {m.name!r}: the lab trains only a plain simulator table")
            phi = families.aligned_logits(0, tau)  # [N, X, B]
            n, x, b = phi.shape
            self.logits = np.broadcast_to(phi[:, :, None, None, :], (n, x, s, h, b)).copy()
            self.pool.append(self.logits.copy())
            self.snapshot = self.logits.copy()
        elif m.schedule == "rotate":
            if m.verbalized or m.personas:
                raise ConfigError(f"method {m.name!r}: the lab rotates aligned simulators only")
            self.members = [
                TabularSimulator.from_task_distribution(families.aligned(k, tau), s, h)
                for k in range(config.ensemble_size)
            ]
        elif m.schedule == "pool" or (m.verbalized and m.personas):
            raise ConfigError(f"method {m.name!r}: the lab has no such frozen simulator")
        elif m.verbalized:
            self.frozen = TabularSimulator.from_task_distribution(families.verbalized(0, tau, config.vs_error), s, h)
        elif m.personas:
            personas = families.personas(0, tau)  # [N, P, X, B]
            n, p, x, _ = personas.shape
            weights = np.broadcast_to(families.persona_prior[:, 0, None, :], (n, x, p)).copy()
            self.frozen = TabularSimulator.from_components(personas, weights, s, h)
        else:
            self.frozen = TabularSimulator.from_task_distribution(families.aligned(0, tau), s, h)

    @staticmethod
    def _table(logits: np.ndarray | None) -> TabularSimulator:
        if logits is None:  # only the trainable methods hold logits
            raise RuntimeError("this method has no trainable simulator table")
        return TabularSimulator.from_table(softmax(logits))

    def effective(self) -> TabularSimulator:
        """The user distribution a rollout of the next batch is drawn from (marginalised)."""
        m = self.method
        if m.simulator == "self":  # the lagged copy plays the user
            return self._table(self.snapshot)
        if m.schedule == "pool":
            return TabularSimulator.mixture([self._table(p) for p in self.pool])
        if m.trains_simulator:
            return self._table(self.logits)
        if m.schedule == "rotate":
            return TabularSimulator.mixture(self.members)
        assert self.frozen is not None
        return self.frozen

    def played(self, step: int, rngs: Sequence[np.random.Generator]) -> tuple[TabularSimulator, np.ndarray | None]:
        """Simulator that plays the batch of ``step`` and its logits when it is a table."""
        m = self.method
        if m.simulator == "self":
            return self._table(self.snapshot), self.snapshot
        if m.schedule == "pool":
            stacked = np.stack(list(self.pool), axis=1)  # [N, K, X, S, H, B]
            pick = np.array([int(g.integers(len(self.pool))) for g in rngs])
            chosen = stacked[np.arange(len(rngs)), pick]
            return self._table(chosen), chosen
        if m.trains_simulator:
            return self._table(self.logits), self.logits
        if m.schedule == "rotate":
            return self.members[step % len(self.members)], None
        assert self.frozen is not None
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
        """REINFORCE on the simulator's own turns of this batch (trainable methods only).

        Args:
            tasks: ``[X, G]``; strategies ``[N, X, G]``; behaviours ``[N, X, G, H]``; rewards ``[N, X, G]``.
        """
        if self.logits is None:
            return
        config = self.config
        mode = self.method.simulator_reward(config.cotrain_reward)
        assert mode is not None  # a trained simulator has a reward
        n, x, g = rewards.shape
        if mode == "curriculum":  # credited across the groups of one seed's batch
            adv = np.stack([simulator_advantages(r, mode, eps=config.adv_eps)[0] for r in rewards])  # [N, X, G]
        else:  # per group: every seed's groups at once
            adv = simulator_advantages(rewards.reshape(n * x, g), mode, eps=config.adv_eps)[0].reshape(n, x, g)
        shape = behaviours.shape  # [N, X, G, H]
        ns = np.broadcast_to(np.arange(n)[:, None, None, None], shape)
        xs = np.broadcast_to(tasks[None, :, :, None], shape)
        ys = np.broadcast_to(strategies[..., None], shape)
        turns = np.broadcast_to(np.arange(self.horizon), shape)
        live = softmax(self.logits)[ns, xs, ys, turns]  # [N, X, G, H, B]
        weight = np.ones(shape)
        pick = behaviours[..., None]
        if played_logits is not None and played_logits is not self.logits:
            played = softmax(played_logits)[ns, xs, ys, turns]
            ratio = np.take_along_axis(live, pick, -1)[..., 0] / np.take_along_axis(played, pick, -1)[..., 0]
            weight = np.minimum(1.0, ratio)
        score = -live
        np.put_along_axis(score, pick, np.take_along_axis(score, pick, -1) + 1.0, -1)
        contrib = (adv[..., None] * weight)[..., None] * score / config.group_size
        np.add.at(self.logits, (ns, xs, ys, turns), config.sim_lr * contrib)
        if self.method.snapshots and (step + 1) % config.snapshot_every == 0:
            self.pool.append(self.logits.copy())
            self.snapshot = self.logits.copy()


@dataclass
class BatchStats:
    """What the training loop tells the evaluator about the batches since the last log."""

    sampled_reward: np.ndarray
    """``[N]`` mean sampled trajectory reward (``nan`` before the first batch)."""
    zero_std_fraction: np.ndarray
    """``[N]`` share of zero-std policy groups (``nan`` before the first batch)."""


Observer = Callable[[int, np.ndarray, SimulatorSide, BatchStats], None]


def train_policy(
    config: LabConfig,
    reward: np.ndarray,
    sims: SimulatorSide,
    rngs: Sequence[np.random.Generator],
    observe: Observer,
) -> np.ndarray:
    """Group-relative REINFORCE of the softmax-table policy, for every seed at once.

    The loop sees the reward table (the environment's reward), the simulators and its generators --
    nothing else. ``observe(step, policy, sims, stats)`` is called at step 0, every
    ``eval_every`` steps and at the last step; it must not change its arguments.

    Args:
        config: the run configuration.
        reward: ``r(x, y, b)``, ``[N, X, S, B]``.
        sims: the simulator side of the method.
        rngs: one training generator per seed.
        observe: the evaluation callback.

    Returns:
        The final logit table ``theta``, ``[N, X, S]``.
    """
    n, x, s, _ = reward.shape
    g, h = config.group_size, sims.horizon
    theta = np.zeros((n, x, s))
    nan = np.full(n, np.nan)
    observe(0, softmax(theta), sims, BatchStats(nan, nan))
    tasks = np.repeat(np.arange(x)[:, None], g, axis=1)  # [X, G]
    ns = np.arange(n)[:, None, None]
    pending_r: list[np.ndarray] = []
    pending_z: list[np.ndarray] = []
    width = x * g * (2 + h)
    for step in range(config.steps):
        policy = softmax(theta)
        u = np.stack([r.random(width) for r in rngs])
        u_policy = u[:, : x * g].reshape(n, x, g, 1)
        u_comp = u[:, x * g : 2 * x * g].reshape(n, x, g, 1)
        u_turns = u[:, 2 * x * g :].reshape(n, x, g, h, 1)
        cum = np.cumsum(policy, axis=-1)
        cum[..., -1] = 1.0
        strategies = (u_policy < cum[:, :, None, :]).argmax(axis=-1)  # [N, X, G]
        played, played_logits = sims.played(step, rngs)
        behaviours = played.sample(tasks, strategies, u_comp, u_turns)  # [N, X, G, H]
        rewards = reward[ns[..., None], tasks[None, :, :, None], strategies[..., None], behaviours].mean(axis=-1)
        adv, zero_std = group_relative_advantages(rewards.reshape(n * x, g), eps=config.adv_eps)
        adv = adv.reshape(n, x, g)
        # grad of mean_i A_i log pi(y_i|x) w.r.t. theta[x] = mean_i A_i (e_{y_i} - pi(.|x))
        onehot = np.eye(s)[strategies]  # [N, X, G, S]
        grad = (np.einsum("nxg,nxgs->nxs", adv, onehot) - policy * adv.sum(axis=-1, keepdims=True)) / g
        theta += config.lr * grad
        sims.update(step, tasks, strategies, behaviours, rewards, played_logits)
        pending_r.append(rewards.mean(axis=(1, 2)))
        pending_z.append(zero_std.reshape(n, x).mean(axis=1))
        done = step + 1
        if done % config.eval_every == 0 or done == config.steps:
            observe(done, softmax(theta), sims, BatchStats(np.mean(pending_r, axis=0), np.mean(pending_z, axis=0)))
            pending_r.clear()
            pending_z.clear()
    return theta


class Evaluator:
    """Exact and sampled metrics of the policy against every simulator and the real users.

    The only reader of :class:`~collapse_probe.trainers._lab_world.RealUsers`; it is called by the
    training loop with the current policy and the simulator side, and records one entry per call.
    """

    def __init__(self, config: LabConfig, world: LabWorld, rngs: Sequence[np.random.Generator]) -> None:
        self.config = config
        self.world = world
        self.rngs = rngs
        tau = config.sim_temperature
        self.rewards_seq = trajectory_rewards(world.reward, world.horizon)
        self.r_max = world.reward.max(axis=(1, 2, 3))  # [N]
        self.heldout_sims = [world.families.aligned(k, tau) for k in config.heldout_families]
        self.digits = sequence_digits(world.n_behaviours, world.horizon)
        self.log: dict[str, list[np.ndarray]] = {}
        self.steps: list[int] = []
        self.tv_off = np.zeros(world.n_seeds, dtype=int)
        self.tv_total = 0

    def _add(self, key: str, value: np.ndarray) -> None:
        self.log.setdefault(key, []).append(np.asarray(value, dtype=float))

    def _sampled_tv(self, sim: TabularSimulator, policy: np.ndarray, mode_path: np.ndarray) -> np.ndarray:
        world, m = self.world, self.config.tv_samples
        n, x, h, b = world.n_seeds, world.n_tasks, world.horizon, world.n_behaviours
        u = np.stack([r.random(m * (2 + h)) for r in self.rngs])
        tasks = np.arange(m) % x
        cum = np.cumsum(policy[:, tasks], axis=-1)
        cum[..., -1] = 1.0
        strategies = (u[:, :m, None] < cum).argmax(axis=-1)  # [N, M]
        behaviours = sim.sample(tasks, strategies, u[:, m : 2 * m, None], u[:, 2 * m :].reshape(n, m, h, 1))
        flat = (behaviours * (b ** np.arange(h - 1, -1, -1))).sum(axis=-1)  # row-major sequence index
        on_path = flat == mode_path[np.arange(n)[:, None], tasks[None], strategies]
        off = (~on_path).sum(axis=1)
        self.tv_off += off
        self.tv_total += m
        return off / m

    def __call__(self, step: int, policy: np.ndarray, sims: SimulatorSide, stats: BatchStats) -> None:
        world = self.world
        sim = sims.effective()
        exact = analyse(sim, policy, self.rewards_seq)
        bound = 2.0 * SCORE_NORM_BOUND * self.r_max * exact.accumulated_collapse_error
        best = exact.q_mode.argmax(axis=-1)  # [N, X]
        p_best = np.clip(np.take_along_axis(policy, best[..., None], axis=-1)[..., 0], 1e-12, 1 - 1e-12)
        self.steps.append(step)
        self._add("train_reward", exact.expected_reward)
        self._add("heldout_reward", expected_reward(world.reward, policy, world.real_users.probs))
        self._add(
            "heldout_sim_reward",
            np.mean([expected_reward(world.reward, policy, phi) for phi in self.heldout_sims], axis=0),
        )
        self._add("policy_entropy", policy_entropy(policy))
        self._add("collapse_error", exact.collapse_error)
        self._add("accumulated_collapse_error", exact.accumulated_collapse_error)
        self._add("tv", exact.tv)
        self._add("tv_sampled", self._sampled_tv(sim, policy, exact.mode_path))
        self._add("tv_bound", exact.accumulated_collapse_error)
        self._add("grad_gap", exact.grad_gap)
        self._add("grad_bound", bound)
        with np.errstate(divide="ignore", invalid="ignore"):
            self._add("grad_tightness", np.where(bound > 0, exact.grad_gap / np.where(bound > 0, bound, 1), np.nan))
        self._add("exploit_log_odds", np.log(p_best / (1 - p_best)).mean(axis=-1))
        self._add("sampled_train_reward", stats.sampled_reward)
        self._add("zero_std_fraction", stats.zero_std_fraction)

    def results(self, config: LabConfig, seeds: Sequence[int], theta: np.ndarray) -> list[LabResult]:
        """One :class:`LabResult` per seed."""
        arrays = {k: np.stack(v, axis=1) for k, v in self.log.items()}  # [N, n_logs]
        kinds = self.world.strategy_kind()
        policy = softmax(theta)
        out = []
        for i, seed in enumerate(seeds):
            res = LabResult(
                config=config.replace(seed=seed),
                steps=list(self.steps),
                tv_sampled_off=int(self.tv_off[i]),
                tv_sampled_total=self.tv_total,
                final_policy=policy[i].round(6).tolist(),
                strategy_kind=kinds[i],
            )
            for k, v in arrays.items():
                setattr(res, k, [float(a) for a in v[i]])
            out.append(res)
        return out


def build_world(config: LabConfig, seeds: Sequence[int]) -> LabWorld:
    """The worlds of ``seeds`` under ``config``'s world parameters."""
    return draw_world(
        list(seeds),
        n_tasks=config.n_tasks,
        n_strategies=config.n_strategies,
        n_behaviours=config.n_behaviours,
        horizon=config.horizon,
        n_families=config.n_families,
        n_personas=config.n_personas,
        user_spread=config.user_spread,
        delta=config.delta,
        persona_scale=config.persona_scale,
    )


def run_lab_seeds(config: LabConfig, seeds: Sequence[int]) -> list[LabResult]:
    """Train ``config.method`` in the worlds of ``seeds`` at once (vectorised over seeds).

    Each seed's numbers are those of a run with that seed alone up to floating-point summation
    order; within one call, runs that differ only in method share their worlds and random streams.
    """
    from collapse_probe.trainers._lab_world import seed_streams

    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ConfigError("seeds: expected at least one seed")
    world = build_world(config, seeds)
    streams = [seed_streams(s) for s in seeds]
    sims = SimulatorSide(config, world.families, world.n_strategies, world.horizon)
    evaluator = Evaluator(config, world, [g["eval"] for g in streams])
    theta = train_policy(config, world.reward, sims, [g["train"] for g in streams], evaluator)
    return evaluator.results(config, seeds, theta)


def run_lab(config: LabConfig) -> LabResult:
    """Train the tabular policy with one method and one seed and log exact metrics.

    Returns:
        A :class:`LabResult` with one entry per logged step (step 0, every ``eval_every`` steps, and
        the last step).
    """
    return run_lab_seeds(config, [config.seed])[0]


# ---------------------------------------------------------------- many seeds: compare and sweep


@dataclass(frozen=True)
class CompareRun:
    """One row of a comparison: a method and, for the co-trained simulators, their reward."""

    method: str
    cotrain_reward: str | None = None

    @property
    def label(self) -> str:
        return self.method if self.cotrain_reward is None else f"{self.method} ({self.cotrain_reward})"


def compare_runs(cotrain_reward: str = "adversarial") -> list[CompareRun]:
    """The rows of ``--compare``: every method (co-trained ones with ``cotrain_reward``), then
    ``cotrain`` with each other simulator reward."""
    methods = [get_method(m, lab=True) for m in METHODS]
    rows = [CompareRun(m.name, cotrain_reward if m.takes_cotrain_reward else None) for m in methods]
    rows += [
        CompareRun(m.name, r)
        for m in methods
        if m.compare_rewards
        for r in SIMULATOR_REWARD_MODES
        if r != cotrain_reward
    ]
    return rows


def run_compare_seeds(
    config: LabConfig,
    seeds: Sequence[int],
    runs: Sequence[CompareRun] | None = None,
    tick: Callable[[], object] | None = None,
) -> dict[str, list[LabResult]]:
    """``{label: per-seed results}`` for every row of the comparison; ``tick`` is called after each row
    (a progress bar's ``update``)."""
    runs = compare_runs(config.cotrain_reward) if runs is None else runs
    out = {}
    for row in runs:
        cfg = config.replace(method=row.method, cotrain_reward=row.cotrain_reward or config.cotrain_reward)
        out[row.label] = run_lab_seeds(cfg, seeds)
        if tick is not None:
            tick()
    return out


CURVE_KEYS = ("train_reward", "heldout_reward", "heldout_sim_reward", "policy_entropy", "collapse_error")
"""Per-step curves a comparison keeps (seed mean and 95% interval per logged step)."""


class MethodBounds(TypedDict):
    """How the theorems' bounds held over a method's seeds (``compare.json`` ``methods[].bounds``)."""

    tv_exact_holds_all: bool
    grad_holds_all: bool
    tv_sampled_holds: int
    """Seeds whose sampled TV stayed within its bound."""
    tv_sampled_n_seeds: int
    tv_sampled: SeedStat
    tv_exact_over_bound_max: SeedStat
    grad_tightness_max: SeedStat
    grad_tightness_end: SeedStat


class CorollarySummary(TypedDict):
    """Corollary 3.5's log-odds fit over a method's seeds (``compare.json`` ``methods[].corollary_3_5``)."""

    slope: SeedStat
    r2: SeedStat
    n_seeds_with_phase: int
    """Seeds whose exploit log-odds had a middle phase to fit."""


CurvePoint = dict[str, float | list[float | None] | None]
"""One logged step of a method's seed-mean curve: ``step``, each of :data:`CURVE_KEYS` (the mean) and
its ``KEY_ci95``."""


class MethodSummary(TypedDict):
    """One entry of ``compare.json``'s ``methods`` list (before its ``*_vs_single`` differences):
    every headline number as mean, ci95, n_seeds (:func:`summarise_method`)."""

    method: str
    label: str
    cotrain_reward: str | None
    heldout_final: SeedStat
    heldout_peak: SeedStat
    heldout_start: SeedStat
    heldout_sim_final: SeedStat
    heldout_sim_peak: SeedStat
    train_final: SeedStat
    train_peak: SeedStat
    entropy_start: SeedStat
    entropy_end: SeedStat
    entropy_ratio: SeedStat
    collapse_error_final: SeedStat
    heldout_drop_from_peak: SeedStat
    bounds: MethodBounds
    corollary_3_5: CorollarySummary
    curve: list[CurvePoint]


def summarise_method(label: str, method: str, results: Sequence[LabResult]) -> MethodSummary:
    """One entry of ``compare.json``'s ``methods`` list: every headline number as mean, ci95, n_seeds."""
    sums = [r.summary() for r in results]
    fits = [r.corollary_3_5() for r in results]
    tv_checks = [r.tv_sampled_check() for r in results]

    def stat(key: SummaryNumber) -> SeedStat:
        return mean_ci([s[key] for s in sums])

    curve = []
    for i, step in enumerate(results[0].steps):
        row: CurvePoint = {"step": step}
        for key in CURVE_KEYS:
            st = mean_ci([getattr(r, key)[i] for r in results])
            row[key] = st["mean"]
            row[f"{key}_ci95"] = st["ci95"]
        curve.append(row)
    summary: MethodSummary = _clean_json(
        {
            "method": method,
            "label": label,
            "cotrain_reward": results[0].config.cotrain_reward
            if get_method(method, lab=True).takes_cotrain_reward
            else None,
            "heldout_final": stat("heldout_reward_end"),
            "heldout_peak": stat("heldout_reward_peak"),
            "heldout_start": stat("heldout_reward_start"),
            "heldout_sim_final": stat("heldout_sim_reward_end"),
            "heldout_sim_peak": stat("heldout_sim_reward_peak"),
            "train_final": stat("train_reward_end"),
            "train_peak": stat("train_reward_peak"),
            "entropy_start": stat("policy_entropy_start"),
            "entropy_end": stat("policy_entropy_end"),
            "entropy_ratio": stat("entropy_ratio"),
            "collapse_error_final": stat("collapse_error_end"),
            "heldout_drop_from_peak": mean_ci([s["heldout_reward_peak"] - s["heldout_reward_end"] for s in sums]),
            "bounds": {
                "tv_exact_holds_all": all(r.tv_bound_holds for r in results),
                "grad_holds_all": all(r.grad_bound_holds for r in results),
                "tv_sampled_holds": sum(c["holds"] for c in tv_checks),
                "tv_sampled_n_seeds": len(tv_checks),
                "tv_sampled": mean_ci([c["estimate"] for c in tv_checks]),
                "tv_exact_over_bound_max": mean_ci([s["max_tv_over_bound"] for s in sums]),
                "grad_tightness_max": mean_ci([s["max_grad_gap_over_bound"] for s in sums]),
                "grad_tightness_end": mean_ci([s["grad_tightness_end"] for s in sums]),
            },
            "corollary_3_5": {
                "slope": mean_ci([f["slope"] for f in fits]),
                "r2": mean_ci([f["r2"] for f in fits]),
                "n_seeds_with_phase": sum(f["slope"] is not None for f in fits),
            },
            "curve": curve,
        }
    )
    return summary


def _shared_config(config: LabConfig) -> dict[str, object]:
    """The configuration every row of a comparison or sweep shares (its method and seed left out)."""
    return {k: v for k, v in config.to_dict().items() if k not in ("method", "seed")}


PAIRED_KEYS: dict[str, SummaryNumber] = {
    "heldout_final": "heldout_reward_end",
    "heldout_sim_final": "heldout_sim_reward_end",
    "train_final": "train_reward_end",
}
"""Numbers also reported as a paired difference to the baseline method (``single``,
:data:`~collapse_probe.trainers.methods.BASELINE`) in the same worlds (``*_vs_single``)."""


def paired_vs_single(results: dict[str, list[LabResult]], label: str) -> dict[str, SeedStat]:
    """``{key_vs_single: mean, ci95, n_seeds}`` of ``label`` minus the baseline ``single``, seed by seed.

    Every row of a comparison trains in the same worlds (same seeds), so the per-seed difference
    removes the world-to-world spread that dominates each row's own interval.
    """
    if BASELINE not in results:
        return {}
    base = {r.config.seed: r.summary() for r in results[BASELINE]}
    out = {}
    for key, field_name in PAIRED_KEYS.items():
        diffs = [r.summary()[field_name] - base[r.config.seed][field_name] for r in results[label]]
        out[f"{key}_vs_single"] = mean_ci(diffs)
    return out


def compare_results(config: LabConfig, seeds: Sequence[int], results: dict[str, list[LabResult]]) -> LabCompareResults:
    """The comparison of the rows of :func:`run_compare_seeds` (``compare.json``, schema
    ``collapse-probe/lab-compare/v2``)."""
    summaries = [summarise_method(label, rs[0].config.method, rs) for label, rs in results.items()]
    methods = [{**m, **paired_vs_single(results, m["label"])} for m in summaries]
    from collapse_probe.results import LabCompareResults

    payload = {
        "schema": COMPARE_SCHEMA,
        "seeds": list(seeds),
        "n_seeds": len(seeds),
        "seed": seeds[0],
        "steps": config.steps,
        "cotrain_reward": config.cotrain_reward,
        "config": _shared_config(config),
        "reward_family": REWARD_FAMILY,
        "heldout_families": list(config.heldout_families),
        "methods": methods,
        "heldout_reward_end": {m["label"]: m["heldout_final"]["mean"] for m in summaries},
    }
    return LabCompareResults.build(payload)


SWEEP_POINT_KEYS = (
    "heldout_final",
    "heldout_sim_final",
    "train_final",
    "heldout_peak",
    "entropy_ratio",
    "heldout_final_vs_single",
    "heldout_sim_final_vs_single",
)
"""What a sweep keeps of each comparison row at each value."""


def _check_value(flag: str, value: float) -> None:
    """``value`` of a lab flag (or of one of its sweep values), checked by the field's declared constraints."""
    check_field(LabConfig, flag[2:].replace("-", "_"), value, flag)


def parse_sweep(spec: str) -> tuple[str, list[float]]:
    """``"PARAM=v1,v2,..."`` -> ``(PARAM, [v1, v2, ...])``, each value checked like its own flag."""
    param, sep, raw = spec.partition("=")
    param = param.strip()
    if not sep or param not in SWEEP_PARAMS:
        raise ConfigError(
            f"--sweep: expected PARAM=V1,V2,... with PARAM one of {', '.join(SWEEP_PARAMS)}; got {spec!r}"
        )
    items = raw.split(",")
    if len(items) > MAX_SWEEP_VALUES:
        raise ConfigError(
            f"--sweep: at most {MAX_SWEEP_VALUES} values of {param} (each runs every method); got {len(items):,}"
        )
    values = []
    for item in items:
        try:
            values.append(float(item))
        except ValueError:
            raise ConfigError(f"--sweep: {param} values must be numbers; got {item.strip()!r} in {spec!r}") from None
    try:
        for v in values:
            _check_value(f"--{param}", v)
    except ConfigError as exc:
        raise ConfigError(f"--sweep: {exc}") from None
    if len(set(values)) != len(values):
        raise ConfigError(f"--sweep: {param} values repeat in {spec!r}")
    return param, values


class SweepRow(TypedDict):
    """One method's row of ``sweep.json``: its :data:`SWEEP_POINT_KEYS` at each value of the parameter."""

    method: str
    label: str
    points: list[dict[str, object]]
    """``{"value": v, key: its SeedStat, ...}`` per value swept."""


def run_sweep(
    config: LabConfig,
    param: str,
    values: Sequence[float],
    seeds: Sequence[int],
    runs: Sequence[CompareRun] | None = None,
    tick: Callable[[], object] | None = None,
) -> LabSweepResults:
    """Each comparison row's held-out numbers over a grid of one parameter (``sweep.json``).

    Args:
        param: a key of :data:`SWEEP_PARAMS` (``sim-temperature``, ``vs-error``, ``delta``).
        values: the grid.
        tick: called after each row at each value (a progress bar's ``update``).
    """
    if param not in SWEEP_PARAMS:
        raise ConfigError(f"sweep parameter must be one of {', '.join(SWEEP_PARAMS)}; got {param!r}")
    attr = SWEEP_PARAMS[param]
    rows: dict[str, SweepRow] = {}
    for value in values:
        cfg = config.replace(**{attr: value})
        results = run_compare_seeds(cfg, seeds, runs, tick)
        for label, rs in results.items():
            summary = summarise_method(label, rs[0].config.method, rs)
            entry = {**summary, **paired_vs_single(results, label)}
            row = rows.setdefault(label, {"method": summary["method"], "label": label, "points": []})
            point: dict[str, object] = {"value": value}
            for key in SWEEP_POINT_KEYS:
                if key in entry:
                    point[key] = entry[key]
            row["points"].append(point)
    from collapse_probe.results import LabSweepResults

    payload = {
        "schema": SWEEP_SCHEMA,
        "param": param,
        "field": attr,
        "values": list(values),
        "seeds": list(seeds),
        "n_seeds": len(seeds),
        "config": _shared_config(config),
        "methods": list(rows.values()),
    }
    return LabSweepResults.build(payload)
