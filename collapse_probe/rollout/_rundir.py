"""Run directories: ``config.json`` + append-only JSONL records + ``results.json``.

A record is appended (and flushed to disk) as soon as its unit of work finishes, so a run killed at
any point resumes without redoing or duplicating work. A kill during a write can leave a torn last
line; :meth:`RunDir.read_jsonl` drops it (and :meth:`RunDir.repair` truncates it) so the unit is
simply redone.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from collapse_probe._proc import pid_alive
from collapse_probe.errors import ConfigError

RUN_FILES = (
    "config.json",
    "results.json",
    "conversations.jsonl",
    "samples.jsonl",
    "metrics.jsonl",
    "rollouts.jsonl",
    "report.html",
    "compare.json",
    "usage.json",
)
"""Files that mark a directory as holding a run (any of them, with or without ``config.json``)."""

LOCK_FILE = ".lock"
PREVIOUS_DIR = ".previous"


class RunDir:
    """A run directory on disk.

    :meth:`create` checks that the directory may hold this run (refusing a file, a run of another
    kind or configuration, or a run made with other models), takes a lock on it for the life of the
    process, and defers writing ``config.json`` to the first record, result or recorded model spend
    (``usage.json``), so a run that fails before producing or spending anything leaves no directory
    that would block its rerun, and spend is never left in a directory without the configuration it
    belongs to.
    """

    _open: dict[str, RunDir] = {}
    """Resolved path -> the run directory this process created there (see :func:`flush_config`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._pending: dict[str, Any] | None = None
        self._lock: RunLock | None = None

    def create(
        self,
        config: dict[str, Any],
        *,
        kind: str,
        resume: bool = True,
        fingerprints: dict[str, str] | None = None,
        fresh: bool = False,
        resumable: Collection[str] = (),
    ) -> None:
        """Check the directory, lock it, and arrange for ``config.json`` to be written.

        Args:
            config: the run's configuration (compared with the stored one on resume).
            kind: ``crossplay``, ``audit``, ``play``, ``train``, ...
            resume: an existing run with the same configuration resumes (otherwise it is refused).
            fingerprints: model spec -> content fingerprint of every model of the run; a resume with
                a changed model is refused, naming it.
            fresh: start over: the existing run's files move to ``.previous/<time>/`` inside the
                directory (nothing is deleted).
            resumable: configuration fields that may change on resume (e.g. a training run's
                ``steps``); ``config.json`` takes their new values.

        Raises:
            ConfigError: the path is a file, the directory holds a run of another kind, another
                configuration or other models, or another process is writing to it.
        """
        check_out_path(self.path, kind)
        full = {"kind": kind, **config}
        if fingerprints is not None:
            full["fingerprints"] = dict(fingerprints)
        self._lock = RunLock(self.path)
        self._lock.acquire()
        RunDir._open[str(self.path.resolve())] = self
        cfg_path = self.path / "config.json"
        if fresh:
            self._archive()
        elif cfg_path.exists() or _has_run_files(self.path):
            old = read_run_config(self.path)
            if not resume:
                raise ConfigError(f"--out {self.path}: already holds a run; use --fresh or another --out")
            _check_same_run(cfg_path, old, full, resumable)
            self._pending = full if not cfg_path.exists() else None
            changed = {k: full[k] for k in resumable if k in full and old.get(k) != full[k]}
            if cfg_path.exists() and (old.get("fingerprints") != full.get("fingerprints") or changed):
                self._pending = {**old, **changed, "fingerprints": full.get("fingerprints")}
                if "fingerprints" not in full and "fingerprints" not in old:
                    self._pending.pop("fingerprints")
            return
        self._pending = full

    def _archive(self) -> None:
        if not self.path.is_dir():
            return
        names = [n for n in os.listdir(self.path) if n not in (LOCK_FILE, PREVIOUS_DIR)]
        if not names:
            return
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        dest = self.path / PREVIOUS_DIR / stamp
        i = 1
        while dest.exists():
            dest = self.path / PREVIOUS_DIR / f"{stamp}-{i}"
            i += 1
        dest.mkdir(parents=True)
        for n in names:
            os.replace(self.path / n, dest / n)

    def _flush_config(self) -> None:
        if self._pending is not None:
            self.path.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.path / "config.json", self._pending)
            self._pending = None

    def write_config(self) -> None:
        """Write ``config.json`` now instead of with the first record (for runs that write other files first)."""
        self._flush_config()

    def release(self) -> None:
        """Release the lock taken by :meth:`create` (also released at process exit)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if RunDir._open.get(str(self.path.resolve())) is self:
            RunDir._open.pop(str(self.path.resolve()), None)

    def append_jsonl(self, name: str, record: dict[str, Any]) -> None:
        """Append one record and flush it to disk."""
        self._flush_config()
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / name, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False, default=_json_default) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_jsonl(self, name: str) -> list[dict[str, Any]]:
        """All complete records of ``name`` (a torn last line from a kill is ignored)."""
        return list(iter_jsonl(self.path / name))

    def repair(self, name: str) -> int:
        """Truncate a torn last line left by a kill; return the number of bytes removed."""
        p = self.path / name
        if not p.exists():
            return 0
        data = p.read_bytes()
        if not data or data.endswith(b"\n"):
            return 0
        keep = data.rfind(b"\n") + 1
        with open(p, "r+b") as f:
            f.truncate(keep)
        return len(data) - keep

    def write_results(self, results: Any, name: str = "results.json") -> Path:
        """Write the run's results atomically: a typed results model (:mod:`collapse_probe.results`)
        as its JSON object, or a JSON object as it is."""
        self._flush_config()
        p = self.path / name
        to_json = getattr(results, "to_json", None)
        write_json_atomic(p, to_json() if callable(to_json) else results)
        return p


def flush_config(path: str | Path) -> None:
    """Write the pending ``config.json`` of the run this process created in ``path`` (if any), so a
    file written there outside :class:`RunDir` (the run's spend, ``usage.json``) sits beside the
    configuration it belongs to."""
    run = RunDir._open.get(str(Path(path).resolve()))
    if run is not None:
        run._flush_config()


def _has_run_files(path: Path) -> bool:
    return path.is_dir() and any((path / n).exists() for n in RUN_FILES)


def check_out_path(path: str | Path, kind: str | tuple[str, ...] | None = None, flag: str = "--out") -> None:
    """Refuse an output path that is a file, or a directory holding a run of another kind
    (``kind``: the kind, or the kinds, this command may write over).

    Raises:
        ConfigError: naming the path and what it holds.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{flag} {p}: exists and is not a directory; expected a run directory (new or existing)")
    for parent in p.parents:
        if parent.exists() and not parent.is_dir():
            raise ConfigError(f"{flag} {p}: {parent} is a file, not a directory")
    if kind is None or not _has_run_files(p):
        return
    old = read_run_config(p)
    kinds = (kind,) if isinstance(kind, str) else kind
    if old.get("kind") not in kinds:
        raise ConfigError(
            f"{flag} {p}: holds a {old.get('kind') or 'different'} run, not a {kinds[0]} run; "
            "use another --out (runs are never overwritten)"
        )


def read_run_config(path: str | Path) -> dict[str, Any]:
    """The ``config.json`` of an existing run directory.

    Raises:
        ConfigError: it is missing while run files exist, unreadable, or not a JSON object.
    """
    cfg_path = Path(path) / "config.json"
    if not cfg_path.exists():
        raise ConfigError(
            f"{path}: holds run files but no config.json, so which run it holds cannot be checked; "
            "use another --out or --fresh (the old files are kept in .previous/)"
        )
    try:
        old = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError, OSError) as exc:
        raise ConfigError(
            f"{cfg_path}: unreadable ({type(exc).__name__}); cannot tell which run this directory holds. "
            "Use another --out, or --fresh to start over (the old files are kept in .previous/)"
        ) from None
    if not isinstance(old, dict):
        raise ConfigError(f"{cfg_path}: expected a JSON object, got {type(old).__name__}; use another --out or --fresh")
    return old


def _check_same_run(cfg_path: Path, old: dict[str, Any], full: dict[str, Any], resumable: Collection[str] = ()) -> None:
    if old.get("kind", full["kind"]) != full["kind"]:
        raise ConfigError(
            f"{cfg_path}: this directory holds a {old.get('kind')} run, not a {full['kind']} run; use another --out"
        )
    full = _check_same_data(cfg_path, old, full)
    skip = _VOLATILE | {"fingerprints"} | set(resumable)
    diff = {k for k in set(old) | set(full) if k not in skip and old.get(k) != full.get(k)}
    if diff:
        raise ConfigError(
            f"{cfg_path}: this run directory holds a run with a different configuration "
            f"(differs in: {', '.join(sorted(diff))}); use another --out, or --fresh to start over"
        )
    new_fp = full.get("fingerprints")
    if new_fp is None:
        return
    old_fp = old.get("fingerprints")
    if not isinstance(old_fp, dict):
        if cfg_path.parent.joinpath("results.json").exists() or any(
            (cfg_path.parent / n).exists() for n in ("conversations.jsonl", "samples.jsonl")
        ):
            raise ConfigError(
                f"{cfg_path}: this run was made without model fingerprints, so it cannot be checked that the "
                "same models answer now; use --fresh to start over or another --out"
            )
        return
    from collapse_probe.models._identity import fingerprint_changes

    changed = fingerprint_changes(old_fp, new_fp)
    if changed:
        raise ConfigError(
            f"{cfg_path}: model changed since this run started: {'; '.join(changed)}. "
            "Resuming would mix two models' outputs; use --fresh to start over or another --out"
        )


def _check_same_data(cfg_path: Path, old: dict[str, Any], full: dict[str, Any]) -> dict[str, Any]:
    """Refuse a resume whose arena data files (personas, τ2 data) changed in place, naming them.

    Returns ``full`` to compare with ``old``: without the data fingerprints when the stored run was
    recorded before they were (its data cannot be checked, its configuration still is).
    """
    old_arena, new_arena = old.get("arena"), full.get("arena")
    if not isinstance(old_arena, dict) or not isinstance(new_arena, dict) or "data_fingerprints" not in new_arena:
        return full
    old_fp, new_fp = old_arena.get("data_fingerprints"), new_arena["data_fingerprints"]
    if old_fp is None:
        return {**full, "arena": {k: v for k, v in new_arena.items() if k != "data_fingerprints"}}
    if isinstance(old_fp, dict) and isinstance(new_fp, dict):
        from collapse_probe.models._identity import short

        changed = [
            f"{k} {new_arena.get(k)} (was {short(str(old_fp[k]))}, now {short(str(new_fp[k]))})"
            for k in sorted(set(old_fp) & set(new_fp))
            if old_fp[k] != new_fp[k] and old_arena.get(k) == new_arena.get(k)
        ]
        if changed:
            raise ConfigError(
                f"{cfg_path}: data changed since this run started: {'; '.join(changed)}. "
                "Resuming would mix results on two versions of it; use --fresh to start over or another --out"
            )
    return full


class RunLock:
    """An exclusive lock on a run directory, held by one process at a time.

    The lock file holds the owner's pid and start time; a lock whose owner is gone (killed, crashed)
    is stale and taken over. Re-acquiring in the owning process is a no-op.
    """

    _held: dict[str, RunLock] = {}

    def __init__(self, path: Path) -> None:
        self.dir = path
        self.file = path / LOCK_FILE
        self.owned = False

    def acquire(self) -> None:
        key = str(self.dir.resolve())
        if key in RunLock._held:
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--out {self.dir}: cannot create the run directory ({exc.strerror or exc})") from None
        me = _owner_id(os.getpid())
        for _ in range(3):
            try:
                fd = os.open(self.file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except PermissionError as exc:
                raise ConfigError(f"--out {self.dir}: cannot write to the run directory ({exc.strerror})") from None
            except FileExistsError:
                holder = _read_lock(self.file)
                if holder is not None and holder != me and _alive(holder):
                    raise ConfigError(
                        f"--out {self.dir}: another collapse-probe process (pid {holder[0]}) is writing to this "
                        "run directory; wait for it to finish or use another --out"
                    ) from None
                with contextlib.suppress(FileNotFoundError):
                    self.file.unlink()  # stale: its owner is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(f"{me[0]} {me[1]}\n")
            self.owned = True
            RunLock._held[key] = self
            atexit.register(self.release)
            return
        raise ConfigError(f"--out {self.dir}: could not take the run directory's lock {self.file}")

    def release(self) -> None:
        if not self.owned:
            return
        self.owned = False
        RunLock._held.pop(str(self.dir.resolve()), None)
        holder = _read_lock(self.file)
        if holder is not None and holder[0] == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.file.unlink()


def _owner_id(pid: int) -> tuple[int, str]:
    """``(pid, start time)``: the start time tells a reused pid from the lock's owner."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        start = "?"
    return pid, start


def _read_lock(path: Path) -> tuple[int, str] | None:
    try:
        parts = path.read_text(encoding="ascii").split()
        return int(parts[0]), parts[1] if len(parts) > 1 else "?"
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None


def _alive(holder: tuple[int, str]) -> bool:
    pid, start = holder
    if not pid_alive(pid):
        return False
    current = _owner_id(pid)[1]
    return start == "?" or current == "?" or current == start


_VOLATILE = {"created", "resumed", "version", "max_live"}
"""Fields that may differ between a run and its resume (execution settings, not configuration)."""


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the complete JSON records of a JSONL file, streaming; a torn final line is skipped.

    Raises:
        ConfigError: a line before the last is not a JSON object, or the file is not UTF-8 (the file
            is corrupt or not a run file); the message names the file and line.
    """
    p = Path(path)
    if not p.exists():
        return
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory; expected a JSONL file of records")
    with open(p, "rb") as f:
        prev: tuple[int, bytes] | None = None
        for i, raw in enumerate(f, start=1):
            if prev is not None:
                rec = _record(p, *prev)
                if rec is not None:
                    yield rec
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
            yield rec


def _record(p: Path, i: int, raw: bytes) -> dict[str, Any] | None:
    line = raw.strip()
    if not line:
        return None
    try:
        rec = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: line {i} is not UTF-8 text; the file is corrupt") from None
    except (ValueError, RecursionError):
        raise ConfigError(f"{p}: line {i} is not valid JSON; the file is corrupt") from None
    if not isinstance(rec, dict):
        raise ConfigError(f"{p}: line {i}: expected a JSON object (one record per line), got {type(rec).__name__}")
    return rec


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON to a temp file and rename it over ``path`` (readers never see half a file)."""
    p = Path(path)
    tmp = p.with_name(f"{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default) + "\n", encoding="utf-8")
    os.replace(tmp, p)


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
