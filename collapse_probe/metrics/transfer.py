"""Statistics for transfer across simulators: mean CIs, paired cluster-bootstrap differences and the
transfer ratio. Used by the cross-play matrix and the gate.

Rewards come grouped by task (a *cluster*): rollouts of one task are correlated, so resampling is
over tasks, never over individual rollouts. Grouped inputs may be a mapping ``{task_id: [rewards]}``
or a list of per-task lists (paired by position); a flat list of floats means one value per task.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from collapse_probe.errors import ConfigError
from collapse_probe.limits import check_int

__all__ = ["Estimate", "cluster_bootstrap_diff", "mean_ci", "transfer_ratio"]

Grouped = Mapping[Any, Sequence[float]] | Sequence[Sequence[float]] | Sequence[float]


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

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


def _clusters(x: Grouped, name: str) -> tuple[list[Any], list[np.ndarray]]:
    """Normalise grouped input to (keys, list of 1-D arrays)."""
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
    return keys, groups


def _paired(a: Grouped, b: Grouped, names: tuple[str, str]) -> tuple[np.ndarray, ...]:
    """Per-task (sum_a, count_a, sum_b, count_b) for tasks paired by key or position."""
    ka, ga = _clusters(a, names[0])
    kb, gb = _clusters(b, names[1])
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
) -> Estimate:
    """Transfer ratio mean(held-out-simulator reward) / mean(training-simulator reward), with a paired
    cluster-bootstrap CI over tasks.

    1 means the policy does as well against unseen simulators as against the one it trained with;
    well below 1 is the signature of exploiting the training simulator's mode. Rewards are assumed
    non-negative (as in the shipped benchmarks) so the ratio is meaningful.

    When the training mean is 0 the ratio is undefined and ``value`` is ``None`` (with a note) —
    never a sentinel. Bootstrap resamples whose training mean is 0 are dropped; if more than half
    are, the CI is ``None``.

    Example:
        >>> transfer_ratio([[0.5, 0.5], [0.25, 0.25]], [[1.0, 1.0], [0.5, 0.5]]).value
        0.5
    """
    _check(level, n_boot)
    sh, ch, st, ct = _paired(heldout_rewards, train_rewards, ("heldout_rewards", "train_rewards"))
    n_tasks = sh.size
    method = "ratio of means, paired cluster bootstrap (percentile)"
    train_mean = st.sum() / ct.sum()
    if train_mean == 0:
        return Estimate(
            None, None, None, level, n_tasks, method,
            note="mean training-simulator reward is 0: the transfer ratio is undefined",
        )  # fmt: skip
    value = float((sh.sum() / ch.sum()) / train_mean)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_tasks, size=(n_boot, n_tasks))
    num = sh[idx].sum(1) / ch[idx].sum(1)
    den = st[idx].sum(1) / ct[idx].sum(1)
    ok = den != 0
    if ok.sum() < n_boot / 2:
        why = f"only {int(ok.sum())} of {n_boot} resamples had a non-zero training mean: no CI"
        return Estimate(value, None, None, level, n_tasks, method, note=why)
    alpha = 1 - level
    lo, hi = np.quantile(num[ok] / den[ok], [alpha / 2, 1 - alpha / 2])
    note = None if ok.all() else f"{int((~ok).sum())} resamples with training mean 0 were dropped"
    return Estimate(value, float(lo), float(hi), level, n_tasks, method, note=note)
