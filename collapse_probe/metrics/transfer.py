"""Statistics for transfer across simulators: reward means, paired differences and the transfer ratio
with intervals over tasks. Used by the cross-play matrix and the gate.

Rewards come grouped by task (a *cluster*): rollouts of one task are correlated, so every interval
here treats tasks, never individual rollouts, as the independent units. Grouped inputs may be a
mapping ``{task_id: [rewards]}`` or a list of per-task lists (paired by position); a flat list of
floats means one value per task.

The intervals (measured in ``benchmarks/gate_error_rates.py``, table in ``docs/ci-gate.md``):

- a mean (:func:`cluster_mean_ci`): with the reward's declared range ``[a, b]``, the Korn–Graubard
  interval (a Clopper–Pearson interval at the effective sample size that the between-task variance
  implies, degrees of freedom from the number of tasks; Korn & Graubard 1998), which stays inside
  the range and keeps its level when every task sits at a bound (ties: 10 tasks that all scored 1
  do not prove a mean of 1); without a range, Student t over tasks;
- a paired difference (:func:`paired_mean_diff`) and the transfer ratio (:func:`transfer_ratio`):
  MOVER (method of variance estimates recovery; Zou & Donner 2008, Donner & Zou 2012), which builds
  the interval of a difference or a ratio from the two arms' own intervals and their correlation
  over tasks. With Student-t arms it is exactly the paired t interval and Fieller's interval; with
  Korn–Graubard arms it keeps those properties and also holds at the bounds of the range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import numpy as np
from scipy.special import betaincinv, stdtrit
from scipy.stats import t as student_t

from collapse_probe.core.limits import check_int, check_range
from collapse_probe.errors import ConfigError

__all__ = [
    "Estimate",
    "cluster_bootstrap_diff",
    "cluster_mean_ci",
    "mean_ci",
    "paired_mean_diff",
    "transfer_ratio",
]

Grouped = Mapping[Any, Sequence[float]] | Sequence[Sequence[float]] | Sequence[float]
RewardRange = tuple[float, float]
TransferMethod = Literal["mover", "percentile"]


class EstimateRecord(TypedDict):
    """An :class:`Estimate` as JSON (:meth:`Estimate.to_dict`)."""

    value: float | None
    lo: float | None
    hi: float | None
    level: float
    n: int
    method: str
    note: str | None


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a confidence interval; ``None`` fields mean "undefined", see ``note``."""

    value: float | None
    lo: float | None
    hi: float | None
    level: float
    n: int
    """Number of independent units (values for :func:`mean_ci`, tasks otherwise)."""
    method: str
    note: str | None = None

    def to_dict(self) -> EstimateRecord:
        return EstimateRecord(value=self.value, lo=self.lo, hi=self.hi, level=self.level, n=self.n, method=self.method,
                              note=self.note)  # fmt: skip

    def contains(self, x: float) -> bool:
        """Whether ``x`` lies in [lo, hi] (False when the interval is undefined)."""
        return self.lo is not None and self.hi is not None and self.lo <= x <= self.hi


def _check(level: float, n_boot: int | None = None) -> None:
    if not 0 < level < 1:
        raise ConfigError(f"level must be in (0, 1), got {level}")
    check_int(n_boot, "n_boot", 10, optional=True)


def _finite_1d(values: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected a list of numbers, got {values!r}") from None
    if arr.ndim != 1 or not np.all(np.isfinite(arr)):
        raise ConfigError(f"{name}: expected a 1-D list of finite numbers")
    return arr


def mean_ci(values: Sequence[float] | np.ndarray, level: float = 0.95) -> Estimate:
    """Mean with a Student-t confidence interval: mean ± t_{n−1} · s/√n.

    The t interval is used (not a bootstrap) because it is exact for normal data, close for the
    bounded rewards used here at the sample sizes of a gate, deterministic, and honest at small n
    where a bootstrap under-covers. With fewer than 2 values the interval is undefined (``None``);
    with zero spread it collapses to the mean.

    Example:
        >>> e = mean_ci([1.0, 2.0, 3.0])
        >>> e.value, round(e.lo, 4), round(e.hi, 4)
        (2.0, -0.4841, 4.4841)
    """
    _check(level)
    arr = _finite_1d(values, "values")
    n = arr.size
    if n == 0:
        return Estimate(None, None, None, level, 0, "t", note="no values")
    mean = float(arr.mean())
    if n < 2:
        return Estimate(mean, None, None, level, n, "t", note="a CI needs at least 2 values")
    half = float(student_t.ppf(1 - (1 - level) / 2, n - 1) * arr.std(ddof=1) / math.sqrt(n))
    return Estimate(mean, mean - half, mean + half, level, n, "t")


def _clusters(x: Grouped, name: str, bounds: RewardRange | None = None) -> tuple[list[Any], list[np.ndarray]]:
    """Normalise grouped input to (keys, list of 1-D arrays); with ``bounds`` every value must lie inside."""
    if isinstance(x, Mapping):
        keys = list(x)
        groups = [_finite_1d(x[k], f"{name}[{k!r}]") for k in keys]
    else:
        if isinstance(x, (str, bytes)):
            raise ConfigError(f"{name}: expected per-task rewards, got a string")
        items = list(x)
        if items and all(isinstance(v, (int, float, np.integer, np.floating)) for v in items):
            groups = [_finite_1d([v], f"{name}[{i}]") for i, v in enumerate(items)]
        else:
            groups = [_finite_1d(v, f"{name}[{i}]") for i, v in enumerate(items)]
        keys = list(range(len(groups)))
    if not groups:
        raise ConfigError(f"{name}: no tasks")
    for k, g in zip(keys, groups, strict=True):
        if g.size == 0:
            raise ConfigError(f"{name}[{k!r}]: task has no rewards")
        if bounds is not None and ((g < bounds[0]) | (g > bounds[1])).any():
            out = g[(g < bounds[0]) | (g > bounds[1])]
            raise ConfigError(
                f"{name}[{k!r}]: reward {float(out[0]):g} outside the reward range [{bounds[0]:g}, {bounds[1]:g}]"
            )
    return keys, groups


def _paired(
    a: Grouped, b: Grouped, names: tuple[str, str], bounds: RewardRange | None = None
) -> tuple[np.ndarray, ...]:
    """Per-task (sum_a, count_a, sum_b, count_b) for tasks paired by key or position."""
    ka, ga = _clusters(a, names[0], bounds)
    kb, gb = _clusters(b, names[1], bounds)
    if isinstance(a, Mapping) != isinstance(b, Mapping):
        raise ConfigError(f"{names[0]} and {names[1]}: pass both as mappings by task or both as lists")
    if isinstance(a, Mapping):
        if set(ka) != set(kb):
            only_a = sorted(map(str, set(ka) - set(kb)))[:5]
            only_b = sorted(map(str, set(kb) - set(ka)))[:5]
            raise ConfigError(
                f"{names[0]} and {names[1]} must cover the same tasks; only in {names[0]}: {only_a}, "
                f"only in {names[1]}: {only_b}"
            )
        pos = {k: i for i, k in enumerate(kb)}
        gb = [gb[pos[k]] for k in ka]
    elif len(ga) != len(gb):
        raise ConfigError(f"{names[0]} has {len(ga)} tasks but {names[1]} has {len(gb)}; they must be paired")
    return (
        np.array([g.sum() for g in ga]),
        np.array([g.size for g in ga], dtype=np.float64),
        np.array([g.sum() for g in gb]),
        np.array([g.size for g in gb], dtype=np.float64),
    )


def cluster_bootstrap_diff(
    a_by_task: Grouped,
    b_by_task: Grouped,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Estimate:
    """mean(a) − mean(b) with a paired cluster-bootstrap CI over tasks.

    ``mean`` is over all rollouts (pooled). Each resample draws tasks with replacement and keeps both
    arms of a drawn task together (paired), so task difficulty cancels; within-task correlation is
    respected because tasks, not rollouts, are resampled. CI: bootstrap percentiles.

    Args:
        a_by_task: rewards of arm a per task (mapping or list of lists).
        b_by_task: rewards of arm b for the same tasks.
        n_boot: resamples.
        seed: resampling seed.
        level: confidence level.

    Example:
        >>> e = cluster_bootstrap_diff([[1, 1], [1, 0]], [[0, 0], [1, 0]])
        >>> e.value
        0.5
    """
    _check(level, n_boot)
    sa, ca, sb, cb = _paired(a_by_task, b_by_task, ("a_by_task", "b_by_task"))
    value = float(sa.sum() / ca.sum() - sb.sum() / cb.sum())
    n_tasks = sa.size
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_tasks, size=(n_boot, n_tasks))
    boot = sa[idx].sum(1) / ca[idx].sum(1) - sb[idx].sum(1) / cb[idx].sum(1)
    alpha = 1 - level
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    note = "one task: the CI has no between-task spread" if n_tasks == 1 else None
    return Estimate(value, float(lo), float(hi), level, n_tasks, "paired cluster bootstrap (percentile)", note)


def transfer_ratio(
    heldout_rewards: Grouped,
    train_rewards: Grouped,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    *,
    method: TransferMethod = "mover",
    reward_range: RewardRange | None = None,
    n_units: tuple[int, int] | None = None,
) -> Estimate:
    """Transfer ratio mean(held-out-simulator reward) / mean(training-simulator reward), with a paired
    confidence interval over tasks.

    1 means the policy does as well against unseen simulators as against the one it trained with;
    well below 1 is the signature of exploiting the training simulator's mode. Rewards are assumed
    non-negative (as in the shipped benchmarks) so the ratio is meaningful; the lower end is never
    below 0.

    The interval (``method="mover"``) is MOVER-R over tasks (module docstring): Fieller's interval
    when no ``reward_range`` is given, Korn–Graubard arms inside the range when it is. When the
    training reward's own interval reaches 0 the ratio has no finite upper end: ``hi`` is ``None``
    (with a note) while ``lo`` still says how low the ratio can be. ``method="percentile"`` is the
    paired cluster bootstrap (percentiles of ``n_boot`` resamples), the reference the coverage
    benchmark compares MOVER-R with: it covers about 0.90 instead of 0.95 at 10 tasks.

    When the training mean is 0 the ratio is undefined and ``value`` is ``None`` (with a note) —
    never a sentinel.

    Args:
        heldout_rewards: held-out rewards per task (mapping or list of lists).
        train_rewards: training-simulator rewards for the same tasks.
        n_boot: resamples (``method="percentile"`` only).
        seed: resampling seed (``method="percentile"`` only).
        level: confidence level (two-sided).
        method: ``"mover"`` (default) or ``"percentile"``.
        reward_range: the reward's declared bounds ``(a, b)``; every reward must lie inside.
        n_units: conversations behind (held-out, training) values, when a per-task value is itself a
            mean (default: the number of values given).

    Example:
        >>> transfer_ratio([[0.5, 0.5], [0.25, 0.25]], [[1.0, 1.0], [0.5, 0.5]]).value
        0.5
    """
    _check(level, n_boot)
    if method not in ("mover", "percentile"):
        raise ConfigError(f"method must be 'mover' or 'percentile', got {method!r}")
    bounds = _check_range(reward_range)
    sh, ch, st, ct = _paired(heldout_rewards, train_rewards, ("heldout_rewards", "train_rewards"), bounds)
    n_tasks = sh.size
    method_name = (
        "ratio of means, paired cluster bootstrap (percentile)"
        if method == "percentile"
        else _method_name("MOVER-R", "Fieller", bounds)
    )
    train_mean = st.sum() / ct.sum()
    if train_mean == 0:
        return Estimate(
            None, None, None, level, n_tasks, method_name,
            note="mean training-simulator reward is 0: the transfer ratio is undefined",
        )  # fmt: skip
    value = float((sh.sum() / ch.sum()) / train_mean)
    if method == "percentile":
        lo, hi, note = _percentile_ratio(sh, ch, st, ct, n_boot, seed, level)
        return Estimate(value, lo, hi, level, n_tasks, method_name, note=note)
    units_h, units_t = n_units if n_units is not None else (int(ch.sum()), int(ct.sum()))
    heldout = _arm(sh, ch, units_h, level, bounds)
    train = _arm(st, ct, units_t, level, bounds)
    if heldout is None or train is None:
        return Estimate(value, None, None, level, n_tasks, method_name, note=_FEW_TASKS)
    lo, hi = _mover_ratio(heldout, train, _correlation(heldout.resid, train.resid), value)
    note = None
    if hi is None:
        note = "the training reward's interval reaches 0, so the ratio's interval has no upper end"
    return Estimate(value, lo, hi, level, n_tasks, method_name, note=note)


def _percentile_ratio(
    sh: np.ndarray, ch: np.ndarray, st: np.ndarray, ct: np.ndarray, n_boot: int, seed: int, level: float
) -> tuple[float | None, float | None, str | None]:
    """(lo, hi, note) of the percentile bootstrap over tasks, the transfer ratio's former interval."""
    n_tasks = sh.size
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_tasks, size=(n_boot, n_tasks))
    num = sh[idx].sum(1) / ch[idx].sum(1)
    den = st[idx].sum(1) / ct[idx].sum(1)
    ok = den != 0
    if ok.sum() < n_boot / 2:
        return None, None, f"only {int(ok.sum())} of {n_boot} resamples had a non-zero training mean: no CI"
    alpha = 1 - level
    lo, hi = np.quantile(num[ok] / den[ok], [alpha / 2, 1 - alpha / 2])
    note = None if ok.all() else f"{int((~ok).sum())} resamples with training mean 0 were dropped"
    return float(lo), float(hi), note


# ------------------------------------------------------------------------------- intervals over task clusters

_FEW_TASKS = "an interval over tasks needs at least 2 tasks"


def _check_range(reward_range: Any) -> RewardRange | None:
    return None if reward_range is None else check_range(reward_range, "reward_range")


def _method_name(bounded: str, unbounded: str, bounds: RewardRange | None) -> str:
    if bounds is None:
        return f"{unbounded} over tasks"
    return f"{bounded} over tasks, Korn-Graubard arms in [{bounds[0]:g}, {bounds[1]:g}]"


@dataclass(frozen=True)
class _Arm:
    """One arm's mean over task clusters with its interval and per-task linearised residuals."""

    est: float
    lo: float
    hi: float
    resid: np.ndarray
    """(sum_i − est · count_i) / mean count: the task's contribution to the arm's estimation error."""


def _arm(sums: np.ndarray, counts: np.ndarray, n_units: int, level: float, bounds: RewardRange | None) -> _Arm | None:
    """The pooled mean Σ sums / Σ counts with a cluster-robust interval, or ``None`` below 2 tasks.

    The variance is the ratio estimator's over clusters, Σ resid² / (n (n − 1)) (with one value per
    task: s² / n). With ``bounds`` the interval is Korn–Graubard's on the rescaled mean, else Student t.
    """
    n = sums.size
    if n < 2:
        return None
    est = float(sums.sum() / counts.sum())
    resid = (sums - est * counts) / counts.mean()
    var = float((resid**2).sum() / (n * (n - 1)))
    if bounds is None:
        half = float(stdtrit(n - 1, 1 - (1 - level) / 2)) * math.sqrt(var)
        return _Arm(est, est - half, est + half, resid)
    a, b = bounds
    width = b - a
    units = max(int(n_units), n)
    lo, hi = _korn_graubard(
        (est - a) / width, var / width**2, n, units, level, _two_valued(sums, counts, units, bounds)
    )
    return _Arm(est, min(a + width * lo, est), max(a + width * hi, est), resid)


def _two_valued(sums: np.ndarray, counts: np.ndarray, n_units: int, bounds: RewardRange) -> bool:
    """Whether the values could all be means of conversations that each scored a bound of the range
    (success / failure): every task's rescaled sum times its conversations per value is a whole number."""
    a, b = bounds
    per_value = n_units / float(counts.sum())
    scaled = (sums - a * counts) / (b - a) * per_value
    return bool(np.allclose(scaled, np.round(scaled), atol=1e-6))


def _korn_graubard(
    p: float, var: float, n_tasks: int, n_units: int, level: float, two_valued: bool = True
) -> tuple[float, float]:
    """Korn–Graubard interval for a mean ``p`` in [0, 1] with design variance ``var``.

    The effective sample size is the number of independent binary draws with the same variance,
    p (1 − p) / var. Where the rewards could be success / failure (``two_valued``: every task's mean
    is a whole number of bounds over its conversations) it is capped at the number of conversations
    ``n_units``: such a conversation carries at most one binary draw's information, so a design effect
    below 1 is chance. Rewards between the bounds (a continuous score, partial credit) vary less than a
    binary draw of the same mean, and their effective size may exceed the conversations: capping it
    there made the interval's one-sided misses 1.2 % instead of 5 % at 20 tasks × 2 (``benchmarks/
    gate_error_rates.py --at-threshold --panel beta``). When every task sits at one value — var 0, or p at a bound — the
    conversations are all the evidence there is: 10 tasks of one conversation that all scored 1
    give a lower end of 0.025^(1/10) = 0.69, not 1). It is then scaled by (t_{units−1} / t_{tasks−1})² for the
    degrees of freedom of a between-task variance, and the Clopper–Pearson interval at that size is
    returned; it never leaves [0, 1].
    """
    alpha = 1 - level
    p = min(max(p, 0.0), 1.0)
    n_eff = float(n_units)
    if var > 0 and 0 < p < 1:
        n_eff = min(p * (1 - p) / var, n_eff) if two_valued else p * (1 - p) / var
    # the degrees of freedom of a between-task variance: a binary draw's worth per conversation at most
    # (two-valued), else the effective size itself, so that a continuous reward's interval is Student t's
    dof = n_units if two_valued or n_eff <= n_units else n_eff
    if dof > 1:
        n_eff *= (float(stdtrit(dof - 1, 1 - alpha / 2)) / float(stdtrit(n_tasks - 1, 1 - alpha / 2))) ** 2
    x = p * n_eff
    # Clopper–Pearson ends at a non-integer count: quantiles of Beta(x, n − x + 1) and Beta(x + 1, n − x)
    lo = 0.0 if x <= 0 else float(betaincinv(x, n_eff - x + 1, alpha / 2))
    hi = 1.0 if x >= n_eff else float(betaincinv(x + 1, n_eff - x, 1 - alpha / 2))
    return lo, hi


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two arms' residuals over tasks; 0 when either has no spread."""
    den = math.sqrt(float((a**2).sum() * (b**2).sum()))
    return float((a * b).sum()) / den if den > 0 else 0.0


def _mover_diff(a: _Arm, b: _Arm, rho: float) -> tuple[float, float]:
    """MOVER interval of a.est − b.est (Zou & Donner 2008): each end recovers the variance of the
    difference from the arms' distances to their own limits, with the arms' correlation ``rho``."""
    d = a.est - b.est
    la, ua, lb, ub = a.est - a.lo, a.hi - a.est, b.est - b.lo, b.hi - b.est
    lo = d - math.sqrt(max(la**2 + ub**2 - 2 * rho * la * ub, 0.0))
    hi = d + math.sqrt(max(ua**2 + lb**2 - 2 * rho * ua * lb, 0.0))
    return lo, hi


def _mover_ratio(num: _Arm, den: _Arm, rho: float, value: float) -> tuple[float, float | None]:
    """MOVER-R interval of num.est / den.est (Donner & Zou 2012), ``None`` for an unbounded upper end.

    θ is inside when 0 lies in the MOVER interval of num − θ·den; each end of the ratio is the root
    of the quadratic where that interval's near end touches 0. With Student-t arms this is Fieller's
    interval. The lower end is clipped at 0 (rewards are non-negative).
    """
    p1, p2 = num.est, den.est
    e1l, e1u, e2l, e2u = p1 - num.lo, num.hi - p1, p2 - den.lo, den.hi - p2
    tol = 1e-9 * max(1.0, value)  # a double root at the estimate may land an ulp on either side of it
    # lower end: (p1 − θ p2)² = e1l² + θ² e2u² − 2ρθ e1l e2u, the largest root in [0, value]
    if e1l == 0 and e2u == 0:
        lo = value
    elif num.lo <= 0:
        lo = 0.0
    else:
        roots = _roots(p2**2 - e2u**2, p1 * p2 - rho * e1l * e2u, p1**2 - e1l**2)
        below = [r for r in roots if -tol <= r <= value + tol]
        lo = max(max(below), 0.0) if below else 0.0
    # upper end: (θ p2 − p1)² = e1u² + θ² e2l² − 2ρθ e1u e2l, the root above value; none when den.lo <= 0
    hi: float | None
    if e1u == 0 and e2l == 0:
        hi = value
    elif den.lo <= 0:
        hi = None
    else:
        above = [r for r in _roots(p2**2 - e2l**2, p1 * p2 - rho * e1u * e2l, p1**2 - e1u**2) if r >= value - tol]
        hi = min(above) if above else None
    return min(lo, value), (None if hi is None else max(hi, value))


def _roots(a: float, half_b: float, c: float) -> list[float]:
    """Real roots of a θ² − 2·half_b·θ + c = 0."""
    if a == 0:
        return [c / (2 * half_b)] if half_b != 0 else []
    disc = half_b**2 - a * c
    if disc < 0:
        disc = 0.0 if disc > -1e-12 * max(half_b**2, abs(a * c)) else disc
    if disc < 0:
        return []
    r = math.sqrt(disc)
    return sorted({(half_b - r) / a, (half_b + r) / a})


def cluster_mean_ci(
    by_task: Grouped, level: float = 0.95, *, reward_range: RewardRange | None = None, n_units: int | None = None
) -> Estimate:
    """Mean reward over all rollouts with a confidence interval over task clusters.

    The mean pools every rollout (Σ rewards / Σ rollouts); the interval treats tasks as the
    independent units (cluster-robust variance of that ratio estimator). With the reward's declared
    ``reward_range`` it is Korn–Graubard's and lies inside the range, also when every task scored
    the same bound; without one it is Student t over tasks and may leave the range.

    Args:
        by_task: rewards per task (mapping or list of lists; a flat list is one value per task).
        level: confidence level (two-sided).
        reward_range: the reward's declared bounds ``(a, b)``; every reward must lie inside.
        n_units: conversations behind the values, when a per-task value is itself a mean (default:
            the number of values given).

    Returns:
        The estimate; with fewer than 2 tasks the interval is ``None`` (there is no between-task
        spread to measure).

    Example:
        >>> e = cluster_mean_ci([[1.0]] * 10, reward_range=(0, 1))
        >>> e.value, round(e.lo, 3), e.hi
        (1.0, 0.692, 1.0)
    """
    _check(level)
    bounds = _check_range(reward_range)
    _, groups = _clusters(by_task, "by_task", bounds)
    sums = np.array([g.sum() for g in groups])
    counts = np.array([g.size for g in groups], dtype=np.float64)
    method = _method_name("Korn-Graubard", "Student t", bounds).replace(", Korn-Graubard arms", "")
    value = float(sums.sum() / counts.sum())
    arm = _arm(sums, counts, int(counts.sum()) if n_units is None else n_units, level, bounds)
    if arm is None:
        return Estimate(value, None, None, level, sums.size, method, note=_FEW_TASKS)
    return Estimate(value, arm.lo, arm.hi, level, sums.size, method)


def paired_mean_diff(
    a_by_task: Grouped,
    b_by_task: Grouped,
    level: float = 0.95,
    *,
    reward_range: RewardRange | None = None,
    n_units: tuple[int, int] | None = None,
) -> Estimate:
    """mean(a) − mean(b) over the same tasks with a paired confidence interval over tasks.

    Means pool every rollout as in :func:`cluster_bootstrap_diff`; the interval is MOVER over tasks
    (module docstring), which is the paired Student-t interval when no ``reward_range`` is given.
    Pairing by task lets task difficulty cancel through the arms' correlation.

    Args:
        a_by_task: rewards of arm a per task (mapping or list of lists).
        b_by_task: rewards of arm b for the same tasks.
        level: confidence level (two-sided).
        reward_range: the reward's declared bounds ``(a, b)``; every reward must lie inside.
        n_units: conversations behind (a, b), when a per-task value is itself a mean.

    Example:
        >>> e = paired_mean_diff([[1, 1], [1, 0], [0, 1]], [[0, 0], [1, 0], [0, 0]])
        >>> round(e.value, 4)
        0.5
    """
    _check(level)
    bounds = _check_range(reward_range)
    sa, ca, sb, cb = _paired(a_by_task, b_by_task, ("a_by_task", "b_by_task"), bounds)
    method = _method_name("MOVER", "paired Student t", bounds)
    value = float(sa.sum() / ca.sum() - sb.sum() / cb.sum())
    units_a, units_b = n_units if n_units is not None else (int(ca.sum()), int(cb.sum()))
    a, b = _arm(sa, ca, units_a, level, bounds), _arm(sb, cb, units_b, level, bounds)
    if a is None or b is None:
        return Estimate(value, None, None, level, sa.size, method, note=_FEW_TASKS)
    lo, hi = _mover_diff(a, b, _correlation(a.resid, b.resid))
    if bounds is not None:
        span = bounds[1] - bounds[0]
        lo, hi = max(lo, -span), min(hi, span)
    return Estimate(value, min(lo, value), max(hi, value), level, sa.size, method)
