"""The audit's terminal table and ``report.html``, drawn by the report layer.

The report layer reads the audit's results, so the audit does not import it: these look up the
writers registered for the run kind (:mod:`collapse_probe.core._reports`) and keep the names
``collapse_probe.pipelines.audit.summary_table`` and ``write_audit_report`` working.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from collapse_probe.core._reports import write_report

if TYPE_CHECKING:
    from collapse_probe.results import AuditResults


def write_audit_report(
    path: str | Path, results: Mapping[str, object], records: Sequence[Mapping[str, object]]
) -> Path:
    """``report.html``: ε per state with CIs, class histograms with examples, ε by turn, direct vs VS."""
    out: Path = write_report("audit", path, results, records)
    return out


def summary_table(results: AuditResults | Mapping[str, object]) -> str:
    """A plain-text table for the terminal: the meaning view, the reward view, then the other views
    (of the typed results or their ``results.json`` object)."""
    data = dict(results) if isinstance(results, Mapping) else results.to_json()
    table: str = write_report("audit-table", data)
    return table
