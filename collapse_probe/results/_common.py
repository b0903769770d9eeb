"""Parts shared by several results kinds: model spend, a reward summary, the run's fingerprints."""

from __future__ import annotations

from collapse_probe.results._base import Count, Interval, ResultsModel


class ModelUsage(ResultsModel):
    """Spend of one model spec over the run (``usage`` maps each spec to one)."""

    requests: Count
    """Answered calls (cached answers are not counted)."""
    input_tokens: Count
    """Input tokens the server reported."""
    output_tokens: Count
    """Output tokens the server reported (or the local backend counted)."""
    cost_usd: float | None
    """Priced from the price table; ``null`` for a model without a price, 0 for local and scripted models."""


Usage = dict[str, ModelUsage]
"""Model spec -> its spend (``results.json`` ``usage``)."""

Fingerprints = dict[str, str | list[str]]
"""Model spec -> the content fingerprint its conversations were run with (a sorted list when they
differ: one spec answered by two models, which the gate refuses to judge)."""


class RewardSummary(ResultsModel):
    """Mean reward over scored conversations with a 95 % CI over tasks (``play`` ``summary``, the
    audit's ``rollouts``); infrastructure failures are counted, never scored."""

    n: Count
    """Scored conversations."""
    infra_failures: Count
    """Conversations that ended in an infrastructure failure (excluded from the mean)."""
    mean_reward: float | None
    """Mean reward of the scored conversations (``null`` when none is scored)."""
    ci95: Interval | None
    """95 % CI over tasks (the clusters), inside the arena's declared reward range."""
    ci95_method: str | None = None
    """The interval's method, in words."""
    n_tasks: Count | None = None
    """Tasks with at least one scored conversation."""
