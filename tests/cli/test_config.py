"""``--config FILE``, option precedence, ``-M`` backend options and the options generated from TrainConfig."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import collapse_probe
from collapse_probe.cli import build_parser, main
from collapse_probe.cli._config import parse_args, parse_model_args

REPO = Path(__file__).resolve().parents[2]
DONOR = REPO / "collapse_probe" / "data" / "scripted" / "p4g_donor_diverse.json"


@pytest.fixture
def persuader(tmp_path) -> str:
    path = tmp_path / "persuader.json"
    path.write_text(
        json.dumps(
            {
                "responses": [
                    {"text": "Please donate to Save the Children.", "p": 0.5},
                    {"text": "Children in need count on people like you.", "p": 0.3},
                    {"text": "Would you give a dollar?", "p": 0.2},
                ]
            }
        )
    )
    return f"scripted:{path}"


def _conversations(run: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run / "conversations.jsonl").read_text().splitlines()]
    for r in rows:
        r.pop("seconds", None)  # wall time, the one field that is not a function of the configuration
    return sorted(rows, key=lambda r: r["key"])


def test_play_from_a_config_file_gives_exactly_the_conversations_of_the_flags(tmp_path, persuader, capsys) -> None:
    flags = [
        "--policy",
        persuader,
        "--sim",
        f"scripted:{DONOR}",
        "--tasks",
        "3",
        "--rollouts",
        "3",
        "--max-turns",
        "2",
        "--seed",
        "7",
        "--temperature",
        "0.7",
        "--vs-k",
        "3",
        "--no-progress",
        "--show",
        "0",
        "--no-cache",  # every run samples afresh: equal conversations come from equal options, not the cache
    ]
    assert main(["play", *flags, "--out", str(tmp_path / "flags")]) == 0

    yaml_file = tmp_path / "run.yaml"
    yaml_file.write_text(
        f"policy: {persuader}\nsim: 'scripted:{DONOR}'\ntasks: 3\nrollouts: 3\nmax-turns: 2\nseed: 7\n"
        "temperature: 0.7\nvs_k: 3\nno-progress: true\nshow: 0\nno-cache: true\n"
    )
    assert main(["play", "--config", str(yaml_file), "--out", str(tmp_path / "yaml")]) == 0

    toml_file = tmp_path / "run.toml"
    toml_file.write_text(
        f"policy = '{persuader}'\nsim = 'scripted:{DONOR}'\ntasks = 3\nrollouts = 3\nmax_turns = 2\nseed = 7\n"
        f"temperature = 0.7\nvs-k = 3\nno_progress = true\nshow = 0\nno_cache = true\nout = '{tmp_path / 'toml'}'\n"
    )
    assert main(["play", "--config", str(toml_file)]) == 0

    reference = _conversations(tmp_path / "flags")
    assert len(reference) == 9 and len({json.dumps(r["messages"]) for r in reference}) > 1
    assert _conversations(tmp_path / "yaml") == reference
    assert _conversations(tmp_path / "toml") == reference
    # the comparison can fail: one option changed in the file changes the conversations
    yaml_file.write_text(yaml_file.read_text().replace("seed: 7", "seed: 8"))
    assert main(["play", "--config", str(yaml_file), "--out", str(tmp_path / "seed8")]) == 0
    assert _conversations(tmp_path / "seed8") != reference
    config = json.loads((tmp_path / "flags" / "config.json").read_text())
    assert json.loads((tmp_path / "yaml" / "config.json").read_text()) == config
    assert json.loads((tmp_path / "toml" / "config.json").read_text()) == config


def test_precedence_flags_over_env_over_file_over_defaults(tmp_path, monkeypatch) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("tasks: 3\nrollouts: 5\nseed: 11\n")
    monkeypatch.setenv("COLLAPSE_PROBE_ROLLOUTS", "6")
    monkeypatch.setenv("COLLAPSE_PROBE_SEED", "12")
    args = parse_args(build_parser(), ["play", "--config", str(cfg), "--seed", "13"])
    assert (args.tasks, args.rollouts, args.seed, args.max_turns, args.temperature) == (3, 6, 13, None, 1.0)
    # the file can also be named by the environment
    monkeypatch.setenv("COLLAPSE_PROBE_CONFIG", str(cfg))
    args = parse_args(build_parser(), ["play"])
    assert (args.tasks, args.rollouts, args.seed) == (3, 6, 12)


def test_a_file_satisfies_required_options(tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("policies: [smollm2, 'scripted:a.json']\nsims: smollm2,vs:smollm2\nout: somewhere\n")
    args = parse_args(build_parser(), ["crossplay", "--config", str(cfg)])
    assert args.policies == ["smollm2", "scripted:a.json"] and args.simulators == ["smollm2", "vs:smollm2"]
    assert args.out == "somewhere"


def test_a_file_can_give_positional_arguments(tmp_path) -> None:
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("run-dir: runs/xp\npolicy: smollm2\nmin-transfer: 0.8\n")
    args = parse_args(build_parser(), ["gate", "--config", str(cfg)])
    assert (args.run_dir, args.policy, args.min_transfer) == ("runs/xp", "smollm2", 0.8)
    args = parse_args(build_parser(), ["gate", "--config", str(cfg), "other/xp"])
    assert args.run_dir == "other/xp"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rollout: 2\n", "unknown key 'rollout' for collapse-probe play (did you mean 'rollouts'"),
        ("tasks: four\n", "key 'tasks': expected an integer, got 'four'"),
        ("tasks: true\n", "key 'tasks': expected an integer, got True"),
        ("temperature: hot\n", "key 'temperature': expected a number, got 'hot'"),
        ("no-cache: 1\n", "key 'no-cache': expected true or false, got 1"),
        ("policy: [a, b]\n", "key 'policy': expected a string, got ['a', 'b']"),
        ("model-arg: ['nonsense']\n", "key 'model-arg': -M/--model-arg: expected ROLE.key=VALUE"),
        ("- tasks\n", "expected a mapping of option names to values, got list"),
        ("tasks: [\n", "not valid YAML"),
    ],
)
def test_bad_config_files_are_one_line_naming_file_and_key(tmp_path, capsys, text, expected) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    with pytest.raises(SystemExit) as exc:
        main(["play", "--config", str(cfg)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(cfg) in err and expected in err, err


def test_config_file_errors_for_missing_and_unknown_formats(tmp_path, capsys) -> None:
    for path, expected in ((tmp_path / "none.yaml", "does not exist"), (tmp_path / "c.json", "must end in .yaml")):
        if path.suffix == ".json":
            path.write_text("{}")
        with pytest.raises(SystemExit):
            main(["audit", "--config", str(path)])
        assert expected in capsys.readouterr().err


def test_choices_are_checked_for_file_values(tmp_path, capsys) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("entropy_turns = 'some'\npolicies = 'a'\nsims = 'b'\n")
    with pytest.raises(SystemExit):
        main(["crossplay", "--config", str(cfg)])
    assert "key 'entropy_turns': expected one of first, all, got 'some'" in capsys.readouterr().err


def test_model_args_parse_by_role_with_typed_values() -> None:
    parsed = parse_model_args(
        ["sim.concurrency=8", "timeout=2.5", "policy.enable_lora=true", "judge.base_url=http://h:1/v1"]
    )
    assert parsed == {
        "sim": {"concurrency": 8},
        "*": {"timeout": 2.5},
        "policy": {"enable_lora": True},
        "judge": {"base_url": "http://h:1/v1"},
    }


def test_model_args_reach_the_backend(capsys) -> None:
    from collapse_probe.cli._common import load_models_with_options
    from collapse_probe.models import get_model

    collapse_probe.reset_caches()
    spec = "openai-compatible/m@http://127.0.0.1:9/v1"
    args = parse_args(
        build_parser(), ["play", "--sim", spec, "-M", "sim.concurrency=3", "-M", "sim.max_retries=1", "-M", "timeout=7"]
    )
    load_models_with_options(args, {"policy": [], "sim": [args.sim]})
    model = get_model(spec)
    assert (model.concurrency, model.retry.max_retries, model.timeout) == (3, 1, 7)

    # one model in two roles is one backend: the options of its roles merge, a different value conflicts
    collapse_probe.reset_caches()
    args = parse_args(build_parser(), ["play", "--sim", spec, "--policy", spec, "-M", "sim.concurrency=3"])
    load_models_with_options(args, {"policy": [args.policy], "sim": [args.sim]})
    assert get_model(spec).concurrency == 3
    collapse_probe.reset_caches()
    argv = ["play", "--sim", spec, "--policy", spec, "-M", "sim.concurrency=3", "-M", "policy.concurrency=4"]
    assert main([*argv, "--out", "x"]) == 2
    assert "different values of concurrency" in capsys.readouterr().err
    assert main(["play", "--sim", spec, "--policy", f"scripted:{DONOR}", "-M", "sim.concurency=3", "--out", "x"]) == 2
    err = capsys.readouterr().err
    assert "unknown option(s) 'concurency'" in err and "concurrency" in err
    assert f"error: -M/--model-arg for {spec}: unknown option(s) 'concurency' for the" in err  # where it came from
    with pytest.raises(SystemExit) as refused:  # refused while the command line is parsed, like any bad flag value
        main(["play", "-M", "critic.x=1", "--out", "x"])
    assert refused.value.code == 2
    assert "argument -M/--model-arg: 'critic.x=1': unknown role 'critic'" in capsys.readouterr().err


def test_model_args_from_a_config_mapping(tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model-arg:\n  sim: {concurrency: 4, timeout: 30}\n  policy: {max_batch: 16}\n")
    args = parse_args(build_parser(), ["play", "--config", str(cfg)])
    assert parse_model_args(args.model_arg) == {"sim": {"concurrency": 4, "timeout": 30}, "policy": {"max_batch": 16}}


def test_train_exposes_every_scalar_trainer_field(tmp_path) -> None:
    from collapse_probe.cli.train import config_from_args

    args = parse_args(
        build_parser(),
        [
            "train",
            "--lora-dropout",
            "0.1",
            "--adv-eps",
            "1e-5",
            "--max-grad-norm",
            "0.5",
            "--keep-checkpoints",
            "3",
            "--dtype",
            "bfloat16",
            "--entropy-turns",
            "all",
        ],
    )
    cfg = config_from_args(args)
    assert (cfg.lora_dropout, cfg.adv_eps, cfg.max_grad_norm, cfg.keep_checkpoints, cfg.dtype, cfg.entropy_turns) == (
        0.1,
        1e-5,
        0.5,
        3,
        "bfloat16",
        "all",
    )
    defaults = config_from_args(parse_args(build_parser(), ["train"]))
    assert (defaults.lora_dropout, defaults.keep_checkpoints, defaults.dtype) == (0.0, 2, None)

    cfg_file = tmp_path / "t.yaml"
    cfg_file.write_text("method: vs\nkeep-checkpoints: 4\nlora_dropout: 0.05\nsim: smollm2\n")
    cfg = config_from_args(parse_args(build_parser(), ["train", "--config", str(cfg_file)]))
    assert (cfg.method, cfg.keep_checkpoints, cfg.lora_dropout) == ("vs", 4, 0.05)


def test_train_policy_model_args_go_to_the_vllm_engine_only() -> None:
    from collapse_probe.cli.train import config_from_args
    from collapse_probe.errors import ConfigError

    args = parse_args(build_parser(), ["train", "--rollout-backend", "vllm", "-M", "policy.gpu_memory_utilization=0.4"])
    assert config_from_args(args).vllm_options == {"gpu_memory_utilization": 0.4}
    with pytest.raises(ConfigError, match="--rollout-backend vllm"):
        config_from_args(parse_args(build_parser(), ["train", "-M", "policy.tensor_parallel_size=2"]))


def test_a_directory_given_as_config_file_is_named_a_directory(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["play", "--config", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a directory; expected a YAML or TOML file" in err, err


def test_relative_paths_in_a_config_file_resolve_against_the_working_directory(
    tmp_path, persuader, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    (tmp_path / "donor.json").write_text(DONOR.read_text())
    (tmp_path / "conf").mkdir()
    cfg = tmp_path / "conf" / "play.yaml"
    cfg.write_text(f"policy: {persuader}\nsim: scripted:donor.json\ntasks: 1\nrollouts: 1\nmax_turns: 1\nout: run\n")
    assert main(["play", "--config", str(cfg), "--no-progress"]) == 0
    assert (tmp_path / "run" / "results.json").is_file() and not (tmp_path / "conf" / "run").exists()
    with pytest.raises(SystemExit):
        main(["play", "--help"])
    assert "relative paths in it resolve against the working directory" in " ".join(capsys.readouterr().out.split())
