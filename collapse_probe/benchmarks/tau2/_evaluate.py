"""Environments, gold replay and the τ2 reward (DB, COMMUNICATE, ACTION, ENV_ASSERTION, NL_ASSERTION), pass^k.

The reward follows the reference: a run that did not end by a stop signal scores 0; otherwise the
trajectory's write tool calls are replayed on a fresh environment (the *predicted* DB) and compared
by hash with a fresh environment on which every gold action was executed (the *gold* DB; failing
gold actions are skipped, their partial effects stay). The final reward is the product of the
components named in the task's ``reward_basis``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from collapse_probe.benchmarks._base import ArenaToolCall
from collapse_probe.benchmarks.tau2._data import (
    DomainData,
    EnvFunctionCall,
    ReferenceMessage,
    TaskAction,
    Tau2Task,
    load_domain,
)
from collapse_probe.benchmarks.tau2._db import CANONICALISERS, AirlineTables, Database, RetailTables, Tables, deep_merge
from collapse_probe.benchmarks.tau2._tools import ToolResult
from collapse_probe.benchmarks.tau2.airline import AirlineTools
from collapse_probe.benchmarks.tau2.retail import RetailTools
from collapse_probe.errors import ConfigError

STOP_REASONS = ("user_stop", "agent_stop")
"""Termination reasons under which the reward is computed; every other reason scores 0."""


class Environment:
    """A domain's toolkit over a fresh copy-on-write database."""

    def __init__(self, kind: str, base: Tables) -> None:
        self.kind = kind
        self.tools: RetailTools | AirlineTools
        if kind == "retail" and "orders" in base:
            self.tools = RetailTools(Database(kind, base))
        elif kind == "airline" and "reservations" in base:
            self.tools = AirlineTools(Database(kind, base))
        else:
            raise KeyError(kind)
        self.db: Database[RetailTables] | Database[AirlineTables] = self.tools.db

    def execute(self, name: Any, arguments: Any) -> ToolResult:
        return self.tools.invoke(name, arguments)

    def is_write(self, name: Any) -> bool:
        return isinstance(name, str) and self.tools.is_write(name)


def _message_tool_pairs(messages: Sequence[ReferenceMessage]) -> list[tuple[ArenaToolCall, ReferenceMessage | None]]:
    """Pair every tool call in ``messages`` with its tool message (by id, in order)."""
    results: dict[str, ReferenceMessage] = {}
    for m in messages:
        if m.get("role") == "tool" and m.get("id", m.get("tool_call_id")) is not None:
            results.setdefault(str(m.get("id", m.get("tool_call_id"))), m)
    pairs = []
    for m in messages:
        for call in m.get("tool_calls") or []:
            pairs.append((call, results.get(str(call.get("id")))))
    return pairs


def replay_tool_calls(env: Environment, messages: Sequence[ReferenceMessage]) -> int:
    """Re-execute the write tool calls of ``messages`` on ``env``; return how many outputs differed."""
    mismatches = 0
    for call, recorded in _message_tool_pairs(messages):
        if not env.is_write(call.get("name")):
            continue
        out = env.execute(call.get("name"), call.get("arguments"))
        if recorded is not None and not _same_output(out.content, str(recorded.get("content", ""))):
            mismatches += 1
    return mismatches


def _same_output(a: str, b: str) -> bool:
    try:
        return json.loads(a) == json.loads(b)
    except (json.JSONDecodeError, ValueError):
        return a == b


def initial_environment(data: DomainData, task: Tau2Task, replay_history: bool = True) -> Environment:
    """A fresh environment with the task's ``initial_state`` applied (data, actions, and unless
    ``replay_history`` is false the write tool calls of its message history)."""
    init = task.get("initial_state") or {}
    base = data.db
    agent_data = (init.get("initialization_data") or {}).get("agent_data")
    if agent_data:
        base = CANONICALISERS[data.kind](deep_merge(base, agent_data), f"task {task['id']}: initialization_data")
    env = Environment(data.kind, base)
    for action in init.get("initialization_actions") or []:
        fn = getattr(env.tools, action["func_name"], None)
        if fn is None:
            raise ConfigError(
                f"task {task['id']}: initialization action {action['func_name']!r} is not a {data.kind} function"
            )
        fn(**(action.get("arguments") or {}))  # errors are not caught, as in the reference
    history = init.get("message_history")
    if replay_history and history:
        replay_tool_calls(env, history)
    return env


class GoldReplay:
    """The result of executing a task's gold actions on a fresh environment.

    ``db_before`` / ``db_after`` are materialised on first access (each is a full copy of the DB).
    """

    def __init__(self, task_id: str, before: Environment, after: Environment, results: list[ToolResult]) -> None:
        self.task_id = task_id
        self.action_ok: list[bool] = [not r.error for r in results]
        """One flag per gold action, in order: whether it succeeded (a failing one is skipped)."""
        self.outputs: list[str] = [r.content for r in results]
        """The tool output of each gold action (``Error: ...`` for failures)."""
        self._before = before
        self.env = after
        """The environment after the gold actions."""

    @cached_property
    def db_before(self) -> dict[str, dict[str, object]]:
        """The canonical DB after the task's initial state, before the gold actions (db.json layout)."""
        return self._before.db.dump()

    @cached_property
    def db_after(self) -> dict[str, dict[str, object]]:
        """The canonical DB after the gold actions (db.json layout)."""
        return self.env.db.dump()

    @cached_property
    def changed(self) -> dict[str, list[str]]:
        """Per table, the ids of records the gold actions added, removed or changed."""
        if self._before.db.changed():
            # Initial state wrote records: compare against the initial state instead of the base.
            return {
                t: [
                    k
                    for k in self.db_after[t]
                    if json.dumps(self.db_before[t].get(k)) != json.dumps(self.db_after[t][k])
                ]
                + [k for k in self.db_before[t] if k not in self.db_after[t]]
                for t in self.db_after
            }
        return self.env.db.changed()


def gold_environment(data: DomainData, task: Tau2Task) -> tuple[Environment, list[ToolResult]]:
    """Execute every gold action (reads too) in order on a fresh environment."""
    env = initial_environment(data, task)
    results = []
    for action in (task.get("evaluation_criteria") or {}).get("actions") or []:
        results.append(env.execute(action["name"], action.get("arguments") or {}))
    return env, results


def replay_gold(domain: str, task_id: str | int, data_dir: str | os.PathLike[str] | None = None) -> GoldReplay:
    """Replay one task's gold actions and return which succeeded and the DB before and after.

    Args:
        domain: ``"retail"``, ``"airline"`` or ``"demo"`` (``"tau2-"`` prefix accepted).
        task_id: the task's ``id`` in tasks.json.
        data_dir: the tau2 data directory (see :func:`~collapse_probe.benchmarks.tau2.resolve_domain_dir`);
            ``None`` reads ``$COLLAPSE_PROBE_TAU2_DATA``.

    Returns:
        A :class:`GoldReplay` with ``action_ok``, ``outputs``, ``db_before``, ``db_after``, ``changed``.
    """
    data = load_domain(domain, data_dir)
    task = data.task(str(task_id))
    env, results = gold_environment(data, task)
    return GoldReplay(str(task_id), initial_environment(data, task), env, results)


# ---- reward components -----------------------------------------------------------------------


def communicate_score(communicate_info: Sequence[str] | None, agent_texts: Sequence[str]) -> float:
    """1 if every required string occurs (case-insensitively, commas removed from the message) in an agent message."""
    if not communicate_info:
        return 1.0
    texts = [t.lower().replace(",", "") for t in agent_texts if t and t.strip()]
    return 1.0 if all(any(s.lower() in t for t in texts) for s in communicate_info) else 0.0


def action_score(gold_actions: Sequence[TaskAction] | None, calls: Sequence[ArenaToolCall]) -> float:
    """1 if every gold action is matched by a tool call with the same name and equal compared arguments."""
    for gold in gold_actions or []:
        compare = gold.get("compare_args")
        gargs = gold.get("arguments") or {}

        def matches(
            call: ArenaToolCall,
            gold: TaskAction = gold,
            compare: list[str] | None = compare,
            gargs: Mapping[str, object] = gargs,
        ) -> bool:
            if call.get("name") != gold["name"]:
                return False
            raw = call.get("arguments")
            args: Mapping[str, object] = raw if isinstance(raw, dict) else {}
            keys = list(args) if compare is None else list(compare)
            return all(args.get(k) == gargs.get(k) for k in keys)

        if not any(matches(c) for c in calls):
            return 0.0
    return 1.0


def env_assertion_score(env: Environment, assertions: Sequence[EnvFunctionCall] | None) -> float:
    """Product over ``env_assertions``: the named function's boolean result must equal ``assert_value``."""
    for a in assertions or []:
        fn = getattr(env.tools, a["func_name"], None)
        if fn is None:
            return 0.0
        try:
            value = fn(**(a.get("arguments") or {}))
        except Exception:  # noqa: BLE001 - a failing assertion function is a failed assertion
            return 0.0
        if bool(value) != bool(a.get("assert_value", True)):
            return 0.0
    return 1.0


def pass_hat_k(successes_by_task: Mapping[str, Sequence[bool | None]], k: int) -> float:
    """pass^k: the mean over tasks of C(c, k) / C(n, k) (the unbiased estimator of k-of-k success).

    Args:
        successes_by_task: per task, the success flag of each trial; ``None`` marks an
            infrastructure error, excluded before counting.
        k: the number of trials that must all succeed (1 <= k <= trials of every task).

    Raises:
        ConfigError: when ``k`` < 1, no task is given, or a task has fewer than ``k`` valid trials.

    >>> pass_hat_k({"a": [True, True, False], "b": [False, False, False]}, 2)
    0.16666666666666666
    """
    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"pass_hat_k: k must be an integer >= 1, got {k!r}")
    if not successes_by_task:
        raise ConfigError("pass_hat_k: no tasks given")
    total = 0.0
    for task_id, trials in successes_by_task.items():
        valid = [bool(s) for s in trials if s is not None]
        n, c = len(valid), sum(valid)
        if n < k:
            raise ConfigError(f"pass_hat_k: task {task_id!r} has {n} valid trials, fewer than k={k}")
        total += math.comb(c, k) / math.comb(n, k)
    return total / len(successes_by_task)
