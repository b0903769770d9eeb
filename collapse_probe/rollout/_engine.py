"""The batched multi-turn engine.

Every live conversation is advanced one turn at a time; all pending requests for the same model
(whatever the conversation, cell of a cross-play matrix, or side) go to that model in one batched
``generate`` call, and different models run concurrently. This is what turns a policy x simulator
matrix into a handful of large batches per turn instead of thousands of sequential calls.

Each finished conversation is scored (batched) and appended to ``conversations.jsonl`` at once; on
restart, conversations already recorded are skipped, so a killed run resumes with no loss and no
duplicates. Randomness is per conversation: turn ``t`` of a conversation with seed ``s`` samples
with seed ``derive_seed(s, t)``, so a conversation's draws do not depend on what else is batched.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from collapse_probe.benchmarks._base import Arena, Episode, Side, Task, TurnPrompt
from collapse_probe.errors import ConfigError
from collapse_probe.models import Completion, GenerationRequest, SamplingParams, derive_seed
from collapse_probe.rollout._rundir import RunDir
from collapse_probe.simulators import Participant

CONVERSATIONS = "conversations.jsonl"


@dataclass(frozen=True)
class ConversationSpec:
    """One conversation to run: a task, a rollout index, the two participants and a seed."""

    task: Task
    rollout: int
    policy: str
    simulator: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.policy}|{self.simulator}|{self.task.task_id}|{self.rollout}"


@dataclass
class EngineConfig:
    """Sampling settings the engine applies to every turn."""

    temperature: float = 1.0
    """Sampling temperature of both sides (override per side below)."""
    policy_temperature: float | None = None
    simulator_temperature: float | None = None
    top_p: float = 1.0
    progress: bool = True
    """Show a progress bar over conversations."""
    max_live: int | None = None
    """At most this many conversations in flight (``None``: all). New ones start as others finish;
    this bounds memory and batch size, and makes finished conversations land in waves."""


@dataclass
class TurnEvent:
    """What a turn hook sees: enough to rebuild the exact training example of this turn."""

    spec: ConversationSpec
    side: Side
    turn_index: int
    prompt: TurnPrompt
    request: GenerationRequest
    completion: Completion
    text: str


@dataclass(eq=False)
class _Live:
    spec: ConversationSpec
    episode: Episode
    rng: random.Random
    started: float = field(default_factory=time.perf_counter)
    infra_error: str | None = None


def make_specs(
    tasks: Sequence[Task], policies: Sequence[str], simulators: Sequence[str], rollouts: int, seed: int
) -> list[ConversationSpec]:
    """All (policy, simulator, task, rollout) conversations of a run with deterministic seeds.

    The seed depends on the task and rollout only, so every cell of a cross-play matrix faces the
    same task/rollout randomness (common random numbers make cell differences less noisy).
    """
    if rollouts < 1:
        raise ConfigError(f"--rollouts must be >= 1, got {rollouts}")
    specs = []
    for p in policies:
        for s in simulators:
            for t in tasks:
                for g in range(rollouts):
                    conv_seed = derive_seed(seed, hash_str(f"{t.task_id}|{g}"))
                    specs.append(ConversationSpec(task=t, rollout=g, policy=p, simulator=s, seed=conv_seed))
    return specs


def hash_str(s: str) -> int:
    import hashlib

    return int.from_bytes(hashlib.blake2b(s.encode(), digest_size=6).digest(), "little")


async def run_conversations(
    arena: Arena,
    specs: Sequence[ConversationSpec],
    participants: dict[str, Participant],
    *,
    config: EngineConfig | None = None,
    run_dir: RunDir | None = None,
    on_turn: Callable[[TurnEvent], None] | None = None,
    retry_infra_failures: bool = False,
) -> list[dict[str, Any]]:
    """Run conversations to completion, batched per model, and return their records.

    Args:
        arena: the benchmark.
        specs: conversations to run (see :func:`make_specs`).
        participants: label -> participant, for every policy and simulator label in ``specs``.
        config: sampling settings.
        run_dir: append each finished conversation to ``run_dir/conversations.jsonl``; records
            already there are not run again (resume).
        on_turn: called after every turn (training collects its examples here).
        retry_infra_failures: on resume, run again conversations recorded as infra failures.

    Returns:
        One record per spec (including those loaded from a previous run), in spec order.
    """
    config = config or EngineConfig()
    for s in specs:
        for label in (s.policy, s.simulator):
            if label not in participants:
                raise ConfigError(f"no participant for {label!r}")
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ConfigError("duplicate conversations in the run (same policy, simulator, task and rollout)")

    done: dict[str, dict[str, Any]] = {}
    if run_dir is not None:
        run_dir.repair(CONVERSATIONS)
        wanted = set(keys)
        for rec in run_dir.read_jsonl(CONVERSATIONS):
            if rec.get("key") in wanted:
                if retry_infra_failures and rec.get("status") == "infra_error":
                    continue
                done[rec["key"]] = rec
    todo = [s for s in specs if s.key not in done]

    bar = None
    if config.progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(specs), initial=len(specs) - len(todo), desc=f"{arena.name} conversations", unit="conv")

    if config.max_live is not None and config.max_live < 1:
        raise ConfigError(f"max_live must be >= 1, got {config.max_live}")
    queue = list(reversed(todo))
    live: list[_Live] = []

    def _refill() -> None:
        limit = config.max_live or len(queue) + len(live)
        while queue and len(live) < limit:
            s = queue.pop()
            live.append(_Live(s, arena.new_episode(s.task, s.seed), random.Random(s.seed)))

    _refill()
    try:
        while live:
            finished: list[_Live] = []
            groups: dict[int, list[tuple[_Live, Side, Participant, TurnPrompt, GenerationRequest]]] = {}
            for conv in live:
                side = arena.next_side(conv.episode)
                if side is None:
                    conv.episode.done = True
                    finished.append(conv)
                    continue
                participant = participants[conv.spec.policy if side == "policy" else conv.spec.simulator]
                prompt = participant.transform_prompt(arena.prompt_for(conv.episode, side))
                request = _request(prompt, conv, side, config)
                groups.setdefault(id(participant.model), []).append((conv, side, participant, prompt, request))

            async def _run_group(items: list[tuple[_Live, Side, Participant, TurnPrompt, GenerationRequest]]) -> None:
                model = items[0][2].model
                err = "empty result"
                try:
                    results = await model.generate([it[4] for it in items])
                except ConfigError:
                    raise  # a model that cannot run as configured (an engine that cannot start) stops the run
                except Exception as exc:  # a backend that raises fails its requests, not the run
                    results = None
                    err = f"{type(exc).__name__}: {exc}"
                for i, (conv, side, participant, prompt, request) in enumerate(items):
                    res = results[i] if results is not None else None
                    if res is None or not res.ok or not res.completions:
                        conv.infra_error = (res.error if res is not None else err) or "empty result"
                        conv.episode.done = True
                        conv.episode.status = "infra_error"
                        continue
                    comp = res.completions[0]
                    text, info = participant.postprocess(comp, conv.rng)
                    turn_index = len(conv.episode.messages)
                    arena.apply(conv.episode, side, comp, text)
                    if info and len(conv.episode.messages) > turn_index:
                        conv.episode.messages[turn_index].setdefault("meta", {}).update(info)
                    if on_turn is not None:
                        on_turn(TurnEvent(conv.spec, side, turn_index, prompt, request, comp, text))

            await asyncio.gather(*(_run_group(items) for items in groups.values()))
            fin_ids = {id(c) for c in finished}
            finished.extend(c for c in live if c.episode.done and id(c) not in fin_ids)
            if finished:
                await _finish(arena, finished, run_dir, done, bar)
            fin_ids = {id(c) for c in finished}
            live = [c for c in live if id(c) not in fin_ids]
            _refill()
    finally:
        if bar is not None:
            bar.close()
    return [done[k] for k in keys if k in done]


def _request(prompt: TurnPrompt, conv: _Live, side: Side, config: EngineConfig) -> GenerationRequest:
    temp = config.policy_temperature if side == "policy" else config.simulator_temperature
    params = SamplingParams(
        temperature=config.temperature if temp is None else temp,
        top_p=config.top_p,
        max_tokens=prompt.max_tokens,
        stop=tuple(prompt.stop),
        seed=derive_seed(conv.spec.seed, len(conv.episode.messages)),
    )
    return GenerationRequest(
        messages=tuple(prompt.messages),
        prompt=prompt.prompt,
        params=params,
        tools=tuple(prompt.tools) if prompt.tools else None,
    )


async def _finish(
    arena: Arena, finished: list[_Live], run_dir: RunDir | None, done: dict[str, dict[str, Any]], bar: Any
) -> None:
    scorable = [c for c in finished if c.infra_error is None]
    scores = await arena.score([c.episode for c in scorable]) if scorable else []
    by_id = {id(c): s for c, s in zip(scorable, scores, strict=True)}
    for c in finished:
        ep, spec = c.episode, c.spec
        score = by_id.get(id(c))
        record: dict[str, Any] = {
            "key": spec.key,
            "task_id": spec.task.task_id,
            "rollout": spec.rollout,
            "policy": spec.policy,
            "simulator": spec.simulator,
            "seed": spec.seed,
            "messages": ep.messages,
            "reward": score.reward if score is not None else None,
            "success": score.success if score is not None else None,
            "status": ep.status,
            "infra_error": c.infra_error,
            "info": score.info if score is not None else {},
            "seconds": round(time.perf_counter() - c.started, 3),
        }
        done[spec.key] = record
        if run_dir is not None:
            run_dir.append_jsonl(CONVERSATIONS, record)
        if bar is not None:
            bar.update(1)


def run_conversations_sync(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """:func:`run_conversations` for callers without an event loop."""
    return asyncio.run(run_conversations(*args, **kwargs))
