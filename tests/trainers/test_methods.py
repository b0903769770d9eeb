"""The registry of LLM training methods: one definition read by the config, the trainer and the CLI."""

from __future__ import annotations

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.trainers.methods import METHODS, REGISTRY, TrainMethod, get_method, register


def test_one_registry_behind_config_cli_and_the_lab_names() -> None:
    from collapse_probe.cli import train as train_cli
    from collapse_probe.trainers import config, lab

    assert METHODS == tuple(REGISTRY) == config.METHODS
    assert train_cli.METHOD_CHOICES is METHODS
    assert set(METHODS) == set(lab.METHODS)  # same names and semantics as the collapse lab
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
