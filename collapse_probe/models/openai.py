"""``openai/<model>`` and ``openai-compatible/<model>[@BASE_URL]``: the Chat Completions wire format.

Both speak ``POST {base}/chat/completions`` with ``httpx`` directly (no ``openai`` SDK; see
:mod:`collapse_probe.models._http` for why and for the shared retry/concurrency policy).

``openai/<model>`` talks to OpenAI: key from ``$OPENAI_API_KEY`` (required), base URL from the
``base_url`` option, ``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``. It sends
``max_completion_tokens`` and leaves ``temperature``/``top_p`` out when they are at the API default 1,
because reasoning models reject the parameters even at their default value.

``openai-compatible/<model>`` talks to any server with the same API (vLLM's ``vllm serve``,
llama.cpp's ``llama-server``, SGLang, TGI, LM Studio, Ollama): the base URL is given inline
(``openai-compatible/Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1``), by the ``base_url`` option or
by ``$COLLAPSE_PROBE_BASE_URL``; the key is optional, from ``$COLLAPSE_PROBE_API_KEY`` or else
``$OPENAI_API_KEY`` (prefer the first: the second would send an OpenAI key to that server). With the
option ``prompt_style="transcript"`` a request that carries a plain-text ``prompt`` is decoded with
``POST {base}/completions`` on the raw transcript, which keeps small base models in role.

Options (both): ``concurrency`` (16), ``max_retries`` (6), ``backoff_base`` (0.5 s), ``backoff_max``
(30 s), ``max_retry_after`` (120 s), ``timeout`` (120 s), ``extra_body`` (fields merged into every
request body, e.g. ``{"reasoning_effort": "minimal"}`` or vLLM's ``{"top_k": 20}``), ``native_n``
(send ``n``; default on, switched off by itself when the server rejects ``n > 1``), ``api_key_env``,
``base_url``, ``prompt_style`` (``"chat"`` or ``"transcript"``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Any

from collapse_probe.errors import ConfigError
from collapse_probe.models._http import (
    COMMON_OPTIONS,
    APIChatModel,
    CallFailure,
    Secret,
    api_key_from_env,
    check_base_url,
    check_options,
    common_kwargs,
    history_tool_calls,
    normalize_finish_reason,
    parse_arguments,
    tool_schema,
)
from collapse_probe.models._types import Completion, GenerationRequest, Message

OPENAI_BASE_URL = "https://api.openai.com/v1"
PROMPT_STYLES = ("chat", "transcript")
_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages in the Chat Completions wire form (tool calls with JSON-string arguments)."""
    out = []
    for m in messages:
        wire = {k: m[k] for k in _MESSAGE_KEYS if k in m}
        if m.get("tool_calls"):
            wire["tool_calls"] = [
                {
                    "id": tc["id"],
                    "type": "function",
                    "function": {
                        "name": tc["name"],
                        "arguments": tc["arguments"]
                        if isinstance(tc["arguments"], str)
                        else json.dumps(tc["arguments"], ensure_ascii=False),
                    },
                }
                for tc in history_tool_calls(m)
            ]
            wire.setdefault("content", None)
        out.append(wire)
    return out


def parse_chat_response(data: dict[str, Any]) -> list[Completion]:
    """Completions of a Chat Completions response, in choice order."""
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise CallFailure(f"malformed response: no 'choices' list in {json.dumps(data)[:200]}")
    choices = sorted(choices, key=lambda c: c.get("index", 0))
    usage = data.get("usage") or {}
    out = []
    for ch in choices:
        msg = ch.get("message") or {}
        calls = [
            {
                "name": (tc.get("function") or {}).get("name", ""),
                "arguments": parse_arguments((tc.get("function") or {}).get("arguments")),
                "id": tc.get("id") or f"call_{j}",
            }
            for j, tc in enumerate(msg.get("tool_calls") or [])
        ]
        lp = ch.get("logprobs") or {}
        token_logprobs = [float(t["logprob"]) for t in lp["content"]] if lp.get("content") is not None else None
        n_tokens = len(token_logprobs) if token_logprobs is not None else None
        if n_tokens is None and len(choices) == 1 and "completion_tokens" in usage:
            n_tokens = int(usage["completion_tokens"])
        out.append(
            Completion(
                text=msg.get("content") or "",
                token_logprobs=token_logprobs,
                finish_reason=normalize_finish_reason(ch.get("finish_reason")),
                tool_calls=calls or None,
                n_tokens=n_tokens,
            )
        )
    return out


def parse_completions_response(data: dict[str, Any]) -> list[Completion]:
    """Completions of a legacy ``/completions`` response, in choice order."""
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise CallFailure(f"malformed response: no 'choices' list in {json.dumps(data)[:200]}")
    out = []
    for ch in sorted(choices, key=lambda c: c.get("index", 0)):
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


class OpenAIChatModel(APIChatModel):
    """A Chat Completions endpoint (OpenAI or an OpenAI-compatible server)."""

    provider = "OpenAI"
    native_n = True
    max_native_n = 128

    def __init__(
        self,
        spec: str,
        model: str,
        *,
        official: bool,
        prompt_style: str = "chat",
        **kwargs: Any,
    ) -> None:
        super().__init__(spec, model, **kwargs)
        if prompt_style not in PROMPT_STYLES:
            raise ConfigError(f"option 'prompt_style': expected one of {PROMPT_STYLES}, got {prompt_style!r}")
        self.official = official
        self.prompt_style = prompt_style
        if not official:
            self.provider = "the OpenAI-compatible server"

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key.get()}"} if self._api_key is not None else {}

    def _sampling_fields(self, request: GenerationRequest, start: int, k: int) -> dict[str, Any]:
        p = request.params
        body: dict[str, Any] = {"model": self.model}
        if k > 1:
            body["n"] = k
        if not self.official or p.temperature != 1.0:
            body["temperature"] = p.temperature
        if not self.official or p.top_p != 1.0:
            body["top_p"] = p.top_p
        if p.stop:
            body["stop"] = list(p.stop)
        seed = request.sample_seed(start)
        if seed is not None:
            body["seed"] = seed
        return body

    def build_chat_body(self, request: GenerationRequest, start: int = 0, k: int = 1) -> dict[str, Any]:
        """The ``/chat/completions`` body asking for samples ``start .. start + k - 1``."""
        body = self._sampling_fields(request, start, k)
        messages = list(request.messages) or [{"role": "user", "content": request.prompt or ""}]
        body["messages"] = to_openai_messages(messages)
        body["max_completion_tokens" if self.official else "max_tokens"] = request.params.max_tokens
        if request.params.logprobs:
            body["logprobs"] = True
        if request.tools:
            body["tools"] = [{"type": "function", "function": tool_schema(t)} for t in request.tools]
        return body

    def build_completion_body(self, request: GenerationRequest, start: int = 0, k: int = 1) -> dict[str, Any]:
        """The ``/completions`` body (transcript style) for samples ``start .. start + k - 1``."""
        body = self._sampling_fields(request, start, k)
        body["prompt"] = request.prompt
        body["max_tokens"] = request.params.max_tokens
        if request.params.logprobs:
            body["logprobs"] = 1
        return body

    def uses_transcript(self, request: GenerationRequest) -> bool:
        return self.prompt_style == "transcript" and request.prompt is not None

    async def _call(self, request: GenerationRequest, start: int, k: int) -> list[Completion]:
        if self.uses_transcript(request):
            data = await self._post("/completions", self.build_completion_body(request, start, k))
            return parse_completions_response(data)
        data = await self._post("/chat/completions", self.build_chat_body(request, start, k))
        return parse_chat_response(data)


_OPENAI_OPTIONS = (*COMMON_OPTIONS, "prompt_style")


def make_openai_model(spec: str, name: str, **options: Any) -> OpenAIChatModel:
    """Factory for ``openai/<model>`` (see the module docstring for options)."""
    check_options(options, _OPENAI_OPTIONS, "openai")
    key_env = options.get("api_key_env") or "OPENAI_API_KEY"
    key, key_env = api_key_from_env([key_env], provider="OpenAI", required=True)
    base = options.get("base_url") or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    return OpenAIChatModel(
        spec,
        name,
        official=True,
        base_url=check_base_url(base, "openai base URL (option base_url or $OPENAI_BASE_URL)"),
        api_key=key,
        api_key_env=key_env,
        prompt_style=options.get("prompt_style", "chat"),
        **common_kwargs(options),
    )


_INLINE_URL = re.compile(r"^(?P<model>.+?)@(?P<url>https?://.+)$")


def make_openai_compatible_model(spec: str, name: str, **options: Any) -> OpenAIChatModel:
    """Factory for ``openai-compatible/<model>[@BASE_URL]`` (see the module docstring for options)."""
    check_options(options, _OPENAI_OPTIONS, "openai-compatible")
    m = _INLINE_URL.match(name)
    model, inline = (m["model"], m["url"]) if m else (name, None)
    base = inline or options.get("base_url") or os.environ.get("COLLAPSE_PROBE_BASE_URL")
    if not base:
        raise ConfigError(
            f"model spec {spec!r}: an OpenAI-compatible backend needs the server's base URL; write "
            f"'openai-compatible/{model}@http://HOST:PORT/v1', pass the option base_url, or set $COLLAPSE_PROBE_BASE_URL"
        )
    names = [options["api_key_env"]] if options.get("api_key_env") else ["COLLAPSE_PROBE_API_KEY", "OPENAI_API_KEY"]
    key: Secret | None
    key, key_env = api_key_from_env(names, provider="OpenAI-compatible", required=False)
    return OpenAIChatModel(
        spec,
        model,
        official=False,
        base_url=check_base_url(base, f"model spec {spec!r}: base URL"),
        api_key=key,
        api_key_env=key_env,
        prompt_style=options.get("prompt_style", "chat"),
        **common_kwargs(options),
    )
