"""The dashboard against hostile and broken run directories, and its process handling."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fixtures  # noqa: E402

from collapse_probe.report import runs as rd  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "collapse_probe" / "dashboard" / "app.py"


def _app(root: Path, monkeypatch):
    st_testing = pytest.importorskip("streamlit.testing.v1")
    monkeypatch.setenv("COLLAPSE_PROBE_RUNS_DIR", str(root))
    at = st_testing.AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    return at


def _deep(n: int) -> str:
    return '{"schema": "collapse-probe/audit/v1", "x": ' + "[" * n + "]" * n + "}"


def test_deeply_nested_json_is_a_note_not_a_crash(tmp_path, monkeypatch):
    d = tmp_path / "deep"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"kind": "audit"}))
    (d / "results.json").write_text(_deep(100_000))  # past the parser's recursion limit
    (d / "samples.jsonl").write_text(_deep(500) + "\n" + json.dumps({"state_id": "s", "mode": "direct"}) + "\n")
    run = rd.load_run(d)
    assert run.results is None and any("nested" in p for p in run.problems)
    assert rd.peek_json(d / "samples.jsonl")[0] is None
    read = rd.read_jsonl(d / "samples.jsonl")
    assert len(read.records) == 1 and read.bad_lines == [1]
    (d / "results.json").write_text(_deep(500))  # parses, but deeper than any collapse-probe file
    assert rd.load_run(d).results is None
    for view in ("Runs", "Simulator", "Cross-play", "Training", "Compare"):
        at = _app(tmp_path, monkeypatch)
        at.sidebar.radio(key="view").set_value(view).run()
        assert not at.exception, [e.value for e in at.exception]


def test_symlinks_out_of_the_runs_dir_are_not_followed(tmp_path):
    secret = tmp_path / "outside" / "secret.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps({"schema": "collapse-probe/audit/v1", "api_key": "sk-leak"}))
    run_dir = tmp_path / "runs" / "evil"
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps({"kind": "audit"}))
    (run_dir / "results.json").symlink_to(secret)
    (run_dir / "samples.jsonl").symlink_to(secret)
    run = rd.load_run(run_dir, tmp_path / "runs")
    assert run.results is None
    assert rd.read_jsonl(run_dir / "samples.jsonl").records == []
    assert "sk-leak" not in repr(run)


def test_failed_runs_are_shown_as_failed(tmp_path, monkeypatch):
    xp = tmp_path / "xp"
    xp.mkdir()
    (xp / "config.json").write_text(json.dumps({"kind": "crossplay"}))
    cell = {"policy": "p", "simulator": "s", "n": 0, "mean_reward": None, "task_rewards": {}, "infra_failures": 4}
    (xp / "results.json").write_text(
        json.dumps(
            {
                "schema": "collapse-probe/crossplay/v1",
                "benchmark": "b",
                "policies": ["p"],
                "simulators": ["s"],
                "cells": [cell],
            }
        )  # fmt: skip
    )
    dead = tmp_path / "killed"
    dead.mkdir()
    (dead / "config.json").write_text(json.dumps({"kind": "audit"}))
    (dead / "samples.jsonl").write_text("")
    (dead / ".lock").write_text("999999999 0\n")  # its writer is gone
    runs = {r.name: r for r in rd.discover_runs(tmp_path)}
    assert runs["xp"].status == "failed" and runs["killed"].status == "failed"
    at = _app(tmp_path, monkeypatch)
    at.sidebar.radio(key="view").set_value("Simulator").run()
    assert not at.exception and any("failed" in e.value for e in at.error)


def test_compare_one_audit_twice(tmp_path, monkeypatch):
    fixtures.write_audit_run(tmp_path, "a1", "sim_mode", samples=20, states=2, partition="exact")
    fixtures.write_audit_run(tmp_path, "a2", "sim_div", samples=20, states=2, partition="exact")
    at = _app(tmp_path, monkeypatch)
    at.sidebar.radio(key="view").set_value("Compare").run()
    at.selectbox(key="cmp_1").set_value(at.selectbox(key="cmp_0").value).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("same run" in i.value for i in at.info)


def test_dashboard_forwards_sigterm_to_streamlit_and_waits(tmp_path):
    child_pid = tmp_path / "child.pid"
    code = (
        "import subprocess, sys; from collapse_probe.dashboard._serve import supervise; "
        "p = subprocess.Popen([sys.executable, '-c', "
        f"\"import os, time; open({str(child_pid)!r}, 'w').write(str(os.getpid())); time.sleep(60)\"]); "
        "sys.exit(supervise(p))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, "-c", code], env=env)
    for _ in range(200):
        if child_pid.exists() and child_pid.read_text():
            break
        time.sleep(0.05)
    pid = int(child_pid.read_text())
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=20) == 0
    with pytest.raises(ProcessLookupError):  # the child stopped with it, not orphaned and serving
        os.kill(pid, 0)


def _hostile_runs(tmp_path: Path) -> Path:
    """Run directories whose files are not regular files inside RUNS_DIR: FIFOs, links to a device and
    to a file outside, a directory where a file belongs, a file past the size cap."""
    root = tmp_path / "runs"
    outside = tmp_path / "outside-usage.json"
    outside.write_text(json.dumps({"usage": {"secret-model": {"requests": 7, "input_tokens": 1, "output_tokens": 1,
                                                              "cost_usd": 123.0}}}))  # fmt: skip
    for name in ("config.json", "results.json", "samples.jsonl", "usage.json", ".lock", "conversations.jsonl"):
        d = root / f"fifo-{name.strip('.')}"
        d.mkdir(parents=True)
        if name != "config.json":
            (d / "config.json").write_text(json.dumps({"kind": "audit"}))
        os.mkfifo(d / name)
    zero = root / "usage-dev-zero"
    zero.mkdir()
    (zero / "config.json").write_text(json.dumps({"kind": "crossplay"}))
    (zero / "usage.json").symlink_to("/dev/zero")
    (zero / "conversations.jsonl").symlink_to("/dev/zero")
    out = root / "usage-outside"
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"kind": "crossplay"}))
    (out / "usage.json").symlink_to(outside)
    dirs = root / "directories"
    (dirs / "results.json").mkdir(parents=True)
    (dirs / "samples.jsonl").mkdir()
    (dirs / "config.json").write_text(json.dumps({"kind": "audit"}))
    return root


def test_fifos_devices_and_links_are_problems_not_hangs(tmp_path, monkeypatch):
    root = _hostile_runs(tmp_path)
    import threading

    done: list[object] = []

    def read_all() -> None:
        runs = rd.discover_runs(root)
        for r in runs:
            _ = r.status, r.label
            for name in ("samples.jsonl", "conversations.jsonl", "metrics.jsonl"):
                r.jsonl(name)
            rd.read_usage(r)
        done.append(runs)

    t = threading.Thread(target=read_all, daemon=True)
    t.start()
    t.join(timeout=30)
    assert done, "reading the run directories blocked (a FIFO was opened) or ran away (/dev/zero was read)"
    runs = {r.name: r for r in done[0]}
    assert any("FIFO" in p for p in runs["fifo-results.json"].problems)
    assert any("symbolic link" in p for p in runs["usage-dev-zero"].problems)
    usage, _ = rd.read_usage(runs["usage-outside"])
    assert usage is None  # the file outside RUNS_DIR is never read, let alone shown
    assert any("usage.json" in p and "symbolic link" in p for p in runs["usage-outside"].problems)
    read = rd.read_jsonl(runs["usage-dev-zero"].path / "conversations.jsonl")
    assert read.records == [] and read.problem is not None
    for view in ("Runs", "Simulator", "Cross-play", "Training", "Compare"):
        at = _app(root, monkeypatch)
        at.sidebar.radio(key="view").set_value(view).run()
        assert not at.exception, [e.value for e in at.exception]
        shown = " ".join(str(getattr(e, "value", "")) for e in at.dataframe) + " ".join(w.value for w in at.warning)
        assert "secret-model" not in shown and "123" not in shown


def test_a_file_past_the_size_cap_is_not_read(tmp_path, monkeypatch):
    d = tmp_path / "big"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"kind": "audit"}))
    monkeypatch.setattr(rd, "MAX_JSONL_BYTES", 1000)
    (d / "samples.jsonl").write_text((json.dumps({"state_id": "s", "mode": "direct"}) + "\n") * 100)
    read = rd.read_jsonl(d / "samples.jsonl")
    assert read.records == [] and "allowed" in (read.problem or "")
