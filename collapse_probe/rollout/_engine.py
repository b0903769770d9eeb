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
import copy
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from collapse_probe.benchmarks._base import Arena, Episode, Side, Task, TurnPrompt
from collapse_probe.core._constraints import Config, Integer, Number
from collapse_probe.core._observe import note_infra_failure
from collapse_probe.core._records import INFRA_ERROR, ConversationRecord, conversation_problem
from collapse_probe.core.limits import MAX_LIVE
from collapse_probe.errors import CacheError, ConfigError, InfraError, RunAbortedError
from collapse_probe.models import Completion, GenerationRequest, SamplingParams, derive_seed
from collapse_probe.models._answers import is_blank
from collapse_probe.rollout._rundir import RunDir
from collapse_probe.simulators import Participant
from collapse_probe.simulators.verbalized import ChoiceRecord

CONVERSATIONS = "conversations.jsonl"

logger = logging.getLogger(__name__)


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


class EngineConfig(Config):
    """Sampling settings the engine applies to every turn."""

    temperature: Annotated[float, Number(ge=0)] = 1.0
    """Sampling temperature of both sides (override per side below)."""
    policy_temperature: Annotated[float | None, Number(ge=0, optional=True)] = None
    """Sampling temperature of the policy (``None``: ``temperature``)."""
    simulator_temperature: Annotated[float | None, Number(ge=0, optional=True)] = None
    """Sampling temperature of the simulator (``None``: ``temperature``)."""
    top_p: Annotated[float, Number(gt=0, le=1)] = 1.0
    """Nucleus-sampling mass of both sides."""
    progress: bool = True
    """Show a progress bar over conversations."""
    max_live: Annotated[int | None, Integer(1, optional=True, most=MAX_LIVE)] = None
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
    before: Episode | None = None
    """The conversation as it stood before this turn (simulator turns; for the monitor's reward view)."""


@dataclass(eq=False)
class _Live:
    spec: ConversationSpec
    episode: Episode
    rng: random.Random
    started: float = field(default_factory=time.perf_counter)
    infra_error: str | None = None
    turns: int = 0


_IN_PROCESS_BACKENDS = frozenset({"local", "hf", "vllm", "scripted"})
"""Backends whose seeded answer to a request is the same on every run (the model runs here)."""


def _served_remotely(spec: str) -> bool:
    """Whether a participant spec names a model served by a remote service (an API, an endpoint URL or a
    backend of a plugin), whose empty reply need not repeat; an alias such as ``smollm2`` runs here."""
    if "@" in spec or "://" in spec:
        return True
    body = spec.split(":", 1)[1] if spec.split(":", 1)[0] in ("direct", "vs", "persona") and ":" in spec else spec
    head = body.split(":", 1)[0].split("/", 1)[0] if (":" in body or "/" in body) else ""
    return bool(head) and head not in _IN_PROCESS_BACKENDS


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
    retry_infra_failures: bool = True,
) -> list[ConversationRecord]:
    """Run conversations to completion, batched per model, and return their records.

    Args:
        arena: the benchmark.
        specs: conversations to run (see :func:`make_specs`).
        participants: label -> participant, for every policy and simulator label in ``specs``.
        config: sampling settings.
        run_dir: append each finished conversation to ``run_dir/conversations.jsonl``; records
            already there are not run again (resume).
        on_turn: called after every turn (training collects its examples here).
        retry_infra_failures: on resume, run again conversations recorded as infra failures (the
            default; the new record is appended and the last record of a conversation wins).

    Returns:
        One record per spec (including those loaded from a previous run), in spec order.
    """
    config = config or EngineConfig()
    config.validate()
    keys = _check_specs(specs, participants)

    from collapse_probe.core._identity import participant_fingerprints

    fps = participant_fingerprints({label: participants[label] for s in specs for label in (s.policy, s.simulator)})
    done = _resume(run_dir, keys, fps, retry_infra_failures) if run_dir is not None else {}
    todo = [s for s in specs if s.key not in done]

    bar = None
    if config.progress and todo:
        bar = _TurnProgress(arena, len(specs), len(specs) - len(todo))
    turns = _Turns(arena, participants, config, bar, on_turn)

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
            finished, groups = turns.plan(live)
            await asyncio.gather(*(turns.run_group(items) for items in groups.values()))
            fin_ids = {id(c) for c in finished}
            finished.extend(c for c in live if c.episode.done and id(c) not in fin_ids)
            if finished:
                await _finish(arena, finished, run_dir, done, bar, fps)
            fin_ids = {id(c) for c in finished}
            live = [c for c in live if id(c) not in fin_ids]
            _refill()
    finally:
        if bar is not None:
            bar.close()
    return [done[k] for k in keys if k in done]


def _check_specs(specs: Sequence[ConversationSpec], participants: dict[str, Participant]) -> list[str]:
    """The conversations' keys, once every label has its participant and no conversation is given twice."""
    for s in specs:
        for label in (s.policy, s.simulator):
            if label not in participants:
                raise ConfigError(f"no participant for {label!r}")
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ConfigError("duplicate conversations in the run (same policy, simulator, task and rollout)")
    return keys


def _resume(
    run_dir: RunDir, keys: list[str], fps: dict[str, str], retry_infra_failures: bool
) -> dict[str, ConversationRecord]:
    """Conversation key -> its record already in ``run_dir`` that is not run again (resume).

    Raises:
        ConfigError: a participant's model changed since its conversations were recorded.
    """
    done: dict[str, ConversationRecord] = {}
    empties: dict[str, int] = {}
    """Conversation key -> its consecutive empty-reply failures recorded so far."""
    run_dir.repair(CONVERSATIONS)
    wanted = set(keys)
    for line in run_dir.read_jsonl(CONVERSATIONS, conversation_problem):
        rec = ConversationRecord.parse(line)
        key = rec.key
        if key not in wanted:
            continue
        empty = (
            rec.status == INFRA_ERROR
            and is_empty_reply_failure(rec.infra_error)
            and not any(_served_remotely(label) for label in (rec.policy, rec.simulator))
        )  # a remote service's empty reply may be a passing fault: it is always asked again
        empties[key] = empties.get(key, 0) + 1 if empty else 0
        _check_fingerprints(run_dir, rec, fps)
        if retry_infra_failures and rec.status == INFRA_ERROR and empties[key] < EMPTY_REPEATS:
            done.pop(key, None)
            continue
        done[key] = rec
    repeated = [k for k in keys if empties.get(k, 0) >= EMPTY_REPEATS and k in done and done[k].status == INFRA_ERROR]
    if repeated and retry_infra_failures:
        logger.warning(
            "%d conversation%s gave an empty reply on %d runs in a row with the same seeds (e.g. %s): not run again, "
            "since a seeded model answers the same request the same way; they stay unscored infrastructure "
            "failures. Another --seed, a larger --max-tokens or another model changes the request; --fresh starts over",
            len(repeated), "s" if len(repeated) != 1 else "", EMPTY_REPEATS, repeated[0],
        )  # fmt: skip
    return done


def _check_fingerprints(run_dir: RunDir, rec: ConversationRecord, fps: dict[str, str]) -> None:
    """Refuse a recorded conversation whose participants' models changed since it was run."""
    from collapse_probe.core._identity import fingerprint_changes

    old = rec.fingerprints
    if old is None:
        return
    now = {"policy": fps[rec.policy], "simulator": fps[rec.simulator]}
    was = {side: getattr(old, side) if side in old.model_fields_set else now[side] for side in now}
    changed = fingerprint_changes(
        {rec.policy: was["policy"], rec.simulator: was["simulator"]},
        {rec.policy: now["policy"], rec.simulator: now["simulator"]},
    )
    if changed:
        raise ConfigError(
            f"{run_dir.path / CONVERSATIONS}: model changed since these conversations were run: "
            f"{'; '.join(changed)}; use --fresh to start over or another --out"
        )


_Item = tuple[_Live, Side, Participant, TurnPrompt, GenerationRequest]
"""One turn to take: the conversation, the side that speaks, its participant, its prompt and request."""


@dataclass
class _Turns:
    """Takes the next turn of live conversations, one batched call per model."""

    arena: Arena
    participants: dict[str, Participant]
    config: EngineConfig
    bar: _TurnProgress | None
    on_turn: Callable[[TurnEvent], None] | None

    def plan(self, live: list[_Live]) -> tuple[list[_Live], dict[int, list[_Item]]]:
        """The conversations that are over, and the next turn of every other one grouped by model."""
        arena = self.arena
        finished: list[_Live] = []
        groups: dict[int, list[_Item]] = {}
        for conv in live:
            side = arena.next_side(conv.episode)
            if side is None:
                conv.episode.done = True
                finished.append(conv)
                continue
            participant = self.participants[conv.spec.policy if side == "policy" else conv.spec.simulator]
            prompt = participant.transform_prompt(arena.prompt_for(conv.episode, side))
            request = _request(prompt, conv, side, self.config)
            groups.setdefault(id(participant.model), []).append((conv, side, participant, prompt, request))
        return finished, groups

    async def run_group(self, items: list[_Item]) -> None:
        """Take the turns of one model's conversations (a blank reply is asked once more)."""
        blank = await self.answer(items, first_try=True)
        if blank:
            # A blank reply is no answer: the same request is asked once more (a server's blank is
            # transient, and the same seed then gives the answer a fault-free run gets; the cache
            # never stores a blank, so this reaches the model). Still blank: an infrastructure failure.
            for conv, side, participant, _prompt, _request in blank:
                if participant.fallback_of is not None:
                    logger.info("%s: no reply among the verbalized candidates (%s turn of %s: %s); asked "
                                "for a direct reply", participant.label, side, conv.spec.key,
                                participant.fallback_of.get("failure_reason"))  # fmt: skip
                else:
                    logger.info("%s: empty reply (%s turn of %s); retry 1/1", participant.label, side, conv.spec.key)
            await self.answer(blank, first_try=False)

    async def answer(self, items: list[_Item], first_try: bool) -> list[_Item]:
        """Apply each answer to its conversation; return the items whose reply was blank (on the
        first try; on the second a blank reply is an infrastructure failure)."""
        model = items[0][2].model
        err = "empty result"
        try:
            results = await model.generate([it[4] for it in items])
            if len(results) != len(items):
                raise InfraError(f"the backend returned {len(results)} results for {len(items)} requests")
        except (ConfigError, RunAbortedError):
            raise  # a model that cannot run as configured, or a lost cluster, stops the run
        except Exception as exc:  # a backend that raises fails its requests, not the run
            results = None
            err = f"{type(exc).__name__}: {exc}"
        blank: list[_Item] = []
        for i, item in enumerate(items):
            res = results[i] if results is not None else None
            if res is None or not res.ok or not res.completions or not _is_answer(res.completions[0]):
                if res is not None and res.ok and res.completions:
                    err = "the backend returned a null answer"
                _fail(item[0], (res.error if res is not None and not res.ok else err) or "empty result")
                continue
            self._apply(item, res.completions[0], first_try, blank)
        return blank

    def _apply(self, item: _Item, comp: Completion, first_try: bool, blank: list[_Item]) -> None:
        """Apply one answer to its conversation (a blank one on the first try: added to ``blank``)."""
        conv, side, participant, prompt, request = item
        text, info = participant.postprocess(comp, conv.rng)
        if is_blank(text, comp.tool_calls):
            self._blank(item, info.get("vs"), first_try, blank)
            return
        conv.turns += 1
        if self.bar is not None:
            self.bar.turn()
        turn_index = len(conv.episode.messages)
        before = copy.deepcopy(conv.episode) if self.on_turn is not None and side == "simulator" else None
        self.arena.apply(conv.episode, side, comp, text)
        if len(conv.episode.messages) > turn_index:
            msg = conv.episode.messages[turn_index]
            if info:
                msg.setdefault("meta", {}).update(info)
            if is_blank(msg.get("content"), msg.get("tool_calls") or comp.tool_calls):
                # what the arena records is empty (a reply that was only a speaker tag): no answer
                _fail(conv, f"{participant.label}: empty reply ({side} turn) once cleaned: {text[:80]!r}")
                return
        if self.on_turn is not None:
            self.on_turn(TurnEvent(conv.spec, side, turn_index, prompt, request, comp, text, before))

    def _blank(self, item: _Item, vs: ChoiceRecord | None, first_try: bool, blank: list[_Item]) -> None:
        """A blank reply: asked again on the first try (a direct reply after verbalized candidates
        without one: ``vs``, the turn's record), else an infrastructure failure."""
        conv, side, participant = item[0], item[1], item[2]
        if first_try and participant.mode == "verbalized" and vs:
            # the same request would give the same candidates (seeded): ask for a direct reply
            direct = participant.direct_fallback(vs)
            plain = self.arena.prompt_for(conv.episode, side)
            blank.append((conv, side, direct, plain, _request(plain, conv, side, self.config)))
        elif first_try:
            blank.append(item)
        elif participant.fallback_of is not None:
            _fail(conv, f"{participant.label}: {EMPTY_REPLY_FAILURE} ({side} turn): no reply among the "
                  f"verbalized candidates ({participant.fallback_of.get('failure_reason')}) and an "
                  "empty direct reply")  # fmt: skip
        else:
            _fail(conv, f"{participant.label}: empty reply ({side} turn), also when asked again")


EMPTY_REPLY_FAILURE = "empty reply"
"""What the infrastructure failure of a reply that was empty, also when asked again, starts its reason with
(after the model's label)."""
EMPTY_REPEATS = 2
"""A conversation whose reply was empty on this many runs in a row (the first run and a rerun, with the
same seeds) is not run again on resume: it would be empty again."""


def is_empty_reply_failure(error: Any) -> bool:
    """Whether a recorded infrastructure failure is an empty reply (also when asked again)."""
    return isinstance(error, str) and f": {EMPTY_REPLY_FAILURE} (" in error


def _fail(conv: _Live, error: str) -> None:
    """End a conversation as an infrastructure failure (never scored; run again on resume)."""
    conv.infra_error = error
    conv.episode.done = True
    conv.episode.status = "infra_error"


def _is_answer(comp: Any) -> bool:
    """A completion is an answer when it carries text (possibly empty) or tool calls, not ``None``."""
    return isinstance(getattr(comp, "text", None), str) or bool(getattr(comp, "tool_calls", None))


class _TurnProgress:
    """A progress bar counted in model turns, the unit of work, with an honest ETA.

    Conversations finish together at the end when all run at once, so a bar over conversations
    stalls and jumps. The total is estimated as turns done plus the remaining conversations times
    the mean turns of a finished conversation (before any finishes: the arena's turn cap).
    """

    def __init__(self, arena: Arena, n_convs: int, n_done: int) -> None:
        from tqdm.auto import tqdm

        cap = getattr(arena, "max_turns", None)
        self.guess = float(2 * cap + 1) if isinstance(cap, int) and cap > 0 else 10.0
        self.remaining = n_convs - n_done
        self.finished_turns: list[int] = []
        self.turns = 0
        self.bar = tqdm(
            total=int(self.remaining * self.guess), desc=f"{arena.name} turns", unit="turn", dynamic_ncols=True
        )
        self.bar.set_postfix_str(f"{n_done}/{n_convs} conversations")
        self.n_convs, self.n_done = n_convs, n_done

    def turn(self) -> None:
        self.turns += 1
        self.bar.update(1)

    def finished(self, n_turns: int) -> None:
        self.finished_turns.append(n_turns)
        self.remaining -= 1
        self.n_done += 1
        mean = sum(self.finished_turns) / len(self.finished_turns)
        self.bar.total = max(self.turns, int(sum(self.finished_turns) + self.remaining * mean))
        self.bar.set_postfix_str(f"{self.n_done}/{self.n_convs} conversations")
        self.bar.refresh()

    def update(self, n: int) -> None:  # kept for callers that count conversations
        self.finished(0)

    def close(self) -> None:
        self.bar.close()


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
    arena: Arena,
    finished: list[_Live],
    run_dir: RunDir | None,
    done: dict[str, ConversationRecord],
    bar: Any,
    fps: dict[str, str],
) -> None:
    scorable = [c for c in finished if c.infra_error is None]
    try:
        scores = await arena.score([c.episode for c in scorable]) if scorable else []
        if len(scores) != len(scorable):
            raise InfraError(f"the arena returned {len(scores)} scores for {len(scorable)} episodes")
    except (CacheError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a scorer (judge) that fails is an infra failure of those conversations
        for c in scorable:
            c.infra_error = f"scoring failed: {type(exc).__name__}: {exc}"
            c.episode.status = "infra_error"
        scorable, scores = [], []
    by_id = {id(c): s for c, s in zip(scorable, scores, strict=True)}
    for c in finished:
        ep, spec = c.episode, c.spec
        score = by_id.get(id(c))
        if score is not None and score.reward is None and (score.info or {}).get("judge_error"):
            # the judge could not judge: an infrastructure failure of this score, retried on resume
            c.infra_error = f"judge: {score.info['judge_error']}"
            ep.status = "infra_error"
        reward, info = (score.reward, score.info) if score is not None else (None, {})
        if reward is not None and (
            isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward)
        ):
            # a reward that is not a finite number is not a score: recorded as null, with the reason
            info = {
                **(info or {}),
                "reward_error": f"the arena's reward was {reward!r}, not a finite number; not scored",
            }
            reward = None
        record = ConversationRecord.model_validate({
            "key": spec.key,
            "task_id": spec.task.task_id,
            "rollout": spec.rollout,
            "policy": spec.policy,
            "simulator": spec.simulator,
            "seed": spec.seed,
            "messages": ep.messages,
            "reward": reward,
            "success": score.success if score is not None else None,
            "status": ep.status,
            "infra_error": c.infra_error,
            "fingerprints": {"policy": fps[spec.policy], "simulator": fps[spec.simulator]},
            "info": info,
            "seconds": round(time.perf_counter() - c.started, 3),
        })  # fmt: skip
        done[spec.key] = record
        if c.infra_error is not None:
            note_infra_failure(error=c.infra_error)
        if run_dir is not None:
            run_dir.append_jsonl(CONVERSATIONS, record.to_line_dict())
        if bar is not None:
            bar.finished(c.turns)


def run_conversations_sync(*args: Any, **kwargs: Any) -> list[ConversationRecord]:
    """:func:`run_conversations` for synchronous callers (inside a running event loop too)."""
    from collapse_probe.core._sync import run_sync

    return run_sync(run_conversations(*args, **kwargs))
