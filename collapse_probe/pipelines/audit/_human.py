"""The audited simulator next to the human Persuasion-for-Good persuadees.

Two views, both with bootstrap intervals:

- **Distribution level**: simulated donations at elicitation states against the 1,017 persuadees'
  actual donations (Wasserstein-1, two-sample KS with its p-value, L1 over right-closed bins, the
  share of $0 and of stated amounts), and reply length / distinct-n / semantic diversity of the
  simulator against the humans *at the same states* (human-grounded prefixes).
- **State level** (human-grounded states, ``--human``): the state is a real dialogue up to a human
  persuader turn and the reference is the persuadee's actual next turn. The human reply is
  partitioned together with the simulator's N replies, so it lands in one of the simulator's
  semantic classes or in none: the simulator's probability of the human's class, its rank among the
  simulator's classes, and the share of states where the human said something the simulator never did.

The official CSV loader (:func:`collapse_probe.benchmarks.p4g.load_official_p4g`) is the only way
human data comes in; the project ships none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NotRequired, Required, TypedDict

import numpy as np

from collapse_probe.pipelines.audit._config import DONATION_BINS
from collapse_probe.pipelines.audit._types import StateRecord

if TYPE_CHECKING:
    from collapse_probe.benchmarks.p4g._text import HumanDialogue

BCA = "BCa bootstrap over states (scipy.stats.bootstrap)"
"""The interval of a mean over states (the mean share of the human's class)."""
WILSON = "Wilson score interval over states"
"""The interval of a share of states (human outside the simulator's classes, human is the mode)."""
PERCENTILE = "percentile bootstrap (scipy.stats.bootstrap)"
"""The interval of a distance between two samples and of a paired difference of set statistics."""
Z95 = 1.959963984540054
"""The normal quantile of a two-sided 95 % interval."""

DONATION_BIN_LABELS = ("$0", "($0, $0.5]", "($0.5, $1]", "($1, $1.5]", "($1.5, $2]")
"""Right-closed donation bins, labelled as they are: $1 exactly falls in ($0.5, $1]."""


def donation_bins(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Bin index of each donation (clipped to [0, 2]) in :data:`DONATION_BIN_LABELS`.

    Bins are right-closed so that their labels are true: a $0.50 donation is in ($0, $0.5], $1 in
    ($0.5, $1] (a half-open ``np.histogram`` would put the 12.9 % of persuadees who gave exactly $1
    under ($1, $1.5]).

    >>> donation_bins([0, 0.3, 0.5, 1.0, 1.2, 2.0, 5.0]).tolist()
    [0, 1, 1, 2, 3, 4, 4]
    """
    x = np.clip(np.asarray(values, dtype=np.float64), 0.0, 2.0)
    # upper edges 0, .5, 1, 1.5: searchsorted(side="left") gives the first edge >= x, i.e. (lo, hi]
    return np.searchsorted(np.array(DONATION_BINS[2:-1]), x, side="left") * (x > 0) + (x > 0)


def _binned(x: np.ndarray) -> np.ndarray:
    return np.bincount(donation_bins(x), minlength=len(DONATION_BIN_LABELS)) / x.size


def _donation_stats(s: np.ndarray, h: np.ndarray) -> dict[str, float]:
    from scipy.stats import ks_2samp, wasserstein_distance

    ks = ks_2samp(s, h)
    return {
        "wasserstein": float(wasserstein_distance(s, h)),
        "ks_statistic": float(ks.statistic),
        "ks_pvalue": float(ks.pvalue),
        "l1_binned": float(np.abs(_binned(s) - _binned(h)).sum()),
        "share_zero_gap": float(np.mean(s == 0) - np.mean(h == 0)),
    }


def _percentile_ci(
    samples: Sequence[np.ndarray], statistic: Callable[..., float], n_boot: int, seed: int, paired: bool = False
) -> list[float] | None:
    """95 % percentile bootstrap interval of ``statistic(*samples)`` (:func:`scipy.stats.bootstrap`).

    The percentile method, not BCa: the statistics are distances between two samples (KS is a
    supremum, the binned L1 and W1 are kinked at 0) and set statistics of resampled replies
    (distinct-n, Vendi), where the jackknife that BCa's acceleration comes from is not consistent.
    A sample of one value is held fixed (every resample of it is itself; scipy resamples two or
    more). ``None`` when the interval is not defined (a resample where the statistic is not).
    """
    from scipy.stats import bootstrap

    free = [i for i, x in enumerate(samples) if len(x) >= 2]
    if not free:
        point = statistic(*samples)
        return [float(point), float(point)]

    def resampled(*xs: np.ndarray) -> float:
        full = list(samples)
        for i, x in zip(free, xs, strict=True):
            full[i] = x
        return statistic(*full)

    ci = bootstrap(
        [samples[i] for i in free], resampled, n_resamples=n_boot, method="percentile", paired=paired,
        vectorized=False, random_state=np.random.default_rng(seed),
    ).confidence_interval  # fmt: skip
    lo, hi = float(ci.low), float(ci.high)
    return [lo, hi] if np.isfinite(lo) and np.isfinite(hi) else None


Distance = Literal["wasserstein", "ks_statistic", "l1_binned"]
"""A distance between the simulated and the human donations."""
_DISTANCES: tuple[Distance, ...] = ("wasserstein", "ks_statistic", "l1_binned")


class DonationComparison(TypedDict, total=False):
    """Simulated vs human donations (``human_reference.donations``); with no donation on a side, only
    ``note``, ``n_simulated`` and ``n_human``."""

    note: str
    wasserstein: float
    ks_statistic: float
    ks_pvalue: float
    l1_binned: float
    """Σ|p − q| over :data:`DONATION_BIN_LABELS`."""
    share_zero_gap: float
    """Simulated minus human share of $0."""
    ci95: dict[str, list[float] | None]
    """Distance -> its percentile bootstrap interval (every distance above but the p-value)."""
    bins: list[str]
    bins_closed: str
    simulated_binned: list[float]
    human_binned: list[float]
    simulated_mean: float
    human_mean: float
    simulated_share_zero: float
    human_share_zero: float
    n_simulated: int
    n_human: int
    n_boot: int
    simulated_stated_fraction: float | None
    """Share of the simulator's replies at donation states that state an amount (``None``: no reply)."""


def donation_comparison(
    simulated: Sequence[float], human: Sequence[float], n_boot: int = 1000, seed: int = 0
) -> DonationComparison:
    """Simulated vs human donation distributions.

    Wasserstein-1, the two-sample KS statistic with its p-value, the L1 distance Σ|p − q| over the
    right-closed bins :data:`DONATION_BIN_LABELS` (in [0, 2]) and the shares of $0; each distance
    with a percentile bootstrap interval (:func:`scipy.stats.bootstrap`) that resamples the simulated
    donations and the people independently. Values are clipped to [0, 2] (the task paid $2).
    """
    s = np.clip(np.asarray(simulated, dtype=np.float64), 0, 2)
    h = np.clip(np.asarray(human, dtype=np.float64), 0, 2)
    if s.size == 0 or h.size == 0:
        return {
            "note": "no simulated or no human donations to compare",
            "n_simulated": int(s.size),
            "n_human": int(h.size),
        }
    point = _donation_stats(s, h)
    out: DonationComparison = {
        "wasserstein": point["wasserstein"],
        "ks_statistic": point["ks_statistic"],
        "ks_pvalue": point["ks_pvalue"],
        "l1_binned": point["l1_binned"],
        "share_zero_gap": point["share_zero_gap"],
    }
    # one bootstrap per distance, each with the same seed: all four see the same resamples
    out["ci95"] = {
        k: _percentile_ci((s, h), lambda a, b, k=k: _donation_stats(a, b)[k], n_boot, seed)
        for k in point
        if k != "ks_pvalue"
    }
    out.update(
        {
            "bins": list(DONATION_BIN_LABELS),
            "bins_closed": "right",
            "simulated_binned": _binned(s).tolist(),
            "human_binned": _binned(h).tolist(),
            "simulated_mean": float(s.mean()),
            "human_mean": float(h.mean()),
            "simulated_share_zero": float(np.mean(s == 0)),
            "human_share_zero": float(np.mean(h == 0)),
            "n_simulated": int(s.size),
            "n_human": int(h.size),
            "n_boot": n_boot,
        }
    )
    return out


# ----------------------------------------------------------------------------------------------- grounding


class GroundingRow(TypedDict):
    """Where one human reply falls among the simulator's classes at its human-grounded state."""

    state_id: str
    human_reply: str
    human_class_share: float
    """The simulator's empirical probability of the human reply's class."""
    human_class_rank: int | None
    """1 = the simulator's mode (ties share the better rank); ``None`` when the human is outside."""
    outside: bool
    """The simulator never said anything of the human reply's class."""
    n: int
    """The simulator's replies."""
    n_classes: int
    """The simulator's classes."""


def _with_human_reply(records: Sequence[StateRecord]) -> list[tuple[StateRecord, str]]:
    """``(record, the human reply)`` of every measured state with replies and a human reply."""
    return [(r, h) for r in records if r.get("status") == "ok" and (h := r.get("human_reply")) and r.get("responses")]


async def human_grounding(records: Sequence[StateRecord], partitioner: Any) -> list[GroundingRow]:
    """Where each human reply falls among the simulator's classes at its human-grounded state.

    The human reply is partitioned together with the state's N simulator replies by the audit's own
    partitioner (one batched call), so "the same meaning" is judged exactly as for the headline.

    Returns:
        One row per human-grounded state measured ``ok``: ``state_id``, ``human_reply``,
        ``human_class_share`` (the simulator's empirical probability of the human's class),
        ``human_class_rank`` (1 = the simulator's mode; ties share the better rank; ``None`` when
        outside), ``outside`` (the simulator never said anything of the human's class) and ``n``.
    """
    rows = _with_human_reply(records)
    if not rows:
        return []
    labels = await partitioner.apartition_many([list(r["responses"]) + [h] for r, h in rows])
    out: list[GroundingRow] = []
    for (r, h), lab in zip(rows, labels, strict=True):
        sim, human = np.asarray(lab[:-1]), lab[-1]
        counts = {int(c): int((sim == c).sum()) for c in np.unique(sim)}
        k = counts.get(int(human), 0)
        out.append(
            {
                "state_id": r["state_id"],
                "human_reply": h,
                "human_class_share": k / len(sim),
                "human_class_rank": (1 + sum(1 for v in counts.values() if v > k)) if k else None,
                "outside": k == 0,
                "n": len(sim),
                "n_classes": len(counts),
            }
        )
    return out


class ShareEstimate(TypedDict):
    """A mean or a share over states with its 95 % interval (``None`` over no state)."""

    estimate: float | None
    ci95: list[float] | None
    n: int
    """States."""
    method: NotRequired[str]
    """How the interval was made (BCa bootstrap over states, or Wilson)."""


class GroundingSummary(TypedDict):
    """How the simulator's replies sit around people's over the human-grounded states."""

    n_states: int
    human_class_share: ShareEstimate
    """Mean share of the simulator's replies in the human reply's class."""
    outside_share: ShareEstimate
    """Share of states where the human reply is in none of the simulator's classes."""
    human_is_mode_share: ShareEstimate
    """Share of states where the human reply is in the simulator's most frequent class."""
    mean_rank_when_inside: float | None


class StateEpsilon(TypedDict):
    """One state's collapse error with its interval."""

    collapse_error: float
    ci95: list[float | None]
    plugin: float
    n: int


class MeanEpsilon(TypedDict):
    """The mean collapse error over states with its interval (``None`` over no state)."""

    estimate: float | None
    ci95: list[float | None] | None
    n_states: int
    plugin: NotRequired[float]
    method: NotRequired[str]


def _mean_ci(values: Sequence[float] | np.ndarray, n_boot: int, seed: int) -> ShareEstimate:
    """Mean over states with a 95 % BCa bootstrap interval (:func:`scipy.stats.bootstrap`).

    BCa rather than the percentile bootstrap: the shares are bounded and skewed (most states give the
    human's class little mass), where BCa's bias and skew corrections cover better at the state
    counts of an audit (``benchmarks/human_reference_coverage.py``, ``docs/estimator-coverage.md``).
    When every state has the same value, each resample does too: the interval is that value (BCa's
    acceleration is 0/0 there, and scipy returns no interval).
    """
    from scipy.stats import bootstrap

    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return {"estimate": None, "ci95": None, "n": 0}
    est = float(v.mean())
    if np.ptp(v) == 0:
        return {"estimate": est, "ci95": [est, est], "n": int(v.size), "method": BCA}
    ci = bootstrap(
        (v,), np.mean, n_resamples=n_boot, method="BCa", random_state=np.random.default_rng(seed), vectorized=True
    ).confidence_interval
    return {"estimate": est, "ci95": [float(ci.low), float(ci.high)], "n": int(v.size), "method": BCA}


def _share_ci(flags: Sequence[bool]) -> ShareEstimate:
    """The share of states where ``flags`` holds, with its 95 % Wilson score interval.

    A share of yes/no states is a binomial proportion: the Wilson interval stays honest where a
    bootstrap cannot, at a share of 0 or 1 (every resample is then 0 or 1 too, and the interval is a
    point however few the states).
    """
    from collapse_probe.metrics._intervals import wilson

    n = len(flags)
    if n == 0:
        return {"estimate": None, "ci95": None, "n": 0}
    k = sum(bool(f) for f in flags)
    lo, hi = wilson(np.float64(k / n), n, Z95)
    return {"estimate": k / n, "ci95": [float(lo), float(hi)], "n": n, "method": WILSON}


def grounding_summary(rows: Sequence[GroundingRow], n_boot: int = 1000, seed: int = 0) -> GroundingSummary:
    """Means over human-grounded states with intervals over states: the mean share of the human's
    class with a BCa bootstrap interval, the shares of states where the human is outside the
    simulator's classes or its mode with Wilson intervals."""
    ranks = [r["human_class_rank"] for r in rows if r["human_class_rank"] is not None]
    return {
        "n_states": len(rows),
        "human_class_share": _mean_ci([r["human_class_share"] for r in rows], n_boot, seed),
        "outside_share": _share_ci([r["outside"] for r in rows]),
        "human_is_mode_share": _share_ci([r["human_class_rank"] == 1 for r in rows]),
        "mean_rank_when_inside": float(np.mean(ranks)) if ranks else None,
    }


def _words(text: str) -> int:
    return len(text.split())


class LengthComparison(TypedDict):
    """Mean reply length in words, simulator vs human, at the same states."""

    simulator: float
    human: float
    difference: float
    difference_ci95: list[float] | None
    method: str


class SetComparison(TypedDict):
    """A statistic of a set of replies (distinct-n, Vendi), simulator vs human, at the same states."""

    simulator: float | None
    human: float | None
    difference_ci95: list[float] | None
    """Paired percentile bootstrap interval of simulator − human."""
    method: str


class MatchedStates(TypedDict):
    """``human_reference.matched_states``: simulator vs human replies at the same human-grounded states."""

    n_states: int
    length_words: LengthComparison
    distinct_1: SetComparison
    distinct_2: SetComparison
    vendi: NotRequired[SetComparison]
    """With an embedder and at least two states."""


def matched_state_comparison(
    records: Sequence[StateRecord], embedder: Any = None, n_boot: int = 1000, seed: int = 0
) -> MatchedStates | None:
    """Simulator vs human replies at the same human-grounded states: length, distinct-n and
    semantic diversity (Vendi over one simulator draw per state vs the human replies), each with a
    bootstrap interval over states (paired: the same resampled states on both sides)."""
    from collapse_probe.metrics.vendi import distinct_n, vendi_score

    pairs = _with_human_reply(records)
    if not pairs:
        return None
    hs = [r for r, _ in pairs]
    human = [h for _, h in pairs]
    sim = [r["responses"][0] for r in hs]  # one draw per state: like with like
    sim_len = np.array([np.mean([_words(t) for t in r["responses"]]) for r in hs])
    hum_len = np.array([_words(t) for t in human], dtype=np.float64)
    length = _mean_ci(sim_len - hum_len, n_boot, seed)
    # paired: the same resampled states on both sides, so the bootstrap resamples state indices
    states = (np.arange(len(hs)),)
    small = min(n_boot, 200)  # distinct-n and Vendi are set statistics: fewer replicates suffice

    def distinct(n: int) -> SetComparison:
        def distinct_gap(ix: np.ndarray) -> float:
            a, b = distinct_n([sim[i] for i in ix], n), distinct_n([human[i] for i in ix], n)
            return np.nan if a is None or b is None else a - b

        return {
            "simulator": distinct_n(sim, n),
            "human": distinct_n(human, n),
            "difference_ci95": _percentile_ci(states, distinct_gap, small, seed),
            "method": f"{PERCENTILE}, paired",
        }

    out: MatchedStates = {
        "n_states": len(hs),
        "length_words": {
            "simulator": float(sim_len.mean()),
            "human": float(hum_len.mean()),
            "difference": float(sim_len.mean() - hum_len.mean()),
            "difference_ci95": length["ci95"],
            "method": f"{BCA}, paired",
        },
        "distinct_1": distinct(1),
        "distinct_2": distinct(2),
    }
    if embedder is not None and len(hs) >= 2:
        emb = np.asarray(embedder.embed(sim + human))
        es, eh = emb[: len(hs)], emb[len(hs) :]
        out["vendi"] = {
            "simulator": vendi_score(es),
            "human": vendi_score(eh),
            "difference_ci95": _percentile_ci(
                states, lambda ix: vendi_score(es[ix]) - vendi_score(eh[ix]), min(small, 100), seed
            ),
            "method": f"{PERCENTILE}, paired",
        }
    return out


def _simulated_donations(records: Sequence[StateRecord]) -> tuple[list[float], int, int]:
    from collapse_probe.benchmarks.p4g import parse_donation

    donations, stated, total = [], 0, 0
    for r in records:
        if r.get("status") != "ok":
            continue
        if r["source"] in ("elicitation",) or r.get("closed_set"):
            for t in r["responses"]:
                total += 1
                d = parse_donation(t)
                if d is not None:
                    stated += 1
                    donations.append(min(d, 2.0))
    return donations, stated, total


class SimulatorAndHuman(TypedDict):
    """One statistic for the simulator and for the people."""

    simulator: float | None
    human: float | None


class Diversity(TypedDict):
    """``human_reference.diversity``: the flat view of :class:`MatchedStates` that earlier
    ``results.json`` files hold."""

    n_prefixes: int
    distinct_1: SimulatorAndHuman
    distinct_2: SimulatorAndHuman
    vendi: NotRequired[SimulatorAndHuman]


class HumanReference(TypedDict, total=False):
    """``results.json``'s ``human_reference`` (and ``compare_vs.human_reference``): one sampling mode
    against people."""

    donations: Required[DonationComparison]
    matched_states: MatchedStates
    diversity: Diversity
    grounding: GroundingSummary
    grounding_states: list[GroundingRow]
    people_epsilon: PeopleEpsilon | None
    """People's own ε at matched states (with annotated dialogues)."""


def _both(c: SetComparison) -> SimulatorAndHuman:
    return {"simulator": c["simulator"], "human": c["human"]}


def human_reference(
    records: Sequence[StateRecord],
    dialogues: Sequence[HumanDialogue],
    embedder: Any = None,
    grounding: Sequence[GroundingRow] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> HumanReference:
    """Compare the audited simulator with the human P4G data (see the module docstring).

    Args:
        records: the audit's state records of one sampling mode.
        dialogues: the official dialogues (:func:`~collapse_probe.benchmarks.p4g.load_official_p4g`).
        embedder: an embedding partitioner for the semantic-diversity comparison, or ``None``.
        grounding: rows of :func:`human_grounding` for these records, or ``None``.
    """
    sim_donations, stated, total = _simulated_donations(records)
    human_donations = [d.donation for d in dialogues if d.donation is not None]
    out: HumanReference = {"donations": donation_comparison(sim_donations, human_donations, n_boot, seed)}
    out["donations"]["simulated_stated_fraction"] = stated / total if total else None
    matched = matched_state_comparison(records, embedder, n_boot, seed)
    if matched is not None:
        out["matched_states"] = matched
        # the pre-existing flat view, kept for readers of earlier results.json files
        div: Diversity = {"n_prefixes": matched["n_states"], "distinct_1": _both(matched["distinct_1"]),
                          "distinct_2": _both(matched["distinct_2"])}  # fmt: skip
        if "vendi" in matched:
            div["vendi"] = _both(matched["vendi"])
        out["diversity"] = div
    if grounding:
        out["grounding"] = grounding_summary(grounding, n_boot, seed)
        out["grounding_states"] = list(grounding)
    return out


class Closer(TypedDict):
    """One measure of nearness to people in both modes, and which mode is closer."""

    direct: float
    direct_ci95: list[float] | None
    verbalized: float
    verbalized_ci95: list[float] | None
    closer: str
    """``direct``, ``verbalized`` or ``tie``."""


_SHARES: tuple[tuple[Literal["human_class_share", "outside_share"], bool], ...] = (
    ("human_class_share", True),
    ("outside_share", False),
)
"""The grounding shares compared across modes, and whether higher is closer to people."""


def towards_people(direct: HumanReference, verbalized: HumanReference) -> dict[str, Closer]:
    """Does Verbalized Sampling move the simulator towards the people? Each measure for both modes
    and which is closer; distances with their bootstrap intervals (the paper's claim is that VS is
    closer: lower W1 / KS / L1, a higher share of the human's class, fewer human replies outside)."""
    rows: dict[str, Closer] = {}
    dd, dv = direct["donations"], verbalized["donations"]
    for k in _DISTANCES:
        if k in dd and k in dv:
            rows[k] = {
                "direct": dd[k],
                "direct_ci95": dd.get("ci95", {}).get(k),
                "verbalized": dv[k],
                "verbalized_ci95": dv.get("ci95", {}).get(k),
                "closer": "verbalized" if dv[k] < dd[k] else "direct" if dd[k] < dv[k] else "tie",
            }
    gd, gv = direct.get("grounding"), verbalized.get("grounding")
    for share, higher in _SHARES:
        if gd is None or gv is None:
            break
        a, b = gd[share]["estimate"], gv[share]["estimate"]
        if a is None or b is None:
            continue
        better = (b > a) if higher else (b < a)
        rows[share] = {
            "direct": a,
            "direct_ci95": gd[share]["ci95"],
            "verbalized": b,
            "verbalized_ci95": gv[share]["ci95"],
            "closer": "verbalized" if better else "direct" if a != b else "tie",
        }
    return rows


# ----------------------------------------------------------------------------------------------- people's own ε

MATCHED_GROUPING = "the persuader's act (er_label_1) of the last sentence before the reply"


def _eps(counts: Sequence[int] | np.ndarray, seed: int) -> StateEpsilon:
    from collapse_probe.metrics.estimators import collapse_error_interval

    iv = collapse_error_interval([int(c) for c in counts if c > 0], seed=seed)
    return {"collapse_error": iv.estimate, "ci95": iv.ci95, "plugin": iv.plugin, "n": int(np.sum(counts))}


def _mean_eps(counts_list: Sequence[Sequence[int]], seed: int) -> MeanEpsilon:
    from collapse_probe.metrics.estimators import mean_collapse_error_interval

    cs = [[int(c) for c in cl if c > 0] for cl in counts_list]
    if not cs:
        return {"estimate": None, "ci95": None, "n_states": 0}
    iv = mean_collapse_error_interval(cs, seed=seed)
    return {"estimate": iv.estimate, "ci95": iv.ci95, "plugin": iv.plugin, "n_states": iv.n_states, "method": iv.method}


class StanceEpsilon(StateEpsilon):
    """ε of one group's replies read as stances, with the count of each stance."""

    counts: dict[str, int]


class ActEpsilon(StateEpsilon):
    """ε of the people's next turns of one group read as their annotated acts."""

    modal_act: str
    n_acts: int


class PeopleGroup(TypedDict):
    """People and simulator at the audited states of one persuader act (:data:`MATCHED_GROUPING`)."""

    persuader_act: str
    people: StanceEpsilon
    people_acts: ActEpsilon
    simulator_pooled: StanceEpsilon
    """The simulator's replies at the group's states, pooled."""
    simulator_within_state: MeanEpsilon
    """The mean over the group's states of ε of each state's own replies."""
    n_states: int


class PeopleEpsilon(TypedDict):
    """``human_reference.people_epsilon``: people's own ε at the audited states beside the simulator's."""

    grouping: str
    class_space: str
    stance_reader: str | None
    """What read the simulator's replies as stances, in words."""
    n_groups: int
    n_states: int
    n_people_replies: int
    people: MeanEpsilon
    people_acts: MeanEpsilon
    simulator_pooled: MeanEpsilon
    simulator_within_state: MeanEpsilon
    groups: list[PeopleGroup]


def people_epsilon(
    records: Sequence[StateRecord], annotated: Sequence[HumanDialogue], reader: Any = None, seed: int = 0
) -> PeopleEpsilon | None:
    """People's own ε at the audited human-grounded states, beside the simulator's, in one class space.

    A *matched state* is a prefix of an annotated P4G dialogue up to a persuader turn; states are
    grouped by :data:`MATCHED_GROUPING`. For each group that holds an audited state:

    - **people**: the persuadees' next turns at every prefix of the group, over all annotated
      dialogues (one reply per person), as stances (:func:`~collapse_probe.benchmarks.p4g.stance.turn_stance`
      of the gold sentence acts) and as acts (:func:`~collapse_probe.benchmarks.p4g.stance.turn_act`):
      ε = 1 − modal share, "how varied are people at this point";
    - **simulator, pooled**: the simulator's N replies at the group's audited states, pooled (the same
      quantity as the people's: the spread of one reply per state across the group's states), read
      as stances by the stance reader;
    - **simulator, within a state**: the mean over the audited states of ε of their own N replies
      (what the headline measures). Pooling over states can only add spread, so pooled ≥ within in
      expectation; people's ε is pooled over persons by nature.

    Intervals come from :func:`~collapse_probe.metrics.estimators.collapse_error_interval` per group and
    :func:`~collapse_probe.metrics.estimators.mean_collapse_error_interval` for the means over the
    matched groups (people, simulator pooled) or over the audited states (within). The simulator's
    replies are read by a reader whose held-out accuracy is in ``docs/stance-reader.md``; people's
    side uses their annotated acts. The simulator is not classified into acts: no act reader is
    measured well enough for that.

    Returns:
        ``None`` when no audited state is a prefix of an annotated dialogue.
    """
    from collapse_probe.benchmarks.p4g.stance import STANCES, default_stance_reader

    reader = reader if reader is not None and callable(getattr(reader, "keys", None)) else default_stance_reader()
    by_id = {d.dialogue_id: d for d in annotated if d.acts}
    people, people_acts = _people_counts(by_id)
    audited = _audited_states(records, by_id)
    if not audited:
        return None
    sim = _simulator_counts(audited, reader)
    groups: list[PeopleGroup] = []
    for g in sorted(sim, key=lambda g: (-sum(people.get(g, Counter()).values()), g)):
        if g not in people:
            continue
        pooled = np.sum(sim[g], axis=0)
        pa = people_acts[g].most_common()
        groups.append({
            "persuader_act": g,
            "people": {**_eps([people[g][s] for s in STANCES], seed), "counts": {s: people[g][s] for s in STANCES}},
            "people_acts": {**_eps([v for _, v in pa], seed), "modal_act": pa[0][0], "n_acts": len(pa)},
            "simulator_pooled": {**_eps(pooled, seed), "counts": dict(zip(STANCES, pooled.tolist(), strict=True))},
            "simulator_within_state": _mean_eps(sim[g], seed),
            "n_states": len(sim[g]),
        })  # fmt: skip
    if not groups:
        return None
    names: list[str] = [x["persuader_act"] for x in groups]
    return {
        "grouping": MATCHED_GROUPING,
        "class_space": "stance: donate / refuse / no decision (people also by act)",
        "stance_reader": reader.describe() if callable(getattr(reader, "describe", None)) else None,
        "n_groups": len(groups),
        "n_states": sum(x["n_states"] for x in groups),
        "n_people_replies": int(sum(x["people"]["n"] for x in groups)),
        "people": _mean_eps([[people[g][s] for s in STANCES] for g in names], seed),
        "people_acts": _mean_eps([list(people_acts[g].values()) for g in names], seed),
        "simulator_pooled": _mean_eps([np.sum(sim[g], axis=0).tolist() for g in names], seed),
        "simulator_within_state": _mean_eps([c for g in names for c in sim[g]], seed),
        "groups": groups,
    }


def _people_counts(by_id: Mapping[str, HumanDialogue]) -> tuple[dict[str, Counter[str]], dict[str, Counter[str]]]:
    """Persuader act -> the persuadees' next-turn stances, and -> their next-turn acts, over every
    annotated dialogue (one reply per person and prefix)."""
    from collapse_probe.benchmarks.p4g.stance import turn_act, turn_stance

    people: dict[str, Counter[str]] = {}
    people_acts: dict[str, Counter[str]] = {}
    for d in by_id.values():
        for k in range(1, len(d.turns)):
            if d.turns[k - 1][0] == "policy" and d.turns[k][0] == "simulator" and d.acts[k - 1]:
                g = d.acts[k - 1][-1] or "(unlabelled)"
                people.setdefault(g, Counter())[turn_stance(d.acts[k])] += 1
                people_acts.setdefault(g, Counter())[turn_act(d.acts[k])] += 1
    return people, people_acts


def _audited_states(
    records: Sequence[StateRecord], by_id: Mapping[str, HumanDialogue]
) -> list[tuple[StateRecord, str]]:
    """``(record, persuader act)`` of every measured human-grounded state that is a prefix of an
    annotated dialogue."""
    audited = []
    for r in records:
        if r.get("status") != "ok" or r.get("source") != "human" or not r.get("responses"):
            continue
        did, _, depth = str(r["state_id"]).removeprefix("human:").rpartition(":")
        d = by_id.get(did)
        if d is None or not depth.isdigit() or not 0 < int(depth) <= len(d.acts) or not d.acts[int(depth) - 1]:
            continue
        audited.append((r, d.acts[int(depth) - 1][-1] or "(unlabelled)"))
    return audited


def _simulator_counts(audited: list[tuple[StateRecord, str]], reader: Any) -> dict[str, list[list[int]]]:
    """Persuader act -> one stance count vector per audited state (its replies read by ``reader``)."""
    from collapse_probe.benchmarks.p4g.stance import STANCES, key_stance

    keys = reader.keys([t for r, _ in audited for t in r["responses"]])
    sim: dict[str, list[list[int]]] = {}
    at = 0
    for r, g in audited:
        c = Counter(key_stance(x) for x in keys[at : at + len(r["responses"])])
        at += len(r["responses"])
        sim.setdefault(g, []).append([c[s] for s in STANCES])
    return sim


def people_epsilon_rows(results: Mapping[str, object]) -> list[tuple[str, str]]:
    """Terminal-table rows for ``human_reference.people_epsilon`` of a ``results.json`` object (none when
    it is absent)."""
    ref = results.get("human_reference")
    pe = ref.get("people_epsilon") if isinstance(ref, dict) else None
    if not pe or not isinstance(pe, dict):
        return []

    def v(x: object) -> str:
        if not isinstance(x, dict) or x.get("estimate") is None:
            return "n/a"
        return f"{x['estimate']:.3f} [{x['ci95'][0]:.3f}, {x['ci95'][1]:.3f}]"

    where = f"{pe['n_groups']} persuader acts, {pe['n_states']} audited states"
    return [
        ("people's ε at matched states", f"stance {v(pe['people'])}, act {v(pe['people_acts'])} "
                                         f"({pe['n_people_replies']} human replies; {where})"),
        ("simulator's ε there (stance)", f"pooled {v(pe['simulator_pooled'])}, within a state "
                                         f"{v(pe['simulator_within_state'])}"),
    ]  # fmt: skip
