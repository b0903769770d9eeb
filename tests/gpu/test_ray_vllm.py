"""vLLM replicas as Ray actors on a CUDA machine, with the random Llama of the tier (``conftest.py``).

Run with ``python -m pytest -m gpu tests/gpu/test_ray_vllm.py -rA -s``. Two replicas share one GPU
(half a GPU each, a third of its memory each; their engines start one after the other), so the test
runs on a single-GPU machine. With batch-invariant kernels (the backend's default) a seeded sample
does not depend on its batch, so the two replicas' halves equal one engine's whole batch.
"""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vllm"),
    pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray"),
]


def test_vllm_replicas_split_a_batch_and_repeat_it_exactly(gpu_model):
    from collapse_probe.models import GenerationRequest, SamplingParams, get_model
    from collapse_probe.models.ray_replicas import ray_replicas

    spec = f"vllm/{gpu_model}"
    reqs = [
        GenerationRequest(
            ({"role": "user", "content": f"count to {i}"},), n=3, params=SamplingParams(seed=i, max_tokens=8)
        )
        for i in range(8)
    ]
    options = {"replica_gpus": 0.5, "gpu_memory_utilization": 0.3, "max_model_len": 512}
    with ray_replicas("local", replicas=2) as session:
        model = get_model(spec, **options)
        first = asyncio.run(model.generate(reqs))
        again = asyncio.run(model.generate(reqs))
        spread = session.models[spec].stats_.samples_per_replica
    assert all(r.ok and len(r.completions) == 3 for r in first), [r.error for r in first]
    assert sorted(spread) == [24, 24]  # both replicas served half of each batch
    assert [[c.text for c in r.completions] for r in first] == [[c.text for c in r.completions] for r in again]
    print(f"GPU-SMOKE ray-vllm-replicas: ok ({spread})")


def test_vllm_replicas_sample_through_a_lora_adapter_given_by_path(gpu_model, tmp_path):
    peft = pytest.importorskip("peft")
    from collapse_probe.models import GenerationRequest, SamplingParams, get_model
    from collapse_probe.models.local import load_hf_model
    from collapse_probe.models.ray_replicas import ray_replicas

    tiny = gpu_model
    base, _ = load_hf_model(tiny, device="cpu", dtype="float32", shared=False)
    lora = peft.get_peft_model(
        base, peft.LoraConfig(r=8, lora_alpha=16, init_lora_weights=False, task_type="CAUSAL_LM")
    )
    adapter = tmp_path / "adapter"
    lora.save_pretrained(str(adapter), safe_serialization=True)
    r = GenerationRequest(({"role": "user", "content": "hi"},), n=4, params=SamplingParams(seed=1, max_tokens=8))
    options = {"replica_gpus": 0.5, "gpu_memory_utilization": 0.3, "max_model_len": 512, "enable_lora": True,
               "max_lora_rank": 8}  # fmt: skip
    with ray_replicas("local", replicas=2):
        model = get_model(f"vllm/{tiny}", **options)
        view = model.with_lora(adapter, name="rand")
        [a] = asyncio.run(view.generate([r]))
        [b] = asyncio.run(view.generate([r]))
        fp = view.fingerprint()
    assert a.ok and len(a.completions) == 4, a.error
    assert [c.text for c in a.completions] == [c.text for c in b.completions]
    assert "+lora:sha256:" in fp  # the replica hashed the adapter it loaded by path
    print("GPU-SMOKE ray-vllm-lora: ok")
