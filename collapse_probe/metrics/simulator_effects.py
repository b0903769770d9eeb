"""How much of a score is the simulator: the effect of swapping the user simulator on an agent's success
rate, paired by task, against the noise of rerunning one configuration (``collapse-probe compare``).

The data are, per agent, simulator and task, the successes of the task's trials (a trial succeeds when
its reward is at least a threshold; infrastructure failures are not trials). Tasks are held fixed:
every quantity is about the tasks the runs share, not a population of tasks they were drawn from.

**Simulator effect** (:func:`simulator_effect`). Over the ``n`` tasks two simulators share, the success
rate under a simulator is the mean over tasks of the task's share of successful trials,
``R = (1/n) Σ_t c_t / k_t``, and the effect is ``D = R₁ − R₀``. The truth it estimates is
``δ = (1/n) Σ_t (p₁ₜ − p₀ₜ)`` (``p``: a task's success probability under the simulator); ``D`` is
unbiased for it. The two rates come from different conversations, so given the tasks they are
independent, with ``Var R = (1/n²) Σ_t p_t(1 − p_t)/k_t ≤ p̄(1 − p̄)/m`` where ``m = n² / Σ_t 1/k_t``
(the effective number of trials; ``m = n k`` with ``k`` trials per task): a sum of Bernoulli trials with
different probabilities is less variable than a binomial with their mean (Hoeffding 1956). That bound
holds for equal trials per task; with unequal trials (infrastructure failures, often on the longer and
harder tasks) it fails when the tasks with fewer trials are the ones nearer 0.5, so the tasks are then
grouped by their number of trials ``k_g``: ``R = Σ_g (n_g/n) R_g``, each ``R_g`` with the bound above
at ``n_g k_g`` trials, and the groups' Clopper–Pearson margins add in quadrature (MOVER for a sum). Each rate
gets the Clopper–Pearson interval of its successes in its trials (exact for the binomial, the least
concentrated case), and the two are combined into an interval for the difference by MOVER
(Newcombe 1998; Zou & Donner 2008)::

    low  = D − √((R₁ − l₁)² + (u₀ − R₀)²)
    high = D + √((u₁ − R₁)² + (R₀ − l₀)²)

Unlike a paired t interval (zero width when every task's trials agree, which is common with one trial
or rates near 0 or 1) it is never degenerate, and unlike Wald intervals it keeps its coverage at the
edges. Measured coverage, including 5 tasks, 1 trial and rates at 0 and 1: ``benchmarks/compare_coverage.py``.
Where tasks differ in difficulty the interval is conservative (the binomial bound above is loose).

**Noise floor** (:func:`noise_floor`), per agent and simulator, from the repeated trials of a task:
``flip_rate`` (:func:`collapse_probe.metrics.variance.flip_rate`: the share of the tasks with two or
more scored trials whose trials do not all agree, i.e. at least one success and one failure), pass^k
(:func:`~collapse_probe.metrics.variance.pass_hat_k`), and ``rerun_difference_ci95``: the range
``±h`` within which two reruns of the same configuration (same tasks, same trials per task) differ in
success rate 95 % of the time (a normal approximation, estimated from the data), ``h = z √(2 Σ_t v_t / k_t) / n`` with ``v_t = k_t/(k_t − 1) p̂_t(1 − p̂_t)``
the unbiased estimate of the task's Bernoulli variance (tasks with two or more trials only), at most 1
(few tasks with split trials can put the normal approximation beyond what two rates can differ by).

**Ranks** (:func:`rank_flips`, :func:`rank_correlation`): an agent's rate under a simulator is the rate
above over the tasks the compared cells share. A rank flip is a pair of agents and a pair of simulators
where the agents' observed order strictly reverses: ``R(a, s) > R(b, s)`` and ``R(a, s') < R(b, s')`` (or
the mirror); an equal rate under either simulator is a tie, never a flip. Rates are compared as exact
fractions. Kendall's τ-b is undefined when a simulator ties every agent; bootstrap resamples where it is
undefined are left out of its interval.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from scipy import stats

Outcomes = Mapping[str, Sequence[bool]]
"""Task key -> the successes of its scored trials (at least one per task)."""


def _z(level: float) -> float:
    return float(stats.norm.ppf(0.5 + level / 2))


def _task_means(outcomes: Outcomes, tasks: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    k = np.array([len(outcomes[t]) for t in tasks], dtype=float)
    if np.any(k < 1):
        raise ValueError("every task needs at least one scored trial")
    c = np.array([sum(bool(x) for x in outcomes[t]) for t in tasks], dtype=float)
    return c / k, k


def clopper_pearson(successes: float, trials: float, level: float = 0.95) -> tuple[float, float]:
    """The Clopper–Pearson interval of a binomial rate (``successes`` may be fractional: a rate times
    an effective number of trials; the beta quantiles are defined for it)."""
    a = (1 - level) / 2
    lo = 0.0 if successes <= 0 else float(stats.beta.ppf(a, successes, trials - successes + 1))
    hi = 1.0 if successes >= trials else float(stats.beta.ppf(1 - a, successes + 1, trials - successes))
    return lo, hi


@dataclass
class Rate:
    """A success rate over tasks: the mean of the tasks' shares of successful trials."""

    rate: float
    n_tasks: int
    effective_trials: float
    """``n² / Σ_t 1/k_t`` (``n k`` with ``k`` trials per task)."""
    ci95: tuple[float, float]


def success_rate(outcomes: Outcomes, tasks: Sequence[str] | None = None, level: float = 0.95) -> Rate:
    """The success rate over ``tasks`` (default all of ``outcomes``) with its interval: the Clopper–Pearson
    interval of the successes in all the trials when every task has as many trials, else the MOVER sum
    of the Clopper–Pearson intervals of each group of tasks with the same number of trials (module
    docstring)."""
    tasks = list(outcomes) if tasks is None else list(tasks)
    if not tasks:
        raise ValueError("no tasks")
    p, k = _task_means(outcomes, tasks)
    n = len(tasks)
    m = n * n / float(np.sum(1.0 / k))
    r = float(np.mean(p))
    below = above = 0.0
    for kg in np.unique(k):
        g = k == kg
        share, rate = float(np.mean(g)), float(np.mean(p[g]))  # R = Σ_g share_g · R_g
        successes = int(round(rate * kg * int(np.sum(g))))  # an integer count of the group's trials
        lo, hi = clopper_pearson(successes, kg * int(np.sum(g)), level)
        below += (share * (rate - lo)) ** 2
        above += (share * (hi - rate)) ** 2
    return Rate(r, n, m, (max(0.0, r - math.sqrt(below)), min(1.0, r + math.sqrt(above))))


@dataclass
class Effect:
    """The difference in success rate between two simulators over the tasks both ran."""

    difference: float
    ci95: tuple[float, float]
    n_tasks: int
    rate: float
    reference_rate: float
    rerun_difference_ci95: tuple[float, float] | None
    """``±h``: how far two reruns of one of the configurations would differ (the pair's mean within-task
    variance); ``None`` without two trials of a task under both."""


def simulator_effect(simulator: Outcomes, reference: Outcomes, level: float = 0.95) -> Effect:
    """``R(simulator) − R(reference)`` over the tasks both have, with the MOVER–Clopper–Pearson interval
    (module docstring).

    Raises:
        ValueError: the two share no task.
    """
    tasks = [t for t in simulator if t in reference]
    if not tasks:
        raise ValueError("the two simulators share no task")
    a, b = success_rate(simulator, tasks, level), success_rate(reference, tasks, level)
    d = a.rate - b.rate
    lo = d - math.hypot(a.rate - a.ci95[0], b.ci95[1] - b.rate)
    hi = d + math.hypot(a.ci95[1] - a.rate, b.rate - b.ci95[0])
    var = _rerun_variance(simulator, tasks), _rerun_variance(reference, tasks)
    rerun = None
    if var[0] is not None and var[1] is not None:
        # the mean of the two configurations' 2·Var R; two success rates never differ by more than 1
        h = min(1.0, _z(level) * math.sqrt(var[0] + var[1]))
        rerun = (-h, h)
    return Effect(d, (max(-1.0, lo), min(1.0, hi)), len(tasks), a.rate, b.rate, rerun)


def _rerun_variance(outcomes: Outcomes, tasks: Sequence[str]) -> float | None:
    """The unbiased estimate of ``Var R`` over ``tasks`` from the tasks with two or more trials."""
    multi = [t for t in tasks if len(outcomes[t]) >= 2]
    if not multi:
        return None
    p, k = _task_means(outcomes, multi)
    v = k / (k - 1) * p * (1 - p)  # unbiased for p_t(1 - p_t)
    return float(np.sum(v / k)) / len(multi) ** 2


@dataclass
class NoiseFloor:
    """What rerunning one configuration does to its success."""

    n_tasks: int
    tasks_with_repeats: int
    """Tasks with two or more scored trials (what ``flip_rate`` and the rerun range are over)."""
    trials: int
    flip_rate: float | None
    flipping_tasks: int
    pass_k: dict[str, float] = field(default_factory=dict)
    rerun_difference_ci95: tuple[float, float] | None = None


def noise_floor(outcomes: Outcomes, level: float = 0.95) -> NoiseFloor:
    """The flip rate, pass^k and rerun range of one agent under one simulator (module docstring)."""
    from collapse_probe.metrics.variance import flip_rate, pass_hat_k

    as_rewards = [[1.0 if x else 0.0 for x in outcomes[t]] for t in outcomes]
    multi = [v for v in as_rewards if len(v) >= 2]
    var = _rerun_variance(outcomes, list(outcomes))
    h = None if var is None else min(1.0, _z(level) * math.sqrt(2 * var))  # rates differ by at most 1
    return NoiseFloor(
        n_tasks=len(as_rewards),
        tasks_with_repeats=len(multi),
        trials=sum(len(v) for v in as_rewards),
        flip_rate=flip_rate(as_rewards),
        flipping_tasks=sum(1 for v in multi if len(set(v)) > 1),
        pass_k=pass_hat_k(as_rewards),
        rerun_difference_ci95=None if h is None else (-h, h),
    )


def exact_rate(outcomes: Outcomes, tasks: Sequence[str]) -> Fraction:
    """The success rate over ``tasks`` as an exact fraction (what rank flips compare: equal rates tie
    exactly, whatever order floating-point sums would take)."""
    return sum((Fraction(sum(map(bool, outcomes[t])), len(outcomes[t])) for t in tasks), Fraction(0)) / len(tasks)


@dataclass
class RankFlip:
    """Two agents whose observed order reverses between two simulators."""

    agents: tuple[str, str]
    simulators: tuple[str, str]
    rates: dict[str, dict[str, float]]
    """Simulator -> agent -> rate over ``n_tasks``."""
    n_tasks: int


def rank_flips(cells: Mapping[tuple[str, str], Outcomes]) -> list[RankFlip]:
    """Every pair of agents and pair of simulators where the agents' order strictly reverses, their
    rates taken over the tasks the four cells share (a pair with no shared task is not compared).

    Args:
        cells: ``(agent, simulator)`` -> outcomes by task.
    """
    agents = sorted({a for a, _ in cells})
    sims = sorted({s for _, s in cells})
    out = []
    for a, b in itertools.combinations(agents, 2):
        for s, t in itertools.combinations(sims, 2):
            four = [(a, s), (b, s), (a, t), (b, t)]
            if any(c not in cells for c in four):
                continue
            shared = [k for k in cells[four[0]] if all(k in cells[c] for c in four[1:])]
            if not shared:
                continue
            r = {c: exact_rate(cells[c], shared) for c in four}
            first, second = r[(a, s)] - r[(b, s)], r[(a, t)] - r[(b, t)]
            if first * second < 0:  # strictly opposite signs; a tie (0) under either is no flip
                rates = {s: {a: float(r[(a, s)]), b: float(r[(b, s)])}, t: {a: float(r[(a, t)]), b: float(r[(b, t)])}}
                out.append(RankFlip((a, b), (s, t), rates, len(shared)))
    return out


@dataclass
class RankCorrelation:
    """Kendall's τ-b between the agents' rates under two simulators, over the tasks all their cells share."""

    simulators: tuple[str, str]
    agents: list[str]
    tau: float | None
    """``None`` when either simulator ranks every agent equal (τ-b undefined)."""
    ci95: tuple[float, float] | None
    """Percentile bootstrap over the shared tasks (``None``: fewer than two tasks, or τ undefined)."""
    n_tasks: int


def _tau(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(set(x.tolist())) < 2 or len(set(y.tolist())) < 2:
        return None
    return float(stats.kendalltau(x, y).statistic)


def rank_correlation(
    cells: Mapping[tuple[str, str], Outcomes], s: str, t: str, *, level: float = 0.95, n_boot: int = 2000,
    seed: int = 0,
) -> RankCorrelation | None:  # fmt: skip
    """Kendall's τ-b of the agents' rates under ``s`` and under ``t`` (the agents with both cells, over
    the tasks all those cells share), with a bootstrap interval over tasks; ``None`` with fewer than two
    such agents or no shared task."""
    agents = sorted(a for a, x in cells if x == s and (a, t) in cells)
    if len(agents) < 2:
        return None
    keys = [(a, s) for a in agents] + [(a, t) for a in agents]
    shared = [k for k in cells[keys[0]] if all(k in cells[c] for c in keys[1:])]
    if not shared:
        return None
    # per cell and task: the task's share of successes
    m = np.array([_task_means(cells[c], shared)[0] for c in keys])  # (2 · agents, tasks)
    na = len(agents)
    exact = np.array([float(exact_rate(cells[c], shared)) for c in keys])  # ties exact, as rank flips read them
    tau = _tau(exact[:na], exact[na:])
    ci = None
    if tau is not None and len(shared) >= 2:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(shared), size=(n_boot, len(shared)))
        boot = [_tau(m[:na, i].mean(1), m[na:, i].mean(1)) for i in idx]
        vals = np.array([b for b in boot if b is not None])  # a resample that ties every agent has no τ
        if vals.size:
            a = (1 - level) / 2
            ci = (float(np.quantile(vals, a)), float(np.quantile(vals, 1 - a)))
    return RankCorrelation((s, t), agents, tau, ci, len(shared))
