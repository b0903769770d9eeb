"""Finding and loading τ2 domain data: tasks, database, policy, splits, user-simulator guidelines.

The official data is not shipped. It is read from a directory given explicitly (``data_dir``, the
CLI's ``--tau2-data``) or by the environment variable ``COLLAPSE_PROBE_TAU2_DATA``. Accepted layouts
for a domain ``retail`` / ``airline``:

* ``<dir>/<domain>/tasks.json`` (with ``db.json``, ``policy.md``, ``split_tasks.json``),
* the official repository's ``<dir>/data/tau2/domains/<domain>/`` or ``<dir>/domains/<domain>/``,
* ``<dir>`` itself when it holds ``tasks.json``.

The user-simulator guidelines are read from ``user_simulator/simulation_guidelines.md`` next to the
domain folders when present, else a built-in text with the same rules is used. The self-written
``demo`` domain (retail tools) ships inside the package under ``collapse_probe/data/tau2-demo`` and is used when
no directory is given for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Required, TypedDict

from pydantic import JsonValue

from collapse_probe.benchmarks._base import ArenaToolCall
from collapse_probe.benchmarks.tau2._db import CANONICALISERS, Tables
from collapse_probe.core._resources import dataset_path
from collapse_probe.core._state import process_cache
from collapse_probe.errors import ConfigError


class TaskAction(TypedDict, total=False):
    """A gold action of ``evaluation_criteria.actions`` (checked at load: ``name`` a string, ``arguments`` an object)."""

    action_id: str
    name: Required[str]
    arguments: dict[str, JsonValue]
    compare_args: list[str] | None
    """The argument names compared with the agent's call (``None``: all the call's arguments)."""
    requestor: str


class EnvFunctionCall(TypedDict, total=False):
    """An ``initialization_actions`` or ``env_assertions`` entry: a toolkit function called with ``arguments``."""

    env_type: str
    func_name: Required[str]
    arguments: dict[str, JsonValue] | None
    assert_value: bool
    """For an assertion: the boolean the function must return (default true)."""


class ReferenceMessage(TypedDict, total=False):
    """A message in the reference's roles (``assistant`` / ``user`` / ``tool``): a task's
    ``initial_state.message_history`` entry, and an episode's record as the reward replays it."""

    role: Required[str]
    content: str | None
    tool_calls: list[ArenaToolCall] | None
    """An ``assistant`` message's calls ``{"id", "name", "arguments"}``."""
    id: str | None
    """A ``tool`` message's call id (the reference's name for it)."""
    tool_call_id: str | None
    """A ``tool`` message's call id where ``id`` is absent."""
    error: bool


class InitialState(TypedDict, total=False):
    initialization_data: dict[str, JsonValue] | None
    """``{"agent_data": <DB update merged into the database>, ...}``."""
    initialization_actions: list[EnvFunctionCall] | None
    message_history: list[ReferenceMessage] | None
    """The conversation so far, in the reference's roles (``assistant`` / ``user`` / ``tool``)."""


class EvaluationCriteria(TypedDict, total=False):
    actions: list[TaskAction] | None
    env_assertions: list[EnvFunctionCall] | None
    communicate_info: list[str] | None
    nl_assertions: list[str] | None
    reward_basis: list[str] | None
    """The reward's components (default ``DB``, ``COMMUNICATE``)."""


class UserScenario(TypedDict, total=False):
    persona: str | None
    instructions: Required[str | dict[str, JsonValue]]
    """A text, or ``{domain, reason_for_call, known_info, unknown_info, task_instructions}``."""


class Tau2Task(TypedDict, total=False):
    """A task of ``tasks.json`` in the official layout; :func:`load_domain` checks the fields typed here
    as objects, lists and strings (the values inside the history and the arguments are the data's own)."""

    id: Required[str]
    description: JsonValue
    user_scenario: Required[UserScenario]
    initial_state: InitialState | None
    evaluation_criteria: EvaluationCriteria | None


ENV_VAR = "COLLAPSE_PROBE_TAU2_DATA"
DOMAIN_KINDS: dict[str, str] = {"retail": "retail", "airline": "airline", "demo": "retail"}
"""Domain name -> the toolkit it uses (the demo domain is retail-like)."""


def demo_dir() -> Path:
    """The shipped demo domain: ``collapse_probe/data/tau2-demo`` (``$COLLAPSE_PROBE_DATASETS`` overrides the root)."""
    return dataset_path("tau2-demo")


DEFAULT_GUIDELINES = """# User simulation guidelines
You play a customer who contacts a customer-service agent. Act out the scenario below realistically.

## Core principles
- Write one message at a time, as a customer would, and keep the conversation natural.
- Follow the scenario instructions strictly.
- Never invent information that the scenario does not give you; anything it does not mention is unknown to you.
- Do not copy the instructions word for word; say the same thing in your own words.
- Reveal information step by step: give a detail only when the agent asks for it.

## Ending the conversation
- When the goal of the instructions is reached, write '###STOP###' to end the conversation.
- If you are transferred to another agent, write '###TRANSFER###'.
- If the scenario does not give you enough information to go on, write '###OUT-OF-SCOPE###'.
"""


@dataclass(frozen=True)
class DomainData:
    """Everything a τ2 domain reads from disk (tasks and DB as loaded, canonical)."""

    name: str
    kind: str
    path: Path
    tasks: list[Tau2Task]
    db: Tables
    policy: str
    splits: dict[str, list[str]]
    guidelines: str

    def task(self, task_id: str) -> Tau2Task:
        for t in self.tasks:
            if t["id"] == str(task_id):
                return t
        raise ConfigError(f"{self.path / 'tasks.json'}: no task with id {task_id!r} ({len(self.tasks)} tasks)")


def normalize_domain(domain: str) -> str:
    """``"tau2-retail"`` / ``"retail"`` -> ``"retail"``; unknown names raise :class:`ConfigError`."""
    name = domain[len("tau2-") :] if domain.startswith("tau2-") else domain
    if name not in DOMAIN_KINDS:
        known = ", ".join(f"tau2-{d}" for d in DOMAIN_KINDS)
        raise ConfigError(f"unknown tau2 domain {domain!r}; expected one of {known}")
    return name


def resolve_domain_dir(domain: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding ``domain``'s files (see the module docstring for layouts and lookup)."""
    name = normalize_domain(domain)
    source = "data_dir"
    if data_dir is None:
        env = os.environ.get(ENV_VAR)
        if env:
            data_dir, source = env, f"${ENV_VAR}"
        elif name == "demo":
            data_dir, source = demo_dir(), "the shipped demo"
        else:
            raise ConfigError(
                f"tau2 domain {name!r} needs the official tau2 data: pass data_dir / --tau2-data DIR or set "
                f"{ENV_VAR} (a folder with {name}/tasks.json, or the tau2-bench repository)"
            )
    root = Path(data_dir).expanduser()
    candidates = [root / name, root / "domains" / name, root / "data" / "tau2" / "domains" / name, root]
    if name == "demo":
        candidates.insert(1, root / "tau2-demo")
    for c in candidates:
        if (c / "tasks.json").is_file():
            return c
    tried = ", ".join(str(c / "tasks.json") for c in candidates)
    raise ConfigError(f"tau2 domain {name!r}: no tasks.json under {source} {str(root)!r} (looked for {tried})")


def _read_json(path: Path) -> Any:
    from collapse_probe.core._files import FileProblem, MissingFile, parse_json, read_bytes

    try:
        raw = read_bytes(path, expected="a tau2 JSON data file")
    except MissingFile:
        raise ConfigError(f"tau2 data: missing file {str(path)!r}") from None
    except FileProblem as exc:
        raise ConfigError(f"tau2 data: {exc}") from None
    return parse_json(raw, path, expected="a UTF-8 JSON file")


def _check_tasks(tasks: Any, path: Path) -> list[Tau2Task]:
    if not isinstance(tasks, list):
        raise ConfigError(f"{path}: expected a JSON list of tasks")
    seen: set[str] = set()
    for i, t in enumerate(tasks):
        if not isinstance(t, dict) or not isinstance(t.get("id"), str):
            raise ConfigError(f"{path}: task [{i}]: expected an object with a string 'id'")
        if t["id"] in seen:
            raise ConfigError(f"{path}: task id {t['id']!r} appears twice")
        seen.add(t["id"])
        scen = t.get("user_scenario")
        if not isinstance(scen, dict) or not isinstance(scen.get("instructions"), (str, dict)):
            raise ConfigError(
                f"{path}: task {t['id']!r}: field 'user_scenario.instructions' must be a string or an object"
            )
        init = t.get("initial_state")
        if init is not None and not isinstance(init, dict):
            raise ConfigError(f"{path}: task {t['id']!r}: field 'initial_state' must be an object or null")
        if isinstance(init, dict):
            for key in ("initialization_data", "initialization_actions", "message_history"):
                v = init.get(key)
                if v is not None and not isinstance(v, dict if key == "initialization_data" else list):
                    kind_name = "an object" if key == "initialization_data" else "a list"
                    raise ConfigError(
                        f"{path}: task {t['id']!r}: field 'initial_state.{key}' must be {kind_name} or null"
                    )
        ec = t.get("evaluation_criteria")
        if ec is not None:
            if not isinstance(ec, dict):
                raise ConfigError(f"{path}: task {t['id']!r}: field 'evaluation_criteria' must be an object or null")
            for key in ("actions", "nl_assertions", "communicate_info", "env_assertions"):
                if ec.get(key) is not None and not isinstance(ec.get(key), list):
                    raise ConfigError(
                        f"{path}: task {t['id']!r}: field 'evaluation_criteria.{key}' must be a list or null"
                    )
            for j, a in enumerate(ec.get("actions") or []):
                if (
                    not isinstance(a, dict)
                    or not isinstance(a.get("name"), str)
                    or not isinstance(a.get("arguments", {}), dict)
                ):
                    raise ConfigError(
                        f"{path}: task {t['id']!r}: evaluation_criteria.actions[{j}] needs 'name' (string) and 'arguments' (object)"
                    )
    return tasks


def _guidelines(domain_dir: Path) -> str:
    for c in (
        domain_dir.parent / "user_simulator" / "simulation_guidelines.md",
        domain_dir.parent.parent / "user_simulator" / "simulation_guidelines.md",
        domain_dir / "simulation_guidelines.md",
    ):
        if c.is_file():
            return c.read_text(encoding="utf-8")
    return DEFAULT_GUIDELINES


_CACHE: dict[tuple[str, str, float], DomainData] = process_cache("benchmarks.tau2_domains", {})


def load_domain(domain: str, data_dir: str | os.PathLike[str] | None = None) -> DomainData:
    """Load (once per process and file version) a domain's tasks, canonical DB, policy and splits."""
    name = normalize_domain(domain)
    d = resolve_domain_dir(name, data_dir)
    key = (name, str(d.resolve()), (d / "db.json").stat().st_mtime if (d / "db.json").exists() else 0.0)
    if key in _CACHE:
        return _CACHE[key]
    kind = DOMAIN_KINDS[name]
    tasks = _check_tasks(_read_json(d / "tasks.json"), d / "tasks.json")
    raw_db = _read_json(d / "db.json")
    try:
        db = CANONICALISERS[kind](raw_db, str(d / "db.json"))
    except ConfigError:
        raise
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:  # a field of another shape
        raise ConfigError(
            f"{d / 'db.json'}: not the official tau2 {kind} database layout ({type(exc).__name__}: {exc})"
        ) from None
    policy_path = d / "policy.md"
    if not policy_path.is_file():
        raise ConfigError(f"tau2 data: missing file {str(policy_path)!r} (the agent policy)")
    splits: dict[str, list[str]] = {"base": [t["id"] for t in tasks]}
    split_path = d / "split_tasks.json"
    if split_path.is_file():
        raw = _read_json(split_path)
        if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
            raise ConfigError(f"{split_path}: expected an object mapping split names to lists of task ids")
        ids = set(splits["base"])
        for split, members in raw.items():
            unknown = [m for m in members if str(m) not in ids]
            if unknown:
                raise ConfigError(f"{split_path}: split {split!r} names unknown task ids {unknown[:5]}")
            splits[split] = [str(m) for m in members]
    try:
        policy = policy_path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{policy_path}: not UTF-8 text (byte {exc.start}); expected the agent policy in Markdown"
        ) from None
    data = DomainData(name, kind, d, tasks, db, policy, splits, _guidelines(d))
    _CACHE[key] = data
    return data


def render_user_scenario(scenario: UserScenario) -> str:
    """The task's user scenario as the simulator reads it (persona, then the instructions)."""

    def indent(text: object) -> str:
        return "\n".join("\t" + line if line.strip() else line for line in str(text).split("\n"))

    lines: list[str] = []
    if scenario.get("persona") is not None:
        lines += ["Persona:", indent(scenario["persona"])]
    instr = scenario["instructions"]
    if isinstance(instr, str):
        lines += ["Instructions:", indent(instr)]
    else:
        parts = [f"Domain: {instr.get('domain', '')}", "Reason for call:", indent(instr.get("reason_for_call", ""))]
        if instr.get("known_info") is not None:
            parts += ["Known info:", indent(instr["known_info"])]
        if instr.get("unknown_info") is not None:
            parts += ["Unknown info:", indent(instr["unknown_info"])]
        parts += ["Task instructions:", indent(instr.get("task_instructions", ""))]
        lines += ["Instructions:", indent("\n".join(parts))]
    return "\n".join(lines)
