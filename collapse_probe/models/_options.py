"""Backend options as typed configs: one :class:`BackendOptions` model per backend.

A backend's options (``-M sim.concurrency=8``, ``get_model(spec, concurrency=8)``) are the fields of
its options model, a :class:`~collapse_probe.core._constraints.Config` like every pipeline config: each
field declares its type and bounds (the maxima of :mod:`collapse_probe.core.limits`), and a bad option is
refused by the same mechanism with the same one line, naming the backend, the option, what is allowed
and the value received::

    openai option concurrency must be an integer in [1, 1,024], got 1000000000
    unknown option(s) 'concurency' for the openai backend (did you mean concurrency?); known: ...

A factory parses its options first (:meth:`BackendOptions.parse`), before any package is imported or
any key is read, and reads the typed fields afterwards; :meth:`BackendOptions.given` are the options
the user set (a backend's own defaults stay where they are documented, on the model class).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, TypedDict

from pydantic import ConfigDict, ValidationError
from typing_extensions import Self

from collapse_probe.core._constraints import (
    Config,
    Constraint,
    Integer,
    Number,
    OneOf,
    config_error,
    constraints_of,
    rule,
)
from collapse_probe.core.limits import MAX_BATCH, MAX_CONCURRENCY, MAX_DELAY_S, MAX_RETRIES, MAX_SEED, MAX_WAIT_S
from collapse_probe.errors import ConfigError

__all__ = [
    "AnthropicOptions",
    "AzureOptions",
    "BackendOptions",
    "BedrockOptions",
    "GoogleOptions",
    "HTTPOptions",
    "LocalOptions",
    "OpenAIOptions",
    "ScriptedOptions",
    "VertexAnthropicOptions",
    "VLLMOptions",
    "VertexOptions",
]

PROMPT_STYLES = ("chat", "transcript")
"""Values of the ``prompt_style`` option: chat messages through the chat template, or one transcript."""


class BackendOptions(Config):
    """The options of one backend: a :class:`~collapse_probe.core._constraints.Config` whose fields are the
    option names. A subclass sets :attr:`BACKEND` (the spec prefix, named in every message)."""

    BACKEND: ClassVar[str] = "model"
    """The backend's name in messages (its spec prefix)."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.FLAG_FORMAT = f"{cls.BACKEND} option {{name}}"

    def __init__(self, **data: Any) -> None:
        try:
            super(Config, self).__init__(**data)
        except ValidationError as exc:
            raise self._error(exc) from None

    @classmethod
    def _error(cls, exc: ValidationError) -> ConfigError:
        unknown = sorted(str(e["loc"][0]) for e in exc.errors(include_url=False) if e["type"] == "extra_forbidden")
        if not unknown:
            return config_error(cls, exc)
        known = sorted(cls.model_fields)
        close = [m for u in unknown for m in difflib.get_close_matches(u, known, n=1, cutoff=0.6)]
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        return ConfigError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for the {cls.BACKEND} backend{hint}; "
            f"known: {', '.join(known)}"
        )

    @classmethod
    def parse(cls, options: Mapping[str, object], where: str = "") -> Self:
        """The options, checked: every name known, every value of its field's type and within its bounds.

        Args:
            options: option name -> value.
            where: put before the message (a model spec without credentials: ``scripted:donor.json``).

        Raises:
            ConfigError: the first problem, one line naming the backend, the option, what is allowed and
                the value received (an unknown option: the known ones, and the closest).
        """
        try:
            if not all(isinstance(k, str) for k in options):
                raise ConfigError(f"{cls.BACKEND} options: expected option names (strings), got {list(options)!r}")
            return cls(**dict(options))
        except ConfigError as exc:
            if not where:
                raise
            raise ConfigError(f"{where}: {exc}") from None

    def given(self, *names: str) -> dict[str, object]:
        """The options the user set (``names``: only those of them), as the factory's keywords."""
        keep = set(names) if names else set(type(self).model_fields)
        return {k: getattr(self, k) for k in self.model_fields_set if k in keep}


Seconds = Annotated[float, Number(ge=0, le=MAX_WAIT_S)]
"""A backend wait in seconds (``backoff_base``, ...): at most :data:`~collapse_probe.core.limits.MAX_WAIT_S`."""


class HTTPKeywords(TypedDict, total=False):
    """The :class:`~collapse_probe.models._http.APIChatModel` keywords among :class:`HTTPOptions` (those set)."""

    concurrency: int
    max_retries: int
    backoff_base: float
    backoff_max: float
    max_retry_after: float
    timeout: float
    extra_body: dict[str, object] | None
    native_n: bool | None


class HTTPOptions(BackendOptions):
    """Options every HTTP backend takes (see :class:`~collapse_probe.models._http.APIChatModel`)."""

    BACKEND = "HTTP"

    base_url: str | None = None
    """The API's base URL (default: the provider's, or its environment variable)."""
    concurrency: Annotated[int, Integer(1, most=MAX_CONCURRENCY)] = 16
    """Calls in flight at once."""
    max_retries: Annotated[int, Integer(0, most=MAX_RETRIES)] = 6
    """Retries of one failed call."""
    backoff_base: Seconds = 0.5
    """First wait before a retry (doubling up to ``backoff_max``)."""
    backoff_max: Seconds = 30.0
    """Longest wait between retries."""
    max_retry_after: Seconds = 120.0
    """Longest ``Retry-After`` honoured."""
    timeout: Annotated[float, Number(gt=0, le=MAX_WAIT_S)] = 120.0
    """Seconds one call may take."""
    extra_body: dict[str, object] | None = None
    """Extra request fields sent with every call."""
    native_n: bool | None = None
    """Ask the API for several samples in one call (default: the backend's own choice)."""

    COMMON: ClassVar[tuple[str, ...]] = (
        "concurrency",
        "max_retries",
        "backoff_base",
        "backoff_max",
        "max_retry_after",
        "timeout",
        "extra_body",
        "native_n",
    )
    """The :class:`~collapse_probe.models._http.APIChatModel` keywords among the fields."""

    def common(self) -> HTTPKeywords:
        """The :class:`~collapse_probe.models._http.APIChatModel` keywords the user set."""
        given = self.model_fields_set
        out: HTTPKeywords = {}
        if "concurrency" in given:
            out["concurrency"] = self.concurrency
        if "max_retries" in given:
            out["max_retries"] = self.max_retries
        if "backoff_base" in given:
            out["backoff_base"] = self.backoff_base
        if "backoff_max" in given:
            out["backoff_max"] = self.backoff_max
        if "max_retry_after" in given:
            out["max_retry_after"] = self.max_retry_after
        if "timeout" in given:
            out["timeout"] = self.timeout
        if "extra_body" in given:
            out["extra_body"] = self.extra_body
        if "native_n" in given:
            out["native_n"] = self.native_n
        return out


class KeyedOptions(HTTPOptions):
    """Options of an HTTP backend that reads an API key from the environment."""

    api_key_env: str | None = None
    """The environment variable holding the API key (default: the provider's)."""


class OpenAIOptions(KeyedOptions):
    """``openai/MODEL``."""

    BACKEND = "openai"

    prompt_style: Annotated[str, OneOf(PROMPT_STYLES)] = "chat"
    """``chat``: Chat Completions; ``transcript``: the legacy Completions endpoint on one transcript."""


class OpenAICompatibleOptions(OpenAIOptions):
    """``openai-compatible/MODEL[@URL]``."""

    BACKEND = "openai-compatible"


class AzureOptions(OpenAIOptions):
    """``azure/DEPLOYMENT``."""

    BACKEND = "azure"

    api_version: str | None = None
    """Azure OpenAI's data-plane API version (default: ``$OPENAI_API_VERSION``, else a GA version)."""


class AnthropicOptions(KeyedOptions):
    """``anthropic/MODEL``."""

    BACKEND = "anthropic"

    anthropic_version: str | None = None
    """The ``anthropic-version`` header (default: the version this backend is written against)."""


class BedrockOptions(HTTPOptions):
    """``bedrock/MODEL_ID`` (AWS credentials: no ``api_key_env``)."""

    BACKEND = "bedrock"

    region: str | None = None
    """The AWS region (default: ``$AWS_REGION``)."""


class VertexAnthropicOptions(HTTPOptions):
    """``vertex-anthropic/MODEL`` (Google credentials: no ``api_key_env``)."""

    BACKEND = "vertex-anthropic"

    region: str | None = None
    """The Google Cloud region (default: ``$CLOUD_ML_REGION``)."""
    project: str | None = None
    """The Google Cloud project (default: ``$ANTHROPIC_VERTEX_PROJECT_ID``)."""


class GoogleOptions(KeyedOptions):
    """``google/MODEL``."""

    BACKEND = "google"

    api_version: str = "v1beta"
    """The Gemini API version."""


class VertexOptions(KeyedOptions):
    """``vertex/MODEL``."""

    BACKEND = "vertex"

    project: str | None = None
    """The Google Cloud project (default: ``$GOOGLE_CLOUD_PROJECT``)."""
    location: str | None = None
    """The Google Cloud location (default: ``$GOOGLE_CLOUD_LOCATION``, else ``global``)."""


class LiteLLMOptions(KeyedOptions):
    """``litellm/PROVIDER/MODEL``."""

    BACKEND = "litellm"


_DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d{1,3})?")
DTYPES = ("auto", "float32", "bfloat16", "float16", "int8")
"""Values of the local backends' ``dtype`` option (``int8``: the CPU only)."""


@dataclass(frozen=True)
class Device(Constraint):
    """A torch device name: ``auto``, ``cpu``, ``mps``, ``cuda`` or ``cuda:N``; ``optional`` also accepts ``None``."""

    optional: bool = True

    def check(self, value: Any, flag: str) -> None:
        if self.optional and value is None:
            return
        if not (isinstance(value, str) and _DEVICE.fullmatch(value)):
            raise ConfigError(f"{flag} must be auto, cpu, mps, cuda or cuda:N, got {value!r}")


class LocalKeywords(TypedDict, total=False):
    """The :class:`~collapse_probe.models.local.LocalModel` keywords among :class:`LocalOptions` (those set)."""

    max_batch: int
    tie_tolerance: float | None


class LocalOptions(BackendOptions):
    """``local/NAME``: an embedded model (defaults per model, see
    :func:`~collapse_probe.models.local.make_local_model`)."""

    BACKEND = "local"

    prompt_style: Annotated[str | None, OneOf(PROMPT_STYLES, optional=True)] = None
    """``chat`` or ``transcript`` (default: the model's own)."""
    max_batch: Annotated[int, Integer(1, most=MAX_BATCH)] = 32
    """Sequences of one forward pass."""
    device: Annotated[str | None, Device()] = None
    """Where the model runs (default: ``cpu`` for ``local/``, ``auto`` for ``hf/``)."""
    dtype: Annotated[str | None, OneOf(DTYPES, optional=True)] = None
    """The weights' dtype (default: the model's CPU dtype on the CPU, float32 on a GPU)."""
    tie_tolerance: Annotated[float | None, Number(ge=0, optional=True)] = None
    """Logit gap under which two tokens count as tied (default: from the dtype)."""

    def model_keywords(self) -> LocalKeywords:
        """The :class:`~collapse_probe.models.local.LocalModel` keywords the user set."""
        out: LocalKeywords = {}
        if "max_batch" in self.model_fields_set:
            out["max_batch"] = self.max_batch
        if "tie_tolerance" in self.model_fields_set:
            out["tie_tolerance"] = self.tie_tolerance
        return out


class HFOptions(LocalOptions):
    """``hf/DIR``: any local transformers causal-LM directory."""

    BACKEND = "hf"


class ScriptedOptions(BackendOptions):
    """``scripted:FILE``."""

    BACKEND = "scripted"

    delay_s: Annotated[float | None, Number(ge=0, le=MAX_DELAY_S, optional=True, why="seconds per call")] = None
    """Seconds each call waits (default: the file's ``delay_s``)."""


LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The LoRA ranks vLLM's engine accepts for ``max_lora_rank`` (any other value fails at engine start)."""
LOGPROBS_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
"""Values of vLLM's ``logprobs_mode``."""
_TEXT_BOOLS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


# Upper bounds of vLLM's integer options: far above any machine, far below what exhausts memory when
# vLLM sizes its tables by them.
_Parallel = Annotated[int | None, Integer(1, most=1_024, optional=True)]


class VLLMOptions(BackendOptions):
    """``vllm/MODEL``: this backend's own options, the ``vllm.LLM`` options vLLM would only refuse at
    engine start (checked here), and any other ``vllm.LLM`` option, passed on as given.

    Values may be given as text (``"0.5"``, ``"true"``: a trainer's ``--vllm-option``); they are read
    as the field's type before the check."""

    BACKEND = "vllm"
    model_config = ConfigDict(extra="allow")

    enable_lora: bool = False
    """Start the engine with LoRA support (adapters per request or per model view)."""
    lora: str | None = None
    """An adapter directory applied to every request (needs ``enable_lora``)."""
    prompt_style: Annotated[str, OneOf(PROMPT_STYLES)] = "chat"
    """``chat``: ``LLM.chat`` on the messages; ``transcript``: ``LLM.generate`` on one transcript."""
    chat_template_kwargs: dict[str, object] | None = None
    """Keywords of the chat template (``{"enable_thinking": false}``)."""
    logprobs: bool = False
    """Report token log-probabilities on every request (the trainer's rollouts need them)."""
    gpu_memory_utilization: Annotated[float | None, Number(gt=0, le=1, why="a fraction", optional=True)] = None
    """Share of the GPU's memory the engine may take."""
    tensor_parallel_size: _Parallel = None
    pipeline_parallel_size: _Parallel = None
    max_model_len: Annotated[int | None, Integer(1, most=16_777_216, optional=True)] = None
    max_loras: Annotated[int | None, Integer(1, most=1_024, optional=True)] = None
    max_num_seqs: Annotated[int | None, Integer(1, most=65_536, optional=True)] = None
    seed: Annotated[int | None, Integer(0, most=MAX_SEED, optional=True)] = None
    """The engine's seed (default: drawn when the engine starts, logged)."""
    max_lora_rank: Annotated[int | None, Integer(None, optional=True)] = None
    """Largest adapter rank served: one of :data:`LORA_RANKS`."""
    logprobs_mode: Annotated[str | None, OneOf(LOGPROBS_MODES, optional=True)] = None
    enforce_eager: bool | None = None
    enable_sleep_mode: bool | None = None
    enable_prefix_caching: bool | None = None
    trust_remote_code: bool | None = None
    batch_invariant: bool | None = None
    """Ask for batch-invariant kernels (default: yes, unless ``$VLLM_BATCH_INVARIANT`` says otherwise)."""

    OWN: ClassVar[tuple[str, ...]] = ("enable_lora", "lora", "prompt_style", "chat_template_kwargs", "logprobs")
    """The backend's own options (the others go to ``vllm.LLM``)."""

    @rule
    def _lora(self) -> None:
        if self.lora is not None and not self.enable_lora:
            raise ConfigError("vllm option lora needs enable_lora=True")

    @rule
    def _lora_rank(self) -> None:
        rank = self.max_lora_rank
        if rank is not None and rank not in LORA_RANKS:
            use = next(r for r in LORA_RANKS if r >= rank) if 0 < rank <= LORA_RANKS[-1] else LORA_RANKS[-1]
            raise ConfigError(
                f"vllm option max_lora_rank: vLLM accepts only {', '.join(map(str, LORA_RANKS))}; got {rank} (use {use})"
            )

    @classmethod
    def parse(cls, options: Mapping[str, object], where: str = "") -> Self:
        """As :meth:`BackendOptions.parse`, a number or a truth value given as text read first."""
        read = dict(options)
        for name, value in options.items():
            if not isinstance(value, str) or name not in cls.model_fields:
                continue
            kinds = [c for c in constraints_of(cls, name) if isinstance(c, (Integer, Number))]
            if kinds:
                try:
                    read[name] = int(value) if isinstance(kinds[0], Integer) else float(value)
                except ValueError:
                    pass  # refused by the field's constraint, naming the text
            elif cls.model_fields[name].annotation in (bool, bool | None):
                read[name] = _TEXT_BOOLS.get(value.strip().lower(), value)
        return super().parse(read, where)

    def options(self) -> dict[str, Any]:
        """Every option given, read and checked (the fields set, then the other ``vllm.LLM`` options): the
        keywords of :class:`~collapse_probe.models.vllm.VLLMModel`, whose unknown ones go to ``vllm.LLM``
        untouched (an open set, so ``Any``)."""
        return {**self.given(), **(self.model_extra or {})}
