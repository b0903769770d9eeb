"""``openai/<model>``, ``azure/<deployment>`` and ``openai-compatible/<model>[@BASE_URL]``: Chat Completions
through the official ``openai`` SDK (extra ``api``).

The SDK builds, authenticates and parses each call and raises its typed errors; concurrency, the one
retry policy (SDK retries off), per-sample seeds and usage accounting are
:mod:`collapse_probe.models._http`'s. Requests carry the SDK's own ``User-Agent`` and
``x-stainless-*`` headers.

``openai/<model>`` talks to OpenAI: key from ``$OPENAI_API_KEY`` (required), base URL from the
``base_url`` option, ``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``. It sends
``max_completion_tokens``.

Every backend here sends the run's ``temperature`` and ``top_p`` in every request (``--temperature``,
``--top-p``), so a server whose own default differs (a provider behind ``$OPENAI_BASE_URL``, a vLLM
server with a ``generation_config``) samples as the run says. A model that refuses them (OpenAI's
reasoning models answer HTTP 400 "Unsupported value: 'temperature' ... Only the default (1) value is
supported"): at the API default 1 the refused parameter is left out from then on, with a warning, and
the model samples at its default; at any other value every request fails with a message that says so
and to run at ``--temperature 1 --top-p 1`` -- never a silent change of the sampling the run records.

``azure/<deployment>`` talks to an Azure OpenAI resource with the SDK's ``AsyncAzureOpenAI``: the
endpoint from the option ``base_url`` or ``$AZURE_OPENAI_ENDPOINT`` (``https://RESOURCE.openai.azure.com``),
the key from ``$AZURE_OPENAI_API_KEY`` (or a Microsoft Entra token in ``$AZURE_OPENAI_AD_TOKEN``), the
API version from the option ``api_version``, ``$OPENAI_API_VERSION`` or ``2024-10-21``. The name
after ``azure/`` is the deployment name; requests are as for ``openai/``.

``openai-compatible/<model>`` talks to any server with the same API (vLLM's ``vllm serve``,
llama.cpp's ``llama-server``, SGLang, TGI, LM Studio, Ollama): the base URL is given inline
(``openai-compatible/Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1``), by the ``base_url`` option or
by ``$COLLAPSE_PROBE_BASE_URL``; the key is optional, from ``$COLLAPSE_PROBE_API_KEY`` or else
``$OPENAI_API_KEY`` (prefer the first: the second would send an OpenAI key to that server). With the
option ``prompt_style="transcript"`` a request that carries a plain-text ``prompt`` is decoded with
``POST {base}/completions`` on the raw transcript, which keeps small base models in role.

Options (all): ``concurrency`` (16), ``max_retries`` (6), ``backoff_base`` (0.5 s), ``backoff_max``
(30 s), ``max_retry_after`` (120 s), ``timeout`` (120 s), ``extra_body`` (fields merged into every
request body, e.g. ``{"reasoning_effort": "minimal"}`` or vLLM's ``{"top_k": 20}``), ``native_n``
(send ``n``; default on, switched off by itself when the server rejects ``n > 1``), ``api_key_env``,
``base_url``, ``prompt_style`` (``"chat"`` or ``"transcript"``); ``api_version`` for ``azure/``.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from collapse_probe.core._constraints import check_field
from collapse_probe.core._secrets import register_env_secrets
from collapse_probe.errors import ConfigError, require
from collapse_probe.models._answers import EmptyAnswer, retry_empty
from collapse_probe.models._http import (
    APIChatModel,
    CallFailure,
    Secret,
    api_key_from_env,
    check_base_url,
    history_tool_calls,
    normalize_finish_reason,
    parse_arguments,
    provider_error_message,
    sdk_post,
    tool_schema,
)
from collapse_probe.models._options import AzureOptions, OpenAICompatibleOptions, OpenAIOptions
from collapse_probe.models._types import Completion, GenerationRequest, Message, ToolCallRecord

if TYPE_CHECKING:
    from openai.types import Batch
    from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageFunctionToolCallParam

    from collapse_probe.models._batch import BatchCall, BatchOutcome

logger = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"


class WireMessage(TypedDict, total=False):
    """A message of a Chat Completions request (:class:`Message` with tool calls in the wire form)."""

    role: str
    content: str | list[dict[str, object]] | None
    name: str | None
    tool_calls: list[ChatCompletionMessageFunctionToolCallParam] | None
    tool_call_id: str | None


class ChatBody(TypedDict, total=False):
    """The body of a ``/chat/completions`` or ``/completions`` call (the fields this backend sends)."""

    model: str
    n: int
    """Samples in one call (left out for 1)."""
    temperature: float
    top_p: float
    stop: list[str]
    seed: int
    """The seed of the call's first sample (see :meth:`GenerationRequest.sample_seed`)."""
    messages: list[WireMessage]
    """Chat only."""
    max_completion_tokens: int
    """Chat, OpenAI's own API (``max_tokens`` elsewhere)."""
    max_tokens: int
    logprobs: bool | int
    """``True`` on chat; the number of alternatives (1) on ``/completions``."""
    tools: list[ChatCompletionFunctionToolParam]
    prompt: str | None
    """``/completions`` only: the raw transcript."""


class AnswerFunction(TypedDict, total=False):
    name: str
    arguments: str
    """The arguments as JSON text (read with :func:`parse_arguments`: text that is not a JSON object is kept)."""


class WireToolCall(TypedDict, total=False):
    """A tool call in an answer: ``{"id", "type": "function", "function": {"name", "arguments": JSON string}}``."""

    id: str
    function: AnswerFunction


class TokenLogprob(TypedDict):
    token: str
    logprob: float


class ChoiceLogprobs(TypedDict, total=False):
    content: list[TokenLogprob] | None
    """Chat: one entry per generated token."""
    token_logprobs: list[float | None]
    """``/completions``: one log-probability per generated token."""


class AnswerMessage(TypedDict, total=False):
    role: str
    content: str | list[dict[str, object]] | None
    tool_calls: list[WireToolCall] | None


class Choice(TypedDict, total=False):
    """One sample of an answer."""

    index: int
    message: AnswerMessage
    """Chat: the sampled message."""
    text: str
    """``/completions``: the sampled text."""
    logprobs: ChoiceLogprobs | None
    finish_reason: str | None


class ChatUsage(TypedDict, total=False):
    prompt_tokens: int
    completion_tokens: int


class ChatAnswer(TypedDict, total=False):
    """The answer of a ``/chat/completions`` or ``/completions`` call, as the API documents it (the keys
    read here). The parsers check each value as they read it: a malformed one is a :class:`CallFailure`."""

    model: str
    """The model that answered (OpenAI: the snapshot an alias resolved to)."""
    choices: list[Choice]
    usage: ChatUsage | None


class BatchLineResponse(TypedDict, total=False):
    status_code: int
    body: object
    """The call's answer (a :class:`ChatAnswer`) or error object."""


class BatchOutputLine(TypedDict, total=False):
    """One line of an OpenAI batch's output or error file."""

    custom_id: str
    response: BatchLineResponse | None
    error: object
    """Why the call failed (an error object), ``None`` when it did not."""


def wire_tool_call(tc: ToolCallRecord) -> ChatCompletionMessageFunctionToolCallParam:
    """A history tool call in the wire form (arguments as a JSON string)."""
    args = tc["arguments"]
    return {
        "id": tc["id"],
        "type": "function",
        "function": {
            "name": tc["name"],
            "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
        },
    }


def to_openai_messages(messages: Sequence[Message]) -> list[WireMessage]:
    """Our messages in the Chat Completions wire form (tool calls with JSON-string arguments)."""
    out = []
    for m in messages:
        wire: WireMessage = {"role": m["role"]}
        if "content" in m:
            wire["content"] = m["content"]
        if "name" in m:
            wire["name"] = m["name"]
        if "tool_calls" in m:
            calls = m["tool_calls"]
            wire["tool_calls"] = None if calls is None else [wire_tool_call(tc) for tc in history_tool_calls(m)]
        if "tool_call_id" in m:
            wire["tool_call_id"] = m["tool_call_id"]
        if m.get("tool_calls"):
            wire.setdefault("content", None)
        out.append(wire)
    return out


def parse_chat_response(data: ChatAnswer) -> list[Completion]:
    """Completions of a Chat Completions response, in choice order."""
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise CallFailure(f"malformed response: no 'choices' list in {json.dumps(data)[:200]}")
    if not choices:
        raise EmptyAnswer("the server returned no choices")
    try:
        return _parse_choices(data, choices)
    except (AttributeError, TypeError, KeyError, ValueError) as exc:
        raise CallFailure(
            f"malformed response ({type(exc).__name__}: {exc}): {json.dumps(data, default=str)[:200]}"
        ) from None


def content_text(content: object, where: str) -> str:
    """A message's ``content``: a string, or a list of OpenAI content parts (their text joined).

    Raises:
        CallFailure: anything else, or a part that is not a text part, naming ``where``.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") in ("refusal",) and isinstance(part.get("refusal"), str):
                texts.append(part["refusal"])
            else:
                raise CallFailure(
                    f"malformed response: {where}[{i}] is {json.dumps(part, default=str)[:80]}; expected a text part "
                    '({"type": "text", "text": ...})'
                )
        return "".join(texts)
    raise CallFailure(
        f"malformed response: {where} is {type(content).__name__}; expected a string or a list of content parts"
    )


def _parse_choices(data: ChatAnswer, choices: list[Choice]) -> list[Completion]:
    choices = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0)
    usage = data.get("usage") or {}
    out = []
    for ci, ch in enumerate(choices):
        msg = (ch.get("message") if isinstance(ch, dict) else None) or {}
        if not isinstance(msg, dict):
            raise CallFailure(f"malformed response: choices[{ci}].message is {type(msg).__name__}; expected an object")
        if msg.get("content") is None and not msg.get("tool_calls"):
            raise EmptyAnswer("the server returned a choice with null content and no tool call")
        text = "" if msg.get("content") is None else content_text(msg["content"], f"choices[{ci}].message.content")
        calls: list[ToolCallRecord] = [
            {
                "name": (tc.get("function") or {}).get("name", ""),
                "arguments": parse_arguments((tc.get("function") or {}).get("arguments")),
                "id": tc.get("id") or f"call_{j}",
            }
            for j, tc in enumerate(msg.get("tool_calls") or [])
        ]
        lp = ch.get("logprobs") or {}
        chosen = lp.get("content")
        token_logprobs = [float(t["logprob"]) for t in chosen] if chosen is not None else None
        n_tokens = len(token_logprobs) if token_logprobs is not None else None
        if n_tokens is None and len(choices) == 1 and isinstance(usage.get("completion_tokens"), int):
            n_tokens = max(0, int(usage["completion_tokens"]))
        out.append(
            Completion(
                text=text,
                token_logprobs=token_logprobs,
                finish_reason=normalize_finish_reason(ch.get("finish_reason")),
                tool_calls=calls or None,
                n_tokens=n_tokens,
            )
        )
    return out


def parse_completions_response(data: ChatAnswer) -> list[Completion]:
    """Completions of a legacy ``/completions`` response, in choice order."""
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise CallFailure(f"malformed response: no 'choices' list in {json.dumps(data)[:200]}")
    if not choices:
        raise EmptyAnswer("the server returned no choices")
    out = []
    for ch in sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0):
        if not isinstance(ch, dict) or not isinstance(ch.get("text"), str):
            raise EmptyAnswer("the server returned a choice without text")
        lp = ch.get("logprobs") or {}
        token_logprobs = [float(x) for x in lp["token_logprobs"] if x is not None] if lp.get("token_logprobs") else None
        out.append(
            Completion(
                text=ch.get("text") or "",
                token_logprobs=token_logprobs,
                finish_reason=normalize_finish_reason(ch.get("finish_reason")),
                n_tokens=len(token_logprobs) if token_logprobs is not None else None,
            )
        )
    return out


SAMPLING_PARAMS = ("temperature", "top_p")
"""The sampling parameters every request carries (see the module docstring)."""

_REFUSAL = re.compile(r"unsupported|not supported|does not support|only the default", re.IGNORECASE)


def refused_sampling(message: str) -> list[str]:
    """The sampling parameters an HTTP 400 message says the model refuses (``[]`` when none).

    >>> refused_sampling("Unsupported value: 'temperature' does not support 0.7 with this model.")
    ['temperature']
    >>> refused_sampling("Unsupported parameter: 'top_p' is not supported with this model.")
    ['top_p']
    """
    if not _REFUSAL.search(message):
        return []
    return [name for name in SAMPLING_PARAMS if re.search(rf"\b{name}\b", message)]


def _openai() -> Any:
    return require("openai", "api", "the openai, azure and openai-compatible backends")


class OpenAIChatModel(APIChatModel):
    """A Chat Completions endpoint (OpenAI, Azure OpenAI or an OpenAI-compatible server) via the ``openai`` SDK."""

    provider = "OpenAI"
    native_n = True
    max_native_n = 128
    supports_batch = True

    def __init__(
        self,
        spec: str,
        model: str,
        *,
        official: bool,
        prompt_style: str = "chat",
        azure_api_version: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(spec, model, **kwargs)
        check_field(OpenAIOptions, "prompt_style", prompt_style)
        self.official = official
        self.prompt_style = prompt_style
        self.azure_api_version = azure_api_version
        if azure_api_version is not None:
            self.provider = "Azure OpenAI"
        elif not official:
            self.provider = "the OpenAI-compatible server"
        # Batch: OpenAI's /v1/batches. vLLM & co. have no such endpoint; Azure's needs a deployment
        # of the "global batch" type, so it is not assumed.
        self.supports_batch = official and azure_api_version is None
        self._batches: dict[str, Batch] = {}
        self._refused: set[str] = set()
        """Sampling parameters the model refused at their API default 1: left out since (see the module docstring)."""

    # -- SDK client

    def _client_kwargs(self) -> dict[str, object]:
        """Keyword arguments of the SDK client's constructor."""
        key = self._api_key.get() if self._api_key is not None else None
        kwargs: dict[str, object] = {"max_retries": 0, "timeout": self._sdk_timeout()}
        if self.azure_api_version is not None:
            kwargs.update(azure_endpoint=self.base_url, api_version=self.azure_api_version)
            if key is not None:
                kwargs["api_key"] = key
            elif os.environ.get("AZURE_OPENAI_AD_TOKEN"):
                kwargs["azure_ad_token"] = os.environ["AZURE_OPENAI_AD_TOKEN"]
        else:
            kwargs.update(base_url=self.base_url, api_key=key or "")
            if key is None:
                # A server that needs no key gets no Authorization header; the SDK would otherwise
                # refuse to start (or fall back to $OPENAI_API_KEY, sending an OpenAI key elsewhere).
                kwargs["_enforce_credentials"] = False
        return kwargs

    def _new_client(self, http_client: Any) -> Any:
        openai = _openai()
        cls = openai.AsyncAzureOpenAI if self.azure_api_version is not None else openai.AsyncOpenAI
        return cls(http_client=http_client, **self._client_kwargs())

    def sync_client(self) -> Any:
        """A blocking SDK client (model lookups, batch files)."""
        openai = _openai()
        cls = openai.AzureOpenAI if self.azure_api_version is not None else openai.OpenAI
        return cls(**self._client_kwargs())

    def _sdk_errors(self) -> tuple[type[BaseException], ...]:
        return (_openai().OpenAIError,)

    def _served_model_name(self) -> str | None:
        if self.azure_api_version is not None:
            return None  # a deployment name is not a model id; the answers' ``model`` field names it
        # the timeout per request, not via with_options(): the SDK's copy() re-enforces credentials,
        # and a keyless OpenAI-compatible server (vllm serve, a local proxy) would read as unverified
        client = self.sync_client()
        try:
            keyless = self._api_key is None and self.azure_api_version is None
            headers = {"Authorization": _openai().Omit()} if keyless else None
            return str(client.models.retrieve(self.model, timeout=10.0, extra_headers=headers).id)
        finally:
            client.close()

    def _sampling_fields(self, request: GenerationRequest, start: int, k: int) -> ChatBody:
        p = request.params
        body: ChatBody = {"model": self.model}
        if k > 1:
            body["n"] = k
        sampling: tuple[tuple[Literal["temperature", "top_p"], float], ...] = (
            ("temperature", p.temperature),
            ("top_p", p.top_p),
        )
        for name, value in sampling:
            if name not in self._refused:
                body[name] = value
            elif value != 1.0:
                raise ConfigError(self._refusal_message([name], request))
        if p.stop:
            body["stop"] = list(p.stop)
        seed = request.sample_seed(start)
        if seed is not None:
            body["seed"] = seed
        return body

    def build_chat_body(self, request: GenerationRequest, start: int = 0, k: int = 1) -> ChatBody:
        """The ``/chat/completions`` body asking for samples ``start .. start + k - 1``."""
        body = self._sampling_fields(request, start, k)
        messages: list[Message] = list(request.messages) or [{"role": "user", "content": request.prompt or ""}]
        body["messages"] = to_openai_messages(messages)
        if self.official:
            body["max_completion_tokens"] = request.params.max_tokens
        else:
            body["max_tokens"] = request.params.max_tokens
        if request.params.logprobs:
            body["logprobs"] = True
        if request.tools:
            body["tools"] = [openai_tool(t) for t in request.tools]
        return body

    def build_completion_body(self, request: GenerationRequest, start: int = 0, k: int = 1) -> ChatBody:
        """The ``/completions`` body (transcript style) for samples ``start .. start + k - 1``."""
        body = self._sampling_fields(request, start, k)
        body["prompt"] = request.prompt
        body["max_tokens"] = request.params.max_tokens
        if request.params.logprobs:
            body["logprobs"] = 1
        return body

    def uses_transcript(self, request: GenerationRequest) -> bool:
        return self.prompt_style == "transcript" and request.prompt is not None

    def batch_line(self, request: GenerationRequest, start: int, k: int) -> tuple[str, dict[str, object]]:
        """``(endpoint path, body)`` of one call, for a batch file (the body with ``extra_body`` merged in)."""
        if self.uses_transcript(request):
            return "/v1/completions", {**self.build_completion_body(request, start, k), **self.extra_body}
        return "/v1/chat/completions", {**self.build_chat_body(request, start, k), **self.extra_body}

    def can_batch(self, requests: Sequence[GenerationRequest]) -> bool:
        # one batch file serves one endpoint: chat only
        return self.supports_batch and not any(self.uses_transcript(r) for r in requests)

    async def batch_submit(self, items: Sequence[tuple[BatchCall, str, Mapping[str, object]]]) -> str:
        lines = [
            json.dumps({"custom_id": c.custom_id, "method": "POST", "url": path, "body": body}, ensure_ascii=False)
            for c, path, body in items
        ]
        data = ("\n".join(lines) + "\n").encode()
        f = await self._send(lambda c: c.files.create(file=("batch.jsonl", data, "application/jsonl"), purpose="batch"))
        b = await self._send(
            lambda c: c.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
        )
        return str(b.id)

    async def batch_poll(self, batch_id: str) -> tuple[bool, int]:
        b = await self._send(lambda c: c.batches.retrieve(batch_id))
        self._batches[batch_id] = b
        counts = b.request_counts
        answered = (counts.completed + counts.failed) if counts is not None else 0
        return b.status in ("completed", "failed", "expired", "cancelled"), answered

    async def batch_results(self, batch_id: str) -> dict[str, BatchOutcome]:
        from collapse_probe.models._batch import MISSING, BatchOutcome, jsonl_lines

        b: Any = self._batches.get(batch_id)
        if b is None:
            b = await self._send(lambda c: c.batches.retrieve(batch_id))
        out: dict[str, BatchOutcome] = {}
        for fid in (b.output_file_id, b.error_file_id):
            if not fid:
                continue

            def download(c: Any, fid: str = fid) -> Any:
                return c.files.content(fid)

            content = await self._send(download)
            lines: list[BatchOutputLine] = jsonl_lines(content.text)
            for line in lines:
                resp = line.get("response") or {}
                body = resp.get("body")
                if resp.get("status_code") == 200 and not line.get("error") and isinstance(body, dict):
                    out[line["custom_id"]] = BatchOutcome(data=body)
                else:
                    why = line.get("error") or body
                    out[line["custom_id"]] = BatchOutcome(
                        error=f"HTTP {resp.get('status_code')}: {provider_error_message(why, fallback=str(why))}"
                    )
        if b.status != "completed":
            errors = getattr(b, "errors", None)
            detail = "; ".join(str(e.message) for e in (errors.data or [])) if errors is not None else ""
            # calls without a line were never answered (expired, cancelled, a failed batch)
            out[MISSING] = BatchOutcome(error=f"the batch {b.status}" + (f": {detail}" if detail else ""))
        return out

    def parse_batch_answer(self, data: dict[str, object], request: GenerationRequest, k: int) -> list[Completion]:
        # a chat answer (the batch serves only /chat/completions)
        return self.parse_answer(cast(ChatAnswer, data), transcript=False, batch=True)

    def parse_answer(self, data: ChatAnswer, transcript: bool, batch: bool = False) -> list[Completion]:
        """Completions of one answered call (a wire-form dict); its usage goes to the ledger."""
        usage = data.get("usage") or {}
        if not isinstance(usage, dict):
            raise CallFailure(
                f"malformed response: 'usage' is {type(usage).__name__}; expected an object", retryable=True
            )
        served = data.get("model") if isinstance(data.get("model"), str) else None
        self.record_usage(usage.get("prompt_tokens"), usage.get("completion_tokens"), served, batch=batch)
        return parse_completions_response(data) if transcript else parse_chat_response(data)

    async def _call(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        return await retry_empty(self, lambda: self._call_once(request, start, k))

    def _refusal_message(self, names: Sequence[str], request: GenerationRequest, detail: str = "") -> str:
        values = {"temperature": request.params.temperature, "top_p": request.params.top_p}
        asked = " and ".join(f"{n} {values[n]:g}" for n in names)
        said = f" [{detail}]" if detail else ""
        return (
            f"model {self.model!r} takes no {' or '.join(names)}, and this run samples at {asked}: run at "
            f"--temperature 1 --top-p 1 (the model's own sampling) or audit a model that takes them{said}"
        )

    async def _call_once(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        transcript = self.uses_transcript(request)
        path, body = self.batch_line(request, start, k)
        # keyless: no Authorization header at all (the SDK would otherwise insist on one)
        headers = (
            {"Authorization": _openai().Omit()} if self._api_key is None and self.azure_api_version is None else None
        )
        try:
            data = await self._send(lambda c: sdk_post(c, path.removeprefix("/v1"), body, headers))
        except CallFailure as exc:
            refused = [n for n in refused_sampling(str(exc)) if n in body] if exc.status == 400 else []
            if not refused:
                raise
            if any(body[n] != 1.0 for n in refused):
                raise ConfigError(self._refusal_message(refused, request, detail=str(exc))) from None
            # at the API default: the model's own sampling is the run's; leave the parameter out
            new = set(refused) - self._refused
            self._refused.update(refused)
            if new:
                logger.warning(
                    "%s refuses %s (%s); left out from now on: the model samples at its default",
                    self.spec,
                    " and ".join(sorted(new)),
                    exc,
                )
            return await self._call_once(request, start, k)
        if not isinstance(data, dict):
            raise CallFailure(f"malformed response: expected a JSON object, got {type(data).__name__}")
        # the answer as the API documents it; the parsers check every value they read
        return self.parse_answer(cast(ChatAnswer, data), transcript)


def openai_tool(tool: dict[str, object]) -> ChatCompletionFunctionToolParam:
    """A request's tool as a Chat Completions function tool."""
    s = tool_schema(tool)
    return {
        "type": "function",
        "function": {"name": s["name"], "description": s["description"], "parameters": s["parameters"]},
    }


def make_openai_model(spec: str, name: str, **options: Any) -> OpenAIChatModel:
    """Factory for ``openai/<model>`` (see the module docstring for options)."""
    opts = OpenAIOptions.parse(options)
    _openai()
    key_env = opts.api_key_env or "OPENAI_API_KEY"
    key, key_env = api_key_from_env([key_env], provider="OpenAI", required=True)
    base = opts.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    return OpenAIChatModel(
        spec,
        name,
        official=True,
        base_url=check_base_url(base, "openai base URL (option base_url or $OPENAI_BASE_URL)"),
        api_key=key,
        api_key_env=key_env,
        prompt_style=opts.prompt_style,
        **opts.common(),
    )


AZURE_API_VERSION = "2024-10-21"
"""Azure OpenAI's GA data-plane API version used when neither ``api_version`` nor ``$OPENAI_API_VERSION`` is set."""


def make_azure_model(spec: str, name: str, **options: Any) -> OpenAIChatModel:
    """Factory for ``azure/<deployment>`` (see the module docstring for options)."""
    opts = AzureOptions.parse(options)
    _openai()
    endpoint = opts.base_url or os.environ.get("AZURE_OPENAI_ENDPOINT")
    if not endpoint:
        raise ConfigError(
            f"model spec {spec!r}: the azure backend needs the resource endpoint; set $AZURE_OPENAI_ENDPOINT "
            "(https://RESOURCE.openai.azure.com) or pass the option base_url"
        )
    names = [opts.api_key_env] if opts.api_key_env else ["AZURE_OPENAI_API_KEY"]
    key, key_env = api_key_from_env(
        names, provider="Azure OpenAI", required=not os.environ.get("AZURE_OPENAI_AD_TOKEN")
    )
    register_env_secrets(("AZURE_OPENAI_AD_TOKEN",))  # read in _client_kwargs, not held in a Secret
    version = opts.api_version or os.environ.get("OPENAI_API_VERSION") or AZURE_API_VERSION
    return OpenAIChatModel(
        spec,
        name,
        official=True,
        azure_api_version=str(version),
        base_url=check_base_url(endpoint, "azure endpoint (option base_url or $AZURE_OPENAI_ENDPOINT)"),
        api_key=key,
        api_key_env=key_env,
        prompt_style=opts.prompt_style,
        **opts.common(),
    )


_INLINE_URL = re.compile(r"^(?P<model>.+?)@(?P<url>https?://.+)$")


def make_openai_compatible_model(spec: str, name: str, **options: Any) -> OpenAIChatModel:
    """Factory for ``openai-compatible/<model>[@BASE_URL]`` (see the module docstring for options)."""
    opts = OpenAICompatibleOptions.parse(options)
    _openai()
    m = _INLINE_URL.match(name)
    model, inline = (m["model"], m["url"]) if m else (name, None)
    base = inline or opts.base_url or os.environ.get("COLLAPSE_PROBE_BASE_URL")
    if not base:
        raise ConfigError(
            f"model spec {spec!r}: an OpenAI-compatible backend needs the server's base URL; write "
            f"'openai-compatible/{model}@http://HOST:PORT/v1', pass the option base_url, or set $COLLAPSE_PROBE_BASE_URL"
        )
    names = [opts.api_key_env] if opts.api_key_env else ["COLLAPSE_PROBE_API_KEY", "OPENAI_API_KEY"]
    key: Secret | None
    # the key is optional, unless the option api_key_env names its variable: then that must be set
    key, key_env = api_key_from_env(names, provider="OpenAI-compatible", required=bool(opts.api_key_env))
    return OpenAIChatModel(
        spec,
        model,
        official=False,
        base_url=check_base_url(base, f"model spec {spec!r}: base URL"),
        api_key=key,
        api_key_env=key_env,
        prompt_style=opts.prompt_style,
        **opts.common(),
    )
