"""The trainer's run directory goes through RunDir.create: kind and configuration checks, the lock, and
``--steps`` (and the other resumable fields) raised on resume."""

from __future__ import annotations

import json

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.rollout import RunDir
from collapse_probe.trainers.config import TrainConfig
from collapse_probe.trainers.llm import LLMTrainer, build_arena


def _prepare(out, **kw) -> LLMTrainer:
    config = TrainConfig(**kw)
    t = LLMTrainer(config, out, arena=build_arena(config))
    t._prepare_dir()
    return t


def test_config_is_written_at_once_and_resumable_fields_update(tmp_path) -> None:
    out = tmp_path / "run"
    _prepare(out, steps=2, lr=1e-3)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["kind"] == "train" and cfg["steps"] == 2 and cfg["arena"]["benchmark"] == "p4g"
    assert cfg["arena"]["max_tokens"] == 48 and cfg["arena"]["max_turns"] == 3
    _prepare(out, steps=5, lr=1e-3, keep_checkpoints=3)  # train longer: allowed, recorded
    cfg = json.loads((out / "config.json").read_text())
    assert (cfg["steps"], cfg["keep_checkpoints"], cfg["lr"]) == (5, 3, 1e-3)
    with pytest.raises(ConfigError, match=r"different configuration \(differs in: lr\)"):
        _prepare(out, steps=5, lr=2e-3)


def test_a_run_of_another_kind_is_refused(tmp_path) -> None:
    other = RunDir(tmp_path / "xp")
    other.create({"policies": ["a"]}, kind="crossplay")
    other.write_config()
    other.release()
    with pytest.raises(ConfigError, match="crossplay run"):
        _prepare(tmp_path / "xp")
