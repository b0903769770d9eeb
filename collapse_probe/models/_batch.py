"""Providers' native batch APIs: OpenAI Batch, Anthropic Message Batches and Gemini batch mode.

An audit draws N independent samples at each of many fixed states: thousands of calls whose
answers nobody waits for turn by turn, exactly the workload the providers' batch APIs bill at half
price. With batching on, an API backend's ``generate`` submits all its calls as one provider batch,
polls it with a progress bar, and returns the answers as if they had been sampled one by one: the
same per-sample seeds and sample indices (so the response cache stores them under the same keys),
the usage of each answer charged at the batch discount, and every request the batch could not
answer (``errored``, ``expired``, ``canceled``, a non-200 line) a :class:`GenerationResult` with
``error`` set: an infrastructure failure, recorded and retried on resume, never a score.

Modes (``--batch`` / ``--no-batch``, :func:`configure_batch`): ``"on"`` batches every ``generate``
call of a backend whose provider has a batch API; ``"off"`` never; ``"auto"`` (the default) batches
when the command samples independent answers (``audit``) and asks for at least ``threshold``
samples (``$COLLAPSE_PROBE_BATCH_THRESHOLD``, default 500), where the discount is worth the
latency; the audit then sends all its states in one ``generate`` call (:func:`batch_chunk`). Multi-turn conversations (``play``, ``crossplay``) are never batched
automatically: each turn waits for the last.

A batch survives a kill: its id and the hash of its calls' ids are appended to ``batches.jsonl`` in
the run directory as soon as it is submitted; a rerun that asks for the same calls finds the pending
batch and polls it instead of paying for a new one. Calls are identified by a hash of the spec, the
request's fingerprint, its first sample index and its sample count, so the same request asked again
maps to the same id.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, Required, TypedDict

from collapse_probe.core._constraints import Integer, Number, check_value
from collapse_probe.core.limits import MAX_WAIT_S
from collapse_probe.errors import ConfigError
from collapse_probe.models._types import Completion, GenerationRequest, GenerationResult
from collapse_probe.models._usage import check_budget


class APIChatModel(Protocol):
    """What the batch path needs of an HTTP backend (:class:`~collapse_probe.models._http.APIChatModel`
    has all of it; declared here so that this module does not import the backend that calls it)."""

    spec: str
    max_native_n: ClassVar[int]
    _native_n: bool

    def batch_line(self, request: GenerationRequest, start: int, k: int) -> tuple[str, Mapping[str, object]]: ...

    async def batch_submit(self, items: Sequence[tuple[BatchCall, str, Mapping[str, object]]]) -> str: ...

    async def batch_poll(self, batch_id: str) -> tuple[bool, int]: ...

    async def batch_results(self, batch_id: str) -> dict[str, BatchOutcome]: ...

    def parse_batch_answer(self, data: dict[str, object], request: GenerationRequest, k: int) -> list[Completion]: ...

    def redact(self, text: str) -> str: ...


logger = logging.getLogger(__name__)

BATCHES_FILE = "batches.jsonl"
MISSING = "*"
"""Key of a batch result map holding why calls without a result line got none."""
MODES = ("auto", "on", "off")


@dataclass
class BatchSettings:
    """When and where the API backends use their provider's batch API (see the module docstring)."""

    mode: str = "auto"
    auto: bool = False
    """Whether ``"auto"`` may batch at all (set for commands that sample independent answers)."""
    threshold: int = 500
    """``"auto"`` batches a ``generate`` call asking for at least this many samples."""
    poll_s: float = 30.0
    """Seconds between status polls of a pending batch."""
    state_dir: Path | None = None
    """Run directory holding ``batches.jsonl`` (``None``: a kill loses track of a pending batch)."""
    progress: bool = True

    def wants(self, model: Any, n_samples: int) -> bool:
        """Whether a ``generate`` call of ``model`` asking for ``n_samples`` samples goes to the batch API."""
        if not getattr(model, "supports_batch", False) or self.mode == "off":
            return False
        return self.mode == "on" or (self.auto and n_samples >= self.threshold)


SETTINGS = BatchSettings()


def configure_batch(
    mode: str | None = None,
    *,
    auto: bool | None = None,
    state_dir: str | Path | None = None,
    threshold: int | None = None,
    poll_s: float | None = None,
    progress: bool | None = None,
) -> BatchSettings:
    """Set the process-wide batch settings (the CLI's ``--batch`` / ``--no-batch``)."""
    if mode is not None:
        if mode not in MODES:
            raise ConfigError(f"batch mode: expected one of {', '.join(MODES)}, got {mode!r}")
        SETTINGS.mode = mode
    if auto is not None:
        SETTINGS.auto = auto
    if threshold is None and os.environ.get("COLLAPSE_PROBE_BATCH_THRESHOLD"):
        raw = os.environ["COLLAPSE_PROBE_BATCH_THRESHOLD"]
        try:
            threshold = int(raw)
        except ValueError:
            raise ConfigError(f"$COLLAPSE_PROBE_BATCH_THRESHOLD: expected an integer, got {raw!r}") from None
    if threshold is not None:
        check_value(threshold, "batch threshold", [Integer(1)])
        SETTINGS.threshold = threshold
    if poll_s is not None:
        check_value(poll_s, "batch poll interval (seconds)", [Number(gt=0, le=MAX_WAIT_S)])
        SETTINGS.poll_s = poll_s
    if state_dir is not None:
        SETTINGS.state_dir = Path(state_dir)
    if progress is not None:
        SETTINGS.progress = progress
    return SETTINGS


@dataclass(frozen=True)
class BatchCall:
    """One API call of a batch: samples ``start .. start + k - 1`` of request ``index``."""

    custom_id: str
    index: int
    start: int
    k: int


@dataclass
class BatchOutcome:
    """What the provider answered for one call: the wire-form answer, or why there is none."""

    data: dict[str, object] | None = None
    """The answer as the provider's API returned it (its backend's ``parse_batch_answer`` reads it)."""
    error: str | None = None


def plan_calls(model: APIChatModel, requests: Sequence[GenerationRequest]) -> list[BatchCall]:
    """The API calls answering ``requests``: native ``n`` in chunks where the API has it, else one per sample."""
    calls = []
    for ri, r in enumerate(requests):
        size = max(1, model.max_native_n) if model._native_n else 1
        for off in range(0, r.n, size):
            k = min(size, r.n - off)
            start = r.first_sample + off
            blob = f"{model.spec}\x00{r.fingerprint()}\x00{start}\x00{k}"
            cid = "cp-" + hashlib.sha256(blob.encode()).hexdigest()[:40]  # <= 64 chars of [A-Za-z0-9_-]
            calls.append(BatchCall(cid, ri, start - r.first_sample, k))
    return calls


def batch_chunk(model: Any, n_requests: int, samples_each: int) -> int | None:
    """How many requests a sampler should put in one ``generate`` call when the batch API will answer
    them (all of them: one batch, one discount, one wait), or ``None`` when it will not."""
    return n_requests if n_requests and SETTINGS.wants(model, n_requests * samples_each) else None


class JournalEntry(TypedDict, total=False):
    """One line of ``batches.jsonl``."""

    event: Required[Literal["submitted", "finished"]]
    spec: Required[str]
    batch_id: Required[str]
    """The provider's batch id."""
    calls: str
    """``submitted``: the hash of the batch's call ids (a rerun asking for the same calls resumes the batch)."""
    n_calls: int
    """``submitted``: the number of calls."""
    time: Required[float]
    """Unix time of the event."""


def _entry_problem(entry: Mapping[str, object]) -> str | None:
    """What is wrong with one ``batches.jsonl`` entry (``None``: well formed)."""
    from collapse_probe.core._records import field_problem

    if entry.get("event") not in ("submitted", "finished"):
        return field_problem("event", "'submitted' or 'finished'", entry.get("event"))
    if not isinstance(entry.get("batch_id"), str):
        return field_problem("batch_id", "the provider's batch id", entry.get("batch_id"))
    return None


@dataclass
class _Journal:
    """``batches.jsonl``: one line per submitted and per finished batch (append-only, fsynced)."""

    path: Path | None
    entries: list[Mapping[str, object]] = field(default_factory=list)
    """The file's entries (checked by :func:`_entry_problem`) and those appended since."""

    def __post_init__(self) -> None:
        if self.path is not None and self.path.exists():
            from collapse_probe.core._jsonl import iter_jsonl

            self.entries = list(iter_jsonl(self.path, _entry_problem))

    def pending(self, spec: str, key: str) -> str | None:
        finished = {e.get("batch_id") for e in self.entries if e.get("event") == "finished"}
        for e in reversed(self.entries):
            if e.get("event") == "submitted" and e.get("spec") == spec and e.get("calls") == key:
                bid = e.get("batch_id")
                return str(bid) if bid not in finished else None
        return None

    def append(self, entry: JournalEntry) -> None:
        self.entries.append(entry)
        if self.path is None:
            return
        from collapse_probe.core._jsonl import append_jsonl

        append_jsonl(self.path, dict(entry))


async def generate_batch(model: APIChatModel, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
    """Answer ``requests`` through the provider's batch API (see the module docstring)."""
    calls = plan_calls(model, requests)
    key = hashlib.sha256("\n".join(sorted(c.custom_id for c in calls)).encode()).hexdigest()[:32]
    journal = _Journal(SETTINGS.state_dir / BATCHES_FILE if SETTINGS.state_dir is not None else None)
    batch_id = journal.pending(model.spec, key)
    if batch_id is not None:
        logger.info("%s: resuming pending batch %s (%d calls)", model.spec, batch_id, len(calls))
    else:
        check_budget(model.spec)
        items = [(c, *model.batch_line(requests[c.index], c.start, c.k)) for c in calls]
        batch_id = await model.batch_submit(items)
        journal.append(
            {
                "event": "submitted",
                "spec": model.spec,
                "batch_id": batch_id,
                "calls": key,
                "n_calls": len(calls),
                "time": time.time(),
            }  # fmt: skip
        )
    outcomes = await _wait(model, batch_id, len(calls))
    journal.append({"event": "finished", "spec": model.spec, "batch_id": batch_id, "time": time.time()})
    return _assemble(model, requests, calls, outcomes, batch_id)


async def _wait(model: APIChatModel, batch_id: str, total: int) -> dict[str, BatchOutcome]:
    bar = None
    if SETTINGS.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=f"{model.spec} batch {batch_id}", unit="call")
    try:
        while True:
            done, finished = await model.batch_poll(batch_id)
            if bar is not None:
                bar.update(max(0, finished - bar.n))
            if done:
                break
            await asyncio.sleep(SETTINGS.poll_s)
    finally:
        if bar is not None:
            bar.close()
    return await model.batch_results(batch_id)


def _assemble(
    model: APIChatModel,
    requests: Sequence[GenerationRequest],
    calls: Sequence[BatchCall],
    outcomes: dict[str, BatchOutcome],
    batch_id: str,
) -> list[GenerationResult]:
    parts: dict[int, list[tuple[int, list[Completion]]]] = {}
    errors: dict[int, str] = {}
    for c in calls:
        out = outcomes.get(c.custom_id) or outcomes.get(MISSING) or BatchOutcome(error="no result in the batch output")
        if out.data is None:
            errors.setdefault(c.index, out.error or "no result")
            continue
        try:
            got = model.parse_batch_answer(out.data, requests[c.index], c.k)
        except Exception as exc:  # noqa: BLE001 - a malformed line fails its request, not the batch
            errors.setdefault(c.index, f"malformed batch answer: {type(exc).__name__}: {exc}")
            continue
        if len(got) < c.k:
            errors.setdefault(c.index, f"asked for {c.k} samples in one call, the batch answered {len(got)}")
            continue
        parts.setdefault(c.index, []).append((c.start, got[: c.k]))
    results = []
    for ri, _r in enumerate(requests):
        if ri in errors:
            results.append(GenerationResult([], error=model.redact(f"{model.spec}: batch {batch_id}: {errors[ri]}")))
        else:
            completions = [comp for _, got in sorted(parts.get(ri, []), key=lambda p: p[0]) for comp in got]
            results.append(GenerationResult(completions))
    return results


def jsonl_lines(text: str) -> list[Any]:
    """The JSON values of a JSONL document (blank lines skipped): decoded, unchecked; the caller names their shape."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]
