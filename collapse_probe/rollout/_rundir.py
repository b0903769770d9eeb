"""Run directories: ``config.json`` + append-only JSONL records + ``results.json``.

A record is appended (and flushed to disk) as soon as its unit of work finishes, so a run killed at
any point resumes without redoing or duplicating work. A kill during a write can leave a torn last
line; :meth:`RunDir.read_jsonl` drops it (and :meth:`RunDir.repair` truncates it) so the unit is
simply redone.
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import os
import stat
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from collapse_probe.core._files import FileProblem, MissingFile, kind_of, parse_json, read_bytes
from collapse_probe.core._jsonl import (
    RecordCheck,
    dir_key,
    dumps_line,
    iter_jsonl,
    open_record_file,
    register_run,
    unregister_run,
    write_json_atomic,
)
from collapse_probe.core._jsonl import flush_config as flush_config  # where callers have always found them
from collapse_probe.core._jsonl import iter_jsonl_numbered as iter_jsonl_numbered
from collapse_probe.core._output import RUN_FILES as _RUN_FILES
from collapse_probe.core._proc import pid_alive
from collapse_probe.core._secrets import scrub_value
from collapse_probe.errors import ConfigError

RUN_FILES = _RUN_FILES
"""Files that mark a directory as holding a run (any of them, with or without ``config.json``)."""

LOCK_FILE = ".lock"
PREVIOUS_DIR = ".previous"

RUN_OWN_FILES = (*RUN_FILES, "batches.jsonl", "compare.html", "sweep.json", "sweep.html")
"""Regular files a run writes at the top of its directory."""
RUN_OWN_DIRS = (PREVIOUS_DIR, "variance", "checkpoints", "adapters", "pool", "tensorboard")
"""Directories a run writes at the top of its directory (``variance``: an audit's variance-share
rollouts; ``checkpoints``, ``adapters``, ``pool``: training; ``tensorboard``: the event files
``--log-to tensorboard`` writes there by default)."""

MAX_JSON_BYTES = 256 << 20
"""A run's ``config.json`` and ``usage.json`` are a few KiB; anything past this is not one of them."""


def _is_own(name: str) -> bool:
    """Whether ``name`` at the top of a run directory is something a run writes there."""
    if name in RUN_OWN_FILES or name in RUN_OWN_DIRS or name == LOCK_FILE:
        return True
    stem, _, suffix = name.rpartition(".")
    return suffix == "tmp" and stem.rpartition(".")[0] in RUN_OWN_FILES  # write_json_atomic's temp files


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
        if not str(path).strip():
            raise ConfigError("--out: expected a run directory, got an empty path (it would be the current directory)")
        self.path = Path(path)
        self._pending: dict[str, object] | None = None
        """``config.json`` as it will be written with the first record, result or recorded spend."""
        self._lock: RunLock | None = None

    def create(
        self,
        config: Mapping[str, object],
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
                directory (nothing is deleted). Only a directory that holds a run of this project, and
                nothing but what runs write, is acted on: anything else is refused, naming what is there.
            resumable: configuration fields that may change on resume (e.g. a training run's
                ``steps``); ``config.json`` takes their new values.

        Raises:
            ConfigError: the path is a file, the directory holds a run of another kind, another
                configuration or other models, one of its run files is of the wrong type (a
                directory, a FIFO, a symbolic link), ``fresh`` is asked of a directory that is not
                only a run's, or another process is writing to it.
        """
        check_out_path(self.path, None if fresh else kind)
        if fresh:
            _check_fresh(self.path, kind)
        else:
            check_not_foreign(self.path)  # before the lock: nothing is written into someone else's folder
        full: dict[str, object] = {"kind": kind, **config}
        if fingerprints is not None:
            full["fingerprints"] = dict(fingerprints)
        # as config.json holds it: a spec's URL credentials are never written, so a resume compares
        # the scrubbed configuration with the scrubbed one on disk
        full = scrub_value(full)
        self._lock = RunLock(self.path)
        self._lock.acquire()
        RunDir._open[_key(self.path)] = self
        register_run(self.path, self._flush_config)
        announce_taken(self.path)
        cfg_path = self.path / "config.json"
        if fresh:
            self._archive(kind)
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

    def _archive(self, kind: str) -> None:
        if not self.path.is_dir():
            return
        names = [n for n in os.listdir(self.path) if n not in (LOCK_FILE, PREVIOUS_DIR)]
        if not names:
            return
        _check_fresh(self.path, kind)  # again, under the lock: nothing but a run's own files is ever moved
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
        if RunDir._open.get(_key(self.path)) is self:
            RunDir._open.pop(_key(self.path), None)
        unregister_run(self.path, self._flush_config)

    def append_jsonl(self, name: str, record: Mapping[str, object]) -> None:
        """Append one record and flush it to disk.

        The record is serialised before the file is touched (a value that cannot be written leaves
        no empty or torn file behind), and a symbolic link in the file's place is refused, not
        followed: records are never appended to a file outside the run directory.
        """
        line = dumps_line(
            record, self.path / name
        )  # before anything is written: a value that cannot be kept writes nothing
        self._flush_config()
        self.path.mkdir(parents=True, exist_ok=True)
        fd = open_record_file(self.path / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "append a record to")
        with os.fdopen(fd, "ab") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def read_jsonl(self, name: str, check: RecordCheck | None = None) -> list[dict[str, Any]]:
        """All complete records of ``name`` (a torn last line from a kill is ignored); ``check``
        refuses a malformed record (see :func:`iter_jsonl`)."""
        return list(iter_jsonl(self.path / name, check))

    def repair(self, name: str) -> int:
        """Truncate a torn last line left by a kill; return the number of bytes removed."""
        try:
            fd = open_record_file(self.path / name, os.O_RDWR, "repair")
        except FileNotFoundError:
            return 0
        try:
            size = end = os.fstat(fd).st_size
            if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
                return 0
            while end > 0:  # find the last newline, reading backwards: the file may be large
                start = max(0, end - (1 << 16))
                cut = os.pread(fd, end - start, start).rfind(b"\n")
                if cut >= 0:
                    end = start + cut + 1
                    break
                end = start
            os.ftruncate(fd, end)
            return size - end
        finally:
            os.close(fd)

    def write_results(self, results: Any, name: str = "results.json") -> Path:
        """Write the run's results atomically: a typed results model (:mod:`collapse_probe.results`)
        as its JSON object, or a JSON object as it is."""
        self._flush_config()
        p = self.path / name
        to_json = getattr(results, "to_json", None)
        write_json_atomic(p, to_json() if callable(to_json) else results)
        return p


def _has_run_files(path: Path) -> bool:
    return path.is_dir() and any(os.path.lexists(path / n) for n in RUN_FILES)


_ANNOUNCE: set[str] = set()
"""Run directories whose path is printed once the run has taken them (the CLI's automatic ``--out``)."""


def announce_when_created(path: str | Path) -> None:
    """Print ``run directory: PATH`` on stderr once a run has checked and locked ``path``: a run that
    fails its checks earlier names no directory it never created."""
    _ANNOUNCE.add(str(path))


def announce_taken(path: str | Path) -> None:
    """The run has checked ``path`` and is writing there: print it if :func:`announce_when_created` asked."""
    if str(path) in _ANNOUNCE:
        _ANNOUNCE.discard(str(path))
        import sys

        print(f"run directory: {path}", file=sys.stderr)


def check_out_path(path: str | Path, kind: str | tuple[str, ...] | None = None, flag: str = "--out") -> None:
    """Refuse an output path that is empty, a file, a link loop, a name the system cannot hold, a
    directory holding a run of another kind (``kind``: the kind, or the kinds, this command may write
    over), or one whose run files are of the wrong type (see :func:`check_run_entries`).

    Raises:
        ConfigError: naming the path and what it holds.
    """
    if not str(path).strip():
        raise ConfigError(f"{flag}: expected a run directory, got an empty path (it would be the current directory)")
    p = Path(path)
    try:
        st: os.stat_result | None = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"{flag} {p}: is a symbolic link loop; expected a run directory") from None
        if exc.errno == errno.ENOTDIR:
            st = None  # a parent is a file: named below
        else:
            raise ConfigError(f"{flag} {p}: cannot be used as a run directory ({exc.strerror or exc})") from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise ConfigError(
            f"{flag} {p}: exists and is not a directory (it is {kind_of(st.st_mode)}); expected a run directory "
            "(new or existing)"
        )
    if st is None:
        for parent in p.parents:
            try:
                pst = os.stat(parent)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno == errno.ENOTDIR:
                    continue
                raise ConfigError(f"{flag} {p}: {parent} cannot be used ({exc.strerror or exc})") from None
            if not stat.S_ISDIR(pst.st_mode):
                raise ConfigError(f"{flag} {p}: {parent} is a file, not a directory")
            break
        for part in p.parts:
            if len(os.fsencode(part)) > 255:
                raise ConfigError(
                    f"{flag}: the name {part[:40]}... is {len(os.fsencode(part))} bytes long; a file system "
                    "allows at most 255 bytes per name"
                )
        return
    check_run_entries(p, flag)
    if kind is None or not _has_run_files(p):
        return
    old = read_run_config(p)
    kinds = (kind,) if isinstance(kind, str) else kind
    if old.get("kind") not in kinds:
        raise ConfigError(
            f"{flag} {p}: holds {_a(old.get('kind') or 'different')} run, not {_a(kinds[0])} run; "
            "use another --out (runs are never overwritten)"
        )


def check_run_entries(path: str | Path, flag: str = "--out") -> None:
    """Refuse a directory where a run's own file is not a regular file (a directory, FIFO, socket,
    device or symbolic link) or a run's own directory is not a directory.

    A symbolic link is refused even when it points at a regular file: a run appends to and replaces
    its files, and through a link it would write outside its directory.

    Raises:
        ConfigError: naming the entry and what it is.
    """
    p = Path(path)
    for name in (*RUN_OWN_FILES, LOCK_FILE, *RUN_OWN_DIRS):
        try:
            st = os.lstat(p / name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ConfigError(f"{flag} {p}: cannot check {name} ({exc.strerror or exc})") from None
        want_dir = name in RUN_OWN_DIRS
        if stat.S_ISLNK(st.st_mode):
            raise ConfigError(
                f"{flag} {p}: {name} is a symbolic link; a run's files lie inside its directory (a link would make "
                "it write elsewhere): remove the link or use another --out"
            )
        if want_dir != stat.S_ISDIR(st.st_mode) or not (want_dir or stat.S_ISREG(st.st_mode)):
            raise ConfigError(
                f"{flag} {p}: {name} is {kind_of(st.st_mode)}, not the {'directory' if want_dir else 'regular file'} "
                "a run writes there; this is not a directory collapse-probe wrote, use another --out"
            )


FOREIGN_OK = (LOCK_FILE, PREVIOUS_DIR, *RUN_OWN_DIRS, "tensorboard", "monitor")
"""What a folder may hold before its run's first file (a lock, a killed run's directories, a
tracker's log directory) and still be taken as an empty run directory."""


def check_not_foreign(path: str | Path, flag: str = "--out") -> None:
    """Refuse a non-empty folder that holds no run (``--out docs``), naming what is there: a run
    never writes its files among someone else's. A folder that holds a run (any of its files) is
    checked as a resume instead; an empty or missing one is a new run."""
    path = Path(path)
    if not path.is_dir() or _has_run_files(path):
        return
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: cannot list it ({exc.strerror or exc})") from None
    foreign = [n for n in names if n not in FOREIGN_OK]
    if foreign:
        shown = ", ".join(n + ("/" if (path / n).is_dir() else "") for n in foreign[:6])
        more = f" and {len(foreign) - 6} more" if len(foreign) > 6 else ""
        raise ConfigError(
            f"{flag} {path}: not empty and holds no collapse-probe run (it holds {shown}{more}); a run never writes "
            f"among other files: use a new or empty folder"
        )


def precheck_run_dir(
    path: str | Path | None,
    config: Mapping[str, object],
    *,
    kind: str,
    fresh: bool = False,
    resumable: Collection[str] = (),
) -> None:
    """The checks of :meth:`RunDir.create` that need no model, run before any model loads: the folder
    (a file, someone else's folder), ``--fresh``'s conditions, and a stored run of another kind or
    whose configuration differs in any field of ``config`` (a partial configuration: the fields known
    before the models and the benchmark are built). Model fingerprints and the rest are checked by
    :meth:`RunDir.create` as before.

    Raises:
        ConfigError: as :meth:`RunDir.create` would, naming the fields that differ.
    """
    if path is None:
        return
    path = Path(path)
    check_out_path(path, None if fresh else kind)
    if fresh:
        _check_fresh(path, kind)
        return
    check_not_foreign(path)
    cfg_path = path / "config.json"
    if not cfg_path.exists():
        return
    old = read_run_config(path)
    if old.get("kind", kind) != kind:
        raise ConfigError(
            f"{cfg_path}: this directory holds {_a(old.get('kind'))} run, not {_a(kind)} run; use another --out"
        )
    skip = _VOLATILE | {"fingerprints", "arena", "version"} | set(resumable)
    diff = sorted(k for k in config if k not in skip and k in old and old[k] != config[k])
    if diff:
        raise ConfigError(
            f"{cfg_path}: this run directory holds a run with a different configuration "
            f"(differs in: {', '.join(diff)}); use another --out, or --fresh to start over"
        )


def _check_fresh(path: Path, kind: str) -> None:
    """``--fresh`` moves a run's files aside: refuse unless ``path`` holds a run of this project and
    nothing but what runs write there (a project directory, a home directory, a run with the user's
    own files beside it are never moved)."""
    if not path.is_dir():
        raise ConfigError(f"--fresh: --out {path} does not exist, so there is no run to start over; drop --fresh")
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        raise ConfigError(f"--fresh: cannot list {path} ({exc.strerror or exc})") from None
    names = [n for n in names if n not in (LOCK_FILE, PREVIOUS_DIR)]
    if not names:
        raise ConfigError(f"--fresh: --out {path} is empty, so there is no run to start over; drop --fresh")
    foreign = [n for n in names if not _is_own(n)]
    shown = ", ".join(n + ("/" if (path / n).is_dir() else "") for n in foreign[:6])
    more = f" and {len(foreign) - 6} more" if len(foreign) > 6 else ""
    if not _has_run_files(path):
        raise ConfigError(
            f"--fresh: --out {path} does not hold a collapse-probe run (it holds {shown}{more}); --fresh only "
            "moves a run's own files aside, so it refuses any other directory: use another --out"
        )
    if foreign:
        raise ConfigError(
            f"--fresh: --out {path} holds files no run writes ({shown}{more}) beside its run; --fresh moves only "
            "a run's own files and never these: move them out or use another --out"
        )
    try:
        old_kind = read_run_config(path).get("kind")
    except ConfigError:
        return  # a run whose config.json is missing or broken: exactly what --fresh is for
    if old_kind != kind:
        raise ConfigError(
            f"--fresh: --out {path} holds {_a(old_kind or 'different')} run, not {_a(kind)} run; "
            "use another --out (runs are never overwritten)"
        )


def read_run_config(path: str | Path) -> dict[str, JsonValue]:
    """The ``config.json`` of an existing run directory.

    Raises:
        ConfigError: it is missing while run files exist, unreadable, or not a JSON object.
    """
    cfg_path = Path(path) / "config.json"
    try:
        raw = read_bytes(cfg_path, max_bytes=MAX_JSON_BYTES, follow_symlinks=False, expected="a run's config.json")
    except MissingFile:
        raise ConfigError(
            f"{path}: holds run files but no config.json, so which run it holds cannot be checked; "
            "use another --out or --fresh (the old files are kept in .previous/)"
        ) from None
    except FileProblem as exc:
        raise ConfigError(f"{exc}; use another --out, or --fresh to start over") from None
    try:
        old = parse_json(raw, cfg_path, expected="a run's config.json")
    except ConfigError as exc:
        raise ConfigError(
            f"unreadable: {exc}; cannot tell which run this directory holds. "
            "Use another --out, or --fresh to start over (the old files are kept in .previous/)"
        ) from None
    if not isinstance(old, dict):
        raise ConfigError(f"{cfg_path}: expected a JSON object, got {type(old).__name__}; use another --out or --fresh")
    return old


def _a(word: object) -> str:
    """``word`` with its indefinite article: ``an audit``, ``a play``."""
    w = str(word)
    return f"{'an' if w[:1].lower() in 'aeiou' else 'a'} {w}"


def _check_same_run(
    cfg_path: Path, old: Mapping[str, object], full: Mapping[str, object], resumable: Collection[str] = ()
) -> None:
    if old.get("kind", full["kind"]) != full["kind"]:
        raise ConfigError(
            f"{cfg_path}: this directory holds {_a(old.get('kind'))} run, not {_a(full['kind'])} run; use another --out"
        )
    full = _check_same_data(cfg_path, old, full)
    skip = _VOLATILE | {"fingerprints"} | set(resumable)
    diff = {
        k
        for k in set(old) | set(full)
        if k not in skip and old.get(k) != full.get(k) and not (k in _RECORDED_SINCE and k not in old)
    }
    if diff:
        raise ConfigError(
            f"{cfg_path}: this run directory holds a run with a different configuration "
            f"(differs in: {', '.join(sorted(diff))}); use another --out, or --fresh to start over"
        )
    new_fp = full.get("fingerprints")
    if not isinstance(new_fp, dict):  # a run without fingerprints (``None``)
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
    from collapse_probe.core._identity import fingerprint_changes

    changed = fingerprint_changes(old_fp, new_fp)
    if changed:
        raise ConfigError(
            f"{cfg_path}: model changed since this run started: {'; '.join(changed)}. "
            "Resuming would mix two models' outputs; use --fresh to start over or another --out"
        )


def _check_same_data(cfg_path: Path, old: Mapping[str, object], full: Mapping[str, object]) -> Mapping[str, object]:
    """Refuse a resume whose arena data files (personas, τ2 data) changed in place, naming them.

    Returns ``full``, to compare with ``old``.
    """
    old_arena, new_arena = old.get("arena"), full.get("arena")
    if not isinstance(old_arena, dict) or not isinstance(new_arena, dict) or "data_fingerprints" not in new_arena:
        return full
    old_fp, new_fp = old_arena.get("data_fingerprints"), new_arena["data_fingerprints"]
    if isinstance(old_fp, dict) and isinstance(new_fp, dict):
        from collapse_probe.core._identity import short

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

    ``fcntl.flock`` on ``.lock``: the kernel grants it to one open file at a time and drops it when
    the holder's process ends, however it ends (``kill -9`` included). A stale lock is therefore just
    a file nobody holds, taken over by locking it: no "is its owner alive?" check stands between
    reading the file and replacing it, so two processes can never both win. Releasing unlinks the
    file while still holding it; a process that opened the old file just before gets the lock on a
    file no longer at the path, sees that (device and inode differ) and tries again on the new one.

    The file also holds the owner's pid and start time, for the message that names it and for the
    dashboard. A file naming a live process that does not hold the lock is one written by an older
    collapse-probe that locked by the file's existence alone: it is respected, not taken over.
    Re-acquiring in the owning process is a no-op.
    """

    _held: dict[str, RunLock] = {}

    def __init__(self, path: Path) -> None:
        self.dir = path
        self.file = path / LOCK_FILE
        self.owned = False
        self._fd: int | None = None
        self._pid = 0

    def acquire(self) -> None:
        key = _key(self.dir)
        if key in RunLock._held:
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--out {self.dir}: cannot create the run directory ({exc.strerror or exc})") from None
        me = _owner_id(os.getpid())
        busy: tuple[int, str] | None = None
        for attempt in range(20):
            fd = self._open()
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise ConfigError(
                        f"--out {self.dir}: {LOCK_FILE} is {kind_of(st.st_mode)}, not the run's lock file; "
                        "this is not a directory collapse-probe wrote, use another --out"
                    )
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    busy = _read_lock_fd(fd) or busy
                    os.close(fd)
                    fd = -1
                    if attempt < 2:  # a dashboard probing the lock holds it for microseconds
                        time.sleep(0.05)
                        continue
                    raise self._busy(busy) from None
                try:
                    now = os.stat(self.file, follow_symlinks=False)
                except FileNotFoundError:
                    now = None
                if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                    continue  # its holder released it and unlinked it after we opened it: try the new file
                old = _read_lock_fd(fd)
                if old is not None and old[0] != me[0] and "?" not in (old[1], me[1]) and _alive(old):
                    raise self._busy(old)  # an older collapse-probe's lock (existence only): respect it
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{me[0]} {me[1]}\n".encode("ascii"), 0)
                self._fd, fd = fd, -1
                self._pid = me[0]
                self.owned = True
                RunLock._held[key] = self
                atexit.register(self.release)
                return
            finally:
                if fd >= 0:
                    os.close(fd)
        raise ConfigError(f"--out {self.dir}: could not take the run directory's lock {self.file}")

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(self.file, flags, 0o644)
        except PermissionError as exc:
            raise ConfigError(f"--out {self.dir}: cannot write to the run directory ({exc.strerror})") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                what = "a symbolic link"
            elif exc.errno == errno.EISDIR:
                what = "a directory"
            elif exc.errno == errno.ENXIO:
                what = "a socket or FIFO"
            else:
                raise ConfigError(f"--out {self.dir}: cannot open {self.file} ({exc.strerror or exc})") from None
            raise ConfigError(
                f"--out {self.dir}: {LOCK_FILE} is {what}, not the run's lock file; "
                "this is not a directory collapse-probe wrote, use another --out"
            ) from None

    def _busy(self, holder: tuple[int, str] | None) -> ConfigError:
        who = f" (pid {holder[0]})" if holder is not None else ""
        return ConfigError(
            f"--out {self.dir}: another collapse-probe process{who} is writing to this "
            "run directory; wait for it to finish or use another --out"
        )

    def release(self) -> None:
        if not self.owned or self._pid != os.getpid():  # a forked child never releases its parent's lock
            return
        self.owned = False
        RunLock._held.pop(_key(self.dir), None)
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            st = os.fstat(fd)
            now = os.stat(self.file, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                os.unlink(self.file)  # while still holding it: see the class docstring
        except OSError:
            pass
        finally:
            os.close(fd)


def lock_held(path: str | Path) -> bool | None:
    """Whether a process holds the run lock of directory ``path``: ``None`` when there is no lock file
    (or it cannot be checked), never blocking (a FIFO or directory named ``.lock`` is "cannot check")."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(Path(path) / LOCK_FILE, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return None
        holder = _read_lock_fd(fd)  # free, unless an older collapse-probe holds it by existence
        return holder is not None and _alive(holder)
    finally:
        os.close(fd)


_key = dir_key


def _owner_id(pid: int) -> tuple[int, str]:
    """``(pid, start time)``: the start time tells a reused pid from the lock's owner."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        start = "?"
    return pid, start


def _read_lock_fd(fd: int) -> tuple[int, str] | None:
    try:
        parts = os.pread(fd, 64, 0).decode("ascii").split()
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
_RECORDED_SINCE = {"vs_k", "cache"}
"""Fields a run records since 0.1 that a run directory made before may lack: not compared when absent
from the stored configuration (that run cannot be checked for them), compared once recorded."""
"""Fields that may differ between a run and its resume (execution settings, not configuration)."""
