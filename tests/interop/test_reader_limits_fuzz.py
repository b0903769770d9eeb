"""Fuzzing the readers of published files and config files with the families of hostile values (long
integers, lone surrogates, NaN and infinities, deep nesting, wrong types, bytes that are not JSON):
each is refused as one ConfigError line naming the file, or read into values every later step can
write back (no surrogate, no non-finite reward, no unusable integer)."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from collapse_probe.errors import ConfigError  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_results import make_results  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))

surrogates = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2)
long_ints = st.integers(min_value=100, max_value=4200).map(lambda n: 10**n)
deep = st.integers(min_value=101, max_value=400).map(lambda n: json.loads("[" * n + "]" * n))
hostile = st.one_of(
    surrogates, long_ints, deep, st.sampled_from([float("nan"), float("inf"), -float("inf"), "hot", True, [], {}]),
    st.text(max_size=8), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.none(),
)  # fmt: skip


def _paths(v, at=()):
    yield at
    if isinstance(v, dict):
        for k, c in v.items():
            yield from _paths(c, (*at, k))
    elif isinstance(v, list):
        for i, c in enumerate(v):
            yield from _paths(c, (*at, i))


def _set(v, path, value):
    for p in path[:-1]:
        v = v[p]
    v[path[-1]] = value


def _written_back(run) -> None:
    """What a reader accepted can be written to the audit's UTF-8 JSON files as it is."""
    for c in run.conversations:
        for m in c.messages:
            m.content.encode("utf-8")
        assert c.reward is None or math.isfinite(c.reward)
        json.dumps([c.conversation_id, c.task_id, c.simulator, c.policy, c.simulator_errors], allow_nan=False)


@SETTINGS
@given(value=hostile, seed=st.integers(0, 10**6), dir_format=st.booleans(), as_text=st.booleans())
def test_tau2_files_with_a_hostile_field(tmp_path_factory, value, seed, dir_format, as_text):
    from collapse_probe.integrations.interop._tau2 import read_tau2_results

    d = tmp_path_factory.mktemp("tau2")
    data = make_results(d / "results.json", {"t1": [("a", 0.5), ("b", 0.5)]}, 2, dir_format=False)
    rng = random.Random(seed)
    path = rng.choice([p for p in _paths(data) if p])
    _set(data, path, value)
    text = json.dumps(data, ensure_ascii=True)  # NaN/Infinity literals and escaped surrogates as a file holds them
    if as_text:  # or the value's JSON text inside a string: a tool call's arguments, a reply
        text = text.replace('"arguments": {', '"arguments": ' + json.dumps(json.dumps(value)) + ', "x": {', 1)
    if dir_format and isinstance(json.loads(text)["simulations"], list):  # (a hostile list itself: one file)
        (d / "simulations").mkdir()
        for i, s in enumerate(json.loads(text)["simulations"]):
            (d / "simulations" / f"{i}.json").write_text(json.dumps(s, ensure_ascii=True))
        meta = json.loads(text)
        meta.pop("simulations")
        (d / "results.json").write_text(json.dumps(meta, ensure_ascii=True))
    else:
        (d / "results.json").write_text(text)
    try:
        run = read_tau2_results(d / "results.json")
    except ConfigError as exc:
        assert "\n" not in str(exc) and ".json" in str(exc), str(exc)
        return
    _written_back(run)


@SETTINGS
@given(key=st.sampled_from(["states", "samples", "temperature", "sim", "seed", "out"]), value=hostile,
       fmt=st.sampled_from(["yaml", "toml"]))  # fmt: skip
def test_config_files_with_a_hostile_value(tmp_path_factory, key, value, fmt):
    from collapse_probe.core._config_files import load_config_file

    d = tmp_path_factory.mktemp("cfg")
    p = d / f"c.{fmt}"
    if fmt == "yaml":
        p.write_text(
            f"{key}: {json.dumps(value, ensure_ascii=True)}\n".replace("NaN", ".nan").replace("Infinity", ".inf")
        )
    else:
        text = json.dumps(value, ensure_ascii=True)
        p.write_text(f"{key} = {text.replace('NaN', 'nan').replace('Infinity', 'inf')}\n")
    try:
        data = load_config_file(p)
    except ConfigError as exc:
        assert "\n" not in str(exc) and "c." in str(exc)
        return
    json.dumps(data, allow_nan=False).encode("utf-8")  # what was accepted is usable as option values
    assert all(abs(v) < 10**100 for v in _ints(data))


def _ints(v):
    if isinstance(v, bool):
        return
    if isinstance(v, int):
        yield v
    elif isinstance(v, dict):
        for c in v.values():
            yield from _ints(c)
    elif isinstance(v, list):
        for c in v:
            yield from _ints(c)


@SETTINGS
@given(raw=st.binary(max_size=200) | st.sampled_from([b"[" * 5000, b'{"a": 1' + b"0" * 5000 + b"}",
                                                      b'{"a": "\\udead"}', b'{"a": NaN}', b"\xef\xbb\xbf{}"]),
       nonfinite=st.booleans(), surrogates=st.booleans())  # fmt: skip
def test_parse_json_on_any_bytes(raw, nonfinite, surrogates):
    from collapse_probe.core._files import parse_json

    try:
        value = parse_json(raw, "f.json", nonfinite=nonfinite, surrogates=surrogates)
    except ConfigError as exc:
        assert str(exc).startswith("f.json: ") and "\n" not in str(exc)
        return
    json.dumps(value, allow_nan=nonfinite)
