"""The GPU tier: what ships, on a CUDA machine, with a random Llama built offline (or ``$COLLAPSE_PROBE_GPU_MODEL``).

Run with ``python -m pytest -m gpu tests/gpu -rA -s`` (``scripts/gpu_smoke.sh`` does, with a time
limit, and prints a pass / fail line per path). The torch-CUDA paths need only torch; the vLLM paths
skip without ``vllm``. When nothing runs (no CUDA) the session fails and says so (``conftest.py``).
Every test prints one ``GPU-SMOKE`` line with what it measured.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

vllm_needed = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vllm")


@pytest.fixture
def donor(write_scripted):
    return write_scripted([("Sure, I will give. [DONATE $2]", 0.5), ("No thanks. [DONATE $0]", 0.5)])


def _metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _cfg(model: Path, donor: str, **kw):
    from collapse_probe.trainers import TrainConfig

    base = dict(
        method="single", policy=f"hf/{model}", sims=[donor], group_size=2, tasks=2, max_turns=2, max_tokens=12,
        collapse_samples=3, collapse_states=1, train_batch=8, seed=3, device="cuda", steps=2,
    )  # fmt: skip
    return TrainConfig(**{**base, **kw})


def _request(text: str, seed: int | None, n: int = 1, max_tokens: int = 16, **params):
    from collapse_probe.models import GenerationRequest, SamplingParams

    return GenerationRequest(
        ({"role": "user", "content": text},), n=n, params=SamplingParams(seed=seed, max_tokens=max_tokens, **params)
    )


def _backend(model_dir: Path, dtype: str):
    from collapse_probe.models.local import make_hf_model

    return make_hf_model(f"hf/{model_dir}", str(model_dir), device="cuda", dtype=dtype)


def _ids(result) -> list[list[int]]:
    assert result.ok, result.error
    return [c.token_ids for c in result.completions]


def test_torch_cuda_float32_samples_are_the_same_alone_and_in_a_batch(gpu_model):
    backend = _backend(gpu_model, "float32")
    target = _request("hello there", seed=5, n=4)
    others = [_request("Tell me a long story about a knight. " * 4, seed=6, n=3), _request("Hi", seed=None, n=2)]
    alone = _ids(asyncio.run(backend.generate([target]))[0])
    assert alone == _ids(asyncio.run(backend.generate([target]))[0])  # a repeat draws the same
    mixed = asyncio.run(backend.generate([others[0], target, others[1]]))
    assert _ids(mixed[1]) == alone  # padded into a bigger batch: the same tokens
    print(f"GPU-SMOKE torch-cuda-fp32-batch-invariance: {len(alone)} seeded samples identical alone and in a batch, "
          f"{backend.canonical_recomputes_} near-tie recomputes")  # fmt: skip


def test_torch_cuda_bfloat16_generation_is_seeded_and_says_how_batch_independent_it_is(gpu_model):
    backend = _backend(gpu_model, "bfloat16")
    targets = [_request(f"question {i}: what do you think?", seed=100 + i, n=2) for i in range(8)]
    first = [_ids(r) for r in asyncio.run(backend.generate(targets))]
    assert first == [_ids(r) for r in asyncio.run(backend.generate(targets))]  # the same batch repeats exactly
    alone = [_ids(asyncio.run(backend.generate([t]))[0]) for t in targets]
    same = sum(a == b for x, y in zip(first, alone, strict=True) for a, b in zip(x, y, strict=True))
    print(f"GPU-SMOKE torch-cuda-bf16-batch-invariance: {same}/{2 * len(targets)} samples identical alone and in a "
          f"batch of {2 * len(targets)} (tie tolerance from bfloat16), {backend.canonical_recomputes_} near-tie recomputes")  # fmt: skip


def test_fingerprints_hold_dtype_and_device_and_cached_samples_never_cross(gpu_model, tmp_path):
    from collapse_probe.models._cache import CachedModel, ResponseCache

    cache = ResponseCache(tmp_path / "responses.sqlite")
    fp32, bf16 = (CachedModel(_backend(gpu_model, d), cache) for d in ("float32", "bfloat16"))
    assert fp32.fingerprint().endswith(";dtype=float32;device=cuda")
    assert bf16.fingerprint().endswith(";dtype=bfloat16;device=cuda")
    r = _request("hello", seed=3, n=2)
    asyncio.run(fp32.generate([r]))
    asyncio.run(bf16.generate([r]))
    assert (fp32.misses, bf16.misses, len(cache)) == (2, 2, 4)  # the bf16 model sampled its own
    print("GPU-SMOKE fingerprints: float32 and bfloat16 on cuda keep separate cache entries")


def test_torch_cuda_throughput_against_transformers_generate(real_shape_model):
    """Batched decoding of the real model shape: ours vs ``model.generate`` on the same prompts."""
    backend = _backend(real_shape_model, "bfloat16")
    rows, new = 32, 48
    reqs = [_request(f"Tell me about topic number {i}. " * (1 + i % 3), seed=i, max_tokens=new) for i in range(rows)]
    asyncio.run(backend.generate(reqs[:2]))  # warm-up
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    ours = asyncio.run(backend.generate(reqs))
    torch.cuda.synchronize()
    ours_s = time.perf_counter() - t0
    ours_tokens = sum(c.n_tokens or 0 for r in ours for c in r.completions)
    peak = torch.cuda.max_memory_allocated() / 2**20
    prompts = [backend.prompt_ids(r) for r in reqs]
    width = max(len(p) for p in prompts)
    pad = backend._pad_id()
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device="cuda")
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device="cuda")
    with torch.inference_mode():
        backend.model.generate(ids[:2], attention_mask=mask[:2], max_new_tokens=4, do_sample=True, pad_token_id=pad)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = backend.model.generate(ids, attention_mask=mask, max_new_tokens=new, do_sample=True, pad_token_id=pad)
        torch.cuda.synchronize()
    hf_s = time.perf_counter() - t0
    hf_tokens = int((out[:, width:] != pad).sum()) or rows * new
    print(f"GPU-SMOKE torch-cuda-throughput ({real_shape_model.name}, bf16, {rows} rows x {new} tokens): "
          f"ours {ours_tokens / ours_s:.0f} tok/s, transformers generate {hf_tokens / hf_s:.0f} tok/s "
          f"(ratio {(ours_tokens / ours_s) / (hf_tokens / hf_s):.2f}), peak memory {peak:.0f} MiB, "
          f"{backend.canonical_recomputes_} near-tie recomputes")  # fmt: skip


def test_torch_cuda_training_with_kl_and_resume(gpu_model, donor, tmp_path):
    from collapse_probe.trainers.llm import LLMTrainer

    out = tmp_path / "train"
    torch.cuda.reset_peak_memory_stats()
    trainer = LLMTrainer(_cfg(gpu_model, donor, kl_coef=0.05, steps=1), out)
    trainer.run()
    lora_b = sum(float(p.detach().abs().sum()) for n, p in trainer.policy.model.named_parameters() if "lora_B" in n)
    assert lora_b > 0 and next(trainer.policy.model.parameters()).is_cuda
    resumed = LLMTrainer(_cfg(gpu_model, donor, kl_coef=0.05, steps=2), out)
    resumed.run()
    m = _metrics(out)
    assert [r["step"] for r in m] == [1, 2] and all("kl" in r and r["kl"] >= 0 for r in m)
    peak = torch.cuda.max_memory_allocated() / 2**20
    print(f"GPU-SMOKE torch-cuda-train: 2 steps, {m[-1]['seconds']:.2f} s/step, kl={m[-1]['kl']:.3g}, "
          f"peak memory {peak:.0f} MiB, resumed at step 2")  # fmt: skip


def _adapter(model_dir: Path, out: Path) -> Path:
    peft = pytest.importorskip("peft")
    from collapse_probe.models.local import load_hf_model

    base, _ = load_hf_model(model_dir, device="cpu", dtype="float32", shared=False)
    lora = peft.get_peft_model(
        base, peft.LoraConfig(r=8, lora_alpha=16, init_lora_weights=False, task_type="CAUSAL_LM")
    )
    lora.save_pretrained(str(out), safe_serialization=True)
    return out


@vllm_needed
def test_vllm_generate_and_chat_with_lora_across_sleep_and_wake(gpu_model, tmp_path):
    from collapse_probe.models.vllm import make_vllm_model

    adapter = _adapter(gpu_model, tmp_path / "adapter")
    model = make_vllm_model(
        f"vllm/{gpu_model}", str(gpu_model), enable_lora=True, max_lora_rank=8, gpu_memory_utilization=0.3,
        max_model_len=512, enable_sleep_mode=True,
    )  # fmt: skip
    r = _request("hi", seed=1, n=3, max_tokens=8, logprobs=True)
    [a] = asyncio.run(model.generate([r]))
    [b] = asyncio.run(model.generate([r]))
    assert a.ok and [c.text for c in a.completions] == [c.text for c in b.completions]
    assert all(len(c.token_logprobs or []) == c.n_tokens for c in a.completions)
    view = model.with_lora(adapter, name="rand")
    [before] = asyncio.run(view.generate([r]))
    assert before.ok and len(before.completions) == 3
    model.sleep()
    free_asleep = torch.cuda.mem_get_info()[0]
    [after] = asyncio.run(view.generate([r]))  # wakes the engine first
    assert [c.token_ids for c in after.completions] == [c.token_ids for c in before.completions]
    transcript = make_vllm_model(f"vllm/{gpu_model}#t", str(gpu_model), prompt_style="transcript")
    transcript._shared = model._shared  # one engine
    rt = _request("hi", seed=2, max_tokens=6)
    rt = type(rt)(rt.messages, prompt="User: hi\nBot:", params=rt.params)
    [t] = asyncio.run(transcript.generate([rt]))
    assert t.ok
    print(f"GPU-SMOKE vllm-generate-chat-lora-sleep-wake: adapter output identical across sleep/wake "
          f"({free_asleep / 2**30:.1f} GiB free while asleep), kernels: {model.fingerprint().rsplit('=', 1)[-1]}")  # fmt: skip


@vllm_needed
def test_trainer_rollouts_through_vllm_log_the_mismatch(gpu_model, donor, tmp_path):
    from collapse_probe.trainers.llm import LLMTrainer

    out = tmp_path / "vllm-train"
    cfg = _cfg(gpu_model, donor, rollout_backend="vllm", dtype="bfloat16", vllm_options={"max_model_len": 1024})
    LLMTrainer(cfg, out).run()
    m = _metrics(out)
    assert [r["step"] for r in m] == [1, 2]
    mism = [r["logprob_mismatch"] for r in m if r.get("logprob_mismatch") is not None]
    assert mism, "vLLM rollouts reported no log-probabilities"
    print(f"GPU-SMOKE vllm-trainer-rollouts: mean |dlogp| per token = {sum(mism) / len(mism):.4g}, "
          f"{m[-1]['seconds']:.2f} s/step")  # fmt: skip
