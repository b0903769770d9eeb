"""inspect_ai eval logs read as published trajectories (``audit --from FILE --format inspect``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError, require

# ------------------------------------------------------------------------------------------------- reading


def read_inspect_log(path: str | Path, sim_role: str = "user") -> Any:
    """Read an inspect eval log (``.eval`` or ``.json``) as published conversations: one per sample.

    The sample's ``input`` messages are given, not replies, and stay in the prefix; the simulator's
    replies are the messages of ``sim_role`` after them (``user``: a simulated user talking to the
    evaluated model). The task is ``metadata.task_id`` or the sample id, the trial the epoch; the
    reward the ``reward`` score, else the first numeric score; a sample ``error`` is an
    infrastructure failure.

    Raises:
        ConfigError: the file is missing or not an inspect eval log.
    """
    require("inspect_ai", "inspect", "audit --from FILE --format inspect", package="inspect-ai")
    from inspect_ai.log import read_eval_log

    from collapse_probe.interop._published import (
        PublishedConversation,
        PublishedMessage,
        PublishedRun,
        canonical_arguments,
        file_sha256,
    )

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--from {path}: no such file; expected an inspect eval log (.eval or .json)")
    try:
        log = read_eval_log(str(p))
    except Exception as exc:  # inspect raises its own and pydantic's errors for a file that is not a log
        raise ConfigError(
            f"{p}: not an inspect eval log ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        ) from None
    other = "assistant" if sim_role == "user" else "user"
    roles = {sim_role: "simulator", other: "policy", "tool": "tool", "system": "system"}
    roles_cfg = log.eval.model_roles or {}
    named_sim = roles_cfg.get("simulator") or roles_cfg.get("user")
    sim_model = getattr(named_sim, "model", None)
    run = PublishedRun(conversations=[], format="inspect", path=str(p), sha256=file_sha256(str(p)),
                       benchmark=(log.eval.metadata or {}).get("collapse_probe", {}).get("benchmark") or None,
                       policy=log.eval.model, simulator=sim_model)  # fmt: skip
    for s in log.samples or []:
        meta = s.metadata or {}
        given = [s.input] if isinstance(s.input, str) else list(s.input)
        n_given = 0
        for g, m in zip(given, s.messages, strict=False):
            text = g if isinstance(g, str) else g.text
            if m.text != text:
                break
            n_given += 1
        messages = []
        for i, m in enumerate(s.messages):
            calls = tuple(
                (c.function, canonical_arguments(c.arguments)) for c in (getattr(m, "tool_calls", None) or [])
            )
            role = "system" if i < n_given else roles.get(m.role, m.role)
            messages.append(PublishedMessage(role, m.text, calls, dict(m.metadata or {})))
        reward = None
        scores = s.scores or {}
        chosen = scores.get("reward") or next(iter(scores.values()), None)
        if chosen is not None:
            reward = _score_value(chosen.value)
        run.conversations.append(PublishedConversation(
            conversation_id=f"{s.id}#{s.epoch}",
            task_id=str(meta.get("task_id", s.id)),
            messages=messages,
            trial=s.epoch,
            reward=None if s.error is not None else reward,
            infra_error=s.error.message if s.error is not None else None,
            simulator_errors=list(meta.get("simulator_errors") or []),
            policy=str(meta.get("policy") or log.eval.model),
            simulator=str(meta["simulator"]) if meta.get("simulator") else sim_model,
            group=tuple(f"step={meta['step']}" for _ in [0] if meta.get("step") is not None),
        ))  # fmt: skip
    return run


def _score_value(value: Any) -> float | None:
    """A numeric reward from an inspect score value (``C``/``I`` and booleans through inspect's own rule)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        from inspect_ai.scorer import value_to_float

        try:
            return float(value_to_float()(value))
        except (TypeError, ValueError):
            return None
    return None
