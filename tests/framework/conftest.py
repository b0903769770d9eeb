"""Helpers of the framework tier: a real Hugging Face tokenizer small enough to build in a test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from collapse_probe.core._resources import package_path

DIVERSE = f"scripted:{package_path('data', 'scripted', 'p4g_donor_diverse.json')}"
"""A scripted donor with several distinct replies (cheap, seeded)."""

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_tokenizer(directory: Path) -> Any:
    """A byte-level BPE tokenizer without merges (every text round-trips) with a ChatML template, saved
    to ``directory`` (frameworks load tokenizers by path) and returned loaded through ``AutoTokenizer``."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|pad|>",
                                                additional_special_tokens=["<|im_start|>"])  # fmt: skip
    fast.chat_template = CHAT_TEMPLATE
    directory.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(directory)
    return transformers.AutoTokenizer.from_pretrained(directory)


@pytest.fixture
def donor() -> str:
    return DIVERSE


@pytest.fixture
def tokenizer(tmp_path: Path) -> tuple[Any, Path]:
    """``(tokenizer, its directory)``: :func:`byte_tokenizer` saved under the test's tmp_path."""
    path = tmp_path / "tokenizer"
    return byte_tokenizer(path), path


def pytest_collection_modifyitems(items: list[Any]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.framework)
