"""Batched chat-model backends behind one async interface, and the response cache."""

from collapse_probe.core._identity import default_cache_path
from collapse_probe.models._cache import CachedModel, ResponseCache
from collapse_probe.models._encoder import load_encoder
from collapse_probe.models._registry import ALIASES, BACKENDS, DEFAULT_MODEL, get_model, list_models, resolve_spec
from collapse_probe.models._types import (
    ChatModel,
    Completion,
    GenerationRequest,
    GenerationResult,
    Message,
    SamplingParams,
    ToolCallRecord,
    derive_seed,
)

__all__ = [
    "ALIASES",
    "BACKENDS",
    "DEFAULT_MODEL",
    "CachedModel",
    "ChatModel",
    "Completion",
    "GenerationRequest",
    "GenerationResult",
    "Message",
    "ResponseCache",
    "SamplingParams",
    "ToolCallRecord",
    "default_cache_path",
    "derive_seed",
    "get_model",
    "list_models",
    "load_encoder",
    "resolve_spec",
]
