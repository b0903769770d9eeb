"""Shadow sampling: N − 1 extra replies of the simulator to a state the training rollout visited.

:class:`ShadowSimulator` is a :class:`~collapse_probe.models.ChatModel` over the simulator's backend.
The training requests go through unchanged and their results are returned unchanged; at the turns the
monitor picks it also asks the backend for N − 1 more replies to the same request, with seeds from the
monitor's own stream, and hands them to the monitor. The shadow replies never reach the training
rollout and never share a cache key with a training reply: the response cache keys on the seed and
the sample index, and a shadow request's seed comes from the monitor's stream, not the conversation's.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from collapse_probe.integrations.monitor._rng import rng_isolated
from collapse_probe.models import Completion, GenerationRequest, GenerationResult, derive_seed


class _Monitor(Protocol):
    """What the shadow wrapper asks of :class:`~collapse_probe.integrations.monitor.CollapseMonitor` (declared
    here: the monitor imports this module, so this module does not import the monitor)."""

    config: Any

    def _pick_turns(self, n: int) -> list[int]: ...

    def _shadow_request(self, request: GenerationRequest) -> GenerationRequest: ...

    def _record(self, key: str, reply: str, shadowed: bool, shadows: list[str] | None, before: Any) -> None: ...

    def record_results(
        self,
        rewards: Sequence[float | None],
        *,
        groups: Sequence[Hashable] | None = None,
        policy_texts: Sequence[str] | None = None,
    ) -> None: ...


class CallableSimulator:
    """A plain function as a simulator backend: ``fn(messages) -> str``, optionally ``fn(messages, seed=...)``.

    When ``fn`` takes a ``seed`` keyword each sample gets its own seed (sample ``i`` of a request uses
    ``request.sample_seed(i)``), so shadow replies are independent draws; otherwise ``fn`` draws its
    own randomness and the monitor calls it once per shadow reply under an RNG guard, so whatever
    global stream it draws from is restored afterwards.
    """

    def __init__(self, fn: Callable[..., str], spec: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"a callable simulator must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.spec = spec or f"callable:{getattr(fn, '__qualname__', type(fn).__name__)}"
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        self.takes_seed = "seed" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for r in requests:
            try:
                texts = [
                    self.fn(list(r.messages), seed=r.sample_seed(i)) if self.takes_seed else self.fn(list(r.messages))
                    for i in range(r.n)
                ]
            except Exception as exc:  # a simulator that raises fails its request, not the run
                out.append(GenerationResult([], error=f"{type(exc).__name__}: {exc}"))
                continue
            bad = [t for t in texts if not isinstance(t, str)]
            if bad:
                out.append(GenerationResult([], error=f"the simulator returned {type(bad[0]).__name__}, expected str"))
                continue
            out.append(GenerationResult([Completion(text=t, finish_reason="stop") for t in texts]))
        return out


class ShadowSimulator:
    """The simulator's backend with shadow sampling at the turns the monitor picks (see the module doc).

    Args:
        inner: the simulator's backend.
        monitor: the monitor that picks turns and receives the shadow replies.
        mode: the participant's sampling mode (``"verbalized"``: each shadow completion is turned into
            the reply the participant would play, with the monitor's own random numbers).
        vs_k: candidates of a Verbalized-Sampling participant.
        batching: ``"joint"`` or ``"separate"`` (see :attr:`MonitorConfig.batching`).
    """

    def __init__(
        self, inner: Any, monitor: _Monitor, *, mode: str = "direct", vs_k: int = 5, batching: str = "joint"
    ) -> None:
        self.inner = inner
        self.monitor = monitor
        self.spec = inner.spec
        self.mode = mode
        self.vs_k = vs_k
        self.batching = batching
        self.pending_: dict[int, list[str] | None] = {}
        """``id(request)`` -> shadow reply texts (``None``: the shadow call failed), until the turn is recorded."""

    def __getattr__(self, name: str) -> Any:  # fingerprint(), score_choices(), prompt_ids(), ... of the backend
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        requests = list(requests)
        picks = self.monitor._pick_turns(len(requests))
        shadows = [self.monitor._shadow_request(requests[i]) for i in picks]
        if not shadows:
            return await self.inner.generate(requests)
        if self.batching == "joint":
            results = await self.inner.generate(requests + shadows)
            train, extra = results[: len(requests)], results[len(requests) :]
        else:
            train = await self.inner.generate(requests)
            with rng_isolated():
                try:
                    extra = await self.inner.generate(shadows)
                except Exception as exc:  # a failed shadow call costs the measurement, never the rollout
                    extra = [GenerationResult([], error=f"{type(exc).__name__}: {exc}") for _ in shadows]
        for i, res in zip(picks, extra, strict=True):
            self.pending_[id(requests[i])] = self._texts(res, requests[i]) if res is not None else None
        return train

    def _texts(self, res: GenerationResult, request: GenerationRequest) -> list[str] | None:
        if not res.ok:
            return None
        texts = []
        rng = random.Random(derive_seed(self.monitor.config.seed, request.sample_seed(0) or 0))
        for comp in res.completions:
            if not isinstance(comp.text, str) or not comp.text.strip():
                continue  # an empty answer is no reply: dropped and counted, never a class
            if self.mode == "verbalized":
                from collapse_probe.simulators.verbalized import choose_verbalized

                with rng_isolated():
                    texts.append(choose_verbalized(comp.text, k=self.vs_k, rng=rng).text)
            else:
                texts.append(comp.text.strip())
        return texts

    def take(self, request: GenerationRequest) -> tuple[bool, list[str] | None]:
        """``(shadowed, texts)`` for ``request``: whether it was shadowed, and its shadow replies
        (``None``: the shadow call failed)."""
        if id(request) not in self.pending_:
            return False, None
        return True, self.pending_.pop(id(request))


def shadow_request(request: GenerationRequest, n: int, seed: int) -> GenerationRequest:
    """``request`` asking for ``n`` replies from sample index 0 of the monitor's own ``seed``."""
    return replace(request, n=n, first_sample=0, params=replace(request.params, seed=seed))
