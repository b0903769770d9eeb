"""How varied a policy's own moves are: the strategy entropy of its messages over conversations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from collapse_probe.core._records import ConversationRecord

EntropyTurns = Literal["first", "all"]


class StrategyEntropy(TypedDict):
    """A policy's strategy entropy (:func:`policy_strategy_entropy`)."""

    policy: str
    partitioner: str
    estimator: str
    turns: EntropyTurns
    n_messages: int
    """The policy's messages counted."""
    n_classes: int | None
    """Classes among them (``None``: no message)."""
    strategy_entropy: float | None
    """Nats, Chao–Wang–Jost (``None``: no message)."""
    collapse_error: float | None
    low_confidence: bool
    """Fewer messages than ``MIN_CONFIDENT_SAMPLES``."""


def policy_strategy_entropy(
    records: Sequence[ConversationRecord], policy: str, *, partitioner: str = "exact", turns: EntropyTurns = "first"
) -> StrategyEntropy:
    """Strategy entropy (nats, Chao–Wang–Jost) of a policy's own messages over all its conversations.

    With ``turns="first"`` each conversation contributes its opening policy move; with ``"all"``
    every policy turn. Because every cell shares the task/rollout seeds, the opening move of a
    conversation is usually the same in every cell of a row: each (task, rollout) therefore
    contributes its opening move once, from the first cell that recorded it, so replicated draws do
    not pose as evidence of collapse. Messages injected by the arena (``meta.elicitation``, or
    ``meta.given``: a scenario's fixed opening) are not the policy's and are skipped.
    """
    from collapse_probe.metrics.estimators import MIN_CONFIDENT_SAMPLES, collapse_error, entropy
    from collapse_probe.metrics.partitioners import class_counts, get_partitioner

    texts: list[str] = []
    seen: set[tuple[str, int]] = set()
    for r in records:
        own = [m for m in r.messages if m.role == "policy" and not {"elicitation", "given"} & set(m.meta or {})]
        if not own:
            continue
        if turns == "first":
            key = (r.task_id, r.rollout)
            if key in seen:
                continue
            seen.add(key)
            texts.append(str(own[0].content))
        else:
            texts.extend(str(m.content) for m in own)
    out: StrategyEntropy = {
        "policy": policy,
        "partitioner": partitioner,
        "estimator": "chao_wang_jost",
        "turns": turns,
        "n_messages": len(texts),
        "n_classes": None,
        "strategy_entropy": None,
        "collapse_error": None,
        "low_confidence": len(texts) < MIN_CONFIDENT_SAMPLES,
    }
    if not texts:
        return out
    counts = class_counts(get_partitioner(partitioner).partition(texts))
    out["n_classes"] = int(counts.size)
    out["strategy_entropy"] = float(entropy(counts, "chao_wang_jost"))
    out["collapse_error"] = float(collapse_error(counts))
    return out
