"""Backend options of scripted models are checked like every other backend's."""

from __future__ import annotations

import json

import pytest

from collapse_probe.cli import main
from collapse_probe.errors import ConfigError
from collapse_probe.models.scripted import make_scripted_model

DIST = {"responses": [{"text": "Sure [DONATE $1]", "p": 1.0}]}


@pytest.fixture
def scripted(tmp_path) -> str:
    p = tmp_path / "donor.json"
    p.write_text(json.dumps(DIST))
    return str(p)


@pytest.mark.parametrize(
    ("options", "needle"),
    [({"bogus": 1}, "donor.json: unknown option(s) 'bogus' for the scripted backend; known: delay_s"),
     ({"delay_s": "abc"}, "donor.json: scripted option delay_s must be a number in [0, 60] (seconds per call), got 'abc'"),
     ({"delay_s": -1}, "got -1"), ({"delay_s": True}, "got True"), ({"delay_s": 1e9}, "in [0, 60]")],
)  # fmt: skip
def test_bad_options_are_refused_naming_them(scripted, options, needle):
    with pytest.raises(ConfigError) as exc:
        make_scripted_model(f"scripted:{scripted}", scripted, **options)
    assert needle in str(exc.value)


def test_delay_option_overrides_the_file(scripted):
    assert make_scripted_model(f"scripted:{scripted}", scripted, delay_s=0.25).delay_s == 0.25


@pytest.mark.parametrize("arg", ["sim.bogus=1", "sim.delay_s=abc"])
def test_cli_exits_2_on_a_bad_scripted_option(tmp_path, scripted, monkeypatch, capsys, arg):
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    copy = tmp_path / f"sim-{arg.replace('=', '_')}.json"  # a file of its own: never a model built earlier
    copy.write_text(json.dumps(DIST))
    rc = main(["play", "--policy", f"scripted:{scripted}", "--sim", f"scripted:{copy}", "--tasks", "1",
               "--rollouts", "1", "--max-turns", "1", "--out", str(tmp_path / "o"), "--no-progress", "-M", arg])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and arg.split(".")[1].split("=")[0] in err and "Traceback" not in err, err
    assert not (tmp_path / "o" / "results.json").exists()
