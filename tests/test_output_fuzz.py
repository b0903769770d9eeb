"""Property-based tests of the families the writers and the secret scrubbing must hold for (fast: the
default tier): any output path is written new or refused in one line with nothing changed; any key
shape is scrubbed in every form a transport or a file writes it; any JSON value is written strictly
or refused; any ``content`` or token count a server sends is read or refused as a call failure."""

from __future__ import annotations

import json
import math
import os
import string
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from collapse_probe.core._output import OutputRefused, dumps_json, write_outputs  # noqa: E402
from collapse_probe.core._secrets import forget_secrets, redact_spec, register_secret, scrub  # noqa: E402
from collapse_probe.errors import ConfigError  # noqa: E402

SETTINGS = settings(max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))

KINDS = ("free", "file", "symlink", "dangling", "fifo", "dir", "under_file", "run_file", "long", "dot_dirs")
names = st.text(string.ascii_letters + string.digits + "._- é", min_size=1, max_size=20).filter(
    lambda s: s not in (".", "..") and "/" not in s
)


def _state(root: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        out[str(p)] = (
            ("link", os.readlink(p)) if p.is_symlink() else p.read_bytes() if p.is_file() else p.is_fifo() or "dir"
        )
    return out


@SETTINGS
@given(kind=st.sampled_from(KINDS), name=names, twin=st.booleans(), twin_kind=st.sampled_from(KINDS))
def test_any_output_path_is_written_new_or_refused_with_nothing_changed(kind, name, twin, twin_kind):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        run = root / "run"
        run.mkdir()
        (run / "config.json").write_text('{"kind": "audit"}')

        def make(k: str, n: str) -> Path:
            p = root / n
            if k == "file":
                p.write_text("user data")
            elif k == "symlink":
                (root / f"target-{n}").write_text("target")
                p.symlink_to(root / f"target-{n}")
            elif k == "dangling":
                p.symlink_to(root / f"missing-{n}")
            elif k == "fifo":
                os.mkfifo(p)
            elif k == "dir":
                p.mkdir()
            elif k == "under_file":
                p.write_text("a file")
                return p / "out.md"
            elif k == "run_file":
                return run / n
            elif k == "long":
                return root / (n * 300)[:300]
            elif k == "dot_dirs":
                return root / "a" / ".." / "b" / n
            return p

        first = make(kind, name)
        files = [(first, "primary")]
        if twin:
            second = make(twin_kind, name + "-twin")
            if os.path.abspath(second) != os.path.abspath(first):
                files.append((second, "twin"))
        before = _state(root)
        try:
            written = write_outputs(files)
        except OutputRefused as exc:
            assert "\n" not in str(exc)
            assert _state(root) == before
            return
        assert [p.read_text() for p in written] == [c for _, c in files]
        for p in written:  # only new names were written, each a regular file of its own
            assert str(p) not in before and p.is_file() and not p.is_symlink()
        assert {k: v for k, v in _state(root).items() if k in before} == before


key_chars = st.characters(min_codepoint=1, max_codepoint=0x2FFF, blacklist_categories=("Cs",))


@SETTINGS
@given(key=st.text(key_chars, min_size=8, max_size=40), where=st.integers(0, 5))
def test_any_configured_key_is_scrubbed_in_every_written_form(key, where):
    forget_secrets()
    key = "K9" + key + "Z7"  # a recognisable core
    register_secret(key)
    forms = [key, f"Bearer {key}", json.dumps(key), repr(key), repr(key.encode("utf-8", "surrogatepass"))]
    text = f"error {where}: " + " | ".join(forms)
    out = scrub(text)
    for line in key.splitlines():
        if len(line.strip()) >= 6:
            assert line not in out, (key, out)
    assert key not in out and json.dumps(key)[1:-1] not in out


url_secret = st.text(string.ascii_letters + string.digits + "-_.~%!$*", min_size=6, max_size=24)


@SETTINGS
@given(
    user=url_secret, password=url_secret, qname=st.sampled_from(["api_key", "token", "key", "sig", "access_token"]),
    qval=url_secret, other=st.text(string.ascii_lowercase, min_size=1, max_size=5),
)  # fmt: skip
def test_any_credentials_in_a_spec_url_are_redacted(user, password, qname, qval, other):
    forget_secrets()
    user, password, qval = "U" + user, "P" + password, "Q" + qval  # never a piece of the rest of the spec
    spec = f"openai-compatible/m@http://{user}:{password}@host:8000/v1?{qname}={qval}&dep={other}"
    shown = redact_spec(spec)
    for secret in (password, qval):
        assert secret not in shown
    assert f"dep={other}" in shown and "host:8000" in shown
    assert password not in scrub(f"connecting to http://{user}:{password}@host/ failed")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=10),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
    max_leaves=25,
)


def _has_nonfinite(v: object) -> bool:
    if isinstance(v, float):
        return not math.isfinite(v)
    if isinstance(v, dict):
        return any(_has_nonfinite(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_nonfinite(x) for x in v)
    return False


@SETTINGS
@given(value=json_values)
def test_any_json_value_is_written_strictly_or_refused_naming_the_field(value):
    try:
        text = dumps_json(value, where="results.json")
    except ConfigError as exc:
        assert _has_nonfinite(value) and str(exc).startswith("results.json: ") and "\n" not in str(exc)
        return
    assert not _has_nonfinite(value)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} written"))


contents = st.recursive(
    st.none() | st.integers() | st.text(max_size=8) | st.booleans(),
    lambda c: (
        st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["type", "text", "refusal", "x"]), c, max_size=3)
    ),
    max_leaves=8,
)


@SETTINGS
@given(
    content=contents, tokens=st.one_of(st.none(), st.integers(-10, 10), st.floats(allow_nan=True), st.text(max_size=3))
)
def test_any_content_or_token_count_is_read_or_a_call_failure(content, tokens):
    from collapse_probe.models._http import CallFailure
    from collapse_probe.models.openai import make_openai_compatible_model

    model = make_openai_compatible_model("openai-compatible/m", "m@http://127.0.0.1:9/v1")
    data = {"model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 1}}  # fmt: skip
    try:
        comps = model.parse_answer(data, transcript=False)
    except CallFailure as exc:
        assert "\n" not in str(exc)
        return
    assert all(isinstance(c.text, str) for c in comps)
    assert (
        tokens is None
        or (isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0)
        or (isinstance(tokens, float) and tokens.is_integer() and tokens >= 0)
    )


def test_a_field_name_with_a_line_break_is_quoted_in_the_one_line_error():
    with pytest.raises(ConfigError) as exc:
        dumps_json({"cells": {"a\nb": float("inf")}}, where="results.json")
    assert str(exc.value).startswith('results.json: cells["a\\nb"] is inf') and "\n" not in str(exc.value)
