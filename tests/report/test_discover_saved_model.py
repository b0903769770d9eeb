"""The dashboard's run list: a saved model folder inside a run (its own ``config.json`` beside weights)
is not a run, so it is never listed as one "in progress"; a run directory still is."""

from __future__ import annotations

import json

from collapse_probe.report.runs import discover_runs


def test_a_saved_model_folder_is_not_listed_as_a_run(tmp_path):
    run = tmp_path / "grpo"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"kind": "train", "steps": 2}))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "train_reward": 0.5}) + "\n")
    model = run / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}))
    (model / "model.safetensors").write_bytes(b"\0" * 16)
    (model / "tokenizer_config.json").write_text("{}")
    listed = [r.path.name for r in discover_runs(tmp_path)]
    assert listed == ["grpo"]
    # a run's config.json beside its results is a run whatever else the folder holds
    (model / "results.json").write_text("{}")
    assert sorted(r.path.name for r in discover_runs(tmp_path)) == ["grpo", "model"]
