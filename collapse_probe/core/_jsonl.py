"""Record files: JSONL records read and appended safely, JSON written atomically.

The bottom of the package: every layer (model backends writing ``batches.jsonl`` and ``usage.json``,
the rollout engine, pipelines, the report) reads and writes its files through these functions, so
a kill mid-write leaves at most a torn last line (skipped on read, truncated by
:meth:`~collapse_probe.rollout.RunDir.repair`) and a reader never sees half a JSON file.

A run directory defers its ``config.json`` until the first thing is written there
(:class:`~collapse_probe.rollout.RunDir`); a file written beside it by a lower layer (a backend's
``usage.json``) first calls :func:`flush_config`, which runs the flush the open run directory
registered with :func:`register_run`, so spend never sits in a directory without its configuration.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from collapse_probe.core._files import MAX_LINE_BYTES, MAX_RECORD_DEPTH, kind_of, parse_json
from collapse_probe.core._files import _size as size_text
from collapse_probe.core._output import encode_json
from collapse_probe.core._output import json_default as json_default  # where callers have always found it
from collapse_probe.errors import ConfigError

_OPEN_RUNS: dict[str, Callable[[], None]] = {}
"""Resolved run directory -> the flush of its pending ``config.json`` (see :func:`register_run`)."""


def dir_key(path: str | Path) -> str:
    """One spelling of a directory (links resolved; a link loop does not raise here, unlike ``Path.resolve``)."""
    return os.path.realpath(path)


def register_run(path: str | Path, flush: Callable[[], None]) -> None:
    """Record that this process holds the run in ``path``; ``flush`` writes its pending configuration."""
    _OPEN_RUNS[dir_key(path)] = flush


def unregister_run(path: str | Path, flush: Callable[[], None]) -> None:
    """Forget the run registered in ``path`` with ``flush`` (another run registered there since is kept)."""
    key = dir_key(path)
    if _OPEN_RUNS.get(key) == flush:
        _OPEN_RUNS.pop(key, None)


def flush_config(path: str | Path) -> None:
    """Write the pending ``config.json`` of the run this process created in ``path`` (if any), so a
    file written there outside the run directory object (the run's spend, ``usage.json``) sits beside
    the configuration it belongs to."""
    flush = _OPEN_RUNS.get(dir_key(path))
    if flush is not None:
        flush()


def append_jsonl(path: str | Path, record: Mapping[str, object]) -> None:
    """Append one record to the JSONL file ``path`` and flush it to disk.

    The record is serialised before the file is touched (a value that cannot be written leaves no
    empty or torn file behind), and a symbolic link in the file's place is refused, not followed.
    """
    p = Path(path)
    line = dumps_line(record, p)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = open_record_file(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "append a record to")
    with os.fdopen(fd, "ab") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def open_record_file(p: Path, flags: int, doing: str) -> int:
    """Open one of a run's record files: never blocking (a FIFO), never through a symbolic link, and
    only a regular file. Returns the descriptor.

    Raises:
        FileNotFoundError: it does not exist (and ``flags`` do not create it).
        ConfigError: it cannot be opened, or is not a regular file; the message names it.
    """
    flags |= os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags, 0o644)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"{p}: cannot {doing} it ({_why(exc)}); use another --out") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ConfigError(f"{p}: is {kind_of(mode)}, not a run's record file (a JSONL file); use another --out")
    return fd


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link, which a run's files never are"
    return exc.strerror or str(exc)


RecordCheck = Callable[[dict[str, JsonValue]], "str | None"]
"""Checks one record: ``None`` when it is well formed, else what is wrong with it (naming the field)."""


def iter_jsonl(path: str | Path, check: RecordCheck | None = None) -> Iterator[dict[str, Any]]:
    """Yield the complete JSON records of a JSONL file, streaming; a torn final line is skipped (each a
    JSON object, :func:`iter_jsonl_numbered`'s ``dict[str, JsonValue]``, typed loosely here because each
    reader indexes the fields its ``check`` has validated).

    ``check`` is applied to every record: a record a resumed run reads back is either well formed
    or refused, naming its line, never dropped or half-used (a cell whose count silently falls).

    Raises:
        ConfigError: the file is not a regular file inside its directory (a directory, a FIFO, a
            symbolic link), a line before the last is not a JSON object, the file is not UTF-8 (the
            file is corrupt or not a run file), or ``check`` refuses a record; the message names the
            file and line.
    """
    for i, rec in iter_jsonl_numbered(path):
        problem = check(rec) if check is not None else None
        if problem is not None:
            raise ConfigError(
                f"{path}: line {i}: {problem}; the record was edited or the file is corrupt: restore it, "
                "or start over with --fresh (the old files are kept in .previous/) or another --out"
            )
        yield rec


def iter_jsonl_numbered(path: str | Path) -> Iterator[tuple[int, dict[str, JsonValue]]]:
    """:func:`iter_jsonl` with the 1-based line number of each record (for messages naming the line)."""
    p = Path(path)
    try:
        fd = open_record_file(p, os.O_RDONLY, "read the records of")
    except FileNotFoundError:
        return
    with os.fdopen(fd, "rb") as f:
        prev: tuple[int, bytes] | None = None
        i = 0
        while True:
            # bounded: a line without a newline (a damaged file, a link to a device) is never held whole
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            i += 1
            if len(raw) > MAX_LINE_BYTES:
                raise ConfigError(
                    f"{p}: line {i} is longer than the {size_text(MAX_LINE_BYTES)} a record may hold; the file is "
                    "corrupt or not a run's record file"
                )
            if prev is not None:
                rec = _record(p, *prev)
                if rec is not None:
                    yield prev[0], rec
            prev = (i, raw)
    if prev is not None:
        i, raw = prev
        try:
            rec = _record(p, i, raw)
        except ConfigError:
            if raw.endswith(b"\n"):
                raise
            return  # torn last line from a kill mid-write
        if rec is not None:
            yield i, rec


def _record(p: Path, i: int, raw: bytes) -> dict[str, JsonValue] | None:
    line = raw.strip()
    if not line:
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: line {i} is not UTF-8 text; the file is corrupt") from None
    try:
        # a run's own record: a lone surrogate is kept (written as its escape), NaN as it was written
        rec = parse_json(text, f"{p}: line {i}", expected="a run's record", max_depth=MAX_RECORD_DEPTH,
                         surrogates=True, nonfinite=True)  # fmt: skip
    except ConfigError as exc:
        if f"{p}: line {i}: not valid JSON" in str(exc):
            raise ConfigError(f"{p}: line {i} is not valid JSON; the file is corrupt") from None
        raise ConfigError(f"{exc}; the file is corrupt or not a run's record file") from None
    if not isinstance(rec, dict):
        raise ConfigError(f"{p}: line {i}: expected a JSON object (one record per line), got {type(rec).__name__}")
    return rec


def dumps_line(record: Any, where: str | Path = "a record") -> bytes:
    """One JSONL line, UTF-8, strict (:func:`collapse_probe.core._output.dumps_json`): text a model wrote
    stays readable, and a lone surrogate that reached a record anyway is written as its JSON escape
    (the line still reads back as the same record)."""
    return encode_json(record, where=where) + b"\n"


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write strict JSON (:func:`collapse_probe.core._output.dumps_json`: no NaN or Infinity, secrets
    scrubbed) to a temp file and rename it over ``path`` (readers never see half a file)."""
    p = Path(path)
    data = encode_json(obj, where=p, indent=2) + b"\n"
    tmp = p.with_name(f"{p.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, p)
