"""Views of the measured states beside the headline: ε by kind of state, the reward view, the
decision-label ε and the exact closed-set distribution."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from collapse_probe.benchmarks._base import Arena, audit_hook
from collapse_probe.pipelines.audit._config import AuditConfig, ProbeState
from collapse_probe.pipelines.audit._summary import exact_scored, mean_collapse_error
from collapse_probe.pipelines.audit._types import (
    DecisionSummary,
    ExactDistribution,
    ExactSummary,
    KindMean,
    KindViews,
    RewardViewOfState,
    RewardViewSummary,
    StateRecord,
)

NOT_READ = "not read by the reward"
"""The reward-view class of replies the benchmark's ``reward_class`` gives ``None`` at a state where it
reads other replies (see :class:`~collapse_probe.benchmarks.AuditHooks`)."""

DECISION_LABEL_NOTE = (
    "the benchmark's decision label (it declares no reward_class hook), at the states that ask for a decision"
)


def _kind_order(kind: str) -> tuple[int, int, str]:
    if kind == "opening":
        return (0, 0, kind)
    if kind.startswith("turn "):
        return (1, int(kind.split()[1]) if kind.split()[1].isdigit() else 0, kind)
    if kind == "elicitation":
        return (2, 0, kind)
    return (3, 0, kind)


# ----------------------------------------------------------------------------------------------- reward view


def reward_reader(arena: Arena) -> tuple[Callable[[ProbeState, str], Hashable | None] | None, str | None]:
    """How the benchmark's reward classes a reply at a state, and the one-line note saying so.

    The arena's ``reward_class(episode, text)`` hook; without it, its ``decision_label`` at the states
    that ask for a decision (that hook is declared as "the decision the reward reads"); without
    either, ``(None, None)``: the reward view is not measured.
    """
    hook = audit_hook(arena, "reward_class")
    if hook is not None:
        note = audit_hook(arena, "reward_view_note") or "classes: the benchmark's reward_class hook"
        return (lambda state, text: hook(state.episode, text)), str(note)
    decide = audit_hook(arena, "decision_label")
    if decide is not None:
        return (lambda state, text: decide(text) if state.closed_set else None), DECISION_LABEL_NOTE
    return None, None


def reward_view_of_state(
    read: Callable[[ProbeState, str], Hashable | None] | None, state: ProbeState, texts: Sequence[str], seed: int
) -> RewardViewOfState | None:
    """The reward-view classes of one state's replies with the state's ε (bias-aware, with its interval),
    or ``None`` where the reward reads none of them."""
    if read is None:
        return None
    keys = [read(state, t) for t in texts]
    if all(k is None for k in keys):
        return None
    from collapse_probe.metrics.estimators import collapse_error_interval

    names = [NOT_READ if k is None else str(k) for k in keys]
    dc = Counter(names).most_common()
    counts = [v for _, v in dc]
    e = collapse_error_interval(counts, seed=seed)
    return {"class_names": [k for k, _ in dc], "class_counts": counts, "collapse_error": 1.0 - counts[0] / len(texts),
            "collapse_error_estimate": e.estimate, "collapse_error_ci95": e.ci95}  # fmt: skip


def _states_text(records: Sequence[StateRecord]) -> str:
    kinds = Counter(r.get("kind") or r["source"] for r in records)
    parts = [f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: _kind_order(kv[0]))]
    return f"{len(records)} state{'s' if len(records) != 1 else ''} the reward reads: {', '.join(parts)}"


NO_BENCHMARK = "no benchmark named: a generic file has no reward classes (--benchmark NAME gives its reward view)"


def reward_view_summary(records: Sequence[StateRecord], config: AuditConfig, note: str | None,
                        no_benchmark: bool = False) -> RewardViewSummary:  # fmt: skip
    """``summary.reward_view``: the mean collapse error of the reward's classes over the states where the
    reward reads the reply, with the headline's interval method; ``estimate`` is ``None`` (and
    ``reason`` says why) where no state has a reward reading."""
    rs = [r for r in records if r.get("status") == "ok" and r.get("reward_view")]
    if not rs:
        reason = (NO_BENCHMARK if no_benchmark and note is None
                  else "the benchmark declares no reward_class (or decision_label) hook" if note is None
                  else "no audited state is one where the reward reads the reply")  # fmt: skip
        return {"classes": note, "n_states": 0, "estimate": None, "ci95": None, "states": "none", "reason": reason}
    e = mean_collapse_error([r["reward_view"]["class_counts"] for r in rs], seed=config.rollout.seed)
    return {"classes": note, "n_states": len(rs), "estimate": e["estimate"], "ci95": e["ci95"],
            "method": e.get("method"), "plugin": e.get("plugin"), "level": e.get("level"), "states": _states_text(rs),
            "reason": None}  # fmt: skip


def closed_answers_given(records: Sequence[StateRecord], arena: Arena | None) -> tuple[int, int] | None:
    """``(replies that give one of the closed answers, replies)`` at the states where the reward reads the
    reply and the benchmark labels the decision: how often the simulator answers in the form the reward
    reads (P4G: a ``[DONATE $N]`` tag anywhere in the reply). ``None`` without the benchmark's
    ``closed_answers`` and ``decision_label`` hooks or such a state."""
    answers = audit_hook(arena, "closed_answers") if arena is not None else None
    if answers is None:
        return None
    classes = {str(c) for _, c in answers()}
    rs = [r for r in records if r.get("reward_view") and r.get("decision")]
    if not rs:
        return None
    counts = [(str(k), int(c)) for r in rs for k, c in zip(r["decision"]["class_names"], r["decision"]["class_counts"],
                                                           strict=False)]  # fmt: skip
    return sum(c for k, c in counts if k in classes), sum(c for _, c in counts)


# ----------------------------------------------------------------------------------------------- exact


def exact_summary(records: Sequence[StateRecord]) -> ExactSummary | None:
    """``summary.exact``: means over the states with an exact closed-set distribution of what it says.

    ``closed_set_mass`` is format compliance — the probability that the whole reply is one of the set's
    answers (P4G: exactly a ``[DONATE $N]`` tag) — not collapse; ``collapse_error_in_set`` is ε of the
    distribution conditioned on answering inside the set (the amount's spread, meaningful when the set
    holds real mass); ``collapse_error_with_outside`` keeps "outside the set" as one class (the old
    ``exact_collapse_error``: near 0 whenever the model rarely answers with the bare tag).
    """
    ex: list[ExactDistribution] = []
    for r in records:
        e = r.get("exact")
        if r.get("status") == "ok" and exact_scored(e):
            ex.append(e)
    if not ex:
        return None
    cond = [c for e in ex if (c := e.get("collapse_error_conditional")) is not None]
    return {
        "n_states": len(ex),
        "closed_set_mass": float(np.mean([e["closed_set_mass"] for e in ex])),
        "collapse_error_in_set": float(np.mean(cond)) if cond else None,
        "n_states_in_set": len(cond),
        "collapse_error_with_outside": float(np.mean([e["collapse_error"] for e in ex])),
        "outside_mass": float(np.mean([e["outside_mass"] for e in ex])),
    }


# ----------------------------------------------------------------------------------------------- all views


def kind_views(records: Sequence[StateRecord], config: AuditConfig, arena: Arena | None = None) -> KindViews:
    """The views of the ``summary`` block beside the headline.

    - ``by_kind``: mean ε̂ with its CI per kind of state (opening, turn k, elicitation);
    - ``reward_view``: :func:`reward_view_summary` (the reward's classes; the note from ``arena``);
    - ``decision_collapse_error``: the mean ε of the benchmark's decision label over the states that
      ask for a decision, ``None`` where no state does. Kept for earlier readers; it is not the
      reward's view where the label splits what the reward pays the same (P4G: refuse / undecided);
    - ``exact``: :func:`exact_summary`; ``exact_outside_mass`` its mean mass outside the set (kept).
    """
    ok = [r for r in records if r.get("status") == "ok"]
    by_kind: dict[str, KindMean] = {}
    for kind in sorted({r.get("kind") or r["source"] for r in ok}, key=_kind_order):
        rs = [r for r in ok if (r.get("kind") or r["source"]) == kind]
        e = mean_collapse_error([r["class_counts"] for r in rs], seed=config.rollout.seed)
        by_kind[kind] = {"collapse_error": e["estimate"], "ci95": e["ci95"], "n_states": len(rs),
                         "entropy": float(np.mean([r["entropy"] for r in rs]))}  # fmt: skip
    dec = [r["decision"] for r in ok if r.get("decision")]
    decision: DecisionSummary | None = None
    if dec:
        e = mean_collapse_error([d["class_counts"] for d in dec], seed=config.rollout.seed)
        decision = {"estimate": e["estimate"], "ci95": e["ci95"], "n_states": len(dec),
                    "partition": "the benchmark's decision label (P4G: amount / refuse / undecided), which may split "
                    "what the reward pays the same; the reward's own classes are summary.reward_view"}  # fmt: skip
    note = reward_reader(arena)[1] if arena is not None else None
    if note is None and any(r.get("reward_view") for r in ok):
        note = "classes: the benchmark's reward_class hook"
    exact = exact_summary(ok)
    no_benchmark = arena is None and config.arena.benchmark == "none"
    reward_view = reward_view_summary(ok, config, note, no_benchmark)
    given = closed_answers_given(ok, arena)
    if given is not None and reward_view.get("estimate") is not None:
        reward_view["closed_answers_given"], reward_view["replies_read"] = given
    return {"by_kind": by_kind, "reward_view": reward_view,
            "decision_collapse_error": decision, "exact": exact,
            "exact_outside_mass": exact["outside_mass"] if exact else None}  # fmt: skip
