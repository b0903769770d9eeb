"""Spend recorded in a run directory always sits beside the configuration it belongs to."""

from __future__ import annotations

import json

from collapse_probe.cli import main
from collapse_probe.models._usage import LEDGER, start_run_usage
from collapse_probe.rollout._rundir import RunDir

POLICY = {"responses": [{"text": "Please donate.", "p": 1.0}]}
DONOR = {"responses": [{"text": "Sure [DONATE $1]", "p": 1.0}]}


def _killed_before_first_unit(out, spec: str) -> None:
    """A run that spent on ``spec`` and died before its first record or result."""
    run = RunDir(out)
    run.create({"policy": spec, "sim": spec, "tasks": 3}, kind="play", fingerprints={spec: "abc"})
    usage = start_run_usage(out)
    LEDGER.record(spec, model=spec, input_tokens=10, output_tokens=5)
    usage.save()
    LEDGER.run = None
    run.release()


def _play(tmp_path, out: str) -> int:
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    (tmp_path / "donor.json").write_text(json.dumps(DONOR))
    return main(["play", "--policy", f"scripted:{tmp_path / 'policy.json'}", "--sim",
                 f"scripted:{tmp_path / 'donor.json'}", "--tasks", "1", "--rollouts", "1", "--max-turns", "1",
                 "--out", out, "--no-progress"])  # fmt: skip


def test_spend_of_a_killed_run_is_never_inherited_by_another_configuration(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    out = tmp_path / "D"
    _killed_before_first_unit(out, "local/smollm2-135m")
    assert (out / "usage.json").is_file() and (out / "config.json").is_file()
    assert _play(tmp_path, str(out)) == 2
    err = capsys.readouterr().err
    assert "different configuration" in err and len(err.strip().splitlines()) == 1, err
    assert not (out / "results.json").exists()
    assert "local/smollm2-135m" in json.loads((out / "usage.json").read_text())["usage"]  # kept, not overwritten


def test_spend_without_a_configuration_is_refused_not_adopted(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    out = tmp_path / "D"
    out.mkdir()
    orphan = {"usage": {"local/smollm2-135m": {"requests": 3, "input_tokens": 0, "output_tokens": 9, "cost_usd": 0}}}
    (out / "usage.json").write_text(json.dumps(orphan))
    assert _play(tmp_path, str(out)) == 2
    assert "no config.json" in capsys.readouterr().err
    assert json.loads((out / "usage.json").read_text()) == orphan


def test_same_configuration_resumes_and_keeps_its_spend(tmp_path, monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    assert _play(tmp_path, str(tmp_path / "D")) == 0
    usage = json.loads((tmp_path / "D" / "results.json").read_text())["usage"]
    assert all(k.startswith("scripted:") for k in usage)
