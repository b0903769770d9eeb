"""Lazy registry from spec strings to backends.

A spec is ``prefix/name`` (``local/smollm2-135m``, ``openai/gpt-5-mini``, ``hf/./my-model``),
``scripted:FILE.json``, or a bare alias (``smollm2``). Each prefix maps to ``"module:attr"`` and
the module is imported only when a spec with that prefix is used, so the core install never pulls
torch or a provider SDK.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from collapse_probe.core._plugins import MODELS_GROUP, Registry
from collapse_probe.core._state import process_cache
from collapse_probe.errors import ConfigError
from collapse_probe.models._types import ChatModel

BACKENDS: Registry[Callable[..., ChatModel]] = Registry(
    "model backend",
    group=MODELS_GROUP,
    entries={
        "local": "collapse_probe.models.local:make_local_model",
        "hf": "collapse_probe.models.local:make_hf_model",
        "vllm": "collapse_probe.models.vllm:make_vllm_model",
        "openai": "collapse_probe.models.openai:make_openai_model",
        "openai-compatible": "collapse_probe.models.openai:make_openai_compatible_model",
        "azure": "collapse_probe.models.openai:make_azure_model",
        "anthropic": "collapse_probe.models.anthropic:make_anthropic_model",
        "bedrock": "collapse_probe.models.anthropic:make_bedrock_model",
        "vertex-anthropic": "collapse_probe.models.anthropic:make_vertex_anthropic_model",
        "google": "collapse_probe.models.google:make_google_model",
        "vertex": "collapse_probe.models.google:make_vertex_model",
        "litellm": "collapse_probe.models.litellm:make_litellm_model",
        "scripted": "collapse_probe.models.scripted:make_scripted_model",
    },
)
"""Backend prefix -> ``"module:factory"``; the factory takes ``(spec, name, **options)``. An installed
distribution adds a prefix through the entry-point group ``collapse_probe.models`` (the entry point's
name is the prefix, its object the factory; see :mod:`collapse_probe.core._plugins`)."""


@dataclass(frozen=True)
class Alias:
    target: str
    description: str


ALIASES: dict[str, Alias] = {
    "smollm2": Alias("local/smollm2-135m", "SmolLM2-135M-Instruct, embedded, CPU, offline (default)"),
    "gemma3-270m": Alias("local/gemma-3-270m", "Gemma 3 270M base, embedded, CPU, offline (transcript prompts)"),
    "gemini-3-flash": Alias("google/gemini-3-flash-preview", "Google Gemini 3 Flash (GEMINI_API_KEY)"),
    "gpt-5-mini": Alias("openai/gpt-5-mini", "OpenAI GPT-5 mini (OPENAI_API_KEY)"),
    "claude-haiku-4.5": Alias("anthropic/claude-haiku-4-5", "Anthropic Claude Haiku 4.5 (ANTHROPIC_API_KEY)"),
}

DEFAULT_MODEL = "smollm2"

_INSTANCES: dict[tuple[str, str], ChatModel] = process_cache("models.instances", {})
"""(spec key, options key) -> the backend built for them (:func:`get_model`)."""
_RUN_OPTIONS: dict[str, dict[str, object]] = process_cache("models.run_options", {})
"""Canonical spec -> the options the current command gives it (``-M``): :func:`use_options`."""


def use_options(spec: str, options: Mapping[str, object]) -> None:
    """From now on, :func:`get_model` called for ``spec`` without options builds it with ``options``
    (a command's ``-M``; ``{}`` restores the defaults). A second command in the same process that
    gives the same model other options, or none, gets its own backend, never the earlier one."""
    _RUN_OPTIONS[resolve_spec(spec)] = dict(options)


ModelProvider = Callable[[str, dict[str, object]], ChatModel]
"""``provider(canonical spec, backend options)``: the backend that answers for the spec."""
_PROVIDER: ModelProvider | None = None


def set_model_provider(provider: ModelProvider | None) -> ModelProvider | None:
    """Route :func:`get_model` through ``provider(canonical_spec, options)`` (``None``: build here).

    The Ray replica layer installs one for the duration of a run; returns the previous provider.
    """
    global _PROVIDER
    previous, _PROVIDER = _PROVIDER, provider
    return previous


def resolve_spec(spec: str) -> str:
    """Expand an alias and validate the prefix; return the canonical spec."""
    spec = spec.strip()
    if not spec:
        raise ConfigError("empty model spec; try one of: " + ", ".join(sorted(ALIASES)))
    if spec in ALIASES:
        return ALIASES[spec].target
    prefix = _prefix(spec)
    if not BACKENDS.known(prefix):
        prefixes = BACKENDS.names()
        candidates = sorted(ALIASES) + [f"{p}/..." for p in prefixes if p != "scripted"] + ["scripted:FILE.json"]
        close = difflib.get_close_matches(spec, list(ALIASES) + [f"{p}/" for p in prefixes], n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ConfigError(f"unknown model spec {spec!r}.{hint} Known: {', '.join(candidates)}")
    return spec


def _prefix(spec: str) -> str:
    if spec.startswith("scripted:"):
        return "scripted"
    return spec.split("/", 1)[0] if "/" in spec else spec


def get_model(spec: str, **options: Any) -> ChatModel:
    """Return the backend for ``spec`` with ``options``, constructing it once per process and options.

    The same spec with other options is another backend (``concurrency=4`` never returns the one
    built with ``concurrency=3``). Without options: the options the running command gave the spec
    (:func:`use_options`, its ``-M``), else the backend this process already built for the spec,
    else one with the defaults.

    Args:
        spec: a spec string or alias (see :data:`ALIASES`, ``collapse-probe models``).
        **options: backend options.
    """
    from collapse_probe.core._secrets import public_spec, real_spec

    # a spec or option naming a base URL with credentials: connect with the real URL, and let the
    # backend's ``spec`` (what runs record, the usage ledger's key) be the redacted one
    spec = real_spec(spec)
    canonical = resolve_spec(spec)
    if not options:
        options = _RUN_OPTIONS.get(canonical, {})
    options = {k: real_spec(v) if isinstance(v, str) else v for k, v in options.items()}
    shown = public_spec(canonical)
    prefix = _prefix(canonical)
    name = canonical[len("scripted:") :] if prefix == "scripted" else canonical.split("/", 1)[1]
    if not name:
        raise ConfigError(f"model spec {spec!r} names no model after {prefix!r}")
    if _PROVIDER is not None:
        return _PROVIDER(canonical, dict(options))
    replica_options = sorted(k for k in options if k in ("replicas", "replica_cpus", "replica_gpus"))
    if replica_options:
        raise ConfigError(f"model option(s) {', '.join(replica_options)} need Ray replicas (--ray-address)")
    key = canonical
    if prefix == "scripted":  # a scripted file rewritten in place is another model: load it again
        from collapse_probe.models.scripted import resolve_scripted_path

        try:
            st = os.stat(resolve_scripted_path(name))
            key = f"{canonical}\x00{st.st_size}\x00{st.st_mtime_ns}"
        except OSError:
            pass
    opts = _options_key(options)
    if (key, opts) in _INSTANCES:
        return _INSTANCES[(key, opts)]
    if not options:
        built = next((m for (k, _), m in _INSTANCES.items() if k == key), None)
        if built is not None:
            return built
    factory = BACKENDS.load(prefix)
    model: ChatModel = factory(canonical, name, **options)
    if shown != canonical:
        try:
            model.spec = shown
        except AttributeError:  # a plugin backend with a read-only spec: its outputs are still scrubbed
            pass
    _INSTANCES[(key, opts)] = model
    return model


def _options_key(options: Mapping[str, object]) -> str:
    """The options as part of a cache key: sorted JSON (values JSON cannot write by their ``repr``)."""
    return json.dumps(options, sort_keys=True, default=repr)


HOSTED = (
    ("openai/MODEL", "OpenAI: $OPENAI_API_KEY, $OPENAI_BASE_URL"),
    ("azure/DEPLOYMENT", "Azure OpenAI: $AZURE_OPENAI_ENDPOINT, $AZURE_OPENAI_API_KEY, $OPENAI_API_VERSION"),
    ("openai-compatible/MODEL@URL", "any Chat Completions server (vLLM, llama.cpp, ...): $COLLAPSE_PROBE_API_KEY"),
    ("anthropic/MODEL", "Anthropic: $ANTHROPIC_API_KEY, $ANTHROPIC_BASE_URL"),
    ("bedrock/MODEL_ID", "Claude on Amazon Bedrock: AWS credentials, $AWS_REGION"),
    ("vertex-anthropic/MODEL", "Claude on Vertex AI: $ANTHROPIC_VERTEX_PROJECT_ID, $CLOUD_ML_REGION"),
    ("google/MODEL", "Gemini API: $GEMINI_API_KEY or $GOOGLE_API_KEY"),
    ("vertex/MODEL", "Gemini on Vertex AI: $GOOGLE_CLOUD_PROJECT, $GOOGLE_CLOUD_LOCATION"),
    ("litellm/PROVIDER/MODEL", 'anything LiteLLM routes to (pip install "collapse-probe[litellm]")'),
)
"""Hosted-model spec prefixes and where each takes its credentials from."""


def list_models() -> list[tuple[str, str, str]]:
    """``(alias, spec, description)`` rows for ``collapse-probe models``."""
    return [(a, al.target, al.description) for a, al in ALIASES.items()]
