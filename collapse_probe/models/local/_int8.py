"""Int8 weights for the embedded CPU models: every linear layer computes in integers.

:class:`Int8Linear` holds a layer's weight as int8 with one float32 scale per output channel
(symmetric: ``W ≈ q · s``, ``s = max|W_row| / 127``). Each call quantizes its input the same way,
one scale per row (per token), multiplies the int8 matrices with ``torch._int_mm`` (int32
accumulation; the VNNI kernels torch ships for x86 CPUs) and rescales. Per-token input scales alone
lose most where a few input channels carry outliers, so each layer first divides its input by a
per-channel smoothing vector and multiplies its weight columns by the same vector (SmoothQuant,
Xiao et al. 2023, α = 0.5: ``m_j = sqrt(max|X_j| / max|W_j|)``), calibrated once on
:data:`CALIBRATION_TEXT`, a fixed passage that is none of the audits' states or the quality
check's text.

* Rows are independent and each integer product is exact, but the float32 parts (attention, norms)
  change a row's activations by ~1e-5 between a padded batch and the row alone, and now and then
  that moves an activation across a rounding step: texts are **not** the same alone and in a
  batch (float32's are). Each row is still a draw from the int8 model; the seed reproduces it
  for the same batch.
* A row reads one byte per weight instead of four: decoding is about twice as fast, one row or a
  batch (``benchmarks/local_generation.py`` prints the ratios).

What it costs in fidelity is measured, not assumed: ``benchmarks/int8_quality.py`` compares the
log-likelihood per token and the audit's numbers against float32, and ``benchmarks/int8_equivalence.py``
tests the collapse error for equivalence (TOST, margin ±0.05) at states near ε* = 0.2 (``docs/embedded-int8.md``).

torch's weight-only kernel (``torch._weight_int8pack_mm``, float activations) was measured 10-20×
slower than float32 on these CPUs, and its dynamic quantization (``quantize_dynamic``) shares one
activation scale across the batch, so a row's numbers would depend on every other row: neither is used.
"""

from __future__ import annotations

from typing import Any, cast

import torch

__all__ = [
    "CALIBRATION_TEXT",
    "SCHEME",
    "SMOOTHING_ALPHA",
    "WEIGHTS_ATTR",
    "Int8Linear",
    "quantize_int8",
    "weights_name",
]

_PEAK_FLOOR = 1e-30
"""The smallest row peak a row's scale is taken from: 127 / 1e-30 stays finite in float32 (127 / the
smallest normal would overflow, and 0 · inf is NaN), so a zero row quantizes to zeros; a row whose
largest entry is below 1e-30 is quantized on this coarser scale (entries below ~4e-33 become 0)."""

SMOOTHING_ALPHA = 0.5
"""SmoothQuant's migration strength: the input's range and the weight's share the outliers equally."""
CALIBRATION_TEXT = (
    "System: You are a helpful assistant.\nUser: Can you tell me about the weather in Paris in spring?\n"
    "Assistant: Spring in Paris is mild, with cool mornings and pleasant afternoons. It rains now and then, "
    "so bring an umbrella.\nUser: What should I pack for a week?\nAssistant: Light layers, a jacket, comfortable "
    "shoes for walking, and something a little nicer for dinner.\nUser: Thanks! I also want to visit a museum.\n"
    "Assistant: The Louvre and the Musée d'Orsay are both wonderful; book tickets online to skip the line."
)
"""What the smoothing vectors are calibrated on: a chat about travel, no benchmark's text."""
SCHEME = "smoothquant-r2"
"""Names how :func:`quantize_int8` and :class:`Int8Linear` compute (part of an int8 model's
fingerprint, so samples decoded by an earlier revision are never served for this one): r2 multiplies
by the reciprocals of the smoothing vector and of the row's scale instead of dividing, which moves
an input across a rounding step now and then."""
WEIGHTS_ATTR = "collapse_probe_weights"
"""Attribute a quantized model carries (``"int8"``): part of its fingerprint (its tie tolerance stays
float32's: the integer products are exact)."""


class Int8Linear(torch.nn.Module):
    """A ``torch.nn.Linear`` with int8 weights (per output channel) and int8 inputs (per row)."""

    def __init__(self, weight: Any, bias: Any | None, smooth: Any | None = None) -> None:
        super().__init__()
        w = weight.detach().to(torch.float32)
        if smooth is not None:  # W' = W · diag(m), x' = x / m: the same product, outliers shared
            smooth = smooth.detach().to(torch.float32).contiguous()
            w = w * smooth[None, :]
        self.register_buffer("inv_smooth", None if smooth is None else 1.0 / smooth)
        scale = (w.abs().amax(dim=1) / 127.0).clamp(min=torch.finfo(torch.float32).tiny)
        q = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
        self.in_features = int(w.shape[1])
        self.out_features = int(w.shape[0])
        self.register_buffer("weight_q", q)  # [out, in]; passed transposed, as _int_mm's fast layout wants
        self.register_buffer("out_scale", (scale / 127.0).contiguous())  # the weight's scale / the input's 127 steps
        self.register_buffer("bias", None if bias is None else bias.detach().to(torch.float32).clone())

    def forward(self, x: Any) -> Any:
        return int8_linear(
            x,
            cast(torch.Tensor, self.weight_q).t(),
            cast(torch.Tensor, self.out_scale),
            cast("torch.Tensor | None", self.inv_smooth),
            cast("torch.Tensor | None", self.bias),
        )

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def int8_linear(x: Any, weight_t: Any, out_scale: Any, inv_smooth: Any | None, bias: Any | None) -> Any:
    """:class:`Int8Linear`'s product from its tensors: ``weight_t`` the int8 weight transposed (``[in, out]``),
    ``out_scale`` its per-channel scale over 127, ``inv_smooth`` the smoothing vector's reciprocal. A caller
    that runs the same layer many times (a decoding step) binds them once instead of looking them up."""
    shape = x.shape
    rows = x.reshape(-1, weight_t.shape[0])
    if rows.dtype != torch.float32:
        rows = rows.float()
    if inv_smooth is not None:
        rows = rows * inv_smooth
    peak = rows.abs().amax(dim=1, keepdim=True).clamp_(min=_PEAK_FLOOR)  # the row's scale is peak / 127
    # |rows · 127 / peak| ≤ 127 up to one rounding of the product, so the int8 cast needs no clamp
    xq = (rows * torch.reciprocal(peak).mul_(127.0)).round_().to(torch.int8)
    acc = torch._int_mm(xq, weight_t)  # int32 [rows, out], exact
    y = torch.mul(acc, out_scale).mul_(peak)  # the int32 product promoted to float32 by the multiplication
    if bias is not None:
        y = y.add_(bias)
    y = y.reshape(*shape[:-1], weight_t.shape[1])
    return y if x.dtype == torch.float32 else y.to(x.dtype)


def smoothing_vectors(model: Any, input_ids: Any, alpha: float = SMOOTHING_ALPHA) -> dict[str, torch.Tensor]:
    """Per linear layer of ``model``, SmoothQuant's vector ``m_j = max|X_j|^α / max|W_j|^(1−α)`` from
    one float32 forward pass over ``input_ids`` (``max|X_j|``: the layer's input channel j over every
    token; ``max|W_j|``: weight column j).

    Each layer gets its own vector. Layers that read one input (a block's query, key and value) could
    share one and be computed as one product, but a shared vector fits each of them worse: measured on
    SmolLM2-135M over 2,172 teacher-forced P4G tokens, the mean |Δ log p| against float32 went from
    0.120 to 0.133 nats (one token by 3.9) for no measurable speed (the weights are read once either way)."""
    seen: dict[str, torch.Tensor] = {}  # per linear layer: the largest |input| of each input channel so far
    hooks = []
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear):

            def hook(_mod: Any, inputs: Any, _out: Any, name: str = name) -> None:
                a = inputs[0].detach().reshape(-1, inputs[0].shape[-1]).abs().amax(dim=0).to(torch.float32)
                seen[name] = a if name not in seen else torch.maximum(seen[name], a)

            hooks.append(mod.register_forward_hook(hook))
    try:
        with torch.inference_mode():
            model(input_ids=input_ids)
    finally:
        for h in hooks:
            h.remove()
    out = {}
    floor = 1e-5
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and name in seen:
            w_max = mod.weight.detach().abs().amax(dim=0).to(torch.float32).clamp(min=floor)
            out[name] = (seen[name].clamp(min=floor) ** alpha / w_max ** (1 - alpha)).clamp(min=floor)
    return out


def quantize_int8(model: Any, tokenizer: Any | None = None) -> Any:
    """Replace every ``torch.nn.Linear`` of ``model`` (the output head included) by an
    :class:`Int8Linear`, in place; the embeddings stay float32. With ``tokenizer``, each layer is
    smoothed first (:func:`smoothing_vectors` on :data:`CALIBRATION_TEXT`); without, per-token
    scales alone. Returns ``model``, marked with :data:`WEIGHTS_ATTR`."""
    smooth: dict[str, torch.Tensor] = {}
    if tokenizer is not None:
        ids = torch.tensor([tokenizer(CALIBRATION_TEXT)["input_ids"]])
        smooth = smoothing_vectors(model, ids)
    targets = [(name, mod) for name, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)]
    for name, mod in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, Int8Linear(mod.weight, mod.bias, smooth.get(name)))
    setattr(model, WEIGHTS_ATTR, "int8")
    if hasattr(model, "config"):
        model.config.tie_word_embeddings = False  # the head is its own int8 copy now
    return model


def weights_name(model: Any) -> str:
    """``"int8"`` for a model :func:`quantize_int8` converted, else its parameters' dtype (``"float32"``)."""
    marked = getattr(model, WEIGHTS_ATTR, None)  # a PEFT wrapper passes the lookup on to its base model
    if isinstance(marked, str):
        return marked
    return str(next(model.parameters()).dtype).removeprefix("torch.")
