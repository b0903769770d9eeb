"""The gate's exit codes tell a CI job a mistyped gate (2: usage error) from weak evidence (3: could not
judge): no threshold, a run directory that does not exist or holds no cross-play run, and a policy the
run does not have are usage errors in one line; an unfinished run and an undecided interval are 3."""

from __future__ import annotations

import json

import pytest

from collapse_probe.cli import main
from tests.conftest import GATE_DEMO_POLICY, run_cli


def _usage_error(rc: int, out: str, err: str, *needles: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("collapse-probe gate: error: "), err
    assert all(n in lines[0] for n in needles), err
    assert out == ""  # no verdict is printed for a gate that was not asked properly


def test_no_threshold_is_a_usage_error_naming_the_flags(gate_demo_run, capsys):
    rc, out, err = run_cli(["gate", str(gate_demo_run), "--policy", GATE_DEMO_POLICY], capsys)
    _usage_error(rc, out, err, "no threshold", "--min-transfer", "--min-transfer-each", "--max-drop")


def test_a_threshold_from_a_config_file_counts(gate_demo_run, tmp_path, capsys):
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("min-transfer: 0.5\n")
    assert run_cli(["gate", str(gate_demo_run), "--policy", GATE_DEMO_POLICY, "--config", str(cfg)], capsys)[0] == 0


def test_a_mistyped_run_directory_is_a_usage_error(gate_demo_run, capsys):
    typo = str(gate_demo_run) + "x"
    rc, out, err = run_cli(["gate", typo, "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5"], capsys)
    _usage_error(rc, out, err, typo, "does not exist")


def test_a_folder_without_a_cross_play_run_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    rc, out, err = run_cli(["gate", str(tmp_path), "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5"], capsys)
    _usage_error(rc, out, err, str(tmp_path), "no collapse-probe run")
    audit = tmp_path / "audit"
    audit.mkdir()
    (audit / "results.json").write_text(json.dumps({"schema": "collapse-probe/audit/v1"}))
    rc, out, err = run_cli(["gate", str(audit), "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5"], capsys)
    _usage_error(rc, out, err, "collapse-probe/audit/v1", "not a cross-play")


@pytest.mark.parametrize("flags", [["--policy", "scripted:nope"], ["--baseline-policy", "scripted:nope"]])
def test_a_policy_the_run_does_not_have_is_a_usage_error(flags, gate_demo_run, capsys):
    argv = ["gate", str(gate_demo_run), "--min-transfer", "0.5", *flags]
    if flags[0] == "--baseline-policy":
        argv += ["--policy", GATE_DEMO_POLICY, "--max-drop", "0.1"]
    rc, out, err = run_cli(argv, capsys)
    _usage_error(rc, out, err, flags[0], "scripted:nope", GATE_DEMO_POLICY)  # the run's policies are listed


def test_weak_evidence_and_an_unfinished_run_are_exit_3(gate_demo_run, tmp_path, capsys):
    rc, out, err = run_cli(["gate", str(gate_demo_run), "--policy", GATE_DEMO_POLICY, "--min-transfer", "1.4"], capsys)
    assert rc == 3 and "could not judge" in out and "could not judge: transfer" in err, err
    unfinished = tmp_path / "xp"
    unfinished.mkdir()
    (unfinished / "config.json").write_text(json.dumps({"kind": "crossplay"}))
    rc, out, err = run_cli(["gate", str(unfinished), "--policy", GATE_DEMO_POLICY, "--min-transfer", "0.5"], capsys)
    assert rc == 3 and "could not judge: results" in err and "no cross-play results" in err, err


def test_help_documents_every_exit_code(capsys):
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "0 pass, 1 fail, 2 usage error" in text and "3 could not judge" in text
