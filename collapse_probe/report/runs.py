"""Discover and load run directories for the dashboard and reports: read-only, JSON only.

A run directory holds ``config.json`` (with ``"kind"``), append-only JSONL records
(``conversations.jsonl``, ``samples.jsonl``, ``metrics.jsonl``) and, once finished, ``results.json``
with a ``"schema"`` key such as ``"collapse-probe/audit/v1"``. Everything here tolerates a run that is
being written by another process: a torn JSONL line, a missing or half-written ``results.json`` and
an unreadable ``config.json`` are recorded as *problems* on the run, never raised. Nothing found in a
run directory is ever executed: files are parsed with :func:`json.loads` and nothing else.

Every file is read by :func:`read_run_file`: only a regular file inside the run directory (a
symbolic link, a FIFO, a socket or a device is never opened for reading: a FIFO would block the
page, a link to ``/dev/zero`` would read until memory is gone, a link elsewhere would show another
file), and at most :data:`MAX_JSON_BYTES` / :data:`MAX_JSONL_BYTES` of it. What is refused is one
problem line on that run; the other runs, and the rest of that run, still show.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeGuard

from pydantic import JsonValue

from collapse_probe.results import BY_SCHEMA, GateResults, Results, read_results

__all__ = [
    "KINDS",
    "audit_records",
    "JsonlRead",
    "RunInfo",
    "discover_runs",
    "is_gate_verdict",
    "load_run",
    "monitor_alarms",
    "read_gate_verdict",
    "peek_json",
    "read_jsonl",
    "read_run_file",
    "read_usage",
    "training_curve",
    "training_curve_from_records",
    "training_curves",
]

KINDS = ("audit", "crossplay", "gate", "train", "lab", "play", "compare")
"""Run kinds the dashboard knows; other kinds are listed but get no dedicated view."""

RUN_MARKERS = (
    "config.json",
    "results.json",
    "compare.json",
    "metrics.jsonl",
    "samples.jsonl",
    "conversations.jsonl",
)
"""Files whose presence makes a directory a run directory."""

RESULTS_FILE = "results.json"
COMPARE_FILE = "compare.json"
"""Results of ``collapse-probe lab --compare`` (schema ``collapse-probe/lab-compare/v1`` or ``/v2``, no ``results.json``)."""
CONFIG_FILE = "config.json"
MAX_DEPTH = 8
"""How deep below the runs root discovery looks."""

_SKIP_DIRS = {"__pycache__", "node_modules", ".git"}
MAX_JSON_DEPTH = 64
"""JSON nested deeper than this is not a collapse-probe file (results nest a few levels); it is refused
with a note, so one hostile or corrupt file cannot exhaust the recursion of every view."""
LOCK_FILE = ".lock"
USAGE_FILE = "usage.json"
MAX_JSON_BYTES = 64 << 20
"""``config.json``, ``results.json``, ``usage.json``: far larger than any a run writes."""
MAX_JSONL_BYTES = 256 << 20
"""One JSONL record file: the dashboard holds its records in memory, so a larger one is not read."""
VERDICT_MAX_BYTES = 1_000_000
"""Other ``*.json`` files up to this size are read to find gate verdicts (``collapse-probe gate --json FILE``)."""


@dataclass
class JsonlRead:
    """The complete records of a JSONL file and what was skipped."""

    records: list[dict[str, JsonValue]]
    torn_tail: bool = False
    """The last line has no newline and does not parse: a writer is (or was killed) mid-line."""
    bad_lines: list[int] = field(default_factory=list)
    """1-based numbers of lines in the middle of the file that are not JSON objects."""
    problem: str | None = None
    """Why the file was not read at all (a link, a FIFO, too large), or ``None``."""


@dataclass
class RunInfo:
    """One run directory as found on disk."""

    path: Path
    """Absolute path of the run directory."""
    name: str
    """Path relative to the runs root (``"."`` for the root itself)."""
    kind: str
    """``audit``, ``crossplay``, ``gate``, ``train``, ``lab``, ``play`` or whatever the config says."""
    config: dict[str, JsonValue] | None
    """Parsed ``config.json``, ``None`` when missing or unreadable."""
    results: dict[str, JsonValue] | None
    """Parsed ``results.json``, ``None`` while the run is in progress (or when unreadable or invalid)."""
    files: tuple[str, ...]
    """Names of the files in the directory (not recursive)."""
    problems: list[str] = field(default_factory=list)
    """Human-readable notes on what could not be read."""
    mtime: float = 0.0
    """Latest modification time among the run's marker files (for caching and sorting)."""
    verdicts: list[tuple[str, dict[str, JsonValue]]] = field(default_factory=list)
    """``(file name, verdict)`` for each gate verdict JSON in the directory."""
    typed: Results | None = None
    """``results.json`` (or ``compare.json``) read through its results model
    (:mod:`collapse_probe.results`); ``None`` without results, or for a schema no model reads (a
    ``lab-compare/v1`` file of an earlier version), which the views read as JSON."""
    invalid: str | None = None
    """Why the results file does not read as its model, in one line naming the file and the field
    (``results.json field summary.n_states is 'x'; expected an integer``); the views show that line."""

    @property
    def schema(self) -> str | None:
        """The ``"schema"`` of ``results.json`` or ``None``."""
        schema = self.results.get("schema") if self.results is not None else None
        return schema if isinstance(schema, str) else None

    @property
    def complete(self) -> bool:
        """``results.json`` was read and carries a schema (or, for a gate, a verdict was written; for a
        monitor, which writes no ``results.json``, its rows are there and no process writes them any more)."""
        if self.kind == "monitor" and self.schema is None:
            return MONITOR_FILE in self.files and not _monitor_writing(self.path)
        return self.schema is not None or (self.kind == "gate" and bool(self.verdicts))

    @property
    def failed(self) -> bool:
        """The run finished without a usable result (every unit an infrastructure failure), or it
        stopped without results and no process is writing to it any more (killed, crashed)."""
        if self.complete:
            return _no_result(self.results)
        if self.kind == "gate" or not self.files:
            return False
        return not _writer_alive(self.path)

    @property
    def status(self) -> str:
        """``"complete"``, ``"failed"`` (see :attr:`failed`), ``"invalid"`` (a results file its model does
        not read: :attr:`invalid`) or ``"in progress"`` (being written)."""
        if self.invalid is not None:
            return "invalid"
        if self.failed:
            return "failed"
        return "complete" if self.complete else "in progress"

    def file(self, name: str) -> Path:
        return self.path / name

    def jsonl(self, name: str) -> JsonlRead:
        """Read one of the run's JSONL files tolerantly (missing file: no records)."""
        return read_jsonl(self.path / name)

    @property
    def label(self) -> str:
        """Short label for selectors: ``name [kind, status]``."""
        return f"{self.name} [{self.kind}, {self.status}]"


def read_run_file(path: str | Path, max_bytes: int = MAX_JSON_BYTES) -> tuple[bytes | None, str | None]:
    """The bytes of a regular file inside a run directory, or ``(None, problem)``; never raises, never blocks.

    A symbolic link is not followed (whatever it points at), a FIFO, socket or device is not read,
    and a file larger than ``max_bytes`` is not read either; each is a one-line problem naming the
    file. A missing file is ``(None, "NAME is missing")``.
    """
    from collapse_probe.core._files import FileProblem, MissingFile, read_bytes

    p = Path(path)
    try:
        return read_bytes(p, max_bytes=max_bytes, follow_symlinks=False, expected="a regular file"), None
    except MissingFile:
        return None, f"{p.name} is missing"
    except FileProblem as exc:
        why = str(exc).split(": ", 1)[-1].split("; expected")[0]
        return None, f"{p.name} not read: {why} (the dashboard reads only regular files inside RUNS_DIR)"


def peek_json(path: str | Path) -> tuple[JsonValue, str | None]:
    """Parse a JSON file; return ``(value, None)`` or ``(None, problem)``; never raises.

    A missing file, a half-written file (a writer that does not rename atomically), a file that
    is not UTF-8 and a file :func:`read_run_file` refuses all give ``None`` with a note. NaN and
    infinities, which Python's json writes, are accepted.
    """
    p = Path(path)
    raw, problem = read_run_file(p, MAX_JSON_BYTES)
    if raw is None:
        return None, problem
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"{p.name} could not be read ({type(exc).__name__})"
    if not text.strip():
        return None, f"{p.name} is empty (being written?)"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"{p.name} is not complete JSON yet (line {exc.lineno}: {exc.msg})"
    except RecursionError:
        return None, f"{p.name} is nested too deeply to be a collapse-probe file"
    except ValueError:  # a number too long to convert
        return None, f"{p.name} holds a number too long to be a collapse-probe value"
    if too_deep(value):
        return None, f"{p.name} is nested deeper than {MAX_JSON_DEPTH} levels; not a collapse-probe file"
    return value, None


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a parsed JSON value nests lists/objects deeper than ``limit`` (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if d >= limit:
            return True
        stack.extend((c, d + 1) for c in children if isinstance(c, dict | list))
    return False


def _no_result(results: dict[str, JsonValue] | None) -> bool:
    """A finished result in which nothing could be measured or scored."""
    if not isinstance(results, dict):
        return False
    cells = results.get("cells")
    if isinstance(cells, list) and cells and all(isinstance(c, dict) for c in cells):
        return all(c.get("mean_reward") is None for c in cells if isinstance(c, dict))
    summary = results.get("summary")
    if isinstance(summary, dict):
        if "n_states" in summary and summary.get("n_states") == 0:
            return True
        if "mean_reward" in summary and summary.get("mean_reward") is None and summary.get("n") == 0:
            return True
    return False


def _writer_alive(path: Path) -> bool:
    """Whether a process holds the run directory's lock (no lock file: a recent write counts)."""
    import time

    from collapse_probe.rollout._rundir import lock_held

    held = lock_held(path)
    if held is not None:
        return held
    newest = 0.0
    for name in RUN_MARKERS:
        try:
            newest = max(newest, os.lstat(path / name).st_mtime)
        except OSError:
            continue
    return time.time() - newest < 300  # a writer without a lock (an older version) wrote lately


def _monitor_writing(path: Path) -> bool:
    """Whether a collapse monitor is still writing its rows: it holds the run lock, or it has written a
    row since its last ``report.html`` (which closing it writes) and lately (:func:`_writer_alive`)."""
    from collapse_probe.rollout._rundir import lock_held

    held = lock_held(path)
    if held is not None:
        return held
    try:
        rows, report = os.lstat(path / MONITOR_FILE).st_mtime, os.lstat(path / "report.html").st_mtime
    except OSError:
        return _writer_alive(path)
    return report < rows and _writer_alive(path)


def read_jsonl(path: str | Path) -> JsonlRead:
    """Parse a JSONL file record by record, skipping what cannot be parsed; never raises.

    Unlike :func:`collapse_probe.rollout.iter_jsonl`, which a resuming pipeline uses and which must
    refuse a corrupt file, a viewer shows whatever is readable and reports the rest.
    """
    p = Path(path)
    data, problem = read_run_file(p, MAX_JSONL_BYTES)
    if data is None:
        if problem is None or problem.endswith(" is missing"):
            return JsonlRead(records=[])
        return JsonlRead(records=[], bad_lines=[0], problem=problem)  # 0: the file as a whole
    lines = data.split(b"\n")
    out = JsonlRead(records=[])
    last = len(lines) - 1  # the element after the final newline ("" when the file ends cleanly)
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw.decode("utf-8"))
            if too_deep(rec):
                raise ValueError("nested too deeply")
        except (ValueError, UnicodeDecodeError, RecursionError):
            if i == last:
                out.torn_tail = True
            else:
                out.bad_lines.append(i + 1)
            continue
        if isinstance(rec, dict):
            out.records.append(rec)
        else:
            out.bad_lines.append(i + 1)
    return out


def read_usage(run: RunInfo) -> tuple[dict[str, JsonValue] | None, str | None]:
    """The spend of a run: ``results.json``'s ``usage``, or ``usage.json`` while it runs; ``(None, problem)``
    when ``usage.json`` cannot be read (:func:`read_run_file`)."""
    usage = run.results.get("usage") if isinstance(run.results, dict) else None
    if isinstance(usage, dict):
        return usage, None
    if USAGE_FILE not in run.files:
        return None, None
    data, problem = peek_json(run.file(USAGE_FILE))
    usage = data.get("usage") if isinstance(data, dict) else None
    return (usage if isinstance(usage, dict) else None), problem


def is_gate_verdict(obj: object) -> TypeGuard[dict[str, JsonValue]]:
    """A gate verdict as ``gate --json`` writes it: ``{"policy", "outcome", "checks": [...]}``."""
    return isinstance(obj, dict) and isinstance(obj.get("checks"), list) and isinstance(obj.get("outcome"), str)


def read_gate_verdict(obj: dict[str, JsonValue], where: str) -> tuple[GateResults | None, str | None]:
    """``(the gate's typed verdict, None)``, or ``(None, the one-line problem)`` for a verdict file its model
    refuses (an older ``gate --json`` without ``level`` or ``exit_code``, a hand-edited check); never raises.

    A verdict file carries no ``schema`` in older versions, so it is read by :class:`GateResults` directly
    rather than by :func:`~collapse_probe.results.read_results`.
    """
    from pydantic import ValidationError

    from collapse_probe.results import describe_error

    try:
        return GateResults.parse(obj), None
    except ValidationError as exc:
        return None, describe_error(exc, GateResults, where)


def _verdict_files(entries: list[os.DirEntry]) -> list[tuple[str, dict[str, JsonValue]]]:
    out = []
    for e in entries:
        if not e.name.endswith(".json") or e.name in RUN_MARKERS or not e.is_file(follow_symlinks=False):
            continue
        try:
            if e.stat(follow_symlinks=False).st_size > VERDICT_MAX_BYTES:
                continue
        except OSError:
            continue
        obj, _ = peek_json(e.path)
        if is_gate_verdict(obj):
            out.append((e.name, obj))
    return out


def _kind_of(
    config: dict[str, JsonValue] | None,
    results: dict[str, JsonValue] | None,
    files: set[str],
    verdicts: list[tuple[str, dict[str, JsonValue]]],
) -> str:
    kind = config.get("kind") if config is not None else None
    if isinstance(kind, str):
        return kind
    schema = results.get("schema") if results is not None else None
    if isinstance(schema, str):
        parts = schema.split("/")
        if len(parts) >= 2:
            return parts[1]
    if verdicts:
        return "gate"
    if "metrics.jsonl" in files:
        return "train"
    if "samples.jsonl" in files:
        return "audit"
    if "conversations.jsonl" in files:
        return "play"
    return "unknown"


def load_run(path: str | Path, root: str | Path | None = None) -> RunInfo:
    """Read one run directory (config, results, file list); never raises on bad content.

    Args:
        path: the run directory.
        root: the runs root, for the relative :attr:`RunInfo.name`.
    """
    p = Path(path).resolve()
    try:
        entries = list(os.scandir(p))
    except OSError:
        entries = []
    files = {e.name for e in entries if e.is_file(follow_symlinks=False)}
    problems: list[str] = []
    for e in entries:
        if e.name in (*RUN_MARKERS, USAGE_FILE, LOCK_FILE) and e.name not in files:
            problems.append(read_run_file(e.path)[1] or f"{e.name} not read")
    config = _read_config(p, files, problems)
    results, typed, invalid = _read_results(p, files, problems)
    verdicts = _verdict_files(entries)
    verdict_names = {n for n, _ in verdicts}
    mtime = 0.0
    for e in entries:
        if e.name in RUN_MARKERS or e.name in verdict_names:
            try:
                mtime = max(mtime, e.stat(follow_symlinks=False).st_mtime)
            except OSError:
                pass
    return RunInfo(
        path=p,
        name=_run_name(p, root),
        kind=_kind_of(config, results, files, verdicts),
        config=config,
        results=None if invalid is not None else results,
        files=tuple(sorted(files)),
        problems=problems,
        mtime=mtime,
        verdicts=verdicts,
        typed=typed,
        invalid=invalid,
    )


def _read_config(p: Path, files: set[str], problems: list[str]) -> dict[str, JsonValue] | None:
    """The run's ``config.json`` (``None``: absent or unreadable, the problem appended to ``problems``)."""
    config, prob = peek_json(p / CONFIG_FILE)
    if prob and CONFIG_FILE in files:
        problems.append(prob)
    if config is not None and not isinstance(config, dict):
        problems.append(f"{CONFIG_FILE} is not a JSON object")
        config = None
    return config


def _read_results(
    p: Path, files: set[str], problems: list[str]
) -> tuple[dict[str, JsonValue] | None, Results | None, str | None]:
    """``(results, typed results, why the results are invalid)`` of the run (``results.json``, or a
    compare run's file); each problem appended to ``problems``."""
    results_file = COMPARE_FILE if COMPARE_FILE in files and RESULTS_FILE not in files else RESULTS_FILE
    results, prob = peek_json(p / results_file)
    if prob and results_file in files:
        problems.append(prob)
    if results is not None and not (isinstance(results, dict) and isinstance(results.get("schema"), str)):
        problems.append(f"{results_file} has no 'schema' key (being written or not a collapse-probe result)")
        results = None
    typed, invalid = None, None
    if results is not None and results["schema"] in BY_SCHEMA:
        typed, invalid = read_results(results, results_file)
        if invalid is not None:
            problems.append(invalid)
    return results, typed, invalid


def _run_name(p: Path, root: str | Path | None) -> str:
    """The run's name: its path relative to ``root`` (``.`` for the root itself), else its folder's name."""
    if root is not None:
        try:
            rel = p.relative_to(Path(root).resolve())
            name = rel.as_posix() or "."
        except ValueError:
            name = p.name
    else:
        name = p.name
    return "." if name == "" else name


MODEL_FILES = ("model.safetensors", "adapter_config.json", "adapter_model.safetensors", "pytorch_model.bin",
               "tokenizer_config.json", "generation_config.json")  # fmt: skip
"""Files of a saved model directory (transformers, peft), whose ``config.json`` is the model's own."""


def _saved_model(root: Path, names: set[str]) -> bool:
    """A saved model folder (``config.json`` beside weights or a tokenizer, no other run file), e.g. the
    model a training example saves into its run directory: not a run, so not listed "in progress"."""
    return names & set(RUN_MARKERS) == {CONFIG_FILE} and bool(names & set(MODEL_FILES))


def _walk(root: Path, depth: int) -> Iterator[Path]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    names = {e.name for e in entries if e.is_file(follow_symlinks=False)}
    if (names & set(RUN_MARKERS) and not _saved_model(root, names)) or _verdict_files(entries):
        yield root
    if depth >= MAX_DEPTH:
        return
    for e in entries:
        # symlinks are not followed: a link cycle must not hang the viewer
        if e.is_dir(follow_symlinks=False) and not e.name.startswith(".") and e.name not in _SKIP_DIRS:
            yield from _walk(Path(e.path), depth + 1)


def discover_runs(root: str | Path) -> list[RunInfo]:
    """Every run directory under ``root`` (recursively, ``root`` included), sorted by name.

    A directory is a run when it holds one of :data:`RUN_MARKERS` or a gate verdict. Nested runs (e.g. the cells of a
    gate) are listed separately.

    Raises:
        collapse_probe.errors.ConfigError: ``root`` is not a directory.
    """
    from collapse_probe.errors import ConfigError

    r = Path(root)
    if not r.is_dir():
        raise ConfigError(f"RUNS_DIR {str(root)!r} is not a directory")
    return [load_run(p, r) for p in _walk(r.resolve(), 0)]


def audit_records(records: list[dict[str, JsonValue]]) -> dict[str, dict[str, dict[str, JsonValue]]]:
    """The per-state records of an audit's ``samples.jsonl`` as ``{mode: {state_id: record}}``.

    The audit appends one record per (state, sampling mode) as soon as the state is measured; a
    resumed run may append a state again, and then the last record wins, as the audit itself reads
    it back. Records without a ``state_id`` are skipped; a record without ``mode`` counts as ``direct``.
    """
    out: dict[str, dict[str, dict[str, JsonValue]]] = {}
    for rec in records:
        sid = rec.get("state_id")
        if isinstance(sid, str):
            out.setdefault(str(rec.get("mode") or "direct"), {})[sid] = rec
    return out


def _finite(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _numeric_list(v: object) -> TypeGuard[list[float | None]]:
    """A non-empty flat list of numbers (``None`` allowed for a missing value)."""
    return (
        isinstance(v, list)
        and bool(v)
        and all(x is None or (isinstance(x, int | float) and not isinstance(x, bool)) for x in v)
        and any(x is not None for x in v)
    )


MONITOR_FILE = "monitor.jsonl"
"""The collapse monitor's rows, one per training step, each with its ``alarms``."""
MONITOR_FILES = (MONITOR_FILE, "monitor/" + MONITOR_FILE)
"""Where a run keeps them: a monitor run directory, or a trainer's ``monitor/`` subdirectory."""


class AlarmLine(TypedDict):
    """One alarm of a monitor run as the dashboard lists it."""

    step: int
    kind: str
    message: str


def monitor_alarms(run: RunInfo) -> list[AlarmLine]:
    """The alarms of a run's monitor rows (:data:`MONITOR_FILES`; ``[]`` without one):
    ``{"step", "kind", "message"}`` each, the step taken from its row when the alarm does not carry one."""
    out: list[AlarmLine] = []
    found = next((name for name in MONITOR_FILES if run.file(name).is_file()), MONITOR_FILE)
    for row in run.jsonl(found).records:
        alarms = row.get("alarms")
        if not isinstance(alarms, list):
            continue
        for a in alarms:
            if isinstance(a, dict):
                step = a.get("step", row.get("step"))
                if isinstance(step, int) and not isinstance(step, bool):
                    out.append(
                        AlarmLine(step=step, kind=str(a.get("kind") or "alarm"), message=str(a.get("message") or ""))
                    )
    return out


CurveRow = dict[str, float]
"""One step of a training curve: ``{"step": n, quantity: value, ...}``, every value a finite number."""


def training_curve(run: RunInfo) -> list[CurveRow]:
    """Per-step records of a train or lab run: ``[{"step": int, key: float, ...}]`` sorted by step.

    Read from ``metrics.jsonl`` when present (the last record of a repeated step wins, which is
    what a resumed run that redid a step means); otherwise from per-step lists in ``results.json``
    (``{"steps": [...], "train_reward": [...], ...}`` as the lab writes, every numeric list becoming
    a column; or a ``"history"``/``"curve"`` list of records). Non-finite and non-numeric values are
    dropped.
    """
    if "metrics.jsonl" in run.files:
        records = run.jsonl("metrics.jsonl").records
        if records:
            return training_curve_from_records(records)
    rows: list[dict[str, JsonValue]] = []
    if isinstance(run.results, dict):
        res = run.results
        for key in ("history", "curve", "metrics"):
            listed = res.get(key)
            if isinstance(listed, list) and all(isinstance(r, dict) for r in listed):
                rows = [r for r in listed if isinstance(r, dict)]
                break
        else:
            lists = {k: v for k, v in res.items() if k != "steps" and _numeric_list(v)}
            if lists:
                n = max(len(v) for v in lists.values())
                raw_steps = res.get("steps")
                steps: list[JsonValue] = raw_steps if isinstance(raw_steps, list) else list(range(n))
                rows = [
                    {"step": steps[i] if i < len(steps) else i, **{k: v[i] for k, v in lists.items() if i < len(v)}}
                    for i in range(n)
                ]
    return training_curve_from_records(rows)


def training_curve_from_records(rows: Sequence[Mapping[str, object]]) -> list[CurveRow]:
    """Clean per-step records: numeric values only, sorted by step, the last record of a step wins."""
    by_step: dict[float, CurveRow] = {}
    for i, r in enumerate(rows):
        step = _finite(r.get("step", i))
        if step is None:
            continue
        clean: CurveRow = {"step": int(step) if float(step).is_integer() else step}
        for k, v in r.items():
            if k == "step":
                continue
            f = _finite(v)
            if f is not None:
                clean[k] = f
        by_step[step] = clean
    return [by_step[s] for s in sorted(by_step)]


def training_curves(run: RunInfo) -> dict[str, list[CurveRow]]:
    """``{label: per-step records}`` of a train or lab run, or one curve per method of a lab comparison.

    The label is the run's name (``name/method`` for the methods of a ``lab --compare`` run; a v2
    comparison contributes each method's seed-mean curve).
    """
    methods = run.results.get("methods") if run.results is not None else None
    if isinstance(methods, list):
        # lab-compare/v2: one entry per method with its seed-mean per-step ``curve``
        out = {}
        for entry in methods:
            curve = entry.get("curve") if isinstance(entry, dict) else None
            if isinstance(entry, dict) and isinstance(curve, list):
                label = entry.get("label") or entry.get("method")
                out[f"{run.name}/{label}"] = training_curve_from_records(
                    [{k: v for k, v in r.items() if not k.endswith("_ci95")} for r in curve if isinstance(r, dict)]
                )
        return out
    if isinstance(methods, dict):
        out = {}
        for method, sub in methods.items():
            if isinstance(sub, dict):
                fake = RunInfo(path=run.path, name=run.name, kind="lab", config=None, results=sub, files=())
                out[f"{run.name}/{method}"] = training_curve(fake)
        return out
    return {run.name: training_curve(run)}
