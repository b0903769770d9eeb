"""Report writers by run kind: how a pipeline writes its ``report.html`` without importing the report layer.

The report layer (:mod:`collapse_probe.report`) sits above the pipelines: it reads their results.
A pipeline therefore never imports it; it asks this registry for the writer of its kind
(``write_report("crossplay", results, path)``). :data:`REPORT_WRITERS` names the project's writers as
``"module:attr"`` targets (imported when a report is written); an installed package adds a writer for
a kind of its own through the entry-point group :data:`GROUP` (``collapse_probe.reports``), and code
replaces one with ``REPORT_WRITERS.register(kind, target, replace=True)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from collapse_probe.core._plugins import Registry

GROUP = "collapse_probe.reports"

REPORT_WRITERS: Registry[Callable[..., Any]] = Registry(
    "report writer",
    group=GROUP,
    entries={
        "audit": "collapse_probe.report.audit_report:write_audit_report",
        "audit-table": "collapse_probe.report.audit_report:summary_table",
        "compare": "collapse_probe.report.compare_plots:write_compare_report",
        "crossplay": "collapse_probe.report.crossplay_plots:write_crossplay_report",
        "monitor": "collapse_probe.report.monitor_plots:write_monitor_report",
        "play": "collapse_probe.report.play_plots:write_play_report",
        "train": "collapse_probe.report.training_plots:write_train_report",
    },
)
"""Run kind -> ``"module:attr"`` of its writer."""


def report_writer(kind: str) -> Callable[..., Any]:
    """The writer registered for ``kind`` (:data:`REPORT_WRITERS`, else an entry point of :data:`GROUP`).

    Raises:
        ConfigError: no writer is registered for ``kind``.
    """
    return REPORT_WRITERS.load(kind)


def write_report(kind: str, *args: Any, **kwargs: Any) -> Any:
    """Call the writer of ``kind`` with these arguments (each writer's own signature)."""
    return report_writer(kind)(*args, **kwargs)
