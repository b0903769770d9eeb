"""The vllm backend's control flow on CPU, through a stand-in ``vllm`` package (tests/models/stand_in_vllm).

The engine itself needs a GPU (the ``gpu`` tier and scripts/gpu_smoke.sh run it); what is tested here
is everything around it: an engine that cannot start is one configuration error (built once, exit 2,
no conversation scored), option validation, LoRA requests with changing adapters, sleep mode, and the
stop rule shared with the local backend.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.models._types import GenerationRequest, SamplingParams, find_stop

STAND_IN = Path(__file__).parent / "stand_in_vllm"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    """Import the stand-in ``vllm``; returns the path of its event log."""
    log = tmp_path / "vllm-events.jsonl"
    monkeypatch.setenv("STAND_IN_VLLM_LOG", str(log))
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "")  # recorded as unset, so the backend's setting is undone after
    monkeypatch.delenv("VLLM_BATCH_INVARIANT")
    monkeypatch.syspath_prepend(str(STAND_IN))
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    import vllm

    assert Path(vllm.__file__).is_relative_to(STAND_IN)
    yield log
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[name]  # later tests must not see the stand-in


def events(log: Path, kind: str | None = None) -> list[dict]:
    if not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    return [r for r in rows if kind is None or r["event"] == kind]


def req(text: str, n: int = 1, seed: int | None = 1, stop: tuple[str, ...] = (), max_tokens: int = 32):
    return GenerationRequest(
        ({"role": "user", "content": text},), n=n, params=SamplingParams(seed=seed, stop=stop, max_tokens=max_tokens)
    )


def test_engine_that_cannot_start_is_one_config_error_built_once(stand_in, monkeypatch):
    from collapse_probe.models.vllm import EngineStartError, make_vllm_model

    monkeypatch.setenv(
        "STAND_IN_VLLM_REFUSE", "No available memory for the cache blocks. Try increasing gpu_memory_utilization"
    )
    model = make_vllm_model("vllm/m", "m")
    for _ in range(3):
        with pytest.raises(EngineStartError, match="No available memory") as info:
            asyncio.run(model.generate([req("a"), req("b")]))
        assert "gpu_memory_utilization" in str(info.value) and "\n" not in str(info.value)
    assert len(events(stand_in, "build")) == 1
    # a LoRA view shares the failed engine: no second build either
    lora_model = make_vllm_model("vllm/m2", "m2", enable_lora=True)
    with pytest.raises(EngineStartError):
        asyncio.run(lora_model.with_lora(STAND_IN).generate([req("c")]))
    assert len(events(stand_in, "build")) == 2  # one per distinct model, never per request


def test_play_with_an_engine_that_cannot_start_exits_2_with_vllms_reason(stand_in, tmp_path, write_scripted):
    sim = write_scripted([("I will give [DONATE $1]", 1.0)])
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    out = tmp_path / "run"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(STAND_IN), str(REPO), os.environ.get("PYTHONPATH", "")]),
        "STAND_IN_VLLM_REFUSE": "ValueError: max_lora_rank (12) must be one of (8, 16, 32)",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "collapse_probe.cli", "play", "--policy", f"vllm/{model_dir}", "--sim", sim,
         "--tasks", "2", "--rollouts", "2", "--out", str(out), "--no-progress", "--no-cache"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "max_lora_rank (12)" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(events(stand_in, "build")) == 1
    convs = out / "conversations.jsonl"
    scored = [json.loads(x) for x in convs.read_text().splitlines()] if convs.exists() else []
    assert scored == []


def test_options_are_validated_when_configured(stand_in):
    from collapse_probe.models.vllm import lora_rank_for_vllm, make_vllm_model, validate_engine_options

    assert [lora_rank_for_vllm(r) for r in (1, 2, 8, 12, 24, 64, 300, 512)] == [1, 8, 8, 16, 32, 64, 320, 512]
    with pytest.raises(ConfigError, match="above the largest"):
        lora_rank_for_vllm(513)
    with pytest.raises(ConfigError, match="max_lora_rank.*got 12.*use 16"):
        make_vllm_model("vllm/m", "m", enable_lora=True, max_lora_rank=12)
    with pytest.raises(ConfigError, match="gpu_memory_utilization.*1.5"):
        make_vllm_model("vllm/m", "m", gpu_memory_utilization=1.5)
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        make_vllm_model("vllm/m", "m", tensor_parallel_size=0)
    with pytest.raises(ConfigError, match="enforce_eager"):
        make_vllm_model("vllm/m", "m", enforce_eager="maybe")
    opts = validate_engine_options({"gpu_memory_utilization": "0.4", "max_model_len": "2048", "enforce_eager": "true"})
    assert opts == {"gpu_memory_utilization": 0.4, "max_model_len": 2048, "enforce_eager": True}
    assert events(stand_in, "build") == []  # nothing was started to find this out


def test_old_vllm_is_refused_with_the_reason(stand_in, monkeypatch):
    import vllm

    from collapse_probe.models.vllm import make_vllm_model

    monkeypatch.setattr(vllm, "__version__", "0.6.3")
    with pytest.raises(ConfigError, match=r"vLLM 0.6.3 is not supported.*vllm>=0.19.1.*transformers<5"):
        asyncio.run(make_vllm_model("vllm/m", "m").generate([req("a")]))


def test_seeded_samples_and_lora_requests(stand_in, tmp_path):
    from collapse_probe.models.vllm import make_vllm_model

    model = make_vllm_model("vllm/m", "m", enable_lora=True, max_lora_rank=16)
    [a] = asyncio.run(model.generate([req("x", n=4, seed=7)]))
    [b] = asyncio.run(model.generate([req("x", n=4, seed=7).with_samples(2, 2)]))
    assert a.ok and len(a.completions) == 4
    assert [c.text for c in b.completions] == [c.text for c in a.completions[2:]]
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_bytes(b"v1")
    view = model.with_lora(adapter, name="step1")
    asyncio.run(view.generate([req("y")]))
    first = events(stand_in, "chat")[-1]["lora_id"]
    asyncio.run(view.generate([req("y")]))
    assert events(stand_in, "chat")[-1]["lora_id"] == first  # same files: the same adapter id
    (adapter / "adapter_model.safetensors").write_bytes(b"v2")
    os.utime(adapter / "adapter_model.safetensors", (1e9 + 5, 1e9 + 5))
    asyncio.run(view.generate([req("y")]))
    assert events(stand_in, "chat")[-1]["lora_id"] != first  # rewritten in place: reloaded under a new id
    assert len(events(stand_in, "build")) == 1


def test_stop_rule_matches_the_local_backend(stand_in, monkeypatch):
    from collapse_probe.models.vllm import make_vllm_model

    assert find_stop("\n\nHello\nnext", ["\n"]) == (7, 1)
    assert find_stop("\nPersuader: hi", ["\nPersuader:"]) is None  # starts inside the leading whitespace
    monkeypatch.setenv("STAND_IN_VLLM_TEXT", "\nHello there\nPersuader: more")
    model = make_vllm_model("vllm/m", "m")
    [r] = asyncio.run(model.generate([req("x", stop=("\n", "Persuader:"), max_tokens=64)]))
    [c] = r.completions
    # vLLM alone would stop on the leading newline and return an empty turn
    assert c.text == "\nHello there" and c.finish_reason == "stop"
    assert "".join(map(chr, c.token_ids)) == "\nHello there\n"  # through the token that completed the stop
    assert c.n_tokens == len(c.token_ids)


def test_sleep_mode_releases_between_rollouts(stand_in):
    from collapse_probe.models.vllm import make_vllm_model

    model = make_vllm_model("vllm/m", "m", enable_sleep_mode=True)
    model.sleep()  # before the engine exists: nothing to release
    asyncio.run(model.generate([req("a")]))
    model.sleep()
    [r] = asyncio.run(model.generate([req("b")]))  # woken up before sampling
    assert r.ok
    kinds = [e["event"] for e in events(stand_in)]
    assert kinds == ["build", "built", "chat", "sleep", "wake_up", "chat"]


def test_engine_gets_an_explicit_seed_and_batch_invariant_kernels(stand_in, monkeypatch):
    from collapse_probe.models.vllm import make_vllm_model

    model = make_vllm_model("vllm/m", "m", dtype="bfloat16")
    assert model.fingerprint().endswith(";dtype=bfloat16;device=cuda;kernels=batch-invariant")
    asyncio.run(model.generate([req("a", seed=None)]))
    [build] = events(stand_in, "build")
    assert isinstance(build["options"]["seed"], int)  # never vLLM's default seed 0 for unseeded requests
    assert build["batch_invariant_env"] == "1" and os.environ["VLLM_BATCH_INVARIANT"] == "1"
    seeded = make_vllm_model("vllm/m2", "m2", seed="5")
    seeded.start()  # eagerly, as replicas sharing a GPU do one after another
    assert events(stand_in, "build")[-1]["options"]["seed"] == 5

    monkeypatch.delenv("VLLM_BATCH_INVARIANT")
    plain = make_vllm_model("vllm/m3", "m3", batch_invariant="false")
    assert plain.fingerprint().endswith(";kernels=default") and plain.fingerprint() != model.fingerprint()
    plain.start()
    assert events(stand_in, "build")[-1]["batch_invariant_env"] is None and "batch_invariant" not in str(
        events(stand_in, "build")[-1]["options"]
    )
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "0")  # the user's choice wins
    kept = make_vllm_model("vllm/m4", "m4")
    kept.start()
    assert events(stand_in, "build")[-1]["batch_invariant_env"] == "0" and kept.fingerprint().endswith("=default")


def test_processed_logprobs_under_top_p_are_refused(stand_in):
    from collapse_probe.models.vllm import make_vllm_model

    model = make_vllm_model("vllm/m", "m", logprobs_mode="processed_logprobs")
    nucleus = GenerationRequest(
        ({"role": "user", "content": "x"},), params=SamplingParams(seed=1, top_p=0.9, logprobs=True)
    )
    with pytest.raises(ConfigError, match=r"processed_logprobs.*top_p=0.9.*raw_logprobs"):
        asyncio.run(model.generate([nucleus]))
    assert events(stand_in, "build") == []  # refused before anything started
    [ok] = asyncio.run(model.generate([req("x")]))  # top_p = 1: the processed log-probabilities are the model's
    assert ok.ok
    raw = make_vllm_model("vllm/m2", "m2")  # raw log-probabilities do not depend on top_p
    [r] = asyncio.run(raw.generate([nucleus]))
    assert r.ok
