"""A participant is a model plus a sampling mode: the unit the engine batches and records.

Spec strings: a model spec (``smollm2``, ``openai/gpt-5-mini``, ``scripted:FILE``) optionally
prefixed by a mode: ``vs:SPEC`` (Verbalized Sampling: the model writes K candidate responses with
verbalized probabilities and one is sampled from them) or ``direct:SPEC`` (the default). A persona-
guided simulator is the arena's business (it conditions the simulator on a sampled persona).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from collapse_probe.core._state import process_cache
from collapse_probe.errors import ConfigError
from collapse_probe.models import ChatModel, Completion, get_model
from collapse_probe.simulators.verbalized import ChoiceRecord, check_vs_k

if TYPE_CHECKING:
    from collapse_probe.models import CachedModel, ResponseCache

Mode = Literal["direct", "verbalized"]
_MODE_PREFIXES: dict[str, Mode] = {"direct": "direct", "vs": "verbalized"}


class FallbackRecord(ChoiceRecord):
    """The Verbalized-Sampling record of a turn asked again as a direct reply (its ``meta.vs``)."""

    fallback: str
    """The mode the turn was asked in again (``direct``)."""


@dataclass
class Participant:
    """One side of a conversation: ``label`` names it in records and reports."""

    label: str
    model: ChatModel
    mode: Mode = "direct"
    vs_k: int = 5
    """Number of candidates a Verbalized-Sampling simulator is asked for."""
    stats: dict[str, int] = field(default_factory=lambda: {"turns": 0, "vs_parse_failures": 0})
    fallback_of: FallbackRecord | None = None
    """Set on the direct stand-in of a Verbalized-Sampling participant (:meth:`direct_fallback`): the VS
    record of the turn whose candidates held no reply, kept in the turn's ``meta.vs``."""

    def direct_fallback(self, vs_record: ChoiceRecord) -> Participant:
        """The same model in direct mode, for a Verbalized-Sampling turn whose candidates held no reply
        (``vs_record``: that turn's record). A small model often answers the candidate format with a pick
        such as "1.5) third reply"; seeded, it answers the same way when asked again, so the turn is asked
        once more as a direct reply instead. The failure stays counted (``vs_parse_failures``) and the
        turn's ``meta.vs`` says ``fallback: "direct"``."""
        from dataclasses import replace

        return replace(self, mode="direct", fallback_of={**vs_record, "fallback": "direct"})

    def transform_prompt(self, prompt: Any) -> Any:
        """Rewrite a :class:`~collapse_probe.benchmarks.TurnPrompt` for this participant's mode."""
        if self.mode == "verbalized":
            from collapse_probe.simulators.verbalized import verbalized_prompt

            return verbalized_prompt(prompt, k=self.vs_k)
        return prompt

    def postprocess(self, completion: Completion, rng: random.Random) -> tuple[str, dict[str, Any]]:
        """The turn's text from a raw completion, and what to record about how it was chosen."""
        self.stats["turns"] += 1
        if self.mode == "verbalized":
            from collapse_probe.simulators.verbalized import choose_verbalized

            choice = choose_verbalized(completion.text, k=self.vs_k, rng=rng)
            if not choice.parse_ok:
                self.stats["vs_parse_failures"] += 1
            return choice.text, {"vs": choice.to_record()}
        return completion.text.strip(), ({"vs": dict(self.fallback_of)} if self.fallback_of is not None else {})


def vs_setting(participants: Iterable[Participant]) -> int | dict[str, int] | None:
    """What ``--vs-k`` set for a run's participants, as ``config.json`` records it.

    ``None`` when no participant samples by Verbalized Sampling (then ``vs_k`` changes nothing), the
    candidates per turn when every VS participant asks for the same number (as ``--vs-k`` builds
    them), else spec -> candidates.
    """
    ks = {p.label: p.vs_k for p in participants if p.mode == "verbalized"}
    if not ks:
        return None
    return next(iter(ks.values())) if len(set(ks.values())) == 1 else dict(sorted(ks.items()))


def parse_participant_spec(spec: str) -> tuple[Mode, str]:
    """Split ``vs:smollm2`` into ``("verbalized", "smollm2")``; ``scripted:`` is a model prefix."""
    spec = spec.strip()
    head, sep, rest = spec.partition(":")
    if sep and head in _MODE_PREFIXES:
        if not rest:
            raise ConfigError(f"participant spec {spec!r} names a mode but no model (e.g. 'vs:smollm2')")
        return _MODE_PREFIXES[head], rest
    return "direct", spec


def make_participant(spec: str, *, vs_k: int = 5, cache: bool = True, **model_options: Any) -> Participant:
    """Build a participant from a spec string, wrapping its model in the response cache.

    Args:
        spec: ``[vs:|direct:]MODEL_SPEC``.
        vs_k: candidates per Verbalized-Sampling turn.
        cache: serve and store samples through the SQLite response cache.
    """
    mode, model_spec = parse_participant_spec(spec)
    check_vs_k(vs_k)
    model = get_model(model_spec, **model_options)
    if cache:
        model = _cached(model)
    elif not getattr(model, "reports_usage", False):
        model = _metered(model)
    return Participant(label=spec, model=model, mode=mode, vs_k=vs_k)


_CACHES: dict[str, ResponseCache] = process_cache("simulators.response_caches", {})
"""Cache file path -> the open :class:`~collapse_probe.models.ResponseCache` on it."""
_METERED: dict[int, Any] = process_cache("simulators.metered", {})
"""``id(model)`` -> the usage-counting wrapper of that uncached model (checked to be that model)."""


def _metered(model: ChatModel) -> ChatModel:
    """One usage-counting wrapper per uncached model (participants sharing a model share a batch)."""
    from collapse_probe.models._usage import MeteredModel

    wrapper = _METERED.get(id(model))
    if wrapper is None or wrapper.inner is not model:  # an id outlives its object: check it is this model
        wrapper = _METERED[id(model)] = MeteredModel(model)
    return wrapper


_WRAPPED: dict[tuple[int, str], CachedModel] = process_cache("simulators.cached", {})
"""``(id(model), cache file)`` -> the cache wrapper of that model (checked to be that model)."""


def _cached(model: ChatModel) -> ChatModel:
    """One cache wrapper per (model, cache file), so participants sharing a model share a batch."""
    from collapse_probe.models import CachedModel, ResponseCache, default_cache_path

    path = str(default_cache_path())
    if path not in _CACHES:
        _CACHES[path] = ResponseCache(path)
    key = (id(model), path)
    wrapper = _WRAPPED.get(key)
    if wrapper is None or wrapper.inner is not model:  # an id outlives its object: check it is this model
        wrapper = _WRAPPED[key] = CachedModel(model, _CACHES[path])
    return wrapper
