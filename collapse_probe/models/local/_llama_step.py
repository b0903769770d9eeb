"""One decoding step of a transformers Llama model (SmolLM2), without the forward pass's per-layer machinery.

A decoding step feeds one token per row through every layer. transformers' forward does that through
nested modules, keyword plumbing, a mask builder and a rotary module per call -- a few thousand small
Python-level operations per token, which one row at a time on a CPU cost as much as reading the
weights. :class:`LlamaDecodeStep` computes the same step from the same weights and the same KV cache
with the operations in the same order, just fewer of them around:

* the rotary angles once per step for every layer, applied with one half-swap per tensor;
* the padding mask once per step (none when no row is padded, as transformers does);
* every projection called directly (``torch.nn.functional.linear`` for a plain ``torch.nn.Linear``,
  the int8 layer's own ``forward``), not through the module call machinery.

The prefill and the canonical recomputation of near-ties stay transformers' own forward, on the same
cache: the step reads and extends the keys and values the prefill wrote. Its logits equal
transformers' up to float rounding (a few 1e-6 in float32: ``tests/models/test_llama_step.py``
checks every step of a decode against the transformers forward), below the tie tolerance that
decides when a decision is retaken canonically, so float32 texts are the ones transformers' forward
would give.

Only transformers' own ``LlamaForCausalLM`` with the default rotary embedding, full attention in every
layer, no biases, SiLU, SDPA attention and no hooks is taken (:meth:`LlamaDecodeStep.supports`); anything
else (Gemma, a sliding window, a PEFT wrapper, a model in training) decodes through transformers' forward.
"""

from __future__ import annotations

from typing import Any, cast

import torch

__all__ = ["LlamaDecodeStep"]


def _projection(module: Any) -> Any:
    """A callable computing ``module`` (a ``torch.nn.Linear`` or an int8 layer) without its ``__call__``."""
    from collapse_probe.models.local._int8 import Int8Linear, int8_linear

    if type(module) is torch.nn.Linear:
        weight, bias = module.weight, module.bias
        return lambda x: torch.nn.functional.linear(x, weight, bias)
    if type(module) is Int8Linear:  # its tensors bound once for the whole decode
        bound: tuple[Any, ...] = (
            cast(torch.Tensor, module.weight_q).t(),
            module.out_scale,
            module.inv_smooth,
            module.bias,
        )
        return lambda x: int8_linear(x, *bound)
    return module.forward


class _Layer:
    __slots__ = ("down", "gate", "in_norm", "k", "o", "post_norm", "q", "up", "v")

    def __init__(self, layer: Any) -> None:
        attn, mlp = layer.self_attn, layer.mlp
        self.in_norm = layer.input_layernorm.weight
        self.post_norm = layer.post_attention_layernorm.weight
        self.q, self.k, self.v = (_projection(m) for m in (attn.q_proj, attn.k_proj, attn.v_proj))
        self.o = _projection(attn.o_proj)
        self.gate, self.up = _projection(mlp.gate_proj), _projection(mlp.up_proj)
        self.down = _projection(mlp.down_proj)


class LlamaDecodeStep:
    """The next-token logits of every row from its one new token, extending ``cache`` in place."""

    def __init__(self, model: Any) -> None:
        cfg = model.config
        base = model.model
        self.model = model
        self.eps = float(cfg.rms_norm_eps)
        self.heads = int(cfg.num_attention_heads)
        self.kv_heads = int(cfg.num_key_value_heads)
        self.head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)
        self.scaling = self.head_dim**-0.5
        self.embed = base.embed_tokens.weight
        self.inv_freq = base.rotary_emb.inv_freq.float()
        self.layers = [_Layer(layer) for layer in base.layers[: cfg.num_hidden_layers]]
        self.norm = base.norm.weight
        self.head = _projection(model.lm_head)

    @staticmethod
    def supports(model: Any) -> bool:
        """Whether ``model`` is a Llama this step computes exactly as transformers does: transformers'
        own ``LlamaForCausalLM`` (5.x: its ``rope_parameters``, its cache's ``layers``) in evaluation,
        float32 around the projections, SDPA attention (torch >= 2.5: ``enable_gqa``), the default
        rotary embedding, full attention in every layer, no biases, SiLU, no hooks (PEFT, accelerate or
        the user's: the step calls the projections directly, so a hook would be skipped)."""
        try:
            from transformers import LlamaForCausalLM
        except ImportError:
            return False
        if type(model) is not LlamaForCausalLM or model.training:
            return False
        cfg = model.config
        rope = getattr(cfg, "rope_parameters", None)
        layer_types = getattr(cfg, "layer_types", None) or []
        torch_version = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2] if x.isdigit())
        return (
            isinstance(rope, dict)
            and rope.get("rope_type", "default") == "default"
            and torch_version >= (2, 5)
            and getattr(cfg, "_attn_implementation", None) == "sdpa"
            and getattr(cfg, "sliding_window", None) is None
            and all(t == "full_attention" for t in layer_types)
            and not getattr(cfg, "attention_bias", False)
            and not getattr(cfg, "mlp_bias", False)
            and getattr(cfg, "hidden_act", None) == "silu"
            and getattr(cfg, "pretraining_tp", 1) == 1
            and float(getattr(model.model.rotary_emb, "attention_scaling", 1.0)) == 1.0
            and not hasattr(model, "peft_config")
            and model.model.embed_tokens.weight.dtype == torch.float32  # float32 or int8 (float32 around the integers)
            and not any(m._forward_hooks or m._forward_pre_hooks or hasattr(m, "_hf_hook") for m in model.modules())
        )

    def _rms(self, x: Any, weight: Any) -> Any:
        variance = x.pow(2).mean(-1, keepdim=True)
        return weight * (x * torch.rsqrt(variance + self.eps))

    def __call__(self, tokens: Any, positions: Any, mask: Any | None, cache: Any) -> Any:
        """Logits ``[rows, vocab]`` for ``tokens`` ``[rows, 1]`` at ``positions`` ``[rows, 1]``; ``mask`` is the
        ``[rows, length]`` padding mask over the cache's keys and this step's (``None``: no row is padded)."""
        rows = tokens.shape[0]
        half = self.head_dim // 2
        x = torch.nn.functional.embedding(tokens, self.embed)  # [rows, 1, hidden]
        freqs = positions[..., None].float() * self.inv_freq  # [rows, 1, half]
        emb = torch.cat((freqs, freqs), dim=-1)[:, None]  # [rows, 1 (heads), 1, head_dim]
        cos, sin = emb.cos(), emb.sin()
        attn_mask = None if mask is None else mask.bool()[:, None, None, :]
        groups = self.heads // self.kv_heads
        for i, layer in enumerate(self.layers):
            h = self._rms(x, layer.in_norm)
            q, k, v = layer.q(h), layer.k(h), layer.v(h)
            q = q.view(rows, 1, self.heads, self.head_dim).transpose(1, 2)
            k = k.view(rows, 1, self.kv_heads, self.head_dim).transpose(1, 2)
            v = v.view(rows, 1, self.kv_heads, self.head_dim).transpose(1, 2)
            q = (q * cos) + (torch.cat((-q[..., half:], q[..., :half]), dim=-1) * sin)
            k = (k * cos) + (torch.cat((-k[..., half:], k[..., :half]), dim=-1) * sin)
            keys, values = cache.layers[i].update(k, v)
            if attn_mask is None and groups > 1:
                out = torch.nn.functional.scaled_dot_product_attention(
                    q, keys, values, scale=self.scaling, enable_gqa=True
                )
            else:  # one query token: its heads of a key head are that head's queries (transformers' pack_gqa)
                out = torch.nn.functional.scaled_dot_product_attention(
                    q.reshape(rows, self.kv_heads, groups, self.head_dim),
                    keys,
                    values,
                    attn_mask=attn_mask,
                    scale=self.scaling,
                )
            out = out.reshape(rows, -1, 1, self.head_dim).transpose(1, 2).reshape(rows, 1, -1)
            x = x + layer.o(out)
            h = self._rms(x, layer.post_norm)
            x = x + layer.down(torch.nn.functional.silu(layer.gate(h)) * layer.up(h))
        x = self._rms(x, self.norm)
        return self.head(x)[:, -1, :]
