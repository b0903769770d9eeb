"""An audit's ``samples.jsonl`` records (one measured state each) and the per-state rows of its
``results.json`` built from them: the record check the audit runs on resume and the exporters run on a
finished run, beside the results model (the audit pipeline and ``interop`` both read them, neither
imports the other for it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    Tag,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from collapse_probe.core._records import field_problem


def state_row(r: Mapping[str, object]) -> dict[str, object]:
    """The per-state entry of ``results.json`` (:class:`~collapse_probe.results._audit.StateRow` reads it)
    of one ``samples.jsonl`` record (responses stay in ``samples.jsonl``)."""
    keys = ("state_id", "mode", "source", "kind", "turn", "task_id", "status", "n", "class_counts", "class_names",
            "collapse_error", "collapse_error_ci95", "collapse_error_corrected", "collapse_error_estimate",
            "entropy", "entropy_ci95", "entropy_lower_bound_only", "entropy_note", "hill", "hill_note", "distinct_1", "distinct_2", "vendi", "low_confidence", "exact", "reward_view", "decision", "vs", "n_empty", "error")  # fmt: skip
    row = {k: r[k] for k in keys if k in r}
    row.setdefault("n", 0)
    row.setdefault("class_counts", [])
    row.setdefault("collapse_error", None)
    row.setdefault("collapse_error_ci95", None)
    row.setdefault("entropy", None)
    vs = row.get("vs")
    if isinstance(vs, dict):
        row["vs"] = {k: v for k, v in vs.items() if k != "examples"}
    return row


_REQUIRED_NUMBERS = ("collapse_error", "collapse_error_corrected", "entropy")
"""Per-state estimates every measured state has (the summaries average them)."""
_NUMBERS = ("collapse_error_estimate", "entropy_plugin", "entropy_miller_madow", "sample_coverage", "distinct_1",
            "distinct_2", "vendi", "mean_pairwise_cosine")  # fmt: skip
"""Per-state estimates a ``samples.jsonl`` record may hold (``null`` where undefined)."""

Whole = Annotated[int, Field(ge=0)]
"""A whole number >= 0."""
Pair = Annotated[list[float], Field(min_length=2, max_length=2)]
"""``[low, high]``."""


class _SampleHeader(BaseModel):
    """What every ``samples.jsonl`` record says of its state."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    state_id: str
    """The state's id (``on_policy:KEY:M``, ``opening:TASK``, ...)."""
    mode: str
    """How the simulator was asked (``direct``, ``verbalized``)."""
    status: str
    """``ok`` when the state was measured, else why not (``infra_error``, ...)."""
    source: str
    """Where the state comes from (``on_policy``, ``benchmark``, ``human``)."""
    kind: str
    """The state's kind (``opening``, ``mid``, ...)."""
    turn: Whole | None = None
    """The simulator turn the state is before (0-based), ``null`` when it has none."""


class FailedSample(_SampleHeader):
    """A state that was not measured: its header (the rest is checked through its per-state row)."""

    model_config = ConfigDict(json_schema_extra={"not": {"properties": {"status": {"const": "ok"}}}})


class MeasuredSample(_SampleHeader):
    """A measured state: its replies, their classes and the estimates made from them."""

    status: Literal["ok"]
    """Measured."""
    n: Annotated[int, Field(ge=1)]
    """Replies sampled."""
    class_counts: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)]
    """Replies per class, summing to ``n``."""
    responses: list[str]
    """The ``n`` replies."""
    class_names: list[str]
    """One name per class."""
    class_examples: list[list[str]]
    """Example replies per class."""
    labels: list[Whole] | None = None
    """The class of each reply."""
    n_empty: Whole = 0
    """Replies that were empty."""
    collapse_error: float
    collapse_error_corrected: float
    entropy: float
    collapse_error_estimate: float | None = None
    entropy_plugin: float | None = None
    entropy_miller_madow: float | None = None
    sample_coverage: float | None = None
    distinct_1: float | None = None
    distinct_2: float | None = None
    vendi: float | None = None
    mean_pairwise_cosine: float | None = None
    collapse_error_ci95: Pair | None = None
    """95 % interval of the collapse error."""
    entropy_ci95: Annotated[list[float | None], Field(min_length=2, max_length=2)] | None = None
    """95 % interval of the entropy; ``[low, null]`` when the entropy is a lower bound only."""
    hill: dict[str, JsonValue] | None = None
    exact: dict[str, JsonValue] | None = None
    decision: dict[str, JsonValue] | None = None
    vs: dict[str, JsonValue] | None = None

    @field_validator("class_counts")
    @classmethod
    def _sum_n(cls, v: list[int], info: ValidationInfo) -> list[int]:
        if "n" in info.data and sum(v) != info.data["n"]:
            raise ValueError("does not sum to n")
        return v

    @field_validator("responses", "labels")
    @classmethod
    def _n_long(cls, v: list[Any] | None, info: ValidationInfo) -> list[Any] | None:
        if v is not None and "n" in info.data and len(v) != info.data["n"]:
            raise ValueError("not n long")
        return v

    @field_validator("class_names", "class_examples")
    @classmethod
    def _per_class(cls, v: list[Any], info: ValidationInfo) -> list[Any]:
        if "class_counts" in info.data and len(v) != len(info.data["class_counts"]):
            raise ValueError("not one per class")
        return v

    @field_validator("labels")
    @classmethod
    def _class_indices(cls, v: list[int] | None, info: ValidationInfo) -> list[int] | None:
        if v is not None and "class_counts" in info.data and any(x >= len(info.data["class_counts"]) for x in v):
            raise ValueError("not a class index")
        return v

    @field_validator("entropy_ci95")
    @classmethod
    def _low_end(cls, v: list[float | None] | None) -> list[float | None] | None:
        if v is not None and v[0] is None:
            raise ValueError("no low end")
        return v


def _sample_kind(v: Any) -> str:
    return "ok" if isinstance(v, dict) and v.get("status") == "ok" else "failed"


SampleRecord = Annotated[
    Annotated[MeasuredSample, Tag("ok")] | Annotated[FailedSample, Tag("failed")], Discriminator(_sample_kind)
]
"""One line of an audit's ``samples.jsonl``: a measured state or one that failed (by ``status``); its JSON
Schema ships as ``collapse_probe/schemas/sample.json``."""
SAMPLE_RECORD: TypeAdapter[MeasuredSample | FailedSample] = TypeAdapter(SampleRecord)
"""Validates a ``samples.jsonl`` line (``SAMPLE_RECORD.validate_python(data, strict=True)``)."""


def _expected(field: str, rec: Mapping[str, object]) -> str:
    """What a record's ``field`` must hold, worded with the record's own counts."""
    n, counts = rec.get("n"), rec.get("class_counts")
    k = len(counts) if isinstance(counts, list) else 0
    words = {
        "turn": "a whole number >= 0 or null", "n": "a whole number >= 1",
        "class_counts": f"whole numbers >= 1 summing to n = {n}", "responses": f"{n} reply texts",
        "class_names": f"{k} class names", "class_examples": f"{k} lists of example replies",
        "labels": f"{n} class indices", "n_empty": "a whole number >= 0",
        "collapse_error_ci95": "two numbers or null", "entropy_ci95": "two numbers or null (or [number, null])",
    }  # fmt: skip
    if field in words:
        return words[field]
    if field in _REQUIRED_NUMBERS:
        return "a number"
    if field in _NUMBERS:
        return "a number or null"
    return "an object" if field in ("hill", "exact", "decision", "vs") else "a string"


_ORDER = ("state_id", "mode", "status", "source", "kind", "turn", *MeasuredSample.model_fields)
"""The order a record's fields are checked in: the first bad one is named."""


def sample_problem(rec: Mapping[str, object]) -> str | None:
    """What is wrong with one ``samples.jsonl`` record, or ``None`` when it is well formed (the
    fields the audit's summaries read back on resume; see :func:`~collapse_probe.rollout.iter_jsonl`):
    its :data:`SampleRecord`, then its per-state row of ``results.json``."""
    try:
        SAMPLE_RECORD.validate_python(rec, strict=True)
    except ValidationError as exc:
        fields = [str(e["loc"][1]) for e in exc.errors() if len(e["loc"]) > 1 and e["loc"][1] in _ORDER]
        if not fields:
            return exc.errors(include_url=False)[0]["msg"]
        field = min(fields, key=_ORDER.index)
        return field_problem(field, _expected(field, rec), rec.get(field))
    return _row_problem(rec)


def _row_problem(rec: Mapping[str, object]) -> str | None:
    """What keeps the record's per-state row of ``results.json`` from its typed model (a field the
    checks above do not read, e.g. ``task_id`` or ``low_confidence`` of the wrong type), or ``None``."""
    from pydantic import ValidationError

    from collapse_probe.results._audit import StateRow
    from collapse_probe.results._base import describe_error

    try:
        StateRow.parse(state_row(rec))
    except ValidationError as exc:
        return describe_error(exc, StateRow, "the record's")
    return None
