"""The registry of LLM training methods: one definition read by the config, the trainer and the CLI."""

from __future__ import annotations

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.trainers.methods import LAB_METHODS, METHODS, REGISTRY, TrainMethod, get_method, register


def test_one_registry_behind_config_cli_and_the_lab_names() -> None:
    import collapse_probe.trainers as trainers
    from collapse_probe.cli import train as train_cli
    from collapse_probe.trainers import config, lab

    assert METHODS == tuple(REGISTRY) == config.METHODS == trainers.TRAIN_METHODS
    assert train_cli.METHOD_CHOICES is METHODS
    assert lab.METHODS == trainers.METHODS == LAB_METHODS
    assert LAB_METHODS == ("single", "vs", "ensemble", "persona", "cotrain", "population", "selfplay")
    assert set(METHODS) == set(lab.METHODS)  # same names and semantics as the collapse lab
    assert all(m.lab and m.trainer for m in REGISTRY.values())  # said by each method, not by a missing key
    assert config.VLLM_METHODS == ("single", "vs")
    assert config.FROZEN_SIMULATOR_METHODS == ("single", "vs", "ensemble", "persona")
    assert config.TRAINABLE_SIMULATOR_METHODS == ("cotrain", "population")


@pytest.mark.parametrize(
    ("method", "sims", "message"),
    [
        ("selfplay", ["smollm2"], "trains one model that plays both sides"),
        ("ensemble", ["smollm2"], "rotates two or more frozen simulators"),
        ("ensemble", ["smollm2", "smollm2"], "duplicate simulators in the ensemble"),
        ("single", ["smollm2", "gemma3-270m"], "takes exactly one simulator spec"),
        ("cotrain", [], "takes exactly one simulator spec"),
    ],
)
def test_simulator_counts_are_checked_by_the_method(method, sims, message) -> None:
    from collapse_probe.trainers.config import TrainConfig

    with pytest.raises(ConfigError, match=message):
        TrainConfig(method=method, sims=sims)
    get_method("ensemble").check_sims(["a", "b", "c"])
    get_method("selfplay").check_sims([])


def test_unknown_and_duplicate_methods() -> None:
    from collapse_probe.trainers.config import TrainConfig

    with pytest.raises(ConfigError, match="--method must be one of single, vs, ensemble"):
        TrainConfig(method="singel")
    with pytest.raises(ConfigError, match="already registered"):
        register(TrainMethod("single", "again", "frozen"))


def test_trainer_labels_follow_the_schedule(tmp_path) -> None:
    from collapse_probe.trainers.config import TrainConfig
    from collapse_probe.trainers.llm import LLMTrainer

    def labels(**kw) -> list[str]:
        return LLMTrainer(TrainConfig(**kw), tmp_path).sim_labels

    assert labels(method="vs", sims=["smollm2"]) == ["vs:smollm2"]
    assert labels(method="vs", sims=["vs:smollm2"]) == ["vs:smollm2"]
    assert labels(method="ensemble", sims=["smollm2", "vs:smollm2"]) == ["smollm2", "vs:smollm2"]
    assert labels(method="cotrain", sims=["smollm2"]) == ["simulator:smollm2+lora"]
    assert labels(method="selfplay", sims=[]) == ["simulator:smollm2+lora(selfplay)"]


def test_what_each_method_trains_on_is_an_attribute() -> None:
    reward = {n: REGISTRY[n].simulator_reward("curriculum") for n in REGISTRY}
    assert reward == {"single": None, "vs": None, "ensemble": None, "persona": None, "cotrain": "curriculum",
                      "population": "curriculum", "selfplay": "cooperative"}  # fmt: skip
    assert [n for n, m in REGISTRY.items() if m.snapshots] == ["population", "selfplay"]
    assert [n for n, m in REGISTRY.items() if m.compare_rewards] == ["cotrain"]


def test_unknown_names_get_the_flag_the_names_and_did_you_mean() -> None:
    from collapse_probe.trainers.lab import LabConfig

    with pytest.raises(
        ConfigError, match=r"^method must be one of single, .*, selfplay; got 'cotrian'\. Did you mean 'cotrain'\?$"
    ):
        LabConfig(method="cotrian")
    with pytest.raises(ConfigError, match=r"^--method must be one of .*; got 3\.$"):
        get_method(3)


def test_a_method_only_one_side_runs_is_refused_by_the_other() -> None:
    from collapse_probe.trainers.config import TrainConfig
    from collapse_probe.trainers.lab import LabConfig, run_lab

    register(TrainMethod("lab-only", "a lab method", "frozen", trainer=False))
    register(TrainMethod("vs-ensemble", "verbalized rotation", "frozen", 2, None, "rotate", verbalized=True))
    try:
        assert "lab-only" in get_method("lab-only", lab=True).name
        with pytest.raises(ConfigError, match="--method must be one of single, .*; got 'lab-only'"):
            TrainConfig(method="lab-only")
        with pytest.raises(ConfigError, match="the lab rotates aligned simulators only"):
            run_lab(LabConfig(method="vs-ensemble", steps=1))  # a combination the lab does not implement
    finally:
        REGISTRY.unregister("lab-only")
        REGISTRY.unregister("vs-ensemble")


METHOD_DISPATCH_FILES = ("trainers", "cli/lab.py", "cli/train.py")
"""Where the lab and the trainer dispatch on a method: only :mod:`collapse_probe.trainers.methods` may name one."""


def method_name_comparisons(source: str, names: set[str]) -> list[int]:
    """Lines where a method name is compared (``==``, ``!=``, ``in``, ``not in``, a ``match`` case)."""
    import ast

    def named(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(named(e) for e in node.elts)
        return False

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(named(x) for x in (node.left, *node.comparators)):
            lines.append(node.lineno)
        elif isinstance(node, ast.MatchValue) and named(node.value):
            lines.append(node.lineno)
    return lines


def test_the_check_finds_a_method_name_comparison() -> None:
    names = set(REGISTRY)
    assert method_name_comparisons('if m == "cotrain":\n    pass\n', names) == [1]
    assert method_name_comparisons('x = m in ("population", "selfplay")\n', names) == [1]
    assert method_name_comparisons('match m:\n    case "vs":\n        pass\n', names) == [2]
    assert method_name_comparisons('if m.simulator == "self":\n    pass\n', names) == []


def test_no_method_name_comparisons_outside_the_registry() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "collapse_probe"
    paths = [
        p
        for part in METHOD_DISPATCH_FILES
        for p in ((root / part).rglob("*.py") if (root / part).is_dir() else [root / part])
    ]
    found = {
        str(p.relative_to(root)): lines
        for p in paths
        if p.name != "methods.py" and (lines := method_name_comparisons(p.read_text(encoding="utf-8"), set(REGISTRY)))
    }
    assert len(paths) > 5 and not found, found


def test_asking_the_registries_costs_the_configs_no_import_time() -> None:
    """The trainer's and the monitor's configs read the partitioner registry when they validate, not
    when imported: importing the metrics loads scipy (seconds), which a trainer's monitor hook and the
    command line must not pay for."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    code = (
        "import sys, collapse_probe.trainers.config, collapse_probe.integrations.monitor._config, collapse_probe.cli.lab\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy' or m == 'collapse_probe.metrics'))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=repo, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
