"""Logging set-up and the run's reliability tally (retried requests, infrastructure failures).

The command line configures logging once (``-v`` shows one line per retried request, ``-vv`` debug
detail, ``--log-level`` sets the level directly) and prints a summary line at the end of every run
("12 requests retried, 2 infra failures"), so a rate-limited run never looks like a stalled one.
Backends report a retry by logging it with ``extra={"retry": True}`` or a message containing
``"retry "`` on a ``collapse_probe`` logger; pipelines call :func:`note_infra_failure`.
"""

from __future__ import annotations

import logging
import sys
import threading

LEVELS = ("debug", "info", "warning", "error")
_lock = threading.Lock()
_tally = {"retries": 0, "infra_failures": 0}
_first_error: list[str] = []
"""The message of the run's first infrastructure failure (the terminal names it)."""


class _RetryCounter(logging.Handler):
    """Counts retry records of ``collapse_probe`` loggers, whatever level is shown."""

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "retry", False) or "; retry " in str(record.msg):
            with _lock:
                _tally["retries"] += 1


_COUNTER = _RetryCounter(level=logging.DEBUG)


def install_counter() -> None:
    """Count retries from now on (idempotent); the package logger lets INFO records through to it."""
    root = logging.getLogger("collapse_probe")
    if _COUNTER not in root.handlers:
        root.addHandler(_COUNTER)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)


def configure(verbose: int = 0, level: str | None = None) -> None:
    """Log ``collapse_probe`` records to stderr: warnings by default, info at ``-v``, debug at ``-vv``."""
    if level is not None:
        lvl = getattr(logging, level.upper())
    else:
        lvl = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    root = logging.getLogger("collapse_probe")
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(lvl)
    handler.setFormatter(logging.Formatter("collapse-probe %(levelname)s %(name)s: %(message)s"))
    for h in list(root.handlers):
        if getattr(h, "_collapse_probe_cli", False):
            root.removeHandler(h)
    handler._collapse_probe_cli = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    install_counter()
    root.setLevel(min(lvl, logging.INFO))


def note_infra_failure(n: int = 1, error: str | None = None) -> None:
    """Count ``n`` units of work (conversations, audit states) that ended in an infrastructure failure;
    ``error`` is the failure's message (the first one is kept for :func:`first_error_line`)."""
    with _lock:
        _tally["infra_failures"] += n
        if error and not _first_error:
            _first_error.append(error)


def tally() -> dict[str, int]:
    with _lock:
        return dict(_tally)


def reset() -> None:
    with _lock:
        _tally.update(retries=0, infra_failures=0)
        _first_error.clear()


def one_line(text: str | None, limit: int = 400) -> str:
    """A failure's message on one terminal line: whitespace collapsed, cut to ``limit`` characters."""
    out = " ".join(str(text or "no message recorded").split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


def no_result_reason(infra_failures: int, first_error: str | None) -> str:
    """``(N infrastructure failures; the first: MESSAGE; rerun the same command to retry them)``: why a
    run has no result and what to do, for the end of its one NO RESULT line (worded as
    :func:`first_error_line`, which also ends the run on stderr)."""
    if not infra_failures:
        return "(nothing to measure)"
    n = f"{infra_failures} infrastructure failure{'s' if infra_failures != 1 else ''}"
    if first_error and ": empty reply (" in first_error:  # rollout._engine.EMPTY_REPLY_FAILURE
        # a seeded model answers the same request the same way: the same command would fail the same way
        return (f"({n}; the first: {one_line(first_error, 300)}; the same command asks the same seeded requests: "
                "another --seed, a larger --max-tokens or another model changes them)")  # fmt: skip
    return f"({n}; the first: {one_line(first_error, 300)}; rerun the same command to retry them)"


def first_error_line(limit: int = 400) -> str | None:
    """``first infrastructure failure (of N): MESSAGE`` when the run had any, else ``None``: the cause
    of a run that ended with failures is on the terminal, not only inside its results files."""
    with _lock:
        n, first = _tally["infra_failures"], (_first_error[0] if _first_error else None)
    if not n:
        return None
    return f"first infrastructure failure (of {n}): {one_line(first, limit)}"


def summary_line() -> str:
    t = tally()
    r, f = t["retries"], t["infra_failures"]
    return f"{r} request{'s' if r != 1 else ''} retried, {f} infra failure{'s' if f != 1 else ''}"
