"""Report writers by run kind: how a pipeline writes its ``report.html`` without importing the report layer.

The report layer (:mod:`collapse_probe.report`) sits above the pipelines: it reads their results.
A pipeline therefore never imports it; it asks this registry for the writer of its kind
(``write_report("crossplay", results, path)``). The writers are declared in the entry-point group
:data:`GROUP` (``collapse_probe.reports`` in ``pyproject.toml``), so an installed package may
replace one; :data:`OWN` holds the project's own declarations for an install whose metadata predates
the group (an editable install made before it existed), and ``tests/test_architecture.py`` keeps the
two equal.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from collapse_probe._plugins import load_target
from collapse_probe.errors import ConfigError

GROUP = "collapse_probe.reports"

OWN = {
    "audit": "collapse_probe.report.audit_report:write_audit_report",
    "audit-table": "collapse_probe.report.audit_report:summary_table",
    "crossplay": "collapse_probe.report.crossplay_plots:write_crossplay_report",
    "monitor": "collapse_probe.report.monitor_plots:write_monitor_report",
    "play": "collapse_probe.report.play_plots:write_play_report",
    "train": "collapse_probe.report.training_plots:write_train_report",
}
"""Run kind -> ``"module:attr"`` of its writer, as declared in this project's ``pyproject.toml``."""


@functools.cache
def _declared() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=GROUP)}


def report_writer(kind: str) -> Callable[..., Any]:
    """The writer registered for ``kind`` (an entry point of :data:`GROUP`, else :data:`OWN`).

    Raises:
        ConfigError: no writer is registered for ``kind``.
    """
    target = _declared().get(kind) or OWN.get(kind)
    if target is None:
        known = sorted({*OWN, *_declared()})
        raise ConfigError(f"no report writer for run kind {kind!r}; known: {', '.join(known)}")
    return load_target(target, f"the report writer of {kind!r}")


def write_report(kind: str, *args: Any, **kwargs: Any) -> Any:
    """Call the writer of ``kind`` with these arguments (each writer's own signature)."""
    return report_writer(kind)(*args, **kwargs)
