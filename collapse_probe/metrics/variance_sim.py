"""Simulated runs with known task, simulator, agent and judge variance: the generator the variance
decomposition (:mod:`collapse_probe.metrics.variance`) is checked on (``benchmarks/variance_coverage.py``,
``docs/variance-decomposition.md``).

The form (every run of :func:`simulate` is one draw of it):

- ``tasks`` tasks; task ``i`` has a difficulty ``τ_i ~ N(task_mean, task_sd²)`` and its own *world*: at every
  conversation prefix, each side has a modal reply with its own effect ``~ N(0, sd_t²)``, drawn once per prefix.
- Each task is played ``trials`` times (an int, or ``(lo, hi)``: uniform per task). A trial is ``len(turns)``
  steps; step ``t`` is drawn by ``turns[t].side``: with probability ``turns[t].repeat`` it is the modal reply
  of the prefix so far (two trials at one prefix that both repeat give the same message), otherwise a fresh
  reply of its own with a fresh effect ``~ N(0, sd_t²)``. ``repeat = 1`` is a greedy side (temperature 0).
- The trial's latent quality is ``Z = τ_i + Σ_t effect_t``. It is judged ``judgements`` times, each
  judgement with fresh judge noise ``ε ~ N(0, judge_sd²)``: ``R = Z + ε`` (``reward="continuous"``) or
  ``R = 1{Z + ε > 0}`` (``reward="binary"``, pass/fail).

:func:`true_components` gives the components this form implies for the estimator's estimands (the
variance of the task means; per side, the pair variance set off by that side's draws; the judge's
variance of one judgement at a fixed transcript), by Monte Carlo over independent worlds.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import ndtr

from collapse_probe.errors import ConfigError
from collapse_probe.metrics.variance import SIDES, Trial

__all__ = ["Turn", "VarianceWorld", "simulate", "true_components", "true_shares"]


@dataclass(frozen=True)
class Turn:
    """One step of the conversation: who draws it, how often it repeats the modal reply, how much it matters."""

    side: str
    repeat: float
    sd: float


@dataclass(frozen=True)
class VarianceWorld:
    """The parameters of one simulated run (see the module docstring)."""

    turns: tuple[Turn, ...]
    tasks: int = 40
    trials: int | tuple[int, int] = 6
    task_mean: float = 0.0
    task_sd: float = 1.0
    judge_sd: float = 0.0
    judgements: int = 1
    reward: Literal["continuous", "binary"] = "binary"

    def __post_init__(self) -> None:
        for i, t in enumerate(self.turns):
            if t.side not in SIDES or not 0 <= t.repeat <= 1 or t.sd < 0:
                raise ConfigError(f"turns[{i}]: expected side in {SIDES}, repeat in [0, 1], sd >= 0; got {t}")
        lo, hi = (self.trials, self.trials) if isinstance(self.trials, int) else self.trials
        if self.tasks < 1 or lo < 1 or hi < lo or self.judgements < 1 or self.reward not in ("continuous", "binary"):
            raise ConfigError(f"VarianceWorld: tasks, trials and judgements must be >= 1 and reward known; got {self}")


def alternating(
    n: int, *, first: str = "agent", sim: tuple[float, float], agent: tuple[float, float]
) -> tuple[Turn, ...]:
    """``n`` turns alternating between the sides, starting with ``first``; ``sim`` and ``agent`` are each
    side's ``(repeat, sd)``."""
    other = "simulator" if first == "agent" else "agent"
    return tuple(
        Turn(s, *(sim if s == "simulator" else agent)) for s in itertools.islice(itertools.cycle((first, other)), n)
    )


def _judge(z: np.ndarray, world: VarianceWorld, rng: np.random.Generator) -> np.ndarray:
    noisy = z[..., None] + world.judge_sd * rng.standard_normal((*z.shape, world.judgements))
    return noisy if world.reward == "continuous" else (noisy > 0).astype(np.float64)


def simulate(world: VarianceWorld, rng: np.random.Generator) -> list[Trial]:
    """One run: every trial of every task, with its steps and judgements."""
    trials: list[Trial] = []
    fresh = itertools.count()
    for i in range(world.tasks):
        tau = world.task_mean + world.task_sd * rng.standard_normal()
        modal: dict[tuple[int, tuple[str, int]], tuple[int, float]] = {}
        n = world.trials if isinstance(world.trials, int) else int(rng.integers(world.trials[0], world.trials[1] + 1))
        for _ in range(n):
            steps: list[tuple[str, int]] = []
            z = tau
            node = (0, ("", -1))
            for t, turn in enumerate(world.turns):
                if rng.random() < turn.repeat:
                    if node not in modal:
                        modal[node] = (-1 - len(modal), turn.sd * rng.standard_normal())
                    ident, effect = modal[node]
                else:
                    ident, effect = next(fresh), turn.sd * rng.standard_normal()
                steps.append((turn.side, ident))
                z += effect
                node = (t + 1, (turn.side, hash((node, ident))))
            r = _judge(np.array(z), world, rng)
            trials.append(Trial(f"task{i}", tuple(steps), tuple(float(x) for x in np.atleast_1d(r))))
    return trials


def true_components(world: VarianceWorld, n_mc: int = 400_000, seed: int = 12345) -> dict[str, float]:
    """The components the form implies (Monte Carlo over ``n_mc`` independent pairs of trials, each pair in a
    world of its own): ``task``, ``simulator``, ``agent``, ``judge`` and ``total`` (the variance of one judgement).

    A pair shares its steps up to the first step at which not both trials repeated the modal reply; that step's
    side is the pair's divergence side. Before it the pair's effects are equal, from it on independent."""
    rng = np.random.default_rng(seed)
    sd = np.array([t.sd for t in world.turns])
    rep = np.array([t.repeat for t in world.turns])
    both = rng.random((n_mc, sd.size)) < rep**2
    shared = np.cumprod(both, axis=1).astype(bool)  # step t still shared
    e = rng.standard_normal((n_mc, sd.size)) * sd
    f1 = np.where(shared, e, rng.standard_normal((n_mc, sd.size)) * sd)
    f2 = np.where(shared, e, rng.standard_normal((n_mc, sd.size)) * sd)
    tau = world.task_mean + world.task_sd * rng.standard_normal(n_mc)
    z1, z2 = tau + f1.sum(1), tau + f2.sum(1)
    first = np.where(shared.all(1), -1, np.argmin(shared, axis=1))
    if world.reward == "continuous":
        mu1, mu2 = z1, z2
        judge = world.judge_sd**2
        total = world.task_sd**2 + float(np.sum(sd**2)) + judge
    else:
        if world.judge_sd > 0:
            mu1, mu2 = ndtr(z1 / world.judge_sd), ndtr(z2 / world.judge_sd)
        else:
            mu1, mu2 = (z1 > 0).astype(float), (z2 > 0).astype(float)
        judge = float(np.mean(mu1 * (1 - mu1)))
        p = float(np.mean(mu1))
        total = p * (1 - p)
    d = (mu1 - mu2) ** 2 / 2
    sides = np.array([t.side for t in world.turns])
    out = {s: float(np.mean(np.where((first >= 0) & (sides[np.maximum(first, 0)] == s), d, 0.0))) for s in SIDES}
    for s in SIDES:
        out[f"p_{s}"] = float(np.mean((first >= 0) & (sides[np.maximum(first, 0)] == s)))
    out["judge"] = judge
    out["task"] = total - out["simulator"] - out["agent"] - judge
    out["total"] = total
    return out


def true_shares(
    world: VarianceWorld, n_mc: int = 400_000, seed: int = 12345, *, judge_identified: bool = True
) -> dict[str, float]:
    """:func:`true_components` divided by the total. With ``judge_identified=False`` (what the decomposition
    estimates when the judge's share is ``null``) the judge's variance carried by the pairs each side set off,
    ``J · P(first divergence at that side)``, is part of that side's share."""
    c = true_components(world, n_mc, seed)
    out = {k: c[k] / c["total"] for k in ("task", "simulator", "agent", "judge")}
    if not judge_identified:
        for s in SIDES:
            out[s] += c["judge"] * c[f"p_{s}"] / c["total"]
    return out


def sides_of(turns: Sequence[Turn]) -> str:
    """The turns as a short string (``A`` agent, ``S`` simulator), for tables."""
    return "".join("A" if t.side == "agent" else "S" for t in turns)
