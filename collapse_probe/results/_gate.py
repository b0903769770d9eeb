"""The gate's verdict (``collapse-probe gate --json``, schema ``collapse-probe/gate/v1``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final, Literal

from pydantic import Field

from collapse_probe.results._base import Interval, ResultsModel

GATE_SCHEMA: Final = "collapse-probe/gate/v1"

Status = Literal["pass", "fail", "error"]
"""A check passed, failed, or could not be judged (``error``)."""
Decision = Literal["interval", "point", "strict"]
"""How a threshold check decides (:mod:`collapse_probe.gate`)."""
Outcome = Literal["pass", "fail", "could not judge"]

STRICT_LEVEL: Final = 0.95
"""Level of the CI the strict rule reads (and of ``ci95``, shown under every rule)."""


def format_number(x: float | None) -> str:
    """A gate number as its messages and summaries show it: 4 significant digits, ``""`` for none or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.4g}"


def format_interval(ci: Sequence[float | None]) -> str:
    """``[lo, hi]`` with :func:`format_number`; a ``None`` end is unbounded (``-inf`` / ``inf``)."""
    lo, hi = ci
    return f"[{format_number(lo) if lo is not None else '-inf'}, {format_number(hi) if hi is not None else 'inf'}]"


class GateCheck(ResultsModel):
    """One check of the gate (``GateCheck(name, status, message, value=...)``)."""

    name: str
    """``results``, ``infra:<policy>|<simulator>``, ``transfer``, ``transfer:<simulator>``, ``regression`` or
    ``thresholds``."""
    status: Status
    message: str
    """Why it passed, failed or could not be judged (shown in the summary and JUnit)."""
    value: float | None = None
    threshold: float | None = None
    ci95: Interval | None = None
    """The 95 % CI of ``value`` (``None`` ends: unbounded on that side)."""
    rule: Decision | None = None
    """The rule that decided a threshold check."""
    interval: Interval | None = None
    """The interval the rule read, at ``level`` (``None`` for the point rule)."""
    level: float | None = None
    fail_level: float | None = None
    """When the check shares the verdict's fail-side error with others (``transfer:<simulator>`` under the
    interval rule): the two-sided level whose far end ``interval`` carries (its near end stays at ``level``)."""

    def __init__(self, *args: Any, **data: Any) -> None:
        """``name``, ``status`` and ``message`` may be given by position, as the gate writes its checks."""
        data.update(zip(("name", "status", "message"), args, strict=False))
        super().__init__(**data)


class SimulatorTransfer(ResultsModel):
    """One held-out simulator's own transfer ratio (listed beside the pooled check)."""

    simulator: str
    value: float | None = None
    ci95: Interval | None = None
    interval: Interval | None = None
    """The interval the rule read, at ``level`` (``None`` for the point rule)."""
    n_tasks: int | None = None
    status: Status | None = None
    """The ``transfer:<simulator>`` check's status with ``--min-transfer-each``; ``None``: listed, not required."""
    note: str | None = None


class GateResults(ResultsModel):
    """Every check of one gate evaluation and what they add up to."""

    schema_: Literal["collapse-probe/gate/v1"] = Field(GATE_SCHEMA, alias="schema")
    """The results kind and version."""
    policy: str
    """The candidate policy."""
    baseline_policy: str | None = None
    strict: bool = False
    decision: Decision = "interval"
    level: float
    """Two-sided level of the interval the rule reads."""
    outcome: Outcome
    exit_code: Literal[0, 1, 2, 3]
    """0 pass, 1 fail, 3 could not judge (2 in a verdict written before could-not-judge had its own code;
    ``collapse-probe gate`` exits 2 only for a usage error, which writes no verdict)."""
    checks: list[GateCheck]
    per_simulator: list[SimulatorTransfer] = []
    """Each held-out simulator's own transfer ratio and interval (with ``--min-transfer`` or ``--min-transfer-each``)."""
