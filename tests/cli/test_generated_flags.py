"""Flags generated from the config models: each default and help is the field's, and every kind of field
reads the same from a flag, ``$COLLAPSE_PROBE_*`` and a ``--config`` file."""

from __future__ import annotations

import importlib

import pytest

from collapse_probe.cli import CONFIG_COMMANDS, build_parser, main
from collapse_probe.cli._config import parse_args
from collapse_probe.cli._flags import help_text

RESOLVED_BY_THE_COMMAND = {("train", "sims"), ("audit", "sim"), ("crossplay", "policies"), ("crossplay", "simulators")}
"""Defaults the command resolves itself (train's simulators depend on the method; audit --from tells a
given --sim from the default; crossplay requires its matrix)."""


def _sub(command: str):
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices[command]


@pytest.mark.parametrize("command", CONFIG_COMMANDS)
def test_each_generated_flag_has_the_fields_default_and_help(command, monkeypatch):
    for var in [v for v in __import__("os").environ if v.startswith("COLLAPSE_PROBE_")]:
        monkeypatch.delenv(var)
    module, _, name = importlib.import_module(f"collapse_probe.cli.{command}").CONFIG.partition(":")
    model = getattr(importlib.import_module(module), name)
    generated = [a for a in _sub(command)._actions if getattr(a, "from_model", False) and a.dest in model.model_fields]
    assert len(generated) >= 5
    for a in generated:
        info = model.model_fields[a.dest]
        if (command, a.dest) in RESOLVED_BY_THE_COMMAND or a.help != help_text(info.description or ""):
            continue  # a help the command words itself (e.g. --no-exact), checked by the help tests
        want = None if info.is_required() else info.get_default(call_default_factory=True)
        assert a.default == want, f"{command} {a.option_strings[0]}: default {a.default!r}, field says {want!r}"
        assert a.help and "``" not in a.help and ":class:" not in a.help, a.help


@pytest.mark.parametrize(
    ("var", "value", "dest", "expected"),
    [
        ("COLLAPSE_PROBE_SAMPLES", "7", "samples", 7),
        ("COLLAPSE_PROBE_EPSILON_STAR", "0.3", "epsilon_star", 0.3),
        ("COLLAPSE_PROBE_NO_EXACT", "yes", "exact", False),
        ("COLLAPSE_PROBE_COMPARE_VS", "1", "compare_vs", True),
        ("COLLAPSE_PROBE_COMPACT", "off", "compact", False),
        ("COLLAPSE_PROBE_SIM", "scripted:x.json", "sim", "scripted:x.json"),
    ],
)  # fmt: skip
def test_every_kind_of_field_reads_its_variable(monkeypatch, var, value, dest, expected):
    monkeypatch.setenv(var, value)
    assert getattr(build_parser().parse_args(["audit"]), dest) == expected


def test_list_fields_read_commas_or_json_from_flag_variable_and_file(monkeypatch, tmp_path):
    args = build_parser().parse_args(["crossplay", "--policies", "a,b", "--sims", '["x,1", "y"]', "--out", "o"])
    assert args.policies == ["a", "b"] and args.simulators == ["x,1", "y"]
    monkeypatch.setenv("COLLAPSE_PROBE_SIMS", "u,v")
    monkeypatch.setenv("COLLAPSE_PROBE_POLICIES", "p")
    args = build_parser().parse_args(["crossplay", "--out", "o"])  # the variables satisfy the required flags
    assert args.policies == ["p"] and args.simulators == ["u", "v"]
    monkeypatch.delenv("COLLAPSE_PROBE_SIMS")
    cfg = tmp_path / "c.toml"
    cfg.write_text('sims = ["s1", "s2"]\nentropy-turns = "all"\n')
    args = parse_args(build_parser(), ["crossplay", "--config", str(cfg), "--out", "o"])
    assert args.simulators == ["s1", "s2"] and args.entropy_turns == "all" and args.policies == ["p"]


def test_a_switch_that_turns_a_field_off_reads_true_in_a_file_as_off(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("no-exact: true\ncompact: false\n")
    args = parse_args(build_parser(), ["audit", "--config", str(cfg)])
    assert args.exact is False and args.compact is False


@pytest.mark.parametrize(
    ("argv", "env", "needle"),
    [
        (["audit"], {"COLLAPSE_PROBE_SAMPLES": "many"}, "$COLLAPSE_PROBE_SAMPLES: expected an integer, got 'many'"),
        (["audit"], {"COLLAPSE_PROBE_NO_EXACT": "perhaps"}, "$COLLAPSE_PROBE_NO_EXACT: expected 1/0, true/false"),
        (["crossplay", "--policies", "a", "--sims", "b", "--out", "o"], {"COLLAPSE_PROBE_ENTROPY_TURNS": "some"},
         "$COLLAPSE_PROBE_ENTROPY_TURNS: expected one of first, all, got 'some'"),
        (["gate", "run", "--policy", "p"], {"COLLAPSE_PROBE_LEVEL": "nan"}, "$COLLAPSE_PROBE_LEVEL: expected a finite"),
        (["train", "--group-size", "1"], {}, "--group-size must be an integer >= 2"),
        (["crossplay", "--policies", "a", "--sims", " , ", "--out", "o"], {}, "--sims (simulators)"),
    ],
)  # fmt: skip
def test_bad_values_are_one_line_naming_where_they_came_from(monkeypatch, capsys, argv, env, needle):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2, err


def test_a_file_value_of_the_wrong_kind_names_the_file_and_key(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sims: [1, 2]\n")
    with pytest.raises(SystemExit) as exc:  # a config file is read before the command runs
        main(["crossplay", "--config", str(cfg), "--policies", "a", "--out", "o"])
    assert exc.value.code == 2
    assert f"{cfg}: key 'sims': expected a list of strings or a comma-separated string" in capsys.readouterr().err
