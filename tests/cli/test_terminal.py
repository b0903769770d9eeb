"""What the terminal shows: one NO RESULT line that says why, no preamble before the work, columns
aligned by display width (the combining mark of ``ε̂`` takes no column), "did you mean" for commands."""

from __future__ import annotations

import json
import re

import pytest

from collapse_probe.cli import main
from collapse_probe.report._layout import display_width, pad

DOWN = "openai-compatible/m@http://127.0.0.1:9/v1"
FAST = ["-M", "sim.max_retries=0", "--no-progress"]
POLICY = {"responses": [{"text": "Please donate.", "p": 1.0}]}


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    return tmp_path


def _value_columns(table: str) -> set[int]:
    """The display column where each row's value starts (labels end at the first run of 2+ spaces)."""
    cols = set()
    for line in table.splitlines():
        m = re.match(r"^(\s*\S.*?)\s{2,}\S", line)
        if m:
            cols.add(display_width(line[: m.end() - 1]))
    return cols


def test_display_width_counts_columns_not_code_points():
    assert len("ε̂") == 2 and display_width("ε̂") == 1
    assert display_width("表") == 2
    assert display_width(pad("ε̂ (mean)", 12)) == 12 and display_width(pad("x", 4, right=True)) == 4


def test_an_audit_whose_server_is_down_says_why_in_one_line(here, capsys):
    rc = main(["audit", "--sim", DOWN, "--states", "2", "--samples", "3", "--partition", "exact", "--out", "a", *FAST])
    out = capsys.readouterr().out
    assert rc == 1
    lines = out.strip().splitlines()
    # no preamble: the table is the first thing printed, the bound's assumptions are rows of it
    assert not any(line.startswith("gradient-bias bound uses") for line in lines)
    assert any(line.startswith("threshold ε*") for line in lines)
    (no_result,) = [line for line in lines if line.startswith("NO RESULT")]
    assert re.search(r"\(4 infrastructure failures; the first: .*cannot connect to http://127\.0\.0\.1:9/v1", no_result)
    assert "rerun the same command" in no_result
    table = out.strip().split("\n\n")[0]
    assert "ε̂" in table and len(_value_columns(table)) == 1, table  # every value starts in one column


def test_the_crossplay_matrix_is_aligned_with_long_specs(here, capsys):
    sims = [f"openai-compatible/{'a-very-long-model-name-' * 3}{k}@http://127.0.0.1:9/v1" for k in range(2)]
    rc = main(["crossplay", "--policies", "scripted:policy.json", "--sims", ",".join(sims), "--tasks", "1", "--rollouts", "1",
               "--max-turns", "1", "--out", "cp", *FAST])  # fmt: skip
    cap = capsys.readouterr()
    assert rc == 1
    lines = cap.out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("policy"))
    matrix = lines[start : start + 2]  # the header and the one policy's row
    assert len({display_width(line) for line in matrix}) == 1, matrix
    assert max(map(display_width, matrix)) < 100  # short labels, not the 90-character specs
    assert all(s in cap.out for s in sims)  # the legend under the matrix maps each label to its spec
    (no_result,) = [line for line in cap.err.splitlines() if line.startswith("NO RESULT")]
    assert "2 infrastructure failures; the first: " in no_result and "cannot connect" in no_result


@pytest.mark.parametrize(("typo", "meant"), [("audti", "audit"), ("crosplay", "crossplay"), ("dashbord", "dashboard")])
def test_a_mistyped_command_suggests_the_nearest(typo, meant, capsys):
    assert main([typo, "--sim", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"did you mean {meant!r}" in err, err


def test_an_unknown_command_with_no_near_name_lists_the_commands(capsys):
    assert main(["zzzzzz"]) == 2
    err = capsys.readouterr().err.strip()
    assert "did you mean" not in err and "commands: " in err and "audit" in err
