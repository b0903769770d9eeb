"""Limits of every parser of the CLI's own option sources: YAML (``--config`` files, ``-M`` values)
without aliases, JSON options bounded in depth and size, integer ranges on every count and size
option (config fields, backend options), no abbreviated flags. Each refusal is one line naming the
file, flag or variable; the slow end-to-end table is ``tests/reliability/test_hostile_config_inputs.py``."""

from __future__ import annotations

import argparse

import pytest

from collapse_probe.cli import build_parser, main
from collapse_probe.cli._config import _subparsers, parse_model_args
from collapse_probe.cli._env import BadEnv, apply_env
from collapse_probe.cli._flags import MAX_JSON_OPTION_DEPTH, JsonValue, ListValue
from collapse_probe.core._config_files import MAX_YAML_DEPTH, YamlSyntaxError, load_config_file, load_yaml
from collapse_probe.core._constraints import AtMost, Integer, constraints_of
from collapse_probe.errors import ConfigError
from collapse_probe.integrations.monitor import MonitorConfig
from collapse_probe.pipelines.audit import AuditConfig
from collapse_probe.pipelines.crossplay import CrossplayConfig
from collapse_probe.pipelines.play import PlayConfig
from collapse_probe.rollout import EngineConfig
from collapse_probe.rollout.runspec import RolloutConfig
from collapse_probe.trainers.config import TrainConfig
from collapse_probe.trainers.lab import LabConfig

CONFIGS = [RolloutConfig, PlayConfig, CrossplayConfig, AuditConfig, TrainConfig, LabConfig, MonitorConfig, EngineConfig]
"""Every pipeline config (as in ``tests/test_constraints.py``)."""

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


# ------------------------------------------------------------------------------------------------ YAML


@pytest.mark.parametrize(
    "text",
    ["a: &a [*a]\n", "a: &a {b: *a}\n", BOMB, "x: &x 1\ny: *x\n", "- &s [1, 2]\n- *s\n"],
    ids=["cycle", "mapping cycle", "bomb", "scalar alias", "list alias"],
)
def test_yaml_aliases_are_refused_where_they_occur(text):
    with pytest.raises(ConfigError, match=r"^W: line \d+: YAML alias \*\w is not allowed .*; expected E$"):
        load_yaml(text, "W", expected="E")


def test_yaml_depth_nodes_nul_and_long_integers_are_one_line():
    with pytest.raises(ConfigError, match=rf"nested deeper than {MAX_YAML_DEPTH} levels"):
        load_yaml("[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1), "W", expected="E")
    assert load_yaml("[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1), "W", expected="E") is not None
    with pytest.raises(ConfigError, match=r"more than 10 YAML values"):
        load_yaml("[" + ", ".join(["1"] * 20) + "]", "W", expected="E", max_nodes=10)
    with pytest.raises(ConfigError, match=r"integer too long"):
        load_yaml("a: 1" + "0" * 5000, "W", expected="E")
    with pytest.raises(YamlSyntaxError):
        load_yaml("a: b: c", "W", expected="E")


@pytest.mark.parametrize(
    ("name", "text", "key"),
    [
        ("c.yaml", 'sim: "a\\0b"\n', "sim"),
        ("c.yaml", 'sims: ["x", "y\\0"]\n', "sims[1]"),
        ("c.toml", 'out = "o\\u0000x"\n', "out"),
    ],
)
def test_a_nul_character_in_a_config_file_names_the_key(tmp_path, name, text, key):
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config_file(tmp_path / name)
    assert str(exc.value).startswith(f"{tmp_path / name}: {key}: holds a NUL character")


def test_a_config_file_with_a_cycle_fails_at_once(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text("sims: &a [*a]\n")
    with pytest.raises(SystemExit) as exc:
        main(["crossplay", "--config", str(tmp_path / "c.yaml")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "c.yaml: line 1: YAML alias *a is not allowed" in err


# -------------------------------------------------------------------------------------------- -M values


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ("sim.x=&a [*a]", "sim.x: line 1: YAML alias *a is not allowed"),
        ("x=&a {b: *a}", "x: line 1: YAML alias *a is not allowed"),
        ("sim.x=" + "[" * 3000 + "]" * 3000, "nested deeper than"),
        ("sim.delay_s=" + "1" * 5000, "sim.delay_s: holds an integer too long"),
        ("sim.delay_s=" + "1" * 200, "sim.delay_s: the value: an integer of more than 100 digits"),
        ('policy.name="a\\0b"', "policy.name: the value: holds a NUL character"),
        ("judge.x=[" + ", ".join(["1"] * 2000) + "]", "more than 1,000 YAML values"),
    ],
)
def test_hostile_model_arg_values_are_refused_naming_the_option(item, needle):
    with pytest.raises(ConfigError) as exc:
        parse_model_args([item])
    assert str(exc.value).startswith("-M/--model-arg ") and needle in str(exc.value)
    assert len(str(exc.value)) < 400  # the value is not echoed whole


def test_ordinary_model_arg_values_still_parse():
    parsed = parse_model_args(["sim.concurrency=8", "timeout=2.5", "policy.extra_body={a: [1, 2]}", "sim.k=a: b: c"])
    assert parsed == {
        "sim": {"concurrency": 8, "k": "a: b: c"},
        "*": {"timeout": 2.5},
        "policy": {"extra_body": {"a": [1, 2]}},
    }


def test_a_bad_model_arg_is_refused_while_parsing(capsys):
    with pytest.raises(SystemExit) as exc:  # before any file is read or model loaded
        main(["audit", "--sim", "scripted:/does/not/exist.json", "--out", "o", "-M", "sim.x=&a [*a]"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "argument -M/--model-arg: sim.x: line 1: YAML alias" in err


# ------------------------------------------------------------------------------------------ JSON options


@pytest.mark.parametrize("parse", [JsonValue(), ListValue(str)], ids=["json", "list"])
def test_json_options_are_bounded_in_depth_and_size(parse):
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(argparse.ArgumentTypeError, match=rf"at most {MAX_JSON_OPTION_DEPTH} levels.*this nests 5,000"):
        parse(deep)
    with pytest.raises(argparse.ArgumentTypeError, match=r"at most 1,048,576 characters"):
        parse("[" + '"a",' * 300_000 + '"a"]')
    with pytest.raises(argparse.ArgumentTypeError, match=r"an integer of 201 digits"):
        parse("[1" + "0" * 200 + "]")
    brackets_in_strings = '["' + "[" * 100 + '"]'  # brackets inside a string are not nesting
    assert parse(brackets_in_strings) == ["[" * 100]


def test_a_deep_json_variable_is_a_bad_default_not_a_crash(monkeypatch):
    monkeypatch.setenv("COLLAPSE_PROBE_SIMS", "[" * 5000 + "]" * 5000)
    sp = _subparsers(build_parser())["crossplay"]  # the parsers are built (for --help too) without raising
    apply_env(sp)
    value = next(a.default for a in sp._actions if a.dest == "simulators")
    assert isinstance(value, BadEnv)
    message = str(value.error())
    assert message.startswith("$COLLAPSE_PROBE_SIMS: expected") and "this nests 5,000" in message
    assert "(10,000 characters)" in message and len(message) < 400


# ------------------------------------------------------------------------------------- abbreviated flags


def test_no_parser_abbreviates_a_long_flag(capsys):
    parser = build_parser()
    assert parser.allow_abbrev is False
    assert all(sp.allow_abbrev is False for sp in _subparsers(parser).values())
    with pytest.raises(SystemExit):
        main(["audit", "--sample", "5", "--out", "o"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --sample 5; --sample: did you mean --samples" in err


# ---------------------------------------------------------------------------------------- integer ranges


INTEGER_FIELDS = [
    (cls, name)
    for cls in CONFIGS
    for name in cls.model_fields
    if any(isinstance(c, Integer) for c in constraints_of(cls, name))
]


@pytest.mark.parametrize("cls,name", INTEGER_FIELDS, ids=[f"{c.__name__}.{n}" for c, n in INTEGER_FIELDS])
def test_every_integer_field_has_an_upper_bound(cls, name):
    constraints = constraints_of(cls, name)
    most = [c.most for c in constraints if isinstance(c, Integer) and c.most is not None]
    most += [c.limit for c in constraints if isinstance(c, AtMost)]
    assert most, f"{cls.__name__}.{name}: declare Integer(..., most=...) or AtMost (collapse_probe.core.limits)"
    with pytest.raises(ConfigError) as exc:
        cls(**{name: 10**30})
    assert str(exc.value).count("\n") == 0 and f"{min(most):,}" in str(exc.value)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["lab", "--steps", "9" * 30], "--steps must be an integer in [1, 1,000,000], got 9999"),
        (["lab", "--seed", "1" + "0" * 30], "--seed must be an integer in [0, 9,223,372,036,854,775,807]"),
        (["lab", "--compare", "--seeds", "1000000"], "--seeds must be an integer in [1, 1,000], got 1000000"),
        (["lab", "--sweep", "delta=" + ",".join(str(i / 1000) for i in range(1000))], "--sweep: at most 100 values"),
        (["audit", "--variance-agents", "1000000000"], "--variance-agents must be an integer in [1, 1,000]"),
        (["audit", "--variance-sims", "1000000000"], "--variance-sims must be an integer in [2, 1,000]"),
        (["audit", "--n-boot", "10" + "0" * 60], "--n-boot must be an integer in [100, 100,000], got an integer of"),
        (["train", "--steps", "1000000000"], "--steps must be an integer in [1, 1,000,000]"),
        (["crossplay", "--policies", "a", "--sims", "b", "--rollouts", "99999"], "--rollouts must be an integer in"),
    ],
)
def test_counts_past_their_range_name_the_flag_and_the_range(tmp_path, capsys, argv, needle):
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


def test_backend_options_have_ranges(tmp_path):
    from collapse_probe.models._options import LocalOptions, OpenAIOptions
    from collapse_probe.models.local import make_local_model
    from collapse_probe.models.ray_replicas import parse_replicas
    from collapse_probe.models.scripted import make_scripted_model

    with pytest.raises(
        ConfigError, match=r"^openai option concurrency must be an integer in \[1, 1,024\], got 1000000000$"
    ):
        OpenAIOptions.parse({"concurrency": 10**9})
    with pytest.raises(ConfigError, match=r"^openai option timeout must be a number in \(0, 3600\], got 1000000000.0$"):
        OpenAIOptions.parse({"timeout": 1e9})
    with pytest.raises(
        ConfigError, match=r"local/x: local option dtype must be one of auto, float32, .*, got \['int8'\]"
    ):
        LocalOptions.parse({"dtype": ["int8"]}, "local/x")
    with pytest.raises(ConfigError, match=r"local option device must be auto, cpu, mps, cuda or cuda:N, got 'tpu'"):
        make_local_model("local/x", "x", device="tpu")  # refused before any model is looked up or loaded
    with pytest.raises(ConfigError, match=r"local option max_batch must be an integer in \[1, 4,096\]"):
        make_local_model("local/x", "x", max_batch=10**9)
    with pytest.raises(ConfigError, match=r"--replicas: expected .* N in \[1, 1,024\], got '1000"):
        parse_replicas("1" + "0" * 5000)
    donor = tmp_path / "d.json"
    donor.write_text('{"responses": [{"text": "a", "p": 1.0}]}')
    with pytest.raises(ConfigError, match=r"option delay_s must be a number in \[0, 60\]"):
        make_scripted_model(f"scripted:{donor}", str(donor), delay_s=1e9)
    donor.write_text('{"responses": [{"text": "a", "p": 1.0}], "delay_s": 1e9}')
    with pytest.raises(ConfigError, match=r"d.json: field 'delay_s' must be a number of seconds in \[0, 60\], got 1"):
        make_scripted_model(f"scripted:{donor}", str(donor))


def test_an_openai_compatible_concurrency_past_the_range_is_refused_before_any_call(capsys):
    spec = "openai-compatible/m@http://127.0.0.1:9/v1"
    assert main(["audit", "--sim", spec, "--out", "o", "-M", "sim.concurrency=1000000000", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "openai-compatible option concurrency must be an integer in [1, 1,024], got 1000000000" in err
