"""Whose noise is it: reward variance split into task, simulator, agent and judge, with intervals; flip
rates and pass^k (the estimator and its assumptions: ``docs/variance-decomposition.md``).

Input: the trials of a run, each a :class:`Trial` — its task, its conversation as a sequence of
``(side, message identity)`` steps (``side`` is ``"simulator"`` or ``"agent"``) and one or more
judgements of its reward (several when the judge was rerun on the same transcript).

Estimator (first divergence, by pairs). The variance of one judged reward is split by the law of
total variance into the variance of the task means and the mean within-task variance. Within a
task, every pair of trials ``(j, j')`` gives ``d = (R̄_j − R̄_j')² / 2`` (on the mean judgement of each
trial), whose mean over pairs is the unbiased within-task variance of ``R̄``. The pair's conversations
agree up to their first differing step; the side that drew that step *set the difference off*, and the
pair's ``d`` (less the judge noise it carries) is credited to that side. Pairs whose transcripts are
identical carry judge noise only. The judge's variance ``J`` is the pooled variance between repeated
judgements of one transcript, or, without repeats, the mean ``d`` of identical-transcript pairs; the
judge noise a pair carries, ``J (1/m_j + 1/m_j') / 2``, is taken off its ``d`` before crediting it.
The task component is the one-way ANOVA (method of moments) variance of the task means. Every
component is an equal-weight mean over tasks (tasks are the independent units); the intervals are
BCa bootstraps over tasks, and a side's upper end is never below a score-type end whose variance grows with
the side's share (where a side sets off few pairs, or its pairs are lost in judge noise, resampling cannot
see how far its share reaches).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypedDict

import numpy as np
from scipy.special import fdtri, ndtr, ndtri, stdtrit

from collapse_probe.errors import ConfigError

__all__ = [
    "COMPONENTS",
    "SIDES",
    "Trial",
    "VarianceDecomposition",
    "decompose_variance",
    "flip_rate",
    "pass_hat_k",
    "trials_from_records",
    "variance_lines",
    "variance_notes",
    "zero_std_by_cause",
]

SIDES = ("simulator", "agent")
"""The two sides whose draws make a conversation."""
COMPONENTS = ("task", "simulator", "agent", "judge")
SUCCESS_ATOL = 1e-9
MIN_IDENTICAL_PAIRS = 20
"""Without repeated judgements, the judge's variance is read from pairs of trials with the same transcript only
when there are at least this many of them, in at least :data:`MIN_IDENTICAL_TASKS` tasks (a handful of
pass/fail pairs cannot bound it)."""
MIN_IDENTICAL_TASKS = 3
MIN_VARYING_TASKS = 3
"""With fewer tasks whose trials' rewards differ, a note says the intervals understate the uncertainty."""
BOOTSTRAP_T_TASKS = 40
"""With at most this many tasks the interval is also never narrower than the bootstrap-t interval."""


@dataclass(frozen=True)
class Trial:
    """One trial of a task: its conversation and its reward's judgements."""

    task: Hashable
    steps: tuple[tuple[str, Hashable], ...]
    """``(side, identity)`` per message in order; ``side`` is ``"simulator"`` or ``"agent"``."""
    rewards: tuple[float, ...]
    """One judgement per judge run of this transcript (at least one)."""

    @property
    def reward(self) -> float:
        """The mean judgement."""
        return float(np.mean(self.rewards))


class ShareInterval(TypedDict):
    """One identified share of the reward variance: ``{"estimate", "ci95"}``."""

    estimate: float
    """The share, in [0, 1]."""
    ci95: list[float] | None
    """``[low, high]`` at the decomposition's level (``None``: too few resamples with variance)."""


class ZeroStdCauses(TypedDict):
    """:func:`zero_std_by_cause`: the groups with no reward variance, by cause."""

    zero_std_share: float | None
    """Zero-std groups over all groups with a scored reward (``None``: no such group)."""
    all_success_share: float | None
    """Zero-std groups that all succeeded, over all groups."""
    all_fail_share: float | None
    """Zero-std groups that all failed, over all groups."""
    simulator_caused_share: float | None
    """Over the zero-std groups whose replies were recorded: one class of reply at every shared turn."""
    groups: int
    zero_std_groups: int
    zero_std_with_replies: int


class VarianceBlock(TypedDict):
    """:meth:`VarianceDecomposition.to_dict`: ``results.json``'s ``variance`` block (see the dataclass's fields)."""

    shares: dict[str, ShareInterval | None]
    components: dict[str, float | None]
    total: float | None
    flip_rate: float | None
    pass_k: dict[str, float]
    n_tasks: int
    n_trials: int
    n_pairs: int
    divergence: dict[str, int]
    identical_prefixes: dict[str, dict[str, int]]
    judge_source: str | None
    level: float
    estimator: str
    """The method, in words."""
    notes: list[str]


@dataclass
class VarianceDecomposition:
    """The decomposition of one run's rewards (``results.json``'s ``variance`` block)."""

    shares: dict[str, ShareInterval | None]
    """component -> ``{"estimate", "ci95"}``, ``None`` where not identifiable."""
    components: dict[str, float | None]
    """component -> its variance (reward units squared)."""
    total: float | None
    flip_rate: float | None
    pass_k: dict[str, float]
    """``"1"``, ``"2"``, … -> pass^k."""
    n_tasks: int
    n_trials: int
    n_pairs: int
    divergence: dict[str, int]
    """Trial pairs by the side of their first differing step (``identical``: same transcript)."""
    identical_prefixes: dict[str, dict[str, int]]
    """side -> ``{"prefixes", "varied"}``: prefixes answered by that side in ≥ 2 trials, and how many of
    them got ≥ 2 different replies (the side itself varies at identical prefixes)."""
    judge_source: str | None
    """``repeated judgements``, ``identical transcripts`` or ``None`` (the judge's share is not identified)."""
    level: float = 0.95
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> VarianceBlock:
        return {
            "shares": self.shares,
            "components": self.components,
            "total": self.total,
            "flip_rate": self.flip_rate,
            "pass_k": self.pass_k,
            "n_tasks": self.n_tasks,
            "n_trials": self.n_trials,
            "n_pairs": self.n_pairs,
            "divergence": self.divergence,
            "identical_prefixes": self.identical_prefixes,
            "judge_source": self.judge_source,
            "level": self.level,
            "estimator": "first divergence of trial pairs; one-way ANOVA across tasks; BCa bootstrap over tasks, score-type upper end for each side",
            "notes": self.notes,
        }


def _first_divergence(a: Sequence[tuple[str, Hashable]], b: Sequence[tuple[str, Hashable]]) -> str:
    """The side of the first step where two conversations differ (``identical`` when they do not).

    Where the two steps at the first difference belong to different sides (one side went on, the
    other handed the turn over), the side of the last shared step made the difference; where one
    conversation stops and the other goes on, the side of the step that goes on."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return x[0] if x[0] == y[0] or i == 0 else a[i - 1][0]
    if len(a) == len(b):
        return "identical"
    return (a[len(b)] if len(a) > len(b) else b[len(a)])[0]


_COLS = ("n", "mean", "pair_var", "inv_m", "d_simulator", "im_simulator", "d_agent", "im_agent", "d_identical",
         "im_identical", "judge_ss", "judge_df", "ident_d", "ident_pairs", "p_simulator", "p_agent")  # fmt: skip
_C = {k: i for i, k in enumerate(_COLS)}


def _task_stats(trials: Sequence[Trial]) -> np.ndarray:
    """One task's sufficient statistics (a row of :data:`_COLS`): per side, the mean over the task's pairs of
    ``d · 1{side}`` and of ``(1/m_j + 1/m_j')/2 · 1{side}``; the spread of repeated judgements; identical pairs."""
    r = np.array([t.reward for t in trials])
    m = np.array([len(t.rewards) for t in trials], dtype=np.float64)
    n = r.size
    n_pairs = n * (n - 1) // 2
    row = dict.fromkeys(_COLS, 0.0)
    for i in range(n):
        for j in range(i + 1, n):
            side = _first_divergence(trials[i].steps, trials[j].steps)
            d = (r[i] - r[j]) ** 2 / 2
            row[f"d_{side}"] += d / n_pairs
            row[f"im_{side}"] += (1 / m[i] + 1 / m[j]) / 2 / n_pairs
            if side != "identical" and d > 0:  # pairs set off by the side whose rewards differ
                row[f"p_{side}"] += 1 / n_pairs
            if side == "identical":
                row["ident_d"] += d
                row["ident_pairs"] += 1
    row.update(n=n, mean=float(r.mean()), pair_var=float(np.var(r, ddof=1)),
               inv_m=row["im_simulator"] + row["im_agent"] + row["im_identical"],
               judge_ss=sum(float(np.sum((np.array(t.rewards) - np.mean(t.rewards)) ** 2)) for t in trials),
               judge_df=sum(len(t.rewards) - 1 for t in trials))  # fmt: skip
    return np.array([row[k] for k in _COLS], dtype=np.float64)


def _components(stats: np.ndarray, idx: np.ndarray, judge_from: str | None) -> dict[str, np.ndarray]:
    """Variance components for each resample of the tasks (``idx`` ``[B, T]`` rows of ``stats``); ``_total``:
    the variance of one judgement. A resample without the task component (one task) has no ``task``."""
    s = stats[idx]  # [B, T, cols]

    def col(k: str) -> np.ndarray:
        return s[..., _C[k]]

    with np.errstate(invalid="ignore", divide="ignore"):
        if judge_from == "repeated judgements":
            judge = np.nan_to_num(col("judge_ss").sum(-1) / col("judge_df").sum(-1))
        elif judge_from == "identical transcripts":
            judge = np.nan_to_num(col("ident_d").sum(-1) / col("ident_pairs").sum(-1))
        else:
            judge = np.zeros(s.shape[0])
    j = judge[:, None]
    out = {side: (col(f"d_{side}") - j * col(f"im_{side}")).mean(-1) for side in SIDES}
    if judge_from is not None:  # each side's variance with the judge noise of its pairs left in: an upper bound
        out.update({f"{_WITH_JUDGE}{side}": col(f"d_{side}").mean(-1) for side in SIDES})
        # and the judge noise those pairs carry, which the side's component subtracts (for MOVER)
        out.update({f"{_JUDGE_PART}{side}": (j * col(f"im_{side}")).mean(-1) for side in SIDES})
    out["judge"] = judge + (col("d_identical") - j * col("im_identical")).mean(-1)
    # the within-task variance of one judgement: the trials' spread less the judge noise in their means, plus J
    within_one = (col("pair_var") - j * col("inv_m")).mean(-1) + judge
    total = within_one
    if s.shape[1] >= 2:
        out["task"] = col("mean").var(axis=-1, ddof=1) - (col("pair_var") / col("n")).mean(-1)
        total = total + out["task"]
    out["_total"] = total
    return out


_WITH_JUDGE = "_with_judge_"
"""Prefix of the components that keep the judge noise of a side's pairs (:func:`_components`)."""

_JUDGE_PART = "_judge_part_"
"""Prefix of the components that hold the judge noise a side's pairs carry (:func:`_components`)."""

_LARGE_REWARD = 1e100
"""Rewards larger than this in size are rescaled before their squares are taken."""


def _raw(value: float, unit: float) -> float | None:
    """A variance computed on rewards / ``unit`` in the rewards' own unit (``None`` where it overflows)."""
    out = value * unit * unit
    return float(out) if math.isfinite(out) else None


def decompose_variance(
    trials: Iterable[Trial],
    *,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    success: float | None = 1.0,
) -> VarianceDecomposition:
    """Split the reward variance of ``trials`` into task, simulator, agent and judge shares.

    Args:
        trials: every scored trial (tasks with one trial enter pass^k only).
        level: the intervals' level.
        n_boot: bootstrap resamples of the tasks.
        seed: the bootstrap's seed.
        success: a trial succeeds when its mean judgement is at least this (for the flip rate and
            pass^k); ``None``: rewards are not pass/fail and neither is computed.

    Returns:
        The decomposition; a share is ``None`` where the data cannot identify it (the task share with
        fewer than 2 tasks of ≥ 2 trials; the judge's without repeated judgements or identical transcripts).

    Raises:
        ConfigError: a trial without a judgement, a non-finite reward, a side that is neither
            ``simulator`` nor ``agent``, or an option out of range.
    """
    by_task = _by_task(trials, level, n_boot)
    all_trials = [t for v in by_task.values() for t in v]
    notes: list[str] = []
    multi = {k: v for k, v in by_task.items() if len(v) >= 2}
    top, unit = _reward_unit(all_trials)
    stats = [_task_stats([replace(t, rewards=tuple(x / unit for x in t.rewards)) for t in v]) for v in multi.values()]
    divergence = _divergence(list(multi.values()))
    judge_from = _judge_source(list(multi.values()), stats, divergence, notes)
    rewards = [[t.reward for t in v] for v in by_task.values() if v]
    fr = flip_rate(rewards, success) if success is not None else None
    pk = pass_hat_k(rewards, success) if success is not None and rewards else {}
    shares: dict[str, ShareInterval | None] = dict.fromkeys(COMPONENTS)
    comps: dict[str, float | None] = dict.fromkeys(COMPONENTS)
    result = VarianceDecomposition(shares, comps, None, fr, pk, len(multi), len(all_trials), sum(divergence.values()),
                                   divergence, _identical_prefixes(list(multi.values())), judge_from, level, notes)  # fmt: skip
    if not stats:
        notes.append("no task has 2 scored trials: no decomposition")
        return result
    table = np.stack(stats)
    point = {k: float(v[0]) for k, v in _components(table, np.arange(len(stats))[None, :], judge_from).items()}
    total = point.pop("_total")
    result.total = _raw(total, unit)
    comps.update({k: _raw(val, unit) for k, val in point.items() if not k.startswith((_WITH_JUDGE, _JUDGE_PART))})
    if unit != 1.0:
        notes.append(f"rewards up to {top:.3g} in size: the shares are computed on rewards / {unit:.3g}; a "
                     "component whose square overflows is null")  # fmt: skip
    if not _identified(table, point, total, notes, level):
        return result
    for k, ci in _share_intervals(table, judge_from, point, total, level, n_boot, seed).items():
        shares[k] = {"estimate": _unit(point[k] / total), "ci95": ci}
    if shares["task"] is None and len(stats) >= 2:
        notes.append("the task share is not identified")
    return result


def _reward_unit(trials: Sequence[Trial]) -> tuple[float, float]:
    """The largest reward in size and the unit the squares are taken in: the shares do not depend on the
    rewards' unit, and rewards near the float range (±1e308) would overflow the squares, so they are computed on
    rewards / unit and the components reported back in raw units where those are finite."""
    top = max((abs(x) for t in trials for x in t.rewards), default=0.0)
    return top, (top if top > _LARGE_REWARD else 1.0)


def _divergence(groups: Sequence[Sequence[Trial]]) -> dict[str, int]:
    """Trial pairs by the side of their first differing step (``identical``: the same transcript)."""
    out = {s: 0 for s in (*SIDES, "identical")}
    for v in groups:
        for i in range(len(v)):
            for j in range(i + 1, len(v)):
                out[_first_divergence(v[i].steps, v[j].steps)] += 1
    return out


def _by_task(trials: Iterable[Trial], level: float, n_boot: int) -> dict[Hashable, list[Trial]]:
    """The trials grouped by task (the build stage of :func:`decompose_variance`), each checked, and the options."""
    if not 0 < level < 1:
        raise ConfigError(f"level must be in (0, 1), got {level}")
    if not isinstance(n_boot, int) or n_boot < 10:
        raise ConfigError(f"n_boot must be an integer >= 10, got {n_boot!r}")
    by_task: dict[Hashable, list[Trial]] = {}
    for t in trials:
        if not t.rewards or not all(isinstance(x, int | float) and math.isfinite(x) for x in t.rewards):
            raise ConfigError(f"trial of task {t.task!r}: expected one or more finite rewards, got {t.rewards!r}")
        bad = next((s for s, _ in t.steps if s not in SIDES), None)
        if bad is not None:
            raise ConfigError(f"trial of task {t.task!r}: a step's side must be 'simulator' or 'agent', got {bad!r}")
        by_task.setdefault(t.task, []).append(t)
    return by_task


def _judge_source(groups: Sequence[Sequence[Trial]], stats: Sequence[np.ndarray], divergence: dict[str, int],
                  notes: list[str]) -> str | None:  # fmt: skip
    """Where the judge's variance is read from (``None``, with a note, where it is not identified)."""
    if any(len(t.rewards) >= 2 for v in groups for t in v):
        return "repeated judgements"
    if (
        divergence["identical"] >= MIN_IDENTICAL_PAIRS
        and sum(1 for st in stats if st[_C["ident_pairs"]] > 0) >= MIN_IDENTICAL_TASKS
    ):
        return "identical transcripts"
    notes.append(
        "the judge's share is not identified (no transcript was judged twice, and fewer than "
        f"{MIN_IDENTICAL_PAIRS} pairs of trials in {MIN_IDENTICAL_TASKS} tasks have the same transcript): any judge "
        "noise is counted in the share of the side that set each pair off"
    )
    return None


def _identified(table: np.ndarray, point: dict[str, float], total: float, notes: list[str], level: float) -> bool:
    """Whether the shares are identified (rewards that vary, 2 tasks), with the notes on what they rest on."""
    if total <= 0:
        notes.append("the rewards do not vary: every share is undefined")
        return False
    if len(table) < 2:
        split = ", ".join(f"{k} {point[k] / total:.3f}" for k in ("simulator", "agent", "judge") if k in point)
        notes.append(
            f"only {len(table)} task has 2 or more scored trials: the shares need 2 tasks (tasks are the units of the "
            f"interval, and the task share is the variance between them); within that task: {split}"
        )
        return False
    varying = int(np.sum(table[:, _C["pair_var"]] > 0))
    if _no_reward_differs(table):
        notes.append(
            f"no two trials or judgements of any of the {len(table)} tasks differ in reward: the within-task shares "
            "read 0, and their upper ends take the largest within-task variance under which that agreement has a "
            f"{(1 - level) / 2:.1%} chance (rewards within the range the file shows)"
        )
    elif varying < MIN_VARYING_TASKS:
        notes.append(
            f"only {varying} of {len(table)} tasks have trials whose rewards differ: the within-task shares rest on "
            f"{'that task' if varying == 1 else 'those tasks'}, and their intervals understate the uncertainty"
        )
    return True


def _share_intervals(table: np.ndarray, judge_from: str | None, point: dict[str, float], total: float, level: float,
                     n_boot: int, seed: int) -> dict[str, list[float] | None]:  # fmt: skip
    """Each identified share's interval (the interval stage of :func:`decompose_variance`): BCa over tasks, never
    narrower than the jackknife and (≤ 40 tasks) bootstrap-t intervals, except that a side's upper end is the
    larger of BCa's and its score-type end (:func:`_side_upper`)."""
    rng = np.random.default_rng(seed)
    t_count = len(table)
    boot = _components(table, rng.integers(0, t_count, (n_boot, t_count)), judge_from)
    bt = boot.pop("_total")
    loo = np.array([[j for j in range(t_count) if j != i] for i in range(t_count)])
    jack = _components(table, loo, judge_from)
    jt = jack.pop("_total")
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = {k: np.where(np.isfinite(v / jt) & (jt > 0), v / jt, point[k] / total) for k, v in jack.items()}
    studentized = _bootstrap_t(table, judge_from, point, total, rng, n_boot) if t_count <= BOOTSTRAP_T_TASKS else {}
    ok_b = bt > 0
    out: dict[str, list[float] | None] = {}
    bca: dict[str, tuple[float, float]] = {}
    for k, val in point.items():
        est = val / total
        if ok_b.sum() < n_boot / 2:  # most resamples have no variance: no interval
            continue
        lo, hi = _bca(boot[k][ok_b] / bt[ok_b], est, theta.get(k, np.full(t_count, est)), level)
        bca[k] = (lo, hi)
        if k in COMPONENTS:
            # never narrower than the jackknife t interval, est ± t_{T-1} · SE_jack (a second-order check on the
            # bootstrap where a few tasks carry the component), nor, with few tasks, the bootstrap-t interval; a
            # side's upper end is its score-type end instead (below), so these widen only its lower end
            se = _jack_se(theta[k]) if k in theta else 0.0
            half = float(stdtrit(t_count - 1, 1 - (1 - level) / 2)) * se * math.sqrt(t_count / (t_count - 1))
            ends = [(est - half, est + half)]
            if k in studentized and se > 0:  # with few tasks, also the bootstrap-t interval (its skew is the data's)
                q_lo, q_hi = np.quantile(studentized[k], [(1 - level) / 2, 1 - (1 - level) / 2])
                ends.append((est - float(q_hi) * se, est - float(q_lo) * se))
            lo = min(lo, *(e[0] for e in ends))
            if k not in SIDES:
                hi = max(hi, *(e[1] for e in ends))
        out[k] = [lo, hi]
    for side in SIDES:
        ci = out.get(side)
        if ci is not None:
            out[side] = [ci[0], max(ci[1], _side_upper(side, table, point, total, theta, bca, judge_from, level))]
    if (ci := out.get("task")) is not None:
        out["task"] = [ci[0], max(ci[1], _task_upper(table, level))]
    if _no_reward_differs(table):  # no reward within a task differs: a count bounds
        # the within-task variance is taken at its end w_u; the task component at its jackknife t lower end, less what
        # that within-task variance adds to the spread of the task means (the estimate subtracts the observed 0)
        w_u, in_means = _unseen_within_bound(table, level)
        crit = float(stdtrit(t_count - 1, 1 - (1 - level) / 2)) * math.sqrt(t_count / (t_count - 1))
        task_l = (
            (point["task"] - in_means - crit * _jack_se(jack["task"])) if "task" in jack and "task" in point else 0.0
        )
        for side in SIDES:
            if (ci := out.get(side)) is not None:
                ci[1] = max(ci[1], 1.0 if task_l <= 0 else w_u / (w_u + task_l))
        if (ci := out.get("task")) is not None:
            ci[0] = min(ci[0], max(task_l, 0.0) / (max(task_l, 0.0) + w_u))
    # the ends are rounded outward to the 0.001 the tables print (below it a share reads as 0)
    shares: dict[str, list[float] | None] = {}
    for k in COMPONENTS:
        if k not in point or (k == "judge" and judge_from is None):
            continue
        ci = out.get(k)
        shares[k] = None if ci is None else [_unit(math.floor(ci[0] * 1000) / 1000 - 0.001),
                                              _unit(math.ceil(ci[1] * 1000) / 1000 + 0.001)]  # fmt: skip
    return shares


def _no_reward_differs(table: np.ndarray) -> bool:
    """Whether no two trials and no two judgements of any task differ in reward."""
    return not np.any(table[:, [_C["pair_var"], _C["judge_ss"]]] > 0)


def _no_difference_log_p(q: float, n: float) -> float:
    """log P(n independent rewards in [0, 1] all agree), at its largest over rewards with variance q(1 − q): two
    values 1 apart, with probabilities q and 1 − q (a reward of that variance that is not two-valued needs its mass
    further from its atom, which makes agreement rarer). In logs, q^n + (1 − q)^n = (1 − q)^n (1 + r^n) with
    r = q / (1 − q) ≤ 1, so a task of thousands of trials does not underflow."""
    if q <= 0.0:
        return 0.0
    return n * math.log1p(-q) + math.log1p(math.exp(n * (math.log(q) - math.log1p(-q))))


def _no_difference_slope(q: float, n: float) -> float:
    """−d/dv of :func:`_no_difference_log_p` at v = q(1 − q), q in [0, ½]: n Σ_{i ≤ n−2} r^i / ((1 − q)² (1 + r^n))
    with r = q / (1 − q) (the derivative's (1 − q)^(n−1) − q^(n−1) over dv/dq = 1 − 2q, without cancelling: the
    geometric sum is expm1((n − 1) ln r) / expm1(ln r)); increasing in q, from n at 0 to 2n(n − 1) at ½, so log P is
    concave in v."""
    k = int(round(n))
    if q <= 0.0:
        return float(k)
    log_r = math.log(q) - math.log1p(-q)
    geometric = float(k - 1) if log_r >= 0.0 else math.expm1((k - 1) * log_r) / math.expm1(log_r)
    return k * geometric / ((1.0 - q) ** 2 * (1.0 + math.exp(k * log_r)))


def _unseen_within_bound(table: np.ndarray, level: float) -> tuple[float, float]:
    """Where no two trials of any task differ in reward, an upper end for the mean within-task variance (on the
    table's scale): the largest mean over tasks of Var(R̄ | task) under which "every task's n_i trials agree" still
    has probability (1 − level) / 2, for rewards within the range the file shows (max − min of the task means).

    Each task's trials are independent draws (the estimator's first assumption), so that probability is the product
    over tasks of :func:`_no_difference_log_p`. Its logarithm is concave in each task's variance, so the largest mean
    is where every task's marginal −d log P / dv (:func:`_no_difference_slope`) is one κ (a task whose slope at v = ¼
    is below κ sits at ¼), found by bisection on κ; tasks with the same number of trials share one v. Returns that
    mean and, at the same v_i, mean_i v_i / n_i: what the within-task noise adds to the variance of the task means."""
    span = float(np.ptp(table[:, _C["mean"]]))
    counts = Counter(int(n) for n in table[:, _C["n"]])
    target = math.log((1 - level) / 2)

    def at(kappa: float) -> dict[int, float]:  # each trial count's q where its slope is κ
        out = {}
        for n in counts:
            lo, hi = 0.0, 0.5
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if _no_difference_slope(mid, n) < kappa else (lo, mid)
            out[n] = lo
        return out

    def log_p(qs: dict[int, float]) -> float:
        return sum(c * _no_difference_log_p(qs[n], n) for n, c in counts.items())

    qs = dict.fromkeys(counts, 0.5)
    if log_p(qs) < target:
        lo, hi = 0.0, 2.0 * max(n * (n - 1) for n in counts)  # at hi every q is ½
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if log_p(at(mid)) < target else (mid, hi)
        qs = at(lo)
    t_count = sum(counts.values())
    mean_var = sum(c * qs[n] * (1 - qs[n]) for n, c in counts.items()) / t_count
    in_means = sum(c * qs[n] * (1 - qs[n]) / n for n, c in counts.items()) / t_count
    return mean_var * span * span, in_means * span * span


def _task_upper(table: np.ndarray, level: float) -> float:
    """The task share's upper end from the one-way ANOVA's F distribution (normal theory; the interval for the
    intraclass correlation, Searle 1971), with the unweighted task means the estimator uses: the spread of the task
    means over the pooled within-task variance times the mean 1/n_i is (1 + c) times an F(T − 1, N − T) variable
    (exactly with equal trial counts, approximately with unequal ones: Thomas and Hultquist's unweighted-means
    approximation), c = σ²_task / (σ²_within · mean 1/n_i), so ``c ≤ F / F_{α/2} − 1`` and the share of the task
    among the trial means' variance is at most ``λ / (1 + λ)`` with ``λ = c · mean 1/n_i``: the task share itself
    where every trial is judged once (it is used only there: with repeated judgements the share's within-task part
    also holds the judge noise that averaging takes out of the trial means, and this end is loose). It does not move
    with the point estimate, which with few tasks is often negative (read 0), where every resampling interval sits on
    that negative value and ends below a share of 0.3."""
    if np.any(table[:, _C["judge_df"]] > 0):  # a trial judged more than once: not used (0 adds nothing)
        return 0.0
    n = table[:, _C["n"]]
    t_count, df_within = len(n), float(np.sum(n - 1))
    if t_count < 2 or df_within <= 0:
        return 1.0
    within = float(np.sum((n - 1) * table[:, _C["pair_var"]])) / df_within
    inv_n = float(np.mean(1.0 / n))
    if within <= 0:
        return 1.0
    f_obs = float(np.var(table[:, _C["mean"]], ddof=1)) / (within * inv_n)
    f_low = float(fdtri(t_count - 1, df_within, (1 - level) / 2))
    lam = max(f_obs / f_low - 1.0, 0.0) * inv_n
    return lam / (1.0 + lam)


def _jack_se(theta: np.ndarray) -> float:
    """The jackknife standard error of a statistic from its leave-one-task-out values."""
    n = theta.size
    return math.sqrt((n - 1) / n * float(np.sum((theta - theta.mean()) ** 2)))


def _bca(b: np.ndarray, est: float, theta: np.ndarray, level: float) -> tuple[float, float]:
    """BCa (bias-corrected and accelerated; Efron 1987) at the expanded percentile's level (Hesterberg 2015): the
    shares are ratios of means of skewed per-task terms, where the plain percentile interval misses on the long
    side; with few tasks its tails are also too short, so the tail probability is taken where a t interval with
    T − 1 degrees of freedom would put its ends. ``b``: the resampled shares; ``theta``: the leave-one-out ones."""
    t_count = theta.size
    alpha = float(ndtr(math.sqrt(t_count / (t_count - 1)) * stdtrit(t_count - 1, (1 - level) / 2)))
    z0 = float(ndtri(min(max((np.sum(b < est) + 0.5 * np.sum(b == est)) / b.size, 1e-6), 1 - 1e-6)))
    dev = theta.mean() - theta
    den = 6 * float(np.sum(dev**2)) ** 1.5
    acc = float(np.sum(dev**3)) / den if den > 0 else 0.0
    q = [float(ndtr(z0 + (z0 + z) / (1 - acc * (z0 + z)))) for z in (float(ndtri(alpha)), float(ndtri(1 - alpha)))]
    if not all(math.isfinite(x) for x in q):  # a degenerate jackknife (e.g. one task carries everything)
        q = [alpha, 1 - alpha]
    lo, hi = np.quantile(b, q)
    return float(lo), float(hi)


def _score_upper(est: float, var_jack: float, phi: float, crit: float) -> float:
    """The largest share θ in [0, 1] with (est − θ)² ≤ crit² · max(var_jack, φ θ): a score-type (Wilson-like) upper
    end whose variance is taken at θ, not at the estimate, so it does not collapse where the estimate is near 0."""
    est = max(est, 0.0)
    root = (crit * math.sqrt(phi) + math.sqrt(crit * crit * phi + 4 * est)) / 2  # (θ − est)² = crit² φ θ, θ ≥ est
    return min(1.0, max(root * root, est + crit * math.sqrt(max(var_jack, 0.0))))


def _side_upper(side: str, table: np.ndarray, point: dict[str, float], total: float, theta: dict[str, np.ndarray],
                bca: dict[str, tuple[float, float]], judge_from: str | None, level: float) -> float:  # fmt: skip
    """A side's upper end where resampling cannot see how far its share reaches (few or no pairs set off by it, or
    its pairs lost in judge noise).

    The side's share is A − B: its pairs' spread ``A`` (judge noise left in; with the judge not identified, the
    share itself) less the judge noise ``B`` those pairs carry. ``A``'s upper end is score-type (quasi-likelihood):
    its sampling variance is taken as φ · A, with the dispersion φ = Var_jack(Σ_sides Â) / Σ_sides Â read from
    both sides' spreads together (a side's spread is a thinned part of the within-task spread, so its variance
    grows with its size), φ never below a count's (d̄ / total · mean_i 1/(n_i − 1) / T, d̄ the mean d of the
    pairs whose rewards differ), and the variance never below the side's own jackknife variance. With the judge identified the two parts
    are combined by MOVER (Zou & Donner 2008), each from its own interval: Â − B̂ + √((u_A − Â)² + (B̂ − l_B)²).
    Approximate, measured on the simulated panel (``benchmarks/variance_coverage.py``), not proven."""
    key_a = f"{_WITH_JUDGE}{side}" if judge_from is not None else side
    keys = [f"{_WITH_JUDGE}{s}" if judge_from is not None else s for s in SIDES]
    t_count = next(iter(theta.values())).size
    crit = float(stdtrit(t_count - 1, 1 - (1 - level) / 2))
    a = point[key_a] / total
    pooled = sum(point[k] for k in keys) / total
    pooled_jack = np.sum([theta[k] for k in keys], axis=0)
    if pooled <= 0:  # no two trials of a task differ: nothing to read a dispersion from
        return a
    # never below the dispersion of a count: pairs whose rewards differ, each carrying the mean d of such pairs,
    # set off at a rate over each task's n − 1 independent comparisons (what 7 alike tasks cannot show by jackknife)
    differing = float(np.sum(table[:, _C["p_simulator"]] + table[:, _C["p_agent"]]))
    d_pair = float(np.sum(table[:, _C["d_simulator"]] + table[:, _C["d_agent"]])) / differing if differing else 0.0
    per_comparison = float(np.mean(1 / np.maximum(table[:, _C["n"]] - 1, 1))) / t_count
    phi = max(_jack_se(pooled_jack) ** 2 / pooled, d_pair / total * per_comparison)
    u_a = _score_upper(a, _jack_se(theta[key_a]) ** 2, phi, crit)
    if judge_from is None:
        return u_a
    b = point[f"{_JUDGE_PART}{side}"] / total
    l_b = bca.get(f"{_JUDGE_PART}{side}", (b, b))[0]
    return a - b + math.hypot(u_a - a, b - max(l_b, 0.0))


def _entries(value: object) -> list[object]:
    """The items of a JSON list (none for anything else)."""
    return list(value) if isinstance(value, list | tuple) else []


def _fields(value: object) -> Mapping[str, object]:
    """A JSON object's fields (none for anything else)."""
    return value if isinstance(value, Mapping) else {}


def _block(d: object, what: str) -> Mapping[str, object]:
    """``d`` checked to be the variance block as a JSON object (a results model is read as its ``to_json()``)."""
    if not isinstance(d, Mapping):
        raise ConfigError(
            f"{what}: expected the variance block as a JSON object (VarianceDecomposition.to_dict(), or a "
            f"results model's .to_json()), got {type(d).__name__}"
        )
    return d


def variance_notes(d: Mapping[str, object], agent_greedy: bool | None = None) -> list[str]:
    """The decomposition's notes, and what the identical prefixes say about each side (``d``: its ``to_dict()``).

    Raises:
        ConfigError: ``d`` is not a mapping.
    """
    d = _block(d, "variance_notes")
    notes = [str(n) for n in _entries(d.get("notes"))]
    for side in SIDES:
        ip = _fields(_fields(d.get("identical_prefixes")).get(side))
        if ip.get("varied"):
            said = " although the file says it samples greedily" if side == "agent" and agent_greedy else ""
            notes.append(
                f"the {side}'s replies differ at {ip['varied']} of the {ip['prefixes']} prefixes that 2 or more "
                f"trials share{said}: the {side} itself varies at identical prefixes"
            )
    return notes


def variance_lines(d: Mapping[str, object]) -> list[str]:
    """The decomposition in a few lines of text (the terminal of ``audit --from``; ``d``: the ``variance``
    block of ``results.json``).

    Raises:
        ConfigError: ``d`` is not a mapping.
    """
    d = _block(d, "variance_lines")
    shares = _fields(d.get("shares"))

    def one(k: str) -> str:
        sh = shares.get(k)
        if not isinstance(sh, Mapping):
            return f"{k} n/a"
        ci = _entries(sh.get("ci95"))
        return f"{k} {sh['estimate']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

    div = _fields(d.get("divergence"))
    lines = [
        f"reward variance over {d.get('n_tasks', 0)} tasks with 2+ trials ({d.get('n_trials', 0)} trials): "
        + ", ".join(one(k) for k in COMPONENTS),
        f"  trial pairs by first divergence: simulator {div.get('simulator', 0)}, agent {div.get('agent', 0)}, "
        f"identical {div.get('identical', 0)}",
    ]
    fr, pk = d.get("flip_rate"), _fields(d.get("pass_k"))
    if fr is not None or pk:
        lines.append(
            "  flip rate "
            + (f"{fr:.3f}" if fr is not None else "n/a")
            + " (tasks whose success differs between trials)"
            + (
                "; " + ", ".join(f"pass^{k} {v:.3f}" for k, v in pk.items() if int(k) <= 4 or k == max(pk, key=int))
                if pk
                else ""
            )
        )
    lines += [f"  note: {n}" for n in _entries(d.get("notes"))]
    return lines


def trials_from_records(records: Iterable[Mapping[str, object]]) -> list[Trial]:
    """The scored conversations of a run (``play``, ``crossplay`` records: ``task_id``, ``messages`` with
    ``role`` ``policy`` / ``simulator`` / ``tool``, ``reward``; infrastructure failures left out) as trials,
    grouped by policy, simulator and task."""
    import json

    out = []
    for r in records:
        reward, messages = r.get("reward"), r.get("messages") or []
        if r.get("status") == "infra_error" or not isinstance(reward, int | float):
            continue
        if not isinstance(messages, list):
            raise ConfigError(f"record {r.get('key')!r}: messages must be a list, got {type(messages).__name__}")
        steps = tuple(
            ("simulator" if m.get("role") == "simulator" else "agent",
             (m.get("role"), m.get("content"), json.dumps(m.get("tool_calls"), sort_keys=True, default=str)))
            for m in messages
        )  # fmt: skip
        out.append(Trial((r.get("policy"), r.get("simulator"), str(r.get("task_id"))), steps, (float(reward),)))
    return out


def _bootstrap_t(table: np.ndarray, judge_from: str | None, point: dict[str, float], total: float,
                 rng: np.random.Generator, n_boot: int) -> dict[str, np.ndarray]:  # fmt: skip
    """Per share, the studentized bootstrap statistics ``(θ* − θ̂) / SE*_jack`` (SE*: the jackknife over the
    resample's tasks), for the bootstrap-t interval ``[θ̂ − q_hi SE, θ̂ − q_lo SE]``."""
    t = table.shape[0]
    loo = np.array([[j for j in range(t) if j != i] for i in range(t)])  # [T, T-1]
    out: dict[str, list[np.ndarray]] = {k: [] for k in point}
    for start in range(0, n_boot, 100):
        idx = rng.integers(0, t, (min(100, n_boot - start), t))  # [b, T]
        full = _components(table, idx, judge_from)
        jack = _components(table, idx[:, loo].reshape(-1, t - 1), judge_from)  # [b*T]
        ft, jt = full.pop("_total"), jack.pop("_total").reshape(-1, t)
        for k in point:
            if k not in full or k not in jack:
                continue
            with np.errstate(invalid="ignore", divide="ignore"):
                th = full[k] / ft
                tj = jack[k].reshape(-1, t) / jt
                se = np.sqrt((t - 1) / t * np.sum((tj - tj.mean(axis=1, keepdims=True)) ** 2, axis=1))
                z = (th - point[k] / total) / se
            out[k].append(z[np.isfinite(z)])
    return {k: np.concatenate(v) for k, v in out.items() if v and sum(x.size for x in v) >= n_boot / 2}


def _unit(x: float) -> float:
    return min(1.0, max(0.0, x))


def _identical_prefixes(groups: Sequence[Sequence[Trial]]) -> dict[str, dict[str, int]]:
    out = {s: {"prefixes": 0, "varied": 0} for s in SIDES}
    for trials in groups:
        ids: dict[tuple[int, tuple[str, Hashable]], int] = {}  # (prefix id, next step) -> the longer prefix's id
        nexts: dict[int, tuple[str, set[Hashable], int]] = {}  # prefix id -> (side, replies seen, times answered)
        for t in trials:
            prefix = 0
            for step in t.steps:
                side_, seen, n = nexts.get(prefix, (step[0], set(), 0))
                seen.add(step)
                nexts[prefix] = (side_, seen, n + 1)
                prefix = ids.setdefault((prefix, step), len(ids) + 1)
        for side, seen, n in nexts.values():
            if n >= 2:
                out[side]["prefixes"] += 1
                out[side]["varied"] += int(len(seen) >= 2)
    return out


def _successes(rewards: Sequence[float], success: float) -> list[bool]:
    return [r >= success - SUCCESS_ATOL for r in rewards]


def flip_rate(rewards_by_task: Sequence[Sequence[float]], success: float = 1.0) -> float | None:
    """Share of tasks with ≥ 2 trials whose success differs between trials (``None``: no such task).

    Example:
        >>> flip_rate([[1.0, 0.0], [1.0, 1.0], [0.0]])
        0.5
    """
    multi = [_successes(v, success) for v in rewards_by_task if len(v) >= 2]
    if not multi:
        return None
    return sum(1 for s in multi if len(set(s)) > 1) / len(multi)


def pass_hat_k(rewards_by_task: Sequence[Sequence[float]], success: float = 1.0) -> dict[str, float]:
    """τ-bench's pass^k for k = 1 … the fewest trials of a task: the mean over tasks of C(c, k) / C(n, k)
    (``c`` successes in ``n`` trials), the chance that k trials drawn without replacement all succeed.

    Example:
        >>> pass_hat_k([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
        {'1': 0.8333333333333333, '2': 0.6666666666666666, '3': 0.5}
    """
    tasks = [v for v in rewards_by_task if len(v) >= 1]
    if not tasks:
        return {}
    kmax = min(len(v) for v in tasks)
    out = {}
    for k in range(1, kmax + 1):
        vals = [math.comb(sum(_successes(v, success)), k) / math.comb(len(v), k) for v in tasks]
        out[str(k)] = float(np.mean(vals))
    return out


def zero_std_by_cause(
    rewards_by_group: Sequence[Sequence[float]],
    sim_classes_by_group: Sequence[Sequence[Sequence[Hashable]] | None] | None = None,
    *,
    success: float = 1.0,
    failure: float = 0.0,
    atol: float = 1e-12,
) -> ZeroStdCauses:
    """Groups with no reward variance, by cause: all-success, all-fail, and simulator-caused.

    Args:
        rewards_by_group: the scored rewards of each group (the rollouts of one task at one step).
        sim_classes_by_group: per group, per rollout, the class of the simulator's reply at each of its
            turns (``None`` for a group whose replies were not recorded). A zero-std group is
            *simulator-caused* when at every turn its rollouts reached together, the simulator's
            replies fell in one class: the simulator gave the group one conversation, so nothing on
            its side could have made the rewards differ.
        success: a reward at least this is a success; ``failure``: a reward at most this is a failure.
        atol: a group is zero-std when ``max − min <= atol`` (groups with one scored reward count too).

    Returns:
        ``{"zero_std_share", "all_success_share", "all_fail_share", "simulator_caused_share", "groups",
        "zero_std_groups", "zero_std_with_replies"}``: the first three over all groups with a scored
        reward, ``simulator_caused_share`` over the zero-std groups whose replies were recorded
        (``None`` when none were).

    Example:
        >>> d = zero_std_by_cause([[1, 1], [0, 0], [0, 1]], [[["a"], ["a"]], [["a"], ["b"]], None])
        >>> d["zero_std_share"], d["all_success_share"], d["all_fail_share"], d["simulator_caused_share"]
        (0.6666666666666666, 0.3333333333333333, 0.3333333333333333, 0.5)
    """
    if sim_classes_by_group is not None and len(sim_classes_by_group) != len(rewards_by_group):
        raise ConfigError(
            f"zero_std_by_cause: {len(sim_classes_by_group)} groups of replies for {len(rewards_by_group)} reward groups"
        )
    groups = zero = succ = fail = with_replies = caused = 0
    for i, rewards in enumerate(rewards_by_group):
        vals = [float(r) for r in rewards if r is not None and math.isfinite(float(r))]
        if not vals:
            continue
        groups += 1
        if max(vals) - min(vals) > atol:
            continue
        zero += 1
        succ += int(vals[0] >= success - SUCCESS_ATOL)
        fail += int(vals[0] <= failure + SUCCESS_ATOL)
        classes = sim_classes_by_group[i] if sim_classes_by_group is not None else None
        if classes is None:
            continue
        with_replies += 1
        depth = max((len(c) for c in classes), default=0)
        one = all(len({c[t] for c in classes if len(c) > t}) <= 1 for t in range(depth))
        caused += int(one and len(classes) >= 1)
    return {
        "zero_std_share": zero / groups if groups else None,
        "all_success_share": succ / groups if groups else None,
        "all_fail_share": fail / groups if groups else None,
        "simulator_caused_share": caused / with_replies if with_replies else None,
        "groups": groups,
        "zero_std_groups": zero,
        "zero_std_with_replies": with_replies,
    }
