"""Reading files that come from users or from run directories: never hung, flooded or led elsewhere.

A path can name something that is not a file: a FIFO blocks ``open()`` until a writer appears
(forever), a symbolic link to ``/dev/zero`` reads until memory is gone, a directory raises
``IsADirectoryError``, a link loop raises ``RuntimeError`` from :meth:`pathlib.Path.resolve`. And a
file's content can be valid JSON that no program here can use: an integer of 5,000 digits (Python
refuses to convert it), a lone surrogate ``"\\ud800"`` (a string that cannot be written back as
UTF-8, so the first record written with it fails half-way). Every reader of a user's file or of a
run directory goes through :func:`read_bytes` (opened without blocking, checked to be a regular file,
size-capped, links refused where the file must lie inside a directory) and :func:`parse_json`, so
each of these is one clear line naming the file, never a traceback, a hang or a half-written file.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError

__all__ = [
    "FileProblem",
    "MissingFile",
    "kind_of",
    "lone_surrogate_at",
    "parse_json",
    "read_bytes",
    "scrub_surrogates",
]


class FileProblem(ConfigError):
    """A path that cannot be read as the file it should be (wrong type, too large, unreadable)."""


class MissingFile(FileProblem):
    """The path does not exist."""


def kind_of(mode: int) -> str:
    """What a ``st_mode`` is, in words (``"a directory"``, ``"a FIFO (named pipe)"``, ...)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def _where(path: str | os.PathLike[str], label: str | None) -> str:
    return f"{label} {path}" if label else str(path)


def read_bytes(
    path: str | os.PathLike[str],
    *,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
    label: str | None = None,
    expected: str = "a regular file",
) -> bytes:
    """The bytes of a regular file, opened so that nothing else can hang or flood the reader.

    The file is opened with ``O_NONBLOCK`` (a FIFO then opens at once and is refused instead of
    blocking), checked with ``fstat`` on the open descriptor (so what is read is what was checked),
    and read up to ``max_bytes``.

    Args:
        path: the file.
        max_bytes: refuse a file larger than this (``None``: no cap).
        follow_symlinks: ``False`` refuses a symbolic link as the last component (a file that must lie
            inside a directory: a run's own files, the dashboard's reads).
        label: how the message names the path's source (a flag such as ``--price-table``).
        expected: what the file should be, for the message ("a TOML price table").

    Raises:
        MissingFile: the path does not exist.
        FileProblem: it is a directory, FIFO, socket, device or (``follow_symlinks=False``) a link,
            it is larger than ``max_bytes``, or it cannot be read; the message names the path.
    """
    where = _where(path, label)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise MissingFile(f"{where}: does not exist; expected {expected}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            what = "a symbolic link (not followed here)" if not follow_symlinks else "a symbolic link loop"
            if not follow_symlinks and _is_loop(path):
                what = "a symbolic link loop"
            raise FileProblem(f"{where}: is {what}; expected {expected}") from None
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing without a reader
            raise FileProblem(f"{where}: is a socket or FIFO; expected {expected}") from None
        raise FileProblem(f"{where}: cannot be read ({exc.strerror or exc}); expected {expected}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem(f"{where}: is {kind_of(st.st_mode)}; expected {expected}")
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileProblem(
                f"{where}: is {_size(st.st_size)}, more than the {_size(max_bytes)} allowed for {expected}"
            )
        chunks = []
        left = max_bytes + 1 if max_bytes is not None else -1
        while left != 0:
            chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            if left > 0:
                left -= len(chunk)
        data = b"".join(chunks)
        if max_bytes is not None and len(data) > max_bytes:  # grew while being read
            raise FileProblem(f"{where}: is more than the {_size(max_bytes)} allowed for {expected}")
        return data
    except OSError as exc:
        raise FileProblem(f"{where}: cannot be read ({exc.strerror or exc}); expected {expected}") from None
    finally:
        os.close(fd)


def _is_loop(path: str | os.PathLike[str]) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _size(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}" if n % k else f"{n // k} {unit}"
    return f"{n} bytes"


def parse_json(raw: bytes | str, where: str | Path, *, expected: str = "a JSON file") -> Any:
    """Parse JSON from a user's file or a run directory; every way it can be unusable is one line.

    Refused, naming ``where``: text that is not UTF-8, JSON that does not parse, a number too long
    for Python to convert (``1`` followed by 5,000 zeros), nesting past the parser's recursion limit,
    and a string holding a lone surrogate (``"\\ud800"``: valid JSON, but not text that can be written
    back to a UTF-8 file).

    Raises:
        ConfigError: naming ``where`` and what is wrong with it.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start}); expected {expected}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); expected {expected}"
        ) from None
    except RecursionError:
        raise ConfigError(f"{where}: JSON nested too deeply; expected {expected}") from None
    except ValueError:  # an integer past sys.get_int_max_str_digits()
        raise ConfigError(
            f"{where}: holds an integer too long to convert (more than {_int_digits()} digits); expected {expected}"
        ) from None
    at = lone_surrogate_at(value)
    if at is not None:
        raise ConfigError(
            f"{where}: {at or 'the value'} holds a lone surrogate (an escaped \\ud800-\\udfff without its pair), "
            f"which is not text; expected {expected}"
        )
    return value


def _int_digits() -> int:
    import sys

    return sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300


def lone_surrogate_at(value: Any) -> str | None:
    """The path (``responses[0].text``) of the first string or key in ``value`` holding a lone
    surrogate, ``""`` when ``value`` itself is such a string, ``None`` when there is none."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        v, at = stack.pop()
        if isinstance(v, str):
            if _has_surrogate(v):
                return at
        elif isinstance(v, dict):
            for k, child in v.items():
                key = f"{at}.{k}" if at else str(k)
                if isinstance(k, str) and _has_surrogate(k):
                    return key.encode("utf-8", "backslashreplace").decode("ascii")
                stack.append((child, key))
        elif isinstance(v, list):
            stack.extend((child, f"{at}[{i}]") for i, child in enumerate(v))
    return None


def _has_surrogate(s: str) -> bool:
    if s.isascii():
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def scrub_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a surrogate pair becomes its character).

    For text a model returned: it is the model's answer and is kept, but a lone surrogate cannot be
    written to a UTF-8 run file, and a record that fails half-way would leave a torn file behind.
    """
    if not _has_surrogate(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
