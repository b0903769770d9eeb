"""The scenarios arena: conversations between an agent (the policy) and a simulated user on scenarios
a user wrote in one file (see :mod:`._schema`).

A conversation starts with the scenario's ``opening`` (the agent's first message, fixed). Then the
simulated user and the policy alternate; one *round* (``max_turns``) is one user reply and, while
rounds remain, the policy's answer to it. When the rounds are over, a user who has stated no answer yet
is asked the scenario's ``closing`` question (without one, where the reward pattern matches a few whole
texts: "Before we finish: please state your answer as one of ..." listing them), and that reply ends
the conversation.
The reward reads the user's *last* stated answer (``reward.pattern`` and ``values``) or asks a judge
model ``reward.judge`` about the whole conversation.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from collapse_probe.benchmarks._base import Episode, EpisodeMessage, ProbeSpec, Score, Side, Task, TurnPrompt
from collapse_probe.benchmarks.scenarios._schema import Reward, Scenario
from collapse_probe.errors import ConfigError
from collapse_probe.models import Completion

DEFAULT_MAX_TURNS = 3
DEFAULT_MAX_TOKENS = 96
AGENT, USER = "Agent", "User"

USER_SYSTEM = (
    "You are the user in this conversation; the other side is an agent. Stay in your role and answer the "
    "agent in one to three sentences, as yourself, from what you are told below.\n\n"
)
"""What every simulated user is told before its scenario's instructions (the same text first in
every prompt, so a local backend prefills it once per batch)."""

AGENT_SYSTEM = "You are the agent in this conversation. Reply to the user in one or two sentences."
"""What the policy is told where a scenario gives no ``agent_instructions``."""

CLOSING_DEFAULT = "Before we finish: please state your answer as one of"
"""The closing question of a scenario that gives none, followed by the whole answers its pattern matches."""

JUDGE_SYSTEM = (
    "You judge a finished conversation between an agent and a user. Read it, then answer the question "
    "with YES or NO only."
)


def closing_question(scenario: Scenario) -> str | None:
    """The scenario's ``closing`` question; without one, where its reward pattern matches a few whole texts,
    a question asking for one of them (so the answer the reward reads is asked for, as the file states
    it); else ``None``.

    Example:
        >>> r = Reward(pattern=r"\\[TRIAGE (URGENT|ROUTINE)\\]", values={"URGENT": 1.0, "ROUTINE": 0.0})
        >>> closing_question(Scenario(id="a", instructions="x", opening="Hi", reward=r))
        'Before we finish: please state your answer as one of [TRIAGE ROUTINE], [TRIAGE URGENT].'
    """
    if scenario.closing:
        return scenario.closing
    texts = scenario.reward.answer_texts() if scenario.reward is not None else None
    return f"{CLOSING_DEFAULT} {', '.join(texts)}." if texts else None


def stated_answer(reward: Reward | None, text: str) -> str | None:
    """The answer ``text`` states under ``reward``'s pattern (its last match), or ``None``.

    Example:
        >>> r = Reward(pattern=r"\\[TRIAGE (URGENT|ROUTINE)\\]", values={"URGENT": 1.0, "ROUTINE": 0.0})
        >>> stated_answer(r, "OK. [TRIAGE ROUTINE] no wait, [TRIAGE URGENT]"), stated_answer(r, "Hello")
        ('URGENT', None)
    """
    if reward is None or reward.pattern is None:
        return None
    compiled = re.compile(reward.pattern)
    group = "answer" if "answer" in compiled.groupindex else 1
    last = None
    for m in compiled.finditer(text or ""):
        if m.group(group) is not None:
            last = m.group(group)
    return last


def answer_value(reward: Reward, answer: str) -> float:
    """The reward ``values`` give ``answer`` (matched without case where the pattern ignores case)."""
    values = reward.values or {}
    if answer in values:
        return values[answer]
    folded = {k.casefold(): v for k, v in values.items()}
    return folded.get(answer.casefold(), reward.default)


@dataclass
class ScenarioArena:
    """The arena of ``--benchmark scenarios``. Tasks are the file's scenarios, in a seeded order.

    Args:
        scenarios: the validated scenarios (:func:`~collapse_probe.benchmarks.scenarios.load_scenarios`).
        max_turns: rounds (user reply + policy answer) before the closing question.
        max_tokens: token budget of every turn, both sides.
        judge: the judge model of scenarios scored by ``reward.judge`` (a ChatModel).
        source: the file the scenarios came from (named in messages).
    """

    scenarios: list[Scenario]
    max_turns: int = DEFAULT_MAX_TURNS
    max_tokens: int = DEFAULT_MAX_TOKENS
    judge: Any = None
    source: str = "scenarios"
    name: str = "scenarios"
    fallback_partition: str = "exact"
    """Partition of an audit without the embedding extra: exact text (no benchmark label applies)."""
    by_id: dict[str, Scenario] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.scenarios:
            raise ConfigError(f"{self.source}: no scenarios")
        if self.max_turns < 1:
            raise ConfigError(f"--max-turns must be >= 1, got {self.max_turns}")
        self.by_id = {s.id: s for s in self.scenarios}
        if self.judge is None:
            needs = next((s for s in self.scenarios if s.reward is not None and s.reward.judge is not None), None)
            if needs is not None:
                raise ConfigError(
                    f"{self.source}: scenario {needs.id!r}: field reward.judge: scoring it needs a judge model; "
                    "give --judge SPEC (any model spec, e.g. scripted:FILE.json or openai-compatible/NAME@URL)"
                )
        bounds = [s.reward.bounds() for s in self.scenarios if s.reward is not None]
        low, high = (min(b[0] for b in bounds), max(b[1] for b in bounds)) if bounds else (0.0, 0.0)
        self.reward_range: tuple[float, float] | None = (low, high) if low < high else None
        """The lowest and highest reward any scenario pays (``None`` when they are equal or none is scored)."""

    # --- tasks
    def load_tasks(self, n: int | None = None, split: str | None = None, seed: int = 0) -> list[Task]:
        order = list(range(len(self.scenarios)))
        random.Random(seed).shuffle(order)
        if n is not None:
            if n < 1:
                raise ConfigError(f"--tasks must be >= 1, got {n}")
            if n > len(order):
                # the file is the task set: a command's default count (play's 4, the audit's 2) must not
                # refuse a file of one scenario
                logging.getLogger(__name__).warning(
                    "%d tasks asked for (--tasks, or the audit's --states): %s holds %d scenario(s); all are used",
                    n, self.source, len(order),
                )  # fmt: skip
            order = order[:n]
        return [Task(self.scenarios[i].id, {"scenario": self.scenarios[i].id}, split) for i in order]

    def scenario(self, task: Task) -> Scenario:
        """The scenario of ``task``."""
        try:
            return self.by_id[task.task_id]
        except KeyError:
            raise ConfigError(f"{self.source}: no scenario {task.task_id!r} (the file changed?)") from None

    def new_episode(self, task: Task, seed: int) -> Episode:
        opening: EpisodeMessage = {
            "role": "policy",
            "content": self.scenario(task).opening,
            "meta": {"given": "opening"},
        }
        return Episode(task=task, seed=seed, messages=[opening], state={"rounds": 0, "elicited": False})

    def episode_at(self, task: Task, messages: Sequence[EpisodeMessage]) -> Episode:
        """The audit hook ``episode_at``: the episode whose conversation so far is ``messages``, with the
        rounds answered and whether the closing question was asked rebuilt from them."""
        ep = Episode(task=task, seed=0, messages=[m.copy() for m in messages])
        ep.state["rounds"] = ep.turns("simulator")
        ep.state["elicited"] = any((m.get("meta") or {}).get("elicitation") for m in messages)
        return ep

    # --- turn taking
    def next_side(self, episode: Episode) -> Side | None:
        if episode.done:
            return None
        if not episode.messages or episode.messages[-1]["role"] == "policy":
            return "simulator" if episode.messages else "policy"
        if episode.state["rounds"] < self.max_turns:
            return "policy"
        scenario = self.scenario(episode.task)
        closing = closing_question(scenario)
        if closing and not episode.state["elicited"] and self.last_answer(episode) is None:
            episode.state["elicited"] = True
            episode.messages.append({"role": "policy", "content": closing, "meta": {"elicitation": True}})
            return "simulator"
        episode.done = True
        stated = scenario.reward is None or scenario.reward.pattern is None or self.last_answer(episode) is not None
        episode.status = "done" if stated else "no_answer_stated"
        return None

    def apply(self, episode: Episode, side: Side, completion: Completion, text: str) -> None:
        episode.messages.append({"role": side, "content": _clean_turn(text)})
        if side == "simulator":
            episode.state["rounds"] += 1

    # --- prompts
    def prompt_for(self, episode: Episode, side: Side) -> TurnPrompt:
        scenario = self.scenario(episode.task)
        if side == "simulator":
            system = USER_SYSTEM + scenario.instructions.strip()
        else:
            system = (scenario.agent_instructions or AGENT_SYSTEM).strip()
        opener = "(The user has joined. Start the conversation.)"
        return TurnPrompt.chat(system, episode, side, (AGENT, USER), opener, self.max_tokens)

    # --- reward
    def last_answer(self, episode: Episode) -> str | None:
        """The user's last stated answer under its scenario's pattern, or ``None``."""
        reward = self.scenario(episode.task).reward
        for m in reversed(episode.messages):
            if m["role"] == "simulator":
                answer = stated_answer(reward, m["content"])
                if answer is not None:
                    return answer
        return None

    async def score(self, episodes: Sequence[Episode]) -> list[Score]:
        out: list[Score | None] = [None] * len(episodes)
        judged: list[int] = []
        for i, ep in enumerate(episodes):
            reward = self.scenario(ep.task).reward
            if reward is None:
                out[i] = Score(reward=None, info={"unscored": "the scenario declares no reward"})
            elif reward.judge is not None:
                judged.append(i)
            else:
                answer = self.last_answer(ep)
                value = reward.default if answer is None else answer_value(reward, answer)
                out[i] = Score(reward=value, success=value >= reward.bounds()[1],
                               info={"answer": answer, "answer_stated": answer is not None})  # fmt: skip
        if judged:
            for i, score in zip(judged, await self._judge([episodes[i] for i in judged]), strict=True):
                out[i] = score
        return [s for s in out if s is not None]

    async def _judge(self, episodes: Sequence[Episode]) -> list[Score]:
        from collapse_probe.models import GenerationRequest, SamplingParams

        requests = []
        for ep in episodes:
            reward = self.scenario(ep.task).reward
            assert reward is not None and reward.judge is not None
            transcript = "\n".join(f"{AGENT if m['role'] == 'policy' else USER}: {m['content']}" for m in ep.messages)
            question = f"Conversation:\n{transcript}\n\nQuestion: {reward.judge.strip()}\nAnswer YES or NO."
            requests.append(GenerationRequest(
                messages=({"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": question}),
                n=1, params=SamplingParams(temperature=0.0, max_tokens=8, seed=0),
            ))  # fmt: skip
        results = await self.judge.generate(requests)
        scores = []
        for res in results:
            text = res.completions[0].text if res.completions else ""
            verdict = _yes_no(text)
            if verdict is None:
                scores.append(Score(reward=None, info={"judge_reply": text[:200], "unjudged": "neither YES nor NO"}))
            else:
                scores.append(Score(reward=1.0 if verdict else 0.0, success=verdict, info={"judge": verdict}))
        return scores

    # --- audit hooks (see collapse_probe.benchmarks._base.AuditHooks)
    def probe_states(self, tasks: Sequence[Task], openings: Mapping[str, str] | None = None) -> list[ProbeSpec]:
        """Per scenario: the reply to its opening, the reply after its ``prefix`` (when it has one) and
        the answer to its ``closing`` question (when it has one: a state that asks for a decision)."""
        specs = []
        for task in tasks:
            scenario = self.scenario(task)
            first = self.new_episode(task, 0).messages
            specs.append(ProbeSpec(task, "opening", first))
            if scenario.prefix:
                later = first + [{"role": "simulator" if t.role == "user" else "policy", "content": t.content}
                                 for t in scenario.prefix]  # fmt: skip
                specs.append(ProbeSpec(task, "prefix", later))
            question = closing_question(scenario)
            if question:
                closing = first + [{"role": "policy", "content": question, "meta": {"elicitation": True}}]
                specs.append(ProbeSpec(task, "closing", closing, asks_decision=True))
        return specs

    reward_view_note: str = (
        "classes: the value the scenario's reward pattern gives the user's last stated answer (no answer: the "
        "reward's default); states: the closing question and the last round, where the reply fixes the reward "
        "(judge-scored scenarios are not in this view)"
    )
    """What the audit's reward view measures on scenarios (see :meth:`reward_class`)."""

    def reward_class(self, episode: Episode, text: str) -> str | None:
        """The reward this reply leads to, where the reply fixes it; ``None`` at earlier turns and in a
        scenario scored by a judge (which reads the whole conversation, not one reply).

        As in P4G the user's *last* stated answer counts, so the reply fixes the reward at the closing
        question (the conversation ends after it) and at the last round (an answer there ends it; without
        one an earlier answer still pays, and with none at all the closing question follows: the class
        ``"no answer stated yet"``). Two replies stating answers of equal value share a class.
        """
        reward = self.scenario(episode.task).reward
        if reward is None or reward.pattern is None:
            return None
        msgs = episode.messages
        asked = bool(msgs) and bool((msgs[-1].get("meta") or {}).get("elicitation"))
        rounds = episode.state.get("rounds", episode.turns("simulator"))
        last_round = bool(msgs) and msgs[-1]["role"] == "policy" and not asked and rounds + 1 >= self.max_turns
        if not (asked or last_round):
            return None
        answer = stated_answer(reward, text)
        if answer is None:
            answer = self.last_answer(episode)
        if answer is None and last_round and closing_question(self.scenario(episode.task)):
            return "no answer stated yet"
        value = reward.default if answer is None else answer_value(reward, answer)
        return f"reward {value:g}"

    def decision_label(self, text: str) -> str:
        """The answer a reply states under any of the file's patterns (``"no answer"`` without one)."""
        for reward in self._patterns():
            answer = stated_answer(reward, text)
            if answer is not None:
                return f"answer {answer}"
        return "no answer"

    def meaning_key(self, text: str) -> str | None:
        """What a reply decides: the answer it states under a reward pattern of the file (replies stating
        different answers never share a meaning class), ``None`` when it states none."""
        label = self.decision_label(text)
        return None if label == "no answer" else label

    @property
    def closed_answers(self) -> Any:
        """The audit hook ``closed_answers`` where the file has one: every scenario asked a closing question
        shares one reward pattern that matches a few whole texts, each with its :meth:`decision_label`
        class. The audit then counts how often sampled replies state one of them (a simulator that never
        does gives the reward view no signal: format, not collapse) and scores them exactly where the
        model can. ``None`` otherwise (the hook then does not apply)."""
        closing = [s for s in self.scenarios if closing_question(s)]
        patterns = {s.reward.pattern if s.reward is not None else None for s in closing}
        if len(patterns) != 1 or None in patterns:
            return None
        texts = closing[0].reward.answer_texts() if closing[0].reward is not None else None
        if not texts:
            return None
        pairs = [(t, self.decision_label(t)) for t in texts]
        return lambda: list(pairs)

    def _patterns(self) -> list[Reward]:
        seen: dict[str, Reward] = {}
        for s in self.scenarios:
            if s.reward is not None and s.reward.pattern is not None:
                seen.setdefault(s.reward.pattern, s.reward)
        return list(seen.values())


_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def _yes_no(text: str) -> bool | None:
    """A judge's verdict: its first standalone YES or NO (markdown and case ignored), ``None`` without one.

    Example:
        >>> _yes_no("**Yes.** The list was taken."), _yes_no("No, it was not"), _yes_no("unclear")
        (True, False, None)
    """
    m = _YES_NO.search(text or "")
    return None if m is None else m.group(1).lower() == "yes"


def _clean_turn(text: str) -> str:
    """One turn's text: stripped, without a leading speaker tag the model may repeat."""
    t = (text or "").strip()
    for tag in (f"{AGENT}:", f"{USER}:"):
        if t.startswith(tag):
            t = t[len(tag) :].strip()
    return t
