"""The batched model interface every backend implements.

One call takes a *batch* of :class:`GenerationRequest` (a chat history, ``n`` and sampling
parameters including a seed) and returns one :class:`GenerationResult` per request holding ``n``
:class:`Completion`. Batching is the backend's business: the local torch backend runs one forward
pass for the whole batch, vLLM hands the batch to its scheduler, HTTP backends fan it out under a
concurrency bound.

Sample ``i`` of a request is addressed by its *sample index* ``first_sample + i``. A backend derives
the randomness of each sample from ``(seed, sample index)`` where it can, so that asking for samples
0..9 and later 10..19 gives the same draws as asking for 0..19 at once, and the cache can store each
sample under its own key.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NotRequired, Protocol, Required, TypedDict, runtime_checkable

from collapse_probe.core._constraints import Integer, Number, check_value
from collapse_probe.errors import ConfigError


class ToolCallRecord(TypedDict):
    """A native tool call as a :class:`Completion` holds it (and a history message may replay it)."""

    id: str
    """The provider's call id (``call_<j>`` where the provider gives none)."""
    name: str
    """The called function's name."""
    arguments: dict[str, object] | str
    """The decoded JSON arguments, or the raw text when it is not a JSON object."""
    thought_signature: NotRequired[str]
    """Gemini's base64 thought signature, sent back when the call is replayed."""


class Message(TypedDict, total=False):
    """A chat message in the OpenAI layout: ``{"role": "system"|"user"|"assistant"|"tool", "content": str}``."""

    role: Required[str]
    content: str | list[dict[str, object]] | None
    """The text, a list of content parts (``{"type": "text", "text": ...}``), or ``None`` beside tool calls."""
    name: str | None
    """A tool message's tool name."""
    tool_calls: list[dict[str, Any]] | None
    """An assistant message's tool calls, ``[{"id", "name", "arguments"}]`` (or the OpenAI wire form), as the
    conversation holds them: replayed to the provider as they are (``models._http.history_tool_calls``)."""
    tool_call_id: str | None
    """The call a tool message answers."""


class SamplingRecord(TypedDict):
    """:class:`SamplingParams` as JSON (part of a request's cache key)."""

    temperature: float
    top_p: float
    max_tokens: int
    stop: list[str]
    seed: int | None
    logprobs: bool


@dataclass(frozen=True)
class SamplingParams:
    """Sampling parameters of one request."""

    temperature: float = 1.0
    """Softmax temperature; 0 means greedy decoding."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    max_tokens: int = 96
    """Maximum number of new tokens per completion."""
    stop: tuple[str, ...] = ()
    """Strings that end a completion (not included in the returned text)."""
    seed: int | None = None
    """Base seed; sample ``i`` uses ``derive_seed(seed, i)``. ``None`` draws fresh randomness."""
    logprobs: bool = False
    """Return the log-probability of each generated token where the backend has them."""

    def __post_init__(self) -> None:
        check_value(self.temperature, "temperature", [Number(ge=0, numpy=True)])
        check_value(self.top_p, "top_p", [Number(gt=0, le=1, numpy=True)])
        check_value(self.max_tokens, "max_tokens", [Integer(1, numpy=True)])

    def to_dict(self) -> SamplingRecord:
        return SamplingRecord(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens,
                              stop=list(self.stop), seed=self.seed, logprobs=self.logprobs)  # fmt: skip


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt, asking for ``n`` completions.

    ``messages`` is always set. ``prompt`` optionally gives the same conversation as a plain
    transcript for completion-style decoding; small local models stay in role far better with it,
    so backends that can decode raw text (local, hf, vllm, OpenAI-compatible) use it when their
    ``prompt_style`` is ``"transcript"``. Chat-only APIs ignore it.
    """

    messages: tuple[Message, ...]
    n: int = 1
    params: SamplingParams = field(default_factory=SamplingParams)
    prompt: str | None = None
    first_sample: int = 0
    """Index of the first sample; sample ``i`` of this request has index ``first_sample + i``."""
    tools: tuple[dict[str, object], ...] | None = None
    """OpenAI-style function schemas for native tool calling, where the backend supports it."""
    choices: tuple[str, ...] | None = None
    """A closed answer set: backends with log-probabilities score each choice exactly
    (:meth:`ChatModel.score_choices`); generation ignores it."""

    def __post_init__(self) -> None:
        check_value(self.n, "n", [Integer(1, numpy=True)])
        if not self.messages and self.prompt is None:
            raise ConfigError("a request needs messages or a prompt")
        object.__setattr__(self, "messages", tuple(self.messages))

    def with_samples(self, first_sample: int, n: int) -> GenerationRequest:
        return replace(self, first_sample=first_sample, n=n)

    def sample_seed(self, i: int) -> int | None:
        """Seed of sample ``i`` (0-based within this request)."""
        if self.params.seed is None:
            return None
        return derive_seed(self.params.seed, self.first_sample + i)

    def fingerprint(self) -> str:
        """Stable hash of everything that defines the distribution (not the sample range)."""
        payload = {
            "messages": list(self.messages),
            "prompt": self.prompt,
            "params": self.params.to_dict(),
            "tools": list(self.tools) if self.tools else None,
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()


class CompletionRecord(TypedDict, total=False):
    """:class:`Completion` as the answer cache stores it."""

    text: Required[str]
    token_logprobs: list[float]
    finish_reason: str
    tool_calls: list[ToolCallRecord]
    n_tokens: int
    token_ids: list[int]


@dataclass
class Completion:
    """One sampled completion."""

    text: str
    token_logprobs: list[float] | None = None
    finish_reason: str | None = None
    tool_calls: list[ToolCallRecord] | None = None
    """Native tool calls as ``[{"name": str, "arguments": dict | str, "id": str}]``."""
    n_tokens: int | None = None
    token_ids: list[int] | None = None
    """Generated token ids where the backend has them (local backends), so a trainer can score
    exactly the sampled tokens instead of re-tokenising the text."""

    def __post_init__(self) -> None:
        # a lone surrogate (a server's "\ud800") is kept as U+FFFD: the reply stays the model's, and
        # every record holding it can be written as UTF-8 (a failed write would tear the run's file)
        if isinstance(self.text, str) and not self.text.isascii():
            from collapse_probe.core._files import scrub_surrogates

            self.text = scrub_surrogates(self.text)

    def to_dict(self) -> CompletionRecord:
        """The completion as the answer cache stores it (fields that are ``None`` left out)."""
        d = CompletionRecord(text=self.text)
        if self.token_logprobs is not None:
            d["token_logprobs"] = list(self.token_logprobs)
        if self.finish_reason is not None:
            d["finish_reason"] = self.finish_reason
        if self.tool_calls is not None:
            d["tool_calls"] = copy.deepcopy(self.tool_calls)
        if self.n_tokens is not None:
            d["n_tokens"] = self.n_tokens
        if self.token_ids is not None:
            d["token_ids"] = list(self.token_ids)
        return d

    @classmethod
    def from_dict(cls, d: CompletionRecord) -> Completion:
        """The completion :meth:`to_dict` stored (read back from the answer cache)."""
        return cls(
            text=str(d.get("text", "")),
            token_logprobs=d.get("token_logprobs"),
            finish_reason=d.get("finish_reason"),
            tool_calls=d.get("tool_calls"),
            n_tokens=d.get("n_tokens"),
            token_ids=d.get("token_ids"),
        )


@dataclass
class GenerationResult:
    """The answer to one request: ``n`` completions, or an infrastructure error."""

    completions: list[Completion]
    error: str | None = None
    """Set when the backend failed on this request after retries; ``completions`` is then empty.
    Pipelines record such requests as infrastructure failures, never as a score."""

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class ChatModel(Protocol):
    """What every backend implements."""

    spec: str
    """The spec string that names this backend instance (part of every cache key)."""

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Return one result per request, in order. Never raises for a single bad request:
        a failed request gets ``GenerationResult([], error=...)``."""
        ...


def derive_seed(seed: int, index: int) -> int:
    """Seed for sample ``index`` of a request with base ``seed`` (stable across processes)."""
    h = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & 0x7FFF_FFFF


def find_stop(text: str, stops: Sequence[str]) -> tuple[int, int] | None:
    """Where the first stop string ends ``text``: ``(index, length of that stop)``, or ``None``.

    A stop string inside the leading whitespace does not count: small models often open a turn with
    a newline, and a stop on it would leave an empty turn, which is no answer. Every backend that
    applies stop strings itself uses this one rule, so the same sample reads the same everywhere.

    >>> find_stop("\\nHello\\nUser:", ["\\n"])
    (6, 1)
    >>> find_stop("Hi", ["\\n"]) is None
    True
    """
    lead = len(text) - len(text.lstrip())
    hits = [(i, len(s)) for s in stops if s for i in [text.find(s, lead)] if i >= 0]
    return min(hits) if hits else None
