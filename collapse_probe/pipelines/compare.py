"""``collapse-probe compare``: how much of an agent's score is the user simulator, across published runs.

The inputs are results files of the same tasks (anything :func:`collapse_probe.pipelines.audit._published.read_published`
reads: τ2-bench results, τ-bench trajectories, inspect logs, JSONL conversations, and the formats
other readers add) and this project's cross-play run directories. Each conversation names its agent
(``policy``) and its user simulator; a file that names neither gets them from ``--agent-of`` /
``--simulator-of``. Several files of one agent and simulator are pooled (their trials add up).

Pairing. A task is keyed by its content (:attr:`~collapse_probe.integrations.interop.PublishedConversation.task_content`,
normalised: Unicode NFKC, case folded, runs of white space as one space) where the task ids are not
stable across the inputs (forks renumber and edit tasks between runs) and the text can stand for the
task (every scored record has one, no file gives one text to two ids), else by its id (:func:`_key_mode`;
``--task-key`` forces either). What could not be paired is counted by reason: infrastructure failures (never scored),
records without a reward, records without the task's text (content key), and per comparison the
tasks only one simulator ran.

The statistics are :mod:`collapse_probe.metrics.simulator_effects`'s; ``docs/compare.md`` explains
what they answer and what they cannot.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Required, TypedDict

from collapse_probe._version import __version__
from collapse_probe.core._constraints import Config, Flag, Integer, Number, OneOf, rule
from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.results import CompareResults

COMPARE_KIND = "compare"
TASK_KEYS = ("auto", "content", "id")
LEVEL = 0.95


class CompareConfig(Config):
    """What ``collapse-probe compare`` reads and how it decides success (the command's flags)."""

    success_threshold: Annotated[float | None, Number(optional=True), Flag("--success-threshold", metavar="X")] = None
    """A trial succeeds when its reward is at least X (default: a cross-play record's own success, which its
    benchmark decides; otherwise 1.0, for τ2-bench's and τ-bench's rewards of 0 or 1)."""
    task_key: Annotated[Literal["auto", "content", "id"], OneOf(TASK_KEYS)] = "auto"
    """How tasks are paired across files: ``content`` (the task's own text, normalised), ``id`` (the
    task id), ``auto`` (the text where the ids are not stable across the files and the text tells the
    tasks apart, else the id)."""
    reference: str | None = None
    """Compare every other simulator with this one (default: every pair of simulators, the one read
    first as the reference)."""
    agent_of: Annotated[list[str], Flag("--agent-of", metavar="FILE=NAME")] = []
    """The agent of a file's conversations (``FILE=NAME``; several: the flag repeated, comma-separated or a JSON list), for a
    file that names none (τ-bench's trajectories) or to replace the name it gives."""
    simulator_of: Annotated[list[str], Flag("--simulator-of", metavar="FILE=NAME")] = []
    """The user simulator of a file's conversations (``FILE=NAME``), as ``--agent-of``."""
    format: str | None = None
    """The format of every input (default: told from each file's name and content)."""
    n_boot: Annotated[int, Integer(100, 100_000)] = 2000
    """Bootstrap resamples of the rank correlation's interval."""
    seed: Annotated[int, Integer(0)] = 0
    """Seed of the bootstrap."""

    @rule
    def _pairs(self) -> None:
        for flag, values in (("--agent-of", self.agent_of), ("--simulator-of", self.simulator_of)):
            for v in values:
                path, sep, name = v.rpartition("=")
                if not sep or not path.strip() or not name.strip():
                    raise ConfigError(f"{flag} {v!r}: expected FILE=NAME (a file of the command line and a name)")


@dataclass
class _Trial:
    agent: str
    simulator: str
    task_id: str
    content: str | None
    reward: float | None
    infra: bool
    success: bool | None = None
    """The record's own verdict (a cross-play record's ``success``), used without ``--success-threshold``."""


@dataclass
class _Source:
    path: str
    format: str
    sha256: str
    trials: list[_Trial]
    skipped: dict[str, int] = field(default_factory=dict)


def normalise_task_text(text: str) -> str:
    """The form of a task's text that pairs it across files: NFKC, case folded, white space collapsed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _named(values: Sequence[str], flag: str, paths: Sequence[str]) -> dict[str, str]:
    out = {}
    known = {os.path.abspath(p): p for p in paths}
    for v in values:
        path, _, name = v.rpartition("=")
        key = os.path.abspath(path)
        if key not in known:
            raise ConfigError(f"{flag} {v!r}: {path} is not one of the inputs ({', '.join(paths)})")
        out[key] = name.strip()
    return out


def _tau2_task_list(path: str) -> bool:
    """Whether a file's head is a JSON list of τ2 task definitions (``id`` and ``user_scenario``)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return head.lstrip().startswith("[") and '"user_scenario"' in head and '"simulations"' not in head


def _format(path: str, given: str | None) -> str:
    """The format of an input: ``given``, else told from its content, else from its name
    (:func:`collapse_probe.pipelines.audit._published.format_of`)."""
    from collapse_probe.pipelines.audit._published import FORMATS, format_of

    if given is None and os.path.isfile(path) and os.path.getsize(path) == 0:
        raise ConfigError(f"{path}: the file is empty; expected a results file")
    try:
        return format_of(path, given)
    except ConfigError:
        if given is None and _tau2_task_list(path):
            raise ConfigError(f"{path}: a τ2-bench tasks file (the task definitions, no simulations); expected a "
                              "results file of a run on these tasks (what tau2 run saves under data/simulations/)") from None  # fmt: skip
        raise ConfigError(f"{path}: cannot tell the format from the content or the name; give --format "
                          f"{'|'.join(FORMATS)}") from None  # fmt: skip


def _crossplay_source(path: Path, agent: str | None = None, sim: str | None = None) -> _Source:
    """A cross-play run directory: its ``conversations.jsonl`` records (policy, simulator, task, reward)."""
    import math

    from collapse_probe.integrations.interop._published import file_sha256
    from collapse_probe.rollout import RunDir

    convs = path / "conversations.jsonl"
    if not convs.is_file():
        raise ConfigError(f"{path}: a cross-play run without conversations.jsonl; expected a finished or "
                          "started cross-play run")  # fmt: skip
    trials = []
    for i, rec in enumerate(RunDir(path).read_jsonl("conversations.jsonl")):
        where = f"{convs}: record {i}"
        if not isinstance(rec, dict):
            raise ConfigError(f"{where}: expected an object")
        for k in ("policy", "simulator", "task_id"):
            if not isinstance(rec.get(k), str | int) or isinstance(rec.get(k), bool):
                raise ConfigError(f"{where}: {k}: expected a string, got {rec.get(k)!r}")
        infra = rec.get("status") == "infra_error" or bool(rec.get("infra_error"))
        reward = rec.get("reward")
        if reward is not None and (
            isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward)
        ):
            raise ConfigError(f"{where}: reward: expected a finite number or null, got {reward!r}")
        success = rec.get("success") if isinstance(rec.get("success"), bool) else None
        trials.append(_Trial(agent or str(rec["policy"]), sim or str(rec["simulator"]), str(rec["task_id"]), None,
                             None if infra or reward is None else float(reward), infra, success))  # fmt: skip
    return _Source(str(path), "crossplay", file_sha256(str(convs)), trials)


def read_source(path: str, config: CompareConfig, agents: dict[str, str], sims: dict[str, str]) -> _Source:
    """One input as trials with their agent, simulator, task and reward.

    Raises:
        ConfigError: the input is missing or unreadable, or a conversation's agent or simulator is not
            named by the file nor by ``--agent-of`` / ``--simulator-of``.
    """
    import math

    from collapse_probe.core._output import _json_object
    from collapse_probe.pipelines.audit._published import read_published

    p = Path(path)
    if not os.path.lexists(p):
        raise ConfigError(f"{path}: no such file or directory; expected a results file or a run directory")
    if p.is_dir() and (p / "config.json").is_file():
        cfg = _json_object(p / "config.json") or {}
        if cfg.get("kind") == "crossplay":
            return _crossplay_source(p, agents.get(os.path.abspath(path)), sims.get(os.path.abspath(path)))
        if not (p / "simulations").is_dir():
            kind = f"a run of kind {cfg['kind']!r}" if isinstance(cfg.get("kind"), str) else "no collapse-probe run"
            raise ConfigError(f"{path}: holds {kind}; compare reads cross-play run directories and published "
                              "results files")  # fmt: skip
    if p.is_dir() and not (p / "results.json").is_file():
        raise ConfigError(f"{path}: a directory that is neither a cross-play run (config.json) nor a τ2-bench "
                          "results directory (results.json); expected a results file or a run directory")  # fmt: skip
    fmt = _format(path, config.format)
    try:
        run = read_published(path, fmt)
    except ConfigError as e:  # the readers speak of audit's --from; compare's inputs are positional
        message = str(e)
        if message.startswith("--from "):
            raise ConfigError(message.removeprefix("--from ")) from None
        raise
    key = os.path.abspath(path)
    trials = []
    for c in run.conversations:
        agent = agents.get(key) or c.policy or run.policy
        sim = sims.get(key) or c.simulator or run.simulator
        if not agent:
            raise ConfigError(
                f"{path}: names no agent for conversation {c.conversation_id!r}; give --agent-of {path}=NAME"
            )
        if not sim:
            raise ConfigError(f"{path}: names no user simulator for conversation {c.conversation_id!r}; give "
                              f"--simulator-of {path}=NAME")  # fmt: skip
        reward = c.reward
        if reward is not None and not math.isfinite(reward):
            reward = None
        trials.append(_Trial(str(agent), str(sim), str(c.task_id), c.task_content, reward, c.infra_error is not None))
    return _Source(str(path), fmt, run.sha256, trials, dict(run.skipped))


def _key_mode(sources: Sequence[_Source], asked: str) -> tuple[str, str]:
    """``(task key, why)``: ``id`` or ``content`` as asked, else (``auto``) the task's text exactly where
    the ids are not stable across the inputs and the text can stand for the task.

    The text pairs tasks only if every scored record carries it and no input gives one text to two
    task ids (then the text does not tell its tasks apart: a template scenario). The ids are stable
    when each id has one text across the inputs and each text one id; then both keys pair the same
    trials, and the id is kept."""
    if asked in ("id", "content"):
        return asked, f"as asked: --task-key {asked}"
    scored = [(i, t) for i, s in enumerate(sources) for t in s.trials if not t.infra and t.reward is not None]
    missing = sum(1 for _, t in scored if not t.content)
    if not scored or missing:
        return "id", f"{missing} of {len(scored)} scored records carry no task text"
    ids_of: dict[tuple[int, str], set[str]] = {}
    texts_of: dict[str, set[str]] = {}
    all_ids_of: dict[str, set[str]] = {}
    for i, t in scored:
        text = normalise_task_text(t.content or "")
        ids_of.setdefault((i, text), set()).add(t.task_id)
        texts_of.setdefault(t.task_id, set()).add(text)
        all_ids_of.setdefault(text, set()).add(t.task_id)
    shared = sorted({sources[i].path for (i, _), ids in ids_of.items() if len(ids) > 1})
    if shared:
        return "id", f"{shared[0]} gives one task text to several task ids, so the text does not tell its tasks apart"
    if all(len(v) == 1 for v in texts_of.values()) and all(len(v) == 1 for v in all_ids_of.values()):
        return "id", "the task ids are stable across the inputs: each id has one text, each text one id"
    renamed = sum(1 for v in all_ids_of.values() if len(v) > 1)
    edited = sum(1 for v in texts_of.values() if len(v) > 1)
    return "content", (f"task ids are not stable across the inputs: {renamed} texts under several ids, "
                       f"{edited} ids with several texts")  # fmt: skip


class EffectRow(TypedDict, total=False):
    """One simulator against a reference for one agent (``results.json``'s ``simulator_effects``); the
    statistics are filled in once the shared tasks are known."""

    agent: Required[str]
    simulator: Required[str]
    reference: Required[str]
    left_out: Required[dict[str, int]]
    """Tasks only one of the two simulators ran, by ``only under NAME``."""
    difference: float | None
    """Success rate under ``simulator`` minus under ``reference`` over the shared tasks (``None``: none shared)."""
    ci95: list[float] | None
    n_tasks: int
    rate: float | None
    reference_rate: float | None
    rerun_difference_ci95: list[float] | None
    """``[−h, h]``: how far two reruns of one configuration would differ on these tasks."""
    beyond_noise: bool | None
    """The interval of ``difference`` excludes 0."""


class NoiseRow(TypedDict):
    """One agent under one simulator: how much reruns of it differ (``noise_floor``)."""

    agent: str
    simulator: str
    n_tasks: int
    tasks_with_repeats: int
    trials: int
    flip_rate: float | None
    flipping_tasks: int
    pass_k: dict[str, float]
    rerun_difference_ci95: list[float] | None


class CorrelationRow(TypedDict):
    """The agents' rank correlation between two simulators (``rank_correlation``)."""

    simulators: list[str]
    agents: list[str]
    tau: float | None
    ci95: list[float] | None
    n_tasks: int


class FlipRow(TypedDict):
    """Two agents ranked one way under one simulator and the other way under another (``rank_flips``)."""

    agents: list[str]
    simulators: list[str]
    rates: dict[str, dict[str, float]]
    """Simulator -> agent -> success rate."""
    n_tasks: int


class SourceRow(TypedDict):
    """One input (``sources``)."""

    path: str
    format: str
    sha256: str
    conversations: int
    agents: list[str]
    simulators: list[str]
    skipped: dict[str, int]
    """Records the reader could not read as a conversation, by reason."""


class CellRow(TypedDict):
    """One agent under one simulator: its success rate (``cells``)."""

    agent: str
    simulator: str
    n_tasks: int
    trials: int
    success_rate: float
    ci95: list[float]


class PairingRow(TypedDict):
    """How the trials were paired by task (``pairing``)."""

    task_key: str
    why: str
    records: int
    paired_records: int
    tasks: int
    left_out: dict[str, int]


class CompareSummary(TypedDict):
    """The ``results.json`` object of a comparison before it is checked as
    :class:`~collapse_probe.results.CompareResults`."""

    schema: str
    version: str
    success_threshold: float
    success_rule: dict[str, int]
    level: float
    sources: list[SourceRow]
    pairing: PairingRow
    agents: list[str]
    simulators: list[str]
    cells: list[CellRow]
    simulator_effects: list[EffectRow]
    noise_floor: list[NoiseRow]
    rank_correlation: list[CorrelationRow]
    rank_flips: list[FlipRow]
    notes: list[str]


Cells = dict[tuple[str, str], dict[str, list[bool]]]
"""``(agent, simulator)`` -> task key -> the successes of the task's scored trials."""


@dataclass
class _Paired:
    """The scored trials keyed by task, and what was left out."""

    mode: str
    why: str
    threshold: float
    cells: Cells = field(default_factory=dict)
    ids_of_key: dict[str, set[str]] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=dict)
    success_rule: dict[str, int] = field(default_factory=dict)
    thresholded: list[tuple[float, bool]] = field(default_factory=list)
    """``(reward, success)`` of the trials the threshold decided."""


def _tally(counts: dict[str, int], reason: str) -> None:
    counts[reason] = counts.get(reason, 0) + 1


def _task_key(t: _Trial, mode: str) -> str | None:
    """The key that pairs a trial's task across files; ``None``: no task text under the content key."""
    if mode != "content":
        return t.task_id
    if not t.content:
        return None
    return "c:" + hashlib.sha256(normalise_task_text(t.content).encode()).hexdigest()[:16]


def pair_trials(sources: Sequence[_Source], config: CompareConfig) -> _Paired:
    """Key every scored trial by its task and decide its success; count what is left out, by reason."""
    from collapse_probe.metrics.variance import SUCCESS_ATOL

    trials = [t for s in sources for t in s.trials]
    mode, why = _key_mode(sources, config.task_key)
    threshold = 1.0 if config.success_threshold is None else config.success_threshold
    out = _Paired(mode, why, threshold)
    for s in sources:  # what the readers could not read as a conversation (e.g. a simulation with no turns)
        for reason, n in s.skipped.items():
            out.left_out[f"{reason} (not read)"] = out.left_out.get(f"{reason} (not read)", 0) + n
    for t in trials:
        if t.infra:
            _tally(out.left_out, "infrastructure failure (not scored)")
            continue
        if t.reward is None:
            _tally(out.left_out, "no reward")
            continue
        key = _task_key(t, mode)
        if key is None:
            _tally(out.left_out, "no task text (content key)")
            continue
        out.ids_of_key.setdefault(key, set()).add(t.task_id)
        if config.success_threshold is None and t.success is not None:
            ok = t.success
            _tally(out.success_rule, "the records' own success")
        else:  # the same tolerance as the flip rate's: a reward of 0.9999999999 out of 1 is a success
            ok = t.reward >= threshold - SUCCESS_ATOL
            _tally(out.success_rule, f"reward >= {threshold:g}")
            out.thresholded.append((t.reward, ok))
        out.cells.setdefault((t.agent, t.simulator), {}).setdefault(key, []).append(ok)
    return out


def _listed(ci: Sequence[float] | None) -> list[float] | None:
    return None if ci is None else list(ci)


def effect_rows(cells: Cells, agents: Sequence[str], sims: Sequence[str], reference: str | None) -> list[EffectRow]:
    """One row per agent and pair of its simulators (or, with ``reference``, per other simulator)."""
    from collapse_probe.metrics import simulator_effects as se

    rows: list[EffectRow] = []
    for a in agents:
        mine = [s for s in sims if (a, s) in cells]
        for ref, sim in itertools.combinations(mine, 2):
            if reference is not None:
                if reference not in (ref, sim):
                    continue
                ref, sim = (ref, sim) if ref == reference else (sim, ref)
            x, y = cells[(a, sim)], cells[(a, ref)]
            only = {f"only under {sim}": sum(1 for k in x if k not in y),
                    f"only under {ref}": sum(1 for k in y if k not in x)}  # fmt: skip
            row: EffectRow = {"agent": a, "simulator": sim, "reference": ref,
                              "left_out": {k: v for k, v in only.items() if v}}  # fmt: skip
            if not any(k in y for k in x):
                row.update({"difference": None, "ci95": None, "n_tasks": 0, "rate": None, "reference_rate": None,
                            "rerun_difference_ci95": None, "beyond_noise": None})  # fmt: skip
            else:
                e = se.simulator_effect(x, y, LEVEL)
                row.update({"difference": e.difference, "ci95": list(e.ci95), "n_tasks": e.n_tasks, "rate": e.rate,
                            "reference_rate": e.reference_rate,
                            "rerun_difference_ci95": _listed(e.rerun_difference_ci95),
                            "beyond_noise": not (e.ci95[0] <= 0.0 <= e.ci95[1])})  # fmt: skip
            rows.append(row)
    return rows


def noise_rows(cells: Cells) -> list[NoiseRow]:
    """The noise floor of every agent under every simulator."""
    from collapse_probe.metrics import simulator_effects as se

    rows: list[NoiseRow] = []
    for (a, s), out in cells.items():
        nf = se.noise_floor(out, LEVEL)
        rows.append({"agent": a, "simulator": s, "n_tasks": nf.n_tasks, "tasks_with_repeats": nf.tasks_with_repeats,
                     "trials": nf.trials, "flip_rate": nf.flip_rate, "flipping_tasks": nf.flipping_tasks,
                     "pass_k": nf.pass_k, "rerun_difference_ci95": _listed(nf.rerun_difference_ci95)})  # fmt: skip
    return rows


def rank_rows(cells: Cells, sims: Sequence[str], config: CompareConfig) -> tuple[list[CorrelationRow], list[FlipRow]]:
    """``(rank_correlation, rank_flips)`` rows."""
    from collapse_probe.metrics import simulator_effects as se

    flips: list[FlipRow] = [{"agents": list(f.agents), "simulators": list(f.simulators), "rates": f.rates, "n_tasks": f.n_tasks}
             for f in se.rank_flips(cells)]  # fmt: skip
    corr: list[CorrelationRow] = []
    for s1, s2 in itertools.combinations(sims, 2):
        rc = se.rank_correlation(cells, s1, s2, level=LEVEL, n_boot=config.n_boot, seed=config.seed)
        if rc is not None:
            corr.append({"simulators": [s1, s2], "agents": rc.agents, "tau": rc.tau, "ci95": _listed(rc.ci95),
                         "n_tasks": rc.n_tasks})  # fmt: skip
    return corr, flips


def _source_row(s: _Source) -> SourceRow:
    return {"path": s.path, "format": s.format, "sha256": s.sha256, "conversations": len(s.trials),
            "agents": sorted({t.agent for t in s.trials}), "simulators": sorted({t.simulator for t in s.trials}),
            "skipped": s.skipped}  # fmt: skip


def cell_rows(cells: Cells) -> list[CellRow]:
    """One row per (agent, simulator) cell: its tasks, trials and success rate with its 95 % CI."""
    from collapse_probe.metrics import simulator_effects as se

    rows: list[CellRow] = []
    for (a, s), out in cells.items():
        rate = se.success_rate(out)
        rows.append({"agent": a, "simulator": s, "n_tasks": rate.n_tasks, "trials": sum(map(len, out.values())),
                     "success_rate": rate.rate, "ci95": list(rate.ci95)})  # fmt: skip
    return rows


def compare_notes(
    paired: _Paired,
    config: CompareConfig,
    agents: Sequence[str],
    effects: Sequence[EffectRow],
    corr: Sequence[CorrelationRow],
) -> list[str]:
    """What the reader of a comparison should know: tasks paired by text across ids, a success threshold
    that every trial meets (or misses), graded rewards at the default threshold, and a missing effect or
    ranking."""
    merged = sum(1 for ids in paired.ids_of_key.values() if len(ids) > 1)
    notes: list[str] = []
    if paired.mode == "content" and merged:
        notes.append(
            f"{merged} task texts appear under more than one task id across the inputs; they are paired by text"
        )
    rewards = [r for r, _ in paired.thresholded]
    if rewards and len({ok for _, ok in paired.thresholded}) == 1:
        verdict = "reaches" if paired.thresholded[0][1] else "fails to reach"
        notes.append(f"every trial {verdict} the success threshold {paired.threshold:g} (rewards from {min(rewards):g} "
                     f"to {max(rewards):g}): no success rate can differ; see --success-threshold")  # fmt: skip
    graded = sorted({r for r, _ in paired.thresholded if r not in (0.0, 1.0)})
    if graded and config.success_threshold is None:
        notes.append(f"{len(graded)} distinct rewards are neither 0 nor 1 (from {graded[0]:g} to {graded[-1]:g}); "
                     f"a trial succeeds at the default threshold, reward >= {paired.threshold:g} (made for 0/1 "
                     "rewards); see --success-threshold")  # fmt: skip
    if not effects:
        notes.append("no agent ran under two simulators: no simulator effect to measure")
    if len(agents) < 2:
        notes.append("one agent: no ranking of agents to compare across simulators")
    elif not corr:
        notes.append(f"{len(agents)} agents, but no two of them ran shared tasks under the same two simulators: "
                     "no ranking of agents to compare across simulators")  # fmt: skip
    return notes


def compare_results(sources: Sequence[_Source], config: CompareConfig) -> CompareSummary:
    """The ``results.json`` object of a comparison (schema ``collapse-probe/compare/v1``): pair the trials,
    then the simulator effects, the noise floor and the ranks over the cells.

    Raises:
        ConfigError: nothing could be scored, or ``--reference`` names no simulator of the inputs.
    """
    trials = [t for s in sources for t in s.trials]
    paired = pair_trials(sources, config)
    cells = paired.cells
    if not cells:
        raise ConfigError(
            f"no scored conversation in {', '.join(s.path for s in sources)} "
            f"({', '.join(f'{n} {r}' for r, n in paired.left_out.items()) or 'nothing read'})"
        )
    held = {s for _, s in cells}
    sims = [s for s in dict.fromkeys(t.simulator for t in trials) if s in held]  # in the order read
    agents = list(dict.fromkeys(a for a, _ in cells))
    if config.reference is not None and config.reference not in sims:
        raise ConfigError(f"--reference {config.reference!r}: not a simulator of the inputs (they hold "
                          f"{', '.join(sims)})")  # fmt: skip
    effects = effect_rows(cells, agents, sims, config.reference)
    corr, flips = rank_rows(cells, sims, config)
    notes = compare_notes(paired, config, agents, effects, corr)
    return {
        "schema": "collapse-probe/compare/v1",
        "version": __version__,
        "success_threshold": paired.threshold,
        "success_rule": paired.success_rule,
        "level": LEVEL,
        "sources": [_source_row(s) for s in sources],
        "pairing": {
            "task_key": paired.mode,
            "why": paired.why,
            "records": len(trials) + sum(sum(s.skipped.values()) for s in sources),
            "paired_records": sum(len(v) for c in cells.values() for v in c.values()),
            "tasks": len(paired.ids_of_key),
            "left_out": paired.left_out,
        },  # fmt: skip
        "agents": agents,
        "simulators": sims,
        "cells": cell_rows(cells),
        "simulator_effects": effects,
        "noise_floor": noise_rows(cells),
        "rank_correlation": corr,
        "rank_flips": flips,
        "notes": notes,
    }


def run_compare(
    paths: Sequence[str], config: CompareConfig, out: str | Path | None, *, fresh: bool = False
) -> CompareResults:
    """Read the inputs, compare, and (with ``out``) write ``results.json`` and ``report.html`` into a run
    directory; returns the typed :class:`~collapse_probe.results.CompareResults`.

    The run's configuration names the inputs by content (their SHA-256), so the same files at other paths
    rerun into the same directory; other inputs or options are refused there (``--fresh`` starts over).

    Raises:
        ConfigError: an input cannot be read, names no agent or simulator, is given twice, or nothing
            could be scored.
    """
    from collapse_probe.results import CompareResults
    from collapse_probe.rollout import RunDir

    if not paths:
        raise ConfigError("FILE_OR_RUN_DIR: expected one or more results files or run directories")
    agents = _named(config.agent_of, "--agent-of", paths)
    sims = _named(config.simulator_of, "--simulator-of", paths)
    sources = [read_source(p, config, agents, sims) for p in paths]
    seen: dict[str, str] = {}
    for s in sources:
        if s.sha256 in seen:
            same = os.path.realpath(s.path) == os.path.realpath(seen[s.sha256])
            raise ConfigError(
                f"{s.path}: given twice; give each run once (its trials would count twice)"
                if same
                else f"{s.path}: the same content as {seen[s.sha256]}; give each run once (its trials would count twice)"
            )
        seen[s.sha256] = s.path
    results = CompareResults.build(compare_results(sources, config))
    if out is not None:
        run_dir = RunDir(out)
        record = {**config.model_dump(exclude={"agent_of", "simulator_of"}), "inputs": sorted(seen),
                  "agent_of": sorted(agents.values()), "simulator_of": sorted(sims.values()), "version": __version__}  # fmt: skip
        run_dir.create(record, kind=COMPARE_KIND, fingerprints={}, fresh=fresh)
        run_dir.write_results(results)
        from collapse_probe.core._reports import write_report

        write_report("compare", run_dir.path / "report.html", results)
    return results


def compare(
    paths: Sequence[str | Path], /, *, out: str | Path | None = None, fresh: bool = False, **options: Any
) -> CompareResults:
    """``collapse-probe compare`` as one call (``collapse_probe.compare([...])``): the simulator effects,
    noise floor and rank flips of results files or run directories of the same tasks.

    Args:
        paths: the inputs (results files, τ2 results directories, cross-play run directories).
        out: a run directory for ``results.json`` and ``report.html`` (``None``: nothing is written).
        fresh: start over in ``out``.
        options: :class:`CompareConfig`'s fields (``success_threshold``, ``task_key``, ``reference``,
            ``agent_of``, ``simulator_of``, ``format``, ``n_boot``, ``seed``).

    Returns:
        The typed results (:class:`~collapse_probe.results.CompareResults`): ``r.simulator_effects``,
        ``r.noise_floor``, ``r.rank_flips``, ``r.pairing``.
    """
    return run_compare([str(p) for p in paths], CompareConfig(**options), out, fresh=fresh)
