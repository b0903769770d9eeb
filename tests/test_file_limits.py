"""The limits every reader of a user's file applies (:mod:`collapse_probe.core._files`): size caps per file,
zip member and line, the compression-ratio cap, the nesting cap, long integers, lone surrogates,
non-finite numbers and paths that are not regular files, each one line naming the file and field."""

from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path

import pytest

from collapse_probe.core import _files
from collapse_probe.core._files import (
    MAX_INT_DIGITS,
    FileProblem,
    TornLastLine,
    check_regular_file,
    check_values,
    check_zip,
    iter_json_lines,
    parse_json,
    read_json_file,
)
from collapse_probe.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "field", "what"),
    [
        ('{"a": [1, {"b": 1' + "0" * 5000 + "}]}", "a[1].b", "5,001 digits"),
        ('{"a": -' + "9" * (MAX_INT_DIGITS + 1) + "}", "a", "digits"),
        ('{"info": {"user_info": {"llm": "gpt\\ud800"}}}', "info.user_info.llm", "lone surrogate"),
        ('{"\\udfff": 1}', "\\udfff", "the key holds a lone surrogate"),
        ('{"r": NaN}', "r", "NaN is not a finite number"),
        ('{"r": [1e999]}', "r[0]", "1e999 is not a finite number"),
        ('{"r": -Infinity}', "r", "-Infinity is not a finite number"),
        ('{"x": ' + "[" * 150 + "]" * 150 + "}", "x[0]", "nested deeper than 100 levels"),
    ],
)
def test_a_value_no_reader_can_use_is_named_by_its_field(text, field, what):
    with pytest.raises(ConfigError) as exc:
        parse_json(text, "f.json", nonfinite=False)
    msg = str(exc.value)
    assert msg.startswith(f"f.json: {field}") and what in msg and "\n" not in msg, msg


def test_limits_at_their_bounds_are_accepted():
    ok = {"n": int("9" * MAX_INT_DIGITS), "deep": json.loads("[" * 99 + "]" * 99), "r": 1e308, "t": "naïve 😀"}
    assert parse_json(json.dumps(ok), "f.json", nonfinite=False) == ok
    assert parse_json('{"r": NaN}', "f.json")["r"] != parse_json('{"r": NaN}', "f.json")["r"]  # kept as NaN
    assert parse_json('{"s": "\\ud800"}', "f.json", surrogates=True) == {"s": "\ud800"}


def test_nesting_past_the_parser_is_one_line():
    with pytest.raises(ConfigError, match="nested deeper"):
        parse_json("[" * 100_000 + "]" * 100_000, "f.json")


def test_check_values_covers_parsed_values():
    with pytest.raises(ConfigError, match=r"c.yaml: a.b: an integer of more than 100 digits"):
        check_values({"a": {"b": 10**200}}, "c.yaml", expected="x")
    with pytest.raises(ConfigError, match=r"c.yaml: t: inf is not a finite number"):
        check_values({"t": float("inf")}, "c.yaml", expected="x")
    check_values({"t": float("inf")}, "c.yaml", expected="x", nonfinite=True)


def test_paths_that_are_not_regular_files_are_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    for name, what in (("fifo.json", "FIFO"), ("zero.json", "device"), ("loop.json", "loop")):
        for read in (
            lambda p: read_json_file(p, expected="x"),
            lambda p: check_regular_file(p, expected="x"),
            lambda p: list(iter_json_lines(p, expected="x")),
        ):
            with pytest.raises(FileProblem, match=what):
                read(tmp_path / name)


def test_a_file_past_its_cap_is_refused_before_it_is_read(tmp_path):
    p = tmp_path / "big.json"
    with open(p, "wb") as f:
        f.truncate(3 << 30)  # sparse
    with pytest.raises(FileProblem, match=r"is 3 GiB, more than the 1 GiB"):
        read_json_file(p, expected="a results file")
    with pytest.raises(FileProblem, match=r"is 3 GiB"):
        check_regular_file(p, expected="a log")


def test_json_lines_cap_each_line_and_report_a_torn_last_line(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"a": 1}\n\n{"b": 2}\n{"c": ')
    seen = []
    with pytest.raises(TornLastLine) as exc:
        for i, v in iter_json_lines(p, expected="conversations"):
            seen.append((i, v))
    assert seen == [(1, {"a": 1}), (3, {"b": 2})] and exc.value.line == 4
    p.write_bytes(b'{"a": 1}\n' + b"x" * 5000)
    with pytest.raises(ConfigError, match="line 2 is longer than"):
        list(iter_json_lines(p, expected="conversations", max_line_bytes=1000))
    p.write_bytes(b'{"a": "\\ud800"}\n')
    with pytest.raises(ConfigError, match=r"c.jsonl: line 1: a: holds a lone surrogate"):
        list(iter_json_lines(p, expected="conversations"))
    p.write_bytes(b'{"a": 1}\n{"b": [1\r\n{"c": 3}\n')  # a line cut short inside the file: the column in it
    with pytest.raises(ConfigError, match=r"c.jsonl: line 2: not valid JSON \(.* at line 1, column 9\)"):
        list(iter_json_lines(p, expected="conversations"))


def test_the_run_record_reader_caps_a_line(tmp_path, monkeypatch):
    from collapse_probe.core import _jsonl

    monkeypatch.setattr(_jsonl, "MAX_LINE_BYTES", 1000)
    p = tmp_path / "samples.jsonl"
    p.write_bytes(b'{"a": 1}\n' + b"[" * 5000)  # no newline: a torn line, but too long to hold
    with pytest.raises(ConfigError, match="line 2 is longer than"):
        list(_jsonl.iter_jsonl(p))
    monkeypatch.undo()
    p.write_bytes(b'{"a": "\\ud800", "r": NaN}\n{"n": 1' + b"0" * 5000 + b"}\n")
    with pytest.raises(ConfigError, match=r"line 2: n: an integer of 5,001 digits"):
        list(_jsonl.iter_jsonl(p))  # a run's own surrogates and NaN read back; a 5,000-digit id does not


def _zip(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in members.items():
            z.writestr(name, data)


def test_zip_members_are_capped_by_size_and_compression_ratio(tmp_path):
    ok = tmp_path / "ok.eval"
    _zip(ok, {"header.json": json.dumps({"a": list(range(1000))}).encode(), "small.json": b" " * 100_000})
    check_zip(ok, expected="a log")  # a small member may compress far better than the ratio cap
    bomb = tmp_path / "bomb.eval"
    _zip(bomb, {"header.json": b" " * (8 << 20)})
    with pytest.raises(ConfigError, match=r"member header.json is compressed [\d,]+ to 1"):
        check_zip(bomb, expected="a log")
    with pytest.raises(ConfigError, match=r"member header.json inflates to 8 MiB, more than the 1 MiB"):
        check_zip(bomb, expected="a log", max_member_bytes=1 << 20)
    (tmp_path / "not.eval").write_text("nope")
    with pytest.raises(ConfigError, match="not a log: not a readable zip file"):
        check_zip(tmp_path / "not.eval", expected="a log")


def test_a_member_whose_header_understates_its_size_is_refused(tmp_path):
    p = tmp_path / "lying.eval"
    _zip(p, {"header.json": b"x" * 200_000})
    data = bytearray(p.read_bytes())
    cd = data.rindex(b"PK\x01\x02")  # the central directory entry: declare 100 bytes instead of 200,000
    struct.pack_into("<I", data, cd + 24, 100)
    p.write_bytes(bytes(data))
    assert zipfile.ZipFile(p).infolist()[0].file_size == 100
    with pytest.raises(ConfigError, match=r"header.json inflates past the 100 bytes its header declares"):
        check_zip(p, expected="a log")


def test_a_zstd_member_is_inflated_in_bounded_chunks(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    raw = b"y" * 300_000
    p = tmp_path / "z.eval"
    _zip(p, {"m.json": raw})
    # rewrite the member as zstd (method 93, as inspect writes), keeping the sizes honest
    comp = zstandard.ZstdCompressor().compress(raw)
    info = zipfile.ZipFile(p).infolist()[0]
    with open(p, "rb") as f:
        f.seek(info.header_offset)
        head = f.read(30)
        n, m = struct.unpack("<HH", head[26:30])
        f.seek(0)
    assert _files._inflates_past(_Member(comp, n, m), _Info(len(comp), 300_000)) is False
    assert _files._inflates_past(_Member(comp, n, m), _Info(len(comp), 1000)) is True


class _Info:
    def __init__(self, compress_size: int, file_size: int) -> None:
        self.header_offset, self.compress_size, self.file_size, self.compress_type = 0, compress_size, file_size, 93
        self.filename = "m.json"


class _Member:
    """A file holding one local header and the member's compressed bytes."""

    def __init__(self, comp: bytes, n: int, m: int) -> None:
        import io

        head = b"PK\x03\x04" + b"\0" * 22 + struct.pack("<HH", n, m)
        self.f = io.BytesIO(head + b"\0" * (n + m) + comp)

    def seek(self, pos: int) -> None:
        self.f.seek(pos)

    def read(self, k: int = -1) -> bytes:
        return self.f.read(k)
