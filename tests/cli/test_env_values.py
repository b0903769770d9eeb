"""``$COLLAPSE_PROBE_*`` values are validated alike, and errors name the variable they came from."""

from __future__ import annotations

import pytest

from collapse_probe.cli import build_parser, main

SIM = ["audit", "--sim", "scripted:collapse_probe/data/scripted/p4g_donor_diverse.json", "--states", "1",
       "--partition", "exact", "--samples", "2"]  # fmt: skip


@pytest.fixture(autouse=True)
def _repo(monkeypatch, tmp_path):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("COLLAPSE_PROBE_OUT", str(tmp_path / "run"))
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))


@pytest.mark.parametrize(
    ("var", "value", "needle"),
    [("COLLAPSE_PROBE_NO_PROGRESS", "banana", "$COLLAPSE_PROBE_NO_PROGRESS: expected 1/0, true/false"),
     ("COLLAPSE_PROBE_LOG_LEVEL", "loud", "$COLLAPSE_PROBE_LOG_LEVEL: expected one of debug, info"),
     ("COLLAPSE_PROBE_NO_CACHE", "maybe", "$COLLAPSE_PROBE_NO_CACHE: expected 1/0, true/false")],
)  # fmt: skip
def test_bad_switch_and_choice_values_are_refused_naming_the_variable(monkeypatch, capsys, var, value, needle):
    monkeypatch.setenv(var, value)
    assert main(SIM) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err, err


def test_a_range_error_of_an_env_value_names_the_variable(monkeypatch, capsys):
    monkeypatch.setenv("COLLAPSE_PROBE_SAMPLES", "0")
    assert main(SIM[:-2]) == 2
    err = capsys.readouterr().err
    assert "$COLLAPSE_PROBE_SAMPLES (--samples)" in err, err
    assert main([*SIM[:-2], "--samples", "0"]) == 2  # given as a flag: the flag is named
    err = capsys.readouterr().err
    assert "--samples" in err and "$COLLAPSE_PROBE_SAMPLES" not in err, err


def test_valid_switch_and_choice_values_are_used(monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_NO_PROGRESS", "yes")
    monkeypatch.setenv("COLLAPSE_PROBE_LOG_LEVEL", "info")
    args = build_parser().parse_args(SIM)
    assert args.no_progress is True and args.log_level == "info"
