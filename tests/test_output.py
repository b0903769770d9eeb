"""The writers of files outside a run directory (card, export, the monitor's spool) and strict JSON:
nothing existing is replaced, nothing is written through a link or into a FIFO or a run's folder,
concurrent writers onto one name give one winner, and NaN/Infinity never reach a JSON file."""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import pytest

from collapse_probe.core._jsonl import dumps_line, write_json_atomic
from collapse_probe.core._output import (
    OutputRefused,
    append_line,
    dumps_json,
    null_nonfinite,
    write_output_dir,
    write_outputs,
)
from collapse_probe.errors import ConfigError


def _tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = "link -> " + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes()
        elif p.is_fifo():
            out[rel] = "fifo"
        else:
            out[rel] = "dir"
    return out


def _run_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"kind": "audit"}))
    (path / "results.json").write_text(json.dumps({"schema": "collapse-probe/audit/v1"}))
    return path


def hostile(tmp: Path) -> dict[str, Path]:
    """Output paths that must each be refused, with what is there (nothing may change)."""
    (tmp / "README.md").write_text("the user's readme")
    (tmp / "target.txt").write_text("a file a link points at")
    (tmp / "link.md").symlink_to(tmp / "target.txt")
    (tmp / "dangling.md").symlink_to(tmp / "nowhere.md")
    os.mkfifo(tmp / "fifo.md")
    (tmp / "adir.md").mkdir()
    (tmp / "regular").write_text("x")
    run = _run_dir(tmp / "run")
    return {
        "existing file": tmp / "README.md",
        "symlink": tmp / "link.md",
        "dangling symlink": tmp / "dangling.md",
        "fifo": tmp / "fifo.md",
        "directory": tmp / "adir.md",
        "under a regular file": tmp / "regular" / "card.md",
        "in /proc": Path("/proc/self/card.md"),
        "in /sys": Path("/sys/card.md"),
        "name over 255 bytes": tmp / ("é" * 130 + ".md"),
        "run's own file": run / "results.json",
        "inside a run": run / "sub" / "x.md",
    }


@pytest.mark.parametrize(
    "case",
    ["existing file", "symlink", "dangling symlink", "fifo", "directory", "under a regular file", "in /proc",
     "in /sys", "name over 255 bytes", "run's own file", "inside a run"],
)  # fmt: skip
def test_a_hostile_output_path_is_one_line_and_nothing_changes(tmp_path, case):
    paths = hostile(tmp_path)
    before = _tree(tmp_path)
    with pytest.raises(OutputRefused) as err:
        write_outputs([(paths[case], "new content")])
    msg = str(err.value)
    assert "\n" not in msg and ("--out" in msg)
    assert _tree(tmp_path) == before


def test_a_set_is_refused_whole_when_its_second_name_exists(tmp_path):
    (tmp_path / "package.json").write_text('{"name": "users-package"}')
    before = _tree(tmp_path)
    with pytest.raises(OutputRefused, match="package.json"):
        write_outputs([(tmp_path / "package.md", "# card"), (tmp_path / "package.json", "{}")])
    assert _tree(tmp_path) == before  # package.md, written first, was taken back


def test_concurrent_writers_onto_one_name_give_one_winner_and_clear_refusals(tmp_path):
    out = tmp_path / "x.eval"
    results: list[str] = []
    barrier = threading.Barrier(6)

    def one(i: int) -> None:
        barrier.wait()
        try:
            write_outputs([(out, f"writer {i}"), (tmp_path / "x-verbalized.eval", f"writer {i}")])
            results.append(f"won {i}")
        except OutputRefused as exc:
            results.append(str(exc))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [r for r in results if r.startswith("won")]
    assert len(won) == 1, results
    i = won[0].split()[1]
    assert out.read_text() == f"writer {i}" and (tmp_path / "x-verbalized.eval").read_text() == f"writer {i}"
    assert all("exists" in r for r in results if not r.startswith("won"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x-verbalized.eval", "x.eval"]  # no temp files left


def test_a_directory_output_goes_to_a_free_name_or_an_empty_folder_only(tmp_path):
    def fill(d: Path) -> None:
        (d / "a.parquet").write_text("a")

    assert write_output_dir(tmp_path / "new", fill) == tmp_path / "new"
    (tmp_path / "empty").mkdir()
    write_output_dir(tmp_path / "empty", fill)
    assert (tmp_path / "empty" / "a.parquet").read_text() == "a"
    with pytest.raises(OutputRefused, match="not empty"):
        write_output_dir(tmp_path / "new", fill)
    run = _run_dir(tmp_path / "run")
    with pytest.raises(OutputRefused, match="inside the run directory"):
        write_output_dir(run, fill)
    with pytest.raises(OutputRefused, match="inside the run directory"):
        write_output_dir(run / "tables", fill)


def test_the_spool_is_never_appended_through_a_link_or_into_a_file_posing_as_its_folder(tmp_path):
    (tmp_path / "target").write_text("keep")
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "w.jsonl").symlink_to(tmp_path / "target")
    with pytest.raises(OutputRefused, match="symbolic link"):
        append_line(spool / "w.jsonl", b"{}\n")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OutputRefused, match="not a directory"):
        append_line(tmp_path / "afile" / "w.jsonl", b"{}\n")
    os.mkfifo(spool / "f.jsonl")
    with pytest.raises(OutputRefused):
        append_line(spool / "f.jsonl", b"{}\n")
    assert (tmp_path / "target").read_text() == "keep"
    append_line(spool / "ok.jsonl", b"{}\n")
    append_line(spool / "ok.jsonl", b"{}\n")
    assert (spool / "ok.jsonl").read_bytes() == b"{}\n{}\n"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_strict_json_refuses_non_finite_numbers_naming_the_field(tmp_path, bad):
    doc = {"summary": {"cells": [{"mean_reward": 1.0}, {"mean_reward": bad}]}}
    with pytest.raises(ConfigError, match=r"results.json: summary.cells\[1\].mean_reward is"):
        write_json_atomic(tmp_path / "results.json", doc)
    assert not list(tmp_path.iterdir())  # nothing written, no temp file
    with pytest.raises(ConfigError, match="mean_reward"):
        dumps_line(doc, "samples.jsonl")


def test_null_with_a_reason_for_rows_that_are_recorded_as_given():
    row, reasons = null_nonfinite({"step": 1, "train_reward": math.nan, "x": [1.0, math.inf]})
    assert row == {"step": 1, "train_reward": None, "x": [1.0, None]}
    assert set(reasons) == {"train_reward", "x[1]"}
    json.loads(dumps_json(row), parse_constant=lambda c: pytest.fail(c))


def test_reward_means_near_the_float_limit_do_not_overflow():
    from collapse_probe.metrics.rewards import Outcome, cell_summary

    recs = [Outcome(t, v) for v, t in ((1e308, "a"), (1e308, "b"), (-1e308, "c"))]
    cell = cell_summary(recs, "p", "s", ["a", "b", "c"])
    assert math.isclose(cell["mean_reward"], 1e308 / 3)
    assert cell["ci95"] is None and "overflow" in cell["ci95_note"]
    dumps_json(cell)  # strict JSON: would raise on Infinity
