"""Fuzzing ``card`` and ``export`` through the CLI: a results.json or a record with any field set to any
JSON value, and any ``--out`` shape, is exported/carded correctly or refused in one line naming the
file; never the "rerun with -v" backstop, never a file of the user's or the run's replaced."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from collapse_probe.cli import main  # noqa: E402

pytestmark = pytest.mark.reliability

SETTINGS = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzzruns")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        Path("sim.json").write_text(json.dumps({"responses": [
            {"text": "[DONATE $1]", "p": 0.4}, {"text": "No thanks.", "p": 0.3}, {"text": "Maybe [DONATE $2]", "p": 0.3}]}))  # fmt: skip
        Path("pol.json").write_text(json.dumps({"responses": [{"text": "Please donate.", "p": 1.0}]}))
        assert main(["audit", "--sim", "scripted:sim.json", "--states", "2", "--samples", "6", "--partition",
                     "exact", "--out", "audit", "--no-progress"]) == 0  # fmt: skip
        assert main(["crossplay", "--policies", "scripted:pol.json", "--sims", "scripted:sim.json", "--tasks", "2",
                     "--rollouts", "2", "--max-turns", "2", "--out", "xp", "--no-progress"]) == 0  # fmt: skip
    finally:
        os.chdir(cwd)
    return {"audit": d / "audit", "crossplay": d / "xp"}


def _paths(doc, at=()):
    yield at
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            yield from _paths(v, (*at, i))


def _set(doc, path, value):
    cur = doc
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value


def _digest(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def _check(code: int, err: str) -> None:
    assert "rerun with -v" not in err and "Traceback" not in err, err
    assert code in (0, 2), err
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err


@SETTINGS
@given(kind=st.sampled_from(["audit", "crossplay"]), pick=st.integers(0, 10**6), value=values)
def test_any_field_of_results_json_set_to_any_value(runs, capsys, kind, pick, value):
    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        shutil.copytree(runs[kind], run)
        doc = json.loads((run / "results.json").read_text())
        paths = [p for p in _paths(doc) if p]
        _set(doc, paths[pick % len(paths)], value)
        (run / "results.json").write_text(json.dumps(doc))
        before = _digest(run)
        for cmd in (
            ["card", str(run), "--out", f"{d}/c.md"],
            ["export", str(run), "--to", "parquet", "--out", f"{d}/t"],
        ):
            capsys.readouterr()
            code = main(cmd)
            _check(code, capsys.readouterr().err)
        assert _digest(run) == before


@SETTINGS
@given(kind=st.sampled_from(["audit", "crossplay"]), line=st.integers(0, 100), field=st.text(max_size=12),
       known=st.booleans(), value=values, drop=st.booleans())  # fmt: skip
def test_any_record_field_set_to_any_value_or_dropped(runs, capsys, kind, line, field, known, value, drop):
    pytest.importorskip("pyarrow")
    name = "samples.jsonl" if kind == "audit" else "conversations.jsonl"
    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        shutil.copytree(runs[kind], run)
        recs = [json.loads(x) for x in (run / name).read_text().splitlines() if x.strip()]
        rec = recs[line % len(recs)]
        key = sorted(rec)[sum(map(ord, field)) % len(rec)] if known else field
        if drop:
            rec.pop(key, None)
        else:
            rec[key] = value
        (run / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
        capsys.readouterr()
        code = main(["export", str(run), "--to", "parquet", "--out", f"{d}/t"])
        _check(code, capsys.readouterr().err)


segments = st.sampled_from(["README.md", "package.md", "card.md", "results.md", "config.md", "x" * 300 + ".md",
                            "f", "fifo.md", "link.md", "sub", "..", "card.json", "proc"])  # fmt: skip


@SETTINGS
@given(parts=st.lists(segments, min_size=1, max_size=3), inside_run=st.booleans())
def test_any_card_out_path(runs, capsys, parts, inside_run):
    with tempfile.TemporaryDirectory() as d:
        # three folders deep: an out path of up to three ".." segments stays inside the temporary folder
        # (written at the temporary folder's parent, a card would make every later run under it "inside a run")
        root = Path(d, "a", "b", "c")
        root.mkdir(parents=True)
        run = root / "run"
        shutil.copytree(runs["audit"], run)
        (root / "README.md").write_text("mine")
        (root / "package.json").write_text("{}")
        (root / "f").write_text("a file")
        os.mkfifo(root / "fifo.md")
        (root / "link.md").symlink_to(root / "README.md")
        (root / "card.json").mkdir()
        base = run if inside_run else root
        out = "/proc/self/card.md" if parts[0] == "proc" else str(base.joinpath(*[p for p in parts if p != "proc"]))
        if not out.endswith(".md"):
            out += "/card.md"
        before = _digest(root)
        capsys.readouterr()
        code = main(["card", str(run), "--out", out])
        _check(code, capsys.readouterr().err)
        after = _digest(root)
        assert {k: v for k, v in after.items() if k in before} == before  # nothing existing changed
        if code == 0:
            assert not inside_run or os.path.commonpath([os.path.abspath(out), str(run)]) != str(run)
