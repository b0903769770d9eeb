"""inspect_ai eval logs: a run directory written as one, and an eval log read as published trajectories.

Export builds the log from inspect_ai's own classes (``EvalLog``, ``EvalSample``, ...) and writes it
with ``write_eval_log``, so ``inspect_ai.log.read_eval_log``, ``inspect_ai.analysis.samples_df`` and
``inspect view`` read it like any eval:

- a ``play``, ``crossplay`` or ``train`` run: one sample per conversation (the record that counts,
  when a resumed run recorded one twice). Sample ``id`` is ``policy|simulator|task`` (a train run
  prefixes ``step-N|``), ``epoch`` the rollout + 1. The policy (the agent) is the ``assistant``, the
  simulator the ``user``, tool results ``tool``. Score ``reward``; an infrastructure failure is a
  sample ``error`` without a score (never scored). Metadata: task, rollout, policy, simulator, seed,
  status, the models' fingerprints, the arena's ``info``.
- an ``audit`` run: one sample per audited state of the headline mode (``results.json`` ``states``;
  with ``--compare-vs`` the other mode's states go to a second log beside it, ``NAME-MODE.eval``).
  The audited simulator is the model here, so in ``messages`` (the state's context) the simulator's
  turns are ``assistant`` and the policy's ``user``; ``output.choices`` holds the N sampled replies.
  Scores ``collapse_error`` (plug-in), ``collapse_error_estimate`` (bias-aware), ``entropy`` and, at a
  state that asks for a decision, ``decision_collapse_error``; metadata: kind, source, turn, class
  counts and names, intervals, mode, the simulator's fingerprint. An infrastructure failure is a
  sample ``error``.

``results`` carries the run's headline figures as ``EvalScore`` metrics, taken from ``results.json``
(not recomputed), and ``stats.model_usage`` its token counts.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError, require
from collapse_probe.integrations.interop._rundata import (
    RunData,
    checked_number,
    conversation_key_fields,
    current_flags,
    json_list,
    json_objects,
)


def _iso(path: Path) -> str:
    try:
        ts = path.stat().st_mtime
    except OSError:
        ts = 0.0
    return _dt.datetime.fromtimestamp(ts, tz=_dt.timezone.utc).isoformat()


def _metric(name: str, value: Any) -> Any:
    from inspect_ai.log import EvalMetric

    return EvalMetric(name=name, value=float(value))


def _score_block(name: str, figures: Mapping[str, object], scored: int | None = None) -> Any:
    """An ``EvalScore`` whose metrics are the given figures of ``results.json`` (``None`` left out)."""
    from inspect_ai.log import EvalScore

    metrics = {k: _metric(k, v) for k, v in figures.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    return EvalScore(name=name, scorer="collapse-probe", metrics=metrics, scored_samples=scored)


def _ci(figures: dict[str, object], prefix: str, ci: object) -> None:
    if isinstance(ci, list | tuple) and len(ci) == 2:
        figures[f"{prefix}ci95_lower"], figures[f"{prefix}ci95_upper"] = ci[0], ci[1]


def _chat(messages: Sequence[Mapping[str, object]], simulator_is_model: bool) -> list[Any]:
    """Run messages as inspect chat messages; ``simulator_is_model``: the simulator's turns are the
    ``assistant`` (an audit, where the simulator is the model evaluated), else the policy's."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    model_side = "simulator" if simulator_is_model else "policy"
    out: list[Any] = []
    for m in messages:
        role, content = m.get("role"), str(m.get("content") or "")
        meta = {k: v for k, v in m.items() if k not in ("role", "content", "tool_calls")} or None
        if role == model_side:
            given = m.get("tool_calls")
            calls = [
                ToolCall(id=str(c.get("id") or f"call-{i}"), function=str(c.get("name")),
                         arguments=dict(c["arguments"]) if isinstance(c.get("arguments"), dict) else {})
                for i, c in enumerate(given if isinstance(given, list) else []) if isinstance(c, dict)
            ] or None  # fmt: skip
            out.append(ChatMessageAssistant(content=content, tool_calls=calls, metadata=meta, model=None))
        elif role in ("policy", "simulator"):
            out.append(ChatMessageUser(content=content, metadata=meta))
        elif role == "tool":
            call_id = m.get("tool_call_id")
            out.append(ChatMessageTool(content=content, tool_call_id=call_id if isinstance(call_id, str) else None,
                                       metadata=meta))  # fmt: skip
        else:
            out.append(ChatMessageSystem(content=content, metadata=meta))
    return out


def _conversation_samples(run: RunData) -> list[Any]:
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.scorer import Score

    flags = current_flags(run.conversations, conversation_key_fields(run.kind))
    samples = []
    for rec, cur in zip(run.conversations, flags, strict=True):
        if not cur:
            continue
        step = f"step-{rec['step']}|" if rec.get("step") is not None else ""
        rollout = rec.get("rollout")
        scores = None
        if rec.get("reward") is not None and rec.get("status") != "infra_error":
            scores = {"reward": Score(value=checked_number(rec, "reward"), metadata={"success": rec.get("success")})}
        error = None
        if rec.get("status") == "infra_error":
            error = EvalError(message=f"infrastructure failure (not scored): {rec.get('infra_error')}",
                              traceback="", traceback_ansi="")  # fmt: skip
        meta_keys = ("key", "step", "task_id", "rollout", "policy", "simulator", "seed", "status", "infra_error",
                     "fingerprints", "info", "seconds", "persona_id", "success")  # fmt: skip
        samples.append(EvalSample(
            id=f"{step}{rec.get('policy')}|{rec.get('simulator')}|{rec.get('task_id')}",
            epoch=(rollout if isinstance(rollout, int) else 0) + 1,
            input=f"task {rec.get('task_id')}",
            target="",
            messages=_chat(json_objects(rec.get("messages")), simulator_is_model=False),
            scores=scores,
            error=error,
            metadata={k: rec[k] for k in meta_keys if k in rec},
        ))  # fmt: skip
    return samples


def _state_samples(run: RunData, mode: str) -> list[Any]:
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput
    from inspect_ai.scorer import Score

    fps = run.config.get("fingerprints") or {}
    flags = current_flags(run.samples, ("state_id", "mode"))
    samples = []
    partition = run.results.get("partitioner")
    for rec, cur in zip(run.samples, flags, strict=True):
        if not cur or str(rec.get("mode") or "direct") != mode:
            continue
        context = _chat(json_objects(rec.get("context")), simulator_is_model=True)
        ok = rec.get("status") == "ok"
        scores, output, error = None, None, None
        if ok:
            n, ci = rec.get("n"), rec.get("collapse_error_ci95")
            expl = f"N = {n} replies, classes by {partition}" + (
                f"; 95% CI [{ci[0]:.3f}, {ci[1]:.3f}]" if isinstance(ci, list) and len(ci) == 2 else ""
            )
            scores = {"collapse_error": Score(value=checked_number(rec, "collapse_error"), explanation=expl,
                                              metadata={"ci95": ci, "n": n})}  # fmt: skip
            if rec.get("collapse_error_estimate") is not None:
                scores["collapse_error_estimate"] = Score(value=checked_number(rec, "collapse_error_estimate"))
            if rec.get("entropy") is not None:
                scores["entropy"] = Score(value=checked_number(rec, "entropy"), metadata={"ci95": rec.get("entropy_ci95"),
                                                                                "unit": "nats"})  # fmt: skip
            dec = rec.get("decision")
            if isinstance(dec, dict) and dec.get("collapse_error") is not None:
                scores["decision_collapse_error"] = Score(value=checked_number(dec, "collapse_error"))
            output = ModelOutput(
                model=str(rec.get("simulator")),
                choices=[ChatCompletionChoice(message=ChatMessageAssistant(content=str(t)), stop_reason="stop")
                         for t in json_list(rec.get("responses"))],
            )  # fmt: skip
        else:
            error = EvalError(message=f"infrastructure failure (not measured): {rec.get('error')}",
                              traceback="", traceback_ansi="")  # fmt: skip
        meta_keys = ("state_id", "mode", "simulator", "source", "kind", "turn", "task_id", "conversation",
                     "closed_set", "status", "n", "class_counts", "class_names", "collapse_error_ci95",
                     "entropy_ci95", "low_confidence", "human_reply", "n_empty", "decision", "exact", "error")  # fmt: skip
        meta = {k: rec[k] for k in meta_keys if k in rec}
        meta["fingerprint"] = fps.get(rec.get("simulator")) if isinstance(fps, dict) else None
        samples.append(EvalSample(id=str(rec.get("state_id")), epoch=1, input=context or "", target="",
                                  messages=context, output=output or ModelOutput(), scores=scores, error=error,
                                  metadata=meta))  # fmt: skip
    return samples


def _results_scores(run: RunData) -> list[Any]:
    """The run's headline figures from ``results.json`` as inspect ``EvalScore`` metrics."""
    res, out = run.results, []
    if run.kind == "audit":
        s = res.get("summary") or {}
        ce = dict(s.get("collapse_error") or {})
        fig: dict[str, object] = {"estimate": ce.get("estimate"), "plugin": ce.get("plugin")}
        _ci(fig, "", ce.get("ci95"))
        out.append(_score_block("collapse_error", fig, s.get("n_states")))
        en = dict(s.get("entropy") or {})
        fig = {"estimate": en.get("estimate")}
        _ci(fig, "", en.get("ci95"))
        out.append(_score_block("entropy", fig, s.get("n_states")))
        dec = s.get("decision_collapse_error")
        if isinstance(dec, dict):
            fig = {"estimate": dec.get("estimate")}
            _ci(fig, "", dec.get("ci95"))
            out.append(_score_block("decision_collapse_error", fig, dec.get("n_states")))
    elif run.kind == "play":
        s = res.get("summary") or {}
        fig = {"mean_reward": s.get("mean_reward"), "n": s.get("n"), "infra_failures": s.get("infra_failures")}
        _ci(fig, "", s.get("ci95"))
        out.append(_score_block("reward", fig, s.get("n")))
    elif run.kind == "crossplay":
        for c in res.get("cells") or []:
            fig = {"mean_reward": c.get("mean_reward"), "n": c.get("n"), "infra_failures": c.get("infra_failures")}
            _ci(fig, "", c.get("ci95"))
            out.append(_score_block(f"reward[{c.get('policy')} vs {c.get('simulator')}]", fig, c.get("n")))
        for t in res.get("transfer") or []:
            fig = {"transfer_ratio": t.get("transfer_ratio"), "train_reward": t.get("train_reward"),
                   "heldout_reward": t.get("heldout_reward")}  # fmt: skip
            _ci(fig, "", t.get("ci95"))
            out.append(_score_block(f"transfer[{t.get('policy')}]", fig, t.get("n_tasks")))
    elif run.kind == "train":
        final = res.get("final") or {}
        keys = ("train_reward", "heldout_reward", "policy_entropy", "sim_collapse_error", "zero_std_share")
        out.append(_score_block("final", {k: final.get(k) for k in keys}))
        out.append(_score_block("mean", {k: (res.get("mean") or {}).get(k) for k in keys}))
    return out


def _model_of(run: RunData) -> str:
    c = run.config
    if run.kind == "audit":
        return str(c.get("sim"))
    if run.kind == "crossplay":
        pols = c.get("policies") or []
        return str(pols[0]) if len(pols) == 1 else "collapse-probe/" + ",".join(map(str, pols))
    return str(c.get("policy"))


def build_eval_log(run: RunData, mode: str | None = None) -> Any:
    """The inspect ``EvalLog`` of a run (for an audit: of the states of ``mode``, default the headline mode)."""
    require("inspect_ai", "inspect", "export --to inspect", package="inspect-ai")
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalPlan,
        EvalPlanStep,
        EvalResults,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import ModelConfig, ModelUsage

    from collapse_probe._version import __version__

    if run.kind == "audit":
        mode = mode or str(run.results.get("mode") or "direct")
        samples = _state_samples(run, mode)
    else:
        samples = _conversation_samples(run)
    c, res = run.config, run.results
    roles: dict[str, ModelConfig | list[ModelConfig]] = {}  # inspect's model_roles
    if run.kind != "crossplay":
        if c.get("policy"):
            roles["policy"] = ModelConfig(model=str(c["policy"]))
        sim = c.get("sim") or (c.get("sims") or [None])[0]
        if sim:
            roles["simulator"] = ModelConfig(model=str(sim))
    usage = {
        str(k): ModelUsage(input_tokens=int(v.get("input_tokens") or 0), output_tokens=int(v.get("output_tokens") or 0),
                           total_tokens=int(v.get("input_tokens") or 0) + int(v.get("output_tokens") or 0),
                           total_cost=v.get("cost_usd"))
        for k, v in (res.get("usage") or {}).items() if isinstance(v, dict)
    }  # fmt: skip
    benchmark = str(c.get("benchmark") or (c.get("arena") or {}).get("benchmark") or "")
    spec = EvalSpec(
        created=_iso(run.path / "config.json"),
        task=f"collapse-probe/{run.kind}",
        run_id=run.name,
        dataset=EvalDataset(name=benchmark, samples=len(samples)),
        model=_model_of(run),
        model_roles=roles or None,
        config=EvalConfig(epochs=c.get("rollouts") or c.get("group_size")),
        packages={"collapse-probe": str(res.get("version") or __version__)},
        metadata={
            "collapse_probe": {
                "kind": run.kind, "run": run.name, "schema": res.get("schema"), "version": res.get("version"),
                "benchmark": benchmark, "fingerprints": c.get("fingerprints"), "mode": mode,
                "exported_by": __version__,
            }
        },
    )  # fmt: skip
    completed = sum(1 for s in samples if s.error is None)
    return EvalLog(
        eval=spec,
        status="success",
        plan=EvalPlan(name="collapse-probe", steps=[EvalPlanStep(solver=f"collapse-probe {run.kind}")]),
        results=EvalResults(total_samples=len(samples), completed_samples=completed, scores=_results_scores(run)),
        stats=EvalStats(
            started_at=_iso(run.path / "config.json"), completed_at=_iso(run.path / "results.json"), model_usage=usage
        ),  # fmt: skip
        samples=samples,
    )


def write_inspect_log(run: RunData, out: str | Path) -> list[Path]:
    """Write the run as an inspect eval log at ``out`` (``.eval``, or ``.json`` for inspect's JSON
    format); an audit compared with Verbalized Sampling also gets ``STEM-MODE.SUFFIX`` for the other
    mode. Every file is created exclusively, ``out`` first (:func:`collapse_probe.core._output.write_outputs`):
    an existing name is refused before anything is written, and of concurrent exports onto one
    ``out`` one writes the whole set. Returns the files written."""
    from collapse_probe.core._output import check_output_path, write_outputs

    p = Path(out)
    if p.suffix not in (".eval", ".json"):
        raise ConfigError(f"--out {out}: an inspect log is a .eval or .json file; give a path ending in one")
    check_output_path(p)
    write_eval_log = require("inspect_ai.log", "inspect", "export --to inspect", package="inspect-ai").write_eval_log
    fmt = "eval" if p.suffix == ".eval" else "json"
    modes: list[str | None] = [None]
    if run.kind == "audit":
        primary = str(run.results.get("mode") or "direct")
        modes += sorted({str(r.get("mode") or "direct") for r in run.samples} - {primary})
    logs = [build_eval_log(run, m) if m is not None else build_eval_log(run) for m in modes]
    names = [p] + [p.with_name(f"{p.stem}-{m}{p.suffix}") for m in modes[1:]]

    def writer(log: Any) -> Any:
        return lambda tmp: write_eval_log(log, str(tmp), format=fmt)

    return write_outputs([(q, writer(log)) for q, log in zip(names, logs, strict=True)])


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
    from collapse_probe.integrations.interop._published import PublishedRun, file_sha256

    p = Path(path)
    log = _read_log(p, path)
    other = "assistant" if sim_role == "user" else "user"
    roles = {sim_role: "simulator", other: "policy", "tool": "tool", "system": "system"}
    roles_cfg = log.eval.model_roles or {}
    named_sim = roles_cfg.get("simulator") or roles_cfg.get("user")
    sim_model = getattr(named_sim, "model", None)
    run = PublishedRun(conversations=[], format="inspect", path=str(p), sha256=file_sha256(str(p)),
                       benchmark=(log.eval.metadata or {}).get("collapse_probe", {}).get("benchmark") or None,
                       policy=log.eval.model, simulator=sim_model)  # fmt: skip
    for s in log.samples or []:
        run.conversations.append(_conversation(s, p, roles, log.eval.model, sim_model))
    return run


def _read_log(p: Path, path: str | Path) -> Any:
    """The eval log at ``p``, read by inspect once the file was checked (a regular file, a zip within
    the caps).

    Raises:
        ConfigError: the file is missing, not a regular file, or not an inspect eval log.
    """
    from inspect_ai.log import read_eval_log

    from collapse_probe.core._files import MissingFile, check_regular_file, check_zip

    expected = "an inspect eval log (.eval or .json)"
    try:
        # inspect reads the file itself: what it will read is checked first (a FIFO is refused, not waited
        # on; a device, a file past 1 GiB or a zip member that inflates past the caps is refused, not read)
        check_regular_file(p, expected=expected)
    except MissingFile:
        raise ConfigError(f"--from {path}: no such file; expected {expected}") from None
    if p.suffix != ".json":
        check_zip(p, expected=expected)
    try:
        return read_eval_log(str(p))
    except Exception as exc:  # inspect raises its own and pydantic's errors for a file that is not a log
        raise ConfigError(
            f"{p}: not an inspect eval log ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        ) from None


def _conversation(s: Any, p: Path, roles: dict[str, str], policy: str, sim_model: str | None) -> Any:
    """One sample as a published conversation: its given input in the prefix (as system messages),
    the replies after it by role, its reward, its error as an infrastructure failure."""
    from collapse_probe.integrations.interop._published import (
        PublishedConversation,
        PublishedMessage,
        canonical_arguments,
    )

    meta = s.metadata or {}
    where = f"{p}: sample {s.id!r} epoch {s.epoch}"
    _check_sample(s, meta, where)
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
            (c.function, canonical_arguments(c.arguments, where)) for c in (getattr(m, "tool_calls", None) or [])
        )
        role = "system" if i < n_given else roles.get(m.role, m.role)
        messages.append(PublishedMessage(role, m.text, calls, dict(m.metadata or {})))
    reward = None
    scores = s.scores or {}
    chosen = scores.get("reward") or next(iter(scores.values()), None)
    if chosen is not None:
        reward = _score_value(chosen.value)
    return PublishedConversation(
        conversation_id=f"{s.id}#{s.epoch}",
        task_id=str(meta.get("task_id", s.id)),
        messages=messages,
        trial=s.epoch,
        reward=None if s.error is not None else reward,
        infra_error=s.error.message if s.error is not None else None,
        simulator_errors=list(meta.get("simulator_errors") or []),  # checked by _check_sample
        policy=str(meta.get("policy") or policy),
        simulator=str(meta["simulator"]) if meta.get("simulator") else sim_model,
        group=tuple(f"step={meta['step']}" for _ in [0] if meta.get("step") is not None),
    )


_META_TEXT = ("task_id", "policy", "simulator")
"""Metadata a sample's conversation takes as text: a string (or, for the task, a number)."""


def _check_sample(sample: Any, meta: Any, where: str) -> None:
    """Refuse, naming the sample and field, what the conversation cannot use: metadata of the wrong type
    (``simulator_errors`` not a list of objects, ``task_id`` an object), an integer past
    :data:`~collapse_probe.core._files.MAX_INT_DIGITS` digits, nesting past the cap, a lone surrogate in a
    message or in the metadata (text that cannot be written back to the audit's UTF-8 files)."""
    from collapse_probe.core._files import check_values

    if not isinstance(meta, dict):
        raise ConfigError(f"{where}: metadata: expected an object, got {type(meta).__name__}")
    expected = "an inspect eval log whose samples collapse-probe can read"
    check_values({"metadata": meta}, where, expected=expected, nonfinite=True)
    for key in _META_TEXT:
        v = meta.get(key)
        ok = isinstance(v, str) or (key == "task_id" and isinstance(v, int) and not isinstance(v, bool))
        if v is not None and not ok:
            kind = "a string or an integer" if key == "task_id" else "a string"
            raise ConfigError(f"{where}: metadata.{key}: expected {kind}, got {type(v).__name__} {v!r}"[:400])
    errors = meta.get("simulator_errors")
    if errors is not None:
        if not isinstance(errors, list):
            raise ConfigError(
                f"{where}: metadata.simulator_errors: expected a list of {{flag, critical}} objects, got "
                f"{type(errors).__name__}"
            )
        for i, e in enumerate(errors):
            if not isinstance(e, dict):
                raise ConfigError(
                    f"{where}: metadata.simulator_errors[{i}]: expected a {{flag, critical}} object, got "
                    f"{type(e).__name__}"
                )
    for i, m in enumerate(sample.messages or []):
        check_values({"text": m.text, "metadata": dict(m.metadata or {})}, f"{where}: messages[{i}]",
                     expected=expected, nonfinite=True)  # fmt: skip


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
