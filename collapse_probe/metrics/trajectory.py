"""Trajectory-level collapse: accumulated collapse error, its bounds, and the simulator's share of
reward variance.

- Accumulated collapse error ε̄_H = E[Σ_t ε_φ(s_t, a_t^π)] over the simulator turns of H-turn
  rollouts (DESIGN.md). Theorem: TV(P_φ, P_mode) ≤ ε̄_H and ‖∇J_φ − ∇J_mode‖ ≤ 2·B·R_max·ε̄_H.
- Lemma (simulator-side reward contrast): Var over simulator randomness of R, given the task and
  the agent's randomness, is ≤ R_max²·ε_H. :func:`simulator_variance_share` measures that variance
  directly by nested resampling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from collapse_probe.core._constraints import Integer, Number, check_value
from collapse_probe.errors import ConfigError

__all__ = [
    "VarianceShare",
    "accumulated_collapse_error",
    "gradient_bias_bound",
    "reward_variance_bound",
    "simulator_variance_share",
    "tv_bound",
]


def _finite_nonneg(x: float, name: str) -> float:
    check_value(x, name, [Number(ge=0, numpy=True)])
    return float(x)


def accumulated_collapse_error(per_turn_eps: Sequence[Sequence[float]]) -> float:
    """ε̄_H: mean over rollouts of the sum over simulator turns of the collapse error ε_t.

    Args:
        per_turn_eps: one list per rollout holding ε_φ(s_t, a_t^π) ∈ [0, 1] at each simulator turn
            that rollout visited (rollouts may differ in length; an empty list contributes 0).

    Example:
        >>> accumulated_collapse_error([[0.25, 0.25], [0.5]])
        0.5
    """
    if isinstance(per_turn_eps, (str, bytes)) or len(per_turn_eps) == 0:
        raise ConfigError("per_turn_eps: expected a non-empty list of rollouts, each a list of per-turn ε")
    sums = []
    for i, rollout in enumerate(per_turn_eps):
        if isinstance(rollout, (str, bytes)) or not isinstance(rollout, Sequence | np.ndarray):
            raise ConfigError(f"per_turn_eps[{i}]: expected a list of per-turn collapse errors, got {rollout!r}")
        arr = np.asarray(rollout, dtype=np.float64)
        if arr.ndim != 1 or not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
            raise ConfigError(f"per_turn_eps[{i}]: collapse errors must lie in [0, 1], got {list(rollout)!r}")
        sums.append(float(arr.sum()))
    return float(np.mean(sums))


def tv_bound(eps_bar: float) -> float:
    """Upper bound on TV(P_φ, P_mode) between the simulator's and the mode simulator's trajectory
    distributions: min(1, ε̄_H) (coupling turn by turn; TV never exceeds 1).

    Example:
        >>> tv_bound(0.25), tv_bound(3.0)
        (0.25, 1.0)
    """
    return min(1.0, _finite_nonneg(eps_bar, "eps_bar"))


def gradient_bias_bound(eps_bar: float, B: float, R_max: float) -> float:
    """Bound on the policy-gradient bias ‖∇J_φ − ∇J_mode‖ ≤ 2·B·R_max·ε̄_H.

    Args:
        eps_bar: accumulated collapse error ε̄_H.
        B: bound on the norm of the trajectory score function ‖Σ_t ∇ log π(a_t|s_t)‖.
        R_max: bound on |R(τ)|.

    Example:
        >>> gradient_bias_bound(0.1, B=2.0, R_max=1.0)
        0.4
    """
    return 2.0 * _finite_nonneg(B, "B") * _finite_nonneg(R_max, "R_max") * _finite_nonneg(eps_bar, "eps_bar")


def reward_variance_bound(eps_H: float, R_max: float) -> float:
    """Lemma bound on the simulator-side reward variance: Var_φ[R | task, agent] ≤ R_max²·ε_H.

    Example:
        >>> reward_variance_bound(0.05, R_max=1.0)
        0.05
    """
    return _finite_nonneg(R_max, "R_max") ** 2 * _finite_nonneg(eps_H, "eps_H")


class VarianceShareFields(TypedDict):
    """A :class:`VarianceShare` as a JSON object, in its field order (``ci`` a list)."""

    share: float | None
    ci: list[float] | None
    within: float
    between: float
    total: float
    n_prefixes: int
    estimator: str
    note: str | None


@dataclass(frozen=True)
class VarianceShare:
    """Decomposition of reward variance into simulator-side and agent-side parts."""

    share: float | None
    """E_prefix[Var_sim(R)] / Var_total(R); ``None`` when the total variance is 0."""
    ci: tuple[float, float] | None
    """Bootstrap percentile CI over prefixes; ``None`` when too few resamples were defined."""
    within: float
    """E_prefix[Var_sim(R | prefix)]: the simulator-side variance."""
    between: float
    """Var_prefix(E_sim[R | prefix]): the agent-side variance."""
    total: float
    """within + between."""
    n_prefixes: int
    estimator: str
    note: str | None = None
    """Why ``share`` or ``ci`` is missing, when it is."""

    def to_dict(self) -> VarianceShareFields:
        return {"share": self.share, "ci": list(self.ci) if self.ci is not None else None, "within": self.within,
                "between": self.between, "total": self.total, "n_prefixes": self.n_prefixes,
                "estimator": self.estimator, "note": self.note}  # fmt: skip


def _components(means: np.ndarray, vars_: np.ndarray, sizes: np.ndarray, estimator: str) -> tuple[float, float]:
    """(within, between) from per-prefix means, variances and sizes (equal weight per prefix)."""
    within = float(vars_.mean())
    if estimator == "plugin":
        between = float(means.var())
    else:
        # ANOVA (method of moments): the variance of prefix means includes within/m sampling noise.
        between = float(means.var(ddof=1)) - float(np.mean(vars_ / sizes)) if means.size > 1 else 0.0
        between = max(0.0, between)
    return within, between


def simulator_variance_share(
    rewards_by_prefix: Sequence[Sequence[float]],
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    estimator: str = "plugin",
) -> VarianceShare:
    """Share of reward variance that comes from the simulator (Lemma 3.3, by nested resampling).

    For fixed agent prefixes (outer list: the task and the agent's own randomness fixed), the
    simulator continuations are resampled (inner list: rewards of those continuations). By the law
    of total variance, Var_total(R) = E_prefix[Var_inner(R)] + Var_prefix(E_inner[R]), and

        share = E_prefix[Var_inner(R)] / Var_total(R).

    A collapsed simulator gives share → 0 (its randomness no longer changes the outcome: the
    group-relative advantage ranks only agent-side exploits of the mode). Prefixes get equal weight.

    Estimators: ``"plugin"`` uses population variances (ddof = 0), so that with equal inner sizes
    ``total`` is exactly the pooled population variance of all rewards. ``"anova"`` uses the
    unbiased variance components (inner ddof = 1; between = Var(means, ddof = 1) − mean(Var_i/m_i),
    clipped at 0), which removes the small-m bias of the plug-in (needs ≥ 2 continuations per prefix).

    The CI is a percentile bootstrap over prefixes (the prefix is the sampling unit); resamples whose
    total variance is 0 are skipped, and the CI is ``None`` if more than half are.

    Args:
        rewards_by_prefix: one list of simulator-continuation rewards per agent prefix.
        n_boot: bootstrap resamples of the prefixes.
        level: confidence level.
        seed: resampling seed.
        estimator: ``"plugin"`` or ``"anova"``.

    Example:
        >>> simulator_variance_share([[0.0, 1.0], [1.0, 1.0]]).share
        0.6666666666666666
    """
    if estimator not in ("plugin", "anova"):
        raise ConfigError(f"estimator must be 'plugin' or 'anova', got {estimator!r}")
    if not 0 < level < 1:
        raise ConfigError(f"level must be in (0, 1), got {level}")
    check_value(n_boot, "n_boot", [Integer(10)])
    if isinstance(rewards_by_prefix, (str, bytes)) or len(rewards_by_prefix) == 0:
        raise ConfigError("rewards_by_prefix: expected a non-empty list of per-prefix reward lists")
    min_inner = 2 if estimator == "anova" else 1
    means, vars_, sizes = [], [], []
    for i, inner in enumerate(rewards_by_prefix):
        arr = np.asarray(inner, dtype=np.float64)
        if arr.ndim != 1 or arr.size < min_inner or not np.all(np.isfinite(arr)):
            raise ConfigError(
                f"rewards_by_prefix[{i}]: expected a list of >= {min_inner} finite rewards "
                f"(simulator continuations of one agent prefix), got {inner!r}"
            )
        means.append(arr.mean())
        vars_.append(arr.var(ddof=0 if estimator == "plugin" else 1))
        sizes.append(arr.size)
    m, v, s = np.array(means), np.array(vars_), np.array(sizes, dtype=np.float64)
    within, between = _components(m, v, s, estimator)
    total = within + between
    n_pref = m.size
    if total <= 0:
        return VarianceShare(
            None, None, within, between, total, n_pref, estimator,
            note="total reward variance is 0 (every rollout got the same reward): the share is undefined",
        )  # fmt: skip
    share = within / total
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_pref, size=(n_boot, n_pref))
    shares = []
    for row in idx:
        w, b = _components(m[row], v[row], s[row], estimator)
        if w + b > 0:
            shares.append(w / (w + b))
    note = None
    ci: tuple[float, float] | None = None
    if len(shares) >= n_boot / 2:
        alpha = 1 - level
        lo, hi = np.quantile(shares, [alpha / 2, 1 - alpha / 2])
        ci = (float(lo), float(hi))
    else:
        note = f"only {len(shares)} of {n_boot} bootstrap resamples had non-zero variance: no CI"
    return VarianceShare(share, ci, within, between, total, n_pref, estimator, note)
