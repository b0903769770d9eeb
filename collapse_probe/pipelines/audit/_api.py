"""``collapse_probe.audit(...)``: the audit as one call, a typed config or its fields as keywords."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collapse_probe.core._callable import config_and_options
from collapse_probe.pipelines.audit._config import AuditConfig

if TYPE_CHECKING:
    from collapse_probe.results import AuditResults


def audit(
    config: AuditConfig | Mapping[str, Any] | None = None, /, *, out: str | Path | None = None, **kwargs: Any
) -> AuditResults:
    """Audit a simulator's collapse error (:func:`~collapse_probe.pipelines.audit.run_audit`) and return its results.

    Args:
        config: an :class:`AuditConfig` (or a mapping of its fields); ``None`` for the defaults.
        out: the run directory (``None``: nothing is written).
        **kwargs: fields of :class:`AuditConfig` (they override ``config``'s), then the options of
            :func:`~collapse_probe.pipelines.audit.run_audit_async` (``arena``, ``cache``, ``progress``,
            ``participants``, ``policy``, ``fresh``, ``keep_failed``).

    Returns:
        The typed results (:class:`~collapse_probe.results.AuditResults`, what ``results.json`` holds):
        ``r.summary.collapse_error.estimate``; ``r["summary"]`` reads a field by its JSON key, and
        ``r.to_json()`` gives the JSON object.

    Example:
        >>> import collapse_probe
        >>> r = collapse_probe.audit(sim="scripted:uniform", samples=8, states=2, progress=False)  # doctest: +SKIP
        >>> r.verdicts.reward.label  # doctest: +SKIP
    """
    from collapse_probe.pipelines.audit._pipeline import run_audit, run_audit_async

    cfg, options = config_and_options(
        AuditConfig, config, kwargs, what="collapse_probe.audit", options_of=run_audit_async
    )
    return run_audit(cfg, out, **options)


async def audit_async(
    config: AuditConfig | Mapping[str, Any] | None = None, /, *, out: str | Path | None = None, **kwargs: Any
) -> AuditResults:
    """:func:`audit` for async code: ``await collapse_probe.audit_async(...)``."""
    from collapse_probe.pipelines.audit._pipeline import run_audit_async

    cfg, options = config_and_options(
        AuditConfig, config, kwargs, what="collapse_probe.audit_async", options_of=run_audit_async
    )
    return await run_audit_async(cfg, out, **options)
