"""The arena protocol: what a benchmark gives the rollout engine.

An arena owns tasks, the environment and the reward. The engine owns models, batching, seeds and
the run directory. Per conversation the engine asks the arena whose turn it is
(:meth:`Arena.next_side`), asks for that side's view of the conversation (:meth:`Arena.prompt_for`),
samples it from that side's model, and hands the text back (:meth:`Arena.apply`). State lives in the
:class:`Episode`, passed explicitly, so every conversation can be replayed from its record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Required, TypedDict, runtime_checkable

from pydantic import JsonValue

from collapse_probe.models import Completion, Message

Side = Literal["policy", "simulator"]


class ArenaToolCall(TypedDict, total=False):
    """A tool call in an episode's record, as an arena reads it off the policy's turn."""

    id: str | None
    """The call's id (the tool message answering it carries it as ``tool_call_id``)."""
    name: str | None
    """The tool called (``None`` where a model gave none)."""
    arguments: object
    """The arguments as the model gave them (a JSON object where it was one)."""
    parse_error: str
    """Why the call could not be read (a malformed call: the tool message is this error)."""


def tool_call_arguments(call: ArenaToolCall) -> Mapping[str, object]:
    """A call's arguments where they are a JSON object, else none."""
    args = call.get("arguments")
    return args if isinstance(args, dict) else {}


EpisodeMessage = TypedDict(
    "EpisodeMessage",
    {
        "role": Required[str],
        "content": Required[str],
        "tool_calls": list[ArenaToolCall],
        "tool_call_id": str | None,
        "name": str | None,
        "error": bool,
        "raw": str,
        "agent": str,
        "protocol": str,
        "to": str,
        "from": str,
        "meta": dict[str, JsonValue],
    },
    total=False,
)
"""One record of :attr:`Episode.messages`: ``role`` (``policy``, ``simulator``, ``tool`` or an arena's
own, e.g. CooperBench's ``message``) and ``content``, plus the keys an arena adds: the policy's
``tool_calls`` (and the ``raw`` text of a text-protocol call), a tool message's ``tool_call_id``,
``name`` and ``error``, CooperBench's ``agent`` / ``protocol`` / ``to`` / ``from``, and ``meta``
(e.g. ``{"elicitation": true}`` on a message that asks for a decision; the engine adds the simulator
mode's information). Written into ``conversations.jsonl`` as it is."""


@dataclass
class Task:
    """One task of a benchmark (a donor persona, a customer-service scenario)."""

    task_id: str
    data: dict[str, Any]
    """The benchmark's own description of the task (P4G: ``{"persona": ...}``, τ2: ``{"domain", "task"}``),
    open to each benchmark and read by its arena (and by callers that know the benchmark)."""
    split: str | None = None


@dataclass
class TurnPrompt:
    """One side's view of the conversation at its turn.

    ``messages`` is the chat view (the speaking side is ``assistant``); ``prompt`` the same
    conversation as a plain transcript ending in the speaker's tag, used by local models that stay
    in role better with it. ``stop`` ends the turn; ``tools`` enables native tool calling.
    """

    messages: list[Message]
    prompt: str | None = None
    stop: tuple[str, ...] = ()
    max_tokens: int = 96
    tools: list[dict[str, object]] | None = None

    @classmethod
    def chat(
        cls, system: str, episode: Episode, side: Side, tags: tuple[str, str], opener: str, max_tokens: int
    ) -> TurnPrompt:
        """A two-party chat's turn: ``system``, then the conversation with the speaking side as
        ``assistant`` (the policy's first turn gets ``opener`` as the user's message), and the same as a
        transcript whose lines are tagged ``tags`` = (policy's tag, simulator's tag), ending in the speaker's."""
        policy_tag, sim_tag = tags
        messages: list[Message] = [{"role": "system", "content": system}]
        if side == "policy" and not episode.messages:
            messages.append({"role": "user", "content": opener})
        for m in episode.messages:
            messages.append({"role": "assistant" if m["role"] == side else "user", "content": m["content"]})
        lines = [system, ""]
        lines += [f"{policy_tag if m['role'] == 'policy' else sim_tag}: {m['content']}" for m in episode.messages]
        lines.append(f"{policy_tag if side == 'policy' else sim_tag}:")
        return cls(messages=messages, prompt="\n".join(lines), stop=("\n", f"{policy_tag}:", f"{sim_tag}:"),
                   max_tokens=max_tokens)  # fmt: skip


@dataclass
class Episode:
    """A conversation in progress. ``messages`` is the public record; ``state`` is arena-private."""

    task: Task
    seed: int
    messages: list[EpisodeMessage] = field(default_factory=list)
    """Records ``{"role": "policy"|"simulator"|"tool", "content": str, ...}`` in order."""
    state: dict[str, Any] = field(default_factory=dict)
    """The arena's own turn-taking state (P4G: rounds answered, whether the donation question was asked);
    only the arena reads it, and the audit copies it (shallowly) with the episode."""
    done: bool = False
    status: str = "running"
    """Why the episode ended: ``"done"``, ``"max_turns"``, ``"stop:<signal>"``, ``"infra_error"``..."""

    def turns(self, role: str) -> int:
        return sum(1 for m in self.messages if m["role"] == role)


@dataclass
class Score:
    """The outcome of one episode. ``reward`` is ``None`` when it could not be judged."""

    reward: float | None
    success: bool | None = None
    info: Mapping[str, object] = field(default_factory=dict)
    """The arena's account of the score (JSON: components, why it was not judged...), written into the
    conversation's record as ``info``; each arena declares its own keys (e.g. τ2's :class:`Tau2ScoreInfo`)."""


@runtime_checkable
class Arena(Protocol):
    """What a benchmark implements (see :mod:`collapse_probe.benchmarks.p4g` for an example)."""

    name: str

    def load_tasks(self, n: int | None = None, split: str | None = None, seed: int = 0) -> list[Task]:
        """Return up to ``n`` tasks (all when ``None``) of ``split``, in a seeded order."""
        ...

    def new_episode(self, task: Task, seed: int) -> Episode: ...

    def next_side(self, episode: Episode) -> Side | None:
        """Whose turn it is, or ``None`` when the episode is over (set ``done``/``status`` then)."""
        ...

    def prompt_for(self, episode: Episode, side: Side) -> TurnPrompt: ...

    def apply(self, episode: Episode, side: Side, completion: Completion, text: str) -> None:
        """Record ``side``'s turn. ``text`` is the turn's text after the simulator mode's
        post-processing (for Verbalized Sampling: the sampled candidate); ``completion`` the raw output."""
        ...

    async def score(self, episodes: Sequence[Episode]) -> list[Score]:
        """Score finished episodes (async and batched, so a judge model can be called once)."""
        ...


def declared_reward_range(arena: Any) -> tuple[float, float] | None:
    """The bounds ``(low, high)`` an arena declares for its reward (its optional ``reward_range``
    attribute), or ``None`` when it declares none.

    Reward intervals use them to stay inside the range and to keep their level when every task
    scored a bound (``collapse_probe.metrics.transfer``). An arena whose reward is bounded declares
    them as a class attribute, e.g. ``reward_range = (0.0, 1.0)``.

    Raises:
        ~collapse_probe.errors.ConfigError: the declared value is not two finite numbers with low < high.
    """
    from collapse_probe.core.limits import check_range

    declared = getattr(arena, "reward_range", None)
    return None if declared is None else check_range(declared, f"arena {getattr(arena, 'name', arena)!r}: reward_range")


@runtime_checkable
class AuditHooks(Protocol):
    """Optional arena hooks the audit uses; an arena implements any subset (each is looked up with
    ``getattr`` and has a neutral default, see :func:`audit_hook`).

    - ``probe_states(tasks, **options) -> list[ProbeSpec]``: the benchmark's own probe states (without a
      policy the audit samples these; default: none, so ``--policy`` is needed); ``options`` are the
      benchmark's own (P4G: ``openings``), passed through :func:`~collapse_probe.pipelines.audit.benchmark_probe_states`.
    - ``episode_at(task, messages) -> Episode``: the episode at a state whose conversation so far is
      ``messages`` (a probe state, or a prefix of a recorded rollout), with the arena's own episode
      state rebuilt from them (P4G: the rounds answered and whether the donation question was asked).
      Default: a new episode holding the messages.
    - ``reward_class(episode, text) -> Hashable | None``: the class of what the benchmark's *reward*
      pays for the simulator reply ``text`` at the state ``episode`` (the conversation before the
      reply): replies the reward pays the same share a class. ``None`` where the reward does not read
      the reply at this state; it should depend on the state only, so a state is in the audit's
      *reward view* for all of its replies or for none (replies that get ``None`` at a state where
      others get a class form one class, "not read by the reward"). The reward view's collapse error
      is the second half of the audit's verdict: wording that varies while the reward sees one
      outcome gives the policy no simulator-side reward variance to learn from (Lemma 3.3). Default:
      ``decision_label`` at states that ask for a decision.
    - ``reward_view_note: str``: one line saying what the reward view's classes are and at which
      states it applies (printed in the audit's table and report).
    - ``decision_label(text) -> str``: the decision a reply states in the benchmark's own labels (P4G:
      amount / refuse / undecided), reported as "decision-label ε" at states that ask for a decision
      (``summary.decision_collapse_error``); also the ``label`` partition. It may split what the
      reward pays the same (P4G pays refuse and undecided 0): the reward view uses ``reward_class``.
    - ``meaning_key(text) -> Hashable | None``: what a reply decides, as a constraint on the
      semantic (embedding) partition (see :class:`~collapse_probe.metrics.partitioners.EmbeddingPartitioner`).
    - ``closed_answers() -> list[tuple[str, str]]``: (choice text, class) pairs of a closed answer
      set that a model scoring choices gets an exact distribution over, at closed-set states.
    - ``fallback_partition``: the partition of the headline numbers when the embedding extra is missing
      (default ``exact``); the audit then gives no meaning verdict (the classes are not by meaning).
    - ``clean_reply(episode, text) -> str``: the reply as the arena would record it.
    - ``load_human_dialogues(directory) -> (dialogues, annotated)``: the benchmark's human dialogues
      (``audit --human DIR``) and those with annotated acts (``[]``: none); each has ``dialogue_id``
      and ``turns`` (``(role, text)`` pairs).
    - ``human_dialogue_usable(dialogue) -> bool``: whether a dialogue can give a human-grounded state
      (default: every dialogue of 2+ turns).
    - ``episode_from_dialogue(dialogue, n_turns) -> Episode``: the state after a dialogue's first
      ``n_turns`` turns (a human-grounded probe state; the next human reply is kept for comparison).
    """

    name: str


@dataclass
class ProbeSpec:
    """A probe state a benchmark offers: the messages before the simulator's reply and their kind."""

    task: Task
    kind: str
    """``"opening"``, ``"elicitation"`` (a decision is asked for) or a benchmark's own kind."""
    messages: list[EpisodeMessage]
    asks_decision: bool = False
    """The state asks the simulator for a decision: decision-label ε and the closed answer set apply."""
    index: int = 0
    """Position of the state among the task's states of this kind (e.g. a user turn index)."""


def audit_hook(arena: Any, name: str) -> Any:
    """The arena's audit hook ``name`` or ``None`` (see :class:`AuditHooks`)."""
    return getattr(arena, name, None)
