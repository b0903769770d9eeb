"""Truncated importance sampling for a rollout backend that is not the learner (vLLM), on CPU.

A tiny random Llama stands in for the learner; the "sampler" log-probabilities are the learner's own
shifted by known amounts, so the per-token weights min(exp(lp_learner - lp_sampler), cap), the
logged mismatch and the resulting gradients are known exactly.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from collapse_probe.trainers.reinforce import (  # noqa: E402
    TrainingExample,
    collate,
    reinforce_backward,
    token_logprobs,
)


def _model():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=64,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(cfg)


def _examples() -> list[TrainingExample]:
    # different lengths, so the update's length sort reorders them: the sampler log-probs must follow
    return [
        TrainingExample([1, 2, 3, 4, 5], [6, 7], advantage=1.0),
        TrainingExample([1, 2], [8, 9, 10], advantage=-0.5),
        TrainingExample([3, 4, 5], [11], advantage=0.25),
    ]


def _learner_logprobs(model, examples) -> list[list[float]]:
    with torch.no_grad():
        out = []
        for e in examples:
            logp, _ = token_logprobs(model, collate([e], pad_id=0), 1.0)
            out.append(logp.tolist())
    return out


def _grads(model, examples, **kw):
    model.zero_grad(set_to_none=True)
    stats = reinforce_backward(model, examples, pad_id=0, micro_batch=2, **kw)
    return stats, [p.grad.detach().clone() for p in model.parameters() if p.grad is not None]


def test_equal_sampler_gives_the_on_policy_gradient_and_zero_mismatch():
    model = _model()
    base = _examples()
    _, g0 = _grads(model, base)
    lps = _learner_logprobs(model, base)
    same = [
        TrainingExample(e.prompt_ids, e.completion_ids, e.advantage, sampler_logprobs=lp)
        for e, lp in zip(base, lps, strict=True)
    ]
    stats, g1 = _grads(model, same, tis_cap=2.0)
    assert stats["logprob_mismatch"] == pytest.approx(0.0, abs=1e-5)
    assert stats["tis_clipped_share"] == 0.0
    for a, b in zip(g0, g1, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_weights_are_truncated_ratios_aligned_per_token():
    model = _model()
    base = _examples()
    lps = _learner_logprobs(model, base)
    shifts = [1.0, -3.0, 0.5]  # sampler more confident (w = e^-1), less (w = e^3 -> cap 2), more (e^-0.5)
    shifted = [
        TrainingExample(e.prompt_ids, e.completion_ids, e.advantage, sampler_logprobs=[x + s for x in lp])
        for e, lp, s in zip(base, lps, shifts, strict=True)
    ]
    stats, g = _grads(model, shifted, tis_cap=2.0)
    # the same gradient as scaling each example's advantage by its (uniform) token weight
    weights = [min(math.exp(-s), 2.0) for s in shifts]
    scaled = [
        TrainingExample(e.prompt_ids, e.completion_ids, e.advantage * w) for e, w in zip(base, weights, strict=True)
    ]
    _, g_ref = _grads(model, scaled, n_tokens=6)
    for a, b in zip(g, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert stats["logprob_mismatch"] == pytest.approx((2 * 1.0 + 3 * 3.0 + 1 * 0.5) / 6, rel=1e-5)
    assert stats["tis_clipped_share"] == pytest.approx(3 / 6)
    # without the cap the mismatch is still measured, the gradient is the sampled one
    stats_off, g_off = _grads(model, shifted)
    _, g_plain = _grads(model, base)
    assert stats_off["tis_clipped_share"] is None and stats_off["logprob_mismatch"] == pytest.approx(
        stats["logprob_mismatch"]
    )
    for a, b in zip(g_off, g_plain, strict=True):
        torch.testing.assert_close(a, b)
