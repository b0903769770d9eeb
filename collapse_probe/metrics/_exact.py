"""Exact, mix-free bounds on the mean collapse error that decide the audit's verdict, and the
sequential test that draws replies in looks until they decide it.

The proof is in ``docs/collapse-error-intervals.md`` ("The verdict's exact bounds"). In short, with
m_s the modal probability of state s and m̄ their mean (ε̄ = 1 − m̄), and n replies per state:

- **NOT COLLAPSED side** (lower bound on ε̄): the pooled max counts Σ_s M_s lie pathwise above
  Σ_s X_s, the counts of the true modal classes, a sum of S·n independent Bernoulli trials with mean
  m̄; by Hoeffding (1956, Theorem 4) its lower tail at least one trial below the mean is no heavier
  than that of Binomial(S·n, m̄). The one-sided Clopper–Pearson upper bound of the pooled max counts
  is therefore an upper bound on m̄ at its level, for any mix of states.
- **COLLAPSED side** (upper bound on ε̄): reply j (j ≥ 2) of a state is a *predictable-mode hit*
  when it falls in the modal class of replies 1..j−1 of that state (ties: the class seen first). Its
  conditional probability given everything before it is at most m_s, so (by a coupling) the hits lie
  pathwise below independent Binomial(n − 1, m_s) counts, whose upper tail one trial above the mean is
  no heavier than Binomial(S·(n − 1), m̄)'s. The Clopper–Pearson lower bound of the pooled hits is a
  lower bound on m̄.

Both statements need the rejection cut-off to lie at least one trial beyond the mean under ε̄ = ε*;
the functions check that and do not decide where it fails (it cannot fail at one-sided levels up to
1/4 away from the ends, Greenberg & Mohri 2014).

The sequential test looks at n = 20, 40, 60, … replies per state (:class:`LookSchedule`); look k spends
a share of each side's error fixed by k alone, so the shares sum to at most the side's error whatever
the cap, and a rerun with a raised cap repeats the same looks on the cached replies (the response
cache keys on the sample index) and continues with the next ones: one test, never a restart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.stats import beta, binom

Decision = Literal["COLLAPSED", "NOT COLLAPSED"]
COLLAPSED: Decision = "COLLAPSED"
NOT_COLLAPSED: Decision = "NOT COLLAPSED"

MAX_ALPHA_SIDE = 0.25
"""Largest one-sided error the bounds accept: up to it a binomial puts more than the error on each
side of its mean (Greenberg & Mohri 2014), which Hoeffding's tail comparison needs."""


def modal_count(labels: Sequence[int]) -> int:
    """The largest class count of one state's replies."""
    if not len(labels):
        return 0
    return int(np.bincount(np.asarray(labels, dtype=np.int64) - int(np.min(labels))).max())


def predictable_mode_hits(labels: Sequence[int]) -> int:
    """How many of replies 2..n fall in the modal class of the replies before them.

    Ties between classes with equal counts go to the class whose first reply came earliest, a rule
    fixed before the reply is seen: that is what bounds each hit's conditional probability by the
    state's modal probability.

    >>> predictable_mode_hits([0, 0, 1, 0, 1, 1])  # predicted: -, 0, 0, 0, 0, 0
    2
    """
    counts: dict[int, int] = {}
    first: dict[int, int] = {}
    best: int | None = None
    hits = 0
    for j, lab in enumerate(labels):
        lab = int(lab)
        if best is not None and lab == best:
            hits += 1
        counts[lab] = counts.get(lab, 0) + 1
        first.setdefault(lab, j)
        if best is None or counts[lab] > counts[best] or (counts[lab] == counts[best] and first[lab] < first[best]):
            best = lab
    return hits


def _cp_upper(x: int, n: int, alpha: float) -> float:
    """One-sided Clopper–Pearson upper bound of a binomial probability from x of n."""
    return 1.0 if x >= n else float(beta.ppf(1 - alpha, x + 1, n - x))


def _cp_lower(x: int, n: int, alpha: float) -> float:
    """One-sided Clopper–Pearson lower bound of a binomial probability from x of n."""
    return 0.0 if x <= 0 else float(beta.ppf(alpha, x, n - x + 1))


def not_collapsed_cutoff(trials: int, alpha: float, modal_star: float) -> int | None:
    """Largest pooled max count that decides NOT COLLAPSED (``None``: none can, or Hoeffding's
    condition — the cut-off at least one trial below the mean — fails there)."""
    if trials < 1:
        return None
    c = int(binom.ppf(alpha, trials, modal_star))
    while c >= 0 and binom.cdf(c, trials, modal_star) >= alpha:
        c -= 1
    if c < 0 or c > trials * modal_star - 1:
        return None
    return c


def collapsed_cutoff(trials: int, alpha: float, modal_star: float) -> int | None:
    """Smallest pooled hit count that decides COLLAPSED (``None``: none can, or the cut-off is not
    at least one trial above the mean)."""
    if trials < 1:
        return None
    c = int(binom.isf(alpha, trials, modal_star)) + 1
    while c <= trials and binom.sf(c - 1, trials, modal_star) >= alpha:
        c += 1
    while c - 1 >= 0 and binom.sf(c - 2, trials, modal_star) < alpha:
        c -= 1
    if c > trials or c < trials * modal_star + 1:
        return None
    return c


@dataclass(frozen=True)
class ExactBounds:
    """The verdict's exact bounds on the mean collapse error ε̄ at one look."""

    n_per_state: int
    """Replies per state used (the first n of each state, by sample index)."""
    n_states: int
    modal_replies: int
    """Σ_s of the states' largest class counts (the NOT COLLAPSED side's statistic)."""
    hits: int
    """Predictable-mode hits over all states (the COLLAPSED side's statistic)."""
    alpha_side: float
    """One-sided error of each bound."""
    lower: float
    """Lower bound on ε̄: 1 − the Clopper–Pearson upper bound of the pooled max counts."""
    upper: float
    """Upper bound on ε̄: 1 − the Clopper–Pearson lower bound of the pooled hits (1 when n = 1)."""

    @property
    def modal_trials(self) -> int:
        return self.n_states * self.n_per_state

    @property
    def hit_trials(self) -> int:
        return self.n_states * max(self.n_per_state - 1, 0)

    def decision(self, epsilon_star: float) -> Decision | None:
        """COLLAPSED when ε̄'s upper bound lies below ε*, NOT COLLAPSED when its lower bound lies
        above, ``None`` (undecided) otherwise or where Hoeffding's condition does not hold."""
        m_star = 1.0 - epsilon_star
        if self.upper < epsilon_star:
            c = collapsed_cutoff(self.hit_trials, self.alpha_side, m_star)
            if c is not None and self.hits >= c:
                return COLLAPSED
        if self.lower > epsilon_star:
            c = not_collapsed_cutoff(self.modal_trials, self.alpha_side, m_star)
            if c is not None and self.modal_replies <= c:
                return NOT_COLLAPSED
        return None


def _check_alpha(alpha_side: float) -> None:
    if not 0 < alpha_side <= MAX_ALPHA_SIDE:
        raise ValueError(f"alpha_side must be in (0, {MAX_ALPHA_SIDE}], got {alpha_side}")


def exact_collapse_error_bounds(
    label_seqs: Sequence[Sequence[int]], alpha_side: float = 0.025, n: int | None = None
) -> ExactBounds:
    """Exact bounds on the mean collapse error of the states whose replies' classes are ``label_seqs``
    (one sequence per state, in sample-index order), valid for any mix of states.

    Every state contributes its first ``n`` replies (default: as many as the shortest state has), so
    that each state weighs the same in ε̄ = mean of the states' ε.

    Args:
        label_seqs: per state, the class label of each reply in sample-index order.
        alpha_side: one-sided error of each bound (at most 1/4).
        n: replies per state to use (at most the shortest state's).

    >>> b = exact_collapse_error_bounds([[0] * 20] * 4)
    >>> round(b.upper, 4), b.lower
    (0.0474, 0.0)
    """
    _check_alpha(alpha_side)
    if not label_seqs:
        raise ValueError("exact_collapse_error_bounds needs at least one state")
    shortest = min(len(s) for s in label_seqs)
    n = shortest if n is None else n
    if not 1 <= n <= shortest:
        raise ValueError(f"n must be between 1 and the shortest state's {shortest} replies, got {n}")
    seqs = [list(s)[:n] for s in label_seqs]
    s = len(seqs)
    modal = sum(modal_count(q) for q in seqs)
    hits = sum(predictable_mode_hits(q) for q in seqs)
    upper_m = _cp_upper(modal, s * n, alpha_side)
    lower_m = _cp_lower(hits, s * (n - 1), alpha_side) if n > 1 else 0.0
    return ExactBounds(n_per_state=n, n_states=s, modal_replies=modal, hits=hits, alpha_side=alpha_side,
                       lower=max(0.0, 1.0 - upper_m), upper=min(1.0, 1.0 - lower_m))  # fmt: skip


# ------------------------------------------------------------------------------------------- sequential


@dataclass(frozen=True)
class LookSchedule:
    """Where the sequential audit looks and how much error each look spends.

    Look k (k = 1, 2, …) happens at ``first + (k − 1)·step`` replies per state and spends
    ``alpha_side · share(k)`` on each side, with share(k) = ``front`` / ``front_looks`` for the first
    ``front_looks`` looks and (1 − ``front``)·2^−(k − front_looks) after them. The shares sum to 1
    over all looks, and they depend on k alone, not on the cap: a union bound over every look ever
    made of one audit, whatever caps and reruns made them, keeps each side's error at most
    ``alpha_side``.
    """

    first: int = 20
    step: int = 20
    alpha_side: float = 0.025
    front_looks: int = 4
    front: float = 0.96

    def __post_init__(self) -> None:
        _check_alpha(self.alpha_side)
        if self.first < 2 or self.step < 1 or self.front_looks < 1 or not 0 < self.front <= 1:
            raise ValueError("LookSchedule: first ≥ 2, step ≥ 1, front_looks ≥ 1 and 0 < front ≤ 1")

    def share(self, k: int) -> float:
        """Share of each side's error that look ``k`` (1-based) spends."""
        if k < 1:
            raise ValueError(f"looks are numbered from 1, got {k}")
        if k <= self.front_looks:
            return self.front / self.front_looks
        return (1.0 - self.front) * 0.5 ** (k - self.front_looks)

    def alpha_at(self, k: int) -> float:
        """One-sided error spent by look ``k``."""
        return self.alpha_side * self.share(k)

    def replies_at(self, k: int) -> int:
        """Replies per state at look ``k``."""
        return self.first + (k - 1) * self.step

    def looks(self, cap: int) -> list[int]:
        """Replies per state at each look a cap of ``cap`` replies per state allows."""
        out: list[int] = []
        k = 1
        while self.replies_at(k) <= cap:
            out.append(self.replies_at(k))
            k += 1
        return out


@dataclass(frozen=True)
class Look:
    """One look of the sequential audit."""

    index: int
    replies_per_state: int
    alpha_side: float
    bounds: ExactBounds
    decision: Decision | None


StopReason = Literal["decisive", "cap", "below first look"]


@dataclass(frozen=True)
class SequentialVerdict:
    """The sequential audit's looks, its decision (``None``: undecided) and why it stopped."""

    looks: list[Look]
    decision: Decision | None
    stop_reason: StopReason
    cap: int
    schedule: LookSchedule = field(default_factory=LookSchedule)

    @property
    def replies_per_state(self) -> int:
        """Replies per state the verdict used (0 when no look was reached)."""
        return self.looks[-1].replies_per_state if self.looks else 0

    def reason_text(self, epsilon_star: float) -> str:
        """The stopping reason in words."""
        if self.stop_reason == "decisive":
            return f"decisive at look {len(self.looks)} (N = {self.replies_per_state} per state)"
        if self.stop_reason == "below first look":
            return (f"the cap of {self.cap} replies per state is below the first look at {self.schedule.first}: "
                    "no look was made")  # fmt: skip
        k = len(self.looks)
        return (f"cap of {self.cap} replies per state reached after {k} look{'' if k == 1 else 's'} without a decision "
                f"at ε* = {epsilon_star:g}")  # fmt: skip


def next_look(schedule: LookSchedule, looks_done: int, cap: int) -> int | None:
    """Replies per state at the next look, or ``None`` when the cap allows no further look."""
    n = schedule.replies_at(looks_done + 1)
    return n if n <= cap else None


def sequential_verdict(
    label_seqs: Sequence[Sequence[int]],
    cap: int,
    epsilon_star: float,
    schedule: LookSchedule | None = None,
    drawn: int | None = None,
) -> SequentialVerdict:
    """Run the looks of the sequential test on the replies drawn so far (per state, in sample-index
    order) up to ``cap`` replies per state, stopping at the first decisive look.

    Args:
        label_seqs: per state, the class label of each reply in sample-index order.
        cap: the most replies per state the audit may draw.
        epsilon_star: the collapse threshold ε*.
        schedule: the looks and their error shares (default :class:`LookSchedule`).
        drawn: replies per state asked for so far (default: the shortest state's replies). A state
            that lost empty replies has fewer; a look then uses the first n replies that every state has.

    The caller draws replies up to the next look (:func:`next_look`) while this returns
    ``stop_reason == "cap"`` with fewer replies than that look needs; the looks already made are
    made again on the same replies and give the same result, so a rerun continues the test.
    """
    schedule = schedule or LookSchedule()
    shortest = min((len(s) for s in label_seqs), default=0)
    drawn = shortest if drawn is None else drawn
    looks: list[Look] = []
    k = 1
    while schedule.replies_at(k) <= min(cap, drawn) and shortest >= 1:
        n = min(schedule.replies_at(k), shortest)
        b = exact_collapse_error_bounds(label_seqs, schedule.alpha_at(k), n)
        d = b.decision(epsilon_star)
        looks.append(Look(index=k, replies_per_state=n, alpha_side=schedule.alpha_at(k), bounds=b, decision=d))
        if d is not None:
            return SequentialVerdict(looks, d, "decisive", cap, schedule)
        k += 1
    reason: StopReason = "below first look" if cap < schedule.first else "cap"
    return SequentialVerdict(looks, None, reason, cap, schedule)
