"""Run directories: never overwritten, locked against a second writer, config written only with data."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.rollout import RunDir, iter_jsonl
from collapse_probe.rollout._rundir import LOCK_FILE, check_out_path


def test_config_is_written_with_the_first_record_only(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.create({"a": 1}, kind="play")
    assert not (tmp_path / "run" / "config.json").exists()  # a run that fails now blocks nothing
    rd.append_jsonl("conversations.jsonl", {"key": "k"})
    assert json.loads((tmp_path / "run" / "config.json").read_text())["kind"] == "play"
    rd.release()
    assert not (tmp_path / "run" / LOCK_FILE).exists()


def test_other_kind_other_config_corrupt_config_are_refused(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.create({"a": 1}, kind="crossplay", fingerprints={"m": "sha256:1"})
    rd.write_results({"x": 1})
    rd.release()
    with pytest.raises(ConfigError, match="holds a crossplay run, not an audit run"):
        RunDir(tmp_path / "run").create({"a": 1}, kind="audit")
    with pytest.raises(ConfigError, match="different configuration"):
        RunDir(tmp_path / "run").create({"a": 2}, kind="crossplay", fingerprints={"m": "sha256:1"})
    with pytest.raises(ConfigError, match="model changed since this run started: m"):
        RunDir(tmp_path / "run").create({"a": 1}, kind="crossplay", fingerprints={"m": "sha256:2"})
    (tmp_path / "run" / "config.json").write_bytes(b"\xff\xfe{")
    with pytest.raises(ConfigError, match="unreadable"):
        RunDir(tmp_path / "run").create({"a": 1}, kind="crossplay")
    (tmp_path / "run" / "config.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="expected a JSON object"):
        RunDir(tmp_path / "run").create({"a": 1}, kind="crossplay")
    assert json.loads((tmp_path / "run" / "results.json").read_text()) == {"x": 1}  # never overwritten


def test_out_that_is_a_file_or_under_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("data")
    with pytest.raises(ConfigError, match="is not a directory"):
        check_out_path(f)
    with pytest.raises(ConfigError, match="is a file"):
        check_out_path(f / "run")
    assert f.read_text() == "data"


def test_fresh_keeps_the_old_run(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.create({"a": 1}, kind="play")
    rd.append_jsonl("conversations.jsonl", {"key": "k"})
    rd.release()
    rd2 = RunDir(tmp_path / "run")
    rd2.create({"a": 2}, kind="play", fresh=True)
    prev = list((tmp_path / "run" / ".previous").iterdir())
    assert len(prev) == 1 and (prev[0] / "conversations.jsonl").exists()
    assert not (tmp_path / "run" / "conversations.jsonl").exists()


def test_a_second_process_is_refused_and_a_stale_lock_is_taken_over(tmp_path):
    out = tmp_path / "run"
    code = (
        "import sys, time; from collapse_probe.rollout import RunDir; "
        f"RunDir({str(out)!r}).create({{}}, kind='play'); print('locked', flush=True); time.sleep(30)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError, match=rf"another collapse-probe process \(pid {proc.pid}\)"):
            RunDir(out).create({}, kind="play")
    finally:
        proc.kill()  # killed: its lock is stale now
        proc.wait()
    rd = RunDir(out)
    rd.create({}, kind="play")
    assert (out / LOCK_FILE).read_text().split()[0] == str(os.getpid())
    rd.release()


def test_jsonl_bad_lines_are_named(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"a": 1}\n[1, 2]\n{"b": 2}\n')
    with pytest.raises(ConfigError, match="line 2: expected a JSON object"):
        list(iter_jsonl(p))
    p.write_bytes(b'{"a": 1}\n\xff\xfe\n{"b": 2}\n')
    with pytest.raises(ConfigError, match="line 2 is not UTF-8"):
        list(iter_jsonl(p))
    p.write_bytes(b'{"a": 1}\n{"b": 2')  # a torn last line from a kill
    assert list(iter_jsonl(p)) == [{"a": 1}]


@pytest.mark.parametrize("stale", [False, True])
def test_simultaneous_lock_acquisition_never_has_two_holders(tmp_path, stale):
    sys.path.insert(0, os.path.dirname(__file__))
    from _lock_trials import trial

    for _ in range(10):  # the reliability tier runs 100 trials of each (tests/reliability/test_run_lock.py)
        holders, overlaps = trial(tmp_path, stale=stale)
        assert holders >= 1 and overlaps == 0


def test_lock_file_of_the_wrong_type_is_refused_not_followed(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    outside = tmp_path / "outside"
    outside.write_text("keep\n")
    (out / LOCK_FILE).symlink_to(outside)
    with pytest.raises(ConfigError, match=r"\.lock is a symbolic link"):
        RunDir(out).create({}, kind="play")
    assert outside.read_text() == "keep\n"
    (out / LOCK_FILE).unlink()
    os.mkfifo(out / LOCK_FILE)
    with pytest.raises(ConfigError, match=r"\.lock is a FIFO"):
        RunDir(out).create({}, kind="play")


def test_fresh_moves_only_a_runs_own_files(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "src").mkdir()
    (proj / "package.json").write_text("{}")
    with pytest.raises(
        ConfigError, match=r"does not hold a collapse-probe run \(it holds \.git/, package\.json, src/\)"
    ):
        RunDir(proj).create({"a": 1}, kind="play", fresh=True)
    assert sorted(os.listdir(proj)) == [".git", "package.json", "src"]  # nothing moved
    run = tmp_path / "run"
    rd = RunDir(run)
    rd.create({"a": 1}, kind="play")
    rd.append_jsonl("conversations.jsonl", {"key": "k"})
    rd.release()
    (run / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match=r"holds files no run writes \(notes\.txt\)"):
        RunDir(run).create({"a": 2}, kind="play", fresh=True)
    assert (run / "notes.txt").read_text() == "mine" and (run / "conversations.jsonl").exists()
    (run / "notes.txt").unlink()
    RunDir(run).create({"a": 2}, kind="play", fresh=True)  # a run's own files only: moved aside
    assert [p.name for p in (run / ".previous").iterdir()] and not (run / "conversations.jsonl").exists()


@pytest.mark.parametrize("out", ["", "   "])
def test_empty_out_is_refused(out):
    with pytest.raises(ConfigError, match="empty path"):
        RunDir(out)


def test_records_are_never_appended_through_a_link(tmp_path):
    run = tmp_path / "run"
    rd = RunDir(run)
    rd.create({"a": 1}, kind="play")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("")
    (run / "conversations.jsonl").symlink_to(outside)
    with pytest.raises(ConfigError, match="symbolic link"):
        rd.append_jsonl("conversations.jsonl", {"key": "k"})
    assert outside.read_text() == ""
    rd.release()
    with pytest.raises(ConfigError, match="conversations.jsonl is a symbolic link"):
        RunDir(run).create({"a": 1}, kind="play")


def test_a_record_that_cannot_be_written_leaves_no_empty_file(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.create({"a": 1}, kind="play")
    rd.append_jsonl("conversations.jsonl", {"text": "lone \ud800 surrogate"})  # written as its JSON escape
    assert list(iter_jsonl(tmp_path / "run" / "conversations.jsonl")) == [{"text": "lone \ud800 surrogate"}]
    rd.release()


@pytest.mark.parametrize("content", ["99999999999999999999999 ?", "0 ?", "-1 ?", "-99999999999999999999 x"])
def test_a_lock_file_naming_no_process_is_free(tmp_path, content):
    """A ``.lock`` whose pid no process can have (beyond the C range, 0, negative: process groups) is
    free, never an exception: the dashboard reads such a run's status and a run may take the lock."""
    from collapse_probe.core._proc import pid_alive
    from collapse_probe.rollout._rundir import LOCK_FILE, lock_held

    assert pid_alive(os.getpid()) and not pid_alive(2**70) and not pid_alive(0) and not pid_alive(-1)
    (tmp_path / LOCK_FILE).write_text(content)
    assert lock_held(tmp_path) is False


def test_fresh_moves_the_tensorboard_folder_log_to_left_in_the_run(tmp_path):
    run = tmp_path / "run"
    rd = RunDir(run)
    rd.create({"a": 1}, kind="audit")
    rd.append_jsonl("samples.jsonl", {"state_id": "s"})
    rd.release()
    (run / "tensorboard").mkdir()  # what --log-to tensorboard writes by default
    (run / "tensorboard" / "events.out.tfevents.1").write_bytes(b"x")
    RunDir(run).create({"a": 2}, kind="audit", fresh=True)
    (prev,) = (run / ".previous").iterdir()
    assert (prev / "tensorboard" / "events.out.tfevents.1").exists() and not (run / "tensorboard").exists()


def test_a_spec_with_url_credentials_resumes_against_its_redacted_config(tmp_path):
    spec = "openai-compatible/m@http://u:pw-SECRET-1234@h:1/v1?api_key=qk-SECRET-5678"
    rd = RunDir(tmp_path / "run")
    rd.create({"sim": spec}, kind="audit")
    rd.append_jsonl("samples.jsonl", {"state_id": "s", "simulator": spec})
    rd.release()
    text = (tmp_path / "run" / "config.json").read_text() + (tmp_path / "run" / "samples.jsonl").read_text()
    assert "SECRET" not in text and "http://***@h:1/v1?api_key=***" in text
    RunDir(tmp_path / "run").create({"sim": spec}, kind="audit")  # the same run: resumes
