"""Play the simulator's side of arena episodes, batched per turn, for trainers that write the policy's
turns themselves (TRL's ``GRPOTrainer`` writes one policy turn per completion)."""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any

from collapse_probe.errors import ConfigError
from collapse_probe.integrations.monitor._shadow import ShadowSimulator
from collapse_probe.models import Completion, GenerationRequest, Message, SamplingParams, derive_seed


async def play_simulator_turns(
    arena: Any,
    episodes: Sequence[Any],
    simulator: Any,
    *,
    keys: Sequence[str] | None = None,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> None:
    """Advance every episode while it is the simulator's turn, one batched ``generate`` call per turn.

    With a participant from :meth:`CollapseMonitor.wrap <collapse_probe.integrations.monitor.CollapseMonitor.wrap>`
    the turns are shadow-sampled and recorded in its monitor; with the same participant unwrapped the
    replies are exactly the same and nothing is measured. Seeds follow the rollout engine: the reply at
    message index ``m`` of an episode uses ``derive_seed(episode.seed, m)``, and a Verbalized-Sampling
    choice draws from ``random.Random(episode.seed)``. A failed request ends its episode with status
    ``infra_error`` (never scored).

    Args:
        arena: the benchmark.
        episodes: the conversations (mutated in place).
        simulator: a :class:`~collapse_probe.simulators.Participant`.
        keys: one rollout key per episode (default: its index).
        temperature: the simulator's sampling temperature.
        top_p: its nucleus mass.
    """
    from collapse_probe.simulators import Participant

    if not isinstance(simulator, Participant):
        raise ConfigError(
            "play_simulator_turns needs a Participant (make_participant(spec) or CollapseMonitor.wrap(spec))"
        )
    keys = list(keys) if keys is not None else [str(i) for i in range(len(episodes))]
    if len(keys) != len(episodes):
        raise ConfigError(f"play_simulator_turns: {len(keys)} keys for {len(episodes)} episodes")
    shadow = simulator.model if isinstance(simulator.model, ShadowSimulator) else None
    rngs = {id(ep): random.Random(ep.seed) for ep in episodes}
    while True:
        live = [
            (ep, k) for ep, k in zip(episodes, keys, strict=True) if not ep.done and arena.next_side(ep) == "simulator"
        ]
        if not live:
            return
        requests, befores = [], []
        for ep, _ in live:
            prompt = simulator.transform_prompt(arena.prompt_for(ep, "simulator"))
            params = SamplingParams(temperature=temperature, top_p=top_p, max_tokens=prompt.max_tokens,
                                    stop=tuple(prompt.stop), seed=derive_seed(ep.seed, len(ep.messages)))  # fmt: skip
            requests.append(GenerationRequest(messages=tuple(prompt.messages), prompt=prompt.prompt, params=params,
                                              tools=tuple(prompt.tools) if prompt.tools else None))  # fmt: skip
            befores.append(copy.deepcopy(ep) if shadow is not None else None)
        results = await simulator.model.generate(requests)
        for (ep, key), req, res, before in zip(live, requests, results, befores, strict=True):
            shadowed, shadows = shadow.take(req) if shadow is not None else (False, None)
            if not res.ok or not res.completions or not isinstance(res.completions[0].text, str):
                ep.done, ep.status = True, "infra_error"
                continue
            comp = res.completions[0]
            text, _ = simulator.postprocess(comp, rngs[id(ep)])
            arena.apply(ep, "simulator", comp, text)
            if shadow is not None:
                reply = ep.messages[-1]["content"] if ep.messages else text
                shadow.monitor._record(key, reply, shadowed, shadows, before)


async def simulator_reply(
    simulator: Any,
    messages: Sequence[Message],
    *,
    rollout: str,
    seed: int | None = None,
    max_tokens: int = 96,
    temperature: float = 1.0,
    stop: Sequence[str] = (),
    context: Any = None,
) -> str | None:
    """One simulator reply to a chat history written by the caller's own conversation loop (ART
    rollouts, custom loops), shadow-sampled and recorded when ``simulator`` comes from
    :meth:`CollapseMonitor.wrap`. ``messages`` are the simulator's view (its own turns ``assistant``).

    Returns:
        The reply text, or ``None`` when the backend failed (an infrastructure failure: the caller
        should not score the rollout).
    """
    from collapse_probe.simulators import Participant

    model = simulator.model if isinstance(simulator, Participant) else simulator
    params = SamplingParams(temperature=temperature, max_tokens=max_tokens, stop=tuple(stop), seed=seed)
    request = GenerationRequest(messages=tuple(Message(**m) for m in messages), params=params)
    res = (await model.generate([request]))[0]
    shadowed, shadows = model.take(request) if isinstance(model, ShadowSimulator) else (False, None)
    if not res.ok or not res.completions or not isinstance(res.completions[0].text, str):
        return None
    if isinstance(simulator, Participant):
        text, _ = simulator.postprocess(res.completions[0], random.Random(seed))
    else:
        text = res.completions[0].text.strip()
    if isinstance(model, ShadowSimulator):
        model.monitor._record(rollout, text, shadowed, shadows, context)
    return text


async def play_policy_turn(
    arena: Any, episode: Any, simulator: Any, text: str, *, key: str, temperature: float = 1.0
) -> str | None:
    """The policy says ``text`` in ``episode``; the simulator answers until it is the policy's turn again
    or the conversation is over (then ``episode.done``). Returns the simulator's last reply (``""`` if it
    has none), or ``None`` when it was not the policy's turn (the conversation is over)."""
    if episode.done or arena.next_side(episode) != "policy":
        return None
    arena.apply(episode, "policy", Completion(text=text), text)
    await play_simulator_turns(arena, [episode], simulator, keys=[key], temperature=temperature)
    if not episode.done and arena.next_side(episode) is None:
        episode.done = True
    return next((str(m["content"]) for m in reversed(episode.messages) if m["role"] == "simulator"), "")
