"""Writing files: strict JSON, and files a command writes outside a run directory it owns.

**Strict JSON.** :func:`dumps_json` is how every JSON file of the package is serialised
(``results.json``, ``config.json``, ``usage.json``, records, ``card.json``, the monitor's rows): it
refuses ``NaN`` and ``Infinity`` (which are not JSON: ``jq``, JavaScript and most parsers reject
the file) naming the file and the field, and scrubs every configured secret
(:mod:`collapse_probe.core._secrets`). Producers turn a value that is not a number into ``null`` with a
reason where it arises (a reward of ``nan`` is "not a score" in its record); reaching the writer
with one is a bug that must not produce an unreadable file.

**Outputs.** ``card --out``, ``export --out`` (and the ``-verbalized`` twin of an inspect log) write
into the user's folders, not into a run directory they own, so nothing there may be replaced.
:func:`write_outputs` writes a set of files so that

- each file is created exclusively: its content goes to a temporary file in the same folder, which is
  then hard-linked to the final name (``link`` fails when the name exists, whatever it is: a file, a
  symbolic link, dangling or not, a FIFO, a directory); nothing is ever written through a link or
  into an existing file, and a FIFO never blocks the writer;
- the first file is the set's lock: of concurrent writers onto one ``--out`` exactly one creates it,
  the others are refused at once, before touching the other names; a set that cannot be completed
  is removed again (only the files this call created);
- a run's own folder is never written into (``card RUN --out RUN/results.md`` would put the card's
  JSON at ``RUN/results.json``);
- paths the system cannot hold or that are not for files (under a regular file, in ``/proc``,
  ``/sys`` or ``/dev``, a name over 255 bytes) are one line naming the path.

A report a command rewrites on every run (the gate's ``--json``, ``--junit`` and ``--markdown``: a CI
job reruns into the same path) is written by :func:`write_report`: a new path as above, or an existing
one only when it is recognisably a report this project wrote (:class:`Ours`: its schema, its JUnit
suite name, its marker comment, read from the file itself), is a regular file with one link, and
belongs to the user running the command; it is then replaced atomically (a temporary file renamed
over it), so a crash never leaves half a report. Anything else (a user's ``README.md``, a hard link
of one, a symbolic link, a file of another user or of the system) is refused in one line naming the
path and the flag, and nothing is modified.

:func:`write_output_dir` does the same for a folder of files (parquet tables, a ``datasets``
dataset): written aside and renamed into place, which succeeds only onto a name that is free or
an empty folder. :func:`append_line` appends a record to a file that must be a regular file and not
a link (the monitor's spool).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import secrets as _random
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collapse_probe.core._files import kind_of
from collapse_probe.core._secrets import scrub
from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "RUN_FILES",
    "OutputRefused",
    "Ours",
    "append_line",
    "check_output_path",
    "dumps_json",
    "encode_json",
    "json_default",
    "nonfinite_at",
    "null_nonfinite",
    "write_output_dir",
    "write_outputs",
    "write_report",
]

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

SYSTEM_ROOTS = ("/proc", "/sys", "/dev")
"""Folders that hold the kernel's views and devices, never a command's output files."""

NAME_MAX = 255
"""Bytes per file name on the file systems in use (ext4, xfs, btrfs, APFS, NTFS)."""


class OutputRefused(ConfigError):
    """An output path that cannot or may not be written; the message names it and why."""


MAX_OWN_BYTES = 64 << 20
"""A report this project rewrites is a few KiB; a larger file at its path is not one of them."""


@dataclass(frozen=True)
class Ours:
    """How a command recognises a file it wrote on an earlier run, so that it may rewrite it.

    ``what`` says what is expected (``"a gate JSON verdict (schema collapse-probe/gate/v1)"``), for
    the refusal; ``test`` gets the file's bytes and says whether they are such a file.
    """

    what: str
    test: Callable[[bytes], bool]


# ------------------------------------------------------------------------------------------ strict JSON


def json_default(o: Any) -> Any:
    """Values :mod:`json` does not know: numpy scalars and arrays, paths."""
    tolist = getattr(o, "tolist", None)
    if callable(tolist) and type(o).__module__.startswith("numpy"):
        return tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _field_path(at: str, key: object) -> str:
    """``at.key``, or ``at["key"]`` (JSON-quoted, one line) for a key that is not a printable name."""
    k = str(key)
    if k and k.isprintable() and not any(c in k for c in '.[]"'):
        return f"{at}.{k}" if at else k
    return f"{at}[{json.dumps(k)}]"


def nonfinite_at(value: Any) -> tuple[str, float] | None:
    """``(path, value)`` of the first ``NaN``/``Infinity`` in JSON data (``cells[0].mean_reward``)."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        v, at = stack.pop()
        if isinstance(v, float):
            if not math.isfinite(v):
                return at or "the value", v
        elif isinstance(v, Mapping):
            stack.extend((child, _field_path(at, k)) for k, child in reversed(list(v.items())))
        elif isinstance(v, list | tuple):
            stack.extend((child, f"{at}[{i}]") for i, child in reversed(list(enumerate(v))))
        else:
            tolist = getattr(v, "tolist", None)
            if callable(tolist) and type(v).__module__.startswith("numpy"):
                stack.append((tolist(), at))
    return None


def dumps_json(
    obj: Any, *, where: str | os.PathLike[str] = "JSON", indent: int | None = None, sort_keys: bool = False
) -> str:
    """``obj`` as strict JSON text, configured secrets scrubbed (see the module docstring).

    Raises:
        ConfigError: a ``NaN`` or infinite number, naming ``where`` and the field; a value that is
            not JSON data, naming its type.
    """
    try:
        text = json.dumps(
            obj, ensure_ascii=False, allow_nan=False, indent=indent, sort_keys=sort_keys, default=json_default
        )
    except ValueError as exc:
        found = nonfinite_at(obj)
        if found is None:
            if "surrogate" in str(exc):  # pragma: no cover - ensure_ascii=False does not raise for these
                raise
            raise ConfigError(f"{where}: cannot be written as JSON ({exc})") from None
        at, v = found
        raise ConfigError(
            f"{where}: {at} is {v!r}, which JSON cannot hold (no NaN or Infinity); nothing was written"
        ) from None
    except TypeError as exc:
        raise ConfigError(f"{where}: cannot be written as JSON ({exc})") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to be written as JSON") from None
    return scrub(text)


def encode_json(obj: Any, *, where: str | os.PathLike[str] = "JSON", indent: int | None = None) -> bytes:
    """:func:`dumps_json` as UTF-8 bytes; a lone surrogate that reached the data anyway is written as
    its JSON escape (the file still reads back as the same value)."""
    text = dumps_json(obj, where=where, indent=indent)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return scrub(json.dumps(obj, ensure_ascii=True, allow_nan=False, indent=indent, default=json_default)).encode(
            "ascii"
        )


# ------------------------------------------------------------------------------------------- outputs


def _refuse(flag: str, path: str | os.PathLike[str], why: str) -> OutputRefused:
    return OutputRefused(f"{flag} {path}: {why}" if flag else f"{path}: {why}")


def _kind(mode: int) -> str:
    """:func:`~collapse_probe.core._files.kind_of`, where a regular file is simply "a file"."""
    return "a file" if stat.S_ISREG(mode) else kind_of(mode)


RUN_KINDS = ("play", "audit", "crossplay", "train", "lab", "monitor", "gate", "compare")
"""``kind`` values of a run's ``config.json``."""


def _json_object(p: Path) -> dict[str, JsonValue] | None:
    """The JSON object in the small file ``p`` (``None``: unreadable, or not an object)."""
    from collapse_probe.core._files import read_bytes

    try:
        value = json.loads(read_bytes(p, max_bytes=1 << 20, follow_symlinks=False))
    except (ConfigError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` is a directory holding a collapse-probe run: its ``config.json`` names a run
    kind, its ``results.json`` a collapse-probe schema, or it holds a run's lock and records (a
    project folder with a ``config.json`` of its own is not one)."""
    try:
        if not path.is_dir():
            return False
        cfg = _json_object(path / "config.json") if os.path.lexists(path / "config.json") else None
        if cfg is not None and cfg.get("kind") in RUN_KINDS:
            return True
        res = _json_object(path / "results.json") if os.path.lexists(path / "results.json") else None
        if res is not None and str(res.get("schema", "")).startswith("collapse-probe/"):
            return True
        return os.path.lexists(path / ".lock") and any(
            os.path.lexists(path / n) for n in RUN_FILES if n.endswith(".jsonl")
        )
    except OSError:
        return False


def _run_above(p: Path) -> Path | None:
    for parent in p.parents:
        if is_run_dir(parent):
            return parent
    return None


def check_output_path(
    path: str | os.PathLike[str], flag: str = "--out", *, directory: bool = False, replace: Ours | None = None
) -> Path:
    """Refuse, in one line naming it, a path an output may not be written at (see the module docstring).

    Checked: an empty path, a system folder, a name longer than the system allows, a parent that is
    a file, a run's folder (the path or any folder above it), and a name that already exists
    (``directory``: a non-empty folder or anything that is not a folder; ``replace``: anything but a
    regular file with one link, of this user, that ``replace`` recognises as the report the caller
    rewrites on every run, as the gate its reports in CI).

    Returns:
        The path as a :class:`~pathlib.Path`.
    """
    if not str(path).strip():
        raise OutputRefused(f"{flag}: expected a file path, got an empty one")
    p = Path(path)
    absolute = Path(os.path.abspath(p))
    for root in SYSTEM_ROOTS:
        if absolute == Path(root) or Path(root) in absolute.parents:
            raise _refuse(
                flag, path, f"is under {root}, which holds the system's own entries, not files; write elsewhere"
            )
    for part in p.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise _refuse(
                flag, f"{str(path)[:60]}...", f"the name {part[:40]}... is {len(os.fsencode(part))} bytes long; a "
                f"file system allows at most {NAME_MAX} bytes per name",
            )  # fmt: skip
    if len(os.fsencode(str(absolute))) >= 4096:
        raise _refuse(flag, f"{str(path)[:60]}...", "the path is longer than the system allows (4096 bytes)")
    for parent in absolute.parents:
        try:
            st = os.stat(parent)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                continue
            raise _refuse(flag, path, f"{parent} cannot be used ({exc.strerror or exc})") from None
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse(flag, path, f"{parent} is {_kind(st.st_mode)}, not a directory")
        break
    run = absolute if directory and is_run_dir(absolute) else _run_above(absolute)
    if run is not None:
        raise _refuse(
            flag, path, f"is inside the run directory {run}; a run's folder holds only what the run writes, "
            "write the output elsewhere (nothing of a run is ever overwritten)",
        )  # fmt: skip
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ENAMETOOLONG):
            raise _refuse(flag, path, exc.strerror or str(exc)) from None
        raise _refuse(flag, path, f"cannot be checked ({exc.strerror or exc})") from None
    if directory and stat.S_ISDIR(st.st_mode):
        try:
            empty = not os.listdir(p)
        except OSError as exc:
            raise _refuse(flag, path, f"cannot be listed ({exc.strerror or exc})") from None
        if empty:
            return p
        raise _refuse(flag, path, "directory is not empty; write to a new or empty directory (nothing is overwritten)")
    if replace is not None and stat.S_ISREG(st.st_mode):
        _check_ours(p, flag, path, st, replace)
        return p
    raise _exists(flag, path, st.st_mode)


def _check_ours(p: Path, flag: str, path: str | os.PathLike[str], st: os.stat_result, ours: Ours) -> None:
    """Refuse an existing regular file unless it is ``ours``: one link, this user's, and recognised by content."""
    if st.st_nlink > 1:
        raise _refuse(
            flag, path, f"has {st.st_nlink} hard links (another name shares its content); an output is never "
            "written into a linked file: give a new path (nothing is overwritten)",
        )  # fmt: skip
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise _refuse(
            flag, path, f"exists and belongs to another user (uid {st.st_uid}); only a report this user's "
            "earlier run wrote is rewritten: give a new path (nothing is overwritten)",
        )  # fmt: skip
    data = b""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            now = os.fstat(f.fileno())
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) and now.st_size <= MAX_OWN_BYTES:
                data = f.read(MAX_OWN_BYTES + 1)
    except OSError as exc:
        raise _refuse(flag, path, f"exists and cannot be read to check it ({exc.strerror or exc})") from None
    try:
        mine = bool(data) and len(data) <= MAX_OWN_BYTES and ours.test(data)
    except Exception:  # a recogniser that trips over a file is a file it does not recognise
        mine = False
    if not mine:
        raise _refuse(
            flag, path, f"exists and is not {ours.what}; only such a report from an earlier run is rewritten: "
            "give a new path (nothing is overwritten)",
        )  # fmt: skip


def _exists(flag: str, path: str | os.PathLike[str], mode: int | None = None) -> OutputRefused:
    if mode is None:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
    what = _kind(mode)
    if stat.S_ISREG(mode):
        return _refuse(flag, path, "exists; write to a new path (nothing is overwritten)")
    if stat.S_ISLNK(mode):
        return _refuse(flag, path, "is a symbolic link; outputs are never written through a link: give a new path")
    return _refuse(flag, path, f"exists and is {what}; give a new file path (nothing is overwritten)")


def _mkdir_parent(p: Path, flag: str, path: str | os.PathLike[str]) -> None:
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise _refuse(flag, path, f"{p.parent} exists and is not a directory") from None
    except OSError as exc:
        raise _refuse(flag, path, f"cannot create its folder {p.parent} ({exc.strerror or exc})") from None


def _temp_name(p: Path) -> Path:
    return p.with_name(f".{p.name[:200]}.{os.getpid()}-{_random.token_hex(4)}.tmp")


def _oserror(flag: str, path: str | os.PathLike[str], exc: OSError, doing: str = "cannot be written") -> OutputRefused:
    if exc.errno == errno.ENAMETOOLONG:
        return _refuse(flag, path, "the name is longer than the file system allows")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return _refuse(flag, path, f"{doing}: the disk is full")
    return _refuse(flag, path, f"{doing} ({exc.strerror or exc})")


Content = bytes | str | Callable[[Path], None]
"""What a file gets: its bytes, its text (UTF-8), or a function that writes a file at the path given."""


def write_outputs(files: Sequence[tuple[str | os.PathLike[str], Content]], flag: str = "--out") -> list[Path]:
    """Create every file of ``files`` exclusively, the first one acting as the set's lock.

    All paths are checked first (:func:`check_output_path`), so a name that exists refuses the whole
    set before anything is written. Each file's content is written aside and hard-linked into place.

    Returns:
        The paths written, in order.

    Raises:
        OutputRefused: naming the first path that may not or cannot be written; what this call
            created before is removed again.
    """
    paths = [check_output_path(p, flag) for p, _ in files]
    if len({os.path.abspath(p) for p in paths}) != len(paths):
        raise _refuse(flag, files[0][0], "two of the files to write have the same name")
    created: list[tuple[Path, int]] = []
    try:
        for (shown, content), p in zip(files, paths, strict=True):
            _mkdir_parent(p, flag, shown)
            created.append((p, _publish(p, content, flag, shown)))
    except BaseException:
        for p, ino in reversed(created):
            with contextlib.suppress(OSError):
                if os.lstat(p).st_ino == ino:  # only what this call created
                    os.unlink(p)
        raise
    return paths


def _publish(p: Path, content: Content, flag: str, shown: str | os.PathLike[str]) -> int:
    tmp = _temp_name(p)
    try:
        if callable(content):
            content(tmp)
        else:
            _write_new(tmp, content.encode("utf-8") if isinstance(content, str) else content)
        try:
            os.link(tmp, p, follow_symlinks=False)
        except FileExistsError:
            raise _exists(flag, shown) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise _oserror(flag, shown, exc) from None
            _copy_exclusive(tmp, p, flag, shown)  # a file system without hard links
        return os.lstat(p).st_ino
    except OSError as exc:
        raise _oserror(flag, shown, exc) from None
    finally:
        with contextlib.suppress(OSError):
            if os.path.isdir(tmp) and not os.path.islink(tmp):
                shutil.rmtree(tmp)
            else:
                os.unlink(tmp)


def _copy_exclusive(src: Path, dst: Path, flag: str, shown: str | os.PathLike[str]) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(dst, flags | os.O_NONBLOCK, 0o644)
    except FileExistsError:
        raise _exists(flag, shown) from None
    with os.fdopen(fd, "wb") as out, open(src, "rb") as f:
        shutil.copyfileobj(f, out)
        out.flush()
        os.fsync(out.fileno())


def write_report(path: str | os.PathLike[str], content: bytes | str, ours: Ours, flag: str = "--out") -> Path:
    """Write a report at ``path``: a new file created exclusively (as :func:`write_outputs`), or an
    earlier report that ``ours`` recognises replaced atomically (a temporary file in the same folder
    renamed over it, after the file found there is checked again).

    Raises:
        OutputRefused: ``path`` may not be written (see :func:`check_output_path` with ``replace``);
            nothing is modified.
    """
    p = check_output_path(path, flag, replace=ours)
    _mkdir_parent(p, flag, path)
    try:
        before = os.lstat(p)
    except FileNotFoundError:
        _publish(p, content, flag, path)
        return p
    except OSError as exc:
        raise _oserror(flag, path, exc) from None
    data = content.encode("utf-8") if isinstance(content, str) else content
    tmp = _temp_name(p)
    try:
        _write_new(tmp, data)
        check_output_path(path, flag, replace=ours)  # again, just before the rename: still the report checked
        now = os.lstat(p)
        if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            raise _refuse(flag, path, "was replaced by another process meanwhile; nothing is overwritten")
        os.replace(tmp, p)  # replaces the name; never writes into the old file or through a link
    except FileNotFoundError:
        _publish(p, data, flag, path)  # removed meanwhile: a new file after all
    except OSError as exc:
        raise _oserror(flag, path, exc) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return p


def _write_new(tmp: Path, data: bytes) -> None:
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o644
    )
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_output_dir(path: str | os.PathLike[str], fill: Callable[[Path], Any], flag: str = "--out") -> Path:
    """Write a folder of files: ``fill(tmp)`` writes them into a fresh folder beside ``path``, which is
    then renamed to ``path`` (refused when ``path`` exists and is not an empty folder; of concurrent
    writers onto one ``path`` one wins). Returns ``path``."""
    p = check_output_path(path, flag, directory=True)
    _mkdir_parent(p, flag, path)
    tmp = _temp_name(p)
    try:
        tmp.mkdir()
        fill(tmp)
        try:
            os.rename(tmp, p)  # onto a free name or an empty folder only
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                check_output_path(path, flag, directory=True)
                raise _refuse(flag, path, "was written by another process meanwhile; nothing is overwritten") from None
            raise _oserror(flag, path, exc) from None
    except OSError as exc:
        raise _oserror(flag, path, exc) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return p


def append_line(path: str | os.PathLike[str], line: bytes, what: str = "a record file") -> None:
    """Append ``line`` in one write to ``path`` (created if absent), which must be a regular file,
    not a symbolic link, inside a folder that is one (the monitor's spool).

    Raises:
        OutputRefused: the folder or the file cannot be used; one line naming it.
    """
    p = Path(path)
    if p.parent.exists() and not p.parent.is_dir():
        raise _refuse("", p.parent, f"is not a directory; expected the folder of {what}")
    _mkdir_parent(p, "", p.parent)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(p, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse("", p, f"is a symbolic link; {what} is never written through a link") from None
        raise _oserror("", p, exc, f"cannot be appended to as {what}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse("", p, f"is {_kind(mode)}, not {what}")
        os.write(fd, line)  # one write per record: appends of concurrent writers never interleave
    except OSError as exc:
        raise _oserror("", p, exc, f"cannot be appended to as {what}") from None
    finally:
        os.close(fd)


def null_nonfinite(value: Any) -> tuple[Any, dict[str, str]]:
    """``value`` (JSON data) with each ``NaN``/infinity replaced by ``null``, and the reasons by path
    (``{"train_reward": "was nan, which JSON cannot hold"}``), for a writer that records a row it was
    given (the monitor's rows) rather than refusing it."""
    reasons: dict[str, str] = {}

    def walk(v: Any, at: str) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            reasons[at or "value"] = f"was {v!r}, which JSON cannot hold"
            return None
        if isinstance(v, Mapping):
            return {k: walk(c, f"{at}.{k}" if at else str(k)) for k, c in v.items()}
        if isinstance(v, list | tuple):
            return [walk(c, f"{at}[{i}]") for i, c in enumerate(v)]
        tolist = getattr(v, "tolist", None)
        if callable(tolist) and type(v).__module__.startswith("numpy"):
            return walk(tolist(), at)
        return v

    return walk(value, ""), reasons
