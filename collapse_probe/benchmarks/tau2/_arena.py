"""The τ2 arena: a customer-service agent with tools (policy) against a user simulator.

Episode protocol (as in the reference orchestrator): the agent opens with a fixed greeting, the user
simulator speaks first; a policy turn is either a message to the customer or a tool call, which is
executed at once and recorded as a ``"tool"`` message, after which the agent goes again. Each hop
(agent turn, environment execution, user turn) is one *step*. The episode ends when the user writes
a stop signal (``user_stop``), or ``max_steps`` steps were taken (``max_steps``) or ``max_errors``
tool results were errors (``too_many_errors``, checked last so it overrides). The termination
reason is the episode's ``status``.

Tool calls arrive natively (``Completion.tool_calls`` from API backends and vLLM, answering the
OpenAI function schemas in ``TurnPrompt.tools``) or in the text protocol of
:mod:`collapse_probe.benchmarks.tau2._protocol` (local models reading ``TurnPrompt.prompt``).
Malformed calls (unparseable JSON, unknown tool, bad argument types) become tool errors the agent
sees and count toward ``max_errors``; they never raise.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Required, TypedDict

from collapse_probe.benchmarks._base import (
    ArenaToolCall,
    Episode,
    EpisodeMessage,
    Score,
    Side,
    Task,
    TurnPrompt,
    tool_call_arguments,
)
from collapse_probe.benchmarks.tau2._data import (
    DomainData,
    ReferenceMessage,
    Tau2Task,
    load_domain,
    normalize_domain,
    render_user_scenario,
)
from collapse_probe.benchmarks.tau2._evaluate import (
    STOP_REASONS,
    Environment,
    action_score,
    communicate_score,
    env_assertion_score,
    gold_environment,
    initial_environment,
    replay_tool_calls,
)
from collapse_probe.benchmarks.tau2._protocol import (
    PROTOCOL_TEXT,
    RESPOND,
    extract_json_object,
    format_action,
    parse_action,
)
from collapse_probe.core._constraints import Integer, check_value
from collapse_probe.errors import ConfigError
from collapse_probe.models import ChatModel, Completion, GenerationRequest, Message, SamplingParams

GREETING = "Hi! How can I help you today?"
STOP_SIGNALS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
INVALID_ACTION = "invalid_action"
"""Tool name recorded for a policy turn that could not be read as an action (a malformed call)."""

AGENT_INSTRUCTIONS = (
    "You are a customer-service agent. Help the customer while following the <policy> below exactly.\n"
    "Each of your turns is either one message to the customer or one tool call, never both.\n"
    "Use the tools to look up and change information; never make up information. Generate valid JSON only "
    "when calling a tool."
)

JUDGE_SYSTEM = (
    "You judge a customer-service conversation. For each expected outcome, decide from the transcript "
    "whether the agent's behaviour meets it. Answer with JSON only, in this form:\n"
    '{"results": [{"expectedOutcome": "<the outcome>", "reasoning": "<short reason>", "metExpectation": true}]}\n'
    "with one entry per expected outcome, in the given order."
)

_PROTOCOLS = ("auto", "native", "text")
_INFRA_REASONS = ("infra_error", "infrastructure_error", "agent_error", "user_error")


class Tau2Arena:
    """A τ2-bench domain (retail, airline, or the shipped retail-like demo) as an :class:`Arena`.

    Args:
        domain: ``"tau2-retail"``, ``"tau2-airline"`` or ``"tau2-demo"`` (bare names accepted).
        data_dir: the tau2 data folder (``--tau2-data``); ``None`` reads ``$COLLAPSE_PROBE_TAU2_DATA``
            (the demo domain falls back to the shipped ``collapse_probe/data/tau2-demo``).
        judge: model for NL_ASSERTION checks (a ChatModel or a model spec); without one those checks are
            skipped and ``Score.info`` says the reward is DB-only.
        max_steps: step limit (reference orchestrator default 100).
        max_errors: limit on tool results that are errors (reference default 10).
        compact: small-context prompts for local models: the policy cut to ``policy_chars``, one-line
            tool signatures, tool results cut to ``tool_result_chars``, transcript cut to
            ``history_chars``. ``False`` sends everything (API models).
        tool_protocol: ``"native"`` (messages + OpenAI tool schemas; text is always a message),
            ``"text"`` (the JSON text protocol in messages and transcript; no schemas) or ``"auto"``
            (schemas in ``tools``, text protocol in ``prompt``; native calls win, a text reply that
            contains a JSON object is read as a text-protocol action).
        policy_max_tokens: token budget of an agent turn (default 256 when ``compact``, else 1024).
        simulator_max_tokens: token budget of a user turn (default 128 when ``compact``, else 512).
        max_turns: optional cap on user-simulator turns (not in the reference; for cheap runs). Reaching
            it ends the episode with reason ``max_turns``, which scores 0 like ``max_steps``.
    """

    reward_range = (0.0, 1.0)
    """The reward is a product of per-basis scores in [0, 1] (see :func:`~collapse_probe.benchmarks.declared_reward_range`)."""

    def __init__(
        self,
        domain: str,
        data_dir: Any = None,
        judge: ChatModel | str | None = None,
        *,
        max_steps: int = 100,
        max_errors: int = 10,
        compact: bool = False,
        tool_protocol: str = "auto",
        policy_max_tokens: int | None = None,
        simulator_max_tokens: int | None = None,
        judge_max_tokens: int = 1024,
        policy_chars: int = 1500,
        tool_result_chars: int = 1200,
        history_chars: int = 5000,
        max_turns: int | None = None,
    ) -> None:
        self.domain = normalize_domain(domain)
        if policy_max_tokens is None:
            policy_max_tokens = 256 if compact else 1024
        if simulator_max_tokens is None:
            simulator_max_tokens = 128 if compact else 512
        self.name = f"tau2-{self.domain}"
        for opt, value in (("max_steps", max_steps), ("max_errors", max_errors), ("policy_max_tokens", policy_max_tokens),
                           ("simulator_max_tokens", simulator_max_tokens), ("judge_max_tokens", judge_max_tokens),
                           ("policy_chars", policy_chars), ("tool_result_chars", tool_result_chars), ("history_chars", history_chars)):  # fmt: skip
            check_value(value, f"tau2 option {opt}", [Integer(1)])
        if tool_protocol not in _PROTOCOLS:
            raise ConfigError(
                f"tau2 option tool_protocol: expected one of {', '.join(_PROTOCOLS)}, got {tool_protocol!r}"
            )
        if isinstance(judge, str):
            from collapse_probe.models import get_model

            judge = get_model(judge)
        self.judge = judge
        check_value(max_turns, "tau2 option max_turns", [Integer(1, optional=True)])
        self.max_turns = max_turns
        self.max_steps = max_steps
        self.max_errors = max_errors
        self.compact = bool(compact)
        self.tool_protocol = tool_protocol
        self.policy_max_tokens = policy_max_tokens
        self.simulator_max_tokens = simulator_max_tokens
        self.judge_max_tokens = judge_max_tokens
        self.policy_chars = policy_chars
        self.tool_result_chars = tool_result_chars
        self.history_chars = history_chars
        self.data: DomainData = load_domain(self.domain, data_dir)
        self._tasks = {t["id"]: t for t in self.data.tasks}
        self._live: dict[str, Environment] = {}
        self._gold: dict[str, Environment] = {}
        probe = Environment(self.data.kind, self.data.db)
        self.tool_specs = list(probe.tools.specs.values())

    # ---- tasks -------------------------------------------------------------------------------

    @property
    def splits(self) -> list[str]:
        return list(self.data.splits)

    def load_tasks(self, n: int | None = None, split: str | None = None, seed: int = 0) -> list[Task]:
        """Up to ``n`` tasks of ``split`` (``train``, ``test``, ``base`` = all; ``None`` = all) in a seeded order."""
        key = split or "base"
        if key not in self.data.splits:
            raise ConfigError(
                f"--split: {self.name} has no split {split!r}; available: {', '.join(self.data.splits)} "
                f"(from {self.data.path / 'split_tasks.json'})"
            )
        ids = list(self.data.splits[key])
        random.Random(seed).shuffle(ids)
        if n is not None:
            if n < 1:
                raise ConfigError(f"--tasks must be >= 1, got {n}")
            ids = ids[:n]
        return [Task(tid, {"domain": self.domain, "task": self._tasks[tid]}, split) for tid in ids]

    def task(self, task_id: str, split: str | None = None) -> Task:
        """The task with id ``task_id``."""
        return Task(str(task_id), {"domain": self.domain, "task": self.data.task(str(task_id))}, split)

    # ---- episodes ----------------------------------------------------------------------------

    def new_episode(self, task: Task, seed: int) -> Episode:
        raw = self._raw_task(task)
        key = f"{task.task_id}:{seed}:{uuid.uuid4().hex}"
        self._live[key] = initial_environment(self.data, raw)
        ep = Episode(task=task, seed=seed, state={"env_key": key, "steps": 0, "errors": 0, "calls": 0,
                                                  "termination_reason": None, "stop_signal": None, "malformed": 0})  # fmt: skip
        history = (raw.get("initial_state") or {}).get("message_history")
        if history:
            ep.messages.extend(_from_reference_messages(history))
        else:
            ep.messages.append({"role": "policy", "content": GREETING})
        return ep

    def _raw_task(self, task: Task) -> Tau2Task:
        raw: Tau2Task | None = task.data.get("task") if isinstance(task.data, dict) else None
        if not isinstance(raw, dict):
            raw = self._tasks.get(task.task_id)
        if raw is None:
            raise ConfigError(f"{self.name}: unknown task id {task.task_id!r}")
        return raw

    def _env(self, ep: Episode) -> Environment:
        key = ep.state.get("env_key") or f"{ep.task.task_id}:{ep.seed}:{uuid.uuid4().hex}"
        ep.state["env_key"] = key
        env = self._live.get(key)
        if env is None:  # a resumed episode: rebuild the live state from the record
            raw = self._raw_task(ep.task)
            env = initial_environment(self.data, raw, replay_history=False)
            replay_tool_calls(env, _reference_view(ep.messages))
            self._live[key] = env
        return env

    def next_side(self, episode: Episode) -> Side | None:
        if episode.done:
            return None
        if not episode.messages:
            return "policy"
        last = episode.messages[-1]
        if last["role"] == "policy" and last.get("tool_calls"):
            # A recorded history can end in a pending tool call: the environment answers it first.
            self._execute(episode, last["tool_calls"])
            if episode.done:
                return None
            return "policy"
        if last["role"] != "policy":
            return "policy"
        if self.max_turns is not None and episode.turns("simulator") >= self.max_turns:
            self._finish(episode, "max_turns")
            return None
        return "simulator"

    def apply(self, episode: Episode, side: Side, completion: Completion, text: str) -> None:
        st = episode.state
        st["steps"] += 1
        if side == "simulator":
            content = _clean_user_turn(text)
            episode.messages.append({"role": "simulator", "content": content})
            signal = next((s for s in STOP_SIGNALS if s in content), None)
            if signal is not None:
                st["stop_signal"] = signal
                self._finish(episode, "user_stop")
            self._check_limits(episode)
            return
        calls, message, raw = self._read_policy_turn(completion, text)
        if calls is None:
            episode.messages.append({"role": "policy", "content": message or ""})
            self._check_limits(episode)
            return
        record: EpisodeMessage = {"role": "policy", "content": message or "", "tool_calls": calls}
        if raw is not None:
            record["raw"] = raw
        episode.messages.append(record)
        st["steps"] += 1  # the environment's step
        self._execute(episode, calls)

    def _read_policy_turn(
        self, completion: Completion, text: str
    ) -> tuple[list[ArenaToolCall] | None, str | None, str | None]:
        """``(tool calls or None, message text, raw text of a text-protocol call)``."""
        native = completion.tool_calls if completion is not None else None
        if native:
            calls = []
            for c in native:
                name = c.get("name") if isinstance(c, Mapping) else None
                args: Any = c.get("arguments") if isinstance(c, Mapping) else None
                call: ArenaToolCall = {
                    "id": str(c.get("id") or "") if isinstance(c, Mapping) else "",
                    "name": name,
                    "arguments": args,
                }
                if isinstance(args, str):
                    try:
                        call["arguments"] = json.loads(args) if args.strip() else {}
                    except json.JSONDecodeError as exc:
                        call["arguments"] = {}
                        call["parse_error"] = f"arguments of {name} are not valid JSON ({exc.msg})"
                elif args is None:
                    call["arguments"] = {}
                calls.append(call)
            return calls, text, None
        if self.tool_protocol == "native":
            return None, (text or "").strip(), None
        action = parse_action(text or "")
        if action.error is None and action.name == RESPOND:
            return None, action.content, None
        if action.error is not None:
            name = action.name or INVALID_ACTION
            return [{"id": "", "name": name, "arguments": {}, "parse_error": action.error}], "", text
        return [{"id": "", "name": action.name, "arguments": action.arguments}], "", text

    def _execute(self, episode: Episode, calls: list[ArenaToolCall]) -> None:
        st = episode.state
        env = self._env(episode)
        for call in calls:
            if not call.get("id"):
                st["calls"] += 1
                call["id"] = f"call_{st['calls']}"
            if call.get("parse_error"):
                st["malformed"] += 1
                content, error = f"Error: {call['parse_error']}. {_protocol_hint(self.tool_protocol)}", True
            else:
                result = env.execute(call["name"], call["arguments"])
                content, error = result.content, result.error
            episode.messages.append(
                {
                    "role": "tool",
                    "content": content,
                    "tool_call_id": call["id"],
                    "name": call.get("name"),
                    "error": error,
                }
            )
            st["errors"] += int(error)
        self._check_limits(episode)

    def _check_limits(self, episode: Episode) -> None:
        st = episode.state
        if st["steps"] >= self.max_steps:
            self._finish(episode, "max_steps")
        if st["errors"] >= self.max_errors:
            self._finish(episode, "too_many_errors")

    def _finish(self, episode: Episode, reason: str) -> None:
        episode.done = True
        episode.status = reason
        episode.state["termination_reason"] = reason
        self._live.pop(episode.state.get("env_key", ""), None)

    # ---- prompts -----------------------------------------------------------------------------

    def policy_text(self) -> str:
        """The domain policy as handed to the agent (cut to ``policy_chars`` when ``compact``)."""
        policy = self.data.policy.strip()
        if self.compact and len(policy) > self.policy_chars:
            cut = policy[: self.policy_chars]
            cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
            policy = cut.rstrip() + "\n(policy shortened)"
        return policy

    def tools_text(self) -> str:
        """The tool list for the text protocol (one-line signatures when ``compact``)."""
        lines = []
        for spec in self.tool_specs:
            if self.compact:
                lines.append(f"- {spec.signature()}")
            else:
                args = ", ".join(f"{n}: {s.get('type', 'any')}" for n, s in spec.params)
                lines.append(f"- {spec.name}({args}): {spec.description}")
        return "\n".join(lines)

    def agent_system(self, text_protocol: bool) -> str:
        parts = [f"<instructions>\n{AGENT_INSTRUCTIONS}\n</instructions>", f"<policy>\n{self.policy_text()}\n</policy>"]
        if text_protocol:
            parts.append(f"<tools>\n{self.tools_text()}\n</tools>\n{PROTOCOL_TEXT}")
        return "\n".join(parts)

    def user_system(self, task: Task) -> str:
        scenario = render_user_scenario(self._raw_task(task)["user_scenario"])
        return f"{self.data.guidelines.strip()}\n\n<scenario>\n{scenario}\n</scenario>"

    def _tool_text(self, content: str) -> str:
        if self.compact and len(content) > self.tool_result_chars:
            return content[: self.tool_result_chars] + " ...(truncated)"
        return content

    def prompt_for(self, episode: Episode, side: Side) -> TurnPrompt:
        if side == "simulator":
            return self._user_prompt(episode)
        return self._agent_prompt(episode)

    def _agent_prompt(self, ep: Episode) -> TurnPrompt:
        text_messages = self.tool_protocol == "text"
        messages: list[Message] = [{"role": "system", "content": self.agent_system(text_protocol=text_messages)}]
        lines: list[str] = []
        for m in ep.messages:
            role = m["role"]
            if role == "simulator":
                messages.append(
                    {"role": "user", "content": f"Customer: {m['content']}" if text_messages else m["content"]}
                )
                lines.append(f"Customer: {m['content']}")
            elif role == "tool":
                body = self._tool_text(m["content"])
                if text_messages:
                    messages.append({"role": "user", "content": f"Tool result: {body}"})
                else:
                    messages.append(
                        {"role": "tool", "tool_call_id": m["tool_call_id"], "name": m.get("name"), "content": body}
                    )
                lines.append(f"Tool result: {body}")
            elif m.get("tool_calls"):
                acts = [m["raw"].strip()] if m.get("raw") is not None else [
                    format_action(c.get("name") or INVALID_ACTION, tool_call_arguments(c))
                    for c in m["tool_calls"]
                ]  # fmt: skip
                if text_messages:
                    messages.append({"role": "assistant", "content": "\n".join(acts)})
                else:
                    messages.append(
                        {
                            "role": "assistant",
                            "content": m.get("content") or None,
                            "tool_calls": [
                                {
                                    "id": c["id"],
                                    "type": "function",
                                    "function": {
                                        "name": str(c.get("name")),
                                        "arguments": json.dumps(c.get("arguments") or {}),
                                    },
                                }
                                for c in m["tool_calls"]
                            ],
                        }
                    )
                lines.extend(f"Agent: {a}" for a in acts)
            else:
                content = format_action(RESPOND, content=m["content"]) if text_messages else m["content"]
                messages.append({"role": "assistant", "content": content})
                lines.append(f"Agent: {format_action(RESPOND, content=m['content'])}")
        header = self.agent_system(text_protocol=True)
        prompt = header + "\n\nConversation:\n" + self._cut_history(lines) + "\nAgent:"
        tools = None if text_messages else [s.openai_schema() for s in self.tool_specs]
        return TurnPrompt(
            messages=messages,
            prompt=prompt,
            stop=("\nCustomer:", "\nTool result:", "\nAgent:"),
            max_tokens=self.policy_max_tokens,
            tools=tools,
        )

    def _user_prompt(self, ep: Episode) -> TurnPrompt:
        system = self.user_system(ep.task)
        messages: list[Message] = [{"role": "system", "content": system}]
        lines = []
        for m in ep.messages:
            if m["role"] == "policy" and not m.get("tool_calls"):
                messages.append({"role": "user", "content": m["content"]})
                lines.append(f"Agent: {m['content']}")
            elif m["role"] == "simulator":
                messages.append({"role": "assistant", "content": m["content"]})
                lines.append(f"Customer: {m['content']}")
        prompt = system + "\n\nConversation:\n" + self._cut_history(lines) + "\nCustomer:"
        return TurnPrompt(
            messages=messages, prompt=prompt, stop=("\nAgent:", "\nCustomer:"), max_tokens=self.simulator_max_tokens
        )

    def _cut_history(self, lines: list[str]) -> str:
        if not self.compact:
            return "\n".join(lines)
        kept: list[str] = []
        size = 0
        for line in reversed(lines):
            if kept and size + len(line) + 1 > self.history_chars:
                kept.append("(earlier conversation omitted)")
                break
            kept.append(line)
            size += len(line) + 1
        return "\n".join(reversed(kept))

    # ---- audit hooks (see collapse_probe.benchmarks._base.AuditHooks) -------------------------

    reward_view_note: str = (
        "classes: what the reward can see in a user turn — ending it (stop / transfer / out of scope), confirming or "
        "declining an action the agent asked about, and which values of the task's gold actions it states (ids, "
        "names, zip); states: every user turn"
    )
    """What the audit's reward view measures on τ2 (see :meth:`reward_class`)."""

    def reward_class(self, episode: Episode, text: str) -> str:
        """What the τ2 reward can see of one user turn, as a class (every user turn is read).

        The reward compares the final database with the gold actions' (plus communicated info and NL
        assertions about the *agent*), and scores 0 unless the episode ends by a stop. A user turn
        reaches it in three ways, and two replies share a class when they agree on all three:

        - whether it ends the episode: ``###STOP###`` (the reward is computed now), ``###TRANSFER###``,
          ``###OUT-OF-SCOPE###``, or the conversation continues;
        - after an agent message that asks for confirmation ("shall I proceed", "please confirm"), whether
          it confirms (the write action happens) or declines (it does not);
        - which argument values of the task's gold actions it states (order ids, user names, zip codes,
          item ids, emails): what the agent needs to make the writes the database is compared on.

        Wording, politeness and any information the gold actions do not take are not read, so this view
        can call two replies the same that steer the agent differently in ways no value records; the
        meaning view sees those.
        """
        t = " ".join((text or "").split())
        signal = next((s for s in STOP_SIGNALS if s in t), None)
        parts = [_ENDINGS[signal] if signal else "continues"]
        asked = next((m for m in reversed(episode.messages) if m["role"] == "policy" and not m.get("tool_calls")), None)
        if asked is not None and _ASKS_CONFIRMATION.search(asked.get("content") or ""):
            low = t.casefold()
            parts.append("confirms" if _CONFIRMS.search(low) else "declines" if _DECLINES.search(low) else "neither")
        values = sorted(v for v in self._gold_values(episode.task) if _mentions(t, v))
        parts.append("states " + ", ".join(values) if values else "states no gold value")
        return "; ".join(parts)

    def _gold_values(self, task: Task) -> set[str]:
        """The string and number arguments of the task's gold actions (3+ characters: ids, names, zips)."""
        out: set[str] = set()
        for action in (self._raw_task(task).get("evaluation_criteria") or {}).get("actions") or []:
            stack = list((action.get("arguments") or {}).values())
            while stack:
                v = stack.pop()
                if isinstance(v, (list, tuple)):
                    stack.extend(v)
                elif isinstance(v, dict):
                    stack.extend(v.values())
                elif isinstance(v, (str, int, float)) and not isinstance(v, bool) and len(str(v).strip()) >= 3:
                    out.add(str(v).strip())
        return out

    # ---- reward ------------------------------------------------------------------------------

    def gold_env(self, task_id: str) -> Environment:
        """The environment after the task's gold actions (cached per task)."""
        if task_id not in self._gold:
            self._gold[task_id] = gold_environment(self.data, self._tasks[task_id])[0]
        return self._gold[task_id]

    async def score(self, episodes: Sequence[Episode]) -> list[Score]:
        """Score finished episodes; NL assertions of all episodes go to the judge in one batch."""
        scores: list[Score] = []
        pending: list[tuple[Score, Tau2ScoreInfo, list[str], GenerationRequest]] = []
        for ep in episodes:
            score, info, judge_request = self._score_one(ep)
            if judge_request is not None:
                pending.append((score, info, judge_request[0], judge_request[1]))
            scores.append(score)
        if pending:
            assert self.judge is not None
            results = await self.judge.generate([r for _, _, _, r in pending])
            for (score, info, assertions, _), result in zip(pending, results, strict=False):
                self._apply_judgement(score, info, assertions, result)
        return scores

    def _score_one(self, ep: Episode) -> tuple[Score, Tau2ScoreInfo, tuple[list[str], GenerationRequest] | None]:
        """The episode's score, its info (the same dict) and the judge request of its NL assertions, if any."""
        raw = self._raw_task(ep.task)
        ec = raw.get("evaluation_criteria")
        reason = ep.state.get("termination_reason") or ep.status
        info: Tau2ScoreInfo = {
            "termination_reason": reason,
            "steps": ep.state.get("steps"),
            "tool_errors": ep.state.get("errors"),
            "malformed_calls": ep.state.get("malformed"),
        }
        if reason in _INFRA_REASONS:
            info["infra_error"] = True
            return Score(None, None, info), info, None
        if not ep.done:
            info["error"] = "episode not finished"
            return Score(None, None, info), info, None
        if ec is None:
            return Score(1.0, True, info), info, None
        basis = list(ec.get("reward_basis") or ["DB", "COMMUNICATE"])
        info["reward_basis"] = basis
        if reason not in STOP_REASONS:
            info["components"] = {}
            return Score(0.0, False, info), info, None
        comps: dict[str, float] = {}
        if ec.get("actions") is None and ec.get("env_assertions") is None:
            comps["DB"] = 1.0
            comps["ENV_ASSERTION"] = 1.0
        else:
            predicted = initial_environment(self.data, raw, replay_history=False)
            info["replay_mismatches"] = replay_tool_calls(predicted, _reference_view(ep.messages))
            comps["DB"] = 1.0 if predicted.db.same_state(self.gold_env(ep.task.task_id).db) else 0.0
            comps["ENV_ASSERTION"] = env_assertion_score(predicted, ec.get("env_assertions"))
        agent_texts = [m["content"] for m in ep.messages if m["role"] == "policy" and not m.get("tool_calls")]
        comps["COMMUNICATE"] = communicate_score(ec.get("communicate_info"), agent_texts)
        calls = [c for m in ep.messages if m["role"] == "policy" for c in m.get("tool_calls") or []]
        comps["ACTION"] = action_score(ec.get("actions"), calls)
        info["components"] = comps
        request = None
        assertions = list(ec.get("nl_assertions") or [])
        if not assertions:
            comps["NL_ASSERTION"] = 1.0
        elif self.judge is not None:
            request = (assertions, self._judge_request(ep, assertions))
        elif "NL_ASSERTION" in basis:
            info["nl_judged"] = False
            info["note"] = "NL_ASSERTION not judged (no judge model): the reward is DB-only"
        reward = 1.0
        for b in basis:
            if b in comps:
                reward *= comps[b]
        score = Score(reward, abs(reward - 1.0) <= 1e-6, info)
        return score, info, request

    def _judge_request(self, ep: Episode, assertions: list[str]) -> GenerationRequest:
        transcript = []
        for m in ep.messages:
            if m["role"] == "simulator":
                transcript.append(f"user: {m['content']}")
            elif m["role"] == "tool":
                transcript.append(f"tool: {m['content']}")
            elif m.get("tool_calls"):
                for c in m["tool_calls"]:
                    transcript.append(f"assistant: [tool call] {c.get('name')}({json.dumps(c.get('arguments'))})")
            else:
                transcript.append(f"assistant: {m['content']}")
        outcomes = "\n".join(f"- {a}" for a in assertions)
        user = f"<transcript>\n{chr(10).join(transcript)}\n</transcript>\n<expected_outcomes>\n{outcomes}\n</expected_outcomes>"
        return GenerationRequest(
            messages=({"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}),
            params=SamplingParams(temperature=0.0, max_tokens=self.judge_max_tokens, seed=0),
        )

    @staticmethod
    def _apply_judgement(score: Score, info: Tau2ScoreInfo, assertions: list[str], result: Any) -> None:
        """Fold the judge's verdicts on the NL assertions into ``score`` and its ``info``."""
        if not result.ok or not result.completions:
            info["infra_error"] = True
            info["judge_error"] = result.error or "no completion"
            score.reward, score.success = None, None
            return
        verdicts = _parse_judgement(result.completions[0].text, len(assertions))
        if verdicts is None:
            info["judge_error"] = "unparseable judgement"
            info["judge_output"] = result.completions[0].text[:500]
            score.reward, score.success = None, None
            return
        nl = 1.0 if all(verdicts) else 0.0
        info["components"]["NL_ASSERTION"] = nl
        info["nl_verdicts"] = verdicts
        info["nl_judged"] = True
        if "NL_ASSERTION" in info["reward_basis"] and score.reward is not None:
            score.reward *= nl
            score.success = abs(score.reward - 1.0) <= 1e-6


class Tau2ScoreInfo(TypedDict, total=False):
    """:attr:`Score.info` of a τ2 episode, in the order its keys are written."""

    termination_reason: Required[str]
    steps: Required[int | None]
    tool_errors: Required[int | None]
    malformed_calls: Required[int | None]
    infra_error: bool
    """An infrastructure failure (not scored; retried on resume)."""
    error: str
    reward_basis: list[str]
    """The components whose product is the reward."""
    replay_mismatches: int
    """Write calls whose replayed output differed from the recorded one."""
    components: dict[str, float]
    """Component -> score: ``DB``, ``ENV_ASSERTION``, ``COMMUNICATE``, ``ACTION``, ``NL_ASSERTION``."""
    nl_judged: bool
    note: str
    judge_error: str
    judge_output: str
    nl_verdicts: list[bool]


def _parse_judgement(text: str, n: int) -> list[bool] | None:
    obj = extract_json_object(text or "")
    results = obj.get("results") if isinstance(obj, dict) else None
    if not isinstance(results, list) or len(results) != n:
        return None
    out = []
    for r in results:
        v = r.get("metExpectation") if isinstance(r, dict) else None
        if isinstance(v, str) and v.strip().lower() in ("true", "false"):
            v = v.strip().lower() == "true"
        if not isinstance(v, bool):
            return None
        out.append(v)
    return out


def _protocol_hint(protocol: str) -> str:
    if protocol == "native":
        return "Call a tool with a JSON object of arguments."
    return (
        'Reply with one JSON object: {"name": "<tool>", "arguments": {...}} or {"name": "respond", "content": "..."}.'
    )


_ENDINGS = {"###STOP###": "stops", "###TRANSFER###": "asks for transfer", "###OUT-OF-SCOPE###": "out of scope"}
_ASKS_CONFIRMATION = re.compile(
    r"\b(confirm|proceed|go ahead|would you like me to|shall i|should i|do you want me to|is that (?:correct|right)|"
    r"is this (?:correct|right)|yes or no|\(yes\))",
    re.IGNORECASE,
)
_CONFIRMS = re.compile(
    r"^\W*(yes|yeah|yep|yup|sure|correct|confirm(?:ed)?|i confirm|please do|please proceed|go ahead|proceed|"
    r"that'?s (?:right|correct)|ok(?:ay)?|absolutely|definitely|do it)\b"
)
_DECLINES = re.compile(r"^\W*(no|nope|don'?t|do not|cancel that|wait|hold on|not yet|stop|never mind)\b")


def _mentions(text: str, value: str) -> bool:
    """``value`` occurs in ``text`` as a whole token sequence, case-insensitively (``#W1000001``, ``94110``, ``Ada``)."""
    bare = value.lstrip("#")  # an order id is written with or without its "#"
    return re.search(r"(?<![\w#])#?" + re.escape(bare) + r"(?!\w)", text, re.IGNORECASE) is not None


def _clean_user_turn(text: str) -> str:
    t = (text or "").strip()
    if t.startswith("Customer:"):
        t = t[len("Customer:") :].strip()
    return t


def _reference_view(messages: Sequence[EpisodeMessage]) -> list[ReferenceMessage]:
    """Episode records in the reference's roles, for replay (tool calls keep name/arguments/id)."""
    out: list[ReferenceMessage] = []
    for m in messages:
        if m["role"] == "tool":
            out.append({"role": "tool", "id": m.get("tool_call_id"), "content": m["content"]})
        elif m["role"] == "policy":
            calls = [c for c in m.get("tool_calls") or [] if not c.get("parse_error")]
            out.append({"role": "assistant", "content": m.get("content"), "tool_calls": calls or None})
        else:
            out.append({"role": "user", "content": m["content"]})
    return out


def _from_reference_messages(history: Sequence[ReferenceMessage]) -> list[EpisodeMessage]:
    """A task's ``message_history`` (reference roles) as episode records."""
    out: list[EpisodeMessage] = []
    for m in history:
        role = m.get("role")
        if role == "tool":
            out.append({"role": "tool", "content": str(m.get("content", "")), "tool_call_id": m.get("id"), "name": None,
                        "error": bool(m.get("error"))})  # fmt: skip
        elif role == "assistant":
            rec: EpisodeMessage = {"role": "policy", "content": m.get("content") or ""}
            calls = m.get("tool_calls")
            if calls:
                rec["tool_calls"] = [
                    {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments") or {}} for c in calls
                ]
            out.append(rec)
        elif role == "user":
            out.append({"role": "simulator", "content": m.get("content") or ""})
    return out


def make_arena(domain: str, data_dir: Any = None, judge: ChatModel | str | None = None, **options: Any) -> Tau2Arena:
    """Build the τ2 arena for ``domain`` (``"tau2-retail"``, ``"tau2-airline"``, ``"tau2-demo"``).

    Args:
        domain: the benchmark name.
        data_dir: tau2 data folder (``--tau2-data``); ``None`` reads ``$COLLAPSE_PROBE_TAU2_DATA``.
        judge: optional NL-assertion judge (ChatModel or model spec).
        **options: :class:`Tau2Arena` keyword options (``max_steps``, ``max_errors``, ``compact``,
            ``tool_protocol``, ``max_turns``, ``policy_max_tokens``, ``simulator_max_tokens``, ...).

    Raises:
        ConfigError: unknown domain or option, or data that cannot be found or read.
    """
    known = {
        "max_steps", "max_turns", "max_errors", "compact", "tool_protocol", "policy_max_tokens", "simulator_max_tokens",
        "judge_max_tokens", "policy_chars", "tool_result_chars", "history_chars",
    }  # fmt: skip
    opts = dict(options)
    if opts.get("data_dir") is not None and data_dir is None:
        data_dir = opts.pop("data_dir")
    opts.pop("data_dir", None)
    unknown = sorted(set(opts) - known)
    if unknown:
        raise ConfigError(f"{domain}: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return Tau2Arena(domain, data_dir, judge, **opts)
