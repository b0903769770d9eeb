"""Flags generated from the config models: each default and help is the field's, and every kind of field
reads the same from a flag, ``$COLLAPSE_PROBE_*`` and a ``--config`` file."""

from __future__ import annotations

import importlib

import pytest

from collapse_probe.cli import CONFIG_COMMANDS, build_parser, main
from collapse_probe.cli._config import parse_args
from collapse_probe.cli._flags import flag_of, help_text

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
    flags = {f: flag_of(f, i) for f, i in model.model_fields.items()}
    for a in generated:
        info = model.model_fields[a.dest]
        if (command, a.dest) in RESOLVED_BY_THE_COMMAND or a.help != help_text(info.description or "", flags):
            continue  # a help the command words itself (e.g. --no-exact), checked by the help tests
        want = None if info.is_required() else info.get_default(call_default_factory=True)
        assert a.default == want, f"{command} {a.option_strings[0]}: default {a.default!r}, field says {want!r}"
        assert a.help and "``" not in a.help and ":class:" not in a.help and ":attr:" not in a.help, a.help


@pytest.mark.parametrize("command", CONFIG_COMMANDS)
def test_a_field_a_help_names_reads_as_its_flag(command):
    """A field's docstring names another field as :attr:`name`; the help must show that field's flag, so
    a misspelt or renamed field is caught here rather than shown to users as a name they cannot type."""
    import re

    module, _, name = importlib.import_module(f"collapse_probe.cli.{command}").CONFIG.partition(":")
    model = getattr(importlib.import_module(module), name)
    for field, info in model.model_fields.items():
        for ref in re.findall(r":attr:`([a-z][a-z0-9_]*)", info.description or ""):
            assert ref in model.model_fields, f"{name}.{field}: its docstring names {ref!r}, not a field of {name}"
    helps = {a.dest: a.help for a in _sub(command)._actions if getattr(a, "from_model", False)}
    assert not [d for d, h in helps.items() if h and ":attr:" in h]


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
        (["train", "--group-size", "1"], {}, "--group-size must be an integer in [2, 4,096]"),
        (["crossplay", "--policies", "a", "--sims", " , ", "--out", "o"], {}, "--sims (simulators): expected at least one model spec (comma-separated), got an empty list"),
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


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["train", "--entropy-turns", "bogus"], "--entropy-turns must be one of first, all, got 'bogus'"),
        (["train", "--rollout-backend", "x"], "--rollout-backend must be one of torch, vllm, got 'x'"),
        (["train", "--cotrain-reward", "x"], "--cotrain-reward must be one of adversarial, cooperative, curriculum"),
        (["lab", "--cotrain-reward", "x"], "--cotrain-reward must be one of adversarial, cooperative, curriculum"),
        (["crossplay", "--policies", "a", "--sims", "b", "--entropy-turns", "x"], "--entropy-turns must be one of first, all"),
        (["gate", "run", "--policy", "p", "--decision", "x"], "--decision must be one of interval, point, strict, got 'x'"),
        (["gate", "run", "--policy", "p", "--level", "2"], "--level must be a number in (0, 1), got 2.0"),
        (["gate", "run", "--policy", "p", "--min-transfer", "-1"], "--min-transfer must be a finite number >= 0, got -1.0"),
        (["crossplay", "--policies", ",", "--sims", "b"], "--policies: expected at least one model spec (comma-separated), got an empty list"),
    ],
)  # fmt: skip
def test_a_value_outside_a_fields_choices_or_range_is_the_configs_one_line(tmp_path, capsys, argv, needle):
    """Not argparse's usage block and "invalid choice": the config's one line naming the flag, with no
    "(or none)" a command line cannot type."""
    assert main([*argv, *(["--out", str(tmp_path / "o")] if argv[0] != "gate" else [])]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "none" not in err.lower(), err
    assert not (tmp_path / "o").exists()


def test_a_choice_field_shows_its_choices_and_a_file_or_variable_is_still_checked(tmp_path, monkeypatch, capsys):
    text = _sub("train").format_help()
    assert "--entropy-turns {first,all}" in text and "--rollout-backend {torch,vllm}" in text
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rollout-backend: jax\n")
    with pytest.raises(SystemExit):
        main(["train", "--config", str(cfg)])
    assert f"{cfg}: key 'rollout-backend': expected one of torch, vllm, got 'jax'" in capsys.readouterr().err
    monkeypatch.setenv("COLLAPSE_PROBE_COTRAIN_REWARD", "hostile")
    assert main(["train", "--out", str(tmp_path / "o")]) == 2
    assert "$COLLAPSE_PROBE_COTRAIN_REWARD: expected one of adversarial" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "text", "dest", "expected"),
    [
        ("train", "heldout: null\n", "heldout", []),
        ("train", "sim-lr: null\nmax-turns: ~\n", "max_turns", 3),
        ("audit", "compact: null\n", "compact", None),
        ("audit", "no-exact: null\n", "exact", True),
        ("audit", "model-arg: null\n", "model_arg", None),
    ],
)
def test_null_in_a_config_file_is_the_options_default(tmp_path, command, text, dest, expected):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    assert getattr(parse_args(build_parser(), [command, "--config", str(cfg)]), dest) == expected


def test_null_for_a_required_argument_is_refused_naming_the_key(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("run-dir: null\npolicy: p\n")
    with pytest.raises(SystemExit):
        main(["gate", "--config", str(cfg)])
    assert f"{cfg}: key 'run-dir': expected a value (the option is required), got null" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "flag", "wanted", "unwanted"),
    [
        ("train", "--sim-lr", "(default: the same as --lr)", "default: lr"),
        ("train", "--eval-tasks", "(default: the same as --tasks)", "default: tasks"),
        ("train", "--group-size", "(at least 2)", "rollout."),
        ("train", "--temperature", "above 0", "rollout."),
        ("train", "--max-turns", "(default 3)", "required"),
        ("train", "--personas", "passed to the arena", "an arena option"),
        ("train", "--eval-every", "over --heldout every", "over heldout"),
        ("crossplay", "--train-sim", "must be one of --sims", "one of simulators"),
        ("gate", "--strict", "the same as --decision strict", "decision="),
        ("gate", "--min-transfer-each", "(the same rule as --min-transfer)", "min_transfer"),
        ("audit", "--partition", "exact, embedding, judge, label", "--exact"),
    ],
)
def test_help_names_flags_not_fields(command, flag, wanted, unwanted):
    action = next(a for a in _sub(command)._actions if flag in a.option_strings)
    shown = " ".join(action.help.split()) % {"default": action.default, "prog": command}
    assert wanted in shown and unwanted not in shown, shown


@pytest.mark.parametrize(
    ("command", "usage"),
    [("audit", "[--partition NAME]"), ("crossplay", "[--partition NAME]"), ("train", "[--partition NAME]"),
     ("gate", "[--min-transfer-each X]")],
)  # fmt: skip
def test_metavars_say_what_the_value_is(command, usage):
    assert usage in " ".join(_sub(command).format_usage().split())


def test_a_number_on_by_default_is_turned_off_by_none_from_flag_variable_and_file(tmp_path, monkeypatch):
    parser = build_parser()
    assert parser.parse_args(["train"]).tis_cap == 2.0
    assert parser.parse_args(["train", "--tis-cap", "none"]).tis_cap is None
    assert parser.parse_args(["train", "--tis-cap", "3"]).tis_cap == 3.0
    cfg = tmp_path / "c.yaml"
    cfg.write_text("tis-cap: none\n")
    assert parse_args(build_parser(), ["train", "--config", str(cfg)]).tis_cap is None
    monkeypatch.setenv("COLLAPSE_PROBE_TIS_CAP", "None")
    assert build_parser().parse_args(["train"]).tis_cap is None
