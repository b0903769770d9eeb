"""A reader of τ2-bench's official results files (``Results`` / ``SimulationRun`` in tau2-bench's
``src/tau2/data_model/simulation.py``), written here: only the fields an audit needs are modelled,
every other field is ignored, so files from older and newer tau2-bench versions read alike.

Both storage formats are read: the monolithic ``results.json`` (``simulations`` inline) and the
directory format (``results.json`` metadata beside a ``simulations/`` folder of one JSON file per
simulation). What is used:

- ``info.user_info.llm`` (the user simulator), ``info.agent_info.llm`` and its ``llm_args``
  (temperature 0: the agent is greedy), ``info.environment_info.domain_name`` (the benchmark);
- ``tasks[].user_scenario`` (the persona and instructions): each conversation's ``task_content``,
  which pairs tasks across files whose ids differ;
- per simulation: ``id``, ``task_id``, ``trial``, ``messages`` (roles ``assistant`` = the agent,
  ``user`` = the simulator, ``tool``, ``system``; a ``MultiToolMessage``'s ``tool_messages`` are
  read one by one), ``reward_info.reward``, ``termination_reason``;
- the simulator errors a record flags: ``review.errors`` with ``source == "user"`` (severity
  ``critical*`` counts as critical), ``user_only_review.errors``, ``hallucination_check``, and a
  ``user_error`` termination.

``infrastructure_error`` and ``context_window_exceeded`` terminations are tau2-bench's own
non-evaluable runs: infrastructure failures here, excluded from every estimate and counted.
Full-duplex (voice) simulations store ``messages: null`` and their turns in ``ticks``: their turns are
rebuilt from the ticks' chunks (:mod:`collapse_probe.integrations.interop._tau2_voice`). Half-duplex simulations
whose messages are audio carry no text replies to class; they are skipped and counted.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from collapse_probe.benchmarks._registry import DIRECTORY_FORMAT, TAU2_BENCHMARK_PREFIX
from collapse_probe.errors import ConfigError

NON_EVALUABLE = ("infrastructure_error", "context_window_exceeded")
"""τ2 termination reasons of runs that never produced an evaluable rollout."""
USER_ERROR_TERMINATION = "user_error"


class _Model(BaseModel):
    """Only the modelled fields are read; every other field of the file is ignored."""

    model_config = ConfigDict(extra="ignore")


class ToolCall(_Model):
    """A tool call of a message (``arguments``: an object, or its JSON text)."""

    name: str
    arguments: Any = Field(default_factory=dict)


class Message(_Model):
    """A message; a ``MultiToolMessage`` carries its tool results in ``tool_messages``."""

    role: str
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_messages: list[Message] | None = None
    is_audio: bool = False


class ReviewError(_Model):
    """An error a conversation review found (``source``: ``user``, ``agent`` or ``unknown``)."""

    source: str | None = None
    severity: str | None = None
    error_tags: list[str] = Field(default_factory=list)
    turn_idx: int | None = None


class Review(_Model):
    """A conversation review (``review`` or ``user_only_review`` of a simulation)."""

    user_error: bool = False
    critical_user_error: bool = False
    errors: list[ReviewError] = Field(default_factory=list)


class HallucinationCheck(_Model):
    """The check of the user simulator's messages for made-up information."""

    hallucination_found: bool = False


class RewardInfo(_Model):
    """The reward of a simulation."""

    reward: float | None = None


class SimulationRun(_Model):
    """One simulation (a trial of a task)."""

    id: str
    task_id: str
    trial: int | None = None
    termination_reason: str | None = None
    reward_info: RewardInfo | None = None
    messages: list[Message] | None = None
    ticks: list[Any] | None = None
    review: Review | None = None
    user_only_review: Review | None = None
    hallucination_check: HallucinationCheck | None = None

    @field_validator("id", "task_id", mode="before")
    @classmethod
    def _as_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class LLMInfo(_Model):
    """The user's or the agent's implementation and model."""

    implementation: str | None = None
    llm: str | None = None
    llm_args: dict[str, JsonValue] | None = None


class EnvironmentInfo(_Model):
    """The domain."""

    domain_name: str | None = None


class Info(_Model):
    """The run's information block."""

    user_info: LLMInfo | None = None
    agent_info: LLMInfo | None = None
    environment_info: EnvironmentInfo | None = None
    num_trials: int | None = None


class Results(_Model):
    """A results file: its information and its simulations."""

    info: Info | None = None
    simulations: list[SimulationRun] = Field(default_factory=list)


_INSTRUCTION_FIELDS = ("domain", "reason_for_call", "known_info", "unknown_info", "task_instructions")
"""The fields of tau2-bench's ``StructuredUserInstructions``, in the order the user simulator reads them."""


def task_contents(tasks: Any) -> dict[str, str]:
    """The text of each task of a results file's ``tasks[]`` by task id: the user scenario's persona and
    instructions (``user_scenario.instructions``: a string, or tau2-bench's structured instructions read
    field by field), what the user simulator was told. A task without a readable scenario has no entry
    (its conversations are paired by id only); ``tasks`` that is not a list gives none."""
    out: dict[str, str] = {}
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict) or isinstance(task.get("id"), bool) or not isinstance(task.get("id"), str | int):
            continue
        scenario = task.get("user_scenario")
        if not isinstance(scenario, dict):
            continue
        parts = [scenario["persona"]] if isinstance(scenario.get("persona"), str) and scenario["persona"] else []
        instructions = scenario.get("instructions")
        if isinstance(instructions, str):
            parts.append(instructions)
        elif isinstance(instructions, dict):
            parts.extend(f"{k}: {instructions[k]}" for k in _INSTRUCTION_FIELDS if isinstance(instructions.get(k), str))
            parts.extend(f"{k}: {v}" for k, v in sorted(instructions.items())
                         if k not in _INSTRUCTION_FIELDS and isinstance(v, str))  # fmt: skip
        if parts:
            out[str(task["id"])] = "\n".join(parts)
    return out


def _validation_error(path: Path, exc: Any, prefix: str = "") -> ConfigError:
    """One line naming the file, the field and what was expected (the first of pydantic's errors)."""
    err = exc.errors()[0]
    loc = prefix
    for part in err.get("loc", ()):
        loc += f"[{part}]" if isinstance(part, int) else (f".{part}" if loc else str(part))
    got = "nothing" if err.get("type") == "missing" or "input" not in err else type(err["input"]).__name__
    return ConfigError(
        f"{path}: not a τ2-bench results file: {loc or 'top level'}: {err.get('msg', 'invalid')} (got {got}); "
        "expected tau2-bench's Results format (info, tasks, simulations)"
    )


def _read_json(path: Path, label: str | None = None) -> Any:
    """A file of the results, read with the limits of every user's file (a regular file of at most
    1 GiB; no unusable integer, lone surrogate, NaN or nesting, each named by its field)."""
    from collapse_probe.core._files import MissingFile, read_json_file

    try:
        return read_json_file(path, label=label, expected="a τ2-bench results file (JSON)")
    except MissingFile:
        raise ConfigError(f"--from {path}: no such file; expected a τ2-bench results.json (or its directory)") from None


def _temperature(info: Info | None, where: Path) -> float | None:
    """The agent's sampling temperature (``info.agent_info.llm_args.temperature``), checked: a number or absent."""
    args = info.agent_info.llm_args if info and info.agent_info else None
    value = (args or {}).get("temperature")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"{where}: info.agent_info.llm_args.temperature: expected a number >= 0 (the agent's sampling "
            f"temperature) or null, got {value!r}"
        )
    return float(value)


def read_tau2_results(path: str | Path) -> Any:
    """Read a τ2-bench results file or results directory into a :class:`PublishedRun`.

    Every file is read with the limits of :func:`collapse_probe.core._files.read_json_file`: a FIFO, a
    device (a link to ``/dev/zero``) or a file past 1 GiB in the directory is refused, naming it.

    Raises:
        ConfigError: the file is missing, not JSON, or not in τ2-bench's results format (naming the field).
    """
    from collapse_probe.integrations.interop._published import PublishedRun, file_sha256

    p = Path(path)
    meta_path, sims_dir = (p / "results.json", p / "simulations") if p.is_dir() else (p, p.parent / "simulations")
    data, results, inline, sims = _read_simulations(meta_path, sims_dir)
    info = results.info
    user = info.user_info if info else None
    agent = info.agent_info if info else None
    domain = info.environment_info.domain_name if info and info.environment_info else None
    temperature = _temperature(info, meta_path)
    run = PublishedRun(
        conversations=[],
        format=DIRECTORY_FORMAT,
        path=str(p),
        sha256=file_sha256(str(meta_path)),
        benchmark=f"{TAU2_BENCHMARK_PREFIX}{domain}" if domain else None,
        policy=(agent.llm or agent.implementation) if agent else None,
        simulator=(user.llm or user.implementation) if user else None,
        agent_greedy=None if temperature is None else temperature == 0.0,
    )
    contents = task_contents(data.get("tasks"))
    for sim in sims:
        conv = _conversation(sim, run)
        if conv is not None:
            conv.task_content = contents.get(conv.task_id)
            run.conversations.append(conv)
    if sims_dir.is_dir() and not inline:
        run.notes.append(f"directory format: {len(sims)} simulation files in {sims_dir}")
    run.notes.extend(_voice_notes(run.conversations))
    return run


def _read_simulations(meta_path: Path, sims_dir: Path) -> tuple[dict[str, object], Results, object, list[Any]]:
    """Read and check a results file and, in the directory format, its simulation files:
    ``(data, results, inline, sims)`` (``inline`` is the file's own ``simulations`` field as read)."""
    data = _read_json(meta_path)
    if not isinstance(data, dict):
        raise ConfigError(f"{meta_path}: expected a JSON object (τ2-bench Results), got {type(data).__name__}")
    inline = data.get("simulations")
    try:
        results = Results.model_validate({**data, "simulations": inline if isinstance(inline, list) else []})
    except ValidationError as exc:
        raise _validation_error(meta_path, exc) from None
    if inline is not None and not isinstance(inline, list):
        raise ConfigError(f"{meta_path}: simulations: expected a list, got {type(inline).__name__}")
    sims = list(results.simulations)
    if not inline and sims_dir.is_dir():  # the directory format: one file per simulation
        for f in sorted(sims_dir.glob("*.json")):
            try:
                sims.append(SimulationRun.model_validate(_read_json(f)))
            except ValidationError as exc:
                raise _validation_error(f, exc) from None
    if "simulations" not in data and not sims_dir.is_dir():
        raise ConfigError(
            f"{meta_path}: not a τ2-bench results file: no 'simulations' (expected info, tasks, simulations)"
        )
    return data, results, inline, sims


def _voice_notes(conversations: list[Any]) -> list[str]:
    """A note on the full-duplex (voice) simulations read from their ticks, if any."""
    voice = [c for c in conversations if any("source" in m.meta for m in c.messages)]
    if not voice:
        return []
    heard = sum(1 for c in voice if any(m.meta.get("source") == "transcript" for m in c.messages))
    return [f"{len(voice)} full-duplex (voice) simulations read from their ticks"
            + (f" ({heard} from the agent's transcript of the user)" if heard else "")]  # fmt: skip


def _messages(sim: Any, run: Any) -> list[Any] | None:
    """A simulation's messages as published messages (from its ticks for a full-duplex one); ``None``,
    counted in ``run.skipped`` with the reason, for one that cannot be read as text."""
    from collapse_probe.integrations.interop._published import PublishedMessage, canonical_arguments

    raw = sim.messages
    where = f"{run.path}: simulation {sim.id!r}"
    messages: list[Any] = []
    if raw is None and sim.ticks:  # a full-duplex (voice) simulation: its turns are in its ticks
        from collapse_probe.integrations.interop._tau2_voice import messages_from_ticks

        messages, _ = messages_from_ticks(sim.ticks, where)
        if not messages:
            reason = "full-duplex (ticks carry no text: no chunk text, no transcript)"
            run.skipped[reason] = run.skipped.get(reason, 0) + 1
            return None
    elif raw is None:
        run.skipped["no messages"] = run.skipped.get("no messages", 0) + 1
        return None
    else:
        flat: list[Any] = []
        for m in raw:
            flat.extend(m.tool_messages if m.tool_messages is not None else [m])
        if any(m.is_audio for m in flat):
            run.skipped["audio messages"] = run.skipped.get("audio messages", 0) + 1
            return None
        role_of = {"assistant": "policy", "user": "simulator", "tool": "tool", "system": "system"}
        for m in flat:
            calls = tuple((c.name, canonical_arguments(c.arguments, where)) for c in (m.tool_calls or []))
            messages.append(PublishedMessage(role_of.get(m.role, m.role), m.content or "", calls))
    return messages


def _simulator_errors(sim: Any) -> list[dict[str, object]]:
    """The user simulator's errors that τ2-bench recorded for a simulation: a user-error termination,
    the reviews' user errors, a hallucination found."""
    errors: list[dict[str, object]] = []
    if sim.termination_reason == USER_ERROR_TERMINATION:
        errors.append({"flag": "termination:user_error", "critical": True})
    if sim.review is not None:
        for e in sim.review.errors:
            if e.source == "user":
                errors.append({"flag": "review", "critical": str(e.severity or "").startswith("critical"),
                               "severity": e.severity, "tags": e.error_tags, "turn_idx": e.turn_idx})  # fmt: skip
        if sim.review.user_error and not any(e["flag"] == "review" for e in errors):
            errors.append({"flag": "review", "critical": sim.review.critical_user_error})
    if sim.user_only_review is not None:
        for e in sim.user_only_review.errors:
            errors.append({"flag": "user_only_review", "critical": str(e.severity or "").startswith("critical"),
                           "severity": e.severity, "tags": e.error_tags, "turn_idx": e.turn_idx})  # fmt: skip
        if sim.user_only_review.user_error and not any(e["flag"] == "user_only_review" for e in errors):
            errors.append({"flag": "user_only_review", "critical": sim.user_only_review.critical_user_error})
    if sim.hallucination_check is not None and sim.hallucination_check.hallucination_found:
        errors.append({"flag": "hallucination_check", "critical": False})
    return errors


def _conversation(sim: Any, run: Any) -> Any:
    from collapse_probe.integrations.interop._published import PublishedConversation

    messages = _messages(sim, run)
    if messages is None:
        return None
    errors = _simulator_errors(sim)
    infra = None
    if sim.termination_reason in NON_EVALUABLE:
        infra = f"termination_reason {sim.termination_reason}"
    reward = sim.reward_info.reward if sim.reward_info is not None else None
    return PublishedConversation(
        conversation_id=sim.id,
        task_id=sim.task_id,
        messages=messages,
        trial=sim.trial,
        reward=None if infra else reward,
        infra_error=infra,
        simulator_errors=errors,
        policy=run.policy,
        simulator=run.simulator,
    )
