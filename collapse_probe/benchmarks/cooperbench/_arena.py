"""The CooperBench arena: two coding agents, one feature each, in their own copies of BASE.

Episode protocol (record of the changes from the reference, which runs both agents in threads in
Docker containers):

- ``agent1`` gets the pair's smaller feature id. By default the policy plays ``agent1`` and the
  simulator (the partner) ``agent2``; with ``directed=True`` every pair is also run with the roles
  swapped (task id suffix ``@agent2``), as SCOPE's two directed entries per pair.
- Agents act in deterministic rounds: ``agent1``, ``agent2``, ``agent1``, ... (one model call each);
  an agent that has finished is skipped and the other goes on until it finishes too. The reference
  lets both run at once, so timing differs; the order here is recorded in the episode.
- Each agent works in its own git clone of BASE. Tools: ``bash(command)`` (run in the sandbox of
  :mod:`._sandbox`, output as ``{"returncode", "output"}`` JSON, outputs of 10 000+ characters cut
  to head 5000 + tail 5000) and ``send_message(recipient, content)``; ``send_message <agent> <<'MSG'
  ... MSG`` (or with a quoted string) inside a bash command is cut out and sent as in the reference.
  Partner messages wait in an inbox and reach the agent before its next model call as a user turn
  ``[Message from agentX]: ...``. Messages to an agent that has finished are dropped.
- A reply without a tool call is a format error (shown to the agent) and counts as a step. Limits
  per agent: ``max_steps`` model calls (reference 100) and, optionally, ``max_agent_tokens``
  generated tokens (the reference's cost limit, as tokens).
- An agent submits with a bash command whose first output line is exactly
  ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` and exit code 0. Its patch (``git add -A; git diff
  BASE``) is collected whatever its status, and the pair is scored by
  :func:`~collapse_probe.benchmarks.cooperbench.evaluate_pair`.

Tool calls arrive natively (``Completion.tool_calls``: API backends and vLLM, answering the schemas
in ``TurnPrompt.tools``) or in the JSON text protocol of tau2 (``{"name": "bash", "arguments":
{"command": "..."}}``; a fenced ```` ```bash ```` block is also read as one bash call) for embedded
and scripted models. ``mode="solo"`` is the reference's baseline: one agent (the policy) gets both
features and its patch is tested without a merge.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Required, TypedDict

from collapse_probe.benchmarks._base import (
    ArenaToolCall,
    Episode,
    EpisodeMessage,
    ProbeSpec,
    Score,
    Side,
    Task,
    TurnPrompt,
    tool_call_arguments,
)
from collapse_probe.benchmarks.cooperbench._data import (
    PairRef,
    enumerate_pairs,
    resolve_data_dir,
    subset_names,
)
from collapse_probe.benchmarks.cooperbench._evaluate import (
    EvaluationError,
    base_repo,
    evaluate_pair,
    evaluate_solo,
    git,
)
from collapse_probe.benchmarks.cooperbench._sandbox import Limits, network_isolation, run_command
from collapse_probe.benchmarks.tau2._protocol import parse_action
from collapse_probe.core._constraints import Integer, check_value
from collapse_probe.errors import ConfigError
from collapse_probe.models import Completion, Message

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
AGENTS = ("agent1", "agent2")
_PROTOCOLS = ("auto", "native", "text")
_MODES = ("coop", "solo")

SYSTEM = (
    "You are a helpful assistant that can interact with a computer to solve software engineering tasks. "
    "You are a software engineer working alongside a colleague on the same repository."
)
SOLO_SYSTEM = "You are a helpful assistant that can interact with a computer to solve software engineering tasks."

COOP_INSTRUCTIONS = """\
You are {me}; your colleague is {partner}. You each implement a different feature of the same repository,
in separate copies of it. When you are both done, your changes are merged automatically with `git merge`;
you succeed only if the merge is clean and the tests of BOTH features pass on the merged code. Coordinate
with {partner} to avoid conflicting edits (say which files and lines you will touch).

Workflow: explore the code, make your change, check it, then submit.
- `bash`: run one shell command in your repository (fresh shell each time; the working directory is the
  repository root; no network).
- `send_message`: send a message to {partner} (it reaches them before their next step). Inside a bash
  command you may also write `send_message {partner} <<'MSG'` ... `MSG`.
- Your work is collected from your repository (every changed and new file) when you finish.
- Submit by running exactly `echo {submit}` as its own command once your change is complete. After that
  you cannot continue.
"""

SOLO_INSTRUCTIONS = """\
Implement both features below in the repository. Tests of both features must pass on your change.

Workflow: explore the code, make your change, check it, then submit.
- `bash`: run one shell command in your repository (fresh shell each time; the working directory is the
  repository root; no network).
- Your work is collected from your repository (every changed and new file) when you finish.
- Submit by running exactly `echo {submit}` as its own command once your change is complete.
"""

TEXT_PROTOCOL = (
    "Reply with exactly one JSON object and nothing else:\n"
    '{{"name": "bash", "arguments": {{"command": "<shell command>"}}}}\n'
    "{message_line}"
    "The result comes back before your next turn."
)

_SEND_HEREDOC = re.compile(
    r"send_message\s+(?P<to>[A-Za-z0-9_-]+)(?:\s+--wait)?\s+<<-?\s*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)[^\n]*\n"
    r"(?P<body>.*?)\n[ \t]*(?P=tag)[ \t]*(?:\n|$)",
    re.S,
)
_SEND_QUOTED = re.compile(
    r"send_message\s+(?P<to>[A-Za-z0-9_-]+)(?:\s+--wait)?\s+(?P<q>['\"])(?P<body>.*?)(?<!\\)(?P=q)[ \t]*(?:;|&&)?",
    re.S,
)
_BASH_FENCE = re.compile(r"```(?:bash|sh|shell)\s*\n(.*?)```", re.S)


class AgentTurn(TypedDict, total=False):
    """One entry of an agent's own view of the episode (:meth:`CooperBenchArena.history`)."""

    role: Required[str]
    """``assistant`` (its turn), ``tool`` (a result of its call) or ``user`` (a message delivered to it)."""
    content: Required[str]
    tool_calls: list[ArenaToolCall] | None
    raw: str | None
    """The turn's text where it was written in the text protocol (shown to the agent as it wrote it)."""
    tool_call_id: str | None
    name: str | None
    text: bool
    """A tool result of a text-protocol call (shown as an observation, not a tool message)."""


class AgentState(TypedDict):
    """One agent's part of the episode state (``state["agents"][agent]``)."""

    repo: str | None
    """Its clone of BASE (made at its first command)."""
    home: str | None
    steps: int
    tokens: int
    status: str
    """``running``, ``submitted``, ``step_limit`` or ``token_limit``."""
    inbox: list[tuple[str, str]]
    """Messages ``(sender, content)`` delivered before its next model call."""
    calls: int
    messages_sent: int
    format_errors: int


def _tool_schemas(partner: str | None) -> list[dict[str, object]]:
    """The tools' OpenAI function-calling schemas (``bash``, and ``send_message`` with a partner)."""
    tools: list[dict[str, object]] = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run one bash command in your repository and return its exit code and output.",
                "parameters": {
                    "type": "object",
                    "properties": {"command": {"type": "string", "description": "the shell command"}},
                    "required": ["command"],
                },
            },
        }
    ]
    if partner is not None:
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": "send_message",
                    "description": f"Send a message to your colleague {partner}.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "recipient": {"type": "string", "enum": [partner]},
                            "content": {"type": "string"},
                        },
                        "required": ["recipient", "content"],
                    },
                },
            }
        )
    return tools


def extract_messages(command: str) -> tuple[str, list[tuple[str, str]]]:
    """Cut ``send_message <agent> <<'MSG' ... MSG`` / ``send_message <agent> "..."`` out of ``command``.

    Returns the rest of the command and the ``(recipient, content)`` pairs, in order.
    """
    sent: list[tuple[str, str]] = []

    def _take(m: re.Match[str]) -> str:
        body = m.group("body")
        if m.groupdict().get("q") in ("'", '"') and "tag" not in m.groupdict():
            body = body.replace("\\" + m.group("q"), m.group("q"))
        sent.append((m.group("to"), body))
        return "\n"

    rest = _SEND_HEREDOC.sub(_take, command)
    rest = _SEND_QUOTED.sub(_take, rest)
    return rest, sent


def cut_output(text: str, limit: int) -> str:
    """The reference's cut: at ``limit``+ characters keep head and tail halves and say how much was elided."""
    if len(text) < limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n<elided_chars>{len(text) - 2 * half}</elided_chars>\n{text[-half:]}"


class CooperBenchArena:
    """CooperBench pairs as an :class:`~collapse_probe.benchmarks.Arena` (see the module docstring).

    Args:
        name: ``"cooperbench"`` (official data) or ``"cooperbench-demo"`` (the shipped demo tasks).
        data_dir: dataset root (``--cooperbench-data``; ``None``: ``$COLLAPSE_PROBE_COOPERBENCH_DATA``,
            and for the demo the shipped tasks).
        repos: where BASE trees of official tasks live (``$COLLAPSE_PROBE_COOPERBENCH_REPOS``).
        mode: ``"coop"`` (two agents, merge) or ``"solo"`` (the policy alone implements both features).
        max_steps: model calls per agent (reference 100). ``max_turns`` (the CLI's cap) overrides it.
        max_agent_tokens: generated tokens per agent (``None``: no limit).
        partial_reward: SCOPE's variant: 0.5 when the pair fails but the policy's own feature passed.
        directed: also run every pair with the policy as ``agent2``.
        messaging: give agents ``send_message`` (the reference's ``--no-messaging`` is ``False``).
        tool_protocol: ``"native"``, ``"text"`` or ``"auto"`` (schemas in ``tools`` and the text protocol
            in the prompt; a native call wins).
        compact: shorter observations for small local models (``output_chars`` 2000 instead of 10 000).
        turn_max_tokens: token budget of one model call.
        command_limits: sandbox limits of one bash command.
    """

    reward_range = (0.0, 1.0)
    """Success is 1, a failed pair 0 (0.5 with ``partial_reward``; see :func:`~collapse_probe.benchmarks.declared_reward_range`)."""

    def __init__(
        self,
        name: str = "cooperbench",
        data_dir: str | Path | None = None,
        *,
        repos: str | Path | None = None,
        mode: str = "coop",
        max_steps: int = 100,
        max_turns: int | None = None,
        max_agent_tokens: int | None = None,
        partial_reward: bool = False,
        directed: bool = False,
        messaging: bool = True,
        tool_protocol: str = "auto",
        compact: bool = False,
        turn_max_tokens: int | None = None,
        output_chars: int | None = None,
        command_limits: Limits | None = None,
        subset: str | None = None,
    ) -> None:
        if name not in ("cooperbench", "cooperbench-demo"):
            raise ConfigError(f"--benchmark: unknown CooperBench variant {name!r} (cooperbench, cooperbench-demo)")
        if mode not in _MODES:
            raise ConfigError(f"cooperbench option mode: expected one of {', '.join(_MODES)}, got {mode!r}")
        if tool_protocol not in _PROTOCOLS:
            raise ConfigError(
                f"cooperbench option tool_protocol: expected one of {', '.join(_PROTOCOLS)}, got {tool_protocol!r}"
            )
        for opt, value in (("max_steps", max_steps), ("max_turns", max_turns), ("max_agent_tokens", max_agent_tokens),
                           ("turn_max_tokens", turn_max_tokens), ("output_chars", output_chars)):  # fmt: skip
            check_value(value, f"cooperbench option {opt}", [Integer(1, optional=True)])
        self.name = name
        self.root = resolve_data_dir(data_dir, demo=name == "cooperbench-demo")
        self.repos = repos
        self.mode = mode
        self.max_steps = max_turns if max_turns is not None else max_steps
        self.max_agent_tokens = max_agent_tokens
        self.partial_reward = bool(partial_reward)
        self.directed = bool(directed)
        self.messaging = bool(messaging)
        self.tool_protocol = tool_protocol
        self.compact = bool(compact)
        self.turn_max_tokens = turn_max_tokens or (512 if compact else 2048)
        self.output_chars = output_chars or (2000 if compact else 10000)
        self.command_limits = command_limits or Limits(wall_s=120, cpu_s=120)
        self.default_subset = subset
        self._pairs: dict[str, PairRef] = {}
        self._workspaces: dict[str, Path] = {}

    # ---- tasks -------------------------------------------------------------------------------

    @property
    def splits(self) -> list[str]:
        return ["all", *subset_names(self.root)]

    def pairs(self, split: str | None = None) -> list[PairRef]:
        return enumerate_pairs(self.root, split if split is not None else self.default_subset)

    def load_tasks(self, n: int | None = None, split: str | None = None, seed: int = 0) -> list[Task]:
        """Up to ``n`` pair instances of ``split`` (``all``, or a subset such as ``lite``) in a seeded order."""
        pairs = self.pairs(split)
        tasks: list[Task] = []
        for p in pairs:
            self._pairs[p.pair_id] = p
            roles = ("agent1", "agent2") if self.directed and self.mode == "coop" else ("agent1",)
            for role in roles:
                tid = p.pair_id if role == "agent1" else f"{p.pair_id}@agent2"
                tasks.append(Task(tid, self._task_data(p, role), split))
        random.Random(seed).shuffle(tasks)
        if n is not None:
            if n < 1:
                raise ConfigError(f"--tasks must be >= 1, got {n}")
            tasks = tasks[:n]
        return tasks

    def _task_data(self, p: PairRef, policy_agent: str) -> dict[str, object]:
        return {"pair": p.pair_id, "task": p.task.name, "path": str(p.task.path), "features": [p.i, p.j],
                "policy_agent": policy_agent, "mode": self.mode}  # fmt: skip

    def task(self, task_id: str) -> Task:
        """The task with id ``<repo>/task<ID>/f<i>_f<j>`` (``@agent2`` suffix: the policy plays agent2)."""
        pair_id, _, role = task_id.partition("@")
        if pair_id not in self._pairs:
            for p in self.pairs("all"):
                self._pairs[p.pair_id] = p
        if pair_id not in self._pairs:
            raise ConfigError(f"{self.name}: unknown pair {pair_id!r}")
        return Task(task_id, self._task_data(self._pairs[pair_id], role or "agent1"))

    def _pair(self, task: Task) -> PairRef:
        pid = task.data.get("pair") if isinstance(task.data, dict) else None
        if pid not in self._pairs:
            self.task(str(pid or task.task_id))
        return self._pairs[str(pid or task.task_id.partition("@")[0])]

    # ---- episodes ----------------------------------------------------------------------------

    def agents(self, ep: Episode) -> tuple[str, ...]:
        return ("agent1",) if ep.state["mode"] == "solo" else AGENTS

    def side_of(self, ep: Episode, agent: str) -> Side:
        return "policy" if agent == ep.state["policy_agent"] else "simulator"

    def agent_of(self, ep: Episode, side: Side) -> str:
        if ep.state["mode"] == "solo":
            return "agent1"
        pol = ep.state["policy_agent"]
        return pol if side == "policy" else next(a for a in AGENTS if a != pol)

    def new_episode(self, task: Task, seed: int) -> Episode:
        pair = self._pair(task)
        mode = task.data.get("mode", self.mode) if isinstance(task.data, dict) else self.mode
        policy_agent = (task.data.get("policy_agent") if isinstance(task.data, dict) else None) or "agent1"
        base = base_repo(pair.task, self.repos)  # fails early, with where to put BASE, if it is missing
        agents = ("agent1",) if mode == "solo" else AGENTS
        per_agent: dict[str, AgentState] = {a: {"repo": None, "home": None, "steps": 0, "tokens": 0, "status": "running", "inbox": [],
                         "calls": 0, "messages_sent": 0, "format_errors": 0} for a in agents}  # fmt: skip
        return Episode(task=task, seed=seed, state={
            "mode": mode,
            "policy_agent": "agent1" if mode == "solo" else policy_agent,
            "features": {"agent1": pair.i, "agent2": pair.j},
            "base_sha": base.sha,
            "workspace_key": None,
            "next": 0,
            "order": [],
            "agents": per_agent,
            "patches": None,
            "network": network_isolation(),
        })  # fmt: skip

    def _workspace(self, ep: Episode, agent: str) -> Path:
        """The agent's clone of BASE, made at its first command (prompts alone need none)."""
        st = ep.state
        ag = st["agents"][agent]
        if ag["repo"] is not None and Path(ag["repo"]).is_dir():
            return Path(ag["repo"])
        key = st.get("workspace_key")
        if key is None or key not in self._workspaces:
            work = Path(tempfile.mkdtemp(prefix="cooperbench-ep-"))
            key = f"{ep.task.task_id}:{ep.seed}:{work.name}"
            self._workspaces[key] = work
            st["workspace_key"] = key
        work = self._workspaces[key]
        repo = base_repo(self._pair(ep.task).task, self.repos).clone(work / agent / "repo")
        (work / agent / "home").mkdir(exist_ok=True)
        ag["repo"], ag["home"] = str(repo), str(work / agent / "home")
        return repo

    def next_side(self, episode: Episode) -> Side | None:
        if episode.done:
            return None
        st = episode.state
        agents = self.agents(episode)
        for k in range(len(agents)):
            a = agents[(st["next"] + k) % len(agents)]
            if st["agents"][a]["status"] == "running":
                st["next"] = (agents.index(a) + 1) % len(agents)
                return self.side_of(episode, a)
        self._finish(episode)
        return None

    def _finish(self, ep: Episode) -> None:
        st = ep.state
        if st.get("patches") is None:
            st["patches"] = {}
            for a, ag in st["agents"].items():
                st["patches"][a] = self._collect_patch(Path(ag["repo"]), st["base_sha"]) if ag["repo"] else ""
        ep.done = True
        statuses = {ag["status"] for ag in st["agents"].values()}
        ep.status = "submitted" if statuses == {"submitted"} else "done"
        self._cleanup(ep)

    @staticmethod
    def _collect_patch(repo: Path, base_sha: str) -> str:
        if not repo.is_dir():
            return ""
        try:
            git(repo, "add", "-A")
            return git(repo, "diff", "--cached", "--binary", base_sha).stdout
        except EvaluationError:  # an agent may break its own .git: its patch is then empty
            return ""

    def _cleanup(self, ep: Episode) -> None:
        work = self._workspaces.pop(ep.state.get("workspace_key", ""), None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)

    # ---- turns -------------------------------------------------------------------------------

    def prompt_for(self, episode: Episode, side: Side) -> TurnPrompt:
        st = episode.state
        agent = self.agent_of(episode, side)
        ag = st["agents"][agent]
        for sender, content in ag["inbox"]:  # delivered now, before this agent's model call
            episode.messages.append({"role": "message", "from": sender, "to": agent, "content": content})
        ag["inbox"] = []
        partner = None if st["mode"] == "solo" or not self.messaging else next(a for a in AGENTS if a != agent)
        text_protocol = self.tool_protocol == "text"
        system = SOLO_SYSTEM if st["mode"] == "solo" else SYSTEM
        user = self._task_text(episode, agent, partner)
        protocol = self._protocol_text(partner)
        messages: list[Message] = [
            {"role": "system", "content": system + ("\n\n" + protocol if text_protocol else "")},
            {"role": "user", "content": user},
        ]
        lines: list[str] = []
        for h in self.history(episode, agent):
            if h["role"] == "assistant":
                calls = h.get("tool_calls")
                if text_protocol or not calls or h.get("raw") is not None:
                    messages.append({"role": "assistant", "content": h.get("raw") or h.get("content") or ""})
                else:
                    messages.append({"role": "assistant", "content": h.get("content") or None, "tool_calls": [
                        {"id": c["id"], "type": "function",
                         "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments") or {})}}
                        for c in calls]})  # fmt: skip
                lines.append(f"Assistant: {h.get('raw') or h.get('content') or _calls_text(h.get('tool_calls'))}")
            elif h["role"] == "tool":
                if text_protocol or h.get("text"):
                    messages.append({"role": "user", "content": f"Observation: {h['content']}"})
                else:
                    messages.append({"role": "tool", "tool_call_id": h["tool_call_id"], "name": h.get("name"),
                                     "content": h["content"]})  # fmt: skip
                lines.append(f"Observation: {h['content']}")
            else:
                messages.append({"role": "user", "content": h["content"]})
                lines.append(h["content"])
        header = f"{system}\n\n{user}\n\n{self._protocol_text(partner)}"
        prompt = header + "\n\n" + "\n".join(lines) + ("\n" if lines else "") + "Assistant:"
        tools = None if text_protocol else _tool_schemas(partner)
        return TurnPrompt(messages=messages, prompt=prompt, stop=("\nObservation:",),
                          max_tokens=self.turn_max_tokens, tools=tools)  # fmt: skip

    @staticmethod
    def history(ep: Episode, agent: str) -> list[AgentTurn]:
        """``agent``'s own view of the episode so far, rebuilt from the public record ``ep.messages``
        (its turns, its tool results, messages delivered to it), so any recorded prefix gives the exact
        prompt the agent saw (audits rebuild states this way)."""
        out: list[AgentTurn] = []
        for m in ep.messages:
            role = m.get("role")
            if role in ("policy", "simulator") and m.get("agent") == agent:
                out.append({"role": "assistant", "content": m.get("content") or "", "tool_calls": m.get("tool_calls"),
                            "raw": m.get("content") if m.get("protocol") == "text" else None})  # fmt: skip
            elif role == "tool" and m.get("agent") == agent:
                if m.get("name") == "format_error":
                    out.append({"role": "user", "content": m["content"]})
                else:
                    out.append({"role": "tool", "tool_call_id": m.get("tool_call_id"), "name": m.get("name"),
                                "content": m["content"], "text": m.get("protocol") == "text"})  # fmt: skip
            elif role == "message" and m.get("to") == agent:
                out.append({"role": "user", "content": f"[Message from {m.get('from')}]: {m.get('content')}"})
        return out

    def _protocol_text(self, partner: str | None) -> str:
        line = (
            f'{{{{"name": "send_message", "arguments": {{{{"recipient": "{partner}", "content": "<message>"}}}}}}}}\n'
            if partner
            else ""
        )
        return TEXT_PROTOCOL.format(message_line=line)

    def _task_text(self, ep: Episode, agent: str, partner: str | None) -> str:
        pair = self._pair(ep.task)
        if ep.state["mode"] == "solo":
            fi, fj = pair.task.features[pair.i], pair.task.features[pair.j]
            text = f"## Feature {pair.i}\n\n{fi.spec}\n\n---\n\n## Feature {pair.j}\n\n{fj.spec}"
            return f"{text}\n\n{SOLO_INSTRUCTIONS.format(submit=SUBMIT)}"
        fid = ep.state["features"][agent]
        other = partner or next(a for a in AGENTS if a != agent)
        instructions = COOP_INSTRUCTIONS.format(me=agent, partner=other, submit=SUBMIT)
        if partner is None:
            instructions = instructions.replace(
                f"- `send_message`: send a message to {other} (it reaches them before their next step). Inside a "
                f"bash\n  command you may also write `send_message {other} <<'MSG'` ... `MSG`.\n",
                "- Messaging is off in this run.\n",
            )
        return f"{pair.task.features[fid].spec}\n\n{instructions}"

    def apply(self, episode: Episode, side: Side, completion: Completion, text: str) -> None:
        st = episode.state
        agent = self.agent_of(episode, side)
        ag = st["agents"][agent]
        ag["steps"] += 1
        ag["tokens"] += int(getattr(completion, "n_tokens", None) or max(1, len(text or "") // 4))
        st["order"].append(agent)
        calls, raw = self._read_calls(completion, text)
        record: EpisodeMessage = {"role": side, "agent": agent, "content": text or ""}
        if calls:
            for c in calls:
                ag["calls"] += 1
                c["id"] = c.get("id") or f"call_{agent}_{ag['calls']}"
            record["tool_calls"] = calls
        if raw is not None:
            record["protocol"] = "text"
        episode.messages.append(record)
        if not calls:
            ag["format_errors"] += 1
            obs = (
                "Format error: your reply contained no tool call. Call `bash` with one command"
                + (" (or `send_message`)" if st["mode"] == "coop" and self.messaging else "")
                + ". To finish, run `echo "
                + SUBMIT
                + "`."
            )
            episode.messages.append({"role": "tool", "agent": agent, "name": "format_error", "content": obs})
        for c in calls:
            if ag["status"] != "running":
                break
            obs = self._execute(episode, agent, c)
            tool_rec: EpisodeMessage = {
                "role": "tool",
                "agent": agent,
                "tool_call_id": c["id"],
                "name": c.get("name"),
                "content": obs,
            }
            if raw is not None:
                tool_rec["protocol"] = "text"
            episode.messages.append(tool_rec)
        if ag["status"] == "running":
            if ag["steps"] >= self.max_steps:
                ag["status"] = "step_limit"
            elif self.max_agent_tokens is not None and ag["tokens"] >= self.max_agent_tokens:
                ag["status"] = "token_limit"
        if all(a["status"] != "running" for a in st["agents"].values()):
            self._finish(episode)

    def _read_calls(self, completion: Completion, text: str) -> tuple[list[ArenaToolCall], str | None]:
        native = completion.tool_calls if completion is not None else None
        if native and self.tool_protocol != "text":
            calls: list[ArenaToolCall] = []
            for c in native:
                name = c.get("name") if isinstance(c, Mapping) else None
                args: Any = c.get("arguments") if isinstance(c, Mapping) else None
                if isinstance(args, str):
                    try:
                        args = json.loads(args) if args.strip() else {}
                    except json.JSONDecodeError as exc:
                        calls.append({"id": str(c.get("id") or ""), "name": name, "arguments": {},
                                      "parse_error": f"arguments are not valid JSON ({exc.msg})"})  # fmt: skip
                        continue
                calls.append({"id": str(c.get("id") or "") if isinstance(c, Mapping) else "", "name": name,
                              "arguments": args if isinstance(args, dict) else {}})  # fmt: skip
            return calls, None
        if self.tool_protocol == "native":
            return [], None
        body = text or ""
        if "{" in body:
            action = parse_action(body)
            if action.error is None and action.name not in (None, "respond"):
                return [{"id": "", "name": action.name, "arguments": action.arguments or {}}], body
            if action.error is not None and action.name is not None:
                return [{"id": "", "name": action.name, "arguments": {}, "parse_error": action.error}], body
        fences = _BASH_FENCE.findall(body)
        if fences:
            return [{"id": "", "name": "bash", "arguments": {"command": fences[0].strip()}}], body
        return [], body

    def _execute(self, ep: Episode, agent: str, call: ArenaToolCall) -> str:
        st = ep.state
        ag = st["agents"][agent]
        name, args = call.get("name"), tool_call_arguments(call)
        if call.get("parse_error"):
            return f"Error: {call['parse_error']}"
        if name == "send_message" and st["mode"] == "coop" and self.messaging:
            to, content = args.get("recipient"), args.get("content")
            if not isinstance(content, str) or not isinstance(to, str):
                return 'Error: send_message needs "recipient" and "content" (strings)'
            return self._send(ep, agent, to, content)
        if name != "bash":
            return f"Error: unknown tool {name!r}; available: bash" + (
                ", send_message" if st["mode"] == "coop" and self.messaging else ""
            )
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return 'Error: bash needs "command" (a non-empty string)'
        notes = []
        if st["mode"] == "coop" and self.messaging:
            command, sent = extract_messages(command)
            notes = [self._send(ep, agent, to, body) for to, body in sent]
            if not command.strip():
                return "\n".join(notes)
        repo = self._workspace(ep, agent)
        res = run_command(command, repo, limits=self.command_limits, home=Path(ag["home"]))
        first = res.output.lstrip("\n").split("\n", 1)[0].strip() if res.output.strip() else ""
        if res.returncode == 0 and first == SUBMIT:
            ag["status"] = "submitted"
        out = json.dumps({"returncode": res.returncode, "output": cut_output(res.output, self.output_chars)},
                         ensure_ascii=False)  # fmt: skip
        return "\n".join([*notes, out])

    def _send(self, ep: Episode, sender: str, to: str, content: str) -> str:
        st = ep.state
        if to not in st["agents"] or to == sender:
            partner = next(a for a in AGENTS if a != sender)
            return f"Error: unknown recipient {to!r}; your colleague is {partner}"
        st["agents"][sender]["messages_sent"] += 1
        if st["agents"][to]["status"] == "running":
            st["agents"][to]["inbox"].append((sender, content))
        return f"Message sent to {to}"

    # ---- audit hooks (see collapse_probe.benchmarks._base.AuditHooks) -------------------------

    fallback_partition: str = "exact"
    """Partition of an audit without the embedding extra: exact reply text."""

    def probe_states(self, tasks: Sequence[Task]) -> list[ProbeSpec]:
        """Per pair: the partner's first move. Nothing of agent1 is visible to agent2 before then unless
        agent1 messages it, so an empty record is exactly the prompt of that turn."""
        return [ProbeSpec(task, "opening", []) for task in tasks]

    def meaning_key(self, text: str) -> Any:
        """What a turn does, as a constraint on semantic classes: submit, message, a bash command's
        program (``bash:git``, ``bash:sed``...) or no tool call."""
        calls, _ = self._read_calls(Completion(text or ""), text or "")
        if not calls:
            return "no_tool_call"
        c = calls[0]
        if c.get("parse_error"):
            return "malformed"
        if c.get("name") == "send_message":
            return "message"
        command = tool_call_arguments(c).get("command")
        if c.get("name") != "bash" or not isinstance(command, str):
            return f"tool:{c.get('name')}"
        rest, sent = extract_messages(command)
        if SUBMIT in rest:
            return "submit"
        words = rest.strip().split()
        return f"bash:{words[0]}" if words else ("message" if sent else "bash:")

    reward_view_note: str = (
        "classes: what a partner turn does to its patch, the only part of it the reward (tests on the merged "
        "patches) reads — submits, edits these files with this command, or leaves the patch as it is (reads, "
        "messages, format errors); states: every partner turn"
    )
    """What the audit's reward view measures on CooperBench (see :meth:`reward_class`)."""

    def reward_class(self, episode: Episode, text: str) -> str:
        """What the partner's turn does to its patch, as a class (every partner turn is read).

        The reward runs both features' tests on the merge of the two agents' final patches, so a turn
        reaches it only by changing the partner's patch or by submitting it (which freezes it).
        Reading files, running tests and messaging the policy change nothing the reward reads
        directly and share one class, ``"no change to the patch"``. A turn that edits files is classed
        by the files it writes (shell redirections and ``tee``; other writers such as ``sed -i``,
        ``git apply``, ``rm`` or a Python ``open(..., "w")`` without a named target read as "files")
        and by its command text, since two edits of one file make different patches. Whether an edit
        passes the hidden tests is not known at the turn, so edits are never merged by outcome.
        """
        calls, _ = self._read_calls(Completion(text or ""), text or "")
        if not calls or calls[0].get("parse_error") or calls[0].get("name") != "bash":
            return "no change to the patch"
        command = tool_call_arguments(calls[0]).get("command")
        if not isinstance(command, str):
            return "no change to the patch"
        rest, _ = extract_messages(command)
        if SUBMIT in rest:
            return "submits"
        return _patch_effect(rest)

    # ---- reward ------------------------------------------------------------------------------

    async def score(self, episodes: Sequence[Episode]) -> list[Score]:
        """Merge and test each finished episode's patches (one at a time: the test runs use the CPUs)."""
        out = []
        for ep in episodes:
            out.append(await asyncio.to_thread(self._score_one, ep))
        return out

    def _score_one(self, ep: Episode) -> Score:
        st = ep.state
        pair = self._pair(ep.task)
        if not ep.done:
            self._finish(ep)
        patches = st.get("patches") or {}
        own = 0 if st["policy_agent"] == "agent1" else 1
        info: dict[str, object] = {
            "pair": pair.pair_id,
            "mode": st["mode"],
            "policy_agent": st["policy_agent"],
            "policy_feature": st["features"][st["policy_agent"]],
            "agents": {
                a: {k: ag[k] for k in ("status", "steps", "tokens", "messages_sent", "format_errors")}
                for a, ag in st["agents"].items()
            },  # fmt: skip
            "order": "".join(a[-1] for a in st["order"]),
            "patches": patches,
            "network_isolation": st.get("network"),
        }
        try:
            if st["mode"] == "solo":
                result = evaluate_solo(pair.task, (pair.i, pair.j), patches.get("agent1", ""), repos=self.repos)
            else:
                result = evaluate_pair(pair.task, (pair.i, pair.j),
                                       (patches.get("agent1", ""), patches.get("agent2", "")), repos=self.repos)  # fmt: skip
        except EvaluationError as exc:
            info["infra_error"] = True
            info["error"] = str(exc)
            return Score(None, None, info)
        info.update(result.to_dict())
        reward = result.reward(partial=self.partial_reward and st["mode"] == "coop", own=own)
        info["partial_reward"] = self.partial_reward
        return Score(reward, result.success, info)

    def __del__(self) -> None:
        for work in list(getattr(self, "_workspaces", {}).values()):
            shutil.rmtree(work, ignore_errors=True)


_HEREDOC_BODY = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n.*?\n[ \t]*\2[ \t]*(?:\n|$)", re.S)
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_REDIRECT = re.compile(r"(?<![<>&\d])>>?\s*([^\s;&|<>()]+)")
_TEE = re.compile(r"\btee\s+(?:-a\s+)?([^\s;&|<>()]+)")
_WRITERS = re.compile(
    r"\b(?:sed|perl)\s+(?:-\w+\s+)*-i|\bgit\s+(?:apply|am|checkout|restore|reset|stash|mv|rm|commit)\b|"
    r"\b(?:patch|rm|mv|cp|touch|mkdir|ln|truncate)\s|\.write_text\(|\.write_bytes\(|open\([^)]*['\"][wax]b?\+?['\"]"
)


def _patch_effect(command: str) -> str:
    """``"edits FILES (edit HASH)"`` for a command that writes files, else ``"no change to the patch"``.

    Targets are read from redirections and ``tee`` after heredoc bodies and quoted strings are cut out
    (their text is the content written, not the shell's); ``/dev/…`` is not a file of the patch.
    """
    import hashlib

    shell = _QUOTED.sub("''", _HEREDOC_BODY.sub("\n", command))
    files = sorted({f for f in _REDIRECT.findall(shell) + _TEE.findall(shell) if not f.startswith("/dev/")})
    if not files and not _WRITERS.search(command):
        return "no change to the patch"
    edit = hashlib.sha1(" ".join(command.split()).encode("utf-8")).hexdigest()[:8]
    return f"edits {', '.join(files) if files else 'files'} (edit {edit})"


def _calls_text(calls: Sequence[ArenaToolCall] | None) -> str:
    return json.dumps([{"name": c.get("name"), "arguments": c.get("arguments")} for c in calls or []])


def make_arena(name: str = "cooperbench", data_dir: Any = None, **options: Any) -> CooperBenchArena:
    """Build the CooperBench arena (``"cooperbench"`` or ``"cooperbench-demo"``).

    Options not meaningful here that the CLI passes to every benchmark (``judge``) are ignored, and
    the trainers' per-side turn budgets (``policy_max_tokens``, ``simulator_max_tokens``,
    ``max_tokens``) set ``turn_max_tokens``.
    """
    opts = dict(options)
    opts.pop("judge", None)
    # The trainers pass per-side turn budgets; both sides are coding agents here, with one budget.
    budgets = [opts.pop(k) for k in ("policy_max_tokens", "simulator_max_tokens", "max_tokens") if k in opts]
    budgets = [b for b in budgets if b is not None]
    if budgets and opts.get("turn_max_tokens") is None:
        opts["turn_max_tokens"] = max(budgets)
    known = {"repos", "mode", "max_steps", "max_turns", "max_agent_tokens", "partial_reward", "directed", "messaging",
             "tool_protocol", "compact", "turn_max_tokens", "output_chars", "command_limits", "subset"}  # fmt: skip
    unknown = sorted(set(opts) - known)
    if unknown:
        raise ConfigError(f"{name}: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return CooperBenchArena(name, data_dir, **opts)


def make_demo_arena(**options: Any) -> CooperBenchArena:
    """The arena over the shipped demo tasks (``cooperbench-demo``)."""
    return make_arena("cooperbench-demo", **options)
