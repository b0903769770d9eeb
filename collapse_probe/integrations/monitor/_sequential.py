"""The monitor's collapse alarm as an always-valid sequential test over the whole run.

The null hypothesis is "not collapsed": at every shadowed state s the simulator's collapse error
ε_s = 1 − max_c p_s(c) is at least ε*, i.e. its modal mass is at most m = 1 − ε*. The alarm rejects it.

**Predictable-mode hits.** A state's N replies are put in a uniformly random order; reply k (k ≥ 2)
*hits* with weight h_k = 1/|T| when it falls in T, the set of classes tied for the most replies among
replies 1..k−1 (h_k = 0 otherwise). The replies are independent draws from p_s, so given replies
1..k−1, E[h_k] = Σ_{c∈T} p_s(c)/|T| ≤ max_c p_s(c) = 1 − ε_s — whatever the mix of classes.

**Betting.** With a bet λ ∈ [0, 1/m) fixed before a step, each hit multiplies the wealth by
1 + λ(h_k − m). Under the null each factor has conditional mean ≤ 1, so the product over a state's
replies has mean ≤ 1; averaging it over every order of the replies (exactly, :func:`state_factor`)
keeps the mean and removes the luck of where a minority reply falls. The step's factor F_t is the
product over its shadowed states (independent given the states). The bet comes from earlier steps
(:func:`plug_in_bet`), or within a state of many replies from its own earlier replies: λ = 0 until earlier steps show a collapse, so while the simulator is
diverse the wealth neither grows nor decays.

**Any start.** A collapse may begin at any step, after the wealth has decayed during a near-collapsed
stretch. The test therefore holds one wealth per start step j, M_{j,t} = Π_{s=j..t} F_s, and mixes
them with fixed prior weights w_j summing to 1 (w_0 = 1/2, w_j = 1/(2 j (j+1)) for j ≥ 1; a start not
yet reached counts as wealth 1): D_t = Σ_{j≤t} w_j M_{j,t} + Σ_{j>t} w_j. Under the null D is a
non-negative supermartingale with D_{−1} = 1, so by Ville's inequality P(D_t ≥ 1/α at any step) ≤ α.
The alarm fires when D_t ≥ 1/α: **over the whole run, however long, the chance of any false collapse
alarm is at most α = 1 − level.** The sum updates in O(1) per step: S_t = F_t (S_{t−1} + w_t).

The guarantee needs the null at every state (each ε_s ≥ ε*). When a step's shadowed states are fixed
before their replies are drawn (no state's conversation continues another's reply) and every state
bets the step's λ (fewer than 17 replies a state), it also holds for the weaker null "each step's
mean ε (weighted by N_s − 1) is at least ε*": by the AM–GM inequality
Π_s (1 + λ(q_s − m))^{N_s−1} ≤ (1 + λ(q̄ − m))^{Σ(N_s−1)} ≤ 1 when q̄ ≤ m. Classes must be a fixed
map of a reply (exact text, labels, reward classes); embedding clusters formed from the state's own
replies are that only approximately.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import NotRequired, TypedDict

import numpy as np

BET_WINDOWS = (16, 32, 64, 128)
"""The bet of a step looks at the most recent earlier steps holding at least these many replies."""

BET_GATE_Z = 2.0
"""A window proposes a bet only when its modal share is this many standard errors above m."""

MISS_FLOOR = 0.25
"""The largest bet loses at most this factor on a miss (1 − λ m ≥ MISS_FLOOR): one miss never ends the test."""


def start_weight(j: int) -> float:
    """w_j, the prior weight of a collapse starting at look ``j`` (from 0): 1/2, then 1/(2 j (j+1)).

    Example:
        >>> start_weight(0), start_weight(1), round(sum(start_weight(j) for j in range(10**5)), 4)
        (0.5, 0.25, 1.0)
    """
    return 0.5 if j == 0 else 0.5 / (j * (j + 1))


def weight_after(j: int) -> float:
    """Σ_{i>j} w_i, the weight of the starts not yet reached after look ``j`` (1 before any look).

    Example:
        >>> weight_after(-1), weight_after(0), weight_after(3)
        (1.0, 0.5, 0.125)
    """
    return 1.0 if j < 0 else 0.5 / (j + 1)


def max_bet(m: float) -> float:
    """The largest bet λ at null modal mass ``m``: a miss keeps :data:`MISS_FLOOR` of the wealth."""
    return (1.0 - MISS_FLOOR) / m if m > 0 else 0.0


def state_factor(counts: Sequence[int], bet: float, m: float) -> float:
    """The state's wealth factor: Π_k (1 + λ_k (h_k − m)) over its replies k ≥ 2 (predictable-mode hits),
    averaged exactly over every order of the replies. λ_k is the step's ``bet``, or, once the state's
    own earlier replies 1..k−1 number 16 or more and show a collapse, the larger bet they propose (the
    rule of :func:`plug_in_bet` on those replies alone): a single state of many identical replies
    alarms by itself. λ_k depends only on replies before k, so the factor's mean stays at most 1.

    Args:
        counts: the state's class counts (any order; zeros ignored).
        bet: λ in [0, 1/m).
        m: the null's modal mass bound 1 − ε*.

    Example: 3 replies, 2 in class A and 1 in B; orders AAB, ABA, BAA are equally likely. AAB: A hits
    (h=1), B misses; ABA: B misses, A is one of two tied classes (h=1/2); BAA: A misses, then A is
    one of two tied classes again.

        >>> lam, m = 1.0, 0.5
        >>> hit, miss, half = 1 + lam * (1 - m), 1 - lam * m, 1 + lam * (0.5 - m)
        >>> round(state_factor([2, 1], lam, m), 12) == round((hit * miss + 2 * miss * half) / 3, 12)
        True
    """
    total = tuple(sorted(int(c) for c in counts if int(c) > 0))
    if sum(total) < 2 or (bet == 0.0 and sum(total) <= BET_WINDOWS[0]):
        return 1.0
    if math.prod(t + 1 for t in total) <= EXACT_ORDERS_LIMIT:
        return _factor(total, bet, m)
    return _sampled_factor(total, bet, m)


EXACT_ORDERS_LIMIT = 50_000
"""Beyond this many partial counts a state's factor is averaged over :data:`SAMPLED_ORDERS` orders."""

SAMPLED_ORDERS = 256
"""Most orders averaged when the exact average is too large (fewer for very many replies): drawn from a generator seeded by the counts.
Given the counts every arrangement of the replies is equally likely, so any orders chosen from the
counts alone keep the factor's mean at most 1."""


def _sampled_factor(total: tuple[int, ...], bet: float, m: float) -> float:
    rng = np.random.default_rng([len(total), *total])
    labels = np.repeat(np.arange(len(total)), total)
    acc, orders = 0.0, max(8, min(SAMPLED_ORDERS, 50_000 // len(labels)))
    for _ in range(orders):
        seen = np.zeros(len(total), dtype=np.int64)
        w = 1.0
        for k, x in enumerate(rng.permutation(labels)):
            top = seen.max()
            if top > 0:
                tied = seen == top
                lam = max(bet, _bet_of(_window_bet(float(top), float(k), m), m))
                w *= 1.0 + lam * ((1.0 / tied.sum() if tied[x] else 0.0) - m)
            seen[x] += 1
        acc += w
    return acc / orders


def _factor(total: tuple[int, ...], bet: float, m: float) -> float:
    @cache
    def f(key: tuple[tuple[int, int], ...]) -> float:
        # key: sorted (total_c, seen_c) per class; classes with equal pairs are interchangeable
        remaining = sum(t - s for t, s in key)
        if remaining == 0:
            return 1.0
        top = max(s for _, s in key)
        tied = sum(1 for _, s in key if s == top) if top > 0 else 0
        out = 0.0
        for i, (t, s) in enumerate(key):
            if s == t or (i > 0 and key[i - 1] == (t, s)):
                continue
            copies = sum(1 for x in key if x == (t, s))
            p = copies * (t - s) / remaining
            lam = max(bet, _bet_of(_window_bet(top, sum(x for _, x in key), m), m))
            g = 1.0 if tied == 0 else 1.0 + lam * ((1.0 / tied if s == top else 0.0) - m)
            nxt = tuple(sorted((*key[:i], (t, s + 1), *key[i + 1 :])))
            out += p * g * f(nxt)
        return out

    return f(tuple((t, 0) for t in total))


def step_factor(states: Sequence[Sequence[int]], bet: float, m: float) -> float:
    """F_t: the product of :func:`state_factor` over a step's shadowed states."""
    out = 1.0
    for counts in states:
        out *= state_factor(counts, bet, m)
    return out


def _window_bet(hits: float, replies: float, m: float) -> float:
    """The modal share q a window of ``replies`` replies (``hits`` in each state's largest class)
    proposes, or 0 when it does not show a collapse (q̂ − 2 se ≤ m)."""
    if replies < BET_WINDOWS[0]:
        return 0.0
    q = (hits + 0.5) / (replies + 1.0)
    se = math.sqrt(q * (1.0 - q) / replies)
    return q - se / 2 if q - BET_GATE_Z * se > m else 0.0


def _bet_of(q: float, m: float) -> float:
    if q <= m or not 0.0 < m < 1.0:
        return 0.0
    return float(min((q - m) / (m * (1.0 - m)), max_bet(m)))


def plug_in_bet(history: Sequence[Sequence[Sequence[int]]], m: float) -> float:
    """λ for the next step, from earlier steps only (so the test stays valid whatever it returns).

    For each window of the most recent steps holding 16, 32, 64 and 128 replies (:data:`BET_WINDOWS`),
    the pooled modal share q̂ = (Σ max count + ½)/(replies + 1) with its standard error se; a window
    counts only when q̂ − 2 se > m (:data:`BET_GATE_Z`: evidence of collapse, so a diverse or borderline
    simulator is rarely bet on and the wealth does not bleed), and then proposes q = q̂ − se/2. The
    bet is λ = (q − m)/(m (1 − m)) for the largest q proposed — the bet that grows fastest if replies
    hit at rate q — clipped to [0, :func:`max_bet`]; 0 when no window counts.

    Example:
        >>> plug_in_bet([], 0.8), plug_in_bet([[[5, 3], [4, 4]]], 0.8)  # nothing seen; a diverse step
        (0.0, 0.0)
        >>> round(plug_in_bet([[[8], [8]]], 0.8), 3)  # two states of 8 identical replies
        0.934
    """
    if not 0.0 < m < 1.0:
        return 0.0  # ε* = 1: no simulator has ε ≥ 1, nothing to test
    hits = replies = 0.0
    best, w = 0.0, 0
    for states in reversed(history):
        for counts in states:
            cs = [int(c) for c in counts if int(c) > 0]
            if cs:
                hits += max(cs)
                replies += sum(cs)
        while w < len(BET_WINDOWS) and replies >= BET_WINDOWS[w]:
            best = max(best, _window_bet(hits, replies, m))
            w += 1
        if w == len(BET_WINDOWS):
            break
    return _bet_of(best, m)


class CollapseTestState(TypedDict):
    """A :class:`CollapseTest` as a row records it (``{view}_alarm_test``)."""

    e_value: float | None
    """D_t (``None``: not finite)."""
    threshold: float
    """1/α."""
    looks: int
    started: float
    bet: NotRequired[float]
    """The step's bet (in the record of :meth:`CollapseTest.update`)."""
    step_factor: NotRequired[float]
    """The step's factor on the wealth (idem)."""


@dataclass
class CollapseTest:
    """The run-wide sequential test of one view: its state after ``looks`` looks (steps with shadowed
    states), restorable from a row's record (:meth:`to_dict`, :meth:`from_dict`)."""

    epsilon_star: float
    level: float
    looks: int = 0
    started: float = 0.0
    """S_t = Σ_{j≤t} w_j M_{j,t}: the weighted wealth of the starts reached so far."""

    @property
    def m(self) -> float:
        return 1.0 - self.epsilon_star

    @property
    def threshold(self) -> float:
        """1/α: the alarm's threshold on the e-value."""
        return round(1.0 / (1.0 - self.level), 9)  # 20, not 19.999999999999982

    @property
    def e_value(self) -> float:
        """D_t: the started wealth plus the weight of the starts not yet reached."""
        return self.started + weight_after(self.looks - 1)

    def update(self, states: Sequence[Sequence[int]], history: Sequence[Sequence[Sequence[int]]]) -> CollapseTestState:
        """Take one step's shadowed states (class counts); ``history``: the earlier steps' states, oldest first.
        Returns the step's record (``e_value``, ``threshold``, ``bet``, ``step_factor``, ``looks``, ``started``)."""
        bet = plug_in_bet(history, self.m)
        factor = step_factor(states, bet, self.m)
        self.started = factor * (self.started + start_weight(self.looks))
        self.looks += 1
        return {**self.to_dict(), "bet": bet, "step_factor": factor}

    @property
    def rejected(self) -> bool:
        return self.e_value >= self.threshold

    def to_dict(self) -> CollapseTestState:
        e = self.e_value
        return {"e_value": e if math.isfinite(e) else None, "threshold": self.threshold, "looks": self.looks,
                "started": self.started}  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, object] | None, epsilon_star: float, level: float) -> CollapseTest:
        """The test as a row left it (a fresh one when ``d`` holds no usable state)."""
        t = cls(epsilon_star, level)
        if isinstance(d, dict):
            looks, started = d.get("looks"), d.get("started")
            if isinstance(looks, int) and looks >= 0 and isinstance(started, (int, float)) and np.isfinite(started):
                t.looks, t.started = looks, max(float(started), 0.0)
        return t
