"""A reader of NVIDIA-NeMo/Gym's ``rollouts.jsonl`` (what ``gym eval run`` writes: one rollout per line),
written here from Gym's source and its shipped ``example_rollouts.jsonl`` files; only the fields an
audit needs are read.

A line holds the request the policy model was sent (``responses_create_params``, OpenAI Responses-API
shape: ``input`` is text or a list of items) and what came back (``response``: ``model``, ``status``,
``error``, ``output[]`` items), the rollout's ``reward``, and Gym's ``_ng_task_index`` /
``_ng_rollout_index`` (the task and the repeat). Items read, in order (``input`` then ``output``):

- ``type: message`` (or an item with a ``role`` and no type): ``system`` / ``developer`` → system,
  ``assistant`` → the policy, ``user`` → the simulated user; ``content`` as text or as
  ``input_text`` / ``output_text`` parts;
- ``function_call`` (``name``, ``arguments``) → a policy message with that tool call;
  ``function_call_output`` (``output``) → a tool message;
- ``reasoning`` and other item types carry no turn of the conversation and are left out.

``input`` is the task as given (Gym expands a dataset row into its repeats): its user turns are kept in
the prefix but marked ``given``, not draws of the simulator; the user turns of ``output`` (a multi-turn
environment's replies) are the simulator's. The task's text (``task_content``) is the first user input.
A user-simulation environment (``conversational_tool_use_simulation``) records the whole conversation in
``result.trajectory.messages`` (``type`` ``text`` / ``tool_call`` / ``tool_execution``, ``source``
``user`` / ``agent`` / ``environment``), the simulated user's turns with the calls that drew them (its
opening too, which ``input`` carries): there the conversation is read from the trajectory (after
``input``'s system messages), every user turn a draw except the first ``prefill_message_count`` messages
(taken from the data), and the simulator's model is its turns' ``responses[].model``. When its opening
is drawn, the task's text is the row's ``customer_scenario`` (the input's opening differs between repeats).
τ2 through Gym (``responses_api_agents/tau2``) stores τ2's own simulation record in ``result``
(``messages``, ``termination_reason``): its messages are the conversation, every user turn a draw, and the
models are ``config.llm_user`` / ``config.llm_agent``. Its task is τ2's (``task.id`` and the user scenario,
as a τ2 results file gives them), not the input's first user turn, which is the simulator's first draw and
differs between the repeats of a task.
A row without a ``response``, or whose response failed (``error`` set, ``status`` ``failed`` or
``cancelled``), is an infrastructure failure (never scored, counted). The simulator's model is named
where the row has it (τ2 through Gym: ``config.llm_user``); the policy's is ``response.model``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError
from collapse_probe.integrations.interop._chat import array, ident, json_records, number, obj, text_of, trials_in_order

EXPECTED = "a NeMo-Gym rollouts.jsonl (one rollout per line: responses_create_params, response, reward)"
_ROLES = {"assistant": "policy", "user": "simulator", "system": "system", "developer": "system", "tool": "tool"}
FAILED = ("failed", "cancelled")
"""Responses-API statuses of a response that never completed."""


def _items(value: Any, where: str, given: bool) -> list[Any]:
    """The conversation turns of an ``input`` or ``output`` list (text input is one user turn)."""
    from collapse_probe.integrations.interop._published import PublishedMessage, canonical_arguments

    if isinstance(value, str):
        return [PublishedMessage("simulator", value, (), {"given": True} if given else {})]
    out = []
    for k, item in enumerate(array(value, where, "Responses-API items")):
        at = f"{where}[{k}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{at}: expected an item object, got {type(item).__name__}")
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            if not isinstance(role, str) or role not in _ROLES:
                raise ConfigError(f"{at}.role: expected one of {', '.join(_ROLES)}, got {role!r}")
            side = _ROLES[role]
            meta = {"given": True} if given and side == "simulator" else {}
            out.append(PublishedMessage(side, text_of(item.get("content"), f"{at}.content"), (), meta))
        elif kind == "function_call":
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError(f"{at}.name: expected the function's name, got {name!r}")
            out.append(PublishedMessage("policy", "", ((name, canonical_arguments(item.get("arguments", {}), at)),)))
        elif kind == "function_call_output":
            out.append(PublishedMessage("tool", text_of(item.get("output"), f"{at}.output")))
    return out


def _trajectory(trajectory: dict[str, object], where: str) -> tuple[list[Any], str | None]:
    """The turns of a user-simulation environment's ``result.trajectory.messages`` (``type`` ``text`` /
    ``tool_call`` / ``tool_execution``, ``source`` ``user`` / ``agent`` / ``environment``) and the model
    that drew the user's turns (their ``responses[].model``). The first ``prefill_message_count`` messages
    came from the data (given)."""
    from collapse_probe.integrations.interop._published import PublishedMessage, canonical_arguments

    prefill = trajectory.get("prefill_message_count") or 0
    if isinstance(prefill, bool) or not isinstance(prefill, int) or prefill < 0:
        raise ConfigError(f"{where}.prefill_message_count: expected an integer >= 0, got {prefill!r}")
    out, model = [], None
    for k, m in enumerate(array(trajectory.get("messages"), f"{where}.messages", "the conversation's messages")):
        at = f"{where}.messages[{k}]"
        if not isinstance(m, dict):
            raise ConfigError(f"{at}: expected a message object, got {type(m).__name__}")
        kind, source = m.get("type"), m.get("source")
        if kind == "text":
            if source not in ("user", "agent"):
                raise ConfigError(f"{at}.source: expected 'user' or 'agent' for a text message, got {source!r}")
            side = "simulator" if source == "user" else "policy"
            given = side == "simulator" and k < prefill
            out.append(
                PublishedMessage(side, text_of(m.get("text"), f"{at}.text"), (), {"given": True} if given else {})
            )
            responses = m.get("responses") if side == "simulator" and model is None else None
            for r in responses if isinstance(responses, list) else []:
                if isinstance(r, dict) and isinstance(r.get("model"), str) and r["model"]:
                    model = r["model"]
                    break
        elif kind == "tool_call":
            name = m.get("tool_name")
            if not isinstance(name, str) or not name:
                raise ConfigError(f"{at}.tool_name: expected the tool's name, got {name!r}")
            side = "simulator" if source == "user" else "policy"
            out.append(PublishedMessage(side, "", ((name, canonical_arguments(m.get("arguments", {}), at)),)))
        elif kind == "tool_execution":
            out.append(PublishedMessage("tool", text_of(m.get("execution_result"), f"{at}.execution_result")))
    return out, model


def _tau2_messages(messages: list[Any], where: str) -> list[Any]:
    """τ2 messages (``assistant`` the agent, ``user`` the simulator, ``tool``, ``system``; a multi-tool
    message's ``tool_messages`` one by one) as published messages."""
    from collapse_probe.integrations.interop._chat import tool_calls
    from collapse_probe.integrations.interop._published import PublishedMessage

    out = []
    for k, m in enumerate(messages):
        at = f"{where}[{k}]"
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ConfigError(f"{at}: expected a message object with a string 'role'")
        parts = m["tool_messages"] if isinstance(m.get("tool_messages"), list) else [m]
        for j, part in enumerate(parts):
            if not isinstance(part, dict):
                raise ConfigError(f"{at}.tool_messages[{j}]: expected a tool message object")
            role = str(part.get("role", m["role"]))
            side = {"assistant": "policy", "user": "simulator"}.get(role, role)
            out.append(PublishedMessage(side, text_of(part.get("content"), f"{at}.content"),
                                        tool_calls(part.get("tool_calls"), at)))  # fmt: skip
    return out


def _first_user_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and item.get("role") == "user":
            text = text_of(item.get("content"), "input")
            if text:
                return text
    return None


def _scenario_text(scenario: Any) -> str | None:
    """A user-simulation row's ``customer_scenario`` as one text (``field: value`` lines, in order)."""
    if isinstance(scenario, str):
        return scenario or None
    if not isinstance(scenario, dict):
        return None
    lines = [f"{k}: {v}" for k, v in scenario.items() if isinstance(v, str | int | float) and not isinstance(v, bool)]
    return "\n".join(lines) or None


def _tau2_task(rec: dict[str, object], result: dict[str, object], task_id: str | None,
               content: str | None) -> tuple[str | None, str | None]:  # fmt: skip
    """The τ2 task of a τ2-through-Gym row: its id (``task.id``, else ``result.task_id``) and text (the
    user scenario, read as :func:`~collapse_probe.integrations.interop._tau2.task_contents` reads a results file's
    tasks); Gym's row index and the input's first user turn where the row has neither."""
    from collapse_probe.integrations.interop._tau2 import task_contents

    task = rec.get("task")
    tid = task.get("id") if isinstance(task, dict) else None
    if isinstance(tid, bool) or not isinstance(tid, str | int):
        tid = result.get("task_id")
    if isinstance(tid, bool) or not isinstance(tid, str | int):
        return task_id, content
    text = task_contents([task]).get(str(tid)) if isinstance(task, dict) else None
    return str(tid), text


def read_nemo_gym_rollouts(path: str | Path) -> Any:
    """Read a NeMo-Gym ``rollouts.jsonl`` into a :class:`~collapse_probe.integrations.interop.PublishedRun`.

    Raises:
        ConfigError: the file is missing, or a line is not a rollout (naming the file, line and field).
    """
    from collapse_probe.integrations.interop._published import PublishedConversation, PublishedRun, file_sha256

    p = Path(path)
    convs: list[PublishedConversation] = []
    policies: set[str] = set()
    simulators: set[str] = set()
    agents: set[str] = set()
    for i, rec in json_records(p, EXPECTED):
        conv = _rollout(rec, i, f"{p}: line {i}")
        ref = rec.get("agent_ref")
        if isinstance(ref, dict) and isinstance(ref.get("name"), str):
            agents.add(ref["name"])
        convs.append(conv)
        policies.update([conv.policy] if conv.policy else [])
        simulators.update([conv.simulator] if conv.simulator else [])
    if convs and all(c.infra_error == "no response" for c in convs):
        raise ConfigError(f"{p}: no line holds a response: Gym's input data (the requests before a rollout), not "
                          f"rollouts; expected {EXPECTED}, as `gym eval run` writes it")  # fmt: skip
    trials_in_order(convs)
    run = PublishedRun(
        conversations=convs, format="nemo-gym", path=str(p), sha256=file_sha256(str(p)),
        policy=next(iter(policies)) if len(policies) == 1 else None,
        simulator=next(iter(simulators)) if len(simulators) == 1 else None,
    )  # fmt: skip
    if agents:
        run.notes.append(f"NeMo-Gym agent {', '.join(sorted(agents))}")
    return run


def _rollout(rec: dict[str, object], i: int, where: str) -> Any:
    """One line of ``rollouts.jsonl`` (line ``i``) as a published conversation."""
    from collapse_probe.integrations.interop._published import PublishedConversation

    params = obj(rec.get("responses_create_params"), f"{where}: responses_create_params",
                 "the request the policy was sent {input, ...}", optional=False)  # fmt: skip
    if "input" not in params:
        raise ConfigError(f"{where}: responses_create_params.input: missing; expected the request's input items")
    messages = _items(params["input"], f"{where}: responses_create_params.input", given=True)
    response = obj(rec.get("response"), f"{where}: response", "the policy's response {output, ...}")
    infra = _response_infra(response)
    messages += _items(response.get("output") or [], f"{where}: response.output", given=False)
    content = _first_user_text(params["input"])
    task_id = row = ident(rec.get("_ng_task_index"), f"{where}: _ng_task_index")
    messages, task_id, content, drawn_by = _recorded(rec, messages, task_id, content, where)
    if task_id is None:  # rows without Gym's index: the task is its input, identical across repeats
        task_id = hashlib.sha256((content or repr(params["input"])).encode()).hexdigest()[:16]
    trial = rec.get("_ng_rollout_index")
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, int)):
        raise ConfigError(f"{where}: _ng_rollout_index: expected an integer, got {trial!r}")
    policy, simulator = _models(rec, response, drawn_by)
    return PublishedConversation(
        f"{task_id if row is None else row}:{trial}" if trial is not None else f"line-{i}", task_id, messages,
        trial=trial,
        reward=None if infra else number(rec.get("reward"), f"{where}: reward"), infra_error=infra,
        policy=policy, simulator=simulator, task_content=content,
    )  # fmt: skip


def _response_infra(response: dict[str, object]) -> str | None:
    """Why the policy's response holds no rollout (none, an error, a failed status), or ``None``."""
    if not response:
        return "no response"
    if response.get("error"):
        err = response["error"]
        return f"response error: {err.get('message') if isinstance(err, dict) else err}"
    if response.get("status") in FAILED:
        return f"response status {response['status']}"
    return None


def _recorded(
    rec: dict[str, object], messages: list[Any], task_id: str | None, content: str | None, where: str
) -> tuple[list[Any], str | None, str | None, str | None]:
    """``(messages, task id, task text, simulator model)`` where the row's ``result`` records the whole
    conversation (τ2 through Gym, a user-simulation environment); else those given, and no model."""
    result = rec.get("result")
    trajectory = result.get("trajectory") if isinstance(result, dict) else None
    drawn_by = None
    if isinstance(result, dict) and isinstance(result.get("messages"), list) and "termination_reason" in result:
        # τ2 through Gym: ``result`` is τ2's own simulation record, every user turn of it drawn in the rollout
        messages = _tau2_messages(result["messages"], f"{where}: result.messages")
        # the input's user turn is the simulator's first draw, not the task: the task is τ2's own
        # (``task.id``, its user scenario), as in a τ2 results file, so the repeats of a task pair
        task_id, content = _tau2_task(rec, result, task_id, content)
    elif isinstance(trajectory, dict) and trajectory.get("messages") is not None:
        # a user-simulation environment records the whole conversation, the simulator's turns with the
        # calls that drew them (its opening included, which ``input`` carries as if it were given)
        system = [m for m in messages if m.role == "system"]
        turns, drawn_by = _trajectory(trajectory, f"{where}: result.trajectory")
        messages = system + turns
        if any(m.role == "simulator" and not m.meta.get("given") for m in turns[:1]):
            # the opening is the simulator's first draw, different in each repeat: the task is the
            # scenario it was given (none: the task is paired by its id)
            content = _scenario_text(rec.get("customer_scenario"))
    return messages, task_id, content, drawn_by


def _models(rec: dict[str, object], response: dict[str, object], drawn_by: str | None) -> tuple[str | None, str | None]:
    """``(policy, simulator)``: the response's model (else τ2's ``config.llm_agent``) and ``config.llm_user``
    (else the model that drew the simulator's turns)."""
    model = response.get("model")
    config = rec.get("config")
    if not (isinstance(model, str) and model) and isinstance(config, dict):
        model = config.get("llm_agent")  # τ2 through Gym names its agent's model in its config
    policy = model if isinstance(model, str) and model else None
    user = config.get("llm_user") if isinstance(config, dict) else None
    simulator = user if isinstance(user, str) and user else drawn_by
    return policy, simulator
