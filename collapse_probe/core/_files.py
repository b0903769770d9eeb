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
import math
import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError

__all__ = [
    "MAX_COMPRESSION_RATIO",
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "MAX_MEMBER_BYTES",
    "MAX_USER_FILE_BYTES",
    "FileProblem",
    "MissingFile",
    "TornLastLine",
    "check_regular_file",
    "check_values",
    "check_zip",
    "iter_json_lines",
    "kind_of",
    "lone_surrogate_at",
    "parse_json",
    "read_bytes",
    "read_json_file",
    "scrub_surrogates",
]

MAX_USER_FILE_BYTES = 1 << 30
"""A published file (a τ2 results file, an inspect log, a JSONL file of conversations) past 1 GiB is
refused before it is read: every conversation of an audit is held in memory for its estimates."""
MAX_MEMBER_BYTES = 1 << 30
"""One member of a zip file (an inspect ``.eval`` log), uncompressed."""
MAX_ZIP_BYTES = 4 << 30
"""All members of a zip file together, uncompressed."""
MAX_ZIP_MEMBERS = 1_000_000
"""Members of a zip file."""
MAX_COMPRESSION_RATIO = 100
"""Uncompressed / compressed size of a zip member past :data:`RATIO_FREE_BYTES`: JSON text deflates
about 5-20 to 1; a member that claims more is a zip bomb (125 KB that inflate to 3 GB)."""
RATIO_FREE_BYTES = 1 << 20
"""Members up to this size (uncompressed) are not held to :data:`MAX_COMPRESSION_RATIO`: a small file
of repeated text compresses far better than a real log, and cannot flood memory."""
MAX_JSON_DEPTH = 100
"""Nesting of arrays and objects in a user's file: published logs nest a dozen levels; past a few
hundred, code that walks the value (copying, writing it back, validating) runs out of stack."""
MAX_RECORD_DEPTH = 500
"""Nesting of a run's own records (a model's tool-call arguments are kept as the model sent them): far
deeper than any record, still clear of the interpreter's recursion limit."""
MAX_INT_DIGITS = 100
"""Digits of an integer in a user's file: ids, counts and seeds have at most a few dozen; Python refuses
to convert past 4,300, and a float field cannot hold past 309."""
MAX_LINE_BYTES = 16 << 20
"""One line of a JSONL file (a user's or a run's own): a record is read whole and parsed into Python
objects several times its size, so a 200 MB line would exhaust memory; a conversation, long tool
outputs included, takes a few hundred KB."""


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


class _LongInt:
    """An integer literal too long to use, kept as its digit count until its field is known."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


class _NonFinite:
    """``NaN``, ``Infinity`` or a float literal past the float range (``1e999``), until its field is known."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _parse_int(text: str) -> Any:
    digits = len(text) - (text[0] == "-")
    return _LongInt(digits) if digits > MAX_INT_DIGITS else int(text)


def _parse_float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def parse_json(
    raw: bytes | str,
    where: str | Path,
    *,
    expected: str = "a JSON file",
    max_depth: int = MAX_JSON_DEPTH,
    surrogates: bool = False,
    nonfinite: bool = True,
    unique_keys: bool = False,
) -> Any:
    """Parse JSON from a user's file or a run directory; every way it can be unusable is one line.

    Refused, naming ``where`` and (where there is one) the field: text that is not UTF-8, JSON that
    does not parse, an integer of more than :data:`MAX_INT_DIGITS` digits (``1`` followed by 5,000
    zeros: Python refuses to convert it, and no field here holds one), nesting deeper than
    ``max_depth``, a string or key holding a lone surrogate (``"\\ud800"``: valid JSON, but not text
    that can be written back to a UTF-8 file; ``surrogates=True`` keeps them, for a run's own records,
    which write such a string as its escape) and, with ``nonfinite=False``, ``NaN``, ``Infinity`` and
    float literals past the float range (a published file's reward or temperature); with
    ``unique_keys``, a key given twice in one object (JSON keeps the last silently: a user's file that
    says two things).

    Raises:
        ConfigError: naming ``where``, the field and what is wrong with it.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start}); expected {expected}") from None
    hook = _unique_pairs if unique_keys else None
    try:
        if nonfinite:
            value = json.loads(text, parse_int=_parse_int, object_pairs_hook=hook)
        else:
            value = json.loads(
                text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_NonFinite, object_pairs_hook=hook
            )
    except _RepeatedKey as exc:
        raise ConfigError(
            f"{where}: key {exc.args[0]!r} is given twice in one object; keep one; expected {expected}"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); expected {expected}"
        ) from None
    except RecursionError:
        raise ConfigError(
            f"{where}: JSON nested deeper than {max_depth} levels (arrays and objects); expected {expected}"
        ) from None
    except MemoryError:
        raise ConfigError(f"{where}: too large to parse in the memory available; expected {expected}") from None
    problem = _value_problem(value, max_depth=max_depth, surrogates=surrogates, nonfinite=nonfinite)
    if problem is not None:
        at, what = problem
        raise ConfigError(f"{where}: {at or 'the value'}: {what}; expected {expected}")
    return value


class _RepeatedKey(Exception):
    """A key given twice in one JSON object (raised by :func:`_unique_pairs`)."""


def _unique_pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in pairs:
        if k in out:
            raise _RepeatedKey(k)
        out[k] = v
    return out


def check_values(
    value: Any,
    where: str | Path,
    *,
    expected: str,
    max_depth: int = MAX_JSON_DEPTH,
    surrogates: bool = False,
    nonfinite: bool = False,
) -> None:
    """Refuse a value already parsed (YAML, TOML, an inspect log's metadata) that :func:`parse_json`
    would refuse: nesting past ``max_depth``, an integer of more than :data:`MAX_INT_DIGITS` digits, a
    lone surrogate (unless ``surrogates``), a float that is not finite (unless ``nonfinite``).

    Raises:
        ConfigError: naming ``where``, the field and what is wrong with it.
    """
    problem = _value_problem(value, max_depth=max_depth, surrogates=surrogates, nonfinite=nonfinite)
    if problem is not None:
        at, what = problem
        raise ConfigError(f"{where}: {at or 'the value'}: {what}; expected {expected}")


_INT_LIMIT = 10**MAX_INT_DIGITS


def _value_problem(value: Any, *, max_depth: int, surrogates: bool, nonfinite: bool) -> tuple[str, str] | None:
    """``(path, what is wrong)`` of the first unusable part of ``value`` (without recursion), or ``None``."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, at, depth = stack.pop()
        if isinstance(v, str):
            if not surrogates and _has_surrogate(v):
                return _printable(at), _SURROGATE
        elif isinstance(v, dict):
            if depth >= max_depth:
                return _printable(at), f"nested deeper than {max_depth} levels (arrays and objects)"
            for k, child in v.items():
                key = f"{at}.{k}" if at else str(k)
                if isinstance(k, str) and not surrogates and _has_surrogate(k):
                    return _printable(key), "the key " + _SURROGATE
                stack.append((child, key, depth + 1))
        elif isinstance(v, list | tuple):
            if depth >= max_depth:
                return _printable(at), f"nested deeper than {max_depth} levels (arrays and objects)"
            stack.extend((child, f"{at}[{i}]", depth + 1) for i, child in enumerate(v))
        elif isinstance(v, _LongInt):
            return _printable(at), f"an integer of {v.digits:,} digits (at most {MAX_INT_DIGITS})"
        elif isinstance(v, _NonFinite):  # only parsed as such with nonfinite=False
            return _printable(at), f"{v.text} is not a finite number"
        elif isinstance(v, int) and not isinstance(v, bool):
            if abs(v) >= _INT_LIMIT:
                return _printable(at), f"an integer of more than {MAX_INT_DIGITS} digits"
        elif isinstance(v, float) and not nonfinite and not math.isfinite(v):
            return _printable(at), f"{v} is not a finite number"
    return None


_SURROGATE = "holds a lone surrogate (an escaped \\ud800-\\udfff without its pair), which is not text"


def _printable(at: str) -> str:
    """A field's path fit for a one-line message: surrogates escaped, a path hundreds of levels deep shortened."""
    if _has_surrogate(at):
        at = at.encode("utf-8", "backslashreplace").decode("utf-8")
    return at if len(at) <= 160 else f"{at[:100]}...{at[-40:]}"


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


def read_json_file(
    path: str | os.PathLike[str],
    *,
    expected: str,
    label: str | None = None,
    max_bytes: int = MAX_USER_FILE_BYTES,
    follow_symlinks: bool = True,
    max_depth: int = MAX_JSON_DEPTH,
    surrogates: bool = False,
    nonfinite: bool = False,
) -> Any:
    """The JSON value of a user's file, read with every limit: :func:`read_bytes` (a regular file, at
    most ``max_bytes``) then :func:`parse_json` (no unusable integer, surrogate, non-finite number or
    nesting, each named by its field).

    Raises:
        MissingFile: the path does not exist.
        ConfigError: one line naming the file (and the field) and what was expected.
    """
    raw = read_bytes(path, max_bytes=max_bytes, follow_symlinks=follow_symlinks, label=label, expected=expected)
    return parse_json(
        raw, os.fspath(path), expected=expected, max_depth=max_depth, surrogates=surrogates, nonfinite=nonfinite
    )


def check_regular_file(
    path: str | os.PathLike[str],
    *,
    expected: str,
    label: str | None = None,
    max_bytes: int = MAX_USER_FILE_BYTES,
) -> int:
    """Check, without reading it, that ``path`` is a regular file of at most ``max_bytes`` (for a file a
    library reads itself, such as an inspect log): opened without blocking, so a FIFO is refused, not
    waited on; a link to ``/dev/zero`` is a device. Returns its size.

    Raises:
        MissingFile: the path does not exist.
        FileProblem: naming the path and what it is.
    """
    fd = _open_regular(path, _where(path, label), expected, max_bytes)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def check_zip(
    path: str | os.PathLike[str],
    *,
    expected: str,
    max_member_bytes: int = MAX_MEMBER_BYTES,
    max_total_bytes: int = MAX_ZIP_BYTES,
    max_ratio: float = MAX_COMPRESSION_RATIO,
) -> None:
    """Refuse a zip file whose members would flood memory when a library reads them: a member larger
    than ``max_member_bytes`` uncompressed, members larger than ``max_total_bytes`` together, more than
    :data:`MAX_ZIP_MEMBERS` members, or a member past :data:`RATIO_FREE_BYTES` compressed more than
    ``max_ratio`` to 1 (a zip bomb). Only the central directory is read: Python's ``zipfile`` (which
    the readers use) stops every member at the size declared there, so declared sizes bound what is
    inflated. Call :func:`check_regular_file` first.

    Raises:
        ConfigError: naming the file, the member and its sizes.
    """
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            members = z.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise ConfigError(f"{path}: not {expected}: not a readable zip file ({exc})") from None
    if len(members) > MAX_ZIP_MEMBERS:
        raise ConfigError(f"{path}: holds {len(members):,} members, more than {MAX_ZIP_MEMBERS:,}; expected {expected}")
    total = 0
    for m in members:
        name = _printable(m.filename)
        if m.file_size > max_member_bytes:
            raise ConfigError(
                f"{path}: member {name} inflates to {_size(m.file_size)}, more than the {_size(max_member_bytes)} "
                f"allowed for one member; expected {expected}"
            )
        ratio = m.file_size / max(m.compress_size, 1)
        if m.file_size > RATIO_FREE_BYTES and ratio > max_ratio:
            raise ConfigError(
                f"{path}: member {name} is compressed {ratio:,.0f} to 1 ({_size(m.compress_size)} inflating to "
                f"{_size(m.file_size)}), more than the {max_ratio:g} to 1 of a real log (a zip bomb); "
                f"expected {expected}"
            )
        total += m.file_size
        if total > max_total_bytes:
            raise ConfigError(
                f"{path}: members inflate to more than {_size(max_total_bytes)} together; expected {expected}"
            )
    # the sizes above are what the central directory declares; a reader that inflates a member whole
    # (inspect does) trusts the stream instead, so each stream is inflated here, in bounded chunks,
    # and must end within its declared size
    try:
        with open(path, "rb") as f:
            for m in members:
                if _inflates_past(f, m):
                    raise ConfigError(
                        f"{path}: member {_printable(m.filename)} inflates past the {_size(m.file_size)} its "
                        f"header declares (a zip bomb or a damaged file); expected {expected}"
                    )
    except (OSError, ValueError, EOFError, struct.error) as exc:
        raise ConfigError(f"{path}: not a readable zip file ({exc}); expected {expected}") from None


def _inflates_past(f: Any, m: Any) -> bool:
    """Whether member ``m``'s compressed stream inflates to more than its declared ``file_size``
    (deflate, zstd or stored; another method is left to the reader, which refuses it)."""
    import zlib

    f.seek(m.header_offset)
    header = f.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise ValueError(f"member {m.filename!r} has no local header")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    f.seek(m.header_offset + 30 + name_len + extra_len)
    left, limit, out = m.compress_size, m.file_size, 0
    if m.compress_type == 0:  # stored
        return m.compress_size > m.file_size
    if m.compress_type == 8:  # deflate
        d = zlib.decompressobj(-15)
        while left > 0 or d.unconsumed_tail:
            chunk = d.unconsumed_tail or f.read(min(left, 1 << 20))
            if not d.unconsumed_tail:
                if not chunk:
                    break
                left -= len(chunk)
            out += len(d.decompress(chunk, 1 << 20))
            if out > limit:
                return True
            if d.eof:
                break
        return False
    if m.compress_type == 93:  # zstandard, as inspect writes its logs
        try:
            import zstandard
        except ImportError:  # pragma: no cover - inspect installs it
            return False
        reader = zstandard.ZstdDecompressor().stream_reader(_Bounded(f, left), read_across_frames=True)  # type: ignore[arg-type]  # has read()
        while True:
            chunk = reader.read(1 << 20)
            if not chunk:
                return False
            out += len(chunk)
            if out > limit:
                return True
    return False


class _Bounded:
    """A file object reading at most ``left`` more bytes of ``f`` (one member's compressed data)."""

    def __init__(self, f: Any, left: int) -> None:
        self.f, self.left = f, left

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        self.left -= len(data)
        return data


class TornLastLine(ConfigError):
    """The last line of a JSONL file has no newline and does not parse (a write cut off); the caller
    decides whether that is a kill mid-write (skip it, saying so) or a damaged file (refuse it)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def iter_json_lines(
    path: str | os.PathLike[str],
    *,
    expected: str,
    label: str | None = None,
    max_bytes: int = MAX_USER_FILE_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
    surrogates: bool = False,
    nonfinite: bool = False,
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a user's JSONL file, streaming, with the
    limits of :func:`read_json_file` per line; the file is a regular file (checked on the open
    descriptor, never blocking) of at most ``max_bytes``, each line at most ``max_line_bytes``.

    Raises:
        MissingFile: the path does not exist.
        TornLastLine: the last line has no newline and is not valid JSON (naming the file and line).
        ConfigError: any other line that is not usable, naming the file, the line and the field.
    """
    where = _where(path, label)
    fd = _open_regular(path, where, expected, max_bytes)
    with os.fdopen(fd, "rb") as f:
        i = 0
        while True:
            raw = f.readline(max_line_bytes + 1)
            if not raw:
                return
            i += 1
            if len(raw) > max_line_bytes:
                raise ConfigError(
                    f"{where}: line {i} is longer than the {_size(max_line_bytes)} allowed for one line; "
                    f"expected {expected}"
                )
            if not raw.strip():
                continue
            try:  # without its newline: an error inside the line is at its line 1, never "line 2, column 1"
                value = parse_json(
                    raw.rstrip(b"\r\n"), f"{where}: line {i}", expected=expected, max_depth=max_depth,
                    surrogates=surrogates, nonfinite=nonfinite,
                )  # fmt: skip
            except ConfigError as exc:
                if not raw.endswith(b"\n") and str(exc).startswith(f"{where}: line {i}: not valid JSON"):
                    raise TornLastLine(f"{where}: line {i} (the last) is cut off: {exc}", i) from None
                raise
            yield i, value


def _open_regular(path: str | os.PathLike[str], where: str, expected: str, max_bytes: int | None) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise MissingFile(f"{where}: does not exist; expected {expected}") from None
    except OSError as exc:
        what = "a symbolic link loop" if exc.errno == errno.ELOOP else f"unreadable ({exc.strerror or exc})"
        raise FileProblem(f"{where}: is {what}; expected {expected}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileProblem(f"{where}: is {kind_of(st.st_mode)}; expected {expected}")
    if max_bytes is not None and st.st_size > max_bytes:
        os.close(fd)
        raise FileProblem(f"{where}: is {_size(st.st_size)}, more than the {_size(max_bytes)} allowed for {expected}")
    return fd
