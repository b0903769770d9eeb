"""Readers of the rollout files of PrimeIntellect-ai/verifiers, written here from its source (only the
fields an audit needs are read; every other field is ignored).

``traces.jsonl`` (``verifiers/v1/cli/output.py``): one episode per line (``Episode`` of
``verifiers/v1/episode.py``): ``id``, ``task`` (``key``, ``hash``, ``data`` with ``idx``, ``prompt``,
``system_prompt``), ``group``, ``run`` (a training run's ``work.step``), ``ok``, ``errors`` and
``traces[]``, one per agent of the episode (``Trace`` of ``verifiers/v1/trace.py``): ``agent`` (``name``,
``trainable``, ``config.model``), ``nodes[]`` (a message graph: ``parent``, ``message``, ``sampled``),
``calls[].model`` and ``rewards`` (``{name: {score, weight}}``). A trace's conversation is its last
branch (the path from its last leaf back to the root), as ``Trace.messages`` reads it.

- An episode with an agent that is not ``trainable`` (verifiers' ``user-sim`` environment, where a
  modeled user talks to the assistant under evaluation): that agent is the simulated user. Its own trace
  is the conversation as the simulator saw it: its sampled replies are the simulator's turns, the
  messages it received are the policy's, and its system prompt (the persona and scenario) is the system.
  The reward is the trainable agent's (the task's own score); the simulator's and the agent's model
  names are their traces' models. The user is the untrainable agent named ``user`` (the name ``user-sim``
  gives it); another untrainable agent (``agentic-judge``'s ``judge``, a fixed participant) is no user:
  its trace is left out, and the episode is read as one of trainable agents only.
- An episode of trainable agents only (one agent, or best-of-n attempts): each trace is a conversation
  of the agent with its environment; the ``user`` turns after the first sampled reply are the
  simulator's, the prompt's user turns are the task as given.

``results.jsonl`` (the legacy format, ``verifiers/legacy/utils/save_utils.py``): one rollout per line:
``example_id``, ``prompt`` and ``completion`` (chat messages, or text), ``reward``, ``error``, ``info``,
``task``; the model is in the ``metadata.json`` beside it. Earlier versions wrote the example's id as
``id`` (repeated across the example's rollouts), read alike. The prompt is the task as given; the
completion's ``user`` turns (an environment's replies in a multi-turn environment) are the simulator's.

The task as given (a prompt's user turns) is the same text in every rollout of a task, so it is kept
in the conversation's prefix but marked ``given``: it is not a draw of the simulator, and N copies of
it would read as total collapse. An episode that ends with errors and ``ok`` false, and a legacy
rollout with an ``error``, are infrastructure failures (never scored, counted).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError
from collapse_probe.integrations.interop._chat import (
    array,
    ident,
    json_records,
    number,
    obj,
    text_of,
    tool_calls,
    trials_in_order,
)

TRACES_EXPECTED = "a verifiers traces.jsonl (one episode per line: task, traces[] with agent and nodes)"
RESULTS_EXPECTED = "a verifiers results.jsonl (one rollout per line: example_id, prompt, completion, reward)"
USER_AGENT = "user"
"""The name verifiers' ``user-sim`` environment gives the modeled user (chosen among several untrainable agents)."""


def _message(m: Any, where: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """``(role, text, tool calls)`` of a chat message object."""
    if not isinstance(m, dict) or not isinstance(m.get("role"), str):
        raise ConfigError(f"{where}: expected a message object with a string 'role'")
    return m["role"], text_of(m.get("content"), f"{where}.content"), tool_calls(m.get("tool_calls"), where)


def _branch(nodes: list[Any], where: str) -> list[tuple[dict[str, object], bool]]:
    """``(message, sampled)`` along the trace's last branch: from the last leaf back to the root."""
    if not nodes:
        return []
    parents = set()
    for k, n in enumerate(nodes):
        if not isinstance(n, dict) or not isinstance(n.get("message"), dict):
            raise ConfigError(f"{where}.nodes[{k}]: expected a node object with a 'message' object")
        parent = n.get("parent")
        # verifiers appends a node after its parent: an index at or past the node's own is no graph (and
        # following it could loop forever)
        if parent is not None and (isinstance(parent, bool) or not isinstance(parent, int) or not 0 <= parent < k):
            raise ConfigError(f"{where}.nodes[{k}].parent: expected null or the index of an earlier node, "
                              f"got {parent!r}")  # fmt: skip
        if parent is not None:
            parents.add(parent)
    leaf = max(i for i in range(len(nodes)) if i not in parents)
    path: list[int] = []
    at: int | None = leaf
    while at is not None:
        path.append(at)
        at = nodes[at].get("parent")
    return [(nodes[i]["message"], nodes[i].get("sampled") is True) for i in reversed(path)]


def _model(trace: dict[str, object]) -> str | None:
    """The model a trace's agent called (its first recorded call's, else its config's)."""
    calls = trace.get("calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict) and isinstance(call.get("model"), str) and call["model"]:
            return str(call["model"])
    config = _agent_of(trace).get("config")
    model = config.get("model") if isinstance(config, dict) else None
    return model if isinstance(model, str) and model else None


def _reward(trace: dict[str, object], where: str) -> float | None:
    """The trace's reward: the sum of its rewards' ``score x weight`` (``Trace.reward``); ``None`` when it
    recorded none (not scored)."""
    rewards = obj(trace.get("rewards"), f"{where}.rewards", "rewards by name")
    if not rewards:
        return None
    total = 0.0
    for name, r in rewards.items():
        if r is None:
            continue
        r = obj(r, f"{where}.rewards.{name}", "a reward {score, weight}", optional=False)
        score = number(r.get("score"), f"{where}.rewards.{name}.score")
        weight = number(r.get("weight", 1.0), f"{where}.rewards.{name}.weight")
        total += (score or 0.0) * (1.0 if weight is None else weight)
    return total


def _prompt_text(prompt: Any, where: str) -> str | None:
    """The task's text from a prompt: the text itself, or its user messages' text (the system prompt is the
    agent's, which differs between agents of one task)."""
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return prompt or None
    parts = []
    for k, m in enumerate(array(prompt, where, "the prompt's messages")):
        role, text, _ = _message(m, f"{where}[{k}]")
        if role == "user" and text:
            parts.append(text)
    return "\n".join(parts) or None


def _task(task: dict[str, object], where: str, line: int, group: Any) -> tuple[str, str | None]:
    """``(task id, task text)``: the task's stable key (else its content hash, its row index, its name, the
    episode's rollout group, a digest of its prompt)."""
    data = obj(task.get("data"), f"{where}: task.data", "the task's row")
    task_id = None
    for field, value in (("key", task.get("key")), ("hash", task.get("hash")), ("data.idx", data.get("idx")),
                         ("data.name", data.get("name"))):  # fmt: skip
        task_id = ident(value, f"{where}: task.{field}")
        if task_id is not None:
            break
    content = _prompt_text(data.get("prompt"), f"{where}: task.data.prompt")
    system = data.get("system_prompt")
    if content is None and isinstance(system, str) and system:
        content = system
    if task_id is None and isinstance(group, dict):  # a rollout group holds the rollouts of one example
        task_id = ident(group.get("id"), f"{where}: group.id")
    if task_id is None:
        task_id = hashlib.sha256(content.encode()).hexdigest()[:16] if content else f"line-{line}"
    return task_id, content


def _infra(rec: dict[str, object], where: str) -> str | None:
    errors = array(rec.get("errors"), f"{where}: errors", "the episode's errors")
    if rec.get("ok") is True or not errors:
        return None
    last = errors[-1] if isinstance(errors[-1], dict) else {"message": str(errors[-1])}
    return f"{last.get('type') or 'error'}: {last.get('message') or ''}".strip()


def _agent(trace: Any, where: str) -> dict[str, object]:
    trace = obj(trace, where, "a trace", optional=False)
    agent = obj(trace.get("agent"), f"{where}.agent", "the trace's agent {name, trainable}", optional=False)
    if not isinstance(agent.get("name", "agent"), str):
        raise ConfigError(f"{where}.agent.name: expected a string, got {agent.get('name')!r}")
    if not isinstance(agent.get("trainable", True), bool):
        raise ConfigError(f"{where}.agent.trainable: expected true or false, got {agent.get('trainable')!r}")
    array(trace.get("nodes"), f"{where}.nodes", "the trace's message nodes")
    return trace


def _agent_of(trace: Mapping[str, object]) -> Mapping[str, object]:
    """The ``agent`` object of a trace :func:`_agent` checked."""
    agent = trace.get("agent")
    return agent if isinstance(agent, dict) else {}


def read_verifiers_traces(path: str | Path) -> Any:
    """Read a verifiers ``traces.jsonl`` into a :class:`~collapse_probe.integrations.interop.PublishedRun`.

    Raises:
        ConfigError: the file is missing, or a line is not an episode (naming the file, line and field).
    """
    from collapse_probe.integrations.interop._published import PublishedConversation, PublishedRun, file_sha256

    p = Path(path)
    convs: list[PublishedConversation] = []
    policies: set[str] = set()
    simulators: set[str] = set()
    envs: set[str] = set()
    for i, rec in json_records(p, TRACES_EXPECTED):
        env = rec.get("env")
        if isinstance(env, dict) and isinstance(env.get("id"), str) and env["id"]:
            envs.add(env["id"])
        episode = _episode(rec, i, f"{p}: line {i}")
        convs.extend(episode)
        for c in episode:
            if c.policy:
                policies.add(c.policy)
            if c.simulator:
                simulators.add(c.simulator)
    trials_in_order(convs)
    run_ = PublishedRun(
        conversations=convs, format="verifiers", path=str(p), sha256=file_sha256(str(p)),
        policy=next(iter(policies)) if len(policies) == 1 else None,
        simulator=next(iter(simulators)) if len(simulators) == 1 else None,
    )  # fmt: skip
    if envs:
        run_.notes.append(f"verifiers environment {', '.join(sorted(envs))}")
    return run_


def _episode(rec: dict[str, object], i: int, where: str) -> list[Any]:
    """The conversations of one episode (line ``i``): the simulated user's, with one; else each trainable
    agent's (every agent's when none is trainable); one with no messages when it has no traces."""
    from collapse_probe.integrations.interop._published import PublishedConversation

    traces = [_agent(t, f"{where}: traces[{k}]") for k, t in
              enumerate(array(rec.get("traces"), f"{where}: traces", "the episode's traces", optional=False))]  # fmt: skip
    task = rec.get("task")
    if task is None and traces:
        task = traces[0].get("task")
    task_id, content = _task(obj(task, f"{where}: task", "the episode's task"), where, i, rec.get("group"))
    given_run = rec.get("run")
    run: dict[str, object] = given_run if isinstance(given_run, dict) else {}
    work = run.get("work")
    step = work.get("step") if isinstance(work, dict) and run.get("type") == "train" else None
    group = (f"step={step}",) if isinstance(step, int) and not isinstance(step, bool) else ()
    episode = ident(rec.get("id"), f"{where}: id") or f"line-{i}"
    infra = _infra(rec, where)
    frozen = [t for t in traces if _agent_of(t).get("trainable", True) is False]
    users = [t for t in frozen if _agent_of(t).get("name", "agent") == USER_AGENT]
    if len(users) > 1:
        raise ConfigError(f"{where}: traces: {len(users)} untrainable agents named {USER_AGENT!r}; expected "
                          "one simulated user per episode")  # fmt: skip
    if not traces:
        return [PublishedConversation(episode, task_id, [], reward=None, infra_error=infra or "no traces",
                                      group=group, task_content=content)]  # fmt: skip
    if users:
        return [_user_conversation(traces, users[0], where, episode, task_id, infra, group, content)]
    # without a user, an untrainable judge or fixed participant is no rollout of the agent: left out
    read = [(k, t) for k, t in enumerate(traces) if _agent_of(t).get("trainable", True)] or list(enumerate(traces))
    return _agent_conversations(read, where, episode, task_id, infra, group, content)


def _user_conversation(
    traces: list[Any], user: Any, where: str, episode: str, task_id: str, infra: str | None,
    group: tuple[str, ...], content: str | None,
) -> Any:  # fmt: skip
    """An episode with a simulated user, read from the user's side (its turns are the simulator's); the
    agent is the trainable one named ``assistant`` (else the first trainable one), its reward the reward."""
    from collapse_probe.integrations.interop._published import PublishedConversation, PublishedMessage

    agents = [t for t in traces if t is not user and _agent_of(t).get("trainable", True)]
    agent = next((t for t in agents if _agent_of(t).get("name") == "assistant"), agents[0] if agents else None)
    k = traces.index(user)
    messages = []
    for j, (m, sampled) in enumerate(_branch(user.get("nodes") or [], f"{where}: traces[{k}]")):
        role, text, calls = _message(m, f"{where}: traces[{k}].nodes[{j}].message")
        side = {"assistant": "simulator", "user": "policy"}.get(role, role)
        meta = {} if role != "assistant" or sampled else {"given": True}
        messages.append(PublishedMessage(side, text, calls, meta))
    policy = _model(agent) if agent is not None else None
    simulator = _model(user)
    reward = _reward(agent, f"{where}: traces[{traces.index(agent)}]") if agent is not None else None
    return PublishedConversation(
        f"{episode}", task_id, messages, reward=None if infra else reward, infra_error=infra,
        policy=policy, simulator=simulator, group=group, task_content=content,
    )  # fmt: skip


def _agent_conversations(
    read: list[tuple[int, Any]], where: str, episode: str, task_id: str, infra: str | None,
    group: tuple[str, ...], content: str | None,
) -> list[Any]:  # fmt: skip
    """An episode without a simulated user: one conversation per agent trace in ``read``, from the
    agent's side (the user turns before its first sampled reply are the given prompt)."""
    from collapse_probe.integrations.interop._published import PublishedConversation, PublishedMessage

    convs = []
    for k, t in read:
        messages = []
        drawn = False  # the user turns before the agent's first sampled reply are the prompt
        for j, (m, sampled) in enumerate(_branch(t.get("nodes") or [], f"{where}: traces[{k}]")):
            role, text, calls = _message(m, f"{where}: traces[{k}].nodes[{j}].message")
            side = {"assistant": "policy", "user": "simulator"}.get(role, role)
            drawn = drawn or (role == "assistant" and sampled)
            meta = {"given": True} if side == "simulator" and not drawn else {}
            messages.append(PublishedMessage(side, text, calls, meta))
        policy = _model(t)
        name = _agent_of(t).get("name", "agent")
        cid = episode if len(read) == 1 else f"{episode}:{name}:{k}"
        convs.append(PublishedConversation(
            cid, task_id, messages, reward=None if infra else _reward(t, f"{where}: traces[{k}]"),
            infra_error=infra, policy=policy, group=group, task_content=content,
        ))  # fmt: skip
    return convs


def _metadata(p: Path) -> dict[str, object]:
    """The ``metadata.json`` a legacy run writes beside its ``results.jsonl`` (``{}`` when there is none)."""
    from collapse_probe.core._files import read_json_file

    meta = p.parent / "metadata.json"
    if not meta.is_file():
        return {}
    data = read_json_file(meta, expected="a verifiers metadata.json (env_id, model, ...)")
    if not isinstance(data, dict):
        raise ConfigError(f"{meta}: expected a JSON object (a verifiers run's metadata), got {type(data).__name__}")
    return data


def read_verifiers_results(path: str | Path) -> Any:
    """Read a verifiers legacy ``results.jsonl`` into a :class:`~collapse_probe.integrations.interop.PublishedRun`.

    Raises:
        ConfigError: the file is missing, or a line is not a rollout (naming the file, line and field).
    """
    from collapse_probe.integrations.interop._published import (
        PublishedConversation,
        PublishedMessage,
        PublishedRun,
        file_sha256,
    )

    p = Path(path)
    convs: list[PublishedConversation] = []
    records = json_records(p, RESULTS_EXPECTED)
    meta = _metadata(p)
    model = meta.get("model")
    policy = model if isinstance(model, str) and model else None
    for i, rec in records:
        where = f"{p}: line {i}"
        key = "example_id" if "example_id" in rec else "id"  # earlier verifiers wrote the example id as id
        if key not in rec:
            raise ConfigError(f"{where}: example_id: missing; expected {RESULTS_EXPECTED}")
        task_id = ident(rec.get(key), f"{where}: {key}")
        if task_id is None:
            raise ConfigError(f"{where}: {key}: expected the example's id (a string or integer), got nothing")
        messages = []
        prompt, completion = rec.get("prompt"), rec.get("completion")
        for part, given in ((prompt, True), (completion, False)):
            if isinstance(part, str):  # a completion-format environment: text, not messages
                messages.append(PublishedMessage("simulator" if given else "policy", part, (),
                                                 {"given": True} if given else {}))  # fmt: skip
                continue
            for j, m in enumerate(array(part, f"{where}: {'prompt' if given else 'completion'}", "chat messages")):
                role, text, calls = _message(m, f"{where}: {'prompt' if given else 'completion'}[{j}]")
                side = {"assistant": "policy", "user": "simulator"}.get(role, role)
                messages.append(PublishedMessage(side, text, calls, {"given": True} if given else {}))
        content = _prompt_text(prompt, f"{where}: prompt")
        info = rec.get("info")
        if content is None and isinstance(info, dict) and info:
            content = json.dumps(info, sort_keys=True, ensure_ascii=False, default=str)
        error = rec.get("error")
        infra = None
        if error:
            infra = (f"{error.get('error') or 'error'}: {error.get('message') or ''}".strip()
                     if isinstance(error, dict) else str(error))  # fmt: skip
        group = (f"task={rec['task']}",) if isinstance(rec.get("task"), str) and rec["task"] else ()
        convs.append(PublishedConversation(
            f"line-{i}", task_id, messages, reward=None if infra else number(rec.get("reward"), f"{where}: reward"),
            infra_error=infra, policy=policy, group=group, task_content=content,
        ))  # fmt: skip
    trials_in_order(convs)
    run = PublishedRun(conversations=convs, format="verifiers-results", path=str(p), sha256=file_sha256(str(p)),
                       policy=policy)  # fmt: skip
    if isinstance(meta.get("env_id"), str) and meta["env_id"]:
        run.notes.append(f"verifiers environment {meta['env_id']} (metadata.json)")
    run.notes.append("the file names no user simulator: its user turns are the environment's")
    return run
