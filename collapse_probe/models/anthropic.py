"""``anthropic/<model>``, ``bedrock/<model-id>`` and ``vertex-anthropic/<model>``: the Messages API through
the official ``anthropic`` SDK (extra ``api``).

The SDK builds, authenticates and parses each call and raises its typed errors; concurrency, the one
retry policy (SDK retries off), ``n`` emulation and usage accounting are
:mod:`collapse_probe.models._http`'s.

``anthropic/<model>``: the key from ``$ANTHROPIC_API_KEY`` (or the variable named by the option
``api_key_env``), the base URL from the option ``base_url``, ``$ANTHROPIC_BASE_URL`` or
``https://api.anthropic.com``.

``bedrock/<model-id>`` (``bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0``): Claude on Amazon
Bedrock through ``AsyncAnthropicBedrock``; AWS credentials and region the usual way
(``$AWS_ACCESS_KEY_ID``/``$AWS_SECRET_ACCESS_KEY``/``$AWS_SESSION_TOKEN`` or ``$AWS_PROFILE``,
``$AWS_REGION``; option ``region``), or a Bedrock API key in ``$AWS_BEARER_TOKEN_BEDROCK``.

``vertex-anthropic/<model>`` (``vertex-anthropic/claude-haiku-4-5@20251001``): Claude on Google
Vertex AI through ``AsyncAnthropicVertex``; Google application-default credentials, the project from
the option ``project`` or ``$ANTHROPIC_VERTEX_PROJECT_ID`` and the region from ``region`` or
``$CLOUD_ML_REGION``.

Mapping from our OpenAI-layout histories: system messages go to the top-level ``system`` field;
assistant tool calls become ``tool_use`` blocks and ``tool`` messages ``tool_result`` blocks of a
user turn; consecutive turns of one role are merged into one turn. A history with no user or
assistant turn (a simulator opening a conversation from its system prompt alone) is sent with the
system text as the single user turn, since the API needs at least one message.

The API has neither ``n`` nor ``seed``: ``n`` samples are ``n`` concurrent calls, and no seed is sent.
``temperature`` must lie in [0, 1]; ``top_p`` is sent only when it is not 1, because recent models
refuse ``temperature`` and ``top_p`` together. Extra options: ``anthropic_version`` (default: the SDK's)
and those of :mod:`collapse_probe.models.openai` except ``prompt_style``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from collapse_probe.core._secrets import register_env_secrets
from collapse_probe.core._state import process_cache
from collapse_probe.errors import ConfigError, require
from collapse_probe.models._answers import EmptyAnswer, retry_empty
from collapse_probe.models._http import (
    APIChatModel,
    CallFailure,
    api_key_from_env,
    check_base_url,
    history_tool_calls,
    message_text,
    normalize_finish_reason,
    provider_error_message,
    sdk_post,
    split_system,
    tool_schema,
)
from collapse_probe.models._options import AnthropicOptions, BedrockOptions, VertexAnthropicOptions
from collapse_probe.models._types import Completion, GenerationRequest, Message, ToolCallRecord

if TYPE_CHECKING:
    from anthropic.types import TextBlockParam, ToolParam, ToolResultBlockParam, ToolUseBlockParam

    from collapse_probe.models._batch import BatchCall, BatchOutcome


class WireMessage(TypedDict):
    """A message of a Messages API request (content always a list of blocks, so turns can merge)."""

    role: Literal["user", "assistant"]
    content: list[TextBlockParam | ToolUseBlockParam | ToolResultBlockParam]


class MessagesBody(TypedDict, total=False):
    """The body of a ``/v1/messages`` call (the fields this backend sends)."""

    model: str
    max_tokens: int
    messages: list[WireMessage]
    temperature: float
    system: str
    top_p: float
    """Sent only when not 1 (some models refuse ``temperature`` and ``top_p`` together)."""
    stop_sequences: list[str]
    tools: list[ToolParam]


class AnswerBlock(TypedDict, total=False):
    """A content block of an answer: ``text`` or ``tool_use`` (other types are skipped)."""

    type: str
    text: str
    id: str
    name: str
    input: dict[str, object]


class AnswerUsage(TypedDict, total=False):
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int | None
    cache_read_input_tokens: int | None


class MessagesAnswer(TypedDict, total=False):
    """The answer of a ``/v1/messages`` call, as the API documents it (the keys read here). The parser
    checks each value as it reads it."""

    model: str
    """The snapshot that answered."""
    content: list[AnswerBlock]
    stop_reason: str | None
    usage: AnswerUsage


_INPUT_TOKEN_KEYS: tuple[Literal["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"], ...] = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


class BatchResult(TypedDict, total=False):
    type: str
    """``succeeded``, ``errored``, ``canceled`` or ``expired``."""
    message: MessagesAnswer
    error: object


class BatchEntry(TypedDict):
    """One result of a Message Batch (the SDK's ``MessageBatchIndividualResponse`` as a dict)."""

    custom_id: str
    result: BatchResult


ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION: str | None = None
"""``anthropic-version`` header: ``None`` sends the SDK's own (the API version its types are written for)."""


def to_anthropic_messages(
    messages: Sequence[Message], prompt: str | None = None
) -> tuple[str | None, list[WireMessage]]:
    """``(system, messages)`` in the Messages API layout (content as lists of blocks)."""
    system, rest = split_system(messages)
    out: list[WireMessage] = []
    for m in rest:
        role = m.get("role")
        blocks: list[TextBlockParam | ToolUseBlockParam | ToolResultBlockParam] = []
        wire_role: Literal["user", "assistant"]
        if role == "tool":
            wire_role = "user"
            blocks.append(
                {"type": "tool_result", "tool_use_id": str(m.get("tool_call_id", "")), "content": message_text(m)}
            )
        elif role == "user" or role == "assistant":
            wire_role = "user" if role == "user" else "assistant"
            text = message_text(m)
            if text:
                blocks.append({"type": "text", "text": text})
            if role == "assistant":
                for tc in history_tool_calls(m):
                    args = tc["arguments"]
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": str(tc["id"]),
                            "name": tc["name"],
                            "input": args if isinstance(args, dict) else {"raw": args},
                        }
                    )
        else:
            raise ConfigError(f"message role {role!r}: expected system, user, assistant or tool")
        if not blocks:
            continue  # the API refuses empty turns
        if out and out[-1]["role"] == wire_role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": wire_role, "content": blocks})
    if not out:
        opening = system or prompt or ""
        return None, [{"role": "user", "content": [{"type": "text", "text": opening}]}]
    return system, out


def parse_messages_response(data: MessagesAnswer) -> Completion:
    """One completion from a Messages API response (text blocks joined; ``tool_use`` blocks as tool calls)."""
    content = data.get("content")
    if not isinstance(content, list):
        raise CallFailure(f"malformed response: no 'content' list in {json.dumps(data)[:200]}")
    texts: list[str] = []
    calls: list[ToolCallRecord] = []
    for j, block in enumerate(content):
        if block.get("type") == "text":
            texts.append(block.get("text", ""))
        elif block.get("type") == "tool_use":
            calls.append(
                {
                    "name": block.get("name", ""),
                    "arguments": dict(block.get("input") or {}),
                    "id": block.get("id") or f"call_{j}",
                }
            )
    if not calls and not "".join(texts).strip() and data.get("stop_reason") != "refusal":
        # no text and no tool call: not an answer (a refusal is one, recorded as a content filter)
        raise EmptyAnswer("the server returned a message without text or tool call")
    usage = data.get("usage") or {}
    return Completion(
        text="".join(texts),
        finish_reason=normalize_finish_reason(data.get("stop_reason")),
        tool_calls=calls or None,
        n_tokens=int(usage["output_tokens"]) if "output_tokens" in usage else None,
    )


_KEY_HEADER_CLASSES: dict[type, type] = process_cache("models.anthropic_key_clients", {})


def _with_key_header(cls: type) -> type:
    """``cls`` sending the API key as ``x-api-key``, the header the Anthropic API authenticates keys
    by. Some SDK releases send an API key as ``Authorization: Bearer``, the header of OAuth access
    tokens (``auth_token``); an access token given as ``auth_token`` is still sent that way."""
    if cls not in _KEY_HEADER_CLASSES:

        class KeyHeaderClient(cls):
            @property
            def auth_headers(self) -> dict[str, str]:
                headers = dict(super().auth_headers)
                key = getattr(self, "api_key", None)
                if key:
                    if headers.get("Authorization") == f"Bearer {key}":
                        del headers["Authorization"]
                    headers["X-Api-Key"] = key
                return headers

        KeyHeaderClient.__name__ = KeyHeaderClient.__qualname__ = cls.__name__
        _KEY_HEADER_CLASSES[cls] = KeyHeaderClient
    return _KEY_HEADER_CLASSES[cls]


def _anthropic() -> Any:
    return require("anthropic", "api", "the anthropic, bedrock and vertex-anthropic backends")


CLOUDS = ("direct", "bedrock", "vertex")


class AnthropicChatModel(APIChatModel):
    """Anthropic Messages API backend (direct, on Bedrock or on Vertex AI) via the ``anthropic`` SDK."""

    provider = "Anthropic"
    native_n = False
    supports_batch = True
    messages_path = "/v1/messages"
    """The SDK's Bedrock and Vertex clients rewrite this path (and move ``model``) to their own routes."""

    def __init__(
        self,
        spec: str,
        model: str,
        *,
        anthropic_version: str | None = ANTHROPIC_VERSION,
        cloud: str = "direct",
        region: str | None = None,
        project: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(spec, model, **kwargs)
        if cloud not in CLOUDS:
            raise ConfigError(f"anthropic cloud: expected one of {CLOUDS}, got {cloud!r}")
        self.anthropic_version = anthropic_version
        self.cloud, self.region, self.project = cloud, region, project
        if cloud != "direct":
            self.provider = f"Anthropic on {'Amazon Bedrock' if cloud == 'bedrock' else 'Vertex AI'}"
            self.supports_batch = False  # the clouds' batch jobs go through their own storage services

    def _client_kwargs(self) -> dict[str, object]:
        """Keyword arguments of the SDK client's constructor."""
        kwargs: dict[str, object] = {"max_retries": 0, "timeout": self._sdk_timeout()}
        if self.anthropic_version:
            kwargs["default_headers"] = {"anthropic-version": self.anthropic_version}
        if self.base_url:
            kwargs["base_url"] = self.base_url
        if self.cloud == "bedrock":
            if self.region:
                kwargs["aws_region"] = self.region
        elif self.cloud == "vertex":
            if self.region:
                kwargs["region"] = self.region
            if self.project:
                kwargs["project_id"] = self.project
        else:
            kwargs["api_key"] = self._api_key.get() if self._api_key is not None else None
        return kwargs

    def _client_class(self, sync: bool) -> Any:
        anthropic = _anthropic()
        name = {"direct": "Anthropic", "bedrock": "AnthropicBedrock", "vertex": "AnthropicVertex"}[self.cloud]
        cls = getattr(anthropic, name if sync else "Async" + name)
        return _with_key_header(cls) if self.cloud == "direct" else cls

    def _new_client(self, http_client: Any) -> Any:
        return self._client_class(sync=False)(http_client=http_client, **self._client_kwargs())

    def sync_client(self) -> Any:
        """A blocking SDK client (model lookups, batches)."""
        return self._client_class(sync=True)(**self._client_kwargs())

    def _sdk_errors(self) -> tuple[type[BaseException], ...]:
        return (_anthropic().AnthropicError,)

    def _served_model_name(self) -> str | None:
        if self.cloud != "direct":
            return None  # the cloud model id names a snapshot already
        client = self.sync_client().with_options(timeout=10.0)
        try:
            return str(client.models.retrieve(self.model).id)
        finally:
            client.close()

    def build_body(self, request: GenerationRequest) -> MessagesBody:
        """The ``/v1/messages`` body of one sample of ``request``."""
        p = request.params
        if p.temperature > 1:
            raise ConfigError(f"Anthropic accepts temperature in [0, 1], got {p.temperature}")
        system, messages = to_anthropic_messages(request.messages, request.prompt)
        body: MessagesBody = {
            "model": self.model,
            "max_tokens": p.max_tokens,
            "messages": messages,
            "temperature": p.temperature,
        }
        if system:
            body["system"] = system
        if p.top_p != 1.0:
            body["top_p"] = p.top_p
        if p.stop:
            body["stop_sequences"] = list(p.stop)
        if request.tools:
            body["tools"] = [
                {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
                for s in map(tool_schema, request.tools)
            ]
        return body

    # -- Message Batches

    def batch_line(self, request: GenerationRequest, start: int, k: int) -> tuple[str, dict[str, object]]:
        return self.messages_path, {**self.build_body(request), **self.extra_body}

    async def batch_submit(self, items: Sequence[tuple[BatchCall, str, Mapping[str, object]]]) -> str:
        requests = [{"custom_id": c.custom_id, "params": body} for c, _path, body in items]
        data = await self._send(lambda c: sdk_post(c, "/v1/messages/batches", {"requests": requests}))
        if not isinstance(data, dict) or not data.get("id"):
            raise CallFailure(f"malformed batch creation answer: {str(data)[:200]}")
        return str(data["id"])

    async def batch_poll(self, batch_id: str) -> tuple[bool, int]:
        b = await self._send(lambda c: c.messages.batches.retrieve(batch_id))
        counts = b.request_counts
        answered = counts.succeeded + counts.errored + counts.canceled + counts.expired
        return b.processing_status == "ended", answered

    async def batch_results(self, batch_id: str) -> dict[str, BatchOutcome]:
        from collapse_probe.models._batch import BatchOutcome

        async def read(c: Any) -> list[BatchEntry]:
            return [entry.model_dump() async for entry in await c.messages.batches.results(batch_id)]

        out: dict[str, BatchOutcome] = {}
        for entry in await self._send(read):
            result = entry.get("result") or {}
            kind = result.get("type")
            if kind == "succeeded" and isinstance(result.get("message"), dict):
                out[entry["custom_id"]] = BatchOutcome(data=dict(result["message"]))
            else:
                err = result.get("error")
                detail = provider_error_message(err, fallback=str(err)) if err else ""
                out[entry["custom_id"]] = BatchOutcome(error=f"{kind}" + (f": {detail}" if detail else ""))
        return out

    def parse_batch_answer(self, data: dict[str, object], request: GenerationRequest, k: int) -> list[Completion]:
        return [self.parse_answer(cast(MessagesAnswer, data), batch=True)]

    def parse_answer(self, data: MessagesAnswer, batch: bool = False) -> Completion:
        """The completion of one answered call (a wire-form dict); its usage goes to the ledger."""
        usage = data.get("usage") or {}
        # cache writes and reads are input tokens too (billed at their own rates)
        inp = sum(int(usage.get(k) or 0) for k in _INPUT_TOKEN_KEYS)
        self.record_usage(inp, usage.get("output_tokens"), data.get("model"), batch=batch)
        return parse_messages_response(data)

    async def _call(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        return await retry_empty(self, lambda: self._call_once(request, start, k))

    async def _call_once(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        body = {**self.build_body(request), **self.extra_body}
        data = await self._send(lambda c: sdk_post(c, self.messages_path, body))
        if not isinstance(data, dict):
            raise CallFailure(f"malformed response: expected a JSON object, got {type(data).__name__}")
        # the answer as the API documents it; the parser checks every value it reads
        return [self.parse_answer(cast(MessagesAnswer, data))]


def make_anthropic_model(spec: str, name: str, **options: Any) -> AnthropicChatModel:
    """Factory for ``anthropic/<model>`` (see the module docstring for options)."""
    opts = AnthropicOptions.parse(options)
    _anthropic()
    key, key_env = api_key_from_env([opts.api_key_env or "ANTHROPIC_API_KEY"], provider="Anthropic", required=True)
    base = opts.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
    return AnthropicChatModel(
        spec,
        name,
        base_url=check_base_url(base, "anthropic base URL (option base_url or $ANTHROPIC_BASE_URL)"),
        api_key=key,
        api_key_env=key_env,
        anthropic_version=opts.anthropic_version or ANTHROPIC_VERSION,
        **opts.common(),
    )


def make_bedrock_model(spec: str, name: str, **options: Any) -> AnthropicChatModel:
    """Factory for ``bedrock/<model-id>``: Claude on Amazon Bedrock (see the module docstring)."""
    opts = BedrockOptions.parse(options)
    _anthropic()
    region = opts.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    base = opts.base_url or os.environ.get("ANTHROPIC_BEDROCK_BASE_URL")
    # the SDK reads AWS credentials by itself: they are secrets of this process all the same
    register_env_secrets(("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"))
    if not region and not base:
        raise ConfigError(
            f"model spec {spec!r}: the bedrock backend needs an AWS region; set $AWS_REGION or pass the option region"
        )
    return AnthropicChatModel(
        spec,
        name,
        cloud="bedrock",
        region=region,
        base_url=check_base_url(base, "bedrock base URL")
        if base
        else f"https://bedrock-runtime.{region}.amazonaws.com",
        api_key=None,
        api_key_env="AWS_ACCESS_KEY_ID",
        **opts.common(),
    )


def make_vertex_anthropic_model(spec: str, name: str, **options: Any) -> AnthropicChatModel:
    """Factory for ``vertex-anthropic/<model>``: Claude on Vertex AI (see the module docstring)."""
    opts = VertexAnthropicOptions.parse(options)
    _anthropic()
    region = opts.region or os.environ.get("CLOUD_ML_REGION")
    project = opts.project or os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID")
    missing = [
        what
        for what, v in (
            ("$CLOUD_ML_REGION (option region)", region),
            ("$ANTHROPIC_VERTEX_PROJECT_ID (option project)", project),
        )
        if not v
    ]
    if missing:
        raise ConfigError(f"model spec {spec!r}: the vertex-anthropic backend needs {' and '.join(missing)}")
    base = opts.base_url or os.environ.get("ANTHROPIC_VERTEX_BASE_URL")
    default = (
        "https://aiplatform.googleapis.com/v1"
        if region == "global"
        else f"https://{region}-aiplatform.googleapis.com/v1"
    )
    return AnthropicChatModel(
        spec,
        name,
        cloud="vertex",
        region=region,
        project=project,
        base_url=check_base_url(base, "vertex-anthropic base URL") if base else default,
        api_key=None,
        api_key_env="GOOGLE_APPLICATION_CREDENTIALS",
        **opts.common(),
    )
